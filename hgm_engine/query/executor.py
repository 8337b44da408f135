"""The executor: turn an optimized plan into Python closures once, then run them on a graph.

A compiled :class:`Program` is independent of the graph and of parameter values, so the
query cache keeps it. Running it needs a *view* — anything with ``node_map()``,
``ids_of_type()``, ``roots()``, ``out_adjacency()`` and ``in_adjacency()``, such as
:class:`~hgm_engine.model.graph.MemoryGraph` or a historical view — plus the focus and parameters.

Node lists are lists of ids without duplicates. When the query ends in ``.paths()`` the same
operators run in *traced* mode over ``(id, walk)`` pairs.

>>> from hgm_engine.model.graph import MemoryGraph
>>> g = MemoryGraph()
>>> for i in ("g", "a", "b"): _ = g.add_node(i, "goal" if i == "g" else "action", {"n": len(i)})
>>> _ = g.add_edge("g", "a", "parent_of"); _ = g.add_edge("g", "b", "parent_of")
>>> from hgm_engine.query.pipeline import compile
>>> compile("root.actions.count()").program.run(g)
2
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Callable, Mapping

import regex

from hgm_engine.errors import Problem, QueryExecutionError
from hgm_engine.query.plan import (
    AllNodes,
    AllOf,
    AnyOf,
    Attr,
    Cmp,
    Const,
    CurrentGoal,
    Filter,
    FocusNode,
    HasAttr,
    IdLookup,
    Index,
    Limit,
    Navigate,
    Negate,
    Param,
    ParamNodes,
    PathCount,
    PathExists,
    PathPlan,
    QueryPlan,
    Roots,
    Slice,
    SortBy,
    SubPlan,
    Truthy,
    TypeScan,
    ValueScan,
)
from hgm_engine.model import Closure, Hop, Latest, Siblings, Versions

__all__ = ["Program", "Limits", "build", "values_equal", "sort_key"]

_NUMBER_TYPES = (int, float)


class Limits:
    """How much work one query may do before it is stopped with ``limit-exceeded``.

    ``max_work`` counts the nodes a query reads: start lists, scanned candidates, filtered
    and navigated nodes. ``timeout`` (seconds) bounds the whole query; ``regex_timeout`` bounds
    one regular-expression match (a hostile pattern cannot hang the engine).

    >>> Limits(max_work=10).max_work
    10
    """

    __slots__ = ("max_work", "timeout", "regex_timeout")

    def __init__(
        self, max_work: int | None = 50_000_000, timeout: float | None = None, regex_timeout: float = 1.0
    ):
        self.max_work = max_work
        self.timeout = timeout
        self.regex_timeout = regex_timeout


DEFAULT_LIMITS = Limits()


class _Context:
    __slots__ = (
        "view", "nodes", "out_adj", "in_adj", "params", "focus", "work", "max_work", "deadline", "regexes",
        "regex_timeout",
    )

    def __init__(self, view, params: Mapping[str, Any], focus: str | None, limits: Limits):
        self.view = view
        self.nodes = view.node_map()
        self.out_adj = view.out_adjacency
        self.in_adj = view.in_adjacency
        self.params = params
        self.focus = focus
        self.work = 0
        self.max_work = limits.max_work
        self.deadline = None if limits.timeout is None else time.monotonic() + limits.timeout
        self.regexes: dict[str, Any] = {}
        self.regex_timeout = limits.regex_timeout

    def search(self, pattern, value: str):
        """``pattern.search(value)`` within the regex and query time limits."""
        timeout = self.regex_timeout
        if self.deadline is not None:
            timeout = max(0.0, min(timeout, self.deadline - time.monotonic()))
        try:
            return pattern.search(value, timeout=timeout)
        except TimeoutError:
            raise QueryExecutionError(
                [Problem("limit-exceeded", f"a regular expression ran past its time limit ({timeout:.3g} s)")]
            ) from None

    def charge(self, amount: int) -> None:
        self.work += amount
        if self.max_work is not None and self.work > self.max_work:
            raise QueryExecutionError(
                [Problem("limit-exceeded", f"the query produced more than {self.max_work} nodes in its steps")]
            )
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise QueryExecutionError([Problem("limit-exceeded", "the query ran past its time limit")])


# -- value semantics (spec §3) ---------------------------------------------------------------


def values_equal(a: Any, b: Any) -> bool:
    """``=`` of the language: same kind only, numbers as numbers, booleans are not numbers.

    >>> values_equal(1, 1.0), values_equal(True, 1), values_equal(None, None), values_equal((1, "a"), (1.0, "a"))
    (True, False, True, True)
    """
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in _NUMBER_TYPES and tb in _NUMBER_TYPES:
        return a == b
    if a is None or b is None:
        return a is b
    if ta is str or tb is str:
        return ta is tb and a == b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    return False


def _is_number(value: Any) -> bool:
    return type(value) in _NUMBER_TYPES


def _ordered(op: str) -> Callable[[Any, Any], bool]:
    import operator

    compare = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]

    def holds(a: Any, b: Any) -> bool:
        ta, tb = type(a), type(b)
        if (ta in _NUMBER_TYPES and tb in _NUMBER_TYPES) or (ta is str and tb is str):
            return compare(a, b)
        return False

    return holds


def _contains(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return any(values_equal(item, b) for item in a)
    if type(a) is str and type(b) is str:
        return b in a
    return False


def _member(a: Any, items: Any) -> bool:
    if not isinstance(items, tuple):
        return False
    return any(values_equal(a, item) for item in items)


def sort_key(value: Any) -> tuple:
    """The ascending order of ``sort_by``: numbers, then strings, then booleans, then the rest."""
    kind = type(value)
    if kind in _NUMBER_TYPES:
        return (0, value)
    if kind is str:
        return (1, value)
    if kind is bool:
        return (2, value)
    return (3, 0)


# -- compiling conditions ----------------------------------------------------------------------


def _attr_getter(name: str) -> Callable:
    if name == "id":
        return lambda node, ctx: node.id
    if name == "type":
        return lambda node, ctx: node.type
    return lambda node, ctx: node.attrs.get(name)


def _operand(operand, compile_path) -> Callable:
    if isinstance(operand, Attr):
        return _attr_getter(operand.name)
    if isinstance(operand, Const):
        value = operand.value
        return lambda node, ctx: value
    if isinstance(operand, Param):
        name = operand.name
        return lambda node, ctx: ctx.params[name]
    if isinstance(operand, HasAttr):
        get = _attr_getter(operand.name)
        return lambda node, ctx: get(node, ctx) is not None
    if isinstance(operand, PathCount):
        run = compile_path(operand.path)
        return lambda node, ctx: len(run([node.id], ctx))
    if isinstance(operand, PathExists):
        run = compile_path(operand.path)
        return lambda node, ctx: bool(run([node.id], ctx))
    # a parenthesised condition used as a value
    return _condition(operand, compile_path)


def _condition(cond, compile_path) -> Callable:
    """A function ``(node, ctx) -> bool`` for a condition.

    Conditions are generated as the source of one Python function (constants are passed in
    as names, never pasted as text), so a conjunction of attribute tests costs one call per
    node instead of one per test; parts the generator does not handle are closures it calls.
    """
    return _Generator(compile_path).function(cond)


class _Generator:
    """Writes a condition as Python source over ``n`` (the node) and ``a`` (its attributes)."""

    def __init__(self, compile_path):
        self.compile_path = compile_path
        self.names: dict[str, Any] = {"_NUM": _NUMBER_TYPES}
        self.temps = 0

    def constant(self, value: Any) -> str:
        name = f"_k{len(self.names)}"
        self.names[name] = value
        return name

    def temp(self) -> str:
        self.temps += 1
        return f"_v{self.temps}"

    def _define(self, source: str, name: str) -> Callable:
        namespace = dict(self.names)
        exec(compile(source, "<hgm condition>", "exec"), namespace)  # noqa: S102 - generated from the plan
        function = namespace[name]
        function.source = source
        return function

    def function(self, cond) -> Callable:
        """``test(node, ctx) -> bool``."""
        body = self.expression(cond)
        return self._define(f"def _test(n, ctx):\n    a = n.attrs\n    return {body}\n", "_test")

    def id_filter(self, cond) -> Callable:
        """``keep(ids, ctx) -> ids`` passing the condition, the test inlined in the loop."""
        body = self.expression(cond)
        return self._define(
            "def _keep(ids, ctx):\n"
            "    nodes = ctx.nodes\n"
            f"    return [i for i in ids if (a := (n := nodes[i]).attrs) is not None and {body}]\n",
            "_keep",
        )

    def payload_scan(self, cond) -> Callable:
        """``scan(payloads, ctx) -> ids`` of the payloads passing the condition."""
        body = self.expression(cond)
        return self._define(
            "def _scan(payloads, ctx):\n"
            f"    return [n.id for n in payloads if (a := n.attrs) is not None and {body}]\n",
            "_scan",
        )

    def fallback(self, cond) -> str:
        name = self.constant(_closure_condition(cond, self.compile_path))
        return f"{name}(n, ctx)"

    def attribute(self, name: str) -> str:
        if name == "id":
            return "n.id"
        if name == "type":
            return "n.type"
        return f"a.get({self.constant(name)})"

    def expression(self, cond) -> str:
        if isinstance(cond, AllOf):
            return "(" + " and ".join(self.expression(c) for c in cond.items) + ")"
        if isinstance(cond, AnyOf):
            return "(" + " or ".join(self.expression(c) for c in cond.items) + ")"
        if isinstance(cond, Negate):
            return f"(not {self.expression(cond.item)})"
        if isinstance(cond, Truthy) and isinstance(cond.operand, Attr):
            return f"({self.attribute(cond.operand.name)} is True)"
        if isinstance(cond, Truthy) and isinstance(cond.operand, HasAttr):
            return f"({self.attribute(cond.operand.name)} is not None)"
        if isinstance(cond, Cmp) and isinstance(cond.left, Attr) and isinstance(cond.right, Const):
            generated = self.comparison(cond.op, self.attribute(cond.left.name), cond.right.value)
            if generated is not None:
                return generated
        return self.fallback(cond)

    def comparison(self, op: str, value: str, constant: Any) -> str | None:
        kind = type(constant)
        if op in ("=", "!="):
            if kind is str:
                test = f"({value} == {self.constant(constant)})"
            elif constant is None or kind is bool:
                test = f"({value} is {self.constant(constant)})"
            elif kind in _NUMBER_TYPES:
                v = self.temp()
                test = f"(type({v} := {value}) in _NUM and {v} == {self.constant(constant)})"
            else:
                return None
            return test if op == "=" else f"(not {test})"
        if op in ("<", "<=", ">", ">="):
            v = self.temp()
            if kind in _NUMBER_TYPES:
                return f"(type({v} := {value}) in _NUM and {v} {op} {self.constant(constant)})"
            if kind is str:
                return f"(type({v} := {value}) is str and {v} {op} {self.constant(constant)})"
            return "False"
        if op in ("in", "not in") and isinstance(constant, tuple) and all(type(c) is str for c in constant):
            return f"({value} {op} {self.constant(frozenset(constant))})"
        return None


def _closure_condition(cond, compile_path) -> Callable:
    """A closure ``(node, ctx) -> bool``; common shapes get specialised fast paths."""
    if isinstance(cond, AllOf):
        parts = [_condition(c, compile_path) for c in cond.items]
        if len(parts) == 2:
            first, second = parts
            return lambda node, ctx: first(node, ctx) and second(node, ctx)
        return lambda node, ctx: all(p(node, ctx) for p in parts)
    if isinstance(cond, AnyOf):
        parts = [_condition(c, compile_path) for c in cond.items]
        return lambda node, ctx: any(p(node, ctx) for p in parts)
    if isinstance(cond, Negate):
        inner = _condition(cond.item, compile_path)
        return lambda node, ctx: not inner(node, ctx)
    if isinstance(cond, Truthy):
        value = _operand(cond.operand, compile_path)
        return lambda node, ctx: value(node, ctx) is True
    if isinstance(cond, Cmp):
        fast = _fast_comparison(cond)
        if fast is not None:
            return fast
        left = _operand(cond.left, compile_path)
        right = _operand(cond.right, compile_path)
        op = cond.op
        if op == "=":
            return lambda node, ctx: values_equal(left(node, ctx), right(node, ctx))
        if op == "!=":
            return lambda node, ctx: not values_equal(left(node, ctx), right(node, ctx))
        if op in ("<", "<=", ">", ">="):
            holds = _ordered(op)
            return lambda node, ctx: holds(left(node, ctx), right(node, ctx))
        if op == "in":
            return lambda node, ctx: _member(left(node, ctx), right(node, ctx))
        if op == "not in":
            return lambda node, ctx: not _member(left(node, ctx), right(node, ctx))
        if op == "contains":
            return lambda node, ctx: _contains(left(node, ctx), right(node, ctx))
        if op == "=~":
            return _regex_condition(left, cond.right)
        raise ValueError(f"unknown comparison {op!r}")
    return _operand(cond, compile_path)


def _regex_condition(left: Callable, pattern_operand) -> Callable:
    if isinstance(pattern_operand, Const):
        pattern = regex.compile(pattern_operand.value)

        def matches(node, ctx):
            value = left(node, ctx)
            return type(value) is str and ctx.search(pattern, value) is not None

        return matches
    name = pattern_operand.name

    def matches_param(node, ctx):
        value = left(node, ctx)
        if type(value) is not str:
            return False
        pattern = ctx.regexes.get(name)
        if pattern is None:
            pattern = ctx.regexes[name] = regex.compile(ctx.params[name])
        return ctx.search(pattern, value) is not None

    return matches_param


def _fast_comparison(cond: Cmp) -> Callable | None:
    """Attribute-versus-constant comparisons, inlined (they dominate real queries)."""
    if not (isinstance(cond.left, Attr) and isinstance(cond.right, Const)):
        return None
    name, value, op = cond.left.name, cond.right.value, cond.op
    if name in ("id", "type"):
        return None
    if op in ("=", "!="):
        if type(value) is str:
            test = lambda node, ctx: node.attrs.get(name) == value  # noqa: E731 - only str == str
        elif value is None or type(value) is bool:
            test = lambda node, ctx: node.attrs.get(name) is value  # noqa: E731
        elif type(value) in _NUMBER_TYPES:

            def test(node, ctx):
                v = node.attrs.get(name)
                return type(v) in _NUMBER_TYPES and v == value

        else:
            return None
        if op == "!=":
            positive = test
            return lambda node, ctx: not positive(node, ctx)
        return test
    if op in ("<", "<=", ">", ">=") and type(value) in _NUMBER_TYPES:
        import operator

        compare = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]

        def ordered(node, ctx):
            v = node.attrs.get(name)
            return type(v) in _NUMBER_TYPES and compare(v, value)

        return ordered
    if op in ("in", "not in") and isinstance(value, tuple) and all(type(v) is str for v in value):
        members = frozenset(value)
        if op == "in":
            return lambda node, ctx: node.attrs.get(name) in members
        return lambda node, ctx: node.attrs.get(name) not in members
    return None


# -- navigation -------------------------------------------------------------------------------


def _hop(relation: Hop) -> Callable:
    """``expand(node_id, ctx) -> sequence of ids`` for one hop, in edge order, no duplicates."""
    direction, edge_types, node_type = relation.direction, relation.edge_types, relation.node_type
    if edge_types is not None and len(edge_types) == 1 and direction != "both":
        edge_type = edge_types[0]
        if direction == "out":

            def single(node_id, ctx):
                return ctx.out_adj(node_id).by_type.get(edge_type, ())

        else:

            def single(node_id, ctx):
                return ctx.in_adj(node_id).by_type.get(edge_type, ())

        expand = single
    elif edge_types is not None and len(edge_types) == 1:
        edge_type = edge_types[0]

        def both_single(node_id, ctx):
            outgoing = ctx.out_adj(node_id).by_type.get(edge_type, ())
            incoming = ctx.in_adj(node_id).by_type.get(edge_type, ())
            if not incoming:
                return outgoing
            if not outgoing:
                return incoming
            return list(dict.fromkeys((*outgoing, *incoming)))

        expand = both_single
    else:
        wanted = None if edge_types is None else frozenset(edge_types)

        def expand(node_id, ctx):
            pairs = ()
            if direction in ("out", "both"):
                pairs = ctx.out_adj(node_id).pairs
            if direction in ("in", "both"):
                pairs = pairs + ctx.in_adj(node_id).pairs
            if wanted is None:
                return list(dict.fromkeys(other for _, other in pairs))
            return list(dict.fromkeys(other for edge_type, other in pairs if edge_type in wanted))

    if node_type is None:
        return expand
    if edge_types is not None and len(edge_types) == 1 and direction != "both":
        edge_type = edge_types[0]
        adjacency_of = "out_adj" if direction == "out" else "in_adj"

        def single_typed(node_id, ctx):  # the adjacency remembers its targets of that type
            return getattr(ctx, adjacency_of)(node_id).of_type(edge_type, node_type, ctx.nodes)

        return single_typed

    def restricted(node_id, ctx):
        nodes = ctx.nodes
        return [other for other in expand(node_id, ctx) if nodes[other].type == node_type]

    return restricted


def _repeat(expand: Callable, low: int, high: int | None) -> tuple[Callable, Callable]:
    """Breadth-first repetition (spec §2.2), untraced and traced."""

    def levels(source, ctx):
        reached = {source}
        level = [source]
        out = [source] if low == 0 else []
        depth = 0
        while level and (high is None or depth < high):
            depth += 1
            following = []
            for node_id in level:
                for other in expand(node_id, ctx):
                    if other not in reached:
                        reached.add(other)
                        following.append(other)
            if depth >= low:
                out.extend(following)
            ctx.charge(len(following))
            level = following
        return out

    def traced(source, ctx):
        reached = {source: ()}
        level = [source]
        out = [(source, ())] if low == 0 else []
        depth = 0
        while level and (high is None or depth < high):
            depth += 1
            following = []
            for node_id in level:
                via = reached[node_id] + ((node_id,) if node_id != source else ())
                for other in expand(node_id, ctx):
                    if other not in reached:
                        reached[other] = via
                        following.append(other)
            if depth >= low:
                out.extend((other, reached[other]) for other in following)
            ctx.charge(len(following))
            level = following
        return out

    return levels, traced


def _siblings() -> tuple[Callable, Callable]:
    def traced(node_id, ctx):
        out: dict[str, tuple] = {}
        for parent in ctx.in_adj(node_id).by_type.get("parent_of", ()):
            for child in ctx.out_adj(parent).by_type.get("parent_of", ()):
                if child != node_id and child not in out:
                    out[child] = (parent,)
        return list(out.items())

    return (lambda node_id, ctx: [child for child, _ in traced(node_id, ctx)]), traced


def _newer_chain(node_id: str, ctx) -> list[str]:
    """The replacers of ``node_id``, newest first at each step, until nothing replaces."""
    chain = []
    seen = {node_id}
    current = node_id
    nodes = ctx.nodes
    while True:
        replacers = ctx.in_adj(current).by_type.get("replaces", ())
        if not replacers:
            return chain
        newest = max(replacers, key=lambda r: nodes[r].seq)
        if newest in seen:  # a cycle; constraints forbid it, but never loop
            return chain
        seen.add(newest)
        chain.append(newest)
        current = newest


def _older_chain(node_id: str, ctx) -> list[str]:
    chain = []
    seen = {node_id}
    current = node_id
    while True:
        replaced = ctx.out_adj(current).by_type.get("replaces", ())
        if not replaced or replaced[0] in seen:
            return chain
        current = replaced[0]
        seen.add(current)
        chain.append(current)


def _latest() -> tuple[Callable, Callable]:
    def plain(node_id, ctx):
        chain = _newer_chain(node_id, ctx)
        return [chain[-1] if chain else node_id]

    def traced(node_id, ctx):
        chain = _newer_chain(node_id, ctx)
        if not chain:
            return [(node_id, ())]
        return [(chain[-1], tuple(chain[:-1]))]

    return plain, traced


def _versions() -> tuple[Callable, Callable]:
    def traced(node_id, ctx):
        older = _older_chain(node_id, ctx)
        newer = _newer_chain(node_id, ctx)
        out = []
        for position in range(len(older) - 1, -1, -1):
            out.append((older[position], tuple(older[:position])))
        out.append((node_id, ()))
        for position, other in enumerate(newer):
            out.append((other, tuple(newer[:position])))
        return out

    return (lambda node_id, ctx: [other for other, _ in traced(node_id, ctx)]), traced


def _navigation(op: Navigate) -> tuple[Callable, Callable]:
    relation = op.relation
    if isinstance(relation, Hop):
        expand = _hop(relation)
        if op.repeat is not None:
            return _repeat(expand, *op.repeat)
        return expand, (lambda node_id, ctx: [(other, ()) for other in expand(node_id, ctx)])
    if isinstance(relation, Closure):
        return _repeat(_hop(relation.hop), 1, None)
    if isinstance(relation, Siblings):
        return _siblings()
    if isinstance(relation, Latest):
        return _latest()
    if isinstance(relation, Versions):
        return _versions()
    raise TypeError(relation)


# -- list operators ----------------------------------------------------------------------------


def _positional(op) -> Callable[[list], list]:
    if isinstance(op, Index):
        i = op.index
        if i == -1:
            return lambda items: items[-1:]
        return lambda items: items[i : i + 1]
    if isinstance(op, Slice):
        low, high = op.lower, op.upper
        return lambda items: items[low:high]
    raise TypeError(op)


def _list_op(op, compile_path) -> tuple[Callable, Callable]:
    """``(fast(ids, ctx), traced(items, ctx))`` for a whole-list operator."""
    if isinstance(op, Filter):
        test = _condition(op.condition, compile_path)
        keep = _Generator(compile_path).id_filter(op.condition)

        def fast(ids, ctx):
            ctx.charge(len(ids))
            return keep(ids, ctx)

        def traced(items, ctx):
            nodes = ctx.nodes
            return [item for item in items if test(nodes[item[0]], ctx)]

        return fast, traced
    if isinstance(op, (Index, Slice)):
        pick = _positional(op)
        return (lambda ids, ctx: pick(ids)), (lambda items, ctx: pick(items))
    if isinstance(op, Limit):
        count, param = op.count, op.param

        def limit(items, ctx):
            return items[: ctx.params[param] if param is not None else count]

        return limit, limit
    if isinstance(op, SortBy):
        name, descending = op.attr, op.descending
        get = _attr_getter(name)

        def sort(items, ctx, key_of=lambda item: item):
            nodes = ctx.nodes
            present, missing = [], []
            for item in items:
                value = get(nodes[key_of(item)], ctx)
                (missing if value is None else present).append((sort_key(value), item))
            present.sort(key=lambda pair: pair[0], reverse=descending)
            return [item for _, item in present] + [item for _, item in missing]

        return sort, (lambda items, ctx: sort(items, ctx, key_of=lambda item: item[0]))
    if isinstance(op, Navigate):
        raise TypeError("navigation is not a list operator")
    raise TypeError(op)


def _single_hop_step(relation: Hop) -> Callable | None:
    """The whole-list step for a one-type hop: one loop, no call per node but the lookup."""
    if relation.edge_types is None or len(relation.edge_types) != 1:
        return None
    edge_type, node_type, direction = relation.edge_types[0], relation.node_type, relation.direction

    key = (edge_type, node_type)

    def step(ids, ctx):
        out: list = []
        extend = out.extend
        adjacencies = (ctx.out_adj, ctx.in_adj) if direction == "both" else (ctx.out_adj if direction == "out" else ctx.in_adj,)
        if node_type is None:
            if direction == "both":  # per source: outgoing then incoming (spec §2.2)
                out_adj, in_adj = adjacencies
                for node_id in ids:
                    extend(out_adj(node_id).by_type.get(edge_type, ()))
                    extend(in_adj(node_id).by_type.get(edge_type, ()))
            else:
                (adjacency,) = adjacencies
                for node_id in ids:
                    extend(adjacency(node_id).by_type.get(edge_type, ()))
        else:
            # Each adjacency remembers its targets of one type: no type test per node after
            # the first visit (the lookup of the remembered tuple is inlined).
            nodes = ctx.nodes
            for node_id in ids:
                for adjacency in adjacencies:
                    found = adjacency(node_id)
                    targets = found.typed.get(key)
                    extend(targets if targets is not None else found.of_type(edge_type, node_type, nodes))
        if len(ids) > 1 or direction == "both":
            out = list(dict.fromkeys(out))
        ctx.charge(len(out))
        return out

    return step


def _generated_per_source(relation: Hop, predicates: tuple, compile_path) -> Callable | None:
    """A one-type hop whose per-source predicates are filters followed by at most one index or
    slice, generated as one function: the type test, the conditions and the pick run inline
    for each source's targets (no call per source beyond the adjacency lookup)."""
    if relation.edge_types is None or len(relation.edge_types) != 1 or relation.direction == "both":
        return None
    filters = [p for p in predicates if isinstance(p, Filter)]
    positional = [p for p in predicates if not isinstance(p, Filter)]
    if len(positional) > 1 or (positional and predicates[-1] is not positional[0]):
        return None
    generator = _Generator(compile_path)
    tests = [generator.expression(f.condition) for f in filters]
    keep = "(a := (n := nodes[t]).attrs) is not None and " + " and ".join(tests) if tests else None
    pick, stop = "", None
    if positional:
        op = positional[0]
        if isinstance(op, Index):
            pick = "[-1:]" if op.index == -1 else f"[{op.index}:{op.index + 1}]"
            stop = op.index + 1 if op.index >= 0 else None
        else:
            low = "" if op.lower is None else str(op.lower)
            high = "" if op.upper is None else str(op.upper)
            pick = f"[{low}:{high}]"
            if op.upper is not None and op.upper >= 0 and (op.lower is None or op.lower >= 0):
                stop = op.upper
    adjacency = "ctx.out_adj" if relation.direction == "out" else "ctx.in_adj"
    edge_type = generator.constant(relation.edge_types[0])
    if relation.node_type is None:
        lookup = f"adjacency(s).by_type.get({edge_type}, ())"
    else:  # the adjacency remembers its targets of that type
        lookup = f"adjacency(s).of_type({edge_type}, {generator.constant(relation.node_type)}, nodes)"
    if keep and stop is not None:
        # A pick from the front after a filter (actions.where(...)[0]) stops at the last
        # match it needs instead of testing every target.
        body = (
            "            picked = []\n"
            "            for t in targets:\n"
            "                scanned += 1\n"
            f"                if {keep}:\n"
            "                    picked.append(t)\n"
            f"                    if len(picked) == {stop}:\n"
            "                        break\n"
            f"            extend(picked{pick})\n"
        )
    else:
        chosen = f"[t for t in targets if {keep}]" if keep else "targets"
        body = "            scanned += len(targets)\n" f"            extend({chosen}{pick})\n"
    source = (
        "def _step(ids, ctx):\n"
        f"    adjacency = {adjacency}\n"
        "    nodes = ctx.nodes\n"
        "    out = []\n"
        "    extend = out.extend\n"
        "    scanned = 0\n"
        "    for s in ids:\n"
        f"        targets = {lookup}\n"
        "        if targets:\n"
        f"{body}"
        "    if len(ids) > 1:\n"
        "        out = list(dict.fromkeys(out))\n"
        "    ctx.charge(scanned)\n"
        "    return out\n"
    )
    return generator._define(source, "_step")


def _single_hop_per_source(relation: Hop, predicates: list[Callable]) -> Callable | None:
    """A one-type hop whose predicates apply to each source's targets, in one loop."""
    if relation.edge_types is None or len(relation.edge_types) != 1 or relation.direction == "both":
        return None
    edge_type, node_type, outgoing = relation.edge_types[0], relation.node_type, relation.direction == "out"

    def step(ids, ctx):
        adjacency = ctx.out_adj if outgoing else ctx.in_adj
        nodes = ctx.nodes
        out: list[str] = []
        extend = out.extend
        for node_id in ids:
            targets = adjacency(node_id).by_type.get(edge_type, ())
            if node_type is not None:
                targets = [other for other in targets if nodes[other].type == node_type]
            for predicate in predicates:
                if not targets:
                    break
                targets = predicate(targets, ctx)
            extend(targets)
        if len(ids) > 1:
            out = list(dict.fromkeys(out))
        ctx.charge(len(out))
        return out

    return step


def _navigate_op(op: Navigate, compile_path) -> tuple[Callable, Callable]:
    plain, traced_expand = _navigation(op)
    single = _single_hop_step(op.relation) if isinstance(op.relation, Hop) and op.repeat is None else None
    per_source_single = None
    # Filters alone keep or drop a node whichever source reached it: they can run once over
    # the whole hop's result instead of per source.
    filters_over_list = single is not None and all(isinstance(p, Filter) for p in op.predicates)
    if isinstance(op.relation, Hop) and op.repeat is None and op.predicates and not filters_over_list:
        per_source_single = _generated_per_source(op.relation, op.predicates, compile_path)
    # The per-predicate closures are built only when something uses them (compiling a query
    # must stay cheap): the general fast path, or traced mode for .paths().
    built: list = []

    def predicate_pairs() -> list:
        if not built:
            built.append([_list_op(p, compile_path) for p in op.predicates])
        return built[0]

    fast_predicates = [] if per_source_single is not None or not op.predicates else [f for f, _ in predicate_pairs()]
    if per_source_single is None and isinstance(op.relation, Hop) and op.repeat is None and fast_predicates and not filters_over_list:
        per_source_single = _single_hop_per_source(op.relation, fast_predicates)
    if not op.predicates and single is not None:
        fast = single
    elif filters_over_list:
        filters = fast_predicates

        def fast(ids, ctx):
            out = single(ids, ctx)
            for keep in filters:
                if not out:
                    break
                out = keep(out, ctx)
            return out

    elif per_source_single is not None:
        fast = per_source_single
    elif not op.predicates:

        def fast(ids, ctx):
            if len(ids) == 1:
                out = list(plain(ids[0], ctx))
            else:
                out = list(dict.fromkeys(itertools.chain.from_iterable(plain(i, ctx) for i in ids)))
            ctx.charge(len(out))
            return out

    else:

        def per_source(node_id, ctx):
            outputs = plain(node_id, ctx)
            for predicate in fast_predicates:
                outputs = predicate(outputs, ctx)
            return outputs

        def fast(ids, ctx):
            out = list(dict.fromkeys(itertools.chain.from_iterable(per_source(i, ctx) for i in ids)))
            ctx.charge(len(out))
            return out

    def traced(items, ctx):
        traced_predicates = [t for _, t in predicate_pairs()] if op.predicates else []
        out: dict[str, tuple] = {}
        for node_id, walk in items:
            outputs = traced_expand(node_id, ctx)
            for predicate in traced_predicates:
                outputs = predicate(outputs, ctx)
            for other, via in outputs:
                if other not in out:
                    # A step that stays on its node ({0,..} level 0, latest of the newest) adds nothing.
                    out[other] = walk if (other == node_id and not via) else walk + via + (other,)
        ctx.charge(len(out))
        return list(out.items())

    return fast, traced


