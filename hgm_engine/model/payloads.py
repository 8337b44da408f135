"""Node and edge payloads, their attributes kept packed until first read, and the edges of a
stored image as columns.

A :class:`Node` or :class:`Edge` is immutable. One read from a store may keep its attributes
undecoded (a state row's JSON text, or a stored image's ``marshal`` bytes): ``attrs`` is decoded
on first read (:func:`lazy_nodes`, :func:`lazy_edges`, which make payloads in bulk from
columns). :class:`EdgeColumns` holds a graph's edges as columns in edge order, as a stored image
(``store/image.py``) keeps them: a query reads adjacency straight from them, and edge payloads
are made only when something needs them. :func:`packed_attrs` and :func:`stored_value_indexes`
give what such an image stores.

>>> node = lazy_nodes(["g"], ["goal"], ['{"status":"done"}'], [1])[0]
>>> node.attrs["status"], node == Node("g", "goal", freeze({"status": "done"}), 1)
('done', True)
"""

from __future__ import annotations

import json
import marshal
import operator
import sys
from collections import Counter, deque
from array import array
from itertools import accumulate, compress, repeat
from operator import attrgetter
from typing import Any, Callable, Iterable, Mapping

import attrs
import rustworkx as rx

from hgm_engine.errors import Problem
from hgm_engine.model.values import EMPTY_ATTRS, FrozenDict, freeze, thaw

__all__ = [
    "Node",
    "Edge",
    "Adjacency",
    "NO_ADJACENCY",
    "edge_order_key",
    "lazy_nodes",
    "lazy_edges",
    "EdgeColumns",
    "packed_attrs",
    "stored_value_indexes",
    "decode_payloads",
    "NumberIndex",
    "NumberColumns",
    "COLUMN_SHARE",
    "compact_ids",
    "slot_setters",
]

_EMPTY = EMPTY_ATTRS
_intern = sys.intern
_ID, _TYPE, _SEQ_OF = attrgetter("id"), attrgetter("type"), attrgetter("seq")
_SOURCE, _TARGET = attrgetter("source"), attrgetter("target")
# json.dumps(thaw(value), ensure_ascii=False, separators=(",", ":")) without building an encoder
# per call or a thawed copy: the encoder writes tuples as lists and FrozenDicts as objects.
_json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})  # values packed without a look inside

def _decoded_attrs(raw: str | bytes, owner: Any) -> FrozenDict:
    """The frozen attributes of a payload whose attributes were kept undecoded (a state row's
    JSON text, or a stored image's ``marshal`` bytes, whose checksum matched): keys, and short
    string values such as a status, are interned, so a hundred thousand nodes share one
    ``"status"`` and one ``"done"``."""
    try:
        if raw.__class__ is bytes:  # packed_attrs: frozen and interned already
            value = marshal.loads(raw)
            if value.__class__ is dict:
                return FrozenDict(value)
        else:
            value = json.loads(raw)
    except (TypeError, ValueError, EOFError, RecursionError):
        value = None
    if value.__class__ is not dict:
        from hgm_engine.errors import StoreError

        raise StoreError([Problem("store", f"the stored attributes of {owner._name()} are not a JSON object: {str(raw)[:80]!r}")])
    if not value:
        return _EMPTY
    intern = _intern
    out = {}
    for key, item in value.items():
        kind = item.__class__
        if kind is str:
            if len(item) <= _INTERNED_LENGTH:
                item = intern(item)
        elif kind is dict or kind is list:
            item = freeze(item)
        out[intern(key)] = item
    return FrozenDict(out)


_INTERNED_LENGTH = 24  # string values up to this long are shared between payloads (a status, a kind)


def packed_attrs(payload: "Node | Edge") -> bytes | str | None:
    """A payload's attributes as ``marshal`` bytes (what a stored image keeps: decoded several
    times faster than JSON when a query first reads them), None when it has none; attributes
    with an object inside stay JSON text (they are frozen when read).

    >>> node = Node("g", "goal", freeze({"tags": ["a"], "status": "done"}), 1)
    >>> lazy_nodes(["g"], ["goal"], [packed_attrs(node)], [1])[0].attrs
    {'tags': ('a',), 'status': 'done'}
    >>> packed_attrs(Node("n", "fact", freeze({"where": {"city": "Lyon"}}), 2))
    '{"where":{"city":"Lyon"}}'
    """
    raw = payload._raw
    if raw.__class__ is bytes:
        return raw
    return _packed(payload.attrs if raw is None else _decoded_attrs(raw, payload))


