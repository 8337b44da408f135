"""The runtime operators: the closures that navigation steps and list operators compile to.

Every operator comes in two modes. The *fast* mode maps a list of ids (no duplicates, in
order) to the next list. The *traced* mode, used when the query ends in ``.paths()``, maps
``(id, walk)`` pairs, where the walk is the nodes passed through on the way. A compiled plan
operator is a :class:`Step` holding both and the :class:`Strategy` that ``explain`` shows.

Navigation has one general form — expand each source on its own, then apply its per-source
predicates — and faster forms for one-type hops, which the program chooses between
(:func:`~hgm_engine.query.executor.program.navigation_step`; the generated one is in
:mod:`~hgm_engine.query.executor.codegen`).

>>> from hgm_engine.model import Hop, MemoryGraph
>>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
>>> g = MemoryGraph()
>>> for i in ("g", "a", "b"): _ = g.add_node(i, "goal" if i == "g" else "action", {})
>>> _ = g.add_edge("g", "a", "parent_of"); _ = g.add_edge("g", "b", "parent_of")
>>> one_type_hop(Hop("out", ("parent_of",), "action"))(["g"], Context(g, {}, None, DEFAULT_LIMITS))
['a', 'b']
"""

from __future__ import annotations

import itertools
import sys
from bisect import bisect_left
from typing import Callable

from hgm_engine.model import Closure, Hop, Latest, MemoryGraph, Siblings, Versions
from hgm_engine.model.nodeindex import query_terms, searcher_for
from hgm_engine.query.executor.codegen import bucket_keys, bucket_terms, buckets_at_hand, hop_then_filters_step, tell_reads
from hgm_engine.query.executor.conditions import attr_getter, condition, condition_weight, condition_writer, interpreted, number_terms
from hgm_engine.query.executor.values import sort_key
from hgm_engine.query.plan import AllOf, Filter, Index, Limit, Navigate, Param, Rank, Slice, SortBy

__all__ = [
    "Strategy",
    "Step",
    "generated_name",
    "expanders",
    "list_op",
    "one_type_hop",
    "hop_then_filters",
    "TieredFilter",
    "TieredHopThenFilters",
    "GENERATE_AFTER",
    "PROBE_SET_AFTER",
    "STORED_WALKS",
    "Walked",
    "stored_levels",
    "stored_ends",
    "per_source_loop",
    "generic_hop",
    "walk_step",
    "walk_levels",
    "walk_sources",
    "each_source",
    "filtered_sources",
    "then_filters",
    "generic_per_source",
    "traced_navigation",
    "TieredFilter",
    "GENERATE_AFTER",
]


class Strategy:
    """How one operator of a compiled plan runs: the physical plan ``explain`` can show.

    ``name`` says which code path runs; ``generated`` names the functions written for it
    (the file names a traceback shows); ``detail`` says briefly what they do. A value: equal
    when its three parts are. (A plain class, as :class:`Step` is.)

    >>> str(Strategy("generated per source", "pick [0:1]", ("<hgm step 3>",)))
    'generated per source <hgm step 3>: pick [0:1]'
    """

    __slots__ = ("name", "detail", "generated")

    def __init__(self, name: str, detail: str = "", generated: tuple = ()):
        self.name = name
        self.detail = detail
        self.generated = generated

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Strategy:
            return NotImplemented
        return (self.name, self.detail, self.generated) == (other.name, other.detail, other.generated)

    def __hash__(self) -> int:
        return hash((self.name, self.detail, self.generated))

    def __repr__(self) -> str:
        return f"Strategy(name={self.name!r}, detail={self.detail!r}, generated={self.generated!r})"

    def resolved(self) -> "Strategy":
        """This strategy with the name of each function it runs; a function not written yet
        (a :class:`TieredFilter` before its first hot call) is written now.

        >>> from hgm_engine.query.plan import Attr, Cmp, Const
        >>> Strategy("generated filter", "", (TieredFilter(Cmp("=", Attr("n"), Const(1)), None),)).resolved().generated  # doctest: +ELLIPSIS
        ('<hgm filter ...>',)
        """
        if all(type(name) is str for name in self.generated):
            return self
        names = tuple(name if type(name) is str else generated_name(name.function()) for name in self.generated)
        return Strategy(self.name, self.detail, names)

    def __str__(self) -> str:
        text = " ".join((self.name, *self.resolved().generated))
        return f"{text}: {self.detail}" if self.detail else text


class Step:
    """One compiled plan operator: ``fast(ids, ctx) -> ids``, ``traced(items, ctx) -> items``
    over ``(id, walk)`` pairs, and how the fast form runs. (A plain class, not an attrs one:
    every query's build makes one per operator, and a fresh process pays for each kind of
    object its first query makes.)

    >>> from hgm_engine.query.plan import Index
    >>> list_op(Index(0), None).fast(["a", "b"], None)
    ['a']
    """

    __slots__ = ("fast", "traced", "strategy")

    def __init__(self, fast: Callable, traced: Callable, strategy: Strategy | None = None):
        self.fast = fast
        self.traced = traced
        self.strategy = strategy

    def __repr__(self) -> str:
        return f"Step(fast={self.fast!r}, traced={self.traced!r}, strategy={self.strategy!r})"


def generated_name(function: Callable) -> str:
    """The file name under which a generated function's source is registered.

    >>> from hgm_engine.model import compile_function
    >>> generated_name(compile_function("def f():\\n    pass\\n", "f", {}, kind="example"))  # doctest: +ELLIPSIS
    '<hgm example ...>'
    """
    return function.__code__.co_filename


# -- navigation -------------------------------------------------------------------------------


def _hop(relation: Hop) -> Callable:
    """``expand(node_id, ctx) -> sequence of ids`` for one hop, in edge order, no duplicates."""
    direction, edge_types, node_type = relation.direction, relation.edge_types, relation.node_type
    if edge_types is not None and len(edge_types) == 1 and direction != "both":
        edge_type = edge_types[0]
        if direction == "out":

            def single(node_id, ctx):
                return ctx.view.out_adjacency(node_id).by_type.get(edge_type, ())

        else:

            def single(node_id, ctx):
                return ctx.view.in_adjacency(node_id).by_type.get(edge_type, ())

        expand = single
    elif edge_types is not None and len(edge_types) == 1:
        edge_type = edge_types[0]

        def both_single(node_id, ctx):
            outgoing = ctx.view.out_adjacency(node_id).by_type.get(edge_type, ())
            incoming = ctx.view.in_adjacency(node_id).by_type.get(edge_type, ())
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
                pairs = ctx.view.out_adjacency(node_id).pairs
            if direction in ("in", "both"):
                pairs = pairs + ctx.view.in_adjacency(node_id).pairs
            if wanted is None:
                return list(dict.fromkeys(other for _, other in pairs))
            return list(dict.fromkeys(other for edge_type, other in pairs if edge_type in wanted))

    if node_type is None:
        return expand
    if edge_types is not None and len(edge_types) == 1 and direction != "both":
        edge_type = edge_types[0]
        # the adjacency remembers its targets of that type
        if direction == "out":

            def single_typed(node_id, ctx):
                return ctx.view.out_adjacency(node_id).of_type(edge_type, node_type, ctx.nodes)

        else:

            def single_typed(node_id, ctx):
                return ctx.view.in_adjacency(node_id).of_type(edge_type, node_type, ctx.nodes)

        return single_typed

    def restricted(node_id, ctx):
        nodes = ctx.nodes
        return [other for other in expand(node_id, ctx) if nodes[other].type == node_type]

    return restricted