# -- sources -----------------------------------------------------------------------------------


def _current_goal(ctx) -> list[str]:
    nodes = ctx.nodes
    focus = ctx.focus
    node = nodes.get(focus)
    if node is None:
        return []
    if node.type == "goal":
        return [focus]
    reached = {focus}
    level = [focus]
    while level:
        following = []
        for node_id in level:
            for parent in ctx.in_adj(node_id).by_type.get("parent_of", ()):
                if parent in reached:
                    continue
                if nodes[parent].type == "goal":
                    return [parent]
                reached.add(parent)
                following.append(parent)
        level = following
    return []


def _source(source, compile_query) -> Callable[[Any], list]:
    if isinstance(source, AllNodes):
        return lambda ctx: list(ctx.nodes)
    if isinstance(source, TypeScan):
        node_type = source.node_type
        return lambda ctx: list(ctx.view.ids_of_type(node_type))
    if isinstance(source, ValueScan):
        node_type, attribute, value = source.node_type, source.attribute, source.value
        return lambda ctx: [node.id for node in ctx.view.nodes_with(node_type, attribute, value)]
    if isinstance(source, Roots):
        return lambda ctx: list(ctx.view.roots())
    if isinstance(source, FocusNode):
        return lambda ctx: [ctx.focus] if ctx.focus in ctx.nodes else []
    if isinstance(source, CurrentGoal):
        return _current_goal
    if isinstance(source, IdLookup):
        fixed, param, node_type = source.node_id, source.param, source.node_type

        def lookup(ctx):
            node_id = fixed if param is None else ctx.params[param]
            node = ctx.nodes.get(node_id)
            if node is None or (node_type is not None and node.type != node_type):
                return []
            return [node_id]

        return lookup
    if isinstance(source, ParamNodes):
        param = source.param

        def named(ctx):
            value = ctx.params[param]
            ids = [value] if isinstance(value, str) else value
            nodes = ctx.nodes
            return list(dict.fromkeys(i for i in ids if i in nodes))

        return named
    if isinstance(source, SubPlan):
        inner = compile_query(source.plan)
        return lambda ctx: inner.fast(ctx)
    raise TypeError(source)


