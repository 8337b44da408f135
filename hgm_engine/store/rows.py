"""The current state as stores keep it, one row per node and per edge, read back into a graph
with every row checked, so a damaged or hand-edited row is reported, naming it, rather than
crashing a query later.

>>> graph = build_state([("g", "goal", '{"status":"active"}', 1)], [], damaged=ValueError)
>>> graph.node("g").attrs["status"]
'active'
>>> build_state([("g", "goal", "[1]", 1)], [], damaged=ValueError)
Traceback (most recent call last):
...
ValueError: node 'g': its attributes are not a JSON object but list
"""

from __future__ import annotations

import json
from typing import Callable, Sequence

from hgm_engine.errors import HGMError
from hgm_engine.model import EMPTY_ATTRS, Edge, FrozenDict, MemoryGraph, Node, compact_ids, freeze, lazy_edges, lazy_nodes

__all__ = ["decode_attrs", "build_state", "node_name", "edge_name"]


def node_name(row: Sequence) -> str:
    """A node row ``(id, type, attrs, seq, ...)`` as messages name it.

    >>> node_name(("g", "goal", "{}", 1))
    "node 'g'"
    """
    return f"node {row[0]!r}"


def edge_name(row: Sequence) -> str:
    """An edge row ``(source, target, type, attrs, seq, ...)`` as messages name it.

    >>> edge_name(("a", "r", "produces", "{}", 2))
    'edge a -produces-> r'
    """
    return f"edge {row[0]} -{row[2]}-> {row[1]}"


def decode_attrs(texts: list[str]) -> list[FrozenDict]:
    """Frozen attribute maps for JSON object texts, decoded in one pass (one ``json.loads``
    over all of them costs less than a call per row; ``'{}'`` is not decoded at all).
    TypeError or ValueError when one is not a JSON object.

    >>> [dict(a) for a in decode_attrs(['{}', '{"z":1,"a":[2]}'])]
    [{}, {'z': 1, 'a': (2,)}]
    """
    full = [i for i, text in enumerate(texts) if text != "{}"]
    out: list[FrozenDict] = [EMPTY_ATTRS] * len(texts)
    # In chunks: the decoded dicts of one chunk are garbage once frozen, and the memory they
    # took is reused by the next chunk instead of adding to the peak of the whole load.
    for start in range(0, len(full), _CHUNK):
        part = full[start:start + _CHUNK]
        decoded = json.loads("[" + ",".join(texts[i] for i in part) + "]")
        if len(decoded) != len(part):  # a text such as '1, 2' adds items
            raise ValueError("an attribute text is not one JSON value")
        for i, value in zip(part, decoded):
            if value.__class__ is not dict:
                raise ValueError("attributes are not a JSON object")
            out[i] = freeze(value) if value else EMPTY_ATTRS
        del decoded
    return out


_CHUNK = 8192  # attribute texts decoded by one json.loads


def _first_undecodable(texts: list) -> tuple[int, str]:
    """The position of the first text that is not a JSON object, and why."""
    for position, text in enumerate(texts):
        try:
            value = json.loads(text)
        except (TypeError, ValueError, RecursionError) as exc:
            return position, f"its attributes are not a JSON object ({exc})"
        if value.__class__ is not dict:
            return position, f"its attributes are not a JSON object but {type(value).__name__}"
    return 0, "its attributes could not be read"


