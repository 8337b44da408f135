"""Paths in memory: trajectories stored as goals with ordered actions, located through a path
index that every commit keeps up to date, and rewritten as versions behind guards.

A *path* is a goal node with ``kind = "path"``: its ``content`` is the goal text, its actions
(``parent_of`` with ``order``) are the steps and ``before`` edges order them. A path may sit
under a *scenario* goal (``kind = "scenario"``); locating never walks from one scenario into
another unless asked. A rewrite never edits a path: it adds a new version (``{root}@v{n}``)
with new actions, a ``replaces`` edge to the version it supersedes, and marks that one
``superseded`` with a lower reward, in one transaction. The first version's id (the
trajectory id) names the whole *lineage* and resolves to its current version.

The :class:`PathMemory` of a :class:`~hgm_engine.memory.Memory` holds the
:class:`~hgm_engine.paths.localize.PathIndex` (built lazily, kept in step by ``on_commit``, saved
in the store's meta under ``path_index`` and replayed from its ``t`` on open). The Memory
methods (``ingest``, ``locate``, ``rewrite_path`` ...) delegate here. See docs/paths.md.

>>> from hgm_engine.memory import Memory
>>> m = Memory()
>>> report = m.ingest([{"id": "order-17", "goal": "Check the status of order A1001",
...     "steps": [{"name": "query_order"}, {"name": "notify_user"}], "tags": ["order"],
...     "result": "success", "reward": 1.0}])
>>> report.ingested, m.query("#order-17.actions").ids
(['order-17'], ['order-17/0', 'order-17/1'])
>>> m.locate("what is the status of order B7?").matches[0].path
'order-17'
>>> m.rewrite_path("order-17", [{"keep": 0}, {"add": {"name": "check_cache"}, "after": 0}],
...     "look in the cache before telling the user").committed
True
>>> m.path("order-17")["id"], m.path("order-17")["lineage"]
('order-17@v2', ['order-17', 'order-17@v2'])
>>> [s["name"] for s in m.path("order-17")["steps"]]
['query_order', 'check_cache', 'notify_user']
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import pathlib
import re
import threading
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from hgm_engine.errors import HGMError, PathError, Problem
from hgm_engine.model import Node, thaw
from hgm_engine.paths.localize import (
    DENSE_SCORE_CONFIG,
    PATH_RESULTS,
    Embedder,
    LocateResult,
    PathIndex,
    PathRecord,
    ScoreConfig,
    Step,
)
from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.taskplan import request_to_trajectory
from hgm_engine.txn import AddEdge, AddNode, OpContext, TransactionReport, UpdateNode, apply_op

__all__ = [
    "PathMemory",
    "PathGuards",
    "IngestReport",
    "IngestProblem",
    "InvalidLine",
    "read_jsonl",
    "record_from_graph",
    "PATH_KIND",
    "SCENARIO_KIND",
    "INDEX_META_KEY",
    "REFUSALS",
    "resolve_steps",
]

PATH_KIND = "path"
SCENARIO_KIND = "scenario"
INDEX_META_KEY = "path_index"
STATE_FORMAT = "hgm-path-memory/1"
# Guard refusals (the CLI exits 3 for these, as for constraint refusals).
REFUSALS = ("rewrite-cap", "version-cap", "needs-human")

_VERSION_ID = re.compile(r"@v\d+$")
_TRAJECTORY_KEYS = frozenset(
    {"id", "goal", "steps", "edges", "tags", "result", "reward", "status", "version", "replaces", "scenario",
     "lineage", "template"}
)
_RENAMED = {"type": "trajectory_type"}              # node keys that cannot be attributes
_STEP_RENAMED = {"type": "step_type", "id": "step_id"}
_FORBIDDEN = {"kind": "'kind' is set by hgm ('path')", "content": "the goal text is 'goal', not 'content'",
              "dirty": "'dirty' holds staleness marks set by rules", "dirty_marks": "'dirty_marks' is set by rules"}
_MARKS = ("dirty", "dirty_marks")
# Attributes of a version (not copied to the next one) and of a lineage (kept on its root).
_VERSION_ATTRS = ("status", "result", "reward", "successes", "failures", "last_outcome", "superseded_by",
                  "version", "lineage", "rewrite_reason", "restored_from", "root", "template")
_LINEAGE_ATTRS = ("head", "rewrite_count", "rollback_count", "failed_streak", "needs_human")


# -- errors, guards, reports --------------------------------------------------------------------


def _error(category: str, message: str, where: str | None = None) -> PathError:
    return PathError([Problem(category, message, where=where)])


@attrs.frozen
class PathGuards:
    """Limits that stop rewrite storms, and the two reward knobs.

    ``max_versions``: versions a lineage may hold (rewrites and rollbacks both add one);
    ``max_rewrites``: rewrites a lineage may have had; ``max_failed_rewrites``: consecutive
    ``failure`` outcomes of rewritten current versions (version 2 or later) after which the
    lineage turns ``needs_human`` and rewrites are refused until :meth:`PathMemory.reset_path`.
    ``supersede_factor`` multiplies a version's reward when it is superseded;
    ``outcome_rate`` is the weight of a new outcome in the reward's moving average.

    >>> PathGuards(max_versions=3).max_versions
    3
    """

    max_versions: int = 10
    max_rewrites: int = 20
    max_failed_rewrites: int = 3
    supersede_factor: float = 0.5
    outcome_rate: float = 0.3

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


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
            docs.append(json.loads(line))
        except json.JSONDecodeError as exc:
            docs.append(InvalidLine(f"not JSON: {exc.msg} (column {exc.colno})", exc.colno))
        numbers.append(number)
    return docs, numbers


# -- reading paths from the graph ---------------------------------------------------------------


def _is_path(node: Node | None) -> bool:
    return node is not None and node.type == "goal" and node.attrs.get("kind") == PATH_KIND


def _is_scenario(node: Node | None) -> bool:
    return node is not None and node.type == "goal" and node.attrs.get("kind") == SCENARIO_KIND


def _children(view, goal_id: str) -> list[Node]:
    """The actions under a goal, in edge order (``order`` of ``parent_of``)."""
    out = []
    for child in view.out_adjacency(goal_id).by_type.get("parent_of", ()):
        node = view.node(child)
        if node is not None and node.type == "action":
            out.append(node)
    return out


def _step_edges(view, actions: Sequence[Node]) -> list[tuple[int, int]]:
    position = {a.id: i for i, a in enumerate(actions)}
    edges = []
    for i, action in enumerate(actions):
        for target in view.out_adjacency(action.id).by_type.get("before", ()):
            j = position.get(target)
            if j is not None and j != i:
                edges.append((i, j))
    return sorted(set(edges))


def _step_name(node: Node) -> str:
    name = node.attrs.get("name")
    if isinstance(name, str) and name:
        return name
    content = node.attrs.get("content")
    return content if isinstance(content, str) and content else node.id


def _scenario_of(view, node: Node) -> str | None:
    for parent in view.in_adjacency(node.id).by_type.get("parent_of", ()):
        if _is_scenario(view.node(parent)):
            return parent
    value = node.attrs.get("scenario")
    return value if isinstance(value, str) and value else None


def _replaces(view, node_id: str) -> str | None:
    for target in view.out_adjacency(node_id).by_type.get("replaces", ()):
        if _is_path(view.node(target)):
            return target
    return None


def _replaced_by(view, node_id: str) -> list[str]:
    return [s for s in view.in_adjacency(node_id).by_type.get("replaces", ()) if _is_path(view.node(s))]


def record_from_graph(view, goal_id: str) -> PathRecord | None:
    """The :class:`~hgm_engine.paths.localize.PathRecord` of the path goal ``goal_id`` as the graph
    (a MemoryGraph or an overlay) holds it, or None when it is not a path with steps.

    >>> from hgm_engine.memory import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a", "b"], "result": "success"}])
    >>> r = record_from_graph(m.graph, "p")
    >>> r.step_names, r.status, r.version, r.result
    (('a', 'b'), 'active', 1, 'success')
    """
    node = view.node(goal_id)
    if not _is_path(node):
        return None
    actions = _children(view, goal_id)
    if not actions:
        return None
    attrs_ = node.attrs
    steps = []
    for action in actions:
        content = action.attrs.get("content")
        extra = {k: v for k, v in thaw(action.attrs).items() if k not in ("name", "content", "status", *_MARKS)}
        steps.append(Step(_step_name(action), content if isinstance(content, str) else "", extra))
    status = attrs_.get("status")
    if attrs_.get("template") is True:
        status = "template"
    elif status not in ("superseded", "failed"):
        status = "active"
    tags = attrs_.get("tags")
    reward = attrs_.get("reward")
    version = attrs_.get("version")
    goal = attrs_.get("content")
    try:
        return PathRecord.create(
            goal_id,
            goal if isinstance(goal, str) else "",
            steps,
            edges=_step_edges(view, actions),
            tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, (list, tuple)) else (),
            reward=reward if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
            result=attrs_.get("result") if attrs_.get("result") in PATH_RESULTS else None,
            status=status,
            version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
            replaces=_replaces(view, goal_id),
            scenario=_scenario_of(view, node),
        )
    except LocalizationError:
        return None


def _affected(commit, view) -> set[str]:
    """Ids of the goals whose path records a commit may have changed."""
    ids: set[str] = set()

    def owners(node_id: str) -> None:
        ids.update(view.in_adjacency(node_id).by_type.get("parent_of", ()))

    for change in commit.changes:
        for payload in (change.before, change.after):
            if payload is None:
                continue
            if isinstance(payload, Node):
                if payload.type == "goal":
                    ids.add(payload.id)
                elif payload.type == "action" and payload.id in view:
                    owners(payload.id)
            elif payload.type == "parent_of":
                ids.add(payload.source)
            elif payload.type == "before":
                for end in (payload.source, payload.target):
                    if end in view:
                        owners(end)
            elif payload.type == "replaces":
                ids.update((payload.source, payload.target))
    return ids


# -- ingest: trajectories to planned nodes -------------------------------------------------------


@attrs.define
class _Planned:
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
        doc = {_STEP_RENAMED.get(k, k): v for k, v in step.items() if k not in _MARKS}
    doc.setdefault("status", default_status)
    return doc


def _plan(doc: Any, line: int, default_scenario: str | None) -> _Planned | IngestProblem:
    """A trajectory checked on its own (no graph): planned nodes, or the line's problem."""
    if isinstance(doc, InvalidLine):
        return IngestProblem(line, None, doc.category, doc.message)
    if not isinstance(doc, Mapping):
        return IngestProblem(line, None, "bad-trajectory", f"a trajectory is a JSON object, not {type(doc).__name__}")
    raw_id = doc.get("id")
    if raw_id is None:
        canonical = json.dumps(doc, sort_keys=True, ensure_ascii=False, default=str)
        path_id = "path-" + hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:12]
    elif isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or raw_id == "":
        return IngestProblem(line, None, "bad-trajectory", f"'id' must be a non-empty string, not {raw_id!r}")
    else:
        path_id = str(raw_id)

    def bad(message: str, category: str = "bad-trajectory") -> IngestProblem:
        return IngestProblem(line, path_id, category, message)

    if _VERSION_ID.search(path_id):
        return bad("ids ending in '@v<n>' name rewritten versions; choose another id")
    goal = doc.get("goal", "")
    if not isinstance(goal, str):
        return bad("'goal' must be a string")
    tags = doc.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        return bad("'tags' must be a list of strings")
    for key, message in _FORBIDDEN.items():
        if key in doc:
            return bad(message)
    try:
        record = PathRecord.from_trajectory({**doc, "id": path_id, "goal": goal})
    except LocalizationError as err:
        return bad(err.message)
    except (TypeError, ValueError) as exc:
        return bad(str(exc))
    for i, step in enumerate(doc["steps"]):
        if isinstance(step, Mapping) and any(k in step for k in _MARKS):
            return bad(f"steps[{i}]: 'dirty' and 'dirty_marks' are staleness marks set by rules")
    version = doc.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return bad("'version' must be a positive integer")
    scenario = doc.get("scenario", default_scenario)
    if scenario is not None and (not isinstance(scenario, str) or not scenario):
        return bad("'scenario' must be a non-empty string")
    replaces = doc.get("replaces")
    if replaces is not None and (not isinstance(replaces, str) or not replaces):
        return bad("'replaces' must be a path id")
    lineage = doc.get("lineage", [path_id])
    if not isinstance(lineage, list) or not all(isinstance(i, str) for i in lineage):
        return bad("'lineage' must be a list of path ids")
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


