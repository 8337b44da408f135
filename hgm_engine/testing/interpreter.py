"""The reference model's query interpreter: the meaning of a path expression, written from
``spec/dsl.md`` and ``docs/language.md`` and nothing else.

It walks the frozen syntax tree that hgm's parser builds (parsing is not what it checks) over
a :class:`~hgm_engine.testing.graphmodel.ModelGraph`, one node at a time, with no plan, no
index and no cache. Every value it carries is a list of ``(node id, walk)`` pairs without
repeated ids; the walk is the path that first reached the node, so ``.paths()`` needs no
second evaluation.

>>> from hgm_engine.testing.graphmodel import ModelGraph
>>> g = ModelGraph.from_document({"nodes": [
...     {"id": "trip", "type": "goal"}, {"id": "d1", "type": "goal"}, {"id": "a", "type": "action", "status": "pending"}],
...     "edges": [{"from": "trip", "to": "d1", "type": "parent_of"}, {"from": "d1", "to": "a", "type": "parent_of"}]})
>>> evaluate("root.subgoals.actions.where(status = 'pending')", g).value
['a']
>>> evaluate("#a.ancestors.paths()", g).value
[['a', 'd1'], ['a', 'd1', 'trip']]
>>> evaluate("current_goal", g, focus="a").value
['d1']

Version 1.1 (spec §8): ``search(TEXT)``, ``.rank(TEXT)`` (:mod:`hgm_engine.testing.search`)
and ``valid_at(T)`` (:mod:`hgm_engine.testing.validtime`).

>>> g = ModelGraph.from_document({"nodes": [
...     {"id": "f1", "type": "fact", "content": "The rate is 780", "valid_to": "2026-06-01"},
...     {"id": "f2", "type": "fact", "content": "The rate is 820", "valid_from": "2026-06-01"}], "edges": []})
>>> evaluate("search('rates').where(valid_at('2026-07-01'))", g).value
['f2']
>>> evaluate("nodes.rank($q)", g, params={"q": "820"}).value
['f2', 'f1']
>>> evaluate("search('the')", g)
Traceback (most recent call last):
  ...
hgm_engine.testing.interpreter.ModelQueryError: invalid-argument
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Mapping

import attrs

from hgm_engine.model import DEFAULT_SCHEMA, Closure, Hop, Latest, Schema, Siblings, Versions
from hgm_engine.query import parse
from hgm_engine.query import syntax as S
from hgm_engine.testing.graphmodel import ModelGraph
from hgm_engine.testing.search import query_terms, rank_ids, ranked
from hgm_engine.testing.validtime import holds_at, instant
from hgm_engine.testing.values import compare, kind, matches, sort_rank

__all__ = [
    "evaluate",
    "holds",
    "relative",
    "subtrees",
    "ModelAnswer",
    "ModelQueryError",
    "FINALS",
    "LIST_STEPS",
    "GENERIC_STEPS",
]

FINALS = ("count", "exists", "paths")
LIST_STEPS = ("first", "last", "limit", "sort_by", "rank")
TEXT_TAKERS = ("search", "rank")  # the start and the list step that take a TEXT (spec §8.1)
GENERIC_STEPS = ("out", "in", "both")

Pair = tuple  # (node id, walk: tuple of ids)


def subtrees(node: Any) -> tuple:
    """What a syntax tree holds directly below ``node``: the fields of a syntax node, the
    items of a tuple, nothing for anything else (names, numbers, spans' ends).

    >>> [type(child).__name__ for child in subtrees(parse("root.children"))]
    ['tuple', 'Span', 'str']
    >>> subtrees(("a", "b")), subtrees("a")
    (('a', 'b'), ())
    """
    if attrs.has(type(node)):
        return tuple(getattr(node, field.name) for field in attrs.fields(type(node)))
    if isinstance(node, tuple):
        return node
    return ()


@attrs.frozen
class ModelAnswer:
    """What a query means: ``kind`` (``nodes``, ``count``, ``exists``, ``paths``) and ``value``
    (ids, an integer, a boolean, or walks as lists of ids)."""

    kind: str
    value: Any


class ModelQueryError(Exception):
    """A query the model cannot answer with these inputs: ``categories`` lists each problem's
    category in text order (``missing-focus``, ``missing-parameter``, ``invalid-argument``,
    ``invalid-regex``), as the engine's error lists its problems."""

    def __init__(self, categories: list[str]):
        super().__init__(", ".join(categories))
        self.categories = categories

    @property
    def category(self) -> str:
        return self.categories[0]


def evaluate(
    query: str | S.Query,
    graph: ModelGraph,
    schema: Schema = DEFAULT_SCHEMA,
    *,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> ModelAnswer:
    """The answer to ``query`` (text or a parsed :class:`~hgm_engine.query.syntax.Query`) on
    ``graph``; raises :class:`ModelQueryError` when the focus or a parameter is missing or of
    the wrong kind for its place.

    >>> g = ModelGraph.from_document({"nodes": [{"id": "x", "type": "fact"}], "edges": []})
    >>> evaluate("nodes.count()", g), evaluate("$p", g, params={"p": ["x", "nope", "x"]}).value
    (ModelAnswer(kind='count', value=1), ['x'])
    >>> evaluate("#$p", g, params={"p": 3})
    Traceback (most recent call last):
      ...
    hgm_engine.testing.interpreter.ModelQueryError: invalid-argument
    """
    tree = parse(query) if isinstance(query, str) else query
    static = _static_problems(tree)
    if static:
        raise ModelQueryError([category for _, category in sorted(static, key=lambda p: p[0])])
    bound = _bind(tree, focus, dict(params or {}))
    run = _Run(graph, schema, focus, bound)
    final = _final_of(tree)
    pairs = run.query(tree)
    if final is None:
        return ModelAnswer("nodes", [node for node, _ in pairs])
    if final == "count":
        return ModelAnswer("count", len(pairs))
    if final == "exists":
        return ModelAnswer("exists", bool(pairs))
    return ModelAnswer("paths", [list(walk) for _, walk in pairs])


def holds(condition: S.Expr, node_id: str, graph: ModelGraph, schema: Schema = DEFAULT_SCHEMA) -> bool:
    """Whether a condition (of a constraint or a rule; no parameters) holds on one node.

    >>> from hgm_engine.query import parse_constraint
    >>> g = ModelGraph.from_document({"nodes": [{"id": "x", "type": "fact", "ok": True}], "edges": []})
    >>> holds(parse_constraint("each fact must ok").must, "x", g)
    True
    """
    return _Run(graph, schema, None, {}).holds(condition, node_id)


def relative(path: S.Path, node_id: str, graph: ModelGraph, schema: Schema = DEFAULT_SCHEMA) -> list[str]:
    """The ids a relative path (a rule's target: no start) reaches from one node.

    >>> from hgm_engine.query import parse_rule_file
    >>> rule = parse_rule_file("rule r: on add fact then mark related.where(type = 'entity') as blocked").statements[0]
    >>> g = ModelGraph.from_document({"nodes": [{"id": "f", "type": "fact"}, {"id": "e", "type": "entity"}],
    ...     "edges": [{"from": "e", "to": "f", "type": "related_to"}]})
    >>> relative(rule.effects[0].target, "f", g)
    ['e']
    """
    return [node for node, _ in _Run(graph, schema, None, {}).path(path, [(node_id, (node_id,))])]


# -- binding the focus and the parameters (spec §4, language.md §11) -------------------------


def _final_of(tree: S.Query) -> str | None:
    steps = tree.paths[-1].steps
    if len(tree.paths) == 1 and steps and isinstance(steps[-1], S.CallStep) and steps[-1].name in FINALS:
        return steps[-1].name
    return None


def _uses(tree: Any) -> tuple[int | None, dict[str, tuple[int, set[str]]]]:
    """Where the query first uses the focus, and each parameter's first use and roles."""
    focus_at: list[int] = []
    params: dict[str, tuple[int, set[str]]] = {}

    def use(name: str, offset: int, role: str | None) -> None:
        first, roles = params.get(name, (offset, set()))
        params[name] = (min(first, offset), roles | ({role} if role else set()))

    def visit(node: Any) -> None:
        if isinstance(node, S.NamedStart) and node.name in ("focus", "current_goal"):
            focus_at.append(node.span.start)
        elif isinstance(node, S.IdStart) and node.param is not None:
            use(node.param, node.span.start, "id")
        elif isinstance(node, S.ParamStart):
            use(node.param, node.span.start, "ids")
        elif isinstance(node, S.CallStep) and node.name == "limit":
            for arg in node.args:
                if isinstance(arg, S.ParamRef):
                    use(arg.name, arg.span.start, "count")
        elif isinstance(node, S.Compare) and node.op == "=~" and isinstance(node.right, S.ParamRef):
            use(node.right.name, node.right.span.start, "regex")
        elif isinstance(node, (S.CallStart, S.CallStep)) and node.name in TEXT_TAKERS and len(node.args) == 1 and isinstance(node.args[0], S.ParamRef):
            use(node.args[0].name, node.args[0].span.start, "text")
        elif isinstance(node, S.FuncCall) and node.name == "valid_at" and isinstance(node.value, S.ParamRef):
            use(node.value.name, node.value.span.start, "time")
        elif isinstance(node, S.ParamRef):
            use(node.name, node.span.start, None)
        for child in subtrees(node):
            visit(child)

    visit(tree)
    return (min(focus_at) if focus_at else None), params


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


def _role_problem(value: Any, roles: set[str]) -> str | None:
    if "id" in roles and not isinstance(value, str):
        return "invalid-argument"
    if "ids" in roles and not (isinstance(value, str) or (kind(value) == "list" and all(isinstance(v, str) for v in value))):
        return "invalid-argument"
    if "count" in roles and not (type(value) is int and value >= 0):
        return "invalid-argument"
    if "text" in roles and not (isinstance(value, str) and query_terms(value)):
        return "invalid-argument"
    if "time" in roles and instant(value) is None:
        return "invalid-argument"
    if "regex" in roles:
        if not isinstance(value, str):
            return "invalid-argument"
        try:
            re.compile(value)
        except re.error:
            return "invalid-regex"
    return None


def _static_problems(tree: Any) -> list[tuple[int, str]]:
    """The v1.1 arguments that are wrong whatever the parameters (spec §8): a TEXT that is
    not one string literal or parameter, or a literal with no word to search for; a
    ``valid_at`` without exactly one string literal or parameter, or a literal that is not an
    ISO 8601 instant. Each is ``invalid-argument`` at its place, found before anything runs."""
    problems: list[tuple[int, str]] = []

    def visit(node: Any) -> None:
        if isinstance(node, (S.CallStart, S.CallStep)) and node.name in TEXT_TAKERS:
            args = node.args
            if len(args) != 1 or not isinstance(args[0], (S.Literal, S.ParamRef)):
                problems.append((args[0].span.start if args else node.span.start, "invalid-argument"))
            elif isinstance(args[0], S.Literal) and not (isinstance(args[0].value, str) and query_terms(args[0].value)):
                problems.append((args[0].span.start, "invalid-argument"))
        elif isinstance(node, S.FuncCall) and node.name == "valid_at":
            value = node.value
            if node.path is not None or value is None or isinstance(value, S.ListLiteral):
                problems.append(((value.span if value is not None else node.span).start, "invalid-argument"))
            elif isinstance(value, S.Literal) and instant(value.value) is None:
                problems.append((value.span.start, "invalid-argument"))
        for child in subtrees(node):
            visit(child)

    visit(tree)
    return problems


def _bind(tree: S.Query, focus: str | None, params: dict[str, Any]) -> dict[str, Any]:
    focus_at, uses = _uses(tree)
    problems: list[tuple[int, str]] = []
    if focus_at is not None and focus is None:
        problems.append((focus_at, "missing-focus"))
    bound = {}
    for name, (offset, roles) in uses.items():
        if name not in params:
            problems.append((offset, "missing-parameter"))
        elif not _is_json(params[name]):
            problems.append((offset, "invalid-argument"))
        elif _role_problem(params[name], roles):
            problems.append((offset, _role_problem(params[name], roles)))
        else:
            bound[name] = json.loads(json.dumps(params[name]))  # a private copy, lists as lists
    if problems:
        raise ModelQueryError([category for _, category in sorted(problems, key=lambda p: p[0])])
    return bound


# -- evaluation ------------------------------------------------------------------------------


def _unique(pairs: list[Pair]) -> list[Pair]:
    """First occurrence wins."""
    seen: set[str] = set()
    out = []
    for node, walk in pairs:
        if node not in seen:
            seen.add(node)
            out.append((node, walk))
    return out


def _is_navigation(step: S.Step) -> bool:
    return isinstance(step, S.RelationStep) or (isinstance(step, S.CallStep) and step.name in GENERIC_STEPS)


def _is_predicate(step: S.Step) -> bool:
    return isinstance(step, (S.WhereStep, S.IndexStep, S.SliceStep))


class _Run:
    """One evaluation: the graph, the schema, the focus and the bound parameters."""

    def __init__(self, graph: ModelGraph, schema: Schema, focus: str | None, params: dict[str, Any]):
        self.graph = graph
        self.schema = schema
        self.focus = focus
        self.params = params
        self.position = {node: i for i, node in enumerate(graph.nodes)}  # creation order

    # -- queries and paths ----------------------------------------------------------------

    def query(self, tree: S.Query) -> list[Pair]:
        """``a | b``: the branches' values concatenated, repeats dropped."""
        return _unique([pair for path in tree.paths for pair in self.path(path)])

    def path(self, path: S.Path, pairs: list[Pair] | None = None) -> list[Pair]:
        if path.start is not None:
            pairs = self.start(path.start)
        steps = path.steps
        i = 0
        while i < len(steps):
            step = steps[i]
            if _is_navigation(step):
                j = i + 1
                repeat = None
                if j < len(steps) and isinstance(steps[j], S.RepeatStep):
                    repeat, j = steps[j], j + 1
                predicates = []
                while j < len(steps) and _is_predicate(steps[j]):
                    predicates.append(steps[j])
                    j += 1
                pairs = self.navigate(pairs, step, repeat, predicates)
                i = j
                continue
            if _is_predicate(step):
                pairs = self.predicate(pairs, step)  # after a start or a list step: the whole list
            elif isinstance(step, S.CallStep) and step.name in LIST_STEPS:
                pairs = self.list_step(pairs, step)
            elif isinstance(step, S.CallStep) and step.name in FINALS:
                pass  # the caller reads the final; the value is the list so far
            else:
                raise ValueError(f"the model does not know the step {step!r}")
            i += 1
        return pairs

    # -- starts (spec §2.1) ----------------------------------------------------------------

    def start(self, start: S.Start) -> list[Pair]:
        g = self.graph
        if isinstance(start, S.NamedStart):
            if start.name == "nodes":
                ids = list(g.nodes)
            elif start.name == "root":
                ids = [n for n in g.nodes if g.type_of(n) == "goal" and not g.in_edges(n, ("parent_of",))]
            elif start.name == "focus":
                ids = [self.focus] if self.focus in g.nodes else []
            elif start.name == "current_goal":
                ids = self.current_goal()
            else:
                raise ValueError(f"unknown start {start.name!r}")
        elif isinstance(start, S.IdStart):
            node_id = start.node_id if start.param is None else self.params[start.param]
            wanted = start.node_type
            ids = [node_id] if node_id in g.nodes and (wanted is None or g.type_of(node_id) == wanted) else []
        elif isinstance(start, S.ParamStart):
            value = self.params[start.param]
            given = [value] if isinstance(value, str) else list(value)
            ids = list(dict.fromkeys(i for i in given if i in g.nodes))
        elif isinstance(start, S.SubqueryStart):
            return self.query(start.query)
        elif isinstance(start, S.CallStart) and start.name == "search":
            ids = ranked(g, self.text(start.args[0]))
        else:
            raise ValueError(f"unknown start {start!r}")
        return [(node, (node,)) for node in ids]

    def current_goal(self) -> list[str]:
        """The focus if it is a goal, else the first goal met breadth-first among its
        ancestors (each level in edge order)."""
        g = self.graph
        if self.focus not in g.nodes:
            return []
        seen, level = {self.focus}, [self.focus]
        while level:
            for node in level:
                if g.type_of(node) == "goal":
                    return [node]
            following = []
            for node in level:
                for parent in g.in_neighbours(node, ("parent_of",)):
                    if parent not in seen:
                        seen.add(parent)
                        following.append(parent)
            level = following
        return []

    # -- navigation (spec §2.2) ------------------------------------------------------------

    def navigate(self, pairs: list[Pair], step: S.Step, repeat: S.RepeatStep | None, predicates: list[S.Step]) -> list[Pair]:
        """Each source on its own: the step (repeated), then the predicates on that source's
        output; the outputs concatenated, repeats dropped."""
        expand = self.expander(step)
        out = []
        for node, walk in pairs:
            if repeat is None:
                reached = _unique(expand(node, walk))
            else:
                reached = self.repeat(expand, node, walk, repeat.lower, repeat.upper)
            for predicate in predicates:
                reached = self.predicate(reached, predicate)
            out.extend(reached)
        return _unique(out)

    def expander(self, step: S.Step) -> Callable[[str, tuple], list[Pair]]:
        """The function from one node (and its walk) to the step's outputs for it."""
        if isinstance(step, S.CallStep):
            types = tuple(arg.name for arg in step.args) or None
            return self.hop(Hop(step.name, types))
        relation = self.schema.relation(step.name)
        if isinstance(relation, Hop):
            return self.hop(relation)
        if isinstance(relation, Closure):
            once = self.hop(relation.hop)
            return lambda node, walk: self.repeat(once, node, walk, 1, None)
        if isinstance(relation, Siblings):
            return self.siblings
        if isinstance(relation, Latest):
            return self.latest
        if isinstance(relation, Versions):
            return self.versions
        raise ValueError(f"unknown relation {step.name!r}")

    def hop(self, hop: Hop) -> Callable[[str, tuple], list[Pair]]:
        g = self.graph

        def expand(node: str, walk: tuple) -> list[Pair]:
            found = []
            if hop.direction in ("out", "both"):
                found += g.out_neighbours(node, hop.edge_types)
            if hop.direction in ("in", "both"):
                found += g.in_neighbours(node, hop.edge_types)
            return [(m, walk + (m,)) for m in found if hop.node_type is None or g.type_of(m) == hop.node_type]

        return expand

    def repeat(self, expand: Callable, node: str, walk: tuple, lower: int, upper: int | None) -> list[Pair]:
        """Breadth-first from one source: level 0 is the source, level k the step applied to
        level k-1 without the nodes this source already reached; levels lower..upper."""
        reached = {node}
        level = [(node, walk)]
        out = [(node, walk)] if lower == 0 else []  # staying put adds nothing to the walk
        depth = 0
        while level and (upper is None or depth < upper):
            depth += 1
            following = []
            for current, current_walk in level:
                for target, target_walk in expand(current, current_walk):
                    if target not in reached:
                        reached.add(target)
                        following.append((target, target_walk))
            if depth >= lower:
                out.extend(following)
            level = following
        return out

    def siblings(self, node: str, walk: tuple) -> list[Pair]:
        g = self.graph
        out = []
        for parent in g.in_neighbours(node, ("parent_of",)):
            for child in g.out_neighbours(parent, ("parent_of",)):
                if child != node:
                    out.append((child, walk + (parent, child)))
        return _unique(out)

    def _newest_replacer(self, node: str) -> str | None:
        replacers = self.graph.in_neighbours(node, ("replaces",))
        return max(replacers, key=self.position.__getitem__) if replacers else None

    def latest(self, node: str, walk: tuple) -> list[Pair]:
        chain, seen, current = [], {node}, node
        while (newer := self._newest_replacer(current)) is not None and newer not in seen:
            seen.add(newer)
            chain.append(newer)
            current = newer
        return [(current, walk + tuple(chain))] if chain else [(node, walk)]

    def versions(self, node: str, walk: tuple) -> list[Pair]:
        """Backwards through the first ``replaces`` edge at each step, forwards through the
        newest replacer at each step (language.md, decision 3); oldest first."""
        g = self.graph
        older, seen, current = [], {node}, node
        while (targets := g.out_neighbours(current, ("replaces",))) and targets[0] not in seen:
            current = targets[0]
            seen.add(current)
            older.append(current)
        newer, current = [], node
        while (replacer := self._newest_replacer(current)) is not None and replacer not in seen:
            current = replacer
            seen.add(current)
            newer.append(current)
        out = [(older[i], walk + tuple(older[: i + 1])) for i in reversed(range(len(older)))]
        out.append((node, walk))
        out += [(newer[j], walk + tuple(newer[: j + 1])) for j in range(len(newer))]
        return out

    def text(self, arg: S.Expr) -> str:
        """A TEXT argument's string (checked before running)."""
        return arg.value if isinstance(arg, S.Literal) else self.params[arg.name]

    # -- predicates and list steps ---------------------------------------------------------

    def predicate(self, pairs: list[Pair], step: S.Step) -> list[Pair]:
        if isinstance(step, S.WhereStep):
            return [(n, w) for n, w in pairs if self.holds(step.condition, n)]
        if isinstance(step, S.IndexStep):
            index = step.index
            return [pairs[index]] if -len(pairs) <= index < len(pairs) else []
        return pairs[step.lower : step.upper]

    def list_step(self, pairs: list[Pair], step: S.CallStep) -> list[Pair]:
        if step.name == "first":
            return pairs[:1]
        if step.name == "last":
            return pairs[-1:]
        if step.name == "limit":
            return pairs[: self.operand(step.args[0], None)]
        if step.name == "rank":
            walks = dict(pairs)
            return [(node, walks[node]) for node in rank_ids(self.graph, [n for n, _ in pairs], self.text(step.args[0]))]
        attribute = step.args[0].name
        descending = len(step.args) > 1 and step.args[1].value == "desc"
        present = [(n, w) for n, w in pairs if self.graph.value(n, attribute) is not None]
        missing = [(n, w) for n, w in pairs if self.graph.value(n, attribute) is None]
        ranked = sorted(present, key=lambda pair: sort_rank(self.graph.value(pair[0], attribute)))
        if descending:
            # Reverse the order of the values, not of the nodes: equal values keep input order.
            groups: list[list[Pair]] = []
            for pair in ranked:
                if groups and sort_rank(self.graph.value(groups[-1][0][0], attribute)) == sort_rank(self.graph.value(pair[0], attribute)):
                    groups[-1].append(pair)
                else:
                    groups.append([pair])
            ranked = [pair for group in reversed(groups) for pair in group]
        return ranked + missing

    # -- conditions (spec §3) ----------------------------------------------------------------

    def holds(self, expr: S.Expr, node: str) -> bool:
        if isinstance(expr, S.And):
            return all(self.holds(e, node) for e in expr.operands)
        if isinstance(expr, S.Or):
            return any(self.holds(e, node) for e in expr.operands)
        if isinstance(expr, S.Not):
            return not self.holds(expr.operand, node)
        if isinstance(expr, S.Compare):
            left, right = self.operand(expr.left, node), self.operand(expr.right, node)
            if expr.op == "=~":
                return matches(left, right)
            return compare(expr.op, left, right)
        return self.operand(expr, node) is True

    def operand(self, expr: S.Expr, node: str | None) -> Any:
        if isinstance(expr, S.Literal):
            return expr.value
        if isinstance(expr, S.ListLiteral):
            return [self.operand(item, node) for item in expr.items]
        if isinstance(expr, S.ParamRef):
            return self.params[expr.name]
        if isinstance(expr, S.AttrRef):
            return self.graph.value(node, expr.name)
        if isinstance(expr, S.FuncCall):
            if expr.name == "valid_at":
                return holds_at(self.graph.nodes[node][1], self.operand(expr.value, node))
            if expr.name == "has":
                return self.graph.value(node, expr.path.steps[0].name) is not None
            reached = self.path(expr.path, [(node, (node,))])
            return bool(reached) if expr.name == "exists" else len(reached)
        if isinstance(expr, (S.Compare, S.And, S.Or, S.Not)):
            return self.holds(expr, node)
        raise ValueError(f"the model does not know the operand {expr!r}")
