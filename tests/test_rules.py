"""Memory rules: the rule language, triggers, propagation, marks and their clearing."""

from __future__ import annotations

import pytest

from hgm_engine import HGMError, Memory, RuleError, parse_rules


def trip() -> Memory:
    """A three-day Beijing plan: each day's sightseeing is its own branch."""
    m = Memory()
    m.apply({"author": "planner", "reason": "initial plan", "ops": [
        {"op": "add_node", "id": "trip", "type": "goal", "content": "3 days in Beijing, hotel near Wangfujing", "status": "active"},
        {"op": "add_node", "id": "day1", "type": "goal", "parent": "trip", "order": 0, "content": "Monday", "day": "Mon"},
        {"op": "add_node", "id": "day2", "type": "goal", "parent": "trip", "order": 1, "content": "Tuesday", "day": "Tue"},
        {"op": "add_node", "id": "mon_sights", "type": "goal", "parent": "day1", "content": "Monday sightseeing"},
        {"op": "add_node", "id": "a_forbidden", "type": "action", "parent": "mon_sights", "content": "Visit the Forbidden City", "status": "pending", "day": "Mon"},
        {"op": "add_node", "id": "tue_sights", "type": "goal", "parent": "day2", "content": "Tuesday sightseeing"},
        {"op": "add_node", "id": "a_temple", "type": "action", "parent": "tue_sights", "content": "Visit the Temple of Heaven", "status": "pending", "day": "Tue"},
        {"op": "add_node", "id": "a_hotel", "type": "action", "parent": "day1", "content": "Book a hotel near Wangfujing", "status": "done"},
        {"op": "add_node", "id": "a_dinner", "type": "action", "parent": "day1", "content": "Dinner near the hotel", "status": "pending"},
        {"op": "add_node", "id": "e_forbidden", "type": "entity", "content": "Forbidden City"},
        {"op": "add_node", "id": "e_temple", "type": "entity", "content": "Temple of Heaven"},
        {"op": "add_node", "id": "f_price", "type": "fact", "content": "Beijing Hotel costs 800 CNY a night"},
        {"op": "add_node", "id": "r_hotel", "type": "result", "content": "Booked Beijing Hotel"},
        {"op": "add_edge", "from": "a_forbidden", "to": "e_forbidden", "type": "related_to"},
        {"op": "add_edge", "from": "a_temple", "to": "e_temple", "type": "related_to"},
        {"op": "add_edge", "from": "a_hotel", "to": "r_hotel", "type": "produces"},
        {"op": "add_edge", "from": "r_hotel", "to": "f_price", "type": "derived_from"},
        {"op": "add_edge", "from": "a_dinner", "to": "r_hotel", "type": "derived_from"},
    ]})
    return m


TRAVEL_RULES = """
// A closure fact blocks the pending visits of the place it is about.
rule closure_blocks_visits: on add fact where content =~ 'closed on Mondays'
    then mark related_entities.related.where(type = 'action', status = 'pending', day = 'Mon')
         as blocked because 'the place is closed on Mondays'
// What was derived from a changed fact needs review.
propagate derived_from backward depth 3
constraint one_hotel: each goal where has(day) must count(children) >= 1
"""


