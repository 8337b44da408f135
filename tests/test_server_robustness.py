"""The servers against hostile and broken input (issue 12): no 5xx, no "internal error", no
hang past the limits, nothing changed by a refused request.

REST is driven in process (FastAPI's TestClient) for the documents and over real loopback
sockets for what only a network shows (idle and slow connections, the 503, shutdown); MCP
over a real ``hgm mcp`` process's stdin and stdout.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from hgm_engine import Memory  # noqa: E402
from hgm_engine.server.rest import create_app  # noqa: E402

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
