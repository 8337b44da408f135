"""Pictures of a memory: Mermaid, Graphviz DOT and one self-contained HTML page.

Every function here is pure: a memory (or a bare :class:`~hgm_engine.model.graph.MemoryGraph`) in,
text out. What is drawn is the same in every format — the ``parent_of`` hierarchy (children in
edge order) with the nodes that are in no hierarchy (entities, facts, results) beside it, and
every other edge as a labelled dashed arrow. ``root``/``depth`` cut the drawing as ``hgm show``
does, ``as_of`` draws an earlier state, and ``highlight`` (a path expression) marks what a query
finds and the walks that reached it (``.paths()``).

>>> from hgm_engine.memory import Memory
>>> m = Memory.from_document({"format": "hgm-graph/1",
...     "nodes": [{"id": "trip", "type": "goal", "content": "Trip"},
...               {"id": "visit", "type": "action", "status": "pending"},
...               {"id": "park", "type": "entity", "content": "Park"}],
...     "edges": [{"from": "trip", "to": "visit", "type": "parent_of"},
...               {"from": "visit", "to": "park", "type": "related_to"}]})
>>> print(to_mermaid(m, highlight="root.actions"))
flowchart TD
    %% highlight: root.actions (1 result)
    n0["trip [goal]<br/>Trip"]
    n1["visit [action]<br/>pending"]
    subgraph outside["not in the hierarchy"]
        n2["park [entity]<br/>Park"]
    end
    n0 --> n1
    n1 -.->|related_to| n2
    classDef goal fill:#dbeafe,stroke:#3b82f6,color:#111827
    classDef action fill:#dcfce7,stroke:#22c55e,color:#111827
    classDef entity fill:#fef3c7,stroke:#f59e0b,color:#111827
    class n0 goal
    class n1 action
    class n2 entity
    classDef highlight fill:#ffedd5,stroke:#ea580c,stroke-width:3px
    classDef onpath stroke:#ea580c,stroke-width:2px,stroke-dasharray:5 3
    class n1 highlight
    class n0 onpath
    linkStyle 0 stroke:#ea580c,stroke-width:3px
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Iterable, Mapping

import attrs

from hgm_engine.errors import HGMError, Problem
from hgm_engine.model import Edge, MemoryGraph, Node, thaw

__all__ = ["FORMATS", "Picture", "Highlight", "picture", "render", "to_mermaid", "to_dot", "to_html"]

FORMATS = ("mermaid", "dot", "html")

# Layout of the HTML view (pixels): node boxes, the gap between columns and between rows.
NODE_WIDTH = 210
NODE_HEIGHT = 46
COLUMN_GAP = 90
ROW_GAP = 14
MARGIN = 24
_LABEL_WIDTH = 48  # characters of content in Mermaid/DOT labels
_BOX_CHARS = 30  # characters that fit on one line of an HTML node box

_TYPE_COLORS = {
    "goal": ("#dbeafe", "#3b82f6"),
    "action": ("#dcfce7", "#22c55e"),
    "entity": ("#fef3c7", "#f59e0b"),
    "fact": ("#f3e8ff", "#a855f7"),
    "result": ("#fce7f3", "#ec4899"),
}
_OTHER_COLORS = ("#f1f5f9", "#64748b")
_HIGHLIGHT_COLOR = "#ea580c"


@attrs.frozen
class Highlight:
    """What a highlight query found: the result ``ids`` (in result order), the ``paths`` that
    reached them, and a ``note`` when it marks nothing (a count or exists query) or when some
    results are outside the drawn part. ``value`` is the count or boolean of such queries."""

    query: str
    kind: str
    ids: tuple[str, ...] = ()
    paths: tuple[tuple[str, ...], ...] = ()
    value: Any = None
    note: str | None = None

    @property
    def count(self) -> int:
        """How many results the query had (the count itself for a ``.count()`` query)."""
        if self.kind == "count":
            return int(self.value)
        if self.kind == "exists":
            return int(bool(self.value))
        return len(self.ids)

    def to_json(self) -> dict[str, Any]:
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
    ``marked_edges`` holds the keys of the edges the highlight's walks use.
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


# -- what to draw ------------------------------------------------------------------------------


def _sources(memory: Any, as_of: int | str | None) -> tuple[Any, MemoryGraph, int | None]:
    """(the Memory or None, the graph to draw, the ``t`` drawn or None)."""
    if isinstance(memory, MemoryGraph):
        if as_of is not None:
            raise HGMError([Problem("invalid-argument", "as_of needs a memory: a bare graph has no history", where="as_of")])
        return None, memory, None
    from hgm_engine.memory import HistoricalMemory, Memory
    from hgm_engine.store.graphfile import graph_from_document

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


def _in_hierarchy(graph: MemoryGraph, node: Node) -> bool:
    if node.type == "goal":
        return True  # a lone goal is a tree of its own
    return bool(graph.in_ids(node.id, "parent_of") or graph.out_ids(node.id, "parent_of"))


def _tops(graph: MemoryGraph) -> list[str]:
    """Root goals in creation order, then what they do not reach (as ``hgm show`` draws)."""
    tops = list(graph.roots())
    reached: set[str] = set()

    def reach(start: str) -> None:
        stack = [start]
        while stack:
            node_id = stack.pop()
            if node_id not in reached:
                reached.add(node_id)
                stack.extend(graph.out_ids(node_id, "parent_of"))

    for top in tops:
        reach(top)
    for node in graph.nodes():
        if node.id not in reached and _in_hierarchy(graph, node):
            tops.append(node.id)
            reach(node.id)
    return tops


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
    memory: Any,
    *,
    root: str | None = None,
    depth: int | None = None,
    highlight: str | None = None,
    as_of: int | str | None = None,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
    history: bool = True,
) -> Picture:
    """Decide what a picture shows (the formats only draw it): see :class:`Picture`.

    Without ``root`` every tree is drawn and every node in no hierarchy beside it; with
    ``root``, its subtree and the non-hierarchy nodes connected to it (through other such
    nodes too). ``depth`` limits the levels below each top (0: tops only). ``highlight`` is a
    path expression run on the state drawn (with ``focus`` and ``params``); compile and run
    errors are the engine's :class:`~hgm_engine.errors.HGMError`. ``history`` embeds each drawn
    node's history (commits up to the state drawn) when ``memory`` is a Memory.

    >>> from hgm_engine.cli.app import sample_document
    >>> from hgm_engine.memory import Memory
    >>> p = picture(Memory.from_document(sample_document()), root="d3", highlight="#d3.actions.where(status = 'failed')")
    >>> [n.id for n in p.nodes]
    ['d3', 'a_wall_bus', 'a_wall_car', 'a_pack', 'e_mutianyu', 'f_sold_out']
    >>> p.highlight.paths, sorted(p.marked.items()), sorted(p.marked_edges)
    ((('d3', 'a_wall_bus'),), [('a_wall_bus', 'result'), ('d3', 'path')], [('d3', 'a_wall_bus', 'parent_of')])
    """
    if depth is not None and depth < 0:
        raise HGMError([Problem("invalid-argument", f"depth must be 0 or more, not {depth}", where="depth")])
    owner, graph, t = _sources(memory, as_of)
    if root is not None:
        if root not in graph:
            raise HGMError([Problem("unknown-node", f"no node {root!r} to draw from", where="root")])
        tops = [root]
    else:
        tops = _tops(graph)
    order, levels, tree_parent, hidden = _walk_hierarchy(graph, tops, depth)
    hierarchy_ids = set(levels)
    nodes_by_id = graph.node_map()

    # Nodes in no hierarchy: all of them, or (with a root) those connected to the drawn part.
    loose: list[str]
    if root is None:
        loose = [n.id for n in graph.nodes() if not _in_hierarchy(graph, n)]
    else:
        reached: set[str] = set()
        frontier = list(order)
        while frontier:
            node_id = frontier.pop()
            for edge in (*graph.out_edges(node_id), *graph.in_edges(node_id)):
                other = edge.target if edge.source == node_id else edge.source
                if other not in reached and other not in hierarchy_ids and not _in_hierarchy(graph, nodes_by_id[other]):
                    reached.add(other)
                    frontier.append(other)
        loose = [n.id for n in graph.nodes() if n.id in reached]
    drawn_ids = order + loose
    drawn = set(drawn_ids)

    edges: list[Edge] = []
    for node_id in order:
        for child in graph.out_ids(node_id, "parent_of"):
            if child in drawn:
                edges.append(graph.edge(node_id, child, "parent_of"))
    others = [e for node_id in drawn_ids for e in graph.out_edges(node_id) if e.type != "parent_of" and e.target in drawn]
    edges.extend(sorted(others, key=lambda e: e.seq))
    # parent_of edges between drawn nodes that the walk did not take from a drawn parent
    # (a loose node's parent_of cannot exist: such nodes are in the hierarchy by definition).

    found = None if highlight is None else _run_highlight(owner, graph, highlight, t if as_of is not None else None, focus, params)
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
            found = attrs.evolve(found, note=f"{_plural(len(outside), 'result')} outside the part drawn")

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
    )


def _run_highlight(owner: Any, graph: MemoryGraph, text: str, as_of: int | None, focus: str | None, params: Any) -> Highlight:
    """Run the highlight query, then its ``.paths()`` form for the walks."""
    if owner is not None:

        def compile_(expr: str):
            return owner.compile(expr)

        def run(expr: str):
            return owner.query(expr, focus=focus, params=params, as_of=as_of)

    else:
        from hgm_engine.query import compile as compile_query

        def compile_(expr: str):
            return compile_query(expr)

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


# -- labels ------------------------------------------------------------------------------------


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _short(text: Any, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _caption(node: Node, width: int) -> tuple[str, str]:
    """(``id [type]``, ``status: content``) with the content cut to ``width`` characters."""
    status, content = node.get("status"), node.get("content")
    detail = "" if status is None else str(status)
    if content is not None:
        detail = f"{detail}: {content}" if detail else str(content)
    return f"{node.id} [{node.type}]", _short(detail, width) if detail else ""


def _hidden_note(count: int) -> str:
    return "(+1 child not shown)" if count == 1 else f"(+{count} children not shown)"


# -- Mermaid -----------------------------------------------------------------------------------

_MERMAID_SAFE = re.compile(r"[^\w ,.:/'+=!?()\[\]-]")


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label: anything but letters, digits and plain
    punctuation becomes an entity code (``#34;``), newlines included."""
    return _MERMAID_SAFE.sub(lambda m: f"#{ord(m.group())};", text)


