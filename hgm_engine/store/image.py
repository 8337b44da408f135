"""A stored image of a built graph: what reopening a memory reads instead of every state row.

Opening a memory from its state rows decodes, checks and builds every node and edge (1.5 s of
CPU at 100,000 nodes). An *image* is the graph as columns in one blob: node ids, types and
creation numbers; each edge's ends as positions in the node column, its type and creation
number; every payload's attributes as ``marshal`` bytes (decoded only when a query first
reads them, several times faster than JSON); the root goals; the value indexes a query such as
``where(status = 'failed')`` starts from (the positions of the nodes of each string value, for
each type and attribute with few distinct values); and, since format 3, the number indexes that
answer a comparison such as ``priority >= 4`` after it (the positions of the nodes of each
number, int or float but never bool, for each type and attribute whose numbers take few
values), and, since format 5, the number columns a filter such as ``confidence >= 0.5`` after a
walk reads (each node's number, for each type and attribute that is a number on at least half
of the type's nodes, however many values it takes). One checksum covers the blob, so opening checks one CRC-32 instead of
one per row, and builds no attribute map it does not need. The node type column (codes) is
kept as it is read: hops to one node type read it (``EdgeColumns.finder``).

The blob is a fixed header — the format (:data:`IMAGE_FORMAT`), this Python's marshal version
and ``major.minor`` (marshal's format may differ between Pythons), the ``t`` the image reflects,
the store's count of edits made outside hgm when it was written (see ``SQLiteStore``), the node
and edge counts and a CRC-32 — then a directory of *sections* (each one's length and CRC-32;
the header's CRC covers the header and the directory), then the sections: the node columns and
indexes (``marshal``), each edge column (an array's bytes as they are), and the nodes'
attributes in chunks of :data:`NODES_PER_CHUNK` (``marshal``). Sections let a reader take the
blob a piece at a time (``SQLiteStore`` reads it through ``sqlite3.Blob``): each piece is
checked, decoded and dropped before the next is read, so opening never holds the whole blob
next to what it decodes (at 100k nodes 16 MB fewer pages touched, a fifth of the open's CPU was
the kernel's page faults). :func:`decode_image` refuses anything that does not match with
:class:`ImageMismatch`, saying why, before decoding a section that does not match its CRC; the
store then reads the state rows as before (a stale image is never used: it would be wrong
answers).

>>> from hgm_engine.model import MemoryGraph
>>> g = MemoryGraph.from_records([("g", "goal", {"status": "active"}), ("a", "action", {})], [("g", "a", "parent_of", {"order": 0})])
>>> data = encode_image(g, t=7, edits=0)
>>> image = decode_image(data)
>>> image.t, image.graph.node("g").attrs["status"], image.graph.out_ids("g", "parent_of")
(7, 'active', ('a',))
>>> decode_image(data[:-1])
Traceback (most recent call last):
...
hgm_engine.store.image.ImageMismatch: the image is truncated: its length does not match its directory
>>> decode_image(data[:-1] + b"?")
Traceback (most recent call last):
...
hgm_engine.store.image.ImageMismatch: the image does not match its checksum
"""

from __future__ import annotations

import marshal
from array import array
from itertools import compress, islice
from operator import attrgetter
import struct
import sys
import zlib
from typing import Any, NamedTuple

from hgm_engine.model import EdgeColumns, MemoryGraph, NumberColumns, NumberIndex, lazy_nodes, stored_value_indexes

__all__ = ["IMAGE_FORMAT", "NODES_PER_CHUNK", "ImageMismatch", "Image", "encode_image", "decode_image", "image_header"]

IMAGE_FORMAT = 5
"""The layout of the columns; an image of another layout is not read (the rows are, and the open
writes an image of this layout). 3: the number indexes were added after the roots. 4 (seventh
session): sections behind a directory, the edge columns as raw arrays, the attributes in
chunks, and consecutive node seqs kept as their first one. 5 (eighth session): the number
columns and each node's rank in its type after the number indexes."""

