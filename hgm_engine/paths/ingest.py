"""Ingest: trajectories (JSON Lines, formats.md) checked, planned and stored as paths.

A trajectory is checked on its own first (its shape, its id, its steps), then against the
graph inside the commit (an id that exists, a scenario that is not a scenario goal, a
``replaces`` that names no path), then by the schema and constraints. All valid
trajectories go into **one** transaction; with ``skip_invalid`` the others are listed
in the :class:`IngestReport`, otherwise nothing is stored and a ``PathError`` lists every
problem with its line. :func:`ingest_taskplan` reads a GNN4TaskPlan data set folder.

>>> from hgm_engine import Memory
>>> docs, lines = read_jsonl('{"id": "p", "goal": "g", "steps": ["a", "b"]}\\n')
>>> report = ingest_trajectories(Memory(), docs, lines=lines)
>>> report.ingested, report.t
(['p'], 1)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from hgm_engine.errors import LocalizationError, PathError, Problem
from hgm_engine.model import parse_json, text_problem, value_problem
from hgm_engine.paths.edits import STEP_RENAMED
from hgm_engine.paths.localize import PATH_RESULTS, PATH_STATUSES, PathRecord, request_to_trajectory
from hgm_engine.paths.records import MARKS, PATH_KIND, SCENARIO_KIND, is_path
from hgm_engine.paths.versions import MAX_EDGES, MAX_STEPS
from hgm_engine.paths.versions import shown as _show
from hgm_engine.txn import AddEdge, AddNode, OpContext, apply_op

__all__ = [
    "IngestProblem",
    "IngestReport",
    "InvalidLine",
    "read_jsonl",
    "ingest_trajectories",
    "ingest_taskplan",
]

_VERSION_ID = re.compile(r"@v\d+$")
_TRAJECTORY_KEYS = frozenset(
    {"id", "goal", "steps", "edges", "tags", "result", "reward", "status", "version", "replaces", "scenario",
     "lineage", "template"}
)
_RENAMED = {"type": "trajectory_type"}              # node keys that cannot be attributes
_FORBIDDEN = {"kind": "'kind' is set by hgm ('path')", "content": "the goal text is 'goal', not 'content'",
              "dirty": "'dirty' holds staleness marks set by rules", "dirty_marks": "'dirty_marks' is set by rules"}


@attrs.frozen
class IngestProblem:
    """One input line that cannot be ingested: its 1-based line number, its id when known."""

    line: int | None
    id: str | None
    category: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "id": self.id, "category": self.category, "message": self.message}

    def to_problem(self) -> Problem:
        where = f"line {self.line}" if self.line is not None else self.id
        text = f"path {self.id!r}: {self.message}" if self.id is not None else self.message
        return Problem(self.category, text, where=where)


@attrs.frozen
class IngestReport:
    """What an ingest did: the path ids it stored, the ``t`` of its transaction (None when it
    stored nothing), and the lines it left out, each with its problem.

    >>> IngestReport(("a",), 3, ()).to_json()
    {'ingested': ['a'], 'count': 1, 't': 3, 'ts': [3], 'problems': [], 'skipped': []}
    """

    ingested: list[str] = attrs.field(converter=list)
    t: int | None = None
    problems: list[IngestProblem] = attrs.field(converter=list, factory=list)

    @property
    def committed(self) -> bool:
        return self.t is not None

    @property
    def ts(self) -> list[int]:
        """The ``t`` of each transaction (an ingest is one transaction)."""
        return [] if self.t is None else [self.t]

    @property
    def skipped(self) -> list[int]:
        return sorted({p.line for p in self.problems if p.line is not None})

    def to_json(self) -> dict[str, Any]:
        return {
            "ingested": list(self.ingested),
            "count": len(self.ingested),
            "t": self.t,
            "ts": self.ts,
            "problems": [p.to_json() for p in self.problems],
            "skipped": self.skipped,
        }


@attrs.frozen
class InvalidLine:
    """An input line that is not a trajectory: not JSON (what :func:`read_jsonl` puts in its
    place) or, with another ``category``, a task-plan request that cannot be read."""

    message: str
    column: int | None = None
    category: str = "invalid-json"


def read_jsonl(text: str) -> tuple[list[Any], list[int]]:
    """The documents of a JSON Lines text and their 1-based line numbers; blank lines are
    skipped and a line that is not JSON becomes an :class:`InvalidLine`.

    >>> docs, lines = read_jsonl('{"id": "a", "steps": ["x"]}\\n\\n{oops\\n')
    >>> lines, type(docs[1]).__name__
    ([1, 3], 'InvalidLine')
    """
    docs: list[Any] = []
    numbers: list[int] = []
    if text.startswith("\ufeff"):  # a byte-order mark is not part of the first line
        text = text[1:]
    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        try:
            docs.append(parse_json(line))
        except json.JSONDecodeError as exc:
            docs.append(InvalidLine(f"not JSON: {exc.msg} (column {exc.colno})", exc.colno))
        numbers.append(number)
    return docs, numbers


# -- one trajectory on its own -------------------------------------------------------------------


@attrs.define
class _Planned:
    """A trajectory checked on its own: the nodes and edges it will add."""

    line: int
    id: str
    goal_attrs: dict[str, Any]
    steps: list[dict[str, Any]]
    edges: list[tuple[int, int]]
    scenario: str | None
    replaces: str | None


def _step_attrs(step: Any, default_status: str) -> dict[str, Any]:
    if isinstance(step, str):
        doc: dict[str, Any] = {"name": step}
    else:
        doc = {STEP_RENAMED.get(k, k): v for k, v in step.items() if k not in MARKS}
    doc.setdefault("status", default_status)
    return doc


def _finite(number: int | float) -> bool:
    """Whether ``number`` is finite as a float (an integer too large for one is not)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _steps_problem(steps: Any, max_steps: int) -> tuple[str, str] | None:
    """What is wrong with a trajectory's ``steps`` (message, category), or None."""
    if not isinstance(steps, list):
        return "a trajectory needs a 'steps' list", "bad-trajectory"
    if not steps:
        return "a path needs at least one step", "bad-trajectory"
    if len(steps) > max_steps:
        return (f"{len(steps)} steps; a path holds at most {max_steps} (max_steps={max_steps}, "
                "PathGuards.max_steps)", "limit-exceeded")
    for i, step in enumerate(steps):
        if isinstance(step, str):
            if not step:
                return f"steps[{i}]: a step's name must not be empty", "bad-trajectory"
        elif isinstance(step, Mapping):
            name = step.get("name")
            if not isinstance(name, str) or not name:
                return f"steps[{i}]: a step needs a non-empty string 'name', not {_show(name)}", "bad-trajectory"
            if any(k in step for k in MARKS):
                return f"steps[{i}]: 'dirty' and 'dirty_marks' are staleness marks set by rules", "bad-trajectory"
        else:
            return (f"steps[{i}]: a step is a name or an object with a 'name', not {type(step).__name__}",
                    "bad-trajectory")
    return None


