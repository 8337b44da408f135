"""An LLM planner: a model reads memory with path expressions and changes it with ops.

Every step is a short conversation with any OpenAI-compatible chat endpoint (through the
``openai`` client; ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` say where, ``HGM_LLM_MODEL`` which
model). The prompts are pure functions (:func:`system_prompt`, :func:`step_prompt`,
:func:`results_prompt`, :func:`repair_prompt`) and every answer must be one JSON object valid
against :data:`RESPONSE_SCHEMA`:

1. **read** — the model writes ``queries`` (path expressions); each is compiled and run by the
   engine and the results go back to it;
2. **act** — with ``queries: []`` it writes the ``ops`` of one transaction, at most one
   ``tool`` call and whether the task is ``done``.

Both are validated: the JSON against the schema; expressions by the engine's compiler; ops by
the engine's transaction parser and a dry run (constraints, rules). An answer that fails goes
back to the model with the engine's error message (caret and "did you mean" included) for one
repair (``max_repairs``). When the repair fails too, the step is an invalid answer: nothing is
committed, and the loop records why.

>>> from hgm_engine import Memory
>>> from hgm_engine.llm import ScriptedClient
>>> from planners.loop import run
>>> memory = Memory()
>>> client = ScriptedClient([
...     '{"queries": ["root.subgoal"], "ops": [], "tool": null, "done": false, "reason": "look"}',
...     '{"queries": ["root.count()"], "ops": [], "tool": null, "done": false, "reason": "look again"}',
...     '{"queries": [], "ops": [{"op": "add_node", "id": "g", "type": "goal", "content": "Say hi"}],'
...     ' "tool": null, "done": true, "outcome": "success", "reason": "nothing else to do"}'])
>>> record = run(LLMPlanner(client=client, model="m"), memory, {}, task="Say hi")
>>> record.outcome, record.steps[0].calls, memory.query("root").ids
('success', 3, ['g'])
>>> print(client.requests[1]["messages"][-1]["content"])
Your answer was refused:
- root.subgoal: unknown-name at line 1, column 6: unknown relation 'subgoal'; did you mean 'subgoals'?
      root.subgoal
           ^
Answer again with one corrected JSON object.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import attrs

from hgm_engine import HGMError, RewriteProposalError, TransactionError
from hgm_engine.llm import (
    DEFAULT_MODEL,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    ECHO_LIMIT,
    MODEL_ENV,
    AnswerSchema,
    check_retries,
    converse,
    json_path,
    model_name,
    open_client,
    read_json,
)
from hgm_engine.model import Schema
from hgm_engine.txn import parse_transaction

from planners.protocol import MemoryView, Observation, StepPlan, ToolCall, json_copy

__all__ = [
    "LLMPlanner",
    "ToolSpec",
    "StepContext",
    "RESPONSE_SCHEMA",
    "system_prompt",
    "step_prompt",
    "results_prompt",
    "repair_prompt",
    "check_answer",
    "MODEL_ENV",
    "DEFAULT_MODEL",
]

_RESULT_LIMIT = 20  # nodes shown per query result

RESPONSE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hgm planner step",
    "type": "object",
    "required": ["queries", "ops", "tool", "done", "reason"],
    "additionalProperties": False,
    "properties": {
        "queries": {"type": "array", "maxItems": 8, "items": {"type": "string", "minLength": 1}},
        "ops": {"type": "array", "maxItems": 64, "items": {"type": "object", "required": ["op"]}},
        "tool": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["name", "args"],
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "args": {"type": "object"},
                        "action": {"type": ["string", "null"]},
                    },
                },
            ]
        },
        "done": {"type": "boolean"},
        "outcome": {"enum": ["success", "failure", None]},
        "focus": {"type": ["string", "null"]},
        "reason": {"type": "string"},
    },
}


@attrs.frozen
class ToolSpec:
    """A tool as the model is told about it.

    >>> ToolSpec("search_hotels", "hotels with free rooms", {"area": "district"}).line()
    'search_hotels(area): hotels with free rooms; area: district'
    """

    name: str
    description: str = ""
    args: Mapping[str, str] = attrs.field(factory=dict)

    def line(self) -> str:
        head = f"{self.name}({', '.join(self.args)})"
        details = "; ".join(f"{k}: {v}" for k, v in self.args.items())
        return head + (f": {self.description}" if self.description else "") + (f"; {details}" if details else "")


@attrs.frozen
class StepContext:
    """What the model is shown at the start of a step (all plain JSON values)."""

    task: str
    t: int
    observation: Mapping[str, Any]
    focus: str | None = None
    focus_path: tuple[Mapping[str, Any], ...] = ()
    frontier: tuple[Mapping[str, Any], ...] = ()
    stale: tuple[Mapping[str, Any], ...] = ()
    changes: tuple[Mapping[str, Any], ...] = ()


# -- prompts: pure functions ---------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def system_prompt(schema: Schema, tools: Sequence[ToolSpec]) -> str:
    """The fixed part: the memory's vocabulary, the ops, the tools and the answer schema.

    >>> from hgm_engine import DEFAULT_SCHEMA
    >>> text = system_prompt(DEFAULT_SCHEMA, [ToolSpec("pay", "pay an order", {"order": "order id"})])
    >>> "pay(order): pay an order" in text and '"required": ["queries", "ops", "tool", "done", "reason"]' in text
    True
    >>> text == system_prompt(DEFAULT_SCHEMA, [ToolSpec("pay", "pay an order", {"order": "order id"})])
    True
    """
    relations = ", ".join(sorted(schema.relations))
    tool_lines = "\n".join(f"- {t.line()}" for t in tools) or "- (none)"
    return f"""You are the planner of an agent. Its task memory is a typed graph (hgm): goals contain subgoals and actions (edge parent_of); actions produce results; facts and entities sit beside them.
