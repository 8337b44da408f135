"""History: commits, time travel, diffs and per-node history — never by copying the graph.

Every commit keeps its net changes with full before/after payloads. The state at an earlier
``t`` is an overlay over the current graph that undoes the commits after ``t`` (cost: the
changes since ``t``). A snapshot is only a name for a ``t``.

>>> from hgm_engine.model.graph import MemoryGraph
>>> from hgm_engine.model.overlay import GraphOverlay
>>> g = MemoryGraph()
>>> o = GraphOverlay(g); _ = o.add_node("g", "goal", {"status": "active"})
>>> c1 = Commit(1, "me", "create", None, 0.0, tuple(o.changes()))
>>> from hgm_engine.model.overlay import apply_changes; apply_changes(g, list(c1.changes))
>>> o = GraphOverlay(g); _ = o.set_node_attrs("g", {"status": "done"})
>>> c2 = Commit(2, "me", "finish", None, 0.0, tuple(o.changes()))
>>> apply_changes(g, list(c2.changes))
>>> historical_view(g, [c2]).node("g").attrs["status"]
'active'
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import attrs

from hgm_engine.model import FrozenDict, Edge, MemoryGraph, Node, freeze, thaw
from hgm_engine.model import Change, GraphOverlay, apply_changes
from hgm_engine.txn.ops import change_to_json

__all__ = [
    "Commit",
    "historical_view",
    "net_changes",
    "change_to_record",
    "change_from_record",
    "commit_to_record",
    "commit_from_record",
    "EmptyView",
]


@attrs.frozen
class Commit:
    """One committed transaction. ``genesis`` marks a load into an empty memory: before it,
    memory was empty, and its changes are not kept (they are the whole graph)."""

    t: int
    author: str | None
    reason: str | None
    base_t: int | None
    timestamp: float
    changes: tuple[Change, ...]
    fired_rules: tuple[str, ...] = ()
    dirtied: tuple[Mapping[str, Any], ...] = ()
    genesis: bool = False
    kind: str = "transaction"  # transaction | load | revert

    @property
    def touched(self) -> frozenset[str]:
        ids: set[str] = set()
        for change in self.changes:
            ids.update(change.touched)
        return frozenset(ids)

    def summary(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "author": self.author,
            "reason": self.reason,
            "base_t": self.base_t,
            "timestamp": self.timestamp,
            "kind": self.kind,
            "changes": len(self.changes) if not self.genesis else None,
            "fired_rules": list(self.fired_rules),
        }


class EmptyView(MemoryGraph):
    """The empty memory (the state before a genesis load)."""


def historical_view(graph: MemoryGraph, later_commits: Iterable[Commit]):
    """The state of ``graph`` before ``later_commits`` (given oldest first) were applied."""
    commits = list(later_commits)
    if any(c.genesis for c in commits):
        return EmptyView()
    overlay = GraphOverlay(graph)
    for commit in reversed(commits):
        apply_changes(overlay, [change.inverse() for change in reversed(commit.changes)])
    return overlay


def net_changes(before_view, after_view, commits: Iterable[Commit]) -> list[dict[str, Any]]:
    """What differs between two states, as report changes (one per node or edge)."""
    node_ids: dict[str, None] = {}
    edge_keys: dict[tuple, None] = {}
    genesis = False
    for commit in commits:
        genesis = genesis or commit.genesis
        for change in commit.changes:
            payload = change.after if change.after is not None else change.before
            if isinstance(payload, Node):
                node_ids[payload.id] = None
            else:
                edge_keys[payload.key] = None
    if genesis:  # everything in the later state may be new
        for node_id in after_view.node_map():
            node_ids[node_id] = None
            for edge in after_view.out_edges(node_id):
                edge_keys[edge.key] = None
    out: list[Change] = []
    for node_id in node_ids:
        old, new = before_view.node(node_id), after_view.node(node_id)
        if old is None and new is not None:
            out.append(Change("node_added", None, new))
        elif old is not None and new is None:
            out.append(Change("node_removed", old, None))
        elif old is not None and new is not None and (old.attrs != new.attrs or old.seq != new.seq):
            if old.seq != new.seq:
                out.extend([Change("node_removed", old, None), Change("node_added", None, new)])
            else:
                out.append(Change("node_updated", old, new))
    for key in edge_keys:
        old, new = before_view.edge(*key), after_view.edge(*key)
        if old is None and new is not None:
            out.append(Change("edge_added", None, new))
        elif old is not None and new is None:
            out.append(Change("edge_removed", old, None))
        elif old is not None and new is not None and (old.attrs != new.attrs):
            out.append(Change("edge_updated", old, new))
    return [change_to_json(c) for c in out]


# -- records (JSON) for stores ------------------------------------------------------------------


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
