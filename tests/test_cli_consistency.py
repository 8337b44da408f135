"""The command line reads what the Python API reads, with the same words: every reading
command that the API lets read an earlier state takes ``--as-of``, states are named the same
way everywhere (a t or a snapshot name), and ``changes``/``diff`` take their states the same way."""

from __future__ import annotations

import json

import pytest

from hgm_engine.cli import EXIT_FAILURE, EXIT_OK, main

RULES = "propagate derived_from backward depth 3\n"


@pytest.fixture
def marked(tmp_path, travel_graph_path, capsys):
    """t=1 the load, then the rule set (not a commit), t=2 a price update that marks r_hotel
    and a_dinner; snapshot 'before' names t=1."""
    db = str(tmp_path / "m.db")
    assert main(["load", str(travel_graph_path), "--db", db]) == 0
    rules = tmp_path / "travel.hgmr"
    rules.write_text(RULES)
    assert main(["rules", "load", str(rules), "--db", db]) == 0
    change = tmp_path / "price.json"
    change.write_text(json.dumps({"ops": [{"op": "update_node", "id": "f_price", "set": {"content": "950"}}]}))
    assert main(["apply", str(change), "--db", db]) == 0
    assert main(["snapshot", "before", "--t", "1", "--db", db]) == 0
    capsys.readouterr()
    return db


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main([*args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_stale_as_of_reads_the_marks_of_an_earlier_state(marked, capsys):
    code, now = run_json(capsys, "stale", "--db", marked)
    assert code == EXIT_OK and [s["id"] for s in now["stale"]] == ["a_dinner", "r_hotel"]
    code, before = run_json(capsys, "stale", "--db", marked, "--as-of", "before")
    assert code == EXIT_OK and before == {"stale": []}
    code, at_2 = run_json(capsys, "stale", "--db", marked, "--as-of", "2")
    assert at_2 == now


def test_stale_as_of_an_unknown_state_exits_1_naming_it(marked, capsys):
    code, doc = run_json(capsys, "stale", "--db", marked, "--as-of", "nope")
    assert code == EXIT_FAILURE and "nope" in doc["error"]["message"]


def test_focus_path_as_of_reads_an_earlier_state(tmp_path, marked, capsys):
    remove = tmp_path / "remove.json"
    remove.write_text(json.dumps({"ops": [{"op": "delete_node", "id": "a_pay"}]}))
    assert main(["apply", str(remove), "--db", marked]) == 0
    capsys.readouterr()
    assert main(["focus-path", "a_pay", "--db", marked]) == EXIT_FAILURE
    code, doc = run_json(capsys, "focus-path", "a_pay", "--db", marked, "--as-of", "before")
    assert code == EXIT_OK and doc["path"] == ["trip", "day1", "a_hotel", "a_pay"]


def test_frontier_of_an_unknown_goal_exits_1_like_rest(marked, capsys):
    code, doc = run_json(capsys, "frontier", "no_such_goal", "--db", marked)
    assert code == EXIT_FAILURE and doc["error"]["category"] == "unknown-node"
    assert "no_such_goal" in doc["error"]["message"]


def test_changes_takes_its_state_as_a_position_like_diff(marked, capsys):
    code, positional = run_json(capsys, "changes", "1", "--db", marked)
    assert code == EXIT_OK and [c["t"] for c in positional["commits"]] == [2]
    code, named = run_json(capsys, "changes", "before", "--db", marked)
    assert named == positional


def test_changes_since_still_works(marked, capsys):
    code, flag = run_json(capsys, "changes", "--since", "1", "--db", marked)
    assert code == EXIT_OK and [c["t"] for c in flag["commits"]] == [2]


def test_changes_with_no_state_or_two_different_ones_is_a_clear_command_line_error(marked, capsys):
    assert main(["changes", "--db", marked]) == EXIT_FAILURE
    assert "SINCE" in capsys.readouterr().err
    assert main(["changes", "1", "--since", "2", "--db", marked]) == EXIT_FAILURE
    assert "--since" in capsys.readouterr().err


def test_diff_with_one_state_diffs_it_against_now_like_rest(marked, capsys):
    code, doc = run_json(capsys, "diff", "before", "--db", marked)
    assert code == EXIT_OK and (doc["from"], doc["to"]) == (1, 2)
    code, both = run_json(capsys, "diff", "1", "2", "--db", marked)
    assert doc["changes"] == both["changes"]


def test_history_since_takes_a_snapshot_name_like_every_other_state(marked, capsys):
    code, by_name = run_json(capsys, "history", "--db", marked, "--since", "before")
    assert code == EXIT_OK and [c["t"] for c in by_name["commits"]] == [2]
    code, by_number = run_json(capsys, "history", "--db", marked, "--since", "1")
    assert by_number == by_name
    code, doc = run_json(capsys, "history", "--db", marked, "--since", "nope")
    assert code == EXIT_FAILURE and "nope" in doc["error"]["message"]
