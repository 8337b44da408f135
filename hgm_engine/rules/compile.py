"""Memory rules: constraints, triggers and propagation declarations in one small language.

A rule file (``*.hgmr``) holds statements in the grammar family of the path language
(``grammar/hgm.lark``, start ``rule_file``; ``//`` starts a comment)::

    constraint done_has_result: each action where status = 'done' must exists(results)
    rule closure_blocks_visits: on add fact where content =~ 'closed'
        then mark related_entities.related.where(type = 'action', status = 'pending')
             as blocked because 'the place is closed'
    propagate derived_from backward depth 3

Loading checks everything before anything is kept: syntax (line, column, caret), unknown
types, relations and edge types (``unknown-name`` with "did you mean"), and trigger cycles —
a rule set whose ``set`` effects can re-trigger its rules forever is refused, naming the cycle.

>>> rs = parse_rules("rule r: on update action where status = 'failed' then mark parent as needs_review")
>>> [(t.name, t.event, t.node_type) for t in rs.triggers]
[('r', 'update', 'action')]
"""

from __future__ import annotations

from typing import Any

import attrs
from lark import Token, Transformer, v_args
from lark.exceptions import UnexpectedInput

from hgm_engine.query import syntax as S
from hgm_engine.query.analyze import _Checker
from hgm_engine.errors import HGMError, Problem, QueryAnalysisError, RuleError, line_column
from hgm_engine.query.parser import _parser, _syntax_error, _ToAst, decode_string
from hgm_engine.query import CompiledQuery, QueryCache
from hgm_engine.model import DEFAULT_SCHEMA, Schema

__all__ = ["RuleSet", "Trigger", "Effect", "Propagation", "ConstraintRule", "parse_rules", "compile_rules"]


@attrs.frozen
class ConstraintRule:
    name: str
    text: str  # "each TYPE [where COND] must COND"


@attrs.frozen
class Effect:
    """``mark TARGET as STATE [because REASON]`` or ``set TARGET with a = v, ...``."""

    kind: str  # mark | set
    target: str  # "self" or a relative path text
    state: str | None = None
    reason: str | None = None
    assignments: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class Trigger:
    name: str
    event: str  # add | update | delete
    node_type: str
    condition: str | None  # condition text, or None
    effects: tuple[Effect, ...]
    # ``attr = constant`` tests the condition requires (a conjunction's parts), for the cycle check
    requires: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class Propagation:
    """Staleness flows along ``edge_type``: ``backward`` reaches the nodes with an edge *into*
    a changed node (what depends on it), ``forward`` the nodes it points to, ``both`` both."""

    edge_type: str
    direction: str
    depth: int = 10
    from_type: str | None = None
    to_type: str | None = None

    @property
    def name(self) -> str:
        return f"propagate:{self.edge_type}"


@attrs.frozen
class RuleSet:
    constraints: tuple[ConstraintRule, ...] = ()
    triggers: tuple[Trigger, ...] = ()
    propagations: tuple[Propagation, ...] = ()
    text: str = ""

    def merged(self, other: "RuleSet") -> "RuleSet":
        return RuleSet(
            self.constraints + other.constraints,
            self.triggers + other.triggers,
            self.propagations + other.propagations,
            (self.text + "\n" + other.text).strip(),
        )


@v_args(meta=True)
class _Statements(_ToAst):
    """Turns the rule-file tree into statements, reusing the query AST for conditions/paths."""

    def rule_file(self, meta, children):
        return list(children)

    def constraint_stmt(self, meta, children):
        _kw, name, definition = children
        return ("constraint", name, definition)

    def trigger_stmt(self, meta, children):
        _rule, name, _on, event, node_type, _where, condition, _then, *effects = children
        return ("trigger", name, str(event), node_type, condition, [e for e in effects if not isinstance(e, Token)])

    def propagate_stmt(self, meta, children):
        _kw, edge_type, direction, _depth_kw, depth, _from_kw, from_type, _to_kw, to_type = children
        return ("propagate", edge_type, str(direction), depth, from_type, to_type)

    def mark_effect(self, meta, children):
        _mark, target, _as, state, _because, reason = children
        return ("mark", target, str(state), reason)

    def set_effect(self, meta, children):
        _set, target, _with, *assignments = children
        return ("set", target, None, assignments)

    def self_target(self, meta, children):
        return "self"

    def assignment(self, meta, children):
        name, value = children
        return (str(name), value)


