"""Summaries-first search (coarse-to-fine, as G-Memory and HiGram do; docs/time.md).

``Memory.search(text, coarse=True, summaries=N)`` reads the **summary nodes first** (the
``kind: 'summary'`` facts that ``Memory.summarize`` makes, of a scenario or of any subtree):
each is scored for the request with the node index's own BM25 (the memory's term statistics,
so a summary scores as it would in a flat search), and the best ``N`` that hold a word of the
request are chosen. The **fine step** then ranks the nodes those summaries cover (their
``summarizes`` edges), together with the nodes no summary covers; the nodes covered only by
summaries that were not chosen are left out, and so are the summaries themselves (the coarse
step showed them; ``fine.ranked`` counts the nodes the fine step could answer with,
``fine.left_out`` those under summaries not chosen). When no summary matches, the fine step is the flat search, and the
explanation says so.

The answer is a :class:`SearchHits` list (the hits, each with ``via``: the chosen summary
that covers it, or None) whose ``coarse`` attribute explains both steps.

>>> from hgm_engine.model import MemoryGraph
>>> g = MemoryGraph.from_records(
...     [("refunds", "goal", {"content": "Refunds"}), ("r1", "action", {"content": "Refund the broken mug"}),
...      ("hotels", "goal", {"content": "Hotels"}), ("h1", "action", {"content": "Book a room, refund policy read"}),
...      ("s-r", "fact", {"kind": "summary", "summary_of": "refunds", "content": "Refunds of broken orders"}),
...      ("s-h", "fact", {"kind": "summary", "summary_of": "hotels", "content": "Hotel bookings"})],
...     [("refunds", "r1", "parent_of", {}), ("hotels", "h1", "parent_of", {}),
...      ("s-r", "refunds", "summarizes", {}), ("s-r", "r1", "summarizes", {}),
...      ("s-h", "hotels", "summarizes", {}), ("s-h", "h1", "summarizes", {})])
>>> hits, explanation, via = coarse_hits(g, "refund a broken order", summaries=1)
>>> [hit.id for hit in hits], via["r1"], [c["summary"] for c in explanation["chosen"]]
(['r1', 'refunds'], 's-r', ['s-r'])
>>> explanation["fine"]["left_out"]
2
"""

from __future__ import annotations

from typing import Any, Callable

from hgm_engine.model.nodeindex import index_for, query_terms, searcher_for
from hgm_engine.txn import SUMMARIZES, SUMMARY_KIND

__all__ = ["SearchHits", "coarse_hits", "DEFAULT_SUMMARIES", "MAX_SUMMARIES", "summaries_problem"]

DEFAULT_SUMMARIES = 3
"""How many summaries the coarse step keeps (``search(coarse=True, summaries=...)``)."""
MAX_SUMMARIES = 1000
"""The most summaries one search may keep."""

# The fine step asks the searcher for this many hits per hit wanted before it asks for all:
# most of the best hits usually lie under the chosen summaries.
_OVERFETCH = 4
_MIN_FETCH = 64


class SearchHits(list):
    """The hits of a search (a list, as ``Memory.search`` always gives), with ``coarse``: what
    the summaries-first steps did (None for a flat search).

    >>> hits = SearchHits([{"id": "a"}], coarse={"summaries": 0}); hits == [{"id": "a"}], hits.coarse
    (True, {'summaries': 0})
    """

    def __init__(self, hits=(), coarse: dict[str, Any] | None = None):
        super().__init__(hits)
        self.coarse = coarse


def summaries_problem(coarse: Any, summaries: Any) -> str | None:
    """What is wrong with the ``coarse``/``summaries`` options, or None.

    >>> summaries_problem(True, 0), summaries_problem("yes", 3) is not None, summaries_problem(False, 3)
    ('summaries must be an integer from 1 to 1000, not 0', True, None)
    """
    if not isinstance(coarse, bool):
        return f"coarse must be true or false, not {coarse!r}"
    if isinstance(summaries, bool) or not isinstance(summaries, int) or not 1 <= summaries <= MAX_SUMMARIES:
        return f"summaries must be an integer from 1 to {MAX_SUMMARIES}, not {summaries!r}"
    return None


def _members(view, summary_id: str) -> tuple[str, ...]:
    return tuple(view.out_adjacency(summary_id).by_type.get(SUMMARIZES, ()))


def coarse_hits(
    view,
    text: str,
    *,
    summaries: int = DEFAULT_SUMMARIES,
    node_type: str | None = None,
    limit: int | None = None,
    charge: Callable[[int], None] | None = None,
) -> tuple[list, dict[str, Any], dict[str, str | None]]:
    """``(hits, explanation, via)``: the searcher's hits of the fine step (at most ``limit``,
    of ``node_type`` only when given), what each step did, and for each hit the chosen
    summary that covers it (None: no summary does). See the module's text."""
    terms = query_terms(text)
    lexical = index_for(view)
    found = [node for node in view.nodes_with("fact", "kind", SUMMARY_KIND)]
    if charge is not None:
        charge(len(found))
    idf, avgdl = lexical.weights(terms)
    scored = []
    for node in found:
        doc = lexical.doc(node.id)
        score = lexical.score(doc, terms, idf, avgdl)[0] if doc is not None and idf else 0.0
        scored.append((-score, node.seq, node))
    scored.sort(key=lambda item: (item[0], item[1]))
    chosen = [(node, -negative) for negative, _, node in scored[:summaries] if negative < 0]
    stale = {node.id for node in found if node.attrs.get("dirty")}
    explanation: dict[str, Any] = {
        "summaries": len(found),
        "chosen": [
            {"summary": node.id, "summary_of": node.attrs.get("summary_of"), "score": round(score, 6),
             "covers": len(_members(view, node.id)), "needs_review": node.id in stale}
            for node, score in chosen
        ],
    }
    searcher = searcher_for(view)
    if not chosen:
        explanation["fallback"] = "no summary matches the request: every node was ranked (flat)"
        hits = searcher.hits(view, text, terms, top=limit, node_type=node_type, charge=charge)
        explanation["fine"] = {"ranked": len(view), "left_out": 0, "hits": [hit.id for hit in hits]}
        return hits, explanation, {hit.id: None for hit in hits}
    via: dict[str, str] = {}
    for node, _ in chosen:
        for member in _members(view, node.id):
            via.setdefault(member, node.id)
    summary_ids = {node.id for node in found}
    covered: set[str] = set()
    for node in found:
        covered.update(_members(view, node.id))
    if charge is not None:
        charge(len(covered))
    left_out = len(covered.difference(via, summary_ids))  # under summaries not chosen only

    def eligible(node_id: str) -> bool:
        return node_id in via or (node_id not in covered and node_id not in summary_ids)

    top = None if limit is None else max(limit * _OVERFETCH, _MIN_FETCH)
    while True:
        ranked = searcher.hits(view, text, terms, top=top, node_type=node_type, charge=charge)
        hits = [hit for hit in ranked if eligible(hit.id)]
        if top is None or len(ranked) < top or len(hits) >= limit:
            break
        top = None  # not enough under the chosen summaries among the first: rank every match
    if limit is not None:
        hits = hits[:limit]
    explanation["fine"] = {"ranked": len(view) - len(summary_ids) - left_out, "left_out": left_out,
                           "hits": [hit.id for hit in hits]}
    return hits, explanation, {hit.id: via.get(hit.id) for hit in hits}
