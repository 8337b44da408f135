"""The state machine: random transactions against a memory and a plain model, side by side."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from hgm_engine.memory import Memory
from hgm_engine.errors import ConflictError, TransactionError
from hgm_engine.testing.model import ModelError, ModelMemory, ModelRefusal

__all__ = ["MemoryStateMachine"]

STATUSES = ["pending", "active", "done", "failed", "blocked"]
WATCHED_QUERIES = (
    "nodes.count()",
    "root.descendants",
    "nodes.where(type = 'action', status = 'pending')",
    "nodes.where(type = 'result').produced_by",
)


def _draw_op(data, model: ModelMemory, fresh_ids: list[str]) -> dict[str, Any]:
    """One op; mostly sensible, sometimes wrong on purpose (to be refused or rejected)."""
    ids = list(model.nodes)
    of_type = lambda *types: [i for i in ids if model.nodes[i][0] in types]  # noqa: E731
    choices = ["add_goal", "add_action", "add_fact", "add_result", "update", "delete", "edge", "unedge", "bad"]
    kind = data.draw(st.sampled_from(choices), label="op kind")
    new_id = data.draw(st.sampled_from(fresh_ids + ids[:3]), label="new id") if fresh_ids else "n0"
    if kind == "add_goal":
        op = {"op": "add_node", "id": new_id, "type": "goal", "status": data.draw(st.sampled_from(STATUSES))}
        planners = of_type("goal", "action")
        if planners and data.draw(st.booleans(), label="goal has parent"):
            op["parent"] = data.draw(st.sampled_from(planners))
            if data.draw(st.booleans(), label="with order"):
                op["order"] = data.draw(st.integers(0, 3))
        return op
    if kind == "add_action":
        op = {"op": "add_node", "id": new_id, "type": "action", "status": data.draw(st.sampled_from(STATUSES))}
        parents = of_type("goal", "action", "fact") if data.draw(st.integers(0, 9)) == 0 else of_type("goal", "action")
        if parents and data.draw(st.integers(0, 9)) > 0:  # sometimes no parent: refused
            op["parent"] = data.draw(st.sampled_from(parents))
        return op
    if kind == "add_fact":
        return {"op": "add_node", "id": new_id, "type": "fact", "content": data.draw(st.sampled_from(["open", "closed"]))}
    if kind == "add_result":
        return {"op": "add_node", "id": new_id, "type": "result", "ok": data.draw(st.booleans())}
    if kind == "update" and ids:
        target = data.draw(st.sampled_from(ids))
        value = data.draw(st.sampled_from(STATUSES + ["bogus"]))
        unset = ["content"] if data.draw(st.booleans()) else []
        return {"op": "update_node", "id": target, "set": {"status": value}, "unset": unset}
    if kind == "delete" and ids:
        return {"op": "delete_node", "id": data.draw(st.sampled_from(ids)), "cascade": data.draw(st.booleans())}
    if kind == "edge" and len(ids) >= 1:
        edge_type = data.draw(st.sampled_from(["before", "related_to", "produces", "replaces", "parent_of", "derived_from"]))
        return {
            "op": "add_edge",
            "from": data.draw(st.sampled_from(ids)),
            "to": data.draw(st.sampled_from(ids)),
            "type": edge_type,
        }
    if kind == "unedge" and model.edges:
        source, target, edge_type = data.draw(st.sampled_from(list(model.edges)))
        return {"op": "delete_edge", "from": source, "to": target, "type": edge_type}
    # deliberately malformed: unknown node or unknown type
    if data.draw(st.booleans()):
        return {"op": "update_node", "id": "no-such-node", "set": {"x": 1}}
    return {"op": "add_node", "id": new_id, "type": "place"}


class MemoryStateMachine(RuleBasedStateMachine):
    """Random transactions, refusals, reverts, snapshots and as_of reads vs a plain model."""

    def make_memory(self) -> Memory:
        return Memory()

    def reopen(self, memory: Memory) -> Memory:
        return memory

    @initialize()
    def start(self) -> None:
        self.memory = self.make_memory()
        self.model = ModelMemory()
        self.states: list[ModelMemory] = [ModelMemory()]  # index = t
        self.commits: list[list[tuple]] = [[]]  # index = t: (entity, before, after) per change
        self.answers: list[dict[str, Any]] = [self._answers(None)]
        self.counter = 0

    # -- helpers ------------------------------------------------------------------------------

    def _fresh(self, n: int = 3) -> list[str]:
        out = []
        for _ in range(n):
            self.counter += 1
            out.append(f"n{self.counter}")
        return out

    def _answers(self, as_of) -> dict[str, Any]:
        return {q: self.memory.query(q, as_of=as_of).value for q in WATCHED_QUERIES}

    def _record(self, new_model: ModelMemory) -> None:
        changes = []
        old = self.model
        for node_id in set(old.nodes) | set(new_model.nodes):
            before, after = old.nodes.get(node_id), new_model.nodes.get(node_id)
            if before != after:
                changes.append((("n", node_id), before, after))
        for key in set(old.edges) | set(new_model.edges):
            before, after = old.edges.get(key), new_model.edges.get(key)
            if before != after:
                changes.append((("e", key), before, after))
        self.model = new_model
        self.states.append(new_model.copy())
        self.commits.append(changes)
        self.answers.append(self._answers(None))

    # -- rules --------------------------------------------------------------------------------

    @rule(data=st.data(), dry_run=st.booleans())
    def transaction(self, data, dry_run) -> None:
        fresh = self._fresh()
        ops = [_draw_op(data, self.model, fresh) for _ in range(data.draw(st.integers(1, 4), label="op count"))]
        try:
            expected = self.model.apply(ops)
            outcome: Any = "commit"
        except ModelError as exc:
            outcome = exc
        except ModelRefusal as exc:
            outcome = exc
        t_before = self.memory.t
        try:
            report = self.memory.apply({"author": "machine", "reason": "random", "ops": ops}, dry_run=dry_run)
        except TransactionError as err:
            assert isinstance(outcome, ModelError), (ops, err.render(), outcome)
            assert self.memory.t == t_before
            return
        assert not isinstance(outcome, ModelError), (ops, "engine accepted what the model rejects", outcome)
        if isinstance(outcome, ModelRefusal):
            assert not report.committed, (ops, "engine committed what the model refuses", outcome.violations)
            found = {(v.constraint, v.node) for v in report.violations}
            assert outcome.violations <= found, (ops, outcome.violations, found)
            assert self.memory.t == t_before
            return
        assert not report.violations, (ops, report.to_json())
        if dry_run:
            assert not report.committed and report.dry_run
            assert self.memory.t == t_before
            return
        assert report.committed and report.t == t_before + 1
        self._record(expected)

    @precondition(lambda self: self.memory.t > 0)
    @rule(data=st.data())
    def revert(self, data) -> None:
        t = data.draw(st.integers(1, self.memory.t), label="revert t")
        changes = self.commits[t]
        model = self.model
        conflict = False
        added_edges = {key for (kind, key), before, after in changes if kind == "e" and before is None}
        for (kind, key), before, after in changes:
            current = model.nodes.get(key) if kind == "n" else model.edges.get(key)
            if current != after:
                conflict = True
            if kind == "n" and before is None and current is not None:
                # Undoing a node's creation must not drop edges later commits gave it.
                if any(key in (s, d) and (s, d, k) not in added_edges for (s, d, k) in model.edges):
                    conflict = True
        t_before = self.memory.t
        try:
            report = self.memory.revert(t, author="machine")
        except ConflictError:
            assert conflict, ("engine refused a revert the model allows", t)
            assert self.memory.t == t_before
            return
        except TransactionError as err:
            assert t == 1 and self.memory.commits(0)[0].genesis, err.render()
            return
        assert not conflict, ("engine reverted despite a later change", t)
        new = model.copy()
        node_changes = [c for c in changes if c[0][0] == "n"]
        edge_changes = [c for c in changes if c[0][0] == "e"]
        for (_, key), before, after in edge_changes:
            if after is not None:
                del new.edges[key]
        for (_, key), before, after in node_changes:
            if before is None:
                new.remove_node(key)
        for (_, key), before, after in sorted(node_changes, key=lambda c: str(c[0])):
            if before is not None and after is None:
                new.nodes[key] = before
        for (_, key), before, after in node_changes:
            if before is not None and after is not None:
                new.nodes[key] = before
        for (_, key), before, after in edge_changes:
            if before is not None:
                new.edges[key] = before
        violations = new.violations(model)
        if violations:
            assert not report.committed
            return
        assert report.committed, report.to_json()
        # Re-created nodes are created anew: compare sets here, the invariant checks order.
        assert set(self.memory.graph.node_ids()) == set(new.nodes)
        new.nodes = {n["id"]: (n["type"], {k: v for k, v in n.items() if k not in ("id", "type")}) for n in self.memory.export()["nodes"]}
        new.edges = {(e["from"], e["to"], e["type"]): {k: v for k, v in e.items() if k not in ("from", "to", "type")} for e in self.memory.export()["edges"]}
        self._record(new)

    @rule(name=st.sampled_from(["before-plan", "checkpoint", "latest"]))
    def snapshot(self, name) -> None:
        t = self.memory.snapshot(name)
        assert t == self.memory.t
        assert self.memory.query("nodes.count()", as_of=name).value == len(self.model.nodes)

    @rule(data=st.data())
    def read_the_past(self, data) -> None:
        t = data.draw(st.integers(0, self.memory.t), label="as_of t")
        assert self.memory.export(as_of=t) == self.states[t].document()

    @rule()
    def reopen_store(self) -> None:
        self.memory = self.reopen(self.memory)

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def memory_equals_model(self) -> None:
        if not hasattr(self, "model"):
            return
        assert self.memory.export() == self.model.document()

    @invariant()
    def constraints_hold(self) -> None:
        if hasattr(self, "model"):
            assert self.memory.violations() == []

    @invariant()
    def the_past_never_changes(self) -> None:
        if not hasattr(self, "model"):
            return
        for t, answers in enumerate(self.answers):
            assert self._answers(t) == answers, t

    @invariant()
    def ids_resolve_to_their_own_nodes(self) -> None:
        if not hasattr(self, "model"):
            return
        for node_id, (node_type, _) in self.model.nodes.items():
            assert self.memory.query("#$i", params={"i": node_id}).nodes[0]["type"] == node_type
        assert self.memory.query("#gone").ids == []


