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
``vote``
    how well the path's step names match the steps the most similar stored requests took: each
    of the ``vote_top`` paths most similar by text votes for its step names with weight
    ``s^vote_power``, ``v(n)`` is the weighted share of the votes that include name ``n``, and
    the component is the weighted Jaccard overlap of the path's name set ``S`` with ``v``:
    ``Σ_{n∈S} v(n) / (|S| + Σ_{n∉S} v(n))``. Unlike ``support`` it credits a structure that no
    single neighbour followed but whose steps the neighbours took, and it penalises a path
    that leaves out a step most neighbours needed (the ``steps`` minimum cannot).
``order``
    how usual this order of these steps is: the share of the stored paths with the same
    multiset of step names that follow this structure.
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
...               "vote": 0.7, "order": 0.0, "completeness": 1.0, "reward": 1.0, "freshness": 1.0}
>>> round(combine(components, "active", cfg), 3)
0.666
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
    "StepOrder",
    "sequence_similarity",
    "jaccard",
    "freshness",
    "reward_component",
    "name_votes",
    "vote_overlap",
]

COMPONENTS = ("text", "support", "steps", "structure", "tags", "vote", "order", "completeness", "reward",
              "freshness")


@attrs.frozen
class ScoreConfig:
    """Weights and knobs of the score and of candidate recall.

    The defaults are the configuration ``bench/localize/tune.py`` froze: coordinate ascent on a
    development split of 1,000 requests of UltraTool's *memory* side (each located against the
    rest of it), one knob at a time, never on a test request; every configuration it tried is
    in ``bench/results/localize-tuning.json``. Graph expansion (``expand_limit``) is off: it
    never raised a development score. ``DENSE_SCORE_CONFIG`` differs only in how supporters aggregate: the
    cosines of sentence-embedding models are bunched closer to 1, so a higher power and more
    supporters separate them (chosen the same way, in the exploratory memory-side runs).
    Versions multiply the score; ``use_*`` and ``merge`` switch parts off (the ablations).
    """

    w_text: float = 3.0
    w_support: float = 2.0
    w_steps: float = 2.0
    w_structure: float = 0.3
    w_tags: float = 0.2
    w_vote: float = 1.0
    w_order: float = 0.0
    w_completeness: float = 0.05
    w_reward: float = 0.1
    w_freshness: float = 0.02
    support_top: int = 8          # m: how many supporting paths count
    support_power: float = 2.0    # γ: how much a close supporter outweighs a loose one
    vote_top: int = 20            # how many of the most similar paths vote for step names
    vote_power: float = 1.0       # a vote's weight: similarity ** vote_power
    vote_pairs: bool = False      # paths vote for consecutive step pairs too (order)
    freshness_half_life: float = 100_000.0   # in paths added since
    version_active: float = 1.0
    version_superseded: float = 0.5
    version_failed: float = 0.4
    recall_paths: int = 200       # text recall: best paths kept as candidates
    recall_steps: int = 300       # entry-step recall: best stored steps kept
    expand_limit: int = 0         # at most this many paths added by expansion (0: off)
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
            "vote": self.w_vote,
            "order": self.w_order,
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

    def with_expansion(self, limit: int = 200) -> "ScoreConfig":
        """This config with graph expansion on (``expand_limit``: ``limit`` when it is off).

        >>> ScoreConfig(expand_limit=0).with_expansion().expand_limit, ScoreConfig(expand_limit=50).with_expansion().expand_limit
        (200, 50)
        """
        return self if self.expand_limit > 0 else attrs.evolve(self, expand_limit=limit)

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
    ...         w_tags=0, w_vote=0, w_completeness=0, w_reward=0, w_freshness=0))
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