def _packed(attrs: FrozenDict) -> bytes | str | None:
    if not attrs:
        return None
    values = attrs.values()
    if not set(map(type, values)) <= _SCALAR_TYPES and not all(map(_flat_or_list, values)):
        # an object inside: kept as JSON text, frozen when read
        return _json_text(attrs)
    # Interned strings stay interned through marshal, and lists are tuples already: reading
    # them back is marshal.loads and one copy, both in C.
    intern = _intern
    return marshal.dumps({intern(k): intern(v) if v.__class__ is str and len(v) <= _INTERNED_LENGTH else v for k, v in attrs.items()})


def stored_value_indexes(
    nodes: list[Node], limit: int = 64
) -> tuple[
    list,
    dict[tuple[str, str], dict[str, list[int]]],
    dict[tuple[str, str], dict[int | float, list[int]]],
    dict[tuple[str, str], array],
]:
    """``packed_attrs`` of every node, and the value indexes worth keeping with them: for each
    (node type, attribute) whose string values take at most ``limit`` distinct values (a
    status, a kind: what ``where(status = 'failed')`` looks up), each value's node positions;
    for each (node type, attribute) whose *numbers* take at most ``limit`` distinct values
    (a priority: what ``where(priority >= 4)`` tests), each number's node positions; and for
    each (node type, attribute) that is a number on at least half of the type's nodes
    (:data:`COLUMN_SHARE`), however many values it takes, its *number column*: each node's
    number by its rank among the nodes of its type, NaN where it holds none
    (:class:`NumberColumns`); None for a pair that holds numbers but gets no column. A number is an ``int`` or a ``float``, never a ``bool`` (``true``
    is not ``1`` in the language); equal numbers share a bucket (``4`` and ``4.0``, as ``=``
    has it). Other values of the attribute (strings, booleans, lists, missing) are in neither
    kind of number bucket: no comparison with a number holds for them. An attribute holding an
    int a float cannot hold exactly (beyond 2**53) gets no column, nor one that is a number on
    fewer of the type's nodes.

    >>> nodes = [Node("a", "action", freeze({"status": "done", "content": "x", "priority": 4}), 1),
    ...          Node("b", "action", freeze({"status": "failed", "priority": True}), 2),
    ...          Node("c", "action", freeze({"priority": 4.0}), 3)]
    >>> stored_value_indexes(nodes, limit=1)[1:3]
    ({('action', 'content'): {'x': [0]}}, {('action', 'priority'): {4: [0, 2]}})
    >>> stored_value_indexes(nodes + [Node("d", "action", freeze({"priority": 2**60}), 4), Node("e", "goal", freeze({"priority": 1}), 5)])[3]
    {('action', 'priority'): None, ('goal', 'priority'): array('d', [1.0])}
    >>> stored_value_indexes(nodes)[3]
    {('action', 'priority'): array('d', [4.0, nan, 4.0])}
    """
    packed = []
    found: dict[tuple[str, str], dict[str, list[int]]] = {}
    numbers: dict[tuple[str, str], dict[int | float, list[int]]] = {}
    dropped: set[tuple[str, str]] = set()
    dropped_numbers: set[tuple[str, str]] = set()
    type_sizes = Counter(map(_TYPE, nodes))
    ranks: dict[str, int] = dict.fromkeys(type_sizes, 0)  # each type's nodes so far
    columns: dict[tuple[str, str], array] = {}
    filled: Counter = Counter()  # the numbers each column holds
    inexact: set[tuple[str, str]] = set()  # a column could not hold one of their ints
    for position, node in enumerate(nodes):
        raw = node._raw
        attrs = node.attrs if raw is None else _decoded_attrs(raw, node)
        packed.append(packed_attrs(node) if raw.__class__ is bytes else _packed(attrs))
        node_type = node.type
        rank = ranks[node_type]
        ranks[node_type] = rank + 1
        for attribute, value in attrs.items():
            kind = value.__class__
            if kind is str:
                kept, lost = found, dropped
                key = (node_type, attribute)
            elif kind is int or kind is float:
                kept, lost = numbers, dropped_numbers
                key = (node_type, attribute)
                column = columns.get(key)
                if column is None:
                    column = columns[key] = array("d", _NAN_BYTES * type_sizes[node_type])
                if kind is int and not -_EXACT <= value <= _EXACT:  # a float would not hold it exactly
                    inexact.add(key)
                else:
                    column[rank] = value
                    filled[key] += 1
            else:
                continue
            if key in lost:
                continue
            buckets = kept.get(key)
            if buckets is None:
                buckets = kept[key] = {}
            bucket = buckets.get(value)
            if bucket is None:
                if len(buckets) >= limit or value != value:  # too many values, or NaN (no bucket is its own)
                    lost.add(key)
                    del kept[key]
                    continue
                bucket = buckets[value] = []
            bucket.append(position)
    # None for a pair that holds numbers but gets no column: its nodes are tested as they are
    # (a pair absent holds no number at all: no comparison with a number holds for its nodes)
    kept_columns = {
        key: column if key not in inexact and filled[key] >= COLUMN_SHARE * type_sizes[key[0]] else None
        for key, column in columns.items()
    }
    return packed, found, numbers, kept_columns


