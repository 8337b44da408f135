"""MemoryGraph: typed nodes and edges on rustworkx, addressed by stable string ids.

rustworkx reuses an index after its node is removed, so indices never leave this module:
everything outside speaks node ids. Payloads are immutable; changing a node stores a new
payload. The graph keeps derived indexes that queries need — nodes by type, goal roots, and
each node's edges in *edge order* (spec/dsl.md §1) — and refreshes them as it changes.

>>> g = MemoryGraph()
>>> _ = g.add_node("trip", "goal", {"content": "Plan a trip"})
>>> _ = g.add_node("day2", "goal", {})
>>> _ = g.add_node("day1", "goal", {})
>>> _ = g.add_edge("trip", "day2", "parent_of", {"order": 1})
>>> _ = g.add_edge("trip", "day1", "parent_of", {"order": 0})
>>> g.out_ids("trip", "parent_of")
('day1', 'day2')
>>> g.roots()
('trip',)
"""

from __future__ import annotations

import operator
import sys
import threading
from bisect import bisect_left
from itertools import compress, islice
from typing import Any, Callable, Container, Iterable, Iterator, Mapping

import rustworkx as rx

from hgm_engine.model.payloads import NO_ADJACENCY, Adjacency, Edge, EdgeColumns, Node, NumberColumns, NumberIndex, decode_payloads
from hgm_engine.model.values import EMPTY_ATTRS, freeze

__all__ = [
    "MemoryGraph",
    "bulk_allocation",
    "KEPT_GROWTH",
    "collect_kept",
    "forget_hold",
    "kept_memories",
    "release_kept",
]

_EMPTY = EMPTY_ATTRS
_SEQ = operator.attrgetter("seq")
_NO_NODES: Mapping[str, Node] = {}  # the per-type index of a type with no nodes (never changed)
_ROOTS = threading.Lock()  # roots() deciding the nodes a change left pending
_MATERIALIZING = threading.Lock()  # one reader makes a graph's edge payloads from its columns


class bulk_allocation:
    """Pause the cyclic garbage collector while millions of payloads are made.

    Loads allocate objects that live on; every full collection would walk all of them again,
    which made loading a million nodes superlinear. Nothing made here forms reference cycles
    that need collecting, and the collector's previous state is restored afterwards.

    :meth:`keep` (called inside the block once a memory's state is loaded) also moves every
    object alive at the end into the collector's permanent generation (``gc.freeze``): the
    payloads would otherwise still be young when the collector is enabled again, and its next
    passes would walk all of them (about 80 ms after reopening a 100k-node memory, falling
    on whatever query came next). Such a freeze is a *hold* (``kept`` is then True) that the
    memory gives back when it closes (:func:`release_kept`), so that its objects can be
    collected again.

    >>> with bulk_allocation():
    ...     payloads = [Node(str(i), "fact", EMPTY_ATTRS, i) for i in range(3)]
    >>> len(payloads)
    3
    """

    _keep = False
    _hold = True
    kept = False  # True once the block froze what it made as a hold (see release_kept)

    def keep(self, hold: bool = True) -> None:
        """What the block made lives on: freeze it when the block ends without an error.
        ``hold=False``: no memory will give it back (a graph file loaded into a memory that
        holds nothing); it is unfrozen when no memory holds frozen objects any more."""
        self._keep, self._hold = True, hold

    def __enter__(self) -> "bulk_allocation":
        import gc

        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        import gc

        global _holds
        if self._was_enabled:
            if self._keep and exc_type is None:
                with _KEPT:
                    gc.freeze()
                    if self._hold:
                        _holds += 1
                        self.kept = True
            gc.enable()


# The memories whose load froze what it made (bulk_allocation.keep) and that have not given it
# back (release_kept or forget_hold), and Python's heap (sys.getallocatedblocks) after the last
# collect_kept. Under _KEPT (reentrant: a collection run under it calls finalizers).
_KEPT = threading.RLock()
_holds = 0
_heap_after: int | None = None

KEPT_GROWTH = 0.25
"""A close while other memories hold frozen objects runs :func:`collect_kept` once Python's
heap has grown by this share since the last one (CPython's own rule for a full pass: a quarter
more long-lived objects than it last found)."""


def release_kept(held: bool) -> None:
    """A memory closes: ``held`` when its load froze what it made (``bulk_allocation.kept``).

    gc has no per-object unfreeze: ``gc.unfreeze`` gives the collector back every frozen
    object of the process, every other open memory's payloads (and a caller's own
    ``gc.freeze``) with this one's, and its next full passes would walk them all again. So
    nothing is unfrozen while another memory still holds frozen objects; when the last one
    closes (or a memory that held nothing closes while none holds: a graph file's load, an
    empty memory), everything is. What this cannot do: a memory closed while others stay open
    keeps its objects frozen, and those in reference cycles (a memory's own) are not freed
    until a collection reaches them. So such a close runs :func:`collect_kept` once Python's
    heap has grown by :data:`KEPT_GROWTH` since the last one (``sys.getallocatedblocks``, a walk
    over the allocator's pools, not its objects): what waits stays in proportion to what is
    alive, and each pass is paid for by that much growth. The server's registry also collects
    on its own schedule.

    >>> release_kept(False)
    >>> kept_memories()
    0
    """
    import gc

    global _holds, _heap_after
    with _KEPT:
        if held and _holds:
            _holds -= 1
        if not _holds:
            _heap_after = None
            gc.unfreeze()
        elif held:
            heap = sys.getallocatedblocks()
            if _heap_after is None:
                _heap_after = heap
            elif heap >= _heap_after * (1 + KEPT_GROWTH):
                collect_kept()


def forget_hold() -> None:
    """A memory that held frozen objects was collected without being closed (its finalizer):
    one hold fewer. Nothing is unfrozen here (this runs inside a collection); the next close
    or collection does.

    >>> before = kept_memories()
    >>> with bulk_allocation() as bulk:
    ...     bulk.keep()
    >>> kept_memories() == before + 1, bulk.kept
    (True, True)
    >>> forget_hold(); kept_memories() == before
    True
    """
    global _holds
    with _KEPT:
        if _holds:
            _holds -= 1


def collect_kept() -> int:
    """A full pass of the collector that also reaches the frozen objects of memories already
    closed: unfreeze everything, collect, and freeze what is left again while any memory still
    holds frozen objects (``gc.collect``'s count of what it found unreachable).

    >>> collect_kept() >= 0
    True
    """
    import gc

    global _heap_after
    with _KEPT:
        gc.unfreeze()
        try:
            return gc.collect()
        finally:
            if _holds:
                gc.freeze()
            _heap_after = sys.getallocatedblocks()


def kept_memories() -> int:
    """How many open memories hold frozen objects (see :func:`release_kept`).

    >>> kept_memories() >= 0
    True
    """
    return _holds


