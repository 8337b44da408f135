"""Planners and stored paths: path requests in the loop, HTN plans kept as paths (located,
rewritten as versions, guarded), and the orders and research scenarios end to end."""

from __future__ import annotations

import io
import json
import sys

import pytest

from hgm_engine import Memory


from hgm_engine.cli import main as hgm_main  # noqa: E402
from planners import Domain, HTNPlanner, Observation, StepPlan, ToolCall, Toolbox, replay, run  # noqa: E402
from planners.scenarios import orders, research  # noqa: E402


class Scripted:
    name = "scripted"

    def __init__(self, *plans):
        self.plans = list(plans)
        self.seen = []

    def step(self, view, observation):
        self.seen.append(observation)
        if not self.plans:
            return StepPlan(reason="finish", done=True, outcome="success", calls=0)
        return self.plans.pop(0)


def stored_path(memory):
    memory.ingest([{"id": "p", "goal": "Refund order A1", "steps": ["check", "refund"], "tags": ["refund"]}])


# -- path requests in the loop -----------------------------------------------------------------


def test_path_requests_are_made_after_the_transaction_and_recorded():
    memory = Memory()
    stored_path(memory)
    plan = StepPlan(ops=[{"op": "add_node", "id": "note", "type": "fact", "content": "checking"}], reason="rewrite",
                    requests=[{"op": "rewrite_path", "path": "p", "steps": ["check", "wait", "refund"], "reason": "slow"},
                              {"op": "record_outcome", "path": "p", "outcome": "success"}])
    record = run(Scripted(plan), memory, {}, task="x")
    step = record.steps[0]
    assert step.status == "ok" and step.ts == [2, 3, 4]
    assert [r["op"] for r in step.request_results] == ["rewrite_path", "record_outcome"]
    assert step.request_results[0]["created"] == ["p@v2"] and memory.path("p")["id"] == "p@v2"
    assert record.commits == [2, 3, 4]
    assert "  path    t=3 rewrite_path p -> p@v2: slow" in step.lines()
    assert step.lines()[0] == "step 1  t=2,3,4  ok"


def test_a_guard_refusal_fails_the_step_and_skips_the_tool_call():
    from hgm_engine.paths import PathGuards

    memory = Memory()
    stored_path(memory)
    memory.path_guards = PathGuards(max_rewrites=1)
    called = []
    plan = StepPlan(reason="storm", tool=ToolCall("t"),
                    requests=[{"op": "rewrite_path", "path": "p", "steps": ["a"], "reason": "one"},
                              {"op": "rewrite_path", "path": "p", "steps": ["b"], "reason": "two"}])
    plan2 = StepPlan(reason="x", requests=[{"op": "rewrite_path", "path": "p", "steps": ["c"], "reason": "three"}],
                     tool=None)
    planner = Scripted(plan, plan2)
    record = run(planner, memory, {"t": lambda: called.append(1)}, task="x")
    first = record.steps[0]
    assert (first.status, first.error["category"]) == ("refused", "rewrite-cap")
    assert [r["op"] for r in first.request_results] == ["rewrite_path"]  # the first one committed
    assert "  path    refused: rewrite_path p: two" in first.lines()
    assert called == [] and first.result is None
    assert planner.seen[1].kind == "step-failed" and planner.seen[1].error["category"] == "rewrite-cap"


@pytest.mark.parametrize("request_doc", [
    {"op": "teleport"},
    {"op": "rewrite_path", "path": "p"},
    {"op": "record_outcome", "path": "p", "outcome": "success", "colour": "red"},
])
def test_a_malformed_request_is_a_failed_step_and_changes_nothing(request_doc):
    memory = Memory()
    stored_path(memory)
    before = memory.export()
    record = run(Scripted(StepPlan(reason="bad", requests=[request_doc])), memory, {}, task="x", on_error="stop")
    assert record.steps[0].status == "invalid-request" and memory.export() == before


def test_an_unknown_path_is_refused_by_the_engine():
    record = run(Scripted(StepPlan(reason="bad", requests=[{"op": "record_outcome", "path": "nope", "outcome": "success"}])),
                 Memory(), {}, task="x", on_error="stop")
    assert (record.steps[0].status, record.steps[0].error["category"]) == ("refused", "unknown-path")


# -- HTN plans kept as paths -------------------------------------------------------------------


def path_domain(repeat=1):
    d = Domain()
    d.path("fetch_report", tags=["report"], reuse=True)

    @d.method("fetch_report", "primary")
    def primary(ctx):
        return [{"task": "download", "args": {"source": "primary"}}, {"task": "publish"}]

    @d.method("fetch_report", "mirror", repeat=repeat)
    def mirror(ctx):
        version = (ctx.node or {}).get("version", 1)
        return [{"task": "download", "args": {"source": f"mirror-{version}"}}, {"task": "publish"}]

    d.operator("download", args={"source": "{source}"})
    d.operator("publish")
    return d


def test_an_htn_plan_kept_as_a_path_is_located_and_reused():
    memory = Memory()
    tools = Toolbox({"download": lambda source: {"summary": f"got it from {source}"}, "publish": lambda: "ok"})
    tools.fail_when("download", lambda a: a["source"] == "primary", "primary is down")
    first = run(HTNPlanner(path_domain()), memory, tools, task=Observation.task("Fetch the weekly report", task="fetch_report", id="r1"))
    assert first.outcome == "success" and memory.path("r1")["id"] == "r1@v2"
    assert memory.path("r1")["versions"][0]["status"] == "superseded"
    second = run(HTNPlanner(path_domain()), memory, tools, task=Observation.task("Fetch the monthly report", task="fetch_report", id="r2"))
    assert second.outcome == "success" and len(second.failed_steps) == 0
    assert memory.node("r2")["reused_from"] == "r1@v2"
    assert [c.args for c in tools.calls if c.name == "download"][-1] == {"source": "mirror-1"}


