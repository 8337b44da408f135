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


# -- the new state arguments take any text without a traceback ------------------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

STATE_TEXT = st.one_of(
    st.text(max_size=30),
    st.integers(min_value=-5, max_value=10**30).map(str),
    st.sampled_from(["before", "0", "1", "2", "-0", "１", "²", " 1", "1 ", "nan", "\x00", "\u202e1"]),
)


@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    db = str(folder / "m.db")
    change = folder / "tx.json"
    change.write_text(json.dumps({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}))
    assert main(["apply", str(change), "--db", db]) == 0
    assert main(["snapshot", "before", "--db", db]) == 0
    return db


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=STATE_TEXT, command=st.sampled_from(["stale", "focus-path", "frontier", "changes", "diff", "history"]))
def test_any_state_text_is_read_or_refused_with_one_json_error(small_db, capsys, text, command):
    if text.startswith("-") and not text.lstrip("-").isdigit():
        text = " " + text  # argparse would take it for an option: a malformed command line
    argv = {
        "stale": ["stale", "--as-of", text],
        "focus-path": ["focus-path", "g", "--as-of", text],
        "frontier": ["frontier", "g", "--as-of", text],
        "changes": ["changes", text],
        "diff": ["diff", text],
        "history": ["history", "--since", text],
    }[command]
    capsys.readouterr()
    code = main([*argv, "--db", small_db, "--json"])
    captured = capsys.readouterr()
    assert code in (EXIT_OK, EXIT_FAILURE) and "Traceback" not in captured.err
    if captured.out:
        doc = json.loads(captured.out)
        assert (code == EXIT_OK) == ("error" not in doc)
    else:  # refused by the parser (a negative t): a usage message on stderr, exit 1
        assert code == EXIT_FAILURE and "error:" in captured.err


@pytest.mark.parametrize("text", ["²", "١", "٣٤"])
@pytest.mark.parametrize("argv", [
    ["query", "root", "--as-of"], ["show", "--as-of"], ["export", "--as-of"], ["stale", "--as-of"],
    ["frontier", "g", "--as-of"], ["focus-path", "g", "--as-of"], ["changes"], ["changes", "--since"],
    ["diff"], ["diff", "0"], ["history", "--since"], ["snapshot", "x", "--t"],
])
def test_a_digit_that_is_not_0_to_9_is_refused_as_a_state_not_a_traceback(small_db, capsys, argv, text):
    capsys.readouterr()
    code = main([*argv, text, "--db", small_db])
    err = capsys.readouterr().err
    assert code == EXIT_FAILURE and "digits 0-9" in err and "Traceback" not in err
