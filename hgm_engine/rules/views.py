"""The views a planner reads at every step (docs/rules.md): the actions that can run now
(``frontier``), what is marked stale or blocked (``stale``), and the path down to a node
(``focus_path``). ``Memory`` forwards them here.
"""

from __future__ import annotations

from typing import Any

from hgm_engine.store import marks_problem

__all__ = ["PlannerViews", "FRONTIER_QUERY"]

FRONTIER_QUERY = (
    "#$goal.descendants.where(type = 'action', status = 'pending', not has(dirty), "
    "not exists(prev.where(status != 'done')))"
)
"""The query of :meth:`PlannerViews.frontier` (``$goal`` the goal's id)."""


class PlannerViews:
    """The planner views of ``memory`` (a :class:`~hgm_engine.Memory`, read through its
    public ``query`` and ``view``)."""

    def __init__(self, memory: Any):
        self.memory = memory

    def frontier(self, goal: str, *, as_of: int | str | None = None) -> list[str]:
        """Pending actions under ``goal`` that can run now: every ``before`` predecessor is
        done, and the action is neither blocked nor stale (no ``dirty`` mark).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
        ...     {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"},
        ...     {"op": "add_node", "id": "b", "type": "action", "parent": "g", "status": "pending"},
        ...     {"op": "add_edge", "from": "a", "to": "b", "type": "before"}]})
        >>> m.frontier("g")
        ['a']
        """
        return self.memory.query(FRONTIER_QUERY, params={"goal": goal}, as_of=as_of).ids

    def stale(self, *, as_of: int | str | None = None) -> list[dict[str, Any]]:
        """Nodes marked ``needs_review`` or ``blocked``, with every mark's rule, cause and t.

        Marks that are not what the rule engine writes (stored before graph files and
        transactions were checked for them, or by another program) are not passed on as
        marks: the entry's ``state`` is None when ``dirty`` is no staleness state, ``marks``
        holds the well-formed marks only, and ``problems`` says what is wrong with the rest.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.load_rules("rule watch: on update action where status = 'failed' then mark parent as needs_review")
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
        ...     {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"}]})
        >>> _ = m.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "failed"}}]})
        >>> [(s["id"], s["state"], [mark["rule"] for mark in s["marks"]]) for s in m.stale()]
        [('g', 'needs_review', ['watch'])]
        """
        result = self.memory.query("nodes.where(has(dirty))", as_of=as_of)
        entries = []
        for node in result.nodes:
            state, problems = node["dirty"], []
            found = marks_problem({"dirty": state}, node["id"])
            if found is not None:
                state = None
                problems.append(found.message)
            stored = node.get("dirty_marks", [])
            marks = []
            if isinstance(stored, list):
                for i, mark in enumerate(stored):
                    found = marks_problem({"dirty_marks": [mark]}, node["id"])
                    if found is None:
                        marks.append(mark)
                    else:
                        problems.append(f"dirty_marks[{i}]: {found.message}")
            else:
                problems.append(marks_problem({"dirty_marks": stored}, node["id"]).message)
            entry = {"id": node["id"], "type": node["type"], "state": state, "marks": marks}
            if problems:
                entry["problems"] = problems
            entries.append(entry)
        return entries

    def focus_path(self, node_id: str, *, as_of: int | str | None = None) -> list[str]:
        """The path from a root down to ``node_id``, following first parents (edge order).

        >>> from hgm_engine import Memory
        >>> m = Memory.from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"},
        ...     {"id": "a", "type": "action"}], "edges": [{"from": "g", "to": "a", "type": "parent_of"}]})
        >>> m.focus_path("a")
        ['g', 'a']
        """
        with self.memory.view(as_of) as view:
            if view.node(node_id) is None:
                return []
            path = [node_id]
            while True:
                parents = view.in_adjacency(path[-1]).by_type.get("parent_of", ())
                if not parents or parents[0] in path:
                    return list(reversed(path))
                path.append(parents[0])