NODES_PER_CHUNK = 8192
"""Nodes per section of attributes: small enough that a reader reusing its buffers touches
little new memory (about 0.7 MB a chunk at 100k nodes), large enough that sections are few."""

_ID, _TYPE, _SEQ = attrgetter("id"), attrgetter("type"), attrgetter("seq")
_MAGIC = b"hgm-image\x00"
# magic, format, marshal version, python major, minor, t, edits, nodes, edges, crc of header + directory
_HEADER = struct.Struct("<10sHHBBqqqqI")
_COUNT = struct.Struct("<I")  # the directory: how many sections, then each one's _SECTION
_SECTION = struct.Struct("<QI")  # length, crc32
_EDGE_KINDS = "iiiqiiii"  # source, target, type, seq, out_start, in_start, in_other, in_type
_HEAD, _EDGES = 0, 1  # the sections: the node columns and indexes, the edge columns, the attributes
_CHUNKS = _EDGES + len(_EDGE_KINDS)


class ImageMismatch(Exception):
    """The image cannot be used; the message says why (the store logs it and reads the rows)."""


class Image(NamedTuple):
    """A decoded image: the graph, the ``t`` it reflects, the outside-edit count it was made at."""

    graph: MemoryGraph
    t: int
    edits: int


def _python() -> tuple[int, int]:
    return sys.version_info[0], sys.version_info[1]


def encode_image(graph: MemoryGraph, t: int, edits: int) -> bytes:
    """The image of ``graph`` at ``t`` (``edits``: the store's outside-edit count now).

    >>> encode_image(MemoryGraph(), 0, 0)[:9]
    b'hgm-image'
    """
    nodes = list(graph.nodes())
    ids, types = list(map(_ID, nodes)), list(map(_TYPE, nodes))
    code = {name: i for i, name in enumerate(dict.fromkeys(types))}  # type names, in order of first appearance
    codes = list(map(code.__getitem__, types))
    groups = {name: array("i", compress(range(len(nodes)), map(i.__eq__, codes))) for name, i in code.items()}
    edges = EdgeColumns.of_edges(nodes, graph.edges())
    packed, values, numbers, number_columns = stored_value_indexes(nodes)
    rank = array("i")
    if any(column is not None for column in number_columns.values()):  # each node's rank in its type: what a column is read by
        rank = array("i", bytes(4 * len(nodes)))
        for group in groups.values():
            for i, p in enumerate(group):
                rank[p] = i
    position = dict(zip(ids, range(len(ids))))
    roots = array("i", map(position.__getitem__, graph.roots()))
    seqs: list[int] | int = list(map(_SEQ, nodes))
    if seqs and seqs[-1] - seqs[0] == len(seqs) - 1 and all(map(int.__lt__, seqs, islice(seqs, 1, None))):
        seqs = seqs[0]  # consecutive (a memory loaded at once): the first one says them all
    head = (
        ids,
        {name: group.tobytes() for name, group in groups.items()},
        array("i", codes).tobytes(),
        seqs,
        edges.type_names,
        edges.raw,
        edges.last_seq,
        {f"{node_type}\x1f{attribute}": {value: array("i", where).tobytes() for value, where in buckets.items()} for (node_type, attribute), buckets in values.items()},
        roots.tobytes(),
        {f"{node_type}\x1f{attribute}": {value: array("i", where).tobytes() for value, where in buckets.items()} for (node_type, attribute), buckets in numbers.items()},
        rank.tobytes(),
        {f"{node_type}\x1f{attribute}": None if column is None else column.tobytes() for (node_type, attribute), column in number_columns.items()},
    )
    columns = (edges.source, edges.target, edges.type, edges.seq, edges.out_start, edges.in_start, edges.in_other, edges.in_type)
    for column, kind in zip(columns, _EDGE_KINDS):
        if column.typecode != kind:  # the reader takes each column's bytes as an array of this kind
            raise TypeError(f"an edge column of kind {column.typecode!r}, the image keeps {kind!r}")
    sections = [marshal.dumps(head), *(column.tobytes() for column in columns)]
    sections += [marshal.dumps(packed[i : i + NODES_PER_CHUNK]) for i in range(0, len(packed), NODES_PER_CHUNK)]
    major, minor = _python()
    return _framed((_MAGIC, IMAGE_FORMAT, marshal.version, major, minor, t, edits, len(nodes), edges.edge_count), sections)