You read memory with path expressions and change it with the ops of one transaction per step.

Memory
- node types: {', '.join(schema.node_types)}
- edge types: {', '.join(schema.edge_types)}
- relations (the steps of a path): {relations}
- statuses of goals and actions: pending, active, done, failed, blocked, needs_review, superseded, cancelled
- path expressions: root, #ID, focus, nodes; then .relation, [index], .where(cond, ...), .first(), .count(), .exists(), .paths()
  examples: root.subgoals[0].actions.where(status = 'pending')   #a_hotel.results   nodes.where(type = 'fact', content =~ 'closed').count()
  strings use single quotes; = != < <= > >= =~ (regex); and, or, not; has(attr), exists(path), count(path)

Ops (applied in order, all or nothing; constraints are checked on the final state)
- {{"op": "add_node", "id": ID, "type": TYPE, "parent": PARENT_ID, ...attributes}}
- {{"op": "update_node", "id": ID, "set": {{...}}, "unset": [NAMES]}}
- {{"op": "add_edge", "from": ID, "to": ID, "type": EDGE_TYPE}}   {{"op": "delete_edge", "from": ID, "to": ID, "type": EDGE_TYPE}}
- {{"op": "delete_node", "id": ID, "cascade": false}}
- {{"op": "replace_branch", "id": ID, "with": [{{"id": ID, "type": TYPE, ...attributes, "children": [...], "edges": [{{"to": ID, "type": EDGE_TYPE}}]}}]}}
- {{"op": "confirm", "id": ID}}   (clears a stale mark)
Every action has exactly one parent (a goal or an action); every result is produced by an action (edge produces).
Give every new node an id (letters, digits, _ and -).

Tools
{tool_lines}

Each step
1. Read: answer with "queries" (path expressions) and empty "ops"; you get their results.
2. Act: answer with "queries": [] and the "ops" to commit, at most one "tool" call ("action": the action node it runs; mark it active), "done": true with "outcome" when the task is finished, and "focus": the node you work on.
An expression or op the engine refuses comes back with its error message: correct it.