def _edges_problem(edges: Any, n: int, max_edges: int) -> tuple[str, str] | None:
    """What is wrong with a trajectory's ``edges`` (a list of distinct ``[i, j]`` pairs of
    two different step indices; message, category), or None; ``null`` or absent means
    consecutive pairs."""
    if edges is None:
        return None
    if not isinstance(edges, list):
        return f"'edges' must be a list of [i, j] pairs of step indices, not {type(edges).__name__}", "bad-trajectory"
    if len(edges) > max_edges:
        return (f"{len(edges)} edges; a path holds at most {max_edges} (max_edges={max_edges}, "
                "PathGuards.max_edges)", "limit-exceeded")
    problem = _edge_list_problem(edges, n)
    return None if problem is None else (problem, "bad-trajectory")


def _edge_list_problem(edges: list, n: int) -> str | None:
    """The first malformed, out-of-range, looping or repeated edge of ``edges``, or None."""
    seen: set[tuple[int, int]] = set()
    for k, edge in enumerate(edges):
        if not isinstance(edge, list) or len(edge) != 2 or not all(_is_index(i) for i in edge):
            return f"edges[{k}]: an edge is a pair [i, j] of step indices (integers), not {_show(edge)}"
        i, j = edge
        if not (0 <= i < n and 0 <= j < n):
            return f"edges[{k}]: {edge} does not join two of the {n} steps (indices 0..{n - 1})"
        if i == j:
            return f"edges[{k}]: {edge} joins step {i} to itself"
        if (i, j) in seen:
            return f"edges[{k}]: {edge} is given twice"
        seen.add((i, j))
    return None


