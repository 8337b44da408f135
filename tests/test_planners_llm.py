"""The LLM planner through the real ``openai`` client against the local OpenAI-compatible stub
(tests/openai_stub.py, 127.0.0.1 only): reads, acts, one repair with the engine's error
message, and answers that never corrupt memory."""

from __future__ import annotations

import json
import os
import sys

import attrs
import pytest

pytest.importorskip("openai")

sys.path.insert(0, os.path.dirname(__file__))
from openai_stub import Scripted, openai_stub  # noqa: E402,F401 (openai_stub: the fixture)

from hgm_engine import DEFAULT_SCHEMA, Memory  # noqa: E402
from planners import Observation, replay, run  # noqa: E402
from planners.llm import (  # noqa: E402
    RESPONSE_SCHEMA,
    LLMPlanner,
    StepContext,
    ToolSpec,
    check_answer,
    step_prompt,
    system_prompt,
)

TOOLS = [ToolSpec("order_status", "where an order is", {"order": "order id"})]


def answer(queries=(), ops=(), tool=None, done=False, outcome=None, reason="because", focus=None):
    doc = {"queries": list(queries), "ops": list(ops), "tool": tool, "done": done, "reason": reason}
    if outcome is not None:
        doc["outcome"] = outcome
    if focus is not None:
        doc["focus"] = focus
    return Scripted.json(doc)


PLAN = [{"op": "add_node", "id": "q", "type": "goal", "content": "Where is order A1?", "status": "active"},
        {"op": "add_node", "id": "ask", "type": "action", "parent": "q", "status": "active", "content": "ask the order API"}]
RECORD = [{"op": "update_node", "id": "ask", "set": {"status": "done"}},
          {"op": "add_node", "id": "r", "type": "result", "content": "A1 is in Shanghai"},
          {"op": "add_edge", "from": "ask", "to": "r", "type": "produces"},
          {"op": "update_node", "id": "q", "set": {"status": "done"}}]
CALL = {"name": "order_status", "args": {"order": "A1"}, "action": "ask"}


def order_tools():
    return {"order_status": lambda order: {"summary": f"{order} is in Shanghai", "city": "Shanghai"}}


