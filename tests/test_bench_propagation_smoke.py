"""Smoke test of the propagation benchmark (bench/propagation_bench.py) at 200 and 400 nodes.

Not a timed test: it checks that the cones commit under the built-in constraints, that every
timed update marks exactly K + 1 nodes with the rules loaded and none without them, and that
the report and its table are produced.
"""

from __future__ import annotations

import math
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import generate, propagation_bench  # noqa: E402

import hgm_engine  # noqa: E402


def test_a_cone_is_a_valid_tree_along_derived_from() -> None:
    doc, meta = generate.generate(500, seed=0)
    memory = hgm_engine.Memory.from_document(doc)
    ops, fact, dependents = propagation_bench.cone_ops(25, meta["anchors"]["mid_root"], meta["anchors"]["hub_entity"])
    assert memory.apply({"ops": ops}).committed and memory.violations() == []
    assert len(dependents) == 25
    # a complete 10-ary tree: 10 children of the fact, 10 of d1, 5 of d2
    assert len(memory.query(f"#{fact}.derived").ids) == 10
    assert len(memory.query(f"#{fact}.derived{{1,}}").ids) == 25
    assert len(memory.query(f"#{fact}.derived{{3,}}").ids) == 0
    assert len(memory.query(f"#{fact}.derived{{1,}}.where(type = 'result')").ids) == 12


def test_benchmark_runs_at_tiny_size(tmp_path: pathlib.Path) -> None:
    cones = (0, 1, 10, 60)
    report = propagation_bench.run([200, 400], cones=cones, repeat=1, graph_dir=tmp_path, log=lambda _: None)
    for size in report["sizes"]:
        assert [row["cone"] for row in size["rows"]] == list(cones)
        assert [row["marked"] for row in size["rows"]] == [k + 1 for k in cones]
        assert all(row["cpu_median_ms"] > 0 and row["control_cpu_median_ms"] > 0 for row in size["rows"])
        # each cone: its goal, its fact, K dependents, one subgoal per 50 actions
        subgoals = [math.ceil((k + 1) // 2 / propagation_bench.ACTIONS_PER_SUBGOAL) for k in cones]
        assert size["nodes"] == size["nodes_generated"] + sum(2 + k + s for k, s in zip(cones, subgoals))
    summary = report["summary"]
    assert set(summary["size_ratio"]["with_rules"]) == {str(k) for k in cones}
    text = propagation_bench.markdown(report)
    assert "| 60 | 61 |" in text and "400 / 200" in text
