"""Memory rules: constraints, triggers and propagation declarations in one small language.

A rule file (``*.hgmr``) holds statements in the grammar family of the path language
(``grammar/hgm.lark``, start ``rule_file``; ``//`` starts a comment)::

    constraint done_has_result: each action where status = 'done' must exists(results)
    rule closure_blocks_visits: on add fact where content =~ 'closed'
        then mark related_entities.related.where(type = 'action', status = 'pending')
             as blocked because 'the place is closed'
    propagate derived_from backward depth 3

Loading checks everything before anything is kept: the parser (``parse_rule_file``) reports
syntax errors (line, column, caret); analysis (``analyze_rule_file``) unknown types, relations
and edge types (``unknown-name`` with "did you mean") and misused names; this module builds
the rule set from the syntax nodes and refuses trigger cycles — a rule set whose ``set``
effects can re-trigger its rules forever, naming the cycle. :func:`parse_rules` stops there;
:func:`compile_rule_file` (what ``hgm rules check`` and loading run) also compiles every
condition, target and constraint, so what passes the check also loads, and a compile error
(a query over the compiler's limits, say) is placed at its part of the file.

>>> rs = parse_rules("rule r: on update action where status = 'failed' then mark parent as needs_review")
>>> [(t.name, t.event, t.node_type) for t in rs.triggers]
[('r', 'update', 'action')]
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from hgm_engine.query import syntax as S
from hgm_engine.errors import HGMError, Problem, RuleError, line_column
from hgm_engine.query import CompiledQuery, QueryCache, analyze_rule_file, parse_rule_file
from hgm_engine.model import DEFAULT_SCHEMA, Schema, text_problem, value_problem
from hgm_engine.rules.constraints import UNCOMPILABLE, UserConstraint, uncompilable_problem

__all__ = [
    "RuleSet",
    "Trigger",
    "Effect",
    "Propagation",
    "ConstraintRule",
    "CompiledTrigger",
    "CompiledRuleSet",
    "parse_rules",
    "compile_rules",
    "compile_rule_file",
    "trigger_cycle",
    "stored_text_problem",
    "DEFAULT_DEPTH",
]

DEFAULT_DEPTH = 10  # how far staleness flows when a propagate declaration names no depth


@attrs.frozen
class ConstraintRule:
    """A rule file's ``constraint NAME: each ...``; ``text`` is the part from ``each`` on.

    >>> parse_rules("constraint c: each fact must has(content)").constraints
    (ConstraintRule(name='c', text='each fact must has(content)'),)
    """

    name: str
    text: str  # "each TYPE [where COND] must COND"


@attrs.frozen
class Effect:
    """``mark TARGET as STATE [because REASON]`` or ``set TARGET with a = v, ...``.

    >>> parse_rules("rule r: on add fact then set parent with seen = true").triggers[0].effects
    (Effect(kind='set', target='parent', state=None, reason=None, assignments=(('seen', True),)),)
    """

    kind: str  # mark | set
    target: str  # "self" or a relative path text
    state: str | None = None
    reason: str | None = None
    assignments: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class Trigger:
    """``rule NAME: on EVENT TYPE [where COND] then EFFECTS``, with the condition as text.

    >>> t = parse_rules("rule r: on update action where status = 'failed' then mark parent as blocked").triggers[0]
    >>> t.event, t.node_type, t.condition, t.requires
    ('update', 'action', "status = 'failed'", (('status', 'failed'),))
    """

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
    a changed node (what depends on it), ``forward`` the nodes it points to, ``both`` both.

    >>> parse_rules("propagate derived_from backward to action").propagations[0].name
    'propagate:derived_from'
    """

    edge_type: str
    direction: str
    depth: int = DEFAULT_DEPTH
    from_type: str | None = None
    to_type: str | None = None

    @property
    def name(self) -> str:
        return f"propagate:{self.edge_type}"


@attrs.frozen
class RuleSet:
    """A checked rule file: its constraints, triggers and propagations, and its text.

    >>> both = parse_rules("propagate before forward").merged(parse_rules("propagate causes both"))
    >>> [p.edge_type for p in both.propagations], both.text
    (['before', 'causes'], 'propagate before forward\\npropagate causes both')
    """

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


