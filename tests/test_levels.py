"""Levels and roll-up (issue 18): summaries of a scenario's events, kept honest by a rule."""

from __future__ import annotations

import json

import pytest

from hgm_engine import Memory, RequestError, RewriteProposalError
from hgm_engine.cli import main
from hgm_engine.llm import ScriptedClient, summarize_with_model
from hgm_engine.txn import level_of

SHOP = {
    "ops": [
        {"op": "add_node", "id": "assistant", "type": "goal", "kind": "global", "content": "Help customers"},
        {"op": "add_node", "id": "refund", "type": "goal", "kind": "scenario", "parent": "assistant", "content": "Refund an order"},
        {"op": "add_node", "id": "lookup", "type": "action", "parent": "refund", "content": "Look up order 17", "status": "done"},
        {"op": "add_node", "id": "pay", "type": "action", "parent": "refund", "content": "Pay the refund", "status": "failed"},
        {"op": "add_node", "id": "retry", "type": "action", "parent": "refund", "content": "Retry the payment", "status": "pending"},
        {"op": "add_node", "id": "found", "type": "result", "content": "Order 17: two mugs, 30 EUR"},
        {"op": "add_node", "id": "order", "type": "entity", "content": "Order 17"},
        {"op": "add_edge", "from": "lookup", "to": "found", "type": "produces"},
        {"op": "add_edge", "from": "lookup", "to": "order", "type": "related_to"},
        {"op": "add_edge", "from": "pay", "to": "order", "type": "related_to"},
        {"op": "add_node", "id": "other", "type": "goal", "kind": "scenario", "parent": "assistant", "content": "Track a parcel"},
        {"op": "add_node", "id": "track", "type": "action", "parent": "other", "content": "Track parcel", "status": "done"},
    ]
}


@pytest.fixture
def shop() -> Memory:
    memory = Memory()
    memory.apply(SHOP)
    return memory


def test_summary_node_covers_the_subtree(shop):
    report = shop.summarize("refund")
    assert report.committed and report.created == ("summary-refund",)
    summary = shop.summary_of("refund")
    assert summary["kind"] == "summary" and summary["type"] == "fact" and summary["level"] == "scenario"
    assert summary["summary_of"] == "refund" and summary["covers"] == 4
    assert shop.query("#summary-refund.summarized").ids == ["refund", "lookup", "pay", "retry", "found"]
    assert shop.query("#pay.summaries").ids == ["summary-refund"]
    assert summary["counts"] == {"type": {"action": 3, "result": 1}, "status": {"done": 1, "failed": 1, "pending": 1}}
    assert summary["entities"] == ["order"]
    assert "failed: Pay the refund" in summary["content"] and "Order 17: two mugs" in summary["content"]


def test_extractive_summary_is_deterministic(shop):
    other = Memory()
    other.apply(SHOP)
    shop.summarize("refund")
    other.summarize("refund")
    assert shop.summary_of("refund") == other.summary_of("refund")


def test_salient_steps_are_bounded_by_max_items(shop):
    shop.summarize("refund", max_items=1)
    summary = shop.summary_of("refund")
    assert summary["steps"] == ["lookup"]  # it produced something: the most salient
    assert "(of 3)" in summary["content"]


def test_a_change_to_a_covered_node_marks_the_summary_needs_review(shop):
    shop.summarize("refund")
    report = shop.apply({"ops": [{"op": "update_node", "id": "retry", "set": {"status": "done"}}]})
    assert "summary_stale" in report.fired_rules
    summary = shop.summary_of("refund")
    assert summary["dirty"] == "needs_review"
    assert summary["dirty_marks"][0]["rule"] == "summary_stale" and summary["dirty_marks"][0]["because"] == ["retry"]


def test_a_new_event_under_the_summarized_node_marks_the_summary(shop):
    shop.summarize("refund")
    shop.apply({"ops": [{"op": "add_node", "id": "mail", "type": "action", "parent": "refund", "content": "Mail the customer"}]})
    assert shop.summary_of("refund")["dirty"] == "needs_review"


def test_deleting_a_covered_node_marks_the_summary(shop):
    shop.summarize("refund")
    shop.apply({"ops": [{"op": "delete_node", "id": "retry"}]})
    assert shop.summary_of("refund")["dirty"] == "needs_review"


def test_changes_elsewhere_leave_the_summary_alone(shop):
    shop.summarize("refund")
    shop.apply({"ops": [{"op": "update_node", "id": "track", "set": {"status": "failed"}}]})
    assert "dirty" not in shop.summary_of("refund")


