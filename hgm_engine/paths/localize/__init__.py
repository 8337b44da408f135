"""Path-level localization: find the stored decision paths that fit a new request.

A :class:`PathIndex` holds :class:`PathRecord` s (trajectories with versions), updated one
commit at a time, and answers :meth:`PathIndex.locate` with :class:`Match` es whose
``breakdown`` names every part of their score (:mod:`.scoring`). Embedders are pluggable
(:class:`Embedder`): the model-free :class:`HashedTfidfEmbedder` (default), a local
sentence-transformers model, or any OpenAI-compatible endpoint. :mod:`.taskplan` reads the
GNN4TaskPlan data sets used to evaluate all this (``bench/localize``).

>>> from hgm_engine.paths.localize import PathIndex, PathRecord
>>> index = PathIndex.from_records([
...     PathRecord.create("a", "book a flight to Paris", ["flight_search", "book_flight"]),
...     PathRecord.create("b", "cancel my hotel booking", ["hotel_query", "hotel_cancel"]),
... ])
>>> index.locate("please book me a flight to Rome", k=1).matches[0].steps
('flight_search', 'book_flight')
"""

from __future__ import annotations

from hgm_engine.paths.localize.embedders import (
    Embedder,
    HashedTfidfEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    embedder_from_name,
)
from hgm_engine.paths.localize.index import INDEX_BYTES_FORMAT, INDEX_STATE_FORMAT, Expander, LocateResult, Match, PathIndex
from hgm_engine.paths.localize.records import PATH_RESULTS, PATH_STATUSES, PathRecord, Step
from hgm_engine.paths.localize.scoring import COMPONENTS, DENSE_SCORE_CONFIG, ScoreConfig, StepOrder, order_agreement
from hgm_engine.paths.localize.taskplan import request_to_trajectory

__all__ = [
    "PathIndex",
    "PathRecord",
    "Step",
    "Match",
    "LocateResult",
    "Expander",
    "ScoreConfig",
    "DENSE_SCORE_CONFIG",
    "COMPONENTS",
    "StepOrder",
    "order_agreement",
    "Embedder",
    "HashedTfidfEmbedder",
    "SentenceTransformerEmbedder",
    "OpenAIEmbedder",
    "embedder_from_name",
    "PATH_STATUSES",
    "PATH_RESULTS",
    "INDEX_STATE_FORMAT",
    "INDEX_BYTES_FORMAT",
    "request_to_trajectory",
]