def _framed(fields: tuple, sections: list[bytes]) -> bytes:
    """The header of ``fields`` (all but the CRC), the directory of ``sections``, the sections."""
    directory = _COUNT.pack(len(sections)) + b"".join(_SECTION.pack(len(part), zlib.crc32(part)) for part in sections)
    unsigned = _HEADER.pack(*fields, 0)[: _HEADER.size - 4]
    return b"".join((_HEADER.pack(*fields, zlib.crc32(directory, zlib.crc32(unsigned))), directory, *sections))


def _array(kind: str, data: bytes) -> array:
    found = array(kind)
    found.frombytes(data)
    return found


def image_header(data: bytes) -> tuple[int, int]:
    """``(t, edits)`` of an image, from its header alone (the image is checked by
    :func:`decode_image`); :class:`ImageMismatch` when it is not an image of this format.

    >>> from hgm_engine.model import MemoryGraph
    >>> image_header(encode_image(MemoryGraph(), 4, 2))
    (4, 2)
    """
    if type(data) is not bytes or len(data) < _HEADER.size:
        raise ImageMismatch("the image is too short to be one")
    magic, form, marshal_version, major, minor, t, edits, _, _, _ = _HEADER.unpack_from(data)
    if magic != _MAGIC:
        raise ImageMismatch("the blob is not an hgm image")
    if form != IMAGE_FORMAT:
        raise ImageMismatch(f"the image has format {form}, this hgm reads {IMAGE_FORMAT}")
    if (marshal_version, major, minor) != (marshal.version, *_python()):
        raise ImageMismatch(f"the image was written by Python {major}.{minor} (marshal {marshal_version}), this is {sys.version_info[0]}.{sys.version_info[1]}")
    return t, edits


class _Pieces:
    """What :func:`decode_image` reads an image from, a piece at a time: bytes (sliced, no
    copy), or a file-like object with ``read(n)`` and ``len()`` (an ``sqlite3.Blob``: each
    piece read when it is decoded, then dropped)."""

    __slots__ = ("size", "_take", "_data", "_at")

    def __init__(self, data: Any):
        if isinstance(data, (bytes, bytearray, memoryview)):
            self._data, self._at, self._take = memoryview(data), 0, self._slice
            self.size = len(self._data)
        elif hasattr(data, "read"):
            self._data, self._at, self._take = None, 0, data.read
            self.size = len(data)
        else:
            raise ImageMismatch("the image is too short to be one")  # None, a text: not an image

    def _slice(self, n: int) -> memoryview:
        at = self._at
        self._at = at + n
        return self._data[at : at + n]

    def take(self, n: int) -> Any:
        piece = self._take(n)
        if len(piece) != n:
            raise ImageMismatch("the image is too short to be one")
        return piece