def _one_type_levels(relation: Hop, low: int, high: int | None) -> Callable | None:
    """Breadth-first repetition of a one-type out or in hop from one source, untraced:
    ``levels(source, ctx) -> ids``, what :func:`_one_type_walk` gives for that source alone.
    The same levels, order and work as the general form; None for other hops.

    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> g = MemoryGraph()
    >>> for i in ("g", "s", "a"): _ = g.add_node(i, "goal" if i != "a" else "action", {})
    >>> _ = g.add_edge("g", "s", "parent_of"); _ = g.add_edge("s", "a", "parent_of")
    >>> _one_type_levels(Hop("out", ("parent_of",)), 1, None)("g", Context(g, {}, None, DEFAULT_LIMITS))
    ['s', 'a']
    """
    walk = _one_type_walk(relation, low, high)
    if walk is None:
        return None

    def levels(source, ctx):
        return walk((source,), ctx)[0]

    return levels


def _one_type_walk(relation: Hop, low: int, high: int | None, union: bool = False) -> Callable | None:
    """``walk(ids, ctx) -> lists``: breadth-first repetition of a one-type out or in hop from
    each source of ``ids`` in turn, untraced — each source's levels ``low`` to ``high`` as one
    list, in the sources' order. A walk reads the stored columns (:func:`stored_levels`: the
    step's first :data:`STORED_WALKS` sources), or else each node's other ends from the hop's
    memo (:meth:`Context.hop`, asked once a call; a call only on a miss). Each level's nodes
    are charged as :meth:`Context.charge` does, inline (``Context.ceiling``). The same levels,
    order and work as the general form (:func:`_repeat`); None for other hops. With
    ``union``, ``walk(ids, ctx) -> ids``: the step :func:`walk_step` makes, the first
    occurrence of each id of the lists (:func:`_union`), charged as a step's output is.

    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> g = MemoryGraph.from_records([("g", "goal", {}), ("s", "goal", {}), ("a", "action", {})],
    ...                              [("g", "s", "parent_of", {}), ("s", "a", "parent_of", {})])
    >>> ctx = Context(g, {}, None, DEFAULT_LIMITS)
    >>> _one_type_walk(Hop("out", ("parent_of",)), 1, None)(["g", "s"], ctx), ctx.work
    ([['s', 'a'], ['a']], 3)
    """
    if relation.edge_types is None or len(relation.edge_types) != 1 or relation.direction == "both":
        return None
    edge_type, node_type, outgoing = relation.edge_types[0], relation.node_type, relation.direction == "out"
    walks = [0]  # this step's walks over the stored columns so far (see STORED_WALKS)
    # every level from the first on is kept, none is the last but an empty one: a closure
    # (descendants, ancestors, derived{1,}) or {0,}, the commonest walks
    every_level = low <= 1 and high is None

    def walk(ids, ctx):
        lists = []
        get = stored = None
        for source in ids:
            if walks[0] < STORED_WALKS:  # (counted whether or not the view has columns)
                walks[0] += 1
                if stored is None:  # (asked once a call; False: the view has no columns)
                    stored = _stored_hop(ctx, edge_type, node_type) or False
                if stored:
                    walked = stored_levels(source, ctx, edge_type, node_type, outgoing, low, high, stored)
                    if walked is not None:
                        lists.append(walked)
                        continue
            if get is None:
                get, find = ctx.hop(edge_type, node_type, outgoing)
                ceiling = ctx.ceiling
                if ceiling is None:
                    ceiling = _NO_CEILING
            work = ctx.work
            reached = {source}
            add = reached.add
            level = [source]
            out = [source] if low == 0 else []
            if every_level:  # (the same loop without the levels' count)
                while level:
                    following = []
                    for node_id in level:
                        targets = get(node_id)
                        if targets is None:
                            targets = find(node_id)
                        for other in targets:
                            if other not in reached:
                                add(other)
                                following.append(other)
                    out += following
                    work += len(following)
                    if work > ceiling:  # (charge stops the query with its error)
                        ctx.work = work
                        ctx.charge(0)
                    level = following
                ctx.work = work
                lists.append(out)
                continue
            depth = 0
            left = -1 if high is None else high  # levels still to expand (-1: no bound)
            while level and left:
                left -= 1
                depth += 1
                following: list = []
                append = following.append
                for node_id in level:
                    targets = get(node_id)
                    if targets is None:
                        targets = find(node_id)
                    for other in targets:
                        if other not in reached:
                            add(other)
                            append(other)
                if depth >= low:
                    out.extend(following)
                work += len(following)
                if work > ceiling:  # (charge stops the query with its error)
                    ctx.work = work
                    ctx.charge(0)
                level = following
            ctx.work = work
            lists.append(out)
        if not union:
            return lists
        out = lists[0] if len(lists) == 1 else _union(lists)
        # charged as Context.charge does, inline (Context.ceiling)
        work = ctx.work = ctx.work + len(out)
        ceiling = ctx.ceiling
        if ceiling is not None and work > ceiling:
            ctx.charge(0)
        return out

    return walk


def _union(lists: list, positions: bool = False) -> list:
    """The first occurrence of each id of ``lists`` (each without repeats), in order: the one
    list itself (uncopied) when there is one; with ``positions``, a :class:`Walked` when each
    list is one (their columns' positions kept, for a filter that tests them).

    >>> _union([["a", "b"], ["b", "c"]])
    ['a', 'b', 'c']
    """
    if len(lists) == 1:
        return lists[0]
    chain = itertools.chain.from_iterable
    out = list(dict.fromkeys(chain(lists)))
    if positions and lists and all([walked.__class__ is Walked for walked in lists]):
        # (one call's walks read the same columns: a position is one id, so the first
        # occurrences of the positions line up with those of the ids)
        walked = Walked(out)
        walked.positions, walked.ids = list(dict.fromkeys(chain([w.positions for w in lists]))), lists[0].ids
        return walked
    return out


