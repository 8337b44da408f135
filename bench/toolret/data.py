"""The data of the tool-retrieval benchmark, who is a query and who is memory, and the scores.

UltraTool (``../shared/data/taskplan/ultratool``, read in place, never copied): 260 tools
(``tool_desc.json``: ``id``, ``desc``, ``domain``) and 3,527 requests (``data.json``: each
``user_request`` with the tools it called, ``task_nodes``, and the plan's step texts,
``task_steps``). ``split_ids.json`` holds out 500 requests (``test_ids.chain``).

Splits, fixed by the seeds written here:

- **test** — queries: the 500 published test requests; memory: every other request (3,027).
  Scored once, with the configuration frozen by tuning.
- **development** — :data:`DEV_SIZE` requests drawn (seed :data:`DEV_SEED`) from the
  non-test requests; memory: the other non-test requests. Every choice (hgm's variant and
  its settings, the baselines' ``k1`` and ``b``) is made on it. No test request is ever
  memory or a query during tuning.

A query is the request's text; its gold is the set of distinct tools it called.
**recall@5** is the share of the gold found among the first five tools; **nDCG@5** uses
binary relevance (a gold tool counts once), normalised by the best ordering of
``min(|gold|, 5)`` gold tools.

>>> recall_at(["a", "x", "b"], {"a", "b", "c", "d"}, 5)
0.5
>>> round(ndcg_at(["x", "a"], {"a"}, 5), 4)
0.6309
>>> lo, hi = bootstrap_interval([1, 0, 1, 1], reps=200); lo <= 0.75 <= hi
True
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import random
from typing import Any, Iterable, Mapping, Sequence

import attrs
import numpy as np

__all__ = [
    "DEV_SEED", "DEV_SIZE", "BOOTSTRAP_REPS", "BOOTSTRAP_SEED", "K",
    "Tool", "Request", "ToolData", "find_ultratool", "load_ultratool",
    "recall_at", "ndcg_at", "bootstrap_interval", "paired_interval", "summarize",
]

DEV_SEED = 14
DEV_SIZE = 500
BOOTSTRAP_REPS = 2000
BOOTSTRAP_SEED = 7
K = 5


@attrs.frozen
class Tool:
    """One tool: its id (``clock_alarm_cancel``), description and domains."""

    id: str
    description: str
    domains: tuple[str, ...]


@attrs.frozen
class Request:
    """One request: its id, text, the step texts of its plan and the tools it called, in order."""

    id: str
    text: str
    steps: tuple[str, ...]
    tools: tuple[str, ...]

    @property
    def gold(self) -> frozenset[str]:
        """The distinct tools the request called."""
        return frozenset(self.tools)


@attrs.frozen
class ToolData:
    """The tools, every request, and the published test ids."""

    tools: tuple[Tool, ...]
    requests: tuple[Request, ...]
    test_ids: tuple[str, ...]

    def non_test(self) -> list[Request]:
        held = set(self.test_ids)
        return [r for r in self.requests if r.id not in held]

    def test(self) -> list[Request]:
        by_id = {r.id: r for r in self.requests}
        return [by_id[i] for i in self.test_ids if i in by_id]

    def dev_split(self, size: int = DEV_SIZE, seed: int = DEV_SEED) -> tuple[list[Request], list[Request]]:
        """(memory, queries) of the development split: ``size`` non-test requests drawn with
        ``seed`` are the queries, the other non-test requests the memory."""
        pool = self.non_test()
        chosen = random.Random(seed).sample(pool, min(size, len(pool)))
        ids = {r.id for r in chosen}
        return [r for r in pool if r.id not in ids], chosen

    def test_split(self) -> tuple[list[Request], list[Request]]:
        """(memory, queries) of the test split: every non-test request, and the test requests."""
        return self.non_test(), self.test()

    def slice(self, n_test: int, n_memory: int) -> "ToolData":
        """A tiny slice: the first ``n_test`` test requests and the first ``n_memory`` others."""
        test = self.test()[:n_test]
        keep = {r.id for r in test} | {r.id for r in self.non_test()[:n_memory]}
        return ToolData(self.tools, tuple(r for r in self.requests if r.id in keep), tuple(r.id for r in test))


def find_ultratool(start: str | os.PathLike | None = None) -> pathlib.Path | None:
    """The UltraTool folder: ``$HGM_TASKPLAN_DATA/ultratool``, else
    ``shared/data/taskplan/ultratool`` in a folder above ``start`` (default: this file);
    None when absent."""
    env = os.environ.get("HGM_TASKPLAN_DATA")
    if env:
        found = pathlib.Path(env) / "ultratool"
        return found if found.is_dir() else None
    here = pathlib.Path(start or __file__).resolve()
    for parent in here.parents:
        found = parent / "shared" / "data" / "taskplan" / "ultratool"
        if found.is_dir():
            return found
    return None


def load_ultratool(folder: str | os.PathLike) -> ToolData:
    """Read ``tool_desc.json``, ``data.json`` and ``split_ids.json`` of an UltraTool folder."""
    root = pathlib.Path(folder)
    tools_doc = json.loads((root / "tool_desc.json").read_text(encoding="utf-8"))
    tools = tuple(Tool(str(t["id"]), str(t.get("desc") or ""), tuple(str(d) for d in t.get("domain") or ()))
                  for t in tools_doc["nodes"])
    requests = []
    with open(root / "data.json", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            requests.append(Request(
                str(row["id"]), str(row["user_request"]).strip(),
                tuple(str(s) for s in row.get("task_steps") or ()),
                tuple(str(n["task"]) for n in row["task_nodes"]),
            ))
    split = json.loads((root / "split_ids.json").read_text(encoding="utf-8"))
    test_ids = tuple(str(i) for i in split["test_ids"]["chain"])
    return ToolData(tools, tuple(requests), test_ids)


# -- scores --------------------------------------------------------------------------------


def recall_at(ranked: Sequence[str], gold: Iterable[str], k: int = K) -> float:
    """The share of ``gold`` among the first ``k`` of ``ranked``."""
    gold = set(gold)
    return len(gold & set(ranked[:k])) / len(gold) if gold else 0.0


def ndcg_at(ranked: Sequence[str], gold: Iterable[str], k: int = K) -> float:
    """nDCG at ``k`` with binary relevance (each gold tool counts once)."""
    gold = set(gold)
    seen: set[str] = set()
    dcg = 0.0
    for position, tool in enumerate(ranked[:k]):
        if tool in gold and tool not in seen:
            dcg += 1.0 / math.log2(position + 2)
            seen.add(tool)
    ideal = sum(1.0 / math.log2(position + 2) for position in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


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


def paired_interval(a: Sequence[float], b: Sequence[float], **kwargs: Any) -> dict[str, float]:
    """The mean of ``a - b`` over the same queries and its paired bootstrap interval (the
    same resampled queries for both systems).

    >>> r = paired_interval([1, 1, 1, 0], [0, 1, 0, 0], reps=200)
    >>> r["difference"], r["low"] >= 0
    (0.5, True)
    """
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    low, high = bootstrap_interval(diff, **kwargs)
    return {"difference": float(diff.mean()) if diff.size else float("nan"), "low": low, "high": high}


def summarize(per_query: Mapping[str, Sequence[float]], **kwargs: Any) -> dict[str, dict[str, float]]:
    """Each metric's mean with its bootstrap interval.

    >>> summarize({"recall@5": [1.0, 0.5]}, reps=100)["recall@5"]["mean"]
    0.75
    """
    out = {}
    for name, values in per_query.items():
        low, high = bootstrap_interval(values, **kwargs)
        out[name] = {"mean": float(np.mean(values)) if len(values) else float("nan"), "low": low, "high": high}
    return out