class _Positions:
    """The ids whose position is in ``positions`` (ascending), as a container: a value index
    kept in a stored image, tested without making a set of it. A test finds the id's position
    (its node's ``seq - base`` when the image's seqs are consecutive, else ``position(id)``)
    and bisects. After as many tests as making the set of ids would cost
    (:data:`PROBES_PER_ID`), it is made and put in its place in ``found`` (the lookups after
    that, and every later query's, are a set's)."""

    __slots__ = ("position", "positions", "found", "node_type", "ids", "left", "made", "nodes", "base")

    def __init__(self, position: Callable[[str], int | None], positions, found: dict, node_type: str, ids: list[str],
                 nodes: Mapping[str, Node] | None = None, base: int | None = None):
        self.position, self.positions, self.found, self.node_type, self.ids = position, positions, found, node_type, ids
        # (nodes, base): the position of an id is its node's seq - base. Valid for this
        # container's life: any change to a node drops it (MemoryGraph._index_values).
        self.nodes, self.base = nodes, base
        self.left = 32 + int(len(positions) * PROBES_PER_ID)
        self.made: frozenset[str] | None = None  # the set, once made

    def expect(self, tests: int) -> "Container[str]":
        """A caller is about to test ``tests`` ids: the set of ids when it is made, or made now
        because that many tests would cost more than making it; else this container."""
        made = self.made
        if made is None and tests > self.left:
            made = self._make()
        return self if made is None else made

    def _make(self) -> frozenset[str]:
        made = self.made = self.found[self.node_type] = frozenset(map(self.ids.__getitem__, self.positions))
        return made

    def __contains__(self, node_id: str) -> bool:
        made = self.made
        if made is not None:
            # A caller that kept this container (a generated filter reads its bucket once a
            # call) goes on asking it after the set took its place in ``found``.
            return node_id in made
        left = self.left = self.left - 1
        if left < 0:
            return node_id in self._make()
        base = self.base
        if base is not None:
            node = self.nodes.get(node_id)
            if node is None:
                return False
            p = node.seq - base
        else:
            p = self.position(node_id)
            if p is None:
                return False
        positions = self.positions
        i = bisect_left(positions, p)
        return i < len(positions) and positions[i] == p


PROBES_PER_ID = 1 / 16
"""How many tests of a stored bucket (:class:`_Positions`) cost what making the set of its
ids costs, per id in it: the set is made after ``32 + len(bucket) * PROBES_PER_ID`` tests."""


