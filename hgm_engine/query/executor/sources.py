"""Sources: where a path starts — the roots, a scan of an index, an id, the focus — and the
shortcuts that read an index directly (a scan fused with its first filter, a count that is
the size of an index).

>>> from hgm_engine.model import MemoryGraph
>>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
>>> g = MemoryGraph(); _ = g.add_node("g", "goal", {}); _ = g.add_node("a", "action", {})
>>> source(Roots())(Context(g, {}, None, DEFAULT_LIMITS))
['g']
"""

from __future__ import annotations

from typing import Any, Callable

from hgm_engine.model import MemoryGraph, decode_payloads
from hgm_engine.model.nodeindex import query_terms, searcher_for
from hgm_engine.query.executor.conditions import condition_weight, condition_writer
from hgm_engine.query.executor.operators import Strategy, generated_name
from hgm_engine.query.executor.validity import holding_at, instant_of, split_valid_at
from hgm_engine.query.plan import (
    AllNodes,
    AllOf,
    Attr,
    Cmp,
    Const,
    CurrentGoal,
    Filter,
    FocusNode,
    IdLookup,
    ParamNodes,
    PathPlan,
    Roots,
    SearchNodes,
    TypeScan,
    ValueScan,
)

__all__ = ["source", "charged", "scan_filter", "valid_at_scan", "index_counter", "search_source", "number_tests"]


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
            for parent in ctx.view.in_adjacency(node_id).by_type.get("parent_of", ()):
                if parent in reached:
                    continue
                if nodes[parent].type == "goal":
                    return [parent]
                reached.add(parent)
                following.append(parent)
        level = following
    return []


def source(plan_source) -> Callable[[Any], list]:
    """``start(ctx) -> ids`` for a plan source other than a subquery.

    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {})
    >>> source(IdLookup("a", None, "fact"))(Context(g, {}, None, DEFAULT_LIMITS))
    ['a']
    """
    if plan_source.__class__ is IdLookup:  # first: the most common start, #id
        fixed, param, node_type = plan_source.node_id, plan_source.param, plan_source.node_type

        def lookup(ctx):
            node_id = fixed if param is None else ctx.params[param]
            node = ctx.nodes.get(node_id)
            if node is None or (node_type is not None and node.type != node_type):
                return []
            # its id charged as Context.charge(1) does, inline: charge is called (for its
            # error) only past the ceiling (Context.ceiling)
            work = ctx.work = ctx.work + 1
            ceiling = ctx.ceiling
            if ceiling is not None and work > ceiling:
                ctx.charge(0)
            return [node_id]

        # It counts its id as work itself (charged adds nothing): a call less in every run of
        # the most common start, #id.
        lookup.charged = True
        return lookup
    if isinstance(plan_source, AllNodes):
        return lambda ctx: list(ctx.nodes)
    if isinstance(plan_source, TypeScan):
        node_type = plan_source.node_type
        return lambda ctx: list(ctx.view.ids_of_type(node_type))
    if isinstance(plan_source, ValueScan):
        node_type, attribute, value = plan_source.node_type, plan_source.attribute, plan_source.value
        return lambda ctx: [node.id for node in ctx.view.nodes_with(node_type, attribute, value)]
    if isinstance(plan_source, Roots):
        return lambda ctx: list(ctx.view.roots())
    if isinstance(plan_source, FocusNode):
        return lambda ctx: [ctx.focus] if ctx.focus in ctx.nodes else []
    if isinstance(plan_source, CurrentGoal):
        return _current_goal
    if isinstance(plan_source, ParamNodes):
        param = plan_source.param

        def named(ctx):
            value = ctx.params[param]
            ids = [value] if isinstance(value, str) else value
            nodes = ctx.nodes
            return list(dict.fromkeys(i for i in ids if i in nodes))

        return named
    if isinstance(plan_source, SearchNodes):
        return search_source(plan_source)
    raise TypeError(plan_source)  # a subquery is a program of its own (Program compiles it)


def search_source(plan_source: SearchNodes) -> Callable[[Any], list]:
    """``search(TEXT)``: the ids the view's searcher finds, best first (the postings it reads
    are charged as work; the ids themselves by :func:`charged`).

    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {"content": "the hotel"})
    >>> search_source(SearchNodes("hotels", None))(Context(g, {}, None, DEFAULT_LIMITS))
    ['a']
    """
    fixed, param, top, node_type = plan_source.text, plan_source.param, plan_source.top, plan_source.node_type
    top_param = plan_source.top_param
    fixed_terms = query_terms(fixed) if fixed is not None else None

    def search(ctx):
        text = fixed if param is None else ctx.params[param]
        terms = fixed_terms if param is None else query_terms(text)
        first = top if top_param is None else ctx.params[top_param]
        hits = searcher_for(ctx.view).hits(ctx.view, text, terms, top=first, node_type=node_type, charge=ctx.charge)
        return [hit.id for hit in hits]

    return search


