"""Planners: the protocol and read-only view, the agent loop and its records, the HTN planner,
simulated tools, bad input that must never corrupt memory, and the travel scenario."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from hgm_engine import Memory
from hgm_engine.cli import main as hgm_main
from planners import (
    Domain,
    DomainError,
    HTNPlanner,
    MemoryView,
    Observation,
    RunRecord,
    StepPlan,
    ToolCall,
    ToolError,
    Toolbox,
    load_domain,
    replay,
    run,
)
from planners.scenarios import travel


# -- helpers -----------------------------------------------------------------------------------


def two_step_domain() -> Domain:
    """job → (prepare → (fetch, parse), publish); prepare has a second method (mirror)."""
    return Domain.from_table({
        "methods": [
            {"task": "job", "name": "default", "subtasks": [
                {"task": "prepare", "id": "prep", "args": {"source": "{source}"}},
                {"task": "publish", "id": "pub"}]},
            {"task": "prepare", "name": "primary", "subtasks": [
                {"task": "fetch", "id": "fetch", "args": {"url": "{source}"}},
                {"task": "parse", "id": "parse"}]},
            {"task": "prepare", "name": "mirror", "subtasks": [
                {"task": "fetch", "id": "fetch", "args": {"url": "mirror:{source}"}},
                {"task": "parse", "id": "parse"}]},
        ],
        "operators": [
            {"task": "fetch", "tool": "fetch", "args": {"url": "{url}"}, "result": "fetched {url}"},
            {"task": "parse", "tool": "parse"},
            {"task": "publish", "tool": "publish"},
        ],
    })


def job_tools() -> Toolbox:
    return Toolbox({
        "fetch": lambda url: {"summary": f"got {url}", "bytes": 10},
        "parse": lambda: {"summary": "parsed"},
        "publish": lambda: {"summary": "published"},
    })


def job_task() -> Observation:
    return Observation.task("Publish the report", task="job", id="job", args={"source": "s3://r"})


class Scripted:
    """A planner that returns the given plans one after the other (then finishes)."""

    name = "scripted"

    def __init__(self, *plans):
        self.plans = list(plans)
        self.seen: list[Observation] = []

    def step(self, view, observation):
        self.seen.append(observation)
        if not self.plans:
            return StepPlan(reason="finish", done=True, outcome="success", calls=0)
        plan = self.plans.pop(0)
        if isinstance(plan, Exception):
            raise plan
        return plan(view) if callable(plan) else plan


GOAL = [{"op": "add_node", "id": "g", "type": "goal", "content": "G"},
        {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "active"}]


# -- the read-only view ------------------------------------------------------------------------


def test_the_view_offers_nothing_that_changes_memory():
    view = MemoryView(Memory())
    for name in ("apply", "transaction", "load", "revert", "confirm", "load_rules", "add_constraint",
                 "rewrite_path", "record_outcome", "ingest", "snapshot", "graph", "store"):
        assert not hasattr(view, name), name
        with pytest.raises(AttributeError):
            view.attribute(name)


def test_the_view_logs_every_query_including_errors():
    memory = Memory()
    memory.apply({"ops": GOAL})
    view = MemoryView(memory)
    view.query("root")
    with pytest.raises(Exception):
        view.query("root.subgoal")
    assert [q.expr for q in view.log] == ["root", "root.subgoal"]
    assert view.log[0].value == ["g"] and view.log[1].error["category"] == "unknown-name"


def test_preview_and_dry_run_read_the_future_and_change_nothing():
    memory = Memory()
    memory.apply({"ops": GOAL})
    view = MemoryView(memory)
    ops = [{"op": "update_node", "id": "a", "set": {"status": "done"}}]
    assert view.preview(ops).query("#a").nodes[0]["status"] == "done"
    assert view.dry_run(ops).dry_run
    assert memory.node("a")["status"] == "active" and memory.t == 1


# -- the loop and its records ------------------------------------------------------------------


def test_every_step_records_queries_transaction_and_observation():
    memory = Memory()
    planner = Scripted(
        lambda view: StepPlan(ops=GOAL, reason="plan", tool=ToolCall("echo", {"x": 1}, action="a")),
        lambda view: StepPlan(ops=[{"op": "update_node", "id": "a", "set": {"status": "done"}}],
                              reason="record", done=True, outcome="success",
                              queries=None) if view.query("#a").ids else None,
    )
    record = run(planner, memory, {"echo": lambda x: {"summary": f"echo {x}"}}, task="Echo")
    assert record.status == "done" and record.outcome == "success"
    first, second = record.steps
    assert (first.t, first.base_t, first.tool.name, first.result.value) == (1, 0, "echo", {"summary": "echo 1"})
    assert second.observation.kind == "tool" and second.observation.value == {"summary": "echo 1"}
    assert [q.expr for q in second.queries] == ["#a"]
    assert (second.t, second.base_t) == (2, 1)


def test_a_run_record_round_trips_through_json(tmp_path):
    memory = Memory()
    travel.setup(memory)
    record = travel.play(memory, lambda line: None)[0]
    path = tmp_path / "run.json"
    record.save(path)
    again = RunRecord.load(path)
    assert again == record
    assert json.loads(path.read_text())["format"] == "hgm-run/1"
    with pytest.raises(ValueError):
        RunRecord.from_json({"format": "something-else"})


def test_replay_without_a_planner_rebuilds_the_memory():
    memory = Memory()
    record = travel.play(memory, lambda line: None)[0]
    fresh = Memory()
    travel.setup(fresh)
    result = replay(record, fresh)
    assert result.matched, result.divergence
    assert fresh.export() == memory.export()


def test_replay_with_the_planner_repeats_every_step():
    memory = Memory()
    record = travel.play(memory, lambda line: None)[0]
    fresh = Memory()
    travel.setup(fresh)
    result = replay(record, fresh, HTNPlanner(travel.domain(), name="htn-travel"))
    assert result.matched, result.divergence
    assert result.steps == len(record.steps) and fresh.export() == memory.export()


def test_replay_names_the_first_step_a_planner_does_differently():
    memory = Memory()
    record = run(Scripted(StepPlan(ops=GOAL, reason="plan")), memory, {}, task="x")
    other = Scripted(StepPlan(ops=GOAL[:1], reason="plan"))
    result = replay(record, Memory(), other)
    assert not result.matched and result.divergence == "step 1: the planner wrote different ops"


def test_replay_needs_the_memory_the_run_started_from():
    record = run(Scripted(StepPlan(ops=GOAL, reason="plan")), Memory(), {}, task="x")
    busy = Memory()
    busy.apply({"ops": GOAL})
    with pytest.raises(ValueError, match="started at t=0"):
        replay(record, busy)


# -- bad input never corrupts memory -----------------------------------------------------------


def test_a_tool_that_raises_is_a_failed_step_and_the_run_goes_on():
    memory = Memory()

    def broken(**args):
        raise RuntimeError("socket closed")

    planner = Scripted(StepPlan(ops=GOAL, reason="plan", tool=ToolCall("broken", action="a")))
    record = run(planner, memory, {"broken": broken}, task="x")
    step = record.steps[0]
    assert (step.status, step.t, step.error) == ("tool-error", 1, {"category": "RuntimeError", "message": "socket closed"})
    assert planner.seen[1].kind == "tool" and not planner.seen[1].ok
    assert record.status == "done" and memory.t == 1


def test_an_unknown_tool_and_a_result_that_is_not_json_are_tool_errors():
    planner = Scripted(StepPlan(ops=GOAL, reason="plan", tool=ToolCall("nope", action="a")),
                       StepPlan(tool=ToolCall("weird", action="a"), calls=0))
    record = run(planner, Memory(), {"weird": lambda: object()}, task="x")
    assert [s.error["category"] for s in record.steps[:2]] == ["unknown-tool", "invalid-result"]


def test_a_planner_that_raises_changes_nothing():
    memory = Memory()
    record = run(Scripted(RuntimeError("bug")), memory, {}, task="x")
    assert record.steps[0].status == "planner-error" and "RuntimeError: bug" in record.steps[0].error["message"]
    assert memory.t == 0 and record.status == "done"


def test_a_planner_that_returns_something_else_is_a_failed_step():
    record = run(Scripted(lambda view: {"ops": []}), Memory(), {}, task="x")
    assert record.steps[0].status == "planner-error" and "not a StepPlan" in record.steps[0].error["message"]


@pytest.mark.parametrize("ops, status, category", [
    ([{"op": "fly", "id": "g"}], "invalid-transaction", "invalid-transaction"),
    ([{"op": "update_node", "id": "missing", "set": {"x": 1}}], "invalid-transaction", "unknown-node"),
    ([{"op": "add_node", "id": "lonely", "type": "action"}], "refused", "constraint-violation"),
    ([{"op": "add_node", "id": "g2", "type": "goal", "status": "whatever"}], "refused", "constraint-violation"),
    ([{"op": "add_node", "type": "goal", "dirty": "blocked"}], "invalid-transaction", "invalid-transaction"),
])
def test_an_invalid_transaction_is_recorded_and_memory_is_untouched(ops, status, category):
    memory = Memory()
    memory.apply({"ops": GOAL})
    before = memory.export()
    planner = Scripted(StepPlan(ops=GOAL[:0] + ops, reason="bad", tool=ToolCall("never")))
    called = []
    record = run(planner, memory, {"never": lambda: called.append(1)}, task="x")
    step = record.steps[0]
    assert (step.status, step.error["category"], step.t) == (status, category, None)
    assert memory.export() == before and memory.t == 1 and memory.violations() == []
    assert called == [] and step.result is None  # no tool call after a refused transaction
    assert planner.seen[1].kind == "step-failed" and planner.seen[1].error["category"] == category


def test_a_conflict_with_a_concurrent_commit_is_a_failed_step():
    memory = Memory()
    memory.apply({"ops": GOAL})

    def sneaky(view):
        memory.apply({"ops": [{"op": "update_node", "id": "a", "set": {"note": "someone else"}}]})
        return StepPlan(ops=[{"op": "update_node", "id": "a", "set": {"status": "done"}}], reason="late")

    record = run(Scripted(sneaky), memory, {}, task="x")
    assert record.steps[0].status == "conflict" and memory.node("a")["status"] == "active"


def test_an_invalid_answer_is_recorded_as_failed():
    record = run(Scripted(StepPlan.invalid("invalid-answer", "the model wrote prose")), Memory(), {}, task="x")
    assert (record.steps[0].status, record.steps[0].error["message"]) == ("invalid-answer", "the model wrote prose")


def test_on_error_stop_ends_the_run_at_the_first_failed_step():
    memory = Memory()
    record = run(Scripted(StepPlan(ops=[{"op": "fly"}], reason="bad"), StepPlan(ops=GOAL, reason="good")),
                 memory, {}, task="x", on_error="stop")
    assert record.status == "stopped" and len(record.steps) == 1 and memory.t == 0
    assert "on_error='stop'" in record.stop_reason


def test_the_run_stops_after_max_failures_in_a_row_and_at_max_steps():
    bad = StepPlan(ops=[{"op": "fly"}], reason="bad")
    record = run(Scripted(*[bad] * 5), Memory(), {}, task="x", max_failures=3)
    assert record.status == "stopped" and len(record.steps) == 3
    idle = StepPlan(reason="think", calls=0)
    record = run(Scripted(*[idle] * 10), Memory(), {}, task="x", max_steps=4)
    assert record.status == "max-steps" and len(record.steps) == 4


def test_bad_loop_arguments_are_refused():
    with pytest.raises(ValueError):
        run(Scripted(), Memory(), {}, task="x", on_error="ignore")
    with pytest.raises(ValueError):
        run(Scripted(), Memory(), {}, task="x", max_steps=0)


# -- simulated tools ---------------------------------------------------------------------------


def test_scripted_failures_come_in_order_then_the_tool_runs():
    tools = Toolbox({"pay": lambda amount: {"paid": amount}})
    tools.script("pay", ["timeout", "card declined", None, ToolError("fraud check", kind="blocked")])
    outcomes = []
    for _ in range(5):
        try:
            outcomes.append(tools["pay"](amount=5))
        except ToolError as err:
            outcomes.append(err.kind)
    assert outcomes == ["timeout", "error", {"paid": 5}, "blocked", {"paid": 5}]
    assert [c.ok for c in tools.calls] == [False, False, True, False, True]


# -- the HTN planner ---------------------------------------------------------------------------


def test_htn_decomposes_into_ordered_goals_and_actions():
    memory = Memory()
    record = run(HTNPlanner(two_step_domain()), memory, job_tools(), task=job_task())
    assert record.status == "done" and record.outcome == "success"
    assert memory.query("#job.subgoals").ids == ["prep"]
    assert memory.query("#job.descendants.where(type = 'action')").ids == ["pub", "fetch", "parse"]
    assert memory.query("#fetch.next").ids == ["parse"] and memory.query("#prep.next").ids == ["pub"]
    assert memory.node("fetch")["args"] == {"url": "s3://r"}
    assert memory.query("#fetch.results").nodes[0]["content"] == "fetched s3://r"
    assert {memory.node(i)["status"] for i in ("job", "prep", "fetch", "parse", "pub")} == {"done"}
    assert record.calls == 1  # one decomposition; running actions costs no planner call


def test_htn_repairs_only_the_failed_branch_and_keeps_the_rest():
    memory = Memory()
    tools = job_tools()
    tools.fail_when("fetch", lambda a: not a["url"].startswith("mirror:"), "404 not found")
    record = run(HTNPlanner(two_step_domain()), memory, tools, task=job_task())
    assert record.status == "done" and record.outcome == "success"
    repair = next(s for s in record.steps if (s.reason or "").startswith("repair"))
    touched = {c.get("id") or c["to"] for c in memory.diff(repair.t - 1, repair.t)}
    branch_and_below = {"prep", "fetch", "parse", "fetch-r2", "parse-r2"}
    assert touched <= branch_and_below, touched
    assert memory.node("prep")["tried"] == ["primary", "mirror"] and memory.node("prep")["revision"] == 2
    assert memory.node("fetch-r2")["args"] == {"url": "mirror:s3://r"} and memory.node("pub")["status"] == "done"
    failure = memory.query("nodes.where(type = 'fact', kind = 'failure')").nodes[0]
    assert failure["content"] == "404 not found" and failure["action"] == "fetch"
    assert record.calls == 2


def test_htn_keeps_completed_work_that_the_new_method_repeats():
    domain = Domain.from_table({
        "methods": [
            {"task": "job", "name": "default", "subtasks": [{"task": "prepare", "id": "prep"}]},
            {"task": "prepare", "name": "a", "subtasks": [{"task": "login", "id": "login"}, {"task": "fetch", "id": "fetch", "args": {"url": "x"}}]},
            {"task": "prepare", "name": "b", "subtasks": [{"task": "login", "id": "login"}, {"task": "fetch", "id": "fetch", "args": {"url": "y"}}]},
        ],
        "operators": [{"task": "login", "tool": "login"}, {"task": "fetch", "tool": "fetch", "args": {"url": "{url}"}}],
    })
    tools = Toolbox({"login": lambda: {"summary": "session 7"}, "fetch": lambda url: {"summary": url}})
    tools.fail_when("fetch", lambda a: a["url"] == "x", "gone")
    memory = Memory()
    record = run(HTNPlanner(domain), memory, tools, task=Observation.task("t", task="job", id="job"))
    assert record.outcome == "success"
    assert [c.name for c in tools.calls] == ["login", "fetch", "fetch"]  # login not run again
    login = memory.node("login-r2")
    assert login["status"] == "done" and login["carried_from"] == "login"
    assert memory.query("#login-r2.results").nodes[0]["content"] == "session 7"


def test_htn_gives_up_cleanly_when_no_branch_has_another_method():
    memory = Memory()
    tools = job_tools()
    tools.fail_when("fetch", lambda a: True, "network down")
    record = run(HTNPlanner(two_step_domain()), memory, tools, task=job_task())
    assert record.status == "done" and record.outcome == "failure"
    root = memory.node("job")
    assert root["status"] == "blocked" and root["needs"] == "human"
    assert memory.violations() == [] and not record.failed_steps[-1].status == "refused"


def test_htn_re_enters_at_an_action_a_rule_blocked():
    domain = two_step_domain()
    memory = Memory()
    memory.load_rules("rule mirror_only: on add fact where content =~ 'primary is down' "
                      "then mark related_entities.related.where(type = 'action', status = 'pending') as blocked because 'down'")
    memory.apply({"ops": [{"op": "add_node", "id": "e-primary", "type": "entity", "content": "primary"}]})
    steps = []

    def listener(step, mem):
        steps.append(step)
        if len(steps) == 1:  # after the plan exists, news arrives that blocks the parse action
            mem.apply({"ops": [{"op": "add_edge", "from": "parse", "to": "e-primary", "type": "related_to"},
                               {"op": "add_node", "id": "news", "type": "fact", "content": "primary is down"},
                               {"op": "add_edge", "from": "news", "to": "e-primary", "type": "related_to"}]})
    record = run(HTNPlanner(domain), memory, job_tools(), task=job_task(), listener=listener)
    assert record.outcome == "success"
    assert any("parse is blocked" in note for s in record.steps for note in s.notes)


def test_callable_methods_and_preconditions_read_memory():
    domain = Domain()

    @domain.method("greet", "formal", precondition="nodes.where(type = 'fact', content = 'formal').exists()")
    def formal(ctx):
        return [{"task": "say", "id": "say", "args": {"text": "Good day, " + ctx.args["who"]}}]

    @domain.method("greet", "casual")
    def casual(ctx):
        return [{"task": "say", "id": "say", "args": {"text": "hi " + ctx.args["who"]}}]

    domain.operator("say", args=lambda ctx: {"text": ctx.args["text"].upper()})
    said = []
    for facts in ([], [{"op": "add_node", "type": "fact", "content": "formal"}]):
        memory = Memory()
        if facts:
            memory.apply({"ops": facts})
        run(HTNPlanner(domain), memory, {"say": lambda text: said.append(text) or "ok"},
            task=Observation.task("greet", task="greet", args={"who": "Ada"}))
    assert said == ["HI ADA", "GOOD DAY, ADA"]


def test_an_argument_bound_to_memory_that_finds_nothing_fails_the_action():
    domain = Domain.from_table({
        "methods": [{"task": "job", "name": "m", "subtasks": [{"task": "use", "id": "use"}]}],
        "operators": [{"task": "use", "tool": "use", "args": {"key": {"query": "nodes.where(type = 'fact', kind = 'key')", "attr": "value"}}}],
    })
    memory = Memory()
    record = run(HTNPlanner(domain), memory, {"use": lambda key: key}, task=Observation.task("t", task="job", id="job"))
    assert record.outcome == "failure" and memory.node("use")["error_type"] == "unbound-argument"


@pytest.mark.parametrize("table, message", [
    ({"methods": [{"task": "t", "name": "m"}]}, "methods[0]: missing ['subtasks']"),
    ({"methods": [{"task": "t", "name": "m", "subtasks": [{"task": "x", "colour": 1}]}]}, "unknown keys ['colour']"),
    ({"methods": [{"task": "t", "name": "m", "subtasks": [{"task": "nobody"}]}]}, "'nobody', which has no method or operator"),
    ({"format": "hgm-htn/9"}, "unknown method table format"),
    ({"operators": [{"task": "x", "facts": {"each": "items"}}]}, "operators[0].facts: missing ['content']"),
    ([], "a method table is an object"),
])
def test_a_bad_method_table_is_refused_naming_the_place(table, message):
    with pytest.raises(DomainError) as caught:
        Domain.from_table(table)
    assert message in str(caught.value)


def test_method_tables_load_from_json_and_yaml(tmp_path):
    table = {"methods": [{"task": "job", "name": "m", "subtasks": [{"task": "say", "id": "s"}]}],
             "operators": [{"task": "say", "tool": "say"}]}
    (tmp_path / "d.json").write_text(json.dumps(table))
    assert load_domain(tmp_path / "d.json").methods_for("job")[0].name == "m"
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(DomainError, match="not JSON"):
        load_domain(tmp_path / "bad.json")
    yaml = pytest.importorskip("yaml")
    (tmp_path / "d.yaml").write_text(yaml.safe_dump(table))
    assert load_domain(tmp_path / "d.yaml").is_primitive("say")


def test_an_unknown_root_task_is_an_invalid_answer():
    record = run(HTNPlanner(two_step_domain()), Memory(), {}, task=Observation.task("x", task="dance"), max_failures=1)
    assert record.steps[0].status == "invalid-answer" and record.steps[0].error["category"] == "no-method"


# -- the travel scenario -----------------------------------------------------------------------


def test_travel_swaps_the_days_after_the_closure_and_finishes():
    memory = Memory()
    record = travel.play(memory, lambda line: None)[0]
    assert (record.status, record.outcome) == ("done", "success")
    assert memory.query("#sights.subgoals").nodes[0]["content"] == "Monday: the Temple of Heaven"
    assert memory.query("#sights.subgoals").nodes[1]["content"] == "Tuesday: the Forbidden City"
    assert memory.node("sights")["tried"] == ["palace_first", "temple_first"]
    tickets = [n for n in memory.query("nodes.where(type = 'action', task = 'reserve_tickets')").nodes]
    assert {(n["args"]["place"], n["day"], n["status"]) for n in tickets} == {
        ("Temple of Heaven", "Mon", "done"), ("Forbidden City", "Tue", "done")}


def test_travel_closure_fact_blocks_the_other_monday_visit_through_the_rule():
    memory = Memory()
    record = travel.play(memory, lambda line: None)[0]
    step = next(s for s in record.steps if s.report and s.report["fired_rules"])
    assert step.report["fired_rules"] == ["closure_blocks_visits"]
    assert [(d["id"], d["state"]) for d in step.report["dirtied"]] == [("palace_tour", "blocked")]


def test_travel_repair_rewrites_only_the_sightseeing_branch():
    memory = Memory()
    record = travel.play(memory, lambda line: None)[0]
    repair = next(s for s in record.steps if (s.reason or "").startswith("repair"))
    branch = set(memory.as_of(repair.t - 1).query("#sights.descendants").ids) | set(memory.query("#sights.descendants").ids)
    for change in memory.diff(repair.t - 1, repair.t):
        ids = {change["id"]} if "id" in change else {change["from"], change["to"]}
        assert ids & (branch | {"sights"}), change
    assert [c["kind"] for c in memory.diff(repair.t - 1, repair.t) if c.get("id") in ("hotel", "wed", "trip")] == []


def test_travel_hotel_constraint_holds_at_every_step():
    memory = Memory()
    record = travel.play(memory, lambda line: None)[0]
    assert memory.constraints()["hotel_near_wangfujing"]
    for t in record.commits:
        state = memory.as_of(t)
        assert state.query("#trip.children.where(kind = 'user_constraint', area = 'Wangfujing').exists()").value, t
        assert not state.query("nodes.where(type = 'result', kind = 'hotel_booking', area != 'Wangfujing').exists()").value
    booked = memory.node("book_hotel-result")
    assert (booked["hotel"], booked["area"]) == ("Jade Courtyard Hotel", "Wangfujing")  # not the cheaper Sanlitun one
    assert memory.node("transfer-result")["pickup"] == "Jade Courtyard Hotel"


def test_travel_memory_refuses_a_booking_outside_wangfujing():
    memory = Memory()
    travel.play(memory, lambda line: None)
    bad = StepPlan(ops=[{"op": "update_node", "id": "book_hotel-result", "set": {"area": "Sanlitun"}}], reason="cheaper")
    before = memory.export()
    record = run(Scripted(bad), memory, {}, task="cheaper hotel")
    assert record.steps[0].status == "refused"
    assert "hotel_near_wangfujing" in record.steps[0].error["message"] and memory.export() == before


def test_travel_is_deterministic():
    logs = []
    for _ in range(2):
        lines: list[str] = []
        travel.play(Memory(), lines.append)
        logs.append(lines)
    assert logs[0] == logs[1]


# -- hgm demo NAME -----------------------------------------------------------------------------


def run_hgm(*argv):
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = hgm_main(list(argv))
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def test_hgm_demo_travel_prints_the_log_and_leaves_a_store(tmp_path):
    db = tmp_path / "trip.db"
    code, out, err = run_hgm("demo", "travel", "--db", str(db))
    assert code == 0, err
    assert "rewrote only the branch sights" in out and "The memory at the end" in out
    assert "hotel_near_wangfujing holds" in out
    code, out, _ = run_hgm("query", "#sights.subgoals", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["ids"] == ["mon-r2", "tue-r2"]
    runs = json.loads((tmp_path / "trip.db.runs.json").read_text())
    assert runs[0]["format"] == "hgm-run/1" and runs[0]["status"] == "done"


def test_hgm_demo_travel_output_is_the_same_every_time(tmp_path):
    first = run_hgm("demo", "travel")[1]
    assert first == run_hgm("demo", "travel")[1]


def test_hgm_demo_refuses_a_store_that_holds_a_memory_and_unknown_names(tmp_path):
    db = tmp_path / "used.db"
    assert run_hgm("demo", "travel", "--db", str(db))[0] == 0
    code, _, err = run_hgm("demo", "travel", "--db", str(db))
    assert code == 1 and "already holds a memory" in err
    code, _, err = run_hgm("demo", "paris")
    assert code == 1 and "unknown scenario 'paris'" in err
    assert run_hgm("demo", "--db", str(tmp_path / "x.db"))[0] == 1
    assert run_hgm("demo", "travel", "--sample")[0] == 1


def test_the_engine_does_not_import_planners():
    code = ("import sys, hgm_engine, hgm_engine.cli.app; hgm_engine.cli.app.build_parser(); "
            "hgm_engine.cli.app.main(['explain', 'root']); print('planners' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"