def test_a_run_reads_acts_and_records_through_the_openai_client(openai_stub):
    openai_stub.push(
        answer(queries=["root.count()"]),
        answer(ops=PLAN, tool=CALL, focus="q", reason="ask the API"),
        answer(ops=RECORD, done=True, outcome="success", reason="answered"),
    )
    memory = Memory()
    record = run(LLMPlanner(tools=TOOLS, model="stub-model"), memory, order_tools(), task="Where is order A1?")
    assert (record.status, record.outcome) == ("done", "success")
    assert [s.calls for s in record.steps] == [2, 1] and record.calls == 3
    assert memory.query("#ask.results").nodes[0]["content"] == "A1 is in Shanghai"
    assert [q.expr for q in record.steps[0].queries] == ["root.count()"]
    first, second, third = openai_stub.chat_requests
    assert first["model"] == "stub-model" and first["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert "order_status(order): where an order is" in first["messages"][0]["content"]
    assert second["messages"][-1]["content"].startswith("Results:\n- root.count() -> 0")
    # the tool's answer and the focus path reach the model on the next step
    assert '"value": {"city": "Shanghai", "summary": "A1 is in Shanghai"}' in third["messages"][1]["content"]
    assert "Focus: q; path from the root: q (Where is order A1?)" in third["messages"][1]["content"]
    assert openai_stub.unexpected == 0


def test_a_bad_expression_goes_back_with_the_engine_error_for_one_repair(openai_stub):
    openai_stub.push(
        answer(queries=["root.subgoal"]),
        answer(queries=["root.subgoals"]),
        answer(ops=PLAN[:1], done=True, outcome="success"),
    )
    record = run(LLMPlanner(), Memory(), {}, task="x")
    assert record.outcome == "success" and record.steps[0].calls == 3
    repair = openai_stub.chat_requests[1]["messages"][-1]["content"]
    assert "unknown relation 'subgoal'; did you mean 'subgoals'?" in repair and "^" in repair
    assert [(q.expr, q.error is not None) for q in record.steps[0].queries] == [("root.subgoal", True), ("root.subgoals", False)]


def test_an_expression_still_bad_after_the_repair_fails_the_step_and_changes_nothing(openai_stub):
    openai_stub.push(
        answer(queries=["root.subgoal"]),
        answer(queries=["root..subgoals"]),
        answer(ops=PLAN[:1], done=True, outcome="success"),
    )
    memory = Memory()
    record = run(LLMPlanner(), memory, {}, task="x")
    step = record.steps[0]
    assert (step.status, step.error["category"], step.t, step.calls) == ("invalid-answer", "invalid-answer", None, 2)
    assert "root..subgoals" in step.error["message"] and "syntax" in step.error["message"]
    # the run goes on: the next step tells the model why, and it finishes
    assert record.outcome == "success" and memory.t == 1
    assert '"kind": "step-failed"' in openai_stub.chat_requests[2]["messages"][1]["content"]


def test_an_answer_that_is_not_json_is_repaired_once(openai_stub):
    openai_stub.push(Scripted.text("Sure! I will add a goal."), answer(ops=PLAN[:1], done=True, outcome="success"))
    record = run(LLMPlanner(), Memory(), {}, task="x")
    assert record.outcome == "success"
    assert "not valid JSON" in openai_stub.chat_requests[1]["messages"][-1]["content"]
    assert openai_stub.chat_requests[1]["messages"][-2] == {"role": "assistant", "content": "Sure! I will add a goal."}


def test_answers_in_a_code_fence_are_accepted():
    doc = {"queries": [], "ops": [], "tool": None, "done": True, "outcome": "success", "reason": "ok"}
    assert check_answer("```json\n" + json.dumps(doc) + "\n```") == (doc, [])


def test_invalid_ops_go_back_with_the_engine_error(openai_stub):
    openai_stub.push(
        answer(ops=[{"op": "update_node", "id": "nobody", "set": {"status": "done"}}]),
        answer(ops=PLAN[:1], done=True, outcome="success"),
    )
    record = run(LLMPlanner(), Memory(), {}, task="x")
    assert record.outcome == "success"
    assert "unknown-node at ops[0]: no node 'nobody'" in openai_stub.chat_requests[1]["messages"][-1]["content"]


def test_ops_that_break_a_constraint_twice_fail_the_step_and_memory_is_untouched(openai_stub):
    lonely = [{"op": "add_node", "id": "a", "type": "action", "status": "pending"}]
    openai_stub.push(answer(ops=lonely), answer(ops=lonely))
    memory = Memory()
    record = run(LLMPlanner(), memory, {}, task="x", on_error="stop")
    assert record.status == "stopped" and record.steps[0].status == "invalid-answer"
    assert "action_has_one_parent" in record.steps[0].error["message"]
    assert memory.t == 0 and len(memory) == 0


def test_an_unknown_tool_or_a_missing_action_node_is_refused(openai_stub):
    openai_stub.push(
        answer(ops=PLAN, tool={"name": "teleport", "args": {}, "action": "ask"}),
        answer(ops=PLAN[:1], tool=CALL),
        answer(ops=PLAN, tool=CALL),
        answer(ops=RECORD, done=True, outcome="success"),
    )
    record = run(LLMPlanner(tools=TOOLS), Memory(), order_tools(), task="x")
    assert record.steps[0].status == "invalid-answer"
    assert "no tool named 'teleport'" in openai_stub.chat_requests[1]["messages"][-1]["content"]
    assert "tool.action: no node 'ask'" in record.steps[0].error["message"]
    assert record.outcome == "success"


def test_done_needs_an_outcome(openai_stub):
    openai_stub.push(answer(done=True), answer(done=True, outcome="failure", reason="cannot"))
    record = run(LLMPlanner(), Memory(), {}, task="x")
    assert record.outcome == "failure"
    assert "outcome: say 'success' or 'failure'" in openai_stub.chat_requests[1]["messages"][-1]["content"]


def test_reads_per_step_are_bounded(openai_stub):
    openai_stub.push(answer(queries=["root"]), answer(queries=["root"]), answer(queries=["root"]),
                     answer(done=True, outcome="success"))
    record = run(LLMPlanner(max_reads=2), Memory(), {}, task="x")
    assert record.outcome == "success" and record.steps[0].calls == 4
    assert "no more reads in this step" in openai_stub.chat_requests[3]["messages"][-1]["content"]


def test_a_server_error_is_a_failed_step_and_nothing_changes(openai_stub):
    openai_stub.push(*[Scripted.error(500, "overloaded")] * 3)  # the first try and the client's 2 retries
    memory = Memory()
    record = run(LLMPlanner(), memory, {}, task="x", on_error="stop")
    assert record.status == "stopped" and record.steps[0].error["category"] == "model-unavailable"
    assert "overloaded" in record.steps[0].error["message"] and memory.t == 0


def test_a_rate_limited_step_waits_for_retry_after_and_goes_on(openai_stub):
    openai_stub.push(Scripted.error(429, "slow down", retry_after="1"), answer(done=True, outcome="success"))
    record = run(LLMPlanner(), Memory(), {}, task="x", on_error="stop")
    assert record.outcome == "success" and record.steps[0].error is None
    first, second = openai_stub.chat_times
    assert second - first >= 0.95


def test_a_5xx_step_is_retried_with_backoff(openai_stub):
    openai_stub.push(Scripted.error(502), answer(done=True, outcome="success"))
    record = run(LLMPlanner(), Memory(), {}, task="x", on_error="stop")
    assert record.outcome == "success" and record.steps[0].calls == 1
    first, second = openai_stub.chat_times
    assert second - first >= 0.3


def test_a_planner_with_no_retries_fails_the_step_at_the_first_5xx(openai_stub):
    openai_stub.push(Scripted.error(502, "bad gateway"), answer(done=True, outcome="success"))
    record = run(LLMPlanner(retries=0), Memory(), {}, task="x", on_error="stop")
    assert record.status == "stopped" and "bad gateway" in record.steps[0].error["message"]
    assert len(openai_stub.chat_requests) == 1


def test_a_server_that_refuses_json_mode_is_asked_again_without_it(openai_stub):
    openai_stub.push(Scripted.error(400, "'response_format' is not supported by this model"),
                     answer(done=True, outcome="success"))
    record = run(LLMPlanner(), Memory(), {}, task="x")
    assert record.outcome == "success" and record.steps[0].calls == 1
    first, second = openai_stub.chat_requests
    assert "response_format" in first and "response_format" not in second


def test_the_model_sees_frontier_stale_marks_and_changes_since_its_last_step(openai_stub):
    memory = Memory()
    memory.load_rules("propagate derived_from backward depth 1")
    openai_stub.push(
        answer(ops=PLAN + [{"op": "add_node", "id": "later", "type": "action", "parent": "q", "status": "pending"},
                           {"op": "add_node", "id": "f", "type": "fact", "content": "price 5"},
                           {"op": "add_edge", "from": "ask", "to": "f", "type": "derived_from"}],
               focus="ask", reason="plan"),
        answer(done=True, outcome="success"),
    )

    def listener(step, mem):
        if step.index == 1:  # someone else changes a fact the plan depends on
            mem.apply({"author": "user", "reason": "price changed", "ops": [{"op": "update_node", "id": "f", "set": {"content": "price 7"}}]})

    run(LLMPlanner(), memory, {}, task="x", listener=listener)
    prompt = openai_stub.chat_requests[1]["messages"][1]["content"]
    assert 'Ready to run (frontier): [{"content": "", "id": "later"}]' in prompt
    assert 'Stale or blocked: [{"because": ["propagate:derived_from"], "id": "ask", "state": "needs_review"}]' in prompt
    assert 'Commits since your last step: [{"author": "user", "reason": "price changed", "t": 2}]' in prompt


def test_prompts_are_pure_functions_of_their_inputs():
    context = StepContext("Find A1", 3, {"kind": "task", "text": "Find A1"}, "q", ({"id": "q", "content": "Find"},),
                          ({"id": "a", "content": "ask"},))
    assert step_prompt(context) == step_prompt(attrs.evolve(context))
    assert system_prompt(DEFAULT_SCHEMA, TOOLS) == system_prompt(DEFAULT_SCHEMA, list(TOOLS))
    assert json.dumps(RESPONSE_SCHEMA, sort_keys=True) in system_prompt(DEFAULT_SCHEMA, ())
    assert step_prompt(context).splitlines()[3] == "Focus: q; path from the root: q (Find)"


def test_an_llm_run_replays_from_its_record_without_the_model(openai_stub):
    openai_stub.push(answer(ops=PLAN, tool=CALL, focus="q"), answer(ops=RECORD, done=True, outcome="success"))
    memory = Memory()
    record = run(LLMPlanner(tools=TOOLS), memory, order_tools(), task=Observation.task("Where is A1?"))
    fresh = Memory()
    assert replay(record, fresh).matched and fresh.export() == memory.export()
