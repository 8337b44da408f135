"""The REST server (issue 7): routes, JSON documents, error statuses, limits, token, a real process.

Most tests drive the ASGI app in process with FastAPI's TestClient; one starts
``python -m hgm_engine.server.rest`` for real on 127.0.0.1 and a free port (token from the
environment, loopback by default, request ids, graceful stop on SIGTERM).
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
from fastapi.testclient import TestClient  # noqa: E402

from hgm_engine import Limits, Memory  # noqa: E402
from hgm_engine.server.rest import create_app  # noqa: E402
from hgm_engine.server.service import ServerLimits  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]

PLAN = {
    "author": "planner",
    "reason": "plan the report",
    "ops": [
        {"op": "add_node", "id": "report", "type": "goal", "content": "Write the Q3 report", "status": "active"},
        {"op": "add_node", "id": "collect", "type": "action", "parent": "report", "content": "Collect figures", "status": "done"},
        {"op": "add_node", "id": "draft", "type": "action", "parent": "report", "content": "Draft the summary", "status": "pending"},
        {"op": "add_node", "id": "send", "type": "action", "parent": "report", "content": "Send it", "status": "pending"},
        {"op": "add_node", "id": "figures", "type": "result", "content": "Revenue table"},
        {"op": "add_node", "id": "revenue", "type": "fact", "content": "Q3 revenue is 1.2M"},
        {"op": "add_edge", "from": "collect", "to": "figures", "type": "produces"},
        {"op": "add_edge", "from": "figures", "to": "revenue", "type": "derived_from"},
        {"op": "add_edge", "from": "draft", "to": "figures", "type": "derived_from"},
        {"op": "add_edge", "from": "collect", "to": "draft", "type": "before"},
        {"op": "add_edge", "from": "draft", "to": "send", "type": "before"},
    ],
}


@pytest.fixture
def memory() -> Memory:
    m = Memory()
    m.apply(PLAN)
    return m


@pytest.fixture
def client(memory: Memory) -> TestClient:
    return TestClient(create_app(memory))


def error_of(response) -> str:
    body = response.json()
    assert set(body["error"]) >= {"category", "message", "line", "column"}, body
    assert body["error"]["request_id"] == response.headers["x-request-id"]
    return body["error"]["category"]


# -- documents ---------------------------------------------------------------------------------


def test_query_kinds_and_t(client: TestClient) -> None:
    nodes = client.post("/api/v1/query", json={"expr": "root.actions.where(status = 'pending')"}).json()
    assert nodes == {
        "kind": "nodes",
        "ids": ["draft", "send"],
        "nodes": [
            {"id": "draft", "type": "action", "content": "Draft the summary", "status": "pending"},
            {"id": "send", "type": "action", "content": "Send it", "status": "pending"},
        ],
        "t": 1,
    }
    assert client.post("/api/v1/query", json={"expr": "root.actions", "nodes": False}).json() == {
        "kind": "nodes",
        "ids": ["collect", "draft", "send"],
        "t": 1,
    }
    assert client.post("/api/v1/query", json={"expr": "nodes.count()"}).json() == {"kind": "count", "value": 6, "t": 1}
    assert client.post("/api/v1/query", json={"expr": "#draft.exists()"}).json()["value"] is True
    assert client.post("/api/v1/query", json={"expr": "#revenue.derived{1,}.paths()"}).json()["paths"] == [
        ["revenue", "figures"],
        ["revenue", "figures", "draft"],
    ]
    with_params = client.post(
        "/api/v1/query", json={"expr": "nodes.where(content =~ $p)", "params": {"p": "^Draft"}, "nodes": False}
    )
    assert with_params.json()["ids"] == ["draft"]
    focused = client.post("/api/v1/query", json={"expr": "current_goal", "focus": "send", "nodes": False})
    assert focused.json()["ids"] == ["report"]
    plan = client.post("/api/v1/explain", json={"expr": "#report.children.where(status = $s)"}).json()
    assert plan["params"] == ["s"] and plan["kind"] == "nodes" and "plan:" in plan["plan"]


def test_transactions_history_diff_and_time_travel(client: TestClient, memory: Memory) -> None:
    change = {"author": "agent", "reason": "drafted", "base_t": 1, "ops": [{"op": "update_node", "id": "draft", "set": {"status": "done"}}]}
    dry = client.post("/api/v1/transactions?dry_run=true", json=change)
    assert dry.status_code == 200 and dry.json()["committed"] is False and dry.json()["dry_run"] is True
    assert memory.t == 1
    report = client.post("/api/v1/transactions", json=change).json()
    assert {k: report[k] for k in ("committed", "t", "base_t", "author", "reason")} == {
        "committed": True,
        "t": 2,
        "base_t": 1,
        "author": "agent",
        "reason": "drafted",
    }
    assert report["changes"] == [{"kind": "node_updated", "id": "draft", "before": {"status": "pending"}, "after": {"status": "done"}}]
    assert set(report) >= {"changes", "fired_rules", "dirtied", "violations"}

    assert client.post("/api/v1/query", json={"expr": "#draft", "as_of": 1}).json()["nodes"][0]["status"] == "pending"
    assert client.get("/api/v1/nodes/draft", params={"as_of": "1"}).json()["status"] == "pending"
    assert client.get("/api/v1/nodes/draft").json()["status"] == "done"
    assert client.post("/api/v1/snapshots", json={"name": "before-send", "t": 1}).json() == {"name": "before-send", "t": 1}
    assert client.get("/api/v1/snapshots").json() == {"snapshots": {"before-send": 1}}
    assert client.post("/api/v1/query", json={"expr": "#draft", "as_of": "before-send"}).json()["t"] == 1

    history = client.get("/api/v1/history", params={"node": "draft"}).json()
    assert [entry["t"] for entry in history["history"]] == [1, 2]
    assert history["history"][1]["reason"] == "drafted"
    diff = client.get("/api/v1/diff", params={"from": 1, "to": 2}).json()
    assert diff == {"from": 1, "to": 2, "changes": report["changes"]}
    assert client.get("/api/v1/diff", params={"from": "before-send"}).json()["to"] == 2
    assert [c["t"] for c in client.get("/api/v1/changes", params={"since": 1}).json()["commits"]] == [2]
    assert client.get("/api/v1/focus-path", params={"node": "send"}).json() == {"node": "send", "path": ["report", "send"]}

    reverted = client.post("/api/v1/revert", json={"t": 2, "reason": "not yet"}).json()
    assert reverted["committed"] and reverted["t"] == 3 and memory.node("draft")["status"] == "pending"
    exported = client.get("/api/v1/export", params={"as_of": 1}).json()
    assert exported["format"] == "hgm-graph/1" and len(exported["nodes"]) == 6


def test_stale_frontier_and_confirm(client: TestClient, memory: Memory) -> None:
    assert client.get("/api/v1/frontier", params={"goal": "report"}).json() == {"goal": "report", "t": 1, "frontier": ["draft"]}
    memory.load_rules("propagate derived_from backward depth 2")
    report = client.post("/api/v1/transactions", json={"ops": [{"op": "update_node", "id": "revenue", "set": {"content": "Q3 revenue is 1.1M"}}]})
    assert [d["id"] for d in report.json()["dirtied"]] == ["figures", "draft"]
    stale = client.get("/api/v1/stale").json()
    assert sorted(s["id"] for s in stale["stale"]) == ["draft", "figures"]
    assert stale["stale"][0]["marks"][0]["rule"] == "propagate:derived_from"
    assert client.get("/api/v1/frontier", params={"goal": "report"}).json()["frontier"] == []  # draft is stale
    assert client.get("/api/v1/stale", params={"as_of": 1}).json()["stale"] == []
    confirmed = client.post("/api/v1/confirm", json={"id": "draft", "author": "agent"})
    assert confirmed.status_code == 200 and confirmed.json()["committed"]
    assert client.get("/api/v1/frontier", params={"goal": "report"}).json()["frontier"] == ["draft"]
    assert error_of(client.get("/api/v1/frontier", params={"goal": "nope"})) == "unknown-node"


def test_origin_memory_node(client: TestClient, memory: Memory) -> None:
    response = client.post(
        "/api/v1/memory/node",
        json={
            "content": "The user does not want bandwidth costs compared",
            "level": "event",
            "session_id": "session_123",
            "parent_id": "report",
            "metadata": {"timestamp": "2025-01-01T12:00:00Z"},
        },
    )
    assert response.status_code == 201
    body = response.json()
    assert body["node"] == {
        "id": body["id"],
        "type": "fact",
        "timestamp": "2025-01-01T12:00:00Z",
        "content": "The user does not want bandwidth costs compared",
        "level": "event",
        "session_id": "session_123",
    }
    assert body["t"] == 2 and body["report"]["committed"]
    assert memory.query("#report.children", params={}).ids[-1] == body["id"]
    assert error_of(client.post("/api/v1/memory/node", json={"content": "x", "parent_id": "nope"})) == "unknown-node"
    assert error_of(client.post("/api/v1/memory/node", json={"content": "x", "metadata": {"type": "goal"}})) == "invalid-argument"
    assert error_of(client.post("/api/v1/memory/node", json={"content": "x", "id": "draft"})) == "duplicate-id"
    assert memory.t == 2


def test_locate_and_retrieve_validate_their_input(client: TestClient) -> None:
    assert client.post("/api/v1/locate", json={"text": ""}).status_code == 400
    assert client.post("/api/v1/memory/path/retrieve", json={"query": "x", "max_paths": 0}).status_code == 400


def test_locate_and_rewrite_when_the_engine_has_them() -> None:
    memory = Memory()
    memory.ingest([{"id": "order-17", "goal": "Check the status of order A1001", "steps": [{"name": "query_order"}, {"name": "notify_user"}], "tags": ["order"]}])
    client = TestClient(create_app(memory))
    located = client.post("/api/v1/memory/path/retrieve", json={"query": "status of order B7", "max_paths": 3}).json()
    assert located["matches"][0]["path"] == "order-17" and "breakdown" in located["matches"][0]
    assert client.post("/api/v1/locate", json={"text": "status of order B7", "k": 1}).json()["matches"][0]["path"] == "order-17"
    rewritten = client.post(
        "/api/v1/memory/path/rewrite",
        json={"path_id": "order-17", "feedback": "look in the cache first", "steps": [{"keep": 0}, {"add": {"name": "check_cache"}, "after": 0}]},
    )
    assert rewritten.status_code == 200 and rewritten.json()["committed"]
    assert error_of(client.post("/api/v1/rewrite", json={"path_id": "nope", "steps": ["a"], "reason": "r"})) in ("unknown-path", "unknown-node")


# -- bad input changes nothing ---------------------------------------------------------------


@pytest.mark.parametrize(
    "method, path, kwargs, status, category",
    [
        ("post", "/api/v1/query", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 400, "invalid-json"),
        ("post", "/api/v1/query", {"content": b"[1, 2]", "headers": {"content-type": "application/json"}}, 400, "invalid-argument"),
        ("post", "/api/v1/query", {"json": {"expr": "root", "bogus": 1}}, 400, "invalid-argument"),
        ("post", "/api/v1/query", {"json": {"expr": 5}}, 400, "invalid-argument"),
        ("post", "/api/v1/query", {"json": {}}, 400, "invalid-argument"),
        ("post", "/api/v1/query", {"content": b'{"expr": "root"}', "headers": {"content-type": "text/plain"}}, 415, "unsupported-media-type"),
        ("post", "/api/v1/query", {"json": {"expr": "root.subgoal"}}, 400, "unknown-name"),
        ("post", "/api/v1/query", {"json": {"expr": "root.children["}}, 400, "syntax"),
        ("post", "/api/v1/query", {"json": {"expr": "#$g"}}, 400, "missing-parameter"),
        ("post", "/api/v1/query", {"json": {"expr": "root", "as_of": "nosuch"}}, 404, "unknown-snapshot"),
        ("post", "/api/v1/query", {"json": {"expr": "root", "as_of": 99}}, 400, "invalid-argument"),
        ("post", "/api/v1/transactions", {"json": {"ops": [{"op": "update_node", "id": "nope", "set": {"a": 1}}]}}, 404, "unknown-node"),
        ("post", "/api/v1/transactions", {"json": {"ops": [{"op": "fly"}]}}, 400, "invalid-transaction"),
        ("post", "/api/v1/transactions", {"json": {"ops": [], "extra": 1}}, 400, "invalid-argument"),
        ("post", "/api/v1/transactions", {"json": {"ops": [{"op": "add_node", "id": "draft", "type": "action"}]}}, 409, "duplicate-id"),
        ("post", "/api/v1/transactions", {"json": {"base_t": 0, "ops": [{"op": "update_node", "id": "draft", "set": {"x": 1}}]}}, 409, "conflict"),
        ("post", "/api/v1/transactions", {"json": {"base_t": -1, "ops": []}}, 400, "invalid-argument"),
        ("get", "/api/v1/nodes/nope", {}, 404, "unknown-node"),
        ("get", "/api/v1/history?node=nope", {}, 404, "unknown-node"),
        ("get", "/api/v1/diff?from=0&to=7", {}, 400, "invalid-argument"),
        ("get", "/api/v1/nope", {}, 404, "not-found"),
        ("delete", "/api/v1/query", {}, 405, "method-not-allowed"),
    ],
)
def test_bad_requests_are_refused_and_change_nothing(client: TestClient, memory: Memory, method, path, kwargs, status, category) -> None:
    before = memory.export()
    response = getattr(client, method)(path, **kwargs)
    assert response.status_code == status, response.text
    assert error_of(response) == category
    assert memory.t == 1 and memory.export() == before


def test_constraint_violation_is_422_with_the_report(client: TestClient, memory: Memory) -> None:
    memory.add_constraint("done_has_result", "each action where status = 'done' must exists(results)")
    response = client.post("/api/v1/transactions", json={"ops": [{"op": "update_node", "id": "draft", "set": {"status": "done"}}]})
    assert response.status_code == 422
    body = response.json()
    assert body["committed"] is False and body["t"] is None
    assert body["violations"] == [{"constraint": "done_has_result", "node": "draft", "message": body["violations"][0]["message"]}]
    assert body["error"]["category"] == "constraint-violation"
    assert memory.t == 1 and memory.node("draft")["status"] == "pending"


def test_body_limits() -> None:
    memory = Memory()
    client = TestClient(create_app(memory, max_body=1000))
    big = {"ops": [{"op": "add_node", "type": "fact", "content": "x" * 2000}]}
    assert error_of(client.post("/api/v1/transactions", json=big)) == "request-too-large"

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"ops": [{"op": "add_node", "type": "fact", "content": "'
        for _ in range(10):
            yield b"y" * 500
        yield b'"}]}'

    response = client.post("/api/v1/transactions", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and error_of(response) == "request-too-large"
    assert memory.t == 0 and len(memory) == 0


@pytest.mark.parametrize(
    "expr, params",
    [
        ("root" + ".children" * 1200, None),  # longer than max_query_length
        ("nodes.where(" + "not " * 600 + "ok)", None),  # nested beyond the parser
        ("#report.children{1,100000}", None),  # explicit repetition bound over the limit
        ("nodes.where(content =~ '(a+)+$')", None),  # catastrophic backtracking
        ("nodes.where(content =~ '(x|xx)*y')", None),
        ("nodes.where(content =~ $p)", {"p": "(\\w+\\s?)+$"}),
        ("nodes.where(content =~ '" + "a" * 1200 + "')", None),  # over the analyzer's regex length
    ],
)
def test_hostile_queries_are_refused(client: TestClient, memory: Memory, expr, params) -> None:
    response = client.post("/api/v1/query", json={"expr": expr, "params": params})
    assert response.status_code == 400, response.text
    assert error_of(response) in ("limit-exceeded", "invalid-regex")
    assert client.get("/health").json()["status"] == "ok"


def test_work_limit_and_inline_budget() -> None:
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": f"n{i}", "type": "fact", "k": i} for i in range(300)]})
    tight = TestClient(create_app(memory, limits=Limits(max_work=100, timeout=5.0)))
    assert error_of(tight.post("/api/v1/query", json={"expr": "nodes.where(k >= 0)"})) == "limit-exceeded"
    # A query over the inline budget is answered from the thread pool, the same way each time.
    client = TestClient(create_app(memory, limits=ServerLimits(inline_work=10)))
    answers = [client.post("/api/v1/query", json={"expr": "nodes.where(k >= 250)", "nodes": False}).json() for _ in range(3)]
    assert answers[0]["ids"] == [f"n{i}" for i in range(250, 300)] and answers[0] == answers[1] == answers[2]


def test_token_is_required_everywhere(memory: Memory) -> None:
    client = TestClient(create_app(memory, token="s3cret"))
    # /openapi.json and /docs hold no data and are read without the token (issue 16; this test
    # used to require a token for the document too, so its page could never load).
    for path in ("/health", "/api/v1/nodes/draft", "/api/v1/rules", "/api/v1/paths/metrics"):
        response = client.get(path)
        assert response.status_code == 401 and error_of(response) == "unauthorized"
        assert response.headers["www-authenticate"].startswith("Bearer")
    wrong = client.post("/api/v1/transactions", json={"ops": [{"op": "delete_node", "id": "send"}]}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and memory.node("send") is not None
    ok = client.get("/api/v1/nodes/draft", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200 and ok.json()["id"] == "draft"
    schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert client.post("/openapi.json").status_code == 401  # only reading is public


def test_openapi_document(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    for path in (
        "/api/v1/query",
        "/api/v1/explain",
        "/api/v1/transactions",
        "/api/v1/history",
        "/api/v1/diff",
        "/api/v1/stale",
        "/api/v1/frontier",
        "/api/v1/locate",
        "/api/v1/rewrite",
        "/api/v1/memory/node",
        "/api/v1/memory/path/retrieve",
        "/api/v1/memory/path/rewrite",
        "/health",
    ):
        assert path in paths, path
    transactions = paths["/api/v1/transactions"]["post"]["responses"]
    assert {"200", "400", "404", "409", "413", "422"} <= set(transactions)
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    assert paths["/api/v1/query"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("QueryRequest")


def test_request_ids(client: TestClient) -> None:
    echoed = client.get("/health", headers={"X-Request-ID": "agent-7.call-3"})
    assert echoed.headers["x-request-id"] == "agent-7.call-3"
    made_up = client.get("/health", headers={"X-Request-ID": "bad id\twith spaces"})
    assert made_up.headers["x-request-id"] != "bad id\twith spaces" and len(made_up.headers["x-request-id"]) == 16


# -- a real server process -----------------------------------------------------------------------


def _listening_addresses(port: int) -> set[str]:
    """Local addresses with a socket listening on ``port`` (Linux /proc/net/tcp)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = pathlib.Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.split(":")
            if state == "0A" and int(port_hex, 16) == port:
                found.add(address)
    return found


