"""Long commands show progress to a person at a terminal and nothing to a pipe: ``hgm load``
and ``hgm ingest`` draw their phases on standard error when it is a terminal (a fake one
here), and a pipe (a real one, through the installed command) gets exactly the output it got
before."""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys

import pytest

from hgm_engine.cli import main
from hgm_engine.cli.progress import PROGRESS_ENV, ProgressDisplay

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # the benchmarks are imported from the repository
    sys.path.insert(0, str(REPO))


class FakeTerminal(io.StringIO):
    """Standard error as a terminal would be: it says it is one."""

    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


def graph_file(tmp_path, nodes: int = 3000) -> str:
    doc = {"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}
    for i in range(nodes):
        doc["nodes"].append({"id": f"a{i}", "type": "action", "status": "pending"})
        doc["edges"].append({"from": "g", "to": f"a{i}", "type": "parent_of"})
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    return str(path)


def trajectories_file(tmp_path, count: int = 300) -> str:
    path = tmp_path / "runs.jsonl"
    lines = [json.dumps({"id": f"run-{i}", "goal": f"order {i}", "steps": ["look_up", "reply"]}) for i in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def terminal(monkeypatch):
    """Makes standard error a fake terminal when called, inside the test: pytest's capture
    takes sys.stderr back between the fixtures and the test."""
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    monkeypatch.delenv("TERM", raising=False)

    def make() -> FakeTerminal:
        fake = FakeTerminal()
        monkeypatch.setattr(sys, "stderr", fake)
        return fake

    return make


def test_load_on_a_terminal_shows_its_phases(tmp_path, terminal, capsys):
    terminal = terminal()
    assert main(["load", graph_file(tmp_path), "--db", str(tmp_path / "m.db")]) == 0
    drawn = terminal.getvalue()
    for phase in ("reading", "checking the graph", "building the graph", "checking constraints", "writing to the store"):
        assert phase in drawn, drawn[-500:]
    assert capsys.readouterr().out.startswith("loaded ")  # the result itself is untouched


def test_loading_into_a_memory_that_holds_something_shows_the_nodes_added(tmp_path, terminal, capsys):
    terminal = terminal()
    db = str(tmp_path / "m.db")
    first = tmp_path / "first.json"
    first.write_text(json.dumps({"format": "hgm-graph/1", "nodes": [{"id": "x", "type": "goal"}], "edges": []}))
    assert main(["load", str(first), "--db", db]) == 0
    assert main(["load", graph_file(tmp_path, 500), "--db", db]) == 0
    assert "adding nodes and edges" in terminal.getvalue()


def test_ingest_on_a_terminal_shows_its_phases(tmp_path, terminal, capsys):
    terminal = terminal()
    assert main(["ingest", trajectories_file(tmp_path), "--db", str(tmp_path / "m.db")]) == 0
    drawn = terminal.getvalue()
    assert "checking trajectories" in drawn and "adding paths" in drawn and "300/300" in drawn
    assert capsys.readouterr().out == "ingested 300 paths at t=1\n"


def test_hgm_progress_0_turns_the_display_off_on_a_terminal(tmp_path, terminal, monkeypatch, capsys):
    monkeypatch.setenv(PROGRESS_ENV, "0")
    terminal = terminal()
    assert main(["load", graph_file(tmp_path, 50), "--db", str(tmp_path / "m.db")]) == 0
    assert terminal.getvalue() == ""


def hgm(*args: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != PROGRESS_ENV}
    return subprocess.run([sys.executable, "-m", "hgm_engine", *args], capture_output=True, text=True,
                          env=environment, timeout=120)


def test_a_pipe_gets_no_progress(tmp_path):
    run = hgm("load", graph_file(tmp_path), "--db", str(tmp_path / "m.db"))
    assert run.returncode == 0 and run.stderr == ""
    assert run.stdout.startswith("loaded ") and run.stdout.count("\n") == 1
    run = hgm("ingest", trajectories_file(tmp_path), "--db", str(tmp_path / "paths.db"), "--json")
    assert run.returncode == 0 and run.stderr == ""
    assert json.loads(run.stdout)["count"] == 300


def test_the_display_passes_on_at_most_ten_updates_a_second_per_phase():
    display = ProgressDisplay(FakeTerminal(), enabled=True)
    with display:
        seen = []
        original = display._progress.update
        display._progress.update = lambda *a, **k: (seen.append(k.get("completed")), original(*a, **k))
        for done in range(1, 10_001):
            display.callback("counting", done, 10_000)
    assert 1 <= len(seen) <= 20 and seen[-1] == 10_000  # the last one always shows


def test_benchmarks_show_their_steps_on_a_terminal_and_nothing_on_a_pipe(terminal):
    from bench.progress import tracked

    fake = terminal()
    assert list(tracked(range(5), "sizes")) == [0, 1, 2, 3, 4]
    assert "sizes" in fake.getvalue() and "5/5" in fake.getvalue()
    piped = io.StringIO()
    sys.stderr = piped  # monkeypatch puts the real one back afterwards
    assert list(tracked(range(5), "sizes")) == [0, 1, 2, 3, 4] and piped.getvalue() == ""