# -- rewrites: steps or edit ops to new steps -----------------------------------------------------

_OP_KEYS = ("keep", "change", "add", "remove")


def _new_step(doc: Any, where: str) -> dict[str, Any]:
    if isinstance(doc, str) and doc:
        return {"name": doc}
    if not isinstance(doc, Mapping):
        raise _error("bad-steps", "a step is an object with a 'name' (or a name string)", where)
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise _error("bad-steps", "a step needs a non-empty 'name'", where)
    if any(k in doc for k in _MARKS):
        raise _error("bad-steps", "'dirty' and 'dirty_marks' are staleness marks set by rules", where)
    return {_STEP_RENAMED.get(k, k): v for k, v in doc.items()}


def _index(value: Any, n: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
        raise _error("bad-steps", f"{value!r} is not a step index of the old version (0..{n - 1})", where)
    return value


def resolve_steps(old: Sequence[Mapping[str, Any]], spec: Any) -> tuple[list[dict], list[tuple[int, int]] | None, dict]:
    """The new version's steps from ``spec``: (step attribute dicts, edges or None for a
    chain, goal changes such as ``tags``/``goal``). ``old`` are the old steps' attributes.

    ``spec`` is one of

    - a list of steps (objects with a ``name`` like trajectory steps, or name strings): the new
      version's steps, joined in order;
    - ``{"steps": [...], "edges": [[i, j], ...], "tags": [...], "goal": "..."}``: the same with
      explicit edges (default: consecutive) and optionally new tags or goal text;
    - a list of edit ops on the old steps (0-based indices of the old version):
      ``{"keep": i}`` keeps step i (the default for every step no op names),
      ``{"remove": i}`` drops it, ``{"change": i, "step": {...}}`` updates its attributes with
      the given ones (``null`` removes one), ``{"add": {...}, "after": i}`` inserts a new
      step after old step i (``"after": -1`` or no ``after``: at the start; several adds after
      the same step keep their order). Each old index is named by at most one keep, change or
      remove. The result is joined in order (consecutive ``before`` edges).

    >>> old = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    >>> steps, edges, _ = resolve_steps(old, [{"remove": 1}, {"add": "x", "after": 2},
    ...                                        {"change": 0, "step": {"content": "first"}}])
    >>> [(s["name"], s.get("content")) for s in steps], edges
    ([('a', 'first'), ('c', None), ('x', None)], None)
    >>> resolve_steps(old, [{"keep": 7}])
    Traceback (most recent call last):
    ...
    hgm_engine.errors.PathError: bad-steps at ops[0]: 7 is not a step index of the old version (0..2)
    """
    goal_changes: dict[str, Any] = {}
    edges: list[tuple[int, int]] | None = None
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"steps", "edges", "tags", "goal"})
        if unknown:
            raise _error("bad-steps", f"unknown keys {unknown}: give steps, edges, tags, goal", "steps")
        if "tags" in spec:
            tags = spec["tags"]
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise _error("bad-steps", "'tags' must be a list of strings", "tags")
            goal_changes["tags"] = list(dict.fromkeys(tags))
        if "goal" in spec:
            if not isinstance(spec["goal"], str):
                raise _error("bad-steps", "'goal' must be a string", "goal")
            goal_changes["content"] = spec["goal"]
        if spec.get("edges") is not None:
            raw = spec["edges"]
            if not isinstance(raw, list):
                raise _error("bad-steps", "'edges' must be a list of [i, j] pairs", "edges")
            edges = []
            for k, edge in enumerate(raw):
                if (not isinstance(edge, (list, tuple)) or len(edge) != 2
                        or not all(isinstance(i, int) and not isinstance(i, bool) for i in edge)):
                    raise _error("bad-steps", f"edge {edge!r} is not a pair of step indices", f"edges[{k}]")
                edges.append((edge[0], edge[1]))
        spec = spec.get("steps")
    if not isinstance(spec, list) or not spec:
        raise _error("bad-steps", "give a non-empty list of steps or of edit ops", "steps")
    is_op = [isinstance(item, Mapping) and any(k in item for k in _OP_KEYS) for item in spec]
    if any(is_op) and not all(is_op):
        raise _error("bad-steps", "a list is either all steps or all edit ops (keep/change/add/remove)", "steps")
    if not all(is_op):
        steps = [_new_step(item, f"steps[{i}]") for i, item in enumerate(spec)]
    else:
        if edges is not None:
            raise _error("bad-steps", "edges go with a full list of steps, not with edit ops", "edges")
        n = len(old)
        named: dict[int, str] = {}
        changed: dict[int, dict[str, Any]] = {}
        removed: set[int] = set()
        inserts: dict[int, list[dict[str, Any]]] = {}
        for k, op in enumerate(spec):
            where = f"ops[{k}]"
            keys = [key for key in _OP_KEYS if key in op]
            if len(keys) != 1:
                raise _error("bad-steps", f"an op has exactly one of {', '.join(_OP_KEYS)}", where)
            key = keys[0]
            allowed = {"keep": {"keep"}, "remove": {"remove"}, "change": {"change", "step"}, "add": {"add", "after"}}[key]
            extra = sorted(set(op) - allowed)
            if extra:
                raise _error("bad-steps", f"'{key}' does not take {extra}", where)
            if key == "add":
                after = op.get("after", -1)
                if after != -1:
                    after = _index(after, n, where)
                inserts.setdefault(after, []).append(_new_step(op["add"], where))
                continue
            i = _index(op[key], n, where)
            if i in named:
                raise _error("bad-steps", f"step {i} is already named by a {named[i]!r} op", where)
            named[i] = key
            if key == "remove":
                removed.add(i)
            elif key == "change":
                update = op.get("step")
                if not isinstance(update, Mapping) or not update:
                    raise _error("bad-steps", "'change' needs a non-empty 'step' object", where)
                if any(k2 in update for k2 in _MARKS):
                    raise _error("bad-steps", "'dirty' and 'dirty_marks' are staleness marks set by rules", where)
                changed[i] = {_STEP_RENAMED.get(k2, k2): v for k2, v in update.items()}
        steps = list(inserts.get(-1, []))
        for i, step in enumerate(old):
            if i not in removed:
                new = dict(step)
                for key, value in changed.get(i, {}).items():
                    if value is None:
                        new.pop(key, None)
                    else:
                        new[key] = value
                name = new.get("name")
                if not isinstance(name, str) or not name:
                    raise _error("bad-steps", f"step {i} would have no name", f"ops (step {i})")
                steps.append(new)
            steps.extend(inserts.get(i, []))
        if not steps:
            raise _error("bad-steps", "the new version would have no steps", "steps")
    if edges is not None:
        for k, (i, j) in enumerate(edges):
            if not (0 <= i < len(steps) and 0 <= j < len(steps)) or i == j:
                raise _error("bad-steps", f"edge [{i}, {j}] does not join two of the {len(steps)} steps", f"edges[{k}]")
        edges = sorted(set(edges))
    return steps, edges, goal_changes


