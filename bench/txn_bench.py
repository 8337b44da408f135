"""Transaction benchmark (issue 3): commits with constraint checks, ``as_of`` queries, the store.

For each size (1k, 100k, 1M nodes from ``generate.py``, seed 0):

1. **In memory** — ``Memory.from_file``, then two user constraints (``USER_CONSTRAINTS``) on
   top of the built-in ones, then a stream of 10-op transactions (:class:`Workload`) through
   ``memory.apply(doc)``: median and p95 commit time (CPU and wall, one commit per sample)
   after ``--warmup`` commits. All sizes are loaded first and committed to in interleaved
   rounds of ``--block`` consecutive commits per size, so that the load of a shared machine
   drifts over all sizes alike.
2. **History** — when ``N`` commits (``--as-of-after``, e.g. 50 and 500) sit on top of the
   loaded state, the ``AS_OF_QUERIES`` are timed ``as_of`` the loaded state (``t = 1``) and on
   the current state: *warm* (the view of ``t`` is cached, as ``Memory`` does per ``t``) and
   *cold* (the view cache, ``memory.state.views``, emptied before each call, so the call builds
   the view first). The
   ``as_of`` answers must equal the answers taken right after loading.
3. **Durable store** (``--store-sizes``) — ``Memory.open(path)`` on a new SQLite file,
   ``memory.load(doc)``, the same constraints, then durable commits (the same 10-op
   transactions, and 1-op status updates): median wall time → commits per second. Then the
   store is closed and reopened in fresh subprocesses: ``Memory.open(path)`` until the first
   query is answered.

    python bench/txn_bench.py --sizes 1000,100000,1000000 --store-sizes 100000,1000000 --out bench/results/txn.json

Timing: each commit is one sample (``time.process_time`` and ``time.perf_counter`` around
``memory.apply(doc)``; the transaction document is built before, untimed; the garbage
collector stays on, as in an agent's process). Queries are timed as in ``query_bench.py``
(median over interleaved batches, GC off during a batch).
``--profile`` runs cProfile over commits and ``as_of`` queries instead of the benchmark.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import gc
import io
import json
import os
import pathlib
import pstats
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import hgm_engine  # noqa: E402
from hgm_engine.txn.history import historical_view  # noqa: E402

from bench import baselines, generate, query_bench  # noqa: E402
from bench.progress import tracked  # noqa: E402

__all__ = [
    "TARGETS",
    "USER_CONSTRAINTS",
    "AS_OF_QUERIES",
    "Workload",
    "run_memories",
    "run_memory",
    "run_store",
    "fsync_probe",
    "measure_reopen",
    "run",
    "markdown",
    "check_targets",
    "main",
]

TARGETS = {
    "commit_size": 100_000,
    "commit_median_ms_max": 2.0,  # 10-op commit, in memory, at 100k nodes
    "scaling_sizes": [1_000, 1_000_000],
    "scaling_max": 2.0,  # 1M-node median / 1k-node median
    "as_of_over_current_max": 2.0,
    "reopen_size": 100_000,
    "reopen_seconds_max": 3.0,
}

# Both hold on every generated graph (done actions always produce results; facts always
# derive from a result or another fact); each looks one hop from a node (radius 1).
USER_CONSTRAINTS = {
    "done_action_has_outcome": "each action where status = 'done' must exists(results) or count(children) > 0",
    "fact_is_grounded": "each fact must exists(sources) or exists(related)",
}

AS_OF_QUERIES = ("card", "project_pending", "hub_facts", "fact_count")

_STATUS_CYCLE = ("pending", "active", "blocked", "needs_review")
_VERBS = ("book", "check", "compare", "call", "review", "draft", "send", "schedule", "pay", "confirm")
_OBJECTS = ("hotel", "flight", "invoice", "report", "ticket", "meeting", "contract", "budget", "route", "slides")


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the workload -------------------------------------------------------------------------------


class Workload:
    """A deterministic stream of realistic 10-op transaction documents for one memory.

    Each transaction: a goal with three pending actions under an existing subgoal (4 ops),
    a status change of three existing actions (3), a fact (1) related to an existing entity
    (1), and the deletion of an existing ``before`` or ``related_to`` edge (1).

    Targets never repeat: the subgoals, actions to update and edges to delete are drawn from
    shuffled pools of the loaded graph, and once a pool is used up, subgoals and actions
    created by earlier transactions of the stream follow (first in, first out). Every status
    update changes the status (to the next of pending/active/blocked/needs_review, never
    ``done``). Entities are drawn with the generator's skew towards popular ones (the hub
    entity gets many new facts), so they do repeat — each relation added is still new.
    """

    def __init__(self, graph, seed: int = 0, tag: str = "x"):
        rng = self.rng = random.Random(seed)
        self.tag = tag
        nodes = graph.node_map()
        has_parent: set[str] = set()
        deletable: list[tuple[int, tuple[str, str, str]]] = []
        for edge in graph.iter_edges():
            if edge.type == "parent_of":
                has_parent.add(edge.target)
            elif edge.type in ("before", "related_to"):
                deletable.append((edge.seq, edge.key))
        deletable.sort()
        subgoals = [g for g in graph.ids_of_type("goal") if g in has_parent]
        open_actions = [a for a in graph.ids_of_type("action") if nodes[a].attrs.get("status") != "done"]
        edges = [key for _, key in deletable]
        for pool in (subgoals, open_actions, edges):
            rng.shuffle(pool)
        self.parents = collections.deque(subgoals)
        self.updates = collections.deque(open_actions)
        self.deletable = collections.deque(edges)
        self.status = {a: nodes[a].attrs.get("status") for a in open_actions}
        self.entities = list(graph.ids_of_type("entity"))
        self.count = 0

    def _text(self) -> str:
        rng = self.rng
        return f"{rng.choice(_VERBS).capitalize()} the {rng.choice(_OBJECTS)} #{rng.randint(1, 999)}"

    def _next_status(self, action: str) -> str:
        current = self.status.get(action)
        status = _STATUS_CYCLE[(_STATUS_CYCLE.index(current) + 1) % 4] if current in _STATUS_CYCLE else "active"
        self.status[action] = status
        return status

    def next(self) -> dict[str, Any]:
        """The next 10-op transaction document."""
        rng = self.rng
        self.count += 1
        k = self.count
        prefix = f"{self.tag}{k}"
        if not self.deletable:
            raise RuntimeError(f"workload: no edge left to delete after {k - 1} transactions")
        parent = self.parents.popleft()
        goal = f"{prefix}-g"
        actions = [f"{prefix}-a{i}" for i in (1, 2, 3)]
        updated = [self.updates.popleft() for _ in range(3)]
        fact = f"{prefix}-f"
        entity = self.entities[int(len(self.entities) * rng.random() ** 3)]
        deleted = self.deletable.popleft()
        ops: list[dict[str, Any]] = [
            {"op": "add_node", "id": goal, "type": "goal", "parent": parent, "content": self._text(),
             "status": "active", "priority": rng.randint(1, 5)},
        ]
        for action in actions:
            ops.append({"op": "add_node", "id": action, "type": "action", "parent": goal, "content": self._text(),
                        "status": "pending", "priority": rng.randint(1, 5)})
        for action in updated:
            ops.append({"op": "update_node", "id": action, "set": {"status": self._next_status(action)}})
        ops.append({"op": "add_node", "id": fact, "type": "fact", "content": self._text(),
                    "confidence": round(rng.uniform(0.3, 1.0), 2)})
        ops.append({"op": "add_edge", "from": fact, "to": entity, "type": "related_to"})
        ops.append({"op": "delete_edge", "from": deleted[0], "to": deleted[1], "type": deleted[2]})
        # what this transaction creates feeds the pools once the loaded graph's are used up
        self.parents.append(goal)
        for action in actions:
            self.status[action] = "pending"
            self.updates.append(action)
        return {"author": "bench", "reason": f"bench transaction {k}", "ops": ops}

    def next_small(self) -> dict[str, Any]:
        """A 1-op transaction: the next status change of one action (same pool as :meth:`next`)."""
        self.count += 1
        action = self.updates.popleft()
        self.updates.append(action)  # status changes cycle, so revisiting an action still changes it
        return {"author": "bench", "reason": f"bench update {self.count}",
                "ops": [{"op": "update_node", "id": action, "set": {"status": self._next_status(action)}}]}


# -- timing helpers -------------------------------------------------------------------------------


def _timed_commit(memory, doc: dict[str, Any]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    report = memory.apply(doc)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if not report.committed:
        raise AssertionError(f"refused: {[v.message for v in report.violations][:3]}")
    return cpu, wall


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _stats_ms(samples: list[tuple[float, float]]) -> dict[str, Any]:
    cpu = [c * 1e3 for c, _ in samples]
    wall = [w * 1e3 for _, w in samples]
    return {
        "n": len(samples),
        "cpu_median_ms": statistics.median(cpu),
        "cpu_p95_ms": _percentile(cpu, 0.95),
        "cpu_mean_ms": statistics.fmean(cpu),
        "wall_median_ms": statistics.median(wall),
        "wall_p95_ms": _percentile(wall, 0.95),
        "wall_max_ms": max(wall),
    }


def _size(value: Any) -> int:
    return value if isinstance(value, int) else len(value)


# -- in memory: commits and as_of -------------------------------------------------------------------


def measure_as_of(
    memory,
    t_early: int,
    queries: dict[str, str],
    expected: dict[str, Any],
    *,
    repeat: int,
    min_batch: float,
    cold_repeat: int,
    log: Callable[[str], None],
    label: str,
) -> dict[str, Any]:
    """Each query ``as_of=t_early`` (cold and warm) against the same query on the current state."""
    commits_since = memory.commits(t_early)
    started = time.process_time()
    for _ in range(cold_repeat):
        historical_view(memory.graph, commits_since)
    view_build = (time.process_time() - started) / cold_repeat
    rows = []
    for name, expr in queries.items():
        then = memory.query(expr, as_of=t_early).value
        if then != expected[name]:
            raise AssertionError(f"{label} {name}: as_of(t={t_early}) differs from the answer taken at t={t_early}")
        now = memory.query(expr).value
        # cold: the per-t view cache emptied (memory.state.views), so the call builds the view
        cold_cpu, cold_wall = [], []
        for _ in range(cold_repeat):
            memory.state.views.clear()
            gc.disable()
            try:
                cpu, wall = time.process_time(), time.perf_counter()
                memory.query(expr, as_of=t_early)
                cold_cpu.append(time.process_time() - cpu)
                cold_wall.append(time.perf_counter() - wall)
            finally:
                gc.enable()
        memory.query(expr, as_of=t_early)  # the view is cached again
        timings = query_bench.measure(
            {"current": lambda: memory.query(expr), "as_of": lambda: memory.query(expr, as_of=t_early)},
            repeat,
            min_batch,
        )
        current, as_of = max(timings["current"]["cpu"], 1e-9), max(timings["as_of"]["cpu"], 1e-9)
        cold = statistics.median(cold_cpu)
        row = {
            "name": name,
            "expr": expr,
            "result_size_now": _size(now),
            "result_size_as_of": _size(then),
            "current_us": current * 1e6,
            "as_of_warm_us": as_of * 1e6,
            "as_of_cold_us": cold * 1e6,
            "warm_over_current": as_of / current,
            "cold_over_current": cold / current,
            "wall_us": {
                "current": timings["current"]["wall"] * 1e6,
                "as_of_warm": timings["as_of"]["wall"] * 1e6,
                "as_of_cold": statistics.median(cold_wall) * 1e6,
            },
            "calls_per_batch": {k: v["calls_per_batch"] for k, v in timings.items()},
        }
        row["meets_target"] = row["warm_over_current"] <= TARGETS["as_of_over_current_max"]
        rows.append(row)
        log(
            f"{label} {name:16s} current {row['current_us']:10.1f}us  as_of warm {row['as_of_warm_us']:10.1f}us "
            f"({row['warm_over_current']:5.2f}x)  cold {row['as_of_cold_us']:10.1f}us ({row['cold_over_current']:6.2f}x)"
        )
    return {
        "t_early": t_early,
        "t_now": memory.t,
        "commits_since": len(commits_since),
        "changes_since": sum(len(c.changes) for c in commits_since),
        "view_build_ms": view_build * 1e3,
        "queries": rows,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


class _MemoryRun:
    """One in-process memory being benchmarked: loaded, constrained, committed to step by step."""

    def __init__(self, nodes: int, *, seed: int, graph_dir, queries: tuple[str, ...], log: Callable[[str], None]):
        path, meta, generated = generate.ensure_graph(graph_dir, nodes, seed)
        log(f"[{nodes}] graph {path.name}" + (f" generated in {generated:.1f}s" if generated else " (cached)"))
        self.label = f"[{nodes}]"
        self.log = log
        self.path, self.meta = path, meta
        cpu, wall = time.process_time(), time.perf_counter()
        self.memory = memory = hgm_engine.Memory.from_file(path)
        self.load = {"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu}
        cpu = time.process_time()
        for name, text in USER_CONSTRAINTS.items():
            memory.add_constraint(name, text)  # checked against the whole graph first
        self.add_constraints = time.process_time() - cpu
        log(
            f"{self.label} loaded in {self.load['seconds']:.1f}s (CPU {self.load['cpu_seconds']:.1f}s); "
            f"constraints added in {self.add_constraints:.2f}s CPU"
        )
        self.exprs = {name: baselines.QUERIES[name][0].format(**meta["anchors"]) for name in queries}
        self.t_base = memory.t
        self.expected = {name: memory.query(expr).value for name, expr in self.exprs.items()}
        self.workload = Workload(memory.graph, seed=seed)
        self.samples: list[tuple[float, float]] = []
        self.as_of: list[dict[str, Any]] = []

    @property
    def done(self) -> int:
        return len(self.samples)

    def commit(self) -> None:
        doc = self.workload.next()
        self.samples.append(_timed_commit(self.memory, doc))

    def measure_as_of(self, **kwargs: Any) -> None:
        self.as_of.append(
            measure_as_of(self.memory, self.t_base, self.exprs, self.expected, log=self.log,
                          label=f"{self.label} after {self.done} commits:", **kwargs)
        )

    def result(self, warmup: int, commits: int) -> dict[str, Any]:
        memory, meta = self.memory, self.meta
        stats = _stats_ms(self.samples[warmup : warmup + commits])
        stats["all_after_warmup"] = _stats_ms(self.samples[warmup:])
        self.log(
            f"{self.label} 10-op commit: median {stats['cpu_median_ms']:.3f} ms CPU ({stats['wall_median_ms']:.3f} wall), "
            f"p95 {stats['cpu_p95_ms']:.3f} ms CPU ({stats['wall_p95_ms']:.3f} wall) over {stats['n']} commits"
        )
        violations = memory.violations()
        if violations:
            raise AssertionError(f"{self.label} the memory breaks constraints after the commits: {violations[:3]}")
        return {
            "nodes": meta["nodes"],
            "edges": meta["edges"],
            "graph_file": self.path.name,
            "anchors": meta["anchors"],
            "load": self.load,
            "add_constraints_cpu_seconds": self.add_constraints,
            "commits_done": self.done,
            "warmup": warmup,
            "commit": stats,
            "as_of": self.as_of,
            "nodes_after": len(memory),
            "edges_after": memory.graph.edge_count,
        }


def run_memories(
    sizes: list[int],
    *,
    seed: int = 0,
    graph_dir: str | pathlib.Path = ROOT / "bench" / "results" / "tmp",
    warmup: int = 20,
    commits: int = 200,
    block: int = 10,
    as_of_after: tuple[int, ...] = (50, 500),
    repeat: int = 5,
    min_batch: float = 0.05,
    cold_repeat: int = 3,
    queries: tuple[str, ...] = AS_OF_QUERIES,
    log: Callable[[str], None] = _log,
) -> list[dict[str, Any]]:
    """Commits and ``as_of`` queries on in-process memories of each size.

    All sizes are loaded first; their commits then run in interleaved blocks of ``block``
    consecutive commits per size, so that the machine's load drifts over all sizes alike."""
    runs = [_MemoryRun(nodes, seed=seed, graph_dir=graph_dir, queries=queries, log=log) for nodes in sizes]
    total = max(warmup + commits, *as_of_after) if as_of_after else warmup + commits
    gc.collect()
    gc_before = [s["collections"] for s in gc.get_stats()]
    load_start = [round(x, 2) for x in os.getloadavg()]
    while runs and runs[0].done < total:
        step = min(block, total - runs[0].done)
        for one in tracked(runs, f"commits {runs[0].done}-{runs[0].done + step} of {total}"):
            for _ in range(step):
                one.commit()
                if one.done in as_of_after:
                    one.measure_as_of(repeat=repeat, min_batch=min_batch, cold_repeat=cold_repeat)
    gc_during = [s["collections"] - b for s, b in zip(gc.get_stats(), gc_before)]
    load_end = [round(x, 2) for x in os.getloadavg()]
    results = []
    for one in runs:
        result = one.result(warmup, commits)
        result["commit"]["gc_collections_during_all_sizes"] = gc_during
        result["commit"]["load_average_start"] = load_start
        result["commit"]["load_average_end"] = load_end
        results.append(result)
    del runs
    gc.collect()
    return results