COLUMN_SHARE = 0.5
"""A number column costs 8 bytes for every node of its type: it is kept for an attribute that is
a number on at least this share of them (a timestamp, a score, a confidence: what a filter such
as ``where(confidence >= 0.5)`` after a walk reads without decoding a payload)."""

_NAN_BYTES = array("d", [float("nan")]).tobytes()
_EXACT = 2**53  # every int up to this size is a float exactly


_NUMBER_TESTS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq, "==": operator.eq}


class NumberIndex:
    """A number index kept in a stored image: for one node type and attribute, each number
    (int or float, not bool; equal numbers share one) → the ascending positions of the nodes
    whose attribute is that number. :meth:`positions` answers a comparison with a number as
    a union of buckets, remembered (the index is dropped with the graph's image indexes at the
    first change to a node).

    >>> index = NumberIndex({1: [0, 3], 4: [1], 5.0: [2]})
    >>> sorted(index.positions(">=", 4)), sorted(index.positions("=", 5)), sorted(index.positions("<", 1.5))
    ([1, 2], [2], [0, 3])
    """

    __slots__ = ("buckets", "_memo")

    def __init__(self, buckets: Mapping[Any, Iterable[int]]):
        self.buckets = buckets
        self._memo: dict[tuple[str, Any], frozenset[int]] = {}

    def positions(self, op: str, number: int | float) -> frozenset[int]:
        """The positions of the nodes whose number ``op`` ``number`` holds (``op``: ``<``,
        ``<=``, ``>``, ``>=``, ``=`` or ``==``; ``number`` an int or a float, never a bool)."""
        if number.__class__ is not int and number.__class__ is not float:
            raise TypeError(f"a number index compares with numbers, not {number!r}")
        key = (op, number)
        found = self._memo.get(key)
        if found is None:
            holds = _NUMBER_TESTS[op]
            found = frozenset().union(*(where for value, where in self.buckets.items() if holds(value, number)))
            self._memo[key] = found
        return found


class NumberColumns:
    """The number columns kept in a stored image (:func:`stored_value_indexes`): for some
    (node type, attribute) pairs, each node's number by its rank among the nodes of its type,
    NaN where it holds none. ``kinds[p]`` is node ``p``'s type as a position in the image's
    type names (its type codes), ``rank[p]`` its rank among the nodes of its type, and
    ``by_kind[attribute][kinds[p]]`` the column of the attribute for that type: all NaN for a
    type none of whose nodes holds a number there, None for a type that holds numbers there
    but has no column (its nodes are tested on their attributes). An attribute no type holds a
    number in is not in ``by_kind``. A comparison of the attribute with a number reads
    ``by_kind[attribute][kinds[p]][rank[p]]``: NaN compares false with every number, and
    unequal, as an attribute that is not a number does (an int is kept only where a float holds
    it exactly: the comparisons are the int's). ``columns``: (type, attribute) → its column,
    or None; ``sizes``: each type's count of nodes, by code.

    >>> from array import array
    >>> columns = NumberColumns(array("i", [0, 1, 0, 2]), ["fact", "goal", "action"], array("i", [0, 0, 1, 0]),
    ...                         {("fact", "confidence"): array("d", [0.5, float("nan")]), ("action", "confidence"): None}, [2, 1, 1])
    >>> confidence = columns.by_kind["confidence"]
    >>> [confidence[columns.kinds[p]][columns.rank[p]] >= 0.5 for p in range(3)], confidence[2]
    ([True, False, False], None)
    >>> "created" in columns.by_kind
    False
    """

    __slots__ = ("kinds", "rank", "by_kind")

    def __init__(self, kinds, type_names, rank, columns: dict[tuple[str, str], array | None], sizes: list[int]):
        self.kinds, self.rank = kinds, rank
        names = list(type_names)
        by_kind: dict[str, list] = {}
        no_numbers = None  # one all-NaN column for the types that hold no number there
        for (node_type, attribute), column in columns.items():
            found = by_kind.get(attribute)
            if found is None:
                if no_numbers is None:
                    no_numbers = array("d", _NAN_BYTES) * max(sizes, default=0)
                found = by_kind[attribute] = [no_numbers] * len(names)
            found[names.index(node_type)] = column
        self.by_kind = by_kind


