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

__all__ = ["rank_texts", "SummaryVectors", "DEFAULT_SCENARIOS"]

DEFAULT_SCENARIOS = 3
"""How many scenarios the coarse step keeps (``locate(coarse=True, scenarios=...)``)."""


def _sparse_norm(vector: dict) -> float:
    return math.sqrt(sum(v * v for v in vector.values())) or 1.0


def rank_texts(embedder: Any, query: str, texts: Sequence[tuple[str, str]], vectors: Sequence[Any] | None = None) -> list[tuple[str, float]]:
    """``(name, score)`` for each ``(name, text)``, best first (ties in the given order);
    ``vectors`` are the texts' embeddings when already made."""
    if not texts:
        return []
    docs = list(vectors) if vectors is not None else embedder.embed_documents([t for _, t in texts])
    raw = embedder.embed_query(query)
    scores: list[float] = []
    if isinstance(raw, dict):
        df: dict[int, int] = {}
        for doc in docs:
            for fid in doc:
                df[fid] = df.get(fid, 0) + 1
        n = len(docs)
        weighted = {fid: tf * math.log((n + 1) / (df.get(fid, 0) + 0.5)) for fid, tf in raw.items() if fid in df}
        q_norm = _sparse_norm(weighted)
        for doc in docs:
            d_norm = _sparse_norm(doc)
            dot = sum(w * doc.get(fid, 0.0) for fid, w in weighted.items())
            scores.append(max(0.0, dot / (q_norm * d_norm)))
    else:
        q_norm = math.sqrt(sum(x * x for x in raw)) or 1.0
        for doc in docs:
            d_norm = math.sqrt(sum(x * x for x in doc)) or 1.0
            scores.append(sum(a * b for a, b in zip(raw, doc)) / (q_norm * d_norm))
    order = sorted(range(len(texts)), key=lambda i: -scores[i])
    return [(texts[i][0], scores[i]) for i in order]


class SummaryVectors:
    """Embeddings of summary texts, kept by summary id and text (a changed text is embedded
    again), so the coarse step embeds only the request per locate.

    >>> cache = SummaryVectors()
    >>> e = HashedTfidfEmbedder()
    >>> cache.vectors(e, [("s1", "a b"), ("s2", "c")]) == e.embed_documents(["a b", "c"]), len(cache)
    (True, 2)
    """

    def __init__(self) -> None:
        self._by_id: dict[str, tuple[str, str, Any]] = {}  # id -> (embedder name, text, vector)

    def __len__(self) -> int:
        return len(self._by_id)

    def vectors(self, embedder: Any, texts: Iterable[tuple[str, str]]) -> list[Any]:
        name = getattr(embedder, "name", type(embedder).__name__)
        texts = list(texts)
        missing = [(i, t) for i, (sid, t) in enumerate(texts) if self._by_id.get(sid, (None, None))[:2] != (name, t)]
        if missing:
            made = embedder.embed_documents([t for _, t in missing])
            for (i, text), vector in zip(missing, made):
                self._by_id[texts[i][0]] = (name, text, vector)
        wanted = {sid for sid, _ in texts}
        for stale in [sid for sid in self._by_id if sid not in wanted]:
            del self._by_id[stale]
        return [self._by_id[sid][2] for sid, _ in texts]