Answer with one JSON object, nothing else, valid against this JSON Schema:
{_dumps(RESPONSE_SCHEMA)}"""


def step_prompt(context: StepContext) -> str:
    """The step's situation: task, observation, focus and its path, frontier, stale nodes and
    what changed since the planner's last step.

    >>> print(step_prompt(StepContext("Say hi", 0, {"kind": "task", "text": "Say hi"})))
    Task: Say hi
    Memory: t=0
    Observation: {"kind": "task", "text": "Say hi"}
    Focus: none yet
    """
    lines = [f"Task: {context.task}", f"Memory: t={context.t}", f"Observation: {_dumps(context.observation)}"]
    if context.focus:
        path = " > ".join(f"{n['id']} ({n.get('content', '')})" for n in context.focus_path)
        lines.append(f"Focus: {context.focus}; path from the root: {path}")
    else:
        lines.append("Focus: none yet")
    if context.frontier:
        lines.append("Ready to run (frontier): " + _dumps(list(context.frontier)))
    if context.stale:
        lines.append("Stale or blocked: " + _dumps(list(context.stale)))
    if context.changes:
        lines.append("Commits since your last step: " + _dumps(list(context.changes)))
    return "\n".join(lines)


def results_prompt(results: Sequence[tuple[str, Any]]) -> str:
    """The answers to the model's queries (``(expr, QueryResult)`` pairs).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> print(results_prompt([("root.count()", m.query("root.count()"))]))
    Results:
    - root.count() -> 0
    Now act: answer with "queries": [] and the ops, tool and done.
    """
    lines = ["Results:"]
    for expr, result in results:
        if result.kind == "nodes":
            nodes = [dict(n) for n in result.nodes[:_RESULT_LIMIT]]
            more = f" (and {len(result.ids) - _RESULT_LIMIT} more)" if len(result.ids) > _RESULT_LIMIT else ""
            lines.append(f"- {expr} -> {_dumps(nodes)}{more}")
        else:
            lines.append(f"- {expr} -> {_dumps(result.value)}")
    lines.append('Now act: answer with "queries": [] and the ops, tool and done.')
    return "\n".join(lines)


def repair_prompt(problems: Sequence[str]) -> str:
    """What was wrong with the last answer, to be corrected once.

    >>> print(repair_prompt(["root.subgoal: unknown relation 'subgoal'"]))
    Your answer was refused:
    - root.subgoal: unknown relation 'subgoal'
    Answer again with one corrected JSON object.
    """
    return "Your answer was refused:\n" + "\n".join(f"- {p}" for p in problems) + "\nAnswer again with one corrected JSON object."


# -- checking answers ----------------------------------------------------------------------------

_RESPONSE_SCHEMA = AnswerSchema(RESPONSE_SCHEMA)


def check_answer(text: str | None) -> tuple[dict[str, Any] | None, list[str]]:
    """Parse and validate one answer against :data:`RESPONSE_SCHEMA`: (doc, problems).

    >>> check_answer('{"queries": [], "ops": [], "tool": null, "done": true, "reason": "ok"}')[1]
    []
    >>> check_answer('{"queries": "root"}')[1]
    ["$: 'done' is a required property", "$: 'ops' is a required property", "$: 'reason' is a required property", "$: 'tool' is a required property", "$.queries: 'root' is not of type 'array'"]
    >>> check_answer("Sure! Here is my plan.")[1]
    ['not valid JSON: Expecting value at line 1, column 1']
    """
    doc, problems = read_json(text)
    if problems:
        return None, problems
    errors = sorted(_RESPONSE_SCHEMA.errors(doc), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        return None, [f"{json_path(e.absolute_path)}: {e.message}" for e in errors]
    return doc, []


def _engine_error(err: HGMError) -> str:
    """The engine's message, caret excerpt included, on as few lines as make sense."""
    return str(err).replace("\n", "\n  ")


# -- the planner ---------------------------------------------------------------------------------


