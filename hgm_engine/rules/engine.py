"""Running rules inside a transaction: triggers to a fixed point, then staleness propagation.

The order is fixed and documented (docs/rules.md):

1. Events are the transaction's own net node changes — add, update (other than of the marks
   themselves), delete — in the order the transaction report lists them.
2. Each event is matched against the triggers in the order they were loaded; a matching
   trigger fires its effects in order. ``mark`` sets a node's dirty state (``needs_review``
   or ``blocked``, blocked being the stronger) and records the rule, the cause and ``t``;
   ``set`` changes attributes, and a real change is an *update* event of the next round.
3. Rounds repeat until no new event appears, at most ``MAX_ROUNDS`` times (loading refuses
   rule sets that could loop; the cap is the second guard).
4. Staleness then flows from every changed, deleted, set or marked node along the declared
   edges, breadth-first, to the declared depth, marking ``needs_review``.

Marks live in two node attributes, ``dirty`` (the state) and ``dirty_marks`` (one record per
mark: state, rule, because, reason, t), so queries can see them. A user update of a node
(or the ``confirm`` op) clears its marks, and the report lists the clearing.
"""

from __future__ import annotations

from typing import Any, Iterable

from hgm_engine.errors import Problem
from hgm_engine.model import same_json, thaw
from hgm_engine.model import GraphOverlay
from hgm_engine.rules.compile import CompiledTrigger, Propagation, RuleSet, compile_rules
from hgm_engine.model import Schema
from hgm_engine.txn import OpContext
from hgm_engine.errors import TransactionError

__all__ = ["RuleEngine", "MAX_ROUNDS", "MARK_ATTRIBUTES", "STATE_RANK"]

MAX_ROUNDS = 32
MARK_ATTRIBUTES = ("dirty", "dirty_marks")
STATE_RANK = {None: 0, "needs_review": 1, "blocked": 2}


