"""Graphviz DOT of a memory's :class:`~hgm_engine.render.picture.Picture`.

>>> from hgm_engine.memory import Memory
>>> m = Memory.from_document({"format": "hgm-graph/1",
...     "nodes": [{"id": "trip", "type": "goal"}, {"id": "park", "type": "entity"}],
...     "edges": [{"from": "trip", "to": "park", "type": "related_to"}]})
>>> print(to_dot(m))
digraph hgm {
    graph [rankdir=TB, ordering=out, fontname="Helvetica", fontsize=11, nodesep=0.3, ranksep=0.5];
    node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];
    edge [fontname="Helvetica", fontsize=9, color="#64748b"];
    "trip" [label="trip [goal]", fillcolor="#dbeafe", color="#3b82f6", class="goal"];
    subgraph cluster_outside {
        label="not in the hierarchy"; style="dashed,rounded"; color="#94a3b8";
        "park" [label="park [entity]", fillcolor="#fef3c7", color="#f59e0b", class="entity"];
    }
    "trip" -> "park" [style=dashed, label="related_to"];
}
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.model import Node
from hgm_engine.render.labels import (
    DIRTY_COLORS,
    HIGHLIGHT_COLOR,
    LABEL_WIDTH,
    caption,
    colors_of,
    css_name,
    dirty_note,
    hidden_note,
    highlight_summary,
    omitted_note,
    short,
)
from hgm_engine.render.picture import Drawable, picture

__all__ = ["to_dot"]


def _dot_string(text: str) -> str:
    """A double-quoted DOT string: backslashes and quotes escaped, newlines as ``\\n``."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return '"' + "".join(c if c >= " " or c == "\t" else " " for c in text) + '"'


def to_dot(
    memory: Drawable,
    *,
    root: str | None = None,
    depth: int | None = None,
    highlight: str | None = None,
    as_of: int | str | None = None,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
    max_nodes: int | None = None,
) -> str:
    """A Graphviz ``digraph`` of the same picture: ids quoted and escaped, ``parent_of`` edges
    solid and ranking the hierarchy top-down, other edges dashed with their type as label
    (``constraint=false`` when they point into the hierarchy, so they do not bend it), nodes
    in no hierarchy in a cluster.
    Highlighted nodes and walk edges are orange and carry ``class="highlight"`` (``onpath`` for
    the nodes a walk passes through). A node a rule marked is drawn in its mark's colours
    (``needs_review`` dashed amber, ``blocked`` red), carries the class, and its label says
    why (``! blocked because f_closed``). ``max_nodes`` caps the picture; the graph's label
    then says what was left out.

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
    p = picture(
        memory, root=root, depth=depth, highlight=highlight, as_of=as_of, focus=focus, params=params, history=False,
        max_nodes=max_nodes,
    )
    lines = [
        "digraph hgm {",
        '    graph [rankdir=TB, ordering=out, fontname="Helvetica", fontsize=11, nodesep=0.3, ranksep=0.5];',
        '    node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '    edge [fontname="Helvetica", fontsize=9, color="#64748b"];',
    ]
    titles = []
    if p.highlight is not None:
        titles.append(f"highlight: {short(p.highlight.query, 200)} ({highlight_summary(p.highlight)})")
    if p.note is not None:
        titles.append(omitted_note(p.note) or "")
    if titles:
        lines.append(f"    label={_dot_string(chr(10).join(titles))}; labelloc=t;")

    def declare(node: Node) -> str:
        head, detail = caption(node, LABEL_WIDTH)
        if node.id in p.hidden:
            detail = (detail + " " if detail else "") + hidden_note(p.hidden[node.id])
        fill, stroke = colors_of(node.type)
        mark = p.marked.get(node.id)
        dirty = node.get("dirty") if node.get("dirty") in DIRTY_COLORS else None
        classes = css_name(node.type) + (f" {dirty}" if dirty else "")
        classes += {"result": " highlight", "path": " onpath", None: ""}[mark]
        if dirty is not None:
            fill, stroke = DIRTY_COLORS[dirty]
            detail = (detail + "\n" if detail else "") + short(dirty_note(node) or "", LABEL_WIDTH)
        if mark is not None:
            stroke = HIGHLIGHT_COLOR
            fill = "#ffedd5" if mark == "result" else fill
        attributes = [
            f"label={_dot_string(head + (chr(10) + detail if detail else ''))}",
            f'fillcolor="{fill}"',
            f'color="{stroke}"',
            f"class={_dot_string(classes)}",
        ]
        if mark is not None:
            attributes.append("penwidth=3" if mark == "result" else 'penwidth=2, style="rounded,filled,dashed"')
        elif dirty is not None:
            attributes.append('penwidth=2.5, style="rounded,filled,dashed"' if dirty == "needs_review" else "penwidth=3")
        elif node.get("kind") == "summary":
            attributes.append("peripheries=2")  # a summary: a double border
        elif node.get("valid_to") is not None:
            attributes.append('style="rounded,filled,dotted", fontcolor="#64748b"')  # a closed fact
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
            attributes += ['class="highlight"', f'color="{HIGHLIGHT_COLOR}"', "penwidth=3"]
        suffix = f" [{', '.join(attributes)}]" if attributes else ""
        lines.append(f"    {_dot_string(edge.source)} -> {_dot_string(edge.target)}{suffix};")
    lines.append("}")
    return "\n".join(lines)
