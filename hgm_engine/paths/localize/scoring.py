"""The localization score: named components in [0, 1], a weighted mean, a version factor.

A located result is a *structure* (an ordered step sequence) backed by the stored paths that
followed it. Its score is::

    score = version × Σ_c w_c · c / Σ_c w_c

over these components, every one returned in ``breakdown``:

``text``
    similarity of the request to the best supporting path's goal and steps (cosine of the
    embedder's vectors; for the default embedder, TF-IDF ``lnc.ltc`` with the IDF learned from
    the indexed paths).
``support``
    evidence aggregated over the supporting paths the text recall found:
    ``(Σ_{i ≤ m} s_i^γ) / m`` over the ``m`` best similarities ``s_i``. Several requests that
    were solved the same way and resemble this one outweigh one look-alike.
``steps``
    how well the request evidences *every* step: for each step name, the best similarity of
    the request to a stored step with that name (entry-step recall); the component is the
    minimum over the path's steps, so a path with a step the request never asks for loses.
``structure``
    whether the request mentions the steps in the path's order. Each step name has a lexical
    profile learned from the stored step texts; the request's words that the profile favours
    (positive PMI) place the step in the request, and the component is the fraction of ordered
    step pairs whose places agree (0.5 when nothing can be compared). When the caller passes
    the steps it expects, it is instead their sequence similarity ``2·LCS/(|a|+|b|)``.
``tags``
    Jaccard overlap of the query tags and the path's tags (0 when the query has none).
``completeness``
    the path's own shape: a goal, steps whose edges join them into one acyclic sequence from
    one entry to one exit, and a known result; the fraction of those checks that hold.
``reward``
    the stored reward clamped to [0, 1]; without one, 1 for success, 0.5 pending, 0 failure.
``freshness``
    ``0.5 ** (age / half_life)``, age counted in paths added since (creation order).

``version`` multiplies the weighted mean: 1 for an active path, lower for superseded and
failed ones (and a superseded or failed result is in any case moved below a replacement that
is also in the list). Templates are not scored against real paths at all: they are returned
only when nothing else is.

>>> cfg = ScoreConfig()
>>> components = {"text": 0.8, "support": 0.5, "steps": 0.6, "structure": 1.0, "tags": 0.0,
...               "completeness": 1.0, "reward": 1.0, "freshness": 1.0}
>>> round(combine(components, "active", cfg), 3)
0.64
>>> combine(components, "superseded", cfg) < combine(components, "active", cfg)
True
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import attrs

__all__ = [
    "ScoreConfig",
    "DENSE_SCORE_CONFIG",
    "COMPONENTS",
    "combine",
    "support",
    "order_agreement",
    "sequence_similarity",
    "jaccard",
    "freshness",
    "reward_component",
]

COMPONENTS = ("text", "support", "steps", "structure", "tags", "completeness", "reward", "freshness")


@attrs.frozen
class ScoreConfig:
    """Weights and knobs of the score and of candidate recall.

    The defaults were tuned by leave-one-out on the *memory* side of the UltraTool split
    (600 stored requests, each located against the others) with the default embedder, one
    knob at a time, never on held-out requests (``bench/localize/run.py --tune hashed``
    reruns the grid). ``DENSE_SCORE_CONFIG`` differs only in how supporters aggregate: the
    cosines of sentence-embedding models are bunched closer to 1, so a higher power and more
    supporters separate them (chosen the same way, in the exploratory memory-side runs).
    Versions multiply the score; ``use_*`` and ``merge`` switch parts off (the ablations).
    """

    w_text: float = 2.0
    w_support: float = 2.0
    w_steps: float = 2.0
    w_structure: float = 0.3
    w_tags: float = 0.2
    w_completeness: float = 0.05
    w_reward: float = 0.1
    w_freshness: float = 0.02
    support_top: int = 3          # m: how many supporting paths count
    support_power: float = 2.0    # γ: how much a close supporter outweighs a loose one
    freshness_half_life: float = 100_000.0   # in paths added since
    version_active: float = 1.0
    version_superseded: float = 0.5
    version_failed: float = 0.4
    recall_paths: int = 200       # text recall: best paths kept as candidates
    recall_steps: int = 300       # entry-step recall: best stored steps kept
    expand_limit: int = 200       # at most this many paths added by expansion
    merge: bool = True            # paths with the same step structure become one result
    use_tags: bool = True
    use_structure: bool = True
    use_steps: bool = True
    min_score: float = 0.0

    def weights(self) -> dict[str, float]:
        """Component → weight, with switched-off components at 0."""
        return {
            "text": self.w_text,
            "support": self.w_support,
            "steps": self.w_steps if self.use_steps else 0.0,
            "structure": self.w_structure if self.use_structure else 0.0,
            "tags": self.w_tags if self.use_tags else 0.0,
            "completeness": self.w_completeness,
            "reward": self.w_reward,
            "freshness": self.w_freshness,
        }

    def version_factor(self, status: str) -> float:
        """The multiplier for a path status (templates never compete, so they get 1)."""
        if status == "superseded":
            return self.version_superseded
        if status == "failed":
            return self.version_failed
        return self.version_active

    def to_json(self) -> dict:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping) -> "ScoreConfig":
        names = {f.name for f in attrs.fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in names})


# Sentence-embedding cosines sit between ~0.3 and 1, so a higher power separates supporters.
DENSE_SCORE_CONFIG = ScoreConfig(support_top=5, support_power=8.0)


def combine(components: Mapping[str, float], status: str, config: ScoreConfig) -> float:
    """The score: version factor × weighted mean of the components.

    >>> combine({"text": 1.0}, "active", ScoreConfig(w_support=0, w_steps=0, w_structure=0,
    ...         w_tags=0, w_completeness=0, w_reward=0, w_freshness=0))
    1.0
    """
    weights = config.weights()
    total = sum(weights.values()) or 1.0
    value = sum(w * components.get(name, 0.0) for name, w in weights.items())
    return config.version_factor(status) * value / total


def support(similarities: Sequence[float], top: int, power: float) -> float:
    """``(Σ_{i ≤ top} s_i^power) / top`` over the best similarities (best first).

    >>> round(support([0.9, 0.5], top=3, power=2.0), 3)
    0.353
    """
    best = sorted((max(0.0, s) for s in similarities), reverse=True)[:top]
    return sum(s**power for s in best) / max(1, top)


def order_agreement(positions: Sequence[float | None], pairs: Iterable[tuple[int, int]]) -> float:
    """Fraction of ``(i, j)`` pairs (i before j in the path) whose positions agree.

    Positions are where the request mentions each step (None: nowhere); a tie counts half,
    and with nothing to compare the answer is the neutral 0.5.

    >>> round(order_agreement([3.0, 10.0, 7.0], [(0, 1), (1, 2), (0, 2)]), 3)
    0.667
    >>> order_agreement([None, 4.0], [(0, 1)])
    0.5
    """
    compared = agree = 0.0
    for i, j in pairs:
        a, b = positions[i], positions[j]
        if a is None or b is None:
            continue
        compared += 1
        agree += 1.0 if a < b else 0.5 if a == b else 0.0
    return agree / compared if compared else 0.5


def sequence_similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """``2·LCS(a, b) / (|a| + |b|)``: 1 for equal sequences, 0 for disjoint ones.

    >>> sequence_similarity(["search", "book", "pay"], ["search", "pay"])
    0.8
    """
    if not a and not b:
        return 1.0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return 2.0 * previous[-1] / (len(a) + len(b))


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (0 when both are empty).

    >>> round(jaccard({"order", "query"}, {"order", "refund"}), 3)
    0.333
    """
    a, b = set(a), set(b)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def freshness(age: float, half_life: float) -> float:
    """``0.5 ** (age / half_life)``.

    >>> freshness(0, 10), freshness(10, 10)
    (1.0, 0.5)
    """
    if half_life <= 0:
        return 1.0
    return math.pow(0.5, max(0.0, age) / half_life)


def reward_component(reward: float | None, result: str | None) -> float:
    """The stored reward clamped to [0, 1]; without one, the result decides.

    >>> reward_component(None, "success"), reward_component(None, "failure"), reward_component(3.0, None)
    (1.0, 0.0, 1.0)
    """
    if reward is not None:
        return min(1.0, max(0.0, float(reward)))
    return {"success": 1.0, "failure": 0.0}.get(result or "", 0.5)
