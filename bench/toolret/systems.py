"""The systems the tool-retrieval benchmark compares; each ranks tool ids for a request text.

**hgm** (through the public API, on the memory of :mod:`bench.toolret.build`):

- ``direct`` — the tools themselves: ``search($q).where(type = 'entity').limit(10)``;
- ``goals-first`` — the tools of the past requests most like this one, in the order the
  path steps reach them, then the direct hits:
  ``(search($q).where(type = 'goal').limit($k).actions.related_entities
  | search($q).where(type = 'entity')).limit(10)``;
- ``vote`` — a vote over the ``k`` best past requests (or steps, ``source = 'action'``): the
  search gives each one's score, the path step ``goal#$g.actions.related_entities``
  (``action#$a.related_entities``) its tools, and each tool collects its requests' weights
  (:func:`vote_rank`), optionally mixed with the direct search's scores. The aggregation is
  a few lines of Python over two hgm queries.

**Baselines** (Okapi BM25 from the ``bm25s`` library, texts cut and stemmed by hgm's own
analysis, :func:`hgm_engine.model.text.analyze`, so only the ranking differs):

- ``bm25-desc`` — one document per tool: its id, description and domains (the text of its
  node in hgm);
- ``bm25-expanded`` — the same, expanded with the text of every past request that used the
  tool;
- ``bm25-vote`` — past requests (or steps) as documents, with hgm's vote on top: the same
  aggregation over another ranker, to tell the engine's index from the vote.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Mapping, Sequence

import attrs
import numpy as np

from hgm_engine import Memory
from hgm_engine.model.text import analyze

from bench.toolret.build import goal_id
from bench.toolret.data import Request, Tool

__all__ = [
    "DEPTH", "DIRECT_QUERY", "GOALS_FIRST_QUERY", "GOAL_HITS_QUERY", "TOOLS_OF_GOAL", "TOOLS_OF_ACTION",
    "VoteConfig", "vote_rank", "HgmRetriever", "Bm25Tools", "Bm25Vote", "Bm25VoteSteps", "bm25_voter",
]

DEPTH = 10  # tools each system returns (scores look at the first five)

DIRECT_QUERY = "search($q).where(type = 'entity').limit($n)"
GOALS_FIRST_QUERY = ("(search($q).where(type = 'goal').limit($k).actions.related_entities"
                     " | search($q).where(type = 'entity')).limit($n)")
GOAL_HITS_QUERY = "search($q).where(type = 'goal').limit($k)"
TOOLS_OF_GOAL = "goal#$g.actions.related_entities"
TOOLS_OF_ACTION = "action#$a.related_entities"

Hit = tuple[str, float]  # (id, score), best first


@attrs.frozen
class VoteConfig:
    """How the vote is taken: over the ``k`` best ``source`` nodes (``goal`` or ``action``),
    each weighted by ``weight`` — ``uniform`` (1), ``rank`` (``1 / (rank + 1)``, rank from 0)
    or ``score`` (``(score / best score) ** power``) — and the direct search's scores
    (divided by the best) added with factor ``mix`` (0: none; direct hits then only fill
    the list after the voted tools). ``steps`` > 0 adds a second vote, over the ``steps_k``
    best steps (``action`` nodes) weighted by ``score ** steps_power``, with that factor.

    >>> VoteConfig(k=10, weight="score", power=2.0).label()
    'vote goal k=10 score^2 mix=0'
    >>> VoteConfig(k=10, steps=0.1, steps_k=20).label()
    'vote goal k=10 score^1 mix=0 + 0.1 x steps k=20 score^1'
    """

    source: str = "goal"
    k: int = 10
    weight: str = "score"
    power: float = 1.0
    mix: float = 0.0
    steps: float = 0.0
    steps_k: int = 0
    steps_power: float = 1.0

    def label(self) -> str:
        weight = f"score^{self.power:g}" if self.weight == "score" else self.weight
        text = f"vote {self.source} k={self.k} {weight} mix={self.mix:g}"
        if self.steps:
            text += f" + {self.steps:g} x steps k={self.steps_k} score^{self.steps_power:g}"
        return text

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _votes(hits: Sequence[Hit], tools_of: Callable[[str], Sequence[str]], k: int, weight: str, power: float,
           first: dict[str, int] | None = None) -> dict[str, float]:
    """Each tool's share of the vote of the first ``k`` hits (divided by the largest)."""
    votes: dict[str, float] = defaultdict(float)
    hits = list(hits)[:k]
    best = hits[0][1] if hits and hits[0][1] > 0 else 1.0
    for rank, (node_id, score) in enumerate(hits):
        if weight == "uniform":
            value = 1.0
        elif weight == "rank":
            value = 1.0 / (rank + 1)
        elif weight == "score":
            value = (max(score, 0.0) / best) ** power
        else:
            raise ValueError(f"unknown weight {weight!r}")
        for tool in dict.fromkeys(tools_of(node_id)):
            votes[tool] += value
            if first is not None:
                first.setdefault(tool, rank)
    top = max(votes.values(), default=0.0) or 1.0
    return {tool: value / top for tool, value in votes.items()}


