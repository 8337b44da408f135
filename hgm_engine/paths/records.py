"""Paths as the graph holds them: which goals are paths, their steps, lineages and records.

A *path* is a goal node with ``kind = "path"``: its ``content`` is the goal text, its actions
(``parent_of`` with ``order``) are the steps and ``before`` edges order them. A path may sit
under a *scenario* goal (``kind = "scenario"``). Versions of one path form a *lineage* joined
by ``replaces`` edges (newer → older); the first version's id (the trajectory id) names the
whole lineage and resolves to its current version. Everything here only reads: ``view`` is a
``MemoryGraph`` or an overlay (anything with ``node``, ``nodes_of_type`` and the adjacencies).

>>> from hgm_engine import Memory
>>> m = Memory()
>>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a", "b"]}])
>>> _ = m.rewrite_path("p", ["a", "c"], "c instead of b")
>>> lineage_of(m.graph, "p"), resolve_path(m.graph, "p")[0]
(('p', ['p', 'p@v2'], 'p@v2'), 'p@v2')
"""

from __future__ import annotations

import difflib
from typing import Any, Sequence

from hgm_engine.errors import LocalizationError, PathError
from hgm_engine.model import Node, thaw
from hgm_engine.paths.localize import PATH_RESULTS, PathRecord, Step

__all__ = [
    "PATH_KIND",
    "SCENARIO_KIND",
    "MARKS",
    "is_path",
    "is_scenario",
    "path_actions",
    "step_edges",
    "step_name",
    "scenario_of",
    "replaces_of",
    "replaced_by",
    "lineage_of",
    "resolve_path",
    "record_from_graph",
    "affected_paths",
]

PATH_KIND = "path"
SCENARIO_KIND = "scenario"
# Staleness marks: rules set them, so neither a trajectory nor a rewrite may.
MARKS = ("dirty", "dirty_marks")


def is_path(node: Node | None) -> bool:
    """Whether ``node`` is a path goal.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}], scenario="shop")
    >>> is_path(m.graph.node("p")), is_path(m.graph.node("shop")), is_path(None)
    (True, False, False)
    """
    return node is not None and node.type == "goal" and node.attrs.get("kind") == PATH_KIND


def is_scenario(node: Node | None) -> bool:
    """Whether ``node`` is a scenario goal (paths sit under it; locating stops at its border).

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}], scenario="shop")
    >>> is_scenario(m.graph.node("shop")), is_scenario(m.graph.node("p"))
    (True, False)
    """
    return node is not None and node.type == "goal" and node.attrs.get("kind") == SCENARIO_KIND


def path_actions(view: Any, goal_id: str) -> list[Node]:
    """The actions under a goal, in edge order (``order`` of ``parent_of``): a path's steps.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a", "b"]}])
    >>> [a.id for a in path_actions(m.graph, "p")]
    ['p/0', 'p/1']
    """
    out = []
    for child in view.out_adjacency(goal_id).by_type.get("parent_of", ()):
        node = view.node(child)
        if node is not None and node.type == "action":
            out.append(node)
    return out


def step_edges(view: Any, actions: Sequence[Node]) -> list[tuple[int, int]]:
    """The ``before`` edges between ``actions`` as ``(i, j)`` pairs of their positions.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a", "b", "c"], "edges": [[0, 2], [1, 2]]}])
    >>> step_edges(m.graph, path_actions(m.graph, "p"))
    [(0, 2), (1, 2)]
    """
    position = {a.id: i for i, a in enumerate(actions)}
    edges = []
    for i, action in enumerate(actions):
        for target in view.out_adjacency(action.id).by_type.get("before", ()):
            j = position.get(target)
            if j is not None and j != i:
                edges.append((i, j))
    return sorted(set(edges))


def step_name(node: Node) -> str:
    """A step's name: its ``name``, else its ``content``, else its id.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": [{"name": "query_order"}]}])
    >>> step_name(m.graph.node("p/0"))
    'query_order'
    """
    name = node.attrs.get("name")
    if isinstance(name, str) and name:
        return name
    content = node.attrs.get("content")
    return content if isinstance(content, str) and content else node.id


def scenario_of(view: Any, node: Node) -> str | None:
    """The scenario a path belongs to: the scenario goal above it, else its ``scenario``.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}], scenario="shop")
    >>> scenario_of(m.graph, m.graph.node("p"))
    'shop'
    """
    for parent in view.in_adjacency(node.id).by_type.get("parent_of", ()):
        if is_scenario(view.node(parent)):
            return parent
    value = node.attrs.get("scenario")
    return value if isinstance(value, str) and value else None