# A walk's first calls read the graph's stored columns by position (stored_levels), and so do
# a one-type hop's (stored_ends): no id is looked up and no answer remembered per node, which
# costs a first call of a walk of 100-550 nodes about half of what filling the hop's memo
# (MemoryGraph.hop_memo) does, but a second call 2-5x what reading the filled memo does. Rent
# or buy: a step reads the columns on its first STORED_WALKS calls, then fills the memo and
# reads it from then on (even when another query has filled it already: asking would build the
# memo's finder, ~17k instructions, on every first call of a fresh process; the loss is bounded
# by two calls of the step). The break-even (what filling the memo costs more than a call on the
# columns, over what a call on the columns costs more than one on the filled memo) was measured
# in fresh processes on walks and hops of our own, not the benchmark's: median 1.7 calls over
# 14 walks, 1.9 over 7 hops (bench/results/first-call/walks.py, walks.txt).
STORED_WALKS = 2
_NO_CEILING = sys.maxsize  # no limit on the work: no count reaches it


class Walked(list):
    """The ids a walk over a graph's stored columns reached (:func:`stored_levels`), with
    their ``positions`` there in the same order and the columns' ``ids``: a filter after the
    walk tests the positions against the image's value indexes (:class:`TieredFilter`),
    without reaching a node. A list like any other to everything else.

    >>> walked = Walked(["a"]); walked.positions = [0]; walked == ["a"], walked.positions
    (True, [0])
    """

    __slots__ = ("positions", "ids")


def _stored_hop(ctx, edge_type: str, node_type: str | None) -> tuple | None:
    """``(columns, position, edge type code, node type codes, node type code)`` of a hop
    read from the view's stored columns (a code -1 when the columns hold none of it; the
    node type code None for any type), or None when the view has no such columns (or keeps
    no node types and the hop needs them)."""
    view = ctx.view
    if not isinstance(view, MemoryGraph):
        return None
    stored = view.stored_columns()
    if stored is None:
        return None
    columns, position = stored
    kinds, kind = columns.node_types, None
    if node_type is not None:
        if kinds is None:
            return None
        names = columns.node_type_names
        kind = names.index(node_type) if node_type in names else -1
    names = columns.type_names
    return columns, position, (names.index(edge_type) if edge_type in names else -1), kinds, kind


def stored_ends(ids, ctx, edge_type: str, node_type: str | None, direction: str) -> tuple[list[int], list[str]] | None:
    """The other ends of a one-type hop from ``ids``, read from the view's stored columns
    by position: ``(positions, the columns' ids)``, each source's outgoing then incoming ends
    (``direction`` "out", "in" or "both") in edge order, repeats kept, as the hop's memo gives
    them; None when the view has no such columns. An id that is no node there (or a node
    added since) has none.

    >>> from hgm_engine.model import EdgeColumns, MemoryGraph, lazy_edges, lazy_nodes
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> nodes = lazy_nodes(["g", "s", "a"], ["goal", "goal", "action"], [None] * 3, [1, 2, 3])
    >>> edges = lazy_edges(["g", "g"], ["s", "a"], ["parent_of"] * 2, [None, None], [1, 2])
    >>> g = MemoryGraph.from_columns(nodes, {"goal": [0, 1], "action": [2]}, EdgeColumns.of_edges(nodes, edges), seqs=[1, 2, 3])
    >>> stored_ends(["g", "x"], Context(g, {}, None, DEFAULT_LIMITS), "parent_of", "action", "out")[0]
    [2]
    """
    stored = _stored_hop(ctx, edge_type, node_type)
    if stored is None:
        return None
    columns, position, code, kinds, kind = stored
    ways = []
    if direction != "in":
        ways.append((columns.out_start, columns.target, columns.type))
    if direction != "out":
        ways.append((columns.in_start, columns.in_other, columns.in_type))
    limit = len(columns.ids)
    found: list = []
    append = found.append
    for node_id in ids:
        p = position(node_id)
        if p is None or p >= limit:
            continue
        for starts, others, types in ways:
            for j in range(starts[p], starts[p + 1]):
                if types[j] == code and (kind is None or kinds[others[j]] == kind):
                    append(others[j])
    return found, columns.ids


def stored_levels(source: str, ctx, edge_type: str, node_type: str | None, outgoing: bool, low: int, high: int | None,
                  stored: tuple | None = None):
    """The levels ``low`` to ``high`` of a one-type out or in hop repeated from ``source``,
    breadth-first, read from the view's stored columns by position (``MemoryGraph.
    stored_columns``) as a :class:`Walked`: the same ids, in the same order, and the same work
    charged per level as the walk over the hop's memo. None when the view has no such columns
    or ``source`` is not a node there (a node added since): the caller walks the memo.
    ``stored``, when given, is what ``_stored_hop`` answers for the hop (a caller walking
    several sources asks once).

    >>> from hgm_engine.model import EdgeColumns, MemoryGraph, lazy_edges, lazy_nodes
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> nodes = lazy_nodes(["g", "s", "a"], ["goal", "goal", "action"], [None] * 3, [1, 2, 3])
    >>> edges = lazy_edges(["g", "s"], ["s", "a"], ["parent_of"] * 2, [None, None], [1, 2])
    >>> g = MemoryGraph.from_columns(nodes, {"goal": [0, 1], "action": [2]}, EdgeColumns.of_edges(nodes, edges), seqs=[1, 2, 3])
    >>> walked = stored_levels("g", Context(g, {}, None, DEFAULT_LIMITS), "parent_of", None, True, 1, None)
    >>> walked, walked.positions
    (['s', 'a'], [1, 2])
    >>> stored_levels("g", Context(MemoryGraph(), {}, None, DEFAULT_LIMITS), "parent_of", None, True, 1, None) is None
    True
    """
    if stored is None:
        stored = _stored_hop(ctx, edge_type, node_type)
        if stored is None:
            return None
    columns, position, code, kinds, kind = stored
    if outgoing:
        starts, others, types = columns.out_start, columns.target, columns.type
    else:
        starts, others, types = columns.in_start, columns.in_other, columns.in_type
    limit = len(starts) - 1
    start = position(source)
    if start is None or start >= limit:
        return None
    # Each level's nodes are charged as Context.charge does, inline: it is called (to stop
    # the query with its error) only past max_work, or at every level under a deadline
    # (Context.ceiling). (The loops are functions of their own: CPython 3.11 quickens a
    # function's whole code once its loops have gone round 8 times, at a cost in proportion to
    # its length, which a first call pays.)
    ceiling = ctx.ceiling
    if ceiling is None:
        ceiling = _NO_CEILING
    work = ctx.work
    if high is None and low <= 1 and work + limit <= ceiling:
        # A closure (every level from the first on kept) whose work cannot pass the ceiling
        # (it reaches each of the columns' nodes at most once): no level is charged on its own,
        # the work is charged once. (Under a deadline the ceiling is -1: the levels' loop,
        # which looks at the clock at every level.)
        out = _closure_positions(start, starts, others, types, code, kinds, kind)
        ctx.work = work + len(out) - 1
        if low:
            del out[0]
    else:
        out = _level_positions(start, ctx, starts, others, types, code, kinds, kind, low, high, work, ceiling)
    ids = columns.ids
    walked = Walked(map(ids.__getitem__, out))
    walked.positions, walked.ids = out, ids
    return walked


