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
from itertools import chain
from operator import itemgetter
from typing import Any, Callable, Iterable

from hgm_engine.errors import GraphFileError, Problem
from hgm_engine.model import EMPTY_ATTRS, Edge, FrozenDict, MemoryGraph, Node, bulk_allocation, compact_ids, freeze, parse_json
from hgm_engine.model import id_problem, strings_ok, text_problem, value_problem, values_ok
from hgm_engine.model import DEFAULT_SCHEMA, Schema, closest

__all__ = [
    "GRAPH_FORMAT",
    "check_document",
    "graph_from_document",
    "graph_document",
    "read_graph_file",
    "read_graph_text",
    "load_graph_file",
    "parse_graph_text",
    "marks_problem",
]

# The JSON values ``freeze`` keeps as they are: a map of only these needs no copy per value.
_FLAT_JSON = frozenset({str, int, float, bool, type(None)})

GRAPH_FORMAT = "hgm-graph/1"
_NODE_RESERVED = ("id", "type")
_DICT, _STR = frozenset({dict}), frozenset({str})
_EDGE_RESERVED = ("from", "to", "type")
# Staleness marks (docs/rules.md) are attributes a graph file may carry (an export writes
# them); they must be what the rule engine writes, or every reader of them would fail.
_MARK_KEYS = frozenset({"dirty", "dirty_marks"})
_MARK_STATES = ("needs_review", "blocked")


def _problem(category: str, message: str, where: str) -> Problem:
    return Problem(category, message, None, None, where)


def _suggest(name: str, known: Iterable[str]) -> str:
    suggestion = closest(name, known)
    return f"; did you mean {suggestion!r}?" if suggestion else ""


