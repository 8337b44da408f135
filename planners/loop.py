"""The agent loop: a planner, a memory and tools, step by step, every step recorded.

``run(planner, memory, tools, max_steps, task=...)`` repeats: give the planner a read-only
:class:`~planners.protocol.MemoryView` and the latest observation; commit the ops it returns
as one transaction; call the tool it asks for; record the step (what it read, the
transaction's ``t``, the tool's answer). It returns a :class:`RunRecord` that can be saved
as JSON, loaded, printed as a step log and replayed.

Bad input never corrupts memory. A planner that raises, a plan that is not valid, a
transaction the engine refuses (malformed, unknown node, constraint violation, conflict) or
a tool that raises: the step is recorded as failed with the reason, nothing of a refused
transaction is committed, and the run continues (the planner sees why its step failed) or
stops cleanly, as configured (``on_error``, ``max_failures``).

>>> from hgm_engine import Memory
>>> from planners.protocol import StepPlan, ToolCall
>>> class Greeter:
...     name = "greeter"
...     def step(self, view, observation):
...         if observation.kind == "task":
...             return StepPlan(ops=[{"op": "add_node", "id": "g", "type": "goal", "content": observation.text},
...                                  {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "active"}],
...                             reason="plan", tool=ToolCall("greet", {"who": "Ada"}, action="a"))
...         return StepPlan(ops=[{"op": "update_node", "id": "a", "set": {"status": "done", "said": observation.value}}],
...                         reason="record", done=True, outcome="success", calls=0)
>>> memory = Memory()
>>> record = run(Greeter(), memory, {"greet": lambda who: f"hello {who}"}, max_steps=5, task="Greet Ada")
>>> record.status, record.outcome, [s.t for s in record.steps], memory.node("a")["said"]
('done', 'success', [1, 2], 'hello Ada')
>>> print("\\n".join(record.steps[0].lines()))
step 1  t=1  ok
  saw     task: Greet Ada
  commit  t=1 plan: 3 changes
  call    greet(who='Ada') -> hello Ada
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Callable, Mapping, Sequence

import attrs

from hgm_engine import HGMError, Memory
from hgm_engine.txn import TransactionReport
from hgm_engine.errors import ConflictError

from planners.protocol import MemoryView, Observation, Planner, QueryRecord, StepPlan, ToolCall, freeze_json
from planners.protocol import json_copy as _json_copy

__all__ = ["run", "replay", "StepRecord", "RunRecord", "ReplayResult", "RUN_FORMAT", "FAILED_STATUSES"]

RUN_FORMAT = "hgm-run/1"
FAILED_STATUSES = ("tool-error", "planner-error", "invalid-answer", "invalid-transaction", "invalid-request", "refused", "conflict")


@attrs.frozen
class StepRecord:
    """One step of a run.

    ``status`` is ``ok`` or one of :data:`FAILED_STATUSES`; ``error`` says why
    (``{"category", "message", ...}``). ``t`` is the commit the step made (``None``: nothing
    committed). ``report`` summarises the commit (changes, fired rules, dirtied nodes).
    ``result`` is the observation the tool call produced (the next step's input).
    ``requests`` are the path requests the plan made (``rewrite_path``, ``record_outcome``,
    ``ingest``) and ``request_results`` what each did (``op``, ``t``, ``created``).
    """

    index: int
    observation: Observation
    status: str
    queries: tuple[QueryRecord, ...] = ()
    ops: tuple = attrs.field(default=(), converter=lambda ops: tuple(_json_copy(op) for op in ops))
    reason: str | None = None
    base_t: int | None = None
    t: int | None = None
    report: Mapping[str, Any] | None = None
    tool: ToolCall | None = None
    result: Observation | None = None
    done: bool = False
    outcome: str | None = None
    calls: int = 0
    error: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    requests: tuple = attrs.field(default=(), converter=lambda ops: tuple(_json_copy(op) for op in ops))
    request_results: tuple = attrs.field(default=(), converter=lambda rs: tuple(_json_copy(r) for r in rs))

    @property
    def failed(self) -> bool:
        return self.status != "ok"

    @property
    def ts(self) -> list[int]:
        """Every commit the step made: its transaction's, then its requests'."""
        return ([self.t] if self.t is not None else []) + [r["t"] for r in self.request_results if r.get("t") is not None]

    def lines(self, *, queries: bool = True) -> list[str]:
        """The step as people read it (one fact a line)."""
        head = f"step {self.index}  t={','.join(str(t) for t in self.ts) or '-'}  {self.status}"
        out = [head]
        if self.observation.kind != "tool" and self.observation.kind != "none":
            out.append(f"  saw     {self.observation.describe()}")
        if queries:
            for q in self.queries:
                out.append(f"  read    {q.describe()}")
        if self.t is not None:
            summary = f"  commit  t={self.t} {self.reason or ''}: {self.report['changes']} changes"
            if self.report.get("fired_rules"):
                summary += f"; rules fired: {', '.join(self.report['fired_rules'])}"
            out.append(summary)
            for dirty in self.report.get("dirtied", ()):
                out.append(f"          rule marked {dirty['id']} {dirty['state']} (because of {', '.join(dirty['because'])})")
        elif self.ops and self.error is not None and not self.request_results:
            out.append(f"  refused {len(self.ops)} ops ({self.reason or 'no reason'}): nothing committed")
        for request, result in zip(self.requests, self.request_results):
            out.append(f"  path    t={result.get('t')} {_describe_request(request, result)}")
        for request in self.requests[len(self.request_results):]:
            out.append(f"  path    refused: {_describe_request(request, None)}")
        if self.error is not None and self.status != "tool-error":
            out.append(f"  error   {self.error.get('category')}: {self.error.get('message')}")
        for note in self.notes:
            out.append(f"  note    {note}")
        if self.tool is not None:
            if self.result is None:
                out.append(f"  call    {self.tool.describe()} (not made)")
            elif self.result.ok:
                out.append(f"  call    {self.result.describe()}")
            else:
                out.append(f"  call    {self.result.describe()}")
        if self.done:
            out.append(f"  done    {self.outcome}")
        return out

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "index": self.index,
            "status": self.status,
            "observation": self.observation.to_json(),
            "queries": [q.to_json() for q in self.queries],
            "ops": _json_copy(self.ops),
            "reason": self.reason,
            "base_t": self.base_t,
            "t": self.t,
            "calls": self.calls,
        }
        if self.report is not None:
            doc["report"] = _json_copy(self.report)
        if self.tool is not None:
            doc["tool"] = self.tool.to_json()
        if self.result is not None:
            doc["result"] = self.result.to_json()
        if self.done:
            doc["done"] = True
            doc["outcome"] = self.outcome
        if self.error is not None:
            doc["error"] = _json_copy(self.error)
        if self.notes:
            doc["notes"] = list(self.notes)
        if self.requests:
            doc["requests"] = _json_copy(self.requests)
            doc["request_results"] = _json_copy(self.request_results)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "StepRecord":
        return cls(
            index=doc["index"],
            observation=Observation.from_json(doc["observation"]),
            status=doc["status"],
            queries=tuple(QueryRecord.from_json(q) for q in doc.get("queries", ())),
            ops=doc.get("ops", ()),
            reason=doc.get("reason"),
            base_t=doc.get("base_t"),
            t=doc.get("t"),
            report=doc.get("report"),
            tool=None if doc.get("tool") is None else ToolCall.from_json(doc["tool"]),
            result=None if doc.get("result") is None else Observation.from_json(doc["result"]),
            done=doc.get("done", False),
            outcome=doc.get("outcome"),
            calls=doc.get("calls", 0),
            error=doc.get("error"),
            notes=doc.get("notes", ()),
            requests=doc.get("requests", ()),
            request_results=doc.get("request_results", ()),
        )


def _describe_request(request: Mapping[str, Any], result: Mapping[str, Any] | None) -> str:
    op = request.get("op")
    if op == "rewrite_path":
        made = f" -> {', '.join(result['created'])}" if result and result.get("created") else ""
        return f"rewrite_path {request.get('path')}{made}: {request.get('reason')}"
    if op == "record_outcome":
        return f"record_outcome {request.get('path')}: {request.get('outcome')}"
    if op == "ingest":
        return f"ingest {len(request.get('trajectories') or [])} trajectories"
    return f"{op}"


@attrs.frozen
class RunRecord:
    """A whole run: the task, every step, how it ended (``done``, ``stopped``, ``max-steps``)
    and the memory's ``t`` before and after. Saved and loaded as JSON (``hgm-run/1``)."""

    planner: str
    task: Observation
    steps: tuple[StepRecord, ...]
    status: str
    outcome: str | None
    start_t: int
    end_t: int
    stop_reason: str | None = None

    @property
    def calls(self) -> int:
        """Planner calls spent over the run."""
        return sum(s.calls for s in self.steps)

    @property
    def failed_steps(self) -> list[StepRecord]:
        return [s for s in self.steps if s.failed]

    @property
    def commits(self) -> list[int]:
        """Every commit of the run, in order (transactions and path requests)."""
        return [t for s in self.steps for t in s.ts]

    def lines(self, *, queries: bool = True) -> list[str]:
        """The step log of the whole run."""
        out = [f"run of {self.planner}: {self.task.describe()}"]
        for step in self.steps:
            out.extend(step.lines(queries=queries))
        end = f"end: {self.status}"
        if self.outcome:
            end += f" ({self.outcome})"
        if self.stop_reason:
            end += f": {self.stop_reason}"
        out.append(end + f"; {len(self.steps)} steps, {self.calls} planner calls, memory t={self.start_t}..{self.end_t}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RUN_FORMAT,
            "planner": self.planner,
            "task": self.task.to_json(),
            "status": self.status,
            "outcome": self.outcome,
            "stop_reason": self.stop_reason,
            "start_t": self.start_t,
            "end_t": self.end_t,
            "steps": [s.to_json() for s in self.steps],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "RunRecord":
        """The inverse of :meth:`to_json`; a document of another format raises ``ValueError``."""
        if not isinstance(doc, Mapping) or doc.get("format") != RUN_FORMAT:
            raise ValueError(f"not a run record (format {RUN_FORMAT!r})")
        return cls(
            planner=doc["planner"],
            task=Observation.from_json(doc["task"]),
            steps=tuple(StepRecord.from_json(s) for s in doc["steps"]),
            status=doc["status"],
            outcome=doc.get("outcome"),
            start_t=doc["start_t"],
            end_t=doc["end_t"],
            stop_reason=doc.get("stop_reason"),
        )

    def save(self, path: str | pathlib.Path) -> None:
        """Write the record as JSON (UTF-8, indented, keys in a fixed order)."""
        pathlib.Path(path).write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | pathlib.Path) -> "RunRecord":
        return cls.from_json(json.loads(pathlib.Path(path).read_text(encoding="utf-8")))


# -- one step ----------------------------------------------------------------------------------


def _report_summary(report: TransactionReport) -> dict[str, Any]:
    return {
        "changes": len(report.changes),
        "fired_rules": list(report.fired_rules),
        "dirtied": [{"id": d["id"], "state": d["state"], "because": list(d["because"])} for d in report.dirtied],
        "created": list(report.created),
        "cleared": [dict(c) for c in report.cleared],
    }


def _error(category: str, message: str, **more: Any) -> dict[str, Any]:
    return dict({"category": category, "message": message}, **more)


def _commit(memory: Memory, plan: StepPlan, author: str, base_t: int) -> tuple[str, int | None, dict | None, dict | None]:
    """Commit the plan's ops; (status, t, report summary, error). Memory is unchanged unless
    the status is ``ok``."""
    if not plan.ops:
        return "ok", None, None, None
    doc = {"author": author, "reason": plan.reason, "base_t": base_t, "ops": [dict(op) for op in plan.ops]}
    try:
        report = memory.apply(doc)
    except ConflictError as err:
        return "conflict", None, None, _error(err.category, err.message)
    except HGMError as err:
        message = "; ".join(f"{p.where}: {p.message}" if p.where else p.message for p in err.problems)
        return "invalid-transaction", None, None, _error(err.category, message)
    if not report.committed:
        violations = [v.to_json() for v in report.violations]
        message = "; ".join(f"{v['constraint']} at {v['node']}: {v['message']}" for v in violations)
        return "refused", None, None, _error("constraint-violation", message, violations=violations)
    return "ok", report.t, _report_summary(report), None


_REQUEST_KEYS = {
    "rewrite_path": ({"op", "path", "steps", "reason"}, set()),
    "record_outcome": ({"op", "path", "outcome"}, {"reward"}),
    "ingest": ({"op", "trajectories"}, {"scenario"}),
}


def _request(memory: Memory, request: Mapping[str, Any], author: str) -> dict[str, Any]:
    """Make one path request; returns ``{"op", "t", "created"}``. Raises ``HGMError`` (the
    engine refused) or ``ValueError`` (a malformed request)."""
    if not isinstance(request, Mapping) or request.get("op") not in _REQUEST_KEYS:
        raise ValueError(f"a request is one of {', '.join(_REQUEST_KEYS)}: {request!r}"[:200])
    op = request["op"]
    required, optional = _REQUEST_KEYS[op]
    missing = sorted(required - set(request))
    unknown = sorted(set(request) - required - optional)
    if missing or unknown:
        raise ValueError(f"{op}: " + "; ".join(filter(None, [f"missing {missing}" if missing else "",
                                                               f"unknown keys {unknown}" if unknown else ""])))
    if op == "rewrite_path":
        report = memory.rewrite_path(request["path"], request["steps"], request["reason"], author=author)
    elif op == "record_outcome":
        report = memory.record_outcome(request["path"], request["outcome"], reward=request.get("reward"), author=author)
    else:
        done = memory.ingest(request["trajectories"], author=author, scenario=request.get("scenario"))
        return {"op": op, "t": done.ts[-1] if done.ts else None, "created": list(done.ingested)}
    if not report.committed:
        violations = "; ".join(f"{v.constraint} at {v.node}: {v.message}" for v in report.violations)
        raise HGMError.single("constraint-violation", violations)
    return {"op": op, "t": report.t, "created": list(report.created)}


def _call_tool(tools: Mapping[str, Callable[..., Any]], call: ToolCall) -> Observation:
    if call.name not in tools:
        known = ", ".join(sorted(tools)) or "none"
        return Observation.tool_error(call, {"type": "unknown-tool", "message": f"no tool named {call.name!r} (known: {known})"})
    try:
        value = tools[call.name](**dict(call.args))
    except Exception as exc:  # a tool that raises must never stop the loop
        kind = getattr(exc, "kind", None) or type(exc).__name__
        return Observation.tool_error(call, {"type": kind, "message": str(exc)})
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return Observation.tool_error(call, {"type": "invalid-result", "message": f"the tool returned a value that is not JSON: {value!r}"[:200]})
    return Observation.tool_result(call, value)


def _planner_step(planner: Planner, view: MemoryView, observation: Observation) -> StepPlan:
    try:
        plan = planner.step(view, observation)
    except Exception as exc:  # a planner bug is a failed step, never a corrupted memory
        return StepPlan.invalid("planner-error", f"{type(exc).__name__}: {exc}", calls=1, queries=tuple(view.log))
    if not isinstance(plan, StepPlan):
        return StepPlan.invalid("planner-error", f"the planner returned {type(plan).__name__}, not a StepPlan", calls=1, queries=tuple(view.log))
    return plan


def _execute(
    index: int,
    planner: Planner,
    memory: Memory,
    observation: Observation,
    call_tool: Callable[[ToolCall], Observation],
    author: str,
    plan: StepPlan | None = None,
    view: MemoryView | None = None,
) -> StepRecord:
    if plan is None:
        view = MemoryView(memory)
        plan = _planner_step(planner, view, observation)
    queries = tuple(plan.queries) if plan.queries is not None else tuple(view.log)
    base = dict(index=index, observation=observation, queries=queries, ops=plan.ops, reason=plan.reason,
                base_t=view.t, tool=plan.tool, calls=plan.calls, notes=plan.notes, requests=plan.requests)
    if plan.error is not None:
        status = "planner-error" if plan.error.get("category") == "planner-error" else "invalid-answer"
        return StepRecord(status=status, error=dict(plan.error), **base)
    status, t, report, error = _commit(memory, plan, author, view.t)
    if status != "ok":
        return StepRecord(status=status, error=error, **base)
    done_requests: list[dict[str, Any]] = []
    for request in plan.requests:
        try:
            done_requests.append(_request(memory, request, author))
        except HGMError as err:
            message = "; ".join(f"{p.where}: {p.message}" if p.where else p.message for p in err.problems)
            return StepRecord(status="refused", t=t, report=report, error=_error(err.category, message),
                              request_results=done_requests, **base)
        except ValueError as exc:
            return StepRecord(status="invalid-request", t=t, report=report, error=_error("invalid-request", str(exc)),
                              request_results=done_requests, **base)
    result = None
    if plan.tool is not None:
        result = call_tool(plan.tool)
        if not result.ok:
            status, error = "tool-error", _error(str(result.error.get("type")), str(result.error.get("message")))
    return StepRecord(status=status, t=t, report=report, result=result, error=error, request_results=done_requests,
                      done=plan.done and status == "ok", outcome=plan.outcome if plan.done else None, **base)


def _next_observation(step: StepRecord) -> Observation:
    if step.result is not None:
        return step.result
    if step.error is not None:
        return Observation.step_failed(step.error)
    return Observation("none")


def run(
    planner: Planner,
    memory: Memory,
    tools: Mapping[str, Callable[..., Any]],
    max_steps: int = 50,
    *,
    task: Observation | str,
    on_error: str = "continue",
    max_failures: int = 3,
    listener: Callable[[StepRecord, Memory], None] | None = None,
) -> RunRecord:
    """Run ``planner`` on ``task`` for at most ``max_steps`` steps and record every step.

    ``on_error='continue'`` gives the planner the reason of a failed step and goes on;
    ``'stop'`` ends the run at the first failed step. Either way the run stops after
    ``max_failures`` failed steps in a row. ``listener(step, memory)`` is called after each
    step (to print a log as it goes). A step that says ``done`` ends the run when it
    succeeds (its commit and its tool call, if any).

    >>> from hgm_engine import Memory
    >>> class Broken:
    ...     name = "broken"
    ...     def step(self, view, observation):
    ...         return StepPlan(ops=[{"op": "update_node", "id": "nope", "set": {"x": 1}}], reason="bad")
    >>> m = Memory()
    >>> r = run(Broken(), m, {}, max_steps=10, task="anything", max_failures=2)
    >>> r.status, [s.status for s in r.steps], m.t
    ('stopped', ['invalid-transaction', 'invalid-transaction'], 0)
    >>> r.steps[1].observation.describe()
    "previous step failed: unknown-node: ops[0]: no node 'nope'"
    """
    if on_error not in ("continue", "stop"):
        raise ValueError("on_error is 'continue' or 'stop'")
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    first = task if isinstance(task, Observation) else Observation.task(str(task))
    author = getattr(planner, "name", type(planner).__name__)
    start_t = memory.t
    steps: list[StepRecord] = []
    observation = first
    status, outcome, reason = "max-steps", None, f"no result after {max_steps} steps"
    in_a_row = 0
    for index in range(1, max_steps + 1):
        step = _execute(index, planner, memory, observation, lambda call: _call_tool(tools, call), author)
        steps.append(step)
        if listener is not None:
            listener(step, memory)
        if step.done and not step.failed:
            status, outcome, reason = "done", step.outcome, None
            break
        in_a_row = in_a_row + 1 if step.failed else 0
        if step.failed and (on_error == "stop" or in_a_row >= max_failures):
            why = "on_error='stop'" if on_error == "stop" else f"{in_a_row} failed steps in a row"
            status, reason = "stopped", f"{why}; last: {step.error.get('category')}: {step.error.get('message')}"
            break
        observation = _next_observation(step)
    return RunRecord(author, first, tuple(steps), status, outcome, start_t, memory.t, reason)


# -- replay ------------------------------------------------------------------------------------


@attrs.frozen
class ReplayResult:
    """How a replay went: ``matched`` when every step did what the record says; otherwise
    ``divergence`` names the first step that differed and how."""

    matched: bool
    steps: int
    divergence: str | None = None
    record: RunRecord | None = None


def replay(record: RunRecord, memory: Memory, planner: Planner | None = None) -> ReplayResult:
    """Replay a recorded run on ``memory``, which must be at the record's ``start_t`` (the
    same setup, e.g. a fresh memory with the same rules loaded).

    Without a planner the recorded transactions are committed again, in order, and each must
    get the same ``t`` (or fail again) — rebuilding the memory the run left. With a planner,
    the planner is run again on the recorded observations (tools are not called: their
    recorded answers are replayed) and each step must read, write and call what the record
    says — checking that the planner is deterministic.

    >>> from hgm_engine import Memory
    >>> from planners.protocol import StepPlan
    >>> class Once:
    ...     name = "once"
    ...     def step(self, view, observation):
    ...         return StepPlan(ops=[{"op": "add_node", "id": "g", "type": "goal"}], reason="start", done=True, outcome="success")
    >>> rec = run(Once(), Memory(), {}, task="go")
    >>> again = Memory()
    >>> replay(rec, again).matched, again.query("root").ids
    (True, ['g'])
    >>> replay(rec, Memory(), Once()).matched
    True
    """
    if memory.t != record.start_t:
        raise ValueError(f"the memory is at t={memory.t}; the run started at t={record.start_t}")
    done = 0
    if planner is None:
        for step in record.steps:
            if step.ops and step.t is not None:
                plan = StepPlan(ops=step.ops, reason=step.reason)
                status, t, _, error = _commit(memory, plan, record.planner, memory.t)
                if status != "ok" or t != step.t:
                    why = error["message"] if error else f"committed as t={t}"
                    return ReplayResult(False, done, f"step {step.index}: recorded t={step.t}, replay: {status} ({why})")
            for request, recorded in zip(step.requests, step.request_results):
                try:
                    again = _request(memory, request, record.planner)
                except (HGMError, ValueError) as exc:
                    return ReplayResult(False, done, f"step {step.index}: {request.get('op')} refused on replay: {exc}")
                if again.get("t") != recorded.get("t"):
                    return ReplayResult(False, done, f"step {step.index}: {request.get('op')} recorded t={recorded.get('t')}, replay t={again.get('t')}")
            done += 1
        return ReplayResult(True, done)
    steps: list[StepRecord] = []
    for step in record.steps:
        view = MemoryView(memory)
        plan = _planner_step(planner, view, step.observation)
        difference = _compare(step, plan, view)
        if difference is not None:
            return ReplayResult(False, done, f"step {step.index}: {difference}")
        recorded = step.result
        again = _execute(step.index, planner, memory, step.observation, lambda call: recorded, record.planner, plan, view)
        if (again.status, again.ts) != (step.status, step.ts):
            return ReplayResult(False, done, f"step {step.index}: recorded {step.status} t={step.t}, replay {again.status} t={again.t}")
        steps.append(again)
        done += 1
    replayed = attrs.evolve(record, steps=tuple(steps), end_t=memory.t)
    return ReplayResult(True, done, None, replayed)


def _compare(step: StepRecord, plan: StepPlan, view: MemoryView) -> str | None:
    if freeze_json(list(plan.ops)) != freeze_json(list(step.ops)):
        return "the planner wrote different ops"
    if freeze_json(list(plan.requests)) != freeze_json(list(step.requests)):
        return "the planner made different path requests"
    mine = None if plan.tool is None else plan.tool.to_json()
    theirs = None if step.tool is None else step.tool.to_json()
    if freeze_json(mine) != freeze_json(theirs):
        return f"the planner called {mine} instead of {theirs}"
    queries = tuple(plan.queries) if plan.queries is not None else tuple(view.log)
    if [q.expr for q in queries] != [q.expr for q in step.queries]:
        return "the planner read different queries"
    return None
