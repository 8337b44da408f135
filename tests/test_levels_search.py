"""Summaries-first search (issue 18, item 3): ``search(text, coarse=True)`` reads the summaries,
then ranks only the nodes the best of them cover (and those no summary covers), each step
visible in the answer — on the API, the CLI, REST and MCP. Without ``coarse`` nothing changes."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hgm_engine import Memory, SearchError
from hgm_engine.cli import main


@pytest.fixture
def two_scenarios() -> Memory:
    memory = Memory()
    memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]},
                   {"id": "r2", "goal": "Refund a damaged mug", "steps": ["photo", "refund"]}], scenario="refunds")
    memory.ingest([{"id": "h1", "goal": "Book a hotel in Beijing", "steps": ["search", "book"]},
                   {"id": "h2", "goal": "Refund a hotel booking", "steps": ["cancel", "refund"]}], scenario="travel")
    memory.apply({"ops": [{"op": "add_node", "id": "policy", "type": "fact", "content": "Refunds take five days"}]})
    return memory


@pytest.fixture
def summarized(two_scenarios) -> Memory:
    two_scenarios.summarize("refunds")
    two_scenarios.summarize("travel")
    return two_scenarios


def _ids(hits) -> list[str]:
    return [hit["id"] for hit in hits]


def test_coarse_search_ranks_only_the_nodes_of_the_chosen_summary(summarized):
    hits = summarized.search("refund my order", coarse=True, summaries=1, limit=None)
    assert hits.coarse["chosen"][0]["summary"] == "summary-refunds"
    assert {hit["via"] for hit in hits} <= {"summary-refunds", None}
    assert "h2" not in _ids(hits) and "h2" in _ids(summarized.search("refund my order", limit=None))
    assert not any(hit["id"].startswith("summary-") for hit in hits)  # the coarse step showed them


def test_nodes_no_summary_covers_stay_in_the_fine_step(summarized):
    hits = summarized.search("refund", coarse=True, summaries=1, limit=None)
    assert "policy" in _ids(hits) and next(h for h in hits if h["id"] == "policy")["via"] is None


def test_the_explanation_shows_each_step(summarized):
    hits = summarized.search("refund my order", coarse=True, summaries=1, limit=2)
    coarse = hits.coarse
    assert coarse["summaries"] == 2
    chosen = coarse["chosen"][0]
    assert chosen["summary_of"] == "refunds" and chosen["score"] > 0 and chosen["covers"] > 0 and chosen["needs_review"] is False
    travel = summarized.node("summary-travel")
    assert coarse["fine"]["left_out"] == travel["covers"] + 1  # the scenario goal and its events
    assert coarse["fine"]["hits"] == _ids(hits) and len(hits) == 2


def test_the_limit_holds_when_the_best_flat_hits_are_elsewhere():
    memory = Memory()
    ops = [{"op": "add_node", "id": "mugs", "type": "goal", "kind": "scenario", "content": "Mugs"},
           {"op": "add_node", "id": "m1", "type": "action", "parent": "mugs", "content": "refund the order"},
           {"op": "add_node", "id": "m2", "type": "action", "parent": "mugs", "content": "refund an order of mugs"},
           {"op": "add_node", "id": "other", "type": "goal", "kind": "scenario", "content": "Other"},
           {"op": "add_node", "id": "s-mugs", "type": "fact", "kind": "summary", "summary_of": "mugs", "content": "refunds of orders"},
           {"op": "add_node", "id": "s-other", "type": "fact", "kind": "summary", "summary_of": "other", "content": "other things"}]
    for i in range(80):  # 80 better matches, under the summary not chosen
        ops.append({"op": "add_node", "id": f"t{i}", "type": "action", "parent": "other", "content": "refund refund order order"})
        ops.append({"op": "add_edge", "from": "s-other", "to": f"t{i}", "type": "summarizes"})
    ops += [{"op": "add_edge", "from": "s-mugs", "to": node, "type": "summarizes"} for node in ("mugs", "m1", "m2")]
    memory.apply({"ops": ops})
    flat = _ids(memory.search("refund order", limit=70))
    assert all(i.startswith("t") for i in flat[:64])  # the fine step's first fetch holds none of its nodes
    hits = memory.search("refund order", coarse=True, summaries=1, limit=2)
    assert hits.coarse["chosen"][0]["summary"] == "s-mugs"
    assert _ids(hits) == ["m1", "m2"] and all(h["via"] == "s-mugs" for h in hits)
    assert hits.coarse["fine"] == {"ranked": 4, "left_out": 80, "hits": ["m1", "m2"]}  # and "other", no summary's


def test_without_a_matching_summary_the_search_is_flat(two_scenarios):
    hits = two_scenarios.search("refund my order", coarse=True)
    assert _ids(hits) == _ids(two_scenarios.search("refund my order"))
    assert "flat" in hits.coarse["fallback"] and hits.coarse["chosen"] == []


def test_a_stale_summary_is_chosen_with_its_mark(summarized):
    summarized.apply({"ops": [{"op": "update_node", "id": "r1", "set": {"content": "Refund order A1 (urgent)"}}]})
    chosen = summarized.search("refund my order", coarse=True, summaries=1).coarse["chosen"]
    assert chosen[0]["summary"] == "summary-refunds" and chosen[0]["needs_review"] is True


def test_coarse_search_as_of_reads_the_summaries_of_that_state(summarized):
    before = summarized.t - 2  # before either summary was written
    hits = summarized.search("refund my order", coarse=True, as_of=before)
    assert hits.coarse["summaries"] == 0 and "fallback" in hits.coarse


def test_search_without_coarse_is_unchanged(summarized):
    hits = summarized.search("refund my order")
    assert type(hits) is list and all("via" not in hit for hit in hits)


@pytest.mark.parametrize("options", [{"coarse": "yes"}, {"coarse": True, "summaries": 0},
                                     {"coarse": True, "summaries": True}, {"coarse": True, "summaries": 1001},
                                     {"coarse": True, "summaries": 2.0}])
def test_bad_coarse_options_are_refused_and_change_nothing(summarized, options):
    before, t = summarized.export(), summarized.t
    with pytest.raises(SearchError) as caught:
        summarized.search("refund", **options)
    assert caught.value.category == "invalid-argument"
    assert summarized.export() == before and summarized.t == t


def test_cli_coarse_search(summarized, tmp_path, capsys):
    db = str(tmp_path / "m.db")
    with Memory.open(db) as memory:
        memory.load(summarized.export())
    assert main(["search", "refund my order", "--db", db, "--coarse", "--summaries", "1"]) == 0
    text = capsys.readouterr().out
    assert "coarse: 2 summaries read; chose summary-refunds of refunds" in text and "under other summaries left out" in text
    assert "via summary-refunds" in text
    assert main(["search", "refund my order", "--db", db, "--coarse", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["coarse"]["summaries"] == 2 and all("via" in hit for hit in doc["hits"])
    assert main(["search", "refund", "--db", db, "--coarse", "--summaries", "0"]) == 1  # a usage error
    assert "must be from 1 to 1000" in capsys.readouterr().err


def test_rest_and_mcp_coarse_search(summarized):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.rest import create_app
    from hgm_engine.server.service import MemoryService

    client = TestClient(create_app(summarized))
    doc = client.post("/api/v1/search", json={"text": "refund my order", "coarse": True, "summaries": 1}).json()
    assert doc["coarse"]["chosen"][0]["summary"] == "summary-refunds" and "h2" not in _ids(doc["hits"])
    assert doc["hits"][0]["via"] == "summary-refunds"
    assert "coarse" not in client.post("/api/v1/search", json={"text": "refund my order"}).json() or \
        client.post("/api/v1/search", json={"text": "refund my order"}).json()["coarse"] is None
    refused = client.post("/api/v1/search", json={"text": "refund", "coarse": True, "summaries": 0})
    assert refused.status_code in (400, 422)
    doc, failed = call_tool(MemoryService(summarized), "search", {"text": "refund my order", "coarse": True, "summaries": 1})
    assert not failed and doc["coarse"]["fine"]["left_out"] > 0
    doc, failed = call_tool(MemoryService(summarized), "search", {"text": "refund", "coarse": "yes"})
    assert failed and doc["error"]["category"] == "invalid-argument"



VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 2000), st.floats(allow_nan=True), st.text(max_size=5),
                   st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(coarse=VALUES, summaries=VALUES, fuse=VALUES)
def test_any_coarse_option_gives_an_answer_or_an_hgm_error_and_changes_nothing(summarized, coarse, summaries, fuse):
    from hgm_engine import HGMError
    from hgm_engine.server.service import MemoryService

    service = MemoryService(summarized)
    before, t = summarized.export(), summarized.t
    for call in (lambda: service.search("refund order", None, 5, None, coarse, summaries),
                 lambda: service.locate("refund order", None, 3, coarse=coarse, scenarios=summaries, fuse=fuse)):
        try:
            call()
        except HGMError:
            pass
    assert summarized.export() == before and summarized.t == t
