"""Running rules inside a transaction: triggers to a fixed point, then staleness propagation.

The order is fixed and documented (docs/rules.md):

1. Events are the transaction's own net node changes — add, update (other than of the marks
   themselves), delete — in the order the transaction report lists them.
2. Each event is matched against the triggers in the order they were loaded; a matching
   trigger fires its effects in order. ``mark`` sets a node's dirty state (``needs_review``
   or ``blocked``, blocked being the stronger) and records the rule, the cause and ``t``;
   ``set`` changes attributes, and a real change is an *update* event of the next round.
3. Rounds repeat until no new event appears, at most ``max_rounds`` times (``MAX_ROUNDS``,
   32, unless the memory was made with ``max_rule_rounds``). Loading refuses rule sets that
   could loop; the cap is the second guard, and also stops a finite cascade longer than it
   (a ``rule-loop`` error that says the cap was reached and what the last round fired).
4. Staleness then flows from every changed, deleted, set or marked node along the declared
   edges, breadth-first, to the declared depth, marking ``needs_review``.

Marks live in two node attributes, ``dirty`` (the state) and ``dirty_marks`` (one record per
mark: state, rule, because, reason, t), so queries can see them. A user update of a node
(or the ``confirm`` op) clears its marks, and the report lists the clearing.
"""

from __future__ import annotations

from typing import Any, Iterable

from hgm_engine.errors import Problem, RequestError
from hgm_engine.model import same_json, thaw
from hgm_engine.model import GraphOverlay
from hgm_engine.rules.compile import CompiledTrigger, Propagation, RuleSet, compile_rules
from hgm_engine.model import Schema
from hgm_engine.txn import SUMMARIZES, SUMMARY_KIND, OpContext
from hgm_engine.errors import TransactionError

__all__ = ["RuleEngine", "MAX_ROUNDS", "MARK_ATTRIBUTES", "STATE_RANK", "SUMMARY_RULE", "checked_rounds"]

MAX_ROUNDS = 32  # the default cap on trigger rounds per transaction (Memory(max_rule_rounds=...))
MARK_ATTRIBUTES = ("dirty", "dirty_marks")
STATE_RANK = {None: 0, "needs_review": 1, "blocked": 2}
SUMMARY_RULE = "summary_stale"  # the built-in rule that marks a summary when what it covers changes