def _closure_positions(start: int, starts, others, types, code: int, kinds, kind: int | None) -> list[int]:
    """The positions a one-type hop repeated from the position ``start`` reaches, ``start``
    first, breadth-first, read from the columns ``starts``, ``others``, ``types`` (the edges of
    type ``code``, to nodes of type ``kind`` unless None): :func:`stored_levels`' closure."""
    reached = {start}
    add = reached.add
    queue = [start]  # read as it grows: the levels one after the other
    append = queue.append
    if kind is None:  # (the same loop without the node type's test)
        for p in queue:
            for j in range(starts[p], starts[p + 1]):
                if types[j] == code:
                    q = others[j]
                    if q not in reached:
                        add(q)
                        append(q)
    else:
        for p in queue:
            for j in range(starts[p], starts[p + 1]):
                if types[j] == code:
                    q = others[j]
                    if q not in reached and kinds[q] == kind:
                        add(q)
                        append(q)
    return queue


def _level_positions(start: int, ctx, starts, others, types, code: int, kinds, kind: int | None, low: int,
                     high: int | None, work: int, ceiling: int) -> list[int]:
    """The positions of levels ``low`` to ``high`` of a one-type hop repeated from the
    position ``start`` (as :func:`_closure_positions` reads them), each level charged as it is
    made: ``work`` and ``ceiling`` are ``ctx``'s, given to ``ctx`` before each call of
    ``charge`` and at the end."""
    reached = {start}
    add = reached.add
    level = [start]
    out = [start] if low == 0 else []
    depth = 0
    left = -1 if high is None else high  # levels still to expand (-1: no bound)
    while level and left:
        left -= 1
        depth += 1
        following: list = []
        append = following.append
        # (every position reached is one of the columns': only the source may be a node
        # added since, and the caller checked it)
        if kind is None:  # (the same loop without the node type's test)
            for p in level:
                for j in range(starts[p], starts[p + 1]):
                    if types[j] == code:
                        q = others[j]
                        if q not in reached:
                            add(q)
                            append(q)
        else:
            for p in level:
                for j in range(starts[p], starts[p + 1]):
                    if types[j] == code:
                        q = others[j]
                        if q not in reached and kinds[q] == kind:
                            add(q)
                            append(q)
        if depth >= low:
            out.extend(following)
        work += len(following)
        if work > ceiling:
            ctx.work = work
            ctx.charge(0)
        level = following
    ctx.work = work
    return out


def _repeat(expand: Callable, low: int, high: int | None, relation: Hop | None = None) -> tuple[Callable, Callable]:
    """Breadth-first repetition (spec §2.2), untraced and traced (the untraced form of a
    one-type hop ``relation`` is :func:`_one_type_levels`)."""

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
        # Every node reached keeps the walk to it: the walks are charged as they are built
        # (a chain of n nodes holds n²/2 ids), level by level.
        reached = {source: ()}
        level = [source]
        out = [(source, None)] if low == 0 else []  # None: level 0 stays on the source
        depth = 0
        while level and (high is None or depth < high):
            depth += 1
            following = []
            held = 0
            for node_id in level:
                via = reached[node_id] + ((node_id,) if node_id != source else ())
                for other in expand(node_id, ctx):
                    if other not in reached:
                        reached[other] = via
                        following.append(other)
                        held += len(via)
            if depth >= low:
                out.extend((other, reached[other]) for other in following)
            ctx.charge(len(following))
            ctx.charge_walks(held)
            level = following
        return out

    fast = _one_type_levels(relation, low, high) if relation is not None else None
    return fast or levels, traced


def _siblings() -> tuple[Callable, Callable]:
    def traced(node_id, ctx):
        out: dict[str, tuple] = {}
        for parent in ctx.view.in_adjacency(node_id).by_type.get("parent_of", ()):
            for child in ctx.view.out_adjacency(parent).by_type.get("parent_of", ()):
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
        replacers = ctx.view.in_adjacency(current).by_type.get("replaces", ())
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
        replaced = ctx.view.out_adjacency(current).by_type.get("replaces", ())
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
            return [(node_id, None)]  # None: the newest is its own latest, the walk stays
        return [(chain[-1], tuple(chain[:-1]))]

    return plain, traced


def _versions() -> tuple[Callable, Callable]:
    def traced(node_id, ctx):
        older = _older_chain(node_id, ctx)
        newer = _newer_chain(node_id, ctx)
        out = []
        for position in range(len(older) - 1, -1, -1):
            out.append((older[position], tuple(older[:position])))
        out.append((node_id, None))  # None: the node among its own versions stays put
        for position, other in enumerate(newer):
            out.append((other, tuple(newer[:position])))
        return out

    return (lambda node_id, ctx: [other for other, _ in traced(node_id, ctx)]), traced


def expanders(op: Navigate) -> tuple[Callable, Callable]:
    """``(plain, traced)`` expansions of one source for a navigation step: ``plain(id, ctx)``
    gives the ids reached, ``traced(id, ctx)`` the ``(id, via)`` pairs with the nodes passed
    through on the way.

    >>> from hgm_engine.model import MemoryGraph, Siblings
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> g = MemoryGraph()
    >>> for i in ("g", "a", "b"): _ = g.add_node(i, "goal" if i == "g" else "action", {})
    >>> _ = g.add_edge("g", "a", "parent_of"); _ = g.add_edge("g", "b", "parent_of")
    >>> plain, traced = expanders(Navigate("siblings", Siblings()))
    >>> ctx = Context(g, {}, None, DEFAULT_LIMITS)
    >>> plain("a", ctx), traced("a", ctx)
    (['b'], [('b', ('g',))])
    """
    relation = op.relation
    if isinstance(relation, Hop):
        expand = _hop(relation)
        if op.repeat is not None:
            return _repeat(expand, *op.repeat, relation)
        return expand, (lambda node_id, ctx: [(other, ()) for other in expand(node_id, ctx)])
    if isinstance(relation, Closure):
        return _repeat(_hop(relation.hop), 1, None, relation.hop)
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