def to_mermaid(
    memory: Any,
    *,
    root: str | None = None,
    depth: int | None = None,
    highlight: str | None = None,
    as_of: int | str | None = None,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> str:
    """A Mermaid ``flowchart TD``: ``parent_of`` as solid arrows in edge order, other edges as
    dashed arrows labelled with their type, nodes in no hierarchy in a subgraph beside.

    Nodes are named ``n0``, ``n1``... (Mermaid reserves words such as ``end``); labels carry
    the id, type, status and content, with every character that Mermaid could read as syntax
    written as an entity code. Highlighted results get the class ``highlight``, the nodes
    their walks pass through ``onpath``, and the walks' edges a ``linkStyle``.

    >>> from hgm_engine.memory import Memory
    >>> m = Memory.from_document({"format": "hgm-graph/1",
    ...     "nodes": [{"id": "g", "type": "goal", "content": 'say "]; drop'}], "edges": []})
    >>> print(to_mermaid(m).splitlines()[1])
        n0["g [goal]<br/>say #34;]#59; drop"]
    """
    p = picture(memory, root=root, depth=depth, highlight=highlight, as_of=as_of, focus=focus, params=params, history=False)
    names = {node.id: f"n{i}" for i, node in enumerate(p.nodes)}
    lines = ["flowchart TD"]
    if p.highlight is not None:
        lines.append(f"    %% highlight: {_mermaid_text(_short(p.highlight.query, 200))} ({_highlight_summary(p.highlight)})")

    def declare(node: Node) -> str:
        head, detail = _caption(node, _LABEL_WIDTH)
        if node.id in p.hidden:
            detail = (detail + " " if detail else "") + _hidden_note(p.hidden[node.id])
        label = _mermaid_text(head) + ("<br/>" + _mermaid_text(detail) if detail else "")
        return f'{names[node.id]}["{label}"]'

    loose = [n for n in p.nodes if n.id not in p.hierarchy]
    for node in p.nodes:
        if node.id in p.hierarchy:
            lines.append("    " + declare(node))
    if loose:
        lines.append('    subgraph outside["not in the hierarchy"]')
        lines.extend("        " + declare(node) for node in loose)
        lines.append("    end")
    marked_links = []
    for index, edge in enumerate(p.edges):
        a, b = names[edge.source], names[edge.target]
        if edge.type == "parent_of":
            lines.append(f"    {a} --> {b}")
        else:
            lines.append(f"    {a} -.->|{_mermaid_text(edge.type)}| {b}")
        if edge.key in p.marked_edges:
            marked_links.append(str(index))
    by_type: dict[str, list[str]] = {}
    for node in p.nodes:
        by_type.setdefault(node.type, []).append(names[node.id])
    class_names = {kind: _css_name(kind) for kind in by_type}
    for kind in by_type:
        fill, stroke = _TYPE_COLORS.get(kind, _OTHER_COLORS)
        lines.append(f"    classDef {class_names[kind]} fill:{fill},stroke:{stroke},color:#111827")
    for kind, members in by_type.items():
        lines.append(f"    class {','.join(members)} {class_names[kind]}")
    if p.highlight is not None:
        lines.append(f"    classDef highlight fill:#ffedd5,stroke:{_HIGHLIGHT_COLOR},stroke-width:3px")
        lines.append(f"    classDef onpath stroke:{_HIGHLIGHT_COLOR},stroke-width:2px,stroke-dasharray:5 3")
        results = [names[i] for i, how in p.marked.items() if how == "result"]
        on_path = [names[i] for i, how in p.marked.items() if how == "path"]
        if results:
            lines.append(f"    class {','.join(results)} highlight")
        if on_path:
            lines.append(f"    class {','.join(on_path)} onpath")
        if marked_links:
            lines.append(f"    linkStyle {','.join(marked_links)} stroke:{_HIGHLIGHT_COLOR},stroke-width:3px")
    return "\n".join(lines)


def _css_name(kind: str) -> str:
    """A class name made of safe characters (type names are identifiers in practice)."""
    safe = re.sub(r"[^A-Za-z0-9_]", "_", kind)
    return "t_" + safe if safe in ("highlight", "onpath", "default") or not safe[:1].isalpha() else safe


def _highlight_summary(found: Highlight) -> str:
    if found.kind in ("count", "exists"):
        return f"{found.kind} = {json.dumps(found.value)}, marks no nodes"
    return _plural(found.count, "result")


# -- Graphviz DOT ------------------------------------------------------------------------------


def _dot_string(text: str) -> str:
    """A double-quoted DOT string: backslashes and quotes escaped, newlines as ``\\n``."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return '"' + "".join(c if c >= " " or c == "\t" else " " for c in text) + '"'


def to_dot(
    memory: Any,
    *,
    root: str | None = None,
    depth: int | None = None,
    highlight: str | None = None,
    as_of: int | str | None = None,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> str:
    """A Graphviz ``digraph`` of the same picture: ids quoted and escaped, ``parent_of`` edges
    solid and ranking the hierarchy top-down, other edges dashed with their type as label
    (``constraint=false`` when they point into the hierarchy, so they do not bend it), nodes
    in no hierarchy in a cluster.
    Highlighted nodes and walk edges are orange and carry ``class="highlight"`` (``onpath`` for
    the nodes a walk passes through).

    >>> from hgm_engine.memory import Memory
    >>> m = Memory.from_document({"format": "hgm-graph/1",
    ...     "nodes": [{"id": "a\\"b", "type": "goal"}, {"id": "c", "type": "action"}],
    ...     "edges": [{"from": "a\\"b", "to": "c", "type": "parent_of"}]})
    >>> print(to_dot(m, highlight="root.actions"))  # doctest: +ELLIPSIS
    digraph hgm {
    ...
        "a\\"b" [label="a\\"b [goal]", fillcolor="#dbeafe", color="#ea580c", class="goal onpath", penwidth=2, style="rounded,filled,dashed"];
        "c" [label="c [action]", fillcolor="#ffedd5", color="#ea580c", class="action highlight", penwidth=3];
        "a\\"b" -> "c" [class="highlight", color="#ea580c", penwidth=3];
    }
    """
    p = picture(memory, root=root, depth=depth, highlight=highlight, as_of=as_of, focus=focus, params=params, history=False)
    lines = [
        "digraph hgm {",
        '    graph [rankdir=TB, ordering=out, fontname="Helvetica", fontsize=11, nodesep=0.3, ranksep=0.5];',
        '    node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '    edge [fontname="Helvetica", fontsize=9, color="#64748b"];',
    ]
    if p.highlight is not None:
        title = f"highlight: {_short(p.highlight.query, 200)} ({_highlight_summary(p.highlight)})"
        lines.append(f"    label={_dot_string(title)}; labelloc=t;")

    def declare(node: Node) -> str:
        head, detail = _caption(node, _LABEL_WIDTH)
        if node.id in p.hidden:
            detail = (detail + " " if detail else "") + _hidden_note(p.hidden[node.id])
        fill, stroke = _TYPE_COLORS.get(node.type, _OTHER_COLORS)
        mark = p.marked.get(node.id)
        classes = _css_name(node.type) + {"result": " highlight", "path": " onpath", None: ""}[mark]
        if mark is not None:
            stroke = _HIGHLIGHT_COLOR
            fill = "#ffedd5" if mark == "result" else fill
        attributes = [
            f"label={_dot_string(head + (chr(10) + detail if detail else ''))}",
            f'fillcolor="{fill}"',
            f'color="{stroke}"',
            f"class={_dot_string(classes)}",
        ]
        if mark is not None:
            attributes.append("penwidth=3" if mark == "result" else 'penwidth=2, style="rounded,filled,dashed"')
        return f"{_dot_string(node.id)} [{', '.join(attributes)}];"

    loose = [n for n in p.nodes if n.id not in p.hierarchy]
    for node in p.nodes:
        if node.id in p.hierarchy:
            lines.append("    " + declare(node))
    if loose:
        lines.append("    subgraph cluster_outside {")
        lines.append('        label="not in the hierarchy"; style="dashed,rounded"; color="#94a3b8";')
        lines.extend("        " + declare(node) for node in loose)
        lines.append("    }")
    for edge in p.edges:
        attributes = []
        if edge.type != "parent_of":
            attributes += ["style=dashed", f"label={_dot_string(edge.type)}"]
            if edge.target in p.hierarchy:
                attributes.append("constraint=false")  # keep the hierarchy's ranks as they are
        if edge.key in p.marked_edges:
            attributes += ['class="highlight"', f'color="{_HIGHLIGHT_COLOR}"', "penwidth=3"]
        suffix = f" [{', '.join(attributes)}]" if attributes else ""
        lines.append(f"    {_dot_string(edge.source)} -> {_dot_string(edge.target)}{suffix};")
    lines.append("}")
    return "\n".join(lines)


# -- HTML --------------------------------------------------------------------------------------


def dom_id(prefix: str, node_id: str) -> str:
    """A stable HTML id for a node id: ``prefix`` then the id, every character beyond
    ``[A-Za-z0-9_-]`` written as ``.hex.`` (so different ids never share one).

    >>> dom_id("node-", "a_hotel"), dom_id("node-", "a b.c")
    ('node-a_hotel', 'node-a.20.b.2e.c')
    """
    return prefix + re.sub(r"[^A-Za-z0-9_-]", lambda m: f".{ord(m.group()):x}.", node_id)


def _layout(p: Picture) -> dict[str, tuple[int, int]]:
    """Top-left corners of the node boxes: the hierarchy as a tidy tree growing to the right
    (one column per level, leaves on consecutive rows, a parent centred on its children), the
    other nodes in columns beyond it by their distance from the hierarchy, each near the
    average height of the nodes it is joined to."""
    pitch_x, pitch_y = NODE_WIDTH + COLUMN_GAP, NODE_HEIGHT + ROW_GAP
    children: dict[str, list[str]] = {}
    tops: list[str] = []
    for node in p.nodes:
        if node.id in p.hierarchy:
            parent = p.tree_parent.get(node.id)
            if parent is None:
                tops.append(node.id)
            else:
                children.setdefault(parent, []).append(node.id)
    row_of: dict[str, float] = {}
    next_row = 0.0
    for top in tops:
        # Post-order without recursion: leaves take the next row, parents centre on children.
        stack: list[tuple[str, bool]] = [(top, False)]
        while stack:
            node_id, done = stack.pop()
            kids = children.get(node_id, [])
            if done or not kids:
                if kids:
                    row_of[node_id] = (row_of[kids[0]] + row_of[kids[-1]]) / 2
                else:
                    row_of[node_id] = next_row
                    next_row += 1
                continue
            stack.append((node_id, True))
            stack.extend((kid, False) for kid in reversed(kids))
        next_row += 0.5  # a little air between trees
    position = {
        node_id: (MARGIN + p.levels[node_id] * pitch_x, MARGIN + round(row * pitch_y))
        for node_id, row in row_of.items()
    }

    loose = [n.id for n in p.nodes if n.id not in p.hierarchy]
    if not loose:
        return position
    neighbours: dict[str, list[str]] = {}
    for edge in p.edges:
        neighbours.setdefault(edge.source, []).append(edge.target)
        neighbours.setdefault(edge.target, []).append(edge.source)
    distance: dict[str, int] = {}
    frontier = [n for n in position]
    step = 0
    loose_set = set(loose)
    while frontier:
        step += 1
        following = []
        for node_id in frontier:
            for other in neighbours.get(node_id, ()):
                if other in loose_set and other not in distance:
                    distance[other] = step
                    following.append(other)
        frontier = following
    first_column = (max(p.levels.values()) + 1) if p.levels else 0
    last = max(distance.values(), default=0)
    columns: dict[int, list[str]] = {}
    for node_id in loose:
        columns.setdefault(distance.get(node_id, last + 1), []).append(node_id)
    for column_index, (_, members) in enumerate(sorted(columns.items())):
        x = MARGIN + (first_column + column_index) * pitch_x + (COLUMN_GAP // 2 if position else 0)

        def wanted(node_id: str) -> float:
            ys = [position[o][1] for o in neighbours.get(node_id, ()) if o in position]
            return sum(ys) / len(ys) if ys else float("inf")

        placed_y = MARGIN - pitch_y
        for node_id in sorted(members, key=wanted):
            want = wanted(node_id)
            y = max(placed_y + pitch_y, MARGIN if want == float("inf") else want)
            position[node_id] = (x, round(y))
            placed_y = y
    return position


def _page_data(p: Picture, title: str) -> dict[str, Any]:
    position = _layout(p)
    width = max((x for x, _ in position.values()), default=0) + NODE_WIDTH + MARGIN + 60
    height = max((y for _, y in position.values()), default=0) + NODE_HEIGHT + MARGIN
    nodes = []
    for node in p.nodes:
        head, detail = _caption(node, 10_000)
        attributes = thaw(node.attrs)
        x, y = position[node.id]
        nodes.append(
            {
                "id": node.id,
                "dom_id": dom_id("node-", node.id),
                "type": node.type,
                "label": _short(node.id, _BOX_CHARS - 2),
                "detail": _short(detail, _BOX_CHARS + 4) if detail else "",
                "title": f"{head}\n{detail}" if detail else head,
                "status": attributes.get("status") if isinstance(attributes.get("status"), str) else None,
                "attrs": attributes,
                "x": x,
                "y": y,
                "level": p.levels.get(node.id),
                "hierarchy": node.id in p.hierarchy,
                "hidden_children": p.hidden.get(node.id, 0),
                "mark": p.marked.get(node.id),
                "history": None if p.histories is None else p.histories.get(node.id, []),
            }
        )
    edges = [
        {
            "dom_id": f"edge-{index}",
            "from": edge.source,
            "to": edge.target,
            "type": edge.type,
            "attrs": thaw(edge.attrs),
            "hierarchy": edge.type == "parent_of",
            "mark": edge.key in p.marked_edges,
        }
        for index, edge in enumerate(p.edges)
    ]
    types = list(dict.fromkeys(n.type for n in p.nodes))
    edge_types = list(dict.fromkeys(e.type for e in p.edges))
    return {
        "format": "hgm-picture/1",
        "title": title,
        "t": p.t,
        "total_nodes": p.total_nodes,
        "total_edges": p.total_edges,
        "width": width,
        "height": height,
        "node_width": NODE_WIDTH,
        "node_height": NODE_HEIGHT,
        "node_colors": {t: list(_TYPE_COLORS.get(t, _OTHER_COLORS)) for t in types},
        "edge_types": edge_types,
        "nodes": nodes,
        "edges": edges,
        "highlight": None if p.highlight is None else p.highlight.to_json(),
    }


def _script_json(value: Any) -> str:
    """JSON to sit inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` are
    written as ``\\u003c`` etc., so no text can close the tag or open a comment.

    >>> _script_json({"x": "</script>&"})
    '{"x": "\\\\u003c/script\\\\u003e\\\\u0026"}'
    """
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def to_html(
    memory: Any,
    *,
    root: str | None = None,
    depth: int | None = None,
    highlight: str | None = None,
    as_of: int | str | None = None,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
    title: str | None = None,
) -> str:
    """One self-contained HTML page (inline CSS and script, nothing fetched) that draws the
    picture as SVG: the hierarchy as a tree growing to the right, the other nodes beside it.

    The data sits in ``<script type="application/json" id="hgm-data">`` (``<``, ``>``, ``&``
    escaped); the page's script draws it with DOM calls only (no HTML is built from data).
    Node groups are ``<g class="node ..." id="node-ID" data-id="ID">`` and edges ``<path
    class="edge ..." id="edge-N" data-from data-to data-type>``; highlighted results, walk
    edges and the query line carry the class ``highlight`` (nodes a walk passes through:
    ``onpath``). Clicking a node opens the side panel ``#panel`` with its id, type,
    attributes, edges and history (embedded now, from the memory's commits up to the state
    drawn); so does opening the page at ``#select=ID``.

    >>> from hgm_engine.cli.app import sample_document
    >>> from hgm_engine.memory import Memory
    >>> page = to_html(Memory.from_document(sample_document()), highlight="root.subgoals")
    >>> page.startswith("<!DOCTYPE html>"), "http" in page, 'id="hgm-data"' in page
    (True, False, True)
    """
    p = picture(memory, root=root, depth=depth, highlight=highlight, as_of=as_of, focus=focus, params=params)
    if title is None:
        title = "memory" if p.t is None else f"memory at t={p.t}"
    data = _page_data(p, title)
    return (
        _PAGE.replace("@TITLE@", html.escape(f"hgm — {title}"))
        .replace("@STYLE@", _STYLE)
        .replace("@SCRIPT@", _SCRIPT)
        .replace("@DATA@", _script_json(data))
    )


def render(memory: Any, fmt: str, **options: Any) -> str:
    """The picture of ``memory`` in format ``fmt`` (``mermaid``, ``dot`` or ``html``); options
    are those of :func:`to_mermaid`, :func:`to_dot` and :func:`to_html` (``title``: HTML only).

    >>> from hgm_engine.cli.app import sample_document
    >>> from hgm_engine.memory import Memory
    >>> print(render(Memory.from_document(sample_document()), "dot", root="orders").splitlines()[4])
        "orders" [label="orders [goal]\\nactive: Answer the user's order-status questions", fillcolor="#dbeafe", color="#3b82f6", class="goal"];
    >>> render(Memory(), "png")
    Traceback (most recent call last):
    ...
    ValueError: unknown picture format 'png' (known: mermaid, dot, html)
    """
    if fmt == "mermaid":
        options.pop("title", None)
        return to_mermaid(memory, **options)
    if fmt == "dot":
        options.pop("title", None)
        return to_dot(memory, **options)
    if fmt == "html":
        return to_html(memory, **options)
    raise ValueError(f"unknown picture format {fmt!r} (known: {', '.join(FORMATS)})")


# -- the page ----------------------------------------------------------------------------------

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>@STYLE@</style>
</head>
<body>
<header id="top">
  <div id="heading"><strong>hgm</strong> <span id="title"></span> <span id="meta"></span></div>
  <div id="query" hidden><span class="label">highlight</span> <code id="query-text"></code>
    <span id="query-count"></span> <span id="query-note"></span></div>
  <div id="legend"></div>
</header>
<main>
  <div id="canvas"><svg id="graph" role="img" aria-label="memory graph"><defs id="defs"></defs><g id="edges"></g><g id="edge-labels"></g><g id="nodes"></g></svg></div>
  <aside id="panel" hidden aria-live="polite">
    <button id="panel-close" type="button" aria-label="close">×</button>
    <h2 id="panel-title"></h2>
    <div id="panel-type"></div>
    <div id="panel-mark"></div>
    <h3>Attributes</h3>
    <table id="panel-attrs"></table>
    <h3>Edges</h3>
    <ul id="panel-edges"></ul>
    <h3>History</h3>
    <ol id="panel-history"></ol>
  </aside>
</main>
<div id="error" hidden></div>
<noscript>This picture is drawn by the page's own script: allow JavaScript to see it.</noscript>
<script type="application/json" id="hgm-data">@DATA@</script>
<script>@SCRIPT@</script>
</body>
</html>
"""

_STYLE = """
:root { --hl: #ea580c; --ink: #111827; --muted: #6b7280; --line: #e5e7eb; }
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #f8fafc; }
body { display: flex; flex-direction: column; }
header { padding: 8px 14px; background: #fff; border-bottom: 1px solid var(--line); display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; }
#heading strong { font-size: 15px; }
#meta { color: var(--muted); }
#query { padding: 3px 8px; border-radius: 6px; background: #fff7ed; border: 1px solid #fed7aa; }
#query .label { color: var(--muted); }
#query code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
#query-count { font-weight: 600; color: var(--hl); }
#query-note { color: var(--muted); font-style: italic; }
#legend { display: flex; flex-wrap: wrap; gap: 4px 12px; color: var(--muted); font-size: 12px; }
#legend .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; border: 1px solid; vertical-align: -2px; margin-right: 4px; }
#legend .line { display: inline-block; width: 18px; border-top: 2px solid; vertical-align: 3px; margin-right: 4px; }
main { flex: 1; display: flex; min-height: 0; position: relative; }
#canvas { flex: 1; overflow: auto; }
svg#graph { display: block; }
.node { cursor: pointer; }
.node rect.box { stroke-width: 1.2; }
.node rect.status { stroke: none; }
.node text { font-size: 12px; fill: var(--ink); pointer-events: none; }
.node text.name { font-weight: 600; }
.node text.detail { fill: #374151; font-size: 11px; }
.node text.kind { fill: var(--muted); font-size: 10px; }
.node:hover rect.box, .node:focus rect.box { stroke-width: 2.5; }
.node:focus { outline: none; }
.node.highlight rect.box { stroke: var(--hl); stroke-width: 3.5; fill: #ffedd5; }
.node.onpath rect.box { stroke: var(--hl); stroke-width: 2; stroke-dasharray: 5 3; }
.node.selected rect.box { stroke: #1d4ed8; stroke-width: 3.5; }
.node .hidden-note { fill: var(--muted); font-size: 10px; }
.edge { fill: none; stroke-width: 1.4; }
.edge.other { stroke-dasharray: 5 4; opacity: .8; }
.edge.highlight { stroke: var(--hl) !important; stroke-width: 3.2; opacity: 1; stroke-dasharray: none; }
.edge-label { font-size: 10px; fill: #475569; paint-order: stroke; stroke: #f8fafc; stroke-width: 3px; pointer-events: none; }
.edge-label.highlight { fill: var(--hl); font-weight: 600; }
svg.has-highlight .node:not(.highlight):not(.onpath):not(.selected) { opacity: .45; }
svg.has-highlight .edge:not(.highlight), svg.has-highlight .edge-label:not(.highlight) { opacity: .3; }
svg.has-selection .edge.adjacent { opacity: 1; stroke-width: 2.4; }
#panel { width: 380px; max-width: 45vw; overflow: auto; background: #fff; border-left: 1px solid var(--line); padding: 10px 16px 20px; position: relative; }
#panel h2 { margin: 4px 28px 2px 0; font-size: 16px; word-break: break-all; }
#panel h3 { margin: 14px 0 4px; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
#panel-type { color: var(--muted); }
#panel-mark { color: var(--hl); font-weight: 600; }
#panel-close { position: absolute; top: 8px; right: 10px; border: 0; background: none; font-size: 20px; cursor: pointer; color: var(--muted); }
#panel table { border-collapse: collapse; width: 100%; }
#panel td { border-top: 1px solid var(--line); padding: 3px 4px; vertical-align: top; word-break: break-word; }
#panel td.key { color: var(--muted); white-space: nowrap; width: 1%; }
#panel ul, #panel ol { margin: 0; padding-left: 18px; }
#panel li { margin: 3px 0; }
#panel a { color: #1d4ed8; cursor: pointer; text-decoration: underline; }
#panel .when { font-weight: 600; }
#panel .why { color: var(--muted); }
#panel .change { font: 11px ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; word-break: break-word; color: #374151; }
#error { background: #fee2e2; color: #991b1b; padding: 8px 14px; }
"""

_SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("hgm-data").textContent);
  var svg = document.getElementById("graph");
  var NS = svg.namespaceURI;  // the SVG namespace, taken from the page itself
  var W = data.node_width, H = data.node_height;
  var byId = new Map();
  var nodeEls = new Map();
  var edgeEls = [];
  var EDGE_COLORS = {parent_of: "#64748b", before: "#0284c7", related_to: "#9333ea", derived_from: "#d97706",
                     produces: "#059669", replaces: "#dc2626", causes: "#be123c"};
  var STATUS_COLORS = {done: "#16a34a", failed: "#dc2626", pending: "#9ca3af", active: "#2563eb",
                       blocked: "#f59e0b", skipped: "#a8a29e", stale: "#f59e0b"};

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var key in attrs) { if (attrs[key] !== null && attrs[key] !== undefined) node.setAttribute(key, attrs[key]); }
    if (parent) parent.appendChild(node);
    return node;
  }
  function h(tag, text, parent, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    if (parent) parent.appendChild(node);
    return node;
  }
  function edgeColor(type) { return EDGE_COLORS[type] || "#64748b"; }
  function show(value) { return typeof value === "string" ? value : JSON.stringify(value); }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // -- header --------------------------------------------------------------------------------
  document.getElementById("title").textContent = data.title;
  var drawn = data.nodes.length, drawnEdges = data.edges.length;
  var meta = plural(drawn, "node") + ", " + plural(drawnEdges, "edge") + " drawn";
  if (drawn !== data.total_nodes || drawnEdges !== data.total_edges)
    meta += " (of " + data.total_nodes + " and " + data.total_edges + ")";
  if (data.t !== null) meta += " \u00b7 t=" + data.t;
  document.getElementById("meta").textContent = meta;
  if (data.highlight) {
    var q = document.getElementById("query");
    q.hidden = false;
    q.classList.add("highlight");
    document.getElementById("query-text").textContent = data.highlight.query;
    var hl = data.highlight;
    document.getElementById("query-count").textContent =
      hl.kind === "count" || hl.kind === "exists" ? hl.kind + " = " + JSON.stringify(hl.value) : plural(hl.count, "result");
    document.getElementById("query-note").textContent = hl.note || "";
    svg.classList.add("has-highlight");
  }
  var legend = document.getElementById("legend");
  Object.keys(data.node_colors).forEach(function (type) {
    var item = h("span", null, legend, "legend-type");
    var swatch = h("span", null, item, "swatch");
    swatch.style.background = data.node_colors[type][0];
    swatch.style.borderColor = data.node_colors[type][1];
    item.appendChild(document.createTextNode(type));
  });
  data.edge_types.forEach(function (type) {
    var item = h("span", null, legend, "legend-edge");
    var line = h("span", null, item, "line");
    line.style.borderTopColor = edgeColor(type);
    if (type !== "parent_of") line.style.borderTopStyle = "dashed";
    item.appendChild(document.createTextNode(type));
  });

  // -- drawing -------------------------------------------------------------------------------
  svg.setAttribute("width", data.width);
  svg.setAttribute("height", data.height);
  svg.setAttribute("viewBox", "0 0 " + data.width + " " + data.height);
  var defs = document.getElementById("defs");
  var markers = {};
  function marker(color) {
    if (markers[color]) return markers[color];
    var id = "arrow-" + Object.keys(markers).length;
    var m = el("marker", {id: id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse"}, defs);
    el("path", {d: "M0,0 L10,5 L0,10 z", fill: color}, m);
    markers[color] = id;
    return id;
  }
  data.nodes.forEach(function (n) { byId.set(n.id, n); });
  var columns = new Map();  // x -> the y of every box in that column, top to bottom
  data.nodes.forEach(function (n) { if (!columns.has(n.x)) columns.set(n.x, []); columns.get(n.x).push(n.y); });
  columns.forEach(function (ys) { ys.sort(function (p, q) { return p - q; }); });
  function nextInColumn(a, b) {
    var ys = columns.get(a.x), i = ys.indexOf(a.y), j = ys.indexOf(b.y);
    return Math.abs(i - j) === 1;
  }

  var edgeLayer = document.getElementById("edges"), labelLayer = document.getElementById("edge-labels");
  data.edges.forEach(function (e, index) {
    var a = byId.get(e.from), b = byId.get(e.to);
    if (!a || !b) return;
    var ay = a.y + H / 2, by = b.y + H / 2, d, mid, anchor = "middle";
    if (a.x === b.x && a.id !== b.id && nextInColumn(a, b)) {
      // Neighbours in one column: a short straight arrow between them.
      var down = b.y > a.y, cx = a.x + W / 2;
      var y1 = down ? a.y + H : a.y, y2 = down ? b.y : b.y + H;
      d = "M" + cx + "," + y1 + " L" + cx + "," + y2;
      mid = [cx + 6, (y1 + y2) / 2 + 7];
      anchor = "start";
    } else if (Math.abs(a.x - b.x) < W / 2) {
      // Same column: an arc out to the right.
      var sx = a.x + W, ex = b.x + W, bulge = 28 + Math.min(60, Math.abs(by - ay) * 0.12);
      if (a.id === b.id) { ay -= 8; by += 8; }
      d = "M" + sx + "," + ay + " C" + (sx + bulge) + "," + ay + " " + (ex + bulge) + "," + by + " " + ex + "," + by;
      mid = [sx + bulge * 0.75, (ay + by) / 2];
    } else {
      var forward = b.x > a.x;
      var x1 = forward ? a.x + W : a.x, x2 = forward ? b.x : b.x + W;
      var dx = (x2 - x1) / 2;
      d = "M" + x1 + "," + ay + " C" + (x1 + dx) + "," + ay + " " + (x2 - dx) + "," + by + " " + x2 + "," + by;
      mid = [(x1 + x2) / 2, (ay + by) / 2];
    }
    var color = e.mark ? "#ea580c" : edgeColor(e.type);
    var cls = "edge " + (e.hierarchy ? "hierarchy" : "other") + (e.mark ? " highlight" : "");
    var path = el("path", {d: d, "class": cls, id: e.dom_id, stroke: color, "marker-end": "url(#" + marker(color) + ")"}, edgeLayer);
    path.dataset.from = e.from; path.dataset.to = e.to; path.dataset.type = e.type;
    var tip = el("title", {}, path); tip.textContent = e.from + " \u2192 " + e.to + " (" + e.type + ")";
    edgeEls.push({data: e, el: path});
    if (!e.hierarchy) {
      var label = el("text", {x: mid[0], y: mid[1] - 3, "text-anchor": anchor, "class": "edge-label" + (e.mark ? " highlight" : "")}, labelLayer);
      label.textContent = e.type;
      edgeEls[edgeEls.length - 1].label = label;
    }
  });

  var nodeLayer = document.getElementById("nodes");
  data.nodes.forEach(function (n) {
    var colors = data.node_colors[n.type];
    var cls = "node type-" + n.type.replace(/[^A-Za-z0-9_-]/g, "_") + (n.hierarchy ? " in-hierarchy" : " outside") +
              (n.mark === "result" ? " highlight" : n.mark === "path" ? " onpath" : "");
    var g = el("g", {"class": cls, id: n.dom_id, transform: "translate(" + n.x + "," + n.y + ")", tabindex: 0, role: "button"}, nodeLayer);
    g.dataset.id = n.id;
    g.dataset.type = n.type;
    var tip = el("title", {}, g); tip.textContent = n.title;
    el("rect", {"class": "box", width: W, height: H, rx: 7, ry: 7, fill: colors[0], stroke: colors[1]}, g);
    if (n.status) el("rect", {"class": "status", x: 0, y: 6, width: 4, height: H - 12, rx: 2, fill: STATUS_COLORS[n.status] || "#64748b"}, g);
    var name = el("text", {"class": "name", x: 10, y: 18}, g); name.textContent = n.label;
    var kind = el("text", {"class": "kind", x: W - 8, y: 17, "text-anchor": "end"}, g); kind.textContent = n.type;
    var detail = el("text", {"class": "detail", x: 10, y: 36}, g); detail.textContent = n.detail;
    if (n.hidden_children) {
      var more = el("text", {"class": "hidden-note", x: W + 4, y: H / 2 + 4}, g);
      more.textContent = "+" + n.hidden_children;
    }
    nodeEls.set(n.id, g);
    g.addEventListener("click", function (event) { event.stopPropagation(); select(n.id, true); });
    g.addEventListener("keydown", function (event) { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); select(n.id, true); } });
  });

  // -- the side panel ------------------------------------------------------------------------
  var panel = document.getElementById("panel");
  var selected = null;
  function link(id, parent) {
    var a = h("a", id, parent);
    a.dataset.target = id;
    a.addEventListener("click", function () { select(id, true); });
    return a;
  }
  function describeChange(change) {
    var rest = {};
    Object.keys(change).forEach(function (k) { if (k !== "kind") rest[k] = change[k]; });
    return change.kind + " " + JSON.stringify(rest);
  }
  function select(id, fromUser) {
    var n = byId.get(id);
    if (selected) { var old = nodeEls.get(selected); if (old) old.classList.remove("selected"); }
    edgeEls.forEach(function (x) { x.el.classList.remove("adjacent"); });
    if (!n) {
      selected = null; panel.hidden = false; panel.dataset.id = id;
      document.getElementById("panel-title").textContent = id;
      document.getElementById("panel-type").textContent = "not drawn in this picture";
      ["panel-attrs", "panel-edges", "panel-history"].forEach(function (k) { document.getElementById(k).textContent = ""; });
      document.getElementById("panel-mark").textContent = "";
      return;
    }
    selected = id;
    var g = nodeEls.get(id);
    g.classList.add("selected");
    svg.classList.add("has-selection");
    panel.hidden = false;
    panel.dataset.id = id;
    document.getElementById("panel-title").textContent = n.id;
    document.getElementById("panel-type").textContent = n.type + (n.hierarchy ? ", level " + n.level + " of the hierarchy" : ", not in the hierarchy");
    var mark = "";
    if (data.highlight && n.mark) {
      var rank = data.highlight.ids.indexOf(n.id);
      mark = n.mark === "result" ? "result " + (rank + 1) + " of " + data.highlight.count + " of the highlight" : "on a walk of the highlight";
      var walk = null;
      data.highlight.paths.forEach(function (p) { if (!walk && p[p.length - 1] === n.id) walk = p; });
      if (walk && walk.length > 1) mark += ": " + walk.join(" \u2192 ");
    }
    document.getElementById("panel-mark").textContent = mark;
    var table = document.getElementById("panel-attrs");
    table.textContent = "";
    var rows = [["id", n.id], ["type", n.type]];
    Object.keys(n.attrs).forEach(function (k) { rows.push([k, n.attrs[k]]); });
    rows.forEach(function (row) {
      var tr = h("tr", null, table);
      tr.dataset.key = row[0];
      h("td", row[0], tr, "key");
      h("td", show(row[1]), tr, "value");
    });
    var edgeList = document.getElementById("panel-edges");
    edgeList.textContent = "";
    edgeEls.forEach(function (x) {
      var e = x.data;
      if (e.from !== id && e.to !== id) return;
      x.el.classList.add("adjacent");
      var li = h("li", null, edgeList);
      if (e.from === id) { li.appendChild(document.createTextNode(e.type + " \u2192 ")); link(e.to, li); }
      else { link(e.from, li); li.appendChild(document.createTextNode(" \u2192 " + e.type)); }
    });
    if (!edgeList.childNodes.length) h("li", "none drawn", edgeList);
    var historyList = document.getElementById("panel-history");
    historyList.textContent = "";
    if (n.history === null) {
      h("li", "no history: drawn from a bare graph", historyList);
    } else if (!n.history.length) {
      h("li", "no commits touched it", historyList);
    } else {
      n.history.forEach(function (entry) {
        var li = h("li", null, historyList, "commit");
        li.dataset.t = entry.t;
        h("span", "t=" + entry.t, li, "when");
        var who = [entry.kind, entry.author ? "by " + entry.author : null].filter(Boolean).join(" ");
        li.appendChild(document.createTextNode(" " + who + " "));
        if (entry.reason) h("span", "\u201c" + entry.reason + "\u201d", li, "why");
        if (entry.timestamp) {
          h("div", new Date(entry.timestamp * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC", li, "why");
        }
        entry.changes.forEach(function (change) { h("div", describeChange(change), li, "change"); });
      });
    }
    if (fromUser) {
      try { history.replaceState(null, "", "#select=" + encodeURIComponent(id)); } catch (err) { /* file: pages may refuse */ }
    }
    if (g.scrollIntoView) g.scrollIntoView({block: "nearest", inline: "nearest"});
  }
  function closePanel() {
    panel.hidden = true;
    if (selected) { var g = nodeEls.get(selected); if (g) g.classList.remove("selected"); }
    svg.classList.remove("has-selection");
    edgeEls.forEach(function (x) { x.el.classList.remove("adjacent"); });
    selected = null;
  }
  document.getElementById("panel-close").addEventListener("click", closePanel);
  document.addEventListener("keydown", function (event) { if (event.key === "Escape") closePanel(); });
  function fromHash() {
    var match = /^#select=(.*)$/.exec(location.hash);
    if (match) select(decodeURIComponent(match[1]), false);
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
  document.body.dataset.ready = "1";
})();
"""

# A page that failed to draw says so instead of staying blank.
_SCRIPT = (
    'window.addEventListener("error", function (e) { var box = document.getElementById("error");'
    ' box.hidden = false; box.textContent = "the picture could not be drawn: " + e.message; });'
    + _SCRIPT
)