class MemoryGraph:
    """A typed multigraph with stable string ids, creation order and edge order.

    Mutations are primitive and unchecked beyond structural integrity (ids exist, no
    duplicate); schema and constraint checks belong to the transaction layer.
    """

    def __init__(self) -> None:
        self._rx = rx.PyDiGraph(multigraph=True)
        self._index: dict[str, int] | None = {}  # id -> rustworkx index, in creation order
        # A graph read from a stored image whose node seqs ascend by position: ``_index`` is None
        # until something needs it whole (a change to the nodes, find_cycles), and a node's
        # position is found from its seq in this list (positions are rustworkx indices there).
        self._seqs: list[int] | None = None
        # When those seqs are consecutive (a memory loaded at once), a position is seq - base.
        self._seq_base: int | None = None
        self._bisects_left = 0  # lookups by seq before the id -> index map is built after all
        self._nodes: dict[str, Node] = {}  # id -> payload, in creation order
        # (source, target, type) -> rustworkx edge index; None until first needed (a graph read
        # from a stored image answers queries without it: 165k 3-tuples cost 20 MB).
        self._edge_index: dict[tuple[str, str, str], int] | None = {}
        self._by_type: dict[str, dict[str, Node]] = {}  # type -> id -> payload, creation order
        # A graph read from a stored image: each type's node positions in ``_stored_ids``, for
        # the types whose ``_by_type`` entry is not built yet (built on first use, or all of
        # them before the first change: the positions describe the nodes as they were read).
        self._unbuilt_types: dict[str, Iterable[int]] | None = None
        self._out: dict[str, Adjacency] = {}
        self._in: dict[str, Adjacency] = {}
        # edge type -> (node type or None, outgoing) -> (id -> the other ends, their finder):
        # hop_memo; an entry goes whenever the node's adjacency does.
        self._hops: dict[str, dict[tuple[str | None, bool], tuple[dict[str, tuple[str, ...]], Callable]]] = {}
        self._roots: tuple[str, ...] | None = None
        # The root goals as a set, kept up to date by every change once computed (None: not
        # yet); ``_roots`` is its creation-ordered tuple, rebuilt from the set when needed.
        self._root_ids: set[str] | None = None
        # Nodes whose root status a change may have changed since: decided when roots() is
        # next asked (a commit adding a goal and its parent edge asks once, not twice).
        self._root_pending: set[str] = set()
        # (type, attribute) -> string value -> id -> payload; built on first use, then kept.
        self._values: dict[tuple[str, str], dict[str, dict[str, Node]]] = {}
        # (how many keys ``_values`` had, node type -> its keys): what _index_values looks at for
        # one node's change; readers only add keys (under the read lock), so the count tells.
        self._value_keys: tuple[int, dict[str, list[tuple[str, str]]]] = (0, {})
        self._unsorted: set[tuple[str, str, str]] = set()  # buckets whose order needs a sort
        self._node_seq = 0
        self._edge_seq = 0
        self.version = 0  # bumped by every change; caches compare it
        # The edges of a graph read from a stored image, as columns (EdgeColumns), until
        # something needs them as payloads: queries read adjacency straight from them.
        self._csr: EdgeColumns | None = None
        # Value indexes kept in that image: (type, attribute) -> value -> positions in
        # ``_stored_ids``; used until the first change to a node (then built by scanning).
        self._stored_values: dict[tuple[str, str], dict[str, Iterable[int]]] | None = None
        self._stored_ids: list[str] = []
        # Number indexes kept in that image: (type, attribute) -> number -> positions; dropped
        # at the first change to a node (filters then test the attributes), see stored_numbers.
        self._stored_numbers: dict[tuple[str, str], NumberIndex] | None = None
        # Number columns kept in that image (NumberColumns), dropped with the number indexes.
        self._stored_number_columns: NumberColumns | None = None
        # (type, attribute, value) -> the payloads of one of those buckets, made on first use
        # (a query asks for one value: the others are not made); dropped with them.
        self._stored_buckets: dict[tuple[str, str, str], tuple[Node, ...]] = {}
        # (type, attribute, value) of the buckets whose payloads nodes_with(decoded=True) has
        # decoded: kept across changes (see nodes_with).
        self._decoded_buckets: set[tuple[str, str, str]] = set()
        # (attribute, value) -> what value_members answered; dropped by every node change.
        self._members: dict[tuple[str, str], dict[str, Any]] = {}
        # (type, attribute) -> nodes filters have read for it without an index (see
        # tested_without_index): the index is built once they add up to the type's size.
        self._tested: dict[tuple[str, str], int] = {}
        # (edge type, outgoing) -> whether no node is the far end of two such edges (then a hop
        # from distinct sources reaches each node once): distinct_ends; absent while unknown.
        self._distinct: dict[tuple[str, bool], bool] = {}
        self._distinct_work: dict[tuple[str, bool], int] = {}

    @classmethod
    def from_records(cls, nodes: Iterable[tuple], edges: Iterable[tuple]) -> "MemoryGraph":
        """Build a graph in bulk from ``(id, type, attrs)`` and ``(from, to, type, attrs)``
        records, in creation order; the records must already be valid (ids unique, ends exist).

        >>> g = MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {})], [("g", "a", "parent_of", {})])
        >>> g.out_ids("g", "parent_of")
        ('a',)
        """
        node_payloads = [
            Node(node_id, node_type, freeze(attributes) if attributes else _EMPTY, seq)
            for seq, (node_id, node_type, attributes) in enumerate(nodes, start=1)
        ]
        edge_payloads = [
            Edge(source, target, edge_type, freeze(attributes) if attributes else _EMPTY, seq)
            for seq, (source, target, edge_type, attributes) in enumerate(edges, start=1)
        ]
        return cls.from_payloads(node_payloads, edge_payloads)

    @classmethod
    def from_payloads(cls, nodes: list[Node], edges: list[Edge]) -> "MemoryGraph":
        """Build a graph in bulk from payloads in creation order (ids unique, ends present)."""
        index = {node.id: position for position, node in enumerate(nodes)}
        ends = [(index[e.source], index[e.target], e) for e in edges]
        edge_index = {(e.source, e.target, e.type): position for position, e in enumerate(edges)}
        if len(edge_index) != len(edges):
            raise KeyError("duplicate edge in bulk payloads")
        return cls.from_numbered(nodes, index, ends, edge_index)

    @classmethod
    def from_numbered(
        cls,
        nodes: list[Node],
        index: dict[str, int],
        ends: list[tuple[int, int, Edge]],
        edge_index: dict[tuple[str, str, str], int],
    ) -> "MemoryGraph":
        """Build a graph in bulk from payloads a loader has already numbered by position:
        ``index[node.id]`` is the node's position in ``nodes``, ``ends[j]`` is ``(source
        position, target position, edge j)`` and ``edge_index[edge j's key]`` is ``j``. The
        loader's dictionaries become the graph's own (a fresh rustworkx graph numbers nodes
        and edges from 0 in insertion order), so a million-node file is not indexed twice.

        >>> g = MemoryGraph.from_numbered(
        ...     [Node("g", "goal", EMPTY_ATTRS, 1), Node("a", "action", EMPTY_ATTRS, 2)],
        ...     {"g": 0, "a": 1},
        ...     [(0, 1, Edge("g", "a", "parent_of", EMPTY_ATTRS, 1))],
        ...     {("g", "a", "parent_of"): 0},
        ... )
        >>> g.out_ids("g", "parent_of"), g.roots()
        (('a',), ('g',))
        """
        graph = cls()
        indices = graph._rx.add_nodes_from(nodes)
        if len(indices) and (indices[0] != 0 or indices[-1] != len(nodes) - 1):
            raise AssertionError("a fresh rustworkx graph numbers nodes from 0")
        graph._index = index
        graph._nodes = {node.id: node for node in nodes}
        by_type = graph._by_type
        for node in nodes:
            by_type.setdefault(node.type, {})[node.id] = node
        graph._node_seq = max((node.seq for node in nodes), default=0)
        edge_indices = graph._rx.add_edges_from(ends)
        if len(edge_indices) and (edge_indices[0] != 0 or edge_indices[-1] != len(ends) - 1):
            raise AssertionError("a fresh rustworkx graph numbers edges from 0")
        graph._edge_index = edge_index
        graph._edge_seq = max((edge.seq for _, _, edge in ends), default=0)
        graph.version = 1
        return graph

    @classmethod
    def from_columns(
        cls,
        nodes: list[Node],
        groups: dict[str, Iterable[int]],
        edges: "EdgeColumns",
        values: dict[tuple[str, str], dict[str, Iterable[int]]] | None = None,
        roots: tuple[str, ...] | None = None,
        last_seq: int | None = None,
        seqs: list[int] | None = None,
        numbers: dict[tuple[str, str], NumberIndex] | None = None,
        seq_base: int | None = None,
        number_columns: NumberColumns | None = None,
    ) -> "MemoryGraph":
        """Build a graph in bulk from node payloads in creation order (``groups``: each node
        type's positions in ``nodes``, ascending) and the edges as columns, which stay
        columns until something needs them as payloads (queries read adjacency from them).
        ``values``: value indexes kept with them ((type, attribute) → string value → the
        positions, ascending, of the nodes of that type with that value), used by
        :meth:`nodes_with` until a node changes; ``roots``: the root goals in creation order,
        when known (:meth:`roots` then needs no pass over the edges); ``last_seq``: the highest
        ``seq`` of ``nodes``, when known; ``seqs``: their seqs by position, when known (when
        they ascend, no id → position index is built until one is needed); ``numbers``: number
        indexes kept with them (:meth:`stored_numbers`); ``seq_base``: ``seqs`` are known to be
        ``seq_base, seq_base + 1, ...`` (not checked again); ``number_columns``: number columns
        kept with them (:meth:`stored_number_columns`). Each type's index of nodes is built
        when first read.
        Nothing is checked: the caller read them from a store image whose checksum matched.

        >>> from hgm_engine.model import lazy_edges, lazy_nodes
        >>> nodes = lazy_nodes(["g", "a"], ["goal", "action"], [None, None], [1, 2])
        >>> columns = EdgeColumns.of_edges(nodes, lazy_edges(["g"], ["a"], ["parent_of"], [None], [1]))
        >>> g = MemoryGraph.from_columns(nodes, {"goal": [0], "action": [1]}, columns)
        >>> g.out_ids("g", "parent_of"), g.roots(), g.edge("g", "a", "parent_of").seq
        (('a',), ('g',), 1)
        """
        graph = cls()
        graph._rx.add_nodes_from(nodes)
        ids = edges.ids
        graph._nodes = dict(zip(ids, nodes))
        if seq_base is not None and seqs is not None and len(seqs) == len(ids):
            graph._index, graph._seqs, graph._seq_base = None, seqs, seq_base
            graph._bisects_left = max(1024, len(seqs) >> 5)
        elif seqs is not None and len(seqs) == len(ids) and all(map(operator.lt, seqs, islice(seqs, 1, None))):
            graph._index, graph._seqs = None, seqs
            # A bisection costs ~2 dict lookups: a query that looks up more than one node in 32
            # pays for the map (built once, then kept) instead.
            graph._bisects_left = max(1024, len(seqs) >> 5)
            if seqs and seqs[-1] - seqs[0] == len(seqs) - 1:  # ascending and consecutive
                graph._seq_base = seqs[0]
        else:
            graph._index = dict(zip(ids, range(len(ids))))
        graph._unbuilt_types = dict(groups)
        graph._csr = edges
        graph._stored_values, graph._stored_ids = values, ids
        graph._stored_numbers = numbers
        graph._stored_number_columns = number_columns
        if roots is not None:
            graph._roots, graph._root_ids = roots, set(roots)
        graph._edge_index = None
        graph._node_seq = max(map(_SEQ, nodes), default=0) if last_seq is None else last_seq
        graph._edge_seq = edges.last_seq
        graph.version = 1
        return graph

    # -- reading ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    @property
    def edge_count(self) -> int:
        csr = self._csr
        return self._rx.num_edges() if csr is None else csr.edge_count

    def _edge_graph(self) -> rx.PyDiGraph:
        """The rustworkx graph with every edge in it: edges still held as columns (a graph
        read from a stored image) are made into payloads now, once."""
        if self._csr is not None:
            # Readers may ask at the same time (under the state's read lock): one makes the
            # payloads, the others wait; an adjacency read from the columns meanwhile is the
            # same as one read from the payloads.
            with _MATERIALIZING:
                csr = self._csr
                if csr is not None:
                    csr.materialize(self._rx)
                    self._csr = None
        return self._rx

    def _keys(self) -> dict[tuple[str, str, str], int]:
        """The edge-key index, built from the edges on first use."""
        index = self._edge_index
        if index is None:
            rxg = self._edge_graph()
            index = self._edge_index = {edge.key: i for i, edge in zip(rxg.edge_indices(), rxg.edges())}
        return index

    def _ids(self) -> dict[str, int]:
        """The id → rustworkx index map, built now if the graph was read from an image
        (before any change to its nodes, so positions are the indices)."""
        index = self._index
        if index is None:
            ids = self._stored_ids
            index = self._index = dict(zip(ids, range(len(ids))))
        return index

    def _position(self, node_id: str) -> int | None:
        """The rustworkx index of ``node_id``, or None when it is not a node."""
        index = self._index
        if index is not None:
            return index.get(node_id)
        node = self._nodes.get(node_id)
        if node is None:
            return None
        base = self._seq_base
        if base is not None:
            return node.seq - base
        self._bisects_left -= 1
        if self._bisects_left < 0:
            return self._ids()[node_id]
        return bisect_left(self._seqs, node.seq)

    def _at(self, node_id: str) -> int:
        """The rustworkx index of the node ``node_id`` (KeyError when there is none)."""
        found = self._position(node_id)
        if found is None:
            raise KeyError(node_id)
        return found

    def _changing_nodes(self) -> dict[str, int]:
        """Before a change to the nodes: build what a graph read from an image keeps by
        position (per-type indexes, the id → index map); returns the map."""
        self._build_types()
        index = self._ids()
        self._seqs = self._seq_base = None
        return index

    def node(self, node_id: str) -> Node | None:
        """The payload of ``node_id``, or None."""
        return self._nodes.get(node_id)

    def node_map(self) -> Mapping[str, Node]:
        """Id → payload for every node, in creation order (read-only by convention)."""
        return self._nodes

    def nodes(self) -> Iterator[Node]:
        """Every node, in creation order."""
        return iter(self._nodes.values())

    def node_ids(self) -> Iterable[str]:
        return self._nodes.keys()

    def _of_type(self, node_type: str) -> dict[str, Node]:
        """The per-type index of ``node_type`` (id → payload, creation order; empty when
        there is none), built now if the graph was read from an image and it is not yet."""
        found = self._by_type.get(node_type)
        if found is None:
            unbuilt = self._unbuilt_types
            where = None if unbuilt is None else unbuilt.get(node_type)
            if where is None:  # none of that type, or another reader has just built it
                return self._by_type.get(node_type, _NO_NODES)
            # Readers may build one at the same time: each builds the same index, and sets it
            # before it forgets the positions.
            nodes, ids = self._nodes, self._stored_ids
            names = list(map(ids.__getitem__, where))
            found = self._by_type[node_type] = dict(zip(names, map(nodes.__getitem__, names)))
            unbuilt.pop(node_type, None)
        return found

    def _build_types(self) -> None:
        """Build every per-type index not built yet (before a change to the nodes)."""
        if self._unbuilt_types is not None:
            for node_type in list(self._unbuilt_types):
                self._of_type(node_type)
            self._unbuilt_types = None

    def ids_of_type(self, node_type: str) -> Iterable[str]:
        """Ids of the nodes of one type, in creation order (the per-type index)."""
        return self._of_type(node_type).keys()

    def nodes_of_type(self, node_type: str) -> Iterable[Node]:
        """Payloads of the nodes of one type, in creation order."""
        return self._of_type(node_type).values()

    def count_of_type(self, node_type: str) -> int:
        found = self._by_type.get(node_type)
        if found is None:
            unbuilt = self._unbuilt_types
            where = None if unbuilt is None else unbuilt.get(node_type)
            if where is not None:  # counted from the image's positions, nothing built
                return len(where)
            found = self._by_type.get(node_type, _NO_NODES)  # none, or another reader has just built it
        return len(found)

    def nodes_with(self, node_type: str, attribute: str, value: str, *, decoded: bool = False) -> Iterable[Node]:
        """Payloads of the nodes of ``node_type`` whose ``attribute`` is the string ``value``,
        in creation order (a value index per type and attribute, built on first use).

        ``decoded=True``: their attributes decoded first, all at once (a scan about to read
        them), the first time that bucket is asked for only — a payload once decoded stays so,
        and the nodes a change brings into a bucket are decoded ones.

        >>> g = MemoryGraph.from_records([("a", "action", {"status": "done"}), ("b", "action", {"status": "failed"})], [])
        >>> [n.id for n in g.nodes_with("action", "status", "failed")]
        ['b']
        >>> [n.attrs["status"] for n in g.nodes_with("action", "status", "done", decoded=True)]
        ['done']
        """
        found = self._nodes_with(node_type, attribute, value)
        if decoded and (node_type, attribute, value) not in self._decoded_buckets:
            decode_payloads(found)
            self._decoded_buckets.add((node_type, attribute, value))
        return found

    def _nodes_with(self, node_type: str, attribute: str, value: str) -> Iterable[Node]:
        key = (node_type, attribute)
        buckets = self._values.get(key)
        if buckets is None and self._stored_values is not None:
            stored = self._stored_values.get(key)
            if stored is not None:
                # kept in the image the graph was read from, as the nodes' positions per
                # value: only the bucket asked for is made (in creation order, as stored)
                made = self._stored_buckets.get((node_type, attribute, value))
                if made is None:
                    nodes, at = self._nodes, self._stored_ids.__getitem__
                    made = self._stored_buckets[(node_type, attribute, value)] = tuple(
                        map(nodes.__getitem__, map(at, stored.get(value, ())))
                    )
                return made
        if buckets is None:
            buckets = self._value_index(node_type, attribute)
            # Filled before it is put in place: a reader at the same time (under the read
            # lock) sees no index or the whole one, never part of it.
            self._values[key] = buckets
            self._members = {}  # value_members may answer for this type now
        bucket = buckets.get(value)
        if bucket is None:
            return ()
        if (node_type, attribute, value) in self._unsorted:
            ordered = dict(sorted(bucket.items(), key=lambda item: item[1].seq))
            buckets[value] = bucket = ordered
            self._unsorted.discard((node_type, attribute, value))
        return bucket.values()

    def stored_numbers(self, node_type: str, attribute: str) -> tuple[NumberIndex, list[str]] | None:
        """The number index kept in the stored image this graph was read from for ``node_type``
        and ``attribute`` (:class:`~hgm_engine.model.payloads.NumberIndex`: each number → the
        positions of the nodes of that type whose attribute is that number) and the ids by
        position; None when there is none, or once a node has changed (the
        positions no longer describe the nodes). With :meth:`stored_positions`, a filter such as
        ``priority >= 4`` after ``status = 'failed'`` is answered without decoding a payload.

        >>> MemoryGraph().stored_numbers("action", "priority") is None
        True
        """
        numbers = self._stored_numbers
        found = None if numbers is None else numbers.get((node_type, attribute))
        return None if found is None else (found, self._stored_ids)

    def stored_number_columns(self) -> NumberColumns | None:
        """The number columns kept in the stored image this graph was read from
        (:class:`~hgm_engine.model.payloads.NumberColumns`, by the positions of the stored
        columns' ids), or None: none kept, or a node has changed since.

        >>> MemoryGraph().stored_number_columns() is None
        True
        """
        return self._stored_number_columns

    def stored_positions(self, node_type: str, attribute: str, value: str) -> Iterable[int] | None:
        """The ascending positions (in :meth:`stored_numbers`' ids) of the nodes of
        ``node_type`` whose ``attribute`` is the string ``value``, from the stored image's value
        index, while it describes the nodes (None otherwise: use :meth:`nodes_with`).

        >>> MemoryGraph().stored_positions("action", "status", "failed") is None
        True
        """
        stored = self._stored_values
        if stored is None:
            return None
        buckets = stored.get((node_type, attribute))
        return None if buckets is None else buckets.get(value, ())

    def _value_index(self, node_type: str, attribute: str) -> dict[str, dict[str, Node]]:
        """The value index of (``node_type``, ``attribute``), made now from the nodes."""
        buckets: dict[str, dict[str, Node]] = {}
        for node in self._of_type(node_type).values():
            found = node.attrs.get(attribute)
            if type(found) is str:
                buckets.setdefault(found, {})[node.id] = node
        return buckets

    def value_members(self, attribute: str, value: str) -> Mapping[str, Any]:
        """For each node type whose index of ``attribute`` is at hand (kept in the image the
        graph was read from, or built by :meth:`nodes_with`), the ids of the nodes of that type
        whose ``attribute`` is the string ``value``, as a container (``id in found[type]``);
        types without one are absent. A filter tests a node against it without decoding the
        node's attributes; nothing is built for it.

        >>> g = MemoryGraph.from_records([("a", "action", {"status": "done"}), ("b", "action", {"status": "failed"})], [])
        >>> g.value_members("status", "failed")
        {}
        >>> _ = g.nodes_with("action", "status", "x")
        >>> found = g.value_members("status", "failed")
        >>> "b" in found["action"], "a" in found["action"]
        (True, False)
        """
        key = (attribute, value)
        found = self._members.get(key)
        if found is None:
            found = {}
            if self._stored_values is not None:
                # positions: the graph's own lookup (an id index, or a node's seq in the image's
                # seq column), valid while the image's value indexes are (until a node changes)
                position, ids = self._position, self._stored_ids
                for (node_type, name), buckets in self._stored_values.items():
                    if name == attribute:
                        found[node_type] = _Positions(position, buckets.get(value, ()), found, node_type, ids, self._nodes, self._seq_base)
            for (node_type, name), buckets in self._values.items():
                if name == attribute and node_type not in found:
                    found[node_type] = buckets.get(value, {})
            self._members[key] = found
        return found

    def value_bucket(self, node_type: str, attribute: str, value: str, tests: int = 0) -> Container[str] | None:
        """The ids of the nodes of ``node_type`` whose ``attribute`` is the string ``value``,
        as a container (``id in found``), when the value index of (``node_type``,
        ``attribute``) is at hand (:meth:`value_members`); None when it is not. A filter that
        knows its nodes' type (after a hop to one type, or with a ``type = ...`` term) tests
        an id against it without reaching the node; when it gets None it reads the nodes and
        says how many (:meth:`tested_without_index`).

        ``tests``: how many ids the caller is about to test, when it knows (a filter over a
        list). A bucket of the stored image this graph was read from is tested by position
        until tests have added up to what making the set of its ids costs; told that this
        many are coming, it makes the set at once when they would (and this returns the set).

        >>> g = MemoryGraph.from_records([("a", "action", {"status": "done"}), ("b", "action", {"status": "done"})], [])
        >>> g.value_bucket("action", "status", "done") is None
        True
        >>> g.tested_without_index("action", "status", 2)  # as many as there are actions
        >>> "a" in g.value_bucket("action", "status", "done"), "a" in g.value_bucket("action", "status", "failed")
        (True, False)
        """
        found = self.value_members(attribute, value).get(node_type)
        if tests and found.__class__ is _Positions:
            return found.expect(tests)
        return found

    def tested_without_index(self, node_type: str, attribute: str, count: int) -> None:
        """A filter has just read ``attribute`` of ``count`` nodes of ``node_type`` (which had
        no value index of it at hand): once filters have read as many as there are nodes of
        that type, the index is built (as :meth:`nodes_with` builds it, kept up to date by
        every change after), and the filters after that test ids against it.

        The rule is the one of renting or buying: building the index costs about one read of
        every node of the type, so a filter that runs once never pays for it, and one that
        runs again and again pays at most twice what it would have paid either way. An index
        whose values are mostly held by one node each (fewer than two nodes per value on
        average: names, texts) is not kept, and not tried again for that type. Nothing
        is counted for another view (a transaction's overlay, an earlier state): only a graph
        keeps value indexes.

        >>> g = MemoryGraph.from_records([("a", "action", {"status": "done", "name": "x"}),
        ...                               ("b", "action", {"status": "done", "name": "y"})], [])
        >>> g.tested_without_index("action", "status", 1); g.value_bucket("action", "status", "done") is None
        True
        >>> g.tested_without_index("action", "status", 1); sorted(g.value_bucket("action", "status", "done"))
        ['a', 'b']
        >>> g.tested_without_index("action", "name", 2); g.value_bucket("action", "name", "x") is None
        True
        """
        key = (node_type, attribute)
        if key in self._values or (self._stored_values is not None and key in self._stored_values):
            return
        tested = self._tested.get(key, 0)
        if tested < 0:  # refused before (below)
            return
        tested += count
        if tested < self.count_of_type(node_type):
            self._tested[key] = tested
            return
        buckets = self._value_index(node_type, attribute)
        if 2 * len(buckets) > sum(map(len, buckets.values())):
            # Mostly one node per value (a name, a text): the index would cost about a dict per
            # node and spare a filter one read per node; it is not kept, nor tried again.
            self._tested[key] = -1
            return
        self._tested.pop(key, None)
        self._values[key] = buckets
        self._members = {}

    def _index_values(self, old: Node | None, new: Node | None) -> None:
        """Keep the built value indexes in step with one node's change."""
        if self._members:
            self._members = {}
        self._stored_numbers = None  # positions of the nodes before the change: not kept up
        self._stored_number_columns = None
        if self._stored_values is not None:
            # The image's positions describe the nodes before this change: every index kept
            # there becomes a built one (the node just changed is in the bucket of its old
            # value, or not there at all), then follows the change as built ones do.
            stored, self._stored_values = self._stored_values, None
            self._stored_buckets = {}
            nodes, at = self._nodes, self._stored_ids.__getitem__
            for key, buckets in stored.items():
                if key not in self._values:
                    self._values[key] = {
                        found: {node_id: nodes[node_id] for node_id in map(at, where) if node_id in nodes}
                        for found, where in buckets.items()
                    }
        values = self._values
        if not values:
            return
        node = new if new is not None else old
        count, by_type = self._value_keys
        if count != len(values):  # an index was built since: the keys by node type again
            by_type = {}
            keys = list(values)
            for key in keys:
                by_type.setdefault(key[0], []).append(key)
            self._value_keys = (len(keys), by_type)
        for key in by_type.get(node.type, ()):
            buckets = values[key]
            node_type, attribute = key
            before = old.attrs.get(attribute) if old is not None else None
            after = new.attrs.get(attribute) if new is not None else None
            if type(before) is str and (before != after or new is None):
                bucket = buckets.get(before)
                if bucket is not None:
                    bucket.pop(node.id, None)
            if type(after) is str:
                bucket = buckets.setdefault(after, {})
                if node.id in bucket:
                    bucket[node.id] = new  # same value, new payload: the position stays
                    continue
                last = next(reversed(bucket.values()), None)
                bucket[node.id] = new
                if last is not None and last.seq > new.seq:
                    self._unsorted.add((node_type, attribute, after))

    def edge(self, source: str, target: str, edge_type: str) -> Edge | None:
        index = self._keys().get((source, target, edge_type))
        return None if index is None else self._edge_graph().get_edge_data_by_index(index)

    def edges(self) -> list[Edge]:
        """Every edge, in creation order."""
        return sorted(self._edge_graph().edges(), key=lambda e: e.seq)

    def edges_of(self, node_id: str) -> list[Edge]:
        """Every edge touching ``node_id`` (outgoing, then incoming), in creation order."""
        index = self._at(node_id)
        rxg = self._edge_graph()
        out = [e for _, _, e in rxg.out_edges(index)]
        inc = [e for _, _, e in rxg.in_edges(index) if e.source != node_id]
        return sorted(out, key=lambda e: e.seq) + sorted(inc, key=lambda e: e.seq)

    def out_edges(self, node_id: str) -> list[Edge]:
        """Outgoing edge payloads of ``node_id`` (any order)."""
        index = self._position(node_id)
        return [] if index is None else [e for _, _, e in self._edge_graph().out_edges(index)]

    def in_edges(self, node_id: str) -> list[Edge]:
        """Incoming edge payloads of ``node_id`` (any order)."""
        index = self._position(node_id)
        return [] if index is None else [e for _, _, e in self._edge_graph().in_edges(index)]

    @property
    def last_node_seq(self) -> int:
        """The highest creation number handed out so far (nodes)."""
        return self._node_seq

    @property
    def last_edge_seq(self) -> int:
        """The highest creation number handed out so far (edges)."""
        return self._edge_seq

    def out_adjacency(self, node_id: str) -> Adjacency:
        """Outgoing edges of ``node_id`` in edge order (cached until they change)."""
        adjacency = self._out.get(node_id)
        if adjacency is None:
            index = self._position(node_id)
            if index is None:
                return NO_ADJACENCY
            csr = self._csr
            if csr is not None:
                adjacency = csr.adjacency(index, True)
            else:
                adjacency = Adjacency([e for _, _, e in self._rx.out_edges(index)], True)
            self._out[node_id] = adjacency
        return adjacency

    def in_adjacency(self, node_id: str) -> Adjacency:
        """Incoming edges of ``node_id`` in edge order (cached until they change)."""
        adjacency = self._in.get(node_id)
        if adjacency is None:
            index = self._position(node_id)
            if index is None:
                return NO_ADJACENCY
            csr = self._csr
            if csr is not None:
                adjacency = csr.adjacency(index, False)
            else:
                adjacency = Adjacency([e for _, _, e in self._rx.in_edges(index)], False)
            self._in[node_id] = adjacency
        return adjacency

    def hop_memo(
        self, edge_type: str, node_type: str | None, outgoing: bool
    ) -> tuple[Mapping[str, tuple[str, ...]], Callable[[str], tuple[str, ...]]]:
        """One hop's answers remembered by node id — the other ends over ``edge_type``
        (outgoing or incoming), of ``node_type`` only unless it is None, in edge order — and
        ``find(node_id)``, which works out a node's missing answer (from its adjacency) and
        remembers it. A loop reads ``memo.get(i)`` and calls ``find(i)`` only on a miss: one
        dictionary read per node, where the adjacency costs three. Forgotten for a node
        whenever its adjacency is (any change to its edges of that type, its removal).

        >>> g = MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {}), ("s", "goal", {})],
        ...                              [("g", "a", "parent_of", {}), ("g", "s", "parent_of", {})])
        >>> memo, find = g.hop_memo("parent_of", "goal", True)
        >>> memo.get("g"), find("g"), memo.get("g")
        (None, ('s',), ('s',))
        >>> _ = g.add_node("t", "goal", {}); _ = g.add_edge("g", "t", "parent_of")
        >>> memo.get("g"), find("g")
        (None, ('s', 't'))
        """
        kinds = self._hops.setdefault(edge_type, {})
        known = kinds.get((node_type, outgoing))
        if known is not None:
            return known
        memo: dict[str, tuple[str, ...]] = {}
        adjacency = self.out_adjacency if outgoing else self.in_adjacency
        nodes = self._nodes
        # A graph read from a stored image: the answer read straight from the edge columns
        # (no adjacency object made per node), while they are the edges.
        csr = self._csr
        at = None if csr is None else csr.finder(edge_type, node_type, outgoing)

        def find(node_id: str) -> tuple[str, ...]:
            if at is not None and self._csr is not None:
                node = nodes.get(node_id)
                if node is None:  # an unknown id may be a node later: nothing remembered
                    return ()
                base = self._seq_base  # (the position's lookup inline: a call less per node)
                others = memo[node_id] = at(node.seq - base if base is not None else self._position(node_id))
                return others
            else:
                found = adjacency(node_id)
                others = found.by_type.get(edge_type, ()) if node_type is None else found.of_type(edge_type, node_type, nodes)
            if node_id in nodes:  # an unknown id may be a node later: nothing remembered
                memo[node_id] = others
            return others

        known = kinds[(node_type, outgoing)] = (memo, find)
        return known

    def stored_columns(self) -> tuple[EdgeColumns, Callable[[str], int | None]] | None:
        """The edges as the stored image's columns, and the lookup of a node's position in
        them (None for an id that is no node), while queries read the edges from them (a
        graph read from its image, until its edges change); None otherwise. What
        :meth:`hop_memo`'s ``find`` reads, for a walk that reads many nodes' edges once
        (positions, no id looked up per node). Read-only, valid until the next change.

        >>> MemoryGraph().stored_columns() is None
        True
        """
        csr = self._csr
        return None if csr is None else (csr, self._position)

    def distinct_ends(self, edge_type: str, outgoing: bool, work: int = 0) -> bool:
        """Whether no node is the far end of two ``edge_type`` edges in that direction (for an
        outgoing hop: no node has two incoming ones), so that a hop from distinct sources
        reaches every node once and its list needs no pass to drop repeats. False while it is
        not known: it is found out (one pass over the edges) once hops have dropped repeats
        from as many ids (``work``, added up) as the graph has edges, and kept up to date by
        every change to the edges of that type after that (an edge added checks its ends; an
        edge removed where it did not hold makes it unknown again).

        >>> g = MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {}), ("b", "action", {})],
        ...                              [("g", "a", "parent_of", {}), ("g", "b", "parent_of", {})])
        >>> g.distinct_ends("parent_of", True), g.distinct_ends("parent_of", True, work=2)
        (False, True)
        >>> _ = g.add_node("h", "goal", {}); _ = g.add_edge("h", "a", "parent_of")
        >>> g.distinct_ends("parent_of", True), g.distinct_ends("parent_of", False)
        (False, False)
        """
        key = (edge_type, outgoing)
        known = self._distinct.get(key)
        if known is not None:
            return known
        if not work:
            return False
        done = self._distinct_work.get(key, 0) + work
        if done < self.edge_count:
            self._distinct_work[key] = done
            return False
        self._distinct_work.pop(key, None)
        csr = self._csr
        if csr is not None:
            if edge_type in csr.type_names:
                code = csr.type_names.index(edge_type)
                ends = list(compress(csr.target if outgoing else csr.source, map(code.__eq__, csr.type)))
            else:
                ends = []
        else:
            ends = [e.target if outgoing else e.source for e in self._rx.edges() if e.type == edge_type]
        known = self._distinct[key] = len(set(ends)) == len(ends)
        return known

    def out_ids(self, node_id: str, edge_type: str) -> tuple[str, ...]:
        return self.out_adjacency(node_id).by_type.get(edge_type, ())

    def in_ids(self, node_id: str, edge_type: str) -> tuple[str, ...]:
        return self.in_adjacency(node_id).by_type.get(edge_type, ())

    def roots(self) -> tuple[str, ...]:
        """Goals with no incoming ``parent_of`` edge, in creation order."""
        if self._roots is None:
            if self._root_ids is None:
                # One pass over the edge payloads, not an incoming adjacency built for every
                # goal: the first ``root`` of a fresh process at 100k nodes cost 0.5 s that way.
                csr = self._csr
                if csr is not None:
                    children = csr.targets_of("parent_of")
                else:
                    children = {e.target for e in self._rx.edges() if e.type == "parent_of"}
                self._roots = tuple(node_id for node_id in self.ids_of_type("goal") if node_id not in children)
                self._root_ids = set(self._roots)
            else:  # a commit changed a few roots: order the set, do not scan every goal
                nodes = self._nodes
                with _ROOTS:  # readers may ask at the same time (under the state's read lock)
                    root_ids = self._root_ids
                    for node_id in self._root_pending:
                        node = nodes.get(node_id)
                        if node is not None and node.type == "goal" and not self.in_ids(node_id, "parent_of"):
                            root_ids.add(node_id)
                        else:
                            root_ids.discard(node_id)
                    self._root_pending.clear()
                    self._roots = tuple(sorted(root_ids, key=lambda node_id: nodes[node_id].seq))
        return self._roots

    def _recheck_root(self, node_id: str) -> None:
        """``node_id``'s incoming ``parent_of`` edges or existence changed: is it a root now?"""
        self._roots = None
        if self._root_ids is not None:
            self._root_pending.add(node_id)  # decided by roots(), on the state it asks about

    # -- changing -----------------------------------------------------------------------

    def apply_changes(self, changes: Iterable[Any]) -> None:
        """Apply net changes (``Change``, in the order ``GraphOverlay.changes`` gives them) as
        :meth:`remove_edge`, :meth:`remove_node`, :meth:`restore_node`, :meth:`put_node`,
        :meth:`restore_edge` and :meth:`set_edge_attrs` apply them one by one: a commit onto
        the state, nodes added and updated here with what those methods repeat per node
        (finding the id map, building what an image keeps by position) done once.

        >>> from hgm_engine.model.overlay import GraphOverlay
        >>> g = MemoryGraph(); _ = g.add_node("g", "goal", {})
        >>> o = GraphOverlay(g); _ = o.add_node("a", "action", {}); _ = o.add_edge("g", "a", "parent_of")
        >>> _ = o.set_node_attrs("g", {"status": "done"})
        >>> g.apply_changes(o.changes()); g.node("g").attrs["status"], g.out_adjacency("g").by_type
        ('done', {'parent_of': ('a',)})
        """
        index = None  # the id -> index map, once a node changes (_changing_nodes)
        for change in changes:
            kind = change.kind
            if kind == "node_updated":
                if index is None:
                    index = self._changing_nodes()
                self._put_node(change.after, index)
            elif kind == "node_added":
                if index is None:
                    index = self._changing_nodes()
                self._restore_node(change.after, index)
            elif kind == "edge_added":
                self.restore_edge(change.after)
            elif kind == "edge_removed":
                self.remove_edge(*change.before.key)
            elif kind == "node_removed":
                self.remove_node(change.before.id)
            elif kind == "edge_updated":
                self.set_edge_attrs(*change.after.key, change.after.attrs)
            else:
                raise ValueError(f"unknown change kind {kind!r}")

    def add_node(self, node_id: str, node_type: str, attributes: Mapping[str, Any]) -> Node:
        """Add a node; ``node_id`` must be new."""
        if node_id in self._nodes:
            raise KeyError(f"node {node_id!r} already exists")
        index = self._changing_nodes()
        self._node_seq += 1
        node = Node(node_id, node_type, freeze(attributes) if attributes else _EMPTY, self._node_seq)
        index[node_id] = self._rx.add_node(node)
        self._nodes[node_id] = node
        self._by_type.setdefault(node_type, {})[node_id] = node
        self._index_values(None, node)
        if node_type == "goal":
            self._recheck_root(node_id)
        self.version += 1
        return node

    def restore_node(self, node: Node) -> None:
        """Put back a node payload exactly as it was (its ``seq`` too); used by loaders."""
        self._restore_node(node, self._changing_nodes())

    def _restore_node(self, node: Node, index: dict[str, int]) -> None:
        if node.id in self._nodes:
            raise KeyError(f"node {node.id!r} already exists")
        if node.seq > self._node_seq:
            self._node_seq = node.seq
        index[node.id] = self._rx.add_node(node)
        self._nodes[node.id] = node
        self._by_type.setdefault(node.type, {})[node.id] = node
        self._index_values(None, node)
        if node.type == "goal":
            self._recheck_root(node.id)
        self.version += 1

    def set_node_attrs(self, node_id: str, attributes: Mapping[str, Any]) -> Node:
        """Replace a node's attributes with a new immutable payload; returns it."""
        old = self._nodes[node_id]
        index = self._changing_nodes()
        node = Node(node_id, old.type, freeze(attributes) if attributes else _EMPTY, old.seq)
        self._rx[index[node_id]] = node
        self._nodes[node_id] = node
        self._by_type[node.type][node_id] = node
        self._index_values(old, node)
        self.version += 1
        return node

    def put_node(self, node: Node) -> None:
        """Replace an existing node's payload by ``node`` (same id and type)."""
        self._put_node(node, self._changing_nodes())

    def _put_node(self, node: Node, index: dict[str, int]) -> None:
        old = self._nodes[node.id]
        if old.type != node.type:
            raise ValueError(f"node {node.id!r} cannot change type from {old.type!r} to {node.type!r}")
        self._rx[index[node.id]] = node
        self._nodes[node.id] = node
        self._by_type[node.type][node.id] = node
        self._index_values(old, node)
        self.version += 1

    def remove_node(self, node_id: str) -> list[Edge]:
        """Remove a node and its edges; returns the removed edges in creation order."""
        node = self._nodes[node_id]
        index = self._changing_nodes()
        removed = self.edges_of(node_id)
        for edge in removed:
            self._forget_edge(edge)
        self._rx.remove_node(index.pop(node_id))
        del self._nodes[node_id]
        del self._by_type[node.type][node_id]
        self._index_values(node, None)
        self._out.pop(node_id, None)
        self._in.pop(node_id, None)
        for kinds in self._hops.values():
            for memo, _ in kinds.values():
                memo.pop(node_id, None)
        if node.type == "goal":
            self._recheck_root(node_id)
        self.version += 1
        return removed

    def add_edge(
        self, source: str, target: str, edge_type: str, attributes: Mapping[str, Any] | None = None
    ) -> Edge:
        """Add an edge between existing nodes; ``(source, target, type)`` must be new."""
        key = (source, target, edge_type)
        if key in self._keys():
            raise KeyError(f"edge {source!r} -{edge_type}-> {target!r} already exists")
        if source not in self._nodes or target not in self._nodes:
            missing = source if source not in self._nodes else target
            raise KeyError(f"node {missing!r} does not exist")
        self._edge_seq += 1
        edge = Edge(source, target, edge_type, freeze(attributes) if attributes else _EMPTY, self._edge_seq)
        self._insert_edge(edge)
        return edge

    def restore_edge(self, edge: Edge) -> None:
        """Put back an edge payload exactly as it was (its ``seq`` too)."""
        if edge.key in self._keys():
            raise KeyError(f"edge {edge.key!r} already exists")
        self._edge_seq = max(self._edge_seq, edge.seq)
        self._insert_edge(edge)

    def remove_edge(self, source: str, target: str, edge_type: str) -> Edge:
        """Remove one edge; returns its payload."""
        index = self._keys()[(source, target, edge_type)]
        edge = self._edge_graph().get_edge_data_by_index(index)
        self._forget_edge(edge)
        self.version += 1
        return edge

    def set_edge_attrs(self, source: str, target: str, edge_type: str, attributes: Mapping[str, Any]) -> Edge:
        """Replace an edge's attributes (its creation number stays)."""
        index = self._keys()[(source, target, edge_type)]
        old = self._edge_graph().get_edge_data_by_index(index)
        edge = Edge(source, target, edge_type, freeze(attributes) if attributes else _EMPTY, old.seq)
        self._rx.update_edge_by_index(index, edge)
        self._invalidate(source, target, edge_type)
        self.version += 1
        return edge

    def _insert_edge(self, edge: Edge) -> None:
        rxg = self._edge_graph()
        source, target = self._at(edge.source), self._at(edge.target)
        index = rxg.add_edge(source, target, edge)
        self._keys()[edge.key] = index
        self._invalidate(edge.source, edge.target, edge.type)
        distinct = self._distinct
        if distinct:
            edge_type = edge.type
            if distinct.get((edge_type, True)):  # is the target now the end of two?
                if sum(1 for other in rxg.in_edges(target) if other[2].type == edge_type) > 1:
                    distinct[(edge_type, True)] = False
            if distinct.get((edge_type, False)):
                if sum(1 for other in rxg.out_edges(source) if other[2].type == edge_type) > 1:
                    distinct[(edge_type, False)] = False
        self.version += 1

    def _forget_edge(self, edge: Edge) -> None:
        index = self._keys().pop(edge.key)
        self._edge_graph().remove_edge_from_index(index)
        self._invalidate(edge.source, edge.target, edge.type)
        if self._distinct:  # it may hold now where it did not: unknown until found out again
            for outgoing in (True, False):
                if self._distinct.get((edge.type, outgoing)) is False:
                    del self._distinct[(edge.type, outgoing)]

    def _invalidate(self, source: str, target: str, edge_type: str) -> None:
        self._out.pop(source, None)
        self._in.pop(target, None)
        kinds = self._hops.get(edge_type)
        if kinds:
            for (_, outgoing), (memo, _) in kinds.items():
                memo.pop(source if outgoing else target, None)
        if edge_type == "parent_of":
            self._recheck_root(target)

    # -- whole-graph --------------------------------------------------------------------

    def iter_edges(self) -> Iterable[Edge]:
        """Every edge, in no particular order (cheaper than :meth:`edges`)."""
        return self._edge_graph().edges()

    def find_cycles(self, edge_types: Iterable[str]) -> dict[str, list[str] | None]:
        """For each edge type, the ids along one of its cycles, or None (one pass over edges)."""
        wanted = {edge_type: [] for edge_type in edge_types}
        index = self._ids()
        for source, target, edge in self._edge_graph().weighted_edge_list():  # indices already: no id lookups
            pairs = wanted.get(edge.type)
            if pairs is not None:
                pairs.append((source, target))
        found: dict[str, list[str] | None] = {}
        for edge_type, pairs in wanted.items():
            found[edge_type] = None
            if not pairs:
                continue
            sub = rx.PyDiGraph(multigraph=False)
            sub.extend_from_edge_list(pairs)  # node i of sub is node i here (gaps are filled)
            if rx.is_directed_acyclic_graph(sub):
                continue
            ids = {i: node_id for node_id, i in index.items()}
            for start in sub.node_indices():
                cycle = rx.digraph_find_cycle(sub, start)
                if cycle:
                    found[edge_type] = [ids[a] for a, _ in cycle]
                    break
        return found

    def to_document(self) -> dict[str, Any]:
        """The graph file document (formats.md): nodes and edges in creation order."""
        return {
            "format": "hgm-graph/1",
            "nodes": [node.to_json() for node in self._nodes.values()],
            "edges": [edge.to_json() for edge in self.edges()],
        }
