"""The planner under evaluation and its three ablations (the same HTN planner, one mechanism
taken away each time).

- ``full`` — :class:`planners.HTNPlanner` as shipped: a new task first *locates* a stored
  decision path (``Memory.locate``: text, tags, structure, reward, version status) and reuses
  the best current one that did not fail; a failure *rewrites* — a new version of a path
  (``rewrite_path``: ``replaces`` edge, the old version superseded) or a replaced branch of a
  hierarchical plan (``replace_branch``) — and outcomes are recorded on the path.
- ``no-rewrite`` — append only. Nothing stored is ever modified: a failure appends the next
  method's steps after the failed one (the old pending steps are cancelled, the failed one
  stays), no version is made, no outcome is written onto a path. A later task reuses the
  located trajectory as it was executed (failed steps included, cancelled ones not).
- ``node-recall`` — no path-level localization. Instead of locating paths, the planner recalls
  the ``k`` action nodes whose text is closest to the request (the same dependency-free
  embedder the path index uses) and picks the first domain method that contains no step
  recalled as failed and never recalled as done. Rewrites as in ``full``.
- ``flat`` — no hierarchy. Memory is one level: no paths (no versions, nothing to locate, so
  recall is node-level as above) and no branches to re-enter: a failure re-plans the whole
  task with the alternative method and runs every step again, completed ones included.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import attrs

from hgm_engine.paths.localize import HashedTfidfEmbedder
from planners import Domain, HTNPlanner, MemoryView, StepPlan
from planners.htn import Method, TaskContext, _Ids

__all__ = ["CONDITIONS", "make_planner", "AppendOnlyHTN", "NodeRecallHTN", "FlatHTN"]

CONDITIONS = ("full", "no-rewrite", "node-recall", "flat")
RECALL_K = 8


def _step_key(node: Mapping[str, Any]) -> str:
    spec = node.get("spec") if isinstance(node.get("spec"), Mapping) else {}
    args = spec.get("args") or {}
    inner = ",".join(f"{k}={args[k]}" for k in sorted(args))
    return f"{node.get('task')}({inner})"


def _spec_key(spec: Mapping[str, Any]) -> str:
    return _step_key({"task": spec.get("task"), "spec": spec})


class AppendOnlyHTN(HTNPlanner):
    """``no-rewrite``: plans and stored paths only grow (see the module documentation)."""

    def step(self, view, observation):
        plan = super().step(view, observation)
        if plan.requests:  # an outcome written onto a stored path would be a modification
            plan = attrs.evolve(plan, requests=tuple(r for r in plan.requests if r.get("op") != "record_outcome"))
        return plan

    def _reuse(self, view, task, text, notes):
        spec = self.domain.path_spec(task)
        if spec is None or not spec.reuse or not isinstance(view, MemoryView):  # a preview cannot locate
            return None
        for match in view.locate(text, tags=list(spec.tags) or None, k=spec.k).matches:
            if match.score < spec.min_score:
                continue
            path = view.path(match.path)
            if (path.get("attributes") or {}).get("task", task) != task:
                continue
            steps = [s for s in path.get("steps") or [] if s.get("status") != "cancelled"]
            specs = [dict(s["spec"]) for s in steps if isinstance(s.get("spec"), Mapping)]
            if specs and len(specs) == len(steps):
                notes.append(f"located trajectory {match.path}; replaying its {len(specs)} steps")
                return Method(task, "reuse", tuple(specs), reused_from=match.path)
        return None

    def _repair(self, reader, view, ops, notes, calls, at, why):
        goals = reader.nodes("#$at.ancestors.where(type = 'goal')", params={"at": at["id"]})
        working = self._working_root(reader)
        goals = [g for g in goals if g["id"] != working or g.get("kind") == "path"]
        goals.sort(key=lambda g: len(g.get("pos") or ()), reverse=True)
        for goal in goals:
            tried = list(goal.get("tried") or [])
            ctx = TaskContext(reader, dict(goal.get("args") or {}), goal, self.root)
            method = self._choose(reader, goal.get("task"), ctx, tried)
            if method is None:
                continue
            branch = reader.nodes("#$g.descendants", params={"g": goal["id"]})
            new_ops = [{"op": "update_node", "id": at["id"], "set": {"recovered": True}}]
            new_ops += [{"op": "update_node", "id": n["id"], "set": {"status": "cancelled"}}
                        for n in branch if n["type"] == "action" and n.get("status") in ("pending", "active")]
            children = [n for n in branch if n["id"] in set(reader.query("#$g.children", params={"g": goal["id"]}).ids)]
            ids = _Ids(reader, avoid=[n["id"] for n in branch])
            is_path = goal.get("kind") == "path"
            base = list(goal.get("pos") or [])
            offset = len(children)
            prelude: list = []
            edges: list = []
            plan_nodes = self._expand(reader, ids, method, ctx, base, f"-a{offset}", prelude, edges, {},
                                      path_goal=None)
            for i, node in enumerate(plan_nodes):
                _shift(node, len(base), offset)
                if is_path:
                    node["name"] = node.get("task")
            new_ops += prelude
            new_ops += _as_add_ops(plan_nodes, goal["id"], offset)
            if is_path:
                new_ops += [{"op": "add_edge", "from": a["id"], "to": b["id"], "type": "before"}
                            for a, b in zip(plan_nodes, plan_nodes[1:])]
            else:
                new_ops += edges
            new_ops.append({"op": "update_node", "id": goal["id"], "set": {"tried": tried + [method.name]}})
            return StepPlan(ops=ops + new_ops, reason=f"append: {method.name} after {at['id']}", calls=calls + 1,
                            notes=notes + [f"{why}; appended method {method.name!r} under {goal['id']}"])
        return self._give_up(reader, ops, notes, calls, working, f"{why}; no goal above {at['id']} has an untried method")


def _shift(node: dict[str, Any], level: int, offset: int) -> None:
    """Move a plan node (and its subtree) ``offset`` places along at depth ``level``."""
    pos = list(node.get("pos") or [])
    if len(pos) > level:
        pos[level] += offset
        node["pos"] = pos
    for child in node.get("children") or []:
        _shift(child, level, offset)


def _as_add_ops(plan_nodes: Sequence[Mapping[str, Any]], parent: str, offset: int) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for i, node in enumerate(plan_nodes):
        attributes = {k: v for k, v in node.items() if k not in ("id", "type", "children", "edges")}
        ops.append({"op": "add_node", "id": node["id"], "type": node["type"], "parent": parent, "order": offset + i, **attributes})
        ops += [{"op": "add_edge", "from": node["id"], "to": e["to"], "type": e["type"]} for e in node.get("edges") or []]
        ops += _as_add_ops(node.get("children") or [], node["id"], 0)
    return ops


class NodeRecallHTN(HTNPlanner):
    """``node-recall``: the ``k`` most similar action nodes instead of located paths."""

    embedder = HashedTfidfEmbedder()
    _vectors: dict[tuple[str, str], dict] = {}

    def _vector(self, key: tuple[str, str], text: str) -> dict:
        found = self._vectors.get(key)
        if found is None:
            found = self._vectors[key] = self.embedder.embed_query(text)
        return found

    def _recall(self, view, text: str) -> list[dict[str, Any]]:
        """The ``RECALL_K`` finished actions whose text (content and task) is closest to ``text``
        (cosine of the embedder's vectors; ties: the newer first)."""
        actions = view.nodes("nodes.where(type = 'action', status = 'done' or status = 'failed')",
                             label="recall: every finished action")
        query = self.embedder.embed_query(text)
        qnorm = math.sqrt(sum(w * w for w in query.values())) or 1.0

        def score(node: Mapping[str, Any]) -> float:
            content = f"{node.get('content', '')} {str(node.get('task', '')).replace('_', ' ')}"
            vector = self._vector((node["id"], content), content)
            dot = sum(w * vector.get(f, 0.0) for f, w in query.items())
            norm = math.sqrt(sum(w * w for w in vector.values()))
            return dot / (qnorm * norm) if norm else 0.0

        ranked = sorted(enumerate(actions), key=lambda item: (-score(item[1]), -item[0]))
        return [node for _, node in ranked[:RECALL_K]]

    def _reuse(self, view, task, text, notes):
        if self.domain.path_spec(task) is None and self._kept(task) is None:
            return None
        recalled = self._recall(view, text)
        failed = {_step_key(n) for n in recalled if n.get("status") == "failed"}
        done = {_step_key(n) for n in recalled if n.get("status") == "done"}
        avoid = failed - done
        ctx = TaskContext(view, {}, None, self.root)
        for method in self.domain.methods_for(task):
            if method.repeat < 1 or not self._applicable(view, method, ctx):
                continue
            specs = method.subtasks(ctx) if callable(method.subtasks) else method.subtasks
            if not any(_spec_key(s) in avoid for s in specs):
                notes.append(f"recalled {len(recalled)} nodes; avoiding {sorted(avoid) or 'nothing'}: method {method.name!r}")
                return method
        return None

    def _kept(self, task):  # tasks the recall applies to: the path tasks of the full planner
        return self._paths.get(task) if hasattr(self, "_paths") else None


class FlatHTN(AppendOnlyHTN, NodeRecallHTN):
    """``flat``: one-level memory — no paths, node recall, and whole-plan re-planning."""

    def __init__(self, domain: Domain, **kwargs):
        flat = Domain()
        flat._methods = domain._methods
        flat._operators = domain._operators
        super().__init__(flat, **kwargs)
        self._paths = dict(domain._paths)  # what the full planner kept as paths: recall applies there

    def step(self, view, observation):
        return HTNPlanner.step(self, view, observation)

    def _reuse(self, view, task, text, notes):
        return NodeRecallHTN._reuse(self, view, task, text, notes)

    def _repair(self, reader, view, ops, notes, calls, at, why):
        """Re-plan the whole task: the failed step's goal takes its next method, the actions not
        yet run are cancelled and the whole decomposition is appended again, to be run from
        the start (completed actions stay done but are not reused)."""
        goals = reader.nodes("#$at.ancestors.where(type = 'goal')", params={"at": at["id"]})
        goals.sort(key=lambda g: len(g.get("pos") or ()), reverse=True)
        working = self._working_root(reader)
        root = reader.node(working) or {}
        prefer = dict(root.get("prefer") or {})
        for goal in goals:
            tried = list(prefer.get(goal.get("task")) or [])
            tried += [t for t in goal.get("tried") or [] if t not in tried]
            ctx = TaskContext(reader, dict(goal.get("args") or {}), goal, self.root)
            method = self._choose(reader, goal.get("task"), ctx, tried)
            if method is None:
                continue
            prefer[goal.get("task")] = tried + [method.name]
            everything = reader.nodes("#$r.descendants", params={"r": working})
            new_ops = [{"op": "update_node", "id": at["id"], "set": {"recovered": True}}]
            new_ops += [{"op": "update_node", "id": n["id"], "set": {"status": "cancelled"}}
                        for n in everything if n["type"] == "action" and n.get("status") in ("pending", "active")]
            self._prefer = prefer
            try:
                top = [n for n in everything if n["id"] in set(reader.query("#$r.children", params={"r": working}).ids)]
                offset = len(top)
                rctx = TaskContext(reader, dict(root.get("args") or {}), root, self.root)
                if goal["id"] == working:  # the task itself takes the next method
                    root_method = method
                else:
                    root_method = next(m for m in self.domain.methods_for(root.get("task")) if m.name == root.get("method"))
                ids = _Ids(reader, avoid=[n["id"] for n in everything])
                prelude: list = []
                edges: list = []
                plan_nodes = self._expand(reader, ids, root_method, rctx, [], f"-w{offset}", prelude, edges, {})
            finally:
                self._prefer = {}
            for node in plan_nodes:
                _shift(node, 0, offset)
            new_ops += prelude + _as_add_ops(plan_nodes, working, offset) + edges
            new_ops.append({"op": "update_node", "id": working, "set": {"prefer": prefer}})
            return StepPlan(ops=ops + new_ops, reason=f"re-plan the whole task ({method.name})", calls=calls + 1,
                            notes=notes + [f"{why}; re-planned the whole task"])
        return self._give_up(reader, ops, notes, calls, working, f"{why}; no method left")

    _prefer: dict = {}

    def _choose(self, reader, task, ctx, tried):
        if task in self._prefer:
            tried = list(self._prefer[task])[:-1]
            wanted = self._prefer[task][-1]
            for method in self.domain.methods_for(task):
                if method.name == wanted:
                    return method
        return super()._choose(reader, task, ctx, tried)


def make_planner(condition: str, domain: Domain):
    """The planner of ``condition`` (one of :data:`CONDITIONS`)."""
    if condition == "full":
        return HTNPlanner(domain, name="full")
    if condition == "no-rewrite":
        return AppendOnlyHTN(domain, name="no-rewrite")
    if condition == "node-recall":
        planner = NodeRecallHTN(domain, name="node-recall")
        planner._paths = dict(domain._paths)
        return planner
    if condition == "flat":
        return FlatHTN(domain, name="flat")
    raise ValueError(f"unknown condition {condition!r}; known: {', '.join(CONDITIONS)}")
