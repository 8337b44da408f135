"""A durable hgm commit against a raw SQLite transaction of the same rows (issue 15).

A generated memory is loaded into a SQLite memory (``Memory.open`` + ``load``) and the file is
copied. Then, for each of ``--commits`` realistic 10-op transactions (``txn_bench.Workload``:
a goal with three actions, three status changes, a fact related to an entity, an edge
deleted), hgm commits it with ``memory.apply`` while the store's statements are traced
(``sqlite3`` trace callback, bound values expanded); the statements of that commit's write
transaction (``BEGIN IMMEDIATE`` … ``COMMIT``: the journal row, the node and edge rows) are
then run on the copy by a plain ``sqlite3`` connection with the same settings (WAL,
``synchronous=FULL``), timed from ``BEGIN`` to ``COMMIT``. hgm and raw alternate commit by
commit, so a busy moment of the machine falls on both.

    python bench/commit_vs_sqlite.py --nodes 100000 --commits 200 --out bench/results/commit_vs_sqlite.json

``--profile`` prints where hgm's commit time goes (cProfile over the hgm commits).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pathlib
import pstats
import shutil
import sqlite3
import statistics
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import hgm_engine  # noqa: E402

from bench import generate, query_bench, txn_bench  # noqa: E402

__all__ = ["write_statements", "run", "main"]


def write_statements(trace: list[str]) -> list[str]:
    """The writes of the last write transaction in a trace: ``BEGIN IMMEDIATE``, its
    ``INSERT``/``UPDATE``/``DELETE`` statements (the rows), ``COMMIT``; hgm's reads inside it
    (catching up with other processes) and its own bookkeeping for the stored image (the
    ``image_guard`` flag) are hgm's cost, not the rows'.

    >>> write_statements(["SELECT 1", "BEGIN IMMEDIATE", "UPDATE image_guard SET writing = 1", "PRAGMA data_version",
    ...                   "INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (1)", "COMMIT"])
    ['BEGIN IMMEDIATE', 'INSERT INTO t VALUES (1)', 'COMMIT']
    """
    end = max(i for i, s in enumerate(trace) if s.strip().upper() == "COMMIT")
    start = max(i for i, s in enumerate(trace[:end]) if s.strip().upper().startswith("BEGIN IMMEDIATE"))
    body = [
        s for s in trace[start + 1:end] if s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")) and "image_guard" not in s
    ]
    # SQLite's trace reports a statement again when it starts a trigger (hgm's image guard):
    # one statement, once (hgm never writes the same row twice in a row).
    body = [s for i, s in enumerate(body) if i == 0 or s != body[i - 1]]
    return [trace[start], *body, trace[end]]


def _remove(path: pathlib.Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        pathlib.Path(str(path) + suffix).unlink(missing_ok=True)


def run(nodes: int, *, commits: int = 200, warmup: int = 10, seed: int = 0,
        graph_dir: pathlib.Path = ROOT / "bench" / "results" / "tmp", profile: bool = False) -> dict[str, Any]:
    path, meta, _ = generate.ensure_graph(graph_dir, nodes, seed)
    store = pathlib.Path(graph_dir) / f"commit-hgm-n{nodes}.db"
    raw_path = pathlib.Path(graph_dir) / f"commit-raw-n{nodes}.db"
    _remove(store)
    _remove(raw_path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    memory = hgm_engine.Memory.open(store)
    memory.load(doc)
    del doc
    memory.store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # noqa: SLF001 (bench: the copy starts equal)
    shutil.copyfile(store, raw_path)
    raw = sqlite3.connect(raw_path, isolation_level=None)
    for (trigger,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        raw.execute(f"DROP TRIGGER {trigger}")  # hgm's guard of its image: not part of the rows
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=FULL")
    workload = txn_bench.Workload(memory.graph, seed=seed)
    trace: list[str] = []
    db = memory.store._db  # noqa: SLF001 (bench: trace the store's statements)
    db.set_trace_callback(trace.append)
    profiler = cProfile.Profile() if profile else None
    hgm_times, raw_times, statements = [], [], []
    for i in range(warmup + commits):
        transaction = workload.next()
        trace.clear()
        if profiler and i >= warmup:
            profiler.enable()
        wall, cpu = time.perf_counter(), time.process_time()
        report = memory.apply(transaction)
        hgm = (time.perf_counter() - wall, time.process_time() - cpu)
        if profiler:
            profiler.disable()
        if not report.committed:
            raise AssertionError(f"refused: {[v.message for v in report.violations][:3]}")
        replay = write_statements(trace)
        wall, cpu = time.perf_counter(), time.process_time()
        for statement in replay:
            raw.execute(statement)
        raw_t = (time.perf_counter() - wall, time.process_time() - cpu)
        if i >= warmup:
            hgm_times.append(hgm)
            raw_times.append(raw_t)
            statements.append(len(replay))
    db.set_trace_callback(None)
    # the copy holds what the store holds: every replayed row landed
    for table, key in (("nodes", "id"), ("edges", "source, target, type"), ("journal", "t")):
        mine = memory.store._db.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()  # noqa: SLF001
        theirs = raw.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
        if mine != theirs:
            raise AssertionError(f"the raw copy's {table} differ from the store's")
    memory.close()
    raw.close()
    _remove(store)
    _remove(raw_path)

    def stats(samples, k):
        values = sorted(s[k] * 1e3 for s in samples)
        return {"median_ms": statistics.median(values), "p10_ms": values[len(values) // 10],
                "p90_ms": values[(len(values) * 9) // 10]}

    ratios = sorted(h[0] / r[0] for h, r in zip(hgm_times, raw_times))
    out = {
        "benchmark": "commit_vs_sqlite",
        "environment": query_bench.environment(),
        "nodes": meta["nodes"],
        "commits": commits,
        "statements_per_commit": statistics.median(statements),
        "hgm": {"wall": stats(hgm_times, 0), "cpu": stats(hgm_times, 1)},
        "raw_sqlite": {"wall": stats(raw_times, 0), "cpu": stats(raw_times, 1)},
        "ratio_of_medians_wall": statistics.median(h[0] for h in hgm_times) / statistics.median(r[0] for r in raw_times),
        "ratio_of_medians_cpu": statistics.median(h[1] for h in hgm_times) / max(statistics.median(r[1] for r in raw_times), 1e-9),
        "ratio_per_commit_wall": {"median": statistics.median(ratios), "p10": ratios[len(ratios) // 10],
                                  "p90": ratios[(len(ratios) * 9) // 10]},
        "fsync_probe": txn_bench.fsync_probe(pathlib.Path(graph_dir)),
    }
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
        out["profile"] = text.getvalue()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="durable hgm commit vs raw SQLite (issue 15)")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--graph-dir", type=pathlib.Path, default=ROOT / "bench" / "results" / "tmp")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args(argv)
    report = run(args.nodes, commits=args.commits, warmup=args.warmup, seed=args.seed, graph_dir=args.graph_dir,
                 profile=args.profile)
    report["command"] = "python bench/commit_vs_sqlite.py " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    profile = report.pop("profile", None)
    print(json.dumps({k: v for k, v in report.items() if k != "environment"}, indent=1))
    if profile:
        print(profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
