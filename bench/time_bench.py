"""Issue 18's measurements: the cost of ``valid_at`` and coarse-to-fine locate.

1. ``valid_at`` over 100k facts: the same filter with and without it, timed interleaved
   (A B A B ..., medians, and the median of the per-pair ratios) on two distributions of
   bounds: per-second timestamps with mixed offsets (every bound a distinct text) and
   whole dates (a few thousand distinct texts).
2. Roll-up: the UltraTool task-plan memory (every request not held out, ingested as paths)
   grouped into scenarios by tool domain (the set of domains of a request's tools), each
   scenario summarized (extractive, deterministic); the 500 held-out requests are located
   flat and coarse-to-fine (``scenarios`` = 3, the default, fixed before this run; 1 and 5
   are shown as a sensitivity check, not chosen by their score), and the fused
   coarse-to-fine locate with the settings frozen from ``bench/rollup_tune.py`` (development
   split only). hit@1/5/10 with 95% bootstrap intervals, and paired-bootstrap intervals of
   the difference to flat; CPU time and wall latency, medians and p95.

    python bench/time_bench.py --out bench/results/time.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hgm_engine import Memory  # noqa: E402
from hgm_engine.paths.localize.taskplan import (  # noqa: E402
    find_taskplan_root,
    gold_sequence,
    load_taskplan,
    request_to_trajectory,
    suggest_tags,
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- 1. valid_at -------------------------------------------------------------------------------


def fact_memory(n: int, distinct: bool, seed: int = 0) -> Memory:
    rng = random.Random(seed)
    base = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    nodes = []
    for i in range(n):
        node = {"id": f"f{i}", "type": "fact", "content": f"fact {i}", "confidence": rng.random()}
        if rng.random() < 0.7:
            if distinct:
                start = base + datetime.timedelta(seconds=rng.randrange(0, 3 * 365 * 86400))
                node["valid_from"] = start.strftime("%Y-%m-%dT%H:%M:%SZ")
            else:
                start = base + datetime.timedelta(days=rng.randrange(0, 3 * 365))
                node["valid_from"] = start.strftime("%Y-%m-%d")
            if rng.random() < 0.6:
                end = start + datetime.timedelta(days=rng.randrange(1, 400))
                node["valid_to"] = end.strftime("%Y-%m-%dT%H:%M:%S+02:00") if distinct else end.strftime("%Y-%m-%d")
        nodes.append(node)
    return Memory.from_document({"format": "hgm-graph/1", "nodes": nodes, "edges": []})


PAIRS = [
    ("type only", "nodes.where(type = 'fact')", "nodes.where(type = 'fact', valid_at('2026-03-01'))", None),
    ("with a comparison", "nodes.where(type = 'fact', confidence >= 0.5)",
     "nodes.where(type = 'fact', confidence >= 0.5, valid_at('2026-03-01'))", None),
    ("parameter", "nodes.where(type = 'fact', confidence >= 0.5)",
     "nodes.where(type = 'fact', confidence >= 0.5, valid_at($t))", {"t": "2026-03-01"}),
]


def time_pair(memory: Memory, plain: str, timed: str, params, repeat: int, *, as_of=None, commit: bool = False) -> dict:
    """CPU time of this process (``time.process_time``: the machine is shared), A B A B ...;
    ``commit``: a one-fact commit before each query (so the valid-time index is brought up
    to date inside the timed query); ``as_of``: both read an earlier state (an overlay)."""
    added = [0]

    def run(query, query_params=None):
        if commit:
            added[0] += 1
            memory.apply({"ops": [{"op": "add_node", "id": f"new{added[0]}", "type": "fact", "content": "new",
                                   "confidence": 0.7, "valid_from": "2026-01-01"}]})
        start = time.process_time()
        result = memory.query(query, params=query_params, as_of=as_of)
        return time.process_time() - start, result

    run(plain)
    run(timed, params)
    a, b, ratios = [], [], []
    for _ in range(repeat):
        without, _ = run(plain)
        with_, result = run(timed, params)
        a.append(without)
        b.append(with_)
        ratios.append(with_ / without)
    return {
        "without_cpu_ms": round(statistics.median(a) * 1000, 2),
        "with_cpu_ms": round(statistics.median(b) * 1000, 2),
        "ratio_median": round(statistics.median(ratios), 3),
        "matched": len(result.ids),
    }


def run_valid_at(n: int, repeat: int) -> dict:
    out = {}
    for distinct in (True, False):
        label = "distinct timestamps" if distinct else "whole dates"
        memory = fact_memory(n, distinct)
        out[label] = {}
        for name, plain, timed, params in PAIRS:
            out[label][name] = dict(time_pair(memory, plain, timed, params, repeat), without=plain, **{"with": timed})
            log(f"valid_at {label} / {name}: {out[label][name]}")
        first_t = memory.t
        _, plain, timed, params = PAIRS[1]
        name = "with a comparison, a one-fact commit before each query"
        out[label][name] = dict(time_pair(memory, plain, timed, params, repeat, commit=True), without=plain, **{"with": timed})
        log(f"valid_at {label} / {name}: {out[label][name]}")
        name = f"with a comparison, as_of t={first_t} (an earlier state: no index, each node tested)"
        out[label][name] = dict(time_pair(memory, plain, timed, params, repeat, as_of=first_t), without=plain, **{"with": timed})
        log(f"valid_at {label} / {name}: {out[label][name]}")
    return out


# -- 2. roll-up ----------------------------------------------------------------------------------


def scenario_name(row, domains) -> str:
    found = sorted({d for name in gold_sequence(row) for d in domains.get(name, ())})
    return "sc-" + ("-".join(found) if found else "none")


def bootstrap_difference(a: list[int], b: list[int], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(a)
    diffs = []
    for _ in range(rounds):
        picks = [rng.randrange(n) for _ in range(n)]
        diffs.append(sum(b[i] - a[i] for i in picks) / n)
    diffs.sort()
    return round(diffs[int(0.025 * rounds)], 4), round(diffs[int(0.975 * rounds)], 4)


def bootstrap_mean(values: list[int], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return round(means[int(0.025 * rounds)], 4), round(means[int(0.975 * rounds)], 4)


def run_rollup(folder: Path, k: int = 10) -> dict:
    data = load_taskplan(folder)
    memory = Memory()
    groups: dict[str, list] = {}
    for row in data.memory_rows():
        groups.setdefault(scenario_name(row, data.domains), []).append(request_to_trajectory(row, data.domains))
    start = time.perf_counter()
    for name, trajectories in groups.items():
        memory.ingest(trajectories, scenario=name)
    ingest_s = time.perf_counter() - start
    start = time.perf_counter()
    for name in groups:
        memory.summarize(name)
    summarize_s = time.perf_counter() - start
    events = sum(memory.summary_of(name)["covers"] for name in groups)
    log(f"rollup: {len(groups)} scenarios, {events} events; ingest {ingest_s:.1f}s, summarize {summarize_s:.1f}s")
    vocabulary = data.tag_vocabulary
    rows = data.test_rows()
    systems = {"flat": {}, "coarse (3 scenarios, default)": {"coarse": True, "scenarios": 3},
               "coarse (1 scenario)": {"coarse": True, "scenarios": 1},
               "coarse (5 scenarios)": {"coarse": True, "scenarios": 5},
               # frozen from bench/results/rollup-tuning.json (development split only): FUSION
               "coarse fused (frozen)": {"coarse": True, "fuse": True}}
    memory.locate("warm up", k=k)
    memory.locate("warm up", k=k, coarse=True)
    out: dict = {"scenarios": len(groups), "events": events, "memory_paths": len(data.memory_rows()),
                 "queries": len(rows), "ingest_s": round(ingest_s, 2), "summarize_s": round(summarize_s, 2), "systems": {}}
    hits_by_system: dict[str, dict[int, list[int]]] = {}
    for name, options in systems.items():
        hits = {1: [], 5: [], 10: []}
        latencies, cpu, scenario_hit = [], [], 0
        for row in rows:
            text = row["user_request"]
            tags = suggest_tags(text, vocabulary)
            started, started_cpu = time.perf_counter(), time.process_time()
            result = memory.locate(text, tags, k, **options)
            cpu.append(time.process_time() - started_cpu)
            latencies.append(time.perf_counter() - started)
            names = [tuple(m.steps) for m in result.matches]
            gold = gold_sequence(row)
            rank = names.index(gold) + 1 if gold in names else None
            for cut in hits:
                hits[cut].append(int(rank is not None and rank <= cut))
            if result.coarse is not None:
                scenario_hit += scenario_name(row, data.domains) in {c["scenario"] for c in result.coarse["chosen"]}
        latencies.sort()
        cpu.sort()
        entry = {f"hit@{cut}": round(sum(v) / len(v), 4) for cut, v in hits.items()}
        entry["hit_95ci"] = {f"hit@{cut}": bootstrap_mean(v) for cut, v in hits.items()}
        entry["cpu_ms_median"] = round(statistics.median(cpu) * 1000, 3)
        entry["cpu_ms_p95"] = round(cpu[int(0.95 * len(cpu))] * 1000, 3)
        entry["latency_ms_median"] = round(statistics.median(latencies) * 1000, 3)
        entry["latency_ms_p95"] = round(latencies[int(0.95 * len(latencies))] * 1000, 3)
        if options:
            entry["gold_scenario_chosen"] = round(scenario_hit / len(rows), 4)
        out["systems"][name] = entry
        hits_by_system[name] = hits
        log(f"rollup {name}: {entry}")
    for name in systems:
        if name != "flat":
            out["systems"][name]["difference_vs_flat_95ci"] = {
                f"hit@{cut}": bootstrap_difference(hits_by_system["flat"][cut], hits_by_system[name][cut]) for cut in (1, 5, 10)
            }
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--skip-rollup", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    results: dict = {
        "command": "python bench/time_bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "environment": {"python": platform.python_version(), "machine": platform.machine(), "cpus_shared": True},
        "valid_at": run_valid_at(args.facts, args.repeat),
    }
    if not args.skip_rollup:
        root = find_taskplan_root(REPO)
        if root is None:
            log("no task-plan data: roll-up skipped")
        else:
            results["rollup"] = run_rollup(root / "ultratool")
    text = json.dumps(results, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