def charged(start: Callable) -> Callable:
    """``start`` that counts the ids it gives as work.

    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.model import MemoryGraph
    >>> ctx = Context(MemoryGraph(), {}, None, DEFAULT_LIMITS)
    >>> charged(lambda ctx: ["a", "b"])(ctx), ctx.work
    (['a', 'b'], 2)
    """
    if getattr(start, "charged", False):  # a start that counts its ids itself
        return start

    def counted(ctx):
        ids = start(ctx)
        ctx.charge(len(ids))
        return ids

    return counted


def scan_filter(path: PathPlan, compile_path) -> tuple[Callable, Strategy] | None:
    """For ``scan → filter``: iterate the payloads and keep the ids that pass, the filter
    generated into the loop. None unless the path starts that way.

    >>> from hgm_engine.query.plan import Attr, Cmp, Const
    >>> start, strategy = scan_filter(PathPlan(TypeScan("fact"), (Filter(Cmp("=", Attr("n"), Const(1))),)), None)
    >>> strategy.name
    'generated payload scan'
    """
    if not path.ops or not isinstance(path.ops[0], Filter) or not isinstance(path.source, (TypeScan, ValueScan, AllNodes)):
        return None
    if not isinstance(path.source, ValueScan):
        timed = valid_at_scan(path, compile_path)
        if timed is not None:
            return timed
    writer = condition_writer(compile_path)
    scan = writer.payload_scan(path.ops[0].condition)
    reads_attrs = writer.reads_attrs
    weight = condition_weight(path.ops[0].condition)
    tests, exact = number_tests(path.ops[0].condition)
    detail = "the index's payloads, the filter inline"
    if tests and not isinstance(path.source, AllNodes):
        detail += (
            "; on a graph read from its stored image, its number indexes "
            + ("answer the filter (no payload decoded)" if exact else "narrow the payloads first")
        )
    strategy = Strategy("generated payload scan", detail, (generated_name(scan),))

    def indexed(ctx, view, narrowed):
        # A graph read from its image: its number indexes narrow the scan (all of the
        # filter, when every conjunct is such a test), no payload decoded for them.
        size, positions, ids, complete = narrowed
        ctx.charge(size * weight)
        if exact and complete:
            return list(map(ids.__getitem__, positions))
        nodes = view.node_map()
        payloads = list(map(nodes.__getitem__, map(ids.__getitem__, positions)))
        if reads_attrs:
            decode_payloads(payloads)
        return scan(payloads, ctx)

    if isinstance(path.source, TypeScan):
        node_type = path.source.node_type

        def scan_type(ctx):
            view = ctx.view
            if tests and isinstance(view, MemoryGraph):
                narrowed = _narrowed(view, node_type, None, tests)
                if narrowed is not None:
                    return indexed(ctx, view, narrowed)
            ctx.charge(view.count_of_type(node_type) * weight)
            return scan(view.nodes_of_type(node_type), ctx)

        return scan_type, strategy
    if isinstance(path.source, ValueScan):
        node_type, attribute, value = path.source.node_type, path.source.attribute, path.source.value

        def scan_values(ctx):
            view = ctx.view
            if tests and isinstance(view, MemoryGraph):
                narrowed = _narrowed(view, node_type, (attribute, value), tests)
                if narrowed is not None:
                    return indexed(ctx, view, narrowed)
            if reads_attrs and isinstance(view, MemoryGraph):
                # a graph read from its image decodes the bucket's thousands at once, once
                payloads = view.nodes_with(node_type, attribute, value, decoded=True)
            else:
                payloads = view.nodes_with(node_type, attribute, value)
                if reads_attrs:
                    decode_payloads(payloads)
            ctx.charge(len(payloads) * weight)
            return scan(payloads, ctx)

        return scan_values, strategy

    def scan_all(ctx):
        ctx.charge(len(ctx.nodes) * weight)
        return scan(ctx.nodes.values(), ctx)

    return scan_all, strategy


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "==": "=="}


