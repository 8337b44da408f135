"""Smoke test of the transaction benchmark (bench/txn_bench.py): 1,000 nodes, a few commits.

Not a timed test: it checks that the workload's transactions commit under the benchmark's
constraints and really change the memory, that ``as_of`` answers match the loaded state, and
that the store part (load, durable commits, reopen in a subprocess) and the report run.
"""

from __future__ import annotations

import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import generate, txn_bench  # noqa: E402

import hgm_engine  # noqa: E402

SIZE = 1_000


def test_workload_commits_and_never_repeats_a_target() -> None:
    doc, _ = generate.generate(SIZE, seed=0)
    memory = hgm_engine.Memory.from_document(doc)
    for name, text in txn_bench.USER_CONSTRAINTS.items():
        memory.add_constraint(name, text)
    workload = txn_bench.Workload(memory.graph, seed=0)
    updated, deleted = [], []
    for _ in range(60):
        tx = workload.next()
        assert len(tx["ops"]) == 10
        updated += [op["id"] for op in tx["ops"] if op["op"] == "update_node"]
        deleted += [(op["from"], op["to"], op["type"]) for op in tx["ops"] if op["op"] == "delete_edge"]
        report = memory.apply(tx)
        assert report.committed
        # 5 nodes and 5 edges added, 3 nodes updated, 1 edge removed
        assert len(report.changes) == 14
    assert len(set(updated)) == len(updated) and len(set(deleted)) == len(deleted)
    assert memory.violations() == []
    assert memory.query("nodes.count()").value == SIZE + 60 * 5


def test_benchmark_functions_run(tmp_path: pathlib.Path) -> None:
    quiet = lambda _: None  # noqa: E731
    mem = txn_bench.run_memory(
        SIZE, graph_dir=tmp_path, warmup=2, commits=5, as_of_after=(4,), repeat=1, min_batch=0.001, cold_repeat=1, log=quiet
    )
    assert mem["nodes"] == SIZE and mem["commit"]["n"] == 5 and mem["commits_done"] == 7
    assert mem["commit"]["cpu_median_ms"] > 0
    (point,) = mem["as_of"]
    assert point["commits_since"] == 4 and point["changes_since"] == 4 * 14
    assert [q["name"] for q in point["queries"]] == list(txn_bench.AS_OF_QUERIES)

    store = txn_bench.run_store(SIZE, graph_dir=tmp_path, warmup=1, commits=3, reopen_repeat=1, log=quiet)
    assert store["t_final"] == 1 + 2 * (1 + 3)
    assert store["reopen"]["nodes"] == SIZE + 4 * 5 and store["reopen"]["seconds"] > 0
    assert store["commit"]["ten_ops"]["commits_per_second"] > 0
    assert not list(tmp_path.glob("*.db"))  # the store file is removed afterwards

    report = {"memory": [mem], "store": [store]}
    text = txn_bench.markdown(report)
    assert "| 1,000 |" in text and "`fact_count`" in text
    checks = txn_bench.check_targets(report)
    assert "commit_1m_within_2x_1k" not in checks and "reopen_100k_within_3s" not in checks
    assert "as_of_warm_within_2x_current" in checks
