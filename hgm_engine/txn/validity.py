"""What holds about an entity at a time: its facts with their valid time and what
superseded what (``hgm facts``, ``Memory.facts``; docs/time.md).

A fact is about an entity when a ``related_to`` edge joins them (either way); the facts a
related fact superseded or was superseded by (``replaces`` edges, as ``invalidate`` links
them) come along even when only the newest is related, so the whole story shows.

>>> from hgm_engine.model import MemoryGraph
>>> g = MemoryGraph()
>>> _ = g.add_node("e", "entity", {"content": "Hotel"})
>>> _ = g.add_node("f1", "fact", {"content": "780 CNY", "valid_to": "2026-06-01"})
>>> _ = g.add_node("f2", "fact", {"content": "820 CNY", "valid_from": "2026-06-01"})
>>> _ = g.add_edge("e", "f2", "related_to"); _ = g.add_edge("f2", "f1", "replaces")
>>> doc = facts_about(g, "e", "2026-03-01")
>>> doc["holding"], [(f["id"], f["holds"], f["superseded_by"]) for f in doc["facts"]]
(['f1'], [('f1', True, ['f2']), ('f2', False, [])])
"""

from __future__ import annotations

import datetime
from typing import Any

from hgm_engine.errors import Problem, RequestError
from hgm_engine.model import VALID_FROM, VALID_TO, GraphView, format_instant, holds_at, parse_instant
from hgm_engine.txn.ops import INVALIDATED_REASON

__all__ = ["facts_about", "MAX_FACTS"]

MAX_FACTS = 10_000
"""The most facts ``facts_about`` lists for one entity (the rest are counted, not listed)."""


def facts_about(view: GraphView, entity: str, at: str | None = None, *, limit: int = MAX_FACTS) -> dict[str, Any]:
    """The facts about ``entity`` in ``view`` and which of them hold at ``at`` (an ISO 8601
    time; None: now, by this machine's clock). Holding facts come first, then the others,
    each group in creation order.

    Raises :class:`RequestError`: ``unknown-node`` (no such node), ``invalid-argument`` (an
    ``at`` that is not ISO 8601).

    >>> from hgm_engine.model import MemoryGraph
    >>> facts_about(MemoryGraph(), "nope")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: unknown-node at nope: no node 'nope'
    """
    if not isinstance(entity, str) or view.node(entity) is None:
        raise RequestError([Problem("unknown-node", f"no node {entity!r}", where=str(entity))])
    if at is None:
        instant = datetime.datetime.now(datetime.timezone.utc).timestamp()
        at_text = format_instant(instant)
    else:
        instant = parse_instant(at)
        if instant is None:
            shown = repr(at[:60]) if isinstance(at, str) else type(at).__name__
            raise RequestError(
                [Problem("invalid-argument", f"at must be an ISO 8601 date or date-time (e.g. 2026-03-01), not {shown}", where="at")]
            )
        at_text = at
    nodes = view.node_map()
    related: dict[str, None] = {}
    for direction in (view.out_adjacency(entity), view.in_adjacency(entity)):
        for other in direction.by_type.get("related_to", ()):
            if nodes[other].type == "fact":
                related[other] = None
    # the replaces chains through each related fact, both ways
    found = dict(related)
    frontier = list(related)
    while frontier and len(found) <= limit:
        current = frontier.pop()
        for other in (*view.out_adjacency(current).by_type.get("replaces", ()), *view.in_adjacency(current).by_type.get("replaces", ())):
            if other not in found:
                found[other] = None
                frontier.append(other)
    ordered = sorted(found, key=lambda node_id: nodes[node_id].seq)
    listed = ordered[:limit]
    facts = [_fact(view, nodes[node_id], instant) for node_id in listed]
    facts.sort(key=lambda fact: not fact["holds"])  # stable: creation order within each group
    return {
        "id": entity,
        "at": at_text,
        "holding": [fact["id"] for fact in facts if fact["holds"]],
        "facts": facts,
        "more": len(ordered) - len(listed),
    }


def _fact(view: GraphView, node: Any, instant: float) -> dict[str, Any]:
    attributes = node.attrs
    return {
        "id": node.id,
        "content": attributes.get("content"),
        VALID_FROM: attributes.get(VALID_FROM),
        VALID_TO: attributes.get(VALID_TO),
        "holds": holds_at(attributes, instant),
        "supersedes": list(view.out_adjacency(node.id).by_type.get("replaces", ())),
        "superseded_by": list(view.in_adjacency(node.id).by_type.get("replaces", ())),
        "reason": attributes.get(INVALIDATED_REASON),
    }