def test_summarizing_again_refreshes_and_clears_the_mark(shop):
    shop.summarize("refund")
    shop.apply({"ops": [{"op": "delete_node", "id": "retry"}]})
    report = shop.summarize("refund")
    assert report.committed and report.created == ()
    summary = shop.summary_of("refund")
    assert "dirty" not in summary and summary["covers"] == 3
    assert [c["id"] for c in report.to_json()["cleared"]] == ["summary-refund"]
    assert shop.query("nodes.where(kind = 'summary')").ids == ["summary-refund"]


def test_summaries_are_never_members_of_other_summaries(shop):
    shop.summarize("refund")
    shop.summarize("assistant")
    assert "summary-refund" not in shop.query("#summary-assistant.summarized").ids


@pytest.mark.parametrize(
    "node, options, category",
    [
        ("track", {}, "empty-subtree"),
        ("nope", {}, "unknown-node"),
        ("refund", {"max_nodes": 2}, "limit-exceeded"),
        ("refund", {"max_items": 0}, "invalid-argument"),
        ("refund", {"max_nodes": True}, "invalid-argument"),
    ],
)
def test_bad_summaries_are_refused_and_change_nothing(shop, node, options, category):
    before, t = shop.export(), shop.t
    with pytest.raises(RequestError) as caught:
        shop.summarize(node, **options)
    assert caught.value.category == category
    assert shop.export() == before and shop.t == t


def test_a_summary_cannot_be_summarized(shop):
    shop.summarize("refund")
    with pytest.raises(RequestError) as caught:
        shop.summarize("summary-refund")
    assert caught.value.category in ("invalid-argument", "empty-subtree")


def test_level_convention(shop):
    assert [level_of(shop.graph, n) for n in ("assistant", "refund", "pay", "order")] == ["global", "scenario", "event", None]


def test_summary_by_a_model():
    memory = Memory()
    memory.apply(SHOP)
    client = ScriptedClient(['{"summary": ""}', '{"summary": "Order 17 was looked up; paying the refund failed."}'])
    summarize_with_model(memory, "refund", client=client, model="m")
    summary = memory.summary_of("refund")
    assert summary["content"] == "Order 17 was looked up; paying the refund failed." and summary["method"] == "model"
    assert summary["covers"] == 4  # the structure is the extractive one
    assert "Look up order 17" in client.requests[0]["messages"][1]["content"]


@pytest.mark.parametrize(
    "answers, category",
    [(["not json", '{"text": "x"}'], "invalid-model-answer"), ([], "model-unavailable")],
)
def test_a_failed_model_changes_nothing(shop, answers, category):
    before, t = shop.export(), shop.t
    with pytest.raises(RewriteProposalError) as caught:
        summarize_with_model(shop, "refund", client=ScriptedClient(answers), model="m", attempts=2)
    assert caught.value.category == category
    assert shop.export() == before and shop.t == t


