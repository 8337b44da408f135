"""MCP over streamable HTTP (issue 19 item 2) with the token scopes of issue 13: one
``hgm mcp --transport streamable-http --port 0 --token-file F`` process on loopback, spoken to
with the SDK's own HTTP client, stopped at the end."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
import httpx2  # noqa: E402  (the MCP SDK's HTTP client library)

from hgm_engine import open_store  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
WRITER = "acme-writer-token-0123456789"
READER = "alice-reader-token-0123456789"
ADMIN = "admin-token-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcp-http")
    db = root / "memories.db"
    with open_store(db) as store:
        for name in ("acme/alice", "acme/bob", "zed"):
            store.create(name).close()
    tokens = root / "tokens.txt"
    tokens.write_text(
        f"# the test's tokens\n{WRITER} acme/ write\n{READER} acme/alice  # read by default\n{ADMIN} * write\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("HGM_MEMORY", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "hgm_engine.server.mcp_server", "--db", str(db), "--memory", "acme/alice",
         "--transport", "streamable-http", "--host", "127.0.0.1", "--port", "0", "--token-file", str(tokens)],
        cwd=str(root), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    url = None
    deadline = time.monotonic() + 60
    lines = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line)
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            url = found.group(1)
            break
    if url is None:
        process.kill()
        pytest.fail("the server did not start: " + "".join(lines) + process.stderr.read())
    yield url
    process.send_signal(signal.SIGINT)
    try:
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()


def client_for(url: str, token: str | None):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60))
    return Client(streamable_http_client(url, http_client=http)), http


def talk(url: str, token: str | None, calls):
    """Run ``calls(call, client)`` in one session; ``call(name, args)`` is (doc, is_error)."""

    async def conversation():
        client, http = client_for(url, token)
        async with http, client:
            async def call(name, arguments):
                result = await client.call_tool(name, arguments)
                return json.loads(result.content[0].text), result.is_error

            return await calls(call, client)

    return anyio.run(conversation)


def refusal(url: str, token: str | None, calls):
    """The MCPError the SDK's client raises for the conversation (it may come in an
    exception group from the client's task group)."""
    from mcp.shared.exceptions import MCPError

    try:
        talk(url, token, calls)
    except BaseException as exc:  # noqa: BLE001 - looked into below
        found = [exc]
        while found:
            current = found.pop()
            if isinstance(current, MCPError):
                return current
            found.extend(getattr(current, "exceptions", ()))
        raise
    pytest.fail("the conversation was not refused")


def test_a_request_without_a_token_is_refused_401_with_a_clear_error(server):
    error = refusal(server, None, lambda call, client: client.list_tools())
    assert "unauthorized" in str(error) and "Authorization: Bearer" in str(error)
    answer = httpx2.post(server, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                         headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith('Bearer error="invalid_token"')
    assert answer.json()["error"]["data"]["category"] == "unauthorized"


def test_an_unknown_token_is_refused_401(server):
    error = refusal(server, WRITER + "x", lambda call, client: client.list_tools())
    assert "not one of this server's tokens" in str(error) and WRITER not in str(error)


def test_a_write_token_works_in_its_memories_and_is_forbidden_elsewhere(server):
    async def calls(call, client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "memory" in tools["query"].input_schema["properties"]
        assert "'acme/alice'" in tools["query"].input_schema["properties"]["memory"]["description"]
        return (
            await call("transact", {"ops": [{"op": "add_node", "id": "w1", "type": "goal", "content": "from the writer"}]}),
            await call("transact", {"memory": "acme/bob", "ops": [{"op": "add_node", "id": "b1", "type": "goal"}]}),
            await call("transact", {"memory": "zed", "ops": [{"op": "add_node", "id": "z1", "type": "goal"}]}),
            await call("query", {"memory": "zed", "expr": "nodes.count()"}),
            await call("list_memories", {}),
        )

    alice, bob, zed_write, zed_read, listed = talk(server, WRITER, calls)
    assert alice == ({**alice[0], "committed": True}, False)
    assert not bob[1] and bob[0]["committed"]
    for doc, failed in (zed_write, zed_read):
        assert failed and doc["error"]["category"] == "forbidden" and doc["error"]["where"] == "zed"
    assert listed == ({"memories": ["acme/alice", "acme/bob"], "default": "acme/alice", "prefix": ""}, False)


def test_a_read_token_reads_its_memory_and_may_not_change_it(server):
    async def calls(call, client):
        return (
            await call("query", {"expr": "nodes.count()"}),
            await call("transact", {"ops": [{"op": "add_node", "id": "r1", "type": "goal"}]}),
            await call("transact", {"ops": [{"op": "add_node", "id": "r1", "type": "goal"}], "dry_run": True}),
            await call("query", {"memory": "acme/bob", "expr": "nodes.count()"}),
            await call("list_memories", {}),
        )

    count, write, dry_run, bob, listed = talk(server, READER, calls)
    assert not count[1] and count[0]["kind"] == "count" and isinstance(count[0]["value"], int)
    assert write[1] and write[0]["error"]["category"] == "forbidden" and "write token" in write[0]["error"]["message"]
    assert not dry_run[1] and dry_run[0]["committed"] is False
    assert bob[1] and bob[0]["error"]["category"] == "forbidden"
    assert listed[0]["memories"] == ["acme/alice"]


def test_resources_give_a_memorys_schema_stale_list_and_the_language_reference(server):
    async def calls(call, client):
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert {"hgm://memories/{memory}/schema", "hgm://memories/{memory}/stale"} <= templates
        listed = {r.uri for r in (await client.list_resources()).resources}
        assert "hgm://language" in listed
        schema = await client.read_resource("hgm://memories/zed/schema")
        stale = await client.read_resource("hgm://memories/acme%2Fbob/stale")
        language = await client.read_resource("hgm://language")
        return schema, stale, language

    schema, stale, language = talk(server, ADMIN, calls)
    assert json.loads(schema.contents[0].text)["node_types"][0] == "goal"
    assert json.loads(stale.contents[0].text)["stale"] == []
    assert language.contents[0].mime_type == "text/markdown" and "root" in language.contents[0].text

    async def outside(call, client):
        await client.read_resource("hgm://memories/zed/schema")

    assert "may not use the memory 'zed'" in str(refusal(server, READER, outside))


def test_a_session_opened_with_one_token_cannot_be_used_with_another(server):
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    opened = httpx2.post(server, json=initialize, headers={**accept, "Authorization": f"Bearer {WRITER}",
                                                           "MCP-Protocol-Version": "2025-06-18"})
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    borrowed = httpx2.post(server, json=listing, headers={**accept, "Authorization": f"Bearer {READER}",
                                                          "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"})
    assert borrowed.status_code == 404
    httpx2.delete(server, headers={"Authorization": f"Bearer {WRITER}", "Mcp-Session-Id": session,
                                   "MCP-Protocol-Version": "2025-06-18"})
