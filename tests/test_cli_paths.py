"""``hgm ingest``, ``locate``, ``paths``, ``path``, ``outcome``, ``rollback``, ``rewrite-path``,
``path-reset``."""

from __future__ import annotations

import json
import pathlib

import pytest

from hgm_engine.cli import main
from hgm_engine.memory import Memory
from hgm_engine.paths import INDEX_META_KEY

TASKPLAN = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "taskplan"

LINES = [
    {"id": "order-17", "goal": "Check the status of order A1001 and tell the user",
     "steps": [{"name": "query_order", "content": "call the order API"}, {"name": "check_result"},
               {"name": "notify_user"}], "tags": ["order", "query"], "result": "success", "reward": 1.0},
    {"id": "refund-3", "goal": "Refund a damaged item", "steps": [{"name": "check_refund_policy"},
                                                              {"name": "apply_refund"}], "tags": ["refund"]},
]


def _file(tmp_path, lines) -> str:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return str(path)


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_ingest_then_locate_prints_the_formats_document(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    assert main(["ingest", _file(tmp_path, LINES), "--db", db, "--json"]) == 0
    report = _json(capsys)
    assert report["ingested"] == ["order-17", "refund-3"] and report["t"] == 1 and report["problems"] == []
    assert main(["locate", "what is the status of order B7", "--db", db, "--tags", "order,query", "--k", "2",
                 "--json"]) == 0
    doc = _json(capsys)
    best = doc["matches"][0]
    assert best["path"] == "order-17" and best["steps"] == ["query_order", "check_result", "notify_user"]
    assert {"path", "score", "goal", "steps", "breakdown"} <= set(best) and best["breakdown"]["tags"] == 1.0
    assert main(["locate", "what is the status of order B7", "--db", db]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1. order-17  score ") and "text " in out
    # locate built the index lazily and stored it with the memory.
    with Memory.open(db) as memory:
        assert json.loads(memory.store.get_meta(INDEX_META_KEY))["t"] == 1


def test_malformed_lines_exit_1_with_line_numbers_and_skip_invalid_ingests_the_rest(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    path = _file(tmp_path, [LINES[0], "{oops", {"id": "x", "steps": []}, LINES[1]])
    assert main(["ingest", path, "--db", db]) == 1
    err = capsys.readouterr().err
    assert "2 problems; nothing was ingested" in err
    assert "line 2: invalid-json" in err and "line 3 (x): bad-trajectory" in err
    assert main(["ingest", path, "--db", db, "--json"]) == 1
    doc = _json(capsys)
    assert [(p["line"], p["category"]) for p in doc["problems"]] == [(2, "invalid-json"), (3, "bad-trajectory")]
    assert doc["ingested"] == [] and doc["error"]["category"] == "invalid-json"
    # Nothing was committed, so no memory was made (a failed first command leaves no file).
    assert main(["paths", "--db", db, "--json"]) == 1 and "no memory at" in _json(capsys)["error"]["message"]
    assert main(["ingest", path, "--db", db, "--skip-invalid"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "ingested 2 paths at t=1" and "skipped 2 lines" in captured.err
    assert main(["ingest", "--db", db]) == 1
    assert main(["ingest", str(tmp_path / "missing.jsonl"), "--db", db]) == 1
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.skipif(not (TASKPLAN / "tmdb").is_dir(), reason="../shared/data/taskplan is absent")
def test_ingest_taskplan_and_locate(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    assert main(["ingest", "--taskplan", str(TASKPLAN / "tmdb"), "--db", db, "--json"]) == 0
    assert _json(capsys)["count"] == 100
    assert main(["locate", "Who was the lead actor in the movie The Dark Knight?", "--db", db, "--json"]) == 0
    assert _json(capsys)["matches"][0]["steps"] == ["SearchMovie", "GetMovieCredit"]


def test_rewrite_outcome_rollback_and_guards_from_the_command_line(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    assert main(["ingest", _file(tmp_path, LINES), "--db", db]) == 0
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps([{"keep": 0}, {"add": {"name": "check_cache"}, "after": 0}, {"keep": 2}]))
    capsys.readouterr()
    assert main(["rewrite-path", "order-17", "--steps", str(steps), "--reason", "cache first", "--db", db,
                 "--json"]) == 0
    report = _json(capsys)
    assert report["committed"] and report["path"] == "order-17@v2"
    assert main(["path", "order-17", "--db", db, "--json"]) == 0
    path = _json(capsys)
    assert path["id"] == "order-17@v2" and path["lineage"] == ["order-17", "order-17@v2"]
    assert [s["name"] for s in path["steps"]] == ["query_order", "check_cache", "check_result", "notify_user"]
    assert main(["path", "order-17", "--db", db]) == 0
    text = capsys.readouterr().out
    assert "order-17@v2  version 2  active" in text and "* v2 order-17@v2" in text and "cache first" in text

    assert main(["outcome", "order-17", "failure", "--db", db]) == 0
    assert capsys.readouterr().out.startswith("t=3: failure recorded on order-17")
    assert main(["outcome", "order-17", "meh", "--db", db]) == 1  # argparse choices
    capsys.readouterr()

    assert main(["rollback", "order-17", "1", "--db", db, "--reason", "v2 failed", "--json"]) == 0
    assert _json(capsys)["path"] == "order-17@v3"
    assert main(["paths", "--db", db, "--all", "--metrics", "--json"]) == 0
    doc = _json(capsys)
    assert {p["id"] for p in doc["paths"]} == {"order-17", "order-17@v2", "order-17@v3", "refund-3"}
    assert doc["metrics"]["versions_per_lineage"] == {"order-17": 3} and doc["metrics"]["rollbacks"] == 1
    assert main(["paths", "--db", db]) == 0
    listing = capsys.readouterr().out
    assert "order-17@v3  v3/3  active" in listing and "order-17@v2" not in listing

    # Guards refuse with exit 3, like constraints (default max_versions=10; the lineage has 3);
    # an unknown path exits 1.
    for n in range(7):
        steps.write_text(json.dumps(["a", f"b{n}"]))
        assert main(["rewrite-path", "order-17", "--steps", str(steps), "--reason", "r", "--db", db]) == 0
    capsys.readouterr()
    assert main(["rewrite-path", "order-17", "--steps", str(steps), "--reason", "r", "--db", db, "--json"]) == 3
    doc = _json(capsys)
    assert doc["committed"] is False and doc["t"] is None and doc["error"]["category"] == "version-cap"
    assert main(["rewrite-path", "nope", "--steps", str(steps), "--reason", "r", "--db", db]) == 1
    assert "unknown-path" in capsys.readouterr().err
    steps.write_text("{not json")
    assert main(["rewrite-path", "refund-3", "--steps", str(steps), "--reason", "r", "--db", db, "--json"]) == 1
    assert _json(capsys)["error"]["category"] == "invalid-json"


def test_needs_human_and_path_reset(tmp_path, capsys):
    db = str(tmp_path / "m.db")
    assert main(["ingest", _file(tmp_path, LINES), "--db", db]) == 0
    steps = tmp_path / "steps.json"
    for n in range(3):
        steps.write_text(json.dumps(["check_refund_policy", f"try_{n}"]))
        assert main(["rewrite-path", "refund-3", "--steps", str(steps), "--reason", f"try {n}", "--db", db]) == 0
        assert main(["outcome", "refund-3", "failure", "--db", db]) == 0
    capsys.readouterr()
    steps.write_text(json.dumps(["check_refund_policy", "try_again"]))
    assert main(["rewrite-path", "refund-3", "--steps", str(steps), "--reason", "again", "--db", db]) == 3
    assert "needs-human" in capsys.readouterr().err
    assert main(["paths", "--db", db, "--metrics"]) == 0
    assert "needs_human: refund-3" in capsys.readouterr().out
    assert main(["path-reset", "refund-3", "--db", db, "--reason", "looked at it"]) == 0
    assert main(["path-reset", "refund-3", "--db", db]) == 1
    assert main(["rewrite-path", "refund-3", "--steps", str(steps), "--reason", "again", "--db", db]) == 0