# -- programs ----------------------------------------------------------------------------------


class _PathProgram:
    __slots__ = ("source", "fast_ops", "traced_ops", "traced_source", "scan_filter", "counter")

    def run_fast(self, ctx, start_ids=None) -> list:
        if start_ids is not None:
            ids = start_ids
            ops = self.fast_ops
        elif self.scan_filter is not None:
            # A scan followed by a filter reads payloads straight from the index.
            ids = self.scan_filter(ctx)
            ops = self.fast_ops[1:]
        else:
            ids = self.source(ctx)
            ops = self.fast_ops
        for op in ops:
            ids = op(ids, ctx)
        return ids

    def count(self, ctx) -> int:
        if self.counter is not None:
            return self.counter(ctx)
        return len(self.run_fast(ctx))

    def run_traced(self, ctx) -> list:
        items = self.traced_source(ctx)
        for op in self.traced_ops:
            items = op(items, ctx)
        return items


class Program:
    """A compiled query: run it on any view, with a focus and parameter values."""

    def __init__(self, query_plan: QueryPlan):
        self.plan = query_plan
        self.final = query_plan.final
        self._paths = [self._compile_path(p) for p in query_plan.branches]

    def _compile_path(self, path: PathPlan) -> _PathProgram:
        program = _PathProgram()
        fast_ops, traced_ops = [], []
        for op in path.ops:
            if isinstance(op, Navigate):
                fast, traced = _navigate_op(op, self._relative)
            else:
                fast, traced = _list_op(op, self._relative)
            fast_ops.append(fast)
            traced_ops.append(traced)
        program.fast_ops = tuple(fast_ops)
        program.traced_ops = tuple(traced_ops)
        program.scan_filter = _scan_filter(path, self._relative)
        program.counter = _index_counter(path)
        if path.source is None:
            program.source = None
            program.traced_source = None
        elif isinstance(path.source, SubPlan):
            inner = Program(path.source.plan)
            program.source = inner.fast
            program.traced_source = inner.traced
        else:
            source = _charged(_source(path.source, Program))
            program.source = source
            program.traced_source = lambda ctx: [(i, (i,)) for i in source(ctx)]
        return program

    def _relative(self, path: PathPlan) -> Callable[[list, Any], list]:
        program = self._compile_path(path)
        return lambda start_ids, ctx: program.run_fast(ctx, start_ids)

    def count(self, ctx) -> int:
        if len(self._paths) == 1:
            return self._paths[0].count(ctx)
        return len(self.fast(ctx))

    def fast(self, ctx) -> list:
        if len(self._paths) == 1:
            return self._paths[0].run_fast(ctx)
        return list(dict.fromkeys(itertools.chain.from_iterable(p.run_fast(ctx) for p in self._paths)))

    def traced(self, ctx) -> list:
        out: dict[str, tuple] = {}
        for path in self._paths:
            for node_id, walk in path.run_traced(ctx):
                out.setdefault(node_id, walk)
        return list(out.items())

    def run(self, view, *, focus: str | None = None, params: Mapping[str, Any] | None = None, limits: Limits = DEFAULT_LIMITS):
        """Run on ``view``: a list of ids, an int (count), a bool (exists) or a list of walks.

        Parameters must already be bound and checked (``hgm_engine.query.pipeline`` does that).
        """
        ctx = _Context(view, params or {}, focus, limits)
        if self.final == "paths":
            return [list(walk) for _, walk in self.traced(ctx)]
        if self.final == "count":
            return self.count(ctx)
        ids = self.fast(ctx)
        if self.final == "exists":
            return bool(ids)
        return ids


