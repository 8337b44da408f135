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


# -- broken stored objects (issue 12) --------------------------------------------------------

DEEP_RULE = "rule a: on add fact where " + "not " * 200 + "ok then mark self as blocked"


def test_rules_check_runs_the_compile_that_load_runs_so_they_agree(tmp_path, capsys):
    deep = tmp_path / "deep.hgmr"
    deep.write_text(DEEP_RULE + "\n")
    db = str(tmp_path / "m.db")
    tx = tmp_path / "tx.json"
    tx.write_text(json.dumps({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}))
    assert main(["apply", str(tx), "--db", db]) == 0  # a memory exists (one is made by its first commit)
    capsys.readouterr()
    checked = main(["rules", "check", str(deep), "--json"])
    check_error = json.loads(capsys.readouterr().out)["error"]
    loaded = main(["rules", "load", str(deep), "--db", db, "--json"])
    load_error = json.loads(capsys.readouterr().out)["error"]
    assert checked == loaded == 2
    assert check_error == load_error and check_error["category"] and check_error["line"] == 1
    assert main(["rules", "list", "--db", db, "--json"]) == 0  # the memory still opens
    assert json.loads(capsys.readouterr().out) == {"rule_sets": []}


def _broken_db(tmp_path) -> str:
    """A memory whose store holds a rule set and a constraint that do not compile, written
    straight into the store (as an older hgm or another program could have)."""
    from hgm_engine.store import open_store

    db = str(tmp_path / "m.db")
    store = open_store(db)
    with store.write():
        store.set_meta("rule_sets", json.dumps(["bad"]))
        store.set_meta("rules:bad", DEEP_RULE)
        store.set_constraint("nope", "each fakt must has(content)")
    store.close()
    return db


def test_every_command_on_a_memory_with_broken_objects_warns_on_stderr_how_to_remove_them(tmp_path, capsys):
    db = _broken_db(tmp_path)
    assert main(["stale", "--db", db, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"stale": []}
    assert "warning: rule set 'bad' is broken and inactive" in captured.err
    assert f"hgm rules remove bad --db {db}" in captured.err
    assert "warning: constraint 'nope' is broken and inactive: unknown-name" in captured.err
    assert f"hgm constraint remove nope --db {db}" in captured.err
    assert "Traceback" not in captured.err


def test_rules_list_and_constraint_list_show_broken_objects(tmp_path, capsys):
    db = _broken_db(tmp_path)
    assert main(["rules", "list", "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== bad (broken, inactive: ") and "line 1, column 27" in out
    assert main(["rules", "list", "--db", db, "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["rule_sets"]
    assert (entry["name"], entry["text"]) == ("bad", DEEP_RULE) and entry["broken"]["category"]
    assert main(["constraint", "list", "--db", db, "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["constraints"]
    assert entry["name"] == "nope" and entry["broken"]["category"] == "unknown-name"
    assert main(["constraint", "list", "--db", db]) == 0
    assert "nope  each fakt must has(content)  (broken, inactive: unknown-name" in capsys.readouterr().out


def test_rules_remove_and_constraint_remove_work_on_broken_objects(tmp_path, capsys):
    db = _broken_db(tmp_path)
    assert main(["rules", "remove", "bad", "--db", db]) == 0
    assert main(["constraint", "remove", "nope", "--db", db]) == 0
    assert "removed constraint nope: each fakt must has(content)" in capsys.readouterr().out
    assert main(["rules", "list", "--db", db, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"rule_sets": []} and captured.err == ""