def replaces_of(view: Any, node_id: str) -> str | None:
    """The path version ``node_id`` replaces (its ``replaces`` edge), or None.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> _ = m.rewrite_path("p", ["b"], "b instead of a")
    >>> replaces_of(m.graph, "p@v2"), replaced_by(m.graph, "p")
    ('p', ['p@v2'])
    """
    for target in view.out_adjacency(node_id).by_type.get("replaces", ()):
        if is_path(view.node(target)):
            return target
    return None


def replaced_by(view: Any, node_id: str) -> list[str]:
    """The path versions that replace ``node_id`` (see :func:`replaces_of`)."""
    return [s for s in view.in_adjacency(node_id).by_type.get("replaces", ()) if is_path(view.node(s))]


def lineage_of(view: Any, node_id: str) -> tuple[str, list[str], str]:
    """``(root, versions oldest first, head)`` of the lineage through the path ``node_id``.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> lineage_of(m.graph, "p")
    ('p', ['p'], 'p')
    """
    root, seen = node_id, {node_id}
    while True:
        older = replaces_of(view, root)
        if older is None or older in seen:
            break
        seen.add(older)
        root = older
    versions, frontier = [root], [root]
    while frontier:
        following = []
        for current in frontier:
            for newer in replaced_by(view, current):
                if newer not in versions:
                    versions.append(newer)
                    following.append(newer)
        frontier = following

    def version_key(vid: str) -> tuple:
        value = view.node(vid).attrs.get("version")
        return (value if isinstance(value, int) else 0, view.node(vid).seq)

    versions.sort(key=version_key)
    heads = [v for v in versions if not replaced_by(view, v)]
    head = max(heads, key=version_key) if heads else versions[-1]
    return root, versions, head


def resolve_path(view: Any, path_id: Any) -> tuple[str, str, list[str], str]:
    """``(target, root, versions, head)`` for a path id: a lineage root's id names its
    current version; ``ROOT@v1`` names the root itself; any other version id names that
    version. Anything else is a ``PathError`` ``unknown-path`` (with a "did you mean").

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "order-17", "goal": "g", "steps": ["a"]}])
    >>> resolve_path(m.graph, "order-17@v1")[0]
    'order-17'
    >>> resolve_path(m.graph, "order-71")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.PathError: unknown-path at order-71: no path 'order-71'; did you mean 'order-17'?
    """
    if not isinstance(path_id, str) or not path_id:
        raise PathError.single("unknown-path", f"a path id is a non-empty string, not {path_id!r}")
    names_lineage = False  # a root's own id names its lineage (its current version)
    node = view.node(path_id)
    target = path_id
    if node is None and path_id.endswith("@v1"):
        target = path_id[:-3]
        node = view.node(target)
    elif node is not None:
        names_lineage = True
    if not is_path(node):
        if node is not None:
            kind = node.attrs.get("kind")
            what = f"a {node.type}" + (f" of kind {kind!r}" if kind else "")
            raise PathError.single("unknown-path", f"{path_id!r} is {what}, not a path", where=path_id)
        known = [n.id for n in view.nodes_of_type("goal") if is_path(n)]
        close = difflib.get_close_matches(path_id, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise PathError.single("unknown-path", f"no path {path_id!r}{hint}", where=path_id)
    root, versions, head = lineage_of(view, target)
    if names_lineage and target == root:
        target = head
    return target, root, versions, head


def record_from_graph(view: Any, goal_id: str) -> PathRecord | None:
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
    if not is_path(node):
        return None
    actions = path_actions(view, goal_id)
    if not actions:
        return None
    attrs_ = node.attrs
    steps = []
    for action in actions:
        content = action.attrs.get("content")
        extra = {k: v for k, v in thaw(action.attrs).items() if k not in ("name", "content", "status", *MARKS)}
        steps.append(Step(step_name(action), content if isinstance(content, str) else "", extra))
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
            edges=step_edges(view, actions),
            tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, (list, tuple)) else (),
            reward=reward if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None,
            result=attrs_.get("result") if attrs_.get("result") in PATH_RESULTS else None,
            status=status,
            version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
            replaces=replaces_of(view, goal_id),
            scenario=scenario_of(view, node),
        )
    except LocalizationError:
        return None


def affected_paths(commit: Any, view: Any) -> set[str]:
    """Ids of the goals whose path records ``commit`` may have changed (``view``: the state
    after it): changed goals, the owners of changed actions and ``before`` edges, both ends of
    ``replaces`` edges.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.ingest([{"id": "p", "goal": "g", "steps": ["a"]}])
    >>> _ = m.apply({"ops": [{"op": "update_node", "id": "p/0", "set": {"name": "b"}}]})
    >>> affected_paths(m.commits()[-1], m.graph)
    {'p'}
    """
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
