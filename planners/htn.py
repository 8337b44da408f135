"""An HTN planner: methods decompose tasks, operators run them through tools, memory keeps it all.

A :class:`Domain` has **methods** (a compound task → ordered subtasks; several per task, tried
in order) and **operators** (a primitive task → one tool call, and how its answer becomes a
result node and fact nodes). Methods are Python callables or entries of a declarative method
table (JSON, or YAML when PyYAML is installed; :meth:`Domain.from_table`, :func:`load_domain`).

The planner keeps the task network in memory: a compound task is a goal node (attributes
``task``, ``args``, ``method``, ``tried``, ``revision``, ``pos``), a primitive task an action
node (``task``, ``tool``, ``args``, ``status``, ``pos``) under it; siblings of an ordered method
are chained with ``before`` edges; entities named by a task are linked with ``related_to``.
Each step it:

1. records the last tool answer (action ``done`` + a result node it ``produces`` + facts
   ``derived_from`` that result) or failure (action ``failed`` + a fact that ``causes`` it,
   linked to the action's entities, so memory rules can react);
2. if an action failed, or the next one is blocked or stale, **re-enters the plan at that
   node**: it walks up to the nearest goal (never the root, unless the root is a path) that
   still has an applicable method it has not used up and rewrites that branch alone with one
   ``replace_branch`` op (completed actions the new decomposition repeats keep their
   results); nothing else in the plan changes. A goal kept as a *path* (:class:`PathSpec`)
   gets a new version instead (``record_outcome`` then ``rewrite_path`` requests: a
   ``replaces`` edge, the old version superseded); when the engine's rewrite-storm guard
   refuses it, the task is handed to a person. With no such goal the task ends as a failure,
   the root marked ``blocked``. (A failed action marked ``recovered`` — by a planner that
   appends instead of rewriting — is not repaired again.)
3. otherwise starts the next pending action in plan order (marks it ``active``, resolves
   arguments bound to memory, asks the loop to call its tool); with nothing left the root
   goal is ``done`` (and a path's outcome recorded). A goal whose actions are all done is
   marked ``done`` on the way.

A path task with ``reuse`` first locates a stored path that fits the request and runs its
steps instead of decomposing afresh (see ``docs/planners.md``).

>>> from hgm_engine import Memory
>>> from planners.loop import run
>>> from planners.protocol import Observation
>>> domain = Domain.from_table({"methods": [
...     {"task": "greet", "name": "politely", "subtasks": [
...         {"task": "say", "id": "hello", "args": {"text": "hello {who}"}},
...         {"task": "say", "id": "bye", "args": {"text": "bye {who}"}}]}],
...   "operators": [{"task": "say", "tool": "say", "args": {"text": "{text}"}, "result": "said {said}"}]})
>>> memory = Memory()
>>> record = run(HTNPlanner(domain), memory, {"say": lambda text: {"said": text}},
...              task=Observation.task("Greet Ada", task="greet", id="greeting", args={"who": "Ada"}))
>>> record.status, record.outcome, len(record.steps)
('done', 'success', 3)
>>> [(n["id"], n["status"]) for n in memory.query("#greeting.actions").nodes]
[('hello', 'done'), ('bye', 'done')]
>>> memory.query("#bye.results").nodes[0]["content"]
'said bye Ada'
"""

from __future__ import annotations

import json
import pathlib
import re
import string
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from hgm_engine import HGMError

from planners.protocol import MemoryView, Observation, StepPlan, ToolCall
from planners.protocol import json_copy as _json_copy

__all__ = [
    "HTNPlanner",
    "Domain",
    "Method",
    "Operator",
    "PathSpec",
    "GUARD_REFUSALS",
    "TaskContext",
    "DomainError",
    "load_domain",
    "DOMAIN_FORMAT",
]

DOMAIN_FORMAT = "hgm-htn/1"
_SPEC_KEYS = {"task", "id", "content", "args", "attrs", "entities"}
_FLAT = (str, int, float, bool)
# Keys of a tool's answer that are not copied onto result and fact nodes: node keys, op keys
# (``parent``, ``order`` of add_node) and what the planner sets itself.
_RESERVED = {"id", "type", "op", "parent", "order", "dirty", "dirty_marks", "status", "content", "summary", "kind"}


class DomainError(ValueError):
    """A method table or domain that cannot be used (unknown keys, a task with no method...)."""


# -- templates -----------------------------------------------------------------------------------


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """Fill ``{name}`` fields of strings inside ``template`` from ``values``. A string that is
    exactly one field takes the value as it is (numbers stay numbers); ``{"query": ...}``
    bindings are left for later.

    >>> fill({"text": "hello {who}", "n": "{n}", "q": {"query": "root"}}, {"who": "Ada", "n": 3})
    {'text': 'hello Ada', 'n': 3, 'q': {'query': 'root'}}
    """
    if isinstance(template, str):
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
        if len(fields) == 1 and template == "{" + fields[0] + "}":
            return values.get(fields[0], template)
        if not fields:
            return template
        return template.format_map(_Missing(values))
    if isinstance(template, Mapping):
        if _is_binding(template):
            return dict(template)
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, (list, tuple)):
        return [fill(v, values) for v in template]
    return template


class _Missing(dict):
    def __init__(self, values: Mapping[str, Any]):
        super().__init__(values)

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _is_binding(value: Any) -> bool:
    return isinstance(value, Mapping) and "query" in value and set(value) <= {"query", "attr", "attrs", "default"}