def _chain(n: int) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(n - 1)]


def _comparable(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in s.items() if k not in ("status", *_MARKS)} for s in steps]


# -- the path memory ------------------------------------------------------------------------------


class PathMemory:
    """Paths of one Memory: ingest, locate, versions, outcomes, guards, and the path index.

    Reach it as ``memory.path_memory`` (the Memory methods delegate here). ``embedder`` and
    ``config`` set up the index (default: the dependency-free embedder and its score
    config); ``save_every`` commits the index state is written to the store (durable
    stores only; also ``save()`` and when the memory closes); ``hops`` bounds the graph walk
    that expands located entry paths.
    """

    def __init__(self, memory, *, embedder: Embedder | None = None, config: ScoreConfig | None = None,
                 save_every: int = 25, hops: int = 4):
        self.memory = memory
        self.guards = PathGuards()
        self.embedder = embedder
        self.config = config
        self.save_every = save_every
        self.hops = hops
        self.max_visits = 5000          # nodes one expansion may look at
        self.max_entries = 10           # entry paths one expansion starts from
        self._lock = threading.RLock()
        self._index: PathIndex | None = None
        self._index_t = 0
        self._unsaved = 0
        self.refusals: Counter = Counter()
        self.stats: dict[str, Any] = {
            "source": None, "rebuilds": 0, "state_loads": 0, "replayed_commits": 0,
            "incremental_commits": 0, "saves": 0, "saved_t": None, "last_error": None,
        }
        memory.on_commit(self._on_commit)

    # -- the index ---------------------------------------------------------------------------

    @property
    def durable(self) -> bool:
        return getattr(self.memory.store, "location", ":memory:") != ":memory:"

    def _config(self) -> ScoreConfig:
        if self.config is not None:
            return self.config
        if self.embedder is not None and not self.embedder.sparse:
            return DENSE_SCORE_CONFIG
        return ScoreConfig()

    @property
    def index(self) -> PathIndex:
        """The path index, loaded (or built) on first use."""
        index = self._index
        if index is None:
            self._open_index()
            index = self._index
        return index  # type: ignore[return-value]

    @property
    def index_t(self) -> int:
        """The ``t`` the index reflects."""
        return self._index_t

    def _read_state(self) -> tuple[int, Mapping[str, Any]] | None:
        try:
            text = self.memory.store.get_meta(INDEX_META_KEY)
        except HGMError as err:
            self.stats["last_error"] = err.message
            return None
        if not text:
            return None
        try:
            doc = json.loads(text)
            if doc.get("format") != STATE_FORMAT or not isinstance(doc.get("t"), int):
                raise ValueError(f"not a {STATE_FORMAT} document")
            return doc["t"], doc["index"]
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            self.stats["last_error"] = f"stored path index unreadable: {exc}"
            return None

    def _open_index(self) -> None:
        memory = self.memory
        with memory.exclusive(), self._lock:
            if self._index is not None:
                return
            try:
                memory.refresh()  # commits other processes made: the state may reflect them
            except HGMError as err:
                self.stats["last_error"] = f"could not catch up: {err.message}"
            t_now = memory.t
            index = None
            replayed = 0
            stored = self._read_state()
            if stored is not None and stored[0] <= t_now:
                saved_t, state = stored
                try:
                    commits = memory.commits(since=saved_t)
                    if not any(c.genesis for c in commits):
                        index = PathIndex.from_state(state, self.embedder, self._config())
                        with memory.reading():
                            affected: set[str] = set()
                            for commit in commits:
                                affected |= _affected(commit, memory.graph)
                            self._sync(index, affected)
                        replayed = len(commits)
                        self.stats["state_loads"] += 1
                        self.stats["source"] = "state"
                        self.stats["replayed_commits"] += replayed
                except (HGMError, ValueError, TypeError, KeyError) as exc:
                    self.stats["last_error"] = f"stored path index not used: {exc}"
                    index = None
            if index is None:
                index = self._rebuild()
            self._index, self._index_t = index, t_now
            if self.durable and (self.stats["source"] == "rebuilt" or replayed):
                self._save_quietly()

    def _rebuild(self) -> PathIndex:
        memory = self.memory
        index = PathIndex(self.embedder, self._config())
        with memory.reading():
            graph = memory.graph
            records = [record_from_graph(graph, node.id) for node in graph.nodes_of_type("goal") if _is_path(node)]
        index.add_many([r for r in records if r is not None])
        self.stats["rebuilds"] += 1
        self.stats["source"] = "rebuilt"
        return index

    def _sync(self, index: PathIndex, ids: Iterable[str]) -> None:
        graph = self.memory.graph
        new = []
        for path_id in sorted(ids):
            record = record_from_graph(graph, path_id)
            if record is None:
                if path_id in index:
                    index.remove(path_id)
            elif path_id in index:
                if index.get(path_id) != record:
                    index.update(record)
            else:
                new.append(record)
        index.add_many(new)

    def _on_commit(self, commit) -> None:
        try:
            with self._lock:
                if self._index is None or commit.t <= self._index_t:
                    return
                if commit.genesis:
                    self._index = self._rebuild()
                else:
                    with self.memory.reading():
                        self._sync(self._index, _affected(commit, self.memory.graph))
                self._index_t = commit.t
                self.stats["incremental_commits"] += 1
                self._unsaved += 1
                if self.durable and self._unsaved >= self.save_every:
                    self._save_quietly()
        except Exception as exc:  # noqa: BLE001 - the commit is durable already; rebuild later
            self._index = None
            self.stats["last_error"] = f"path index dropped after t={commit.t}: {exc}"

    def save(self) -> int | None:
        """Write the index state and the ``t`` it reflects to the store's meta; returns that
        ``t`` (None when the index was never built)."""
        with self._lock:
            if self._index is None:
                return None
            doc = {"format": STATE_FORMAT, "t": self._index_t, "index": self._index.to_state()}
            self.memory.store.set_meta(INDEX_META_KEY, json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
            self._unsaved = 0
            self.stats["saves"] += 1
            self.stats["saved_t"] = self._index_t
            return self._index_t

    def _save_quietly(self) -> None:
        try:
            self.save()
        except HGMError as err:  # a read-only or busy store: the index still works
            self.stats["last_error"] = f"path index not saved: {err.message}"

    def close(self) -> None:
        """Save the index if commits arrived since it was last saved (durable stores)."""
        if self._index is not None and self._unsaved and self.durable:
            self._save_quietly()

    # -- resolving ids -----------------------------------------------------------------------

    def _lineage(self, view, node_id: str) -> tuple[str, list[str], str]:
        """(root, versions oldest first, head) of the lineage through ``node_id``."""
        root, seen = node_id, {node_id}
        while True:
            older = _replaces(view, root)
            if older is None or older in seen:
                break
            seen.add(older)
            root = older
        versions, frontier = [root], [root]
        while frontier:
            following = []
            for current in frontier:
                for newer in _replaced_by(view, current):
                    if newer not in versions:
                        versions.append(newer)
                        following.append(newer)
            frontier = following

        def version_key(vid: str) -> tuple:
            value = view.node(vid).attrs.get("version")
            return (value if isinstance(value, int) else 0, view.node(vid).seq)

        versions.sort(key=version_key)
        heads = [v for v in versions if not _replaced_by(view, v)]
        head = max(heads, key=version_key) if heads else versions[-1]
        return root, versions, head

    def _resolve(self, view, path_id: Any) -> tuple[str, str, list[str], str]:
        """(target, root, versions, head): a lineage root's id names its current version;
        ``ROOT@v1`` names the root itself; any other version id names that version."""
        if not isinstance(path_id, str) or not path_id:
            raise _error("unknown-path", f"a path id is a non-empty string, not {path_id!r}")
        names_lineage = False  # a root's own id names its lineage (its current version)
        node = view.node(path_id)
        target = path_id
        if node is None and path_id.endswith("@v1"):
            target = path_id[:-3]
            node = view.node(target)
        elif node is not None:
            names_lineage = True
        if not _is_path(node):
            if node is not None:
                kind = node.attrs.get("kind")
                what = f"a {node.type}" + (f" of kind {kind!r}" if kind else "")
                raise _error("unknown-path", f"{path_id!r} is {what}, not a path", path_id)
            known = [n.id for n in view.nodes_of_type("goal") if _is_path(n)]
            close = difflib.get_close_matches(path_id, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise _error("unknown-path", f"no path {path_id!r}{hint}", path_id)
        root, versions, head = self._lineage(view, target)
        if names_lineage and target == root:
            target = head
        return target, root, versions, head

    # -- ingest ------------------------------------------------------------------------------

    def ingest(self, trajectories: Iterable[Any], *, skip_invalid: bool = False, author: str | None = None,
               scenario: str | None = None, lines: Sequence[int] | None = None,
               reason: str | None = None) -> IngestReport:
        """Store trajectories (formats.md) as paths in one transaction; see Memory.ingest."""
        items = list(trajectories)
        numbers = list(lines) if lines is not None else list(range(1, len(items) + 1))
        if len(numbers) != len(items):
            raise ValueError("lines must give one line number per trajectory")
        problems: list[IngestProblem] = []
        plans: list[_Planned] = []
        for doc, line in zip(items, numbers):
            planned = _plan(doc, line, scenario)
            (problems if isinstance(planned, IngestProblem) else plans).append(planned)
        if problems and not skip_invalid:
            raise self._ingest_error(problems)
        excluded: set[int] = set()
        while True:
            todo = [p for p in plans if p.line not in excluded]
            if not todo:
                return IngestReport((), None, tuple(sorted(problems, key=_line_key)))
            found: list[IngestProblem] = []
            owner: dict[str, int] = {}
            build = self._ingest_builder(todo, found, owner, skip_invalid)
            try:
                report = self.memory.commit_built(
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
                raise self._ingest_error(problems)
            excluded.update(blamed)

    @staticmethod
    def _ingest_error(problems: list[IngestProblem]) -> PathError:
        ordered = sorted(problems, key=_line_key)
        err = PathError([p.to_problem() for p in ordered])
        err.report = IngestReport((), None, tuple(ordered))
        return err

    def _ingest_builder(self, plans: list[_Planned], found: list[IngestProblem], owner: dict[str, int],
                        skip_invalid: bool) -> Callable:
        def build(overlay, ctx: OpContext) -> list[str]:
            found.clear()
            owner.clear()
            created: list[str] = []
            scenarios_made: set[str] = set()
            for plan in plans:
                problem = self._graph_problem(overlay, plan, scenarios_made)
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
                raise self._ingest_error(found)
            if not created:
                raise _NothingToIngest()
            return created

        return build

    @staticmethod
    def _graph_problem(overlay, plan: _Planned, scenarios_made: set[str]) -> IngestProblem | None:
        ids = [plan.id] + [f"{plan.id}/{i}" for i in range(len(plan.steps))]
        for node_id in ids:
            if node_id in overlay:
                what = "path" if node_id == plan.id else "node"
                return IngestProblem(plan.line, plan.id, "duplicate-id", f"a {what} {node_id!r} already exists")
        if plan.scenario is not None and plan.scenario not in scenarios_made:
            node = overlay.node(plan.scenario)
            if node is not None and (node.type != "goal" or _is_path(node)):
                what = "a path" if _is_path(node) else f"a {node.type}"
                return IngestProblem(plan.line, plan.id, "bad-scenario",
                                     f"scenario {plan.scenario!r} is {what}, not a scenario goal")
        if plan.replaces is not None and not _is_path(overlay.node(plan.replaces)):
            return IngestProblem(plan.line, plan.id, "unknown-node", f"'replaces' names no path {plan.replaces!r}")
        return None

    def ingest_taskplan(self, directory: str | os.PathLike, *, ids: Iterable[str] | str | None = None,
                        skip_invalid: bool = False, author: str | None = None, scenario: str | None = None,
                        prefix: str | None = None) -> IngestReport:
        """Ingest a task-plan data set folder (see Memory.ingest_taskplan)."""
        root = pathlib.Path(directory)
        try:
            text = (root / "data.json").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise _error("io", f"cannot read {root / 'data.json'}: {getattr(exc, 'strerror', None) or exc}") from None
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
        return self.ingest(trajectories, skip_invalid=skip_invalid, author=author, scenario=scenario, lines=lines,
                           reason=f"ingest task plans from {root.name}")

    # -- locate ------------------------------------------------------------------------------

    def locate(self, text: str, tags: Iterable[str] | str | None = None, k: int = 5, *,
               scenario: str | None = None, cross_scenario: bool = False, steps: Sequence[str] | None = None,
               hops: int | None = None) -> LocateResult:
        """The ``k`` best paths for ``text`` (see Memory.locate)."""
        if isinstance(tags, str):
            tags = [t.strip() for t in tags.split(",") if t.strip()]
        index = self.index
        expand = self._expander(cross_scenario, self.hops if hops is None else hops)
        with self._lock:
            try:
                return index.locate(text, tags or (), k, steps=steps, scenario=scenario,
                                    cross_scenario=cross_scenario, expand=expand)
            except LocalizationError as err:
                raise PathError(err.problems) from None

    def _expander(self, cross_scenario: bool, hops: int) -> Callable[[Sequence[str]], list[str]]:
        memory = self.memory

        def expand(entry_ids: Sequence[str]) -> list[str]:
            found: list[str] = []
            seen = set(entry_ids)
            budget = self.max_visits
            with memory.reading():
                graph = memory.graph
                for entry in entry_ids[: self.max_entries]:
                    node = graph.node(entry)
                    if node is None or budget <= 0:
                        continue
                    own = _scenario_of(graph, node)
                    visited = {entry}
                    frontier = [entry]
                    for _ in range(max(0, hops)):
                        following = []
                        for current in frontier:
                            here = graph.node(current)
                            at_boundary = _is_scenario(here) and not cross_scenario
                            pairs = list(graph.out_adjacency(current).pairs)
                            if not at_boundary:  # never climb above a scenario unless asked
                                pairs += graph.in_adjacency(current).pairs
                            for edge_type, other in pairs:
                                if other in visited:
                                    continue
                                budget -= 1
                                if budget <= 0:
                                    break
                                other_node = graph.node(other)
                                if not cross_scenario:
                                    if _is_scenario(other_node) and other != own:
                                        continue  # another scenario: a boundary
                                    if _is_path(other_node) and own is not None:
                                        theirs = _scenario_of(graph, other_node)
                                        if theirs is not None and theirs != own:
                                            continue  # a path of another scenario
                                visited.add(other)
                                following.append(other)
                                if _is_path(other_node) and other not in seen:
                                    seen.add(other)
                                    found.append(other)
                        frontier = following
                        if budget <= 0:
                            break
            return found

        return expand

    # -- reading paths -----------------------------------------------------------------------

    def _version_doc(self, view, node_id: str) -> dict[str, Any]:
        a = thaw(view.node(node_id).attrs)
        return {"id": node_id, "version": a.get("version", 1), "status": a.get("status"), "reward": a.get("reward"),
                "result": a.get("result"), "reason": a.get("rewrite_reason"), "restored_from": a.get("restored_from")}

    def path(self, path_id: str) -> dict[str, Any]:
        """One path with its steps, versions, lineage and counters (see Memory.path)."""
        memory = self.memory
        with memory.reading():
            view = memory.graph
            target, root, versions, head = self._resolve(view, path_id)
            node = view.node(target)
            a = thaw(node.attrs)
            lineage_attrs = thaw(view.node(root).attrs)
            actions = _children(view, target)
            doc: dict[str, Any] = {
                "id": target,
                "root": root,
                "head": head,
                "current": target == head,
                "goal": a.get("content", ""),
                "steps": [dict(thaw(s.attrs), id=s.id) for s in actions],
                "edges": [list(e) for e in _step_edges(view, actions)],
                "tags": a.get("tags", []),
                "status": a.get("status"),
                "version": a.get("version", 1),
                "lineage": a.get("lineage", [target]),
                "replaces": _replaces(view, target),
                "replaced_by": _replaced_by(view, target),
                "reward": a.get("reward"),
                "result": a.get("result"),
                "scenario": _scenario_of(view, node),
                "rewrite_reason": a.get("rewrite_reason"),
                "restored_from": a.get("restored_from"),
                "successes": a.get("successes", 0),
                "failures": a.get("failures", 0),
                "template": bool(a.get("template", False)),
                "needs_human": bool(lineage_attrs.get("needs_human", False)),
                "rewrite_count": lineage_attrs.get("rewrite_count", 0),
                "rollback_count": lineage_attrs.get("rollback_count", 0),
                "failed_streak": lineage_attrs.get("failed_streak", 0),
                "versions": [self._version_doc(view, v) for v in versions],
            }
            extra = {k: v for k, v in a.items() if k not in doc and k not in ("content", "kind", *_LINEAGE_ATTRS,
                                                                               *_VERSION_ATTRS, *_MARKS)}
            if extra:
                doc["attributes"] = extra
            return doc

    def paths(self, *, all_versions: bool = False) -> list[dict[str, Any]]:
        """A summary per lineage (its current version), or per version (see Memory.paths)."""
        memory = self.memory
        out = []
        order: dict[str, tuple] = {}
        with memory.reading():
            view = memory.graph
            for node in list(view.nodes_of_type("goal")):
                if not _is_path(node):
                    continue
                if not all_versions and _replaced_by(view, node.id):
                    continue
                root, versions, head = self._lineage(view, node.id)
                a = node.attrs
                order[node.id] = (view.node(root).seq, a.get("version", 1) if isinstance(a.get("version"), int) else 0)
                out.append({
                    "id": node.id,
                    "root": root,
                    "goal": a.get("content", ""),
                    "steps": [_step_name(s) for s in _children(view, node.id)],
                    "version": a.get("version", 1),
                    "versions": len(versions),
                    "status": a.get("status"),
                    "reward": a.get("reward"),
                    "result": a.get("result"),
                    "tags": list(a.get("tags", ())),
                    "scenario": _scenario_of(view, node),
                    "needs_human": bool(view.node(root).attrs.get("needs_human", False)),
                })
        out.sort(key=lambda entry: order[entry["id"]])  # lineages in creation order, versions in order
        return out

    def metrics(self) -> dict[str, Any]:
        """Counters to watch for rewrite storms, and the index's state (see Memory.path_metrics)."""
        memory = self.memory
        lineages: dict[str, dict[str, Any]] = {}
        total_versions = 0
        with memory.reading():
            view = memory.graph
            for node in list(view.nodes_of_type("goal")):
                if not _is_path(node):
                    continue
                total_versions += 1
                if _replaces(view, node.id) is not None:
                    continue
                _, versions, head = self._lineage(view, node.id)
                a = node.attrs
                lineages[node.id] = {
                    "head": head,
                    "versions": len(versions),
                    "rewrites": a.get("rewrite_count", 0),
                    "rollbacks": a.get("rollback_count", 0),
                    "failed_streak": a.get("failed_streak", 0),
                    "needs_human": bool(a.get("needs_human", False)),
                }
        watched = {k: v for k, v in lineages.items() if v["versions"] > 1 or v["failed_streak"] or v["needs_human"]}
        index = self._index
        return {
            "paths": len(lineages),
            "versions": total_versions,
            "rewrites": sum(v["rewrites"] for v in lineages.values()),
            "rollbacks": sum(v["rollbacks"] for v in lineages.values()),
            "max_versions_in_a_lineage": max((v["versions"] for v in lineages.values()), default=0),
            "versions_per_lineage": {k: v["versions"] for k, v in watched.items()},
            "consecutive_failures": {k: v["failed_streak"] for k, v in lineages.items() if v["failed_streak"]},
            "needs_human": sorted(k for k, v in lineages.items() if v["needs_human"]),
            "lineages": watched,
            "guards": self.guards.to_json(),
            "refusals": dict(self.refusals),
            "index": dict(self.stats, loaded=index is not None, size=len(index) if index is not None else None,
                          t=self._index_t if index is not None else None, unsaved_commits=self._unsaved),
        }

    # -- changing paths ----------------------------------------------------------------------

    def _run(self, build: Callable, *, author: str | None, reason: str | None, kind: str) -> TransactionReport:
        try:
            return self.memory.commit_built(build, author=author, reason=reason, kind=kind)
        except PathError as err:
            self.refusals[err.category] += 1
            raise

    def _new_version(self, overlay, ctx: OpContext, root: str, versions: list[str], head: str,
                     source: str, steps: list[dict], edges: list[tuple[int, int]] | None,
                     goal_changes: Mapping[str, Any], extra: Mapping[str, Any]) -> str:
        """Add version n+1 (copying ``source``'s goal attributes) that replaces ``head``."""
        numbers = [overlay.node(v).attrs.get("version", 1) for v in versions]
        number = max([n for n in numbers if isinstance(n, int)] + [len(versions)]) + 1
        new_id = f"{root}@v{number}"
        while new_id in overlay:
            number += 1
            new_id = f"{root}@v{number}"
        source_node = overlay.node(source)
        head_node = overlay.node(head)
        attributes = {k: v for k, v in thaw(source_node.attrs).items()
                      if k not in (*_VERSION_ATTRS, *_LINEAGE_ATTRS, *_MARKS)}
        attributes.update(goal_changes)
        lineage = head_node.attrs.get("lineage")
        lineage = list(lineage) if isinstance(lineage, (list, tuple)) else [head]
        attributes.update(kind=PATH_KIND, status="active", result="pending", version=number,
                          lineage=lineage + [new_id], root=root, **extra)
        parents = list(overlay.in_adjacency(head).by_type.get("parent_of", ()))
        where = "rewrite"
        apply_op(overlay, AddNode(new_id, "goal", attributes, parents[0] if parents else None), ctx, where)
        for parent in parents[1:]:
            apply_op(overlay, AddEdge(parent, new_id, "parent_of", {}), ctx, where)
        for i, step in enumerate(steps):
            step = {k: v for k, v in step.items() if k not in _MARKS}
            step["status"] = "pending"
            apply_op(overlay, AddNode(f"{new_id}/{i}", "action", step, new_id, i), ctx, where)
        for i, j in (edges if edges is not None else _chain(len(steps))):
            apply_op(overlay, AddEdge(f"{new_id}/{i}", f"{new_id}/{j}", "before", {}), ctx, where)
        apply_op(overlay, AddEdge(new_id, head, "replaces", {}), ctx, where)
        old_reward = head_node.attrs.get("reward")
        if not isinstance(old_reward, (int, float)) or isinstance(old_reward, bool):
            old_reward = {"success": 1.0, "failure": 0.0}.get(head_node.attrs.get("result"), 0.5)
        apply_op(overlay, UpdateNode(head, {"status": "superseded", "superseded_by": new_id,
                                            "reward": round(old_reward * self.guards.supersede_factor, 6)}), ctx, where)
        return new_id

    def rewrite_path(self, path_id: str, steps_or_ops: Any, reason: str, *, author: str | None = None) -> TransactionReport:
        """A new version of a path (see Memory.rewrite_path)."""
        if not isinstance(reason, str) or not reason.strip():
            self.refusals["bad-rewrite"] += 1
            raise _error("bad-rewrite", "a rewrite needs a reason (a non-empty string)")
        guards = self.guards

        def build(overlay, ctx: OpContext) -> list[str]:
            target, root, versions, head = self._resolve(overlay, path_id)
            if target != head:
                raise _error("stale-version", f"{target!r} is not the current version of {root!r} "
                             f"(that is {head!r}); rewrite the current one", target)
            lineage = overlay.node(root).attrs
            if lineage.get("needs_human"):
                raise _error("needs-human", f"{root!r} needs a human: {lineage.get('failed_streak', 0)} consecutive "
                             f"failures of rewritten versions; reset it (reset_path) before rewriting again", root)
            rewrites = lineage.get("rewrite_count", 0)
            if rewrites >= guards.max_rewrites:
                raise _error("rewrite-cap", f"{root!r} has been rewritten {rewrites} times "
                             f"(max_rewrites={guards.max_rewrites})", root)
            if len(versions) >= guards.max_versions:
                raise _error("version-cap", f"{root!r} has {len(versions)} versions "
                             f"(max_versions={guards.max_versions})", root)
            actions = _children(overlay, head)
            old_steps = [thaw(a.attrs) for a in actions]
            old_edges = _step_edges(overlay, actions)
            steps, edges, goal_changes = resolve_steps(old_steps, steps_or_ops)
            new_edges = edges if edges is not None else _chain(len(steps))
            head_attrs = overlay.node(head).attrs
            same_goal = all(head_attrs.get(k) == v for k, v in goal_changes.items())
            if _comparable(steps) == _comparable(old_steps) and new_edges == old_edges and same_goal:
                raise _error("no-change", f"the rewrite leaves {head!r} as it is", head)
            new_id = self._new_version(overlay, ctx, root, versions, head, head, steps, edges, goal_changes,
                                       {"rewrite_reason": reason})
            apply_op(overlay, UpdateNode(root, {"head": new_id, "rewrite_count": rewrites + 1}), ctx, "rewrite")
            return [new_id]

        return self._run(build, author=author, reason=reason, kind="path-rewrite")

    def rollback_path(self, path_id: str, version: int | str, *, author: str | None = None,
                      reason: str | None = None) -> TransactionReport:
        """Make an older version current again as a new version (see Memory.rollback_path)."""
        guards = self.guards

        def build(overlay, ctx: OpContext) -> list[str]:
            _, root, versions, head = self._resolve(overlay, path_id)
            by_number = {overlay.node(v).attrs.get("version", 1): v for v in versions}
            if isinstance(version, str) and not version.lstrip("v").isdigit():
                source = version if version in versions else (root if version == f"{root}@v1" else None)
            else:
                number = int(version.lstrip("v")) if isinstance(version, str) else version
                source = by_number.get(number)
            if source is None:
                known = ", ".join(f"v{n}" for n in sorted(k for k in by_number if isinstance(k, int)))
                raise _error("unknown-version", f"{root!r} has no version {version!r} (it has {known})", root)
            if source == head:
                raise _error("no-change", f"{source!r} is already the current version of {root!r}", source)
            if len(versions) >= guards.max_versions:
                raise _error("version-cap", f"{root!r} has {len(versions)} versions "
                             f"(max_versions={guards.max_versions})", root)
            actions = _children(overlay, source)
            steps = [thaw(a.attrs) for a in actions]
            number = overlay.node(source).attrs.get("version", 1)
            why = reason or f"rollback to v{number}"
            new_id = self._new_version(overlay, ctx, root, versions, head, source, steps,
                                       _step_edges(overlay, actions), {},
                                       {"rewrite_reason": why, "restored_from": source})
            count = overlay.node(root).attrs.get("rollback_count", 0)
            apply_op(overlay, UpdateNode(root, {"head": new_id, "rollback_count": count + 1}), ctx, "rollback")
            return [new_id]

        return self._run(build, author=author, reason=reason or f"rollback {path_id} to {version}",
                         kind="path-rollback")

    def record_outcome(self, path_id: str, outcome: str, *, reward: float | None = None,
                       author: str | None = None) -> TransactionReport:
        """Record a run's outcome on a path version (see Memory.record_outcome)."""
        if outcome not in ("success", "failure"):
            self.refusals["bad-outcome"] += 1
            raise _error("bad-outcome", f"an outcome is 'success' or 'failure', not {outcome!r}")
        if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))
                                   or not 0.0 <= reward <= 1.0):
            self.refusals["bad-outcome"] += 1
            raise _error("bad-outcome", f"a reward is a number in [0, 1], not {reward!r}")
        guards = self.guards

        def build(overlay, ctx: OpContext) -> list[str]:
            target, root, _, head = self._resolve(overlay, path_id)
            a = overlay.node(target).attrs
            observed = float(reward) if reward is not None else (1.0 if outcome == "success" else 0.0)
            prior = a.get("reward")
            if not isinstance(prior, (int, float)) or isinstance(prior, bool):
                prior = observed
            counter = "successes" if outcome == "success" else "failures"
            changes = {
                "result": outcome,
                "last_outcome": outcome,
                "reward": round((1 - guards.outcome_rate) * prior + guards.outcome_rate * observed, 6),
                counter: a.get(counter, 0) + 1,
            }
            apply_op(overlay, UpdateNode(target, changes), ctx, "outcome")
            if target == head:
                lineage = overlay.node(root).attrs
                streak = lineage.get("failed_streak", 0)
                version_number = a.get("version", 1)
                if outcome == "success":
                    streak = 0
                elif isinstance(version_number, int) and version_number >= 2:
                    streak += 1
                update: dict[str, Any] = {"failed_streak": streak}
                if streak >= guards.max_failed_rewrites and not lineage.get("needs_human"):
                    update["needs_human"] = True
                if update["failed_streak"] != lineage.get("failed_streak", 0) or "needs_human" in update:
                    apply_op(overlay, UpdateNode(root, update), ctx, "outcome")
            return []

        return self._run(build, author=author, reason=f"{outcome} of {path_id}", kind="path-outcome")

    def reset_path(self, path_id: str, *, author: str | None = None, reason: str | None = None) -> TransactionReport:
        """Clear a lineage's ``needs_human`` and its failure streak (a human has looked)."""

        def build(overlay, ctx: OpContext) -> list[str]:
            _, root, _, _ = self._resolve(overlay, path_id)
            a = overlay.node(root).attrs
            if not a.get("needs_human") and not a.get("failed_streak"):
                raise _error("no-change", f"{root!r} does not need a human and has no failure streak", root)
            apply_op(overlay, UpdateNode(root, {"failed_streak": 0}, ("needs_human",)), ctx, "reset")
            return []

        return self._run(build, author=author, reason=reason or f"reset {path_id}", kind="path-reset")


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
        raise _error("bad-data", f"cannot read {path}: {exc}") from None


def _taskplan_ids(root: pathlib.Path, ids: Iterable[str] | str | None) -> set[str] | None:
    if ids is None:
        return None
    if isinstance(ids, str):
        if ids not in ("memory", "test"):
            raise _error("invalid-argument", f"ids is a list of request ids, 'memory' or 'test', not {ids!r}")
        try:
            split = json.loads((root / "split_ids.json").read_text(encoding="utf-8"))
            test = {str(i) for i in split.get("test_ids", {}).get("chain", [])}
        except (OSError, ValueError, AttributeError) as exc:
            raise _error("bad-data", f"cannot read {root / 'split_ids.json'}: {exc}") from None
        if ids == "test":
            return test
        docs, _ = read_jsonl((root / "data.json").read_text(encoding="utf-8"))
        return {str(d.get("id")) for d in docs if isinstance(d, Mapping) and str(d.get("id")) not in test}
    return {str(i) for i in ids}