def check_document(doc: Any, schema: Schema = DEFAULT_SCHEMA, existing: Any = ()) -> list[Problem]:
    """Every problem of a graph document against ``schema`` (empty when it is valid).

    ``existing`` holds the ids of nodes already in the memory the document is loaded into:
    its nodes may not reuse them and its edges may point to them."""
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        return [_problem("invalid-document", "a graph file is a JSON object", "document")]
    fmt = doc.get("format")
    if fmt != GRAPH_FORMAT:
        problems.append(
            _problem("invalid-document", f"format must be {GRAPH_FORMAT!r}, found {_shown(fmt)}", "format")
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

    # Fast pass: well-formed documents (the common case) cost one dict lookup per field;
    # only a document with problems is walked again to describe them.
    node_types = set(schema.node_types)
    edge_types = set(schema.edge_types)
    first_seen: dict[str, int] = {}
    bad_nodes: list[int] = []
    for position, node in enumerate(nodes):
        node_id = node.get("id") if type(node) is dict else None
        duplicate = False
        if type(node_id) is str and node_id:
            duplicate = node_id in first_seen
            if not duplicate:
                first_seen[node_id] = position  # the first occurrence owns the id, valid or not
        node_type = node.get("type") if type(node) is dict else None
        well_typed = type(node_type) is str and node_type in node_types
        if duplicate or type(node_id) is not str or not node_id or not well_typed or "\x00" in node_id:
            bad_nodes.append(position)
    for position in bad_nodes:
        problems.extend(_node_problems(nodes[position], position, schema, first_seen))
    if existing:
        for node_id, position in first_seen.items():
            if node_id in existing:
                problems.append(_problem("duplicate-id", f"node id {node_id!r} is already in the memory", f"nodes[{position}]"))
        first_seen = dict(first_seen)
        for node_id in existing:
            first_seen.setdefault(node_id, -1)

    seen_edges: dict[tuple, int] = {}
    for position, edge in enumerate(edges):
        if type(edge) is dict:
            key = (edge.get("from"), edge.get("to"), edge.get("type"))
            strings = type(key[0]) is str and type(key[1]) is str and type(key[2]) is str
            ends_known = strings and key[0] in first_seen and key[1] in first_seen
            if ends_known and key[2] in edge_types and key not in seen_edges:
                seen_edges[key] = position
                continue
        problems.extend(_edge_problems(edge, position, schema, first_seen, seen_edges))
    problems.extend(_value_problems(nodes, "nodes", _NODE_RESERVED))
    problems.extend(_value_problems(edges, "edges", _EDGE_RESERVED))
    return problems


def _value_problems(records: list, label: str, reserved: tuple[str, ...]) -> list[Problem]:
    """The first value of each record that the engine cannot store (model.value_problem), and
    malformed staleness marks; one check over whole columns first, records one by one only
    when it finds something."""
    records_only = [record for record in records if type(record) is dict]
    keys = set(chain.from_iterable(records_only))
    if values_ok(list(chain.from_iterable(map(dict.values, records_only))), keys) and not (keys & _MARK_KEYS):
        return []
    problems = []
    for position, record in enumerate(records):
        if isinstance(record, dict):
            found = _record_problem(record, f"{label}[{position}]", reserved)
            if found is not None:
                problems.append(found)
    return problems


def _record_problem(record: dict, where: str, reserved: tuple[str, ...]) -> Problem | None:
    for key, value in record.items():
        if not isinstance(key, str):
            return _problem("invalid-value", f"attribute names are strings, not {_shown(key)}", where)
        found = text_problem(key, where, "an attribute name")
        if found is None:
            if key in reserved:  # the record's own id, type or ends: only strings are stored
                found = text_problem(value, f"{where}.{key}") if isinstance(value, str) else None
            else:
                found = value_problem(value, f"{where}.{key}")
        if found is not None:
            return found
    if reserved is _NODE_RESERVED and not _MARK_KEYS.isdisjoint(record):
        return marks_problem(record, where)
    return None


def marks_problem(record: dict, where: str) -> Problem | None:
    """Why a node's ``dirty`` / ``dirty_marks`` are not what the rule engine writes, or None.

    >>> marks_problem({"dirty": "blocked", "dirty_marks": [{"state": "blocked", "rule": "r", "because": ["a"], "t": 2}]}, "nodes[0]") is None
    True
    >>> print(marks_problem({"dirty_marks": 5}, "nodes[0]").message)
    'dirty_marks' is a list of marks ({"state", "rule", "because", "t"}), not 5
    """
    states = " or ".join(repr(s) for s in _MARK_STATES)
    if "dirty" in record and record["dirty"] not in _MARK_STATES:
        return _problem("invalid-value", f"'dirty' is a staleness state ({states}), not {_shown(record['dirty'])}", f"{where}.dirty")
    marks = record.get("dirty_marks", [])
    if not isinstance(marks, (list, tuple)):  # the loader checks them frozen (tuples)
        return _problem(
            "invalid-value",
            f"'dirty_marks' is a list of marks ({{\"state\", \"rule\", \"because\", \"t\"}}), not {_shown(marks)}",
            f"{where}.dirty_marks",
        )
    for i, mark in enumerate(marks):
        place = f"{where}.dirty_marks[{i}]"
        if not isinstance(mark, dict):
            return _problem("invalid-value", f"a mark is an object, not {_shown(mark)}", place)
        because, t = mark.get("because"), mark.get("t")
        if mark.get("state") not in _MARK_STATES:
            return _problem("invalid-value", f"a mark's 'state' is {states}", place)
        if not isinstance(mark.get("rule"), str) or not mark["rule"]:
            return _problem("invalid-value", "a mark's 'rule' is the name of the rule that set it", place)
        if not isinstance(because, (list, tuple)) or not all(isinstance(b, str) for b in because):
            return _problem("invalid-value", "a mark's 'because' is a list of node ids", place)
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            return _problem("invalid-value", "a mark's 't' is the commit that set it", place)
        if mark.get("reason") is not None and not isinstance(mark["reason"], str):
            return _problem("invalid-value", "a mark's 'reason' is a string", place)
    return None


def _shown(value: Any) -> str:
    """A document's value for a message, cut to 40 characters (an integer too long for ``str``,
    which refuses over 4,300 digits, by its length).

    >>> _shown("x" * 50), _shown(10**5000), _shown([1])
    ('"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...', 'an integer of 5,001 digits', 'a list')
    """
    if isinstance(value, int) and value.bit_length() > 14_000:  # about 4,200 digits: str() may refuse it
        return f"an integer of {_digits(value):,} digits"
    text = json.dumps(value) if isinstance(value, (str, int, float, bool)) or value is None else f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."


def _digits(value: int) -> int:
    """How many decimal digits ``value`` has, without printing it.

    >>> _digits(10**5000), _digits(10**5000 - 1), _digits(-7)
    (5001, 5000, 1)
    """
    magnitude = abs(value)
    count = max(1, int((magnitude.bit_length() - 1) * 0.30102999566398120) + 1)  # log10(2)
    while magnitude >= 10**count:
        count += 1
    while count > 1 and magnitude < 10 ** (count - 1):
        count -= 1
    return count


def _node_problems(node: Any, position: int, schema: Schema, first_seen: dict[str, int]) -> list[Problem]:
    where = f"nodes[{position}]"
    if not isinstance(node, dict):
        return [_problem("invalid-document", "a node is a JSON object", where)]
    problems = []
    node_id, node_type = node.get("id"), node.get("type")
    if not isinstance(node_id, str) or not node_id:
        problems.append(_problem("invalid-document", "a node needs a non-empty string id", where))
    elif "\x00" in node_id:
        problems.append(id_problem(node_id, f"{where}.id"))
    if not isinstance(node_type, str):
        problems.append(_problem("invalid-document", "a node needs a string type", where))
    elif node_type not in schema.node_types:
        problems.append(
            _problem(
                "unknown-name", f"unknown node type {node_type!r}" + _suggest(node_type, schema.node_types), where
            )
        )
    if isinstance(node_id, str) and node_id in first_seen and first_seen[node_id] != position:
        problems.append(
            _problem(
                "duplicate-id", f"duplicate node id {node_id!r} (first defined at nodes[{first_seen[node_id]}])", where
            )
        )
    return problems


def _edge_problems(edge: Any, position: int, schema: Schema, first_seen: dict, seen_edges: dict) -> list[Problem]:
    where = f"edges[{position}]"
    if not isinstance(edge, dict):
        return [_problem("invalid-document", "an edge is a JSON object", where)]
    problems = []
    source, target, edge_type = edge.get("from"), edge.get("to"), edge.get("type")
    for key, value in (("from", source), ("to", target), ("type", edge_type)):
        if not isinstance(value, str):
            problems.append(_problem("invalid-document", f"an edge needs a string {key!r}", where))
    if isinstance(edge_type, str) and edge_type not in schema.edge_types:
        problems.append(
            _problem(
                "unknown-name", f"unknown edge type {edge_type!r}" + _suggest(edge_type, schema.edge_types), where
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
        elif not problems:
            seen_edges[key] = position
    return problems


def graph_from_document(
    doc: Any,
    schema: Schema = DEFAULT_SCHEMA,
    *,
    checked: bool = False,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> MemoryGraph:
    """Build a :class:`MemoryGraph` from a graph document, or raise listing every problem.

    One pass builds the payloads while checking each record cheaply; the first bad record
    stops it and :func:`check_document` then describes every problem. ``checked`` is kept
    for callers that validated already (the build checks again at almost no cost).
    ``progress(phase, done, total)``, when given, hears of the records checked and built
    (the work runs on whole columns, so it hears of it in a few steps).

    >>> steps = []
    >>> graph = graph_from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []},
    ...                             progress=lambda *step: steps.append(step))
    >>> steps
    [('checking the graph', 0, 1), ('checking the graph', 0, 1), ('checking the graph', 1, 1), ('building the graph', 0, 1), ('building the graph', 1, 1)]
    """
    try:
        with bulk_allocation():
            payloads = _payloads(doc, schema, progress)
            if progress is not None:
                progress("building the graph", 0, len(payloads[0]) + len(payloads[2]))
            graph = MemoryGraph.from_numbered(*payloads)
            if progress is not None:
                progress("building the graph", len(payloads[0]) + len(payloads[2]), len(payloads[0]) + len(payloads[2]))
            return graph
    except _Malformed:
        raise GraphFileError(check_document(doc, schema) or [_problem("invalid-document", "malformed", "document")])


class _Malformed(Exception):
    pass


def _attributes(record: dict, reserved: tuple[str, ...]) -> FrozenDict:
    """The record without its reserved keys, frozen (one copy for the common flat case)."""
    if len(record) == len(reserved):
        return EMPTY_ATTRS
    attributes = FrozenDict(record)
    for key in reserved:
        dict.__delitem__(attributes, key)
    if not attributes:
        return EMPTY_ATTRS
    if set(map(type, attributes.values())) <= _FLAT_JSON:
        return attributes
    # Nested values (a list of tags, most often) are frozen in place in this private copy:
    # no second copy of the whole map, no call per flat value.
    for key, value in attributes.items():
        if type(value) not in _FLAT_JSON:
            flat_list = type(value) is list and set(map(type, value)) <= _FLAT_JSON
            dict.__setitem__(attributes, key, tuple(value) if flat_list else freeze(value))
    return attributes


_ID_AND_TYPE = itemgetter("id", "type")
_ENDS_AND_TYPE = itemgetter("from", "to", "type")


def _node_attributes(record: dict) -> FrozenDict:
    return _attributes(record, _NODE_RESERVED)


def _payloads(
    doc: Any, schema: Schema, progress: Callable[[str, int, int | None], None] | None = None
) -> tuple[list[Node], dict[str, int], list[tuple], dict[tuple, int]]:
    """The payloads of a document numbered for :meth:`MemoryGraph.from_numbered`; raises
    ``_Malformed`` when any record is wrong (then the caller describes them all).

    Files hold millions of records: the checks and indexes work on whole columns (``map``,
    ``zip`` and set operations run in C), so the only Python code per record is building
    its payload."""
    if type(doc) is not dict or doc.get("format") != GRAPH_FORMAT or set(doc) - {"format", "nodes", "edges"}:
        raise _Malformed
    raw_nodes, raw_edges = doc.get("nodes", []), doc.get("edges", [])
    if type(raw_nodes) is not list or type(raw_edges) is not list:
        raise _Malformed
    if not _DICT.issuperset(map(type, raw_nodes)) or not _DICT.issuperset(map(type, raw_edges)):
        raise _Malformed
    if progress is not None:
        progress("checking the graph", 0, len(raw_nodes) + len(raw_edges))
    try:
        ids, types = zip(*map(_ID_AND_TYPE, raw_nodes)) if raw_nodes else ((), ())
        # The ids are made anew, side by side in creation order (compact_ids): the document's
        # sit each between its record's keys and values, and every query step reads the ids
        # it passes on. (Values that are not strings are kept as they are, and refused below.)
        ids = compact_ids(ids)
        ends = list(map(_ENDS_AND_TYPE, raw_edges))
        index = dict(zip(ids, range(len(ids))))
        sources, targets, kinds = zip(*ends) if ends else ((), (), ())
        source_at, target_at = list(map(index.get, sources)), list(map(index.get, targets))
        wrong = (
            len(index) != len(ids)
            or not _STR.issuperset(map(type, ids))
            or "" in index
            or not frozenset(schema.node_types).issuperset(types)
            or None in source_at  # a missing end, or one that is not a string
            or None in target_at
            or not frozenset(schema.edge_types).issuperset(kinds)
        )
    except (KeyError, TypeError):  # a key missing, or a value that cannot be an id or a type
        raise _Malformed from None
    if wrong:
        raise _Malformed
    # One string object per id and per type: an edge's ends are the node's own id (the key of
    # the graph's node map, so a lookup from an adjacency compares by identity, not by
    # content) and types are the schema's; the document's copies are dropped.
    node_types = {t: t for t in schema.node_types}
    edge_types = {t: t for t in schema.edge_types}
    types, kinds = list(map(node_types.__getitem__, types)), list(map(edge_types.__getitem__, kinds))
    sources, targets = list(map(ids.__getitem__, source_at)), list(map(ids.__getitem__, target_at))
    # The edge index keyed by those strings too (the document's are freed with it); an edge
    # twice is a malformed document.
    edge_index = dict(zip(zip(sources, targets, kinds), range(len(ends))))
    if len(edge_index) != len(ends):
        raise _Malformed
    try:
        node_attributes = list(map(_node_attributes, raw_nodes))
        attributes = [EMPTY_ATTRS] * len(ends)
        for position, size in enumerate(map(len, raw_edges)):
            if size != len(_EDGE_RESERVED):  # most edges carry no attributes
                attributes[position] = _attributes(raw_edges[position], _EDGE_RESERVED)
    except (TypeError, RecursionError):  # a key that is not a string, a value nested too deep to copy
        raise _Malformed from None
    if progress is not None:
        progress("checking the graph", (len(raw_nodes) + len(raw_edges)) // 2, len(raw_nodes) + len(raw_edges))
    # The values the engine may store (model.values_ok), by columns; the types are the
    # schema's and the ends are ids, so only ids and attributes need looking at.
    maps = [a for a in chain(node_attributes, attributes) if a]
    keys = set(chain.from_iterable(maps))
    if not strings_ok(ids) or "\x00" in "".join(ids) or not values_ok(list(chain.from_iterable(map(dict.values, maps))), keys):
        raise _Malformed
    if not keys.isdisjoint(_MARK_KEYS) and any(
        marks_problem(a, "") for a in node_attributes if not _MARK_KEYS.isdisjoint(a)
    ):
        raise _Malformed
    nodes = list(map(Node, ids, types, node_attributes, range(1, len(ids) + 1)))
    edges = map(Edge, sources, targets, kinds, attributes, range(1, len(ends) + 1))
    if progress is not None:
        progress("checking the graph", len(raw_nodes) + len(raw_edges), len(raw_nodes) + len(raw_edges))
    return nodes, index, list(zip(source_at, target_at, edges)), edge_index


def parse_graph_text(text: str, where: str = "graph file") -> Any:
    """The JSON document in ``text``; invalid JSON is a ``GraphFileError`` with line and column.

    >>> parse_graph_text('{"format": "hgm-graph/1", "nodes": [], "edges": []}')["format"]
    'hgm-graph/1'
    >>> try:
    ...     parse_graph_text('{"nodes": [1,]}')
    ... except GraphFileError as err:
    ...     print(err.problems[0].category, err.problems[0].line, err.problems[0].column)
    invalid-json 1 14
    """
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise GraphFileError(
            [Problem("invalid-json", f"{where}: {exc.msg}", exc.lineno, exc.colno)], text
        ) from None


def read_graph_text(path: str | pathlib.Path) -> str:
    """The text of the file at ``path``; one that cannot be read is a ``GraphFileError`` (``io``).

    >>> try:
    ...     read_graph_text("/no/such/graph.json")
    ... except GraphFileError as err:
    ...     print(err.problems[0].category, err.problems[0].where)
    io /no/such/graph.json
    """
    path = pathlib.Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GraphFileError([Problem("io", f"cannot read {path}: {exc.strerror}", where=str(path))]) from None


def read_graph_file(path: str | pathlib.Path, schema: Schema = DEFAULT_SCHEMA) -> MemoryGraph:
    """Read and build a graph file (all or nothing).

    >>> import json, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "graph.json")
    >>> with open(path, "w") as f:
    ...     json.dump({"format": GRAPH_FORMAT, "nodes": [{"id": "g", "type": "goal"}], "edges": []}, f)
    >>> len(read_graph_file(path))
    1
    """
    return graph_from_document(parse_graph_text(read_graph_text(path), str(path)), schema)


def load_graph_file(path: str | pathlib.Path, load: Callable[..., Any]) -> Any:
    """Read the graph file at ``path`` and hand its document to ``load(doc, reason=...)``
    (a memory's ``load``), parsing and loading as one bulk allocation: the millions of
    objects they make stay, so the collector is kept from walking them again and again.

    >>> import json, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "graph.json")
    >>> with open(path, "w") as f:
    ...     json.dump({"format": GRAPH_FORMAT, "nodes": [], "edges": []}, f)
    >>> load_graph_file(path, lambda doc, reason: (len(doc["nodes"]), reason))
    (0, 'load graph.json')
    """
    path = pathlib.Path(path)
    text = read_graph_text(path)
    with bulk_allocation() as bulk:
        doc = parse_graph_text(text, str(path))
        loaded = load(doc, reason=f"load {path.name}")
        del doc, text
        bulk.keep(hold=False)  # no memory gives them back: unfrozen when none holds any
    return loaded


def graph_document(view: Any) -> dict[str, Any]:
    """The graph document (formats.md) of a graph view: its nodes, and their edges in the
    order they were made (an export; :func:`graph_from_document` reads it back).

    >>> graph_document(MemoryGraph())
    {'format': 'hgm-graph/1', 'nodes': [], 'edges': []}
    """
    nodes = [view.node_map()[n] for n in view.node_map()]
    edges = [edge for node in nodes for edge in view.out_edges(node.id)]
    edges.sort(key=lambda e: e.seq)
    return {
        "format": GRAPH_FORMAT,
        "nodes": [n.to_json() for n in nodes],
        "edges": [e.to_json() for e in edges],
    }
