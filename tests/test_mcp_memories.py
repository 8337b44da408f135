"""MCP tools over many memories (issue 13 item 4 and 5, MCP side): the memory argument, the
grant of the request's token, list_memories, create_memory, purge, the schema tools and the
per-memory resources; in process, over hgm_engine/server/registry.py."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgm_engine import Memory, open_store
from hgm_engine.server.mcp import (
    STORE_TOOLS,
    TOOLS,
    Access,
    call_tool,
    language_reference,
    memories_of,
    read_resource,
    run,
    build_parser,
)
from hgm_engine.server.registry import MemoryRegistry
from hgm_engine.server.service import MemoryService
from hgm_engine.server.tokens import TokenScopes

GOAL = [{"op": "add_node", "id": "g", "type": "goal", "content": "alice's goal"}]
# A goal whose id the memory picks: a commit of it succeeds whatever the memory holds already
# (the hypothesis tests share one registry between their examples).
ANOTHER_GOAL = [{"op": "add_node", "type": "goal", "content": "another goal"}]
WRITER, READER = "acme-writer-token-0123456789", "alice-reader-token-0123456789"
SCOPES = TokenScopes.parse(f"{WRITER} acme write\n{READER} acme/alice read")
ACME_WRITER, ALICE_READER = SCOPES.grant(WRITER), SCOPES.grant(READER)


@pytest.fixture
def registry(tmp_path):
    path = str(tmp_path / "memories.db")
    with open_store(path) as store:
        for name in ("acme/alice", "acme/bob", "zed"):
            store.create(name).close()
    registry = MemoryRegistry(path, max_open=2)
    yield registry
    registry.close()


def ok(doc_failed):
    doc, failed = doc_failed
    assert not failed, doc
    return doc


def refused(doc_failed, category):
    doc, failed = doc_failed
    assert failed and doc["error"]["category"] == category, doc
    return doc["error"]


# -- the tool set ---------------------------------------------------------------------------


def test_every_tool_but_the_store_tools_takes_an_optional_memory_argument():
    store_tools = {t.name for t in STORE_TOOLS}
    assert store_tools == {"list_memories", "create_memory"}
    for tool in TOOLS:
        properties = tool.input_schema["properties"]
        if tool.name in store_tools:
            assert "memory" not in properties
            continue
        assert "memory" in properties and "memory" not in tool.input_schema["required"], tool.name
        assert "list_memories" in properties["memory"]["description"]


def test_the_memory_argument_tells_a_model_what_a_memory_is():
    described = next(t for t in TOOLS if t.name == "query").input_schema["properties"]["memory"]["description"]
    for words in ("separate memories", "acme/alice", "default memory", "same memory"):
        assert words in described


def test_a_tool_name_is_unique():
    names = [t.name for t in TOOLS]
    assert len(names) == len(set(names))


# -- the memory argument --------------------------------------------------------------------


def test_a_call_uses_the_memory_it_names_and_the_others_do_not_see_it(registry):
    ok(call_tool(registry, "transact", {"memory": "acme/alice", "ops": GOAL}))
    assert ok(call_tool(registry, "query", {"memory": "acme/alice", "expr": "root"}))["ids"] == ["g"]
    assert ok(call_tool(registry, "query", {"memory": "acme/bob", "expr": "root"}))["ids"] == []


def test_a_call_without_memory_uses_the_default_memory(registry):
    ok(call_tool(registry, "transact", {"ops": GOAL}, default_memory="zed"))
    assert ok(call_tool(registry, "query", {"memory": "zed", "expr": "root"}))["ids"] == ["g"]


def test_an_unknown_memory_is_named_with_the_closest_names(registry):
    error = refused(call_tool(registry, "stale", {"memory": "acme/alcie"}), "unknown-memory")
    assert "'acme/alice'" in error["message"]


def test_a_bad_memory_name_is_refused_with_the_rule(registry):
    error = refused(call_tool(registry, "stale", {"memory": "acme/../x"}), "invalid-memory-name")
    assert error["where"] == "memory" and "'..'" in error["message"]


def test_an_evicted_memory_reopens_with_everything_committed(registry):
    for name in ("acme/alice", "acme/bob", "zed"):
        ok(call_tool(registry, "transact", {"memory": name, "ops": [{"op": "add_node", "id": name.replace("/", "-"), "type": "goal"}]}))
    assert registry.stats()["evicted"] >= 1
    assert ok(call_tool(registry, "query", {"memory": "acme/alice", "expr": "root"}))["ids"] == ["acme-alice"]


def test_a_single_memory_service_is_the_memory_default():
    service = MemoryService(Memory())
    ok(call_tool(service, "transact", {"memory": "default", "ops": GOAL}))
    assert ok(call_tool(service, "list_memories", {})) == {"memories": ["default"], "default": "default", "prefix": ""}
    refused(call_tool(service, "create_memory", {"name": "x"}), "not-implemented")


# -- scopes ----------------------------------------------------------------------------------


def test_a_token_may_not_use_a_memory_outside_its_prefix(registry):
    error = refused(call_tool(registry, "query", {"memory": "zed", "expr": "root"}, grant=ACME_WRITER), "forbidden")
    assert error["where"] == "zed" and "acme/" in error["message"]


def test_a_memory_outside_the_scope_is_forbidden_whether_it_exists_or_not(registry):
    refused(call_tool(registry, "query", {"memory": "nowhere", "expr": "root"}, grant=ACME_WRITER), "forbidden")


def test_the_default_memory_outside_the_scope_is_forbidden(registry):
    refused(call_tool(registry, "stale", {}, grant=ACME_WRITER, default_memory="zed"), "forbidden")


@pytest.mark.parametrize("tool,arguments", [
    ("transact", {"ops": GOAL}),
    ("purge", {"id": "g", "reason": "asked"}),
    ("set_schema", {"schema": {"format": "hgm-schema/1", "extends": "default"}}),
    ("snapshot", {"name": "s"}),
    ("load_rules", {"text": "propagate derived_from backward depth 1"}),
])
def test_a_read_token_may_not_change_its_memory(registry, tool, arguments):
    error = refused(call_tool(registry, tool, {"memory": "acme/alice", **arguments}, grant=ALICE_READER), "forbidden")
    assert "write token" in error["message"]
    assert ok(call_tool(registry, "commits", {"memory": "acme/alice"}))["commits"] == []


def test_a_read_token_may_dry_run_a_transaction(registry):
    report = ok(call_tool(registry, "transact", {"memory": "acme/alice", "ops": GOAL, "dry_run": True}, grant=ALICE_READER))
    assert report["committed"] is False


def test_a_read_token_may_not_create_a_memory(registry):
    refused(call_tool(registry, "create_memory", {"name": "acme/alice/new"}, grant=ALICE_READER), "forbidden")
    assert "acme/alice/new" not in registry.list()


def test_list_memories_shows_only_what_the_token_covers_under_the_prefix(registry):
    assert ok(call_tool(registry, "list_memories", {}, grant=ACME_WRITER))["memories"] == ["acme/alice", "acme/bob"]
    assert ok(call_tool(registry, "list_memories", {"prefix": "acme/b"}, grant=ACME_WRITER))["memories"] == ["acme/bob"]
    assert ok(call_tool(registry, "list_memories", {}, grant=ALICE_READER))["memories"] == ["acme/alice"]
    assert ok(call_tool(registry, "list_memories", {}))["memories"] == ["acme/alice", "acme/bob", "zed"]


def test_list_memories_refuses_a_prefix_with_a_bad_character(registry):
    refused(call_tool(registry, "list_memories", {"prefix": "a b"}), "invalid-memory-name")


# -- create_memory, purge, schemas ------------------------------------------------------------


def test_create_memory_makes_a_memory_the_next_call_can_use(registry):
    assert ok(call_tool(registry, "create_memory", {"name": "acme/carol"}, grant=ACME_WRITER)) == {"created": "acme/carol"}
    ok(call_tool(registry, "transact", {"memory": "acme/carol", "ops": GOAL}, grant=ACME_WRITER))
    refused(call_tool(registry, "create_memory", {"name": "acme/carol"}, grant=ACME_WRITER), "memory-exists")


def test_create_memory_with_a_schema_stores_it(registry):
    schema = {"format": "hgm-schema/1", "extends": "default", "node_types": ["tool"]}
    ok(call_tool(registry, "create_memory", {"name": "tools", "schema": schema}))
    assert "tool" in ok(call_tool(registry, "get_schema", {"memory": "tools"}))["node_types"]


def test_purge_forgets_a_node_and_its_history_and_leaves_a_tombstone(registry):
    ok(call_tool(registry, "transact", {"memory": "acme/bob", "ops": GOAL}))
    tombstone = ok(call_tool(registry, "purge", {"memory": "acme/bob", "id": "g", "reason": "the user asked"}))
    assert tombstone["kind"] == "purge" and tombstone["purged"] == ["g"] and tombstone["reason"] == "the user asked"
    refused(call_tool(registry, "get_node", {"memory": "acme/bob", "id": "g", "as_of": 1}), "unknown-node")
    assert "alice's goal" not in json.dumps(read_resource(registry, "hgm://memories/acme%2Fbob/export")[0])


def test_purge_of_an_unknown_node_changes_nothing(registry):
    refused(call_tool(registry, "purge", {"memory": "acme/bob", "id": "nope", "reason": "x"}), "unknown-node")
    assert ok(call_tool(registry, "commits", {"memory": "acme/bob"}))["commits"] == []


def test_set_schema_is_refused_when_the_memory_breaks_it(registry):
    ok(call_tool(registry, "transact", {"memory": "zed", "ops": GOAL}))
    only_facts = {"format": "hgm-schema/1", "node_types": ["fact"], "edge_types": [], "relations": {},
                  "attribute_schemas": {}, "edge_rules": {}, "acyclic_edge_types": []}
    error = refused(call_tool(registry, "set_schema", {"memory": "zed", "schema": only_facts}), "schema-violation")
    assert error["where"] == "g"
    assert "goal" in ok(call_tool(registry, "get_schema", {"memory": "zed"}))["node_types"]


def test_set_schema_names_each_mistake_of_the_document(registry):
    error = refused(call_tool(registry, "set_schema", {"memory": "zed", "schema": {"format": "hgm-schema/9"}}), "invalid-document")
    assert error["message"]


def test_get_schema_gives_a_document_set_schema_takes_back(registry):
    document = ok(call_tool(registry, "get_schema", {"memory": "zed"}))["document"]
    document["node_types"].append("tool")
    assert "tool" in ok(call_tool(registry, "set_schema", {"memory": "zed", "schema": document}))["node_types"]
    assert "tool" not in ok(call_tool(registry, "get_schema", {"memory": "acme/bob"}))["node_types"]


# -- resources -------------------------------------------------------------------------------


def test_a_memorys_resources_are_under_its_name_with_slashes_as_percent_2f(registry):
    ok(call_tool(registry, "transact", {"memory": "acme/alice", "ops": GOAL}))
    assert read_resource(registry, "hgm://memories/acme%2Falice/nodes/g")[0]["content"] == "alice's goal"
    assert read_resource(registry, "hgm://memories/acme%2Falice/stale")[0]["stale"] == []
    assert read_resource(registry, "hgm://memories/zed/schema")[0]["node_types"][0] == "goal"
    assert read_resource(registry, "hgm://memories/acme/alice/stale") == (None, True)  # a raw / is no name


def test_resources_without_a_memory_are_the_default_memorys(registry):
    ok(call_tool(registry, "transact", {"ops": GOAL}, default_memory="zed"))
    assert read_resource(registry, "hgm://nodes/g", default_memory="zed")[0]["id"] == "g"


def test_a_resource_outside_the_scope_is_forbidden(registry):
    doc, failed = read_resource(registry, "hgm://memories/zed/schema", grant=ACME_WRITER)
    assert failed and doc["error"]["category"] == "forbidden"


def test_the_language_reference_is_the_text_of_docs_language_md_and_the_memorys_names():
    doc, failed = read_resource(MemoryService(Memory()), "hgm://language")
    assert not failed and doc.startswith(language_reference().rstrip()) and "## " in doc
    assert doc.rstrip().endswith(", ".join(Memory().schema.to_json()["relations"]))


def test_a_memorys_language_reference_names_its_own_schema(registry):
    ok(call_tool(registry, "create_memory", {"name": "tools", "schema": {
        "format": "hgm-schema/1", "extends": "default", "node_types": ["tool"], "edge_types": ["wields"],
        "relations": {"tools": {"kind": "hop", "direction": "out", "edge_types": ["wields"], "node_type": "tool"}}}}))
    own, failed = read_resource(registry, "hgm://memories/tools/language")
    assert not failed and "tool" in own.split("## The names of this memory")[1] and "wields" in own.split("## The names of this memory")[1]
    other = read_resource(registry, "hgm://memories/zed/language")[0]
    assert "wields" not in other.split("## The names of this memory")[1]


def test_the_memories_resource_lists_what_the_token_covers(registry):
    assert read_resource(registry, "hgm://memories", grant=ALICE_READER)[0]["memories"] == ["acme/alice"]


# -- the command line -------------------------------------------------------------------------


def run_args(*argv):
    return run(build_parser().parse_args(list(argv)))


def test_hgm_mcp_without_a_store_says_so(monkeypatch, capsys):
    monkeypatch.delenv("HGM_DB", raising=False)
    assert run_args() == 2 and "--db" in capsys.readouterr().err


def test_hgm_mcp_refuses_a_token_file_on_stdio(tmp_path, capsys):
    assert run_args("--db", str(tmp_path / "m.db"), "--token-file", str(tmp_path / "t")) == 2
    assert "streamable-http" in capsys.readouterr().err


def test_hgm_mcp_refuses_a_token_on_stdio_and_a_token_with_a_token_file(tmp_path, capsys):
    assert run_args("--db", str(tmp_path / "m.db"), "--token", WRITER) == 2
    assert "--token needs --transport streamable-http" in capsys.readouterr().err
    both = ("--db", str(tmp_path / "m.db"), "--transport", "streamable-http", "--token", WRITER, "--token-file", "t.txt")
    assert run_args(*both) == 2 and "not both" in capsys.readouterr().err


def test_hgm_mcp_names_the_line_of_a_bad_token_file(tmp_path, capsys):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{WRITER} acme\nshort acme\n", encoding="utf-8")
    code = run_args("--db", str(tmp_path / "m.db"), "--transport", "streamable-http", "--port", "0", "--token-file", str(tokens))
    assert code == 1 and f"{tokens}:2" in capsys.readouterr().err


def test_hgm_mcp_refuses_a_bad_default_memory_name(tmp_path, capsys):
    assert run_args("--db", str(tmp_path / "m.db"), "--memory", "a//b") == 2
    assert "invalid-memory-name at --memory" in capsys.readouterr().err


def test_hgm_mcp_takes_its_default_memory_from_hgm_memory(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HGM_MEMORY", "a//b")
    assert run_args("--db", str(tmp_path / "m.db")) == 2
    assert "invalid-memory-name at HGM_MEMORY" in capsys.readouterr().err


def test_the_global_memory_option_is_the_default_memory_of_hgm_mcp(tmp_path, capsys):
    from hgm_engine.cli import main

    assert main(["--memory", "a//b", "mcp", "--db", str(tmp_path / "m.db")]) == 2
    assert "invalid-memory-name at --memory" in capsys.readouterr().err


def test_hgm_mcp_refuses_an_unknown_default_memory_with_suggestions(registry, capsys):
    assert run_args("--db", registry.location, "--memory", "acme/alcie") == 1
    assert "'acme/alice'" in capsys.readouterr().err


# -- hostile names and URIs --------------------------------------------------------------------

NAMES = st.sampled_from(["acme/alice", "acme/bob", "zed", "default", "acme", "acme/", "/x", "a//b", "..", "acme/alice/..",
                         "x" * 201, "acme%2Falice", "%ff", "ацме", "a\x00b", ""]) | st.text(max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES, grant=st.sampled_from([None, "writer", "reader"]), write=st.booleans())
def test_any_memory_argument_is_a_result_or_a_clear_refusal_and_a_refusal_changes_nothing(registry, name, grant, write):
    chosen = {None: None, "writer": ACME_WRITER, "reader": ALICE_READER}[grant]
    kwargs = {} if chosen is None else {"grant": chosen}
    before = {n: ok(call_tool(registry, "commits", {"memory": n}))["commits"] for n in registry.list()}
    if write:
        # (GOAL's id "g" made a second example committing to the same memory fail with duplicate-id)
        doc, failed = call_tool(registry, "transact", {"memory": name, "ops": ANOTHER_GOAL, "dry_run": False}, **kwargs)
    else:
        doc, failed = call_tool(registry, "query", {"memory": name, "expr": "root"}, **kwargs)
    json.dumps(doc)
    if failed:
        assert doc["error"]["category"] in ("invalid-argument", "invalid-memory-name", "unknown-memory", "forbidden"), doc
        after = {n: ok(call_tool(registry, "commits", {"memory": n}))["commits"] for n in registry.list()}
        assert after == before
    elif chosen is not None:
        assert chosen.can_read(name) and (not write or chosen.can_write(name))


URIS = st.builds(lambda n, rest: "hgm://memories/" + n + rest, NAMES, st.sampled_from(["/schema", "/stale", "/nodes/g", "/", "", "/nope"]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(uri=URIS, reader=st.booleans())
def test_any_memory_resource_uri_is_a_document_none_or_a_clear_error(registry, uri, reader):
    kwargs = {"grant": ALICE_READER} if reader else {}
    doc, failed = read_resource(registry, uri, **kwargs)
    if doc is None:
        assert failed
        return
    json.dumps(doc)
    if failed:
        assert doc["error"]["category"] in ("invalid-memory-name", "unknown-memory", "forbidden", "unknown-node"), doc


def test_access_of_one_service_lists_default():
    assert Access(memories_of(MemoryService(Memory()))).list_memories("d")["memories"] == ["default"]


# -- the HTTP token check, in process -----------------------------------------------------------


def asgi_call(app, headers):
    import anyio

    sent, seen = [], {}

    async def inner(scope, receive, send):
        seen["scope"] = scope
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    anyio.run(lambda: app(inner)(scope, receive, send))
    return sent, seen.get("scope")


def test_the_token_check_refuses_a_request_without_a_token_with_401_and_a_json_rpc_error():
    from hgm_engine.server.mcp import TokenCheck

    sent, reached = asgi_call(lambda inner: TokenCheck(inner, SCOPES), [])
    assert reached is None and sent[0]["status"] == 401
    headers = dict(sent[0]["headers"])
    assert headers[b"www-authenticate"].startswith(b'Bearer error="invalid_token"')
    body = json.loads(sent[1]["body"])
    assert body["jsonrpc"] == "2.0" and body["error"]["data"]["category"] == "unauthorized"


def test_the_token_check_passes_a_known_token_on_with_its_grant_and_owner():
    from hgm_engine.server.mcp import GRANT_SCOPE_KEY, TokenCheck

    sent, reached = asgi_call(lambda inner: TokenCheck(inner, SCOPES), [(b"authorization", f"Bearer {READER}".encode())])
    assert sent[0]["status"] == 200 and reached[GRANT_SCOPE_KEY] == ALICE_READER
    assert reached["user"].access_token.client_id == ALICE_READER.where and READER not in repr(reached["user"].access_token)


def test_one_token_of_hgm_mcp_token_reaches_every_memory():
    from hgm_engine.server.mcp import GRANT_SCOPE_KEY, TokenCheck

    single = TokenScopes.single(WRITER)
    _, reached = asgi_call(lambda inner: TokenCheck(inner, single), [(b"authorization", f"Bearer {WRITER}".encode())])
    assert reached[GRANT_SCOPE_KEY].can_write("anything/at/all")
