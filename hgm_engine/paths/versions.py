"""Versions of a path: rewrite, rollback, outcomes, reset, and the guards that stop storms.

A rewrite never edits a path: it adds a new version (``{root}@v{n}``) with new actions, a
``replaces`` edge to the version it supersedes, and marks that one ``superseded`` with a
lower reward, in one transaction. A rollback does the same with an older version's steps.
Outcomes move a version's reward; on the current version of a rewritten lineage, failures in
a row turn it ``needs_human`` (rewrites refused until a reset). Each change is a *builder*:
the function ``Memory.commit_built`` calls with the overlay (it may run again on a newer
state), so every check sees the state it commits on.

>>> from hgm_engine import Memory
>>> m = Memory()
>>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a", "b"]}])
>>> guards = PathGuards(max_versions=2)
>>> _ = m.commit_built(rewrite_builder("p", [{"keep": 0}, {"remove": 1}], "b is useless", guards))
>>> m.commit_built(rewrite_builder("p", ["c"], "c, then", guards))
Traceback (most recent call last):
...
hgm_engine.errors.PathError: version-cap at p: 'p' has 2 versions (max_versions=2)
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import attrs

from hgm_engine.errors import PathError
from hgm_engine.model import thaw
from hgm_engine.paths.edits import chain, comparable_steps, resolve_steps
from hgm_engine.paths.records import MARKS, PATH_KIND, path_actions, resolve_path, step_edges
from hgm_engine.txn import AddEdge, AddNode, OpContext, UpdateNode, apply_op

__all__ = [
    "PathGuards",
    "shown",
    "MAX_STEPS",
    "MAX_EDGES",
    "REFUSALS",
    "VERSION_ATTRS",
    "LINEAGE_ATTRS",
    "Build",
    "rewrite_builder",
    "rollback_builder",
    "outcome_builder",
    "reset_builder",
]

# Steps a path may have by default: the longest request of the UltraTool and TMDB task-plan
# data has 6 steps, so no real trajectory comes near; a longer one costs a commit seconds.
MAX_STEPS = 1000
# Edges a path may have by default (the data's longest has 4): ten per step of the longest
# path, so a dense 1,000-step graph cannot make one commit take minutes.
MAX_EDGES = 10_000
# Guard refusals (the CLI exits 3 for these, as for constraint refusals).
REFUSALS = ("rewrite-cap", "version-cap", "needs-human")
# Attributes of a version (not copied to the next one) and of a lineage (kept on its root).
VERSION_ATTRS = ("status", "result", "reward", "successes", "failures", "last_outcome", "superseded_by",
                 "version", "lineage", "rewrite_reason", "restored_from", "root", "template")
LINEAGE_ATTRS = ("head", "rewrite_count", "rollback_count", "failed_streak", "needs_human")

# What Memory.commit_built calls: build(overlay, ctx) -> the ids it created.
Build = Callable[[Any, OpContext], list[str]]


@attrs.frozen
class PathGuards:
    """Limits that stop rewrite storms, and the two reward knobs.

    ``max_versions``: versions a lineage may hold (rewrites and rollbacks both add one);
    ``max_rewrites``: rewrites a lineage may have had; ``max_failed_rewrites``: consecutive
    ``failure`` outcomes of rewritten current versions (version 2 or later) after which the
    lineage turns ``needs_human`` and rewrites are refused until ``reset_path``.
    ``max_steps`` and ``max_edges``: steps and ``before`` edges one path may have, a
    trajectory (ingest) or a new version (rewrite); more is refused with ``limit-exceeded``.
    The defaults (:data:`MAX_STEPS`, 1,000, and :data:`MAX_EDGES`, 10,000) are far above any
    real trajectory and keep the commit of the longest path short.
    ``supersede_factor`` multiplies a version's reward when it is superseded;
    ``outcome_rate`` is the weight of a new outcome in the reward's moving average.

    >>> PathGuards(max_versions=3).max_versions
    3
    >>> PathGuards().max_steps
    1000
    """

    max_versions: int = 10
    max_rewrites: int = 20
    max_failed_rewrites: int = 3
    supersede_factor: float = 0.5
    outcome_rate: float = 0.3
    max_steps: int = MAX_STEPS
    max_edges: int = MAX_EDGES

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _new_version(overlay: Any, ctx: OpContext, guards: PathGuards, root: str, versions: list[str], head: str,
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
                  if k not in (*VERSION_ATTRS, *LINEAGE_ATTRS, *MARKS)}
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
        step = {k: v for k, v in step.items() if k not in MARKS}
        step["status"] = "pending"
        apply_op(overlay, AddNode(f"{new_id}/{i}", "action", step, new_id, i), ctx, where)
    for i, j in (edges if edges is not None else chain(len(steps))):
        apply_op(overlay, AddEdge(f"{new_id}/{i}", f"{new_id}/{j}", "before", {}), ctx, where)
    apply_op(overlay, AddEdge(new_id, head, "replaces", {}), ctx, where)
    old_reward = head_node.attrs.get("reward")
    if not isinstance(old_reward, (int, float)) or isinstance(old_reward, bool):
        old_reward = {"success": 1.0, "failure": 0.0}.get(head_node.attrs.get("result"), 0.5)
    apply_op(overlay, UpdateNode(head, {"status": "superseded", "superseded_by": new_id,
                                        "reward": round(old_reward * guards.supersede_factor, 6)}), ctx, where)
    return new_id


def _least_steps(steps_or_ops: Any) -> int:
    """How many steps the new version has at least, from the request alone: every step of a
    full list, one per ``add`` of edit ops."""
    spec = steps_or_ops.get("steps") if isinstance(steps_or_ops, Mapping) else steps_or_ops
    if not isinstance(spec, list):
        return 0
    ops = [item for item in spec if isinstance(item, Mapping) and any(k in item for k in ("keep", "change", "add", "remove"))]
    return sum(1 for op in ops if "add" in op) if ops else len(spec)


def _least_edges(steps_or_ops: Any) -> int:
    """How many edges the new version gets from the request (the full form's ``edges``)."""
    edges = steps_or_ops.get("edges") if isinstance(steps_or_ops, Mapping) else None
    return len(edges) if isinstance(edges, list) else 0


def _check_length(count: int, guards: PathGuards, edges: int = 0) -> None:
    if count > guards.max_steps:
        raise PathError.single("limit-exceeded", f"the new version would have {count} steps; a path holds at most "
                               f"{guards.max_steps} (max_steps={guards.max_steps}, PathGuards.max_steps)", where="steps")
    if edges > guards.max_edges:
        raise PathError.single("limit-exceeded", f"the new version would have {edges} edges; a path holds at most "
                               f"{guards.max_edges} (max_edges={guards.max_edges}, PathGuards.max_edges)", where="edges")


def rewrite_builder(path_id: str, steps_or_ops: Any, reason: str, guards: PathGuards) -> Build:
    """The builder of a rewrite: version n+1 of ``path_id``'s lineage with the steps
    ``steps_or_ops`` makes (:func:`~hgm_engine.paths.edits.resolve_steps`), replacing the
    current one (see ``Memory.rewrite_path``). Refused: an old version (``stale-version``), the
    guards (``needs-human``, ``rewrite-cap``, ``version-cap``), a rewrite that changes nothing.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> m.commit_built(rewrite_builder("p", ["b"], "b, not a", PathGuards()), kind="path-rewrite").created
    ('p@v2',)
    """
    if not isinstance(reason, str) or not reason.strip():
        raise PathError.single("bad-rewrite", "a rewrite needs a reason (a non-empty string)")
    _check_length(_least_steps(steps_or_ops), guards, _least_edges(steps_or_ops))  # before the commit's lock

    def build(overlay, ctx: OpContext) -> list[str]:
        target, root, versions, head = resolve_path(overlay, path_id)
        if target != head:
            raise PathError.single("stale-version", f"{target!r} is not the current version of {root!r} "
                                   f"(that is {head!r}); rewrite the current one", where=target)
        lineage = overlay.node(root).attrs
        if lineage.get("needs_human"):
            raise PathError.single("needs-human", f"{root!r} needs a human: {lineage.get('failed_streak', 0)} consecutive "
                                   f"failures of rewritten versions; reset it (reset_path) before rewriting again", where=root)
        rewrites = lineage.get("rewrite_count", 0)
        if rewrites >= guards.max_rewrites:
            raise PathError.single("rewrite-cap", f"{root!r} has been rewritten {rewrites} times "
                                   f"(max_rewrites={guards.max_rewrites})", where=root)
        if len(versions) >= guards.max_versions:
            raise PathError.single("version-cap", f"{root!r} has {len(versions)} versions "
                                   f"(max_versions={guards.max_versions})", where=root)
        actions = path_actions(overlay, head)
        old_steps = [thaw(a.attrs) for a in actions]
        old_edges = step_edges(overlay, actions)
        steps, edges, goal_changes = resolve_steps(old_steps, steps_or_ops)
        _check_length(len(steps), guards, len(edges or ()))
        new_edges = edges if edges is not None else chain(len(steps))
        head_attrs = overlay.node(head).attrs
        same_goal = all(head_attrs.get(k) == v for k, v in goal_changes.items())
        if comparable_steps(steps) == comparable_steps(old_steps) and new_edges == old_edges and same_goal:
            raise PathError.single("no-change", f"the rewrite leaves {head!r} as it is", where=head)
        new_id = _new_version(overlay, ctx, guards, root, versions, head, head, steps, edges, goal_changes,
                              {"rewrite_reason": reason})
        apply_op(overlay, UpdateNode(root, {"head": new_id, "rewrite_count": rewrites + 1}), ctx, "rewrite")
        return [new_id]

    return build


def rollback_builder(path_id: str, version: int | str, reason: str | None, guards: PathGuards) -> Build:
    """The builder of a rollback: an older ``version`` (a number, ``"v2"`` or a version id)
    of ``path_id``'s lineage made current again as a new version (see ``Memory.rollback_path``).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> _ = m.rewrite_path("p", ["b"], "b, not a")
    >>> m.commit_built(rollback_builder("p", 1, None, PathGuards()), kind="path-rollback").created
    ('p@v3',)
    """

    def build(overlay, ctx: OpContext) -> list[str]:
        _, root, versions, head = resolve_path(overlay, path_id)
        by_number = {overlay.node(v).attrs.get("version", 1): v for v in versions}
        number_text = version.lstrip("v") if isinstance(version, str) else ""
        if isinstance(version, str) and not (number_text.isascii() and number_text.isdigit() and len(number_text) <= 18):
            # not "2" or "v2" (a "²", or digits too many to read, is no number either): a version id
            source = version if version in versions else (root if version == f"{root}@v1" else None)
        else:
            number = int(number_text) if isinstance(version, str) else version
            source = by_number.get(number)
        if source is None:
            known = ", ".join(f"v{n}" for n in sorted(k for k in by_number if isinstance(k, int)))
            raise PathError.single("unknown-version", f"{root!r} has no version {version!r} (it has {known})", where=root)
        if source == head:
            raise PathError.single("no-change", f"{source!r} is already the current version of {root!r}", where=source)
        if len(versions) >= guards.max_versions:
            raise PathError.single("version-cap", f"{root!r} has {len(versions)} versions "
                                   f"(max_versions={guards.max_versions})", where=root)
        actions = path_actions(overlay, source)
        steps = [thaw(a.attrs) for a in actions]
        number = overlay.node(source).attrs.get("version", 1)
        why = reason or f"rollback to v{number}"
        new_id = _new_version(overlay, ctx, guards, root, versions, head, source, steps,
                                   step_edges(overlay, actions), {},
                                   {"rewrite_reason": why, "restored_from": source})
        count = overlay.node(root).attrs.get("rollback_count", 0)
        apply_op(overlay, UpdateNode(root, {"head": new_id, "rollback_count": count + 1}), ctx, "rollback")
        return [new_id]

    return build


def outcome_builder(path_id: str, outcome: str, reward: float | None, guards: PathGuards) -> Build:
    """The builder recording a run's ``outcome`` (``success`` or ``failure``) on a path
    version: its reward moves towards ``reward`` (default 1 or 0), and on the current version
    of a rewritten lineage failures in a row count towards ``needs_human`` (see
    ``Memory.record_outcome``).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> _ = m.commit_built(outcome_builder("p", "success", None, PathGuards()), kind="path-outcome")
    >>> m.path("p")["successes"], m.path("p")["reward"]
    (1, 1.0)
    """
    if not isinstance(outcome, str) or outcome not in ("success", "failure"):
        raise PathError.single("bad-outcome", f"an outcome is 'success' or 'failure', not {shown(outcome)}")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float))
                               or not 0.0 <= reward <= 1.0):
        raise PathError.single("bad-outcome", f"a reward is a number in [0, 1], not {shown(reward)}")

    def build(overlay, ctx: OpContext) -> list[str]:
        target, root, _, head = resolve_path(overlay, path_id)
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

    return build


