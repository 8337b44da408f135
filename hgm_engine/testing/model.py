"""The reference model of a whole memory: a schema, the graph, every earlier state, the user
constraints and rule sets, and the transaction pipeline of docs/transactions.md — ops in
order, rules, the ``base_t`` conflict check, constraints on the final state, commit or refuse
whole — with ``as_of``, ``diff`` and ``revert``.

Every state is kept as a full copy (slow and obviously right), indexed by ``t``.

>>> model = ModelMemory()
>>> report = model.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
...                               {"op": "add_node", "id": "a", "type": "action", "parent": "g"}]})
>>> report.committed, report.t, model.query("root.actions").value
(True, 1, ['a'])
>>> model.apply({"ops": [{"op": "add_node", "id": "b", "type": "action"}]}).violations
[('action_has_one_parent', 'b')]
>>> model.t, model.diff(0, 1)[0]["kind"]
(1, 'node_added')
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

import attrs

from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.query import syntax as S
from hgm_engine.testing.constraints import compile_constraint, violations
from hgm_engine.testing.graphmodel import ModelGraph
from hgm_engine.testing.interpreter import ModelAnswer, evaluate
from hgm_engine.testing.ops import ModelError, Working, net_changes
from hgm_engine.testing.rules import RuleModel, RuleOutcome

__all__ = ["ModelMemory", "ModelReport", "ModelRefusal", "ModelError"]

_DOCUMENT_KEYS = {"ops", "author", "reason", "base_t", "dry_run"}


class ModelRefusal(Exception):
    """Rules or a constraint could not be loaded because constraints do not hold now;
    ``violations`` is the set of ``(constraint, node)``."""

    def __init__(self, violations: set):
        super().__init__(sorted(violations))
        self.violations = violations


@attrs.define
class ModelReport:
    """What a transaction did, in the terms of a :class:`~hgm_engine.TransactionReport`."""

    committed: bool
    t: int | None
    changes: list[dict[str, Any]]
    fired_rules: list[str]
    dirtied: list[dict[str, Any]]
    cleared: list[dict[str, Any]]
    violations: list[tuple[str, str]]
    created: list[str]

    def summary(self) -> dict[str, Any]:
        """The parts a differential test compares (violations as sorted pairs)."""
        return {
            "committed": self.committed, "t": self.t, "changes": self.changes,
            "fired_rules": self.fired_rules, "dirtied": self.dirtied, "cleared": self.cleared,
            "violations": self.violations, "created": self.created,
        }


@attrs.define
class _Entry:
    """The journal of one ``t``: its net changes and the ids it touched."""

    changes: list[dict[str, Any]]
    touched: set[str]
    genesis: bool = False


def touched_ids(changes: list[dict[str, Any]]) -> set[str]:
    """Every node id a list of changes names (an edge change names both ends)."""
    ids = set()
    for change in changes:
        ids |= {change["id"]} if "id" in change else {change["from"], change["to"]}
    return ids


class ModelMemory:
    """A memory in plain dicts: see the module docstring."""

    def __init__(self, schema: Schema = DEFAULT_SCHEMA) -> None:
        self.schema = schema
        self.graph = ModelGraph()
        self.states: list[ModelGraph] = [self.graph.copy()]
        self.journal: list[_Entry | None] = [None]
        self.rules = RuleModel(schema)
        self.user_constraints: dict[str, S.ConstraintDef] = {}

    # -- reading ---------------------------------------------------------------------------

    @property
    def t(self) -> int:
        return len(self.states) - 1

    @property
    def nodes(self) -> dict:
        """``id -> (type, attributes)`` now."""
        return self.graph.nodes

    @property
    def edges(self) -> dict:
        """``(from, to, type) -> attributes`` now."""
        return self.graph.edges

    def document(self, as_of: int | None = None) -> dict[str, Any]:
        """The memory as a graph document (what ``Memory.export`` gives)."""
        return self.as_of(self.t if as_of is None else as_of).document()

    def as_of(self, t: int) -> ModelGraph:
        """The state after commit ``t`` (0: empty)."""
        if not 0 <= t <= self.t:
            raise ModelError("invalid-argument", f"t={t}")
        return self.states[t]

    def query(self, text: str, *, focus: str | None = None, params: Mapping[str, Any] | None = None, as_of: int | None = None) -> ModelAnswer:
        return evaluate(text, self.as_of(self.t if as_of is None else as_of), self.schema, focus=focus, params=params)

    def diff(self, t1: int, t2: int) -> list[dict[str, Any]]:
        """One net change per node or edge between two states."""
        return net_changes(self.as_of(t1), self.as_of(t2))

    def constraints(self) -> dict[str, S.ConstraintDef]:
        """The user constraints in force: added ones and those of the loaded rule sets."""
        return {**self.user_constraints, **self.rules.constraints}

    def violations(self) -> set:
        """What breaks any constraint now (every edge judged)."""
        return violations(self.graph, self.schema, self.constraints())

    def copy(self) -> "ModelMemory":
        return copy.deepcopy(self)

    # -- rules and constraints -------------------------------------------------------------

    def add_constraint(self, name: str, text: str) -> None:
        definition = compile_constraint(text)
        broken = violations(self.graph, self.schema, {name: definition}, new_edges=())
        if broken:
            raise ModelRefusal(broken)
        self.user_constraints[name] = definition

    def load_rules(self, text: str, name: str = "default") -> None:
        """Load a rule set; refused (:class:`ModelRefusal`) when its constraints break now."""
        trial = RuleModel(self.schema)
        trial.load(text, name)
        broken = violations(self.graph, self.schema, trial.constraints, new_edges=())
        if broken:
            raise ModelRefusal(broken)
        self.rules.load(text, name)

    # -- changing --------------------------------------------------------------------------

    def load(self, doc: Mapping[str, Any]) -> ModelReport:
        """Load a graph document: the genesis commit into an empty memory (no rules; refused
        with :class:`ModelError` ``invalid-document`` when anything breaks), else one
        transaction that adds its nodes and edges."""
        if self.t == 0 and not self.graph.nodes:
            graph = ModelGraph.from_document(doc)
            if violations(graph, self.schema, self.constraints()):
                raise ModelError("invalid-document")
            self._commit_state(graph, _Entry([], set(graph.nodes), genesis=True))
            return ModelReport(True, self.t, [], [], [], [], [], [])
        ops = [{"op": "add_node", **node} for node in doc.get("nodes", ())]
        ops += [{"op": "add_edge", **edge} for edge in doc.get("edges", ())]
        return self.apply({"ops": ops}, graph_file=True)

    def apply(self, doc: Mapping[str, Any], *, dry_run: bool = False, graph_file: bool = False) -> ModelReport:
        """Apply a transaction document; raises :class:`ModelError` when it cannot apply.
        ``graph_file``: the ops load a graph file, whose valid-time bounds are taken as they are."""
        if not isinstance(doc, Mapping) or set(doc) - _DOCUMENT_KEYS or not isinstance(doc.get("ops"), list):
            raise ModelError("invalid-transaction", "document")
        base_t = doc.get("base_t")
        if base_t is not None and (type(base_t) is not int or base_t < 0):
            raise ModelError("invalid-transaction", "base_t")
        for op in doc["ops"]:
            Working.check(op)
        work = Working(self.graph, self.t + 1, self.schema, graph_file=graph_file)
        for op in doc["ops"]:
            work.apply(op)
        return self._commit(work, base_t=base_t, dry_run=dry_run or bool(doc.get("dry_run")))

    def revert(self, t: int) -> ModelReport:
        """Append the commit that undoes commit ``t``; ``ModelError("conflict")`` when a later
        commit changed what ``t`` changed, or deleted an end of an edge ``t`` removed."""
        if not 1 <= t <= self.t:
            raise ModelError("invalid-argument", f"t={t}")
        entry = self.journal[t]
        if entry.genesis:
            raise ModelError("invalid-argument", "the genesis load cannot be reverted")
        left, now = self.states[t], self.graph
        added_edges = {(c["from"], c["to"], c["type"]) for c in entry.changes if c["kind"] == "edge_added"}
        removed_nodes = {c["id"] for c in entry.changes if c["kind"] == "node_removed"}
        for change in entry.changes:
            if "id" in change:
                node = change["id"]
                expected = None if change["kind"] == "node_removed" else left.nodes[node]
                if now.nodes.get(node) != expected:
                    raise ModelError("conflict", node)
                if change["kind"] == "node_added" and any(node in k[:2] and k not in added_edges for k in now.edges):
                    raise ModelError("conflict", node)
            else:
                key = (change["from"], change["to"], change["type"])
                expected = None if change["kind"] == "edge_removed" else left.edges[key]
                if now.edges.get(key) != expected:
                    raise ModelError("conflict", str(key))
                if change["kind"] == "edge_removed" and any(end not in now.nodes and end not in removed_nodes for end in key[:2]):
                    raise ModelError("conflict", str(key))  # an end was deleted since
        work = Working(self.graph, self.t + 1, self.schema)
        g = work.graph
        for change in reversed(entry.changes):
            kind = change["kind"]
            if kind == "edge_added":
                g.remove_edge((change["from"], change["to"], change["type"]))
            elif kind == "edge_updated":
                g.edges[(change["from"], change["to"], change["type"])] = dict(change["before"])
            elif kind == "node_added":
                work.remove_node(change["id"])
            elif kind == "node_updated":
                node_type, attributes = g.nodes[change["id"]]
                attributes = {k: v for k, v in attributes.items() if k not in change["after"] or k in change["before"]}
                attributes.update(copy.deepcopy(change["before"]))
                g.nodes[change["id"]] = (node_type, attributes)
            elif kind == "node_removed":
                node = change["node"]
                g.add_node(node["id"], node["type"], {k: v for k, v in node.items() if k not in ("id", "type")})
            elif kind == "edge_removed":
                g.add_edge((change["from"], change["to"], change["type"]), change.get("attrs", {}))
        return self._commit(work, base_t=None, dry_run=False)

    def purge(self, node_id: str, *, subtree: bool = False) -> list[str]:
        """Forget ``node_id`` (and with ``subtree`` every node below it through ``parent_of``)
        in every state and every journal entry, then append a commit that changes nothing
        (the tombstone); returns the ids, sorted. ``ModelError("unknown-node")`` for an id
        the memory does not hold now."""
        if node_id not in self.graph.nodes:
            raise ModelError("unknown-node", node_id)
        ids, todo = {node_id}, [node_id]
        while subtree and todo:
            parent = todo.pop()
            for source, target, edge_type in self.graph.edges:
                if source == parent and edge_type == "parent_of" and target not in ids:
                    ids.add(target)
                    todo.append(target)
        for state in self.states:
            for gone in ids:
                if gone in state.nodes:
                    state.remove_node(gone)
        for entry in self.journal[1:]:
            entry.changes = [c for c in entry.changes if not (touched_ids([c]) & ids)]
            entry.touched = touched_ids(entry.changes)
        graph = self.graph.copy()
        for gone in ids:
            graph.remove_node(gone)
        self._commit_state(graph, _Entry([], set()))
        return sorted(ids)

    def _commit(self, work: Working, *, base_t: int | None, dry_run: bool) -> ModelReport:
        outcome: RuleOutcome = self.rules.run(work)
        changes = work.changes()
        if base_t is not None:
            if base_t > self.t:
                raise ModelError("invalid-argument", f"base_t={base_t}")
            mine = work.read | touched_ids(changes)
            for later in range(base_t + 1, self.t + 1):
                entry = self.journal[later]
                if entry.genesis or entry.touched & mine:
                    raise ModelError("conflict", f"t={later}")
        new_edges = [(c["from"], c["to"], c["type"]) for c in changes if c["kind"] in ("edge_added", "edge_updated")]
        broken = violations(work.graph, self.schema, self.constraints(), new_edges) | work.orphaned()
        committed = not broken and not dry_run
        if committed:
            self._commit_state(work.graph, _Entry(changes, touched_ids(changes)))
        return ModelReport(
            committed, self.t if committed else None, changes, outcome.fired, outcome.dirtied,
            outcome.cleared, sorted(broken), list(work.created),
        )

    def _commit_state(self, graph: ModelGraph, entry: _Entry) -> None:
        self.graph = graph
        self.states.append(graph.copy())
        self.journal.append(entry)