def parse_rules(text: str, schema: Schema = DEFAULT_SCHEMA) -> RuleSet:
    """Parse and check a rule file; raise :class:`RuleError` or a query error naming every problem.

    >>> try:
    ...     parse_rules("rule a: on update action then set self with x = 1\\nrule b: on update action then set self with x = 2")
    ... except RuleError as err:
    ...     print(err.category, err.line, err.message)
    rule-cycle 1 these rules can trigger each other forever: a -> b -> a
    """
    return _checked(text, schema)[1]


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def stored_text_problem(text: str, what: str) -> Problem | None:
    """Why the text of a rule file or a constraint (``what``) cannot be stored, or None: a
    lone surrogate (no store holds one: it is no Unicode character) or NUL (PostgreSQL cannot
    store it), placed at its line and column.

    >>> stored_text_problem("each goal must true", "a constraint") is None
    True
    >>> found = stored_text_problem("// ok\\n// \\ud800", "a rule file")
    >>> found.category, found.line, found.column
    ('invalid-value', 2, 4)
    """
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    line, column = line_column(text, found.start())
    held = "the character NUL (no PostgreSQL text can hold it)" if found.group() == "\x00" else (
        f"a lone surrogate ({found.group()!r}: it is not a Unicode character)"
    )
    return Problem("invalid-value", f"{what} may not hold {held}", line, column)


def _effect_problems(rule_file: S.RuleFile) -> list[Problem]:
    """The values trigger effects would write that no store can hold (a lone surrogate
    written as an escape, ``'\\ud800'``), each placed at its literal."""
    problems = []
    for statement in rule_file.statements:
        if not isinstance(statement, S.TriggerStatement):
            continue
        for effect in statement.effects:
            if isinstance(effect, S.SetEffect):
                for assignment in effect.assignments:
                    found = value_problem(_literal(assignment.value), assignment.name)
                    if found is not None:
                        line, column = line_column(rule_file.text, assignment.value.span.start)
                        problems.append(Problem("invalid-value", f"set {assignment.name}: {found.message}", line, column))
            elif effect.reason is not None:
                found = text_problem(effect.reason, None, "a reason")
                if found is not None:
                    source = rule_file.source(effect)
                    at = effect.span.start + max(0, source.rfind("because"))
                    quote = min((i for i in (rule_file.text.find(q, at) for q in "'\"") if i >= 0), default=at)
                    line, column = line_column(rule_file.text, quote)
                    problems.append(Problem("invalid-value", f"because: {found.message}", line, column))
    return problems


def _checked(text: str, schema: Schema) -> tuple[S.RuleFile, RuleSet]:
    """The parsed file and its checked rule set (syntax, names, values it would store,
    trigger cycles)."""
    if not isinstance(text, str):
        raise TypeError("rules are text")
    unstorable = stored_text_problem(text, "a rule file")
    if unstorable is not None:
        raise RuleError([unstorable], text)
    rule_file = parse_rule_file(text)
    analyze_rule_file(rule_file, schema)
    problems = _effect_problems(rule_file)
    if problems:
        raise RuleError(problems, text)
    rule_set = _rule_set(rule_file)
    cycle = trigger_cycle(rule_set)
    if cycle:
        first = next(s for s in rule_file.statements if isinstance(s, S.TriggerStatement) and s.name == cycle[0])
        line, column = line_column(text, first.span.start)
        message = "these rules can trigger each other forever: " + " -> ".join(cycle + cycle[:1])
        raise RuleError([Problem("rule-cycle", message, line, column)], text)
    return rule_file, rule_set


def _rule_set(rule_file: S.RuleFile) -> RuleSet:
    constraints, triggers, propagations = [], [], []
    for statement in rule_file.statements:
        if isinstance(statement, S.ConstraintStatement):
            constraints.append(ConstraintRule(statement.name, rule_file.source(statement.definition)))
        elif isinstance(statement, S.TriggerStatement):
            triggers.append(_trigger(statement, rule_file))
        else:
            propagations.append(
                Propagation(
                    statement.edge_type,
                    statement.direction,
                    DEFAULT_DEPTH if statement.depth is None else statement.depth,
                    statement.from_type,
                    statement.to_type,
                )
            )
    return RuleSet(tuple(constraints), tuple(triggers), tuple(propagations), rule_file.text)


def _trigger(statement: S.TriggerStatement, rule_file: S.RuleFile) -> Trigger:
    effects = []
    for effect in statement.effects:
        target = "self" if effect.target is None else rule_file.source(effect.target)
        if isinstance(effect, S.MarkEffect):
            effects.append(Effect("mark", target, effect.state, effect.reason))
        else:
            assignments = tuple((a.name, _literal(a.value)) for a in effect.assignments)
            effects.append(Effect("set", target, None, None, assignments))
    condition = None if statement.condition is None else rule_file.source(statement.condition)
    return Trigger(
        statement.name,
        statement.event,
        statement.node_type,
        condition,
        tuple(effects),
        _required_equalities(statement.condition),
    )


def _required_equalities(condition: S.Expr | None) -> tuple[tuple[str, Any], ...]:
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


def _literal(node: S.Literal | S.ListLiteral) -> Any:
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

    >>> trigger_cycle(parse_rules("rule a: on update action where status = 'failed' then set self with status = 'done'"))
    []
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
    """A trigger with its condition and effect targets compiled as queries from ``$node``."""

    trigger: Trigger
    condition: CompiledQuery | None
    targets: tuple[CompiledQuery | None, ...]  # None: the changed node itself