def checked_rounds(value: Any) -> int:
    """``value`` as a cap on rule rounds: a positive integer, or an ``invalid-argument`` error.

    >>> checked_rounds(64)
    64
    >>> checked_rounds(0)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: invalid-argument at max_rule_rounds: the cap on rule rounds is a positive integer, not 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RequestError(
            [Problem("invalid-argument", f"the cap on rule rounds is a positive integer, not {value!r}", where="max_rule_rounds")]
        )
    return value


class RuleEngine:
    """The loaded rule sets of a memory and the commit hook that runs them; ``max_rounds``
    caps the trigger rounds of one transaction.

    >>> from hgm_engine.model import DEFAULT_SCHEMA
    >>> RuleEngine(DEFAULT_SCHEMA).max_rounds
    32
    """

    def __init__(self, schema: Schema, *, max_rounds: int = MAX_ROUNDS):
        self.schema = schema
        self._max_rounds = checked_rounds(max_rounds)
        self.rule_sets: dict[str, RuleSet] = {}
        self._compiled: dict[str, tuple[CompiledTrigger, ...]] = {}
        self._triggers: tuple[CompiledTrigger, ...] = ()
        self._propagations: tuple[Propagation, ...] = ()

    @property
    def max_rounds(self) -> int:
        """The cap on trigger rounds in one transaction (a positive integer)."""
        return self._max_rounds

    @max_rounds.setter
    def max_rounds(self, value: int) -> None:
        self._max_rounds = checked_rounds(value)

    def set(self, name: str, rule_set: RuleSet | None, triggers: tuple[CompiledTrigger, ...] | None = None) -> None:
        """Load ``rule_set`` under ``name`` (None unloads it), with its ``triggers`` already
        compiled (:func:`~hgm_engine.rules.compile_rule_file`; compiled here when None). The
        other sets are not compiled again."""
        if rule_set is None:
            self.rule_sets.pop(name, None)
            self._compiled.pop(name, None)
        else:
            compiled = compile_rules(rule_set, self.schema) if triggers is None else tuple(triggers)
            self.rule_sets[name] = rule_set
            self._compiled[name] = compiled
        self._triggers = tuple(t for n in self.rule_sets for t in self._compiled[n])
        self._propagations = tuple(p for loaded in self.rule_sets.values() for p in loaded.propagations)

    @property
    def active(self) -> bool:
        return bool(self._triggers or self._propagations)

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
        self.last_round: list[tuple[str, str]] = []  # (rule, node) fired in the latest round

    def execute(self) -> tuple[list[str], list[dict[str, Any]]]:
        self._clear_updated()
        events = self._initial_events()
        if self.engine._triggers:
            cap = self.engine.max_rounds
            for _ in range(cap):
                events = self._round(events)
                if not events:
                    break
            else:
                raise TransactionError([self._cap_reached(cap, events)])
        if self.engine._propagations:
            self._propagate()
        if SUMMARIZES in self.engine.schema.edge_types:
            self._summaries_stale()
        return list(dict.fromkeys(self.fired)), list(self.dirtied.values())

    def _cap_reached(self, cap: int, pending: list[tuple[str, Any]]) -> Problem:
        """Round ``cap`` still made events: say so, with what the last round fired (rules
        on nodes, the first few) and how many updates were still to come."""
        shown = [f"{rule} on {node!r}" for rule, node in self.last_round[:5]]
        if len(self.last_round) > 5:
            shown.append(f"and {len(self.last_round) - 5} more")
        return Problem(
            "rule-loop",
            f"rules were still firing when the cap of {cap} rounds was reached, with {len(pending)} "
            f"update event(s) left; round {cap} fired {', '.join(shown)}. A finite cascade longer "
            "than the cap needs a higher one (Memory(max_rule_rounds=...)); nothing was committed",
            where=f"rule {self.last_round[-1][0]}" if self.last_round else None,
        )

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
        self.last_round = []
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
                self.last_round.append((trigger.name, node.id))
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
        # Marks stored before graph files and transactions were checked for them may be
        # anything: a 'dirty_marks' that is no list is replaced, a 'dirty' that is no state
        # is overridden, marks that are no objects are kept as they were.
        stored = node.attrs.get("dirty_marks", ())
        marks = [thaw(m) for m in stored] if isinstance(stored, tuple) else []
        record = {"state": state, "rule": rule, "because": [cause], "t": self.t}
        if reason:
            record["reason"] = reason
        if any(
            isinstance(m, dict) and m.get("rule") == rule and m.get("because") == [cause] and m.get("state") == state
            for m in marks
        ):
            return
        marks.append(record)
        current = node.attrs.get("dirty")
        rank = STATE_RANK.get(current, 0) if isinstance(current, str) else 0
        strongest = state if STATE_RANK[state] > rank else current
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

    # -- summaries (docs/time.md) ---------------------------------------------------------------

    def _summaries_stale(self) -> None:
        """The built-in rule ``summary_stale``: a summary is marked ``needs_review`` when a
        node it summarizes is updated or deleted, or gains or loses an edge (a new child under
        a summarized scenario, say) — marks alone are no change."""
        if not self.base.nodes_with("fact", "kind", SUMMARY_KIND):
            return  # no summary yet (a summary is a fact: the summarizes edge starts at one)
        touched: dict[str, None] = {}
        for change in self.overlay.changes():
            if change.kind in ("node_updated", "node_removed"):
                before, after = change.before.attrs, (change.after.attrs if change.after is not None else {})
                if change.kind == "node_updated" and not {
                    k for k in set(before) | set(after) if before.get(k) != after.get(k)
                } - set(MARK_ATTRIBUTES):
                    continue
                touched[change.before.id] = None
            elif change.kind.startswith("edge"):
                edge = change.after if change.after is not None else change.before
                if edge.type != SUMMARIZES:
                    touched[edge.source] = None
                    touched[edge.target] = None
        for node_id in touched:
            view = self.base if node_id not in self.overlay else self.overlay
            for summary in view.in_adjacency(node_id).by_type.get(SUMMARIZES, ()):
                if summary in self.overlay and summary not in touched:
                    self.fired.append(SUMMARY_RULE)
                    self._mark(summary, "needs_review", SUMMARY_RULE, node_id, "a node it summarizes changed")

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
