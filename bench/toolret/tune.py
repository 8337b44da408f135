"""Choose every setting of the tool-retrieval benchmark on the development split, and freeze it.

The development split (:meth:`bench.toolret.data.ToolData.dev_split`) holds 500 non-test
requests as queries against a memory of the other non-test requests; no test request is
read. Tried, each scored by development recall@5 (then nDCG@5):

- hgm ``vote``: source (past goals or their steps) × ``k`` × weight × ``mix`` with the direct
  search (:class:`bench.toolret.systems.VoteConfig`); then, on each of the :data:`STEPS_ON`
  best of those, a second vote over steps added (factor × ``k`` × power); hgm
  ``goals-first`` for each ``k``;
- the BM25 baselines' ``k1`` × ``b`` (``bm25-desc``, ``bm25-expanded``), and ``bm25-vote``'s
  with hgm's frozen vote.

Every trial and its development scores go to the log (``--out``, committed as
``bench/results/toolret/tuning.json``); the best of each system is frozen there
(``frozen``), and ``run.py`` reads nothing else.

    python -m bench.toolret.tune --out bench/results/toolret/tuning.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import time
from typing import Any, Callable, Sequence

import numpy as np

from bench.toolret.build import build_memory
from bench.toolret.data import DEV_SEED, DEV_SIZE, K, Request, ToolData, find_ultratool, load_ultratool, ndcg_at, recall_at
from bench.toolret.systems import Bm25Tools, HgmRetriever, VoteConfig, bm25_voter, vote_rank

__all__ = ["GRID", "STEPS_ON", "score", "tune"]

STEPS_ON = 10

GRID = {
    "source": ("goal", "action"),
    "k": (1, 3, 5, 10, 15, 20, 30, 50),
    "weight": (("uniform", 1.0), ("rank", 1.0), ("score", 1.0), ("score", 2.0), ("score", 4.0), ("score", 8.0)),
    "mix": (0.0, 0.1, 0.2, 0.3, 0.5, 1.0),
    "goals_first_k": (1, 2, 3, 5, 10),
    # second stage: a vote over steps added to each of the STEPS_ON best first-stage votes
    "steps": (0.1, 0.2, 0.3, 0.5),
    "steps_k": (10, 20, 50),
    "steps_power": (1.0, 2.0, 4.0, 8.0),
    "k1": (0.5, 0.9, 1.2, 1.5, 2.0),
    "b": (0.3, 0.5, 0.75, 0.9, 1.0),
}


def score(rankings: Sequence[Sequence[str]], queries: Sequence[Request]) -> dict[str, float]:
    """Mean recall@5 and nDCG@5 of ``rankings`` for ``queries``.

    >>> q = [Request("1", "x", (), ("a", "b"))]
    >>> score([["a", "c"]], q)
    {'recall@5': 0.5, 'ndcg@5': 0.6131}
    """
    return {"recall@5": round(float(np.mean([recall_at(r, q.gold, K) for r, q in zip(rankings, queries)])), 4),
            "ndcg@5": round(float(np.mean([ndcg_at(r, q.gold, K) for r, q in zip(rankings, queries)])), 4)}


def _key(entry: dict[str, Any]) -> tuple[float, float]:
    return (entry["dev"]["recall@5"], entry["dev"]["ndcg@5"])


def tune(data: ToolData, *, grid: dict[str, Sequence[Any]] = GRID, dev_size: int = DEV_SIZE,
         log: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Every trial on the development split, and the frozen choice of each system."""
    memory_rows, queries = data.dev_split(size=dev_size)
    started = time.time()
    memory = build_memory(data.tools, memory_rows)
    hgm = HgmRetriever(memory)
    top_k = max(*grid["k"], *grid["steps_k"])
    cached = [hgm.candidates(q.text, top_k) for q in queries]
    log(f"dev: {len(queries)} queries, memory of {len(memory_rows)} requests; candidates in {time.time() - started:.1f} s")
    trials: dict[str, list[dict[str, Any]]] = {"hgm-vote": [], "hgm-goals-first": [], "hgm-direct": [],
                                               "bm25-desc": [], "bm25-expanded": [], "bm25-vote": []}
    trials["hgm-direct"].append({"config": {}, "dev": score([[t for t, _ in c["direct"]] for c in cached], queries)})
    for source, k, (weight, power), mix in itertools.product(grid["source"], grid["k"], grid["weight"], grid["mix"]):
        if weight != "score" and power != 1.0:
            continue
        config = VoteConfig(source=source, k=k, weight=weight, power=power, mix=mix)
        rankings = [vote_rank(c[source], hgm.tools_of, c["direct"], config) for c in cached]
        trials["hgm-vote"].append({"config": config.to_json(), "label": config.label(), "dev": score(rankings, queries)})
    stage_one = sorted(trials["hgm-vote"], key=_key, reverse=True)[:STEPS_ON]
    for entry, steps, steps_k, steps_power in itertools.product(stage_one, grid["steps"], grid["steps_k"], grid["steps_power"]):
        config = VoteConfig(**{**entry["config"], "steps": steps, "steps_k": steps_k, "steps_power": steps_power})
        rankings = [vote_rank(c[config.source], hgm.tools_of, c["direct"], config, steps=c["action"]) for c in cached]
        trials["hgm-vote"].append({"config": config.to_json(), "label": config.label(), "dev": score(rankings, queries)})
    for k in grid["goals_first_k"]:
        rankings = [hgm.goals_first(q.text, k) for q in queries]
        trials["hgm-goals-first"].append({"config": {"k": k}, "dev": score(rankings, queries)})
    for k1, b in itertools.product(grid["k1"], grid["b"]):
        desc = Bm25Tools(data.tools, k1=k1, b=b)
        trials["bm25-desc"].append({"config": {"k1": k1, "b": b}, "dev": score([desc.rank(q.text) for q in queries], queries)})
        expanded = Bm25Tools(data.tools, memory_rows, expand=True, k1=k1, b=b)
        trials["bm25-expanded"].append({"config": {"k1": k1, "b": b},
                                        "dev": score([expanded.rank(q.text) for q in queries], queries)})
    best_vote = max(trials["hgm-vote"], key=_key)
    frozen_vote = VoteConfig(**best_vote["config"])
    for k1, b in itertools.product(grid["k1"], grid["b"]):
        voter = bm25_voter(data.tools, memory_rows, frozen_vote, k1=k1, b=b)
        trials["bm25-vote"].append({"config": {"k1": k1, "b": b, "vote": frozen_vote.to_json()},
                                    "dev": score([voter.rank(q.text, frozen_vote) for q in queries], queries)})
    frozen = {name: max(entries, key=_key) for name, entries in trials.items()}
    for name, entry in frozen.items():
        log(f"{name:16} {json.dumps(entry['config'])}: dev {entry['dev']}")
    return {
        "protocol": {"dev_seed": DEV_SEED, "dev_size": len(queries), "memory_requests": len(memory_rows),
                     "selection": "development recall@5, then nDCG@5", "grid": {k: list(v) for k, v in grid.items()}},
        "environment": {"python": platform.python_version(), "machine": platform.machine()},
        "seconds": round(time.time() - started, 1),
        "frozen": {name: {"config": entry["config"], "dev": entry["dev"]} for name, entry in frozen.items()},
        "primary": max((n for n in frozen if n.startswith("hgm-")), key=lambda n: _key(frozen[n])),
        "primary_rule": "the hgm system with the best development recall@5 (then nDCG@5), fixed before any test query",
        "trials": trials,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="the UltraTool folder (default: ../shared/data/taskplan/ultratool)")
    parser.add_argument("--out", required=True, help="where to write the tuning log (JSON)")
    args = parser.parse_args(argv)
    folder = args.data or find_ultratool()
    if folder is None:
        print("UltraTool data not found (give --data or set HGM_TASKPLAN_DATA)", file=sys.stderr)
        return 2
    result = tune(load_ultratool(folder), log=print)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
        handle.write("\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
