"""Forgetting: a commit without every trace of some nodes (the journal rewrite a purge makes).

A purge removes nodes, and the edges that touch them, from the journal as if they had never
been there: every change of theirs goes from every commit, so no ``as_of``, diff, history or
export can show them again. The purge itself is a commit of kind ``purge`` that keeps only
the ids, who, when and why (its tombstone).

>>> from hgm_engine.model import GraphOverlay, MemoryGraph
>>> overlay = GraphOverlay(MemoryGraph())
>>> _ = overlay.add_node("g", "goal", {}); _ = overlay.add_node("s", "fact", {"content": "secret"})
>>> _ = overlay.add_edge("g", "s", "related_to", {})
>>> commit = Commit(1, "me", "start", None, 0.0, tuple(overlay.changes()))
>>> [c.kind for c in without_nodes(commit, {"s"}).changes]
['node_added']
"""

from __future__ import annotations

from typing import Any, Iterable

import attrs

from hgm_engine.model import Change, Commit, Node, freeze, thaw

__all__ = ["touches", "without_nodes", "mentions"]


def touches(change: Change, ids: set[str] | frozenset[str]) -> bool:
    """Whether ``change`` is of one of the nodes ``ids`` or of an edge that touches one.

    >>> touches(Change("node_added", None, Node("s", "fact", {}, 1)), {"s"})
    True
    """
    payload = change.after if change.after is not None else change.before
    if isinstance(payload, Node):
        return payload.id in ids
    return payload.source in ids or payload.target in ids


def _without(value: Any, ids: set[str] | frozenset[str]) -> Any:
    """``value`` (plain JSON) without the items that name one of ``ids``."""
    if isinstance(value, dict):
        return {k: _without(v, ids) for k, v in value.items() if not (isinstance(v, str) and v in ids)}
    if isinstance(value, list):
        return [_without(v, ids) for v in value if not (isinstance(v, str) and v in ids)]
    return value


def without_nodes(commit: Commit, ids: Iterable[str]) -> Commit:
    """``commit`` without the changes of the nodes ``ids`` and their edges, and without the
    staleness marks of those nodes (the same commit when it never named them).

    >>> c = Commit(2, "me", "mark", None, 0.0, (), dirtied=({"id": "s", "state": "stale"}, {"id": "g", "because": ["s"]}))
    >>> [dict(d) for d in without_nodes(c, {"s"}).dirtied]
    [{'id': 'g', 'because': ()}]
    """
    gone = frozenset(ids)
    changes = tuple(c for c in commit.changes if not touches(c, gone))
    dirtied = tuple(freeze(_without(thaw(d), gone)) for d in commit.dirtied if d.get("id") not in gone)
    if len(changes) == len(commit.changes) and dirtied == commit.dirtied:
        return commit
    return attrs.evolve(commit, changes=changes, dirtied=dirtied)


def mentions(record_text: str, ids: Iterable[str]) -> bool:
    """A quick test on a journal record's JSON text: False means it cannot name any of
    ``ids`` (True means it may; decode it to know).

    >>> mentions('{"changes": [{"after": {"id": "g"}}]}', ["s"]), mentions('{"id": "s"}', ["s"])
    (False, True)
    """
    import json

    return any(json.dumps(i, ensure_ascii=False) in record_text for i in ids)
