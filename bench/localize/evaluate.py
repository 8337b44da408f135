"""Evaluation of path-level localization on task-plan data: metrics, baselines, protocols.

Correctness: a located path is correct when its ordered step (tool) names equal the request's
``task_nodes`` sequence. Every system returns a ranked list of *distinct* step sequences
(baselines that rank requests are deduplicated by sequence, which only helps them).

Metrics per system: hit@1/5/10, MRR@10, and completeness of the top result against the gold
plan — node-F1 (multiset of step names) and edge-F1 (set of (source, target) name pairs).

Query side: a query is the request text only. Tags, when used, come from that text alone
(:func:`hgm_engine.paths.localize.taskplan.suggest_tags`: a tool-domain name that occurs in the
request as a word); the request's tools, steps and links are never shown to any system.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence


from hgm_engine.paths.localize import PathIndex, PathRecord, ScoreConfig, Step
from hgm_engine.paths.localize.embedders import normalize_words
from hgm_engine.paths.localize.scoring import support
from hgm_engine.paths.localize.taskplan import TaskPlanData, gold_sequence, suggest_tags

__all__ = [
    "Ranked",
    "score_rankings",
    "EngineSystem",
    "TfidfBaseline",
    "Bm25Baseline",
    "FlatStepBaseline",
    "PlanVoteBaseline",
    "path_document",
    "split_protocol",
    "leave_one_out_protocol",
    "miss_analysis",
    "latency",
]

Ranked = list[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]]   # (names, edges by name)


def _chain_edges(names: Sequence[str]) -> tuple[tuple[str, str], ...]:
    return tuple(zip(names, names[1:]))


def gold_edges(row: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((link["source"], link["target"]) for link in row.get("task_links") or ())


def _f1(predicted: Counter, gold: Counter) -> float:
    overlap = sum((predicted & gold).values())
    if not overlap:
        return 0.0
    precision = overlap / sum(predicted.values())
    recall = overlap / sum(gold.values())
    return 2 * precision * recall / (precision + recall)


def score_rankings(rows: Sequence[Mapping[str, Any]], rankings: Sequence[Ranked],
                   latencies: Sequence[float] = ()) -> dict[str, Any]:
    """hit@1/5/10, MRR@10, node-F1 and edge-F1 of the top result, and latency percentiles."""
    hits = {1: 0, 5: 0, 10: 0}
    reciprocal = 0.0
    node_f1 = edge_f1 = 0.0
    ranks = []
    for row, ranked in zip(rows, rankings):
        gold = gold_sequence(row)
        names = [r[0] for r in ranked[:10]]
        rank = names.index(gold) + 1 if gold in names else None
        ranks.append(rank)
        if rank is not None:
            reciprocal += 1.0 / rank
            for k in hits:
                hits[k] += rank <= k
        if ranked:
            top_names, top_edges = ranked[0]
            node_f1 += _f1(Counter(top_names), Counter(gold))
            edge_f1 += _f1(Counter(set(top_edges)), Counter(set(gold_edges(row))))
    n = max(1, len(rows))
    result: dict[str, Any] = {
        "queries": len(rows),
        "hit@1": hits[1] / n,
        "hit@5": hits[5] / n,
        "hit@10": hits[10] / n,
        "mrr@10": reciprocal / n,
        "node_f1": node_f1 / n,
        "edge_f1": edge_f1 / n,
    }
    if latencies:
        result.update(_percentiles(latencies))
    result["_ranks"] = ranks
    return result


def _percentiles(latencies: Sequence[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000.0
    return {"p50_ms": pick(0.50), "p95_ms": pick(0.95)}


# -- systems ------------------------------------------------------------------------------------


class EngineSystem:
    """hgm's ``PathIndex.locate`` over the memory records (optionally with graph expansion)."""

    def __init__(self, index: PathIndex, *, config: ScoreConfig | None = None, expand: bool = True,
                 tags: bool = True, tag_vocabulary: Sequence[str] = (), hops: int = 2):
        self.index = index
        self.config = config
        self.expand = index.shared_step_expander(hops) if expand else None
        self.tags = tags
        self.tag_vocabulary = list(tag_vocabulary)

    def query_tags(self, text: str) -> list[str]:
        return suggest_tags(text, self.tag_vocabulary) if self.tags and self.tag_vocabulary else []

    def rank(self, text: str, k: int = 10, **kwargs: Any) -> Ranked:
        result = self.index.locate(text, self.query_tags(text), k, expand=self.expand,
                                   config=self.config, **kwargs)
        ranked = []
        for match in result.matches:
            record = self.index.get(match.path)
            edges = tuple((record.steps[i].name, record.steps[j].name) for i, j in record.edges)
            ranked.append((match.steps, edges))
        return ranked


