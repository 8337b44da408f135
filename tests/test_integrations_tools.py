"""The memory's tools under LangChain and the OpenAI Agents SDK, with the real packages and a
scripted model (no network): the same names, descriptions and schemas as the MCP tools, the
same answers, and the same error contract (the model reads the error document)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hgm_engine import Memory, RequestError
from hgm_engine.integrations import memory_tools, tool_names
from hgm_engine.server.mcp import TOOLS

PLAN_OPS = [
    {"op": "add_node", "id": "trip", "type": "goal", "title": "Trip to Beijing"},
    {"op": "add_node", "id": "book", "type": "action", "parent": "trip", "status": "pending", "content": "Book the hotel"},
]


# -- the one definition -----------------------------------------------------------------------------


def test_every_mcp_tool_is_offered_with_its_own_definition():
    tools = memory_tools(Memory())
    assert [(t.name, t.description, t.input_schema, t.read_only) for t in tools] == [
        (t.name, t.description, t.input_schema, t.read_only) for t in TOOLS
    ]


def test_read_only_keeps_the_tools_that_never_change_memory():
    names = tool_names(read_only=True)
    assert "query" in names and "search" in names
    assert not {"transact", "revert", "load_rules", "ingest"} & set(names)


def test_a_remote_memory_is_refused_with_what_to_use_instead():
    from hgm_engine import connect

    with pytest.raises(RequestError, match="MCP endpoint"):
        memory_tools(connect("http://127.0.0.1:1"))


# -- LangChain --------------------------------------------------------------------------------------


def _scripted_chat_model(script):
    """A chat model that answers with the scripted messages in turn and records what it was
    sent and which tools were bound (as a provider would receive them)."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class Scripted(BaseChatModel):
        answers: list
        seen: list = []
        bound: list = []

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools, **kwargs):
            self.bound = [convert_to_openai_tool(tool) for tool in tools]
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            self.seen.append(list(messages))
            return ChatResult(generations=[ChatGeneration(message=self.answers.pop(0))])

    return Scripted(answers=list(script))


def _run_langchain_agent(model, tools, question: str):
    """The tool-calling loop of LangChain's docs: call the model, run each tool call it asks
    for, send the tool messages back, until it answers without a call."""
    from langchain_core.messages import HumanMessage

    by_name = {tool.name: tool for tool in tools}
    messages = [HumanMessage(question)]
    bound = model.bind_tools(tools)
    while True:
        answer = bound.invoke(messages)
        messages.append(answer)
        if not answer.tool_calls:
            return messages
        for call in answer.tool_calls:
            messages.append(by_name[call["name"]].invoke(call))


def test_a_langchain_agent_writes_and_reads_memory_through_the_tools():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage

    from hgm_engine.integrations.langchain import langchain_tools

    memory = Memory()
    tools = langchain_tools(memory, names=["transact", "query"])
    model = _scripted_chat_model([
        AIMessage("", tool_calls=[{"name": "transact", "args": {"ops": PLAN_OPS, "author": "agent"}, "id": "c1"}]),
        AIMessage("", tool_calls=[{"name": "query", "args": {"expr": "root.actions.where(status = 'pending')"}, "id": "c2"}]),
        AIMessage("Next: book the hotel."),
    ])
    messages = _run_langchain_agent(model, tools, "Plan my trip")
    assert messages[-1].content == "Next: book the hotel."
    assert memory.query("#trip.actions").ids == ["book"]
    read = json.loads(messages[4].content)
    assert (messages[4].tool_call_id, read["ids"], read["t"]) == ("c2", ["book"], 1)
    # the model was given the MCP tools' own definitions
    assert [tool["function"]["name"] for tool in model.bound] == ["query", "transact"]
    query = next(t for t in TOOLS if t.name == "query")
    assert model.bound[0]["function"]["description"] == query.description
    assert model.bound[0]["function"]["parameters"]["properties"] == query.input_schema["properties"]


def test_a_langchain_tool_error_reaches_the_model_as_the_error_document():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage

    from hgm_engine.integrations.langchain import langchain_tools

    memory = Memory()
    model = _scripted_chat_model([
        AIMessage("", tool_calls=[{"name": "query", "args": {"expr": "root.subgoal"}, "id": "c1"}]),
        AIMessage("", tool_calls=[{"name": "query", "args": {"expr": 5}, "id": "c2"}]),
        AIMessage("I fixed nothing."),
    ])
    messages = _run_langchain_agent(model, langchain_tools(memory, names=["query"]), "read")
    wrong_name, wrong_type = messages[2], messages[4]
    assert wrong_name.status == "error" and wrong_type.status == "error"
    error = json.loads(wrong_name.content)["error"]
    assert (error["category"], error["column"]) == ("unknown-name", 6) and "subgoals" in error["message"]
    assert json.loads(wrong_type.content)["error"] == {
        "category": "invalid-argument", "message": "expr: 5 is not of type 'string'", "line": None, "column": None, "where": "expr"}
    assert model.seen[1][-1] is wrong_name  # the model read the error before its next call


