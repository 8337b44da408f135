"""Fused coarse-to-fine locate (issue 18, item 3's measurement): ``locate(coarse=True,
fuse=True)`` leaves no path out; it re-ranks the flat matches by reciprocal-rank fusion with
the rank of their scenario among those the summaries choose (settings frozen from the
development split, ``hgm_engine.paths.coarse.FUSION``)."""

from __future__ import annotations

import pytest

from hgm_engine import Memory, PathError
from hgm_engine.cli import main
from hgm_engine.paths.coarse import FUSION, fuse_order


@pytest.fixture
def two_scenarios() -> Memory:
    memory = Memory()
    memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]},
                   {"id": "r2", "goal": "Refund a damaged mug", "steps": ["photo", "refund"]}], scenario="refunds")
    memory.ingest([{"id": "h1", "goal": "Book a hotel in Beijing", "steps": ["search", "book"]},
                   {"id": "h2", "goal": "Refund a hotel booking", "steps": ["cancel", "refund"]}], scenario="travel")
    memory.summarize("refunds")
    memory.summarize("travel")
    return memory


def test_fusion_leaves_no_path_out_and_keeps_the_flat_matches(two_scenarios):
    flat = two_scenarios.locate("refund my order", k=4)
    fused = two_scenarios.locate("refund my order", k=4, coarse=True, fuse=True, scenarios=1)
    assert sorted(fused.paths) == sorted(flat.paths)  # the same matches, maybe in another order
    restricted = two_scenarios.locate("refund my order", k=4, coarse=True, scenarios=1)
    assert len(restricted.paths) < len(fused.paths)  # the restricting form leaves the other scenario out
    fine = fused.coarse["fine"]
    assert fine["excluded"] == 0 and fine["fused"]["flat"] == flat.paths and fine["matches"] == fused.paths


def test_fusion_moves_the_chosen_scenarios_paths_up():
    # match i scores 1/(k+i+1), plus weight/(k+r) when its scenario is the r-th chosen
    order = fuse_order([["a"], ["a"], ["b"]], {"b": 1}, weight=FUSION["weight"], k=FUSION["k"])
    bonus = FUSION["weight"] / (FUSION["k"] + 1)
    expected = sorted(range(3), key=lambda i: -(1 / (FUSION["k"] + i + 1) + (bonus if i == 2 else 0)))
    assert order == expected
    assert fuse_order([["a"], [None, "b"]], {"b": 1}, weight=10.0, k=1) == [1, 0]  # the best of a match's scenarios


def test_fusion_without_a_matching_summary_is_flat(two_scenarios):
    fused = two_scenarios.locate("zebra crossing", coarse=True, fuse=True)
    assert fused.paths == two_scenarios.locate("zebra crossing").paths and "fallback" in fused.coarse


def test_fuse_needs_coarse(two_scenarios):
    with pytest.raises(PathError) as caught:
        two_scenarios.locate("refund", fuse=True)
    assert caught.value.category == "bad-query"
    with pytest.raises(PathError):
        two_scenarios.locate("refund", coarse=True, fuse="yes")


def test_cli_rest_mcp_fused_locate(two_scenarios, tmp_path, capsys):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.rest import create_app
    from hgm_engine.server.service import MemoryService

    client = TestClient(create_app(two_scenarios))
    doc = client.post("/api/v1/locate", json={"text": "refund my order", "coarse": True, "fuse": True, "k": 4}).json()
    flat = two_scenarios.locate("refund my order", k=4).paths
    assert doc["coarse"]["fine"]["excluded"] == 0 and sorted(m["path"] for m in doc["matches"]) == sorted(flat)
    assert client.post("/api/v1/locate", json={"text": "refund", "fuse": True}).status_code == 400
    doc, failed = call_tool(MemoryService(two_scenarios), "locate", {"text": "refund my order", "coarse": True, "fuse": True})
    assert not failed and "fused" in doc["coarse"]["fine"]
    db = str(tmp_path / "m.db")
    with Memory.open(db) as memory:
        memory.load(two_scenarios.export())
    assert main(["locate", "refund my order", "--db", db, "--fuse", "--k", "4"]) == 0
    text = capsys.readouterr().out
    assert "re-ranked with the chosen scenarios" in text and all(path in text for path in flat)
