"""The reference model's rules (docs/rules.md, "What happens inside a transaction"): clearing,
events, triggers round by round to a fixed point in file order, propagation along declared
edges, and marks with their records.

Rule files are parsed by hgm's parser into syntax trees (``parse_rule_file``); everything
after that — matching events, evaluating conditions and targets, marking, setting — is done
here, on the model's plain graph.

>>> from hgm_engine.testing.graphmodel import ModelGraph
>>> from hgm_engine.testing.ops import Working
>>> base = ModelGraph.from_document({"nodes": [{"id": "g", "type": "goal"},
...     {"id": "a", "type": "action", "status": "pending"}], "edges": [{"from": "g", "to": "a", "type": "parent_of"}]})
>>> rules = RuleModel(); rules.load("rule r: on update action where status = 'failed' then mark parent as needs_review")
>>> work = Working(base, t=2); work.apply({"op": "update_node", "id": "a", "set": {"status": "failed"}})
>>> outcome = rules.run(work)
>>> outcome.fired, outcome.dirtied
(['r'], [{'id': 'g', 'state': 'needs_review', 'because': ['a'], 'rules': ['r']}])
"""

from __future__ import annotations

from typing import Any

import attrs

from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.query import parse_rule_file
from hgm_engine.query import syntax as S
from hgm_engine.testing.graphmodel import ModelGraph
from hgm_engine.testing.interpreter import holds, relative
from hgm_engine.testing.ops import ModelError, RESERVED, Working, same_value

__all__ = ["RuleModel", "RuleOutcome", "MAX_ROUNDS", "DEFAULT_DEPTH"]

MAX_ROUNDS = 32
DEFAULT_DEPTH = 10
_STRENGTH = {"needs_review": 1, "blocked": 2}


@attrs.define
class RuleOutcome:
    """What the rules did in one transaction: the report's three rule fields."""

    fired: list[str] = attrs.Factory(list)
    dirtied: list[dict[str, Any]] = attrs.Factory(list)
    cleared: list[dict[str, Any]] = attrs.Factory(list)


def _value(node: S.Literal | S.ListLiteral) -> Any:
    return [_value(item) for item in node.items] if isinstance(node, S.ListLiteral) else node.value


class RuleModel:
    """Named rule sets in the order they were first loaded; their statements in file order."""

    def __init__(self, schema: Schema = DEFAULT_SCHEMA):
        self.schema = schema
        self.sets: dict[str, tuple[S.Statement, ...]] = {}

    def load(self, text: str, name: str = "default") -> None:
        """Load (or replace, keeping its place) the rule set ``name``."""
        self.sets[name] = parse_rule_file(text).statements

    def remove(self, name: str) -> None:
        del self.sets[name]

    def _statements(self, kind: type) -> list:
        return [s for statements in self.sets.values() for s in statements if isinstance(s, kind)]

    @property
    def triggers(self) -> list[S.TriggerStatement]:
        return self._statements(S.TriggerStatement)

    @property
    def propagations(self) -> list[S.PropagateStatement]:
        return self._statements(S.PropagateStatement)

    @property
    def constraints(self) -> dict[str, S.ConstraintDef]:
        return {s.name: s.definition for s in self._statements(S.ConstraintStatement)}

    # -- one transaction -------------------------------------------------------------------

    def run(self, work: Working) -> RuleOutcome:
        """Run the rules on a transaction whose ops have been applied (raises
        :class:`~hgm_engine.testing.ops.ModelError` ``rule-loop`` past the round cap)."""
        return _Run(self, work).execute()