def decode_image(data: Any) -> Image:
    """The graph an image holds (``data``: its bytes, or an ``sqlite3.Blob`` open on it, read a
    section at a time); :class:`ImageMismatch` when the header, a checksum or the columns'
    shapes do not match (never a wrong graph)."""
    pieces = _Pieces(data)
    if pieces.size < _HEADER.size:
        raise ImageMismatch("the image is too short to be one")
    header = bytes(pieces.take(_HEADER.size))
    t, edits = image_header(header)
    *_, node_count, edge_count, crc = _HEADER.unpack_from(header)
    count_data = pieces.take(_COUNT.size)
    (count,) = _COUNT.unpack(count_data)
    # The attributes' chunks: however many the writer made (their lengths add up to the nodes).
    chunks = count - _CHUNKS
    if not 0 <= chunks <= max(node_count, 0) or pieces.size < _HEADER.size + _COUNT.size + count * _SECTION.size:
        raise ImageMismatch("the image does not match its checksum")  # a damaged count: its CRC cannot be read
    entries = pieces.take(count * _SECTION.size)
    if zlib.crc32(entries, zlib.crc32(count_data, zlib.crc32(memoryview(header)[: _HEADER.size - 4]))) != crc:
        raise ImageMismatch("the image does not match its checksum")
    directory = list(_SECTION.iter_unpack(entries))
    expected_size = _HEADER.size + _COUNT.size + len(entries) + sum(length for length, _ in directory)
    if pieces.size != expected_size:
        raise ImageMismatch(f"the image is {'truncated' if pieces.size < expected_size else 'too long'}: its length does not match its directory")

    def section(i: int) -> Any:
        length, expected = directory[i]
        part = pieces.take(length)
        if zlib.crc32(part) != expected:
            raise ImageMismatch("the image does not match its checksum")
        return part

    try:
        (ids, group_data, node_types, node_seqs, edge_type_names, edge_raws, last_seq, value_data, root_data, number_data,
         rank_data, column_data) = marshal.loads(section(_HEAD))
        source, target, types, seqs, out_start, in_start, in_other, in_type = (
            _array(kind, section(_EDGES + i)) for i, kind in enumerate(_EDGE_KINDS)
        )
        node_raws: list = []
        for i in range(chunks):
            node_raws += marshal.loads(section(_CHUNKS + i))
        values = {tuple(key.split("\x1f", 1)): {value: _array("i", where) for value, where in buckets.items()} for key, buckets in value_data.items()}
        numbers = {tuple(key.split("\x1f", 1)): NumberIndex({value: _array("i", where) for value, where in buckets.items()}) for key, buckets in number_data.items()}
        groups = {name: _array("i", data) for name, data in group_data.items()}
        type_codes = _array("i", node_types)
        number_columns = None
        if column_data:
            columns = {tuple(key.split("\x1f", 1)): None if data is None else _array("d", data) for key, data in column_data.items()}
            if any(column is not None for column in columns.values()):  # (else every pair's nodes are tested)
                rank = _array("i", rank_data)
                if len(rank) != node_count or any(column is not None and len(column) != len(groups[key[0]]) for key, column in columns.items()):
                    raise ImageMismatch("the image's number columns do not fit its nodes")
                number_columns = NumberColumns(type_codes, groups, rank, columns, list(map(len, groups.values())))
        seq_base = None
        if node_seqs.__class__ is int:  # consecutive: the first one (a range, no list of them)
            seq_base, node_seqs = node_seqs, range(node_seqs, node_seqs + node_count)
        if not (len(ids) == len(type_codes) == len(node_seqs) == len(node_raws) == node_count):
            raise ImageMismatch("the image's node columns differ in length")
        if not (len(source) == len(target) == len(types) == len(seqs) == len(edge_raws) == len(in_other) == len(in_type) == edge_count):
            raise ImageMismatch("the image's edge columns differ in length")
        if len(out_start) != node_count + 1 or len(in_start) != node_count + 1:
            raise ImageMismatch("the image's adjacency offsets do not fit its nodes")
        if sum(map(len, groups.values())) != node_count:
            raise ImageMismatch("the image's node types do not cover its nodes")
        # The type names from their codes as the payloads are filled (one string per name).
        nodes = lazy_nodes(ids, map(list(groups).__getitem__, type_codes), node_raws, node_seqs)
        del node_raws  # the payloads hold them now
        edges = EdgeColumns(ids, edge_type_names, source, target, types, seqs, edge_raws, out_start, in_start, in_other, in_type, last_seq, type_codes, groups)
        graph = MemoryGraph.from_columns(
            nodes, groups, edges, values, tuple(map(ids.__getitem__, _array("i", root_data))),
            node_seqs[-1] if seq_base is not None and node_seqs else max(node_seqs, default=0), node_seqs, numbers,
            seq_base=seq_base, number_columns=number_columns,
        )
    except ImageMismatch:
        raise
    except Exception as exc:  # columns of another shape, whatever the error: never a wrong graph, never a crash
        raise ImageMismatch(f"the image's columns cannot be read ({type(exc).__name__}: {exc})") from None
    return Image(graph, t, edits)