def _fields_problem(doc: Mapping[str, Any]) -> str | None:
    """What is wrong with a trajectory's optional fields (types, empty strings), or None."""
    goal = doc.get("goal", "")
    if not isinstance(goal, str):
        return f"'goal' must be a string, not {type(goal).__name__}"
    tags = doc.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags)):
        return "'tags' must be a list of non-empty strings"
    result = doc.get("result")
    if result is not None and (not isinstance(result, str) or result not in PATH_RESULTS):
        return f"'result' must be one of {', '.join(PATH_RESULTS)}, not {_show(result)}"
    status = doc.get("status", "active")
    if not isinstance(status, str) or status not in PATH_STATUSES:
        return f"'status' must be one of {', '.join(PATH_STATUSES)}, not {_show(status)}"
    reward = doc.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))
                               or not _finite(reward)):
        return f"'reward' must be a finite number, not {_show(reward)}"
    version = doc.get("version", 1)
    if not _is_index(version) or version < 1:
        return "'version' must be a positive integer"
    for key in ("scenario", "replaces"):
        value = doc.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            return f"'{key}' must be a non-empty string" + (" (a path id)" if key == "replaces" else "")
    lineage = doc.get("lineage")
    if lineage is not None and (not isinstance(lineage, list) or not all(isinstance(i, str) and i for i in lineage)):
        return "'lineage' must be a list of path ids (non-empty strings)"
    template = doc.get("template")
    if template is not None and not isinstance(template, bool):
        return f"'template' must be true or false, not {_show(template)}"
    return None


def _plan(doc: Any, line: int, default_scenario: str | None, max_steps: int = MAX_STEPS,
          max_edges: int = MAX_EDGES) -> _Planned | IngestProblem:
    """A trajectory checked on its own (no graph): planned nodes, or the line's problem."""
    if isinstance(doc, InvalidLine):
        return IngestProblem(line, None, doc.category, doc.message)
    if not isinstance(doc, Mapping):
        return IngestProblem(line, None, "bad-trajectory", f"a trajectory is a JSON object, not {type(doc).__name__}")
    # The engine's value rules (model.value_problem); a step's attribute sits three levels down.
    found = value_problem(doc, None, outer=3)
    if found is not None:
        raw = doc.get("id")
        named = raw if isinstance(raw, str) and text_problem(raw, None) is None else None
        return IngestProblem(line, named, found.category, f"{found.where}: {found.message}" if found.where else found.message)
    raw_id = doc.get("id")
    if raw_id is None:
        canonical = json.dumps(doc, sort_keys=True, ensure_ascii=False, default=str)
        path_id = "path-" + hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:12]
    elif not isinstance(raw_id, str) or not raw_id:
        return IngestProblem(line, None, "bad-trajectory", f"'id' must be a non-empty string, not {_show(raw_id)}")
    else:
        path_id = raw_id

    def bad(message: str, category: str = "bad-trajectory") -> IngestProblem:
        return IngestProblem(line, path_id, category, message)

    if _VERSION_ID.search(path_id):
        return bad("ids ending in '@v<n>' name rewritten versions; choose another id")
    steps_problem = _steps_problem(doc.get("steps"), max_steps)
    if steps_problem is not None:
        return bad(*steps_problem)
    edges_problem = _edges_problem(doc.get("edges"), len(doc["steps"]), max_edges)
    if edges_problem is not None:
        return bad(*edges_problem)
    problem = _fields_problem(doc)
    if problem is not None:
        return bad(problem)
    goal = doc.get("goal", "")
    tags = doc.get("tags")
    for key, message in _FORBIDDEN.items():
        if key in doc:
            return bad(message)
    try:
        record = PathRecord.from_trajectory({**doc, "id": path_id, "goal": goal})
    except LocalizationError as err:
        return bad(err.message)
    version = doc.get("version", 1)
    scenario = doc.get("scenario", default_scenario)
    if scenario is not None and (not isinstance(scenario, str) or not scenario):
        return bad("'scenario' must be a non-empty string")
    replaces = doc.get("replaces")
    lineage = doc.get("lineage", [path_id])
    attributes: dict[str, Any] = {
        _RENAMED.get(k, k): v for k, v in doc.items() if k not in _TRAJECTORY_KEYS
    }
    attributes.update(content=goal, kind=PATH_KIND, version=version, lineage=lineage)
    status = record.status
    attributes["status"] = "active" if status == "template" else status
    if status == "template" or doc.get("template") is True:
        attributes["template"] = True
    if tags:
        attributes["tags"] = list(dict.fromkeys(tags))
    if record.result is not None:
        attributes["result"] = record.result
    if record.reward is not None:
        attributes["reward"] = doc["reward"]
    if scenario is not None:
        attributes["scenario"] = scenario
    default_status = "pending" if record.result == "pending" else "done"
    steps = [_step_attrs(step, default_status) for step in doc["steps"]]
    return _Planned(line, path_id, attributes, steps, list(record.edges), scenario, replaces)


