"""Paths in memory (issue 5): ingest, locate through the path index kept in step with commits,
versioned rewrite with guards, outcomes, rollback, and the index persisted in the store."""

from __future__ import annotations

import json
import pathlib

import pytest

from hgm_engine.paths.localize import ScoreConfig
from hgm_engine.memory import Memory
from hgm_engine.paths import INDEX_META_KEY, PathGuards, read_jsonl, resolve_steps
from hgm_engine.errors import PathError

TASKPLAN = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "taskplan"

ORDER = {
    "id": "order-17",
    "goal": "Check the status of order A1001 and tell the user",
    "steps": [
        {"name": "query_order", "content": "call the order API", "args": {"order_id": "A1001"}},
        {"name": "check_result", "condition": "api_return_ok"},
        {"name": "notify_user"},
    ],
    "edges": [[0, 1], [1, 2]],
    "tags": ["order", "query"],
    "result": "success",
    "reward": 1.0,
}
REFUND = {
    "id": "refund-3",
    "goal": "Refund a damaged item of order B7",
    "steps": [{"name": "check_refund_policy", "content": "read the refund policy"}, {"name": "apply_refund"}],
    "tags": ["refund"],
    "result": "success",
    "reward": 0.8,
}
HOTEL = {
    "id": "hotel-1",
    "goal": "Book a hotel room in Beijing near the Forbidden City",
    "steps": [{"name": "search_hotels"}, {"name": "book_room"}, {"name": "pay"}],
    "tags": ["travel"],
    "result": "success",
}


def _memory(*docs) -> Memory:
    memory = Memory()
    memory.ingest([dict(d) for d in (docs or (ORDER, REFUND, HOTEL))])
    return memory


# -- ingest ----------------------------------------------------------------------------------------


def test_ingest_builds_a_goal_with_ordered_actions_in_one_transaction():
    memory = Memory()
    report = memory.ingest([ORDER, REFUND], author="agent")
    assert report.ingested == ["order-17", "refund-3"] and report.t == 1 and report.ts == [1]
    assert [c.t for c in memory.commits()] == [1] and memory.commits()[0].kind == "ingest"
    goal = memory.node("order-17")
    assert goal["type"] == "goal" and goal["kind"] == "path" and goal["content"] == ORDER["goal"]
    assert goal["tags"] == ["order", "query"] and goal["result"] == "success" and goal["reward"] == 1.0
    assert goal["status"] == "active" and goal["version"] == 1 and goal["lineage"] == ["order-17"]
    assert memory.query("#order-17.actions").ids == ["order-17/0", "order-17/1", "order-17/2"]
    first = memory.node("order-17/0")
    assert first["name"] == "query_order" and first["content"] == "call the order API"
    assert first["args"] == {"order_id": "A1001"} and first["status"] == "done"
    assert memory.node("order-17/1")["condition"] == "api_return_ok"
    orders = [e["order"] for e in memory.export()["edges"] if e["from"] == "order-17" and e["type"] == "parent_of"]
    assert orders == [0, 1, 2]
    assert memory.query('#"order-17/0".next').ids == ["order-17/1"]
    assert memory.query('#"refund-3/0".next').ids == ["refund-3/1"]  # edges default to consecutive pairs
    assert memory.violations() == []


def test_ingest_under_a_scenario_creates_it_once_and_keeps_further_keys():
    memory = Memory()
    doc = dict(ORDER, channel="chat", type="support")
    memory.ingest([doc, REFUND], scenario="orders")
    assert memory.node("orders")["kind"] == "scenario"
    assert memory.query("#orders.subgoals").ids == ["order-17", "refund-3"]
    goal = memory.node("order-17")
    assert goal["scenario"] == "orders" and goal["channel"] == "chat" and goal["trajectory_type"] == "support"
    memory.ingest([HOTEL], scenario="orders")
    assert memory.query("#orders.subgoals").ids == ["order-17", "refund-3", "hotel-1"]


