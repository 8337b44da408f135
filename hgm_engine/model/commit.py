"""A commit: one transaction as the journal keeps it (its net changes with full payloads).

>>> from hgm_engine.model import GraphOverlay, MemoryGraph
>>> overlay = GraphOverlay(MemoryGraph()); _ = overlay.add_node("g", "goal", {})
>>> commit = Commit(1, "planner", "start", None, 0.0, tuple(overlay.changes()))
>>> sorted(commit.touched), commit.summary()["changes"]
(['g'], 1)
"""

from __future__ import annotations

from typing import Any, Mapping

import attrs

from hgm_engine.model.overlay import Change

__all__ = ["Commit"]


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
    kind: str = "transaction"  # transaction | load | revert | purge
    purged: tuple[str, ...] = ()  # a purge's tombstone: the ids whose every trace was removed

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
            **({"purged": list(self.purged)} if self.purged else {}),
        }
