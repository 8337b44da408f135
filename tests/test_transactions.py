"""Transactions: ops in order, constraints once on the final state, all or nothing."""

from __future__ import annotations

import pytest

from hgm_engine import Memory
from hgm_engine.errors import ConflictError, TransactionError, TransactionRefused


@pytest.fixture
def memory(travel_graph_path) -> Memory:
    return Memory.from_file(travel_graph_path)


def test_ops_apply_in_order_and_each_sees_the_previous(memory):
    report = memory.apply(
        {
            "ops": [
                {"op": "add_node", "id": "a9", "type": "action", "parent": "day2", "status": "pending"},
                {"op": "update_node", "id": "a9", "set": {"status": "active"}},
                {"op": "add_edge", "from": "a9", "to": "e_temple", "type": "related_to"},
            ]
        }
    )
    assert report.committed and report.t == memory.t
    assert memory.node("a9")["status"] == "active"
    assert memory.query("#a9.related").ids == ["e_temple"]


def test_report_lists_net_changes_in_the_formats_shape(memory):
    report = memory.apply(
        {"author": "planner-1", "reason": "closed on Mondays", "ops": [
            {"op": "update_node", "id": "a_forbidden", "set": {"day": "Tue"}, "unset": ["slot"]}]}
    )
    doc = report.to_json()
    assert doc["committed"] is True and doc["author"] == "planner-1"
    assert doc["changes"] == [
        {"kind": "node_updated", "id": "a_forbidden", "before": {"day": "Mon", "slot": "afternoon"}, "after": {"day": "Tue"}}
    ]
    assert doc["violations"] == [] and doc["fired_rules"] == [] and doc["dirtied"] == []


def test_every_violation_is_reported_and_nothing_changes(memory):
    before = memory.export()
    t = memory.t
    report = memory.apply(
        {"ops": [
            {"op": "add_node", "id": "lost", "type": "action"},                      # no parent
            {"op": "add_node", "id": "r_x", "type": "result"},                       # produced by nothing
            {"op": "add_edge", "from": "day3", "to": "day1", "type": "before"},      # a cycle
            {"op": "update_node", "id": "a_wall2", "set": {"status": "sideways"}},   # not a status
            {"op": "add_edge", "from": "f_closed", "to": "a_hotel", "type": "produces"},  # fact cannot produce
        ]}
    )
    assert not report.committed and report.t is None
    assert {(v.constraint, v.node) for v in report.violations} == {
        ("action_has_one_parent", "lost"),
        ("result_is_produced", "r_x"),
        ("before_acyclic", "day3"),
        ("action_attributes", "a_wall2"),
        ("produces_endpoints", "f_closed"),
    }
    assert memory.export() == before and memory.t == t


def test_transaction_block_raises_refused_with_the_report(memory):
    with pytest.raises(TransactionRefused) as caught:
        with memory.transaction(author="me") as tx:
            tx.add_node("action", id="orphan")
    assert caught.value.report.violations[0].constraint == "action_has_one_parent"
    assert memory.node("orphan") is None


def test_exception_inside_the_block_drops_every_op(memory):
    t = memory.t
    with pytest.raises(RuntimeError):
        with memory.transaction() as tx:
            tx.add_node("goal", id="g_new")
            raise RuntimeError("planner crashed")
    assert memory.node("g_new") is None and memory.t == t


def test_reads_inside_a_transaction_see_its_own_changes_others_do_not(memory):
    with memory.transaction() as tx:
        tx.add_node("action", id="a_new", parent="day3", status="pending")
        assert "a_new" in tx.query("#day3.actions").ids
        assert "a_new" not in memory.query("#day3.actions").ids
    assert "a_new" in memory.query("#day3.actions").ids


def test_malformed_op_names_the_op_and_applies_nothing(memory):
    before = memory.export()
    with pytest.raises(TransactionError) as caught:
        memory.apply({"ops": [
            {"op": "add_node", "id": "ok", "type": "goal"},
            {"op": "update_node", "id": "nope", "set": {"a": 1}},
        ]})
    assert caught.value.category == "unknown-node"
    assert caught.value.problems[0].where == "ops[1]"
    assert memory.export() == before