def parse_rules(text: str, schema: Schema = DEFAULT_SCHEMA) -> RuleSet:
    """Parse and check a rule file; raise :class:`RuleError` or a query error naming every problem."""
    if not isinstance(text, str):
        raise TypeError("rules are text")
    parser = _parser("rule_file")
    try:
        tree = parser.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc, parser) from None
    statements = _Statements(text).transform(tree)
    checker = _Checker(text, schema)
    constraints, triggers, propagations = [], [], []
    names: dict[str, int] = {}

    def name_of(token) -> str:
        name = str(token)
        if name in names:
            checker.report("invalid-argument", f"rule name {name!r} is used twice", token.start_pos)
        names[name] = token.start_pos
        return name

    for statement in statements:
        kind = statement[0]
        if kind == "constraint":
            _, token, definition = statement
            if definition.node_type not in schema.node_types:
                checker.unknown("node type", definition.node_type, definition.type_span.start, schema.node_types)
            for condition in (definition.where, definition.must):
                if condition is not None:
                    checker.condition(condition)
            constraints.append(ConstraintRule(name_of(token), text[definition.span.start : definition.span.end]))
        elif kind == "trigger":
            _, token, event, type_token, condition, effects = statement
            if str(type_token) not in schema.node_types:
                checker.unknown("node type", str(type_token), type_token.start_pos, schema.node_types)
            if condition is not None:
                checker.condition(condition)
            compiled_effects = []
            for effect_kind, target, state, extra in effects:
                if target == "self":
                    target_text = "self"
                else:
                    checker.steps(target.steps, after_start=False)
                    target_text = text[target.span.start : target.span.end]
                if effect_kind == "mark":
                    reason = decode_string(str(extra)) if extra is not None else None
                    compiled_effects.append(Effect("mark", target_text, state, reason))
                else:
                    assignments = []
                    for name, value in extra:
                        if name in ("id", "type", "dirty", "dirty_marks"):
                            checker.report("invalid-argument", f"a rule cannot set {name!r}", token.start_pos)
                        assignments.append((name, _literal(value)))
                    compiled_effects.append(Effect("set", target_text, None, None, tuple(assignments)))
            condition_text = None if condition is None else text[condition.span.start : condition.span.end]
            triggers.append(
                Trigger(
                    name_of(token),
                    event,
                    str(type_token),
                    condition_text,
                    tuple(compiled_effects),
                    _required_equalities(condition),
                )
            )
        else:
            _, edge_token, direction, depth, from_type, to_type = statement
            if str(edge_token) not in schema.edge_types:
                checker.unknown("edge type", str(edge_token), edge_token.start_pos, schema.edge_types)
            for type_token in (from_type, to_type):
                if type_token is not None and str(type_token) not in schema.node_types:
                    checker.unknown("node type", str(type_token), type_token.start_pos, schema.node_types)
            depth_value = 10 if depth is None else int(depth)
            if depth_value < 1:
                checker.report("invalid-argument", "depth must be at least 1", depth.start_pos)
            propagations.append(
                Propagation(
                    str(edge_token),
                    direction,
                    depth_value,
                    None if from_type is None else str(from_type),
                    None if to_type is None else str(to_type),
                )
            )
    for param, offset in checker.params.items():
        checker.report("invalid-argument", f"rules cannot use parameters (${param})", offset)
    if checker.focus_offset is not None:
        checker.report("invalid-argument", "rules cannot use the focus", checker.focus_offset)
    if checker.problems:
        checker.problems.sort(key=lambda item: item[0])
        raise QueryAnalysisError([p for _, p in checker.problems], text)
    rule_set = RuleSet(tuple(constraints), tuple(triggers), tuple(propagations), text)
    cycle = trigger_cycle(rule_set)
    if cycle:
        import re

        found = re.search(r"\brule\s+" + re.escape(cycle[0]) + r"\s*:", text)
        position = found.start() if found else 0
        line, column = line_column(text, max(position, 0))
        raise RuleError(
            [
                Problem(
                    "rule-cycle",
                    "these rules can trigger each other forever: " + " -> ".join(cycle + cycle[:1]),
                    line,
                    column,
                )
            ],
            text,
        )
    return rule_set