def _charged(source: Callable) -> Callable:
    def counted(ctx):
        ids = source(ctx)
        ctx.charge(len(ids))
        return ids

    return counted


def _scan_filter(path: PathPlan, compile_path) -> Callable | None:
    """For ``scan → filter``: iterate the payloads and keep the ids that pass."""
    if not path.ops or not isinstance(path.ops[0], Filter):
        return None
    scan = _Generator(compile_path).payload_scan(path.ops[0].condition)
    if isinstance(path.source, TypeScan):
        node_type = path.source.node_type

        def scan_type(ctx):
            ctx.charge(ctx.view.count_of_type(node_type))
            return scan(ctx.view.nodes_of_type(node_type), ctx)

        return scan_type
    if isinstance(path.source, ValueScan):
        node_type, attribute, value = path.source.node_type, path.source.attribute, path.source.value

        def scan_values(ctx):
            payloads = ctx.view.nodes_with(node_type, attribute, value)
            ctx.charge(len(payloads))
            return scan(payloads, ctx)

        return scan_values
    if isinstance(path.source, AllNodes):

        def scan_all(ctx):
            ctx.charge(len(ctx.nodes))
            return scan(ctx.nodes.values(), ctx)

        return scan_all
    return None


def _index_counter(path: PathPlan) -> Callable | None:
    """``count()`` of a bare scan is the size of the index."""
    if path.ops:
        return None
    if isinstance(path.source, TypeScan):
        node_type = path.source.node_type
        return lambda ctx: ctx.view.count_of_type(node_type)
    if isinstance(path.source, AllNodes):
        return lambda ctx: len(ctx.nodes)
    return None


def build(query_plan: QueryPlan) -> Program:
    """Compile an optimized plan into a :class:`Program`."""
    return Program(query_plan)
