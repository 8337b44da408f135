"""The ``hgm`` command: spec/dsl.md §6 through the real executable, and its people-facing output.

The compliance cases run as real subprocesses of the installed console script (or
``python -m hgm_engine`` when it is not installed), several at a time; the other behaviours
call :func:`hgm_engine.cli.app.main` in-process, which is the same code path minus the
interpreter start.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

from hgm_engine import __version__
from hgm_engine.cli import main, sample_document
from hgm_engine.model.graph import MemoryGraph
from hgm_engine.render.text import tree_lines

REPO = pathlib.Path(__file__).resolve().parents[1]
COMPLIANCE = (REPO / ".." / "shared" / "spec" / "compliance").resolve()


def hgm_command() -> list[str]:
    """The installed ``hgm`` (next to this interpreter first, then on PATH), else ``python -m``."""
    beside = pathlib.Path(sys.executable).with_name("hgm")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("hgm")
    if found:
        return [found]
    return [sys.executable, "-m", "hgm_engine"]


def run_hgm(*args: str, env: dict | None = None, unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONIOENCODING": "utf-8", **(env or {})}
    for name in unset:
        environment.pop(name, None)
    return subprocess.run(
        [*hgm_command(), *args], capture_output=True, text=True, encoding="utf-8", env=environment, timeout=120
    )


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- the spec's compliance cases through `hgm query --json` ------------------------------------


def _compliance_params() -> list:
    if not COMPLIANCE.is_dir():
        return [pytest.param(None, None, id="no-compliance-dir")]
    params = []
    for cases_file in sorted(COMPLIANCE.glob("*.cases.json")):
        doc = json.loads(cases_file.read_text(encoding="utf-8"))
        graph = COMPLIANCE / doc["graph"]
        for case in doc["cases"]:
            params.append(pytest.param(graph, case, id=f"{cases_file.stem}::{case['id']}"))
    return params


def _case_argv(graph: pathlib.Path, case: dict) -> list[str]:
    argv = ["query", case["expr"], "--graph", str(graph), "--json"]
    if case.get("focus") is not None:
        argv += ["--focus", case["focus"]]
    if "params" in case:
        argv += ["--params", json.dumps(case["params"])]
    return argv


@pytest.fixture(scope="module")
def case_runs(request):
    """Start the command for every selected compliance case, a few at a time (one process each)."""
    selected = [
        item.callspec.params
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_compliance_case_through_hgm_query_json"
        and item.callspec.params.get("case") is not None
    ]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    futures = {
        params["case"]["id"]: pool.submit(run_hgm, *_case_argv(params["graph"], params["case"]))
        for params in selected
    }
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def _is_path_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, list) for v in value)


@pytest.mark.parametrize("graph, case", _compliance_params())
def test_compliance_case_through_hgm_query_json(graph, case, case_runs):
    if case is None:
        pytest.skip(f"the spec's compliance cases are not here: {COMPLIANCE} does not exist")
    run = case_runs[case["id"]].result()
    doc = json.loads(run.stdout)  # exactly one JSON document, nothing else on stdout
    if "error" in case:
        assert run.returncode == 2, run.stderr
        error = doc["error"]
        assert error["category"] == case["error"], error
        assert isinstance(error["message"], str) and error["message"]
        lines = case["expr"].split("\n")
        assert error["line"] is not None and error["column"] is not None, error
        assert 1 <= error["line"] <= len(lines)
        assert 1 <= error["column"] <= len(lines[error["line"] - 1]) + 1
        return
    assert run.returncode == 0, run.stdout + run.stderr
    expected = case["result"]
    if isinstance(expected, bool):
        assert doc == {"kind": "exists", "value": expected}
    elif isinstance(expected, int):
        assert doc["kind"] == "count" and type(doc["value"]) is int and doc["value"] == expected
    elif _is_path_list(expected):
        assert doc == {"kind": "paths", "paths": expected}
    elif expected == [] and doc["kind"] == "paths":
        assert doc["paths"] == []
    else:
        assert doc["kind"] == "nodes"
        assert doc["ids"] == expected
        assert [node["id"] for node in doc["nodes"]] == expected
        assert all(isinstance(node["type"], str) for node in doc["nodes"])


# -- a small graph for the people-facing tests -------------------------------------------------

SMALL = {
    "format": "hgm-graph/1",
    "nodes": [
        {"id": "trip", "type": "goal", "status": "active", "content": "Plan a trip"},
        {"id": "day1", "type": "goal", "status": "active", "content": "Day 1"},
        {"id": "day2", "type": "goal", "content": "Day 2"},
        {"id": "visit", "type": "action", "status": "pending", "content": "Visit the palace", "priority": 1},
        {"id": "book", "type": "action", "status": "done", "content": "Book a hotel"},
        {"id": "pay", "type": "action", "status": "done"},
        {"id": "walk", "type": "action", "status": "failed", "content": "Walk the wall"},
        {"id": "palace", "type": "entity", "content": "The palace"},
        {"id": "closed", "type": "fact", "content": "Closed on Mondays"},
        {"id": "booked", "type": "result", "content": "Booked"},
    ],
    "edges": [
        {"from": "trip", "to": "day2", "type": "parent_of", "order": 1},
        {"from": "trip", "to": "day1", "type": "parent_of", "order": 0},
        {"from": "day1", "to": "visit", "type": "parent_of"},
        {"from": "day1", "to": "book", "type": "parent_of"},
        {"from": "book", "to": "pay", "type": "parent_of"},
        {"from": "day2", "to": "walk", "type": "parent_of"},
        {"from": "visit", "to": "palace", "type": "related_to"},
        {"from": "palace", "to": "closed", "type": "related_to"},
        {"from": "book", "to": "booked", "type": "produces"},
    ],
}


def write_graph(tmp_path: pathlib.Path, doc: dict, name: str = "graph.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


@pytest.fixture
def small(tmp_path) -> str:
    return write_graph(tmp_path, SMALL)


# -- query, for people ---------------------------------------------------------------------------


def test_query_prints_a_table_of_the_nodes_found(capsys, small):
    code, out, err = run_main(capsys, "query", "#day1.actions", "--graph", small)
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "ID     TYPE    STATUS   CONTENT",
        "visit  action  pending  Visit the palace",
        "book   action  done     Book a hotel",
        "(2 nodes)",
    ]


def test_query_that_finds_nothing_succeeds_with_an_empty_result(capsys, small):
    code, out, _ = run_main(capsys, "query", "#nope", "--graph", small)
    assert (code, out) == (0, "(no nodes)\n")


def test_query_prints_a_count_as_a_bare_number(capsys, small):
    assert run_main(capsys, "query", "#trip.descendants.count()", "--graph", small)[:2] == (0, "6\n")


def test_query_prints_exists_as_true_or_false(capsys, small):
    assert run_main(capsys, "query", "#day2.actions.exists()", "--graph", small)[:2] == (0, "true\n")
    assert run_main(capsys, "query", "#walk.actions.exists()", "--graph", small)[:2] == (0, "false\n")


def test_query_prints_each_path_as_a_walk(capsys, small):
    code, out, _ = run_main(capsys, "query", "root.descendants.where(status='failed').paths()", "--graph", small)
    assert code == 0
    assert out.splitlines() == ["trip → day2 → walk", "(1 path)"]


def test_query_json_prints_the_spec_document(capsys, small):
    code, out, _ = run_main(capsys, "query", "#book.results", "--graph", small, "--json")
    assert code == 0
    assert json.loads(out) == {
        "kind": "nodes",
        "ids": ["booked"],
        "nodes": [{"id": "booked", "type": "result", "content": "Booked"}],
    }


def test_focus_option_supplies_the_focus(capsys, small):
    code, out, _ = run_main(capsys, "query", "current_goal", "--graph", small, "--focus", "pay", "--json")
    assert code == 0 and json.loads(out)["ids"] == ["day1"]


def test_params_option_binds_parameter_values(capsys, small):
    code, out, _ = run_main(
        capsys, "query", "nodes.where(status = $s)", "--graph", small, "--params", '{"s": "failed"}', "--json"
    )
    assert code == 0 and json.loads(out)["ids"] == ["walk"]


# -- query errors ------------------------------------------------------------------------------


def test_syntax_error_goes_to_stderr_with_a_caret_and_exits_2():
    run = run_hgm("query", "root.subgoals[", "--graph", str(REPO / "tests" / "compliance" / "research.graph.json"))
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert lines[0].startswith("error: syntax at line 1, column 15: ")
    assert "expected" in lines[0]
    assert lines[1:] == ["    root.subgoals[", "                  ^"]


def test_query_error_with_json_prints_the_error_document_on_stdout(capsys, small):
    code, out, err = run_main(capsys, "query", "root.subgoal", "--graph", small, "--json")
    assert code == 2 and err == ""
    error = json.loads(out)["error"]
    assert (error["category"], error["line"], error["column"]) == ("unknown-name", 1, 6)
    assert "did you mean 'subgoals'" in error["message"]


def test_every_problem_of_a_query_is_reported(capsys, small):
    code, _, err = run_main(capsys, "query", "root.where(frob(x) = 1).subgol", "--graph", small)
    assert code == 2
    assert "unknown function 'frob'" in err and "unknown relation 'subgol'" in err
    assert err.count("^") == 2


def test_missing_focus_is_a_query_error(capsys, small):
    code, out, _ = run_main(capsys, "query", "focus.children", "--graph", small, "--json")
    assert code == 2 and json.loads(out)["error"]["category"] == "missing-focus"


def test_params_that_are_not_json_are_an_invalid_argument_error(capsys, small):
    code, out, _ = run_main(capsys, "query", "$x", "--graph", small, "--params", "{x: 1}", "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["category"] == "invalid-argument"
    assert "--params" in error["message"]


def test_params_must_be_a_json_object(capsys, small):
    code, _, err = run_main(capsys, "query", "$x", "--graph", small, "--params", '["a"]')
    assert code == 2
    assert err.startswith("error: invalid-argument") and "JSON object" in err


# -- graph files that do not load ----------------------------------------------------------------

BROKEN = {
    "format": "hgm-graph/1",
    "nodes": [
        {"id": "trip", "type": "goal"},
        {"id": "paris", "type": "place"},
        {"id": "trip", "type": "action"},
    ],
    "edges": [{"from": "trip", "to": "nowhere", "type": "parent_of"}],
}


def test_query_on_a_broken_graph_file_lists_every_problem_and_exits_1(capsys, tmp_path):
    code, out, err = run_main(capsys, "query", "root", "--graph", write_graph(tmp_path, BROKEN))
    assert code == 1 and out == ""
    assert "3 problems; nothing was loaded" in err
    assert "unknown-name at nodes[1]: unknown node type 'place'" in err
    assert "duplicate-id at nodes[2]" in err
    assert "missing-node at edges[0]" in err


def test_query_on_a_broken_graph_file_with_json_prints_an_error_document(capsys, tmp_path):
    code, out, _ = run_main(capsys, "query", "root", "--graph", write_graph(tmp_path, BROKEN), "--json")
    assert code == 1
    problems = json.loads(out)["error"]["problems"]
    assert [p["where"] for p in problems] == ["nodes[1]", "nodes[2]", "edges[0]"]


def test_query_on_a_missing_graph_file_exits_1(capsys, tmp_path):
    code, _, err = run_main(capsys, "query", "root", "--graph", str(tmp_path / "absent.json"))
    assert code == 1
    assert err.startswith("error: io: cannot read ")


# -- explain -------------------------------------------------------------------------------------


def test_explain_prints_the_plan_without_a_graph(capsys):
    code, out, _ = run_main(capsys, "explain", "#a_hotel.results")
    assert code == 0
    assert out.splitlines()[:3] == ["query: #a_hotel.results", "rules applied: id_lookup", "plan:"]
    assert "navigate results" in out


def test_explain_json_gives_query_rules_and_plan_lines(capsys):
    code, out, _ = run_main(capsys, "explain", "#a_hotel.results", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["query"] == "#a_hotel.results"
    assert doc["rules"] == ["id_lookup"]
    assert isinstance(doc["plan"], list) and all(isinstance(line, str) for line in doc["plan"])
    assert doc["plan"][0] == "lookup id 'a_hotel'"


def test_explain_physical_adds_each_steps_strategy(capsys):
    code, out, _ = run_main(capsys, "explain", "root.subgoals[0].actions", "--physical")
    assert code == 0
    physical = [line.strip() for line in out.splitlines() if line.strip().startswith("physical:")]
    assert len(physical) == 2 and "generated per source" in physical[0]
    code, plain, _ = run_main(capsys, "explain", "root.subgoals[0].actions")
    assert "physical:" not in plain
    code, out, _ = run_main(capsys, "explain", "#a_hotel.results", "--physical", "--json")
    assert json.loads(out)["plan"][-1].strip().startswith("physical: one-type hop")


def test_explain_of_a_wrong_query_exits_2(capsys):
    code, _, err = run_main(capsys, "explain", "root.count().subgoals")
    assert code == 2 and err.startswith("error: misplaced")


# -- validate ------------------------------------------------------------------------------------


def test_validate_summarises_a_valid_file_and_exits_0(capsys, small):
    code, out, _ = run_main(capsys, "validate", small)
    assert code == 0
    assert out == (
        f"{small}: valid: 10 nodes (3 goal, 4 action, 1 entity, 1 fact, 1 result), "
        "9 edges (6 parent_of, 2 related_to, 1 produces)\n"
    )


def test_validate_json_of_a_valid_file_gives_the_counts(capsys, small):
    code, out, _ = run_main(capsys, "validate", small, "--json")
    doc = json.loads(out)
    assert code == 0
    assert (doc["valid"], doc["nodes"], doc["edges"]) == (True, 10, 9)
    assert doc["node_types"]["action"] == 4


def test_validate_lists_every_problem_with_its_place_and_exits_1(capsys, tmp_path):
    path = write_graph(tmp_path, BROKEN)
    code, out, _ = run_main(capsys, "validate", path)
    assert code == 1
    assert out.splitlines() == [
        f"{path}: invalid: 3 problems",
        "  unknown-name at nodes[1]: unknown node type 'place'",
        "  duplicate-id at nodes[2]: duplicate node id 'trip' (first defined at nodes[0])",
        "  missing-node at edges[0]: edge to a missing node 'nowhere'",
    ]


def test_validate_reports_constraint_violations_that_loading_would_refuse(capsys, tmp_path):
    doc = {
        "format": "hgm-graph/1",
        "nodes": [{"id": "a", "type": "goal"}, {"id": "b", "type": "goal"}, {"id": "step", "type": "action"}],
        "edges": [{"from": "a", "to": "step", "type": "parent_of"}, {"from": "b", "to": "step", "type": "parent_of"}],
    }
    code, out, _ = run_main(capsys, "validate", write_graph(tmp_path, doc))
    assert code == 1
    assert "constraint-violation at step: action_has_one_parent" in out


def test_validate_reports_invalid_json_with_line_column_and_caret(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": "hgm-graph/1",\n "nodes": [{"id": "a" "type": "goal"}]}', encoding="utf-8")
    code, out, _ = run_main(capsys, "validate", str(path))
    assert code == 1
    lines = out.splitlines()
    assert lines[1].startswith("  invalid-json at line 2, column 23: ")
    assert lines[2].strip() == '"nodes": [{"id": "a" "type": "goal"}]}'
    assert lines[3].index("^") == lines[2].index('"type"')


def test_validate_json_lists_the_problems(capsys, tmp_path):
    code, out, _ = run_main(capsys, "validate", write_graph(tmp_path, BROKEN), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["valid"] is False
    assert [p["category"] for p in doc["problems"]] == ["unknown-name", "duplicate-id", "missing-node"]


def test_validate_reports_a_file_that_cannot_be_read(capsys, tmp_path):
    code, out, _ = run_main(capsys, "validate", str(tmp_path / "absent.json"))
    assert code == 1 and "io: cannot read" in out


# -- show ----------------------------------------------------------------------------------------


def test_show_draws_the_hierarchy_in_edge_order_with_box_drawing(capsys, small):
    code, out, _ = run_main(capsys, "show", "--graph", small)
    assert code == 0
    assert out.splitlines()[:7] == [
        "trip [goal] active: Plan a trip",
        "├── day1 [goal] active: Day 1",
        "│   ├── visit [action] pending: Visit the palace",
        "│   └── book [action] done: Book a hotel",
        "│       └── pay [action] done",
        "└── day2 [goal]: Day 2",
        "    └── walk [action] failed: Walk the wall",
    ]


def test_show_lists_nodes_outside_the_hierarchy_with_their_edges(capsys, small):
    _, out, _ = run_main(capsys, "show", "--graph", small)
    assert out.splitlines()[7:] == [
        "",
        "not in the hierarchy:",
        "  palace [entity]: The palace",
        "      related to: closed, visit",
        "  closed [fact]: Closed on Mondays",
        "      related to: palace",
        "  booked [result]: Booked",
        "      produced by: book",
    ]


def test_show_root_draws_only_that_subtree(capsys, small):
    code, out, _ = run_main(capsys, "show", "--graph", small, "--root", "day1")
    assert code == 0
    assert out.splitlines() == [
        "day1 [goal] active: Day 1",
        "├── visit [action] pending: Visit the palace",
        "└── book [action] done: Book a hotel",
        "    └── pay [action] done",
    ]


def test_show_depth_limits_the_levels_and_says_what_is_hidden(capsys, small):
    code, out, _ = run_main(capsys, "show", "--graph", small, "--root", "trip", "--depth", "1")
    assert code == 0
    assert out.splitlines() == [
        "trip [goal] active: Plan a trip",
        "├── day1 [goal] active: Day 1 (2 children not shown)",
        "└── day2 [goal]: Day 2 (1 child not shown)",
    ]


def test_show_draws_a_node_with_two_parents_under_each_and_marks_the_repeat(capsys, tmp_path):
    doc = {
        "format": "hgm-graph/1",
        "nodes": [{"id": i, "type": "goal"} for i in ("g", "a", "b", "shared", "leaf")],
        "edges": [
            {"from": "g", "to": "a", "type": "parent_of"},
            {"from": "g", "to": "b", "type": "parent_of"},
            {"from": "a", "to": "shared", "type": "parent_of"},
            {"from": "b", "to": "shared", "type": "parent_of"},
            {"from": "shared", "to": "leaf", "type": "parent_of"},
        ],
    }
    _, out, _ = run_main(capsys, "show", "--graph", write_graph(tmp_path, doc))
    assert out.splitlines() == [
        "g [goal]",
        "├── a [goal]",
        "│   └── shared [goal]",
        "│       └── leaf [goal]",
        "└── b [goal]",
        "    └── shared [goal] (repeat, shown above)",
    ]


def cyclic_graph() -> MemoryGraph:
    """Loading refuses parent_of cycles, but a graph built directly can hold one."""
    graph = MemoryGraph()
    for node_id, node_type in (("top", "goal"), ("x", "goal"), ("y", "goal"), ("p", "goal"), ("q", "goal")):
        graph.add_node(node_id, node_type, {})
    for source, target in (("top", "x"), ("x", "y"), ("y", "x"), ("p", "q"), ("q", "p")):
        graph.add_edge(source, target, "parent_of")
    return graph


def test_show_marks_cycles_and_never_loops():
    assert tree_lines(cyclic_graph(), "top") == [
        "top [goal]",
        "└── x [goal]",
        "    └── y [goal]",
        "        └── x [goal] (cycle)",
    ]


def test_show_draws_a_cycle_that_no_root_reaches():
    assert tree_lines(cyclic_graph())[4:] == ["p [goal]", "└── q [goal]", "    └── p [goal] (cycle)"]


def test_show_uses_ascii_when_the_terminal_cannot_draw_boxes(small):
    run = run_hgm("show", "--graph", small, "--root", "day1", env={"PYTHONIOENCODING": "ascii"})
    assert run.returncode == 0
    assert run.stdout.splitlines()[1:] == [
        "|-- visit [action] pending: Visit the palace",
        "`-- book [action] done: Book a hotel",
        "    `-- pay [action] done",
    ]


def test_show_with_an_unknown_root_exits_1(capsys, small):
    code, _, err = run_main(capsys, "show", "--graph", small, "--root", "nope")
    assert code == 1 and "no node 'nope'" in err


def test_show_rejects_a_negative_depth(capsys, small):
    code, _, err = run_main(capsys, "show", "--graph", small, "--depth", "-1")
    assert code == 1 and "--depth" in err


# -- demo ----------------------------------------------------------------------------------------


def test_demo_runs_offline_and_exits_0():
    run = run_hgm("demo", unset=("OPENAI_API_KEY", "OPENAI_BASE_URL"))
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert "root.subgoals[0].actions.where(status='pending')" in run.stdout


def test_demo_draws_the_sample_tree_and_runs_the_queries(capsys):
    code, out, _ = run_main(capsys, "demo")
    assert code == 0
    assert "trip [goal] active: Plan a three-day trip to Beijing" in out
    assert "├── d1 [goal] active: Day 1" in out
    assert "not in the hierarchy:" in out
    assert "trip → d3 → a_wall_bus" in out  # a .paths() result
    assert "--params '{\"max_priority\": 1}'" in out
    assert "--focus a_deposit" in out
    assert "rules applied:" in out  # the explain section


def test_demo_ends_with_an_error_shown_with_its_caret(capsys):
    _, out, _ = run_main(capsys, "demo")
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("error: unknown-name"))
    assert "did you mean 'subgoals'" in lines[at]
    assert lines[at + 1] == "    root.subgoal[0].actions"
    assert lines[at + 2] == "         ^"


def test_demo_output_is_deterministic(capsys):
    first = run_main(capsys, "demo")
    assert run_main(capsys, "demo") == first


def test_demo_scenario_without_the_entry_points_says_what_is_missing(capsys, monkeypatch, tmp_path):
    from hgm_engine.cli import demo

    monkeypatch.setattr(demo, "entry_points", lambda group: [])
    code, out, err = run_main(capsys, "demo", "travel", "--db", str(tmp_path / "trip.db"))
    assert code == 1 and out == ""  # the exit code of an unknown scenario
    assert err.startswith("error: missing-package: hgm demo travel needs the planner scenarios")
    assert "entry point group 'hgm.demos'" in err and "none is installed" in err
    assert not (tmp_path / "trip.db").exists()


def test_demo_scenarios_come_from_the_hgm_demos_entry_points(capsys):
    from importlib.metadata import entry_points

    assert [entry.value for entry in entry_points(group="hgm.demos")] == ["planners.scenarios"]
    code, _, err = run_main(capsys, "demo", "nowhere")
    assert code == 1 and err == "hgm demo: unknown scenario 'nowhere'; known: travel, orders, research\n"


def test_demo_sample_prints_a_valid_graph_file(capsys, tmp_path):
    code, out, _ = run_main(capsys, "demo", "--sample")
    assert code == 0 and json.loads(out) == sample_document()
    path = tmp_path / "trip.json"
    path.write_text(out, encoding="utf-8")
    assert run_main(capsys, "validate", str(path))[0] == 0


def test_sample_memory_has_what_the_demo_promises():
    doc = sample_document()
    nodes = {node["id"]: node for node in doc["nodes"]}
    edges = {(e["from"], e["to"], e["type"]) for e in doc["edges"]}
    assert {node["type"] for node in nodes.values()} == {"goal", "action", "entity", "fact", "result"}
    assert nodes["a_wall_bus"]["status"] == "failed"
    assert ("a_wall_car", "a_wall_bus", "replaces") in edges
    assert ("r_booking", "f_rate", "derived_from") in edges
    assert "Mondays" in nodes["f_closed_mon"]["content"]


@pytest.mark.slow
def test_the_wheel_ships_the_sample_memory(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("hgm_engine-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert "hgm_engine/cli/__init__.py" in archive.namelist()
        assert "hgm_engine/__main__.py" in archive.namelist()
        packaged = json.loads(archive.read("hgm_engine/data/sample_memory.json"))
    assert packaged == sample_document()


# -- the command line itself ------------------------------------------------------------------------


def test_version_prints_the_package_version(capsys):
    assert run_main(capsys, "--version")[:2] == (0, f"hgm {__version__}\n")


def test_help_lists_every_command_and_the_exit_codes(capsys):
    code, out, _ = run_main(capsys, "--help")
    assert code == 0
    for command in ("query", "explain", "validate", "show", "demo"):
        assert command in out
    assert "exit codes:" in out


@pytest.mark.parametrize("command", ["query", "explain", "validate", "show", "demo"])
def test_each_command_help_has_examples(capsys, command):
    code, out, _ = run_main(capsys, command, "--help")
    assert code == 0
    assert "examples:" in out and f"hgm {command}" in out.split("examples:")[1]


def test_a_malformed_command_line_exits_1_not_2(capsys):
    code, _, err = run_main(capsys, "query", "root")  # no --graph
    assert code == 1 and "--graph" in err


def test_no_command_exits_1(capsys):
    assert run_main(capsys)[0] == 1


def test_python_dash_m_hgm_engine_is_the_same_command():
    run = subprocess.run(
        [sys.executable, "-m", "hgm_engine", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (run.returncode, run.stdout) == (0, f"hgm {__version__}\n")