def list_op(op, compile_path) -> Step:
    """The :class:`Step` of a whole-list operator (filter, index, slice, limit, sort).

    >>> from hgm_engine.query.plan import Slice
    >>> list_op(Slice(1, None), None).traced([("a", ()), ("b", ())], None)
    [('b', ())]
    """
    if isinstance(op, Filter):
        return _filter_step(op.condition, compile_path)
    if isinstance(op, (Index, Slice)):
        pick = _positional(op)
        return Step(lambda ids, ctx: pick(ids), lambda items, ctx: pick(items))
    if isinstance(op, Limit):
        count, param = op.count, op.param

        def limit(items, ctx):
            return items[: ctx.params[param] if param is not None else count]

        return Step(limit, limit)
    if isinstance(op, SortBy):
        name, descending = op.attr, op.descending
        get = attr_getter(name)

        def sort(items, ctx, key_of=lambda item: item):
            nodes = ctx.nodes
            present, missing = [], []
            for item in items:
                value = get(nodes[key_of(item)], ctx)
                (missing if value is None else present).append((sort_key(value), item))
            present.sort(key=lambda pair: pair[0], reverse=descending)
            return [item for _, item in present] + [item for _, item in missing]

        return Step(sort, lambda items, ctx: sort(items, ctx, key_of=lambda item: item[0]))
    if isinstance(op, Rank):
        fixed, param = op.text, op.param
        fixed_terms = query_terms(fixed) if fixed is not None else None

        def rank(items, ctx, key_of=None):
            if not items:
                return items
            text = fixed if param is None else ctx.params[param]
            terms = fixed_terms if param is None else query_terms(text)
            ids = items if key_of is None else [key_of(item) for item in items]
            ctx.charge(len(ids))
            order = searcher_for(ctx.view).rank(ctx.view, ids, text, terms)
            if key_of is None:
                return order
            by_id = {key_of(item): item for item in items}
            return [by_id[node_id] for node_id in order]

        return Step(rank, lambda items, ctx: rank(items, ctx, key_of=lambda item: item[0]),
                    Strategy("rank", "the node index's scores for each node of the list"))
    if isinstance(op, Navigate):
        raise TypeError("navigation is not a list operator")
    raise TypeError(op)


# A filter runs as closures (conditions.interpreted) until it proves hot, and only then is it
# written as one Python function and compiled (~0.1-0.2 ms of compile() a function, more than a
# query answered once costs in all): once its calls have tested more than GENERATE_AFTER nodes
# (each call counting one more than it tests: a filter applied per source is called once a
# source), about where the generated loop, cheaper a node, has paid for its compile: on five
# conditions of our own over 1,000 synthetic nodes the break-even (warm compile / what the
# closures cost more a node) was 381-3,381 nodes, median 521 (bench/results/first-call/
# tiering.py, docs/performance.md "First calls, fourth session"; not tuned on the benchmark).
GENERATE_AFTER = 512

# A filter after a walk of the stored columns (Walked) tests each position by bisection
# while the bucket holds more than PROBE_SET_AFTER times as many positions as there are to
# test, else one pass over the bucket against a set of them: in a fresh process a bisection
# cost 460-600 ns, the pass 44-63 ns a bucket position (bench/results/first-call/walks.py,
# walks.txt: 11x in its last run, 9.5x in the one before).
PROBE_SET_AFTER = 10


class TieredFilter:
    """``keep(ids, ctx) -> ids`` of a filter: its closures until its calls have tested more
    than :data:`GENERATE_AFTER` nodes, its generated loop (``ConditionWriter.id_filter``) from
    then on; both give the same ids. :attr:`generated` is the loop once written (explain's
    physical plan writes it when asked: :meth:`function`).

    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.query.plan import Attr, Cmp, Const
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {"n": 1}); _ = g.add_node("b", "fact", {"n": 2})
    >>> keep = TieredFilter(Cmp(">", Attr("n"), Const(1)), None)
    >>> ctx = Context(g, {}, None, DEFAULT_LIMITS)
    >>> keep(["a", "b"], ctx), keep.generated is None, keep(["a", "b"] * 300, ctx)[:1], keep.generated is None
    (['b'], True, ['b'], False)
    """

    __slots__ = ("condition", "compile_path", "node_type", "test", "rest", "generated", "tested", "buckets", "numbers")

    def __init__(self, cond, compile_path, node_type: str | None = None):
        self.condition = cond
        self.compile_path = compile_path
        self.node_type = node_type  # the type of the nodes it filters, when known (after a one-type hop)
        self.test: Callable | None = None  # the closures, made on the first call
        self.rest: Callable | None = None  # the closures of the terms after the buckets' ones
        self.generated: Callable | None = None
        self.tested = 0  # nodes tested by the closures, plus one a call
        # The value-index buckets the generated loop probes by id (ConditionWriter.typed_test):
        # the closures probe them too when they are at hand, and otherwise tell the graph of
        # their reads as the loop does, so the index is built at the same call either way.
        self.buckets = keys = bucket_keys(cond, node_type)
        # Without buckets: the leading comparisons with numbers, which a walk's positions are
        # tested on from the image's number columns (_numbers), and the other terms.
        self.numbers = None if keys else number_terms(cond)

    @property
    def reads_positions(self) -> bool:
        """Whether a walk's positions (:class:`Walked`) are tested as they are (against the
        image's value indexes or number columns): a union of walks then keeps them."""
        return bool(self.buckets) or self.numbers is not None

    def function(self) -> Callable:
        """The generated loop, written and compiled now if it was not yet."""
        generated = self.generated
        if generated is None:
            writer = condition_writer(self.compile_path)
            generated = self.generated = writer.id_filter(self.condition, self.node_type)
        return generated

    def __call__(self, ids, ctx):
        if ids.__class__ is Walked:
            if self.buckets:
                kept = self._positions(ids, ctx)
                if kept is not None:
                    return kept
            elif self.numbers is not None:
                kept = self._numbers(ids, ctx)
                if kept is not None:
                    return kept
        generated = self.generated
        if generated is not None:
            return generated(ids, ctx)
        tested = self.tested = self.tested + len(ids) + 1
        if tested > GENERATE_AFTER:
            return self.function()(ids, ctx)
        nodes = ctx.nodes
        keys = self.buckets
        if keys:
            buckets = buckets_at_hand(keys, ctx)
            if None not in buckets:
                return self._probe(ids, ctx, buckets)
        test = self.test
        if test is None:
            test = self.test = interpreted(self.condition, self.compile_path, members=True)
        kept = [i for i in ids if (n := nodes[i]) is not None and test(n, ctx)]
        if keys:
            tell_reads(ctx.view, keys, buckets, len(ids))
        return kept

    def _positions(self, walked: Walked, ctx) -> list | None:
        """The ids of a walk over the stored columns that pass, their positions tested
        against the image's value indexes (``MemoryGraph.stored_positions``, ascending): the
        nodes are not reached, nor their ids looked up; the remaining terms are tested on the
        nodes kept. None when the image has not every bucket (a node changed since): the
        caller tests the ids."""
        view = ctx.view
        candidates = walked.positions
        for node_type, attribute, value in self.buckets:
            if value.__class__ is Param:
                value = ctx.params[value.name]
                if type(value) is not str:
                    return None
            positions = view.stored_positions(node_type, attribute, value)
            if positions is None:
                return None
            if not candidates:
                break
            if len(positions) > PROBE_SET_AFTER * len(candidates):
                # a few positions against a large bucket: a bisection each
                size = len(positions)
                candidates = [p for p in candidates if (i := bisect_left(positions, p)) < size and positions[i] == p]
            else:  # one pass over the bucket against a set of them
                inside = set(candidates).intersection(positions)
                candidates = [p for p in candidates if p in inside]
        ids = walked.ids
        rest = self._rest()
        if rest is _always:
            kept = Walked(map(ids.__getitem__, candidates))
            kept.positions, kept.ids = candidates, ids
            return kept
        nodes = ctx.nodes
        return [i for i in map(ids.__getitem__, candidates) if (n := nodes.get(i)) is not None and rest(n, ctx)]

    def _numbers(self, walked: Walked, ctx) -> list | None:
        """The ids of a walk over the stored columns that pass, the leading comparisons with
        numbers read from the image's number columns by position (``MemoryGraph.
        stored_number_columns``): no node is reached for them, no payload decoded; the
        remaining terms are tested on the nodes kept. None when the image has no column for
        one of them at the type of a node reached (or a node changed since): the caller tests
        the ids."""
        view = ctx.view
        stored = view.stored_number_columns() if isinstance(view, MemoryGraph) else None
        if stored is None:
            return None
        kinds, rank, by_kind = stored.kinds, stored.rank, stored.by_kind
        terms, others = self.numbers
        candidates = walked.positions
        for attribute, compare, number in terms:
            columns = by_kind.get(attribute)
            if columns is None:
                return None
            try:
                candidates = [p for p in candidates if compare(columns[kinds[p]][rank[p]], number)]
            except TypeError:  # a type without this column (None): its nodes are tested as they are
                return None
        ids = walked.ids
        if not others:
            kept = Walked(map(ids.__getitem__, candidates))
            kept.positions, kept.ids = candidates, ids
            return kept
        rest = self._rest()
        nodes = ctx.nodes
        return [i for i in map(ids.__getitem__, candidates) if (n := nodes.get(i)) is not None and rest(n, ctx)]

    def _rest(self) -> Callable:
        """The closures of the terms the buckets (or number columns) do not answer
        (:func:`_always` when none), made once."""
        rest = self.rest
        if rest is None:
            terms = bucket_terms([self.condition], self.node_type)[2] if self.buckets else self.numbers[1]
            rest = self.rest = interpreted(AllOf(tuple(terms)), self.compile_path) if terms else _always
        return rest

    def _probe(self, ids, ctx, buckets):
        """The ids in every bucket, the remaining terms tested on their nodes."""
        for bucket in buckets:
            ids = [i for i in ids if i in bucket]
        rest = self._rest()
        if rest is _always:
            return ids
        nodes = ctx.nodes
        return [i for i in ids if (n := nodes[i]) is not None and rest(n, ctx)]