_TOKEN = re.compile(r"[a-z0-9]+")


def _plain_tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class _RequestRanker:
    """Ranks stored requests by a text score, then deduplicates their step sequences."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]):
        self.ids = [str(r["id"]) for r in rows]
        self.sequences = [gold_sequence(r) for r in rows]
        self.edges = [gold_edges(r) for r in rows]
        self.docs = [Counter(_plain_tokens(r["user_request"])) for r in rows]
        self.df = Counter(t for d in self.docs for t in d)
        self.n = len(self.docs)

    def scores(self, query: Counter) -> list[float]:
        raise NotImplementedError

    def rank(self, text: str, k: int = 10, exclude: Iterable[str] = ()) -> Ranked:
        excluded = set(exclude)
        scores = self.scores(Counter(_plain_tokens(text)))
        order = sorted(range(self.n), key=lambda i: -scores[i])
        ranked: Ranked = []
        seen = set()
        for i in order:
            if scores[i] <= 0:
                break
            if self.ids[i] in excluded or self.sequences[i] in seen:
                continue
            seen.add(self.sequences[i])
            ranked.append((self.sequences[i], self.edges[i]))
            if len(ranked) >= k:
                break
        return ranked


class TfidfBaseline(_RequestRanker):
    """Plain TF-IDF cosine over request text (raw tf, smoothed idf, no stemming or stop words)."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]):
        super().__init__(rows)
        self.idf = {t: math.log((1 + self.n) / (1 + df)) + 1 for t, df in self.df.items()}
        self.vectors = [self._unit(d) for d in self.docs]
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for i, vector in enumerate(self.vectors):
            for t, w in vector.items():
                self.postings.setdefault(t, []).append((i, w))

    def _unit(self, counts: Counter) -> dict[str, float]:
        vector = {t: tf * self.idf.get(t, 0.0) for t, tf in counts.items() if t in self.idf}
        norm = math.sqrt(sum(w * w for w in vector.values())) or 1.0
        return {t: w / norm for t, w in vector.items()}

    def scores(self, query: Counter) -> list[float]:
        out = [0.0] * self.n
        for t, w in self._unit(query).items():
            for i, dw in self.postings.get(t, ()):
                out[i] += w * dw
        return out