@pytest.mark.parametrize(
    "bad, category",
    [
        ({"ops": [{"op": "teleport"}]}, "invalid-transaction"),
        ({"ops": [{"op": "add_edge", "from": "trip"}]}, "invalid-transaction"),
        ({"ops": [{"op": "add_node", "type": "plac"}]}, "unknown-name"),
        ({"ops": [{"op": "add_node", "id": "trip", "type": "goal"}]}, "duplicate-id"),
        ({"ops": [{"op": "delete_edge", "from": "trip", "to": "day1", "type": "before"}]}, "unknown-edge"),
        ({"ops": "not a list"}, "invalid-transaction"),
        ({"ops": [], "base_t": "yesterday"}, "invalid-transaction"),
    ],
)
def test_malformed_transactions_are_rejected_with_a_category(memory, bad, category):
    with pytest.raises(TransactionError) as caught:
        memory.apply(bad)
    assert caught.value.category == category


def test_delete_without_cascade_is_refused_when_children_would_be_orphaned(memory):
    report = memory.apply({"ops": [{"op": "delete_node", "id": "day1", "cascade": False}]})
    assert not report.committed
    assert ("delete_leaves_orphans", "day1") in {(v.constraint, v.node) for v in report.violations}


def test_delete_with_cascade_removes_the_subtree_and_its_edges(memory):
    report = memory.apply({"ops": [
        {"op": "delete_node", "id": "r_hotel"},
        {"op": "delete_node", "id": "day1", "cascade": True},
    ]})
    assert report.committed, report.to_json()
    for gone in ("day1", "a_forbidden", "a_hotel", "a_dinner", "a_search", "a_pay"):
        assert memory.node(gone) is None
    assert memory.query("#e_hotel.related").ids == ["f_price"]


def test_replace_branch_swaps_a_subtree_in_one_op(memory):
    report = memory.apply({"ops": [
        {"op": "replace_branch", "id": "day3", "set": {"content": "Day 3 (revised)"}, "with": [
            {"id": "a_summer", "type": "action", "content": "Summer Palace", "status": "pending",
             "edges": [{"to": "e_temple", "type": "related_to"}],
             "children": [{"id": "a_boat", "type": "action", "content": "Boat ride", "status": "pending"}]},
        ]},
    ]})
    assert report.committed, report.to_json()
    assert memory.query("#day3.descendants").ids == ["a_summer", "a_boat"]
    assert memory.node("a_wall") is None and memory.node("a_wall2") is None
    assert memory.node("day3")["content"] == "Day 3 (revised)"
    assert memory.query("#a_summer.related").ids == ["e_temple"]


def test_dry_run_reports_without_committing(memory):
    before = memory.export()
    report = memory.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"status": "done"}}]}, dry_run=True)
    assert report.dry_run and not report.committed and report.changes
    assert memory.export() == before


def test_base_t_conflict_when_a_later_commit_touched_the_same_node(memory):
    base = memory.t
    memory.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"status": "active"}}]})
    with pytest.raises(ConflictError) as caught:
        memory.apply({"base_t": base, "ops": [{"op": "update_node", "id": "a_temple", "set": {"status": "done"}}]})
    assert caught.value.category == "conflict"
    assert memory.node("a_temple")["status"] == "active"


def test_base_t_without_overlap_commits(memory):
    base = memory.t
    memory.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"status": "active"}}]})
    report = memory.apply({"base_t": base, "ops": [{"op": "update_node", "id": "q_order", "set": {"note": "x"}}]})
    assert report.committed


def test_user_constraint_in_the_path_language_is_enforced(memory):
    memory.add_constraint("done_has_result", "each action where status = 'done' and has(day) must exists(results)")
    report = memory.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"status": "done"}}]})
    assert [(v.constraint, v.node) for v in report.violations] == [("done_has_result", "a_temple")]
    report = memory.apply({"ops": [
        {"op": "update_node", "id": "a_temple", "set": {"status": "done"}},
        {"op": "add_node", "id": "r_temple", "type": "result"},
        {"op": "add_edge", "from": "a_temple", "to": "r_temple", "type": "produces"},
    ]})
    assert report.committed


