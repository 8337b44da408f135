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
values). One checksum covers the blob, so opening checks one CRC-32 instead of
one per row, and builds no attribute map it does not need. The node type column (codes) is
kept as it is read: hops to one node type read it (``EdgeColumns.finder``).

The blob is ``marshal`` data behind a fixed header: the format (:data:`IMAGE_FORMAT`), this
Python's marshal version and ``major.minor`` (marshal's format may differ between Pythons), the
``t`` the image reflects, the store's count of edits made outside hgm when it was written (see
``SQLiteStore``), the node and edge counts and the CRC-32 of the rest. :func:`decode_image`
refuses anything that does not match with :class:`ImageMismatch`, saying why; the store then
reads the state rows as before (a stale image is never used: it would be wrong answers).

>>> from hgm_engine.model import MemoryGraph
>>> g = MemoryGraph.from_records([("g", "goal", {"status": "active"}), ("a", "action", {})], [("g", "a", "parent_of", {"order": 0})])
>>> data = encode_image(g, t=7, edits=0)
>>> image = decode_image(data)
>>> image.t, image.graph.node("g").attrs["status"], image.graph.out_ids("g", "parent_of")
(7, 'active', ('a',))
>>> decode_image(data[:-1])
Traceback (most recent call last):
...
hgm_engine.store.image.ImageMismatch: the image does not match its checksum
"""

from __future__ import annotations

import marshal
from array import array
from itertools import compress
from operator import attrgetter
import struct
import sys
import zlib
from typing import NamedTuple

from hgm_engine.model import EdgeColumns, MemoryGraph, NumberIndex, lazy_nodes, stored_value_indexes

__all__ = ["IMAGE_FORMAT", "ImageMismatch", "Image", "encode_image", "decode_image", "image_header"]

IMAGE_FORMAT = 3
"""The layout of the columns; an image of another layout is not read (the rows are, and the open
writes an image of this layout). 3: the number indexes were added after the roots."""

_ID, _TYPE, _SEQ = attrgetter("id"), attrgetter("type"), attrgetter("seq")
_MAGIC = b"hgm-image\x00"
# magic, format, marshal version, python major, minor, t, edits, nodes, edges, crc of the rest
_HEADER = struct.Struct("<10sHHBBqqqqI")


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
    packed, values, numbers = stored_value_indexes(nodes)
    position = dict(zip(ids, range(len(ids))))
    roots = array("i", map(position.__getitem__, graph.roots()))
    columns = (
        ids,
        {name: group.tobytes() for name, group in groups.items()},
        array("i", codes).tobytes(),
        list(map(_SEQ, nodes)),
        packed,
        edges.type_names,
        *(column.tobytes() for column in (edges.source, edges.target, edges.type, edges.seq, edges.out_start, edges.in_start, edges.in_other, edges.in_type)),
        edges.raw,
        edges.last_seq,
        {f"{node_type}\x1f{attribute}": {value: array("i", where).tobytes() for value, where in buckets.items()} for (node_type, attribute), buckets in values.items()},
        roots.tobytes(),
        {f"{node_type}\x1f{attribute}": {value: array("i", where).tobytes() for value, where in buckets.items()} for (node_type, attribute), buckets in numbers.items()},
    )
    body = marshal.dumps(columns)
    major, minor = _python()
    fields = (_MAGIC, IMAGE_FORMAT, marshal.version, major, minor, t, edits, len(nodes), edges.edge_count)
    unsigned = _HEADER.pack(*fields, 0)[: _HEADER.size - 4]
    return _HEADER.pack(*fields, zlib.crc32(body, zlib.crc32(unsigned))) + body


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


def decode_image(data: bytes) -> Image:
    """The graph an image holds; :class:`ImageMismatch` when the header, the checksum or the
    columns' shapes do not match (never a wrong graph)."""
    t, edits = image_header(data)
    *_, node_count, edge_count, crc = _HEADER.unpack_from(data)
    body = memoryview(data)[_HEADER.size :]
    if zlib.crc32(body, zlib.crc32(memoryview(data)[: _HEADER.size - 4])) != crc:
        raise ImageMismatch("the image does not match its checksum")
    try:
        columns = marshal.loads(body)
        ids, group_data, node_types, node_seqs, node_raws, edge_type_names, *arrays, edge_raws, last_seq, value_data, root_data, number_data = columns
        values = {tuple(key.split("\x1f", 1)): {value: _array("i", where) for value, where in buckets.items()} for key, buckets in value_data.items()}
        numbers = {tuple(key.split("\x1f", 1)): NumberIndex({value: _array("i", where) for value, where in buckets.items()}) for key, buckets in number_data.items()}
        groups = {name: _array("i", data) for name, data in group_data.items()}
        type_codes = _array("i", node_types)
        node_types = list(map(list(groups).__getitem__, type_codes))  # one string per type name
        source, target, types, seqs, out_start, in_start, in_other, in_type = (
            _array(kind, data) for kind, data in zip("iiiqiiii", arrays)
        )
        if not (len(ids) == len(node_types) == len(node_seqs) == len(node_raws) == node_count):
            raise ImageMismatch("the image's node columns differ in length")
        if not (len(source) == len(target) == len(types) == len(seqs) == len(edge_raws) == len(in_other) == len(in_type) == edge_count):
            raise ImageMismatch("the image's edge columns differ in length")
        if len(out_start) != node_count + 1 or len(in_start) != node_count + 1:
            raise ImageMismatch("the image's adjacency offsets do not fit its nodes")
        if sum(map(len, groups.values())) != node_count:
            raise ImageMismatch("the image's node types do not cover its nodes")
        nodes = lazy_nodes(ids, node_types, node_raws, node_seqs)
        edges = EdgeColumns(ids, edge_type_names, source, target, types, seqs, edge_raws, out_start, in_start, in_other, in_type, last_seq, type_codes, groups)
        graph = MemoryGraph.from_columns(
            nodes, groups, edges, values, tuple(map(ids.__getitem__, _array("i", root_data))), max(node_seqs, default=0), node_seqs, numbers
        )
    except ImageMismatch:
        raise
    except Exception as exc:  # columns of another shape, whatever the error: never a wrong graph, never a crash
        raise ImageMismatch(f"the image's columns cannot be read ({type(exc).__name__}: {exc})") from None
    return Image(graph, t, edits)
