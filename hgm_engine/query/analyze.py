"""Analysis: check a parsed query against the schema and find every error before running.

Unknown names get "did you mean"; wrong arguments, misplaced finals and repetitions, and
regular expressions that do not compile are all reported together, in text order. The same
checks serve constraints (``analyze_constraint``) and rule files (``analyze_rule_file``),
whose conditions and paths are the path language's.

>>> from hgm_engine.query.parser import parse
>>> from hgm_engine.model.schema import DEFAULT_SCHEMA
>>> a = analyze(parse("nodes.where(status = $s)"), DEFAULT_SCHEMA)
>>> sorted(a.params)
['s']
>>> try:
...     analyze(parse("root.subgoal.frob()"), DEFAULT_SCHEMA)
... except QueryAnalysisError as err:
...     print([p.category for p in err.problems])
...     print(err.message)
['unknown-name', 'unknown-name']
unknown relation 'subgoal'; did you mean 'subgoals'?
"""

from __future__ import annotations

from typing import Iterable

import attrs

from hgm_engine.query import syntax as S
from hgm_engine.errors import Problem, QueryAnalysisError, line_column
from hgm_engine.model import Hop, Schema, closest, parse_instant
from hgm_engine.model.nodeindex import query_terms
from hgm_engine.query.limits import DEFAULT_LIMITS, Limits
from hgm_engine.query.regexcheck import regex_problem, regex_size

__all__ = [
    "analyze",
    "analyze_constraint",
    "analyze_rule_file",
    "Analysis",
    "START_NAMES",
    "START_FUNCTIONS",
    "search_text_problem",
    "GENERIC_STEPS",
    "LIST_STEPS",
    "FINALS",
    "CONDITION_FUNCTIONS",
    "MAX_REGEX_LENGTH",
    "UNSETTABLE_ATTRIBUTES",
]

START_NAMES = ("root", "nodes", "focus", "current_goal")
START_FUNCTIONS = ("search",)
GENERIC_STEPS = ("out", "in", "both")
LIST_STEPS = ("first", "last", "limit", "sort_by", "rank")
FINALS = ("count", "exists", "paths")
CONDITION_FUNCTIONS = ("exists", "count", "has", "valid_at")
SORT_DIRECTIONS = ("asc", "desc")
MAX_REGEX_LENGTH = DEFAULT_LIMITS.max_regex_length  # the default; Limits.max_regex_length sets it
# What a rule's ``set`` may not change: a node's identity, and the marks the rule engine keeps
# (``hgm_engine.rules.engine.MARK_ATTRIBUTES``).
UNSETTABLE_ATTRIBUTES = ("id", "type", "dirty", "dirty_marks")


@attrs.frozen
class Analysis:
    """What analysis learned: the query is valid; these parameters and the focus are needed.

    ``params`` maps each parameter name to the offset of its first use.
    ``focus_offset`` is the offset of the first ``focus``/``current_goal``, or None.
    ``param_roles`` maps each parameter to how it is used: ``value`` (in a condition),
    ``id`` (after ``#``), ``ids`` (a start), ``regex`` (right of ``=~``), ``count`` (``limit``),
    ``text`` (``search`` and ``rank``), ``time`` (``valid_at``); values are checked against
    their roles when bound.
    """

    query: S.Query
    params: dict[str, int]
    focus_offset: int | None
    param_roles: dict[str, frozenset[str]]


def analyze(query: S.Query, schema: Schema, limits: Limits = DEFAULT_LIMITS) -> Analysis:
    """Check ``query`` against ``schema``; raise :class:`QueryAnalysisError` listing every problem.

    Regular expressions are checked within ``limits`` before any is compiled (size, then
    syntax, then shapes that backtrack: :func:`~hgm_engine.query.regexcheck.regex_problem`);
    together they may expand to at most ``limits.max_regex_size`` items.

    >>> from hgm_engine.query.parser import parse
    >>> from hgm_engine.model import DEFAULT_SCHEMA
    >>> try:
    ...     analyze(parse("nodes.where(content =~ '(a+)+')"), DEFAULT_SCHEMA)
    ... except QueryAnalysisError as err:
    ...     print(err.category, err.column)
    limit-exceeded 24
    """
    checker = _Checker(query.text, schema, limits)
    checker.query(query, top_level=True)
    if checker.problems:
        unique = {(offset, p.category, p.message): p for offset, p in checker.problems}
        ordered = [unique[key] for key in sorted(unique, key=lambda k: k[0])]
        raise QueryAnalysisError(_at_most(ordered), query.text)
    roles = {name: frozenset(found) for name, found in checker.roles.items()}
    return Analysis(query, checker.params, checker.focus_offset, roles)


