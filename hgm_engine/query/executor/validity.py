"""The valid-time index: each node's ``valid_from``/``valid_to`` as numbers, per node type.

``nodes.where(type = 'fact', valid_at(T), ...)`` over a large memory tested every fact's two
bounds one by one: two attribute reads and two look-ups of the bound texts in the shared cache
of parsed instants (:data:`~hgm_engine.model.INSTANTS`), a hash table of every distinct bound,
which costs a cache miss per bound. The index keeps, for the nodes of one type in creation
order, their payloads, their ids and two arrays of instants (seconds since 1970, UTC): a
missing ``valid_from`` is −∞, a missing ``valid_to`` +∞, and a bound that is not an ISO 8601
time NaN, which compares false with every instant — so ``starts <= T`` and ``ends > T`` are
exactly :func:`~hgm_engine.model.holds_at`, computed for every node at once. The other
conditions of the filter then run on the nodes that hold only.

The index belongs to a :class:`~hgm_engine.model.MemoryGraph` (held weakly) and is made on
first use. After a change (the graph's ``version`` moved) it is brought up to date, not
rebuilt: the payloads are compared by identity with the ones it holds (a changed node is a
new payload), so a commit that adds or updates a few facts costs one pass in C over the list
plus the changed nodes; a deletion (positions shift) rebuilds it. Other views — a
transaction, a state ``as_of`` an earlier ``t`` — are overlays and are not indexed: their
filter tests each node, as before.

>>> from hgm_engine.model import MemoryGraph
>>> g = MemoryGraph()
>>> _ = g.add_node("old", "fact", {"valid_from": "2026-01-01", "valid_to": "2026-06-01"})
>>> _ = g.add_node("new", "fact", {"valid_from": "2026-06-01"})
>>> _ = g.add_node("odd", "fact", {"valid_from": "soon"})
>>> ids, payloads = holding_at(g, "fact", parse_instant("2026-07-01"))
>>> list(ids)
['new']
"""

from __future__ import annotations

import itertools
import operator
import threading
import weakref
from typing import Any, Iterator

import numpy as np

from hgm_engine.model import INSTANTS, VALID_FROM, VALID_TO, MemoryGraph, parse_instant
from hgm_engine.query.plan import AllOf, Const, Param, Truthy, ValidAt

__all__ = ["IntervalIndex", "holding_at", "split_valid_at", "interval_index", "instant_of"]

_NAN = float("nan")
_BEFORE_ALL = float("-inf")
_AFTER_ALL = float("inf")

# A commit that changed more than this share of an index's nodes rebuilds it instead.
_REBUILD_SHARE = 4


def _instant(value: Any, missing: float) -> float:
    if value is None:
        return missing
    if type(value) is str:
        return INSTANTS[value]
    return _NAN  # a number, a list...: not a time, never holds


def _bounds(nodes: list) -> tuple[list[float], list[float]]:
    starts, ends = [], []
    add_start, add_end = starts.append, ends.append
    for node in nodes:
        attributes = node.attrs
        add_start(_instant(attributes.get(VALID_FROM), _BEFORE_ALL))
        add_end(_instant(attributes.get(VALID_TO), _AFTER_ALL))
    return starts, ends


class IntervalIndex:
    """The bounds of the nodes of one type (or of every node, ``node_type`` None) of one graph.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {"valid_to": "1970-01-02"})
    >>> index = IntervalIndex(g, "fact"); index.starts.tolist(), index.ends.tolist()
    ([-inf], [86400.0])
    >>> _ = g.add_node("b", "fact", {}); index.refresh(g); index.ids, index.rebuilds
    (['a', 'b'], 1)
    """

    __slots__ = ("node_type", "version", "nodes", "ids", "starts", "ends", "rebuilds", "updates")

    def __init__(self, graph: MemoryGraph, node_type: str | None):
        self.node_type = node_type
        self.rebuilds = 0  # full builds (the first one included)
        self.updates = 0  # changes brought in without a full build
        self._build(graph)

    def _payloads(self, graph: MemoryGraph) -> list:
        if self.node_type is None:
            return list(graph.node_map().values())
        return list(graph.nodes_of_type(self.node_type))

    def _build(self, graph: MemoryGraph, nodes: list | None = None) -> None:
        self.version = graph.version
        self.nodes = self._payloads(graph) if nodes is None else nodes
        self.ids = [node.id for node in self.nodes]
        starts, ends = _bounds(self.nodes)
        self.starts = np.array(starts, dtype=np.float64)
        self.ends = np.array(ends, dtype=np.float64)
        self.rebuilds += 1

    def refresh(self, graph: MemoryGraph) -> None:
        """Bring the index up to the graph's present version (nothing to do when it is)."""
        if graph.version == self.version:
            return
        nodes = self._payloads(graph)
        old = self.nodes
        if len(nodes) < len(old):
            self._build(graph, nodes)  # something was deleted: positions moved
            return
        # Positions whose payload is not the one indexed (map stops at the shorter list).
        changed = list(itertools.compress(itertools.count(), map(operator.is_not, old, nodes)))
        if len(changed) * _REBUILD_SHARE > len(nodes):
            self._build(graph, nodes)
            return
        added = nodes[len(old):]
        starts, ends = self.starts, self.ends
        if added:
            new_starts, new_ends = _bounds(added)
            starts = np.concatenate((starts, np.array(new_starts, dtype=np.float64)))
            ends = np.concatenate((ends, np.array(new_ends, dtype=np.float64)))
            self.ids = self.ids + [node.id for node in added]
        elif changed:
            starts, ends = starts.copy(), ends.copy()  # a reader may hold the old arrays
        if changed:
            ids = self.ids if added else list(self.ids)
            for position in changed:
                node = nodes[position]
                attributes = node.attrs
                starts[position] = _instant(attributes.get(VALID_FROM), _BEFORE_ALL)
                ends[position] = _instant(attributes.get(VALID_TO), _AFTER_ALL)
                ids[position] = node.id
            self.ids = ids
        self.nodes, self.starts, self.ends, self.version = nodes, starts, ends, graph.version
        self.updates += 1