def test_user_constraint_must_hold_when_added(memory):
    with pytest.raises(TransactionRefused) as caught:
        memory.add_constraint("all_done", "each action must status = 'done'")
    assert {v.node for v in caught.value.report.violations} >= {"a_forbidden", "a_dinner"}
    assert memory.constraints() == {}


def test_user_constraint_with_a_syntax_error_shows_where(memory):
    from hgm_engine import HGMError

    with pytest.raises(HGMError) as caught:
        memory.add_constraint("bad", "each action must")
    assert caught.value.category == "syntax"
    with pytest.raises(HGMError) as caught:
        memory.add_constraint("bad", "each acton must has(status)")
    assert caught.value.category == "unknown-name" and "did you mean 'action'" in caught.value.message


def test_incremental_check_rechecks_the_neighbourhood(memory):
    memory.add_constraint("goal_has_work", "each goal where status = 'pending' must count(actions) >= 1")
    # Removing day2's only action breaks the constraint on day2, one hop away.
    report = memory.apply({"ops": [{"op": "delete_node", "id": "a_temple"}]})
    assert ("goal_has_work", "day2") in {(v.constraint, v.node) for v in report.violations}


def test_loading_a_graph_that_breaks_a_constraint_loads_nothing():
    from hgm_engine import GraphFileError

    doc = {"format": "hgm-graph/1", "nodes": [{"id": "a", "type": "action"}], "edges": []}
    with pytest.raises(GraphFileError) as caught:
        Memory.from_document(doc)
    assert caught.value.problems[0].where == "a"


def test_commit_inside_the_block_ends_it_without_error(memory):
    with memory.transaction() as tx:
        tx.add_node("goal", id="g_early")
        tx.commit()
    assert memory.node("g_early") is not None
    with memory.transaction() as tx:
        tx.add_node("goal", id="g_dropped")
        tx.rollback()
    assert memory.node("g_dropped") is None


def test_generated_ids_stay_the_same_when_another_commit_lands_first(memory):
    with memory.transaction() as tx:
        new_goal = tx.add_node("goal", content="generated")
        new_action = tx.add_node("action", parent=new_goal, status="pending")
        memory.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"note": "meanwhile"}}]})
    assert memory.node(new_goal)["content"] == "generated"
    assert memory.query("#$g.actions", params={"g": new_goal}).ids == [new_action]


def test_cascade_keeps_a_descendant_that_has_another_parent():
    m = Memory()
    m.apply({"ops": [
        {"op": "add_node", "id": "g1", "type": "goal"},
        {"op": "add_node", "id": "g2", "type": "goal"},
        {"op": "add_node", "id": "shared", "type": "goal", "parent": "g1"},
        {"op": "add_edge", "from": "g2", "to": "shared", "type": "parent_of"},
        {"op": "add_node", "id": "only_g1", "type": "action", "parent": "g1"},
    ]})
    report = m.apply({"ops": [{"op": "delete_node", "id": "g1", "cascade": True}]})
    assert report.committed
    assert m.node("shared") is not None and m.node("only_g1") is None
    assert m.query("#shared.parent").ids == ["g2"]


def test_orphans_are_judged_on_the_final_state_not_op_order():
    m = Memory()
    m.apply({"ops": [
        {"op": "add_node", "id": "g1", "type": "goal"},
        {"op": "add_node", "id": "g2", "type": "goal"},
        {"op": "add_node", "id": "s", "type": "goal", "parent": "g1"},
    ]})
    report = m.apply({"ops": [
        {"op": "delete_node", "id": "g1"},
        {"op": "add_edge", "from": "g2", "to": "s", "type": "parent_of"},
    ]})
    assert report.committed, report.to_json()


def test_staleness_marks_are_reserved_for_rules(memory):
    with pytest.raises(TransactionError) as caught:
        memory.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"dirty": "blocked"}}]})
    assert caught.value.category == "invalid-transaction"