# -- the OpenAI Agents SDK --------------------------------------------------------------------------


def _scripted_agents_model(script):
    """A Model of the Agents SDK that answers each turn from ``script`` (a list of output
    lists) and records the input and tools of each call."""
    from agents import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage

    class Scripted(Model):
        def __init__(self):
            self.calls: list[dict[str, Any]] = []

        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs):
            self.calls.append({"input": input, "tools": tools})
            return ModelResponse(output=script.pop(0), usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    return Scripted()


def _call(name: str, arguments: Any, call_id: str):
    from openai.types.responses import ResponseFunctionToolCall

    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ResponseFunctionToolCall(arguments=text, call_id=call_id, name=name, type="function_call", id=f"fc-{call_id}", status="completed")


def _say(text: str):
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    return ResponseOutputMessage(
        id="m1", role="assistant", status="completed", type="message",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
    )


def _outputs(call) -> dict[str, str]:
    items = call["input"] if isinstance(call["input"], list) else []
    return {item["call_id"]: item["output"] for item in items if isinstance(item, dict) and item.get("type") == "function_call_output"}


def _run_agent(model, tools, question):
    from agents import Agent, RunConfig, Runner

    agent = Agent(name="planner", instructions="Keep the plan in the memory.", tools=tools, model=model)
    return asyncio.run(Runner.run(agent, question, run_config=RunConfig(tracing_disabled=True)))


def test_an_agents_sdk_agent_writes_and_reads_memory_through_the_tools():
    pytest.importorskip("agents")
    from hgm_engine.integrations.openai_agents import agents_tools

    memory = Memory()
    model = _scripted_agents_model([
        [_call("transact", {"ops": PLAN_OPS, "author": "agent"}, "c1")],
        [_call("frontier", {"goal": "trip"}, "c2")],
        [_say("Next: book the hotel.")],
    ])
    result = _run_agent(model, agents_tools(memory, names=["transact", "frontier"]), "Plan my trip")
    assert result.final_output == "Next: book the hotel."
    assert memory.query("#trip.actions").ids == ["book"]
    assert json.loads(_outputs(model.calls[2])["c2"]) == {"goal": "trip", "t": 1, "frontier": ["book"]}
    frontier = next(t for t in TOOLS if t.name == "frontier")
    sent = {tool.name: tool for tool in model.calls[0]["tools"]}
    assert sent["frontier"].description == frontier.description
    assert sent["frontier"].params_json_schema == frontier.input_schema


def test_an_agents_sdk_tool_error_reaches_the_model_as_the_error_document():
    pytest.importorskip("agents")
    from hgm_engine.integrations.openai_agents import agents_tools

    memory = Memory()
    memory.apply({"ops": PLAN_OPS})
    model = _scripted_agents_model([
        [_call("transact", {"base_t": 0, "ops": [{"op": "update_node", "id": "book", "set": {"status": "done"}}]}, "c1"),
         _call("transact", "{not json", "c2")],
        [_say("The plan changed; I will read it again.")],
    ])
    _run_agent(model, agents_tools(memory, names=["transact"]), "finish booking")
    outputs = _outputs(model.calls[1])
    assert json.loads(outputs["c1"])["error"]["category"] == "conflict"
    assert json.loads(outputs["c2"])["error"]["category"] == "invalid-argument"
    assert memory.node("book")["status"] == "pending"


def test_over_a_store_of_many_memories_each_call_names_its_memory(tmp_path):
    from hgm_engine.server.registry import MemoryRegistry

    registry = MemoryRegistry(tmp_path / "memories.db")
    try:
        registry.create("team/alice")
        tools = {tool.name: tool for tool in memory_tools(registry, names=["transact", "query"])}
        assert tools["transact"].call({"memory": "team/alice", "ops": PLAN_OPS})[0]["t"] == 1
        assert tools["query"].call({"memory": "team/alice", "expr": "root"})[0]["ids"] == ["trip"]
        doc, failed = tools["query"].call({"memory": "team/bob", "expr": "root"})
        assert failed and doc["error"]["category"] == "unknown-memory"
    finally:
        registry.close()
