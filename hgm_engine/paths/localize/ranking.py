"""Ranking: the recalled candidates merged by structure, every structure scored with the
components of :mod:`.scoring` (the plan vote among them), templates kept back unless nothing
else matched, and superseded and failed versions placed below their replacements.

>>> from hgm_engine.paths.localize import PathIndex, PathRecord
>>> from hgm_engine.paths.localize.recall import recall
>>> index = PathIndex.from_records([PathRecord.create("a", "book a flight", ["flight_search", "book_flight"]),
...                                 PathRecord.create("b", "book a cheap flight", ["flight_search", "book_flight"])])
>>> found = recall(index.contents, index.embedder, "book me a flight", set(), index.config)
>>> [(m.path, m.supporting) for m in rank(index.contents, "book me a flight", found, None, index.config, 5).matches]
[('a', ('a', 'b'))]
"""

from __future__ import annotations

import heapq
from typing import Any, Mapping, Sequence

import attrs

from hgm_engine.paths.localize.contents import IndexContents
from hgm_engine.paths.localize.embedders import feature_id
from hgm_engine.paths.localize.recall import Candidates
from hgm_engine.paths.localize.results import LocateResult, Match
from hgm_engine.paths.localize.scoring import (
    ScoreConfig,
    combine,
    freshness,
    name_votes,
    reward_component,
    sequence_similarity,
    support,
    vote_overlap,
)

__all__ = ["rank", "score_groups", "vote_items", "Scored"]


@attrs.define(slots=True)
class Scored:
    """A scored structure before it becomes a :class:`Match` (only the best k ever do)."""

    score: float
    path: str
    slots: list[int]
    components: dict[str, float]
    status: str
    version: float


def vote_items(names: Sequence[str], pairs: bool) -> list:
    """What a path votes for: its step names, and with ``pairs`` each step followed by the next.

    >>> vote_items(["a", "b"], True)
    ['a', 'b', ('a', 'b')]
    """
    return list(names) + list(zip(names, names[1:])) if pairs else list(names)


def rank(contents: IndexContents, text: str, found: Candidates, expected_steps: Sequence[str] | None,
         cfg: ScoreConfig, k: int) -> LocateResult:
    """The ``k`` best structures among the candidates ``found`` for the request ``text``,
    best first (``expected_steps``: the step names the caller expects, if any)."""
    args = (contents, text, found.similarity, found.tag_score, found.step_evidence, expected_steps, cfg)
    matches = score_groups(*args, False, k)
    if not matches:
        matches = score_groups(*args, True, k)
    matches = _versions_below_replacements(contents, matches)
    found.recalled["structures"] = len(matches)
    return LocateResult(tuple(_match(contents, m) for m in matches[:k]), dict(found.recalled))


