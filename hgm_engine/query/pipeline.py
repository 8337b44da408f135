"""The query pipeline in one place: compile (cached), bind, run, and the result object.

text → :func:`~hgm_engine.query.parser.parse` → :func:`~hgm_engine.query.analyze.analyze` →
:func:`~hgm_engine.query.plan.plan` → :func:`~hgm_engine.query.optimizer.optimize` →
:func:`~hgm_engine.query.executor.build`; the simplest shapes go from the text to the
optimized plan in one stage (:func:`~hgm_engine.query.direct.direct_plan`, the same plan).
Compiled queries are cached by text per schema.

>>> q = compile("root.subgoals[0].actions.where(status = $s)")
>>> q.params
('s',)
>>> print(q.explain())  # doctest: +NORMALIZE_WHITESPACE
query: root.subgoals[0].actions.where(status = $s)
rules applied: none
plan:
  roots (goals without a parent)
    navigate subgoals: out(parent_of) to type 'goal'
      per source: index [0]
    navigate actions: out(parent_of) to type 'action'
      per source: filter status = $s
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Mapping

import attrs

from hgm_engine.query.analyze import Analysis, analyze, search_text_problem
from hgm_engine.query.direct import direct_plan
from hgm_engine.errors import Problem, QueryAnalysisError, QueryExecutionError, line_column
from hgm_engine.query.executor import DEFAULT_LIMITS, Limits, Program, build
from hgm_engine.query.limits import limit_exceeded
from hgm_engine.query.regexcheck import regex_problem
from hgm_engine.model import freeze, parse_instant, value_problem
from hgm_engine.query.optimizer import optimize
from hgm_engine.query.parser import parse
from hgm_engine.query.plan import QueryPlan, describe, plan
from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.query.syntax import Query

__all__ = ["compile", "CompiledQuery", "QueryCache", "QueryResult", "run_query", "Limits"]


@attrs.frozen
class QueryResult:
    """What a query returned.

    ``kind`` is ``nodes``, ``count``, ``exists`` or ``paths``. ``value`` is the list of ids,
    the integer, the boolean or the list of walks. For node results ``ids`` is ``value`` and
    ``nodes`` holds each node as a JSON object (``id``, ``type`` and its attributes), as it
    was when the query ran.
    """

    kind: str
    value: Any
    # The payloads, or a function that returns them as they were when the query ran.
    _payloads: Any = attrs.field(default=(), repr=False, eq=False)

    @property
    def ids(self) -> list[str]:
        if self.kind != "nodes":
            raise AttributeError(f"a {self.kind} result has no ids")
        return self.value

    @property
    def nodes(self) -> list[dict[str, Any]]:
        return [node.to_json() for node in self.payloads()]

    def payloads(self) -> tuple:
        """The result's nodes as frozen :class:`~hgm_engine.model.graph.Node` payloads, in result
        order, as they were when the query ran (no copy of their attributes is made).

        >>> from hgm_engine import Memory
        >>> memory = Memory()
        >>> _ = memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal", "title": "trip"}]})
        >>> [(node.id, node.attrs["title"]) for node in memory.query("root").payloads()]
        [('g', 'trip')]
        """
        if self.kind != "nodes":
            raise AttributeError(f"a {self.kind} result has no nodes")
        return tuple(self._payloads() if callable(self._payloads) else self._payloads)

    @property
    def paths(self) -> list[list[str]]:
        if self.kind != "paths":
            raise AttributeError(f"a {self.kind} result has no paths")
        return self.value

    def to_json(self) -> dict[str, Any]:
        """The document ``hgm query --json`` prints (spec §6)."""
        if self.kind == "nodes":
            return {"kind": "nodes", "ids": list(self.value), "nodes": self.nodes}
        if self.kind == "paths":
            return {"kind": "paths", "paths": self.value}
        return {"kind": self.kind, "value": self.value}


class CompiledQuery:
    """A query checked against a schema, planned, optimized and compiled to closures.

    ``optimized_plan`` and ``program`` are what runs. ``ast``, ``analysis`` and
    ``logical_plan`` are the front end's stages; for a query compiled by the direct path
    (:mod:`~hgm_engine.query.direct`, the simplest shapes) they are computed the first time
    one is asked for — through the same stages, so they are what the stages give.

    >>> q = compile("#a1.following")
    >>> q.ast.paths[0].steps[0].name, q.logical_plan.branches[0].source, q.optimized_plan.rules
    ('following', AllNodes(), ('id_lookup',))
    """

    __slots__ = ("text", "optimized_plan", "program", "_schema", "_limits", "_front")

    def __init__(
        self,
        text: str,
        optimized_plan: QueryPlan,
        program: Program,
        schema: Schema = DEFAULT_SCHEMA,
        limits: Limits = DEFAULT_LIMITS,
        front: tuple[Query, Analysis, QueryPlan] | None = None,
    ):
        self.text = text
        self.optimized_plan = optimized_plan
        self.program = program
        self._schema = schema
        self._limits = limits
        # (ast, analysis, logical plan); None until asked for, for a direct-path query (which
        # has neither parameters nor the focus)
        self._front = front

    def __repr__(self) -> str:
        return f"CompiledQuery(text={self.text!r})"

    @property
    def ast(self) -> Query:
        return self._stages()[0]

    @property
    def analysis(self) -> Analysis:
        return self._stages()[1]

    @property
    def logical_plan(self) -> QueryPlan:
        return self._stages()[2]

    def _stages(self) -> tuple[Query, Analysis, QueryPlan]:
        front = self._front
        if front is None:
            ast = parse(self.text, self._limits)
            analysis = analyze(ast, self._schema, self._limits)
            # no rule fired: optimize gave the literal plan itself, as for any query
            optimized = self.optimized_plan
            logical = optimized if not optimized.rules else plan(analysis, self._schema)
            front = self._front = (ast, analysis, logical)
        return front

    @property
    def params(self) -> tuple[str, ...]:
        """The parameters the query needs, in order of first use."""
        if self._front is None:
            return ()
        params = self._front[1].params
        return tuple(sorted(params, key=params.get))

    @property
    def param_roles(self) -> Mapping[str, frozenset[str]]:
        """How each parameter is used (``Analysis.param_roles``): none for a direct-path
        query, whose stages are then not run to say so.

        >>> compile("#a.where(status = $s)").param_roles
        {'s': frozenset({'value'})}
        >>> compile("#a.following").param_roles
        {}
        """
        if self._front is None:
            return {}
        return self._front[1].param_roles

    @property
    def uses_focus(self) -> bool:
        return self._front is not None and self._front[1].focus_offset is not None

    @property
    def kind(self) -> str:
        return self.optimized_plan.final or "nodes"

    def explain(self, *, physical: bool = False) -> str:
        """The optimized plan, as text people read.

        With ``physical=True``, a ``physical:`` line under each navigation step (and under a
        scan's fused filter or an index count) says how the compiled program runs it: which
        strategy, and the names of the functions generated for it (the file names a traceback
        through them shows).

        >>> print(compile("root.subgoals.where(status = 'done')").explain(physical=True))  # doctest: +ELLIPSIS
        query: root.subgoals.where(status = 'done')
        rules applied: none
        plan:
          roots (goals without a parent)
            navigate subgoals: out(parent_of) to type 'goal'
              per source: filter status = 'done'
              physical: one-type hop, then filters over the whole list <hgm step ...>: out(parent_of) to type 'goal' (cached per adjacency), 1 filter inline
        """
        lines = [f"query: {self.text}"]
        rules = ", ".join(self.optimized_plan.rules) or "none"
        lines.append(f"rules applied: {rules}")
        lines.append("plan:")
        annotate = self.program.strategy if physical else None
        lines.extend("  " + line for line in describe(self.optimized_plan, physical=annotate))
        return "\n".join(lines)

    def bind(self, focus: str | None, params: Mapping[str, Any] | None, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
        """Check focus and parameters before running; returns the frozen parameter values.

        A regular expression given as a parameter is checked as a literal one is, within
        ``limits``, before it is compiled. Every value follows the rules of stored values
        (:func:`~hgm_engine.model.value_problem`: no lone surrogate, finite numbers, integers of
        at most 4,300 digits, at most 64 levels of nesting), else it is ``invalid-argument``.

        >>> try:
        ...     compile("nodes.where(content =~ $p)").bind(None, {"p": "a{99999}"})
        ... except QueryAnalysisError as err:
        ...     print(err.category, err.column)
        limit-exceeded 24
        >>> try:
        ...     compile("nodes.where(x in $p)").bind(None, {"p": [1, float("nan")]})
        ... except QueryAnalysisError as err:
        ...     print(err.category, err.column, err.message)
        invalid-argument 18 parameter $p: NaN is not a JSON number: numbers must be finite (at $p[1])
        """
        front = self._front
        if front is None:
            return {}  # a direct-path query: nothing to bind or check
        analysis = front[1]
        if not analysis.params and analysis.focus_offset is None:
            return {}  # nothing to bind or check (other parameters given are not used)
        params = dict(params or {})
        problems: list[tuple[int, Problem]] = []

        def report(category: str, message: str, offset: int) -> None:
            line, column = line_column(self.text, offset)
            problems.append((offset, Problem(category, message, line, column)))

        if analysis.focus_offset is not None and focus is None:
            report("missing-focus", "the query uses the focus, but no focus node was supplied", analysis.focus_offset)
        bound: dict[str, Any] = {}
        for name, offset in analysis.params.items():
            if name not in params:
                report("missing-parameter", f"parameter ${name} has no value", offset)
                continue
            problem = value_problem(params[name], f"${name}")
            if problem is not None:  # checked first: it stops at the depth freeze would recurse past
                place = f" (at {problem.where})" if problem.where != f"${name}" else ""
                report("invalid-argument", f"parameter ${name}: {problem.message}{place}", offset)
                continue
            try:
                value = freeze(params[name])
            except TypeError as exc:
                report("invalid-argument", f"parameter ${name}: {exc}", offset)
                continue
            checked = _check_role(value, analysis.param_roles.get(name, frozenset()), limits)
            if checked:
                category, message = checked
                report(category, f"parameter ${name}: {message}", offset)
                continue
            bound[name] = value
        if problems:
            problems.sort(key=lambda item: item[0])
            error_class = QueryExecutionError if problems[0][1].category == "missing-focus" else QueryAnalysisError
            raise error_class([p for _, p in problems], self.text)
        return bound

    def run(
        self,
        view,
        *,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
        limits: Limits = DEFAULT_LIMITS,
        payloads: Any = None,
    ) -> QueryResult:
        """Bind and run on ``view`` (a MemoryGraph or a historical view).

        ``payloads(ids)``, when given, fetches node payloads later, on demand, as they were
        when the query ran; otherwise they are captured now."""
        # a direct-path query has nothing to bind or check (bind returns {} at once)
        bound = {} if self._front is None else self.bind(focus, params, limits)
        value = self.program.run(view, focus=focus, params=bound, limits=limits)
        if self.program.final is None:
            if payloads is not None:
                return QueryResult("nodes", value, lambda: payloads(value))
            nodes = view.node_map()
            return QueryResult("nodes", value, tuple(nodes[i] for i in value))
        return QueryResult(self.program.final, value)


def _check_role(value: Any, roles: frozenset[str], limits: Limits) -> tuple[str, str] | None:
    """``(category, message)`` when ``value`` does not fit how the parameter is used."""
    if "id" in roles and not isinstance(value, str):
        return "invalid-argument", f"an id after '#' must be a string, not {_kind(value)}"
    if "ids" in roles and not (isinstance(value, str) or (isinstance(value, tuple) and all(isinstance(v, str) for v in value))):
        return "invalid-argument", f"a start must be an id or a list of ids, not {_json(value)}"
    if "count" in roles and not (type(value) is int and value >= 0):
        return "invalid-argument", f"limit needs an integer >= 0, not {_json(value)}"
    if "time" in roles and parse_instant(value) is None:
        shown = repr(value[:60]) if isinstance(value, str) else _kind(value)
        return "invalid-argument", f"valid_at() needs an ISO 8601 date or date-time (e.g. '2026-03-01'), not {shown}"
    if "text" in roles:
        problem = search_text_problem(value if not isinstance(value, tuple) else list(value), limits)
        if problem is not None:
            return ("limit-exceeded" if "Limits.max_search_length" in problem else "invalid-argument"), problem
    if "regex" in roles:
        if not isinstance(value, str):
            return "invalid-argument", f"a pattern must be a string, not {_kind(value)}"
        problem = regex_problem(value, limits)
        if problem is not None:
            return problem[0], problem[1]
    return None


def _json(value: Any) -> str:
    import json

    from hgm_engine.model import thaw

    return json.dumps(thaw(value))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, tuple):
        return "a list"
    return "an object"


_DEFAULT_COMPILE_KEY = DEFAULT_LIMITS.compile_key()


class QueryCache:
    """Compiled queries by text for one schema (least recently used go first).

    A query is compiled within the compile-time part of the ``limits`` it is asked for with
    (:meth:`Limits.compile_key`), and served from the cache only to a caller with the same.

    The cache holds at most ``size`` queries and ``max_chars`` characters of query text
    together: what a compiled query keeps grows with its text (up to ~0.6 kB a character for
    a union of thousands of ids), so a few long queries cannot pin hundreds of megabytes. A
    text longer than ``max_chars`` is compiled each time and never kept.

    >>> cache = QueryCache(DEFAULT_SCHEMA, size=2)
    >>> cache.get("root") is cache.get("root")
    True
    >>> small = QueryCache(max_chars=10)
    >>> _ = small.get("root.children"); len(small)
    0
    """

    def __init__(self, schema: Schema = DEFAULT_SCHEMA, size: int = 512, max_chars: int = 131_072):
        self.schema = schema
        self.size = size
        self.max_chars = max_chars
        self._entries: OrderedDict[Any, CompiledQuery] = OrderedDict()
        self._chars = 0  # characters of the texts held
        self._lock = threading.Lock()  # servers compile from many threads at once
        self.hits = 0
        self.misses = 0

    def get(self, text: str, limits: Limits = DEFAULT_LIMITS) -> CompiledQuery:
        """The compiled query for ``text`` (compiled now if it is not cached).

        >>> try:
        ...     QueryCache().get("(((root)))", Limits(max_depth=2))
        ... except QueryAnalysisError as err:
        ...     print(err.category)
        limit-exceeded
        """
        key = text
        if limits is not DEFAULT_LIMITS:
            compile_key = limits.compile_key()
            if compile_key != _DEFAULT_COMPILE_KEY:
                key = (text, compile_key)
        entries = self._entries
        with self._lock:
            entry = entries.get(key)
            if entry is not None:
                self.hits += 1
                entries.move_to_end(key)
                return entry
            self.misses += 1
        entry = compile_uncached(text, self.schema, limits)  # outside the lock: errors and slow compiles
        chars = len(text)
        if chars > self.max_chars:
            return entry
        with self._lock:
            if key in entries:  # compiled by another thread meanwhile: the newer one is kept
                entries.move_to_end(key)
            else:
                self._chars += chars
            entries[key] = entry  # (a new key goes last)
            while len(entries) > self.size or self._chars > self.max_chars:
                _, dropped = entries.popitem(last=False)
                self._chars -= len(dropped.text)
        return entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._entries)


def compile_uncached(text: str, schema: Schema = DEFAULT_SCHEMA, limits: Limits = DEFAULT_LIMITS) -> CompiledQuery:
    """Run the whole pipeline without the cache, within the compile-time part of ``limits``
    (text length, nesting depth, regular expressions: :class:`Limits`).

    >>> compile_uncached("root.children", limits=Limits(max_length=20)).kind
    'nodes'
    """
    if type(text) is str:
        direct = direct_plan(text, schema, limits)
        if direct is not None:
            return CompiledQuery(text, direct, Program(direct), schema, limits)  # (build is Program)
    try:
        ast = parse(text, limits)
        analysis = analyze(ast, schema, limits)
        logical = plan(analysis, schema)
        optimized = optimize(logical)
        return CompiledQuery(text, optimized, build(optimized), schema, limits, (ast, analysis, logical))
    except RecursionError:
        # Only with a max_depth raised far past its default: the stages walk the tree.
        raise limit_exceeded(
            f"the query is nested too deeply for this Python's recursion limit (Limits.max_depth is {limits.max_depth})",
            None,
            None,
        ) from None


_DEFAULT_CACHE = QueryCache(DEFAULT_SCHEMA)


def compile(text: str, schema: Schema | None = None, limits: Limits = DEFAULT_LIMITS) -> CompiledQuery:
    """Compile a path expression against ``schema`` (the default one if omitted), cached,
    within the compile-time part of ``limits``.

    >>> compile("#a_hotel.results").kind
    'nodes'
    >>> compile("root.count()").kind
    'count'
    """
    if schema is None or schema is DEFAULT_SCHEMA:
        return _DEFAULT_CACHE.get(text, limits)
    return compile_uncached(text, schema, limits)


def run_query(
    view,
    text: str,
    *,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
    cache: QueryCache | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> QueryResult:
    """Compile (through ``cache``) and run ``text`` on ``view``."""
    compiled = (cache or _DEFAULT_CACHE).get(text, limits)
    return compiled.run(view, focus=focus, params=params, limits=limits)