class StepOrder:
    """Which steps of a path come before which, ready to score :func:`order_agreement` over
    every ordered pair in one pass instead of one per pair.

    A chain of ``n`` steps has ``n·(n-1)/2`` ordered pairs, so listing them costs quadratic
    time and memory; this keeps the strongly connected components of the edges instead
    (built in ``O(n + e)``), and :meth:`agreement` walks them once with big-integer bit sets
    (``O(e · m / 64)`` word operations for ``m`` steps with a position), counting the pairs
    that agree with shifts and ``int.bit_count``. It gives exactly
    ``order_agreement(positions, record.ordered_pairs())``, cycles included.

    >>> order = StepOrder.of(3, [(0, 1), (1, 2)])
    >>> round(order.agreement([3.0, 10.0, 7.0]), 3)
    0.667
    >>> StepOrder.of(2, [(0, 1)]).agreement([None, 4.0])
    0.5
    """

    __slots__ = ("size", "components", "successors", "cyclic")

    def __init__(self, size: int, components: tuple[tuple[int, ...], ...],
                 successors: tuple[tuple[int, ...], ...], cyclic: tuple[bool, ...]):
        self.size = size
        self.components = components    # strongly connected components, sinks first
        self.successors = successors    # per component: the components its edges lead to (all earlier)
        self.cyclic = cyclic            # per component: whether its steps reach one another

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StepOrder) and (self.size, self.components, self.successors) == (
            other.size, other.components, other.successors)

    def __hash__(self) -> int:
        return hash((self.size, self.components))

    def __repr__(self) -> str:
        return f"StepOrder(size={self.size}, components={len(self.components)})"

    @classmethod
    def of(cls, size: int, edges: Iterable[tuple[int, int]]) -> "StepOrder":
        """The order of ``size`` steps joined by ``edges`` (``(i, j)``: step i before step j).

        >>> StepOrder.of(3, [(0, 1), (1, 0), (1, 2)]).components
        ((2,), (0, 1))
        """
        successors: list[list[int]] = [[] for _ in range(size)]
        for i, j in edges:
            successors[i].append(j)
        # Tarjan's algorithm without recursion: components come out sinks first.
        index = [-1] * size
        low = [0] * size
        on_stack = [False] * size
        stack: list[int] = []
        component_of = [-1] * size
        components: list[tuple[int, ...]] = []
        counter = 0
        for root in range(size):
            if index[root] != -1:
                continue
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            on_stack[root] = True
            work = [(root, 0)]
            while work:
                node, k = work[-1]
                following = successors[node]
                if k < len(following):
                    work[-1] = (node, k + 1)
                    nxt = following[k]
                    if index[nxt] == -1:
                        index[nxt] = low[nxt] = counter
                        counter += 1
                        stack.append(nxt)
                        on_stack[nxt] = True
                        work.append((nxt, 0))
                    elif on_stack[nxt] and index[nxt] < low[node]:
                        low[node] = index[nxt]
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    if low[node] < low[parent]:
                        low[parent] = low[node]
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack[member] = False
                        component_of[member] = len(components)
                        members.append(member)
                        if member == node:
                            break
                    components.append(tuple(sorted(members)))
        component_successors = []
        for c, members in enumerate(components):
            reached = {component_of[j] for i in members for j in successors[i]}
            reached.discard(c)
            component_successors.append(tuple(sorted(reached)))
        return cls(size, tuple(components), tuple(component_successors),
                   tuple(len(members) > 1 for members in components))

    def agreement(self, positions: Sequence[float | None]) -> float:
        """:func:`order_agreement` of ``positions`` (one per step) over every ordered pair.

        >>> StepOrder.of(4, [(0, 1), (0, 2), (2, 3)]).agreement([0.0, 1.0, 1.0, 0.5])
        0.75
        """
        compared = [step for step in range(self.size) if positions[step] is not None]
        if len(compared) < 2:
            return 0.5
        # Bit k stands for the k-th compared step by position; ties share a range [lo, hi).
        ranked = sorted(compared, key=lambda step: positions[step])  # type: ignore[arg-type, return-value]
        bit: dict[int, int] = {}
        tie_range: dict[int, tuple[int, int]] = {}
        start = 0
        for k in range(1, len(ranked) + 1):
            if k == len(ranked) or positions[ranked[k]] != positions[ranked[start]]:
                for at in range(start, k):
                    bit[ranked[at]] = at
                    tie_range[ranked[at]] = (start, k)
                start = k
        waiting = [0] * len(self.components)   # predecessors that still need a component's set
        for following in self.successors:
            for d in following:
                waiting[d] += 1
        downstream: dict[int, int] = {}        # component -> compared steps it and its successors hold
        pairs = agree_twice = 0
        for c, members in enumerate(self.components):
            reach = 0
            for d in self.successors[c]:
                reach |= downstream[d]
                waiting[d] -= 1
                if not waiting[d]:
                    del downstream[d]
            own = 0
            for step in members:
                if step in bit:
                    own |= 1 << bit[step]
            if waiting[c]:
                downstream[c] = reach | own
            if not own:
                continue
            if self.cyclic[c]:
                reach |= own
            for step in members:
                if step not in bit:
                    continue
                after = reach & ~(1 << bit[step]) if self.cyclic[c] else reach
                lo, hi = tie_range[step]
                pairs += after.bit_count()
                agree_twice += 2 * (after >> hi).bit_count() + ((after >> lo) & ((1 << (hi - lo)) - 1)).bit_count()
        return agree_twice / (2 * pairs) if pairs else 0.5


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


def name_votes(neighbours: Iterable[tuple[float, Iterable[str]]], power: float = 1.0) -> dict[str, float]:
    """Per step name, the weighted share of the neighbours whose path has it: each neighbour
    ``(similarity, step names)`` votes once for each of its names with weight ``similarity ** power``.

    >>> sorted(name_votes([(1.0, ["a", "b"]), (1.0, ["a"])]).items())
    [('a', 1.0), ('b', 0.5)]
    """
    totals: dict[str, float] = {}
    weight_sum = 0.0
    for similarity, names in neighbours:
        if similarity <= 0:
            continue
        weight = similarity ** power
        weight_sum += weight
        for name in set(names):
            totals[name] = totals.get(name, 0.0) + weight
    if weight_sum <= 0:
        return {}
    return {name: value / weight_sum for name, value in totals.items()}


def vote_overlap(names: Iterable[str], votes: Mapping[str, float], vote_total: float | None = None) -> float:
    """The weighted Jaccard overlap of a name set with :func:`name_votes`:
    ``Σ_{n∈S} v(n) / (|S| + Σ_{n∉S} v(n))`` (``vote_total``: ``Σ_n v(n)``, when known).

    >>> votes = {"a": 1.0, "b": 0.5}
    >>> vote_overlap(["a"], votes), vote_overlap(["a", "b"], votes), vote_overlap(["c"], votes)
    (0.6666666666666666, 0.75, 0.0)
    """
    chosen = set(names)
    if not chosen:
        return 0.0
    total = sum(votes.values()) if vote_total is None else vote_total
    inside = sum(votes.get(n, 0.0) for n in chosen)
    return inside / (len(chosen) + total - inside)