def compact_ids(ids: Iterable[str]) -> list[str]:
    """Fresh copies of the strings ``ids``, made in one go so that they sit side by side in
    memory in that order (equal to the originals, not the same objects).

    A loader's ids come out of a parser one record at a time, each between its record's other
    values; every query step reads the id objects it looks up and passes on (their hash, their
    reference count), so a step over thousands of ids made that way pays a cache miss for
    most of them. Made in creation order, the ids of a subtree (made together) are close.

    >>> old = ["g1", "a2", "né3"]
    >>> new = compact_ids(old)
    >>> new == old, [a is b for a, b in zip(new, old)], compact_ids([]), compact_ids(["a\\x00b", "c"]), compact_ids([b"x"])
    (True, [False, False, False], [], ['a\\x00b', 'c'], [b'x'])
    """
    ids = ids if isinstance(ids, (list, tuple)) else list(ids)
    if not ids:
        return []
    # One joined text cut at a separator: the pieces are new strings, allocated one after
    # another in C. An id holding the separator would make more pieces: then copied one by one.
    try:
        made = "\x00".join(ids).split("\x00")
    except TypeError:  # not all strings (a damaged row): kept as they are, for the caller to refuse
        return list(ids)
    if len(made) != len(ids):
        made = [(item + "\x00")[:-1] for item in ids]
    return made


def _flat_or_list(value: Any) -> bool:
    kind = value.__class__
    if kind is tuple:
        return all(map(_flat_or_list, value))
    return kind is not FrozenDict and kind is not dict


def decode_payloads(payloads: Iterable["Node"]) -> None:
    """Decode at once the attributes of those ``payloads`` still kept as a stored image's
    ``marshal`` bytes: what reading each one's ``attrs`` would do, without a Python call and a
    caught ``AttributeError`` per payload (a scan about to read thousands of them calls it).
    Payloads decoded already, or kept as JSON text, are left to be read as usual.

    >>> node = Node("g", "goal", freeze({"status": "done"}), 1)
    >>> lazy = lazy_nodes(["g"], ["goal"], [packed_attrs(node)], [1])
    >>> decode_payloads(lazy)
    >>> lazy[0]._raw is None, lazy[0].attrs
    (True, {'status': 'done'})
    """
    raw_of = Node._raw.__get__
    pending = [p for p in payloads if p.__class__ is _LazyNode and raw_of(p).__class__ is bytes]
    if not pending:
        return
    try:
        values = list(map(marshal.loads, map(raw_of, pending)))
    except (TypeError, ValueError, EOFError, RecursionError):
        return  # each is decoded (and a damaged one refused) when read
    if not all(value.__class__ is dict for value in values):
        return
    deque(map(Node.attrs.__set__, pending, map(FrozenDict, values)), 0)  # attrs first, as __getattr__ does
    deque(map(Node._raw.__set__, pending, repeat(None)), 0)
    deque(map(object.__setattr__, pending, repeat("__class__"), repeat(Node)), 0)  # plain payloads now