def test_cli_summarize(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    plan = tmp_path / "shop.json"
    plan.write_text(json.dumps(SHOP))
    assert main(["apply", str(plan), "--db", db]) == 0
    capsys.readouterr()
    assert main(["summarize", "refund", "--db", db, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["id"] == "summary-refund" and doc["summary"]["covers"] == 4
    assert main(["summarize", "refund", "--db", db]) == 0
    assert "refreshed the summary of refund" in capsys.readouterr().out
    assert main(["summarize", "track", "--db", db, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["category"] == "empty-subtree"
    assert main(["summarize", "nope", "--db", db]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_rest_and_mcp_summarize(shop):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.rest import create_app
    from hgm_engine.server.service import MemoryService

    client = TestClient(create_app(shop))
    answer = client.post("/api/v1/summarize", json={"id": "refund"})
    assert answer.status_code == 200 and answer.json()["id"] == "summary-refund"
    assert client.post("/api/v1/summarize", json={"id": "track"}).status_code == 400
    assert client.post("/api/v1/summarize", json={"id": "nope"}).status_code == 404
    assert client.post("/api/v1/summarize", json={"id": "refund", "max_items": 0}).status_code == 400
    doc, failed = call_tool(MemoryService(shop), "summarize", {"id": "other"})
    assert not failed and doc["summary"]["covers"] == 1
    doc, failed = call_tool(MemoryService(shop), "summarize", {"id": "track"})
    assert failed and doc["error"]["category"] == "empty-subtree"


# -- coarse-to-fine locate ---------------------------------------------------------------------------


@pytest.fixture
def two_scenarios() -> Memory:
    memory = Memory()
    memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]},
                   {"id": "r2", "goal": "Refund a damaged mug", "steps": ["photo", "refund"]}], scenario="refunds")
    memory.ingest([{"id": "h1", "goal": "Book a hotel in Beijing", "steps": ["search", "book"]},
                   {"id": "h2", "goal": "Refund a hotel booking", "steps": ["cancel", "refund"]}], scenario="travel")
    return memory


def test_coarse_locate_reads_summaries_then_their_paths(two_scenarios):
    two_scenarios.summarize("refunds")
    two_scenarios.summarize("travel")
    result = two_scenarios.locate("refund my order", coarse=True, scenarios=1)
    assert result.paths == ["r1", "r2"]  # h2 (a hotel refund) is in the scenario not chosen
    assert result.coarse["chosen"][0]["scenario"] == "refunds" and result.coarse["summaries"] == 2
    assert result.coarse["fine"] == {"paths": 2, "excluded": 2, "matches": ["r1", "r2"]}
    assert "h2" in two_scenarios.locate("refund my order").paths  # flat ranks every path
    assert result.to_json()["coarse"]["chosen"][0]["summary"] == "summary-refunds"


def test_coarse_locate_without_summaries_falls_back_to_flat(two_scenarios):
    result = two_scenarios.locate("refund my order", coarse=True)
    assert result.paths == two_scenarios.locate("refund my order").paths
    assert "flat" in result.coarse["fallback"]


def test_coarse_locate_says_a_stale_summary_is_stale(two_scenarios):
    two_scenarios.summarize("refunds")
    two_scenarios.apply({"ops": [{"op": "update_node", "id": "r1", "set": {"content": "Refund order A1 (urgent)"}}]})
    chosen = two_scenarios.locate("refund my order", coarse=True).coarse["chosen"]
    assert chosen[0]["needs_review"] is True


@pytest.mark.parametrize("options", [{"coarse": True, "scenario": "travel"}, {"coarse": True, "scenarios": 0}])
def test_coarse_locate_bad_options(two_scenarios, options):
    from hgm_engine import PathError

    with pytest.raises(PathError) as caught:
        two_scenarios.locate("refund", **options)
    assert caught.value.category == "bad-query"


def test_cli_rest_mcp_coarse_locate(two_scenarios, tmp_path, capsys):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.rest import create_app
    from hgm_engine.server.service import MemoryService

    two_scenarios.summarize("refunds")
    two_scenarios.summarize("travel")
    client = TestClient(create_app(two_scenarios))
    doc = client.post("/api/v1/locate", json={"text": "refund my order", "coarse": True, "scenarios": 1}).json()
    assert [m["path"] for m in doc["matches"]] == ["r1", "r2"] and doc["coarse"]["chosen"][0]["scenario"] == "refunds"
    doc, failed = call_tool(MemoryService(two_scenarios), "locate", {"text": "refund my order", "coarse": True, "scenarios": 1})
    assert not failed and doc["coarse"]["fine"]["excluded"] == 2
    db = str(tmp_path / "m.db")
    with Memory.open(db) as memory:
        memory.load(two_scenarios.export())
        memory.summarize("refunds")
        memory.summarize("travel")
    assert main(["locate", "refund my order", "--db", db, "--coarse", "--scenarios", "1"]) == 0
    text = capsys.readouterr().out
    assert "coarse: 2 scenario summaries read; chose refunds" in text and "fine: ranked 2 paths" in text


def test_pictures_draw_summaries_and_closed_facts_distinctly(shop):
    from hgm_engine.render import render
    from hgm_engine.render.text import node_label

    shop.summarize("refund")
    shop.apply({"ops": [{"op": "add_node", "id": "f_rate", "type": "fact", "content": "30 EUR", "valid_from": "2026-01-01"},
                        {"op": "invalidate", "id": "f_rate", "at": "2026-06-01"}]})
    assert node_label(shop.graph.node("summary-refund")).startswith("summary-refund [fact, summary of refund]")
    assert node_label(shop.graph.node("f_rate")).startswith("f_rate [fact, closed 2026-06-01]")
    dot = render(shop, "dot")
    assert "peripheries=2" in dot and 'style="rounded,filled,dotted"' in dot


def test_summaries_do_not_change_flat_locate():
    from planners.longrun import SCENARIOS, build

    memory = Memory()
    build(memory)
    requests = ["my parcel arrived broken, I want my money back", "book a room in Lisbon", "move the review to Thursday"]
    after = [memory.locate(r, k=5).to_json()["matches"] for r in requests]
    plain = Memory()
    plain.load({"format": "hgm-graph/1",
                "nodes": [n for n in memory.export()["nodes"] if n.get("kind") != "summary"],
                "edges": [e for e in memory.export()["edges"] if e["type"] != "summarizes"]})
    assert not plain.query("nodes.where(kind = 'summary')").ids and len(SCENARIOS) == 6
    before = [plain.locate(r, k=5).to_json()["matches"] for r in requests]
    assert [[m["path"] for m in ms] for ms in after] == [[m["path"] for m in ms] for ms in before]
    assert [[m["score"] for m in ms] for ms in after] == [[m["score"] for m in ms] for ms in before]
    assert [memory.locate(r).recalled for r in requests] == [plain.locate(r).recalled for r in requests]