def slug(text: str) -> str:
    """An id-safe form of a name.

    >>> slug("Forbidden City")
    'forbidden-city'
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


# -- the domain ----------------------------------------------------------------------------------


@attrs.frozen
class TaskContext:
    """What a method or an operator function sees: the memory (``view``, read-only), the task
    node (``node``; ``None`` before it exists), the task's ``args`` and the ``root`` goal."""

    view: Any
    args: Mapping[str, Any]
    node: Mapping[str, Any] | None = None
    root: str | None = None

    def query(self, expr: str, **kwargs: Any):
        return self.view.query(expr, **kwargs)

    def nodes(self, expr: str, **kwargs: Any) -> list[dict[str, Any]]:
        return self.view.nodes(expr, **kwargs)


Condition = str | Callable[[TaskContext], bool] | None


@attrs.frozen
class Method:
    """One way to decompose ``task``: ``subtasks`` is a list of task specs (``task``, ``id``,
    ``content``, ``args``, ``attrs``, ``entities``; strings may use ``{arg}`` fields) or a
    callable ``(TaskContext) -> specs``. It applies when ``precondition`` holds and ``unless``
    does not (a path expression, true when it finds something, or a callable), and may be
    used ``repeat`` times for one goal (a retry method has ``repeat`` > 1)."""

    task: str
    name: str
    subtasks: Any
    precondition: Condition = None
    unless: Condition = None
    ordered: bool = True
    repeat: int = 1
    reused_from: str | None = None


@attrs.frozen
class Operator:
    """How a primitive ``task`` runs: the ``tool`` to call with ``args`` (a dict whose values
    may be ``{arg}`` templates or ``{"query": EXPR, "attr": NAME}`` bindings read from memory
    when the action starts, or a callable ``(TaskContext) -> dict``); ``result`` (a template
    over the tool's answer, or a callable ``(ctx, value) -> str``) is the result node's text,
    ``result_attrs`` extra attributes for it (a binding with ``"attrs": [NAMES]`` gives
    the list of those attributes of every node found); ``facts`` turns the answer into fact nodes
    (``{"each": KEY, "content": ..., "attrs": {...}, "entities": [...]}`` or a callable
    ``(ctx, value) -> [fact specs]``)."""

    task: str
    tool: str
    args: Any = attrs.field(factory=dict)
    result: Any = None
    result_attrs: Mapping[str, Any] = attrs.field(factory=dict)
    facts: Any = None


@attrs.frozen
class PathSpec:
    """A task whose plan is kept as a *path* (a goal with ``kind = 'path'``, its actions the
    steps): it is indexed for ``locate``, its outcome recorded with ``record_outcome``, and a
    failure is repaired by ``rewrite_path`` (a new version that ``replaces`` the old one). With
    ``reuse`` a new task first looks for a stored path that fits (``locate(text, tags, k)``,
    score at least ``min_score``) and runs its steps instead of decomposing afresh."""

    task: str
    tags: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    reuse: bool = False
    min_score: float = 0.2
    k: int = 5