class _Run:
    def __init__(self, rules: RuleModel, work: Working):
        self.rules = rules
        self.schema = rules.schema
        self.work = work
        self.graph: ModelGraph = work.graph
        self.before: ModelGraph = work.before
        self.outcome = RuleOutcome()
        self.starts: list[str] = []  # propagation starting points, in order

    def execute(self) -> RuleOutcome:
        self.clear()
        events = self.initial_events()
        self.starts = [node for kind, node in events if kind in ("update", "delete")]
        rounds = 0
        while events:
            rounds += 1
            if rounds > MAX_ROUNDS:
                raise ModelError("rule-loop")
            events = self.round(events)
        self.propagate()
        return self.outcome

    def clear(self) -> None:
        done = set()
        confirmed = {node for node, by in self.work.clears if by == "confirm"}
        for node, by in self.work.clears:
            if node in done or node not in self.graph.nodes:
                continue
            by = "confirm" if node in confirmed else by  # a confirm says more than an update
            node_type, attributes = self.graph.nodes[node]
            if "dirty" in attributes or "dirty_marks" in attributes:
                done.add(node)
                self.outcome.cleared.append({"id": node, "state": attributes.get("dirty"), "by": by})
                self.graph.nodes[node] = (node_type, {k: v for k, v in attributes.items() if k not in RESERVED})

    def initial_events(self) -> list[tuple[str, str]]:
        events = []
        for change in self.work.changes():
            if change["kind"] == "node_removed":
                events.append(("delete", change["id"]))
            elif change["kind"] == "node_added":
                events.append(("add", change["id"]))
            elif change["kind"] == "node_updated" and (set(change["before"]) | set(change["after"])) - set(RESERVED):
                events.append(("update", change["id"]))
        return events

    def round(self, events: list[tuple[str, str]]) -> list[tuple[str, str]]:
        following: list[tuple[str, str]] = []
        for kind, node in events:
            for trigger in self.rules.triggers:
                state = self.before if kind == "delete" else self.graph
                if trigger.event != kind or node not in state.nodes or state.type_of(node) != trigger.node_type:
                    continue
                if trigger.condition is not None and not holds(trigger.condition, node, state, self.schema):
                    continue
                if trigger.name not in self.outcome.fired:
                    self.outcome.fired.append(trigger.name)
                for effect in trigger.effects:
                    targets = [node] if effect.target is None else relative(effect.target, node, state, self.schema)
                    for target in targets:
                        if target not in self.graph.nodes:
                            continue
                        if isinstance(effect, S.MarkEffect):
                            self.mark(target, effect.state, trigger.name, node, effect.reason)
                            self.starts.append(target)
                        elif self.set(target, effect.assignments):
                            self.starts.append(target)
                            if ("update", target) not in following:
                                following.append(("update", target))
        return following

    def set(self, node: str, assignments: tuple[S.Assignment, ...]) -> bool:
        node_type, attributes = self.graph.nodes[node]
        new = dict(attributes)
        for assignment in assignments:
            new[assignment.name] = _value(assignment.value)
        changed = any(k not in attributes or not same_value(attributes[k], new[k]) for k in new)
        self.graph.nodes[node] = (node_type, new)
        return changed

    def mark(self, node: str, state: str, rule: str, cause: str, reason: str | None) -> None:
        node_type, attributes = self.graph.nodes[node]
        marks = list(attributes.get("dirty_marks", []))
        if any(m.get("rule") == rule and m.get("because") == [cause] and m.get("state") == state for m in marks):
            return  # once per rule, cause and state
        record = {"state": state, "rule": rule, "because": [cause], "t": self.work.t}
        if reason is not None:
            record["reason"] = reason
        marks.append(record)
        strongest = max((m["state"] for m in marks), key=_STRENGTH.__getitem__)
        self.graph.nodes[node] = (node_type, {**attributes, "dirty": strongest, "dirty_marks": marks})
        entry = next((d for d in self.outcome.dirtied if d["id"] == node), None)
        if entry is None:
            entry = {"id": node, "state": strongest, "because": [], "rules": []}
            self.outcome.dirtied.append(entry)
        entry["state"] = strongest
        if cause not in entry["because"]:
            entry["because"].append(cause)
        if rule not in entry["rules"]:
            entry["rules"].append(rule)

    def neighbours(self, node: str, declaration: S.PropagateStatement) -> list[str]:
        state = self.graph if node in self.graph.nodes else self.before
        edge = (declaration.edge_type,)
        found = []  # with both, what depends on the node (backward) comes first
        if declaration.direction in ("backward", "both"):
            found += state.in_neighbours(node, edge)
        if declaration.direction in ("forward", "both"):
            found += state.out_neighbours(node, edge)
        # The walk goes through the nodes that are still there: a deleted node is a starting
        # point only (along its edges as they were), never a node passed through.
        return [other for other in found if other in self.graph.nodes]

    def propagate(self) -> None:
        added = {node for node in self.graph.nodes if not self.before.same(self.graph, node)}
        starts = [n for n in dict.fromkeys(self.starts) if n not in added]
        for start in starts:  # from every starting point, along each declaration in file order
            state = self.graph if start in self.graph.nodes else self.before
            for declaration in self.rules.propagations:
                depth = declaration.depth if declaration.depth is not None else DEFAULT_DEPTH
                if declaration.from_type is not None and state.type_of(start) != declaration.from_type:
                    continue
                seen, level = {start}, [start]
                for _ in range(depth):
                    following = []
                    for current in level:
                        for reached in self.neighbours(current, declaration):
                            if reached not in seen:
                                seen.add(reached)
                                following.append(reached)
                    for reached in following:
                        if reached in self.graph.nodes and (declaration.to_type is None or self.graph.type_of(reached) == declaration.to_type):
                            self.mark(reached, "needs_review", f"propagate:{declaration.edge_type}", start, None)
                    level = following