# graph -> node type (None: every node) -> its index
_INDEXES: "weakref.WeakKeyDictionary[MemoryGraph, dict[str | None, IntervalIndex]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def interval_index(graph: MemoryGraph, node_type: str | None) -> IntervalIndex:
    """The up-to-date index of ``graph``'s nodes of ``node_type`` (None: every node).

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {})
    >>> interval_index(g, "fact") is interval_index(g, "fact")
    True
    """
    with _lock:  # readers run side by side; one brings the index up to date at a time
        return _current(graph, node_type)


def _current(graph: MemoryGraph, node_type: str | None) -> IntervalIndex:
    per_graph = _INDEXES.get(graph)
    if per_graph is None:
        per_graph = _INDEXES[graph] = {}
    index = per_graph.get(node_type)
    if index is None:
        index = per_graph[node_type] = IntervalIndex(graph, node_type)
    else:
        index.refresh(graph)
    return index


def holding_at(graph: MemoryGraph, node_type: str | None, at: float) -> tuple[Iterator[str], Iterator[Any]]:
    """``(ids, payloads)`` of ``graph``'s nodes of ``node_type`` (None: every node) that hold
    at ``at`` (seconds since 1970 UTC; NaN: none), in creation order, as iterators: a caller
    reads one of them, and neither list is built.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {"valid_from": "2026-01-01"})
    >>> list(holding_at(g, "fact", parse_instant("2025-01-01"))[0]), list(holding_at(g, None, parse_instant("2026-01-01"))[0])
    ([], ['a'])
    """
    with _lock:
        index = _current(graph, node_type)
        starts, ends, ids, nodes = index.starts, index.ends, index.ids, index.nodes
    mask = ((starts <= at) & (ends > at)).tolist()
    return itertools.compress(ids, mask), itertools.compress(nodes, mask)


def split_valid_at(condition) -> tuple[ValidAt | None, Any]:
    """The first ``valid_at(T)`` conjunct of ``condition`` (T a constant or a parameter) and
    the conjunction of the others (None when there are none); ``(None, condition)`` when
    there is no such conjunct.

    >>> from hgm_engine.query.plan import Attr, Cmp
    >>> found, rest = split_valid_at(AllOf((Cmp(">", Attr("n"), Const(1)), Truthy(ValidAt(Const("2026-01-01"))))))
    >>> found, rest
    (ValidAt(at=Const(value='2026-01-01')), Cmp(op='>', left=Attr(name='n'), right=Const(value=1)))
    """
    items = condition.items if isinstance(condition, AllOf) else (condition,)
    for position, item in enumerate(items):
        if isinstance(item, Truthy) and isinstance(item.operand, ValidAt) and isinstance(item.operand.at, (Const, Param)):
            rest = items[:position] + items[position + 1:]
            if not rest:
                return item.operand, None
            return item.operand, rest[0] if len(rest) == 1 else AllOf(rest)
    return None, condition


def instant_of(valid_at: ValidAt, params) -> float:
    """The instant ``valid_at`` asks about, read once per query (NaN when it is not a time).

    >>> instant_of(ValidAt(Param("t")), {"t": "1970-01-02"}), instant_of(ValidAt(Const("1970-01-01")), {})
    (86400.0, 0.0)
    """
    at = valid_at.at
    value = at.value if isinstance(at, Const) else params[at.name]
    found = parse_instant(value)
    return _NAN if found is None else found
