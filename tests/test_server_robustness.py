"""The servers against hostile and broken input (issue 12): no 5xx, no "internal error", no
hang past the limits, nothing changed by a refused request.

REST is driven in process (FastAPI's TestClient) for the documents and over real loopback
sockets for what only a network shows (idle and slow connections, the 503, shutdown); MCP
over a real ``hgm mcp`` process's stdin and stdout.
"""

from __future__ import annotations

import http.client
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from hgm_engine import Memory  # noqa: E402
from hgm_engine.server.rest import create_app  # noqa: E402

# A stand-in for an integer of 5,000 digits (which neither hypothesis nor json.dumps will print):
# the body's text gets the digits in its place.
HUGE = "<5000 digits>"


def _json_text(value) -> str:
    return json.dumps(value).replace(json.dumps(HUGE), "9" * 5000)


PLAN = {
    "ops": [
        {"op": "add_node", "id": "g", "type": "goal", "content": "plan"},
        {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"},
    ]
}


@pytest.fixture
def client() -> TestClient:
    memory = Memory()
    memory.apply(PLAN)
    return TestClient(create_app(memory), raise_server_exceptions=False)


def _refusal(response, status: int = 400) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["request_id"] == response.headers["x-request-id"]
    return error


# -- a t or a snapshot name: every parameter that takes one -------------------------------

T_PARAMETERS = [
    ("/api/v1/nodes/g", "as_of", {}),
    ("/api/v1/diff", "from", {}),
    ("/api/v1/diff", "to", {"from": "0"}),
    ("/api/v1/changes", "since", {}),
    ("/api/v1/stale", "as_of", {}),
    ("/api/v1/frontier", "as_of", {"goal": "g"}),
    ("/api/v1/focus-path", "as_of", {"node": "g"}),
    ("/api/v1/export", "as_of", {}),
]

HOSTILE_T = ["²", "٣", "9" * 5000, "9" * 20, "-1", "-" + "9" * 5000, "2"]


@pytest.mark.parametrize("path,name,others", T_PARAMETERS)
@pytest.mark.parametrize("value", HOSTILE_T, ids=["superscript", "arabic-digit", "5000-digits", "20-digits", "negative", "negative-5000", "future"])
def test_a_t_parameter_that_is_no_t_of_the_history_is_a_400_naming_the_parameter(client, path, name, others, value):
    query = urllib.parse.urlencode({**others, name: value})
    error = _refusal(client.get(f"{path}?{query}"))
    assert error["category"] == "invalid-argument"
    assert error["where"] == name and name in error["message"]
    assert len(error["message"]) < 300  # a 5,000-digit value is not echoed whole


@pytest.mark.parametrize("value", ["²", "9" * 5000, -1, 10**30, 2.5, [1], {"t": 1}, True])
def test_a_query_as_of_that_is_no_t_of_the_history_is_a_400_naming_as_of(client, value):
    body = json.dumps({"expr": "root", "as_of": value})
    error = _refusal(client.post("/api/v1/query", content=body, headers={"content-type": "application/json"}))
    assert error["category"] == "invalid-argument" and error["where"] == "as_of"


def test_an_unknown_snapshot_name_is_still_a_404_naming_the_parameter(client):
    error = _refusal(client.get("/api/v1/stale?as_of=nightly"), 404)
    assert error["category"] == "unknown-snapshot" and error["where"] == "as_of"


def test_a_t_and_a_snapshot_name_still_read_that_state(client):
    assert client.post("/api/v1/snapshots", json={"name": "start", "t": 1}).status_code == 201
    assert client.get("/api/v1/nodes/g?as_of=1").json()["type"] == "goal"
    assert client.get("/api/v1/diff?from=0&to=start").json()["to"] == 1
    assert client.post("/api/v1/query", json={"expr": "nodes.count()", "as_of": "0"}).json()["value"] == 0


# -- strings that are no text, ops of the wrong shape: refused before anything is written ----

LONE = '"\\ud800"'  # a JSON escape of a lone surrogate: a str in Python, no text in UTF-8


def _post_raw(client, path: str, text: str):
    return client.post(path, content=text.encode(), headers={"content-type": "application/json"})


@pytest.fixture
def stored(tmp_path):
    memory = Memory.open(tmp_path / "memory.db")
    memory.apply(PLAN)
    memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
    yield memory
    memory.close()


@pytest.mark.parametrize(
    "path,text,where",
    [
        ("/api/v1/transactions", '{"ops": [{"op": "add_node", "id": %s, "type": "fact"}]}', "ops[0].id"),
        ("/api/v1/transactions", '{"ops": [{"op": "add_node", "type": "fact", "note": {"deep": [%s]}}]}', "ops[0].note.deep[0]"),
        ("/api/v1/transactions", '{"ops": [{"op": "add_node", "type": "fact", %s: 1}]}', "ops[0]"),
        ("/api/v1/transactions", '{"author": %s, "ops": [{"op": "add_node", "type": "fact"}]}', "author"),
        ("/api/v1/confirm", '{"id": "a", "reason": %s}', "reason"),
        ("/api/v1/revert", '{"t": 1, "author": %s}', "author"),
        ("/api/v1/snapshots", '{"name": %s}', "name"),
        ("/api/v1/memory/node", '{"content": "c", "metadata": {"x": %s}}', "metadata.x"),
        ("/api/v1/memory/node", '{"content": %s}', "content"),
        ("/api/v1/rewrite", '{"path_id": "r1", "reason": "r", "steps": ["check_policy", %s]}', "steps[1]"),
        ("/api/v1/memory/path/rewrite", '{"path_id": "r1", "feedback": %s, "steps": ["a"]}', "feedback"),
    ],
)
def test_a_lone_surrogate_in_what_would_be_stored_is_a_400_naming_where_and_changes_nothing(stored, path, text, where):
    client = TestClient(create_app(stored), raise_server_exceptions=False)
    before = client.get("/api/v1/export").json()
    error = _refusal(_post_raw(client, path, text % LONE))
    assert error["category"] in ("invalid-argument", "invalid-transaction")
    assert error["where"] == where and "surrogate" in error["message"]
    assert client.get("/api/v1/export").json() == before


@pytest.mark.parametrize("op", ["[]", "{}", "5", "null", "true"])
def test_an_op_name_that_is_no_string_is_a_400_naming_the_op(client, op):
    error = _refusal(_post_raw(client, "/api/v1/transactions", '{"ops": [{"op": %s, "id": "z", "type": "fact"}]}' % op))
    assert error["category"] == "invalid-transaction" and error["where"] == "ops[0]"


# -- real sockets: idle and slow clients, the work limit, a bounded stop (issue 12, items 3, 10) --

REPO = pathlib.Path(__file__).resolve().parents[1]
TOKEN = "s3cret-robust"

# A server whose query "stuck" never finishes (a stand-in for work that ignores the query
# timeout: a thread cannot be interrupted). Everything else is the real `hgm serve`.
STUCK_SERVER = """
import sys, time
from hgm_engine.server import service
real = service.MemoryService.query_payloads
def query_payloads(self, expr, *args, **kwargs):
    if expr == "stuck" and kwargs.get("budget") is None:
        time.sleep(3600)
    return real(self, expr, *args, **kwargs)
service.MemoryService.query_payloads = query_payloads
from hgm_engine.server.rest import main
sys.exit(main(sys.argv[1:]))
"""


def _start(tmp: pathlib.Path, *options: str, stuck: bool = False) -> tuple[subprocess.Popen, int, pathlib.Path]:
    env = dict(os.environ, PYTHONPATH=str(REPO), HGM_TOKEN=TOKEN)
    log_path = tmp / "server.log"
    command = [sys.executable, "-m", "hgm_engine.server.rest"]
    if stuck:
        (tmp / "stuck_server.py").write_text(STUCK_SERVER)
        command = [sys.executable, str(tmp / "stuck_server.py")]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [*command, "--db", str(tmp / "memory.db"), "--port", "0", *options],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(REPO),
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, log_path.read_text()
        for line in log_path.read_text().splitlines():
            if "listening on http://" in line:
                port = int(line.rsplit(":", 1)[1])
                _wait_answering(port)
                return process, port, log_path
        time.sleep(0.05)
    process.kill()
    raise AssertionError(log_path.read_text())


def _wait_answering(port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if _request(port, "GET", "/health")[0] == 200:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "the server never answered"
        time.sleep(0.05)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()


def _request(port: int, method: str, path: str, body: dict | None = None, token: str | None = TOKEN, timeout: float = 20):
    """One request on a new connection: (status, headers, parsed body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(response.read())
    finally:
        connection.close()


def _quietly(call):
    """``call`` for a thread whose request may end with the server (the test checks the rest)."""

    def run() -> None:
        try:
            call()
        except OSError:
            pass

    return run


def _raw_answer(sock: socket.socket, timeout: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when it closed."""
    sock.settimeout(timeout)
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks), time.monotonic()
        chunks.append(chunk)


def _json_error(answer: bytes, status: int) -> dict:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ", 2)[1] == str(status).encode(), answer
    headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
    error = json.loads(body)["error"]
    assert headers[b"content-type"] == b"application/json"
    assert error["request_id"] == headers[b"x-request-id"].decode()
    return error


@pytest.fixture(scope="module")
def deadline_server(tmp_path_factory):
    """A real server with short deadlines: 2 s for headers, 2 s for a body."""
    process, port, log_path = _start(tmp_path_factory.mktemp("deadlines"), "--header-timeout", "2", "--body-timeout", "2")
    yield port
    _stop(process)


def _slow_header(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    return sock


def _slow_body(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        b"POST /api/v1/query HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
        + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"expr\""
    )
    return sock


def test_idle_and_slow_connections_past_the_work_limit_do_not_keep_an_authenticated_request_out(deadline_server):
    port = deadline_server
    # 64 requests may be answered at once; these 160 connections answer none.
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(80)]
    slow = [_slow_header(port) for _ in range(40)] + [_slow_body(port) for _ in range(40)]
    try:
        time.sleep(0.3)  # the server has accepted them all
        status, headers, body = _request(port, "GET", "/health")
        assert (status, body["status"]) == (200, "ok")
        status, _, body = _request(port, "POST", "/api/v1/query", {"expr": "nodes.count()"})
        assert (status, body["value"]) == (200, 0)
        status, _, body = _request(port, "GET", "/health", token=None)
        assert (status, body["error"]["category"]) == (401, "unauthorized")  # not a 503
    finally:
        for sock in idle + slow:
            sock.close()


def test_an_idle_connection_is_closed_silently_after_the_header_timeout(deadline_server):
    sock = socket.create_connection(("127.0.0.1", deadline_server))
    opened = time.monotonic()
    with sock:
        answer, closed = _raw_answer(sock, 30)
    assert answer == b"" and 1.8 <= closed - opened <= 15


def test_headers_that_trickle_in_past_the_header_timeout_get_a_json_408(deadline_server):
    sock = _slow_header(deadline_server)
    opened = time.monotonic()
    with sock:
        for _ in range(40):  # a byte every 0.25 s: uvicorn's keep-alive timer restarts at each
            try:
                sock.sendall(b"x")
            except OSError:  # the server closed it
                break
            time.sleep(0.25)
            if time.monotonic() - opened > 20:
                break
        answer, closed = _raw_answer(sock, 30)
    error = _json_error(answer, 408)
    assert error["category"] == "request-timeout" and "headers" in error["message"]
    assert 1.8 <= closed - opened <= 20


def test_a_body_that_does_not_arrive_within_the_body_timeout_gets_a_json_408(deadline_server):
    sock = _slow_body(deadline_server)
    opened = time.monotonic()
    with sock:
        answer, closed = _raw_answer(sock, 30)
    error = _json_error(answer, 408)
    assert error["category"] == "request-timeout" and "body" in error["message"]
    assert 1.8 <= closed - opened <= 15


def test_headers_over_64_kib_get_a_json_431(deadline_server):
    with socket.create_connection(("127.0.0.1", deadline_server)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        try:
            for _ in range(20):
                sock.sendall(b"X-Padding: " + b"p" * 8000 + b"\r\n")
        except OSError:
            pass
        answer, _ = _raw_answer(sock, 30)
    assert _json_error(answer, 431)["category"] == "request-too-large"


def test_past_the_work_limit_the_503_is_a_json_error_with_retry_after_and_the_request_id(tmp_path):
    process, port, _ = _start(tmp_path, "--max-concurrency", "1", stuck=True)
    try:
        stuck = threading.Thread(target=_quietly(lambda: _request(port, "POST", "/api/v1/query", {"expr": "stuck"}, timeout=60)), daemon=True)
        stuck.start()
        deadline = time.monotonic() + 20
        while True:  # until the stuck request is being answered
            status, headers, body = _request(port, "GET", "/health")
            if status == 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status == 503, body
        assert body["error"]["category"] == "overloaded" and "--max-concurrency" in body["error"]["message"]
        assert headers["retry-after"] == "1" and body["error"]["request_id"] == headers["x-request-id"]
    finally:
        _stop(process)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_with_a_stuck_request_stops_within_the_graceful_timeout_and_answers_it(tmp_path, workers):
    process, port, log_path = _start(tmp_path, "--graceful-timeout", "1", "--workers", workers, stuck=True)
    answers: list = []
    try:
        for _ in range(int(workers)):  # one stuck request per worker (they are handed out in turn)
            thread = threading.Thread(target=_quietly(lambda: answers.append(_request(port, "POST", "/api/v1/query", {"expr": "stuck"}, timeout=60))), daemon=True)
            thread.start()
        time.sleep(0.5)  # the requests are running
        process.send_signal(signal.SIGTERM)
        asked = time.monotonic()
        code = process.wait(60)
        took = time.monotonic() - asked
    finally:
        _stop(process)
    log = log_path.read_text()
    assert code == 0, log
    assert took < 1 + 8, f"took {took:.1f} s to stop\n{log}"  # 1 s of grace, then at most a few s
    assert "abandoning 1 request(s)" in log
    deadline = time.monotonic() + 10
    while len(answers) < int(workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(status, body["error"]["category"]) for status, _, body in answers] == [(503, "stopping")] * int(workers)


# -- MCP: every line gets an answer (issue 12, item 9) --------------------------------------------


class _McpProcess:
    """``hgm mcp`` on a pipe, spoken to line by line (the raw protocol, no SDK client)."""

    def __init__(self, db: pathlib.Path):
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hgm_engine.server.mcp_server", "--db", str(db)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(REPO),
        )
        self.lines: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    def send(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 10) -> dict:
        deadline = time.monotonic() + timeout
        while not self.lines:
            assert time.monotonic() < deadline, "no answer (the client would wait for ever)"
            assert self.process.poll() is None, self.process.stderr.read().decode()
            time.sleep(0.02)
        return json.loads(self.lines.pop(0))

    def call(self, id_: int, method: str, params: dict | None = None) -> dict:
        message = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode())
        return self.answer()

    def close(self) -> str:
        self.process.stdin.close()
        try:
            self.process.wait(30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        return self.process.stderr.read().decode()


@pytest.fixture(scope="module")
def mcp_process(tmp_path_factory):
    """One ``hgm mcp`` process for the MCP tests: each test checks it still answers after."""
    pytest.importorskip("mcp")
    tmp_path = tmp_path_factory.mktemp("mcp")
    with Memory.open(tmp_path / "memory.db") as memory:
        memory.apply(PLAN)
    process = _McpProcess(tmp_path / "memory.db")
    process.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "robustness", "version": "0"}}}).encode())
    initialized = process.answer(timeout=60)  # the first answer waits for the process to start
    assert initialized["id"] == 1 and "result" in initialized, initialized
    process.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
    yield process
    process.close()