class LLMPlanner:
    """A :class:`~planners.protocol.Planner` whose decisions come from a chat model.

    ``client``: an ``openai.OpenAI`` (or anything with ``chat.completions.create``); by default
    one is made from the environment. ``tools``: the tools the model may call (names, or
    :class:`ToolSpec` s). ``max_repairs``: how often a refused answer goes back (1).
    ``timeout``: seconds to wait for each answer; ``retries``: how often the client made here
    retries a request that got no answer (timeouts, HTTP 408/409/429/5xx), with its backoff
    and the server's ``Retry-After`` (default 2; 0: the step fails at the first).
    ``max_reads``: read turns per step. ``json_mode`` asks for ``response_format`` JSON (the
    request is sent again without it when a server refuses the option).
    """

    def __init__(
        self,
        *,
        client: Any = None,
        model: str | None = None,
        tools: Sequence[ToolSpec | str] = (),
        max_repairs: int = 1,
        max_reads: int = 2,
        timeout: float = DEFAULT_TIMEOUT,
        json_mode: bool = True,
        temperature: float | None = 0.0,
        name: str = "llm",
        retries: int = DEFAULT_RETRIES,
    ):
        self.client = client
        self.model = model_name(model)
        self.tools = tuple(t if isinstance(t, ToolSpec) else ToolSpec(str(t)) for t in tools)
        self.max_repairs = max_repairs
        self.max_reads = max_reads
        self.timeout = timeout
        self.retries = check_retries(retries)
        self.json_mode = json_mode
        self.temperature = temperature
        self.name = name
        self.task: str = ""
        self.focus: str | None = None
        self.last_t: int | None = None
        self.last_messages: list[dict[str, str]] = []

    # -- a step ----------------------------------------------------------------------------------

    def context(self, view: MemoryView, observation: Observation) -> StepContext:
        """Gather what the step prompt shows (the reads are logged in ``view.log``)."""
        focus_path: tuple = ()
        frontier: tuple = ()
        if self.focus and view.exists(self.focus):
            ids = view.focus_path(self.focus)
            focus_path = tuple({"id": i, "content": (view.node(i) or {}).get("content", "")} for i in ids)
            root = ids[0]
            frontier = tuple({"id": n["id"], "content": n.get("content", "")} for n in
                             view.nodes("#$goal.descendants.where(type = 'action', status = 'pending', not has(dirty), "
                                        "not exists(prev.where(status != 'done')))", params={"goal": root}))
        stale = tuple({"id": s["id"], "state": s["state"], "because": [m.get("reason") or m.get("rule") for m in s["marks"]]}
                      for s in view.stale())
        changes: tuple = ()
        if self.last_t is not None and self.last_t < view.t:
            changes = tuple({"t": c["t"], "author": c.get("author"), "reason": c.get("reason")}
                            for c in view.changes_since(self.last_t)["commits"][-5:])
        return StepContext(self.task, view.t, observation.to_json(), self.focus if focus_path else None,
                           focus_path, frontier, stale, changes)

    def step(self, view: MemoryView, observation: Observation) -> StepPlan:
        """One step: read turns (at most ``max_reads``), then the act; each turn is one
        :func:`hgm_engine.llm.converse` with ``1 + max_repairs`` attempts. A request that still
        gets no answer after the client's retries fails the step (``model-unavailable``), an answer still refused after
        the repairs fails it as ``invalid-answer``; memory is untouched either way."""
        if observation.kind == "task":
            self.task = observation.text
            self.focus = observation.data.get("focus")
        messages = [
            {"role": "system", "content": system_prompt(view.schema, self.tools)},
            {"role": "user", "content": step_prompt(self.context(view, observation))},
        ]
        self.last_messages = messages
        calls = 0
        reads = 0
        notes: list[str] = []
        if self.client is None:
            try:
                self.client = open_client(self.timeout, self.retries)
            except RewriteProposalError as err:
                return StepPlan.invalid("model-unavailable", err.message, calls=1, notes=notes)
        while True:
            exchange = converse(
                self.client,
                messages,
                lambda text: self._checked(view, text, reads),
                model=self.model,
                max_attempts=1 + self.max_repairs,
                correction=lambda problems: {"role": "user", "content": repair_prompt(problems)},
                json_mode=self.json_mode,
                temperature=self.temperature,
            )
            calls += len(exchange.attempts)
            self.last_messages = list(exchange.messages)
            notes.extend(f"answer refused, sent back once: {a.problems[0].splitlines()[0]}"
                         for a in exchange.attempts[:-1])
            if exchange.category == "model-unavailable":
                error = exchange.error
                return StepPlan.invalid("model-unavailable", f"{type(error).__name__}: {error}", calls=calls, notes=notes)
            if not exchange.ok:
                repairs = len(exchange.attempts) - 1
                return StepPlan.invalid(
                    "invalid-answer",
                    f"the model's answer was refused after {repairs} repair{'s' if repairs != 1 else ''}: "
                    + "; ".join(exchange.attempts[-1].problems),
                    calls=calls,
                    notes=notes,
                )
            doc, results = exchange.value
            if not doc["queries"]:
                return self._plan(view, doc, calls, notes)
            reads += 1
            messages = [*exchange.messages,
                        {"role": "assistant", "content": (exchange.answer or "")[:ECHO_LIMIT]},
                        {"role": "user", "content": results_prompt(results)}]
            self.last_messages = messages

    def _checked(self, view: MemoryView, text: str | None, reads: int) -> tuple[Any, list[str]]:
        """``((doc, query results), problems)`` for one answer: the schema, then the queries
        (run, when reads are left) or the act (ops dry-run, tool, outcome)."""
        doc, problems = check_answer(text)
        if doc is None:
            return None, problems
        results: list[tuple[str, Any]] = []
        if not doc["queries"]:
            problems = self._check_act(view, doc)
        elif reads >= self.max_reads:
            problems = [f"no more reads in this step ({self.max_reads} done): answer with \"queries\": [] and the ops"]
        else:
            results, problems = self._run_queries(view, doc["queries"])
        return (None if problems else (doc, results)), problems

    def _run_queries(self, view: MemoryView, queries: Sequence[str]) -> tuple[list[tuple[str, Any]], list[str]]:
        results, problems = [], []
        for expr in queries:
            try:
                results.append((expr, view.query(expr, focus=self.focus if self.focus and view.exists(self.focus) else None)))
            except HGMError as err:
                problems.append(f"{expr}: {_engine_error(err)}")
        return results, problems

    def _check_act(self, view: MemoryView, doc: Mapping[str, Any]) -> list[str]:
        ops = [dict(op) for op in doc["ops"]]
        problems: list[str] = []
        if ops:
            try:
                parse_transaction({"ops": ops})
                report = view.dry_run(ops, reason=doc.get("reason"))
            except TransactionError as err:
                return [f"ops: {_engine_error(err)}"]
            problems.extend(f"ops: constraint {v.constraint} at {v.node}: {v.message}" for v in report.violations)
        tool = doc.get("tool")
        if tool is not None:
            known = {t.name for t in self.tools}
            if known and tool["name"] not in known:
                problems.append(f"tool: no tool named {tool['name']!r}; known: {', '.join(sorted(known))}")
            action = tool.get("action")
            if action and not problems and not view.preview(ops).exists(action):
                problems.append(f"tool.action: no node {action!r} (add it in the ops first)")
        if doc["done"] and doc.get("outcome") is None:
            problems.append("outcome: say 'success' or 'failure' when done is true")
        return problems

    def _plan(self, view: MemoryView, doc: Mapping[str, Any], calls: int, notes: list[str]) -> StepPlan:
        tool = doc.get("tool")
        call = None if tool is None else ToolCall(tool["name"], tool.get("args") or {}, tool.get("action"))
        if doc.get("focus"):
            self.focus = doc["focus"]
        self.last_t = view.t + (1 if doc["ops"] else 0)
        return StepPlan(
            ops=json_copy(doc["ops"]),
            reason=doc["reason"] or None,
            tool=call,
            done=bool(doc["done"]),
            outcome=doc.get("outcome") if doc["done"] else None,
            calls=calls,
            notes=tuple(notes) + (f"model: {doc['reason']}",) if doc["reason"] else tuple(notes),
        )