def test_travel_scenario_end_to_end():
    m = trip()
    m.load_rules(TRAVEL_RULES, name="travel")
    assert m.frontier("trip") == ["a_dinner", "a_forbidden", "a_temple"]  # breadth-first

    # The closure fact blocks the Monday visit through the rule, and the frontier drops it.
    report = m.apply({"author": "planner", "reason": "learned a closure", "ops": [
        {"op": "add_node", "id": "f_closed", "type": "fact", "content": "The Forbidden City is closed on Mondays"},
        {"op": "add_edge", "from": "f_closed", "to": "e_forbidden", "type": "related_to"},
    ]})
    assert report.fired_rules == ("closure_blocks_visits",)
    assert [d["id"] for d in report.dirtied] == ["a_forbidden"]
    assert report.dirtied[0]["state"] == "blocked" and report.dirtied[0]["because"] == ["f_closed"]
    assert m.frontier("trip") == ["a_dinner", "a_temple"]
    assert m.stale()[0]["marks"][0]["rule"] == "closure_blocks_visits"
    before_swap = m.t

    # One transaction swaps the days' sightseeing with replace_branch.
    report = m.apply({"author": "planner", "reason": "swap Monday and Tuesday visits", "ops": [
        {"op": "replace_branch", "id": "mon_sights", "with": [
            {"id": "a_temple_mon", "type": "action", "content": "Visit the Temple of Heaven", "status": "pending", "day": "Mon",
             "edges": [{"to": "e_temple", "type": "related_to"}]}]},
        {"op": "replace_branch", "id": "tue_sights", "with": [
            {"id": "a_forbidden_tue", "type": "action", "content": "Visit the Forbidden City", "status": "pending", "day": "Tue",
             "edges": [{"to": "e_forbidden", "type": "related_to"}]}]},
    ]})
    assert report.committed and not report.violations and m.violations() == []
    changed = {(c["kind"], c.get("id") or (c["from"], c["to"], c["type"])) for c in m.diff(before_swap, m.t)}
    assert changed == {
        ("node_removed", "a_forbidden"), ("node_removed", "a_temple"),
        ("node_added", "a_temple_mon"), ("node_added", "a_forbidden_tue"),
        ("edge_removed", ("mon_sights", "a_forbidden", "parent_of")),
        ("edge_removed", ("tue_sights", "a_temple", "parent_of")),
        ("edge_removed", ("a_forbidden", "e_forbidden", "related_to")),
        ("edge_removed", ("a_temple", "e_temple", "related_to")),
        ("edge_added", ("mon_sights", "a_temple_mon", "parent_of")),
        ("edge_added", ("tue_sights", "a_forbidden_tue", "parent_of")),
        ("edge_added", ("a_temple_mon", "e_temple", "related_to")),
        ("edge_added", ("a_forbidden_tue", "e_forbidden", "related_to")),
    }
    assert m.frontier("trip") == ["a_dinner", "a_temple_mon", "a_forbidden_tue"]

    # The hotel price changes: what was derived from it needs review, along derived_from.
    report = m.apply({"reason": "price update", "ops": [
        {"op": "update_node", "id": "f_price", "set": {"content": "Beijing Hotel costs 950 CNY a night"}}]})
    assert {d["id"]: d["state"] for d in report.dirtied} == {"r_hotel": "needs_review", "a_dinner": "needs_review"}
    assert "a_dinner" not in m.frontier("trip")
    report = m.confirm("a_dinner", reason="dinner budget still fine")
    assert report.cleared == ({"id": "a_dinner", "state": "needs_review", "by": "confirm"},)
    assert "a_dinner" in m.frontier("trip")
    assert [s["id"] for s in m.stale()] == ["r_hotel"]


def test_user_update_of_a_marked_node_clears_its_marks():
    m = trip()
    m.load_rules("propagate derived_from backward depth 1")
    m.apply({"ops": [{"op": "update_node", "id": "f_price", "set": {"currency": "CNY"}}]})
    assert [s["id"] for s in m.stale()] == ["r_hotel"]
    report = m.apply({"ops": [{"op": "update_node", "id": "r_hotel", "set": {"content": "Rebooked"}}]})
    assert report.cleared[0]["by"] == "update"
    assert m.stale() == [] or [s["id"] for s in m.stale()] == ["a_dinner"]  # the update itself propagates


def test_propagation_stops_at_its_depth():
    m = trip()
    m.load_rules("propagate derived_from backward depth 1")
    report = m.apply({"ops": [{"op": "update_node", "id": "f_price", "set": {"currency": "CNY"}}]})
    assert [d["id"] for d in report.dirtied] == ["r_hotel"]


def test_set_effects_fire_update_rules_in_later_rounds_in_order():
    m = trip()
    m.load_rules("""
    rule fail_blocks_day: on update action where status = 'failed' then set parent with status = 'blocked'
    rule blocked_goal_flags_trip: on update goal where status = 'blocked' then mark parent as needs_review because 'a day is blocked'
    """)
    report = m.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"status": "failed"}}]})
    assert report.fired_rules == ("fail_blocks_day", "blocked_goal_flags_trip")
    assert m.node("tue_sights")["status"] == "blocked"
    assert m.node("day2")["dirty"] == "needs_review"


def test_a_rule_cycle_is_refused_when_loaded_naming_it():
    m = trip()
    with pytest.raises(RuleError) as caught:
        m.load_rules("""
        rule a: on update action where status = 'failed' then set self with status = 'pending'
        rule b: on update action where status = 'pending' then set self with status = 'failed'
        """)
    assert caught.value.category == "rule-cycle"
    assert "a -> b -> a" in caught.value.message
    assert m.rules() == {}


def test_a_rule_file_with_a_syntax_error_shows_line_column_and_caret():
    with pytest.raises(HGMError) as caught:
        parse_rules("rule ok: on add fact then mark self as blocked\nrule bad: on add fact then mark self as stale")
    err = caught.value
    assert (err.category, err.line) == ("syntax", 2)
    assert "^" in str(err) and "'blocked'" in err.message


def test_unknown_types_and_relations_in_rules_are_unknown_names():
    with pytest.raises(HGMError) as caught:
        parse_rules("rule r: on add fakt then mark relatd as blocked\npropagate derived_frm backward")
    categories = [p.category for p in caught.value.problems]
    assert categories == ["unknown-name", "unknown-name", "unknown-name"]
    assert "did you mean 'fact'" in caught.value.problems[0].message


def test_loading_a_bad_rule_file_changes_nothing():
    m = trip()
    m.load_rules("propagate derived_from backward", name="mine")
    with pytest.raises(HGMError):
        m.load_rules("rule r: on add fact then mark self as", name="mine")
    assert m.rules() == {"mine": "propagate derived_from backward"}


