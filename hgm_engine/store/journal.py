"""The journal's records: commits, changes, nodes and edges as JSON objects, as stores keep them.

>>> from hgm_engine.model import GraphOverlay, MemoryGraph
>>> overlay = GraphOverlay(MemoryGraph()); _ = overlay.add_node("g", "goal", {"status": "active"})
>>> commit = Commit(1, "planner", "start", None, 0.0, tuple(overlay.changes()))
>>> commit_from_record(commit_to_record(commit)) == commit
True
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.model import Change, Commit, Edge, FrozenDict, Node, freeze, thaw

__all__ = [
    "node_from_record",
    "edge_from_record",
    "change_to_record",
    "change_from_record",
    "commit_to_record",
    "commit_from_record",
]


def _node_record(node: Node) -> dict[str, Any]:
    return {"id": node.id, "type": node.type, "attrs": thaw(node.attrs), "seq": node.seq}


def _edge_record(edge: Edge) -> dict[str, Any]:
    return {"from": edge.source, "to": edge.target, "type": edge.type, "attrs": thaw(edge.attrs), "seq": edge.seq}


def node_from_record(record: Mapping[str, Any]) -> Node:
    attrs_value = record.get("attrs") or {}
    return Node(record["id"], record["type"], freeze(attrs_value) if attrs_value else FrozenDict(), record["seq"])


def edge_from_record(record: Mapping[str, Any]) -> Edge:
    attrs_value = record.get("attrs") or {}
    return Edge(
        record["from"], record["to"], record["type"], freeze(attrs_value) if attrs_value else FrozenDict(), record["seq"]
    )


def change_to_record(change: Change) -> dict[str, Any]:
    def payload(value):
        if value is None:
            return None
        return _node_record(value) if isinstance(value, Node) else _edge_record(value)

    return {"kind": change.kind, "before": payload(change.before), "after": payload(change.after)}


def change_from_record(record: Mapping[str, Any]) -> Change:
    decode = node_from_record if record["kind"].startswith("node") else edge_from_record
    before = record.get("before")
    after = record.get("after")
    return Change(record["kind"], decode(before) if before else None, decode(after) if after else None)


def commit_to_record(commit: Commit) -> dict[str, Any]:
    return {
        "t": commit.t,
        "author": commit.author,
        "reason": commit.reason,
        "base_t": commit.base_t,
        "timestamp": commit.timestamp,
        "changes": [] if commit.genesis else [change_to_record(c) for c in commit.changes],
        "fired_rules": list(commit.fired_rules),
        "dirtied": [thaw(d) for d in commit.dirtied],
        "genesis": commit.genesis,
        "kind": commit.kind,
    }


def commit_from_record(record: Mapping[str, Any]) -> Commit:
    return Commit(
        record["t"],
        record.get("author"),
        record.get("reason"),
        record.get("base_t"),
        record.get("timestamp", 0.0),
        tuple(change_from_record(c) for c in record.get("changes", ())),
        tuple(record.get("fired_rules", ())),
        tuple(freeze(d) for d in record.get("dirtied", ())),
        bool(record.get("genesis", False)),
        record.get("kind", "transaction"),
    )