class _LazyAttrs:
    """What :func:`lazy_nodes` / :func:`lazy_edges` make while a payload's ``attrs`` are still
    kept undecoded (a subclass of :class:`Node` or :class:`Edge`, no slot of its own): the
    first read of ``attrs`` decodes them, sets the slot and makes the object a plain ``Node``
    or ``Edge`` (``__class__`` set: the same slots). Only these undecoded payloads have a
    ``__getattr__``: on the plain classes every field is a plain slot read (a class with a
    ``__getattr__`` has every attribute read go through it, and Python does not specialise
    them: 4x slower, on every ``node.id`` and ``edge.source`` of every commit and query).
    Comparing, hashing or printing one decodes it first, so it equals the plain payload."""

    __slots__ = ()
    _plain: type  # the class it becomes once decoded

    def __getattr__(self, name: str) -> Any:
        if name != "attrs":
            raise AttributeError(name)
        raw = object.__getattribute__(self, "_raw")
        if raw is None:  # another thread decoded it meanwhile (attrs is set before _raw is cleared)
            return object.__getattribute__(self, "attrs")
        value = _decoded_attrs(raw, self)
        object.__setattr__(self, "attrs", value)
        plain = self._plain
        object.__setattr__(self, "_raw", None)
        object.__setattr__(self, "__class__", plain)
        return value

    def _plain_self(self) -> type:
        """Decode (when not yet) and make this a plain payload; returns its class."""
        plain = getattr(self.__class__, "_plain", self.__class__)  # plain already: decoded by another thread
        self.attrs  # noqa: B018 (decodes)
        if self.__class__ is not plain:  # decoded by another thread, not made plain yet
            object.__setattr__(self, "__class__", plain)
        return plain

    def __eq__(self, other: Any) -> Any:
        if isinstance(other, _LazyAttrs):
            other._plain_self()
        return self._plain_self().__eq__(self, other)

    def __ne__(self, other: Any) -> Any:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return self._plain_self().__hash__(self)

    def __repr__(self) -> str:
        return self._plain_self().__repr__(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._plain_self()
        return self.__reduce_ex__(protocol)  # the plain class's, now


@attrs.frozen(slots=True, init=False)
class Node:
    """A node payload. ``seq`` is its creation number (the tie-breaker for "in order")."""

    id: str
    type: str
    attrs: FrozenDict
    seq: int
    _raw: Any = attrs.field(default=None, init=False, eq=False, hash=False, repr=False)

    def __init__(self, id: str, type: str, attrs: FrozenDict, seq: int) -> None:
        # attrs' own __init__ for a frozen class calls object.__setattr__ per field; the slots'
        # setters directly cost a quarter less (a commit makes a dozen payloads, see _SET_NODE)
        set_id, set_type, set_attrs, set_seq, set_raw = _SET_NODE
        set_id(self, id)
        set_type(self, type)
        set_attrs(self, attrs)
        set_seq(self, seq)
        set_raw(self, None)

    def _name(self) -> str:
        return f"node {self.id!r}"

    def get(self, name: str) -> Any:
        """An attribute by name; ``id`` and ``type`` are attributes like any other."""
        if name == "id":
            return self.id
        if name == "type":
            return self.type
        return self.attrs.get(name)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"id": self.id, "type": self.type}
        doc.update(thaw(self.attrs))
        return doc

    def attrs_text(self) -> str:
        """The attributes as compact JSON text (the kept text itself while not decoded).

        >>> Node("g", "goal", freeze({"status": "done"}), 1).attrs_text()
        '{"status":"done"}'
        """
        raw = self._raw
        if raw.__class__ is str:
            return raw
        return _json_text(self.attrs)


