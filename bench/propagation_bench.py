"""Propagation cost benchmark (issue 4): a fact update marks its derived_from cone, not the memory.

Issue 4 asks that "propagation touches only the affected cone": the time of a fact update with
propagation should grow with the number of nodes it marks, not with the size of the memory.

For each size (100k and 1M nodes from ``generate.py``, seed 0, cached under
``bench/results/tmp/``):

1. ``Memory.from_file`` loads the generated memory (untimed).
2. For each cone size K (``--cones``, default 0, 1, 10, 100, 1,000, 10,000) one transaction
   (untimed) adds a *cone*: a fact ``pb{K}-f`` (``bench = true``, ``related_to`` the hub
   entity) and K dependents ``pb{K}-d1 … pb{K}-dK`` forming a complete 10-ary tree along
   ``derived_from`` (``d1…d10`` are derived from the fact, ``d11…d20`` from ``d1``, and so on:
   4 levels at K = 10,000). Odd dependents are done actions (children of the cone's subgoals,
   50 to a subgoal, under a goal ``pb{K}-g`` placed under an existing root), even ones are
   results produced by the action just before them — so every built-in constraint holds.
3. The rules (``RULES``): a trigger that marks the updated cone fact itself, and
   ``propagate derived_from backward depth 12``. An update of ``pb{K}-f`` therefore marks
   exactly K + 1 nodes; the benchmark checks ``len(report.dirtied) == K + 1`` every time.
4. Timed: ``memory.apply`` of a one-op transaction that updates the fact's ``content``.
   Before each timed run an untimed transaction confirms the K dependents, so that every run
   really marks K nodes again (marks with the same rule and cause are not recorded twice);
   with K = 0 it confirms the cone's unmarked goal, the same kind of small commit.
   The **control** is the same update with the rule set removed (nothing marked).

Runs are interleaved: each round times every K with the rules, then every K without them.
Each sample is one commit (``time.process_time`` and ``time.perf_counter`` around
``memory.apply``); the reported time is the median (and the minimum) over ``--repeat``
rounds after one warm-up round. Each round starts with an untimed ``gc.collect()`` and runs
with the garbage collector disabled; ``--gc-on-repeat N`` adds N rounds with the collector
left running (as in an agent's process; ``gc_on_*`` fields) and counts the full collections
that fell into their samples.

    python bench/propagation_bench.py --sizes 100000,1000000 --repeat 9 --gc-on-repeat 5 --out bench/results/propagation.json

``--profile`` also runs cProfile over the timed updates of the largest cone and prints the
profile (its times then include the profiler's overhead).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pathlib
import pstats
import statistics
import sys
import time
from typing import Any, Callable

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import hgm_engine  # noqa: E402

from bench import generate, query_bench  # noqa: E402
from bench.progress import tracked  # noqa: E402

__all__ = ["CONES", "FANOUT", "RULES", "cone_ops", "add_cones", "run_size", "run", "markdown", "main"]

CONES = (0, 1, 10, 100, 1_000, 10_000)
FANOUT = 10
ACTIONS_PER_SUBGOAL = 50
RULE_SET = "propagation-bench"
RULES = """
// bench/propagation_bench.py: the updated cone fact is marked by a trigger,
// and everything derived from it (transitively, 12 levels) by propagation.
rule cone_fact_changed: on update fact where bench = true then mark self as needs_review because 'the fact changed'
propagate derived_from backward depth 12
"""


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the cones ------------------------------------------------------------------------------------


def cone_parent(i: int, fact: str, prefix: str) -> str:
    """The node dependent ``i`` (1-based) is derived from: a complete ``FANOUT``-ary tree."""
    return fact if i <= FANOUT else f"{prefix}-d{(i - 1) // FANOUT}"


def cone_ops(k: int, parent_goal: str, entity: str, tag: str | None = None) -> tuple[list[dict[str, Any]], str, list[str]]:
    """The ops adding one cone of ``k`` dependents; returns ``(ops, fact id, dependent ids)``."""
    prefix = f"pb{k if tag is None else tag}"
    goal = f"{prefix}-g"
    fact = f"{prefix}-f"
    ops: list[dict[str, Any]] = [
        {"op": "add_node", "id": goal, "type": "goal", "parent": parent_goal, "content": f"Cone of {k}", "status": "active"},
        {"op": "add_node", "id": fact, "type": "fact", "content": "Observed value v0", "bench": True, "confidence": 0.9},
        {"op": "add_edge", "from": fact, "to": entity, "type": "related_to"},
    ]
    dependents = []
    actions = 0
    subgoal = None
    for i in range(1, k + 1):
        node = f"{prefix}-d{i}"
        dependents.append(node)
        if i % 2 == 1:
            if actions % ACTIONS_PER_SUBGOAL == 0:
                subgoal = f"{prefix}-s{actions // ACTIONS_PER_SUBGOAL + 1}"
                ops.append({"op": "add_node", "id": subgoal, "type": "goal", "parent": goal, "content": "Part of the cone"})
            actions += 1
            ops.append({"op": "add_node", "id": node, "type": "action", "parent": subgoal,
                        "content": f"Use what {cone_parent(i, fact, prefix)} says", "status": "done"})
        else:
            ops.append({"op": "add_node", "id": node, "type": "result", "content": "An outcome"})
            ops.append({"op": "add_edge", "from": f"{prefix}-d{i - 1}", "to": node, "type": "produces"})
        ops.append({"op": "add_edge", "from": node, "to": cone_parent(i, fact, prefix), "type": "derived_from"})
    return ops, fact, dependents


def add_cones(memory, cones: tuple[int, ...], parent_goal: str, entity: str, log: Callable[[str], None] = _log) -> dict[int, dict[str, Any]]:
    """Add every cone, one (untimed) transaction each."""
    added = {}
    for k in cones:
        ops, fact, dependents = cone_ops(k, parent_goal, entity)
        started = time.perf_counter()
        report = memory.apply({"author": "bench", "reason": f"cone of {k}", "ops": ops})
        if not report.committed:
            raise AssertionError(f"cone of {k} refused: {[v.message for v in report.violations][:3]}")
        goal = ops[0]["id"]
        added[k] = {"fact": fact, "goal": goal, "dependents": dependents, "ops": len(ops), "seconds": time.perf_counter() - started}
        log(f"  cone K={k:>6,}: {len(ops):,} ops added in {added[k]['seconds']:.2f} s")
    return added


# -- timing ---------------------------------------------------------------------------------------


def _confirm(memory, ids: list[str]) -> None:
    report = memory.apply({"author": "bench", "reason": "confirm the cone", "ops": [{"op": "confirm", "id": d} for d in ids]})
    if not report.committed:
        raise AssertionError("confirm refused")


def _timed_update(memory, fact: str, n: int, profiler=None) -> tuple[float, float, Any]:
    doc = {"author": "bench", "reason": f"fact update {n}", "ops": [{"op": "update_node", "id": fact, "set": {"content": f"Observed value v{n}"}}]}
    try:
        if profiler is not None:
            profiler.enable()
        cpu, wall = time.process_time(), time.perf_counter()
        report = memory.apply(doc)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        if profiler is not None:
            profiler.disable()
    if not report.committed:
        raise AssertionError(f"update of {fact} refused: {[v.message for v in report.violations][:3]}")
    return cpu, wall, report


def _rounds(memory, added, cones, repeat, *, gc_on, profiler, log, label) -> dict[str, Any]:
    """``repeat`` timed rounds after one warm-up round: every K with the rules, then without."""
    with_rules: dict[int, list[tuple[float, float]]] = {k: [] for k in cones}
    without: dict[int, list[tuple[float, float]]] = {k: [] for k in cones}
    marked: dict[int, int] = {}
    full_collections = 0  # generation-2 collections inside the timed samples with the rules
    try:
        for round_ in tracked(range(repeat + 1), f"rounds ({label})"):
            if not gc_on:
                gc.collect()
                gc.disable()
            memory.load_rules(RULES, name=RULE_SET)
            for k in cones:
                # untimed: clear the cone's marks, so the update marks all K again (with K = 0,
                # confirming the unmarked goal is the same kind of commit just before the sample)
                _confirm(memory, added[k]["dependents"] or [added[k]["goal"]])
                profiling = profiler if k == max(cones) and round_ else None
                gen2 = gc.get_stats()[2]["collections"]
                cpu, wall, report = _timed_update(memory, added[k]["fact"], memory.t, profiling)
                if round_:
                    full_collections += gc.get_stats()[2]["collections"] - gen2
                    with_rules[k].append((cpu, wall))
                if len(report.dirtied) != k + 1:
                    raise AssertionError(f"K={k}: the update marked {len(report.dirtied)} nodes, expected {k + 1}")
                marked[k] = len(report.dirtied)
            memory.remove_rules(RULE_SET)
            for k in cones:
                cpu, wall, report = _timed_update(memory, added[k]["fact"], memory.t)
                if report.dirtied or report.fired_rules:
                    raise AssertionError("the control update marked nodes")
                if round_:
                    without[k].append((cpu, wall))
            gc.enable()
            if round_:
                log(f"  {label} round {round_}/{repeat}: " + ", ".join(f"K={k:,} {with_rules[k][-1][0] * 1e3:.2f} ms" for k in cones))
    finally:
        gc.enable()
    return {"with_rules": with_rules, "without": without, "marked": marked, "full_collections": full_collections}


def _ms(samples: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    return [c * 1e3 for c, _ in samples], [w * 1e3 for _, w in samples]


def run_size(
    nodes: int,
    *,
    cones: tuple[int, ...] = CONES,
    repeat: int = 7,
    gc_on_repeat: int = 0,
    seed: int = 0,
    graph_dir: str | pathlib.Path = ROOT / "bench" / "results" / "tmp",
    log: Callable[[str], None] = _log,
    profile: bool = False,
) -> dict[str, Any]:
    """Time fact updates with and without propagation on one memory size.

    Each of the ``repeat`` rounds starts with ``gc.collect()`` (untimed) and runs with the
    garbage collector disabled. ``gc_on_repeat`` more rounds follow with the collector left
    running, as in an agent's process (``gc_on_*`` fields)."""
    path, meta, generated = generate.ensure_graph(graph_dir, nodes, seed)
    if generated is not None:
        log(f"generated {path.name} in {generated:.1f} s")
    started_cpu, started = time.process_time(), time.perf_counter()
    memory = hgm_engine.Memory.from_file(path)
    load = {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - started_cpu}
    log(f"{nodes:,} nodes: loaded in {load['seconds']:.1f} s ({load['cpu_seconds']:.1f} s CPU)")
    anchors = meta["anchors"]
    added = add_cones(memory, cones, anchors["mid_root"], anchors["hub_entity"], log)
    size = {"nodes": len(memory), "edges": memory.graph.edge_count}

    profiler = cProfile.Profile() if profile else None
    main = _rounds(memory, added, cones, repeat, gc_on=False, profiler=profiler, log=log, label="gc off")
    gc_run = None
    if gc_on_repeat:
        gc_run = _rounds(memory, added, cones, gc_on_repeat, gc_on=True, profiler=None, log=log, label="gc on")

    rows = []
    for k in cones:
        cpu, wall = _ms(main["with_rules"][k])
        control_cpu, control_wall = _ms(main["without"][k])
        row = {
            "cone": k,
            "marked": main["marked"][k],
            "cpu_median_ms": statistics.median(cpu),
            "cpu_min_ms": min(cpu),
            "wall_median_ms": statistics.median(wall),
            "control_cpu_median_ms": statistics.median(control_cpu),
            "control_cpu_min_ms": min(control_cpu),
            "control_wall_median_ms": statistics.median(control_wall),
            "cpu_ms": [round(x, 4) for x in cpu],
            "control_cpu_ms": [round(x, 4) for x in control_cpu],
        }
        if gc_run is not None:
            gc_cpu, gc_wall = _ms(gc_run["with_rules"][k])
            gc_control, _ = _ms(gc_run["without"][k])
            row.update(
                {
                    "gc_on_cpu_median_ms": statistics.median(gc_cpu),
                    "gc_on_wall_median_ms": statistics.median(gc_wall),
                    "gc_on_control_cpu_median_ms": statistics.median(gc_control),
                    "gc_on_cpu_ms": [round(x, 4) for x in gc_cpu],
                }
            )
        rows.append(row)
    if rows and rows[0]["cone"] == 0:
        base, base_min = rows[0]["cpu_median_ms"], rows[0]["cpu_min_ms"]
        for row in rows[1:]:
            if row["cone"] < 100:
                continue  # below that, the difference drowns in the noise
            # the K=0 update marks one node (the fact itself): the cost of each further one
            row["us_per_marked_node"] = (row["cpu_median_ms"] - base) * 1e3 / (row["marked"] - 1)
            row["us_per_marked_node_min"] = (row["cpu_min_ms"] - base_min) * 1e3 / (row["marked"] - 1)
    result = {
        "nodes_generated": nodes,
        "nodes": size["nodes"],
        "edges": size["edges"],
        "seed": seed,
        "load": load,
        "cones_added": {str(k): {"ops": v["ops"], "seconds": v["seconds"]} for k, v in added.items()},
        "repeat": repeat,
        "gc": "collected before each round, disabled during it",
        "gc_on_repeat": gc_on_repeat,
        "gc_on_full_collections_during_samples": None if gc_run is None else gc_run["full_collections"],
        "rows": rows,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(35)
        result["profile"] = out.getvalue()
    return result


def run(
    sizes: list[int],
    *,
    cones: tuple[int, ...] = CONES,
    repeat: int = 7,
    graph_dir=None,
    log=_log,
    profile: bool = False,
    gc_on_repeat: int = 0,
) -> dict[str, Any]:
    report: dict[str, Any] = {
        "benchmark": "propagation",
        "environment": query_bench.environment(),
        "rules": RULES.strip(),
        "fanout": FANOUT,
        "cones": list(cones),
        "sizes": [],
    }
    for nodes in sizes:
        kwargs = {} if graph_dir is None else {"graph_dir": graph_dir}
        report["sizes"].append(run_size(nodes, cones=cones, repeat=repeat, gc_on_repeat=gc_on_repeat, log=log, profile=profile, **kwargs))
        gc.collect()
    report["summary"] = summary(report)
    return report


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """Ratios across sizes at equal K, and the growth with K at each size."""
    sizes = report["sizes"]
    out: dict[str, Any] = {}
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        out["size_ratio"] = {
            "of": f"{large['nodes_generated']}/{small['nodes_generated']}",
            "with_rules": {
                str(a["cone"]): a["cpu_median_ms"] / b["cpu_median_ms"] for a, b in zip(large["rows"], small["rows"])
            },
            "with_rules_min": {
                str(a["cone"]): a["cpu_min_ms"] / b["cpu_min_ms"] for a, b in zip(large["rows"], small["rows"])
            },
            "control": {
                str(a["cone"]): a["control_cpu_median_ms"] / b["control_cpu_median_ms"]
                for a, b in zip(large["rows"], small["rows"])
            },
        }
    growth = {}
    for size in sizes:
        rows = [r for r in size["rows"] if r["cone"] > 0]
        growth[str(size["nodes_generated"])] = {
            f"{a['cone']}->{b['cone']}": b["cpu_median_ms"] / a["cpu_median_ms"] for a, b in zip(rows, rows[1:])
        }
        growth[str(size["nodes_generated"]) + "_min"] = {
            f"{a['cone']}->{b['cone']}": b["cpu_min_ms"] / a["cpu_min_ms"] for a, b in zip(rows, rows[1:])
        }
    out["growth_with_cone"] = growth
    return out


def markdown(report: dict[str, Any]) -> str:
    """The results as a markdown table: CPU time per fact update, median (min) over the rounds."""
    sizes = report["sizes"]
    names = [f"{s['nodes_generated']:,}" for s in sizes]
    header = ["K (dependents)", "nodes marked"]
    for name in names:
        header += [f"{name}: with rules", f"{name}: no rules"]
    if len(sizes) >= 2:
        header.append(f"{names[-1]} / {names[0]} with rules")
    header.append("µs per further marked node (" + ", ".join(names) + ")")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    for index, row in enumerate(sizes[0]["rows"]):
        cells = [f"{row['cone']:,}", f"{row['marked']:,}"]
        for size in sizes:
            r = size["rows"][index]
            cells.append(f"{r['cpu_median_ms']:.2f} ms ({r['cpu_min_ms']:.2f})")
            cells.append(f"{r['control_cpu_median_ms']:.2f} ms ({r['control_cpu_min_ms']:.2f})")
        if len(sizes) >= 2:
            large = sizes[-1]["rows"][index]
            cells.append(f"{large['cpu_median_ms'] / row['cpu_median_ms']:.2f} ({large['cpu_min_ms'] / row['cpu_min_ms']:.2f})")
        per_node = [size["rows"][index].get("us_per_marked_node") for size in sizes]
        cells.append(", ".join("–" if v is None else f"{v:.1f}" for v in per_node))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="memory sizes in nodes, comma-separated")
    parser.add_argument("--cones", default=",".join(str(k) for k in CONES), help="cone sizes K, comma-separated")
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds (after one warm-up round)")
    parser.add_argument("--graph-dir", type=pathlib.Path, default=ROOT / "bench" / "results" / "tmp")
    parser.add_argument("--out", type=pathlib.Path, help="write the JSON report here")
    parser.add_argument("--markdown", type=pathlib.Path, help="write the markdown table here")
    parser.add_argument("--profile", action="store_true", help="cProfile the largest cone's timed updates")
    parser.add_argument("--gc-on-repeat", type=int, default=0, help="more rounds with the garbage collector left on")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    cones = tuple(int(k) for k in args.cones.split(",") if k)
    report = run(sizes, cones=cones, repeat=args.repeat, graph_dir=args.graph_dir, profile=args.profile, gc_on_repeat=args.gc_on_repeat)
    text = markdown(report)
    print(text)
    for size in report["sizes"]:
        if "profile" in size:
            print(f"profile at {size['nodes_generated']:,} nodes:\n{size['profile']}")
    print(json.dumps(report["summary"], indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