class Domain:
    """Methods and operators, by task name.

    >>> d = Domain()
    >>> @d.method("greet", "politely")
    ... def politely(ctx):
    ...     return [{"task": "say", "args": {"text": "hello " + ctx.args["who"]}}]
    >>> d.operator("say", tool="say", args={"text": "{text}"})
    >>> d.methods_for("greet")[0].name, d.is_primitive("say"), d.is_primitive("greet")
    ('politely', True, False)
    """

    def __init__(self) -> None:
        self._methods: dict[str, list[Method]] = {}
        self._operators: dict[str, Operator] = {}
        self._paths: dict[str, PathSpec] = {}

    def path(self, task: str, *, tags: Sequence[str] = (), reuse: bool = False, min_score: float = 0.2, k: int = 5) -> None:
        """Keep the plans of ``task`` as paths (see :class:`PathSpec`)."""
        self._paths[task] = PathSpec(task, tuple(tags), reuse, min_score, k)

    def path_spec(self, task: str | None) -> PathSpec | None:
        return self._paths.get(task) if task else None

    def add_method(self, method: Method) -> None:
        self._methods.setdefault(method.task, []).append(method)

    def method(self, task: str, name: str | None = None, *, precondition: Condition = None, unless: Condition = None,
               ordered: bool = True, repeat: int = 1):
        """Decorator: register ``fn(ctx) -> [task specs]`` as a method of ``task``."""

        def register(fn: Callable[[TaskContext], Sequence[Mapping[str, Any]]]):
            self.add_method(Method(task, name or fn.__name__, fn, precondition, unless, ordered, repeat))
            return fn

        return register

    def operator(self, task: str, *, tool: str | None = None, args: Any = None, result: Any = None,
                 result_attrs: Mapping[str, Any] | None = None, facts: Any = None) -> None:
        """Register how the primitive ``task`` runs (``tool`` defaults to the task's name)."""
        self._operators[task] = Operator(task, tool or task, args if args is not None else {}, result, dict(result_attrs or {}), facts)

    def methods_for(self, task: str) -> list[Method]:
        return list(self._methods.get(task, ()))

    def operator_for(self, task: str) -> Operator | None:
        return self._operators.get(task)

    def is_primitive(self, task: str) -> bool:
        return task in self._operators

    def knows(self, task: str) -> bool:
        return task in self._operators or task in self._methods

    @classmethod
    def from_table(cls, doc: Mapping[str, Any]) -> "Domain":
        """A domain from a declarative method table (a dict as read from JSON or YAML).

        >>> Domain.from_table({"methods": [{"task": "t", "name": "m", "subtasks": [], "when": 1}]})
        Traceback (most recent call last):
        ...
        planners.htn.DomainError: methods[0]: unknown keys ['when']
        """
        if not isinstance(doc, Mapping):
            raise DomainError("a method table is an object with 'methods' and 'operators'")
        if doc.get("format", DOMAIN_FORMAT) != DOMAIN_FORMAT:
            raise DomainError(f"unknown method table format {doc.get('format')!r} (expected {DOMAIN_FORMAT!r})")
        unknown = sorted(set(doc) - {"format", "methods", "operators", "paths", "description"})
        if unknown:
            raise DomainError(f"unknown keys {unknown}")
        domain = cls()
        for i, entry in enumerate(doc.get("methods", [])):
            where = f"methods[{i}]"
            _check_keys(entry, {"task", "name", "subtasks"}, {"precondition", "unless", "ordered", "repeat", "description"}, where)
            subtasks = entry["subtasks"]
            if not isinstance(subtasks, list):
                raise DomainError(f"{where}: 'subtasks' must be a list of task specs")
            for j, spec in enumerate(subtasks):
                _check_keys(spec, {"task"}, _SPEC_KEYS - {"task"}, f"{where}.subtasks[{j}]")
            repeat = entry.get("repeat", 1)
            if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
                raise DomainError(f"{where}: 'repeat' must be a positive integer")
            domain.add_method(Method(entry["task"], entry["name"], tuple(subtasks), entry.get("precondition"),
                                     entry.get("unless"), bool(entry.get("ordered", True)), repeat))
        for i, entry in enumerate(doc.get("operators", [])):
            _check_keys(entry, {"task"}, {"tool", "args", "result", "result_attrs", "facts", "description"}, f"operators[{i}]")
            facts = entry.get("facts")
            if facts is not None:
                _check_keys(facts, {"content"}, {"each", "attrs", "entities", "kind"}, f"operators[{i}].facts")
            domain.operator(entry["task"], tool=entry.get("tool"), args=entry.get("args", {}), result=entry.get("result"),
                            result_attrs=entry.get("result_attrs"), facts=facts)
        for i, entry in enumerate(doc.get("paths", [])):
            _check_keys(entry, {"task"}, {"tags", "reuse", "min_score", "k", "description"}, f"paths[{i}]")
            domain.path(entry["task"], tags=entry.get("tags", ()), reuse=bool(entry.get("reuse", False)),
                        min_score=float(entry.get("min_score", 0.2)), k=int(entry.get("k", 5)))
        for task, methods in domain._methods.items():
            for method in methods:
                if isinstance(method.subtasks, tuple):
                    for spec in method.subtasks:
                        if not domain.knows(spec["task"]):
                            raise DomainError(f"method {method.name!r} of {task!r} uses {spec['task']!r}, which has no method or operator")
        return domain


def _check_keys(entry: Any, required: set[str], optional: set[str], where: str) -> None:
    if not isinstance(entry, Mapping):
        raise DomainError(f"{where}: expected an object")
    missing = sorted(required - set(entry))
    if missing:
        raise DomainError(f"{where}: missing {missing}")
    unknown = sorted(set(entry) - required - optional)
    if unknown:
        raise DomainError(f"{where}: unknown keys {unknown}")


def load_domain(path: str | pathlib.Path) -> Domain:
    """A domain from a method table file: ``.json``, or ``.yaml``/``.yml`` (needs PyYAML).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "greet.json")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"operators": [{"task": "say"}]}')
    >>> load_domain(path).is_primitive("say")
    True
    """
    path = pathlib.Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:  # pragma: no cover - depends on the environment
            raise DomainError("reading a YAML method table needs PyYAML (pip install pyyaml)") from None
        doc = yaml.safe_load(text)
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DomainError(f"{path}: not JSON: {exc}") from None
    return Domain.from_table(doc)


# -- the planner -----------------------------------------------------------------------------------