def _always(node, ctx) -> bool:
    return True


class TieredHopThenFilters:
    """``step(ids, ctx) -> ids`` of a one-type hop followed by filters: the hop and the
    filters one by one (:class:`TieredFilter`, closures first) until the first filter proves
    hot, then the one function ``codegen.hop_then_filters_step`` writes for the hop and its
    filters together; both give the same ids and charge the same work.

    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.query.plan import Attr, Cmp, Const
    >>> g = MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {"s": "p"})], [("g", "a", "parent_of", {})])
    >>> step = TieredHopThenFilters(Hop("out", ("parent_of",), "action"), [Cmp("=", Attr("s"), Const("p"))], None)
    >>> step(["g"], Context(g, {}, None, DEFAULT_LIMITS)), step.generated is None
    (['a'], True)
    """

    __slots__ = ("relation", "conditions", "compile_path", "filters", "plain", "generated", "__weakref__")

    def __init__(self, relation: Hop, conditions: list, compile_path):
        self.relation = relation
        self.conditions = conditions
        self.compile_path = compile_path
        self.filters = [TieredFilter(c, compile_path, relation.node_type) for c in conditions]
        weights = [condition_weight(c) for c in conditions]
        hop = one_type_hop(relation)

        def plain(ids, ctx):
            out = hop(ids, ctx)
            for keep, weight in zip(self.filters, weights):
                if not out:
                    break
                ctx.charge(len(out) * weight)
                out = keep(out, ctx)
            return out

        self.plain = plain
        self.generated: Callable | None = None

    def function(self) -> Callable:
        """The generated step, written and compiled now if it was not yet."""
        generated = self.generated
        if generated is None:
            conditions = self.conditions
            generated, _ = hop_then_filters_step(
                self.relation, conditions, [condition_weight(c) for c in conditions], condition_writer(self.compile_path)
            )
            self.generated = generated
        return generated

    def __call__(self, ids, ctx):
        generated = self.generated
        if generated is not None:
            return generated(ids, ctx)
        if self.filters[0].tested > GENERATE_AFTER:
            return self.function()(ids, ctx)
        # The call on which the first filter proves hot runs that filter's own generated loop
        # (a large first call does not run closures over thousands of nodes); the next call
        # writes the joined step: one compile more, once per hot query.
        return self.plain(ids, ctx)


def _filter_step(cond, compile_path) -> Step:
    keep = TieredFilter(cond, compile_path)
    weight = condition_weight(cond)
    tests: list = []

    def fast(ids, ctx):
        # charged as Context.charge does, inline (Context.ceiling)
        work = ctx.work = ctx.work + len(ids) * weight
        ceiling = ctx.ceiling
        if ceiling is not None and work > ceiling:
            ctx.charge(0)
        return keep(ids, ctx)

    def traced(items, ctx):
        if not tests:  # .paths() only: written when first needed
            tests.append(condition(cond, compile_path))
        test = tests[0]
        nodes = ctx.nodes
        return [item for item in items if test(nodes[item[0]], ctx)]

    return Step(fast, traced, Strategy("generated filter", "", (keep,)))


# -- the ways a navigation step runs (fast mode) ------------------------------------------------


