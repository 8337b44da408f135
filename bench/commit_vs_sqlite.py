"""A durable hgm commit against a raw SQLite transaction of the same rows (issue 15).

A generated memory is loaded into a SQLite memory (``Memory.open`` + ``load``) and the file is
copied. Then, for each of ``--commits`` realistic 10-op transactions (``txn_bench.Workload``:
a goal with three actions, three status changes, a fact related to an entity, an edge
deleted), hgm commits it with ``memory.apply`` while the store's calls are recorded; the
statements of that commit's write transaction (``BEGIN IMMEDIATE`` … ``COMMIT``: the journal
row, the node and edge rows, the node index's rows) are then run on the copy by a plain
``sqlite3`` connection with the same settings (WAL, ``synchronous=FULL``), timed from
``BEGIN`` to ``COMMIT``. hgm and raw alternate commit by commit, so a busy moment of the
machine falls on both.

How hgm's statements are recorded (``--record``):

- ``calls`` (the default): the store's connection is wrapped by :class:`Recorder`, which
  keeps each ``execute``/``executemany`` call's SQL and bound values (one Python call and a
  list append per statement, nothing expanded), and the raw side replays the same calls with
  the same values — prepared statements, as any program using ``sqlite3`` writes its rows.
- ``trace`` (the benchmark before the fourth session): SQLite's trace callback, every
  statement expanded with its values inside hgm's timed commit (the 3 KB journal record
  twice), replayed as literal SQL (parsed again on every statement).

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

__all__ = ["write_statements", "Recorder", "write_calls", "run", "main"]


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


class Recorder:
    """A ``sqlite3`` connection that keeps the SQL and bound values of every ``execute`` and
    ``executemany`` call (``calls``: ``(sql, values, many)``) and passes everything on.

    >>> import sqlite3
    >>> db = Recorder(sqlite3.connect(":memory:"))
    >>> _ = db.execute("CREATE TABLE t (x)"); _ = db.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    >>> db.calls[1], db.execute("SELECT count(*) FROM t").fetchone(), db.total_changes
    (('INSERT INTO t VALUES (?)', [(1,), (2,)], True), (2,), 2)
    """

    def __init__(self, db: sqlite3.Connection):
        self._db = db
        self.calls: list[tuple[str, Any, bool]] = []

    def execute(self, sql: str, values: Any = ()) -> sqlite3.Cursor:
        self.calls.append((sql, values, False))
        return self._db.execute(sql, values)

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        rows = rows if isinstance(rows, list) else list(rows)
        self.calls.append((sql, rows, True))
        return self._db.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def write_calls(calls: list[tuple[str, Any, bool]]) -> list[tuple[str, Any, bool]]:
    """:func:`write_statements` for recorded calls: ``BEGIN IMMEDIATE``, the calls that write
    rows (the image guard's flag left out), ``COMMIT``.

    >>> write_calls([("SELECT 1", (), False), ("BEGIN IMMEDIATE", (), False), ("UPDATE image_guard SET writing = 1", (), False),
    ...              ("INSERT INTO t VALUES (?)", [(1,)], True), ("COMMIT", (), False)])
    [('BEGIN IMMEDIATE', (), False), ('INSERT INTO t VALUES (?)', [(1,)], True), ('COMMIT', (), False)]
    """
    end = max(i for i, c in enumerate(calls) if c[0].strip().upper() == "COMMIT")
    start = max(i for i, c in enumerate(calls[:end]) if c[0].strip().upper().startswith("BEGIN IMMEDIATE"))
    body = [
        c for c in calls[start + 1:end]
        if c[0].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")) and "image_guard" not in c[0]
    ]
    return [calls[start], *body, calls[end]]


def _remove(path: pathlib.Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        pathlib.Path(str(path) + suffix).unlink(missing_ok=True)


def _sql_literal(value: Any) -> str:
    """A bound value as SQL text, as SQLite's expanded trace writes it.

    >>> [_sql_literal(v) for v in ("it's", 3, None, 0.5, b"\x01")]
    ["'it''s'", '3', 'NULL', '0.5', "X'01'"]
    """
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return "X'" + value.hex().upper() + "'"
    if isinstance(value, (int, float)):
        return repr(value)
    raise TypeError(f"no SQL literal for a {type(value).__name__}")


def literal_statements(calls: list[tuple[str, Any, bool]]) -> list[str]:
    """The recorded calls as literal SQL statements, one per row (what the trace replayed).

    >>> literal_statements([("BEGIN IMMEDIATE", (), False), ("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, "b")], True)])
    ['BEGIN IMMEDIATE', "INSERT INTO t VALUES (1, 'a')", "INSERT INTO t VALUES (2, 'b')"]
    """
    out = []
    for sql, values, many in calls:
        parts = sql.split("?")
        for row in values if many else [values]:
            if len(row) != len(parts) - 1:
                raise ValueError(f"{len(row)} values for {len(parts) - 1} placeholders: {sql}")
            out.append("".join(part + (_sql_literal(row[i]) if i < len(row) else "") for i, part in enumerate(parts)))
    return out


def _raw_copy(store: pathlib.Path, raw_path: pathlib.Path) -> sqlite3.Connection:
    shutil.copyfile(store, raw_path)
    raw = sqlite3.connect(raw_path, isolation_level=None)
    for (trigger,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        raw.execute(f"DROP TRIGGER {trigger}")  # hgm's guard of its image: not part of the rows
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA synchronous=FULL")
    return raw


def run(nodes: int, *, commits: int = 200, warmup: int = 10, seed: int = 0,
        graph_dir: pathlib.Path = ROOT / "bench" / "results" / "tmp", profile: bool = False,
        record: str = "calls") -> dict[str, Any]:
    """hgm's durable commits against raw SQLite: with ``record="calls"`` two raw copies are
    written, one by literal statements (``raw_sqlite``, as the traced benchmark did) and one by
    the same calls with bound values (``raw_sqlite_bound``); with ``"trace"`` the literal one."""
    if record not in ("calls", "trace"):
        raise ValueError(f"record is 'calls' or 'trace', not {record!r}")
    path, meta, _ = generate.ensure_graph(graph_dir, nodes, seed)
    store = pathlib.Path(graph_dir) / f"commit-hgm-n{nodes}.db"
    raw_path = pathlib.Path(graph_dir) / f"commit-raw-n{nodes}.db"
    bound_path = pathlib.Path(graph_dir) / f"commit-raw-bound-n{nodes}.db"
    for each in (store, raw_path, bound_path):
        _remove(each)
    doc = json.loads(path.read_text(encoding="utf-8"))
    memory = hgm_engine.Memory.open(store)
    memory.load(doc)
    del doc
    memory.store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # noqa: SLF001 (bench: the copy starts equal)
    raw = _raw_copy(store, raw_path)
    bound = _raw_copy(store, bound_path) if record == "calls" else None
    workload = txn_bench.Workload(memory.graph, seed=seed)
    trace: list[str] = []
    db = memory.store._db  # noqa: SLF001 (bench: record the store's statements)
    recorder = None
    if record == "trace":
        db.set_trace_callback(trace.append)
    else:
        recorder = memory.store._db = Recorder(db)  # noqa: SLF001
    profiler = cProfile.Profile() if profile else None
    hgm_times, raw_times, bound_times, statements = [], [], [], []
    for i in range(warmup + commits):
        transaction = workload.next()
        trace.clear()
        if recorder is not None:
            recorder.calls.clear()
        if profiler and i >= warmup:
            profiler.enable()
        wall, cpu = time.perf_counter(), time.process_time()
        report = memory.apply(transaction)
        hgm = (time.perf_counter() - wall, time.process_time() - cpu)
        if profiler:
            profiler.disable()
        if not report.committed:
            raise AssertionError(f"refused: {[v.message for v in report.violations][:3]}")
        calls = write_calls(recorder.calls) if recorder is not None else None
        replay = write_statements(trace) if recorder is None else literal_statements(calls)
        execute = raw.execute
        wall, cpu = time.perf_counter(), time.process_time()
        for statement in replay:
            execute(statement)
        raw_t = (time.perf_counter() - wall, time.process_time() - cpu)
        if bound is not None:
            execute, executemany = bound.execute, bound.executemany
            wall, cpu = time.perf_counter(), time.process_time()
            for sql, values, many in calls:
                if many:
                    executemany(sql, values)
                else:
                    execute(sql, values)
            bound_t = (time.perf_counter() - wall, time.process_time() - cpu)
        if i >= warmup:
            hgm_times.append(hgm)
            raw_times.append(raw_t)
            if bound is not None:
                bound_times.append(bound_t)
            statements.append(len(replay))
    if recorder is None:
        db.set_trace_callback(None)
    else:
        memory.store._db = db  # noqa: SLF001
    # each copy holds what the store holds: every replayed row landed
    for copy in (raw, bound):
        if copy is None:
            continue
        for table, key in (("nodes", "id"), ("edges", "source, target, type"), ("journal", "t")):
            mine = memory.store._db.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()  # noqa: SLF001
            theirs = copy.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
            if mine != theirs:
                raise AssertionError(f"the raw copy's {table} differ from the store's")
        copy.close()
    memory.close()
    for each in (store, raw_path, bound_path):
        _remove(each)

    def stats(samples, k):
        values = sorted(s[k] * 1e3 for s in samples)
        return {"median_ms": statistics.median(values), "p10_ms": values[len(values) // 10],
                "p90_ms": values[(len(values) * 9) // 10]}

    def against(samples):
        ratios = sorted(h[0] / r[0] for h, r in zip(hgm_times, samples))
        return {
            "ratio_of_medians_wall": statistics.median(h[0] for h in hgm_times) / statistics.median(r[0] for r in samples),
            "ratio_of_medians_cpu": statistics.median(h[1] for h in hgm_times) / max(statistics.median(r[1] for r in samples), 1e-9),
            "ratio_per_commit_wall": {"median": statistics.median(ratios), "p10": ratios[len(ratios) // 10],
                                      "p90": ratios[(len(ratios) * 9) // 10]},
        }

    out = {
        "benchmark": "commit_vs_sqlite",
        "environment": query_bench.environment(),
        "nodes": meta["nodes"],
        "commits": commits,
        "record": record,
        "statements_per_commit": statistics.median(statements),
        "hgm": {"wall": stats(hgm_times, 0), "cpu": stats(hgm_times, 1)},
        "raw_sqlite": {"wall": stats(raw_times, 0), "cpu": stats(raw_times, 1)},
        **against(raw_times),
    }
    if bound_times:
        out["raw_sqlite_bound"] = {"wall": stats(bound_times, 0), "cpu": stats(bound_times, 1), **against(bound_times)}
    out["fsync_probe"] = txn_bench.fsync_probe(pathlib.Path(graph_dir))
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
    parser.add_argument("--record", choices=("calls", "trace"), default="calls",
                        help="how hgm's statements are recorded for the replay (calls: no tracing inside hgm's timed commit)")
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args(argv)
    report = run(args.nodes, commits=args.commits, warmup=args.warmup, seed=args.seed, graph_dir=args.graph_dir,
                 profile=args.profile, record=args.record)
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
