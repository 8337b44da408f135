"""Recall: the candidate paths of a request, from every channel the index has — text
similarity, entry steps (stored steps that resemble the request), tags, and an optional
expansion from the entry paths (:mod:`.expansion`) — with what each channel brought.

>>> from hgm_engine.paths.localize import PathIndex, PathRecord
>>> index = PathIndex.from_records([PathRecord.create("a", "book a flight", ["flight_search", "book_flight"]),
...                                 PathRecord.create("b", "cancel my hotel", ["hotel_cancel"])])
>>> found = recall(index.contents, index.embedder, "book me a flight", set(), index.config)
>>> [index.contents.record_at[slot].id for slot in found.similarity], dict(found.recalled)["candidates"]
(['a'], 1)
"""

from __future__ import annotations

import heapq
import operator
from collections import Counter
from typing import Any, Callable, Iterable

import attrs

from hgm_engine.paths.localize.contents import IndexContents
from hgm_engine.paths.localize.postings import SparsePostings
from hgm_engine.paths.localize.results import Expander
from hgm_engine.paths.localize.scoring import ScoreConfig, jaccard

__all__ = ["Candidates", "recall"]

_second = operator.itemgetter(1)


@attrs.define
class Candidates:
    """The recalled paths by slot: their text ``similarity`` to the request and ``tag_score``
    (Jaccard of tags); per step name, the ``step_evidence`` that the request asks for such a
    step; and ``recalled``, how many candidates each channel brought."""

    similarity: dict[int, float]
    tag_score: dict[int, float]
    step_evidence: dict[str, float]
    recalled: Counter


def _exact_similarity(contents: IndexContents, query_vector: Any, slot: int) -> float:
    if query_vector is None:
        return 0.0
    return max(0.0, contents.text.similarity(query_vector, slot))


def recall(contents: IndexContents, embedder: Any, text: str, query_tags: set[str], cfg: ScoreConfig, *,
           scenario: str | None = None, cross_scenario: bool = False, excluded: Iterable[str] = frozenset(),
           expand: Expander | None = None) -> Candidates:
    """The candidates of ``contents`` for the request ``text`` with ``query_tags`` (``embedder``
    makes the text's vector): the options are :meth:`PathIndex.locate
    <hgm_engine.paths.localize.PathIndex.locate>`'s, ``excluded`` the path ids to leave out."""
    excluded = set(excluded)

    def eligible(slot: int) -> bool:
        record = contents.record_at[slot]
        if record.id in excluded:
            return False
        if scenario is not None and not cross_scenario:
            return record.scenario is None or record.scenario == scenario
        return True

    recalled: Counter = Counter()
    similarity: dict[int, float] = {}
    query_vector: Any = None
    # Candidates that other channels bring still need their text similarity.
    exact: Callable[[int], float] = lambda slot: _exact_similarity(contents, query_vector, slot)
    keep = eligible if (excluded or (scenario is not None and not cross_scenario)) else None
    if text.strip() and len(contents.text):
        raw = embedder.embed_query(text)
        query_vector = contents.text.query_vector(raw)
        if isinstance(contents.text, SparsePostings):
            best, exact = contents.text.search(query_vector, cfg.recall_paths, keep)
        else:
            hits = contents.text.top(query_vector, cfg.recall_paths + len(excluded))
            best = heapq.nlargest(cfg.recall_paths,
                                  ((s, v) for s, v in hits.items() if keep is None or keep(s)),
                                  key=_second)
        similarity.update((s, v) for s, v in best if v > 0)
        recalled["text"] = len(similarity)

    # Entry steps: stored steps that resemble the request. They bring their paths in and
    # tell, per step name, how strongly the request asks for such a step.
    step_evidence: dict[str, float] = {}
    if text.strip() and len(contents.steps) and (cfg.use_steps or cfg.recall_steps):
        step_query = contents.steps.query_vector(contents.lexical.features(text))
        owner = contents.step_owner
        step_keep = None if keep is None else (lambda d: keep(owner[d][0]))
        best_steps, _ = contents.steps.search(step_query, cfg.recall_steps, step_keep)
        added = 0
        for doc, value in best_steps:
            if value <= 0:
                continue
            slot, name = owner[doc]
            if value > step_evidence.get(name, 0.0):
                step_evidence[name] = value
            if slot not in similarity:
                similarity[slot] = exact(slot)
                added += 1
        recalled["entry_steps"] = len(best_steps)
        recalled["from_steps"] = added

    tag_score: dict[int, float] = {}
    if query_tags:
        tagged: set[int] = set()
        for tag in query_tags:
            tagged |= contents.tag_slots.get(tag, set())
        if keep is not None:
            tagged = {s for s in tagged if keep(s)}
        # A tag shared by half the memory recalls nothing useful: then tags only re-rank.
        if len(tagged) <= cfg.recall_paths or not similarity:
            newest = sorted(tagged, key=lambda s: -contents.seq_at[s])[: max(cfg.recall_paths, 1)]
            for slot in newest:
                if slot not in similarity:
                    similarity[slot] = exact(slot)
                    recalled["from_tags"] += 1

    if expand is not None and similarity and cfg.expand_limit > 0:
        entry_ids = [contents.record_at[s].id for s in sorted(similarity, key=lambda s: -similarity[s])]
        added = 0
        for path_id in expand(entry_ids):
            slot = contents.slot_of.get(path_id)
            if slot is None or slot in similarity or (keep is not None and not keep(slot)):
                continue
            similarity[slot] = exact(slot)
            added += 1
            if added >= cfg.expand_limit:
                break
        recalled["expanded"] = added

    for slot in similarity:
        record = contents.record_at[slot]
        tag_score[slot] = jaccard(query_tags, record.tags) if query_tags else 0.0
    recalled["candidates"] = len(similarity)
    return Candidates(similarity, tag_score, step_evidence, recalled)
