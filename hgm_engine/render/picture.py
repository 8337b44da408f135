"""What a picture of a memory shows, whatever its format: :func:`picture` decides, the
formats (:mod:`~hgm_engine.render.mermaid`, :mod:`~hgm_engine.render.dot`,
:mod:`~hgm_engine.render.html`) only draw its :class:`Picture`.

It is the ``parent_of`` hierarchy (children in edge order) with the nodes that are in no
hierarchy (entities, facts, results) beside it, and every other edge between drawn nodes;
``root``/``depth`` cut it as ``hgm show`` does, ``as_of`` takes an earlier state, and
``highlight`` (a path expression) marks what a query finds and the walks that reached it
(its ``.paths()`` form).

>>> from hgm_engine.memory import Memory
>>> m = Memory.from_document({"format": "hgm-graph/1",
...     "nodes": [{"id": "trip", "type": "goal"}, {"id": "visit", "type": "action"}, {"id": "park", "type": "entity"}],
...     "edges": [{"from": "trip", "to": "visit", "type": "parent_of"}, {"from": "visit", "to": "park", "type": "related_to"}]})
>>> p = picture(m, highlight="root.actions")
>>> [n.id for n in p.nodes], sorted(p.hierarchy), dict(p.marked)
(['trip', 'visit', 'park'], ['trip', 'visit'], {'trip': 'path', 'visit': 'result'})
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any, Mapping, Union

import attrs

from hgm_engine.errors import HGMError, Problem
from hgm_engine.memory import HistoricalMemory, Memory
from hgm_engine.model import Edge, MemoryGraph, Node
from hgm_engine.query import compile as compile_query
from hgm_engine.render.labels import hierarchy_tops, in_hierarchy, plural
from hgm_engine.store import graph_from_document

__all__ = ["Drawable", "Highlight", "Picture", "picture", "dirty_state"]

# What can be drawn: a memory (now or, through as_of, earlier), a past state of one, a bare graph.
Drawable = Union[Memory, HistoricalMemory, MemoryGraph]


@attrs.frozen
class Highlight:
    """What a highlight query found: the result ``ids`` (in result order), the ``paths`` that
    reached them, and a ``note`` when it marks nothing (a count or exists query) or when some
    results are outside the drawn part. ``value`` is the count or boolean of such queries.

    >>> Highlight("root.actions", "nodes", ("visit",), (("trip", "visit"),)).count
    1
    """

    query: str
    kind: str
    ids: tuple[str, ...] = ()
    paths: tuple[tuple[str, ...], ...] = ()
    value: Any = None
    note: str | None = None

    @property
    def count(self) -> int:
        """How many results the query had (the count itself for a ``.count()`` query).

        >>> Highlight("nodes.count()", "count", value=7).count, Highlight("nodes.exists()", "exists", value=True).count
        (7, 1)
        """
        if self.kind == "count":
            return int(self.value)
        if self.kind == "exists":
            return int(bool(self.value))
        return len(self.ids)

    def to_json(self) -> dict[str, Any]:
        """The highlight as the HTML page embeds it (lists for tuples, ``count`` included).

        >>> Highlight("root.actions", "nodes", ("visit",), (("trip", "visit"),)).to_json()["paths"]
        [['trip', 'visit']]
        """
        return {
            "query": self.query,
            "kind": self.kind,
            "count": self.count,
            "value": self.value,
            "ids": list(self.ids),
            "paths": [list(p) for p in self.paths],
            "note": self.note,
        }


@attrs.frozen
class Picture:
    """What a picture shows, whatever its format.

    ``nodes`` are the drawn payloads — the hierarchy in drawing order (depth first, children
    in edge order), then the nodes in no hierarchy in creation order; ``levels`` gives each
    hierarchy node's depth below its top; ``tree_parent`` the parent it is drawn under;
    ``hidden`` how many children ``depth`` left out. ``edges`` are the drawn edges: the
    hierarchy's ``parent_of`` edges in drawing order, then every other edge between drawn nodes
    in creation order. ``marked`` maps highlighted ids to ``"result"`` or ``"path"``;
    ``marked_edges`` holds the keys of the edges the highlight's walks use. ``total_nodes``
    and ``total_edges`` count the whole state drawn from, ``t`` is its time (None for a bare
    graph) and ``histories`` each drawn node's commits (None when not asked for or unknown).
    ``omitted`` and ``omitted_edges`` count what ``max_nodes`` left out (0 when nothing was),
    and ``note`` says so in words. :func:`picture` makes one:

    >>> p = picture(MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {})], [("g", "a", "parent_of", {})]))
    >>> [n.id for n in p.nodes], dict(p.levels), dict(p.tree_parent), p.total_edges, p.t
    (['g', 'a'], {'g': 0, 'a': 1}, {'g': None, 'a': 'g'}, 1, None)
    """

    nodes: tuple[Node, ...]
    hierarchy: frozenset[str]
    levels: Mapping[str, int]
    tree_parent: Mapping[str, str | None]
    hidden: Mapping[str, int]
    edges: tuple[Edge, ...]
    highlight: Highlight | None
    marked: Mapping[str, str]
    marked_edges: frozenset[tuple[str, str, str]]
    total_nodes: int
    total_edges: int
    t: int | None
    histories: Mapping[str, list[dict[str, Any]]] | None
    omitted: int = 0
    omitted_edges: int = 0
    note: str | None = None


def dirty_state(node: Node) -> str | None:
    """``"needs_review"`` or ``"blocked"`` when a rule marked ``node`` (its ``dirty``
    attribute), else None: what every picture draws as a stale or blocked mark.

    >>> graph = MemoryGraph.from_records([("a", "action", {"dirty": "blocked"}), ("b", "action", {})], [])
    >>> dirty_state(graph.node("a")), dirty_state(graph.node("b"))
    ('blocked', None)
    """
    state = node.get("dirty")
    return state if state in ("needs_review", "blocked") else None


# -- what to draw ------------------------------------------------------------------------------


def _sources(memory: Drawable, as_of: int | str | None) -> tuple[Memory | None, MemoryGraph, int | None]:
    """(the Memory or None, the graph to draw, the ``t`` drawn or None)."""
    if isinstance(memory, MemoryGraph):
        if as_of is not None:
            raise HGMError([Problem("invalid-argument", "as_of needs a memory: a bare graph has no history", where="as_of")])
        return None, memory, None
    if isinstance(memory, HistoricalMemory):
        if as_of is None:
            as_of = memory.t
        memory = memory.memory
    if not isinstance(memory, Memory):
        raise TypeError(f"cannot draw a {type(memory).__name__}: pass a Memory or a MemoryGraph")
    if as_of is None:
        return memory, memory.graph, memory.t
    t = memory.as_of(as_of).t  # resolves snapshot names; refuses a t outside the history
    if t == memory.t:
        return memory, memory.graph, t
    return memory, graph_from_document(memory.export(as_of=t), memory.schema), t


def _walk_hierarchy(graph: MemoryGraph, tops: list[str], depth: int | None):
    """Depth-first from the tops, children in edge order, each node once (its first place)."""
    order: list[str] = []
    levels: dict[str, int] = {}
    tree_parent: dict[str, str | None] = {}
    hidden: dict[str, int] = {}
    stack: list[tuple[str, str | None, int]] = [(top, None, 0) for top in reversed(tops)]
    while stack:
        node_id, parent, level = stack.pop()
        if node_id in levels:
            continue
        levels[node_id] = level
        tree_parent[node_id] = parent
        order.append(node_id)
        children = graph.out_ids(node_id, "parent_of")
        if depth is not None and level >= depth:
            if children:
                hidden[node_id] = len(children)
            continue
        for child in reversed(children):
            if child not in levels:
                stack.append((child, node_id, level + 1))
    return order, levels, tree_parent, hidden


def picture(
    memory: Drawable,
    *,
    root: str | None = None,
    depth: int | None = None,
    highlight: str | None = None,
    as_of: int | str | None = None,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
    history: bool = True,
    max_nodes: int | None = None,
) -> Picture:
    """Decide what a picture shows (the formats only draw it): see :class:`Picture`.

    Without ``root`` every tree is drawn and every node in no hierarchy beside it; with
    ``root``, its subtree and the non-hierarchy nodes connected to it (through other such
    nodes too). ``depth`` limits the levels below each top (0: tops only). ``highlight`` is a
    path expression run on the state drawn (with ``focus`` and ``params``); compile and run
    errors are the engine's :class:`~hgm_engine.errors.HGMError`. ``history`` embeds each drawn
    node's history (commits up to the state drawn) when ``memory`` is a Memory.

    ``max_nodes`` caps what is drawn: a picture that would hold more shows a focused
    neighbourhood instead — the highlight's results (else ``root``, else the tops of the
    hierarchy), the chain of parents above them, then what is nearest to them over any edge,
    until ``max_nodes`` nodes are drawn — and ``note`` says what was left out. A node whose
    children were left out counts them in ``hidden``.

    >>> from hgm_engine.cli import sample_document
    >>> p = picture(Memory.from_document(sample_document()), highlight="#a_wall_bus", max_nodes=4)
    >>> [n.id for n in p.nodes], p.omitted
    (['trip', 'd3', 'a_wall_bus', 'a_wall_car'], 28)
    >>> print(p.note)
    showing 4 of 32 nodes (max_nodes 4): the highlight's 1 result and what is nearest to it; 28 nodes and 39 edges are left out

    >>> from hgm_engine.cli import sample_document
    >>> from hgm_engine.memory import Memory
    >>> p = picture(Memory.from_document(sample_document()), root="d3", highlight="#d3.actions.where(status = 'failed')")
    >>> [n.id for n in p.nodes]
    ['d3', 'a_wall_bus', 'a_wall_car', 'a_pack', 'e_mutianyu', 'f_sold_out']
    >>> p.highlight.paths, sorted(p.marked.items()), sorted(p.marked_edges)
    ((('d3', 'a_wall_bus'),), [('a_wall_bus', 'result'), ('d3', 'path')], [('d3', 'a_wall_bus', 'parent_of')])
    """
    if depth is not None and depth < 0:
        raise HGMError([Problem("invalid-argument", f"depth must be 0 or more, not {depth}", where="depth")])
    if max_nodes is not None and (isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1):
        raise HGMError([Problem("invalid-argument", f"max_nodes must be 1 or more, not {max_nodes!r}", where="max_nodes")])
    owner, graph, t = _sources(memory, as_of)
    if root is not None:
        if root not in graph:
            raise HGMError([Problem("unknown-node", f"no node {root!r} to draw from", where="root")])
        tops = [root]
    else:
        tops = hierarchy_tops(graph)
    order, levels, tree_parent, hidden = _walk_hierarchy(graph, tops, depth)
    hierarchy_ids = set(levels)
    nodes_by_id = graph.node_map()

    # Nodes in no hierarchy: all of them, or (with a root) those connected to the drawn part.
    loose: list[str]
    if root is None:
        loose = [n.id for n in graph.nodes() if not in_hierarchy(graph, n)]
    else:
        reached: set[str] = set()
        frontier = list(order)
        while frontier:
            node_id = frontier.pop()
            for edge in (*graph.out_edges(node_id), *graph.in_edges(node_id)):
                other = edge.target if edge.source == node_id else edge.source
                if other not in reached and other not in hierarchy_ids and not in_hierarchy(graph, nodes_by_id[other]):
                    reached.add(other)
                    frontier.append(other)
        loose = [n.id for n in graph.nodes() if n.id in reached]
    drawn_ids = order + loose
    found = None if highlight is None else _run_highlight(owner, graph, highlight, t if as_of is not None else None, focus, params)

    omitted = omitted_edges = 0
    note = None
    if max_nodes is not None and len(drawn_ids) > max_nodes:
        if found is not None and found.ids:
            centres, what = list(found.ids), f"the highlight's {plural(len(found.ids), 'result')}"
        elif root is not None:
            centres, what = [root], f"the root {root!r}"
        else:
            centres, what = list(tops), "the tops of the hierarchy"
        keep = _neighbourhood(graph, drawn_ids, tree_parent, centres, max_nodes)
        omitted = len(drawn_ids) - len(keep)
        order, loose = [i for i in order if i in keep], [i for i in loose if i in keep]
        kids: dict[str, int] = {}
        for node_id, parent in tree_parent.items():
            if parent is not None and node_id not in keep:
                kids[parent] = kids.get(parent, 0) + 1
        hidden = {i: hidden.get(i, 0) + kids.get(i, 0) for i in order if hidden.get(i, 0) + kids.get(i, 0)}
        tree_parent = {i: (tree_parent[i] if tree_parent[i] in keep else None) for i in order}
        levels = {}
        for node_id in order:  # depth first: a parent comes before its children
            parent = tree_parent[node_id]
            levels[node_id] = 0 if parent is None else levels[parent] + 1
        hierarchy_ids = set(order)
        drawn_ids = order + loose
        nearest = "them" if len(centres) != 1 else "it"
        note = f"showing {len(drawn_ids)} of {len(order) + len(loose) + omitted} nodes (max_nodes {max_nodes}): {what} and what is nearest to {nearest}"
    drawn = set(drawn_ids)

    edges: list[Edge] = []
    for node_id in order:
        for child in graph.out_ids(node_id, "parent_of"):
            if child in drawn:
                edges.append(graph.edge(node_id, child, "parent_of"))
    others = [e for node_id in drawn_ids for e in graph.out_edges(node_id) if e.type != "parent_of" and e.target in drawn]
    edges.extend(sorted(others, key=lambda e: e.seq))
    if note is not None:
        omitted_edges = graph.edge_count - len(edges)
        note += f"; {plural(omitted, 'node')} and {plural(omitted_edges, 'edge')} are left out"

    marked: dict[str, str] = {}
    marked_edges: set[tuple[str, str, str]] = set()
    if found is not None:
        between: dict[frozenset, list[tuple[str, str, str]]] = {}
        for edge in edges:
            between.setdefault(frozenset((edge.source, edge.target)), []).append(edge.key)
        for walk in found.paths:
            for node_id in walk[:-1]:
                if node_id in drawn:
                    marked.setdefault(node_id, "path")
            for a, b in zip(walk, walk[1:]):
                marked_edges.update(between.get(frozenset((a, b)), ()))
        for node_id in found.ids:
            if node_id in drawn:
                marked[node_id] = "result"
        outside = [i for i in found.ids if i not in drawn]
        if outside and found.note is None:
            found = attrs.evolve(found, note=f"{plural(len(outside), 'result')} outside the part drawn")

    histories = None
    if owner is not None and history:
        histories = owner.histories(drawn_ids, upto=t)
    return Picture(
        nodes=tuple(nodes_by_id[i] for i in drawn_ids),
        hierarchy=frozenset(hierarchy_ids),
        levels=levels,
        tree_parent=tree_parent,
        hidden=hidden,
        edges=tuple(edges),
        highlight=found,
        marked=marked,
        marked_edges=frozenset(marked_edges),
        total_nodes=len(graph),
        total_edges=graph.edge_count,
        t=t,
        histories=histories,
        omitted=omitted,
        omitted_edges=omitted_edges,
        note=note,
    )


def _neighbourhood(
    graph: MemoryGraph, drawn_ids: list[str], tree_parent: Mapping[str, str | None], centres: list[str], limit: int
) -> set[str]:
    """At most ``limit`` of ``drawn_ids``: the ``centres``, the parents above them (each
    centre's chain up to its top), then breadth first over every edge, nearest first."""
    drawn = set(drawn_ids)
    keep: dict[str, None] = {}

    def add(node_id: str) -> bool:
        if node_id in drawn and node_id not in keep and len(keep) < limit:
            keep[node_id] = None
            return True
        return False

    for centre in centres:
        add(centre)
    for centre in centres:
        chain: list[str] = []
        node_id = tree_parent.get(centre)
        while node_id is not None and node_id not in chain and node_id != centre:
            chain.append(node_id)
            node_id = tree_parent.get(node_id)
        for node_id in chain:
            add(node_id)
    queue = deque(keep)
    while queue and len(keep) < limit:
        node_id = queue.popleft()
        for edge in (*graph.out_edges(node_id), *graph.in_edges(node_id)):
            other = edge.target if edge.source == node_id else edge.source
            if add(other):
                queue.append(other)
    return set(keep)


def _run_highlight(owner: Memory | None, graph: MemoryGraph, text: str, as_of: int | None, focus: str | None, params: Any) -> Highlight:
    """Run the highlight query, then its ``.paths()`` form for the walks."""
    if owner is not None:

        def compile_(expr: str):
            return owner.compile(expr)

        def run(expr: str):
            return owner.query(expr, focus=focus, params=params, as_of=as_of)

    else:
        compile_ = compile_query

        def run(expr: str):
            return compile_query(expr).run(graph, focus=focus, params=params)

    result = run(text)  # errors (compile, focus, parameters) come from the text as written
    if result.kind in ("count", "exists"):
        value = result.value
        note = f"a .{result.kind}() query ({json.dumps(value)}) marks no nodes; drop the final to see them"
        return Highlight(text, result.kind, value=value, note=note)
    if result.kind == "paths":
        paths = [tuple(p) for p in result.paths]
        return Highlight(text, "paths", tuple(p[-1] for p in paths if p), tuple(paths))
    ids = tuple(result.ids)
    paths = [(i,) for i in ids]
    stripped = text.strip()
    for candidate in (stripped + ".paths()", "(" + stripped + ").paths()"):
        try:
            compile_(candidate)
        except HGMError:
            continue
        walks = run(candidate).paths
        if [w[-1] for w in walks if w] == list(ids):
            paths = [tuple(w) for w in walks]
        break
    return Highlight(text, "nodes", ids, tuple(paths))
