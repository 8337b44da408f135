"""``hgm rules`` and the planner-view commands."""

from __future__ import annotations

import json

from hgm_engine.cli import main

RULES = """
propagate derived_from backward depth 3
rule closed: on add fact where content =~ 'closed' then mark related_entities.related.where(type = 'action', status = 'pending') as blocked because 'closed'
"""


def _db(tmp_path, travel_graph_path):
    db = str(tmp_path / "m.db")
    assert main(["load", str(travel_graph_path), "--db", db]) == 0
    rules = tmp_path / "travel.hgmr"
    rules.write_text(RULES)
    return db, str(rules)


def test_rules_load_then_a_fact_update_marks_what_derived_from_it(tmp_path, travel_graph_path, capsys):
    db, rules = _db(tmp_path, travel_graph_path)
    assert main(["rules", "load", rules, "--db", db, "--name", "travel"]) == 0
    change = tmp_path / "price.json"
    change.write_text(json.dumps({"ops": [{"op": "update_node", "id": "f_price", "set": {"content": "950"}}]}))
    capsys.readouterr()
    assert main(["apply", str(change), "--db", db, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {d["id"] for d in report["dirtied"]} == {"r_hotel", "a_dinner"}
    assert main(["stale", "--db", db, "--json"]) == 0
    assert [s["id"] for s in json.loads(capsys.readouterr().out)["stale"]] == ["a_dinner", "r_hotel"]
    assert main(["confirm", "a_dinner", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cleared"][0]["id"] == "a_dinner"
    assert main(["rules", "list", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rule_sets"][0]["name"] == "travel"


def test_rules_check_reports_syntax_errors_with_a_caret(tmp_path, capsys):
    bad = tmp_path / "bad.hgmr"
    bad.write_text("rule r: on add fact then mark self as stale\n")
    assert main(["rules", "check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "syntax" in err and "^" in err and "'needs_review' or 'blocked'" in err


def test_a_cyclic_rule_file_is_refused_and_nothing_is_loaded(tmp_path, travel_graph_path, capsys):
    db, _ = _db(tmp_path, travel_graph_path)
    cyclic = tmp_path / "cyclic.hgmr"
    cyclic.write_text(
        "rule a: on update action where status = 'failed' then set self with status = 'pending'\n"
        "rule b: on update action where status = 'pending' then set self with status = 'failed'\n"
    )
    assert main(["rules", "load", str(cyclic), "--db", db]) == 2
    assert "rule-cycle" in capsys.readouterr().err
    assert main(["rules", "list", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"rule_sets": []}


def test_frontier_focus_path_and_changes(tmp_path, travel_graph_path, capsys):
    db, _ = _db(tmp_path, travel_graph_path)
    capsys.readouterr()
    assert main(["frontier", "trip", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["frontier"] == ["a_forbidden", "a_temple", "a_wall2"]
    assert main(["focus-path", "a_pay", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == ["trip", "day1", "a_hotel", "a_pay"]
    assert main(["changes", "--since", "0", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["commits"][0]["t"] == 1
