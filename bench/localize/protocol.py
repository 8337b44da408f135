"""Who is a query, who is memory, and how sure the figures are: splits and bootstrap intervals.

Three kinds of split, all fixed by seeds written here so every run draws the same ones:

- **development** — :data:`DEV_SIZE` requests drawn (seed :data:`DEV_SEED`) from the *memory side*
  of UltraTool's published split (the requests not in ``test_ids.chain``). Tuning locates each
  of them against the rest of that memory side (leave-one-out). No test request of any split is
  ever a development query, and no development request is ever a test query.
- **published** — memory = every request not in ``test_ids.chain``; queries = those 500.
- **random folds** — every request outside the development set (the published test ids
  included) is shuffled with seed
  :data:`FOLD_SEED` and cut into :data:`FOLDS` folds of (almost) equal size; fold ``i`` is the
  queries, every other request (the development set included) is memory. Each request outside
  the development set is a query in exactly one fold, so the mean over the folds is the rate
  over all of them.

TMDB (100 requests) is too small for folds: it is leave-one-out over its 100 requests, and
nothing is ever tuned on it.

Intervals: a 95% percentile bootstrap over the queries (:func:`bootstrap_interval`), and for a
difference between two systems on the same queries, the paired bootstrap
(:func:`paired_interval`): the same resampled queries for both, so what they share cancels.

>>> bootstrap_interval([1, 0, 1, 1], reps=200, seed=1)[0] <= 0.75 <= bootstrap_interval([1, 0, 1, 1], reps=200, seed=1)[1]
True
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = [
    "DEV_SEED", "DEV_SIZE", "FOLD_SEED", "FOLDS", "BOOTSTRAP_REPS",
    "dev_rows", "fold_splits", "bootstrap_interval", "paired_interval", "hits_at",
]

DEV_SEED = 14
DEV_SIZE = 1000
FOLD_SEED = 2024
FOLDS = 5
BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 7


def _by_id(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(rows, key=lambda r: int(r["id"]) if str(r["id"]).isdigit() else str(r["id"]))


def dev_rows(data: Any, size: int = DEV_SIZE, seed: int = DEV_SEED) -> list[Mapping[str, Any]]:
    """The development requests: ``size`` drawn from the published split's memory side."""
    memory = _by_id(data.memory_rows())
    return random.Random(seed).sample(memory, min(size, len(memory)))


def fold_splits(data: Any, folds: int = FOLDS, seed: int = FOLD_SEED
                ) -> list[tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]]:
    """``folds`` pairs (memory rows, query rows): the non-development requests, shuffled and
    cut into folds; each fold is queried against everything else (development included)."""
    dev_ids = {str(r["id"]) for r in dev_rows(data)}
    pool = [r for r in _by_id(data.rows) if str(r["id"]) not in dev_ids]
    random.Random(seed).shuffle(pool)
    cuts = [pool[i::folds] for i in range(folds)]
    splits = []
    for chunk in cuts:
        held = {str(r["id"]) for r in chunk}
        memory = [r for r in data.rows if str(r["id"]) not in held]
        splits.append((memory, chunk))
    return splits


def hits_at(ranks: Sequence[int | None], k: int) -> np.ndarray:
    """Per query, 1.0 when the gold structure is within the first ``k`` results."""
    return np.array([1.0 if r is not None and r <= k else 0.0 for r in ranks])


def bootstrap_interval(values: Sequence[float], *, reps: int = BOOTSTRAP_REPS, seed: int = BOOTSTRAP_SEED,
                       level: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of per-query ``values``."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(reps, data.size))].mean(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def paired_interval(a: Sequence[float], b: Sequence[float], *, reps: int = BOOTSTRAP_REPS,
                    seed: int = BOOTSTRAP_SEED, level: float = 0.95) -> dict[str, float]:
    """Mean of ``a - b`` over the same queries and its paired bootstrap interval.

    >>> r = paired_interval([1, 1, 1, 0], [0, 1, 0, 0], reps=200)
    >>> r["difference"], r["low"] >= 0
    (0.5, True)
    """
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    low, high = bootstrap_interval(diff, reps=reps, seed=seed, level=level)
    return {"difference": float(diff.mean()) if diff.size else float("nan"), "low": low, "high": high}
