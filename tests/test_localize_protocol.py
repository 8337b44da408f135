"""The localization benchmark's protocol (bench/localize/protocol.py, run.py): who is a query,
who is memory, how sure the figures are, and that test data is never scored without a frozen
configuration. Reads ``../shared/data/taskplan`` in place and skips, saying so, without it."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from hgm_engine.paths.localize import PathRecord, Step
from hgm_engine.paths.localize.taskplan import find_taskplan_root, load_taskplan

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = find_taskplan_root(REPO)


def bench(name: str):
    folder = str(REPO / "bench" / "localize")
    if folder not in sys.path:
        sys.path.insert(0, folder)   # the bench modules import one another by name
    spec = importlib.util.spec_from_file_location(f"bench_localize_{name}", REPO / "bench" / "localize" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


needs_data = pytest.mark.skipif(
    DATA is None or not (DATA / "ultratool" / "data.json").exists(),
    reason="task-plan data not found: ../shared/data/taskplan is absent (set HGM_TASKPLAN_DATA)",
)


@pytest.fixture(scope="module")
def ultratool():
    return load_taskplan(DATA / "ultratool")


@needs_data
def test_the_development_split_is_drawn_from_the_memory_side_only(ultratool):
    protocol = bench("protocol")
    dev = {str(r["id"]) for r in protocol.dev_rows(ultratool)}
    assert len(dev) == protocol.DEV_SIZE
    assert not dev & {str(i) for i in ultratool.test_ids}
    assert dev == {str(r["id"]) for r in protocol.dev_rows(ultratool)}   # the seed fixes it


@needs_data
def test_the_folds_cover_every_request_outside_development_once_and_never_query_their_memory(ultratool):
    protocol = bench("protocol")
    dev = {str(r["id"]) for r in protocol.dev_rows(ultratool)}
    folds = protocol.fold_splits(ultratool)
    assert len(folds) == protocol.FOLDS
    queried = [str(r["id"]) for _, queries in folds for r in queries]
    assert len(queried) == len(set(queried)) == len(ultratool.rows) - len(dev)
    assert not set(queried) & dev
    for memory, queries in folds:
        held = {str(r["id"]) for r in queries}
        assert not held & {str(r["id"]) for r in memory}
        assert len(memory) + len(queries) == len(ultratool.rows)


def test_a_bootstrap_interval_holds_the_mean_and_narrows_with_more_queries():
    protocol = bench("protocol")
    low, high = protocol.bootstrap_interval([1, 0] * 50)
    wide_low, wide_high = protocol.bootstrap_interval([1, 0] * 5)
    assert low < 0.5 < high and wide_low < low and high < wide_high


def test_a_paired_interval_cancels_what_two_systems_share():
    protocol = bench("protocol")
    a = [1, 0] * 100
    b = [1, 0] * 99 + [0, 0]     # one query worse, everything else shared
    paired = protocol.paired_interval(a, b)
    assert paired["difference"] == pytest.approx(0.005)
    assert paired["low"] >= 0.0 and paired["high"] <= 0.02


def test_the_like_for_like_baseline_reads_the_fields_hgm_indexes():
    evaluate = bench("evaluate")
    record = PathRecord.create("p", "Book flights to Paris", [Step("flight_search", "searching the fares")],
                               tags=["Flight"])
    words = evaluate.path_document(record)
    assert {"book", "flight", "pari", "search", "fare"} <= set(words)   # goal, step text and name, tags, stemmed


def test_the_test_splits_are_not_scored_without_a_tuning_log(tmp_path, capsys):
    run = bench("run")
    code = run.main(["--tuning", str(tmp_path / "missing.json"), "--out", str(tmp_path / "out.json"),
                     "--doc", str(tmp_path / "doc.md"), "--scale", ""])
    assert code == 2 and "tune.py first" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()
