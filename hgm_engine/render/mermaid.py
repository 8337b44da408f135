"""Mermaid flowcharts of a memory's :class:`~hgm_engine.render.picture.Picture`.

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

import re
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

__all__ = ["to_mermaid"]

_MERMAID_SAFE = re.compile(r"[^\w ,.:/'+=!?()\[\]-]")


def _mermaid_text(text: str) -> str:
    """Text safe inside a quoted Mermaid label: anything but letters, digits and plain
    punctuation becomes an entity code (``#34;``), newlines included."""
    return _MERMAID_SAFE.sub(lambda m: f"#{ord(m.group())};", text)


def to_mermaid(
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
    """A Mermaid ``flowchart TD``: ``parent_of`` as solid arrows in edge order, other edges as
    dashed arrows labelled with their type, nodes in no hierarchy in a subgraph beside.

    Nodes are named ``n0``, ``n1``... (Mermaid reserves words such as ``end``); labels carry
    the id, type, status and content, with every character that Mermaid could read as syntax
    written as an entity code. Highlighted results get the class ``highlight``, the nodes
    their walks pass through ``onpath``, and the walks' edges a ``linkStyle``. A node a rule
    marked gets the class ``needs_review`` or ``blocked`` and its mark on a line of its label
    (``! blocked because f_closed``). ``max_nodes`` caps the picture
    (:func:`~hgm_engine.render.picture.picture`); a ``%%`` comment says what it left out.

    >>> from hgm_engine.memory import Memory
    >>> m = Memory.from_document({"format": "hgm-graph/1",
    ...     "nodes": [{"id": "g", "type": "goal", "content": 'say "]; drop'}], "edges": []})
    >>> print(to_mermaid(m).splitlines()[1])
        n0["g [goal]<br/>say #34;]#59; drop"]
    """
    p = picture(
        memory, root=root, depth=depth, highlight=highlight, as_of=as_of, focus=focus, params=params, history=False,
        max_nodes=max_nodes,
    )
    names = {node.id: f"n{i}" for i, node in enumerate(p.nodes)}
    lines = ["flowchart TD"]
    if p.highlight is not None:
        lines.append(f"    %% highlight: {_mermaid_text(short(p.highlight.query, 200))} ({highlight_summary(p.highlight)})")
    if p.note is not None:
        lines.append(f"    %% {_mermaid_text(omitted_note(p.note) or '')}")

    def declare(node: Node) -> str:
        head, detail = caption(node, LABEL_WIDTH)
        if node.id in p.hidden:
            detail = (detail + " " if detail else "") + hidden_note(p.hidden[node.id])
        label = _mermaid_text(head) + ("<br/>" + _mermaid_text(detail) if detail else "")
        mark = dirty_note(node)
        if mark is not None:
            label += "<br/>" + _mermaid_text(short(mark, LABEL_WIDTH))
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
    class_names = {kind: css_name(kind) for kind in by_type}
    for kind in by_type:
        fill, stroke = colors_of(kind)
        lines.append(f"    classDef {class_names[kind]} fill:{fill},stroke:{stroke},color:#111827")
    for kind, members in by_type.items():
        lines.append(f"    class {','.join(members)} {class_names[kind]}")
    for state, (fill, stroke) in DIRTY_COLORS.items():
        members = [names[n.id] for n in p.nodes if n.get("dirty") == state]
        if members:
            dash = ",stroke-dasharray:6 3" if state == "needs_review" else ""
            lines.append(f"    classDef {state} fill:{fill},stroke:{stroke},stroke-width:3px{dash}")
            lines.append(f"    class {','.join(members)} {state}")
    if p.highlight is not None:
        lines.append(f"    classDef highlight fill:#ffedd5,stroke:{HIGHLIGHT_COLOR},stroke-width:3px")
        lines.append(f"    classDef onpath stroke:{HIGHLIGHT_COLOR},stroke-width:2px,stroke-dasharray:5 3")
        results = [names[i] for i, how in p.marked.items() if how == "result"]
        on_path = [names[i] for i, how in p.marked.items() if how == "path"]
        if results:
            lines.append(f"    class {','.join(results)} highlight")
        if on_path:
            lines.append(f"    class {','.join(on_path)} onpath")
        if marked_links:
            lines.append(f"    linkStyle {','.join(marked_links)} stroke:{HIGHLIGHT_COLOR},stroke-width:3px")
    return "\n".join(lines)
