"""The graph file of formats.md: read, check (every problem, with its place), build, write.

Loading is all or nothing: a document with any problem builds no graph, and the error lists
every problem with the position of the node or edge in the file.

>>> doc = {"format": "hgm-graph/1",
...        "nodes": [{"id": "g", "type": "goal"}, {"id": "g", "type": "place"}],
...        "edges": [{"from": "g", "to": "x", "type": "parent_of"}]}
>>> for p in check_document(doc): print(p.where, "-", p.message)
nodes[1] - unknown node type 'place'
nodes[1] - duplicate node id 'g' (first defined at nodes[0])
edges[0] - edge to a missing node 'x'
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Iterable

from ..errors import GraphFileError, Problem
from ..graph import MemoryGraph
from ..schema import DEFAULT_SCHEMA, Schema, closest

__all__ = ["GRAPH_FORMAT", "check_document", "graph_from_document", "read_graph_file", "parse_graph_text"]

GRAPH_FORMAT = "hgm-graph/1"
_NODE_RESERVED = ("id", "type")
_EDGE_RESERVED = ("from", "to", "type")


def _problem(category: str, message: str, where: str) -> Problem:
    return Problem(category, message, None, None, where)


def _suggest(name: str, known: Iterable[str]) -> str:
    suggestion = closest(name, known)
    return f"; did you mean {suggestion!r}?" if suggestion else ""


def check_document(doc: Any, schema: Schema = DEFAULT_SCHEMA) -> list[Problem]:
    """Every problem of a graph document against ``schema`` (empty when it is valid)."""
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        return [_problem("invalid-document", "a graph file is a JSON object", "document")]
    fmt = doc.get("format")
    if fmt != GRAPH_FORMAT:
        problems.append(
            _problem("invalid-document", f"format must be {GRAPH_FORMAT!r}, found {fmt!r}", "format")
        )
    unknown_keys = sorted(set(doc) - {"format", "nodes", "edges"})
    if unknown_keys:
        problems.append(_problem("invalid-document", f"unknown top-level keys {unknown_keys}", "document"))
    nodes = doc.get("nodes", [])
    edges = doc.get("edges", [])
    if not isinstance(nodes, list):
        problems.append(_problem("invalid-document", "nodes must be a list", "nodes"))
        nodes = []
    if not isinstance(edges, list):
        problems.append(_problem("invalid-document", "edges must be a list", "edges"))
        edges = []

    first_seen: dict[str, int] = {}
    for position, node in enumerate(nodes):
        where = f"nodes[{position}]"
        if not isinstance(node, dict):
            problems.append(_problem("invalid-document", "a node is a JSON object", where))
            continue
        node_id, node_type = node.get("id"), node.get("type")
        if not isinstance(node_id, str) or not node_id:
            problems.append(_problem("invalid-document", "a node needs a non-empty string id", where))
        if not isinstance(node_type, str):
            problems.append(_problem("invalid-document", "a node needs a string type", where))
        elif node_type not in schema.node_types:
            problems.append(
                _problem(
                    "unknown-name",
                    f"unknown node type {node_type!r}" + _suggest(node_type, schema.node_types),
                    where,
                )
            )
        if isinstance(node_id, str) and node_id:
            if node_id in first_seen:
                problems.append(
                    _problem(
                        "duplicate-id",
                        f"duplicate node id {node_id!r} (first defined at nodes[{first_seen[node_id]}])",
                        where,
                    )
                )
            else:
                first_seen[node_id] = position

    seen_edges: dict[tuple, int] = {}
    for position, edge in enumerate(edges):
        where = f"edges[{position}]"
        if not isinstance(edge, dict):
            problems.append(_problem("invalid-document", "an edge is a JSON object", where))
            continue
        source, target, edge_type = edge.get("from"), edge.get("to"), edge.get("type")
        for key, value in (("from", source), ("to", target), ("type", edge_type)):
            if not isinstance(value, str):
                problems.append(_problem("invalid-document", f"an edge needs a string {key!r}", where))
        if isinstance(edge_type, str) and edge_type not in schema.edge_types:
            problems.append(
                _problem(
                    "unknown-name",
                    f"unknown edge type {edge_type!r}" + _suggest(edge_type, schema.edge_types),
                    where,
                )
            )
        for end, value in (("from", source), ("to", target)):
            if isinstance(value, str) and value not in first_seen:
                word = "edge from" if end == "from" else "edge to"
                problems.append(_problem("missing-node", f"{word} a missing node {value!r}", where))
        key = (source, target, edge_type)
        if all(isinstance(v, str) for v in key):
            if key in seen_edges:
                problems.append(
                    _problem(
                        "duplicate-edge",
                        f"duplicate edge {source!r} -{edge_type}-> {target!r} (first at edges[{seen_edges[key]}])",
                        where,
                    )
                )
            else:
                seen_edges[key] = position
    return problems


def graph_from_document(doc: Any, schema: Schema = DEFAULT_SCHEMA, *, source: str | None = None) -> MemoryGraph:
    """Build a :class:`MemoryGraph` from a graph document, or raise listing every problem."""
    problems = check_document(doc, schema)
    if problems:
        raise GraphFileError(problems, None)
    graph = MemoryGraph()
    for node in doc.get("nodes", []):
        graph.add_node(node["id"], node["type"], {k: v for k, v in node.items() if k not in _NODE_RESERVED})
    for edge in doc.get("edges", []):
        graph.add_edge(
            edge["from"], edge["to"], edge["type"], {k: v for k, v in edge.items() if k not in _EDGE_RESERVED}
        )
    return graph


def parse_graph_text(text: str, where: str = "graph file") -> Any:
    """The JSON document in ``text``; invalid JSON is a ``GraphFileError`` with line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise GraphFileError(
            [Problem("invalid-json", f"{where}: {exc.msg}", exc.lineno, exc.colno)], text
        ) from None


def read_graph_file(path: str | pathlib.Path, schema: Schema = DEFAULT_SCHEMA) -> MemoryGraph:
    """Read and build a graph file (all or nothing)."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GraphFileError([Problem("io", f"cannot read {path}: {exc.strerror}", where=str(path))]) from None
    return graph_from_document(parse_graph_text(text, str(path)), schema)