def run_memory(nodes: int, **kwargs: Any) -> dict[str, Any]:
    """:func:`run_memories` for one size."""
    return run_memories([nodes], **kwargs)[0]


# -- the durable store --------------------------------------------------------------------------------

_REOPEN_SCRIPT = r"""
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
import hgm_engine
import_wall, import_cpu = time.perf_counter() - wall, time.process_time() - cpu
wall, cpu = time.perf_counter(), time.process_time()
memory = hgm_engine.Memory.open(sys.argv[1])
open_wall, open_cpu = time.perf_counter() - wall, time.process_time() - cpu
result = memory.query(sys.argv[2])
total_wall, total_cpu = time.perf_counter() - wall, time.process_time() - cpu
value = result.value
print(json.dumps({"seconds": total_wall, "cpu_seconds": total_cpu, "open_seconds": open_wall, "open_cpu_seconds": open_cpu,
                  "import_seconds": import_wall, "import_cpu_seconds": import_cpu, "t": memory.t, "nodes": len(memory),
                  "edges": memory.graph.edge_count, "answer_size": value if isinstance(value, int) else len(value),
                  "constraints": sorted(memory.constraints())}))
"""


def measure_reopen(path: pathlib.Path, expr: str, repeat: int) -> dict[str, Any]:
    """``Memory.open(path)`` up to the first query answered, in fresh subprocesses."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    runs = []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, "-c", _REOPEN_SCRIPT, str(path), expr], capture_output=True, text=True, env=env, check=True
        )
        runs.append(json.loads(proc.stdout))
    out = {k: statistics.median(r[k] for r in runs) for k in (
        "seconds", "cpu_seconds", "open_seconds", "open_cpu_seconds", "import_seconds", "import_cpu_seconds")}
    out["seconds_all"] = [round(r["seconds"], 3) for r in runs]
    out.update({k: runs[0][k] for k in ("t", "nodes", "edges", "answer_size", "constraints")})
    out["runs"] = len(runs)
    out["query"] = expr
    return out


def fsync_probe(directory: pathlib.Path, count: int = 100) -> dict[str, float]:
    """Median and p95 wall ms of ``write(4 KiB) + os.fsync`` in ``directory``: what the disk
    charges a durable commit (SQLite in WAL mode with synchronous=FULL syncs the WAL per commit)."""
    probe = pathlib.Path(directory) / f".fsync-probe-{os.getpid()}"
    times = []
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        block = b"x" * 4096
        for _ in range(count):
            started = time.perf_counter()
            os.write(fd, block)
            os.fsync(fd)
            times.append((time.perf_counter() - started) * 1e3)
    finally:
        os.close(fd)
        probe.unlink()
    return {"median_ms": statistics.median(times), "p95_ms": _percentile(times, 0.95), "n": count}


def _remove_store(path: pathlib.Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = pathlib.Path(str(path) + suffix)
        if p.exists():
            p.unlink()


def run_store(
    nodes: int,
    *,
    seed: int = 0,
    graph_dir: str | pathlib.Path = ROOT / "bench" / "results" / "tmp",
    warmup: int = 10,
    commits: int = 200,
    reopen_repeat: int = 3,
    keep: bool = False,
    log: Callable[[str], None] = _log,
) -> dict[str, Any]:
    """Load a SQLite store with the memory, time durable commits, then reopen it."""
    path, meta, generated = generate.ensure_graph(graph_dir, nodes, seed)
    label = f"[{nodes} store]"
    store_path = pathlib.Path(graph_dir) / f"txn-store-n{nodes}-s{seed}.db"
    _remove_store(store_path)
    wall = time.perf_counter()
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    parse_seconds = time.perf_counter() - wall
    memory = hgm_engine.Memory.open(store_path)
    cpu, wall = time.process_time(), time.perf_counter()
    memory.load(doc)
    load = {"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu, "json_parse_seconds": parse_seconds}
    del doc
    for name, text in USER_CONSTRAINTS.items():
        memory.add_constraint(name, text)
    log(f"{label} loaded into {store_path.name} in {load['seconds']:.1f}s (CPU {load['cpu_seconds']:.1f}s)")

    workload = Workload(memory.graph, seed=seed)
    gc.collect()
    fsync_before = fsync_probe(store_path.parent)
    results: dict[str, Any] = {}
    for kind, make in (("ten_ops", workload.next), ("one_op", workload.next_small)):
        samples = [_timed_commit(memory, make()) for _ in range(warmup + commits)][warmup:]
        stats = _stats_ms(samples)
        stats["commits_per_second"] = 1e3 / stats["wall_median_ms"]
        stats["commits_per_second_mean"] = 1e3 / statistics.fmean(w * 1e3 for _, w in samples)
        results[kind] = stats
        log(
            f"{label} durable {kind} commit: median {stats['wall_median_ms']:.2f} ms wall "
            f"({stats['cpu_median_ms']:.2f} ms CPU), p95 {stats['wall_p95_ms']:.2f} ms wall -> "
            f"{stats['commits_per_second']:.0f} commits/s"
        )
    fsync_after = fsync_probe(store_path.parent)
    log(f"{label} fsync probe: median {fsync_before['median_ms']:.2f} ms before, {fsync_after['median_ms']:.2f} ms after")
    t_final, nodes_final = memory.t, len(memory)
    memory.close()
    del memory, workload
    gc.collect()
    size_mb = sum(pathlib.Path(str(store_path) + s).stat().st_size for s in ("", "-wal") if pathlib.Path(str(store_path) + s).exists()) / 2**20

    expr = baselines.QUERIES["entity_facts"][0].format(**meta["anchors"])
    reopen = measure_reopen(store_path, expr, reopen_repeat)
    if reopen["t"] != t_final or reopen["nodes"] != nodes_final or sorted(USER_CONSTRAINTS) != reopen["constraints"]:
        raise AssertionError(f"{label} reopened at t={reopen['t']} with {reopen['nodes']} nodes; expected t={t_final}, {nodes_final}")
    log(
        f"{label} reopen to first query: {reopen['seconds']:.2f}s wall (CPU {reopen['cpu_seconds']:.2f}s; "
        f"open {reopen['open_seconds']:.2f}s; import {reopen['import_seconds']:.2f}s), {reopen['runs']} runs"
    )
    if not keep:
        _remove_store(store_path)
    return {
        "nodes": meta["nodes"],
        "edges": meta["edges"],
        "store_file": store_path.name,
        "store_mb": round(size_mb, 1),
        "load": load,
        "warmup": warmup,
        "commit": results,
        "fsync_probe": {"before": fsync_before, "after": fsync_after},
        "t_final": t_final,
        "reopen": reopen,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


# -- targets and report --------------------------------------------------------------------------------


def check_targets(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_nodes = {s["nodes"]: s for s in report.get("memory", [])}
    target = by_nodes.get(TARGETS["commit_size"])
    if target:
        out["commit_100k_median_cpu_within_2ms"] = target["commit"]["cpu_median_ms"] <= TARGETS["commit_median_ms_max"]
        out["commit_100k_median_wall_within_2ms"] = target["commit"]["wall_median_ms"] <= TARGETS["commit_median_ms_max"]
    small, big = (by_nodes.get(n) for n in TARGETS["scaling_sizes"])
    if small and big:
        ratio = big["commit"]["cpu_median_ms"] / small["commit"]["cpu_median_ms"]
        wall_ratio = big["commit"]["wall_median_ms"] / small["commit"]["wall_median_ms"]
        out["commit_1m_over_1k"] = round(ratio, 3)
        out["commit_1m_over_1k_wall"] = round(wall_ratio, 3)
        out["commit_1m_within_2x_1k"] = ratio <= TARGETS["scaling_max"]
    misses = []
    for size in report.get("memory", []):
        for point in size["as_of"]:
            for q in point["queries"]:
                if not q["meets_target"]:
                    misses.append(f"{size['nodes']}/{point['commits_since']}/{q['name']}")
    if report.get("memory"):
        out["as_of_warm_within_2x_current"] = not misses
        out["as_of_misses"] = misses
    stores = {s["nodes"]: s for s in report.get("store", [])}
    store = stores.get(TARGETS["reopen_size"])
    if store:
        out["reopen_100k_within_3s"] = store["reopen"]["seconds"] <= TARGETS["reopen_seconds_max"]
        out["reopen_100k_cpu_within_3s"] = store["reopen"]["cpu_seconds"] <= TARGETS["reopen_seconds_max"]
    return out


def _us(value: float) -> str:
    return query_bench._us(value)


def markdown(report: dict[str, Any]) -> str:
    lines = []
    if report.get("memory"):
        lines += [
            "#### 10-op commits in memory",
            "",
            "| nodes | edges | median CPU | p95 CPU | median wall | p95 wall | commits | load (s) | add 2 constraints (s) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for s in report["memory"]:
            c = s["commit"]
            lines.append(
                f"| {s['nodes']:,} | {s['edges']:,} | {c['cpu_median_ms']:.3f} ms | {c['cpu_p95_ms']:.3f} ms | "
                f"{c['wall_median_ms']:.3f} ms | {c['wall_p95_ms']:.3f} ms | {c['n']} | {s['load']['seconds']:.1f} | "
                f"{s['add_constraints_cpu_seconds']:.2f} |"
            )
        lines.append("")
        lines += [
            "#### `as_of` the loaded state vs the current state",
            "",
            "| nodes | commits since | query | result then / now | current | as_of warm | warm / current | as_of cold | cold / current |",
            "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
        ]
        for s in report["memory"]:
            for point in s["as_of"]:
                for q in point["queries"]:
                    mark = "" if q["meets_target"] else " ✗"
                    lines.append(
                        f"| {s['nodes']:,} | {point['commits_since']} | `{q['name']}` | "
                        f"{q['result_size_as_of']:,} / {q['result_size_now']:,} | {_us(q['current_us'])} | "
                        f"{_us(q['as_of_warm_us'])} | {q['warm_over_current']:.2f}{mark} | {_us(q['as_of_cold_us'])} | "
                        f"{q['cold_over_current']:.2f} |"
                    )
        lines.append("")
        builds = "; ".join(
            f"{s['nodes']:,} nodes / {p['commits_since']} commits ({p['changes_since']:,} changes): {p['view_build_ms']:.2f} ms"
            for s in report["memory"] for p in s["as_of"]
        )
        lines.append(f"Building a view alone (`historical_view`, CPU): {builds}.")
        lines.append("")
    if report.get("store"):
        lines += [
            "#### SQLite store",
            "",
            "| nodes | load into empty store | 10-op commit (median wall / p95) | 10-op commits/s | 1-op commit (median wall / p95) | 1-op commits/s | reopen → first query (wall / CPU) | of which `Memory.open` | file | fsync (median, before / after) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for s in report["store"]:
            ten, one, ro = s["commit"]["ten_ops"], s["commit"]["one_op"], s["reopen"]
            lines.append(
                f"| {s['nodes']:,} | {s['load']['seconds']:.1f} s | {ten['wall_median_ms']:.2f} / {ten['wall_p95_ms']:.2f} ms | "
                f"{ten['commits_per_second']:.0f} | {one['wall_median_ms']:.2f} / {one['wall_p95_ms']:.2f} ms | "
                f"{one['commits_per_second']:.0f} | {ro['seconds']:.2f} s / {ro['cpu_seconds']:.2f} s | "
                f"{ro['open_seconds']:.2f} s | {s['store_mb']:.0f} MB | "
                f"{s['fsync_probe']['before']['median_ms']:.2f} / {s['fsync_probe']['after']['median_ms']:.2f} ms |"
            )
        lines.append("")
    return "\n".join(lines)


def run(
    sizes: list[int],
    store_sizes: list[int],
    *,
    seed: int = 0,
    graph_dir: pathlib.Path = ROOT / "bench" / "results" / "tmp",
    warmup: int = 20,
    commits: int = 200,
    block: int = 10,
    as_of_after: tuple[int, ...] = (50, 500),
    repeat: int = 5,
    min_batch: float = 0.05,
    cold_repeat: int = 3,
    store_commits: int = 200,
    reopen_repeat: int = 3,
    log: Callable[[str], None] = _log,
) -> dict[str, Any]:
    env = query_bench.environment()
    env["sqlite"] = sqlite3.sqlite_version
    report: dict[str, Any] = {
        "benchmark": "transactions",
        "environment": env,
        "config": {
            "seed": seed,
            "warmup": warmup,
            "commits": commits,
            "block": block,
            "as_of_after": list(as_of_after),
            "repeat": repeat,
            "min_batch_seconds": min_batch,
            "cold_repeat": cold_repeat,
            "store_commits": store_commits,
            "reopen_repeat": reopen_repeat,
            "user_constraints": USER_CONSTRAINTS,
            "as_of_queries": {n: baselines.QUERIES[n][0] for n in AS_OF_QUERIES},
            "transaction": Workload.__doc__.split("\n\n")[1].replace("\n    ", " ").strip(),
            "statistic": "commits: median and p95 over single commits (CPU and wall), GC on; queries: median CPU "
            "seconds per call over interleaved batches, GC off during a batch (as query_bench)",
        },
        "targets": TARGETS,
        "memory": [],
        "store": [],
    }
    started = time.perf_counter()
    if sizes:
        report["memory"] = run_memories(
            sizes, seed=seed, graph_dir=graph_dir, warmup=warmup, commits=commits, block=block, as_of_after=as_of_after,
            repeat=repeat, min_batch=min_batch, cold_repeat=cold_repeat, log=log,
        )
    for nodes in store_sizes:
        report["store"].append(
            run_store(nodes, seed=seed, graph_dir=graph_dir, commits=store_commits,
                      reopen_repeat=reopen_repeat if nodes < 1_000_000 else min(reopen_repeat, 1), log=log)
        )
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["target_checks"] = check_targets(report)
    return report


# -- profiling -------------------------------------------------------------------------------------------


def profile(nodes: int, *, seed: int = 0, graph_dir: pathlib.Path, commits: int = 200, as_of_after: int = 500,
            top: int = 30, out_dir: pathlib.Path | None = None) -> None:
    """cProfile of ``commits`` 10-op commits (after 20 unprofiled), then of the ``as_of`` queries."""
    path, meta, _ = generate.ensure_graph(graph_dir, nodes, seed)
    memory = hgm_engine.Memory.from_file(path)
    for name, text in USER_CONSTRAINTS.items():
        memory.add_constraint(name, text)
    workload = Workload(memory.graph, seed=seed)
    for _ in range(20):
        memory.apply(workload.next())
    docs = [workload.next() for _ in range(commits)]
    profiler = cProfile.Profile()
    profiler.enable()
    for doc in docs:
        memory.apply(doc)
    profiler.disable()
    _print_profile(profiler, f"{commits} commits at {nodes} nodes", top, out_dir and out_dir / f"commit-{nodes}.pstats")
    while memory.t - 1 < as_of_after:
        memory.apply(workload.next())
    for name in AS_OF_QUERIES:
        expr = baselines.QUERIES[name][0].format(**meta["anchors"])
        memory.query(expr, as_of=1)
        for label, fn in (("warm", lambda: memory.query(expr, as_of=1)), ("current", lambda: memory.query(expr))):
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(20):
                fn()
            profiler.disable()
            _print_profile(profiler, f"20 x {name} {label} ({memory.t - 1} commits) at {nodes} nodes", top,
                           out_dir and out_dir / f"asof-{name}-{label}-{nodes}.pstats")


def _print_profile(profiler: cProfile.Profile, title: str, top: int, path: pathlib.Path | None) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(str(path))
    for key in ("tottime", "cumulative"):
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).strip_dirs().sort_stats(key).print_stats(top)
        print(f"==== {title}, by {key}\n{buffer.getvalue()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="hgm transaction benchmark (issue 3)")
    parser.add_argument("--sizes", default="1000,100000,1000000", help="node counts for commits and as_of (in memory)")
    parser.add_argument("--store-sizes", default="100000,1000000", help="node counts for the SQLite store ('' for none)")
    parser.add_argument("--warmup", type=int, default=20, help="commits before the measured ones")
    parser.add_argument("--commits", type=int, default=200, help="measured 10-op commits in memory")
    parser.add_argument("--block", type=int, default=10, help="consecutive commits per size in each interleaved round")
    parser.add_argument("--as-of-after", default="50,500", help="commits on top of the loaded state when as_of is timed")
    parser.add_argument("--repeat", type=int, default=5, help="timed batches per query measurement (median)")
    parser.add_argument("--min-batch", type=float, default=0.05)
    parser.add_argument("--cold-repeat", type=int, default=3, help="cold as_of calls per query (median)")
    parser.add_argument("--store-commits", type=int, default=200, help="measured durable commits of each kind")
    parser.add_argument("--reopen-repeat", type=int, default=3, help="fresh-process reopens (1 at 1M and beyond)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--graph-dir", type=pathlib.Path, default=ROOT / "bench" / "results" / "tmp")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "results" / "txn.json")
    parser.add_argument("--markdown", type=pathlib.Path, help="also write the markdown tables here")
    parser.add_argument("--profile", action="store_true", help="profile commits and as_of queries at --sizes instead")
    parser.add_argument("--profile-dir", type=pathlib.Path, help="with --profile: keep .pstats files here")
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]
    store_sizes = [int(s.replace("_", "")) for s in args.store_sizes.split(",") if s]
    as_of_after = tuple(int(s) for s in args.as_of_after.split(",") if s)
    if args.profile:
        for nodes in sizes:
            profile(nodes, seed=args.seed, graph_dir=args.graph_dir, commits=args.commits,
                    as_of_after=max(as_of_after, default=500), out_dir=args.profile_dir)
        return 0
    report = run(
        sizes, store_sizes, seed=args.seed, graph_dir=args.graph_dir, warmup=args.warmup, commits=args.commits,
        block=args.block, as_of_after=as_of_after, repeat=args.repeat, min_batch=args.min_batch, cold_repeat=args.cold_repeat,
        store_commits=args.store_commits, reopen_repeat=args.reopen_repeat,
    )
    report["command"] = "python bench/txn_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    text = markdown(report)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    print(text)
    print(json.dumps(report["target_checks"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