@pytest.mark.parametrize("line", [b"{not json", b'{"jsonrpc": "2.0", "id": 3, "method": ', b"\xff\xfe\x00garbage", b"[" * 100_000])
def test_an_unparsable_mcp_line_gets_a_parse_error_and_the_server_goes_on(mcp_process, line):
    mcp_process.send(line)
    answer = mcp_process.answer()
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    assert answer["error"]["code"] == -32700
    listed = mcp_process.call(2, "tools/list")
    assert listed["id"] == 2 and any(tool["name"] == "query" for tool in listed["result"]["tools"])


@pytest.mark.parametrize(
    "message,answer_id",
    [
        ({"jsonrpc": "2.0", "id": 7, "method": 5}, 7),
        ({"jsonrpc": "1.0", "id": "x", "method": "tools/list"}, "x"),
        ({"id": 8, "method": "tools/list"}, 8),
        ({"jsonrpc": "2.0", "id": [1], "method": "tools/list"}, None),
        ([], None),
        (5, None),
        ("tools/list", None),
        # JSON the SDK's parser refuses: the answer still goes to the request that sent it
        ({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "get_node", "arguments": {"id": "a", "as_of": HUGE}}}, 11),
        ({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "get_node", "arguments": {"id": "\ud800"}}}, 12),
        ("\ud800", None),
    ],
)
def test_an_invalid_mcp_request_gets_invalid_request_with_its_id_when_it_has_one(mcp_process, message, answer_id):
    mcp_process.send(_json_text(message).encode("utf-8", "surrogatepass"))
    answer = mcp_process.answer()
    assert answer["id"] == answer_id and answer["error"]["code"] == -32600, answer
    assert mcp_process.call(2, "tools/list")["id"] == 2


