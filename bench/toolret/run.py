"""Score the frozen systems once on the test split: recall@5 and nDCG@5 with 95% intervals.

Reads the frozen configuration from the tuning log (``--tuning``, written by
:mod:`bench.toolret.tune` from the development split only), builds the memory of every
non-test request, and ranks tools for each of the 500 test requests with every system in
the same run: hgm's ``direct``, ``goals-first`` and ``vote`` (through ``Memory.query`` and
``Memory.search``) and the BM25 baselines (``bm25s``). Reports each system's means with
percentile bootstrap intervals over the queries, the paired bootstrap interval of the
primary hgm system minus every other, the target check, and hgm's time per query.

    python -m bench.toolret.run --tuning bench/results/toolret/tuning.json \\
        --out bench/results/toolret/results.json
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from bench.toolret.build import build_memory
from bench.toolret.data import (BOOTSTRAP_REPS, BOOTSTRAP_SEED, K, Request, ToolData, find_ultratool, load_ultratool,
                                ndcg_at, paired_interval, recall_at, summarize)
from bench.toolret.systems import Bm25Tools, HgmRetriever, VoteConfig, bm25_voter

__all__ = ["TARGET_RECALL", "systems_for", "evaluate", "report_markdown"]

TARGET_RECALL = 0.90
NAMES = {
    "hgm-vote": "hgm: search past goals, path steps to their tools, vote",
    "hgm-goals-first": "hgm: search past goals, path steps to their tools (one query)",
    "hgm-direct": "hgm: search the tools",
    "bm25-desc": "BM25 over tool descriptions",
    "bm25-expanded": "BM25 over descriptions + past requests",
    "bm25-vote": "BM25 over past requests, hgm's vote",
}


def systems_for(data: ToolData, memory_rows: Sequence[Request], frozen: Mapping[str, Any]
                ) -> dict[str, Callable[[str], list[str]]]:
    """Every system, built over ``memory_rows`` with its frozen configuration."""
    memory = build_memory(data.tools, memory_rows)
    hgm = HgmRetriever(memory)
    vote = VoteConfig(**frozen["hgm-vote"]["config"])
    goals_k = frozen["hgm-goals-first"]["config"]["k"]
    desc = Bm25Tools(data.tools, **frozen["bm25-desc"]["config"])
    expanded = Bm25Tools(data.tools, memory_rows, expand=True, **frozen["bm25-expanded"]["config"])
    bm25_vote_config = frozen["bm25-vote"]["config"]
    voter = bm25_voter(data.tools, memory_rows, vote, k1=bm25_vote_config["k1"], b=bm25_vote_config["b"])
    return {
        "hgm-vote": lambda text: hgm.vote(text, vote),
        "hgm-goals-first": lambda text: hgm.goals_first(text, goals_k),
        "hgm-direct": hgm.direct,
        "bm25-desc": desc.rank,
        "bm25-expanded": expanded.rank,
        "bm25-vote": lambda text: voter.rank(text, vote),
    }


def evaluate(data: ToolData, tuning: Mapping[str, Any], *, reps: int = BOOTSTRAP_REPS) -> dict[str, Any]:
    """The test run: every frozen system on the test split, in one process."""
    memory_rows, queries = data.test_split()
    frozen = tuning["frozen"]
    primary = tuning["primary"]
    started = time.time()
    systems = systems_for(data, memory_rows, frozen)
    build_seconds = time.time() - started
    per_query: dict[str, dict[str, list[float]]] = {}
    latency: dict[str, dict[str, float]] = {}
    rankings: dict[str, list[list[str]]] = {}
    for name, rank in systems.items():
        times, ranked = [], []
        for query in queries:
            t0 = time.perf_counter()
            ranked.append(rank(query.text))
            times.append(time.perf_counter() - t0)
        rankings[name] = ranked
        per_query[name] = {"recall@5": [recall_at(r, q.gold, K) for r, q in zip(ranked, queries)],
                           "ndcg@5": [ndcg_at(r, q.gold, K) for r, q in zip(ranked, queries)]}
        ms = np.asarray(times) * 1000
        latency[name] = {"median_ms": round(float(np.median(ms)), 2), "p95_ms": round(float(np.quantile(ms, 0.95)), 2)}
    summary = {name: summarize(values, reps=reps, seed=BOOTSTRAP_SEED) for name, values in per_query.items()}
    differences = {
        other: {metric: paired_interval(per_query[primary][metric], per_query[other][metric], reps=reps, seed=BOOTSTRAP_SEED)
                for metric in ("recall@5", "ndcg@5")}
        for other in systems if other != primary
    }
    seen = {tool for row in memory_rows for tool in row.tools}
    gold_total = sum(len(q.gold) for q in queries)
    unseen = sum(1 for q in queries for tool in q.gold if tool not in seen)
    best_possible = float(np.mean([len(q.gold & seen) / len(q.gold) for q in queries])) if queries else float("nan")
    primary_recall = summary[primary]["recall@5"]["mean"]
    expanded_recall = summary["bm25-expanded"]["recall@5"]["mean"]
    return {
        "protocol": {
            "queries": len(queries), "memory_requests": len(memory_rows), "tools": len(data.tools),
            "metric_depth": K, "bootstrap": {"reps": reps, "seed": BOOTSTRAP_SEED, "level": 0.95},
            "tuning": "frozen from the development split (tuning.json); the test split is scored once, here",
            "gold_tools": gold_total, "gold_tools_never_used_in_memory": unseen,
            "best_possible_recall@5_with_memory_tools": round(best_possible, 4),
        },
        "primary": primary,
        "frozen": {name: frozen[name]["config"] for name in systems},
        "summary": summary,
        "paired_primary_minus": differences,
        "targets": {
            "recall@5 >= bm25-expanded (same run)": primary_recall >= expanded_recall,
            f"recall@5 >= {TARGET_RECALL}": primary_recall >= TARGET_RECALL,
        },
        "latency_per_query": latency,
        "build_seconds": round(build_seconds, 2),
        "environment": {"python": platform.python_version(), "machine": platform.machine()},
        "examples": [{"id": q.id, "request": q.text, "gold": sorted(q.gold), "hgm": rankings[primary][i][:K],
                      "bm25-expanded": rankings["bm25-expanded"][i][:K]} for i, q in enumerate(queries[:3])],
    }


def _interval(entry: Mapping[str, float]) -> str:
    return f"{entry['mean']:.3f} [{entry['low']:.3f}, {entry['high']:.3f}]"


def report_markdown(result: Mapping[str, Any]) -> str:
    """The tables of ``docs/retrieval.md`` for one run."""
    lines = ["| system | recall@5 [95% CI] | nDCG@5 [95% CI] | median / p95 ms |", "|---|---|---|---|"]
    for name, entry in result["summary"].items():
        lat = result["latency_per_query"][name]
        lines.append(f"| {NAMES.get(name, name)} (`{name}`) | {_interval(entry['recall@5'])} | {_interval(entry['ndcg@5'])} "
                     f"| {lat['median_ms']:.1f} / {lat['p95_ms']:.1f} |")
    lines += ["", f"| `{result['primary']}` minus | recall@5 [95% paired CI] | nDCG@5 [95% paired CI] |", "|---|---|---|"]
    for other, entry in result["paired_primary_minus"].items():
        cells = [f"{entry[m]['difference']:+.3f} [{entry[m]['low']:+.3f}, {entry[m]['high']:+.3f}]" for m in ("recall@5", "ndcg@5")]
        lines.append(f"| `{other}` | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="the UltraTool folder (default: ../shared/data/taskplan/ultratool)")
    parser.add_argument("--tuning", required=True, help="the tuning log with the frozen configuration")
    parser.add_argument("--out", help="where to write the results (JSON)")
    args = parser.parse_args(argv)
    folder = args.data or find_ultratool()
    if folder is None:
        print("UltraTool data not found (give --data or set HGM_TASKPLAN_DATA)", file=sys.stderr)
        return 2
    with open(args.tuning, encoding="utf-8") as handle:
        tuning = json.load(handle)
    result = evaluate(load_ultratool(folder), tuning)
    print(report_markdown(result))
    print(json.dumps(result["targets"]))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
            handle.write("\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