def _required_equalities(condition: Any) -> tuple[tuple[str, Any], ...]:
    """The ``attr = constant`` parts a condition cannot hold without."""
    if condition is None:
        return ()
    parts = condition.operands if isinstance(condition, S.And) else (condition,)
    found = []
    for part in parts:
        if (
            isinstance(part, S.Compare)
            and part.op == "="
            and isinstance(part.left, S.AttrRef)
            and isinstance(part.right, S.Literal)
        ):
            found.append((part.left.name, part.right.value))
    return tuple(found)


def _literal(node: Any) -> Any:
    if isinstance(node, S.ListLiteral):
        return tuple(_literal(i) for i in node.items)
    return node.value


def trigger_cycle(rule_set: RuleSet) -> list[str]:
    """Triggers whose ``set`` effects can fire each other forever, as a cycle, or [].

    Rule A feeds rule B when A sets attributes and B fires on updates (of any attribute) of
    nodes meeting its condition, unless A's values contradict an ``attr = constant`` that B
    requires. Set values are constants, so a group of rules feeding each other can only run
    forever when it gives some attribute two different values; otherwise every node settles
    after each attribute was set once.
    """
    triggers = {t.name: t for t in rule_set.triggers}
    edges: dict[str, list[str]] = {name: [] for name in triggers}
    for trigger in rule_set.triggers:
        for effect in trigger.effects:
            if effect.kind != "set":
                continue
            assigned = dict(effect.assignments)
            for other in rule_set.triggers:
                if other.event != "update":
                    continue
                if any(name in assigned and assigned[name] != value for name, value in other.requires):
                    continue
                if other.name not in edges[trigger.name]:
                    edges[trigger.name].append(other.name)
    for group in _strongly_connected(edges):
        if len(group) == 1 and group[0] not in edges[group[0]]:
            continue
        values: dict[str, set] = {}
        for name in group:
            for effect in triggers[name].effects:
                for attribute, value in effect.assignments:
                    values.setdefault(attribute, set()).add(repr(value))
        if any(len(v) > 1 for v in values.values()):
            return _cycle_in(group, edges)
    return []


def _strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (small graphs: rule sets)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for following in edges[node]:
            if following not in index:
                visit(following)
                low[node] = min(low[node], low[following])
            elif following in on_stack:
                low[node] = min(low[node], index[following])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            groups.append(group)

    for node in edges:
        if node not in index:
            visit(node)
    return groups


def _cycle_in(group: list[str], edges: dict[str, list[str]]) -> list[str]:
    """One cycle through the group, in rule-file order from its first rule."""
    members = set(group)
    start = min(group, key=list(edges).index)
    path, seen = [start], {start}
    while True:
        following = [n for n in edges[path[-1]] if n in members]
        back = [n for n in following if n == start]
        if back and len(path) > 1 or (back and following == [start]):
            return path
        fresh = [n for n in following if n not in seen]
        if not fresh:
            return path
        path.append(fresh[0])
        seen.add(fresh[0])


@attrs.frozen
class CompiledTrigger:
    trigger: Trigger
    condition: CompiledQuery | None
    targets: tuple[CompiledQuery | None, ...]  # None: the changed node itself


def compile_rules(rule_set: RuleSet, schema: Schema = DEFAULT_SCHEMA) -> tuple[CompiledTrigger, ...]:
    """Compile each trigger's condition and effect targets as queries from ``$node``."""
    cache = QueryCache(schema, size=4096)
    compiled = []
    for trigger in rule_set.triggers:
        condition = None if trigger.condition is None else cache.get(f"$node.where({trigger.condition})")
        targets = tuple(None if e.target == "self" else cache.get(f"$node.{e.target}") for e in trigger.effects)
        compiled.append(CompiledTrigger(trigger, condition, targets))
    return tuple(compiled)
