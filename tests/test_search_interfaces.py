"""search over the interfaces: ``hgm search`` and ``hgm index``, the REST routes
(``POST /api/v1/search``, ``GET /api/v1/index``, ``PUT /api/v1/index/embedder``) and the MCP
tools (``search``, ``index_status``, ``set_embedder``). Each answers with scores and the words
that matched, and refuses bad input with a clear error that changes nothing."""

from __future__ import annotations

import json
import os
import sys

import pytest

from hgm_engine import Memory
from hgm_engine.cli import main

sys.path.insert(0, os.path.dirname(__file__))
from openai_stub import OpenAIStub, openai_stub  # noqa: E402,F401 (openai_stub: the fixture)

OPS = [
    {"op": "add_node", "id": "trip", "type": "goal", "content": "Plan a trip to Beijing"},
    {"op": "add_node", "id": "hotel", "type": "entity", "name": "Beijing Hotel", "parent": "trip"},
    {"op": "add_node", "id": "price", "type": "fact", "content": "The hotel costs 800 CNY per night", "parent": "trip"},
    {"op": "add_node", "id": "museum", "type": "fact", "content": "The museum is closed on Monday", "parent": "trip"},
]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "m.db"
    memory = Memory.open(path)
    memory.apply({"ops": OPS, "reason": "plan"})
    memory.apply({"ops": [{"op": "update_node", "id": "price", "set": {"content": "The hotel costs 900 CNY per night"}}]})
    memory.close()
    return path


def _state(path) -> tuple:
    memory = Memory.open(path)
    try:
        return memory.t, memory.export(), memory.search_status()["embedder"]
    finally:
        memory.close()


# -- the CLI -----------------------------------------------------------------------------------


