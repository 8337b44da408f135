"""Deployment (issue 13, item 8): the application factory under real uvicorn, configured by
environment variables, and ``hgm serve --workers`` with scoped tokens over many memories."""

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

pytest.importorskip("uvicorn")

from hgm_engine import open_store  # noqa: E402
from hgm_engine.server.rest.memories import memory_url  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
WRITER, READER = "writer-token-0123456789", "reader-token-0123456789"


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HGM_")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def _wait_for_port(process: subprocess.Popen, log: pathlib.Path, marker: str) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        for line in text.splitlines():
            if marker in line:
                return int(line.split(marker, 1)[1].split()[0].rsplit(":", 1)[1])
        assert process.poll() is None, text
        time.sleep(0.05)
    process.kill()
    raise AssertionError(log.read_text())


def _call(port: int, method: str, path: str, body=None, token: str | None = None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


@pytest.fixture
def store(tmp_path) -> tuple[str, str]:
    db = str(tmp_path / "memories.db")
    with open_store(db) as memories:
        for name in ("acme/alice", "acme/bob", "zed"):
            memories.create(name).close()
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{WRITER} acme write\n{READER} acme/alice read\n")
    return db, str(tokens)


def test_the_factory_runs_under_uvicorn_configured_by_the_environment(store, tmp_path):
    db, tokens = store
    log = tmp_path / "uvicorn.log"
    env = _environment(HGM_DB=db, HGM_MAX_OPEN="1", HGM_TOKEN_FILE=tokens, HGM_MEMORY="acme/bob")
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "hgm_engine.server.rest:create_app", "--host", "127.0.0.1", "--port", "0"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path),
        )
    try:
        port = _wait_for_port(process, log, "Uvicorn running on ")
        alice = memory_url("acme/alice")
        assert _call(port, "POST", f"{alice}/query", {"expr": "root"})[0] == 401
        assert _call(port, "POST", f"{alice}/transactions", {"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}, WRITER)[1]["t"] == 1
        assert _call(port, "POST", f"{memory_url('zed')}/query", {"expr": "root"}, WRITER)[0] == 403
        assert _call(port, "POST", f"{alice}/transactions", {"ops": [{"op": "add_node", "type": "fact"}]}, READER)[0] == 403
        assert _call(port, "GET", "/api/v1/memories", token=READER)[1]["memories"] == ["acme/alice"]
        # HGM_MEMORY: the unprefixed routes are acme/bob; HGM_MAX_OPEN=1: alice is evicted and reopened
        assert _call(port, "POST", "/api/v1/transactions", {"ops": [{"op": "add_node", "id": "b", "type": "goal"}]}, WRITER)[1]["t"] == 1
        assert _call(port, "POST", f"{alice}/query", {"expr": "root"}, READER)[1]["ids"] == ["g"]
        # uvicorn stops gracefully on SIGTERM, then raises the signal again (status -15)
        assert _stop(process) in (0, -signal.SIGTERM)
        assert "Application shutdown complete" in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
    with open_store(db) as memories, memories.open("acme/bob") as bob:
        assert bob.query("root").ids == ["b"]


def test_the_factory_refuses_bad_settings_with_a_line_and_no_traceback(store, capsys):
    from hgm_engine.server.rest.factory import app_from_environment

    db, _ = store
    for env, expected in (
        ({}, "HGM_DB is not set"),
        ({"HGM_DB": db, "HGM_MAX_OPEN": "many"}, "HGM_MAX_OPEN is a whole number"),
        ({"HGM_DB": db, "HGM_QUERY_TIMEOUT": "nan"}, "HGM_QUERY_TIMEOUT must be a finite number"),
        ({"HGM_DB": db, "HGM_TOKEN_FILE": db + ".none"}, "invalid-token-file"),
        ({"HGM_DB": db, "HGM_MEMORY": "acme/alcie"}, "did you mean 'acme/alice'"),
    ):
        with pytest.raises(SystemExit) as stopped:
            app_from_environment(env)  # uvicorn leaves with this status, printing nothing more
        assert stopped.value.code == 1
        assert expected in capsys.readouterr().err, env


def test_hgm_serve_workers_serve_every_memory_with_scoped_tokens(store, tmp_path):
    db, tokens = store
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "hgm_engine.server.rest", "--db", db, "--port", "0", "--workers", "2",
             "--max-open", "1", "--token-file", tokens],
            stdout=out, stderr=subprocess.STDOUT, env=_environment(), cwd=str(tmp_path),
        )
    try:
        port = _wait_for_port(process, log, "listening on ")
        for i, name in enumerate(["acme/alice", "acme/bob", "acme/alice", "acme/bob"]):
            status, doc = _call(port, "POST", f"{memory_url(name)}/transactions", {"ops": [{"op": "add_node", "type": "fact"}]}, WRITER)
            assert status == 200, doc
        # every worker sees every commit, whichever memory it had to reopen
        for _ in range(4):
            assert _call(port, "POST", f"{memory_url('acme/alice')}/query", {"expr": "nodes.count()"}, READER)[1]["value"] == 2
        assert _call(port, "GET", "/health")[0] == 401
        assert _stop(process) == 0
    finally:
        if process.poll() is None:
            process.kill()


def test_hgm_serve_workers_take_a_changed_token_file_without_a_restart(store, tmp_path):
    db, _ = store
    tokens = tmp_path / "changing-tokens.txt"
    tokens.write_text(f"{READER} acme/alice read\n")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "hgm_engine.server.rest", "--db", db, "--port", "0", "--workers", "2", "--token-file", str(tokens)],
            stdout=out, stderr=subprocess.STDOUT, env=_environment(), cwd=str(tmp_path),
        )
    try:
        port = _wait_for_port(process, log, "listening on ")
        query = lambda token: _call(port, "POST", f"{memory_url('acme/alice')}/query", {"expr": "root"}, token)[0]  # noqa: E731
        assert query(READER) == 200 and query(WRITER) == 401
        tokens.write_text(f"{WRITER} acme/ write\n")  # the reader revoked, a writer added
        time.sleep(1.1)  # each worker looks at the file at most once a second
        for _ in range(4):  # whichever worker answers
            assert query(WRITER) == 200 and query(READER) == 401
        assert _stop(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