def build_state(
    node_rows: list, edge_rows: list, damaged: Callable[[str], HGMError | Exception], *, checked: bool = False
) -> MemoryGraph:
    """The graph of rows ``(id, type, attrs, seq, ...)`` and ``(source, target, type, attrs,
    seq, ...)`` in creation order (``attrs`` as JSON text; later columns are ignored). A row
    whose attributes are not a JSON object, a node twice, an edge twice or an edge to a node
    that is not there raises ``damaged(what)``.

    ``checked``: every row matched its checksum, so its attribute text is the JSON object hgm
    wrote; the texts are then kept and decoded when a query first reads them (``lazy_nodes``)
    instead of all at once here (most of the cost of reading the state, and most of the
    memory it takes: a decoded attribute map costs three to four times its text).

    >>> g = build_state([("g", "goal", '{"status":"active"}', 1)], [], damaged=ValueError, checked=True)
    >>> g.node("g").attrs["status"]
    'active'

    >>> build_state([("g", "goal", "{}", 1)], [("g", "x", "related_to", "{}", 1)], damaged=ValueError)
    Traceback (most recent call last):
    ...
    ValueError: edge g -related_to-> x points to the missing node 'x'
    """
    if checked:
        return _build_checked(node_rows, edge_rows, damaged)
    attrs_of: list[list[FrozenDict]] = []
    for rows, name, column in ((node_rows, node_name, 2), (edge_rows, edge_name, 3)):
        texts = [row[column] for row in rows]
        try:
            attrs_of.append(decode_attrs(texts))
        except (TypeError, ValueError, RecursionError):
            position, why = _first_undecodable(texts)
            raise damaged(f"{name(rows[position])}: {why}") from None
    # One string object per id and per type name: the driver hands out a fresh copy in every
    # row, and an edge's two ends and its type cost ~170 bytes an edge when each is its own.
    names = _names(node_rows)
    name = names.setdefault
    nodes = [Node(name(row[0], row[0]), name(row[1], row[1]), attrs, row[3]) for row, attrs in zip(node_rows, attrs_of[0])]
    edges = [
        Edge(name(row[0], row[0]), name(row[1], row[1]), name(row[2], row[2]), attrs, row[4])
        for row, attrs in zip(edge_rows, attrs_of[1])
    ]
    del names
    return _numbered(nodes, edges, damaged)


def _build_checked(node_rows: list, edge_rows: list, damaged: Callable[[str], HGMError | Exception]) -> MemoryGraph:
    """:func:`build_state` of rows whose checksums matched: payloads made from columns."""
    names = _names(node_rows)
    name = names.setdefault
    nodes = lazy_nodes(
        [name(row[0], row[0]) for row in node_rows],
        [name(row[1], row[1]) for row in node_rows],
        [None if row[2] == "{}" else row[2] for row in node_rows],
        [row[3] for row in node_rows],
    )
    edges = lazy_edges(
        [name(row[0], row[0]) for row in edge_rows],
        [name(row[1], row[1]) for row in edge_rows],
        [name(row[2], row[2]) for row in edge_rows],
        [None if row[3] == "{}" else row[3] for row in edge_rows],
        [row[4] for row in edge_rows],
    )
    del names
    return _numbered(nodes, edges, damaged)


def _names(node_rows: list) -> dict[str, str]:
    """Each node id of the rows → the copy the graph keeps: made in one go, side by side in
    creation order (``compact_ids``; each row's own sits among its row's values), so that a
    query step over thousands of ids reads compact memory."""
    found = [row[0] for row in node_rows]
    return dict(zip(found, compact_ids(found)))


def _numbered(nodes: list[Node], edges: list[Edge], damaged: Callable[[str], HGMError | Exception]) -> MemoryGraph:
    index = {node.id: position for position, node in enumerate(nodes)}
    if len(index) != len(nodes):
        seen: set[str] = set()
        twice = next(node.id for node in nodes if node.id in seen or seen.add(node.id))
        raise damaged(f"node {twice!r} is in the table twice")
    try:
        ends = [(index[e.source], index[e.target], e) for e in edges]
    except KeyError:
        edge = next(e for e in edges if e.source not in index or e.target not in index)
        missing = edge.source if edge.source not in index else edge.target
        raise damaged(f"edge {edge.source} -{edge.type}-> {edge.target} points to the missing node {missing!r}") from None
    edge_index = {edge.key: position for position, edge in enumerate(edges)}
    if len(edge_index) != len(edges):
        raise damaged("an edge is in the table twice")
    return MemoryGraph.from_numbered(nodes, index, ends, edge_index)
