"""What a memory costs in RAM, structure by structure (issue 15).

Opens a SQLite memory in this (fresh) process, runs every benchmark query once, and reports:

- resident memory (``VmRSS``) before opening, after opening, after the queries;
- the bytes each structure of the ``MemoryGraph`` holds (without decoding an attribute
  text or making an edge payload the queries did not), counted with ``sys.getsizeof`` over
  the objects reachable from it, each object counted once, in this order (an object shared by
  two structures is charged to the first): node payloads (``Node``), their attribute maps
  and values, edge payloads (``Edge``) and theirs, the id → position index, id → node, the
  per-type index, the edge-key index, the adjacency caches the queries filled, the value
  indexes; and the rustworkx graph itself (its Rust storage, measured as the RSS growth of an
  equal-sized ``PyDiGraph`` with ``None`` payloads);
- per node and per edge.

    python bench/footprint.py --db /tmp/m100k.db --meta bench/results/tmp/memory-v1-n100000-s0.meta.json
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import sys
from typing import Any, Iterable

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after any tree put first (to measure another hgm)

__all__ = ["deep_size", "measure", "main"]


def _rss_kb() -> int:
    for line in open("/proc/self/status", encoding="ascii"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def deep_size(roots: Iterable[Any], seen: set[int]) -> int:
    """Bytes of the objects reachable from ``roots`` not in ``seen`` (which it extends);
    types, modules and functions are not followed.

    >>> text, seen = "x" * 1000, set()
    >>> deep_size([text], seen) > 1000, deep_size([text], seen) < 100  # counted once
    (True, True)
    """
    total = 0
    stack = list(roots)
    skip = (type, type(sys), type(deep_size))
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, skip):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        else:
            slots = getattr(type(obj), "__slots__", None)
            if slots:
                for name in ([slots] if isinstance(slots, str) else slots):
                    if hasattr(obj, name):
                        stack.append(getattr(obj, name))
            if hasattr(obj, "__dict__"):
                stack.append(obj.__dict__)
    return total


def _slot_attrs(payload: Any) -> Any:
    """A payload's attribute map if it was decoded (None if still its text), without decoding it."""
    try:
        return type(payload).attrs.__get__(payload)
    except AttributeError:
        return None


def measure(db: str, anchors: dict[str, str]) -> dict[str, Any]:
    import rustworkx as rx

    import hgm_engine
    from bench.baselines import QUERIES

    rss_before = _rss_kb()
    memory = hgm_engine.Memory.open(db)
    rss_open = _rss_kb()
    for template, _ in QUERIES.values():
        memory.query(template.format(**anchors))
    rss_after = _rss_kb()
    graph = memory.graph
    g = graph.__dict__
    nodes = list(graph.nodes())
    columns = g.get("_csr")  # edges still held as columns (read from the stored image)
    edge_count = graph.edge_count
    seen: set[int] = set()
    parts = {}
    # payload shells first (without their attribute maps), then the maps
    parts["node payloads (Node objects)"] = sum(sys.getsizeof(n) for n in nodes)
    parts["node ids and type names (str)"] = deep_size([n.id for n in nodes] + [n.type for n in nodes], seen) - 0
    seen.update(id(n) for n in nodes)
    decoded = [a for a in map(_slot_attrs, nodes) if a is not None]
    parts["node attribute maps and values (decoded)"] = deep_size(decoded, seen)
    parts["node attribute texts (not yet decoded)"] = deep_size([n._raw for n in nodes if n._raw is not None], seen)
    parts["nodes whose attributes were decoded"] = len(decoded)
    if columns is not None:
        parts["edge columns (arrays: ends, types, seq, adjacency offsets)"] = sum(
            sys.getsizeof(getattr(columns, name)) for name in ("source", "target", "type", "seq", "out_start", "in_start", "in_other", "in_type")
        )
        parts["edge attribute texts (list)"] = deep_size([columns.raw], seen)
        edges = []
    else:
        edges = list(graph.iter_edges())
        parts["edge payloads (Edge objects)"] = sum(sys.getsizeof(e) for e in edges)
        seen.update(id(e) for e in edges)
        parts["edge ends, types, attribute maps"] = deep_size(
            [x for e in edges for x in (e.source, e.target, e.type, _slot_attrs(e), e._raw)], seen)
    for label, key in (("id → position index", "_index"), ("id → node", "_nodes"), ("per-type index", "_by_type"),
                       ("edge-key index", "_edge_index"), ("adjacency caches (out)", "_out"),
                       ("adjacency caches (in)", "_in"), ("value indexes", "_values"), ("root goals", "_root_ids")):
        parts[label] = deep_size([g.get(key)], seen)
    counted = parts.pop("nodes whose attributes were decoded")
    before = _rss_kb()
    probe = rx.PyDiGraph(multigraph=True)
    probe.add_nodes_from([None] * len(nodes))
    if columns is None:
        probe.add_edges_from([(i % len(nodes), (i * 7) % len(nodes), None) for i in range(edge_count)])
    gc.collect()
    parts["rustworkx graph (Rust storage, RSS growth of an equal PyDiGraph)"] = (_rss_kb() - before) * 1024
    del probe
    total = sum(parts.values())
    return {
        "nodes": len(nodes),
        "edges": edge_count,
        "edges_as_columns": columns is not None,
        "nodes_with_decoded_attributes": counted,
        "rss_mb": {"before_open": rss_before / 1024, "after_open": rss_open / 1024, "after_queries": rss_after / 1024},
        "structures_bytes": parts,
        "structures_total_mb": total / 2**20,
        "bytes_per_node": {k: v / len(nodes) for k, v in parts.items() if "node" in k or "id " in k or "type" in k},
        "bytes_per_edge": {k: v / edge_count for k, v in parts.items() if "edge" in k or "rustworkx" in k},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="memory footprint of a memory, structure by structure")
    parser.add_argument("--db", required=True)
    parser.add_argument("--meta", required=True, type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args(argv)
    anchors = json.loads(args.meta.read_text(encoding="utf-8"))["anchors"]
    report = measure(args.db, anchors)
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