def score_groups(contents: IndexContents, text: str, similarity: Mapping[int, float],
                 tag_score: Mapping[int, float], step_evidence: Mapping[str, float],
                 expected_steps: Sequence[str] | None, cfg: ScoreConfig, templates: bool, k: int) -> list[Scored]:
    """Score each candidate structure; enough of them to be sure of the best ``k``.

    ``text``, ``support`` and ``steps`` are computed for every group first; groups are then
    scored fully in that order until no remaining group could reach the current k-th
    score even with every other component at 1 (so pruning never changes the result).
    """
    shape_at = contents.shape_at
    record_at = contents.record_at
    groups: dict[Any, list[int]] = {}
    for slot in similarity:
        shape = shape_at[slot]
        if shape.is_template != templates:
            continue
        key = shape.signature if cfg.merge else slot
        groups.setdefault(key, []).append(slot)
    if not groups:
        return []
    weights = cfg.weights()
    total_weight = sum(weights.values()) or 1.0
    rest_weight = (total_weight - weights["text"] - weights["support"] - weights["steps"]
                   - weights["vote"])
    # The vote is cheap, so it joins the first pass (and the bound that prunes groups).
    votes: dict[str, float] = {}
    if weights["vote"] > 0:
        neighbours = heapq.nlargest(cfg.vote_top, ((v, s) for s, v in similarity.items()
                                                   if v > 0 and not shape_at[s].is_template))
        votes = name_votes(((v, vote_items(shape_at[s].names, cfg.vote_pairs)) for v, s in neighbours),
                           cfg.vote_power)
    vote_total = sum(votes.values())
    replaced = contents.replaced_by
    status_of: dict[int, str] = {}
    version_of: dict[int, float] = {}
    first_pass = []
    for slots in groups.values():
        for slot in slots:
            status = record_at[slot].status
            if status == "active" and record_at[slot].id in replaced:
                status = "superseded"
            status_of[slot] = status
            version_of[slot] = cfg.version_factor(status)
        # Each supporter counts as much as its own version allows.
        if len(slots) > 1:
            slots.sort(key=lambda s: (-similarity[s] * version_of[s], -contents.seq_at[s]))
        head = slots[0]
        text_value = similarity[head]
        support_value = support([similarity[s] * version_of[s] for s in slots],
                                cfg.support_top, cfg.support_power)
        steps_value = min(step_evidence.get(n, 0.0) for n in shape_at[head].names)
        vote_value = (vote_overlap(vote_items(shape_at[head].names, cfg.vote_pairs), votes, vote_total)
                      if votes else 0.0)
        partial = (weights["text"] * text_value + weights["support"] * support_value
                   + weights["steps"] * steps_value + weights["vote"] * vote_value)
        first_pass.append((partial, head, slots, text_value, support_value, steps_value, vote_value))
    first_pass.sort(key=lambda item: (-item[0], record_at[item[1]].id))

    newest_seq = contents.next_seq - 1
    positions: dict[str, float | None] = {}
    query_words: list[int | None] | None = None
    background: dict[int, float] = {}
    scored: list[Scored] = []
    best_scores: list[float] = []   # min-heap of the best full scores so far
    demoted = 0
    for partial, head, slots, text_value, support_value, steps_value, vote_value in first_pass:
        if (len(best_scores) >= k + demoted
                and (partial + rest_weight) / total_weight < best_scores[0]):
            break
        shape = shape_at[head]
        record = record_at[head]
        names = shape.names
        if expected_steps is not None:
            structure = sequence_similarity(list(expected_steps), names)
        elif cfg.use_structure:
            missing = [n for n in names if n not in positions]
            if missing:
                if query_words is None:
                    query_words = [feature_id(w) if w else None for w in contents.lexical.tokens(text)]
                positions.update(contents.profiles.positions(query_words, background, missing))
            structure = shape.order.agreement([positions[n] for n in names])
        else:
            structure = 0.5
        components = {
            "text": text_value,
            "support": support_value,
            "steps": steps_value,
            "structure": structure,
            "tags": max(tag_score.get(s, 0.0) for s in slots),
            "vote": vote_value,
            "order": contents.order_share(shape.signature) if weights["order"] > 0 else 0.0,
            "completeness": shape.completeness,
            "reward": reward_component(record.reward, record.result),
            "freshness": freshness(newest_seq - max(contents.seq_at[s] for s in slots),
                                   cfg.freshness_half_life),
        }
        if not (text_value > 0 or components["tags"] > 0 or steps_value > 0):
            continue
        status = status_of[head]
        score = combine(components, status, cfg)
        if score <= cfg.min_score:
            continue
        scored.append(Scored(score, record.id, slots, components, status, version_of[head]))
        if status in ("superseded", "failed"):
            demoted += 1
        heapq.heappush(best_scores, score)
        if len(best_scores) > k + demoted:
            heapq.heappop(best_scores)
    scored.sort(key=lambda m: (-m.score, m.path))
    return scored


def _match(contents: IndexContents, scored: Scored) -> Match:
    head = scored.slots[0]
    record = contents.record_at[head]
    breakdown = dict(scored.components)
    breakdown["version"] = scored.version
    return Match(
        path=record.id,
        score=scored.score,
        goal=record.goal,
        steps=record.step_names,
        breakdown=breakdown,
        supporting=tuple(contents.record_at[s].id for s in scored.slots),
        paths_with_structure=len(contents.group_slots[contents.shape_at[head].signature]),
        status=scored.status,
        version=record.version,
        structure=record.structure_key,
    )


def _versions_below_replacements(contents: IndexContents, matches: list[Scored]) -> list[Scored]:
    """Move each superseded or failed match just below the lowest-ranked match that holds
    one of its replacements, when that one ranks lower (a guarantee, not just a weight)."""
    ordered = list(matches)
    for match in [m for m in ordered if m.status in ("superseded", "failed")]:
        supporters = {contents.record_at[s].id for s in match.slots}
        replacements: set[str] = set()
        for path_id in supporters:
            replacements |= contents.replacements(path_id)
        replacement_slots = {contents.slot_of[i] for i in replacements - supporters}
        if not replacement_slots:
            continue
        at = ordered.index(match)
        lowest = max((r for r, m in enumerate(ordered) if replacement_slots.intersection(m.slots)),
                     default=-1)
        if lowest > at:
            ordered.pop(at)
            ordered.insert(lowest, match)
    return ordered