def number_tests(condition) -> tuple[list[tuple[str, str, int | float]], bool]:
    """The conjuncts of a filter that compare an attribute with a number literal
    (``priority >= 4``, ``4 <= priority``, ``cost = 780.0``), as ``(attribute, op, number)``
    with the attribute on the left, and whether they are the whole filter. A number index
    answers each: it holds only for nodes whose attribute is a number (never a bool, a
    string, a list or missing) and compares as numbers, as the language does. ``!=``, ``in``
    and bool literals are not such tests (``!=`` holds for the nodes without a number).

    >>> from hgm_engine.query.plan import Attr, Cmp, Const, AllOf
    >>> number_tests(AllOf((Cmp(">=", Attr("priority"), Const(4)), Cmp("<", Const(1), Attr("cost")))))
    ([('priority', '>=', 4), ('cost', '>', 1)], True)
    >>> number_tests(AllOf((Cmp("=", Attr("ok"), Const(True)), Cmp("!=", Attr("n"), Const(1)), Cmp("<", Attr("n"), Const(2.5)))))
    ([('n', '<', 2.5)], False)
    """
    items = list(condition.items) if isinstance(condition, AllOf) else [condition]
    tests, whole = [], True
    while items:
        item = items.pop(0)
        if isinstance(item, AllOf):
            items[:0] = item.items
            continue
        found = None
        if isinstance(item, Cmp) and item.op in _FLIPPED:
            left, right, op = item.left, item.right, item.op
            if isinstance(left, Const) and isinstance(right, Attr):
                left, right, op = right, left, _FLIPPED[op]
            if (
                isinstance(left, Attr) and isinstance(right, Const) and left.name not in ("id", "type")
                and right.value.__class__ in (int, float)
            ):
                found = (left.name, op, right.value)
        if found is None:
            whole = False
        else:
            tests.append(found)
    return tests, whole


def _narrowed(view: MemoryGraph, node_type: str, start: tuple[str, str] | None, tests) -> tuple | None:
    """``(scanned, positions, ids, complete)``: the positions (ascending: creation order) of
    the nodes of ``node_type`` — those whose attribute is the string value when ``start`` is
    ``(attribute, value)``, every one when it is None — which pass the number ``tests`` the
    graph's stored image has indexes for (``complete``: all of them), and how many nodes the
    scan covers (its work); None when the image does not answer (another view's way then)."""
    if start is None:
        bucket = None
    else:
        bucket = view.stored_positions(node_type, *start)
        if bucket is None:
            return None
    sets, ids = [], None
    for name, op, number in tests:
        found = view.stored_numbers(node_type, name)
        if found is not None:
            index, ids = found
            sets.append(index.positions(op, number))
    if not sets:
        return None
    sets.sort(key=len)
    kept = sets[0] if bucket is None else sets[0].intersection(bucket)
    for allowed in sets[1:]:
        kept = allowed.intersection(kept)
    scanned = view.count_of_type(node_type) if bucket is None else len(bucket)
    return scanned, sorted(kept), ids, len(sets) == len(tests)


def valid_at_scan(path: PathPlan, compile_path) -> tuple[Callable, Strategy] | None:
    """For ``scan → filter`` with a ``valid_at(T)`` conjunct: the nodes that hold at T come
    from the valid-time index (:mod:`~hgm_engine.query.executor.validity`), and the other
    conditions run on those only. A view that is not a graph (a transaction, an earlier
    state) tests every node as the plain payload scan does. The work charged is the same
    either way: every node of the scan, times the condition's weight.

    >>> from hgm_engine.query.plan import Const, Truthy, ValidAt
    >>> start, strategy = valid_at_scan(PathPlan(TypeScan("fact"), (Filter(Truthy(ValidAt(Const("2026-01-01")))),)), None)
    >>> strategy.name
    'valid-time index'
    """
    condition = path.ops[0].condition
    valid_at, rest = split_valid_at(condition)
    if valid_at is None:
        return None
    writer = condition_writer(compile_path)
    whole = writer.payload_scan(condition)  # for views without the index
    rest_scan = None if rest is None else condition_writer(compile_path).payload_scan(rest)
    weight = condition_weight(condition)
    node_type = path.source.node_type if isinstance(path.source, TypeScan) else None
    names = (generated_name(whole),) + (() if rest_scan is None else (generated_name(rest_scan),))
    strategy = Strategy(
        "valid-time index",
        "the nodes that hold at the instant, from the index of their bounds; "
        + ("no other condition" if rest is None else "the other conditions inline on those")
        + " (views other than the graph: every node tested)",
        names,
    )

    def scan_timed(ctx):
        view = ctx.view
        ctx.charge((len(ctx.nodes) if node_type is None else view.count_of_type(node_type)) * weight)
        if not isinstance(view, MemoryGraph):
            return whole(ctx.nodes.values() if node_type is None else view.nodes_of_type(node_type), ctx)
        ids, payloads = holding_at(view, node_type, instant_of(valid_at, ctx.params))
        return list(ids) if rest_scan is None else rest_scan(payloads, ctx)

    return scan_timed, strategy


def index_counter(path: PathPlan) -> Callable | None:
    """``count()`` of a bare scan is the size of the index (None for other paths).

    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {})
    >>> index_counter(PathPlan(TypeScan("fact"), ()))(Context(g, {}, None, DEFAULT_LIMITS))
    1
    """
    if path.ops:
        return None
    if isinstance(path.source, TypeScan):
        node_type = path.source.node_type
        return lambda ctx: ctx.view.count_of_type(node_type)
    if isinstance(path.source, AllNodes):
        return lambda ctx: len(ctx.nodes)
    return None
