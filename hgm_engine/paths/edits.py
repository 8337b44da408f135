"""Edit ops on a path's steps: the one interpreter of what a rewrite asks for.

``Memory.rewrite_path`` takes the new version's steps, or edit ops on the old ones
(``keep``, ``change``, ``remove``, ``add``); :func:`resolve_steps` turns either into the new
steps. The LLM rewrite's preview (``hgm_engine.llm.preview_steps``) calls it too, so what a
proposal shows is what commits.

>>> steps, _, _ = resolve_steps([{"name": "a"}, {"name": "b"}],
...                             [{"add": {"name": "c"}, "after": 0}, {"keep": 0}, {"keep": 1}])
>>> [s["name"] for s in steps]
['a', 'c', 'b']
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from hgm_engine.errors import PathError
from hgm_engine.paths.records import MARKS

__all__ = ["resolve_steps", "chain", "comparable_steps", "STEP_RENAMED"]

# Step keys that cannot be action attributes (the node's own type and id), and their names.
STEP_RENAMED = {"type": "step_type", "id": "step_id"}
_OP_KEYS = ("keep", "change", "add", "remove")


def _new_step(doc: Any, where: str) -> dict[str, Any]:
    """A new step's attributes: a name string or an object with a ``name``, keys renamed."""
    if isinstance(doc, str) and doc:
        return {"name": doc}
    if not isinstance(doc, Mapping):
        raise PathError.single("bad-steps", "a step is an object with a 'name' (or a name string)", where=where)
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        raise PathError.single("bad-steps", "a step needs a non-empty 'name'", where=where)
    if any(k in doc for k in MARKS):
        raise PathError.single("bad-steps", "'dirty' and 'dirty_marks' are staleness marks set by rules", where=where)
    return {STEP_RENAMED.get(k, k): v for k, v in doc.items()}


def _index(value: Any, n: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
        raise PathError.single("bad-steps", f"{value!r} is not a step index of the old version (0..{n - 1})", where=where)
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
            raise PathError.single("bad-steps", f"unknown keys {unknown}: give steps, edges, tags, goal", where="steps")
        if "tags" in spec:
            tags = spec["tags"]
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise PathError.single("bad-steps", "'tags' must be a list of strings", where="tags")
            goal_changes["tags"] = list(dict.fromkeys(tags))
        if "goal" in spec:
            if not isinstance(spec["goal"], str):
                raise PathError.single("bad-steps", "'goal' must be a string", where="goal")
            goal_changes["content"] = spec["goal"]
        if spec.get("edges") is not None:
            raw = spec["edges"]
            if not isinstance(raw, list):
                raise PathError.single("bad-steps", "'edges' must be a list of [i, j] pairs", where="edges")
            edges = []
            for k, edge in enumerate(raw):
                if (not isinstance(edge, (list, tuple)) or len(edge) != 2
                        or not all(isinstance(i, int) and not isinstance(i, bool) for i in edge)):
                    raise PathError.single("bad-steps", f"edge {edge!r} is not a pair of step indices", where=f"edges[{k}]")
                edges.append((edge[0], edge[1]))
        spec = spec.get("steps")
    if not isinstance(spec, list) or not spec:
        raise PathError.single("bad-steps", "give a non-empty list of steps or of edit ops", where="steps")
    is_op = [isinstance(item, Mapping) and any(k in item for k in _OP_KEYS) for item in spec]
    if any(is_op) and not all(is_op):
        raise PathError.single("bad-steps", "a list is either all steps or all edit ops (keep/change/add/remove)", where="steps")
    if not all(is_op):
        steps = [_new_step(item, f"steps[{i}]") for i, item in enumerate(spec)]
    else:
        if edges is not None:
            raise PathError.single("bad-steps", "edges go with a full list of steps, not with edit ops", where="edges")
        n = len(old)
        named: dict[int, str] = {}
        changed: dict[int, dict[str, Any]] = {}
        removed: set[int] = set()
        inserts: dict[int, list[dict[str, Any]]] = {}
        for k, op in enumerate(spec):
            where = f"ops[{k}]"
            keys = [key for key in _OP_KEYS if key in op]
            if len(keys) != 1:
                raise PathError.single("bad-steps", f"an op has exactly one of {', '.join(_OP_KEYS)}", where=where)
            key = keys[0]
            allowed = {"keep": {"keep"}, "remove": {"remove"}, "change": {"change", "step"}, "add": {"add", "after"}}[key]
            extra = sorted(set(op) - allowed)
            if extra:
                raise PathError.single("bad-steps", f"'{key}' does not take {extra}", where=where)
            if key == "add":
                after = op.get("after", -1)
                if after != -1:
                    after = _index(after, n, where=where)
                inserts.setdefault(after, []).append(_new_step(op["add"], where))
                continue
            i = _index(op[key], n, where=where)
            if i in named:
                raise PathError.single("bad-steps", f"step {i} is already named by a {named[i]!r} op", where=where)
            named[i] = key
            if key == "remove":
                removed.add(i)
            elif key == "change":
                update = op.get("step")
                if not isinstance(update, Mapping) or not update:
                    raise PathError.single("bad-steps", "'change' needs a non-empty 'step' object", where=where)
                if any(k2 in update for k2 in MARKS):
                    raise PathError.single("bad-steps", "'dirty' and 'dirty_marks' are staleness marks set by rules", where=where)
                changed[i] = {STEP_RENAMED.get(k2, k2): v for k2, v in update.items()}
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
                    raise PathError.single("bad-steps", f"step {i} would have no name", where=f"ops (step {i})")
                steps.append(new)
            steps.extend(inserts.get(i, []))
        if not steps:
            raise PathError.single("bad-steps", "the new version would have no steps", where="steps")
    if edges is not None:
        for k, (i, j) in enumerate(edges):
            if not (0 <= i < len(steps) and 0 <= j < len(steps)) or i == j:
                raise PathError.single("bad-steps", f"edge [{i}, {j}] does not join two of the {len(steps)} steps", where=f"edges[{k}]")
        edges = sorted(set(edges))
    return steps, edges, goal_changes


def chain(n: int) -> list[tuple[int, int]]:
    """The edges joining ``n`` steps in order.

    >>> chain(3)
    [(0, 1), (1, 2)]
    """
    return [(i, i + 1) for i in range(n - 1)]


def comparable_steps(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Steps without what runs change (status, staleness marks): equal when a rewrite would
    change nothing.

    >>> comparable_steps([{"name": "a", "status": "done"}]) == comparable_steps([{"name": "a"}])
    True
    """
    return [{k: v for k, v in s.items() if k not in ("status", *MARKS)} for s in steps]