def vote_rank(hits: Sequence[Hit], tools_of: Callable[[str], Sequence[str]], direct: Sequence[Hit],
              config: VoteConfig, depth: int = DEPTH, steps: Sequence[Hit] = ()) -> list[str]:
    """The tools ranked by the vote of ``hits`` (the best past nodes, with scores), each
    giving its weight once to each of ``tools_of(id)``, plus ``config.mix`` times the
    ``direct`` hits' relative scores (and ``config.steps`` times the vote of the ``steps``
    hits); ties by the best voter's rank, then the direct order.

    >>> tools = {"g1": ["a", "b"], "g2": ["b", "c"]}.__getitem__
    >>> vote_rank([("g1", 4.0), ("g2", 2.0)], tools, [("c", 1.0)], VoteConfig(k=2, weight="uniform"))
    ['b', 'a', 'c']
    >>> vote_rank([("g1", 4.0), ("g2", 2.0)], tools, [("c", 1.0)], VoteConfig(k=2, weight="uniform", mix=2.0))
    ['c', 'b', 'a']
    """
    first: dict[str, int] = {}
    scores = _votes(hits, tools_of, config.k, config.weight, config.power, first)
    if config.steps and steps:
        for tool, value in _votes(steps, tools_of, config.steps_k, "score", config.steps_power).items():
            scores[tool] = scores.get(tool, 0.0) + config.steps * value
    direct_order = {tool: position for position, (tool, _) in enumerate(direct)}
    if direct and config.mix:
        top_direct = direct[0][1] if direct[0][1] > 0 else 1.0
        for tool, score in direct:
            scores[tool] = scores.get(tool, 0.0) + config.mix * max(score, 0.0) / top_direct
    for tool in direct_order:
        scores.setdefault(tool, 0.0)
    late = config.k + 1
    order = sorted(scores, key=lambda tool: (-scores[tool], first.get(tool, late), direct_order.get(tool, len(direct))))
    return order[:depth]


class HgmRetriever:
    """hgm's systems over one memory (built by :func:`bench.toolret.build.build_memory`).

    ``candidates(text, k)`` are what a vote reads — the ``k`` best goals and steps with
    their scores and the direct hits — so tuning can search once at the largest ``k`` and
    cut (a search's first ``k`` are the first ``k`` of a longer one).
    """

    def __init__(self, memory: Memory):
        self.memory = memory
        self._tools: dict[str, tuple[str, ...]] = {}

    def direct(self, text: str, depth: int = DEPTH) -> list[str]:
        return self.memory.query(DIRECT_QUERY, params={"q": text, "n": depth}).ids

    def goals_first(self, text: str, k: int, depth: int = DEPTH) -> list[str]:
        return self.memory.query(GOALS_FIRST_QUERY, params={"q": text, "k": k, "n": depth}).ids

    def hits(self, text: str, node_type: str, k: int) -> list[Hit]:
        """The ``k`` best nodes of ``node_type`` with their scores (``Memory.search``: the
        ranking ``search($q).where(type = ...)`` returns)."""
        return [(hit["id"], hit["score"]) for hit in self.memory.search(text, type=node_type, limit=k)]

    def tools_of(self, node_id: str) -> tuple[str, ...]:
        """The tools a past goal's steps (or one step) are related to, by a path step."""
        found = self._tools.get(node_id)
        if found is None:
            if node_id.startswith("g"):
                found = tuple(self.memory.query(TOOLS_OF_GOAL, params={"g": node_id}).ids)
            else:
                found = tuple(self.memory.query(TOOLS_OF_ACTION, params={"a": node_id}).ids)
            self._tools[node_id] = found
        return found

    def candidates(self, text: str, k: int, depth: int = 20) -> dict[str, list[Hit]]:
        return {"goal": self.hits(text, "goal", k), "action": self.hits(text, "action", k),
                "direct": self.hits(text, "entity", depth)}

    def vote(self, text: str, config: VoteConfig, depth: int = DEPTH) -> list[str]:
        hits = self.hits(text, config.source, config.k)
        direct = self.hits(text, "entity", 20)
        steps = self.hits(text, "action", config.steps_k) if config.steps else []
        return vote_rank(hits, self.tools_of, direct, config, depth, steps)


