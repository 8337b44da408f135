"""The ``hgm`` commands on a durable memory (``--db``): load, export, apply, history, diff,
revert, snapshots, constraints and ``--as-of``.

Most tests call :func:`hgm_engine.cli.app.main` in-process; the exit codes of ``hgm apply`` are
also checked through the real console script. Every test works on its own SQLite file under
``tmp_path``, on the spec's travel graph (or our research graph when the spec is absent).
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from hgm_engine.cli import EXIT_FAILURE, EXIT_OK, EXIT_QUERY_ERROR, EXIT_REFUSED, main
from hgm_engine.memory import Memory



def hgm_command() -> list[str]:
    """The installed ``hgm`` (next to this interpreter first, then on PATH), else ``python -m``."""
    beside = pathlib.Path(sys.executable).with_name("hgm")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("hgm")
    return [found] if found else [sys.executable, "-m", "hgm_engine"]


def run_hgm(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*hgm_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=120,
    )


def run_main(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, *args: object) -> tuple[int, dict]:
    code, out, _ = run_main(capsys, *args, "--json")
    lines = out.strip().splitlines()
    assert len(lines) == 1, out  # exactly one document on stdout
    return code, json.loads(lines[0])


@pytest.fixture
def graph_doc(travel_graph_path) -> dict:
    return json.loads(travel_graph_path.read_text(encoding="utf-8"))


@pytest.fixture
def ids(graph_doc) -> dict[str, str]:
    """A goal and two actions of the graph, whichever graph it is."""
    goals = [n["id"] for n in graph_doc["nodes"] if n["type"] == "goal"]
    actions = [n["id"] for n in graph_doc["nodes"] if n["type"] == "action"]
    return {"goal": goals[0], "action": actions[0], "other": actions[1]}


@pytest.fixture
def db(tmp_path, travel_graph_path, capsys) -> pathlib.Path:
    """A memory loaded from the graph file (t=1)."""
    path = tmp_path / "memory.db"
    code, out, err = run_main(capsys, "load", travel_graph_path, "--db", path)
    assert code == EXIT_OK, err
    return path


def write_tx(tmp_path: pathlib.Path, doc: object, name: str = "tx.json") -> pathlib.Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return path


def update(node_id: str, **changes) -> dict:
    return {"op": "update_node", "id": node_id, "set": changes}


def export(capsys, db: pathlib.Path, *extra: object) -> dict:
    code, out, err = run_main(capsys, "export", "--db", db, *extra)
    assert code == EXIT_OK, err
    return json.loads(out)


def current_t(db: pathlib.Path) -> int:
    with Memory.open(db) as memory:
        return memory.t


# -- load, query --db, export --------------------------------------------------------------------


def test_load_then_query_the_db(capsys, tmp_path, travel_graph_path, graph_doc):
    path = tmp_path / "m.db"
    code, doc = run_json(capsys, "load", travel_graph_path, "--db", path)
    assert code == EXIT_OK
    assert doc["committed"] is True and doc["t"] == 1
    assert doc["nodes"] == len(graph_doc["nodes"]) and doc["edges"] == len(graph_doc["edges"])
    assert (doc["total_nodes"], doc["total_edges"]) == (doc["nodes"], doc["edges"])

    expected = Memory.from_document(graph_doc).query("root.subgoals.actions").ids
    code, result = run_json(capsys, "query", "root.subgoals.actions", "--db", path)
    assert code == EXIT_OK
    assert result["kind"] == "nodes" and result["ids"] == expected

    code, out, _ = run_main(capsys, "query", "nodes.count()", "--db", path)
    assert (code, out.strip()) == (EXIT_OK, str(len(graph_doc["nodes"])))
    code, out, _ = run_main(capsys, "show", "--db", path)
    assert code == EXIT_OK and graph_doc["nodes"][0]["id"] in out


def test_load_text_output_names_the_file_and_counts(capsys, tmp_path, travel_graph_path, graph_doc):
    code, out, _ = run_main(capsys, "load", travel_graph_path, "--db", tmp_path / "m.db")
    assert code == EXIT_OK
    assert f"at t=1: {len(graph_doc['nodes'])} nodes" in out


def test_load_of_a_broken_file_lists_every_problem_and_loads_nothing(capsys, tmp_path):
    broken = write_tx(
        tmp_path,
        {
            "format": "hgm-graph/1",
            "nodes": [{"id": "g", "type": "goal"}, {"id": "x", "type": "place"}, {"id": "g", "type": "goal"}],
            "edges": [{"from": "g", "to": "nowhere", "type": "parent_of"}],
        },
        "broken.json",
    )
    path = tmp_path / "m.db"
    code, out, err = run_main(capsys, "load", broken, "--db", path)
    assert code == EXIT_FAILURE and out == ""
    assert "3 problems; nothing was loaded" in err
    for place in ("nodes[1]", "nodes[2]", "edges[0]"):
        assert place in err
    code, doc = run_json(capsys, "load", broken, "--db", path)
    assert code == EXIT_FAILURE
    assert doc["committed"] is False and doc["t"] is None
    assert [p["where"] for p in doc["error"]["problems"]] == ["nodes[1]", "nodes[2]", "edges[0]"]
    assert current_t(path) == 0


def test_load_of_invalid_json_shows_the_place(capsys, tmp_path):
    bad = write_tx(tmp_path, '{"format": "hgm-graph/1",\n "nodes": [}', "bad.json")
    code, out, err = run_main(capsys, "load", bad, "--db", tmp_path / "m.db")
    assert code == EXIT_FAILURE
    assert "invalid-json at line 2" in err and "^" in err


def test_load_into_a_memory_that_holds_something(capsys, db, tmp_path, travel_graph_path, graph_doc, ids):
    extra = write_tx(
        tmp_path,
        {
            "format": "hgm-graph/1",
            "nodes": [{"id": "g_new", "type": "goal", "content": "More"}, {"id": "a_new", "type": "action"}],
            "edges": [{"from": "g_new", "to": "a_new", "type": "parent_of", "order": 0}],
        },
        "extra.json",
    )
    code, doc = run_json(capsys, "load", extra, "--db", db)
    assert code == EXIT_OK and doc["t"] == 2
    assert doc["total_nodes"] == len(graph_doc["nodes"]) + 2
    assert export(capsys, db)["edges"][-1] == {"from": "g_new", "to": "a_new", "type": "parent_of", "order": 0}

    # The same file again: every node already there is named, and nothing is loaded.
    code, out, err = run_main(capsys, "load", travel_graph_path, "--db", db)
    assert code == EXIT_FAILURE
    assert f"{len(graph_doc['nodes'])} problems" in err and f"nodes[0]: node id {graph_doc['nodes'][0]['id']!r}" in err
    assert current_t(db) == 2


def test_export_round_trip(capsys, db, tmp_path, graph_doc):
    first = export(capsys, db)
    assert first["format"] == "hgm-graph/1"
    assert [n["id"] for n in first["nodes"]] == [n["id"] for n in graph_doc["nodes"]]
    copy = write_tx(tmp_path, first, "copy.json")
    second_db = tmp_path / "second.db"
    assert run_main(capsys, "load", copy, "--db", second_db)[0] == EXIT_OK
    assert export(capsys, second_db) == first
    code, out, _ = run_main(capsys, "export", "--db", second_db, "--compact")
    assert code == EXIT_OK and len(out.strip().splitlines()) == 1 and json.loads(out) == first


def test_export_as_of(capsys, db, tmp_path, ids):
    before = export(capsys, db)
    assert run_main(capsys, "apply", write_tx(tmp_path, {"ops": [update(ids["action"], note="x")]}), "--db", db)[0] == 0
    assert export(capsys, db) != before
    assert export(capsys, db, "--as-of", 1) == before
    assert export(capsys, db, "--as-of", 0) == {"format": "hgm-graph/1", "nodes": [], "edges": []}
    code, out, err = run_main(capsys, "export", "--db", db, "--as-of", 7)
    assert code == EXIT_FAILURE and out == "" and "outside the history" in err


def test_commands_that_read_refuse_a_missing_db(capsys, tmp_path):
    missing = tmp_path / "typo.db"
    for args in (
        ["query", "root", "--db", missing],
        ["export", "--db", missing],
        ["history", "--db", missing],
        ["diff", "0", "0", "--db", missing],
        ["revert", "1", "--db", missing],
        ["snapshots", "--db", missing],
        ["constraint", "list", "--db", missing],
    ):
        code, out, err = run_main(capsys, *args)
        assert code == EXIT_FAILURE, args
        assert "no memory at" in err + out
    assert not missing.exists()


def test_query_and_show_take_exactly_one_source(capsys, db, travel_graph_path):
    assert run_main(capsys, "query", "root", "--graph", travel_graph_path, "--db", db)[0] == EXIT_FAILURE
    assert run_main(capsys, "query", "root")[0] == EXIT_FAILURE
    assert run_main(capsys, "show", "--graph", travel_graph_path, "--db", db)[0] == EXIT_FAILURE
    code, doc = run_json(capsys, "query", "root", "--graph", travel_graph_path, "--as-of", "1")
    assert code == EXIT_FAILURE and doc["error"]["category"] == "invalid-argument" and "--db" in doc["error"]["message"]


def test_query_errors_on_a_db_keep_their_exit_codes(capsys, db):
    code, doc = run_json(capsys, "query", "root.subgoal", "--db", db)
    assert code == EXIT_QUERY_ERROR and doc["error"]["category"] == "unknown-name"
    code, doc = run_json(capsys, "query", "root", "--db", db, "--as-of", "nope")
    assert code == EXIT_FAILURE and doc["error"]["category"] == "unknown-snapshot"
    code, doc = run_json(capsys, "query", "root", "--db", db, "--as-of", "9")
    assert code == EXIT_FAILURE and doc["error"]["category"] == "invalid-argument"


# -- apply ---------------------------------------------------------------------------------------


def test_apply_commits_and_prints_the_report(capsys, db, tmp_path, ids):
    tx = {
        "author": "planner-1",
        "reason": "closed on Mondays",
        "ops": [
            update(ids["action"], day="Tue"),
            {"op": "add_node", "id": "a_new", "type": "action", "parent": ids["goal"], "status": "pending"},
        ],
    }
    code, report = run_json(capsys, "apply", write_tx(tmp_path, tx), "--db", db)
    assert code == EXIT_OK
    assert report["committed"] is True and report["t"] == 2
    assert (report["author"], report["reason"], report["violations"]) == ("planner-1", "closed on Mondays", [])
    kinds = [c["kind"] for c in report["changes"]]
    assert kinds == ["node_updated", "node_added", "edge_added"]
    assert report["changes"][0]["after"] == {"day": "Tue"}

    tx["ops"] = [update(ids["action"], day="Wed")]
    code, out, err = run_main(capsys, "apply", write_tx(tmp_path, tx), "--db", db)
    assert code == EXIT_OK and err == ""
    lines = out.splitlines()
    assert lines[0] == "committed t=3 by planner-1: closed on Mondays"
    assert lines[1].startswith(f"  ~ node {ids['action']}: day") and "Wed" in lines[1]


def test_apply_refused_by_constraints_exits_3_and_changes_nothing(capsys, db, tmp_path, ids):
    before = export(capsys, db)
    tx = write_tx(tmp_path, {"ops": [update(ids["action"], status="bogus"), update(ids["other"], status="nope")]})
    code, report = run_json(capsys, "apply", tx, "--db", db)
    assert code == EXIT_REFUSED
    assert report["committed"] is False and report["t"] is None
    assert {v["node"] for v in report["violations"]} == {ids["action"], ids["other"]}
    assert all(set(v) == {"constraint", "node", "message"} for v in report["violations"])
    code, out, err = run_main(capsys, "apply", tx, "--db", db)
    assert code == EXIT_REFUSED and out == ""
    assert "refused by constraints: 2 violations" in err and f"at {ids['other']}:" in err
    assert export(capsys, db) == before and current_t(db) == 1


def test_apply_malformed_exits_1_with_a_report_shaped_error(capsys, db, tmp_path, ids):
    tx = write_tx(tmp_path, {"author": "me", "base_t": 1, "ops": [{"op": "fly"}]})
    code, report = run_json(capsys, "apply", tx, "--db", db)
    assert code == EXIT_FAILURE
    assert (report["committed"], report["t"], report["author"], report["base_t"]) == (False, None, "me", 1)
    assert report["error"]["category"] == "invalid-transaction" and report["error"]["where"] == "ops[0]"
    code, report = run_json(capsys, "apply", write_tx(tmp_path, {"ops": [update("no-such-node", a=1)]}), "--db", db)
    assert code == EXIT_FAILURE and report["error"]["category"] == "unknown-node"

    broken = write_tx(tmp_path, '{"ops": [\n  {"op": "update_node",, }]}', "broken.json")
    code, report = run_json(capsys, "apply", broken, "--db", db)
    assert code == EXIT_FAILURE
    assert report["error"]["category"] == "invalid-json" and report["error"]["line"] == 2
    code, out, err = run_main(capsys, "apply", broken, "--db", db)
    assert code == EXIT_FAILURE and out == ""
    assert "invalid-json at line 2" in err and "^" in err and "nothing was committed" in err
    code, report = run_json(capsys, "apply", tmp_path / "absent.json", "--db", db)
    assert code == EXIT_FAILURE and report["error"]["category"] == "io"
    assert current_t(db) == 1


def test_apply_conflict_with_base_t_exits_1(capsys, db, tmp_path, ids):
    assert run_main(capsys, "apply", write_tx(tmp_path, {"ops": [update(ids["action"], day="Tue")]}), "--db", db)[0] == 0
    stale = write_tx(tmp_path, {"base_t": 1, "ops": [update(ids["action"], day="Wed")]})
    code, report = run_json(capsys, "apply", stale, "--db", db)
    assert code == EXIT_FAILURE
    assert report["committed"] is False and report["t"] is None and report["base_t"] == 1
    assert report["error"]["category"] == "conflict"
    code, out, err = run_main(capsys, "apply", stale, "--db", db)
    assert code == EXIT_FAILURE and "conflict" in err
    # Touching something else since base_t is no conflict.
    fine = write_tx(tmp_path, {"base_t": 1, "ops": [update(ids["other"], day="Wed")]})
    code, report = run_json(capsys, "apply", fine, "--db", db)
    assert code == EXIT_OK and report["t"] == 3


def test_apply_dry_run_changes_nothing(capsys, db, tmp_path, ids):
    before = export(capsys, db)
    tx = write_tx(tmp_path, {"ops": [update(ids["action"], day="Sun")]})
    code, report = run_json(capsys, "apply", tx, "--db", db, "--dry-run")
    assert code == EXIT_OK
    assert report["committed"] is False and report["t"] is None and report["dry_run"] is True
    assert report["changes"][0]["after"] == {"day": "Sun"}
    code, out, _ = run_main(capsys, "apply", tx, "--db", db, "--dry-run")
    assert code == EXIT_OK and out.startswith("dry run: would commit 1 change; nothing was written")
    refused = write_tx(tmp_path, {"ops": [update(ids["action"], status="bogus")]})
    assert run_main(capsys, "apply", refused, "--db", db, "--dry-run")[0] == EXIT_REFUSED
    assert export(capsys, db) == before and current_t(db) == 1
    # A dry run against a memory that does not exist yet leaves no file behind.
    fresh = tmp_path / "fresh.db"
    new = write_tx(tmp_path, {"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    code, report = run_json(capsys, "apply", new, "--db", fresh, "--dry-run")
    assert code == EXIT_OK and report["changes"][0]["kind"] == "node_added"
    assert not fresh.exists()


def test_apply_reads_standard_input(capsys, monkeypatch, db, ids):
    tx = {"author": "stdin", "ops": [update(ids["action"], day="Fri")]}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(tx)))
    code, report = run_json(capsys, "apply", "-", "--db", db)
    assert code == EXIT_OK and report["t"] == 2 and report["author"] == "stdin"
    monkeypatch.setattr(sys, "stdin", io.StringIO("{not json"))
    code, report = run_json(capsys, "apply", "-", "--db", db)
    assert code == EXIT_FAILURE and "standard input" in report["error"]["message"]


def test_apply_creates_the_db(capsys, tmp_path):
    path = tmp_path / "new.db"
    tx = write_tx(tmp_path, {"ops": [{"op": "add_node", "id": "g", "type": "goal", "content": "From scratch"}]})
    code, report = run_json(capsys, "apply", tx, "--db", path)
    assert code == EXIT_OK and report["t"] == 1
    assert export(capsys, path)["nodes"] == [{"id": "g", "type": "goal", "content": "From scratch"}]


def test_apply_exit_codes_through_the_real_command(db, tmp_path, ids):
    ok = write_tx(tmp_path, {"ops": [update(ids["action"], day="Sat")]}, "ok.json")
    refused = write_tx(tmp_path, {"ops": [update(ids["action"], status="bogus")]}, "refused.json")
    malformed = write_tx(tmp_path, {"ops": [{"op": "fly"}]}, "malformed.json")
    result = run_hgm("apply", str(ok), "--db", str(db), "--json")
    assert result.returncode == EXIT_OK, result.stderr
    assert json.loads(result.stdout)["t"] == 2
    result = run_hgm("apply", str(refused), "--db", str(db), "--json")
    assert result.returncode == EXIT_REFUSED
    assert json.loads(result.stdout)["violations"][0]["node"] == ids["action"]
    result = run_hgm("apply", str(malformed), "--db", str(db))
    assert result.returncode == EXIT_FAILURE and result.stdout == ""
    assert "invalid-transaction at ops[0]" in result.stderr


def test_apply_from_a_pipe_through_the_real_command(db, ids):
    tx = json.dumps({"ops": [update(ids["action"], day="Thu")]})
    result = run_hgm("apply", "-", "--db", str(db), stdin=tx)
    assert result.returncode == EXIT_OK, result.stderr
    assert result.stdout.startswith("committed t=2")


# -- history, diff, revert, snapshots -------------------------------------------------------------


@pytest.fixture
def changed(capsys, db, tmp_path, ids) -> pathlib.Path:
    """t=2 moves the action to Tuesday, t=3 changes the other action."""
    for number, op in enumerate([update(ids["action"], day="Tue"), update(ids["other"], note="call first")]):
        tx = {"author": f"agent-{number}", "reason": f"change {number}", "ops": [op]}
        assert run_main(capsys, "apply", write_tx(tmp_path, tx), "--db", db)[0] == EXIT_OK
    return db


def test_history_lists_every_commit(capsys, changed):
    code, doc = run_json(capsys, "history", "--db", changed)
    assert code == EXIT_OK and doc["t"] == 3
    commits = doc["commits"]
    assert [(c["t"], c["kind"], c["changes"]) for c in commits] == [(1, "load", None), (2, "transaction", 1), (3, "transaction", 1)]
    assert commits[1]["author"] == "agent-0" and commits[1]["reason"] == "change 0"
    assert commits[0]["time"].endswith("Z")
    code, out, _ = run_main(capsys, "history", "--db", changed)
    lines = out.splitlines()
    assert lines[0].split() == ["T", "KIND", "CHANGES", "TIME", "AUTHOR", "REASON"]
    assert lines[2].split()[:3] == ["2", "transaction", "1"] and lines[2].endswith("change 0")
    assert lines[-1] == "(3 commits; the memory is at t=3)"
    code, doc = run_json(capsys, "history", "--db", changed, "--last", "1")
    assert [c["t"] for c in doc["commits"]] == [3]
    code, doc = run_json(capsys, "history", "--db", changed, "--since", "1")
    assert [c["t"] for c in doc["commits"]] == [2, 3]


def test_history_of_one_node(capsys, changed, ids):
    code, doc = run_json(capsys, "history", ids["action"], "--db", changed)
    assert code == EXIT_OK and doc["id"] == ids["action"]
    assert [entry["t"] for entry in doc["history"]] == [1, 2]
    assert doc["history"][0]["changes"] == [{"kind": "loaded", "id": ids["action"]}]
    assert doc["history"][1]["changes"][0]["after"] == {"day": "Tue"}
    code, out, _ = run_main(capsys, "history", ids["action"], "--db", changed)
    assert out.startswith(f"history of {ids['action']} (2 commits; now:")
    assert "(in the initial load)" in out and "by agent-0: change 0" in out
    code, doc = run_json(capsys, "history", "no-such-node", "--db", changed)
    assert code == EXIT_FAILURE and doc["error"]["category"] == "unknown-node"


def test_diff_by_t_and_by_snapshot_name(capsys, changed, ids):
    code, doc = run_json(capsys, "diff", "1", "3", "--db", changed)
    assert code == EXIT_OK and (doc["from"], doc["to"]) == (1, 3)
    assert sorted(c["id"] for c in doc["changes"]) == sorted([ids["action"], ids["other"]])
    assert run_main(capsys, "snapshot", "moved", "--t", "2", "--db", changed)[0] == EXIT_OK
    code, doc = run_json(capsys, "diff", "moved", "3", "--db", changed)
    assert (doc["from"], doc["to"]) == (2, 3)
    assert [c["id"] for c in doc["changes"]] == [ids["other"]]
    code, out, _ = run_main(capsys, "diff", "moved", "1", "--db", changed)
    assert out.splitlines()[0] == "from t=2 (moved) → t=1: 1 change"
    assert out.splitlines()[1].startswith(f"  ~ node {ids['action']}: day")
    code, doc = run_json(capsys, "diff", "nope", "1", "--db", changed)
    assert code == EXIT_FAILURE and doc["error"]["category"] == "unknown-snapshot"


def test_revert(capsys, changed, tmp_path, ids):
    code, report = run_json(capsys, "revert", "3", "--db", changed, "--author", "me", "--reason", "undo the note")
    assert code == EXIT_OK
    assert (report["committed"], report["t"], report["author"], report["reason"]) == (True, 4, "me", "undo the note")
    assert report["changes"][0]["before"] == {"note": "call first"}
    code, doc = run_json(capsys, "diff", "2", "4", "--db", changed)
    assert doc["changes"] == []
    code, out, _ = run_main(capsys, "revert", "2", "--db", changed)
    assert code == EXIT_OK and out.startswith("committed t=5: revert t=2")
    # Changed again since: a conflict. The initial load and unknown commits are refused too.
    assert run_main(capsys, "apply", write_tx(tmp_path, {"ops": [update(ids["action"], day="Fri")]}), "--db", changed)[0] == 0
    assert run_main(capsys, "apply", write_tx(tmp_path, {"ops": [update(ids["action"], day="Sun")]}), "--db", changed)[0] == 0
    code, report = run_json(capsys, "revert", "6", "--db", changed)
    assert code == EXIT_FAILURE and report["committed"] is False and report["error"]["category"] == "conflict"
    code, report = run_json(capsys, "revert", "1", "--db", changed)
    assert code == EXIT_FAILURE and report["t"] is None and "loaded the memory" in report["error"]["message"]
    code, report = run_json(capsys, "revert", "99", "--db", changed)
    assert code == EXIT_FAILURE and report["error"]["category"] == "invalid-argument"
    assert run_main(capsys, "revert", "zero", "--db", changed)[0] == EXIT_FAILURE


def test_revert_refused_by_constraints_exits_3(capsys, db, tmp_path, ids):
    for content in ("x", "z"):  # t=2, t=3
        tx = write_tx(tmp_path, {"ops": [update(ids["goal"], content=content)]})
        assert run_main(capsys, "apply", tx, "--db", db)[0] == EXIT_OK
    assert run_main(capsys, "constraint", "add", "no_x", "each goal must content != 'x'", "--db", db)[0] == EXIT_OK
    code, report = run_json(capsys, "revert", "3", "--db", db)  # would bring content 'x' back
    assert code == EXIT_REFUSED
    assert report["committed"] is False and report["t"] is None
    assert report["violations"][0]["constraint"] == "no_x" and report["violations"][0]["node"] == ids["goal"]
    code, out, err = run_main(capsys, "revert", "3", "--db", db)
    assert code == EXIT_REFUSED and "refused by constraints: 1 violation" in err
    assert current_t(db) == 3


def test_snapshot_and_query_as_of_the_name(capsys, db, tmp_path, ids):
    code, out, _ = run_main(capsys, "snapshot", "start", "--db", db)
    assert (code, out.strip()) == (EXIT_OK, "snapshot 'start' names t=1")
    assert run_main(capsys, "apply", write_tx(tmp_path, {"ops": [update(ids["action"], day="Sun")]}), "--db", db)[0] == 0
    expr = f"#{ids['action']}"
    code, now = run_json(capsys, "query", expr, "--db", db)
    code, then = run_json(capsys, "query", expr, "--db", db, "--as-of", "start")
    assert code == EXIT_OK and now["nodes"][0]["day"] == "Sun" and then["nodes"][0].get("day") != "Sun"
    code, at_1 = run_json(capsys, "query", expr, "--db", db, "--as-of", "1")
    assert at_1 == then
    assert export(capsys, db, "--as-of", "start") == export(capsys, db, "--as-of", "1")
    code, out, _ = run_main(capsys, "show", "--db", db, "--as-of", "start", "--root", ids["goal"])
    assert code == EXIT_OK and out.startswith(ids["goal"])

    code, doc = run_json(capsys, "snapshot", "start", "--db", db)
    assert doc == {"name": "start", "t": 2, "previous": 1}
    code, doc = run_json(capsys, "snapshots", "--db", db)
    assert doc == {"t": 2, "snapshots": [{"name": "start", "t": 2}]}
    code, out, _ = run_main(capsys, "snapshots", "--db", db)
    assert out.splitlines()[1].split() == ["start", "2"]
    assert run_json(capsys, "snapshot", "12", "--db", db)[0] == EXIT_FAILURE
    assert run_json(capsys, "snapshot", "later", "--t", "9", "--db", db)[0] == EXIT_FAILURE


# -- constraints ---------------------------------------------------------------------------------


def test_constraint_add_list_remove(capsys, db, tmp_path, ids):
    text = "each goal must content != 'forbidden words'"
    code, doc = run_json(capsys, "constraint", "add", "clean", text, "--db", db)
    assert code == EXIT_OK and doc == {"added": True, "name": "clean", "text": text, "replaced": None}
    code, doc = run_json(capsys, "constraint", "list", "--db", db)
    assert doc == {"constraints": [{"name": "clean", "text": text}]}
    code, out, _ = run_main(capsys, "constraint", "list", "--db", db)
    assert out.split(None, 1) == ["clean", text + "\n"]

    # Every later transaction is checked against it (and it survives reopening the file).
    tx = write_tx(tmp_path, {"ops": [update(ids["goal"], content="forbidden words")]})
    code, report = run_json(capsys, "apply", tx, "--db", db)
    assert code == EXIT_REFUSED and report["violations"][0]["constraint"] == "clean"

    code, out, _ = run_main(capsys, "constraint", "remove", "clean", "--db", db)
    assert (code, out.strip()) == (EXIT_OK, f"removed constraint clean: {text}")
    assert run_json(capsys, "constraint", "list", "--db", db)[1] == {"constraints": []}
    assert run_json(capsys, "apply", tx, "--db", db)[0] == EXIT_OK
    code, doc = run_json(capsys, "constraint", "remove", "clean", "--db", db)
    assert code == EXIT_FAILURE and doc["error"]["category"] == "unknown-name"


def test_constraint_that_is_already_broken_is_refused_with_every_violation(capsys, db, graph_doc):
    goals = [n["id"] for n in graph_doc["nodes"] if n["type"] == "goal" and n.get("content") != "nothing"]
    code, doc = run_json(capsys, "constraint", "add", "impossible", "each goal must content = 'nothing'", "--db", db)
    assert code == EXIT_REFUSED and doc["added"] is False
    assert [v["node"] for v in doc["violations"]] == goals
    code, out, err = run_main(capsys, "constraint", "add", "impossible", "each goal must content = 'nothing'", "--db", db)
    assert code == EXIT_REFUSED and out == ""
    assert f"{len(goals)} violation" in err and all(f"impossible at {goal}:" in err for goal in goals)
    assert run_json(capsys, "constraint", "list", "--db", db)[1] == {"constraints": []}


def test_constraint_syntax_error_shows_the_caret(capsys, db):
    code, out, err = run_main(capsys, "constraint", "add", "bad", "each goal must status = ", "--db", db)
    assert code == EXIT_QUERY_ERROR and out == ""
    lines = err.splitlines()
    assert lines[0].startswith("error: syntax at line 1, column 25")
    assert lines[1].strip() == "each goal must status =" and lines[2].index("^") == 4 + 24
    code, doc = run_json(capsys, "constraint", "add", "bad", "each gaol must status = 'x'", "--db", db)
    assert code == EXIT_QUERY_ERROR
    assert doc["error"]["category"] == "unknown-name" and doc["error"]["column"] == 6


def test_constraint_add_creates_the_db(capsys, tmp_path):
    path = tmp_path / "rules.db"
    assert run_main(capsys, "constraint", "add", "c", "each goal must content != 'x'", "--db", path)[0] == EXIT_OK
    assert run_json(capsys, "constraint", "list", "--db", path)[1]["constraints"][0]["name"] == "c"


def test_help_of_every_new_command_has_examples(capsys):
    for command in (
        ["load"], ["export"], ["apply"], ["history"], ["diff"], ["revert"], ["snapshot"], ["snapshots"],
        ["constraint"], ["constraint", "add"], ["constraint", "list"], ["constraint", "remove"],
    ):
        code, out, _ = run_main(capsys, *command, "--help")
        assert code == EXIT_OK
        assert "examples:" in out and "exit codes:" in out, command