def test_a_path_that_keeps_failing_is_stopped_by_the_guard_and_handed_to_a_person():
    from hgm_engine.paths import PathGuards

    memory = Memory()
    memory.path_guards = PathGuards(max_failed_rewrites=2)
    tools = Toolbox({"download": lambda source: "x", "publish": lambda: "ok"})
    tools.fail_when("download", lambda a: True, "everything is down")
    record = run(HTNPlanner(path_domain(repeat=5)), memory, tools,
                 task=Observation.task("Fetch the report", task="fetch_report", id="r"))
    assert (record.status, record.outcome) == ("done", "failure")
    refused = [s for s in record.steps if s.status == "refused"]
    assert len(refused) == 1 and refused[0].error["category"] == "needs-human"
    assert memory.path_metrics()["needs_human"] == ["r"]
    assert memory.node(memory.path("r")["id"])["needs"] == "human"


# -- the orders scenario -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def orders_run():
    memory = Memory()
    lines: list[str] = []
    records = orders.play(memory, lines.append)
    return memory, records, lines


def test_orders_answers_the_status_question_first_time(orders_run):
    memory, records, _ = orders_run
    assert (records[0].outcome, len(records[0].failed_steps)) == ("success", 0)
    assert memory.path("status-a1001")["result"] == "success"


def test_orders_refund_is_retried_then_falls_back(orders_run):
    memory, records, _ = orders_run
    path = memory.path("refund-a1001")
    assert records[1].outcome == "success"
    assert [v["id"] for v in path["versions"]] == ["refund-a1001", "refund-a1001@v2", "refund-a1001@v3"]
    assert [v["result"] for v in path["versions"]] == ["failure", "failure", "success"]
    assert [s["name"] for s in path["steps"]] == ["lookup_cached_policy", "issue_refund", "notify_user"]
    assert memory.node("refund-a1001@v2/0")["args"]["timeout_s"] == 30  # the retry waited longer
    assert "retry" in path["versions"][1]["reason"] and "cached_policy" in path["versions"][2]["reason"]


def test_orders_storm_guard_stops_the_address_change(orders_run):
    memory, records, lines = orders_run
    assert records[2].outcome == "failure"
    assert [s.error["category"] for s in records[2].steps if s.status == "refused"] == ["needs-human"]
    assert memory.path_metrics()["needs_human"] == ["address-b7"]
    assert memory.path("address-b7")["versions"][-1]["id"] == "address-b7@v3"  # no v4: the guard refused it
    assert any("needs-human" in line for line in lines)


def test_orders_later_refund_locates_the_working_path(orders_run):
    memory, records, _ = orders_run
    fourth = records[3]
    assert (fourth.outcome, len(fourth.failed_steps), fourth.calls) == ("success", 0, 1)
    assert memory.node("refund-c3")["reused_from"] == "refund-a1001@v3"
    locate = next(q for q in fourth.steps[0].queries if q.source == "locate")
    assert locate.value[0] == "refund-a1001@v3"
    assert [c for c in fourth.steps if c.tool and c.tool.name == "check_refund_policy"] == []


def test_orders_replays_from_the_records():
    memory = Memory()
    records = orders.play(memory, lambda line: None)
    fresh = Memory()
    orders.setup(fresh)
    for record in records:
        result = replay(record, fresh)
        assert result.matched, result.divergence
    assert fresh.export() == memory.export()


# -- the research scenario ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def research_run():
    memory = Memory()
    records = research.play(memory, lambda line: None)
    return memory, records


def test_research_correction_rewrites_the_result_path_with_replaces(research_run):
    memory, (first, _) = research_run
    assert first.outcome == "success"
    correction = memory.query("nodes.where(type = 'fact', error_type = 'user-correction')").nodes[0]
    assert correction["content"] == "compute instances only, no bandwidth fees"
    assert memory.query("#$v.replaces", params={"v": "cloud-1@v2"}).ids == ["cloud-1"]
    old, new = memory.query("nodes.where(type = 'result', kind = 'comparison')").nodes[:2]
    assert "bandwidth" in old["content"] and old["cheapest"] == "Azure"
    assert new["content"].startswith("compute instances only") and new["cheapest"] == "GCP"


def test_research_next_request_gets_the_corrected_path_first(research_run):
    memory, (_, second) = research_run
    assert (second.outcome, len(second.failed_steps)) == ("success", 0)
    assert memory.node("cloud-2")["reused_from"] == "cloud-1@v2"
    fetches = [s.tool.args["scope"] for s in second.steps if s.tool and s.tool.name == "fetch_prices"]
    assert fetches == ["compute", "compute", "compute"]


# -- hgm demo orders / research ----------------------------------------------------------------


def run_hgm(*argv):
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = hgm_main(list(argv))
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name, marker", [("orders", "needs-human"), ("research", "compute instances only")])
def test_hgm_demo_runs_the_scenario_and_leaves_a_store(tmp_path, name, marker):
    db = tmp_path / f"{name}.db"
    code, out, err = run_hgm("demo", name, "--db", str(db))
    assert code == 0, err
    assert marker in out and "The memory at the end" in out and "Summary" in out
    code, listed, _ = run_hgm("query", "nodes.where(kind = 'path').count()", "--db", str(db), "--json")
    assert code == 0 and json.loads(listed)["value"] >= 2
    assert run_hgm("demo", name)[1] == run_hgm("demo", name)[1]  # deterministic