@pytest.mark.parametrize(
    "arguments",
    [
        {"id": "a", "as_of": "²"},
        {"id": "a", "as_of": "9" * 5000},
        {"id": "a", "as_of": 10**30},
        {"id": "a", "as_of": -1},
        {"id": "\u0000"},
        {"id": "a" * 100_000},
    ],
)
def test_a_hostile_mcp_tool_argument_is_an_error_result_not_an_internal_error(mcp_process, arguments):
    answer = mcp_process.call(5, "tools/call", {"name": "get_node", "arguments": arguments})
    assert "error" not in answer, answer  # no JSON-RPC error: a tool result the model can read
    result = answer["result"]
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["category"] in ("invalid-argument", "unknown-node")
    if "as_of" in arguments:
        assert error["where"] == "as_of"


@pytest.mark.parametrize("route", ["/api/v1/query", "/api/v1/explain"])
def test_a_query_nested_past_what_python_compiles_is_limit_exceeded_not_a_500(client, route):
    expr = "nodes.where(" + "not " * 200 + "status = 'x')"
    assert _refusal(client.post(route, json={"expr": expr}))["category"] == "limit-exceeded"


# -- property-based: whatever a body holds, the answer is a document or an error with a category --

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HOSTILE_STRINGS = st.sampled_from(["\ud800", "\udfff", "\x00", "²", "٣", "9" * 5000, "-1", "", " ", "a\nb", "\u202e", "root", "g", "a", "r1"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([HUGE, -(10**30), 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    HOSTILE_STRINGS,
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5) | HOSTILE_STRINGS, inner, max_size=3), max_leaves=8)
DEEP = st.integers(min_value=1, max_value=400).map(lambda depth: json.loads("[" * depth + "]" * depth))

ROUTE_FIELDS = {
    "/api/v1/query": ["expr", "focus", "params", "as_of", "nodes"],
    "/api/v1/explain": ["expr"],
    "/api/v1/transactions": ["author", "reason", "base_t", "ops", "dry_run"],
    "/api/v1/confirm": ["id", "author", "reason"],
    "/api/v1/revert": ["t", "author", "reason"],
    "/api/v1/snapshots": ["name", "t"],
    "/api/v1/locate": ["text", "tags", "k"],
    "/api/v1/rewrite": ["path_id", "steps", "reason", "author"],
    "/api/v1/memory/node": ["content", "type", "level", "session_id", "parent_id", "id", "metadata", "author", "reason"],
    "/api/v1/memory/path/retrieve": ["query", "max_paths", "max_hops", "tags"],
    "/api/v1/memory/path/rewrite": ["path_id", "feedback", "steps", "session_context"],
    # issue 16: every other capability
    "/api/v1/constraints": ["name", "text", "check_existing"],
    "/api/v1/rules": ["text", "name"],
    "/api/v1/histories": ["nodes"],
    "/api/v1/load": ["graph", "author", "reason"],
    "/api/v1/paths/ingest": ["trajectories", "skip_invalid", "author", "scenario", "reason"],
    "/api/v1/paths/outcome": ["path_id", "outcome", "reward", "author"],
    "/api/v1/paths/rollback": ["path_id", "version", "author", "reason"],
    "/api/v1/paths/reset": ["path_id", "author", "reason"],
    "/api/v1/paths/llm-rewrite": ["path_id", "feedback", "model", "attempts", "author", "dry_run"],
    "/api/v1/search": ["text", "type", "limit", "as_of"],  # issue 14: the node index
    "/api/v1/planner/step": ["task", "observation", "focus", "last_t", "tools", "max_repairs", "max_reads", "model", "commit", "author"],
}
# The LLM routes may answer 502/503 when no usable model answer came (none is configured here).
GATEWAY = {"model-unavailable", "invalid-model-answer"}
OP_NAMES = ["add_node", "update_node", "delete_node", "add_edge", "update_edge", "delete_edge", "replace_branch", "confirm"]
OP_KEYS = ["id", "type", "parent", "order", "set", "unset", "cascade", "from", "to", "with", "content"]
OPS = st.lists(
    st.fixed_dictionaries({"op": st.sampled_from(OP_NAMES) | VALUES}, optional={key: VALUES | HOSTILE_STRINGS for key in OP_KEYS}),
    max_size=3,
)
GET_ROUTES = {
    "/api/v1/nodes/g": ["as_of"],
    "/api/v1/history": ["node"],
    "/api/v1/diff": ["from", "to"],
    "/api/v1/changes": ["since"],
    "/api/v1/stale": ["as_of"],
    "/api/v1/frontier": ["goal", "as_of"],
    "/api/v1/focus-path": ["node", "as_of"],
    "/api/v1/export": ["as_of"],
    "/api/v1/commits": ["since", "limit"],
    "/api/v1/path": ["id"],
    "/api/v1/paths": ["all_versions"],
}


def _body(route: str, data) -> dict:
    fields = ROUTE_FIELDS[route]
    chosen = data.draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields)))
    body = {}
    for name in chosen:
        body[name] = data.draw(OPS if name == "ops" else (VALUES | DEEP | HOSTILE_STRINGS))
    return body