def test_real_server_token_loopback_and_graceful_stop(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "memory.db"
    with Memory.open(db) as memory:
        memory.apply(PLAN)
    log_path = tmp_path / "server.log"
    env = dict(os.environ, HGM_TOKEN="tok-123", PYTHONPATH=str(REPO))
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "hgm_engine.server.rest", "--db", str(db), "--port", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(REPO),
        )
    try:
        deadline = time.monotonic() + 30
        port = None
        while port is None and time.monotonic() < deadline:
            assert process.poll() is None, log_path.read_text()
            for line in log_path.read_text().splitlines():
                if "listening on http://" in line:
                    assert "http://127.0.0.1:" in line  # loopback unless told otherwise
                    port = int(line.rsplit(":", 1)[1])
            time.sleep(0.05)
        assert port is not None, log_path.read_text()
        if pathlib.Path("/proc/net/tcp").exists():
            assert _listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only
        base = f"http://127.0.0.1:{port}"

        def call(path: str, body=None, token: str | None = None):
            headers = {"Content-Type": "application/json", "X-Request-ID": "test-req-1"}
            if token:
                headers["Authorization"] = f"Bearer {token}"
            data = None if body is None else json.dumps(body).encode()
            request = urllib.request.Request(base + path, data=data, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status, json.loads(response.read()), response.headers
            except urllib.error.HTTPError as err:
                return err.code, json.loads(err.read()), err.headers

        while True:
            try:
                status, body, _ = call("/health")
                break
            except urllib.error.URLError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert status == 401 and body["error"]["category"] == "unauthorized"
        assert call("/api/v1/query", {"expr": "root"}, token="wrong")[0] == 401
        status, body, headers = call("/api/v1/query", {"expr": "root", "nodes": False}, token="tok-123")
        assert (status, body["ids"], headers["X-Request-ID"]) == (200, ["report"], "test-req-1")
        status, report, _ = call("/api/v1/transactions", {"ops": [{"op": "update_node", "id": "draft", "set": {"status": "done"}}]}, token="tok-123")
        assert status == 200 and report["t"] == 2

        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log_text = log_path.read_text()
    assert "test-req-1 POST /api/v1/query 200" in log_text  # one access line per request, with its id
    assert "tok-123" not in log_text
    assert "stopped on signal" in log_text
    with Memory.open(db) as reopened:
        assert reopened.t == 2 and reopened.node("draft")["status"] == "done"