class Bm25Baseline(_RequestRanker):
    """Okapi BM25 (k1 = 1.2, b = 0.75) over request text, same tokens as the TF-IDF baseline."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], k1: float = 1.2, b: float = 0.75):
        super().__init__(rows)
        self.k1, self.b = k1, b
        self.lengths = [sum(d.values()) for d in self.docs]
        self.mean_length = statistics.fmean(self.lengths) if self.lengths else 1.0
        self.idf = {t: math.log(1 + (self.n - df + 0.5) / (df + 0.5)) for t, df in self.df.items()}
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(self.docs):
            for t, tf in d.items():
                self.postings.setdefault(t, []).append((i, tf))

    def scores(self, query: Counter) -> list[float]:
        out = [0.0] * self.n
        for t in query:
            idf = self.idf.get(t)
            if idf is None:
                continue
            for i, tf in self.postings[t]:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.mean_length)
                out[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out


class FlatStepBaseline:
    """Plain vector top-k over *single steps* (the node-level retrieval the origin documents
    compare against): every stored step is its own document (its text and tool name, default
    embedder), and the answer is a ranked list of single steps, never a path."""

    def __init__(self, records: Sequence[PathRecord]):
        flat = []
        for record in records:
            for position, step in enumerate(record.steps):
                flat.append(PathRecord.create(f"{record.id}#{position}", step.text,
                                              [Step(step.name, step.text)], result="success"))
        config = ScoreConfig(merge=False, use_steps=False, use_structure=False, use_tags=False,
                             recall_steps=0)
        self.index = PathIndex.from_records(flat, config=config)

    def rank(self, text: str, k: int = 10, exclude: Iterable[str] = ()) -> Ranked:
        excluded = set(exclude)
        result = self.index.locate(text, k=k + 10 * len(excluded))
        ranked: Ranked = []
        for match in result.matches:
            if match.path.split("#")[0] in excluded:
                continue
            ranked.append((match.steps, ()))
            if len(ranked) >= k:
                break
        return ranked


def path_document(record: PathRecord) -> list[str]:
    """The words of the fields hgm indexes for a path — its goal (the request), every step's text
    and name, and its tags — normalised as hgm normalises them (stop words out, Snowball stems)."""
    parts = [record.goal]
    for step in record.steps:
        parts += [step.text, step.name]
    parts += list(record.tags)
    return [w for w in normalize_words(" ".join(p for p in parts if p)) if w]


class PlanVoteBaseline:
    """A library ranker over the fields hgm indexes, with hgm's plan vote on top.

    ``scorer="bm25"``: Okapi BM25 from the ``bm25s`` library (``k1``, ``b``); ``"tfidf"``: the
    cosine of ``lnc.ltc`` TF-IDF vectors (the weighting hgm's text component uses). Documents are
    :func:`path_document` (goal, step texts and names, tags), queries the request's words,
    normalised alike. The ``recall`` best paths are grouped by structure and each structure is
    scored as hgm scores its text part: ``w_text · best + w_support · support(m, γ)`` over the
    supporters' scores divided by the query's best score (so BM25's unbounded scores sit in
    [0, 1] like cosines). Only the ranker differs from hgm's text channel: no entry steps, step
    order or tags components.
    """

    def __init__(self, records: Sequence[PathRecord], *, scorer: str = "bm25", k1: float = 1.2,
                 b: float = 0.75, config: ScoreConfig | None = None, recall: int = 200):
        import numpy as np

        self.np = np
        self.records = list(records)
        self.position = {r.id: i for i, r in enumerate(self.records)}
        self.signatures = [r.signature for r in self.records]
        self.config = config if config is not None else ScoreConfig()
        self.recall = recall
        self.scorer = scorer
        docs = [path_document(r) for r in self.records]
        if scorer == "bm25":
            import bm25s

            self.bm25 = bm25s.BM25(k1=k1, b=b)
            self.bm25.index(docs, show_progress=False)
        elif scorer == "tfidf":
            self._tfidf_fit(docs)
        else:
            raise ValueError(f"unknown scorer {scorer!r}")

    def _tfidf_fit(self, docs: Sequence[Sequence[str]]) -> None:
        np = self.np
        df: Counter = Counter()
        counts = [Counter(d) for d in docs]
        for c in counts:
            df.update(c.keys())
        n = len(docs)
        self.vocabulary = {t: i for i, t in enumerate(sorted(df))}
        self.idf = np.array([math.log((n + 1) / (df[t] + 0.5)) for t in sorted(df)])
        self.rows = []
        for c in counts:
            vector = {self.vocabulary[t]: 1 + math.log(tf) for t, tf in c.items()}
            norm = math.sqrt(sum(w * w for w in vector.values())) or 1.0
            self.rows.append({i: w / norm for i, w in vector.items()})
        self.postings: dict[int, list[tuple[int, float]]] = {}
        for d, row in enumerate(self.rows):
            for i, w in row.items():
                self.postings.setdefault(i, []).append((d, w))

    def scores(self, words: Sequence[str]) -> Any:
        np = self.np
        if self.scorer == "bm25":
            return np.asarray(self.bm25.get_scores(list(words)), dtype=float)
        out = np.zeros(len(self.records))
        query = Counter(w for w in words if w in self.vocabulary)
        vector = {self.vocabulary[t]: (1 + math.log(tf)) * self.idf[self.vocabulary[t]] for t, tf in query.items()}
        norm = math.sqrt(sum(w * w for w in vector.values())) or 1.0
        for i, w in vector.items():
            for d, dw in self.postings[i]:
                out[d] += w / norm * dw
        return out

    def rank(self, text: str, k: int = 10, exclude: Iterable[str] = ()) -> Ranked:
        np = self.np
        words = [w for w in normalize_words(text) if w]
        scores = self.scores(words)
        for path_id in exclude:
            at = self.position.get(path_id)
            if at is not None:
                scores[at] = 0.0
        n = min(self.recall, len(scores))
        if n == 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.lexsort((top, -scores[top]))]
        best = scores[top[0]]
        if best <= 0:
            return []
        groups: dict[Any, list[int]] = {}
        for d in top:
            if scores[d] <= 0:
                break
            groups.setdefault(self.signatures[d], []).append(int(d))
        cfg = self.config
        voted = []
        for members in groups.values():
            sims = [scores[d] / best for d in members]
            value = cfg.w_text * sims[0] + cfg.w_support * support(sims, cfg.support_top, cfg.support_power)
            voted.append((-value, members[0]))
        voted.sort()
        ranked: Ranked = []
        seen = set()
        for _, d in voted:
            record = self.records[d]
            names = record.step_names
            if names in seen:
                continue
            seen.add(names)
            edges = tuple((record.steps[i].name, record.steps[j].name) for i, j in record.edges)
            ranked.append((names, edges))
            if len(ranked) >= k:
                break
        return ranked


# -- protocols ----------------------------------------------------------------------------------


def split_protocol(data: TaskPlanData, systems: Mapping[str, Callable[[str], Ranked]],
                   *, progress: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """Memory = every request not held out; queries = the held-out ids, in split order."""
    rows = data.test_rows()
    results = {}
    for name, rank in systems.items():
        rankings, latencies = [], []
        for row in rows:
            start = time.perf_counter()
            rankings.append(rank(row["user_request"]))
            latencies.append(time.perf_counter() - start)
        results[name] = score_rankings(rows, rankings, latencies)
        if progress:
            progress(f"{data.name} {name}: hit@1 {results[name]['hit@1']:.3f} hit@5 {results[name]['hit@5']:.3f}")
    return results


def leave_one_out_protocol(rows: Sequence[Mapping[str, Any]],
                           systems: Mapping[str, Callable[[Mapping[str, Any]], Ranked]],
                           *, progress: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """Each request is a query against all the others (each system removes it itself)."""
    results = {}
    for name, rank in systems.items():
        rankings, latencies = [], []
        for row in rows:
            start = time.perf_counter()
            rankings.append(rank(row))
            latencies.append(time.perf_counter() - start)
        results[name] = score_rankings(rows, rankings, latencies)
        if progress:
            progress(f"{name}: hit@1 {results[name]['hit@1']:.3f} hit@5 {results[name]['hit@5']:.3f}")
    return results


def engine_loo(system: EngineSystem) -> Callable:
    """A leave-one-out ranker: take the query's own path out of the index, locate, put it back
    (so the learned IDF and step profiles never see the query either)."""

    def rank(row: Mapping[str, Any]) -> Ranked:
        path_id = str(row["id"])
        removed = system.index.remove(path_id)
        try:
            return system.rank(row["user_request"])
        finally:
            system.index.add(removed)

    return rank


def miss_analysis(data_rows: Sequence[Mapping[str, Any]], ranks: Sequence[int | None],
                  index: PathIndex, system: EngineSystem, *, loo: bool = False) -> dict[str, int]:
    """Where the top-5 misses come from: gold structure not in memory, not recalled as a
    candidate, or recalled but ranked below 5 (6–10, below 10)."""
    stored = Counter(r.signature for r in index.records())
    buckets = Counter()
    for row, rank in zip(data_rows, ranks):
        gold = gold_sequence(row)
        if rank is not None and rank <= 5:
            buckets["hit@1" if rank == 1 else "rank 2-5"] += 1
            continue
        in_memory = stored[gold] - (1 if loo and index.get(str(row["id"])) is not None
                                    and index.get(str(row["id"])).signature == gold else 0)
        if in_memory <= 0:
            buckets["miss: gold structure not in memory"] += 1
            continue
        if rank is not None:
            buckets["miss: ranked 6-10"] += 1
            continue
        removed = index.remove(str(row["id"])) if loo else None
        try:
            everything = system.rank(row["user_request"], k=100_000)
        finally:
            if removed is not None:
                index.add(removed)
        names = [r[0] for r in everything]
        buckets["miss: ranked below 10" if gold in names else "miss: gold structure not recalled"] += 1
    return dict(sorted(buckets.items()))


def latency(index: PathIndex, queries: Sequence[str], *, expand: bool = True, k: int = 5) -> dict[str, float]:
    """p50/p95 of ``locate`` over ``queries`` (after one warm-up query); ``expand``: with the
    2-hop shared-step expander, turned on even when the index's config has it off."""
    expander = index.shared_step_expander() if expand else None
    config = index.config.with_expansion() if expand else index.config
    index.locate(queries[0], k=k, expand=expander, config=config)
    times = []
    for text in queries:
        start = time.perf_counter()
        index.locate(text, k=k, expand=expander, config=config)
        times.append(time.perf_counter() - start)
    return _percentiles(times)
