"""The agent evaluation (issue 6): full hgm against three ablations on generated tasks.

For each seed, one sequence of tasks (:func:`bench.agent.env.generate_tasks`) runs, task after
task, against one memory per condition (the memory persists over the sequence: that is where
localization and rewriting can pay off), with the simulated tools of
:class:`bench.agent.env.Environment` (an outage of the refund-policy service in the middle of
the sequence, a user who corrects bandwidth fees, closed sights, transient timeouts). A task
*succeeds* when its run ends ``done`` with outcome ``success`` within ``--max-steps`` steps.

Reported per condition (mean over seeds, and the spread between seeds): task success rate,
loop steps per task, planner calls per task (decompositions and repairs: what an LLM planner
would be asked), failed steps per task, and the memory's size at the end; the same per task
family.

    python -m bench.agent.run --tasks 200 --seeds 0,1,2 --out bench/results/agent.json

Deterministic: the same arguments give the same numbers (no clock is read; only the reported
wall time of the whole run varies).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import statistics
import sys
import time
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from hgm_engine import Memory  # noqa: E402
from planners import run  # noqa: E402

from bench.agent.ablations import CONDITIONS, make_planner  # noqa: E402
from bench.agent.env import FAMILIES, Environment, build_domain, generate_tasks  # noqa: E402

RESULT_FORMAT = "hgm-bench-agent/1"


def run_sequence(condition: str, seed: int, n_tasks: int, *, max_steps: int = 30, transient: float = 0.05) -> list[dict[str, Any]]:
    """Run one condition over one seed's task sequence; one row per task."""
    env = Environment(seed, n_tasks, transient=transient)
    domain = build_domain()
    memory = Memory()
    rows = []
    for task in generate_tasks(n_tasks, seed):
        planner = make_planner(condition, domain)
        record = run(planner, memory, env.tools_for(task), max_steps=max_steps, task=task.observation, max_failures=4)
        rows.append({
            "task": task.number,
            "family": task.family,
            "success": record.status == "done" and record.outcome == "success",
            "steps": len(record.steps),
            "calls": record.calls,
            "failed_steps": len(record.failed_steps),
            "status": record.status,
        })
    rows.append({"memory_nodes": len(memory), "commits": memory.t})
    return rows


def _summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = len(rows)
    return {
        "tasks": n,
        "success_rate": sum(r["success"] for r in rows) / n if n else 0.0,
        "steps_per_task": sum(r["steps"] for r in rows) / n if n else 0.0,
        "calls_per_task": sum(r["calls"] for r in rows) / n if n else 0.0,
        "failed_steps_per_task": sum(r["failed_steps"] for r in rows) / n if n else 0.0,
    }


def _mean_spread(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}


def evaluate(n_tasks: int, seeds: list[int], conditions: list[str], *, max_steps: int = 30,
             transient: float = 0.05, progress: bool = False) -> dict[str, Any]:
    """Every condition on every seed; the result document (format ``hgm-bench-agent/1``)."""
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for condition in conditions:
        per_seed = []
        per_family: dict[str, list[dict[str, float]]] = {f: [] for f in FAMILIES}
        sizes = []
        for seed in seeds:
            rows = run_sequence(condition, seed, n_tasks, max_steps=max_steps, transient=transient)
            sizes.append(rows.pop()["memory_nodes"])
            per_seed.append(_summary(rows))
            for family in FAMILIES:
                mine = [r for r in rows if r["family"] == family]
                if mine:
                    per_family[family].append(_summary(mine))
            if progress:
                s = per_seed[-1]
                print(f"  {condition:12s} seed {seed}: success {s['success_rate']:.3f}, steps {s['steps_per_task']:.2f}, "
                      f"calls {s['calls_per_task']:.2f}", file=sys.stderr, flush=True)
        keys = ("success_rate", "steps_per_task", "calls_per_task", "failed_steps_per_task")
        results[condition] = {
            **{k: _mean_spread([s[k] for s in per_seed]) for k in keys},
            "memory_nodes": _mean_spread([float(x) for x in sizes]),
            "per_family": {f: {k: statistics.fmean(s[k] for s in v) for k in keys} | {"tasks": sum(s["tasks"] for s in v)}
                           for f, v in per_family.items() if v},
            "per_seed": per_seed,
        }
    return {
        "format": RESULT_FORMAT,
        "config": {"tasks_per_seed": n_tasks, "seeds": seeds, "max_steps": max_steps, "transient_failure_rate": transient,
                   "conditions": conditions, "families": list(FAMILIES)},
        "environment": {"python": platform.python_version(), "platform": platform.platform(),
                        "seconds": round(time.perf_counter() - started, 1)},
        "results": results,
    }


def table(doc: dict[str, Any]) -> str:
    """The results as a Markdown table (mean over seeds; min–max in brackets)."""
    lines = ["| condition | task success | steps / task | planner calls / task | failed steps / task | memory nodes |",
             "|---|---|---|---|---|---|"]
    for condition, r in doc["results"].items():
        def cell(key: str, fmt: str) -> str:
            v = r[key]
            return f"{v['mean']:{fmt}} ({v['min']:{fmt}}–{v['max']:{fmt}})"

        lines.append(f"| {condition} | {cell('success_rate', '.3f')} | {cell('steps_per_task', '.2f')} | "
                     f"{cell('calls_per_task', '.2f')} | {cell('failed_steps_per_task', '.2f')} | {cell('memory_nodes', '.0f')} |")
    lines += ["", "| condition | " + " | ".join(f"{f}: success / steps / calls" for f in doc["config"]["families"]) + " |",
              "|---|" + "---|" * len(doc["config"]["families"])]
    for condition, r in doc["results"].items():
        cells = []
        for f in doc["config"]["families"]:
            pf = r["per_family"].get(f)
            cells.append("–" if pf is None else f"{pf['success_rate']:.3f} / {pf['steps_per_task']:.2f} / {pf['calls_per_task']:.2f}")
        lines.append(f"| {condition} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks per seed (default 200)")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--conditions", default=",".join(CONDITIONS), help="which conditions (default all)")
    parser.add_argument("--max-steps", type=int, default=30, help="step budget per task (default 30)")
    parser.add_argument("--transient", type=float, default=0.05, help="transient failure rate per tool call (default 0.05)")
    parser.add_argument("--out", help="write the result document (JSON) here")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    conditions = [c for c in args.conditions.split(",") if c]
    doc = evaluate(args.tasks, seeds, conditions, max_steps=args.max_steps, transient=args.transient, progress=True)
    print(table(doc))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