# -- into the graph ------------------------------------------------------------------------------


def ingest_trajectories(memory: Any, trajectories: Iterable[Any], *, skip_invalid: bool = False,
                        author: str | None = None, scenario: str | None = None,
                        lines: Sequence[int] | None = None, reason: str | None = None,
                        max_steps: int = MAX_STEPS, max_edges: int = MAX_EDGES,
                        progress: Callable[[str, int, int | None], None] | None = None) -> IngestReport:
    """Store trajectories (formats.md) as paths of ``memory`` in one transaction; see
    ``Memory.ingest``. A trajectory with more than ``max_steps`` steps or ``max_edges``
    edges is refused (``limit-exceeded``; ``PathMemory.ingest`` passes its ``PathGuards``).
    ``progress(phase, done, total)``, when given, hears of each trajectory checked and added,
    then of the commit (constraints, the store and the path index; ``total`` None).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> ingest_trajectories(m, [{"id": "p", "goal": "g", "steps": ["a"]}, {"id": "q"}], skip_invalid=True).to_json()["problems"]
    [{'line': 2, 'id': 'q', 'category': 'bad-trajectory', 'message': "a trajectory needs a 'steps' list"}]
    """
    items = list(trajectories)
    numbers = list(lines) if lines is not None else list(range(1, len(items) + 1))
    if len(numbers) != len(items):
        raise ValueError("lines must give one line number per trajectory")
    problems: list[IngestProblem] = []
    plans: list[_Planned] = []
    for count, (doc, line) in enumerate(zip(items, numbers), 1):
        planned = _plan(doc, line, scenario, max_steps, max_edges)
        (problems if isinstance(planned, IngestProblem) else plans).append(planned)
        if progress is not None:
            progress("checking trajectories", count, len(items))
    if problems and not skip_invalid:
        raise _ingest_error(problems)
    excluded: set[int] = set()
    while True:
        todo = [p for p in plans if p.line not in excluded]
        if not todo:
            return IngestReport((), None, tuple(sorted(problems, key=_line_key)))
        found: list[IngestProblem] = []
        owner: dict[str, int] = {}
        build = _builder(todo, found, owner, skip_invalid, progress)
        try:
            report = memory.commit_built(
                build, author=author, reason=reason or f"ingest {len(todo)} trajectories", kind="ingest"
            )
        except _NothingToIngest:
            problems.extend(found)
            return IngestReport((), None, tuple(sorted(problems, key=_line_key)))
        problems.extend(found)
        excluded.update(p.line for p in found)
        if report.committed:
            ingested = tuple(p.id for p in todo if p.line not in excluded)
            return IngestReport(ingested, report.t, tuple(sorted(problems, key=_line_key)))
        blamed: dict[int, list[str]] = {}
        general = []
        for violation in report.violations:
            line = owner.get(violation.node) if violation.node is not None else None
            text = f"{violation.constraint}: {violation.message}"
            if line is None:
                general.append(text)
            else:
                blamed.setdefault(line, []).append(text)
        by_line = {p.line: p for p in todo}
        for line, texts in blamed.items():
            problems.append(IngestProblem(line, by_line[line].id, "constraint-violation", "; ".join(texts)))
        if general:
            problems.extend(IngestProblem(None, None, "constraint-violation", t) for t in general)
        if not skip_invalid or general or not blamed:
            raise _ingest_error(problems)
        excluded.update(blamed)