class RuleEngine:
    """The loaded rule sets of a memory and the commit hook that runs them."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.rule_sets: dict[str, RuleSet] = {}
        self._triggers: tuple[CompiledTrigger, ...] = ()
        self._propagations: tuple[Propagation, ...] = ()

    def set(self, name: str, rule_set: RuleSet | None) -> None:
        if rule_set is None:
            self.rule_sets.pop(name, None)
        else:
            self.rule_sets[name] = rule_set
        triggers: list[CompiledTrigger] = []
        propagations: list[Propagation] = []
        for loaded in self.rule_sets.values():
            triggers.extend(compile_rules(loaded, self.schema))
            propagations.extend(loaded.propagations)
        self._triggers = tuple(triggers)
        self._propagations = tuple(propagations)

    @property
    def active(self) -> bool:
        return bool(self._triggers or self._propagations)

    def all_triggers(self) -> RuleSet:
        merged = RuleSet()
        for loaded in self.rule_sets.values():
            merged = merged.merged(loaded)
        return merged

    # -- the hook -----------------------------------------------------------------------------

    def __call__(self, memory, overlay: GraphOverlay, ctx: OpContext) -> tuple[list[str], list[dict[str, Any]]]:
        run = _Run(self, memory, overlay, ctx)
        return run.execute()


class _Run:
    def __init__(self, engine: RuleEngine, memory, overlay: GraphOverlay, ctx: OpContext):
        self.engine = engine
        self.base = memory.graph
        self.overlay = overlay
        self.ctx = ctx
        self.t = memory.t + 1
        self.fired: list[str] = []
        self.dirtied: dict[str, dict[str, Any]] = {}
        self.origins: dict[str, None] = {}

    def execute(self) -> tuple[list[str], list[dict[str, Any]]]:
        self._clear_updated()
        events = self._initial_events()
        if self.engine._triggers:
            for _ in range(MAX_ROUNDS):
                events = self._round(events)
                if not events:
                    break
            else:
                raise TransactionError(
                    [
                        Problem(
                            "rule-loop",
                            f"rules kept firing after {MAX_ROUNDS} rounds: " + ", ".join(dict.fromkeys(self.fired[-8:])),
                        )
                    ]
                )
        if self.engine._propagations:
            self._propagate()
        return list(dict.fromkeys(self.fired)), list(self.dirtied.values())

    # -- events -------------------------------------------------------------------------------

    def _clear_updated(self) -> None:
        """A user update of a marked node, or ``confirm``, clears its marks."""
        for node_id in list(self.ctx.clearing_ids):  # in the order of the ops
            node = self.overlay.node(node_id)
            if node is None or "dirty" not in node.attrs:
                continue
            attributes = {k: v for k, v in node.attrs.items() if k not in MARK_ATTRIBUTES}
            self.overlay.set_node_attrs(node_id, attributes)
            self.ctx.cleared.append(
                {"id": node_id, "state": node.attrs.get("dirty"), "by": "confirm" if node_id in self.ctx.confirmed_ids else "update"}
            )

    def _initial_events(self) -> list[tuple[str, Any]]:
        events = []
        for change in self.overlay.changes():
            if change.kind == "node_added":
                events.append(("add", change.after))
            elif change.kind == "node_removed":
                events.append(("delete", change.before))
                self.origins[change.before.id] = None
            elif change.kind == "node_updated":
                before, after = change.before.attrs, change.after.attrs
                changed = {k for k in set(before) | set(after) if k not in before or k not in after or not same_json(before[k], after[k])}
                if changed - set(MARK_ATTRIBUTES):
                    events.append(("update", change.after))
                    self.origins[change.after.id] = None
        return events

    def _round(self, events: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        following: dict[str, tuple[str, Any]] = {}  # one update event per node and round
        for event, node in events:
            view = self.base if event == "delete" else self.overlay
            for compiled in self.engine._triggers:
                trigger = compiled.trigger
                if trigger.event != event or trigger.node_type != node.type:
                    continue
                params = {"node": node.id}
                if compiled.condition is not None and not compiled.condition.run(view, params=params).value:
                    continue
                self.fired.append(trigger.name)
                for effect, target_query in zip(trigger.effects, compiled.targets):
                    targets = [node.id] if target_query is None else target_query.run(view, params=params).value
                    for target in targets:
                        if target not in self.overlay:
                            continue
                        if effect.kind == "mark":
                            self._mark(target, effect.state, trigger.name, node.id, effect.reason)
                        else:
                            changed = self._set(target, effect.assignments)
                            if changed is not None:
                                following.pop(target, None)  # keep the event at its latest position
                                following[target] = ("update", changed)
                                self.origins[target] = None
        return [(kind, self.overlay.node(node_id)) for node_id, (kind, _) in following.items() if node_id in self.overlay]

    # -- effects ------------------------------------------------------------------------------

    def _set(self, node_id: str, assignments: Iterable[tuple[str, Any]]):
        node = self.overlay.node(node_id)
        attributes = dict(node.attrs)
        for name, value in assignments:
            attributes[name] = value
        if same_json(attributes, node.attrs):
            return None
        return self.overlay.set_node_attrs(node_id, attributes)

    def _mark(self, node_id: str, state: str, rule: str, cause: str, reason: str | None) -> None:
        node = self.overlay.node(node_id)
        marks = [thaw(m) for m in node.attrs.get("dirty_marks", ())]
        record = {"state": state, "rule": rule, "because": [cause], "t": self.t}
        if reason:
            record["reason"] = reason
        if any(m.get("rule") == rule and m.get("because") == [cause] and m.get("state") == state for m in marks):
            return
        marks.append(record)
        current = node.attrs.get("dirty")
        strongest = state if STATE_RANK[state] > STATE_RANK.get(current, 0) else current
        attributes = dict(node.attrs)
        attributes["dirty"] = strongest
        attributes["dirty_marks"] = marks
        self.overlay.set_node_attrs(node_id, attributes)
        entry = self.dirtied.setdefault(node_id, {"id": node_id, "state": strongest, "because": [], "rules": []})
        entry["state"] = strongest
        if cause not in entry["because"]:
            entry["because"].append(cause)
        if rule not in entry["rules"]:
            entry["rules"].append(rule)
        self.origins[node_id] = None

    # -- propagation --------------------------------------------------------------------------

    def _neighbours(self, node_id: str, declaration: Propagation) -> list[str]:
        view = self.overlay if node_id in self.overlay else self.base
        edge_type = declaration.edge_type
        found: list[str] = []
        if declaration.direction in ("backward", "both"):
            found.extend(view.in_adjacency(node_id).by_type.get(edge_type, ()))
        if declaration.direction in ("forward", "both"):
            found.extend(view.out_adjacency(node_id).by_type.get(edge_type, ()))
        return [other for other in dict.fromkeys(found) if other in self.overlay]

    def _propagate(self) -> None:
        for origin in list(self.origins):
            before, after = self.base.node(origin), self.overlay.node(origin)
            if after is not None and (before is None or before.seq != after.seq):
                continue  # added by the transaction (docs/rules.md, step 5): not a starting point
            origin_node = after or before
            for declaration in self.engine._propagations:
                if declaration.from_type is not None and origin_node.type != declaration.from_type:
                    continue
                reached = {origin}
                level = [origin]
                for _ in range(declaration.depth):
                    following = []
                    for node_id in level:
                        for other in self._neighbours(node_id, declaration):
                            if other in reached:
                                continue
                            reached.add(other)
                            following.append(other)
                            if declaration.to_type is None or self.overlay.node(other).type == declaration.to_type:
                                self._mark(other, "needs_review", declaration.name, origin, None)
                    level = following
                    if not level:
                        break
