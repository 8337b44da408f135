"""Every capability on REST and MCP, a typed OpenAPI document, and docs that load offline (issue 16).

Each test is one behaviour; the findings of the API checker (tests/test_openapi_contract.py)
each have their own test here, written before the fix.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("mcp")
from fastapi.testclient import TestClient  # noqa: E402

from hgm_engine import Memory  # noqa: E402
from hgm_engine.llm import ScriptedClient  # noqa: E402
from hgm_engine.server import create_app  # noqa: E402
from hgm_engine.server.mcp import PROMPTS, RESOURCES, TOOLS, call_tool, get_prompt, read_resource  # noqa: E402
from hgm_engine.server.service import LLMEndpoint, MemoryService  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from openai_stub import OpenAIStub, Scripted  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PLAN = [
    {"op": "add_node", "id": "trip", "type": "goal", "content": "Plan a trip", "status": "active"},
    {"op": "add_node", "id": "visit", "type": "action", "parent": "trip", "content": "Visit", "status": "pending"},
    {"op": "add_node", "id": "hotel", "type": "result", "content": "Hotel"},
    {"op": "add_node", "id": "near", "type": "fact", "content": "Near the palace"},
    {"op": "add_edge", "from": "visit", "to": "hotel", "type": "produces"},
    {"op": "add_edge", "from": "near", "to": "hotel", "type": "derived_from"},
]
TRAJECTORY = {"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}


@pytest.fixture
def memory() -> Memory:
    m = Memory()
    m.apply({"ops": PLAN, "reason": "plan"})
    m.ingest([TRAJECTORY])
    return m


@pytest.fixture
def client(memory: Memory) -> TestClient:
    return TestClient(create_app(memory), raise_server_exceptions=False)


def _document(app) -> dict:
    return TestClient(app).get("/openapi.json").json()


# -- the OpenAPI document ---------------------------------------------------------------------------


def test_every_operation_has_a_typed_success_response(memory):
    doc = _document(create_app(memory))
    for path, methods in doc["paths"].items():
        for method, operation in methods.items():
            success = [code for code in operation["responses"] if code.startswith("2")]
            assert success, (method, path)
            schema = operation["responses"][success[0]]["content"]["application/json"]["schema"]
            assert "$ref" in schema, (method, path, schema)


def test_operation_ids_are_stable_names_not_generated_ones(memory):
    doc = _document(create_app(memory))
    ids = {(m, p): op["operationId"] for p, ms in doc["paths"].items() for m, op in ms.items()}
    assert ids[("post", "/api/v1/query")] == "query"
    assert ids[("post", "/api/v1/transactions")] == "apply_transaction"
    assert ids[("post", "/api/v1/snapshots")] == "create_snapshot"
    for operation_id in ids.values():
        assert not re.search(r"_api_v1_|_(get|post|delete)$", operation_id), operation_id
    assert len(set(ids.values())) == len(ids)


def test_ops_are_a_union_discriminated_by_op(memory):
    doc = _document(create_app(memory))
    schemas = doc["components"]["schemas"]
    ops = schemas["TransactionRequest"]["properties"]["ops"]
    assert ops["items"] == {"$ref": "#/components/schemas/Op"}
    union = schemas["Op"]
    assert union["discriminator"]["propertyName"] == "op"
    assert set(union["discriminator"]["mapping"]) == {
        "add_node", "update_node", "delete_node", "add_edge", "update_edge", "delete_edge", "replace_branch", "confirm", "invalidate"
    }
    assert schemas["UpdateNodeOp"]["required"] == ["op", "id"] and schemas["UpdateNodeOp"]["additionalProperties"] is False


def test_with_a_token_every_data_operation_documents_401(memory):
    doc = _document(create_app(memory, token=TOKEN))
    for path, methods in doc["paths"].items():
        for method, operation in methods.items():
            assert "401" in operation["responses"], (method, path)


def test_creating_a_snapshot_is_documented_and_answered_as_201(memory):
    client = TestClient(create_app(memory))
    operation = client.get("/openapi.json").json()["paths"]["/api/v1/snapshots"]["post"]
    assert "201" in operation["responses"] and "200" not in operation["responses"]
    assert client.post("/api/v1/snapshots", json={"name": "before"}).status_code == 201


def test_an_empty_query_text_is_outside_the_documented_schema(client):
    schema = client.get("/openapi.json").json()["components"]["schemas"]["QueryRequest"]["properties"]["expr"]
    assert schema["minLength"] == 1 and schema["pattern"] == r"\S"
    assert client.post("/api/v1/query", json={"expr": ""}).status_code == 400


def test_an_integral_float_is_an_integer_as_json_schema_says(client):
    response = client.post("/api/v1/locate", json={"text": "refund my order", "k": 28.0})
    assert response.status_code == 200, response.text
    assert client.post("/api/v1/locate", json={"text": "refund", "k": 28.5}).status_code == 400
    assert client.post("/api/v1/revert", json={"t": 1.0}).status_code == 200


def test_an_op_without_op_is_outside_the_schema_and_refused_naming_the_op(client, memory):
    response = client.post("/api/v1/transactions", json={"ops": [{}]})
    assert response.status_code == 400 and response.json()["error"]["where"] == "ops[0]"
    assert memory.t == 2


def test_a_405_lists_every_method_of_the_path_in_allow(client):
    response = client.request("PUT", "/api/v1/snapshots")
    assert response.status_code == 405 and response.json()["error"]["category"] == "method-not-allowed"
    assert response.headers["allow"] == "GET, POST"
    assert client.request("TRACE", "/health").headers["allow"] == "GET"


def test_an_unknown_query_parameter_is_refused_naming_it(client):
    response = client.get("/api/v1/stale", params={"asof": "1"})
    assert response.status_code == 400 and response.json()["error"]["where"] == "asof"


# -- /docs and the token -------------------------------------------------------------------------------


def test_docs_load_their_assets_from_the_server_not_a_cdn(memory):
    client = TestClient(create_app(memory))
    page = client.get("/docs").text
    scripts = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert scripts and all(not s.startswith("http") for s in scripts), scripts
    for asset in scripts:
        assert client.get(asset).status_code == 200, asset
    assert client.get("/redoc").status_code == 200


def test_with_a_token_the_document_and_the_docs_are_read_without_it_and_the_data_is_not(memory):
    client = TestClient(create_app(memory, token=TOKEN))
    for path in ("/openapi.json", "/docs", "/redoc", "/docs-assets/swagger-ui.css"):
        assert client.get(path).status_code == 200, path
    assert client.get("/api/v1/nodes/trip").status_code == 401
    assert client.post("/docs").status_code == 401


# -- the new routes --------------------------------------------------------------------------------------


def test_constraints_and_rule_sets_over_rest(client, memory):
    added = client.post("/api/v1/constraints", json={"name": "has_content", "text": "each goal must has(content)"})
    assert added.status_code == 200 and added.json()["replaced"] is None
    assert client.get("/api/v1/constraints").json()["constraints"] == [{"name": "has_content", "text": "each goal must has(content)"}]
    refused = client.post("/api/v1/constraints", json={"name": "done", "text": "each action must has(result)"})
    assert refused.status_code == 422 and "visit" in [v["node"] for v in refused.json()["violations"]]
    assert client.delete("/api/v1/constraints/has_content").json()["removed"] is True
    assert memory.constraints() == {}
    loaded = client.post("/api/v1/rules", json={"text": "propagate derived_from backward depth 2", "name": "stale"})
    assert loaded.json()["propagations"] == ["propagate:derived_from"]
    assert [r["name"] for r in client.get("/api/v1/rules").json()["rule_sets"]] == ["stale"]
    assert client.get("/api/v1/violations").json()["violations"] == []
    bad = client.post("/api/v1/rules", json={"text": "propagate nowhere", "name": "x"})
    assert bad.status_code == 400 and bad.json()["error"]["line"] == 1
    assert client.delete("/api/v1/rules/stale").json() == {"removed": "stale"} and memory.rules() == {}


def test_paths_over_rest_ingest_outcome_rewrite_rollback_reset(client, memory):
    ingested = client.post("/api/v1/paths/ingest", json={"trajectories": [{"id": "r2", "goal": "Change address", "steps": ["update_address"]}]})
    assert ingested.status_code == 200 and ingested.json()["ingested"] == ["r2"]
    refused = client.post("/api/v1/paths/ingest", json={"trajectories": [{"id": "bad"}]})
    assert refused.status_code == 400 and refused.json()["problems"] and refused.json()["error"]["category"]
    assert [p["id"] for p in client.get("/api/v1/paths").json()["paths"]] == ["r1", "r2"]
    assert client.get("/api/v1/path", params={"id": "r1"}).json()["steps"][0]["name"] == "check_policy"
    assert client.get("/api/v1/path", params={"id": "nope"}).status_code == 404
    outcome = client.post("/api/v1/paths/outcome", json={"path_id": "r1", "outcome": "failure", "reward": 0.1})
    assert outcome.json()["committed"] and memory.path("r1")["failures"] == 1
    rewritten = client.post("/api/v1/rewrite", json={"path_id": "r1", "steps": ["refund"], "reason": "skip the check"})
    assert rewritten.json()["path"] == "r1@v2"
    rolled = client.post("/api/v1/paths/rollback", json={"path_id": "r1@v2", "version": 1})
    assert rolled.status_code == 200 and memory.path(rolled.json()["path"])["restored_from"] == "r1"
    reset = client.post("/api/v1/paths/reset", json={"path_id": "r1"})  # nothing to reset: refused, named
    assert reset.status_code == 422 and reset.json()["error"]["category"] == "no-change"
    assert client.get("/api/v1/paths/metrics").json()["rollbacks"] == 1


def test_commits_histories_and_load_over_rest(client, memory):
    commits = client.get("/api/v1/commits", params={"since": 0, "limit": 1}).json()
    assert [c["t"] for c in commits["commits"]] == [1] and commits["more"] is True
    histories = client.post("/api/v1/histories", json={"nodes": ["trip", "hotel"]}).json()["histories"]
    assert [h["t"] for h in histories["trip"]] == [1]
    graph = {"format": "hgm-graph/1", "nodes": [{"id": "extra", "type": "fact", "content": "x"}], "edges": []}
    assert client.post("/api/v1/load", json={"graph": graph}).json()["committed"] and memory.node("extra")
    again = client.post("/api/v1/load", json={"graph": graph})
    assert again.status_code in (400, 409) and memory.t == 3


def test_explain_says_how_each_step_runs_when_asked(client):
    plan = client.post("/api/v1/explain", json={"expr": "#trip.children", "physical": True}).json()["plan"]
    assert "physical:" in plan


# -- the LLM routes, against the local OpenAI-compatible stub -------------------------------------


def test_the_llm_rewrite_over_rest_uses_the_servers_endpoint(memory):
    answer = {"kept": [1], "changed": [], "added": [], "removed": [0], "reason": "the policy check is not needed"}
    with OpenAIStub() as stub:
        stub.push(Scripted.text("not json"), Scripted.json(answer))
        client = TestClient(create_app(memory, llm=LLMEndpoint(base_url=stub.base_url, model="stub-model")))
        done = client.post("/api/v1/paths/llm-rewrite", json={"path_id": "r1", "feedback": "skip the check"})
        assert done.status_code == 200, done.text
        body = done.json()
        assert body["committed"] and body["path"] == "r1@v2" and len(body["proposal"]["attempts"]) == 2
        assert stub.chat_requests[0]["model"] == "stub-model"
        assert [s["name"] for s in memory.path("r1@v2")["steps"]] == ["refund"]
        stub.push(Scripted.text("still not json"))
        failed = client.post("/api/v1/paths/llm-rewrite", json={"path_id": "r1@v2", "feedback": "x", "attempts": 1})
        assert failed.status_code == 502 and failed.json()["error"]["category"] == "invalid-model-answer"
        assert failed.json()["attempts"][0]["problems"]
        assert memory.path("r1@v2")["current"]


def test_the_llm_rewrite_without_any_endpoint_is_a_503_and_changes_nothing(memory, monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    client = TestClient(create_app(memory))
    response = client.post("/api/v1/paths/llm-rewrite", json={"path_id": "r1", "feedback": "skip the check"})
    assert response.status_code == 503 and response.json()["error"]["category"] == "model-unavailable"
    assert memory.t == 2


def test_the_planner_step_over_rest_reaches_the_planner_through_its_entry_point(memory):
    answer = {"queries": [], "ops": [{"op": "update_node", "id": "visit", "set": {"status": "done"}}], "tool": None,
              "done": True, "outcome": "success", "reason": "visited"}
    with OpenAIStub() as stub:
        stub.push(Scripted.json(answer))
        client = TestClient(create_app(memory, llm=LLMEndpoint(base_url=stub.base_url, model="m")))
        step = client.post("/api/v1/planner/step", json={"task": "Visit the palace", "commit": True})
    assert step.status_code == 200, step.text
    body = step.json()
    assert body["plan"]["done"] and body["report"]["committed"] and body["t"] == 2
    assert memory.node("visit")["status"] == "done"


def test_the_engine_finds_the_planner_by_entry_point_not_by_import():
    for path in (REPO / "hgm_engine" / "server" / "service").rglob("*.py"):  # the service is a package
        source = path.read_text(encoding="utf-8")
        assert "import planners" not in source and "from planners" not in source, path
    from importlib.metadata import entry_points

    assert [e.value for e in entry_points(group="hgm.planners")] == ["planners.remote"]


# -- MCP: tools, resources, prompts ----------------------------------------------------------------


def test_mcp_as_of_and_other_t_or_name_arguments_use_anyof_not_a_list_of_types():
    def walk(node):
        if isinstance(node, dict):
            assert not isinstance(node.get("type"), list), node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for tool in TOOLS:
        walk(tool.input_schema)
    query = next(t for t in TOOLS if t.name == "query")
    assert "anyOf" in query.input_schema["properties"]["as_of"]


def test_mcp_confirm_revert_diff_and_snapshot_tools(memory):
    service = MemoryService(memory)
    memory.load_rules("propagate derived_from backward depth 2", "stale")
    updated, _ = call_tool(service, "transact", {"ops": [{"op": "update_node", "id": "hotel", "set": {"content": "Moved"}}]})
    assert [d["id"] for d in updated["dirtied"]] == ["near"]
    assert call_tool(service, "snapshot", {"name": "moved"})[0] == {"name": "moved", "t": 3}
    confirmed, failed = call_tool(service, "confirm", {"id": "near"})
    assert not failed and confirmed["committed"] and not memory.stale()
    diff, _ = call_tool(service, "diff", {"from": 2, "to": "moved"})
    assert {c["id"] for c in diff["changes"]} >= {"hotel"}
    reverted, failed = call_tool(service, "revert", {"t": 4})  # the confirm: the mark is back
    assert not failed and reverted["committed"] and [s["id"] for s in memory.stale()] == ["near"]
    assert call_tool(service, "snapshots", {})[0]["snapshots"] == {"moved": 3}


def test_mcp_rules_ingest_and_path_tools(memory):
    service = MemoryService(memory)
    assert not call_tool(service, "add_constraint", {"name": "c", "text": "each goal must has(content)"})[1]
    assert call_tool(service, "constraints", {})[0]["constraints"][0]["name"] == "c"
    assert not call_tool(service, "ingest", {"trajectories": [{"id": "r2", "goal": "g", "steps": ["a"]}]})[1]
    assert call_tool(service, "record_outcome", {"path_id": "r2", "outcome": "success", "reward": 1})[0]["committed"]
    assert call_tool(service, "get_path", {"path_id": "r2"})[0]["successes"] == 1
    doc, failed = call_tool(service, "reset_path", {"path_id": "nope"})
    assert failed and doc["error"]["category"] in ("unknown-path", "unknown-node")


def test_mcp_resources_read_the_memory_and_name_what_is_missing(memory):
    service = MemoryService(memory)
    uris = {r.uri for r in RESOURCES}
    assert {"hgm://schema", "hgm://stale", "hgm://snapshots", "hgm://rules", "hgm://paths"} <= uris
    assert read_resource(service, "hgm://nodes/trip")[0]["content"] == "Plan a trip"
    assert read_resource(service, "hgm://paths/r1")[0]["goal"] == "Refund order A1"
    assert read_resource(service, "hgm://schema")[0]["node_types"][0] == "goal"
    assert read_resource(service, "hgm://nowhere") == (None, True)


def test_mcp_prompts_fill_in_their_arguments():
    assert {p.name for p in PROMPTS} == {"next_step", "review_stale", "improve_path"}
    text = get_prompt("improve_path", {"path_id": "r1", "feedback": "too slow"})[1]
    assert "r1" in text and "too slow" in text and '{"keep": i}' in text
    assert get_prompt("nowhere", {}) is None


def test_mcp_resources_and_prompts_through_the_sdk_client(tmp_path):
    import anyio
    from mcp import Client, StdioServerParameters

    db = tmp_path / "memory.db"
    with Memory.open(db) as m:
        m.apply({"ops": PLAN})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hgm_engine.server.mcp_server", "--db", str(db)],
        cwd=str(REPO),
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
    )

    async def conversation() -> dict:
        async with Client(params) as client:
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            node = await client.read_resource("hgm://nodes/trip")
            prompts = await client.list_prompts()
            prompt = await client.get_prompt("next_step", {"goal": "trip"})
            return {
                "resources": [r.uri for r in resources.resources],
                "templates": [t.uri_template for t in templates.resource_templates],
                "node": json.loads(node.contents[0].text),
                "prompts": [p.name for p in prompts.prompts],
                "prompt": prompt.messages[0].content.text,
            }

    seen = anyio.run(conversation)
    assert "hgm://stale" in seen["resources"] and "hgm://nodes/{id}" in seen["templates"]
    assert seen["node"]["id"] == "trip"
    assert "next_step" in seen["prompts"] and "frontier" in seen["prompt"]