def _assert_answered(response) -> None:
    doc = response.json()
    if response.status_code in (502, 503) and doc.get("error", {}).get("category") in GATEWAY:
        return
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert doc["error"]["category"] and doc["error"]["request_id"] == response.headers["x-request-id"]


@pytest.fixture(scope="module")
def fuzz_memory(tmp_path_factory):
    memory = Memory.open(tmp_path_factory.mktemp("fuzz") / "memory.db")
    memory.apply(PLAN)
    memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
    yield memory
    memory.close()


@pytest.fixture(scope="module")
def fuzz_client(fuzz_memory):
    return TestClient(create_app(fuzz_memory), raise_server_exceptions=False)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_rest_body_is_answered_with_a_document_or_an_error_and_a_refusal_changes_nothing(fuzz_memory, fuzz_client, data):
    client = fuzz_client
    route = data.draw(st.sampled_from(sorted(ROUTE_FIELDS)))
    body = _body(route, data)
    text = _json_text(body)  # NaN and Infinity as JavaScript writes them, HUGE as 5,000 digits
    before = (fuzz_memory.t, fuzz_memory.snapshots())
    response = client.post(route, content=text.encode("utf-8", "surrogatepass"), headers={"content-type": "application/json"})
    _assert_answered(response)
    if response.status_code >= 400:
        assert (fuzz_memory.t, fuzz_memory.snapshots()) == before


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_query_string_is_answered_with_a_document_or_an_error(fuzz_client, data):
    client = fuzz_client
    route = data.draw(st.sampled_from(sorted(GET_ROUTES)))
    values = {name: data.draw(HOSTILE_STRINGS | st.text(max_size=12) | st.integers().map(str)) for name in GET_ROUTES[route]}
    query = "&".join(f"{k}={urllib.parse.quote(v.encode('utf-8', 'surrogatepass'))}" for k, v in values.items())
    _assert_answered(client.get(f"{route}?{query}"))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_mcp_tool_call_is_a_result_or_an_error_with_a_category(fuzz_memory, data):
    from hgm_engine.server.mcp import TOOLS, call_tool
    from hgm_engine.server.service import MemoryService

    tool = data.draw(st.sampled_from(TOOLS))
    names = sorted(tool.input_schema["properties"]) + ["bogus"]
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    arguments = {name: data.draw(OPS if name == "ops" else (VALUES | DEEP | HOSTILE_STRINGS)) for name in chosen}
    before = fuzz_memory.t
    doc, failed = call_tool(MemoryService(fuzz_memory), tool.name, arguments)
    if failed:
        assert doc["error"]["category"] not in ("internal", None), doc
        assert fuzz_memory.t == before
    json.dumps(doc, default=str)  # the answer can be written