def test_malformed_lines_are_reported_with_line_numbers_and_nothing_is_ingested():
    text = "\n".join([
        json.dumps(ORDER),
        "{not json",
        "",
        json.dumps({"id": "x", "steps": []}),
        json.dumps({"id": "y", "steps": [{"name": "a"}], "edges": [[0, 5]]}),
        json.dumps(REFUND),
        json.dumps(dict(REFUND)),  # the same id again
        json.dumps({"id": "z", "steps": [{"name": "a", "status": "exploded"}]}),  # breaks the status schema
    ])
    docs, lines = read_jsonl(text)
    memory = Memory()
    with pytest.raises(PathError) as caught:
        memory.ingest(docs, lines=lines)
    found = [(p.line, p.category) for p in caught.value.report.problems]
    assert found == [(2, "invalid-json"), (4, "bad-trajectory"), (5, "bad-trajectory")]
    assert caught.value.problems[0].where == "line 2"
    assert memory.t == 0 and len(memory) == 0

    report = memory.ingest(docs, lines=lines, skip_invalid=True)
    assert report.ingested == ["order-17", "refund-3"] and report.t == 1
    assert [(p.line, p.category) for p in report.problems] == [
        (2, "invalid-json"), (4, "bad-trajectory"), (5, "bad-trajectory"), (7, "duplicate-id"),
        (8, "constraint-violation"),
    ]
    assert report.skipped == [2, 4, 5, 7, 8]
    assert memory.node("z") is None and memory.violations() == []


def test_graph_problems_refuse_the_whole_ingest_without_skip_invalid():
    memory = _memory()
    with pytest.raises(PathError) as caught:
        memory.ingest([dict(HOTEL, id="hotel-2"), ORDER, dict(REFUND, id="r9", replaces="nope")])
    assert [(p.line, p.category) for p in caught.value.report.problems] == [(2, "duplicate-id"), (3, "unknown-node")]
    assert memory.node("hotel-2") is None and memory.t == 1
    with pytest.raises(PathError) as caught:
        memory.ingest([dict(HOTEL, id="hotel-3")], scenario="order-17")
    assert caught.value.category == "bad-scenario"


@pytest.mark.skipif(not (TASKPLAN / "tmdb").is_dir(), reason="../shared/data/taskplan is absent")
def test_ingest_taskplan_reads_requests_with_tool_domains_as_tags(tmp_path):
    memory = Memory()
    report = memory.ingest_taskplan(TASKPLAN / "tmdb")
    assert len(report.ingested) == 100 and report.t == 1
    path = memory.path("tmdb-0")
    assert [s["name"] for s in path["steps"]] == ["SearchPeople", "GetPersonMovieCredit"]
    assert path["goal"].startswith("give me the number of movies")
    # UltraTool's tools have domains: a few requests, tags from graph_desc.json.
    ultra = TASKPLAN / "ultratool"
    rows = [json.loads(line) for line in (ultra / "data.json").open(encoding="utf-8").readlines()[:3]]
    report = memory.ingest_taskplan(ultra, ids=[str(r["id"]) for r in rows])
    assert len(report.ingested) == 3
    tags = memory.node(report.ingested[0]).get("tags")
    assert tags and all(isinstance(t, str) for t in tags)
    # A malformed request line is reported with its line number.
    folder = tmp_path / "bad"
    folder.mkdir()
    good = (TASKPLAN / "tmdb" / "data.json").open(encoding="utf-8").readline()
    (folder / "data.json").write_text(good + '{"id": 99, "user_request": "x"}\n{broken\n')
    with pytest.raises(PathError) as caught:
        Memory().ingest_taskplan(folder)
    assert [(p.line, p.category) for p in caught.value.report.problems] == [(2, "bad-trajectory"), (3, "invalid-json")]


# -- locate ----------------------------------------------------------------------------------------


def test_locate_ranks_the_right_path_with_every_score_component():
    memory = _memory()
    result = memory.locate("what is the status of my order A2002?", tags=["order"], k=3)
    best = result.matches[0]
    assert best.path == "order-17" and best.steps == ("query_order", "check_result", "notify_user")
    assert {"text", "tags", "structure", "reward", "version"} <= set(best.breakdown)
    doc = result.to_json()["matches"][0]
    assert {"path", "score", "goal", "steps", "breakdown"} <= set(doc)
    assert memory.locate("book a hotel room in Beijing").matches[0].path == "hotel-1"
    assert memory.locate("refund the damaged item", tags="refund").matches[0].path == "refund-3"


def test_paths_with_the_same_structure_are_merged_into_one_match():
    twin = dict(ORDER, id="order-18", goal="Where is order C3? Check its status and tell me")
    memory = _memory(ORDER, twin, REFUND)
    best = memory.locate("check the status of order D4", k=3).matches[0]
    assert set(best.supporting) == {"order-17", "order-18"} and best.paths_with_structure == 2
    ranked = [m.path for m in memory.locate("check the status of order D4", k=3).matches]
    assert ranked.count("order-17") + ranked.count("order-18") == 1 and best.path in ("order-17", "order-18")


def test_expansion_stays_inside_the_scenario_unless_asked():
    memory = Memory()
    # text recall finds one path only; expansion on (it is off by default)
    memory.path_memory.config = ScoreConfig(recall_paths=1, recall_steps=1, expand_limit=200)
    memory.ingest([ORDER, dict(REFUND, goal="Refund order A1001 status", id="r-a")], scenario="shop")
    memory.ingest([dict(REFUND, goal="Refund order A1001 status", id="r-b")], scenario="other-shop")
    # A shared entity links the two scenarios' paths.
    memory.apply({"ops": [
        {"op": "add_node", "id": "e_order", "type": "entity", "content": "order A1001"},
        {"op": "add_edge", "from": "order-17/0", "to": "e_order", "type": "related_to"},
        {"op": "add_edge", "from": "r-b/0", "to": "e_order", "type": "related_to"},
    ]})
    def found(result):
        return {p for m in result.matches for p in m.supporting}

    inside = memory.locate("check the status of order A1001", k=5)
    assert inside.recalled.get("expanded") == 1  # r-a, a sibling in the scenario
    assert found(inside) == {"order-17", "r-a"}
    across = memory.locate("check the status of order A1001", k=5, cross_scenario=True)
    assert found(across) == {"order-17", "r-a", "r-b"}
    assert found(memory.locate("refund status", k=5, scenario="other-shop")) == {"r-b"}


def test_locate_walks_the_graph_only_when_hops_are_asked_for():
    memory = Memory()
    memory.path_memory.config = ScoreConfig(recall_paths=1, recall_steps=1)  # the default: no expansion
    memory.ingest([ORDER, dict(REFUND, goal="Refund order A1001 status", id="r-a")], scenario="shop")
    assert "expanded" not in memory.locate("check the status of order A1001", k=5).recalled
    walked = memory.locate("check the status of order A1001", k=5, hops=2)
    assert walked.recalled.get("expanded") == 1   # r-a, the sibling under the scenario goal


def test_the_index_follows_commits_incrementally():
    memory = _memory()
    assert memory.locate("book a hotel room").matches[0].path == "hotel-1"
    builds = memory.path_metrics()["index"]["rebuilds"]
    memory.apply({"ops": [{"op": "delete_node", "id": "hotel-1", "cascade": True}]})
    assert "hotel-1" not in [m.path for m in memory.locate("book a hotel room").matches]
    memory.apply({"ops": [{"op": "update_node", "id": "refund-3", "set": {"content": "Book a hotel room in Paris"}}]})
    assert memory.locate("book a hotel room").matches[0].path == "refund-3"
    memory.apply({"ops": [{"op": "update_node", "id": "refund-3/1", "set": {"name": "reserve_room"}}]})
    assert memory.locate("book a hotel room").matches[0].steps == ("check_refund_policy", "reserve_room")
    memory.ingest([dict(HOTEL, id="hotel-9")])
    assert "hotel-9" in [m.path for m in memory.locate("book a hotel room near the Forbidden City").matches]
    index = memory.path_metrics()["index"]
    assert index["rebuilds"] == builds and index["incremental_commits"] == 4 and index["t"] == memory.t


# -- rewrite ---------------------------------------------------------------------------------------


def test_rewrite_creates_a_version_with_a_replaces_edge_lineage_and_reason():
    memory = _memory()
    report = memory.rewrite_path("order-17", [{"keep": 0}, {"add": {"name": "check_cache"}, "after": -1},
                                              {"change": 2, "step": {"content": "send a message"}}],
                                 "check the cache before calling the API", author="planner")
    assert report.committed and report.created == ("order-17@v2",)
    assert memory.commits()[-1].kind == "path-rewrite" and memory.commits()[-1].author == "planner"
    new = memory.path("order-17")
    assert new["id"] == "order-17@v2" and new["version"] == 2 and new["current"]
    assert new["lineage"] == ["order-17", "order-17@v2"] and new["replaces"] == "order-17"
    assert new["rewrite_reason"] == "check the cache before calling the API"
    assert [s["name"] for s in new["steps"]] == ["check_cache", "query_order", "check_result", "notify_user"]
    assert new["steps"][3]["content"] == "send a message" and new["steps"][1]["args"] == {"order_id": "A1001"}
    assert all(s["status"] == "pending" for s in new["steps"]) and new["tags"] == ["order", "query"]
    assert memory.query('#"order-17@v2".replaces').ids == ["order-17"]
    assert memory.frontier("order-17@v2") == ["order-17@v2/0"]
    old = memory.path("order-17@v1")
    assert old["id"] == "order-17" and old["status"] == "superseded" and old["reward"] == 0.5
    assert old["replaced_by"] == ["order-17@v2"] and not old["current"]
    assert [s["name"] for s in old["steps"]] == ["query_order", "check_result", "notify_user"]
    assert [v["id"] for v in new["versions"]] == ["order-17", "order-17@v2"]
    assert memory.violations() == []


def test_superseded_versions_rank_below_their_replacements():
    memory = _memory()
    memory.rewrite_path("order-17", {"steps": ["query_order", "notify_user"], "tags": ["order"]}, "shorter")
    result = memory.locate("check the status of order A1001 and tell the user", k=5)
    ranked = [m.path for m in result.matches]
    assert ranked.index("order-17@v2") < ranked.index("order-17")
    old = next(m for m in result.matches if m.path == "order-17")
    assert old.status == "superseded" and old.breakdown["version"] < 1


def test_bad_rewrites_change_nothing_and_say_why():
    memory = _memory()
    t = memory.t
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-99", ["a"], "x")
    assert caught.value.category == "unknown-path"
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-17/0", ["a"], "x")
    assert caught.value.category == "unknown-path" and "action" in caught.value.message
    for spec, where in ([], "steps"), ([{"keep": 9}], "ops[0]"), ([{"keep": 0}, "x"], "steps"), \
            ([{"remove": 0}, {"remove": 0}], "ops[1]"), ({"steps": ["a", "b"], "edges": [[0, 3]]}, "edges[0]"):
        with pytest.raises(PathError) as caught:
            memory.rewrite_path("order-17", spec, "x")
        assert caught.value.category == "bad-steps" and caught.value.problems[0].where == where
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-17", [{"keep": 0}], "same as before")
    assert caught.value.category == "no-change"
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-17", ["a"], "  ")
    assert caught.value.category == "bad-rewrite"
    assert memory.t == t
    # A rewrite that breaks a constraint: refused whole, every violation listed.
    memory.add_constraint("no_bare_notify", "each action where name = 'call_manager' must has(content)")
    before = memory.export()
    t = memory.t
    report = memory.rewrite_path("refund-3", [{"keep": 0}, {"add": {"name": "call_manager"}, "after": 1}], "ask")
    assert report.committed is False and report.t is None
    assert {v.constraint for v in report.violations} == {"no_bare_notify"}
    assert memory.t == t and memory.export() == before and memory.node("refund-3@v2") is None
    assert memory.path("refund-3")["status"] == "active"


def test_changing_a_step_to_have_no_name_is_refused():
    memory = _memory()
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-17", [{"change": 0, "step": {"name": None}}], "drop the name")
    assert caught.value.category == "bad-steps"


def test_only_the_current_version_can_be_rewritten():
    memory = _memory()
    memory.rewrite_path("order-17", ["query_order", "notify_user"], "shorter")
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-17@v1", ["a"], "from the old one")
    assert caught.value.category == "stale-version" and "order-17@v2" in caught.value.message
    memory.rewrite_path("order-17@v2", ["query_order", "check_cache", "notify_user"], "cache")
    assert memory.path("order-17")["id"] == "order-17@v3"
    assert memory.path("order-17")["lineage"] == ["order-17", "order-17@v2", "order-17@v3"]


def test_guards_cap_versions_and_rewrites():
    memory = _memory()
    memory.path_guards = PathGuards(max_versions=3, max_rewrites=10)
    memory.rewrite_path("order-17", ["a"], "one")
    memory.rewrite_path("order-17", ["b"], "two")
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-17", ["c"], "three")
    assert caught.value.category == "version-cap"
    memory.path_guards = PathGuards(max_versions=10, max_rewrites=2)
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-17", ["c"], "three")
    assert caught.value.category == "rewrite-cap"
    metrics = memory.path_metrics()
    assert metrics["rewrites"] == 2 and metrics["versions_per_lineage"] == {"order-17": 3}
    assert metrics["refusals"] == {"version-cap": 1, "rewrite-cap": 1}
    assert metrics["max_versions_in_a_lineage"] == 3 and metrics["paths"] == 3 and metrics["versions"] == 5


def test_consecutive_failed_rewrites_turn_the_path_needs_human():
    memory = _memory()
    memory.path_guards = PathGuards(max_failed_rewrites=2)
    memory.record_outcome("order-17", "failure")  # the original failing does not count
    assert memory.path("order-17")["failed_streak"] == 0
    memory.rewrite_path("order-17", ["a", "b"], "try a")
    memory.record_outcome("order-17", "failure")
    assert memory.path_metrics()["consecutive_failures"] == {"order-17": 1}
    memory.rewrite_path("order-17", ["a", "c"], "try c")
    memory.record_outcome("order-17", "success")  # a success resets the streak
    memory.record_outcome("order-17", "failure")
    assert memory.path("order-17")["needs_human"] is False
    memory.record_outcome("order-17", "failure")
    assert memory.path("order-17")["needs_human"] is True
    assert memory.path_metrics()["needs_human"] == ["order-17"]
    t = memory.t
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("order-17", ["a", "d"], "try d")
    assert caught.value.category == "needs-human" and memory.t == t
    memory.reset_path("order-17", reason="fixed the API key")
    assert memory.path("order-17")["needs_human"] is False and memory.path("order-17")["failed_streak"] == 0
    assert memory.rewrite_path("order-17", ["a", "d"], "try d").committed
    with pytest.raises(PathError) as caught:
        memory.reset_path("order-17")
    assert caught.value.category == "no-change"


def test_record_outcome_updates_reward_result_and_counters():
    memory = _memory()
    report = memory.record_outcome("order-17", "failure")
    assert report.committed and memory.commits()[-1].kind == "path-outcome"
    path = memory.path("order-17")
    assert path["reward"] == pytest.approx(0.7) and path["result"] == "failure" and path["failures"] == 1
    memory.record_outcome("order-17", "success", reward=0.5)
    path = memory.path("order-17")
    assert path["reward"] == pytest.approx(0.7 * 0.7 + 0.3 * 0.5) and path["successes"] == 1
    memory.rewrite_path("order-17", ["a"], "new")
    memory.record_outcome("order-17", "success")  # the lineage's id names its current version
    assert memory.path("order-17")["reward"] == 1.0 and memory.path("order-17@v1")["successes"] == 1
    memory.record_outcome("order-17@v1", "failure")  # a version id names that version
    assert memory.path("order-17@v1")["failures"] == 2
    with pytest.raises(PathError) as caught:
        memory.record_outcome("order-17", "meh")
    assert caught.value.category == "bad-outcome"
    with pytest.raises(PathError):
        memory.record_outcome("order-17", "success", reward=3)
    with pytest.raises(PathError) as caught:
        memory.record_outcome("nope", "success")
    assert caught.value.category == "unknown-path"


def test_rollback_makes_an_old_version_current_as_a_new_version():
    memory = _memory()
    memory.rewrite_path("order-17", ["query_order", "notify_user"], "shorter")
    memory.rewrite_path("order-17", ["notify_user"], "shortest")
    report = memory.rollback_path("order-17", 1, reason="v3 lost the check")
    assert report.committed and report.created == ("order-17@v4",)
    path = memory.path("order-17")
    assert path["id"] == "order-17@v4" and path["restored_from"] == "order-17"
    assert [s["name"] for s in path["steps"]] == ["query_order", "check_result", "notify_user"]
    assert path["lineage"] == ["order-17", "order-17@v2", "order-17@v3", "order-17@v4"]
    assert path["replaces"] == "order-17@v3" and path["rollback_count"] == 1 and path["rewrite_count"] == 2
    assert memory.path("order-17@v3")["status"] == "superseded"
    assert memory.query('#"order-17@v4/0".next').ids == ["order-17@v4/1"]
    assert memory.violations() == []  # replaces stays acyclic
    with pytest.raises(PathError) as caught:
        memory.rollback_path("order-17", 9)
    assert caught.value.category == "unknown-version"
    with pytest.raises(PathError) as caught:
        memory.rollback_path("order-17", "v4")
    assert caught.value.category == "no-change"
    assert memory.rollback_path("order-17", "order-17@v2").created == ("order-17@v5",)


def test_resolve_steps_documented_forms():
    old = [{"name": "a", "status": "done"}, {"name": "b"}]
    steps, edges, changes = resolve_steps(old, {"steps": ["x", {"name": "y", "type": "tool"}], "edges": [[1, 0]],
                                                "tags": ["t"], "goal": "new goal"})
    assert steps == [{"name": "x"}, {"name": "y", "step_type": "tool"}] and edges == [(1, 0)]
    assert changes == {"tags": ["t"], "content": "new goal"}
    steps, edges, _ = resolve_steps(old, [{"add": "z", "after": 0}, {"add": "w", "after": 0}, {"remove": 1}])
    assert [s["name"] for s in steps] == ["a", "z", "w"] and edges is None


# -- persistence -------------------------------------------------------------------------------------


def test_the_index_is_persisted_and_commits_after_its_t_are_replayed(tmp_path):
    db = tmp_path / "m.db"
    with Memory.open(db) as memory:
        memory.ingest([ORDER, REFUND])
        assert memory.locate("refund the damaged item").matches[0].path == "refund-3"
        assert memory.path_metrics()["index"]["source"] == "rebuilt"
        assert memory.save_index() == 1
    memory = Memory.open(db)
    assert memory.locate("refund the damaged item").matches[0].path == "refund-3"
    index = memory.path_metrics()["index"]
    assert index["source"] == "state" and index["rebuilds"] == 0 and index["replayed_commits"] == 0
    memory.ingest([HOTEL])  # after the saved t; not saved (fewer than save_every commits)
    memory.rewrite_path("refund-3", ["check_refund_policy", "ask_manager", "apply_refund"], "ask first")
    assert json.loads(memory.store.get_meta(INDEX_META_KEY))["t"] == 1
    memory.store.close()  # the process dies without Memory.close(): the index is not saved
    with Memory.open(db) as memory:
        assert memory.locate("book a hotel room").matches[0].path == "hotel-1"
        ranked = [m.path for m in memory.locate("refund the damaged item").matches]
        assert ranked.index("refund-3@v2") < ranked.index("refund-3")
        index = memory.path_metrics()["index"]
        assert index["source"] == "state" and index["rebuilds"] == 0 and index["replayed_commits"] == 2
        assert json.loads(memory.store.get_meta(INDEX_META_KEY))["t"] == 3  # saved after replaying
    with Memory.open(db) as memory:  # closed cleanly last time: nothing to replay
        memory.locate("book a hotel room")
        assert memory.path_metrics()["index"]["replayed_commits"] == 0


def test_an_unreadable_state_is_rebuilt_and_a_memory_that_never_used_paths_builds_lazily(tmp_path):
    db = tmp_path / "m.db"
    with Memory.open(db) as memory:
        memory.ingest([ORDER])
        assert "_path_memory" in memory.__dict__ and memory.path_metrics()["index"]["loaded"] is False
        memory.store.set_meta(INDEX_META_KEY, "{broken")
    with Memory.open(db) as memory:
        assert memory.locate("order status").matches[0].path == "order-17"
        index = memory.path_metrics()["index"]
        assert index["source"] == "rebuilt" and "unreadable" in index["last_error"]
    plain = Memory()
    plain.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    assert "_path_memory" not in plain.__dict__  # nothing listens until paths are used
    assert plain.locate("anything").matches == ()


def test_saves_every_n_commits_and_on_close_hook(tmp_path):
    db = tmp_path / "m.db"
    memory = Memory.open(db)
    memory.path_memory.save_every = 2
    memory.ingest([ORDER])
    memory.locate("order")  # builds (and saves) the index at t=1
    memory.record_outcome("order-17", "success")
    assert json.loads(memory.store.get_meta(INDEX_META_KEY))["t"] == 1
    memory.record_outcome("order-17", "success")
    assert json.loads(memory.store.get_meta(INDEX_META_KEY))["t"] == 3
    memory.record_outcome("order-17", "failure")
    memory.path_memory.close()  # what Memory.close does first
    assert json.loads(memory.store.get_meta(INDEX_META_KEY))["t"] == 4
    memory.close()


def test_commits_another_process_made_reach_the_index_on_refresh(tmp_path):
    db = tmp_path / "m.db"
    with Memory.open(db) as writer, Memory.open(db) as reader:
        writer.ingest([ORDER])
        reader.refresh()
        assert reader.locate("order status").matches[0].path == "order-17"
        writer.ingest([HOTEL])
        writer.rewrite_path("order-17", ["query_order", "notify_user"], "shorter")
        reader.refresh()
        assert reader.locate("book a hotel room").matches[0].path == "hotel-1"
        assert reader.path("order-17")["id"] == "order-17@v2"
        index = reader.path_metrics()["index"]
        assert index["rebuilds"] == 1 and index["incremental_commits"] == 2 and index["t"] == 3
