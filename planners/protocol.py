"""What a planner is: the :class:`Planner` protocol, what it sees and what it returns.

Each step the agent loop (:mod:`planners.loop`) gives a planner a :class:`MemoryView` — memory
it can read but not change — and the latest :class:`Observation` (the task, a tool's answer or
error, or why its previous step was refused). The planner answers with a :class:`StepPlan`:
the ops of one transaction to commit, at most one tool to call, and whether the task is done.
The loop commits the ops (all or nothing), calls the tool and records everything.

>>> from hgm_engine import Memory
>>> memory = Memory()
>>> _ = memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal", "content": "Say hello"}]})
>>> view = MemoryView(memory)
>>> view.query("root").ids, [q.expr for q in view.log]
(['g'], ['root'])
>>> plan = StepPlan(ops=({"op": "update_node", "id": "g", "set": {"status": "done"}},),
...                 reason="nothing to do", done=True, outcome="success")
>>> plan.to_json()["ops"][0]["op"], plan.failed
('update_node', False)
>>> hasattr(view, "apply") or hasattr(view, "transaction")
False
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import attrs

from hgm_engine import HGMError, Memory
from hgm_engine.rules import FRONTIER_QUERY
from hgm_engine.query import QueryResult
from hgm_engine.txn import TransactionReport

__all__ = [
    "Planner",
    "StepPlan",
    "ToolCall",
    "Observation",
    "QueryRecord",
    "MemoryView",
    "PreviewView",
    "freeze_json",
    "json_copy",
]


def freeze_json(value: Any) -> Any:
    """A JSON value with lists made tuples and objects made (sorted) tuples of pairs — for
    comparing plans; ``thaw`` is never needed because records keep the JSON form too.

    >>> freeze_json({"b": [1, 2], "a": None})
    (('a', None), ('b', (1, 2)))
    """
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), freeze_json(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(freeze_json(v) for v in value)
    return value


def json_copy(value: Any) -> Any:
    """A plain JSON copy (dicts and lists) of ``value``; tuples become lists.

    >>> json_copy({"ops": ({"op": "confirm", "id": 1},)})
    {'ops': [{'op': 'confirm', 'id': 1}]}
    """
    if isinstance(value, Mapping):
        return {str(k): json_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_copy(v) for v in value]
    return value


# -- what the planner sees ---------------------------------------------------------------------


@attrs.frozen
class ToolCall:
    """One tool call a planner asks for: the tool's ``name``, its ``args`` and the ``action``
    node it executes (so the answer can be recorded on it).

    >>> ToolCall("search_hotels", {"area": "Wangfujing"}, action="a1").to_json()
    {'name': 'search_hotels', 'args': {'area': 'Wangfujing'}, 'action': 'a1'}
    """

    name: str
    args: Mapping[str, Any] = attrs.field(factory=dict, converter=json_copy)
    action: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "args": json_copy(self.args), "action": self.action}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "ToolCall":
        return cls(doc["name"], doc.get("args") or {}, doc.get("action"))

    def describe(self) -> str:
        """``name(a='x', b=2)`` for logs.

        >>> ToolCall("visit", {"place": "Temple of Heaven", "day": "Mon"}).describe()
        "visit(place='Temple of Heaven', day='Mon')"
        """
        inner = ", ".join(f"{k}={_short(repr(v), 60)}" for k, v in self.args.items())
        return f"{self.name}({inner})"


@attrs.frozen
class Observation:
    """What the planner learns at the start of a step.

    ``kind`` is ``task`` (the request that starts a run: ``text`` and ``data``), ``tool`` (the
    answer of the tool called last step: ``call``, ``ok``, ``value`` or ``error``) or
    ``step-failed`` (the previous step's transaction or answer was refused: ``error``).

    >>> Observation.task("Plan a trip", task="plan_trip").data["task"]
    'plan_trip'
    >>> o = Observation.tool_error(ToolCall("pay"), {"type": "timeout", "message": "no answer in 5 s"})
    >>> o.ok, o.describe()
    (False, 'pay() failed: timeout: no answer in 5 s')
    """

    kind: str
    text: str = ""
    data: Mapping[str, Any] = attrs.field(factory=dict, converter=json_copy)
    call: ToolCall | None = None
    ok: bool = True
    value: Any = attrs.field(default=None, converter=json_copy)
    error: Mapping[str, Any] | None = None

    @classmethod
    def task(cls, text: str, **data: Any) -> "Observation":
        """The request a run starts from (``data``: task name, arguments, ids...)."""
        return cls("task", text, data)

    @classmethod
    def tool_result(cls, call: ToolCall, value: Any) -> "Observation":
        return cls("tool", call=call, ok=True, value=value)

    @classmethod
    def tool_error(cls, call: ToolCall, error: Mapping[str, Any]) -> "Observation":
        """A tool that raised; ``error`` is ``{"type": ..., "message": ...}``."""
        return cls("tool", call=call, ok=False, error=dict(error))

    @classmethod
    def step_failed(cls, error: Mapping[str, Any]) -> "Observation":
        """The previous step changed nothing: its transaction or answer was refused."""
        return cls("step-failed", ok=False, error=dict(error))

    def describe(self) -> str:
        """One line for logs."""
        if self.kind == "task":
            return f"task: {self.text}"
        if self.kind == "tool":
            name = self.call.describe() if self.call else "tool"
            if self.ok:
                return f"{name} -> {_summary(self.value)}"
            return f"{name} failed: {self.error.get('type')}: {self.error.get('message')}"
        return f"previous step failed: {self.error.get('category')}: {self.error.get('message')}"

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind}
        if self.text:
            doc["text"] = self.text
        if self.data:
            doc["data"] = json_copy(self.data)
        if self.call is not None:
            doc["call"] = self.call.to_json()
        if self.kind != "task":
            doc["ok"] = self.ok
        if self.value is not None:
            doc["value"] = json_copy(self.value)
        if self.error is not None:
            doc["error"] = json_copy(self.error)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Observation":
        call = doc.get("call")
        return cls(
            doc["kind"],
            doc.get("text", ""),
            doc.get("data") or {},
            None if call is None else ToolCall.from_json(call),
            doc.get("ok", True),
            doc.get("value"),
            doc.get("error"),
        )


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _summary(value: Any, width: int = 70) -> str:
    if isinstance(value, Mapping) and "summary" in value:
        text = str(value["summary"])
    elif isinstance(value, str):
        text = value
    else:
        import json

        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


@attrs.frozen
class QueryRecord:
    """One path expression a planner ran (or tried to run) and what it found.

    ``value`` is the result's value (ids, a count, a boolean, walks) or ``None`` when the
    expression failed; ``error`` is then the engine's ``{"category", "message", ...}``.

    >>> QueryRecord("root.count()", kind="count", value=1).describe()
    'root.count() -> 1'
    """

    expr: str
    params: Mapping[str, Any] | None = attrs.field(default=None, converter=lambda v: None if v is None else json_copy(v))
    focus: str | None = None
    kind: str | None = None
    value: Any = attrs.field(default=None, converter=json_copy)
    error: Mapping[str, Any] | None = None
    source: str = "memory"  # memory | preview | locate
    label: str | None = None  # a short name for logs (e.g. "frontier")

    @classmethod
    def from_result(cls, expr: str, result: QueryResult, *, params=None, focus=None, source="memory") -> "QueryRecord":
        return cls(expr, params, focus, result.kind, result.value, None, source)

    def describe(self, width: int = 72) -> str:
        head = self.expr if len(self.expr) <= width else self.expr[: width - 3] + "..."
        if self.label:
            head = self.label
        if self.params:
            head += " " + ", ".join(f"${k}={v!r}" for k, v in self.params.items())
        if self.focus:
            head += f" (focus {self.focus})"
        if self.error is not None:
            return f"{head} -> error {self.error.get('category')}: {self.error.get('message')}"
        value = self.value
        if self.kind == "nodes":
            shown = ", ".join(value[:4]) + (", ..." if len(value) > 4 else "")
            return f"{head} -> [{shown}]"
        if self.kind == "paths":
            return f"{head} -> {len(value)} walks"
        return f"{head} -> {value!r}" if self.kind == "locate" else f"{head} -> {value}"

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"expr": self.expr, "source": self.source}
        if self.params:
            doc["params"] = json_copy(self.params)
        if self.focus is not None:
            doc["focus"] = self.focus
        if self.kind is not None:
            doc["kind"] = self.kind
            doc["value"] = json_copy(self.value)
        if self.error is not None:
            doc["error"] = json_copy(self.error)
        if self.label is not None:
            doc["label"] = self.label
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "QueryRecord":
        return cls(
            doc["expr"], doc.get("params"), doc.get("focus"), doc.get("kind"), doc.get("value"), doc.get("error"),
            doc.get("source", "memory"), doc.get("label"),
        )


def _error_json(err: HGMError) -> dict[str, Any]:
    return dict(err.to_json()["error"])


class _Reader:
    """The logged query surface shared by :class:`MemoryView` and :class:`PreviewView`."""

    source = "memory"

    def __init__(self, log: list[QueryRecord]):
        self.log = log

    def _run(self, expr: str, focus: str | None, params: Mapping[str, Any] | None) -> QueryResult:
        raise NotImplementedError

    def query(self, expr: str, *, focus: str | None = None, params: Mapping[str, Any] | None = None,
              label: str | None = None) -> QueryResult:
        """Run a path expression and log it (``label``: a short name for the log); engine
        errors are logged, then raised."""
        try:
            result = self._run(expr, focus, params)
        except HGMError as err:
            self.log.append(QueryRecord(expr, params, focus, error=_error_json(err), source=self.source, label=label))
            raise
        record = QueryRecord.from_result(expr, result, params=params, focus=focus, source=self.source)
        self.log.append(attrs.evolve(record, label=label) if label else record)
        return result

    def nodes(self, expr: str, *, focus: str | None = None, params: Mapping[str, Any] | None = None,
              label: str | None = None) -> list[dict[str, Any]]:
        """The nodes a ``nodes`` query finds, as JSON objects (``[]`` for other kinds)."""
        result = self.query(expr, focus=focus, params=params, label=label)
        return list(result.nodes) if result.kind == "nodes" else []

    def frontier(self, goal: str) -> list[str]:
        """Pending actions under ``goal`` that can run now (see ``Memory.frontier``)."""
        return self.query(FRONTIER_QUERY, params={"goal": goal}, label="frontier").ids

    def exists(self, node_id: str) -> bool:
        """Whether a node has this id (a bookkeeping check, not logged)."""
        return bool(self._run("#$id.exists()", None, {"id": node_id}).value)


class MemoryView(_Reader):
    """Memory as a planner sees it during one step: everything to read, nothing to change.

    Queries (and ``frontier``, ``locate``) are logged in ``log`` so the loop can record what
    the planner looked at. ``dry_run(ops)`` asks what a transaction would do (its report,
    nothing committed); ``preview(ops)`` reads the state those ops would leave.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
    ...     {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"}]})
    >>> view = MemoryView(m)
    >>> view.frontier("g"), view.focus_path("a"), view.t
    (['a'], ['g', 'a'], 1)
    >>> done = [{"op": "update_node", "id": "a", "set": {"status": "done"}}]
    >>> view.dry_run(done).committed, view.preview(done).query("#a.where(status = 'done').exists()").value
    (False, True)
    >>> m.node("a")["status"]
    'pending'
    """

    def __init__(self, memory: Memory):
        super().__init__([])
        self._memory = memory
        self.t = memory.t
        self.schema = memory.schema

    def _run(self, expr, focus, params):
        return self._memory.query(expr, focus=focus, params=params)

    def compile(self, expr: str):
        """Compile ``expr`` (check it without running); raises the engine's error."""
        return self._memory.compile(expr)

    def explain(self, expr: str) -> str:
        return self._memory.explain(expr)

    def node(self, node_id: str) -> dict[str, Any] | None:
        return self._memory.node(node_id)

    def stale(self) -> list[dict[str, Any]]:
        """Nodes marked ``needs_review`` or ``blocked``, with their marks."""
        return self._memory.stale()

    def changes_since(self, t: int) -> dict[str, Any]:
        return self._memory.changes_since(t)

    def focus_path(self, node_id: str) -> list[str]:
        return self._memory.focus_path(node_id)

    def constraints(self) -> dict[str, str]:
        return self._memory.constraints()

    def violations(self) -> list:
        return self._memory.violations()

    def dry_run(self, ops: Sequence[Mapping[str, Any]], *, reason: str | None = None) -> TransactionReport:
        """The report a transaction of ``ops`` would get; nothing is committed. Malformed ops
        raise the engine's ``TransactionError`` as a real commit would."""
        return self._memory.apply({"reason": reason, "ops": [dict(op) for op in ops]}, dry_run=True)

    def preview(self, ops: Sequence[Mapping[str, Any]]) -> "PreviewView":
        """A read-only view of the state ``ops`` would leave (rules and constraints not run)."""
        return PreviewView(self._memory, ops, self.log)

    # -- paths ----------------------------------------------------------------------------------

    def locate(self, text: str, tags: Sequence[str] | None = None, k: int = 5):
        """Stored decision paths that fit ``text`` (``Memory.locate``), logged. Only the view
        of memory locates: a :class:`PreviewView` reads a transaction that was never
        committed, which the path index has not seen."""
        result = self._memory.locate(text, tags=list(tags) if tags else None, k=k)
        matches = [m.path for m in result.matches]
        self.log.append(QueryRecord(f"locate {text!r}", {"tags": list(tags or []), "k": k}, None, "locate", matches, None, "locate"))
        return result

    def path_metrics(self) -> Any:
        return self._memory.path_metrics()

    def path(self, path_id: str) -> dict[str, Any]:
        """One stored path with its steps and versions (``Memory.path``)."""
        return self._memory.path(path_id)

    def attribute(self, name: str) -> Any:
        """A read-only memory method by name, for engine features added later (never one that
        changes memory).

        >>> MemoryView(Memory()).attribute("apply")
        Traceback (most recent call last):
        ...
        AttributeError: 'apply' changes memory; a planner returns ops instead
        """
        if name in _WRITERS or name.startswith("_"):
            raise AttributeError(f"{name!r} changes memory; a planner returns ops instead")
        return getattr(self._memory, name)


_WRITERS = frozenset(
    {
        "apply", "transaction", "load", "revert", "confirm", "snapshot", "add_constraint", "remove_constraint",
        "load_rules", "remove_rules", "ingest", "rewrite_path", "record_outcome", "close", "refresh", "on_commit",
        "store", "graph", "commit_hooks",
    }
)


class PreviewView(_Reader):
    """The state a list of ops would leave, to read only (a transaction never committed)."""

    source = "preview"

    def __init__(self, memory: Memory, ops: Sequence[Mapping[str, Any]], log: list[QueryRecord]):
        super().__init__(log)
        self._memory = memory
        self._tx = memory.transaction(dry_run=True)
        for op in ops:
            self._tx.op(dict(op))
        self.t = memory.t

    def _run(self, expr, focus, params):
        return self._tx.query(expr, focus=focus, params=params)

    def node(self, node_id: str) -> dict[str, Any] | None:
        found = self._tx.query("#$id", params={"id": node_id})
        return dict(found.nodes[0]) if found.ids else None

    def compile(self, expr: str):
        return self._memory.compile(expr)


# -- what the planner returns ------------------------------------------------------------------


def _ops(value: Any) -> tuple:
    return tuple(json_copy(op) for op in value)


@attrs.frozen
class StepPlan:
    """A planner's answer for one step.

    - ``ops``: one transaction (transaction-file ops, formats.md), committed all or nothing;
    - ``requests``: path requests the loop makes after the transaction, each its own commit:
      ``{"op": "rewrite_path", "path": ID, "steps": [...], "reason": TEXT}``,
      ``{"op": "record_outcome", "path": ID, "outcome": "success"|"failure"}`` (optional
      ``reward``), ``{"op": "ingest", "trajectories": [...]}`` (optional ``scenario``); the
      first one the engine refuses (a guard: ``rewrite-cap``, ``version-cap``,
      ``needs-human``...) fails the step, and the rest and the tool call are not made;
    - ``tool``: the :class:`ToolCall` to make after the commit, or ``None``;
    - ``done`` / ``outcome``: the task is finished (``success`` or ``failure``);
    - ``queries``: what the planner read; ``None`` means "what the view logged";
    - ``calls``: planner calls spent on this step (model completions for the LLM planner;
      decompositions and repairs for the HTN planner; bookkeeping costs 0);
    - ``error``: set when the planner could not produce a valid answer (the loop records the
      step as failed and commits nothing);
    - ``notes``: lines for people (the step log).
    """

    ops: tuple = attrs.field(default=(), converter=_ops)
    reason: str | None = None
    tool: ToolCall | None = None
    requests: tuple = attrs.field(default=(), converter=_ops)
    done: bool = False
    outcome: str | None = None
    queries: tuple[QueryRecord, ...] | None = None
    calls: int = 1
    error: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    @classmethod
    def invalid(cls, category: str, message: str, *, calls: int = 1, queries=None, notes=()) -> "StepPlan":
        """A step the planner could not produce (e.g. a model answer that does not validate).

        >>> StepPlan.invalid("invalid-answer", "not JSON").failed
        True
        """
        return cls(error={"category": category, "message": message}, calls=calls, queries=queries, notes=notes)

    @property
    def failed(self) -> bool:
        return self.error is not None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"ops": json_copy(self.ops), "reason": self.reason, "calls": self.calls}
        if self.requests:
            doc["requests"] = json_copy(self.requests)
        if self.tool is not None:
            doc["tool"] = self.tool.to_json()
        if self.done:
            doc["done"] = True
            doc["outcome"] = self.outcome
        if self.error is not None:
            doc["error"] = dict(self.error)
        if self.notes:
            doc["notes"] = list(self.notes)
        return doc


@runtime_checkable
class Planner(Protocol):
    """Anything with a ``name`` and a ``step(view, observation) -> StepPlan`` method.

    A planner must not change memory itself (the view offers no way to); everything it wants
    changed goes into the returned ops, which the loop commits as one transaction.

    >>> class Idle:
    ...     name = "idle"
    ...     def step(self, view, observation):
    ...         return StepPlan(reason="nothing to do", done=True, outcome="success", calls=0)
    >>> isinstance(Idle(), Planner)
    True
    """

    name: str

    def step(self, view: MemoryView, observation: Observation) -> StepPlan:  # pragma: no cover - protocol
        ...
