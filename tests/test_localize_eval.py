"""A small evaluation on the TMDB task plans (leave-one-out): the engine must beat TF-IDF.

Reads ``../shared/data/taskplan`` (or ``$HGM_TASKPLAN_DATA``) in place and skips, saying so,
when the data is not there. The full evaluation is ``bench/localize/run.py``.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from hgm_engine.paths.localize import PathIndex
from hgm_engine.paths.localize.taskplan import find_taskplan_root, load_taskplan, request_to_trajectory

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = find_taskplan_root(REPO)


def load_bench_module(name: str):
    path = REPO / "bench" / "localize" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_localize_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


needs_data = pytest.mark.skipif(
    DATA is None or not (DATA / "tmdb" / "data.json").exists(),
    reason="task-plan data not found: ../shared/data/taskplan is absent (set HGM_TASKPLAN_DATA)",
)


@needs_data
def test_the_engine_beats_tfidf_on_tmdb_leave_one_out():
    evaluate = load_bench_module("evaluate")
    data = load_taskplan(DATA / "tmdb")
    records = data.records()
    index = PathIndex.from_records(records)
    engine = evaluate.EngineSystem(index, tag_vocabulary=data.tag_vocabulary)
    tfidf = evaluate.TfidfBaseline(data.rows)
    results = evaluate.leave_one_out_protocol(data.rows, {
        "engine": evaluate.engine_loo(engine),
        "tfidf": lambda row: tfidf.rank(row["user_request"], exclude=[row["id"]]),
    })
    engine_result, tfidf_result = results["engine"], results["tfidf"]
    assert engine_result["hit@5"] > tfidf_result["hit@5"]
    assert engine_result["mrr@10"] > tfidf_result["mrr@10"]
    assert engine_result["hit@1"] >= tfidf_result["hit@1"]
    assert len(index) == len(records)   # leave-one-out put every path back


@needs_data
def test_ultratool_requests_become_trajectories_with_domain_tags():
    data = load_taskplan(DATA / "ultratool")
    assert len(data.test_ids) == 500 and len(data.memory_rows()) == len(data.rows) - 500
    row = data.by_id[data.test_ids[0]]
    doc = request_to_trajectory(row, data.domains)
    assert [s["name"] for s in doc["steps"]] == [n["task"] for n in row["task_nodes"]]
    assert doc["tags"] and set(doc["tags"]) <= set(data.tag_vocabulary)
    assert all("content" in s for s in doc["steps"])


@needs_data
def test_the_flat_step_baseline_returns_single_steps_never_paths():
    evaluate = load_bench_module("evaluate")
    data = load_taskplan(DATA / "tmdb")
    flat = evaluate.FlatStepBaseline(data.records())
    ranked = flat.rank(data.rows[0]["user_request"], k=5)
    assert ranked and all(len(names) == 1 for names, _ in ranked)
