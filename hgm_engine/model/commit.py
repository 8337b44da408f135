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
from hgm_engine.model.payloads import slot_setters

__all__ = ["Commit"]


@attrs.frozen(init=False)
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

    def __init__(
        self,
        t: int,
        author: str | None,
        reason: str | None,
        base_t: int | None,
        timestamp: float,
        changes: tuple[Change, ...],
        fired_rules: tuple[str, ...] = (),
        dirtied: tuple[Mapping[str, Any], ...] = (),
        genesis: bool = False,
        kind: str = "transaction",
        purged: tuple[str, ...] = (),
    ) -> None:
        # the slots' setters, not attrs' object.__setattr__ per field (as Node's __init__)
        s_t, s_author, s_reason, s_base_t, s_timestamp, s_changes, s_fired, s_dirtied, s_genesis, s_kind, s_purged = _SET_COMMIT
        s_t(self, t)
        s_author(self, author)
        s_reason(self, reason)
        s_base_t(self, base_t)
        s_timestamp(self, timestamp)
        s_changes(self, changes)
        s_fired(self, fired_rules)
        s_dirtied(self, dirtied)
        s_genesis(self, genesis)
        s_kind(self, kind)
        s_purged(self, purged)

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


_SET_COMMIT = slot_setters(Commit)