@attrs.frozen(slots=True, init=False)
class Edge:
    """An edge payload; ``(source, target, type)`` identifies it."""

    source: str
    target: str
    type: str
    attrs: FrozenDict
    seq: int
    _raw: Any = attrs.field(default=None, init=False, eq=False, hash=False, repr=False)

    def __init__(self, source: str, target: str, type: str, attrs: FrozenDict, seq: int) -> None:
        set_source, set_target, set_type, set_attrs, set_seq, set_raw = _SET_EDGE  # as Node's
        set_source(self, source)
        set_target(self, target)
        set_type(self, type)
        set_attrs(self, attrs)
        set_seq(self, seq)
        set_raw(self, None)

    def _name(self) -> str:
        return f"edge {self.source} -{self.type}-> {self.target}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.type)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"from": self.source, "to": self.target, "type": self.type}
        doc.update(thaw(self.attrs))
        return doc

    def attrs_text(self) -> str:
        """The attributes as compact JSON text (see :meth:`Node.attrs_text`)."""
        raw = self._raw
        if raw.__class__ is str:
            return raw
        return _json_text(self.attrs)


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The setters of an attrs slotted class's fields (each slot's member descriptor
    ``__set__``), in the order of :func:`attrs.fields`: what a frozen class's own ``__init__``
    calls to set its fields without attrs' ``object.__setattr__`` per field (a quarter less a
    field; payloads, changes, commits, reports and ops are made on every commit).

    >>> [setter.__qualname__ for setter in slot_setters(Edge)][:2]
    ['member_descriptor.__set__', 'member_descriptor.__set__']
    >>> len(slot_setters(Node)) == len(attrs.fields(Node))
    True
    """
    return tuple(getattr(cls, field.name).__set__ for field in attrs.fields(cls))


_SET_NODE = slot_setters(Node)  # id, type, attrs, seq, _raw
_SET_EDGE = slot_setters(Edge)  # source, target, type, attrs, seq, _raw


class _LazyNode(_LazyAttrs, Node):
    """A :class:`Node` whose attributes are not decoded yet (see :class:`_LazyAttrs`)."""

    __slots__ = ()
    _plain = Node


class _LazyEdge(_LazyAttrs, Edge):
    """An :class:`Edge` whose attributes are not decoded yet (see :class:`_LazyAttrs`)."""

    __slots__ = ()
    _plain = Edge


_LAZY = {Node: _LazyNode, Edge: _LazyEdge}


def _fill(cls: type, count: int, columns: dict[str, list], raws: list) -> list:
    """``count`` new payloads of ``cls`` with their slots set from ``columns`` (one list per
    field), without a Python call per payload: ``attrs`` stays unset (decoded on first read)
    where ``raws`` holds a text (a payload of the lazy subclass, until then), and is the empty
    map where it holds None (a plain payload)."""
    lazy = _LAZY[cls]
    objects = list(map(object.__new__, [cls if raw is None else lazy for raw in raws]))
    for name, column in columns.items():
        deque(map(getattr(cls, name).__set__, objects, column), 0)
    deque(map(cls._raw.__set__, objects, raws), 0)
    empty = [raw is None for raw in raws]
    deque(map(cls.attrs.__set__, compress(objects, empty), repeat(_EMPTY)), 0)
    return objects


def lazy_nodes(ids: list[str], types: list[str], raws: list[str | None], seqs: list[int]) -> list[Node]:
    """Node payloads made in bulk from columns, their attributes kept as the JSON texts
    ``raws`` (None: no attributes) and decoded when first read. The texts must be what
    hgm wrote (a checksum matched): a text that is not a JSON object is a ``StoreError``
    when it is read.

    >>> nodes = lazy_nodes(["g", "a"], ["goal", "action"], ['{"status":"done"}', None], [1, 2])
    >>> nodes[0].attrs["status"], nodes[1].attrs, nodes[0] == Node("g", "goal", freeze({"status": "done"}), 1)
    ('done', {}, True)
    """
    return _fill(Node, len(ids), {"id": ids, "type": types, "seq": seqs}, raws)


def lazy_edges(sources: list[str], targets: list[str], types: list[str], raws: list[str | None], seqs: list[int]) -> list[Edge]:
    """Edge payloads made in bulk from columns (see :func:`lazy_nodes`).

    >>> [e.attrs for e in lazy_edges(["g"], ["a"], ["parent_of"], ['{"order":0}'], [1])]
    [{'order': 0}]
    """
    return _fill(Edge, len(sources), {"source": sources, "target": targets, "type": types, "seq": seqs}, raws)


def edge_order_key(edge: Edge) -> tuple:
    """Edge order (spec §1): numeric ``order`` first, ascending; then the rest; then creation."""
    order = edge.attrs.get("order")
    if isinstance(order, (int, float)) and not isinstance(order, bool):
        return (0, order, edge.seq)
    return (1, 0, edge.seq)


class Adjacency:
    """One node's edges in one direction, in edge order: ``pairs`` of (edge type, other id),
    and ``by_type`` mapping each edge type to the other ids."""

    __slots__ = ("pairs", "by_type", "typed")

    def __init__(self, edges: list[Edge], outgoing: bool):
        edges.sort(key=edge_order_key)
        if outgoing:
            self.pairs = tuple((e.type, e.target) for e in edges)
        else:
            self.pairs = tuple((e.type, e.source) for e in edges)
        by_type: dict[str, list[str]] = {}
        for edge_type, other in self.pairs:
            by_type.setdefault(edge_type, []).append(other)
        self.by_type = {k: tuple(v) for k, v in by_type.items()}
        # (edge type, node type) -> the other ids of that node type, filled by of_type.
        self.typed: dict[tuple[str, str], tuple[str, ...]] = {}

    def of_type(self, edge_type: str, node_type: str, nodes: Mapping[str, "Node"]) -> tuple[str, ...]:
        """The other ids over ``edge_type`` whose node is a ``node_type`` (``subgoals``:
        goal children), remembered: node types never change, and an adjacency is replaced
        whenever its edges change (a node deleted and made again has lost its edges).

        >>> a = Adjacency([Edge("g", "s", "parent_of", EMPTY_ATTRS, 1), Edge("g", "a", "parent_of", EMPTY_ATTRS, 2)], True)
        >>> a.of_type("parent_of", "goal", {"s": Node("s", "goal", EMPTY_ATTRS, 2), "a": Node("a", "action", EMPTY_ATTRS, 3)})
        ('s',)
        """
        key = (edge_type, node_type)
        found = self.typed.get(key)
        if found is None:
            found = self.typed[key] = tuple(o for o in self.by_type.get(edge_type, ()) if nodes[o].type == node_type)
        return found


NO_ADJACENCY = Adjacency([], True)


def _adjacency(pairs: tuple, by_type: dict[str, tuple[str, ...]]) -> Adjacency:
    adjacency = Adjacency.__new__(Adjacency)
    adjacency.pairs, adjacency.by_type, adjacency.typed = pairs, by_type, {}
    return adjacency


def _pairs_adjacency(pairs: tuple) -> Adjacency:
    by_type: dict[str, list[str]] = {}
    for edge_type, other in pairs:
        group = by_type.get(edge_type)
        if group is None:
            by_type[edge_type] = [other]
        else:
            group.append(other)
    return _adjacency(pairs, {k: tuple(v) for k, v in by_type.items()})


def _nothing_at(p: int) -> tuple[str, ...]:
    return ()


class EdgeColumns:
    """The edges of a graph as columns, in *out order* (by source position, then edge
    order): each edge's source and target as positions in ``ids`` (the node ids in creation
    order), its type as a position in ``type_names``, its creation number and its attribute
    text (None: none); ``out_start[p]:out_start[p + 1]`` are node ``p``'s outgoing edges, and
    ``in_start``, ``in_other``, ``in_type`` the incoming ones, in edge order. What a stored
    image holds: a query reads adjacency straight from it, and only a change to the edges (or a
    read of edge payloads) makes the 165k payloads of a 100k-node memory.

    >>> nodes = lazy_nodes(["g", "b", "a"], ["goal"] * 3, [None] * 3, [1, 2, 3])
    >>> edges = lazy_edges(["g", "g"], ["a", "b"], ["parent_of"] * 2, ['{"order":1}', '{"order":0}'], [1, 2])
    >>> columns = EdgeColumns.of_edges(nodes, edges)
    >>> columns.adjacency(0, True).pairs, columns.adjacency(1, False).pairs
    ((('parent_of', 'b'), ('parent_of', 'a')), (('parent_of', 'g'),))
    """

    __slots__ = (
        "ids", "type_names", "source", "target", "type", "seq", "raw", "out_start", "in_start", "in_other", "in_type", "last_seq",
        "node_types", "node_type_names",
    )

    def __init__(self, ids, type_names, source, target, type_, seq, raw, out_start, in_start, in_other, in_type, last_seq,
                 node_types=None, node_type_names=()):
        self.ids, self.type_names = ids, type_names
        self.source, self.target, self.type, self.seq, self.raw = source, target, type_, seq, raw
        self.out_start, self.in_start, self.in_other, self.in_type = out_start, in_start, in_other, in_type
        self.last_seq = last_seq
        # each node's type as a position in node_type_names (None: not known, typed hops
        # then read the adjacency)
        self.node_types, self.node_type_names = node_types, list(node_type_names)

    @classmethod
    def of_edges(cls, nodes: list[Node], edges: list[Edge]) -> "EdgeColumns":
        """The columns of ``edges`` between ``nodes`` (in creation order)."""
        from array import array

        position = dict(zip(map(_ID, nodes), range(len(nodes))))
        names: dict[str, int] = {}
        for edge_type in map(_TYPE, edges):
            if edge_type not in names:
                names[edge_type] = len(names)
        # Each edge's ends, type and edge-order key once; the two orders sort tuples in C (the
        # edge's place last: no two keys are equal, and ties would keep the input order).
        sources = list(map(position.__getitem__, map(_SOURCE, edges)))
        targets = list(map(position.__getitem__, map(_TARGET, edges)))
        types = list(map(names.__getitem__, map(_TYPE, edges)))
        keys = list(map(edge_order_key, edges))
        out = [j for _, _, j in sorted(zip(sources, keys, range(len(edges))))]
        incoming = [j for _, _, j in sorted(zip(targets, keys, range(len(edges))))]
        count = len(nodes)

        def starts(ends: list[int]) -> array:
            counted = Counter(ends)
            return array("i", accumulate(map(counted.get, range(count), repeat(0)), initial=0))

        out_sources = list(map(sources.__getitem__, out))
        type_codes: dict[str, int] = {}
        node_types = array("i", (type_codes.setdefault(node.type, len(type_codes)) for node in nodes))
        return cls(
            list(map(_ID, nodes)),
            list(names),
            array("i", out_sources),
            array("i", map(targets.__getitem__, out)),
            array("i", map(types.__getitem__, out)),
            array("q", map(_SEQ_OF, map(edges.__getitem__, out))),
            list(map(packed_attrs, map(edges.__getitem__, out))),
            starts(out_sources),
            starts(targets),
            array("i", map(sources.__getitem__, incoming)),
            array("i", map(types.__getitem__, incoming)),
            max(map(_SEQ_OF, edges), default=0),
            node_types,
            list(type_codes),
        )

    @property
    def edge_count(self) -> int:
        return len(self.seq)

    def adjacency(self, p: int, outgoing: bool) -> Adjacency:
        """Node ``p``'s edges in one direction (a node added since has none here)."""
        starts = self.out_start if outgoing else self.in_start
        if p + 1 >= len(starts):
            return NO_ADJACENCY
        a, b = starts[p], starts[p + 1]
        if a == b:
            return NO_ADJACENCY
        others, types = (self.target, self.type) if outgoing else (self.in_other, self.in_type)
        names, ids = self.type_names, self.ids
        if b - a == 1:  # most nodes have one edge each way: no grouping needed
            edge_type, other = names[types[a]], ids[others[a]]
            return _adjacency(((edge_type, other),), {edge_type: (other,)})
        codes = types[a:b]
        found = tuple(map(ids.__getitem__, others[a:b]))
        first = codes[0]
        if codes.count(first) == len(codes):  # one edge type (a goal's children, a hub's facts)
            edge_type = names[first]
            return _adjacency(tuple(zip(repeat(edge_type), found)), {edge_type: found})
        return _pairs_adjacency(tuple(zip(map(names.__getitem__, codes), found)))

    def finder(self, edge_type: str, node_type: str | None, outgoing: bool) -> Callable[[int], tuple[str, ...]] | None:
        """``find(p)``: the ids at the other end of node ``p``'s edges of ``edge_type`` in one
        direction, of ``node_type`` only unless it is None, in edge order — what
        ``adjacency(p, outgoing)`` gives for them (``by_type``, ``of_type``), read straight
        from the columns: no adjacency made (a first query reading thousands of nodes' hops
        pays ~1 µs a node instead of ~3). A node added since has none here. None when
        ``node_type`` is given but the columns keep no node types.

        >>> nodes = lazy_nodes(["g", "s", "a"], ["goal", "goal", "action"], [None] * 3, [1, 2, 3])
        >>> edges = lazy_edges(["g", "g"], ["s", "a"], ["parent_of"] * 2, [None, None], [1, 2])
        >>> columns = EdgeColumns.of_edges(nodes, edges)
        >>> columns.finder("parent_of", None, True)(0), columns.finder("parent_of", "action", True)(0)
        (('s', 'a'), ('a',))
        >>> columns.finder("parent_of", "goal", False)(2), columns.finder("produces", None, True)(0)
        (('g',), ())
        >>> EdgeColumns(*(getattr(columns, name) for name in EdgeColumns.__slots__[:12])).finder("parent_of", "goal", True) is None
        True
        """
        if node_type is not None and self.node_types is None:
            return None  # no node types kept: the caller reads the adjacency
        if edge_type not in self.type_names or (node_type is not None and node_type not in self.node_type_names):
            return _nothing_at
        code = self.type_names.index(edge_type)
        ids = self.ids
        starts = self.out_start if outgoing else self.in_start
        others, types = (self.target, self.type) if outgoing else (self.in_other, self.in_type)
        limit = len(starts) - 1
        kind = None if node_type is None else self.node_type_names.index(node_type)
        kinds = self.node_types

        def find(p: int) -> tuple[str, ...]:
            if p >= limit:
                return ()
            a, b = starts[p], starts[p + 1]
            if a == b:
                return ()
            if b - a == 1:  # most nodes have one edge each way
                if types[a] != code:
                    return ()
                q = others[a]
                if kind is not None and kinds[q] != kind:
                    return ()
                return (ids[q],)
            if b - a <= 8:  # a few edges: one pass over them beats slicing the columns
                if kind is None:
                    return tuple([ids[others[j]] for j in range(a, b) if types[j] == code])
                return tuple([ids[q] for j in range(a, b) if types[j] == code and kinds[q := others[j]] == kind])
            found = others[a:b]
            codes = types[a:b]
            if codes.count(code) != b - a:
                found = list(compress(found, map(code.__eq__, codes)))
            if kind is not None:
                found = compress(found, map(kind.__eq__, map(kinds.__getitem__, found)))
            return tuple(map(ids.__getitem__, found))

        return find

    def targets_of(self, edge_type: str) -> set[str]:
        """The ids at the end of an edge of ``edge_type``."""
        if edge_type not in self.type_names:
            return set()
        code = self.type_names.index(edge_type)
        return set(map(self.ids.__getitem__, compress(self.target, map(code.__eq__, self.type))))

    def materialize(self, graph: rx.PyDiGraph) -> None:
        """Add every edge, as a payload, to ``graph`` (whose node ``p`` is ``ids[p]``)."""
        at = self.ids.__getitem__
        edges = lazy_edges(
            list(map(at, self.source)), list(map(at, self.target)), list(map(self.type_names.__getitem__, self.type)), self.raw, list(self.seq)
        )
        graph.add_edges_from(list(zip(self.source, self.target, edges)))

