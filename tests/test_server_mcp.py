"""The MCP server (issue 7) through the official SDK's own client: a real stdio server process.

One ``python -m hgm_engine.server.mcp_server`` process serves the whole conversation (list the
tools, call them, errors); the tool table and argument checks are also tested in process.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys

import pytest

mcp = pytest.importorskip("mcp")
import anyio  # noqa: E402

from hgm_engine import Memory  # noqa: E402
from hgm_engine.server.mcp import TOOLS, call_tool  # noqa: E402
from hgm_engine.server.service import MemoryService  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
REQUIRED = {"query", "explain", "transact", "locate", "rewrite_path", "stale", "frontier"}

PLAN = [
    {"op": "add_node", "id": "trip", "type": "goal", "content": "Plan a 3-day Beijing trip", "status": "active"},
    {"op": "add_node", "id": "book", "type": "action", "parent": "trip", "content": "Book the hotel", "status": "done"},
    {"op": "add_node", "id": "visit", "type": "action", "parent": "trip", "content": "Visit the Forbidden City", "status": "pending"},
    {"op": "add_node", "id": "hotel", "type": "result", "content": "Hotel near Wangfujing"},
    {"op": "add_node", "id": "near", "type": "fact", "content": "The hotel is 10 minutes from the palace"},
    {"op": "add_edge", "from": "book", "to": "hotel", "type": "produces"},
    {"op": "add_edge", "from": "near", "to": "hotel", "type": "derived_from"},
    {"op": "add_edge", "from": "book", "to": "visit", "type": "before"},
]


def test_tool_table() -> None:
    names = {tool.name for tool in TOOLS}
    assert REQUIRED <= names
    for tool in TOOLS:
        assert len(tool.description) >= 60, tool.name
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for prop in schema["properties"].values():
            assert prop.get("description") or prop.get("items") or prop.get("type"), tool.name


def test_call_tool_in_process() -> None:
    service = MemoryService(Memory())
    report, failed = call_tool(service, "transact", {"ops": PLAN, "author": "t", "reason": "plan"})
    assert not failed and report["committed"] and report["t"] == 1
    assert call_tool(service, "frontier", {"goal": "trip"}) == ({"goal": "trip", "t": 1, "frontier": ["visit"]}, False)
    for name, arguments, category in [
        ("query", {}, "invalid-argument"),
        ("query", {"expr": "root", "extra": 1}, "invalid-argument"),
        ("transact", {"ops": [{"op": "fly"}]}, "invalid-argument"),  # not in the schema's enum
        ("transact", {"ops": [{"op": "update_node", "id": "nope", "set": {}}]}, "unknown-node"),
        ("frontier", {"goal": "nope"}, "unknown-node"),
        ("nope", {}, "invalid-argument"),
    ]:
        doc, failed = call_tool(service, name, arguments)
        assert failed and doc["error"]["category"] == category, (name, doc)
    assert service.memory.t == 1


def test_stdio_server_with_the_sdk_client(tmp_path: pathlib.Path) -> None:
    from mcp import Client, StdioServerParameters

    db = tmp_path / "memory.db"
    with Memory.open(db) as memory:
        memory.load_rules("propagate derived_from backward depth 2")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hgm_engine.server.mcp_server", "--db", str(db)],
        cwd=str(REPO),
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
    )

    async def conversation() -> dict:
        seen: dict = {}
        async with Client(params) as client:
            listed = await client.list_tools()
            seen["tools"] = {t.name: t for t in listed.tools}

            async def call(name: str, arguments: dict):
                result = await client.call_tool(name, arguments)
                doc = json.loads(result.content[0].text)
                assert result.structured_content == doc
                return doc, result.is_error

            seen["transact"] = await call("transact", {"ops": PLAN, "author": "planner", "reason": "plan the trip"})
            seen["query"] = await call("query", {"expr": "#trip.actions.where(status = $s)", "params": {"s": "pending"}})
            seen["explain"] = await call("explain", {"expr": "root.actions.count()"})
            seen["frontier"] = await call("frontier", {"goal": "trip"})
            seen["update"] = await call("transact", {"ops": [{"op": "update_node", "id": "hotel", "set": {"content": "Hotel moved"}}], "base_t": 1})
            seen["stale"] = await call("stale", {})
            seen["as_of"] = await call("query", {"expr": "#hotel", "as_of": 1})
            seen["history"] = await call("history", {"node": "hotel"})
            seen["syntax"] = await call("query", {"expr": "root.actions["})
            seen["conflict"] = await call("transact", {"ops": [{"op": "update_node", "id": "hotel", "set": {"stars": 4}}], "base_t": 1})
            seen["bad_args"] = await call("frontier", {"goal": 7})
            seen["locate"] = await call("locate", {"text": "plan a trip to Beijing"})
        return seen

    seen = anyio.run(conversation)

    tools = seen["tools"]
    assert REQUIRED <= set(tools)
    for tool in tools.values():
        assert tool.description and len(tool.description) >= 60
        # A tool that takes nothing (snapshots, violations, ...) has no properties (issue 16
        # added such tools; this used to require at least one property of every tool).
        assert tool.input_schema["type"] == "object" and isinstance(tool.input_schema["properties"], dict)
        assert set(tool.input_schema.get("required", [])) <= set(tool.input_schema["properties"])
    assert tools["transact"].annotations.read_only_hint is False
    assert tools["query"].annotations.read_only_hint is True

    report, failed = seen["transact"]
    assert not failed and report["committed"] and report["t"] == 1
    result, failed = seen["query"]
    assert not failed and result["ids"] == ["visit"] and result["nodes"][0]["content"] == "Visit the Forbidden City"
    plan, failed = seen["explain"]
    assert not failed and plan["kind"] == "count" and "plan:" in plan["plan"]
    assert seen["frontier"] == ({"goal": "trip", "t": 1, "frontier": ["visit"]}, False)
    update, failed = seen["update"]
    assert not failed and update["t"] == 2 and [d["id"] for d in update["dirtied"]] == ["near"]
    stale, failed = seen["stale"]
    assert not failed and [s["id"] for s in stale["stale"]] == ["near"] and stale["stale"][0]["marks"][0]["t"] == 2
    assert seen["as_of"][0]["nodes"][0]["content"] == "Hotel near Wangfujing"
    assert [h["t"] for h in seen["history"][0]["history"]] == [1, 2]

    error, failed = seen["syntax"]
    assert failed and error["error"]["category"] == "syntax" and error["error"]["column"] == 14
    error, failed = seen["conflict"]
    assert failed and error["error"]["category"] == "conflict"
    error, failed = seen["bad_args"]
    assert failed and error["error"]["category"] == "invalid-argument"
    located, failed = seen["locate"]
    if failed:  # an engine without path localization
        assert located["error"]["category"] == "not-implemented"
    else:
        assert located["matches"] == []

    with Memory.open(db) as reopened:
        assert reopened.t == 2