def _tool_text(tool: Tool) -> str:
    return "\n".join([tool.id, tool.description, *tool.domains])


class Bm25Tools:
    """BM25 (``bm25s``) over one document per tool: its node's text, and with ``expand`` the
    texts of the past requests that used it."""

    def __init__(self, tools: Sequence[Tool], past: Sequence[Request] = (), *, expand: bool = False,
                 k1: float = 1.2, b: float = 0.75):
        import bm25s

        self.ids = [tool.id for tool in tools]
        texts = {tool.id: [_tool_text(tool)] for tool in tools}
        if expand:
            for request in past:
                for tool in dict.fromkeys(request.tools):
                    if tool in texts:
                        texts[tool].append(request.text)
        self.model = bm25s.BM25(k1=k1, b=b)
        self.model.index([analyze("\n".join(texts[i])) for i in self.ids], show_progress=False)

    def scores(self, text: str) -> np.ndarray:
        terms = analyze(text)
        return np.asarray(self.model.get_scores(terms), dtype=float) if terms else np.zeros(len(self.ids))

    def rank(self, text: str, depth: int = DEPTH) -> list[str]:
        scores = self.scores(text)
        order = np.lexsort((np.arange(len(scores)), -scores))[:depth]
        return [self.ids[i] for i in order.tolist() if scores[i] > 0]

    def hits(self, text: str, depth: int = 20) -> list[Hit]:
        scores = self.scores(text)
        order = np.lexsort((np.arange(len(scores)), -scores))[:depth]
        return [(self.ids[i], float(scores[i])) for i in order.tolist() if scores[i] > 0]


class Bm25Vote:
    """BM25 (``bm25s``) over past requests (``source = 'goal'``: their texts) or their steps
    (``'action'``), with :func:`vote_rank` on top and :class:`Bm25Tools` (descriptions) as
    the direct hits: hgm's vote over another ranker."""

    def __init__(self, tools: Sequence[Tool], past: Sequence[Request], *, source: str = "goal",
                 k1: float = 1.2, b: float = 0.75):
        import bm25s

        self.source = source
        self.direct = Bm25Tools(tools, k1=k1, b=b)
        ids, texts, self.tools = [], [], {}
        for request in past:
            if source == "goal":
                ids.append(goal_id(request.id))
                texts.append(request.text)
                self.tools[ids[-1]] = tuple(request.tools)
            else:
                for position, tool in enumerate(request.tools):
                    ids.append(f"a{request.id}-{position}")
                    texts.append(request.steps[position] if position < len(request.steps) else tool)
                    self.tools[ids[-1]] = (tool,)
        self.ids = ids
        self.model = bm25s.BM25(k1=k1, b=b)
        self.model.index([analyze(t) for t in texts], show_progress=False)

    def hits(self, text: str, k: int) -> list[Hit]:
        terms = analyze(text)
        if not terms:
            return []
        scores = np.asarray(self.model.get_scores(terms), dtype=float)
        order = np.lexsort((np.arange(len(scores)), -scores))[:k]
        return [(self.ids[i], float(scores[i])) for i in order.tolist() if scores[i] > 0]

    def rank(self, text: str, config: VoteConfig, depth: int = DEPTH) -> list[str]:
        return vote_rank(self.hits(text, config.k), self.tools.__getitem__, self.direct.hits(text), config, depth)


class Bm25VoteSteps:
    """:class:`Bm25Vote` over past requests and over their steps, combined as hgm combines them."""

    def __init__(self, tools: Sequence[Tool], past: Sequence[Request], *, k1: float = 1.2, b: float = 0.75):
        self.goals = Bm25Vote(tools, past, source="goal", k1=k1, b=b)
        self.steps = Bm25Vote(tools, past, source="action", k1=k1, b=b)
        self.tools = {**self.goals.tools, **self.steps.tools}

    def rank(self, text: str, config: VoteConfig, depth: int = DEPTH) -> list[str]:
        steps = self.steps.hits(text, config.steps_k) if config.steps else []
        return vote_rank(self.goals.hits(text, config.k), self.tools.__getitem__, self.goals.direct.hits(text),
                         config, depth, steps)


def bm25_voter(tools: Sequence[Tool], past: Sequence[Request], config: VoteConfig, *, k1: float, b: float):
    """The ``bm25-vote`` baseline for hgm's vote ``config`` (with steps when it has them)."""
    if config.steps:
        return Bm25VoteSteps(tools, past, k1=k1, b=b)
    return Bm25Vote(tools, past, source=config.source, k1=k1, b=b)