@settings(max_examples=150, deadline=None)
@given(line=st.text(max_size=60) | st.builds(_json_text, VALUES))
def test_any_mcp_line_is_a_message_or_has_a_json_rpc_error(line):
    from hgm_engine.server.mcp import INVALID_REQUEST, PARSE_ERROR, line_error

    error = line_error(line)
    assert error is None or error[0] in (PARSE_ERROR, INVALID_REQUEST)


def test_a_path_with_control_characters_cannot_forge_an_access_log_line(client, caplog):
    with caplog.at_level("INFO", logger="hgm.server.access"):
        response = client.get("/api/v1/nodes/a%0A0123 GET /forged 200 1.00ms 10.0.0.1%1B[31m")
    assert response.status_code == 404
    lines = [record.getMessage() for record in caplog.records if record.name == "hgm.server.access"]
    assert len(lines) == 1 and "\n" not in lines[0] and "\x1b" not in lines[0]
    assert "\\x0a" in lines[0] and "\\x1b" in lines[0]


def test_with_workers_handed_over_idle_connections_keep_no_request_out_and_are_closed_in_time(tmp_path):
    process, port, _ = _start(tmp_path, "--workers", "2", "--header-timeout", "2")
    try:
        # The supervisor hands connections to the workers in turn: 100 idle ones each.
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
        opened = time.monotonic()
        try:
            time.sleep(0.3)
            pids = set()
            for _ in range(4):  # new connections, so both workers answer
                status, _, body = _request(port, "GET", "/health")
                assert status == 200, body
                pids.add(body["pid"])
            assert len(pids) == 2
            answer, closed = _raw_answer(idle[-1], 30)  # a handed-over connection has the deadline too
            assert answer == b"" and 1.8 <= closed - opened <= 15
        finally:
            for sock in idle:
                sock.close()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