def compile_rules(rule_set: RuleSet, schema: Schema = DEFAULT_SCHEMA) -> tuple[CompiledTrigger, ...]:
    """Compile each trigger's condition and effect targets as queries from ``$node``.

    >>> [compiled] = compile_rules(parse_rules("rule r: on add fact then mark self as blocked; mark parent as blocked"))
    >>> compiled.condition is None, [target is None for target in compiled.targets]
    (True, [True, False])
    """
    cache = QueryCache(schema, size=4096)
    compiled = []
    for trigger in rule_set.triggers:
        condition = None if trigger.condition is None else cache.get(f"$node.where({trigger.condition})")
        targets = tuple(None if e.target == "self" else cache.get(f"$node.{e.target}") for e in trigger.effects)
        compiled.append(CompiledTrigger(trigger, condition, targets))
    return tuple(compiled)


@attrs.frozen
class CompiledRuleSet:
    """A rule file checked and compiled, ready to run: the rule set, its triggers with their
    conditions and targets compiled, and its constraints compiled.

    >>> compiled = compile_rule_file("constraint c: each fact must has(content)\\nrule r: on add fact then mark parent as blocked")
    >>> [c.name for c in compiled.constraints], [t.trigger.name for t in compiled.triggers]
    (['c'], ['r'])
    """

    rule_set: RuleSet
    triggers: tuple[CompiledTrigger, ...]
    constraints: tuple[UserConstraint, ...]


def compile_rule_file(text: str, schema: Schema = DEFAULT_SCHEMA) -> CompiledRuleSet:
    """Check a rule file as :func:`parse_rules` does, then compile every trigger condition,
    effect target and constraint; raise :class:`RuleError` listing every part that does not
    compile, each placed at its line and column in ``text``. Loading a rule file runs exactly
    this before it stores anything, and so does ``hgm rules check``.

    >>> try:
    ...     compile_rule_file("rule a: on add fact where " + "not " * 200 + "ok then mark self as blocked")
    ... except HGMError as err:
    ...     print(err.line)
    1
    """
    rule_file, rule_set = _checked(text, schema)
    cache = QueryCache(schema, size=4096)
    problems: list[Problem] = []

    def compiled(prefix: str, node: Any, suffix: str = "") -> CompiledQuery | None:
        part = rule_file.source(node)
        query = prefix + part + suffix
        try:
            return cache.get(query)
        except (HGMError, *UNCOMPILABLE) as exc:
            problems.extend(_placed(exc, query, len(prefix), node.span.start, len(part), text))
            return None

    statements = [s for s in rule_file.statements if isinstance(s, S.TriggerStatement)]
    triggers = []
    for trigger, statement in zip(rule_set.triggers, statements):
        condition = None if statement.condition is None else compiled("$node.where(", statement.condition, ")")
        targets = tuple(None if e.target is None else compiled("$node.", e.target) for e in statement.effects)
        triggers.append(CompiledTrigger(trigger, condition, targets))
    constraint_statements = [s for s in rule_file.statements if isinstance(s, S.ConstraintStatement)]
    constraints = []
    for rule, statement in zip(rule_set.constraints, constraint_statements):
        try:
            constraints.append(UserConstraint.compile(rule.name, rule.text, schema))
        except (HGMError, *UNCOMPILABLE) as exc:
            problems.extend(_placed(exc, rule.text, 0, statement.definition.span.start, len(rule.text), text))
    if problems:
        raise RuleError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)), text)
    return CompiledRuleSet(rule_set, tuple(triggers), tuple(constraints))


def _placed(exc: BaseException, query: str, prefix: int, start: int, length: int, text: str) -> list[Problem]:
    """The problems of a failed compile of ``query`` — the engine's first ``prefix``
    characters, then the ``length`` characters of ``text`` from offset ``start`` — placed in
    ``text``. A problem with no position, or one outside the part from ``text``, goes to the
    nearest end of that part."""
    problems = exc.problems if isinstance(exc, HGMError) else (uncompilable_problem(exc),)
    placed = []
    for problem in problems:
        offset = start
        if problem.line is not None and problem.column is not None and getattr(exc, "source", None) == query:
            within = _offset(query, problem.line, problem.column) - prefix
            offset = start + min(max(0, within), length)
        line, column = line_column(text, offset)
        placed.append(Problem(problem.category, problem.message, line, column, problem.where))
    return placed


def _offset(text: str, line: int, column: int) -> int:
    """The 0-based offset of a 1-based (line, column) in ``text``."""
    lines = text.split("\n")
    return sum(len(lines[i]) + 1 for i in range(min(line, len(lines)) - 1)) + column - 1
