"""The tool-retrieval benchmark (bench/toolret, docs/retrieval.md) runs end to end: build,
tune on the development split, score the test split once, on a tiny slice."""

from __future__ import annotations

import doctest
import json
import random

import pytest

from bench.toolret import build, data, run, systems, tune
from bench.toolret.data import find_ultratool, load_ultratool
from hgm_engine import Memory

SMALL_GRID = {
    "source": ("goal",), "k": (3, 5), "weight": (("uniform", 1.0), ("score", 4.0)), "mix": (0.0, 0.2),
    "goals_first_k": (2,), "k1": (1.2,), "b": (0.75,), "steps": (0.2,), "steps_k": (5,), "steps_power": (1.0,),
}

TOOLS = {
    "book_hotel": ("Reserve a hotel room for given dates", ["Travel"]),
    "search_flight": ("Find flights between two cities", ["Flight"]),
    "send_sms": ("SMS notification sending tool", ["Finance"]),
    "weather_query": ("Look up the weather forecast for a city", ["Weather"]),
    "order_tracking": ("Order Tracking Tool", ["Tracking"]),
    "translate_text": ("Translate text into another language", ["Language"]),
}
ASKS = {
    "book_hotel": ["book a room in {c}", "reserve a hotel in {c}"],
    "search_flight": ["find me a flight to {c}", "which planes go to {c}"],
    "send_sms": ["text my friend that I land in {c}", "send a message about {c}"],
    "weather_query": ["will it rain in {c}", "what is the forecast for {c}"],
    "order_tracking": ["where is my parcel from {c}", "track my order shipped to {c}"],
    "translate_text": ["translate my note for {c}", "say this in the language of {c}"],
}


def _write_fixture(folder) -> None:
    rng = random.Random(4)
    folder.mkdir()
    (folder / "tool_desc.json").write_text(json.dumps(
        {"nodes": [{"id": t, "desc": d, "domain": dom} for t, (d, dom) in TOOLS.items()]}))
    rows = []
    for i in range(60):
        tools = rng.sample(sorted(TOOLS), 2)
        city = rng.choice(["Paris", "Rome", "Oslo", "Lima"])
        parts = [rng.choice(ASKS[t]).format(c=city) for t in tools]
        rows.append({"id": str(i), "user_request": " and ".join(parts) + ".",
                     "task_steps": [f"Step {n + 1} Call {t} to do it" for n, t in enumerate(tools)],
                     "task_nodes": [{"task": t} for t in tools], "n_tools": 2, "type": "chain"})
    (folder / "data.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (folder / "split_ids.json").write_text(json.dumps({"test_ids": {"chain": [str(i) for i in range(0, 60, 5)]}}))


def test_the_bench_tunes_on_development_and_scores_test_once_on_a_tiny_data_set(tmp_path):
    _write_fixture(tmp_path / "ultratool")
    data = load_ultratool(tmp_path / "ultratool")
    tuning = tune.tune(data, grid=SMALL_GRID, dev_size=10)
    dev_ids = {r.id for r in data.dev_split(size=10)[1]}
    assert not dev_ids & set(data.test_ids)
    assert tuning["primary"].startswith("hgm-")
    assert set(tuning["frozen"]) == set(run.NAMES)
    assert all(trial["dev"]["recall@5"] <= 1 for trial in tuning["trials"]["hgm-vote"])
    result = run.evaluate(data, tuning, reps=50)
    assert result["protocol"]["queries"] == 12 and result["protocol"]["memory_requests"] == 48
    for name, summary in result["summary"].items():
        low, mean, high = (summary["recall@5"][k] for k in ("low", "mean", "high"))
        assert 0.0 <= low <= mean <= high <= 1.0, name
    # Two of six tools per request, asked for in words the past requests use: the vote finds them.
    assert result["summary"]["hgm-vote"]["recall@5"]["mean"] >= 0.8
    assert "bm25-expanded" in result["paired_primary_minus"]
    assert "| hgm: search the tools (`hgm-direct`)" in run.report_markdown(result)


def test_the_built_memory_is_searchable_from_a_sqlite_file(tmp_path):
    _write_fixture(tmp_path / "ultratool")
    db = tmp_path / "tools.db"
    assert build.main(["--data", str(tmp_path / "ultratool"), "--db", str(db)]) == 0
    with Memory.open(db) as memory:
        assert memory.query("nodes.where(type = 'entity').count()").value == len(TOOLS)
        hits = memory.query("search('forecast for Oslo').where(type = 'goal').limit(3).actions.related_entities").ids
        assert "weather_query" in hits


@pytest.mark.skipif(find_ultratool() is None, reason="../shared/data/taskplan/ultratool is absent")
def test_the_bench_runs_on_a_slice_of_ultratool():
    data = load_ultratool(find_ultratool()).slice(40, 300)
    tuning = tune.tune(data, grid=SMALL_GRID, dev_size=20)
    result = run.evaluate(data, tuning, reps=50)
    assert result["protocol"]["queries"] == 40 and result["protocol"]["memory_requests"] == 300
    assert result["summary"]["hgm-vote"]["recall@5"]["mean"] > result["summary"]["hgm-direct"]["recall@5"]["mean"]


@pytest.mark.parametrize("module", [build, data, systems, tune], ids=lambda m: m.__name__)
def test_the_bench_modules_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed
