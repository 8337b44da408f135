"""Path index and locate: scoring, merging, versions, templates, incremental updates, state."""

from __future__ import annotations

import json

import attrs
import pytest

from hgm_engine.errors import HGMError
from hgm_engine.paths.localize import COMPONENTS, PathIndex, PathRecord, ScoreConfig, Step
from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.scoring import combine, order_agreement, sequence_similarity, support


def order_paths() -> list[PathRecord]:
    return [
        PathRecord.create("order-1", "Check the status of order A1001 and tell the user",
                          [Step("query_order", "call the order API"), Step("notify_user", "tell the user")],
                          tags=["order", "query"], result="success", reward=1.0),
        PathRecord.create("order-2", "What is the status of my order B77? tell me",
                          [Step("query_order", "query the order"), Step("notify_user", "notify the user")],
                          tags=["order"], result="success", reward=1.0),
        PathRecord.create("refund-1", "Refund order A1001, the parcel arrived broken",
                          [Step("check_refund_policy", "check the refund policy"),
                           Step("apply_refund", "apply for the refund")],
                          tags=["order", "refund"], result="success", reward=1.0),
    ]


def test_paths_with_the_same_structure_merge_into_one_match_listing_its_supporters():
    index = PathIndex.from_records(order_paths())
    matches = index.locate("status of order C3, please tell me", k=5).matches
    first = matches[0]
    assert first.steps == ("query_order", "notify_user")
    assert set(first.supporting) == {"order-1", "order-2"}
    assert first.paths_with_structure == 2
    assert [m.steps for m in matches].count(("query_order", "notify_user")) == 1


def test_without_merging_every_path_is_its_own_match():
    index = PathIndex.from_records(order_paths(), config=ScoreConfig(merge=False))
    matches = index.locate("status of order C3, please tell me", k=5).matches
    assert {m.path for m in matches} >= {"order-1", "order-2"}
    assert all(len(m.supporting) == 1 for m in matches)


def test_every_score_component_is_in_the_breakdown():
    index = PathIndex.from_records(order_paths())
    match = index.locate("status of order C3", tags=["order"], k=1).matches[0]
    assert set(match.breakdown) == set(COMPONENTS) | {"version"}
    assert all(0.0 <= v <= 1.0 for v in match.breakdown.values())
    components = {k: v for k, v in match.breakdown.items() if k != "version"}
    assert match.score == pytest.approx(combine(components, match.status, index.config))


def test_match_json_has_the_keys_of_the_localization_result_format():
    index = PathIndex.from_records(order_paths())
    doc = index.locate("status of order C3", k=1).to_json()
    match = doc["matches"][0]
    assert {"path", "score", "goal", "steps", "breakdown"} <= set(match)
    json.dumps(doc)


def test_a_superseded_version_ranks_below_its_replacement_even_when_its_text_is_closer():
    old = PathRecord.create("refund-v1", "refund a broken parcel for order A1001 quickly",
                            ["apply_refund"], result="failure", status="superseded")
    new = PathRecord.create("refund-v2", "refund a parcel", ["check_refund_policy", "apply_refund"],
                            version=2, replaces="refund-v1", result="success")
    index = PathIndex.from_records([old, new])
    paths = index.locate("refund a broken parcel for order A1001 quickly", k=5).paths
    assert paths.index("refund-v2") < paths.index("refund-v1")


def test_a_path_another_path_replaces_counts_as_superseded_even_if_not_marked():
    old = PathRecord.create("v1", "reset the router", ["reboot"])
    new = PathRecord.create("v2", "reset the router firmware", ["flash", "reboot"], replaces="v1", version=2)
    index = PathIndex.from_records([old, new])
    assert index.effective_status("v1") == "superseded"
    match = {m.path: m for m in index.locate("reset the router", k=5).matches}["v1"]
    assert match.breakdown["version"] == index.config.version_superseded


def test_a_failed_path_ranks_below_an_active_one_with_the_same_text():
    failed = PathRecord.create("f", "sync the calendar with the server", ["sync_a"], status="failed")
    active = PathRecord.create("a", "sync the calendar with the server", ["sync_b"])
    index = PathIndex.from_records([failed, active])
    assert index.locate("sync the calendar with the server", k=2).paths == ["a", "f"]


def test_templates_surface_only_when_nothing_else_matches():
    template = PathRecord.template("tpl", "a call times out: retry once, then fall back", ["retry", "fallback"])
    index = PathIndex.from_records([template])
    assert index.locate("the payment call times out").paths == ["tpl"]
    index.add(PathRecord.create("real", "payment call times out at checkout", ["retry", "alert_oncall"]))
    assert index.locate("the payment call times out").paths == ["real"]
    assert index.locate("no word in common whatsoever").paths == []


def test_adding_removing_and_updating_paths_changes_what_is_located():
    index = PathIndex()
    assert index.locate("book a flight").matches == ()
    index.add(PathRecord.create("f", "book a flight to Paris", ["flight_search", "book_flight"]))
    assert index.locate("book a flight").paths == ["f"]
    index.update(PathRecord.create("f", "rent a car in Paris", ["car_search", "car_rent"]))
    assert index.locate("book a flight").paths == []
    assert index.locate("rent a car").paths == ["f"]
    assert index.remove("f").goal == "rent a car in Paris"
    assert len(index) == 0 and index.locate("rent a car").paths == []


def test_removing_then_adding_back_restores_the_same_results():
    # Re-adding makes the path the newest: freshness and tie order among supporters may move.
    index = PathIndex.from_records(order_paths(), config=ScoreConfig(w_freshness=0.0))

    def summary():
        return [(m.path if len(m.supporting) == 1 else None, round(m.score, 9), m.steps,
                 sorted(m.supporting)) for m in index.locate("status of order C3", ["order"], 3).matches]

    before = summary()
    index.add(index.remove("order-2"))
    assert summary() == before


def test_unknown_and_duplicate_ids_are_refused_with_their_categories():
    index = PathIndex.from_records(order_paths())
    with pytest.raises(LocalizationError) as unknown:
        index.remove("nope")
    assert unknown.value.category == "unknown-path"
    with pytest.raises(HGMError) as duplicate:
        index.add(order_paths()[0])
    assert duplicate.value.category == "duplicate-path"
    assert len(index) == 3


def test_a_batch_with_a_duplicate_adds_nothing():
    index = PathIndex()
    path = PathRecord.create("p", "g", ["a"])
    with pytest.raises(LocalizationError):
        index.add_many([path, path])
    assert len(index) == 0


def test_state_is_json_and_restores_an_index_that_locates_the_same():
    index = PathIndex.from_records(order_paths(), config=ScoreConfig(w_tags=0.5))
    state = json.loads(json.dumps(index.to_state()))
    restored = PathIndex.from_state(state)
    assert restored.ids() == index.ids()
    assert restored.config == index.config
    query = ("status of order C3", ["order"])
    assert restored.locate(*query).to_json() == index.locate(*query).to_json()


def test_a_state_of_another_format_is_refused():
    with pytest.raises(LocalizationError) as err:
        PathIndex.from_state({"format": "something-else"})
    assert err.value.category == "bad-state"


def test_tags_alone_recall_tagged_paths():
    index = PathIndex.from_records(order_paths())
    matches = index.locate("", tags=["refund"]).matches
    assert [m.path for m in matches] == ["refund-1"]
    assert matches[0].breakdown["tags"] == pytest.approx(0.5)


def test_a_scenario_query_never_crosses_into_another_scenario_unless_asked():
    index = PathIndex.from_records([
        PathRecord.create("home", "turn on the lights", ["lights_on"], scenario="home"),
        PathRecord.create("office", "turn on the lights", ["office_lights_on"], scenario="office"),
        PathRecord.create("global", "turn on the lights please", ["generic_lights_on"]),
    ])
    assert set(index.locate("turn on the lights", scenario="home").paths) == {"home", "global"}
    assert set(index.locate("turn on the lights", scenario="home", cross_scenario=True).paths) == {
        "home", "office", "global"}


def test_an_expander_receives_the_entry_paths_and_adds_candidates():
    index = PathIndex.from_records(order_paths() + [
        PathRecord.create("linked", "escalate to a human agent", ["handoff_to_agent"]),
    ])
    seen = []

    def expand(entry_ids):
        seen.extend(entry_ids)
        return ["linked"]

    on = ScoreConfig(expand_limit=200)   # expansion is off by default (test below)
    without = index.locate("status of order C3", k=10, config=on).paths
    with_expansion = index.locate("status of order C3", k=10, expand=expand, config=on)
    assert "linked" not in without
    assert "order-1" in seen
    assert with_expansion.recalled["expanded"] == 1
    assert "linked" in with_expansion.paths or with_expansion.recalled["candidates"] > len(without)


def test_the_shared_step_expander_reaches_other_structures_through_a_common_step():
    index = PathIndex.from_records([
        PathRecord.create("a", "book a flight to Paris", ["flight_search", "book_flight"]),
        PathRecord.create("b", "zzz", ["flight_search", "send_sms"]),
    ])
    assert index.shared_step_expander()(["a"]) == ["b"]


def test_expected_steps_decide_the_structure_component():
    index = PathIndex.from_records(order_paths())
    match = index.locate("order status", steps=["query_order", "notify_user"], k=1).matches[0]
    assert match.breakdown["structure"] == 1.0


def test_the_request_order_of_steps_favours_the_path_in_that_order():
    steps_a = [Step("cancel_alarm", "cancel the alarm"), Step("set_alarm", "set an alarm")]
    index = PathIndex.from_records([
        PathRecord.create("cancel-then-set", "cancel my alarm and set a new alarm", steps_a),
        PathRecord.create("set-then-cancel", "set a new alarm and cancel my alarm", steps_a[::-1]),
    ])
    first = index.locate("please cancel the 7 am alarm, then set an alarm for 8", k=2).matches
    assert first[0].path == "cancel-then-set"
    assert first[0].breakdown["structure"] > first[1].breakdown["structure"]


def test_k_must_be_positive():
    with pytest.raises(LocalizationError) as err:
        PathIndex().locate("x", k=0)
    assert err.value.category == "bad-query"


def test_records_round_trip_through_trajectory_json():
    record = PathRecord.create("p", "g", [Step("a", "do a", {"args": {"x": 1}}), "b", "c"],
                               edges=[(0, 1), (0, 2)], tags=["t"], result="pending", reward=0.5,
                               status="failed", version=3, replaces="p0", scenario="s")
    assert PathRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert record.structure_key == "a ; b ; c | 0>1,0>2"
    assert record.completeness() == pytest.approx(1 / 3)


@pytest.mark.parametrize("bad", [
    {"steps": [], "goal": "g", "id": "x"},
    {"steps": ["a"], "goal": "g", "id": "x", "status": "zombie"},
    {"steps": ["a", "b"], "goal": "g", "id": "x", "edges": [[0, 5]]},
    {"steps": ["a"], "goal": "g", "id": "x", "result": "maybe"},
    {"steps": [{"content": "no name"}], "goal": "g", "id": "x"},
])
def test_malformed_trajectories_are_refused_as_bad_path(bad):
    with pytest.raises(LocalizationError) as err:
        PathRecord.from_trajectory(bad)
    assert err.value.category == "bad-path"


def test_support_rewards_several_close_supporters_over_one():
    assert support([0.8, 0.8, 0.8], 3, 2.0) > support([0.8], 3, 2.0)
    assert support([0.9], 1, 2.0) == pytest.approx(0.81)


def test_order_agreement_and_sequence_similarity_bounds():
    assert order_agreement([1.0, 2.0, 3.0], [(0, 1), (1, 2), (0, 2)]) == 1.0
    assert order_agreement([3.0, 2.0, 1.0], [(0, 1), (1, 2), (0, 2)]) == 0.0
    assert sequence_similarity(["a", "b"], ["a", "b"]) == 1.0
    assert sequence_similarity(["a"], ["b"]) == 0.0


def test_switching_a_component_off_gives_it_no_weight():
    config = attrs.evolve(ScoreConfig(), use_tags=False, use_structure=False, use_steps=False)
    weights = config.weights()
    assert weights["tags"] == weights["structure"] == weights["steps"] == 0.0


def test_without_numpy_the_index_locates_exactly_the_same(monkeypatch):
    import hgm_engine.paths.localize.postings as postings_module

    records = order_paths() + [PathRecord.create("x", "tell me the weather", ["weather"])]
    query = ("status of order C3, tell me", ["order"])
    with_numpy = PathIndex.from_records(records).locate(*query, k=5).to_json()
    monkeypatch.setattr(postings_module, "numpy_module", lambda: None)
    plain_index = PathIndex.from_records(records)
    assert plain_index.contents.text.np is None and plain_index.contents.steps.np is None
    plain_index.add(plain_index.remove("order-1"))
    assert plain_index.locate(*query, k=5).paths == [m["path"] for m in with_numpy["matches"]]
    scores = [m.score for m in plain_index.locate(*query, k=5).matches]
    assert scores == pytest.approx([m["score"] for m in with_numpy["matches"]], abs=1e-4)


def test_graph_expansion_is_off_by_default():
    index = PathIndex.from_records(order_paths())
    called = []
    result = index.locate("status of order C3", k=10, expand=lambda ids: called.append(ids) or [])
    assert ScoreConfig().expand_limit == 0
    assert called == [] and "expanded" not in result.recalled


def flight_paths() -> list[PathRecord]:
    """Three requests that searched, booked and changed a flight, and one look-alike that only
    searched and booked (the closest single request to the query below)."""
    changed = [Step("flight_search", "search flights"), Step("book_flight", "book the flight"),
               Step("flight_ticket_changing", "change the ticket")]
    return [
        PathRecord.create("c1", "book flight CA1 to Beijing then change it to next day", changed, result="success"),
        PathRecord.create("c2", "book a flight to Beijing, later change the ticket date", changed, result="success"),
        PathRecord.create("c3", "book a Beijing flight and change the flight time", changed, result="success"),
        PathRecord.create("b1", "book flight CA1 to Beijing tomorrow morning please",
                          [Step("flight_search", "search flights"), Step("book_flight", "book it")],
                          result="success"),
    ]


def test_the_vote_component_credits_the_steps_the_similar_requests_took():
    index = PathIndex.from_records(flight_paths())
    config = ScoreConfig(w_vote=1.0)
    matches = index.locate("book flight CA1 to Beijing tomorrow and change it", k=2, config=config).matches
    votes = {m.steps: m.breakdown["vote"] for m in matches}
    full, short = ("flight_search", "book_flight", "flight_ticket_changing"), ("flight_search", "book_flight")
    # Every neighbour booked a flight, three of four also changed it: leaving the change out costs.
    assert votes[full] > votes[short] > 0


def test_with_the_vote_off_its_component_is_zero_and_weighs_nothing():
    index = PathIndex.from_records(flight_paths())
    match = index.locate("book a flight and change it", k=1, config=ScoreConfig(w_vote=0.0)).matches[0]
    assert match.breakdown["vote"] == 0.0 and ScoreConfig(w_vote=0.0).weights()["vote"] == 0.0


def test_the_order_component_is_the_share_of_paths_with_those_steps_that_follow_that_order():
    records = [PathRecord.create(f"s{i}", "search then book a flight", ["flight_search", "book_flight"])
               for i in range(3)]
    records.append(PathRecord.create("r1", "book then search a flight", ["book_flight", "flight_search"]))
    index = PathIndex.from_records(records)
    config = ScoreConfig(w_order=1.0)
    orders = {m.steps: m.breakdown["order"] for m in index.locate("search and book a flight", k=5, config=config).matches}
    assert orders == {("flight_search", "book_flight"): 0.75, ("book_flight", "flight_search"): 0.25}
    index.remove("s0")
    orders = {m.steps: m.breakdown["order"] for m in index.locate("search and book a flight", k=5, config=config).matches}
    assert orders[("book_flight", "flight_search")] == pytest.approx(1 / 3)