def test_cli_search_prints_ranked_hits_with_scores_and_matched_words(db, capsys):
    assert main(["search", "hotels per night", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("1. price  fact  score ") and lines[0].endswith("matched: hotels, per, night")
    assert lines[1] == "   The hotel costs 900 CNY per night"
    assert lines[2].startswith("2. hotel  entity  score ") and lines[2].endswith("matched: hotels")


def test_cli_search_json_has_the_query_the_state_and_each_hits_score_and_words(db, capsys):
    assert main(["search", "hotel", "--db", str(db), "--type", "fact", "--limit", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["query"] == "hotel" and doc["t"] == 2
    assert [(h["id"], h["type"], h["matched"]) for h in doc["hits"]] == [("price", "fact", ["hotel"])]
    assert doc["hits"][0]["score"] > 0 and doc["hits"][0]["node"]["content"].startswith("The hotel")


def test_cli_search_as_of_reads_that_states_text(db, capsys):
    assert main(["search", "800", "--db", str(db), "--as-of", "1", "--json"]) == 0
    assert [h["id"] for h in json.loads(capsys.readouterr().out)["hits"]] == ["price"]
    assert main(["search", "800", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"] == []


@pytest.mark.parametrize(
    "args, words",
    [
        (["search", ""], "not an empty string"),
        (["search", "the of"], "every word in it is a stop word"),
        (["search", "hotel", "--type", "fcat"], "did you mean 'fact'"),
        (["index", "config", "--embedder", "bert"], "unknown embedder 'bert'"),
        (["index", "config", "--embedder", "openai", "--base-url", "ftp://x"], "base_url must be"),
    ],
)
def test_cli_bad_search_input_exits_2_with_the_error_and_changes_nothing(db, capsys, args, words):
    before = _state(db)
    assert main([*args, "--db", str(db)]) == 2
    captured = capsys.readouterr()
    assert words in captured.err and "Traceback" not in captured.err
    assert _state(db) == before


def test_cli_index_config_sets_the_embedder_kept_with_the_memory(db, capsys, openai_stub):
    assert main(["index", "config", "--db", str(db), "--embedder", "openai:stub-embed", "--base-url", openai_stub.base_url]) == 0
    assert "embedder: openai:stub-embed" in capsys.readouterr().out
    assert main(["index", "status", "--db", str(db), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    # Read from the store, not built; the vectors are read when a search first needs them.
    assert status["source"] == "stored" and status["embedder"]["name"] == "openai:stub-embed"
    assert status["embedder"]["vectors"] is None
    assert main(["search", "The museum is closed on Monday", "--db", str(db), "--json"]) == 0
    hit = json.loads(capsys.readouterr().out)["hits"][0]
    assert hit["id"] == "museum" and hit["similarity"] == pytest.approx(1.0)
    assert main(["index", "config", "--db", str(db), "--embedder", "none"]) == 0
    assert "embedder: none (words only)" in capsys.readouterr().out


def test_cli_an_embedder_endpoint_that_fails_exits_1_and_changes_nothing(db, capsys):
    with OpenAIStub() as stub:
        url = stub.base_url
    before = _state(db)
    assert main(["index", "config", "--db", str(db), "--embedder", "openai:stub-embed", "--base-url", url]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: embedder: the embedder openai/stub-embed failed") and "Traceback" not in err
    assert _state(db) == before


# -- REST ----------------------------------------------------------------------------------------

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from hgm_engine.server import create_app  # noqa: E402


@pytest.fixture
def memory(db):
    memory = Memory.open(db)
    yield memory
    memory.close()


@pytest.fixture
def client(memory):
    return TestClient(create_app(memory), raise_server_exceptions=False)


def test_rest_search_answers_hits_with_scores_and_matched_words(client):
    response = client.post("/api/v1/search", json={"text": "Hotels in Beijing", "limit": 2})
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["query"] == "Hotels in Beijing" and doc["t"] == 2
    assert [(h["id"], h["matched"]) for h in doc["hits"]] == [("hotel", ["hotels", "beijing"]), ("trip", ["beijing"])]


def test_rest_search_as_of_a_snapshot_name(client, memory):
    memory.snapshot("start", t=1)
    doc = client.post("/api/v1/search", json={"text": "800", "as_of": "start"}).json()
    assert doc["t"] == 1 and [h["id"] for h in doc["hits"]] == ["price"]


@pytest.mark.parametrize(
    "body, status, category, where",
    [
        ({"text": ""}, 400, "invalid-argument", "text"),
        ({"text": "the"}, 400, "invalid-argument", None),
        ({"text": 3}, 400, "invalid-argument", "text"),
        ({"text": "hotel", "limit": -1}, 400, "invalid-argument", "limit"),
        ({"text": "hotel", "limit": 1001}, 400, "invalid-argument", "limit"),
        ({"text": "hotel", "type": "fcat"}, 400, "invalid-argument", None),
        ({"text": "hotel", "as_of": 99}, 400, None, "as_of"),
        ({"text": "hotel", "as_of": "nope"}, 404, None, "as_of"),
        ({"text": "hotel", "bogus": 1}, 400, "invalid-argument", "bogus"),
    ],
)
def test_rest_bad_search_bodies_are_4xx_naming_the_field(client, body, status, category, where):
    response = client.post("/api/v1/search", json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert category is None or error["category"] == category
    assert where is None or error.get("where") == where, error


def test_rest_index_status_and_embedder_routes(client, memory, openai_stub):
    assert client.get("/api/v1/index").json()["embedder"] is None
    response = client.put("/api/v1/index/embedder", json={"embedder": "openai:stub-embed", "base_url": openai_stub.base_url})
    assert response.status_code == 200, response.text
    assert response.json()["embedder"]["dimensions"] == 16
    assert memory.search_status()["embedder"]["name"] == "openai:stub-embed"
    assert client.put("/api/v1/index/embedder", json={"embedder": None}).json()["embedder"] is None


@pytest.mark.parametrize(
    "body, status, category",
    [
        ({"embedder": "bert"}, 400, "unknown-embedder"),
        ({"embedder": 3}, 400, "invalid-argument"),
        ({"embedder": "openai", "base_url": "ftp://x"}, 400, "invalid-argument"),
        ({"embedder": "openai", "min_similarity": 2}, 400, "invalid-argument"),
        ({}, 400, "invalid-argument"),
    ],
)
def test_rest_bad_embedder_settings_are_400_and_change_nothing(client, memory, body, status, category):
    before = (memory.t, memory.search_status()["embedder"], memory.store.get_meta("node_index.embedder"))
    response = client.put("/api/v1/index/embedder", json=body)
    assert response.status_code == status and response.json()["error"]["category"] == category, response.text
    assert (memory.t, memory.search_status()["embedder"], memory.store.get_meta("node_index.embedder")) == before


def test_rest_an_embedder_endpoint_that_fails_is_503_and_changes_nothing(client, memory):
    with OpenAIStub() as stub:
        url = stub.base_url
    response = client.put("/api/v1/index/embedder", json={"embedder": "openai:stub-embed", "base_url": url})
    assert response.status_code == 503 and response.json()["error"]["category"] == "embedder"
    assert memory.search_status()["embedder"] is None and memory.store.get_meta("node_index.embedder") is None


def test_rest_search_is_documented_with_typed_hits(client):
    doc = client.get("/openapi.json").json()
    operation = doc["paths"]["/api/v1/search"]["post"]
    assert operation["operationId"] == "search"
    hit = doc["components"]["schemas"]["SearchHitModel"]
    assert {"id", "type", "score", "matched", "node"} <= set(hit["required"])


# -- MCP -------------------------------------------------------------------------------------------


def test_mcp_search_tool_tells_when_to_search_and_when_to_write_a_path():
    from hgm_engine.server.mcp import TOOLS

    tool = next(t for t in TOOLS if t.name == "search")
    assert "ABOUT" in tool.description and "Write a path expression" in tool.description
    assert "search($q)" in tool.description and tool.read_only
    query = next(t for t in TOOLS if t.name == "query")
    assert "search($text)" in query.description and ".rank($text)" in query.description


def test_mcp_search_tool_answers_hits_and_refuses_bad_text(memory):
    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.service import MemoryService

    service = MemoryService(memory)
    doc, failed = call_tool(service, "search", {"text": "museum Monday", "type": "fact"})
    assert not failed and [(h["id"], h["matched"]) for h in doc["hits"]] == [("museum", ["museum", "monday"])]
    for arguments, category in (({"text": ""}, "invalid-argument"), ({"text": "of the"}, "invalid-argument"),
                                ({"text": 5}, "invalid-argument"), ({"text": "x", "limit": 5000}, "invalid-argument")):
        doc, failed = call_tool(service, "search", arguments)
        assert failed and doc["error"]["category"] == category, (arguments, doc)


def test_mcp_set_embedder_and_index_status(memory, openai_stub):
    from hgm_engine.server.mcp import call_tool
    from hgm_engine.server.service import MemoryService

    service = MemoryService(memory)
    doc, failed = call_tool(service, "set_embedder", {"embedder": "bert"})
    assert failed and doc["error"]["category"] == "unknown-embedder"
    doc, failed = call_tool(service, "set_embedder", {"embedder": "openai:stub-embed", "base_url": openai_stub.base_url})
    assert not failed and doc["embedder"]["vectors"] == 4
    doc, failed = call_tool(service, "index_status", {})
    assert not failed and doc["embedder"]["name"] == "openai:stub-embed" and doc["nodes"] == 4


# -- fuzz: whatever reaches search, the answer is hits or an error with a category -------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hgm_engine.errors import HGMError  # noqa: E402

HOSTILE = st.sampled_from(["\ud800", "\x00", "²", "٣", "9" * 5000, "", " ", "the", "a\nb", "\u202e", "hotel", "x" * 20_000])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=20) | HOSTILE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def fuzz_path(tmp_path_factory):
    return tmp_path_factory.mktemp("search-fuzz") / "m.db"


@pytest.fixture(scope="module")
def fuzz_memory(fuzz_path):
    memory = Memory.open(fuzz_path)
    memory.apply({"ops": OPS})
    yield memory
    memory.close()


@pytest.fixture(scope="module")
def fuzz_client(fuzz_memory):
    return TestClient(create_app(fuzz_memory), raise_server_exceptions=False)


def _fuzz_state(memory) -> tuple:
    return memory.t, memory.store.get_meta("node_index.embedder"), memory.search_status()["embedder"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_search_body_or_embedder_setting_is_answered_and_a_refusal_changes_nothing(fuzz_memory, fuzz_client, data):
    client = fuzz_client
    fields = ["text", "type", "limit", "as_of"] if data.draw(st.booleans()) else ["embedder", "base_url", "min_similarity"]
    chosen = data.draw(st.lists(st.sampled_from(fields + ["bogus"]), unique=True))
    body = {name: data.draw(VALUES) for name in chosen}
    if "embedder" in body and body["embedder"] in ("openai", "minilm") or str(body.get("embedder", "")).startswith("openai:"):
        body["embedder"] = "bert"  # never reach a real endpoint or load a model here
    before = _fuzz_state(fuzz_memory)
    text = json.dumps(body).encode("utf-8", "surrogatepass")
    if "text" in fields:
        response = client.post("/api/v1/search", content=text, headers={"content-type": "application/json"})
    else:
        response = client.put("/api/v1/index/embedder", content=text, headers={"content-type": "application/json"})
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.json()["error"]["category"]
        assert _fuzz_state(fuzz_memory) == before
    elif "text" not in fields:
        fuzz_memory.configure_search(embedder=None)  # words only again for the next example


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=VALUES, step=st.sampled_from(["search($q)", "nodes.rank($q)", "search($q).where(type = 'fact').limit(2)"]))
def test_any_search_parameter_in_a_query_is_nodes_or_an_hgm_error(fuzz_memory, text, step):
    try:
        result = fuzz_memory.query(step, params={"q": text})
    except HGMError as err:
        assert err.category and isinstance(err, ValueError)
    else:
        assert isinstance(text, str) and all(isinstance(i, str) for i in result.ids)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(max_size=30) | HOSTILE.filter(lambda s: "\ud800" not in s and "\x00" not in s))
def test_any_cli_search_text_exits_0_or_2_without_a_traceback(fuzz_memory, fuzz_path, capsys, text):
    # "--" so that a text starting with "-" is the text, not an option (as a shell user writes it)
    code = main(["search", "--db", str(fuzz_path), "--json", "--", text])
    captured = capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in captured.err
    if code == 0:
        assert json.loads(captured.out)["query"] == text
