"""The service's reads of a memory's state and history: one node, a node's history (and
several nodes' at once), the commits, diffs, what changed since a ``t``, stale nodes, a goal's
frontier, the facts about an entity, a node's focus path, the export and the snapshots.
Each catches up with other processes' commits first and reads ``as_of`` a ``t``, a snapshot
or a time where it takes one.

>>> from hgm_engine import Memory
>>> ReadVerbs(Memory()).snapshots()
{'snapshots': {}}
"""

from __future__ import annotations

from typing import Any

from hgm_engine.server.service.checks import check_text, fail
from hgm_engine.server.service.core import ServiceCore

__all__ = ["ReadVerbs"]


class ReadVerbs(ServiceCore):
    """Reading the state and the history (see the module)."""

    def node(self, node_id: str, as_of: int | str | None = None) -> dict[str, Any]:
        self.fresh()
        node = self.memory.node(node_id, as_of=self.resolve(as_of, "as_of"))
        if node is None:
            raise fail("unknown-node", f"no node {node_id!r}", node_id)
        return node

    def history(self, node_id: str) -> dict[str, Any]:
        """Every commit that touched ``node_id``; unknown-node if it never existed."""
        self.fresh()
        entries = self.memory.history(node_id)
        if not entries and self.memory.node(node_id) is None:
            raise fail("unknown-node", f"no node {node_id!r} now or in the history", node_id)
        return {"node": node_id, "t": self.memory.t, "history": entries}

    def histories(self, node_ids: list[str]) -> dict[str, Any]:
        """:meth:`history` of several nodes (at most 1000) read in one pass over the journal."""
        if not isinstance(node_ids, list) or not node_ids or not all(isinstance(n, str) and n for n in node_ids):
            raise fail("invalid-argument", "'nodes' must be a non-empty list of node ids", "nodes")
        if len(node_ids) > 1000:
            raise fail("limit-exceeded", f"{len(node_ids)} nodes; at most 1000 per request", "nodes")
        check_text(nodes=node_ids)
        self.fresh()
        return {"t": self.memory.t, "histories": self.memory.histories(node_ids)}

    def commits(self, since: int | str = 0, limit: int = 100) -> dict[str, Any]:
        """The commits after ``since`` (a t or a snapshot name), oldest first, at most
        ``limit`` (1 to 1000) of them: each commit's summary (t, author, reason, base_t, time,
        kind, how many changes, the rules that fired). ``more`` says whether later commits
        were left out (ask again from the last ``t``).

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"}], "reason": "start"})
        >>> [(c["t"], c["reason"]) for c in s.commits()["commits"]]
        [(1, 'start')]
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise fail("invalid-argument", "'limit' must be an integer from 1 to 1000", "limit")
        self.fresh()
        low = self.resolve(since, "since")
        low = 0 if low is None else low
        high = min(self.memory.t, low + limit)
        found = [c for c in self.memory.commits(low) if c.t <= high]
        return {"since": low, "t": self.memory.t, "commits": [c.summary() for c in found], "more": high < self.memory.t}

    def diff(self, t1: int | str, t2: int | str | None = None) -> dict[str, Any]:
        """What changed from state ``t1`` to ``t2`` (the current state by default)."""
        self.fresh()
        if t1 is None:
            raise fail("missing-parameter", "diff needs 'from' (a t or a snapshot name)", "from")
        low = self.resolve(t1, "from")
        high = self.memory.t if t2 is None else self.resolve(t2, "to")
        return {"from": low, "to": high, "changes": self.memory.diff(low, high)}

    def changes_since(self, t: int | str) -> dict[str, Any]:
        self.fresh()
        if t is None:
            raise fail("missing-parameter", "changes needs 'since' (a t or a snapshot name)", "since")
        return self.memory.changes_since(self.resolve(t, "since"))

    def stale(self, as_of: int | str | None = None) -> dict[str, Any]:
        """Nodes marked needs_review or blocked, with every mark's rule, cause and t."""
        self.fresh()
        as_of = self.resolve(as_of, "as_of")
        t = self.memory.t if as_of is None else as_of
        return {"t": t, "stale": self.memory.stale(as_of=as_of)}

    def frontier(self, goal: str, as_of: int | str | None = None) -> dict[str, Any]:
        """Pending actions under ``goal`` that can run now."""
        self.fresh()
        as_of = self.resolve(as_of, "as_of")
        t = self.memory.t if as_of is None else as_of
        if self.memory.node(goal, as_of=as_of) is None:
            raise fail("unknown-node", f"no node {goal!r}", goal)
        return {"goal": goal, "t": t, "frontier": self.memory.frontier(goal, as_of=as_of)}

    def facts(self, entity: str, at: str | None = None, as_of: int | str | None = None) -> dict[str, Any]:
        """What holds about ``entity`` at the valid time ``at`` (ISO 8601; None: now), as
        memory knew it ``as_of``; docs/time.md.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "e", "type": "entity"}]})
        >>> s.facts("e", "2026-03-01")["holding"]
        []
        """
        self.fresh()
        as_of = self.resolve(as_of, "as_of")
        if at is not None and not isinstance(at, str):
            raise fail("invalid-argument", f"at must be an ISO 8601 date or date-time, not {type(at).__name__}", "at")
        doc = self.memory.facts(entity, at=at, as_of=as_of)
        return dict(doc, t=self.memory.t if as_of is None else as_of)

    def focus_path(self, node_id: str, as_of: int | str | None = None) -> dict[str, Any]:
        self.fresh()
        path = self.memory.focus_path(node_id, as_of=self.resolve(as_of, "as_of"))
        if not path:
            raise fail("unknown-node", f"no node {node_id!r}", node_id)
        return {"node": node_id, "path": path}

    def export(self, as_of: int | str | None = None) -> dict[str, Any]:
        self.fresh()
        return self.memory.export(as_of=self.resolve(as_of, "as_of"))

    def snapshots(self) -> dict[str, Any]:
        self.fresh()
        return {"snapshots": self.memory.snapshots()}
