"""Smoke test of the agent evaluation (bench/agent): a few tasks per condition, once.

Not a measurement: it checks that every condition runs the generated tasks to an end, that the
result document has its shape, and that the same seed gives the same numbers.
"""

from __future__ import annotations

import pathlib
import sys

import pytest


REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


from bench.agent import ablations, env, run  # noqa: E402


def test_every_condition_runs_and_the_document_has_its_shape():
    doc = run.evaluate(16, [0], list(ablations.CONDITIONS))
    assert doc["format"] == "hgm-bench-agent/1" and list(doc["results"]) == list(ablations.CONDITIONS)
    for result in doc["results"].values():
        assert 0.0 <= result["success_rate"]["mean"] <= 1.0
        assert result["steps_per_task"]["mean"] >= 2 and result["calls_per_task"]["mean"] >= 1
        assert result["per_seed"][0]["tasks"] == 16
    table = run.table(doc)
    assert table.startswith("| condition | task success") and "| flat |" in table


def test_the_same_seed_gives_the_same_rows():
    assert run.run_sequence("full", 3, 12) == run.run_sequence("full", 3, 12)


def test_generated_tasks_cover_the_families_and_failures_are_shared_by_conditions():
    tasks = env.generate_tasks(60, 1)
    assert {t.family for t in tasks} == set(env.FAMILIES)
    world = env.Environment(1, 60, transient=0.5)
    task = next(t for t in tasks if t.family == "status")
    outcomes = []
    for _ in range(2):  # a fresh toolbox per run: the same calls fail the same way
        tools = world.tools_for(task)
        row = []
        for _ in range(4):
            try:
                tools["query_order"](order="A1", attempt=1)
                row.append("ok")
            except Exception as exc:  # noqa: BLE001 - the simulated timeout
                row.append(type(exc).__name__)
        outcomes.append(row)
    assert outcomes[0] == outcomes[1] and "ToolTimeout" in outcomes[0]


def test_an_unknown_condition_is_refused():
    with pytest.raises(ValueError, match="unknown condition"):
        ablations.make_planner("magic", env.build_domain())