def _ingest_error(problems: list[IngestProblem]) -> PathError:
    ordered = sorted(problems, key=_line_key)
    err = PathError([p.to_problem() for p in ordered])
    err.report = IngestReport((), None, tuple(ordered))
    return err


def _builder(plans: list[_Planned], found: list[IngestProblem], owner: dict[str, int],
             skip_invalid: bool, progress: Callable[[str, int, int | None], None] | None = None) -> Callable:
    def build(overlay, ctx: OpContext) -> list[str]:
        found.clear()
        owner.clear()
        created: list[str] = []
        scenarios_made: set[str] = set()
        for count, plan in enumerate(plans, 1):
            if progress is not None:
                progress("adding paths", count, len(plans))
            problem = _graph_problem(overlay, plan, scenarios_made)
            if problem is not None:
                found.append(problem)
                continue
            if plan.scenario is not None and overlay.node(plan.scenario) is None:
                attributes = {"kind": SCENARIO_KIND, "content": plan.scenario, "status": "active"}
                apply_op(overlay, AddNode(plan.scenario, "goal", attributes), ctx, f"line {plan.line}")
                scenarios_made.add(plan.scenario)
                owner.setdefault(plan.scenario, plan.line)
            where = f"line {plan.line}"
            created.extend(apply_op(overlay, AddNode(plan.id, "goal", plan.goal_attrs, plan.scenario), ctx, where))
            owner[plan.id] = plan.line
            for i, step in enumerate(plan.steps):
                step_id = f"{plan.id}/{i}"
                apply_op(overlay, AddNode(step_id, "action", step, plan.id, i), ctx, where)
                owner[step_id] = plan.line
            for i, j in plan.edges:
                apply_op(overlay, AddEdge(f"{plan.id}/{i}", f"{plan.id}/{j}", "before", {}), ctx, where)
            if plan.replaces is not None:
                apply_op(overlay, AddEdge(plan.id, plan.replaces, "replaces", {}), ctx, where)
        if found and not skip_invalid:
            raise _ingest_error(found)
        if not created:
            raise _NothingToIngest()
        if progress is not None:
            progress("checking constraints, writing and indexing", 0, None)
        return created

    return build


def _graph_problem(overlay, plan: _Planned, scenarios_made: set[str]) -> IngestProblem | None:
    ids = [plan.id] + [f"{plan.id}/{i}" for i in range(len(plan.steps))]
    for node_id in ids:
        if node_id in overlay:
            what = "path" if node_id == plan.id else "node"
            return IngestProblem(plan.line, plan.id, "duplicate-id", f"a {what} {node_id!r} already exists")
    if plan.scenario is not None and plan.scenario not in scenarios_made:
        node = overlay.node(plan.scenario)
        if node is not None and (node.type != "goal" or is_path(node)):
            what = "a path" if is_path(node) else f"a {node.type}"
            return IngestProblem(plan.line, plan.id, "bad-scenario",
                                 f"scenario {plan.scenario!r} is {what}, not a scenario goal")
    if plan.replaces is not None and not is_path(overlay.node(plan.replaces)):
        return IngestProblem(plan.line, plan.id, "unknown-node", f"'replaces' names no path {plan.replaces!r}")
    return None


