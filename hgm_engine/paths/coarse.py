"""Coarse-to-fine locate: read the scenario summaries first, then locate only among the
paths of the scenarios they point to (docs/time.md, as G-Memory and HiGram do).

The summaries are the ``kind: 'summary'`` nodes that ``Memory.summarize`` makes for scenario
goals. They are ranked against the request with the path index's own embedder (sparse
vectors: log tf with the IDF of the summaries, cosine — SMART ``lnc.ltc``, as the index
ranks paths; dense vectors: cosine), and the best ``scenarios`` of them choose where the
fine step looks. Paths of no scenario stay eligible (no summary covers them). When no
summary matches the request, the fine step is the flat locate, and the explanation says so.

>>> ranked = rank_texts(HashedTfidfEmbedder(), "refund an order", [("s1", "Refund orders: 3 paths"), ("s2", "Book a hotel")])
>>> [(name, round(score, 3)) for name, score in ranked]
[('s1', 0.707), ('s2', 0.0)]
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from hgm_engine.paths.localize import HashedTfidfEmbedder

__all__ = ["rank_texts", "SummaryVectors", "DEFAULT_SCENARIOS", "fuse_order", "FUSION"]

DEFAULT_SCENARIOS = 3
"""How many scenarios the coarse step keeps (``locate(coarse=True, scenarios=...)``)."""

FUSION: dict[str, Any] = {"scenarios": 1, "weight": 0.25, "k": 5, "depth": 50}
"""The fused coarse-to-fine locate's settings (``locate(coarse=True, fuse=True)``): how many
scenarios the coarse step ranks (when ``scenarios`` is not given), the weight of a scenario's
reciprocal rank against the flat one, the RRF constant, and how many flat matches are re-ranked.
Tuned on the development split only (``bench/rollup_tune.py``, every trial logged in
``bench/results/rollup-tuning.json``: the best of 100 settings, dev hit@5 0.681 against flat's
0.676 — within noise) and frozen before the one test run (``bench/time_bench.py``)."""


def fuse_order(flat_scenarios: Sequence[Iterable[str | None]], scenario_rank: dict[str, int], *,
               weight: float, k: float) -> list[int]:
    """The flat matches re-ranked by reciprocal-rank fusion with the coarse step: match ``i``
    (0-based, flat order) scores ``1 / (k + i + 1)`` plus ``weight / (k + r)`` where ``r`` is
    the best rank (1-based) among the chosen scenarios of its paths (nothing when none of
    them is chosen). Returns the match positions best first (ties keep the flat order).

    >>> fuse_order([["a"], ["b"], [None]], {"b": 1}, weight=1.0, k=60)
    [1, 0, 2]
    >>> fuse_order([["a"], ["b"]], {}, weight=1.0, k=60)
    [0, 1]
    """
    scores = []
    for position, scenarios in enumerate(flat_scenarios):
        ranks = [scenario_rank[s] for s in scenarios if s in scenario_rank]
        bonus = weight / (k + min(ranks)) if ranks else 0.0
        scores.append(1.0 / (k + position + 1) + bonus)
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def _sparse_norm(vector: dict) -> float:
    return math.sqrt(sum(v * v for v in vector.values())) or 1.0


def rank_texts(embedder: Any, query: str, texts: Sequence[tuple[str, str]], vectors: Sequence[Any] | None = None) -> list[tuple[str, float]]:
    """``(name, score)`` for each ``(name, text)``, best first (ties in the given order);
    ``vectors`` are the texts' embeddings when already made."""
    if not texts:
        return []
    docs = vectors if vectors is not None else embedder.embed_documents([t for _, t in texts])
    raw = embedder.embed_query(query)
    scores: list[float] = []
    if isinstance(raw, dict):
        postings, norms = _postings(docs)
        n = len(docs)
        weighted = {fid: tf * math.log((n + 1) / (len(postings[fid]) + 0.5)) for fid, tf in raw.items() if fid in postings}
        q_norm = _sparse_norm(weighted)
        dots = [0.0] * n
        for fid, weight in weighted.items():
            for i, value in postings[fid]:
                dots[i] += weight * value
        scores = [max(0.0, dot / (q_norm * norm)) for dot, norm in zip(dots, norms)]
    else:
        q_norm = math.sqrt(sum(x * x for x in raw)) or 1.0
        for doc in docs:
            d_norm = math.sqrt(sum(x * x for x in doc)) or 1.0
            scores.append(sum(a * b for a, b in zip(raw, doc)) / (q_norm * d_norm))
    order = sorted(range(len(texts)), key=lambda i: -scores[i])
    return [(texts[i][0], scores[i]) for i in order]


_PREPARED: dict[int, tuple[list, dict, list]] = {}  # id(docs list) -> (docs, postings, norms)


def _postings(docs: list) -> tuple[dict, list]:
    """Feature -> [(doc, value)] and each doc's norm, kept for the last lists of vectors seen
    (the summaries change rarely; a locate should not walk every summary's features)."""
    key = id(docs)
    found = _PREPARED.get(key)
    if found is not None and found[0] is docs:
        return found[1], found[2]
    postings: dict[int, list] = {}
    for i, doc in enumerate(docs):
        for fid, value in doc.items():
            postings.setdefault(fid, []).append((i, value))
    norms = [_sparse_norm(doc) for doc in docs]
    if len(_PREPARED) > 8:
        _PREPARED.clear()
    _PREPARED[key] = (docs, postings, norms)
    return postings, norms


class SummaryVectors:
    """Embeddings of summary texts, kept by summary id and text (a changed text is embedded
    again), so the coarse step embeds only the request per locate.

    >>> cache = SummaryVectors()
    >>> e = HashedTfidfEmbedder()
    >>> first = cache.vectors(e, [("s1", "a b"), ("s2", "c")])
    >>> first == e.embed_documents(["a b", "c"]), len(cache), cache.vectors(e, [("s1", "a b"), ("s2", "c")]) is first
    (True, 2, True)
    """

    def __init__(self) -> None:
        self._by_id: dict[str, tuple[str, str, Any]] = {}  # id -> (embedder name, text, vector)
        self._last: tuple[Any, list] | None = None  # (the texts asked for, their vectors)

    def __len__(self) -> int:
        return len(self._by_id)

    def vectors(self, embedder: Any, texts: Iterable[tuple[str, str]]) -> list[Any]:
        name = getattr(embedder, "name", type(embedder).__name__)
        texts = list(texts)
        key = (name, tuple(texts))
        if self._last is not None and self._last[0] == key:
            return self._last[1]  # the same list: its postings are kept (rank_texts)
        missing = [(i, t) for i, (sid, t) in enumerate(texts) if self._by_id.get(sid, (None, None))[:2] != (name, t)]
        if missing:
            made = embedder.embed_documents([t for _, t in missing])
            for (i, text), vector in zip(missing, made):
                self._by_id[texts[i][0]] = (name, text, vector)
        wanted = {sid for sid, _ in texts}
        for stale in [sid for sid in self._by_id if sid not in wanted]:
            del self._by_id[stale]
        vectors = [self._by_id[sid][2] for sid, _ in texts]
        self._last = (key, vectors)
        return vectors