def test_rule_constraints_must_hold_when_loaded():
    from hgm_engine.errors import TransactionRefused

    m = trip()
    with pytest.raises(TransactionRefused):
        m.load_rules("constraint all_done: each action must status = 'done'")
    assert m.constraints() == {} and m.rules() == {}


def test_rules_survive_reopening_a_store(tmp_path):
    path = tmp_path / "rules.db"
    with Memory.open(path) as m:
        m.load(trip().export())
        m.load_rules("propagate derived_from backward depth 2", name="travel")
    with Memory.open(path) as m:
        assert m.rules() == {"travel": "propagate derived_from backward depth 2"}
        report = m.apply({"ops": [{"op": "update_node", "id": "f_price", "set": {"x": 1}}]})
        assert {d["id"] for d in report.dirtied} == {"r_hotel", "a_dinner"}


def test_delete_rules_see_the_deleted_node():
    m = trip()
    m.load_rules("rule lost_result: on delete result then mark produced_by as needs_review because 'result removed'")
    report = m.apply({"ops": [
        {"op": "delete_node", "id": "r_hotel"},
        {"op": "update_node", "id": "a_hotel", "set": {"status": "pending"}},
    ]})
    assert report.committed, report.to_json()
    assert report.fired_rules == ("lost_result",)
    assert m.node("a_hotel")["dirty"] == "needs_review"


def test_focus_path_and_changes_since():
    m = trip()
    assert m.focus_path("a_forbidden") == ["trip", "day1", "mon_sights", "a_forbidden"]
    t = m.t
    m.apply({"ops": [{"op": "update_node", "id": "a_temple", "set": {"status": "active"}}]})
    since = m.changes_since(t)
    assert [c["t"] for c in since["commits"]] == [t + 1]
    assert since["changes"][0]["id"] == "a_temple"


def test_update_rules_that_feed_each_other_through_other_attributes_are_refused():
    with pytest.raises(RuleError) as caught:
        parse_rules("""
        rule a: on update action where priority > 3 then set self with status = 'active'
        rule b: on update action where status = 'active' then set self with status = 'pending'
        """)
    assert caught.value.category == "rule-cycle"
    assert caught.value.line == 2  # points at rule a


def test_a_mark_reason_is_the_string_without_its_quotes():
    m = trip()
    m.load_rules("rule r: on update fact then mark derived as needs_review because 'price changed'")
    m.apply({"ops": [{"op": "update_node", "id": "f_price", "set": {"content": "900"}}]})
    assert m.stale()[0]["marks"][0]["reason"] == "price changed"


def test_a_rule_file_cannot_take_a_constraint_name_in_use():
    m = trip()
    m.add_constraint("named", "each fact must has(content)")
    with pytest.raises(HGMError) as caught:
        m.load_rules("constraint named: each goal must has(content)")
    assert caught.value.category == "invalid-argument"
    assert m.constraints() == {"named": "each fact must has(content)"}


def test_a_rule_file_parses_into_frozen_syntax_nodes_with_spans():
    import attrs

    from hgm_engine.query import parse_rule_file
    from hgm_engine.query import syntax as S

    text = "rule r: on add fact where ok then mark parent as blocked because 'why'; set self with n = [1]"
    rule_file = parse_rule_file(text)
    (trigger,) = rule_file.statements
    mark, assign = trigger.effects
    assert isinstance(trigger, S.TriggerStatement) and trigger.event == "add"
    assert (mark.state, mark.reason, rule_file.source(mark.target)) == ("blocked", "why", "parent")
    assert assign.target is None and assign.assignments[0].value == S.ListLiteral((S.Literal(1, S.Span(91, 92)),), S.Span(90, 93))
    assert text[trigger.name_span.start : trigger.name_span.end] == "r"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        trigger.name = "other"  # type: ignore[misc]


def test_lark_is_imported_by_the_parser_module_only():
    """Rule files, constraints and queries all reach lark through hgm_engine.query.parser."""
    import ast
    import pathlib

    import hgm_engine

    package = pathlib.Path(hgm_engine.__file__).parent
    importers = []
    for module in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(name == "lark" or name.startswith("lark.") for name in names):
                importers.append(module.relative_to(package).as_posix())
    assert sorted(set(importers)) == ["query/parser.py"]


def test_every_problem_of_a_rule_file_is_listed_in_text_order_with_its_position():
    with pytest.raises(HGMError) as caught:
        parse_rules(
            "rule r: on add fact where x = $p then set self with dirty = 1\n"
            "constraint r: each fakt must exists(childrn)\n"
            "propagate derived_from forward depth 0"
        )
    assert [(p.category, p.line, p.column) for p in caught.value.problems] == [
        ("invalid-argument", 1, 6),  # a rule cannot set 'dirty'
        ("invalid-argument", 1, 31),  # rules cannot use parameters ($p)
        ("invalid-argument", 2, 12),  # rule name 'r' is used twice
        ("unknown-name", 2, 20),  # fakt
        ("unknown-name", 2, 37),  # childrn
        ("invalid-argument", 3, 38),  # depth must be at least 1
    ]