def one_type_hop(relation: Hop) -> Callable | None:
    """The whole-list step for a one-type hop: one loop, no call per node but the lookup
    (None for other hops).

    >>> one_type_hop(Hop("out", ("parent_of", "before"))) is None
    True
    """
    if relation.edge_types is None or len(relation.edge_types) != 1:
        return None
    edge_type, node_type, direction = relation.edge_types[0], relation.node_type, relation.direction
    calls = [0]  # this step's calls that read the stored columns (see STORED_WALKS)

    def step(ids, ctx):
        if calls[0] < STORED_WALKS:  # the first calls: the columns, no memo filled
            calls[0] += 1
            stored = stored_ends(ids, ctx, edge_type, node_type, direction)
            if stored is not None:
                found, names = stored
                if direction == "both" or (len(ids) > 1 and not ctx.view.distinct_ends(edge_type, direction == "out", len(found))):
                    found = list(dict.fromkeys(found))  # (a position is one id: the same repeats)
                # charged as Context.charge does, inline (Context.ceiling)
                work = ctx.work = ctx.work + len(found)
                ceiling = ctx.ceiling
                if ceiling is not None and work > ceiling:
                    ctx.charge(0)
                walked = Walked(map(names.__getitem__, found))
                walked.positions, walked.ids = found, names
                return walked
        out: list = []
        extend = out.extend
        # Each node's other ends come from the hop's memo (a call only on a miss): for a
        # node type, no type test per node after the first visit.
        if direction == "both":  # per source: outgoing then incoming (spec §2.2)
            out_get, out_find = ctx.hop(edge_type, node_type, True)
            in_get, in_find = ctx.hop(edge_type, node_type, False)
            for node_id in ids:
                targets = out_get(node_id)
                extend(targets if targets is not None else out_find(node_id))
                targets = in_get(node_id)
                extend(targets if targets is not None else in_find(node_id))
        else:
            get, find = ctx.hop(edge_type, node_type, direction == "out")
            for node_id in ids:
                targets = get(node_id)
                extend(targets if targets is not None else find(node_id))
        # Distinct sources reach a node twice only when it is the far end of two such edges:
        # not when the graph knows there is none (MemoryGraph.distinct_ends).
        if direction == "both" or (
            len(ids) > 1
            and not (isinstance(ctx.view, MemoryGraph) and ctx.view.distinct_ends(edge_type, direction == "out", len(out)))
        ):
            out = list(dict.fromkeys(out))
        # charged as Context.charge does, inline (Context.ceiling)
        work = ctx.work = ctx.work + len(out)
        ceiling = ctx.ceiling
        if ceiling is not None and work > ceiling:
            ctx.charge(0)
        return out

    return step


def hop_then_filters(hop: Callable, filters: list[Callable]) -> Callable:
    """A hop over the whole list, then each filter once over its result: filters alone keep
    or drop a node whichever source reached it.

    >>> hop_then_filters(lambda ids, ctx: ids + ["x"], [lambda ids, ctx: ids[1:]])(["a"], None)
    ['x']
    """

    def fast(ids, ctx):
        out = hop(ids, ctx)
        for keep in filters:
            if not out:
                break
            out = keep(out, ctx)
        return out

    return fast


def per_source_loop(relation: Hop, predicates: list[Callable]) -> Callable | None:
    """A one-type hop whose predicates apply to each source's targets, in one loop (None
    for other hops).

    >>> per_source_loop(Hop("both", ("related_to",)), []) is None
    True
    """
    if relation.edge_types is None or len(relation.edge_types) != 1 or relation.direction == "both":
        return None
    edge_type, node_type, outgoing = relation.edge_types[0], relation.node_type, relation.direction == "out"

    def step(ids, ctx):
        adjacency = ctx.view.out_adjacency if outgoing else ctx.view.in_adjacency
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


def generic_hop(plain: Callable) -> Callable:
    """Any navigation without predicates: expand each source, keep the first occurrence.

    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.model import MemoryGraph
    >>> generic_hop(lambda i, ctx: [i, "x"])(["a", "b"], Context(MemoryGraph(), {}, None, DEFAULT_LIMITS))
    ['a', 'x', 'b']
    """
    return _each_source(plain, fresh=False)


def _each_source(expand: Callable, fresh: bool) -> Callable:
    """``fast(ids, ctx)``: ``expand(id, ctx)`` for each source, the first occurrence of each id
    kept, the work charged as :meth:`Context.charge` does, inline (``Context.ceiling``). With
    ``fresh`` ``expand`` makes a new list each call, which one source's answer is, uncopied
    (a walk's :class:`Walked` keeps its positions for the filter after it)."""
    chain = itertools.chain.from_iterable

    def fast(ids, ctx):
        if len(ids) == 1:  # one source's outputs hold no repeats (each expansion drops them)
            out = list(expand(ids[0], ctx))
        else:
            out = list(dict.fromkeys(chain(expand(i, ctx) for i in ids)))
        work = ctx.work = ctx.work + len(out)
        ceiling = ctx.ceiling
        if ceiling is not None and work > ceiling:
            ctx.charge(0)
        return out

    def fresh_fast(ids, ctx):
        if len(ids) == 1:
            out = expand(ids[0], ctx)
        else:
            out = list(dict.fromkeys(chain(expand(i, ctx) for i in ids)))
        work = ctx.work = ctx.work + len(out)
        ceiling = ctx.ceiling
        if ceiling is not None and work > ceiling:
            ctx.charge(0)
        return out

    return fresh_fast if fresh else fast


def walk_levels(op: Navigate) -> Callable | None:
    """``levels(source, ctx) -> ids`` of a walk — a one-type out or in hop repeated (``{m,n}``)
    or its closure — as :func:`expanders` gives it (:func:`_one_type_levels`), without making
    the general expansions it does not use; None for other steps.

    >>> walk_levels(Navigate("ancestors", Closure(Hop("in", ("parent_of",))))).__qualname__
    '_one_type_levels.<locals>.levels'
    >>> walk_levels(Navigate("children", Hop("out", ("parent_of",)))) is None
    True
    """
    relation = op.relation
    if relation.__class__ is Closure:
        return _one_type_levels(relation.hop, 1, None)
    if relation.__class__ is Hop and op.repeat is not None:
        return _one_type_levels(relation, *op.repeat)
    return None


def walk_sources(op: Navigate, union: bool = False) -> Callable | None:
    """``walk(ids, ctx) -> lists`` of a walk — a one-type out or in hop repeated (``{m,n}``)
    or its closure — each source's levels as one list (:func:`_one_type_walk`: the sources
    walked in one call, the hop's memo asked once; with ``union``, their union charged as a
    step's output); None for other steps.

    >>> walk_sources(Navigate("ancestors", Closure(Hop("in", ("parent_of",))))).__qualname__
    '_one_type_walk.<locals>.walk'
    >>> walk_sources(Navigate("children", Hop("out", ("parent_of",)))) is None
    True
    """
    relation = op.relation
    if relation.__class__ is Closure:
        return _one_type_walk(relation.hop, 1, None, union)
    if relation.__class__ is Hop and op.repeat is not None:
        low, high = op.repeat
        return _one_type_walk(relation, low, high, union)
    return None


def each_source(plain: Callable) -> Callable:
    """``lists(ids, ctx)``: ``plain(id, ctx)`` for each source, as :func:`walk_sources`'
    walks give them (for a navigation that is not a walk).

    >>> each_source(lambda i, ctx: [i + "1"])(["a", "b"], None)
    [['a1'], ['b1']]
    """

    def lists(ids, ctx):
        return [plain(i, ctx) for i in ids]

    return lists


