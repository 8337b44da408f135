"""``hgm serve --workers N``: several server processes behind one port (issue 7).

The supervisor accepts connections and hands them to the workers in turn; every worker
keeps the memory in RAM and catches up with the others' commits through the store before
it answers, so a client sees every commit acknowledged before it asked, whichever worker
answers. A worker that dies is started again; SIGTERM stops them all gracefully.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("fastapi")

from hgm_engine import Memory  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]


def _start(db: pathlib.Path, log_path: pathlib.Path, *extra: str) -> tuple[subprocess.Popen, int]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("HGM_TOKEN", None)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "hgm_engine.server.rest", "--db", str(db), "--port", "0", *extra],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(REPO),
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, log_path.read_text()
        for line in log_path.read_text().splitlines():
            if "listening on http://" in line:
                return process, int(line.rsplit(":", 1)[1])
        time.sleep(0.05)
    process.kill()
    raise AssertionError(log_path.read_text())


def _call(port: int, path: str, body=None):
    """One request on a new connection (so the supervisor hands it to the next worker)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, headers={"Content-Type": "application/json"}
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())
        except (urllib.error.URLError, ConnectionError):  # a worker still starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _pids(port: int, n: int) -> list[int]:
    return [_call(port, "/health")[1]["pid"] for _ in range(n)]


def test_workers_share_one_port_and_every_answer_includes_every_acknowledged_commit(tmp_path):
    db = tmp_path / "memory.db"
    with Memory.open(db) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "n", "type": "fact", "parent": "g", "v": 0}]})
    process, port = _start(db, tmp_path / "server.log", "--workers", "2")
    try:
        pids = _pids(port, 6)
        assert len(set(pids)) == 2 and process.pid not in pids
        assert pids[0::2] == [pids[0]] * 3 and pids[1::2] == [pids[1]] * 3  # handed over in turn

        for i in range(1, 16):
            status, report = _call(port, "/api/v1/transactions", {"ops": [
                {"op": "update_node", "id": "n", "set": {"v": i}},
                {"op": "add_node", "id": f"a{i}", "type": "action", "parent": "g"},
            ]})
            assert status == 200, report
            # The next connection goes to the other worker: it must already see this commit.
            status, doc = _call(port, "/api/v1/query", {"expr": "#g.children"})
            assert status == 200 and doc["t"] == report["t"]
            assert doc["ids"] == ["n"] + [f"a{k}" for k in range(1, i + 1)]
            assert doc["nodes"][0] == {"id": "n", "type": "fact", "v": i}
            assert _call(port, "/api/v1/nodes/n")[1]["v"] == i

        # A commit from another process (here: this test) is seen by every worker.
        with Memory.open(db) as other:
            t = other.apply({"ops": [{"op": "update_node", "id": "n", "set": {"v": 100}}]}).t
        for _ in range(4):
            status, doc = _call(port, "/api/v1/query", {"expr": "#n", "nodes": True})
            assert (doc["t"], doc["nodes"][0]["v"]) == (t, 100)

        # A worker that dies is started again; the service keeps answering meanwhile.
        victim = pids[0]
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            current = set(_pids(port, 4))
            if victim not in current and len(current) == 2:
                break
            time.sleep(0.1)
        assert victim not in current and len(current) == 2

        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = (tmp_path / "server.log").read_text()
    assert f"worker {victim} exited with -9" in log and "stopped on signal" in log
    for pid in current:  # no worker is left behind
        assert not pathlib.Path(f"/proc/{pid}").exists() or "zombie" in pathlib.Path(f"/proc/{pid}/status").read_text()
    with Memory.open(db) as reopened:
        assert reopened.t == t and reopened.node("n")["v"] == 100


def test_workers_must_be_at_least_one(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "hgm_engine.server.rest", "--db", str(tmp_path / "m.db"), "--workers", "0"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        cwd=str(REPO),
        timeout=60,
    )
    assert result.returncode == 2 and "--workers must be at least 1" in result.stderr
