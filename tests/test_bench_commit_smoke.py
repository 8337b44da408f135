"""Smoke test of the durable-commit benchmark (bench/commit_vs_sqlite.py): a 1,000-node memory,
a few commits. Not a timed test: it checks that the rows replayed on the raw copies — recorded
from the store's calls, or traced — are the store's rows (``run`` compares every table)."""

from __future__ import annotations

import pathlib
import sqlite3
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import commit_vs_sqlite  # noqa: E402


def test_recorded_calls_replay_the_store_rows_both_literal_and_bound(tmp_path: pathlib.Path) -> None:
    out = commit_vs_sqlite.run(1_000, commits=3, warmup=1, graph_dir=tmp_path)
    assert out["record"] == "calls" and out["statements_per_commit"] >= 17
    assert out["raw_sqlite"]["cpu"]["median_ms"] > 0 and out["raw_sqlite_bound"]["cpu"]["median_ms"] > 0


def test_traced_statements_replay_the_store_rows(tmp_path: pathlib.Path) -> None:
    out = commit_vs_sqlite.run(1_000, commits=2, warmup=1, graph_dir=tmp_path, record="trace")
    assert out["record"] == "trace" and "raw_sqlite_bound" not in out


def test_literal_statements_are_the_recorded_rows() -> None:
    db = commit_vs_sqlite.Recorder(sqlite3.connect(":memory:"))
    db.execute("CREATE TABLE t (a, b, c)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)", [("it's", 1, None), ("x", 2.5, b"\x00")])
    copy = sqlite3.connect(":memory:")
    for statement in commit_vs_sqlite.literal_statements(db.calls):
        copy.execute(statement)
    assert copy.execute("SELECT * FROM t").fetchall() == db.execute("SELECT * FROM t").fetchall()
