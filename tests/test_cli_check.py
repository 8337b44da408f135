"""``hgm check``: each of the four problems it looks for is found in a small rule file, with a
minimal counterexample written as files that ``hgm load`` and ``hgm apply`` take and that
replay the problem; a clean file exits 0; bad input gets the errors ``hgm rules check`` gives.

Each search is random but seeded: the seeds and example counts below find the problem (a
handful of examples each, to keep the suite quick)."""

from __future__ import annotations

import json

import pytest

from hgm_engine.cli import main

# 35 triggers in reverse order of their chain: each round fires one more, past the 32-round cap.
CHAIN = "\n".join(f"rule r{i}: on update fact where a{i} = 1 then set self with a{i + 1} = 1" for i in range(34, 0, -1))
CHAIN += "\nrule r0: on update fact then set self with a1 = 1"
RETRY = (
    "rule retry: on update action where status = 'failed' then set self with status = 'pending'\n"
    "constraint prioritized: each action where status = 'pending' must has(priority)"
)
ORDER = (
    "rule settle: on add fact then set self with status = 'done'\n"
    "rule review: on add fact where status = 'done' then mark self as needs_review"
)
APART = "constraint low: each fact must confidence < 0.3\nconstraint high: each fact must confidence > 0.6"


def _check(tmp_path, capsys, text: str, *args: str, name: str = "agent.hgmr") -> tuple[int, dict]:
    rules = tmp_path / name
    rules.write_text(text)
    capsys.readouterr()
    code = main(["check", str(rules), "--out", str(tmp_path / "found"), "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def _replay(tmp_path, capsys, finding: dict, rules: str) -> tuple[int, dict]:
    """Load the counterexample's graph, the rules, then apply its transaction: exit code and
    the JSON answer of ``hgm apply``."""
    db = str(tmp_path / f"replay-{finding['kind']}.db")
    assert main(["load", finding["graph"], "--db", db]) == 0
    assert main(["rules", "load", rules, "--db", db]) == 0
    capsys.readouterr()
    code = main(["apply", finding["transaction"], "--db", db, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _found(result: dict, kind: str) -> dict:
    kinds = [f["kind"] for f in result["findings"]]
    assert kind in kinds, f"{kind} not found: {kinds}"
    return next(f for f in result["findings"] if f["kind"] == kind)


def test_a_clean_rule_file_exits_0_with_nothing_found(tmp_path, capsys):
    text = "propagate derived_from backward depth 2\nconstraint titled: each goal must has(content)"
    code, result = _check(tmp_path, capsys, text, "--examples", "10", "--seed", "1")
    assert code == 0 and result == {"examples": 10, "seed": 1, "findings": []}
    assert not (tmp_path / "found").exists()


def test_triggers_past_the_round_cap_are_found_and_the_files_replay_the_loop(tmp_path, capsys):
    # 30 examples: found by every seed 1-8 (10 found it in 5 of 8)
    code, result = _check(tmp_path, capsys, CHAIN, "--examples", "30", "--seed", "2")
    assert code == 3
    finding = _found(result, "rule-loop")
    assert "32 rounds" in finding["message"]
    graph = json.loads(open(finding["graph"]).read())
    transaction = json.loads(open(finding["transaction"]).read())
    assert len(graph["nodes"]) == 1 and graph["edges"] == [] and len(transaction["ops"]) == 1  # minimal
    code, answer = _replay(tmp_path, capsys, finding, str(tmp_path / "agent.hgmr"))
    assert code != 0 and answer["error"]["category"] == "rule-loop"


def test_two_rule_orders_that_reach_different_states_are_found(tmp_path, capsys):
    code, result = _check(tmp_path, capsys, ORDER, "--examples", "15", "--seed", "1")
    assert code == 3
    finding = _found(result, "non-confluence")
    assert json.loads(open(finding["transaction"]).read())["ops"] == [{"op": "add_node", "type": "fact"}]
    code, in_order = _replay(tmp_path, capsys, finding, str(tmp_path / "agent.hgmr"))
    assert code == 0 and [d["state"] for d in in_order["dirtied"]] == ["needs_review"]
    reversed_rules = tmp_path / "reversed.hgmr"
    reversed_rules.write_text("\n".join(reversed(ORDER.splitlines())))
    finding = {**finding, "kind": "reversed"}
    code, reversed_order = _replay(tmp_path, capsys, finding, str(reversed_rules))
    assert code == 0 and reversed_order["dirtied"] == []


def test_a_trigger_whose_set_a_constraint_then_refuses_is_found(tmp_path, capsys):
    code, result = _check(tmp_path, capsys, RETRY, "--examples", "15", "--seed", "1")
    assert code == 3
    finding = _found(result, "marks-refused")
    assert "retry" in finding["message"] and "prioritized" in finding["message"]
    assert json.loads(open(finding["transaction"]).read())["ops"] == [
        {"op": "update_node", "id": "t0", "set": {"status": "failed"}}
    ]
    code, answer = _replay(tmp_path, capsys, finding, str(tmp_path / "agent.hgmr"))
    assert code == 3 and not answer["committed"]
    assert [v["constraint"] for v in answer["violations"]] == ["prioritized"]


def test_a_mark_a_constraint_forbids_is_found(tmp_path, capsys):
    text = "rule flag: on update fact then mark self as blocked\nconstraint unblocked: each fact must not (dirty = 'blocked')"
    code, result = _check(tmp_path, capsys, text, "--examples", "10", "--seed", "1")
    assert code == 3
    finding = _found(result, "marks-refused")
    code, answer = _replay(tmp_path, capsys, finding, str(tmp_path / "agent.hgmr"))
    assert code == 3 and [v["constraint"] for v in answer["violations"]] == ["unblocked"]


def test_two_constraints_no_new_node_meets_together_are_found(tmp_path, capsys):
    code, result = _check(tmp_path, capsys, APART, "--examples", "20", "--seed", "1")
    assert code == 3
    finding = _found(result, "unsatisfiable")
    assert "low and high" in finding["message"]
    code, answer = _replay(tmp_path, capsys, finding, str(tmp_path / "agent.hgmr"))
    assert code == 3 and [v["constraint"] for v in answer["violations"]] == ["high"]


def test_constraints_that_can_hold_together_are_not_reported(tmp_path, capsys):
    text = "constraint low: each fact must confidence < 0.6\nconstraint high: each fact must confidence > 0.3"
    code, result = _check(tmp_path, capsys, text, "--examples", "20", "--seed", "1")
    assert code == 0 and result["findings"] == []


def test_the_random_memories_follow_the_schema_file(tmp_path, capsys):
    schema = tmp_path / "tools.json"
    schema.write_text(json.dumps({"format": "hgm-schema/1", "node_types": ["task", "tool"], "edge_types": ["uses"],
                                  "attribute_schemas": {"tool": {"type": "object", "properties": {"cost": {"type": "number"}}}}}))
    text = "constraint cheap: each tool must cost < 1\nconstraint dear: each tool must cost > 2"
    code, result = _check(tmp_path, capsys, text, "--schema", str(schema), "--examples", "20", "--seed", "1")
    assert code == 3
    finding = _found(result, "unsatisfiable")
    assert {op["type"] for op in json.loads(open(finding["transaction"]).read())["ops"]} == {"tool"}


def test_the_text_output_says_what_was_found_and_how_to_replay_it(tmp_path, capsys):
    rules = tmp_path / "agent.hgmr"
    rules.write_text(ORDER)
    assert main(["check", str(rules), "--examples", "15", "--seed", "1", "--out", str(tmp_path / "found")]) == 3
    out = capsys.readouterr().out
    assert out.startswith("checked 15 examples (seed 1): 1 found\nnon-confluence: ")
    assert f"hgm apply {tmp_path / 'found' / 'non-confluence.transaction.json'}" in out


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "rule r: on add fact then mark self as stale",
    "rule r: on add gaol then mark self as blocked",
    "rule a: on update action where status = 'failed' then set self with status = 'pending'\n"
    "rule b: on update action where status = 'pending' then set self with status = 'failed'",
])
def test_a_rule_file_with_errors_gets_the_errors_of_rules_check(tmp_path, capsys, text):
    rules = tmp_path / "bad.hgmr"
    rules.write_text(text)
    capsys.readouterr()
    expected_code = main(["rules", "check", str(rules)])
    expected = capsys.readouterr().err
    assert main(["check", str(rules), "--examples", "5"]) == expected_code == 2
    captured = capsys.readouterr()
    assert captured.err == expected and captured.out == ""
    assert main(["check", str(rules), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["category"] in ("syntax", "unknown-name", "rule-cycle")


def test_a_rule_file_is_checked_against_the_schema_file(tmp_path, capsys):
    schema = tmp_path / "tools.json"
    schema.write_text(json.dumps({"format": "hgm-schema/1", "node_types": ["task", "tool"], "edge_types": ["uses"]}))
    code, result = _check(tmp_path, capsys, "rule r: on add fact then mark self as blocked", "--schema", str(schema))
    assert code == 2 and result["error"]["category"] == "unknown-name" and "'fact'" in result["error"]["message"]


@pytest.mark.parametrize("document, category, where", [
    ({"format": "hgm-schema/1", "node_types": [], "edge_types": ["uses"]}, "invalid-document", "node_types"),
    ({"format": "hgm-schema/1", "node_types": ["tool"], "edge_types": ["uses"], "relations": {"x": {"kind": "hop"}}},
     "invalid-document", "relations.x"),
    ({"format": "hgm-schema/2", "node_types": ["tool"], "edge_types": ["uses"]}, "invalid-document", "format"),
])
def test_a_schema_file_with_errors_is_refused_with_its_problems(tmp_path, capsys, document, category, where):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(document))
    rules = tmp_path / "ok.hgmr"
    rules.write_text("propagate uses forward")
    assert main(["check", str(rules), "--schema", str(schema), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["category"] == category
    assert main(["check", str(rules), "--schema", str(schema)]) == 1
    err = capsys.readouterr().err
    assert f"{category} at {where}" in err and "Traceback" not in err


def test_a_schema_file_that_is_not_json_is_refused_with_its_position(tmp_path, capsys):
    schema = tmp_path / "schema.json"
    schema.write_text('{"format": "hgm-schema/1",\n "node_types": [}')
    rules = tmp_path / "ok.hgmr"
    rules.write_text("propagate derived_from forward")
    assert main(["check", str(rules), "--schema", str(schema)]) == 1
    assert "invalid-json at line 2, column" in capsys.readouterr().err


@pytest.mark.parametrize("count", ["0", "-3"])
def test_fewer_than_one_example_is_refused(tmp_path, capsys, count):
    rules = tmp_path / "ok.hgmr"
    rules.write_text("propagate derived_from forward")
    assert main(["check", str(rules), "--examples", count]) == 1
    assert f"invalid-argument: --examples must be at least 1, not {count}" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.json"))


def test_a_missing_rule_file_is_an_io_error(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.hgmr")]) == 1
    err = capsys.readouterr().err
    assert "io at" in err and "cannot read rule file" in err and "Traceback" not in err


def test_without_hypothesis_hgm_check_says_which_extra_to_install(tmp_path):
    import subprocess
    import sys

    rules = tmp_path / "ok.hgmr"
    rules.write_text("propagate derived_from forward")
    script = ("import sys; sys.modules['hypothesis'] = None\n"  # as if hypothesis were not installed
              "from hgm_engine.cli import main\n"
              f"raise SystemExit(main(['check', {str(rules)!r}]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "missing-dependency" in done.stderr and "pip install 'hgm-engine[testing]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_out_folder_that_cannot_be_written_is_refused_before_the_search(tmp_path, capsys):
    rules = tmp_path / "agent.hgmr"
    rules.write_text(ORDER)
    (tmp_path / "afile").write_text("")
    assert main(["check", str(rules), "--out", str(tmp_path / "afile" / "sub")]) == 1
    err = capsys.readouterr().err
    assert "io at" in err and "is not a folder" in err and "Traceback" not in err


# -- fuzz: hgm check's two inputs never end in a traceback -------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hgm_engine.errors import HGMError  # noqa: E402
from hgm_engine.model import Schema  # noqa: E402
from hgm_engine.testing.jsonvalues import json_values  # noqa: E402

_SCHEMA_PARTS = {
    "format": st.sampled_from(["hgm-schema/1", "hgm-schema/2", 1, None]),
    "extends": st.sampled_from(["default", "none", 3]),
    "node_types": st.one_of(st.lists(st.sampled_from(["tool", "goal", "", "a b", "x"]), max_size=3), json_values()),
    "edge_types": st.one_of(st.lists(st.sampled_from(["uses", "parent_of", "", "e"]), max_size=3), json_values()),
    "relations": st.one_of(st.dictionaries(st.sampled_from(["r", "children", ""]), st.fixed_dictionaries(
        {}, optional={"kind": st.sampled_from(["hop", "closure", "bogus"]), "direction": st.sampled_from(["out", "in", "up"]),
                      "edge_types": st.lists(st.sampled_from(["uses", "nope"]), max_size=2), "node_type": st.sampled_from(["tool", "zz", None])}),
        max_size=2), json_values()),
    "attribute_schemas": st.one_of(st.dictionaries(st.sampled_from(["tool", "zz"]), json_values(), max_size=2), json_values()),
    "edge_rules": json_values(),
    "acyclic_edge_types": st.one_of(st.lists(st.sampled_from(["uses", "nope"]), max_size=2), json_values()),
}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(json_values(), st.fixed_dictionaries({}, optional=_SCHEMA_PARTS)))
def test_any_schema_document_is_read_or_refused_with_schema_errors(doc):
    try:
        schema = Schema.from_document(doc)
    except HGMError as err:
        assert err.problems and all(p.category and p.message for p in err.problems)
    else:
        assert schema.node_types


_RULE_WORDS = ["rule", "r:", "on", "add", "update", "delete", "fact", "goal", "action", "where", "then", "mark", "set",
               "self", "parent", "as", "blocked", "needs_review", "with", "status", "=", "'done'", "1", "constraint",
               "c:", "each", "must", "has(priority)", "propagate", "derived_from", "backward", "depth", "2", ";", "\n", "(", ")"]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(_RULE_WORDS), max_size=14).map(" ".join))
def test_any_rule_file_text_gets_a_clear_answer_from_hgm_check(tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("fuzz")
    rules = folder / "fuzz.hgmr"
    rules.write_text(text)
    code = main(["check", str(rules), "--examples", "1", "--seed", "1", "--out", str(folder), "--json"])
    assert code in (0, 1, 2, 3)
