"""Retrieval: the node index a memory keeps — searched by ``search(TEXT)``, ``.rank(TEXT)``
and ``Memory.search`` — and its vectors when an embedder is set.

The lexical index itself (the segments, BM25) is the model layer's
(:mod:`hgm_engine.model.nodeindex`, so the query executor can read it); this package keeps it
for one memory: written in every commit's store transaction, read back when the memory
opens, followed across other processes' commits, and fused with dense vectors made by the
path index's embedders (:mod:`hgm_engine.paths.localize.embedders`).
"""

from __future__ import annotations

from hgm_engine.retrieval.coarse import DEFAULT_SUMMARIES, MAX_SUMMARIES, SearchHits, coarse_hits
from hgm_engine.retrieval.keeper import COMPACT_MIN, DENSE_DEPTH, RRF_K, NodeSearch
from hgm_engine.retrieval.reads import ReadVerbs
from hgm_engine.retrieval.verbs import SearchVerbs
from hgm_engine.retrieval.vectors import EMBEDDER_META_KEY, EMBEDDER_NAMES, EmbedderConfig, VectorIndex, text_key

__all__ = [
    "NodeSearch",
    "SearchVerbs",
    "ReadVerbs",
    "SearchHits",
    "coarse_hits",
    "DEFAULT_SUMMARIES",
    "MAX_SUMMARIES",
    "COMPACT_MIN",
    "DENSE_DEPTH",
    "RRF_K",
    "EMBEDDER_META_KEY",
    "EMBEDDER_NAMES",
    "EmbedderConfig",
    "VectorIndex",
    "text_key",
]
