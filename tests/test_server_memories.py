"""One REST server, many memories (issue 13, items 4 and 5): the routes of every memory under
/api/v1/memories/{name}/ (its / as %2F), the store's memories over REST, purge and the
stored schema per memory, at most --max-open resident, and scoped tokens."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from hgm_engine import Memory, open_store
from hgm_engine.server import create_app
from hgm_engine.server.registry import MemoryRegistry
from hgm_engine.server.rest.memories import MEMORIES_PATH, memory_url
from hgm_engine.server.tokens import TokenScopes

GOAL = {"ops": [{"op": "add_node", "id": "trip/g", "type": "goal", "content": "Plan a trip to Lisbon"}]}
WRITER, READER, OTHER, ALL = "writer-token-0123456789", "reader-token-0123456789", "other-token-01234567890", "audit-token-01234567890"
TOKENS = f"""
{WRITER} acme/ write
{READER} acme/alice read
{OTHER} zed write
{ALL} * read
"""


@pytest.fixture
def store_path(tmp_path) -> str:
    path = str(tmp_path / "memories.db")
    with open_store(path) as store:
        for name in ("acme/alice", "acme/bob", "zed"):
            store.create(name).close()
    return path


@pytest.fixture
def client(store_path):
    registry = MemoryRegistry(store_path, max_open=2)
    with TestClient(create_app(registry)) as client:
        yield client
    registry.close()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# -- the routes of every memory ---------------------------------------------------------------


def test_a_named_memory_has_the_routes_and_bodies_of_the_default_one(client):
    alice = memory_url("acme/alice")
    assert alice == "/api/v1/memories/acme%2Falice"
    assert client.post(f"{alice}/transactions", json=GOAL).json()["t"] == 1
    assert client.post(f"{alice}/query", json={"expr": "root"}).json()["ids"] == ["trip/g"]
    assert client.get(f"{alice}/nodes/trip/g").json()["content"] == "Plan a trip to Lisbon"  # a node id with /
    assert client.post(f"{alice}/snapshots", json={"name": "s1"}).status_code == 201
    assert client.post(f"{alice}/search", json={"text": "lisbon"}).json()["hits"][0]["id"] == "trip/g"
    # the other memories, and default (the unprefixed routes), hold nothing of it
    assert client.post("/api/v1/query", json={"expr": "root"}).json() == {"kind": "nodes", "ids": [], "nodes": [], "t": 0}
    assert client.post(f"{memory_url('acme/bob')}/query", json={"expr": "root"}).json()["ids"] == []
    assert client.get(f"{memory_url('default')}/snapshots").json() == client.get("/api/v1/snapshots").json()


def test_every_route_of_the_table_is_served_under_a_memory(client):
    app = client.app
    routes = [r for r in app.routes if isinstance(r, APIRoute) and r.path.startswith("/api/v1/") and not r.path.startswith(MEMORIES_PATH)]
    assert len(routes) > 40
    for route in routes:
        path = route.path.replace("{node_id:path}", "x").replace("{name}", "x")
        for method in route.methods:
            answer = client.request(method, memory_url("zed", path[len("/api/v1/"):]), json={} if method in ("POST", "PUT") else None)
            error = answer.json().get("error", {}) if answer.headers["content-type"].startswith("application/json") else {}
            assert error.get("category") != "not-found", (method, route.path, answer.text[:200])


def test_a_name_sent_with_a_literal_slash_is_refused_with_the_encoded_form(client):
    answer = client.post("/api/v1/memories/acme/alice/query", json={"expr": "root"})
    assert answer.status_code == 404
    assert "/api/v1/memories/acme%2Falice/query" in answer.json()["error"]["message"]


def test_an_unknown_or_bad_memory_name_is_an_error_with_its_category(client):
    answer = client.post(f"{memory_url('acme/alcie')}/query", json={"expr": "root"})
    assert answer.status_code == 404
    assert answer.json()["error"]["category"] == "unknown-memory" and "'acme/alice'" in answer.json()["error"]["message"]
    for bad in ("a%2F%2Fb", "a%2F..%2Fb", "a%20b", "x" * 201):
        answer = client.post(f"/api/v1/memories/{bad}/query", json={"expr": "root"})
        assert answer.status_code == 400 and answer.json()["error"]["category"] == "invalid-memory-name", bad
    assert client.app.state.registry.resident() == []  # nothing was opened for them


def test_the_server_keeps_at_most_max_open_memories_and_reopens_an_evicted_one(client):
    registry = client.app.state.registry
    client.post(f"{memory_url('acme/alice')}/transactions", json=GOAL)
    for name in ("acme/bob", "zed"):
        client.get(f"{memory_url(name)}/snapshots")
    assert registry.resident() == ["acme/bob", "zed"]
    assert client.post(f"{memory_url('acme/alice')}/query", json={"expr": "root"}).json()["ids"] == ["trip/g"]
    assert len(registry.resident()) == 2 and registry.stats()["evicted"] == 2


# -- the store's memories ---------------------------------------------------------------------------


def test_memories_are_listed_created_and_dropped_over_rest(client):
    assert client.get(MEMORIES_PATH).json() == {"prefix": "", "memories": ["acme/alice", "acme/bob", "zed"]}
    assert client.get(MEMORIES_PATH, params={"prefix": "acme/b"}).json()["memories"] == ["acme/bob"]
    assert client.get(MEMORIES_PATH, params={"prefix": "a b"}).json()["error"]["category"] == "invalid-memory-name"
    schema = {"format": "hgm-schema/1", "extends": "default", "node_types": ["tool"]}
    made = client.post(MEMORIES_PATH, json={"name": "acme/carol", "schema": schema})
    assert made.status_code == 201 and "tool" in made.json()["schema"]["node_types"]
    assert "tool" in client.get(f"{memory_url('acme/carol')}/schema").json()["node_types"]
    assert client.post(MEMORIES_PATH, json={"name": "acme/carol"}).status_code == 409
    assert client.get(memory_url("acme/carol")).json() == {"name": "acme/carol", "t": 0, "nodes": 0, "url": memory_url("acme/carol")}
    assert client.delete(memory_url("acme/carol")).json() == {"name": "acme/carol", "dropped": True}
    assert client.get(memory_url("acme/carol")).json()["error"]["category"] == "unknown-memory"


def test_a_schema_with_errors_names_each_place_and_creates_nothing(client):
    bad = {"format": "hgm-schema/1", "extends": "default", "node_types": ["tool", 3], "relatons": {}}
    answer = client.post(MEMORIES_PATH, json={"name": "acme/dave", "schema": bad})
    assert answer.status_code == 400
    places = {p["where"] for p in answer.json()["error"]["problems"]}
    assert {"node_types[1]", "relatons"} <= places
    assert "acme/dave" not in client.get(MEMORIES_PATH).json()["memories"]


def test_a_server_of_one_memory_cannot_create_memories():
    client = TestClient(create_app(Memory()))
    assert client.get(MEMORIES_PATH).json()["memories"] == ["default"]
    answer = client.post(MEMORIES_PATH, json={"name": "x"})
    assert answer.status_code == 405 and answer.headers["allow"] == "GET"
    assert client.delete(memory_url("default")).status_code == 405


# -- purge and the schema, per memory --------------------------------------------------------------


def test_purge_over_rest_forgets_the_node_in_that_memory_only(client):
    for name in ("acme/alice", "acme/bob"):
        client.post(f"{memory_url(name)}/transactions", json=GOAL)
    answer = client.post(f"{memory_url('acme/alice')}/purge", json={"id": "trip/g", "reason": "the user asked"})
    assert answer.status_code == 200 and answer.json()["purged"] == ["trip/g"] and answer.json()["kind"] == "purge"
    assert client.get(f"{memory_url('acme/alice')}/export", params={"as_of": 1}).json()["nodes"] == []
    assert client.post(f"{memory_url('acme/bob')}/query", json={"expr": "root"}).json()["ids"] == ["trip/g"]
    unknown = client.post(f"{memory_url('acme/alice')}/purge", json={"id": "nope", "reason": "x"})
    assert unknown.status_code == 404 and unknown.json()["error"]["category"] == "unknown-node"
    assert client.post(f"{memory_url('acme/alice')}/purge", json={"id": "x", "reason": " "}).status_code == 400


def test_a_schema_change_the_data_breaks_is_refused_and_changes_nothing(client):
    alice = memory_url("acme/alice")
    client.post(f"{alice}/transactions", json=GOAL)
    before = client.get(f"{alice}/schema").json()
    numbers_only = {"type": "object", "properties": {"content": {"type": "integer"}}}
    breaking = dict(before, attribute_schemas={**before["attribute_schemas"], "goal": numbers_only})
    answer = client.put(f"{alice}/schema", json=breaking)
    assert answer.status_code == 422 and answer.json()["error"]["category"] == "schema-violation"
    assert client.get(f"{alice}/schema").json() == before
    wider = dict(before, node_types=[*before["node_types"], "tool"])
    assert client.put(f"{alice}/schema", json=wider).json()["node_types"][-1] == "tool"
    assert client.post(f"{alice}/transactions", json={"ops": [{"op": "add_node", "id": "t", "type": "tool"}]}).status_code == 200
    assert client.put(f"{alice}/schema", json={"format": "hgm-schema/2"}).status_code == 400


# -- scoped tokens -------------------------------------------------------------------------------------


@pytest.fixture
def scoped(store_path):
    registry = MemoryRegistry(store_path, max_open=4)
    with TestClient(create_app(registry, tokens=TokenScopes.parse(TOKENS, source="tokens.txt"))) as client:
        yield client
    registry.close()


def test_no_token_or_an_unknown_one_is_401(scoped):
    for headers in ({}, auth("not-a-token-of-this-server")):
        answer = scoped.post(f"{memory_url('acme/alice')}/query", json={"expr": "root"}, headers=headers)
        assert answer.status_code == 401 and answer.json()["error"]["category"] == "unauthorized"
        assert answer.headers["www-authenticate"].startswith("Bearer")
    assert scoped.get(MEMORIES_PATH).status_code == 401
    assert scoped.get("/openapi.json").status_code == 200  # holds no data


def test_a_token_outside_its_prefix_is_403_whether_the_memory_exists_or_not(scoped):
    for name in ("zed", "nosuch", "acmex"):
        answer = scoped.post(f"{memory_url(name)}/query", json={"expr": "root"}, headers=auth(WRITER))
        assert answer.status_code == 403 and answer.json()["error"]["category"] == "forbidden", name
    assert scoped.post("/api/v1/query", json={"expr": "root"}, headers=auth(WRITER)).status_code == 403  # default
    assert scoped.get(memory_url("zed"), headers=auth(WRITER)).status_code == 403
    assert scoped.delete(memory_url("zed"), headers=auth(WRITER)).status_code == 403
    assert scoped.post(MEMORIES_PATH, json={"name": "zed/new"}, headers=auth(WRITER)).status_code == 403
    assert scoped.post(MEMORIES_PATH, json={"name": "acme/new"}, headers=auth(WRITER)).status_code == 201
    assert scoped.app.state.registry.resident() == []  # a refused request opens nothing


def test_listings_show_only_the_memories_a_token_reaches(scoped):
    listed = lambda token: scoped.get(MEMORIES_PATH, headers=auth(token)).json()["memories"]  # noqa: E731
    assert listed(WRITER) == ["acme/alice", "acme/bob"]
    assert listed(READER) == ["acme/alice"]
    assert listed(OTHER) == ["zed"]
    assert listed(ALL) == ["acme/alice", "acme/bob", "zed"]


def test_a_read_token_reads_but_cannot_change_the_memory(scoped):
    alice = memory_url("acme/alice")
    assert scoped.post(f"{alice}/transactions", json=GOAL, headers=auth(WRITER)).status_code == 200
    assert scoped.post(f"{alice}/query", json={"expr": "root"}, headers=auth(READER)).json()["ids"] == ["trip/g"]
    assert scoped.get(f"{alice}/nodes/trip/g", headers=auth(READER)).status_code == 200
    assert scoped.post(f"{alice}/transactions", json={"ops": [{"op": "add_node", "type": "fact"}], "dry_run": True}, headers=auth(READER)).status_code == 200
    refused = [
        scoped.post(f"{alice}/transactions", json={"ops": [{"op": "add_node", "type": "fact"}]}, headers=auth(READER)),
        scoped.post(f"{alice}/memory/node", json={"content": "x"}, headers=auth(READER)),
        scoped.post(f"{alice}/snapshots", json={"name": "s"}, headers=auth(READER)),
        scoped.post(f"{alice}/purge", json={"id": "trip/g", "reason": "x"}, headers=auth(READER)),
        scoped.put(f"{alice}/schema", json={"format": "hgm-schema/1", "extends": "default"}, headers=auth(READER)),
        scoped.delete(f"{alice}/rules/default", headers=auth(READER)),
        scoped.delete(alice, headers=auth(READER)),
        scoped.post(f"{alice}/transactions", json=GOAL, headers=auth(ALL)),
    ]
    for answer in refused:
        assert answer.status_code == 403 and answer.json()["error"]["category"] == "forbidden", answer.text
    assert "read" in refused[0].json()["error"]["message"]
    assert scoped.post(f"{alice}/query", json={"expr": "nodes"}, headers=auth(WRITER)).json()["t"] == 1  # nothing changed



def _wait_for_the_token_file_check() -> None:
    import time

    time.sleep(1.1)  # a TokenFile looks at its file at most once a second (tokens.TokenFile.check_every)


@pytest.mark.parametrize("configured", ["hgm serve", "environment"])
def test_the_rest_server_reloads_its_token_file_when_it_changes(store_path, tmp_path, configured):
    # hgm serve --token-file (and HGM_TOKEN_FILE of the app factory) read the file once; the MCP
    # server reloads it through TokenFile: a token added works, a token removed is refused, no restart.
    from hgm_engine.server.rest.command import build_parser, resolve_tokens
    from hgm_engine.server.rest.factory import settings_from_environment

    token_file = tmp_path / "tokens.txt"
    token_file.write_text(f"{READER} acme/alice read\n")
    if configured == "hgm serve":
        tokens = resolve_tokens(build_parser().parse_args(["--db", store_path, "--token-file", str(token_file)]))
    else:
        tokens = settings_from_environment({"HGM_DB": store_path, "HGM_TOKEN_FILE": str(token_file)})["tokens"]
    registry = MemoryRegistry(store_path, max_open=2)
    query = lambda token: client.post(f"{memory_url('acme/alice')}/query", json={"expr": "root"}, headers=auth(token))  # noqa: E731
    with TestClient(create_app(registry, tokens=tokens)) as client:
        assert query(READER).status_code == 200 and query(WRITER).status_code == 401
        token_file.write_text(f"{WRITER} acme/ write\n")  # the reader revoked, a writer added
        _wait_for_the_token_file_check()
        assert query(WRITER).status_code == 200
        revoked = query(READER)
        assert revoked.status_code == 401 and revoked.json()["error"]["category"] == "unauthorized"
        token_file.write_text("short acme/ write\n")  # a version with errors is not taken
        _wait_for_the_token_file_check()
        assert query(WRITER).status_code == 200
    registry.close()


# -- hostile names and paths -------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SEGMENT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(["", ".", "..", "%", "%2F", "a%2F", "x" * 250, "default", "memories"])


def test_no_memory_name_or_path_gets_a_server_error_or_opens_anything(store_path):
    from urllib.parse import quote

    registry = MemoryRegistry(store_path, max_open=2)
    client = TestClient(create_app(registry, tokens=TokenScopes.parse(TOKENS, source="tokens.txt")))

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(segment=_SEGMENT, tail=st.sampled_from(["query", "", "memories", "nodes/a%2Fb", "schema", "purge", "x/y"]),
           method=st.sampled_from(["GET", "POST", "PUT", "DELETE"]))
    def check(segment, tail, method):
        path = "/api/v1/memories/" + quote(segment, safe="%") + ("/" + tail if tail else "")
        answer = client.request(method, path, json={"expr": "root"} if method in ("POST", "PUT") else None, headers=auth(WRITER))
        assert answer.status_code < 500, (path, answer.text[:300])
        assert "error" in answer.json() or answer.status_code == 200
        assert set(registry.resident()) <= {"acme/alice", "acme/bob"}  # only what the token reaches

    check()
    assert registry.list() == ["acme/alice", "acme/bob", "zed"]  # nothing created or dropped
    registry.close()


def test_a_memory_that_fails_to_open_unexpectedly_is_a_json_500_with_the_request_id(client, monkeypatch):
    registry = client.app.state.registry

    def broken(name="default"):
        raise RuntimeError("dictionary changed size during iteration")

    monkeypatch.setattr(registry, "lease", broken)
    answer = client.post(f"{memory_url('zed')}/query", json={"expr": "root"})
    assert answer.status_code == 500 and answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["category"] == "internal"
    assert answer.headers["x-request-id"] in answer.json()["error"]["message"]