def reset_builder(path_id: str) -> Build:
    """The builder clearing a lineage's ``needs_human`` and its failure streak (a human has
    looked; see ``Memory.reset_path``); ``no-change`` when there is nothing to clear.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> m.commit_built(reset_builder("p"), kind="path-reset")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.PathError: no-change at p: 'p' does not need a human and has no failure streak
    """

    def build(overlay, ctx: OpContext) -> list[str]:
        _, root, _, _ = resolve_path(overlay, path_id)
        a = overlay.node(root).attrs
        if not a.get("needs_human") and not a.get("failed_streak"):
            raise PathError.single("no-change", f"{root!r} does not need a human and has no failure streak", where=root)
        apply_op(overlay, UpdateNode(root, {"failed_streak": 0}, ("needs_human",)), ctx, "reset")
        return []

    return build


def shown(value: Any, width: int = 60) -> str:
    """A short ``repr`` for a message: a hostile value may be megabytes long, or an integer
    too long for Python to print.

    >>> shown(10**400), shown(10**5000), shown("x" * 100)[-5:]
    ('an integer of 401 digits', 'an integer of about 5001 digits', 'xx...')
    """
    if isinstance(value, int) and not -(10**width) < value < 10**width:
        if value.bit_length() < 14_000:  # Python prints up to 4,300 digits
            return f"an integer of {len(str(abs(value)))} digits"
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