def analyze_constraint(definition: S.ConstraintDef, schema: Schema, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check a parsed constraint; raise :class:`QueryAnalysisError` listing every problem.

    A constraint holds for the nodes of a type of ``schema``; it cannot take parameters.

    >>> from hgm_engine.query.parser import parse_constraint
    >>> from hgm_engine.model import DEFAULT_SCHEMA
    >>> analyze_constraint(parse_constraint("each action must exists(results)"), DEFAULT_SCHEMA)
    >>> try:
    ...     analyze_constraint(parse_constraint("each acton must status = $s"), DEFAULT_SCHEMA)
    ... except QueryAnalysisError as err:
    ...     print([p.message for p in err.problems])
    ["unknown node type 'acton'; did you mean 'action'?", 'a constraint cannot use parameters ($s)']
    """
    checker = _Checker(definition.text, schema, limits)
    checker.constraint(definition)
    for param, offset in checker.params.items():
        checker.report("invalid-argument", f"a constraint cannot use parameters (${param})", offset)
    checker.raise_sorted()


def analyze_rule_file(rule_file: S.RuleFile, schema: Schema, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check a parsed rule file; raise :class:`QueryAnalysisError` listing every problem.

    Node types, edge types, relations and functions must exist in ``schema`` ("did you mean");
    names are unique within the file; a ``set`` cannot change ``UNSETTABLE_ATTRIBUTES``; a
    depth is at least 1; rules use neither parameters nor the focus.

    >>> from hgm_engine.query.parser import parse_rule_file
    >>> from hgm_engine.model import DEFAULT_SCHEMA
    >>> analyze_rule_file(parse_rule_file("propagate derived_from backward depth 3"), DEFAULT_SCHEMA)
    >>> try:
    ...     analyze_rule_file(parse_rule_file("rule r: on add fakt then mark relatd as blocked"), DEFAULT_SCHEMA)
    ... except QueryAnalysisError as err:
    ...     print([(p.category, p.column) for p in err.problems])
    [('unknown-name', 16), ('unknown-name', 31)]
    """
    checker = _Checker(rule_file.text, schema, limits)
    names: set[str] = set()

    def unique(name: str, span: S.Span) -> None:
        if name in names:
            checker.report("invalid-argument", f"rule name {name!r} is used twice", span.start)
        names.add(name)

    def compiled_length(node, what: str, wrapper: str) -> None:
        # Each constraint and trigger part is compiled as a text of its own: it must fit the
        # query length limit, or loading would pass and compiling fail.
        length = node.span.end - node.span.start + len(wrapper)
        if length > limits.max_length:
            checker.report(
                "limit-exceeded",
                f"this {what} is compiled as a text of {length:,} characters; at most {limits.max_length:,} (Limits.max_length)",
                node.span.start,
            )

    for statement in rule_file.statements:
        if isinstance(statement, S.ConstraintStatement):
            checker.constraint(statement.definition)
            unique(statement.name, statement.name_span)
            compiled_length(statement.definition, "constraint", "")
        elif isinstance(statement, S.TriggerStatement):
            checker.trigger(statement)
            unique(statement.name, statement.name_span)
            if statement.condition is not None:
                compiled_length(statement.condition, "condition", "$node.where()")
            for effect in statement.effects:
                if effect.target is not None:
                    compiled_length(effect.target, "target", "$node.")
        else:
            checker.propagation(statement)
    for param, offset in checker.params.items():
        checker.report("invalid-argument", f"rules cannot use parameters (${param})", offset)
    if checker.focus_offset is not None:
        checker.report("invalid-argument", "rules cannot use the focus", checker.focus_offset)
    checker.raise_sorted()


def is_single_hop(step: S.Step, schema: Schema) -> bool:
    """Whether a repetition may follow ``step`` (spec §2.2)."""
    if isinstance(step, S.RelationStep):
        return isinstance(schema.relation(step.name), Hop)
    if isinstance(step, S.CallStep):
        return step.name in GENERIC_STEPS
    return False


def is_navigation(step: S.Step, schema: Schema) -> bool:
    if isinstance(step, S.RelationStep):
        return schema.relation(step.name) is not None
    if isinstance(step, S.CallStep):
        return step.name in GENERIC_STEPS
    return isinstance(step, S.RepeatStep)


class _Checker:
    def __init__(self, text: str, schema: Schema, limits: Limits = DEFAULT_LIMITS):
        self.text = text
        self.schema = schema
        self.limits = limits
        self.regex_left = limits.max_regex_size  # what the text's regular expressions may still expand to
        self.problems: list[tuple[int, Problem]] = []
        self.params: dict[str, int] = {}
        self.focus_offset: int | None = None
        self.roles: dict[str, set[str]] = {}
        self.context = "query"  # or "constraint", "rule": what rank may not be used in

    def report(self, category: str, message: str, offset: int) -> None:
        line, column = line_column(self.text, offset)
        self.problems.append((offset, Problem(category, message, line, column)))

    def unknown(self, kind: str, name: str, offset: int, candidates: Iterable[str], hint: str = "") -> None:
        message = f"unknown {kind} {name!r}"
        suggestion = closest(name, candidates)
        if suggestion is not None:
            message += f"; did you mean {suggestion!r}?"
        elif hint:
            message += f"; {hint}"
        self.report("unknown-name", message, offset)

    def use_param(self, name: str, offset: int, role: str = "value") -> None:
        self.params.setdefault(name, offset)
        self.roles.setdefault(name, set()).add(role)

    def raise_sorted(self) -> None:
        """Raise every problem, in text order (problems at one place in the order found)."""
        if self.problems:
            self.problems.sort(key=lambda item: item[0])
            raise QueryAnalysisError(_at_most([p for _, p in self.problems]), self.text)

    def node_type(self, name: str, span: S.Span) -> None:
        if name not in self.schema.node_types:
            self.unknown("node type", name, span.start, self.schema.node_types)

    # -- constraints and rule files -----------------------------------------------------

    def constraint(self, definition: S.ConstraintDef) -> None:
        self.context = "constraint"
        self.node_type(definition.node_type, definition.type_span)
        for condition in (definition.where, definition.must):
            if condition is not None:
                self.condition(condition)

    def trigger(self, trigger: S.TriggerStatement) -> None:
        self.context = "rule"
        self.node_type(trigger.node_type, trigger.type_span)
        if trigger.condition is not None:
            self.condition(trigger.condition)
        for effect in trigger.effects:
            if effect.target is not None:
                self.steps(effect.target.steps)
            if isinstance(effect, S.SetEffect):
                for assignment in effect.assignments:
                    if assignment.name in UNSETTABLE_ATTRIBUTES:
                        self.report(
                            "invalid-argument", f"a rule cannot set {assignment.name!r}", trigger.name_span.start
                        )

    def propagation(self, declaration: S.PropagateStatement) -> None:
        if declaration.edge_type not in self.schema.edge_types:
            self.unknown("edge type", declaration.edge_type, declaration.edge_span.start, self.schema.edge_types)
        for node_type, span in ((declaration.from_type, declaration.from_span), (declaration.to_type, declaration.to_span)):
            if node_type is not None:
                self.node_type(node_type, span)
        if declaration.depth is not None and declaration.depth < 1:
            self.report("invalid-argument", "depth must be at least 1", declaration.depth_span.start)

    # -- queries and paths --------------------------------------------------------------

    def query(self, query: S.Query, *, top_level: bool) -> None:
        for path in query.paths:
            self.path(path)
        finals = [p for p in query.paths if p.steps and _final_name(p.steps[-1])]
        if len(query.paths) > 1:
            for path in finals:
                last = path.steps[-1]
                self.report(
                    "misplaced",
                    f"a union cannot combine finals: .{last.name}() ends one of its branches",
                    last.span.start,
                )
        if not top_level:
            for path in finals:
                if len(query.paths) == 1:
                    last = path.steps[-1]
                    self.report(
                        "misplaced",
                        f".{last.name}() must end the whole query, not a parenthesised part",
                        last.span.start,
                    )

    def path(self, path: S.Path) -> None:
        if path.start is not None:
            self.start(path.start)
        self.steps(path.steps)

    def start(self, start: S.Start) -> None:
        if isinstance(start, S.NamedStart):
            if start.name in ("focus", "current_goal"):
                if self.focus_offset is None:
                    self.focus_offset = start.span.start
            elif start.name not in START_NAMES:
                hint = "a query starts with root, nodes, focus, current_goal, #id, TYPE#id or $param"
                if self.schema.relation(start.name) is not None:
                    hint = f"{start.name!r} is a relation: start from a node, e.g. root.{start.name}"
                elif start.name in self.schema.node_types:
                    hint = f"to start from a {start.name} by id write {start.name}#ID"
                self.unknown("start", start.name, start.span.start, START_NAMES, hint)
        elif isinstance(start, S.IdStart):
            if start.node_type is not None and start.node_type not in self.schema.node_types:
                self.unknown("node type", start.node_type, start.span.start, self.schema.node_types)
            if start.param is not None:
                self.use_param(start.param, start.span.end - len(start.param) - 1, "id")
        elif isinstance(start, S.ParamStart):
            self.use_param(start.param, start.span.start, "ids")
        elif isinstance(start, S.SubqueryStart):
            self.query(start.query, top_level=False)
        elif isinstance(start, S.CallStart):
            if start.name not in START_FUNCTIONS:
                hint = "a query starts with root, nodes, focus, current_goal, search(TEXT), #id, TYPE#id or $param"
                if start.name in (*GENERIC_STEPS, *LIST_STEPS, *FINALS):
                    hint = f"{start.name}() is a step: write it after a start, e.g. nodes.{start.name}(...)"
                self.unknown("start", start.name, start.name_span.start, (*START_NAMES, *START_FUNCTIONS), hint)
            else:
                self.search_text(start.name, start.args, start.name_span.start)

    def steps(self, steps: tuple[S.Step, ...]) -> None:
        previous: S.Step | None = None
        final_seen: S.CallStep | None = None
        for step in steps:
            if final_seen is not None:
                self.report(
                    "misplaced",
                    f".{final_seen.name}() is a final and must be the last step",
                    final_seen.span.start,
                )
                final_seen = None  # report once per final
            if isinstance(step, S.RepeatStep):
                if previous is None or not is_single_hop(previous, self.schema):
                    what = "the start" if previous is None else _describe(previous)
                    self.report(
                        "misplaced",
                        f"a repetition must follow a single-hop navigation step, not {what}",
                        step.span.start,
                    )
                if step.upper is not None and step.lower > step.upper:
                    self.report(
                        "invalid-argument",
                        f"repetition {{{step.lower},{step.upper}}}: the lower bound exceeds the upper",
                        step.span.start,
                    )
                if step.lower < 0:
                    self.report("invalid-argument", "repetition bounds cannot be negative", step.span.start)
            elif isinstance(step, S.RelationStep):
                self.relation_step(step)
            elif isinstance(step, S.CallStep):
                self.call_step(step)
                if step.name in FINALS:
                    final_seen = step
            elif isinstance(step, S.WhereStep):
                self.condition(step.condition)
            previous = step

    def relation_step(self, step: S.RelationStep) -> None:
        if self.schema.relation(step.name) is not None:
            return
        offset = step.span.end - len(step.name)
        callable_names = (*GENERIC_STEPS, *LIST_STEPS, *FINALS)
        if step.name in callable_names:
            self.report(
                "unknown-name",
                f"{step.name!r} is a function, not a relation: write .{step.name}()",
                offset,
            )
            return
        self.unknown("relation", step.name, offset, self.schema.relations)

    def search_text(self, name: str, args: tuple, offset: int) -> None:
        """The one TEXT argument of ``search(TEXT)`` or ``.rank(TEXT)``."""
        call = f"{name}(TEXT)" if name == "search" else f".{name}(TEXT)"
        if len(args) != 1:
            self.report("invalid-argument", f"{call} takes exactly one argument, a string or a $parameter; got {len(args)}", offset)
            return
        arg = args[0]
        if isinstance(arg, S.ParamRef):
            self.use_param(arg.name, arg.span.start, "text")
        elif isinstance(arg, S.Literal):
            problem = search_text_problem(arg.value, self.limits, name)
            if problem is not None:
                category = "limit-exceeded" if "Limits.max_search_length" in problem else "invalid-argument"
                self.report(category, problem, arg.span.start)
        else:
            what = "a list" if isinstance(arg, S.ListLiteral) else f"the name {arg.name!r}" if isinstance(arg, S.NameArg) else "that"
            self.report("invalid-argument", f"{call} takes a string or a $parameter, not {what}", _start(arg))

    def call_step(self, step: S.CallStep) -> None:
        name, args, offset = step.name, step.args, step.name_span.start
        if name == "rank":
            if self.context != "query":
                self.report(
                    "invalid-argument",
                    f"a {self.context} cannot use .rank(): a rank depends on the text of the whole memory, so "
                    f"the {self.context} would change its answer when unrelated nodes change",
                    offset,
                )
            self.search_text(name, args, offset)
            return
        if name == "search":
            self.report(
                "unknown-name",
                "search(TEXT) is a start, not a step: write search('...') at the start of a path, "
                "or .rank('...') to reorder a list by relevance",
                offset,
            )
            return
        if name in GENERIC_STEPS:
            for arg in args:
                if not isinstance(arg, S.NameArg):
                    self.report(
                        "invalid-argument", f".{name}() takes edge type names, e.g. .{name}(parent_of)", _start(arg)
                    )
                elif arg.name not in self.schema.edge_types:
                    self.unknown("edge type", arg.name, arg.span.start, self.schema.edge_types)
        elif name in ("first", "last", *FINALS):
            if args:
                self.report("invalid-argument", f".{name}() takes no arguments", _start(args[0]))
        elif name == "limit":
            if len(args) != 1:
                self.report("invalid-argument", f".limit(n) takes exactly one argument, got {len(args)}", offset)
            elif isinstance(args[0], S.ParamRef):
                self.use_param(args[0].name, args[0].span.start, "count")
            elif not (isinstance(args[0], S.Literal) and _is_int(args[0].value)) or args[0].value < 0:
                self.report("invalid-argument", ".limit(n) needs an integer n >= 0", _start(args[0]))
        elif name == "sort_by":
            if not 1 <= len(args) <= 2:
                self.report("invalid-argument", f".sort_by(attr[, 'asc'|'desc']) got {len(args)} arguments", offset)
                return
            if not isinstance(args[0], S.NameArg):
                self.report("invalid-argument", ".sort_by() sorts by an attribute name", _start(args[0]))
            if len(args) == 2:
                direction = args[1]
                if not (isinstance(direction, S.Literal) and direction.value in SORT_DIRECTIONS):
                    self.report(
                        "invalid-argument", ".sort_by() direction must be 'asc' or 'desc'", _start(direction)
                    )
        elif self.schema.relation(name) is not None:
            self.report(
                "unknown-name",
                f"{name!r} is a relation, not a function: write .{name} without parentheses",
                offset,
            )
        else:
            self.unknown(
                "function",
                name,
                offset,
                (*GENERIC_STEPS, *LIST_STEPS, *FINALS, "where", *self.schema.relations),
            )

    # -- conditions ---------------------------------------------------------------------

    def condition(self, expr: S.Expr) -> None:
        if isinstance(expr, (S.And, S.Or)):
            for operand in expr.operands:
                self.condition(operand)
        elif isinstance(expr, S.Not):
            self.condition(expr.operand)
        elif isinstance(expr, S.Compare):
            self.condition(expr.left)
            self.condition(expr.right)
            if expr.op in ("in", "not in") and not isinstance(expr.right, (S.ListLiteral, S.ParamRef)):
                self.report(
                    "invalid-argument",
                    f"'{expr.op}' needs a list on its right, e.g. status in ['done', 'failed']",
                    _start(expr.right),
                )
            if expr.op == "=~":
                self.regex_operand(expr.right)
        elif isinstance(expr, S.ParamRef):
            self.use_param(expr.name, expr.span.start)
        elif isinstance(expr, S.FuncCall):
            self.function(expr)

    def valid_at(self, call: S.FuncCall) -> None:
        """``valid_at(T)``: T is an ISO 8601 string literal or a parameter (spec §8.2)."""
        value = call.value
        example = "e.g. valid_at('2026-03-01') or valid_at($now)"
        if isinstance(value, S.ParamRef):
            self.use_param(value.name, value.span.start, "time")
        elif isinstance(value, S.Literal) and isinstance(value.value, str):
            if parse_instant(value.value) is None:
                self.report(
                    "invalid-argument",
                    f"valid_at() needs an ISO 8601 date or date-time, not {value.value[:60]!r}; {example}",
                    value.span.start,
                )
        elif value is None:
            where = call.name_span.start if call.path is None else call.path.span.start
            self.report("invalid-argument", f"valid_at() takes one time, a string or a parameter; {example}", where)
        else:
            self.report("invalid-argument", f"valid_at() needs a time as a string, not a {_value_kind(value)}; {example}", _start(value))

    def regex_operand(self, operand: S.Expr) -> None:
        if isinstance(operand, S.Literal) and isinstance(operand.value, str):
            problem = regex_problem(operand.value, self.limits, size_left=self.regex_left)
            if problem is not None:
                category, message, _ = problem
                self.report(category, message, operand.span.start)
                return
            self.regex_left -= regex_size(operand.value)
        elif isinstance(operand, S.ParamRef):
            self.use_param(operand.name, operand.span.start, "regex")
        else:
            self.report("invalid-argument", "'=~' needs a string pattern on its right", _start(operand))

    def function(self, call: S.FuncCall) -> None:
        offset = call.name_span.start
        if call.name not in CONDITION_FUNCTIONS:
            self.unknown("function", call.name, offset, CONDITION_FUNCTIONS)
            return
        if call.name == "valid_at":
            self.valid_at(call)
            return
        if call.value is not None:
            what = "an attribute name" if call.name == "has" else "a relative path"
            self.report("invalid-argument", f"{call.name}() takes {what}, not a value", _start(call.value))
            return
        path = call.path
        if call.name == "has":
            if path is None or len(path.steps) != 1 or not isinstance(path.steps[0], S.RelationStep):
                self.report("invalid-argument", "has(attr) takes one attribute name", offset)
            return
        if path is None:
            self.report("invalid-argument", f"{call.name}(path) needs a relative path, e.g. {call.name}(children)", offset)
            return
        first = path.steps[0]
        if not is_navigation(first, self.schema) and isinstance(first, S.CallStep) and (
            first.name in (*LIST_STEPS, *FINALS)
        ):
            self.report(
                "invalid-argument",
                f"{call.name}() needs a path that starts with a navigation step, not .{first.name}()",
                first.span.start,
            )
        self.steps(path.steps)
        for step in path.steps:
            if _final_name(step):
                self.report(
                    "misplaced",
                    f".{step.name}() is a final; it cannot be used inside {call.name}()",
                    step.span.start,
                )


# An error lists at most this many problems: each is shown with its line, and a long text
# repeating one mistake thousands of times would make an error of megabytes.
MAX_PROBLEMS = 20


def _at_most(problems: list[Problem]) -> list[Problem]:
    """The first ``MAX_PROBLEMS``, the last of them saying how many more were left out.

    >>> [p.message for p in _at_most([Problem("syntax", str(i)) for i in range(22)])][-1]
    '19 (and 2 more problems after this one)'
    """
    if len(problems) <= MAX_PROBLEMS:
        return problems
    last = problems[MAX_PROBLEMS - 1]
    more = len(problems) - MAX_PROBLEMS
    note = f"{last.message} (and {more} more problem{'s' if more > 1 else ''} after this one)"
    return problems[: MAX_PROBLEMS - 1] + [attrs.evolve(last, message=note)]


def _final_name(step: S.Step) -> str | None:
    if isinstance(step, S.CallStep) and step.name in FINALS:
        return step.name
    return None


def _describe(step: S.Step) -> str:
    if isinstance(step, S.RelationStep):
        return f".{step.name}"
    if isinstance(step, S.CallStep):
        return f".{step.name}()"
    if isinstance(step, S.WhereStep):
        return ".where(...)"
    if isinstance(step, (S.IndexStep, S.SliceStep)):
        return "an index"
    if isinstance(step, S.RepeatStep):
        return "another repetition"
    return "that step"


def _start(expr: S.Expr) -> int:
    return expr.span.start


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def search_text_problem(value: object, limits: Limits, what: str = "search") -> str | None:
    """Why ``value`` cannot be the TEXT of ``search(TEXT)`` or ``.rank(TEXT)``, or None.

    >>> search_text_problem("the", DEFAULT_LIMITS)
    "search needs a text with a word to search for; 'the' has none (every word in it is a stop word)"
    >>> search_text_problem(3, DEFAULT_LIMITS)
    'search needs a string, not a number'
    >>> search_text_problem("hotel", DEFAULT_LIMITS) is None
    True
    """
    if not isinstance(value, str):
        return f"{what} needs a string, not {_kind_of(value)}"
    if len(value) > limits.max_search_length:
        return f"the text to {what} is {len(value):,} characters long; at most {limits.max_search_length:,} (Limits.max_search_length)"
    if not query_terms(value):
        if not value.strip():
            return f"{what} needs a text with a word to search for, not an empty string"
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"{what} needs a text with a word to search for; {shown!r} has none (every word in it is a stop word)"
    return None


def _kind_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _value_kind(expr: S.Expr) -> str:
    if isinstance(expr, S.ListLiteral):
        return "list"
    value = getattr(expr, "value", None)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "number" if isinstance(value, (int, float)) else type(value).__name__