class _Ids:
    """Fresh, deterministic node ids for one step (never an id that exists or is going away)."""

    def __init__(self, reader: Any, avoid: Iterable[str] = ()):
        self.reader = reader
        self.used: set[str] = set(avoid)

    def fresh(self, base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-") or "n"
        candidate, n = base, 1
        while candidate in self.used or self.reader.exists(candidate):
            n += 1
            candidate = f"{base}-{n}"
        self.used.add(candidate)
        return candidate


class HTNPlanner:
    """Hierarchical task network planner over a :class:`Domain` (see the module documentation).

    The task observation names the root task: ``Observation.task(text, task=NAME, args={...},
    id=ROOT_ID, parent=GOAL_ID, constraints=[...], attrs={...})`` (``task`` defaults to
    ``root_task``; ``parent`` puts the root under an existing goal, e.g. a scenario). Each user
    constraint becomes a fact (``kind = 'user_constraint'``) under the root goal, so it stays in
    the plan for as long as the plan exists. ``name`` is the author of its commits.
    """

    def __init__(self, domain: Domain, *, root_task: str | None = None, name: str = "htn"):
        self.domain = domain
        self.root_task = root_task
        self.name = name
        self.root: str | None = None
        self._task: Observation | None = None

    # -- the step ------------------------------------------------------------------------------

    def step(self, view: MemoryView, observation: Observation) -> StepPlan:
        ops: list[dict[str, Any]] = []
        notes: list[str] = []
        calls = 0
        requests: list[dict[str, Any]] = []
        if observation.kind != "task" and self._task is not None and self.root is not None and not view.exists(self.root):
            observation = self._task  # the plan was never committed (its step failed): plan again
        if observation.kind == "task":
            self._task = observation
            task = observation.data.get("task", self.root_task)
            if not task or not self.domain.knows(task):
                return StepPlan.invalid("no-method", f"no method or operator for the task {task!r}")
            ids = _Ids(view)
            self.root = ids.fresh(observation.data.get("id") or slug(task))
            args = dict(observation.data.get("args") or {})
            root_attrs = {"content": observation.text, "task": task, "args": args, "status": "active", "pos": []}
            for key, value in (observation.data.get("attrs") or {}).items():
                root_attrs.setdefault(key, value)
            add = {"op": "add_node", "id": self.root, "type": "goal", **root_attrs}
            if observation.data.get("parent"):
                add["parent"] = observation.data["parent"]
            ops.append(add)
            try:
                decomposition, method = self._decompose(view, ids, self.root, task, args, [], {"id": self.root, **root_attrs},
                                                        tried=(), text=observation.text, notes=notes)
            except DomainError as err:
                return StepPlan.invalid("no-method", str(err))
            ops.extend(decomposition)
            notes.append(f"decomposed {task!r} with method {method!r}")
            # After the decomposition (its replace_branch empties the root first); repairs never
            # rewrite the root, so these stay for as long as the plan does.
            for i, constraint in enumerate(observation.data.get("constraints") or []):
                fact = {"content": constraint} if isinstance(constraint, str) else dict(constraint)
                fact_id = ids.fresh(fact.pop("id", None) or f"{self.root}-constraint-{i + 1}")
                ops.append({"op": "add_node", "id": fact_id, "type": "fact", "parent": self.root,
                            "kind": "user_constraint", "source": "user", **fact})
                notes.append(f"user constraint kept in memory as {fact_id} under {self.root}: {fact.get('content')}")
            calls += 1
            reader = view.preview(ops)
        else:
            if self.root is None:
                return StepPlan.invalid("no-task", "the HTN planner has no task yet (the first observation must be a task)")
            if observation.kind == "step-failed" and (observation.error or {}).get("category") in GUARD_REFUSALS:
                return self._give_up(view, [], notes, 0, self._working_root(view),
                                     f"the engine refused the rewrite ({observation.error['category']}): "
                                     f"{observation.error.get('message')}")
            if observation.kind == "tool" and observation.call is not None and observation.call.action:
                if observation.ok:
                    ops.extend(self._record_success(view, observation))
                else:
                    ops.extend(self._record_failure(view, observation))
                    action = observation.call.action
                    path = self._path_of(view, action)
                    if path is not None:
                        requests.append({"op": "record_outcome", "path": path, "outcome": "failure"})
                    return StepPlan(ops=ops, requests=requests, reason=f"record: {action} failed", calls=0,
                                    notes=(f"{action} failed: {observation.error.get('message')}",))
            reader = view.preview(ops) if ops else view
        return self._advance(reader, view, ops, notes, calls)

    # -- where the plan is ------------------------------------------------------------------------

    def _working_root(self, reader: Any) -> str:
        """The root goal, or the current version of it when it is a rewritten path."""
        node = reader.node(self.root) or {}
        head = node.get("head")
        return head if isinstance(head, str) and head and reader.exists(head) else self.root

    def _path_of(self, reader: Any, action_id: str) -> str | None:
        """The path goal (``kind = 'path'``) an action is a step of, if any."""
        parents = reader.nodes("#$a.parent.where(kind = 'path')", params={"a": action_id})
        return parents[0]["id"] if parents else None

    def _agenda(self, reader: Any, root: str) -> list[dict[str, Any]]:
        actions = reader.nodes(_AGENDA, params={"root": root}, label="actions of the plan")
        return sorted(actions, key=lambda n: tuple(n.get("pos") or ()))

    # -- choosing what comes next ---------------------------------------------------------------

    def _advance(self, reader: Any, view: MemoryView, ops: list, notes: list, calls: int) -> StepPlan:
        root = self._working_root(reader)
        agenda = self._agenda(reader, root)
        recorded = "record and " if ops and calls == 0 else ""
        failed = [a for a in agenda if a.get("status") == "failed" and not a.get("recovered")]
        if failed:
            error = failed[0].get("error")
            return self._repair(reader, view, ops, notes, calls, failed[0],
                                f"{failed[0]['id']} failed" + (f" ({error})" if error else ""))
        finished = reader.query(_FINISHED_GOALS, params={"root": root}, label="goals with every action done").ids
        if finished:
            ops.extend({"op": "update_node", "id": goal, "set": {"status": "done"}} for goal in finished)
            reader = view.preview(ops)  # a done goal lets the actions after it start
        pending = [a for a in agenda if a.get("status") == "pending"]
        if not pending:
            if any(a.get("status") == "active" for a in agenda):
                return StepPlan(ops=ops, reason=f"{recorded}wait", calls=calls, notes=notes)
            if root not in finished:
                ops.append({"op": "update_node", "id": root, "set": {"status": "done"}})
            paths = reader.nodes("#$root.descendants.where(kind = 'path', status != 'superseded')", params={"root": root})
            if (reader.node(root) or {}).get("kind") == "path":
                paths.insert(0, {"id": root})
            requests = [{"op": "record_outcome", "path": p["id"], "outcome": "success"} for p in paths]
            return StepPlan(ops=ops, requests=requests, reason=f"{recorded}finish: every action is done", done=True,
                            outcome="success", calls=calls, notes=notes)
        nxt = pending[0]
        if nxt.get("dirty"):
            marks = nxt.get("dirty_marks") or []
            why = marks[0].get("reason") if marks and isinstance(marks[0], Mapping) else None
            return self._repair(reader, view, ops, notes, calls, nxt, f"{nxt['id']} is {nxt['dirty']}" + (f" ({why})" if why else ""))
        ready = reader.frontier(root)
        if nxt["id"] not in ready:
            return self._repair(reader, view, ops, notes, calls, nxt, f"{nxt['id']} cannot start (a predecessor is not done)")
        operator = self.domain.operator_for(nxt.get("task"))
        if operator is None:
            return StepPlan.invalid("no-method", f"{nxt['id']}: no operator for the task {nxt.get('task')!r}", calls=calls)
        try:
            args = self._resolve_args(reader, nxt, operator)
        except _Unbound as err:
            ids = _Ids(reader)
            ops.extend(self._failure_ops(reader, ids, nxt["id"], "unbound-argument", str(err), operator.tool))
            return StepPlan(ops=ops, reason=f"{recorded}{nxt['id']} cannot start", calls=calls,
                            notes=notes + [f"{nxt['id']} cannot start: {err}"])
        ops.append({"op": "update_node", "id": nxt["id"], "set": {"status": "active"}})
        return StepPlan(ops=ops, reason=f"{recorded}start {nxt['id']}", tool=ToolCall(operator.tool, args, action=nxt["id"]),
                        calls=calls, notes=notes)

    def _resolve_args(self, reader: Any, action: Mapping[str, Any], operator: Operator) -> dict[str, Any]:
        task_args = dict(action.get("task_args") or {})
        spec = action.get("args") or {}
        if callable(operator.args):
            return dict(operator.args(TaskContext(reader, task_args, action, self.root)))
        resolved = {}
        for key, value in spec.items():
            resolved[key] = self._bind(reader, action, task_args, key, value) if _is_binding(value) else value
        return resolved

    def _bind(self, reader: Any, action: Mapping[str, Any], task_args: Mapping[str, Any], key: str, binding: Mapping) -> Any:
        expr = binding["query"]
        compiled = reader.compile(expr)
        params = {name: task_args.get(name) for name in compiled.params}
        result = reader.query(expr, focus=action["id"], params=params or None)
        if result.kind == "nodes" and binding.get("attrs"):
            return [{name: node.get(name) for name in binding["attrs"]} for node in result.nodes]
        if result.kind == "nodes":
            if not result.ids:
                if "default" in binding:
                    return binding["default"]
                raise _Unbound(f"argument {key!r}: {expr} found nothing")
            node = result.nodes[0]
            return node.get(binding.get("attr", "id"), node["id"]) if binding.get("attr") else node["id"]
        return result.value

    # -- recording ---------------------------------------------------------------------------------

    def _record_success(self, view: MemoryView, observation: Observation) -> list[dict[str, Any]]:
        action_id = observation.call.action
        action = view.node(action_id) or {}
        operator = self.domain.operator_for(action.get("task"))
        value = observation.value
        ids = _Ids(view)
        task_args = dict(action.get("task_args") or {})
        ctx = TaskContext(view, task_args, action, self.root)
        values = dict(task_args)
        if isinstance(value, Mapping):
            values.update(value)
        values.setdefault("value", value)
        if operator is not None and callable(operator.result):
            content = operator.result(ctx, value)
        elif operator is not None and operator.result:
            content = fill(str(operator.result), values)
        elif isinstance(value, Mapping) and "summary" in value:
            content = str(value["summary"])
        else:
            content = json.dumps(value, ensure_ascii=False, sort_keys=True)
        result_id = ids.fresh(f"{action_id}-result")
        attributes: dict[str, Any] = {"content": content}
        if isinstance(value, Mapping):
            attributes.update({k: v for k, v in value.items() if isinstance(v, _FLAT) and k not in _RESERVED})
        if operator is not None:
            attributes.update(fill(dict(operator.result_attrs), values))
        ops: list[dict[str, Any]] = [
            {"op": "update_node", "id": action_id, "set": {"status": "done"}},
            {"op": "add_node", "id": result_id, "type": "result", **attributes},
            {"op": "add_edge", "from": action_id, "to": result_id, "type": "produces"},
        ]
        for i, fact in enumerate(self._facts(ctx, operator, value)):
            fact = dict(fact)
            entities = fact.pop("entities", [])
            fact_id = ids.fresh(fact.pop("id", None) or f"{action_id}-fact-{i + 1}")
            ops.append({"op": "add_node", "id": fact_id, "type": "fact", "source": operator.tool if operator else "tool",
                        **{k: v for k, v in fact.items() if k not in _RESERVED or k in ("content", "kind")}})
            ops.append({"op": "add_edge", "from": fact_id, "to": result_id, "type": "derived_from"})
            ops.extend(self._entity_ops(view, ids, fact_id, entities))
        return ops

    def _facts(self, ctx: TaskContext, operator: Operator | None, value: Any) -> list[Mapping[str, Any]]:
        if operator is None or operator.facts is None:
            return []
        if callable(operator.facts):
            return list(operator.facts(ctx, value))
        spec = operator.facts
        items = [value]
        if spec.get("each"):
            items = list(value.get(spec["each"], [])) if isinstance(value, Mapping) else []
        facts = []
        for item in items:
            values = dict(ctx.args)
            if isinstance(item, Mapping):
                values.update(item)
            fact = {"content": fill(spec["content"], values)}
            if spec.get("kind"):
                fact["kind"] = spec["kind"]
            fact.update(fill(dict(spec.get("attrs") or {}), values))
            fact["entities"] = fill(list(spec.get("entities") or []), values)
            facts.append(fact)
        return facts

    def _record_failure(self, view: MemoryView, observation: Observation) -> list[dict[str, Any]]:
        action_id = observation.call.action
        error = observation.error or {}
        ids = _Ids(view)
        return self._failure_ops(view, ids, action_id, str(error.get("type")), str(error.get("message")), observation.call.name)

    def _failure_ops(self, reader: Any, ids: _Ids, action_id: str, kind: str, message: str, tool: str) -> list[dict[str, Any]]:
        fact_id = ids.fresh(f"{action_id}-failure")
        entities = reader.nodes("#$a.related_entities", params={"a": action_id})
        ops: list[dict[str, Any]] = [
            {"op": "update_node", "id": action_id, "set": {"status": "failed", "error": message, "error_type": kind}},
            {"op": "add_node", "id": fact_id, "type": "fact", "content": message, "kind": "failure",
             "error_type": kind, "source": tool, "action": action_id},
            {"op": "add_edge", "from": fact_id, "to": action_id, "type": "causes"},
        ]
        for entity in entities:
            ops.append({"op": "add_edge", "from": fact_id, "to": entity["id"], "type": "related_to"})
        return ops

    def _entity_ops(self, reader: Any, ids: _Ids, node_id: str, names: Iterable[str]) -> list[dict[str, Any]]:
        ops = []
        for name in names:
            entity_id = "e-" + slug(str(name))
            if entity_id not in ids.used and not reader.exists(entity_id):
                ops.append({"op": "add_node", "id": entity_id, "type": "entity", "content": str(name)})
                ids.used.add(entity_id)
            ops.append({"op": "add_edge", "from": node_id, "to": entity_id, "type": "related_to"})
        return ops

    # -- decomposing -------------------------------------------------------------------------------

    def _applicable(self, reader: Any, method: Method, ctx: TaskContext) -> bool:
        return _holds(reader, method.precondition, ctx, True) and not _holds(reader, method.unless, ctx, False)

    def _choose(self, reader: Any, task: str, ctx: TaskContext, tried: Sequence[str]) -> Method | None:
        for method in self.domain.methods_for(task):
            if list(tried).count(method.name) < method.repeat and self._applicable(reader, method, ctx):
                return method
        return None

    def _reuse(self, view: Any, task: str, text: str, notes: list[str]) -> Method | None:
        """A method made of the steps of a stored path that fits ``text`` (path tasks with
        ``reuse``): the best located match that is current, did not fail and needs no human."""
        spec = self.domain.path_spec(task)
        if spec is None or not spec.reuse or not isinstance(view, MemoryView):  # a preview cannot locate
            return None
        found = view.locate(text, tags=list(spec.tags) or None, k=spec.k)
        for match, path_id in ((m, p) for m in found.matches for p in dict.fromkeys((m.path, *m.supporting))):
            # a match stands for every recalled path with its steps: take the best usable one
            if match.score < spec.min_score:
                continue
            path = view.path(path_id)
            if path.get("status") in ("superseded", "failed") or not path.get("current", True):
                continue
            if path.get("result") == "failure" or path.get("needs_human"):
                continue
            if (path.get("attributes") or {}).get("task", task) != task:
                continue  # a path of another task: its steps do not do this one
            steps = path.get("steps") or []
            specs = []
            for step in steps:
                raw = step.get("spec") if isinstance(step.get("spec"), Mapping) else {"task": step.get("task") or step.get("name")}
                if not self.domain.is_primitive(raw.get("task")):
                    break
                specs.append(dict(raw))
            else:
                parts = ", ".join(f"{k} {v:.2f}" for k, v in match.breakdown.items() if k in ("text", "tags", "structure", "reward", "version"))
                also = [p for p in match.supporting if p != path_id]
                notes.append(f"located path {path_id} (score {match.score:.2f}: {parts})"
                             + (f"; same steps as {', '.join(also)}" if also else "")
                             + f"; reusing its steps: {' > '.join(match.steps)}")
                return Method(task, "reuse", tuple(specs), reused_from=path_id)
        notes.append("no stored path fits: decomposing with the domain's methods"
                     + (f" (best: {found.matches[0].path}, score {found.matches[0].score:.2f})" if found.matches else ""))
        return None

    def _decompose(self, reader: Any, ids: _Ids, node_id: str, task: str, args: Mapping[str, Any], pos: list[int],
                   node: Mapping[str, Any] | None, tried: Sequence[str], suffix: str = "",
                   carried: Mapping[str, tuple[str, list[str]]] | None = None, text: str = "",
                   notes: list[str] | None = None) -> tuple[list[dict[str, Any]], str]:
        """Ops that put the decomposition of ``node_id`` below it (one replace_branch)."""
        ctx = TaskContext(reader, dict(args), node, self.root)
        method = self._reuse(reader, task, text, notes if notes is not None else []) if not tried else None
        method = method or self._choose(reader, task, ctx, tried)
        if method is None:
            raise DomainError(f"no applicable method for {task!r}" + (f" (tried {', '.join(tried)})" if tried else ""))
        prelude: list[dict[str, Any]] = []
        edges: list[dict[str, Any]] = []
        path = self.domain.path_spec(task)
        children = self._expand(reader, ids, method, ctx, pos, suffix, prelude, edges, carried or {},
                                path_goal=node_id if path is not None else None)
        changes: dict[str, Any] = {"method": method.name, "tried": list(tried) + [method.name]}
        if path is not None:
            changes.update(kind="path", result="pending", tags=list(path.tags))
        if method.reused_from:
            changes["reused_from"] = method.reused_from
        op = {"op": "replace_branch", "id": node_id, "with": children, "set": changes}
        return prelude + [op] + edges, method.name

    def _expand(self, reader: Any, ids: _Ids, method: Method, ctx: TaskContext, pos: list[int], suffix: str,
                prelude: list, edges: list, carried: Mapping[str, tuple[str, list[str]]],
                path_goal: str | None = None) -> list[dict[str, Any]]:
        specs = method.subtasks(ctx) if callable(method.subtasks) else method.subtasks
        plan_nodes = []
        previous = None
        for i, raw in enumerate(specs):
            spec = fill(dict(raw), ctx.args)
            task = spec["task"]
            primitive = self.domain.is_primitive(task)
            # arguments flow down to actions: the parent's, then the subtask's own
            args = {**ctx.args, **dict(spec.get("args") or {})} if primitive else dict(spec.get("args") or {})
            if path_goal is not None:
                if not primitive:
                    raise DomainError(f"{method.task!r} is kept as a path: its method {method.name!r} may only list "
                                      f"actions, not {task!r}")
                node_id = f"{path_goal}/{i}"
                ids.used.add(node_id)
            else:
                node_id = ids.fresh((spec.get("id") or task) + suffix)
            child_pos = list(pos) + [i]
            attributes = dict(spec.get("attrs") or {})
            attributes.update({"content": spec.get("content") or _describe(task, args), "task": task, "pos": child_pos})
            entity_edges = []
            for name in spec.get("entities") or []:
                entity_id = "e-" + slug(str(name))
                if entity_id not in ids.used and not reader.exists(entity_id):
                    prelude.append({"op": "add_node", "id": entity_id, "type": "entity", "content": str(name)})
                    ids.used.add(entity_id)
                entity_edges.append({"to": entity_id, "type": "related_to"})
            if primitive:
                operator = self.domain.operator_for(task)
                key = _task_key(task, args)
                plan = {"id": node_id, "type": "action", **attributes, "tool": operator.tool, "task_args": args,
                        "args": {} if callable(operator.args) else fill(dict(operator.args), args),
                        "spec": _json_copy(dict(raw)), "status": "pending", "edges": entity_edges}
                if path_goal is not None:
                    plan["name"] = task
                if key in carried:
                    old_id, results = carried[key]
                    plan["status"] = "done"
                    plan["carried_from"] = old_id
                    plan["edges"] = entity_edges + [{"to": r, "type": "produces"} for r in results]
            else:
                sub_ctx = TaskContext(reader, args, None, self.root)
                sub = self._choose(reader, task, sub_ctx, ())
                if sub is None:
                    raise DomainError(f"no applicable method for {task!r}")
                sub_path = node_id if self.domain.path_spec(task) is not None else None
                grandchildren = self._expand(reader, ids, sub, sub_ctx, child_pos, suffix, prelude, edges, carried,
                                             path_goal=sub_path)
                plan = {"id": node_id, "type": "goal", **attributes, "args": args, "method": sub.name, "tried": [sub.name],
                        "status": "active", "children": grandchildren, "edges": entity_edges}
                if sub_path is not None:
                    plan.update(kind="path", result="pending", tags=list(self.domain.path_spec(task).tags))
            if method.ordered and previous is not None and path_goal is None:
                edges.append({"op": "add_edge", "from": previous, "to": node_id, "type": "before"})
            previous = node_id
            plan_nodes.append(plan)
        if path_goal is not None and method.ordered:
            edges.extend({"op": "add_edge", "from": f"{path_goal}/{i}", "to": f"{path_goal}/{i + 1}", "type": "before"}
                         for i in range(len(plan_nodes) - 1))
        return plan_nodes

    # -- repairing ---------------------------------------------------------------------------------

    def _repair(self, reader: Any, view: MemoryView, ops: list, notes: list, calls: int, at: Mapping[str, Any], why: str) -> StepPlan:
        """Re-enter the plan at ``at``: rewrite the nearest branch above it that has another method
        (a path goal gets a new version through ``rewrite_path``; other goals ``replace_branch``)."""
        goals = reader.nodes("#$at.ancestors.where(type = 'goal')", params={"at": at["id"]})
        working = self._working_root(reader)
        # Nearest first. The root is rewritten only when it is a path (a new version, the old
        # one kept): otherwise a repair rewrites a branch, never the whole plan.
        goals = [g for g in goals if g["id"] != working or g.get("kind") == "path"]
        goals.sort(key=lambda g: len(g.get("pos") or ()), reverse=True)
        for goal in goals:
            lineage = goal.get("root") or goal["id"] if goal.get("kind") == "path" else goal["id"]
            owner = goal if lineage == goal["id"] else (reader.node(lineage) or goal)
            tried = list(owner.get("tried") or ([goal["method"]] if goal.get("method") else []))
            ctx = TaskContext(reader, dict(goal.get("args") or {}), goal, self.root)
            method = self._choose(reader, goal.get("task"), ctx, tried)
            if goal.get("kind") == "path":
                # an alternative that would run exactly the steps that just failed is no
                # alternative (a retry is: its method may repeat)
                current = [_task_key(a.get("task"), a.get("task_args") or {})
                           for a in reader.nodes("#$g.actions", params={"g": goal["id"]})]
                while method is not None and method.repeat == 1 and self._keys(method, ctx) == current:
                    tried = tried + [method.name]
                    method = self._choose(reader, goal.get("task"), ctx, tried)
                if method is not None:
                    return self._rewrite_path(reader, ops, notes, calls, goal, lineage, tried, method, at, why)
            if method is None:
                continue
            branch = reader.nodes("#$g.descendants", params={"g": goal["id"]})
            ids = _Ids(reader, avoid=[n["id"] for n in branch])
            carried, dropped = _completed_work(reader, branch)
            revision = int(goal.get("revision") or 1) + 1
            decomposition, method_name = self._decompose(reader, ids, goal["id"], goal["task"], goal.get("args") or {},
                                                         list(goal.get("pos") or []), goal, tried, suffix=f"-r{revision}",
                                                         carried=carried)
            kept = {r for _, results in carried.values() for r in results}
            for op in decomposition:
                if op["op"] == "replace_branch":
                    op["set"].update({"revision": revision, "rewritten_because": why})
            repair_ops = [{"op": "delete_node", "id": r} for r in dropped if r not in kept]
            reason = f"repair: re-enter at {at['id']}, rewrite branch {goal['id']} with method {method_name!r}"
            return StepPlan(ops=ops + repair_ops + decomposition, reason=reason, calls=calls + 1,
                            notes=notes + [f"{why}; re-entered the plan at {at['id']}",
                                           f"rewrote only the branch {goal['id']} ({goal.get('task')}): method {method_name!r} "
                                           f"replaces {', '.join(tried)}"])
        return self._give_up(reader, ops, notes, calls, working, f"{why}; no goal above {at['id']} has an untried method")

    def _keys(self, method: Method, ctx: TaskContext) -> list[str]:
        """What a flat method would run: task and arguments of each step."""
        specs = method.subtasks(ctx) if callable(method.subtasks) else method.subtasks
        keys = []
        for raw in specs:
            spec = fill(dict(raw), ctx.args)
            keys.append(_task_key(spec["task"], {**ctx.args, **dict(spec.get("args") or {})}))
        return keys

    def _rewrite_path(self, reader: Any, ops: list, notes: list, calls: int, goal: Mapping[str, Any], lineage: str,
                      tried: list[str], method: Method, at: Mapping[str, Any], why: str) -> StepPlan:
        """A new version of the path goal with the steps of ``method`` (``rewrite_path``)."""
        ids = _Ids(reader)
        ctx = TaskContext(reader, dict(goal.get("args") or {}), goal, self.root)
        children = self._expand(reader, ids, method, ctx, list(goal.get("pos") or []), "", [], [], {}, path_goal=goal["id"])
        steps = [{k: v for k, v in child.items() if k not in ("id", "type", "edges", "status")} for child in children]
        reason = f"{why}; next: method {method.name!r}"
        ops = ops + [{"op": "update_node", "id": lineage, "set": {"tried": tried + [method.name], "method": method.name}}]
        request = {"op": "rewrite_path", "path": goal["id"], "steps": steps, "reason": reason}
        return StepPlan(ops=ops, requests=[request], reason=f"repair: re-enter at {at['id']}, rewrite path {goal['id']}",
                        calls=calls + 1,
                        notes=notes + [f"{why}; re-entered the plan at {at['id']}",
                                       f"rewrite the path {goal['id']} as a new version with method {method.name!r} "
                                       f"(tried: {', '.join(tried)}): {' > '.join(s['name'] for s in steps)}"])

    def _give_up(self, reader: Any, ops: list, notes: list, calls: int, root: str, why: str) -> StepPlan:
        ops = ops + [{"op": "update_node", "id": root, "set": {"status": "blocked", "needs": "human", "blocked_because": why}}]
        return StepPlan(ops=ops, reason=f"give up: {why}", done=True, outcome="failure", calls=calls + 1,
                        notes=notes + [f"{why}: the task needs a person"])


GUARD_REFUSALS = ("rewrite-cap", "version-cap", "needs-human")
_AGENDA = "#$root.descendants.where(type = 'action', not exists(ancestors.where(status = 'superseded')))"
_FINISHED_GOALS = (
    "#$root.descendants.where(type = 'goal', status = 'active', exists(descendants.where(type = 'action')), "
    "not exists(descendants.where(type = 'action', status != 'done')))"
)


class _Unbound(Exception):
    pass


def _task_key(task: str, args: Mapping[str, Any]) -> str:
    return task + " " + json.dumps(_json_copy(args), sort_keys=True, ensure_ascii=False)


def _completed_work(reader: Any, branch: list[dict[str, Any]]) -> tuple[dict[str, tuple[str, list[str]]], list[str]]:
    """Done actions of a branch by task key (with their results), and every such result."""
    carried: dict[str, tuple[str, list[str]]] = {}
    results: list[str] = []
    for node in branch:
        if node["type"] == "action" and node.get("status") == "done":
            mine = reader.query("#$a.results", params={"a": node["id"]}).ids
            results.extend(mine)
            carried.setdefault(_task_key(node.get("task"), node.get("task_args") or {}), (node["id"], mine))
    return carried, results


def _describe(task: str, args: Mapping[str, Any]) -> str:
    if not args:
        return task.replace("_", " ")
    inner = ", ".join(f"{k}={v}" for k, v in args.items() if not isinstance(v, (Mapping, list)))
    return f"{task.replace('_', ' ')} ({inner})"


def _holds(reader: Any, condition: Condition, ctx: TaskContext, default: bool) -> bool:
    if condition is None:
        return default
    if callable(condition):
        return bool(condition(ctx))
    compiled = reader.compile(condition)
    params = {name: ctx.args.get(name) for name in compiled.params}
    focus = ctx.node["id"] if ctx.node and compiled.uses_focus and reader.exists(ctx.node["id"]) else None
    try:
        result = reader.query(condition, params=params or None, focus=focus)
    except HGMError:
        return False
    if result.kind in ("nodes", "paths"):
        return bool(result.value)
    if result.kind == "count":
        return result.value > 0
    return bool(result.value)