def filtered_sources(op: Navigate) -> Callable | None:
    """``lists(ids, ctx)`` of a navigation whose predicates are all filters, for
    :func:`then_filters` (:func:`walk_sources` for a walk, else :func:`each_source` over its
    expansion); None for a step with no predicates or with a positional one (``[0]``: it picks
    from each source's own list).

    >>> filtered_sources(Navigate("ancestors", Closure(Hop("in", ("parent_of",))), None, (Index(0),))) is None
    True
    >>> from hgm_engine.query.plan import Attr, Cmp, Const
    >>> done = Filter(Cmp("=", Attr("status"), Const("done")))
    >>> filtered_sources(Navigate("ancestors", Closure(Hop("in", ("parent_of",))), None, (done,))).__qualname__
    '_one_type_walk.<locals>.walk'
    """
    predicates = op.predicates
    if not predicates or not all([p.__class__ is Filter for p in predicates]):
        return None
    return walk_sources(op) or each_source(expanders(op)[0])


def walk_step(op: Navigate) -> Callable | None:
    """The fast form of a walk without predicates — a one-type out or in hop repeated
    (``{m,n}``) or its closure (``ancestors``) — as :func:`generic_hop` over the walk's levels
    gives it: the sources walked in one call (:func:`_one_type_walk`: the stored columns
    first, then the hop's memo), the first occurrence of each id kept and the work charged
    inline, in the walk's own function (no call between the step and the walk); None for
    other steps. (Its traced form is the general one: :func:`expanders`.)

    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> g = MemoryGraph.from_records([("g", "goal", {}), ("s", "goal", {}), ("a", "action", {})],
    ...                              [("g", "s", "parent_of", {}), ("s", "a", "parent_of", {})])
    >>> walk_step(Navigate("children", Hop("out", ("parent_of",)), (1, None)))(["g", "s"], Context(g, {}, None, DEFAULT_LIMITS))
    ['s', 'a']
    >>> walk_step(Navigate("children", Hop("out", ("parent_of",)))) is None  # one hop: not a walk
    True
    """
    return None if op.predicates else walk_sources(op, union=True)


def then_filters(lists: Callable, filters: list[Callable], weights: list[int]) -> Callable:
    """A navigation whose predicates are all filters, fast form: ``lists(ids, ctx)`` gives
    each source's outputs (:func:`walk_sources`, :func:`each_source`), then each filter runs
    once over their union (first occurrence kept) — what :func:`generic_per_source` gives, and
    the same work: a filter keeps or drops a node whichever source reached it, so filtering
    each source's list and then taking the union is filtering the union; and where no node is
    reached from two sources, the nodes each filter tests over the union are those it tests
    over the sources' lists together. Where a node is (the lists' lengths add up to more than
    the union's) the filters run on each source's list, as in the general form. Filter ``k``
    (a :class:`TieredFilter`) is charged ``weights[k]`` for each node it tests, as
    :func:`list_op`'s filter step is, and the step then the nodes it gives, inline (as
    :meth:`Context.charge` does). A union of walks over the stored columns keeps their
    positions when the first filter tests positions against the image's value indexes (its
    ``buckets``).

    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.model import MemoryGraph
    >>> ctx = Context(MemoryGraph(), {}, None, DEFAULT_LIMITS)
    >>> odd = lambda ids, ctx: [i for i in ids if int(i) % 2]
    >>> then_filters(lambda ids, ctx: [["1", "2"], ["3"]], [odd], [1])(["a", "b"], ctx), ctx.work
    (['1', '3'], 5)
    >>> then_filters(lambda ids, ctx: [["1", "2"], ["2", "3"]], [odd], [1])(["a", "b"], ctx), ctx.work  # "2" twice: per source
    (['1', '3'], 11)
    """
    pairs = list(zip(filters, weights))
    positions = bool(getattr(filters[0], "reads_positions", False)) if filters else False

    def keep_all(out, ctx):
        for keep, weight in pairs:
            if not out:
                break
            # charged as Context.charge does, inline (Context.ceiling)
            work = ctx.work = ctx.work + len(out) * weight
            ceiling = ctx.ceiling
            if ceiling is not None and work > ceiling:
                ctx.charge(0)
            out = keep(out, ctx)
        return out

    def fast(ids, ctx):
        found = lists(ids, ctx)
        if len(found) == 1:
            out = found[0]
        else:
            # (positions kept only for walks over the stored columns: a walk over the memo has none)
            out = _union(found, positions and bool(found) and found[0].__class__ is Walked)
            if len(out) != sum(map(len, found)):  # a node reached from two sources: per source
                out = _union([keep_all(outputs, ctx) for outputs in found], positions)
                found = None
        if found is not None:
            out = keep_all(out, ctx)
        # charged as Context.charge does, inline (Context.ceiling)
        ceiling = ctx.ceiling
        work = ctx.work = ctx.work + len(out)
        if ceiling is not None and work > ceiling:
            ctx.charge(0)
        return out

    return fast


def generic_per_source(plain: Callable, predicates: list[Callable]) -> Callable:
    """Any navigation with predicates: expand each source and apply them to its outputs.

    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.model import MemoryGraph
    >>> first = lambda ids, ctx: ids[:1]
    >>> generic_per_source(lambda i, ctx: [i + "1", i + "2"], [first])(["a", "b"], Context(MemoryGraph(), {}, None, DEFAULT_LIMITS))
    ['a1', 'b1']
    """

    def per_source(node_id, ctx):
        outputs = plain(node_id, ctx)
        for predicate in predicates:
            outputs = predicate(outputs, ctx)
        return outputs

    return _each_source(per_source, fresh=False)


def traced_navigation(traced_expand: Callable, predicate_steps: Callable[[], list[Step]] | None) -> Callable:
    """The traced form of a navigation step: each ``(id, walk)`` expanded on its own, its
    per-source predicates applied, each reached node kept once with the walk that got there.
    ``predicate_steps()`` gives the predicates' steps (built on first use).

    >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
    >>> from hgm_engine.model import MemoryGraph
    >>> traced = traced_navigation(lambda i, ctx: [(i + "1", ())], None)
    >>> traced([("a", ("a",))], Context(MemoryGraph(), {}, None, DEFAULT_LIMITS))
    [('a1', ('a', 'a1'))]
    """

    def traced(items, ctx):
        traced_predicates = [step.traced for step in predicate_steps()] if predicate_steps is not None else []
        out: dict[str, tuple] = {}
        held = 0
        for node_id, walk in items:
            outputs = traced_expand(node_id, ctx)
            for predicate in traced_predicates:
                outputs = predicate(outputs, ctx)
            for other, via in outputs:
                if other not in out:
                    # A step that stays on its node ({0,..} level 0, latest of the newest, a node
                    # among its versions) says so with via None and adds nothing to the walk; a
                    # hop along a loop edge from a node to itself does add the node.
                    out[other] = extended = walk if via is None else walk + via + (other,)
                    held += len(extended)
            if held > 65536:  # charge as the walks grow, not only at the end
                ctx.charge_walks(held)
                held = 0
        ctx.charge(len(out))
        ctx.charge_walks(held)
        return list(out.items())

    return traced
