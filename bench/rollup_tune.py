"""Tune the fused coarse-to-fine locate on the development split only, log every trial, freeze.

    .venv/bin/python bench/rollup_tune.py --out bench/results/rollup-tuning.json

Development = ``bench/localize/protocol.dev_rows`` (1,000 requests of UltraTool's published
memory side, seed 14). The memory they are located in is the *rest* of the memory side (2,027
requests), grouped into scenarios by tool domain (as ``bench/time_bench.py`` does for the test
run) and each scenario summarized — so no development request is in the memory, nor in a
summary. No test request is read here.

For each development request the flat locate's first ``depth`` matches and the coarse step's
ranking of every scenario summary are computed once (the engine's own calls:
``locate(k=depth)`` and ``locate(coarse=True, scenarios=all)``'s ``chosen``); each setting of
the fusion is then :func:`hgm_engine.paths.coarse.fuse_order` over them — the function the
engine runs — so a trial costs no locate. The grid (``GRID``) is searched whole; the setting
with the best development hit@5 wins (ties: hit@1, then MRR@10, then the first in grid order).
The restricting coarse-to-fine locate (the one before this tuning) and flat are logged beside.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench" / "localize"))

from protocol import DEV_SEED, DEV_SIZE, dev_rows  # noqa: E402

from hgm_engine import Memory  # noqa: E402
from hgm_engine.paths.coarse import fuse_order  # noqa: E402
from hgm_engine.paths.localize.taskplan import (  # noqa: E402
    find_taskplan_root,
    gold_sequence,
    load_taskplan,
    request_to_trajectory,
    suggest_tags,
)

DEPTH = 50
GRID = {
    "scenarios": [1, 3, 5, 10, 20],
    "weight": [0.25, 0.5, 1.0, 2.0, 4.0],
    "k": [5, 10, 30, 60],
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def scenario_of_steps(steps, domains) -> str:
    found = sorted({d for name in steps for d in domains.get(name, ())})
    return "sc-" + ("-".join(found) if found else "none")


def build_memory(rows, domains) -> tuple[Memory, int, int]:
    memory = Memory()
    groups: dict[str, list] = {}
    for row in rows:
        groups.setdefault(scenario_of_steps(gold_sequence(row), domains), []).append(request_to_trajectory(row, domains))
    for name, trajectories in groups.items():
        memory.ingest(trajectories, scenario=name)
    for name in groups:
        memory.summarize(name)
    events = sum(memory.summary_of(name)["covers"] for name in groups)
    return memory, len(groups), events


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "hit@1": round(sum(1 for r in ranks if r is not None and r <= 1) / n, 4),
        "hit@5": round(sum(1 for r in ranks if r is not None and r <= 5) / n, 4),
        "hit@10": round(sum(1 for r in ranks if r is not None and r <= 10) / n, 4),
        "mrr@10": round(sum(1.0 / r for r in ranks if r is not None and r <= 10) / n, 4),
    }


def rank_of(gold, steps_list) -> int | None:
    return steps_list.index(gold) + 1 if gold in steps_list else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="only the first N development requests (a smoke run)")
    args = parser.parse_args(argv)
    root = find_taskplan_root(REPO)
    if root is None:
        log("no task-plan data")
        return 1
    data = load_taskplan(root / "ultratool")
    dev = dev_rows(data)
    if args.limit:
        dev = dev[: args.limit]
    dev_ids = {str(r["id"]) for r in dev_rows(data)}
    rows = [r for r in data.memory_rows() if str(r["id"]) not in dev_ids]
    started = time.process_time()
    memory, scenarios, events = build_memory(rows, data.domains)
    log(f"dev memory: {len(rows)} paths, {scenarios} scenarios, {events} events ({time.process_time() - started:.1f} s CPU)")
    vocabulary = data.tag_vocabulary
    cases = []
    restrict_ranks = []
    for i, row in enumerate(dev):
        text = row["user_request"]
        tags = suggest_tags(text, vocabulary)
        flat = memory.locate(text, tags, DEPTH)
        everything = memory.locate(text, tags, 1, coarse=True, scenarios=100_000)
        ranking = [c["scenario"] for c in everything.coarse["chosen"]]
        restricted = memory.locate(text, tags, 10, coarse=True, scenarios=3)
        gold = gold_sequence(row)
        cases.append({
            "gold": gold,
            "gold_scenario": scenario_of_steps(gold, data.domains),
            "flat": [tuple(m.steps) for m in flat.matches],
            "ranking": ranking,
        })
        restrict_ranks.append(rank_of(gold, [tuple(m.steps) for m in restricted.matches]))
        if i % 100 == 99:
            log(f"{i + 1} development requests located")
    for case in cases:
        case["scenarios"] = [[scenario_of_steps(steps, data.domains)] for steps in case["flat"]]
    flat_ranks = [rank_of(c["gold"], c["flat"][:10]) for c in cases]
    trials = []
    for scenarios_kept, weight, k in itertools.product(GRID["scenarios"], GRID["weight"], GRID["k"]):
        ranks = []
        for case in cases:
            chosen = {name: r for r, name in enumerate(case["ranking"][:scenarios_kept], start=1)}
            order = fuse_order(case["scenarios"], chosen, weight=weight, k=k)
            ranks.append(rank_of(case["gold"], [case["flat"][i] for i in order][:10]))
        trial = {"scenarios": scenarios_kept, "weight": weight, "k": k, **metrics(ranks)}
        trials.append(trial)
    best = max(trials, key=lambda t: (t["hit@5"], t["hit@1"], t["mrr@10"], -trials.index(t)))
    gold_in_top = {n: round(statistics.mean(c["gold_scenario"] in c["ranking"][:n] for c in cases), 4) for n in GRID["scenarios"]}
    result = {
        "what": "fused coarse-to-fine locate, tuned on the development split only (UltraTool memory side minus the dev requests)",
        "command": "python bench/rollup_tune.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": f"{platform.machine()}, CPython {platform.python_version()}",
        "protocol": {"dev_size": len(dev), "dev_seed": DEV_SEED, "requested_dev_size": DEV_SIZE,
                     "memory_paths": len(rows), "scenarios": scenarios, "events": events, "depth": DEPTH,
                     "grid": GRID, "selection": "best dev hit@5; ties: hit@1, MRR@10, grid order"},
        "flat": metrics(flat_ranks),
        "restrict (3 scenarios, the coarse default)": metrics(restrict_ranks),
        "gold_scenario_in_first_n": gold_in_top,
        "trials": trials,
        "frozen": {"scenarios": best["scenarios"], "weight": best["weight"], "k": best["k"], "depth": DEPTH},
        "frozen_dev": best,
        "cpu_seconds": round(time.process_time() - started, 1),
    }
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    log(f"flat {result['flat']}; restrict {result['restrict (3 scenarios, the coarse default)']}; best {best}")
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