def ingest_taskplan(memory: Any, directory: str | os.PathLike, *, ids: Iterable[str] | str | None = None,
                    skip_invalid: bool = False, author: str | None = None, scenario: str | None = None,
                    prefix: str | None = None, max_steps: int = MAX_STEPS,
                    max_edges: int = MAX_EDGES,
                    progress: Callable[[str, int, int | None], None] | None = None) -> IngestReport:
    """Ingest a task-plan data set folder (see Memory.ingest_taskplan); ``progress`` as for
    :func:`ingest_trajectories`."""
    root = pathlib.Path(directory)
    try:
        text = (root / "data.json").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PathError.single("io", f"cannot read {root / 'data.json'}: {getattr(exc, 'strerror', None) or exc}") from None
    domains = _taskplan_domains(root)
    wanted = _taskplan_ids(root, ids)
    prefix = f"{root.name}-" if prefix is None else prefix
    docs, numbers = read_jsonl(text)
    trajectories, lines = [], []
    for doc, line in zip(docs, numbers):
        if isinstance(doc, Mapping) and wanted is not None and str(doc.get("id")) not in wanted:
            continue
        if isinstance(doc, Mapping):
            try:
                trajectory = request_to_trajectory(doc, domains)
                trajectory["id"] = f"{prefix}{trajectory['id']}"
                trajectory["request_id"] = str(doc["id"])
                trajectory["source"] = root.name
                doc = trajectory
            except LocalizationError as err:
                doc = InvalidLine(f"request {doc.get('id')!r}: {err.message}", category="bad-trajectory")
            except (KeyError, TypeError, AttributeError) as exc:
                doc = InvalidLine(f"request {doc.get('id')!r} is malformed: {exc!r}", category="bad-trajectory")
        trajectories.append(doc)
        lines.append(line)
    return ingest_trajectories(memory, trajectories, skip_invalid=skip_invalid, author=author, scenario=scenario,
                               lines=lines, reason=f"ingest task plans from {root.name}", max_steps=max_steps,
                               max_edges=max_edges, progress=progress)


class _NothingToIngest(Exception):
    """Every planned trajectory turned out to clash with the graph (skip_invalid): no commit."""


def _line_key(problem: IngestProblem) -> tuple:
    return (problem.line is None, problem.line or 0)


def _taskplan_domains(root: pathlib.Path) -> dict[str, tuple[str, ...]]:
    path = root / "graph_desc.json"
    if not path.exists():
        return {}
    try:
        graph = json.loads(path.read_text(encoding="utf-8"))
        return {str(n["id"]): tuple(str(d) for d in n["domain"]) for n in graph.get("nodes", []) if n.get("domain")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PathError.single("bad-data", f"cannot read {path}: {exc}") from None


def _taskplan_ids(root: pathlib.Path, ids: Iterable[str] | str | None) -> set[str] | None:
    if ids is None:
        return None
    if isinstance(ids, str):
        if ids not in ("memory", "test"):
            raise PathError.single("invalid-argument", f"ids is a list of request ids, 'memory' or 'test', not {ids!r}")
        try:
            split = json.loads((root / "split_ids.json").read_text(encoding="utf-8"))
            test = {str(i) for i in split.get("test_ids", {}).get("chain", [])}
        except (OSError, ValueError, AttributeError) as exc:
            raise PathError.single("bad-data", f"cannot read {root / 'split_ids.json'}: {exc}") from None
        if ids == "test":
            return test
        docs, _ = read_jsonl((root / "data.json").read_text(encoding="utf-8"))
        return {str(d.get("id")) for d in docs if isinstance(d, Mapping) and str(d.get("id")) not in test}
    return {str(i) for i in ids}
