"""The HTML picture of a memory: one self-contained page that draws the
:class:`~hgm_engine.render.picture.Picture` as SVG with its own script.

This module lays the picture out (:func:`_layout`: a tidy tree growing to the right, the
nodes in no hierarchy in columns beyond it), turns it into the page's data
(``hgm-picture/1``, embedded as JSON) and fills the page. The page itself lives beside this
module as package data, in ``assets/``: ``page.html`` (the skeleton, with ``@TITLE@``,
``@STYLE@``, ``@SCRIPT@`` and ``@DATA@`` to fill), ``style.css`` and ``script.js`` (which
draws the data with DOM calls only, opens the side panel on a click or ``#select=ID``, and
whose first line shows an error box instead of a blank page when drawing fails). They are
inlined as they are, so the page fetches nothing.

>>> from hgm_engine.model import MemoryGraph
>>> page = to_html(MemoryGraph.from_records([("g", "goal", {"content": "Trip"})], []))
>>> page.startswith("<!DOCTYPE html>"), '<g id="nodes">' in page, "@DATA@" in page
(True, True, False)
"""

from __future__ import annotations

import functools
import html
import importlib.resources
import json
import re
from typing import Any, Mapping

from hgm_engine.model import thaw
from hgm_engine.render.labels import caption, colors_of, dirty_note, short
from hgm_engine.render.picture import Drawable, Picture, dirty_state, picture

__all__ = ["NODE_WIDTH", "NODE_HEIGHT", "COLUMN_GAP", "ROW_GAP", "MARGIN", "MAX_NODES", "dom_id", "to_html"]

# Layout of the HTML view (pixels): node boxes, the gap between columns and between rows.
NODE_WIDTH = 210
NODE_HEIGHT = 46
COLUMN_GAP = 90
ROW_GAP = 14
MARGIN = 24
_BOX_CHARS = 30  # characters that fit on one line of an HTML node box
# The most nodes one page draws (to_html's max_nodes; hgm show --max-nodes): a larger picture
# shows the neighbourhood of the highlight (or the root) and says what it left out. A page
# holds about 3 KB per node, and a browser lays out a few thousand boxes without strain.
MAX_NODES = 2000
# How far the script's edges reach beyond the boxes (script.js draws them so): an arc between
# two boxes of one column bulges out to the right by 28 px plus 12 % of their distance, at
# most 88 px, and its label is centred at three quarters of the bulge.
_ARC_BULGE, _ARC_MAX_BULGE, _LABEL_CHAR = 28, 88, 6.5


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


def _extent(p: Picture, position: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
    """The width and height the drawing needs: every box, the "+N" of hidden children, and the
    arcs and labels of edges within one column, which reach out to the right of it (the
    page's script measures what it drew as well, and grows the picture if a font is wider)."""
    right = max((x + NODE_WIDTH for x, _ in position.values()), default=0)
    for node_id, count in p.hidden.items():
        if node_id in position:
            right = max(right, position[node_id][0] + NODE_WIDTH + 8 + round(_LABEL_CHAR * len(f"+{count}")))
    for edge in p.edges:
        (ax, ay), (bx, by) = position[edge.source], position[edge.target]
        if abs(ax - bx) < NODE_WIDTH / 2:
            bulge = _ARC_BULGE + min(_ARC_MAX_BULGE - _ARC_BULGE, abs(by - ay) * 0.12)
            reach = bulge * 0.75 + (0 if edge.type == "parent_of" else _LABEL_CHAR * len(edge.type) / 2 + 6)
            right = max(right, round(max(ax, bx) + NODE_WIDTH + max(bulge, reach)))
    bottom = max((y + NODE_HEIGHT for _, y in position.values()), default=0)
    return right + MARGIN, bottom + MARGIN


def _page_data(p: Picture, title: str) -> dict[str, Any]:
    position = _layout(p)
    width, height = _extent(p, position)
    nodes = []
    for node in p.nodes:
        head, detail = caption(node, 10_000)
        attributes = thaw(node.attrs)
        x, y = position[node.id]
        nodes.append(
            {
                "id": node.id,
                "dom_id": dom_id("node-", node.id),
                "type": node.type,
                "label": short(node.id, _BOX_CHARS - 2),
                "detail": short(detail, _BOX_CHARS + 4) if detail else "",
                "title": f"{head}\n{detail}" if detail else head,
                "status": attributes.get("status") if isinstance(attributes.get("status"), str) else None,
                "attrs": attributes,
                "x": x,
                "y": y,
                "level": p.levels.get(node.id),
                "hierarchy": node.id in p.hierarchy,
                "hidden_children": p.hidden.get(node.id, 0),
                "mark": p.marked.get(node.id),
                "dirty": dirty_state(node),
                "dirty_note": dirty_note(node),
                "dirty_marks": _marks_of(attributes) if dirty_state(node) else [],
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
        "node_colors": {t: list(colors_of(t)) for t in types},
        "edge_types": edge_types,
        "nodes": nodes,
        "edges": edges,
        "highlight": None if p.highlight is None else p.highlight.to_json(),
        "omitted": p.omitted,
        "omitted_edges": p.omitted_edges,
        "note": p.note,
    }


def _marks_of(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A node's staleness marks as the panel lists them (what is not a mark is left out)."""
    marks = attributes.get("dirty_marks")
    return [dict(mark) for mark in marks if isinstance(mark, Mapping)] if isinstance(marks, list) else []


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
    memory: Drawable,
    *,
    root: str | None = None,
    depth: int | None = None,
    highlight: str | None = None,
    as_of: int | str | None = None,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
    title: str | None = None,
    max_nodes: int | None = MAX_NODES,
) -> str:
    """One self-contained HTML page (inline CSS and script, nothing fetched) that draws the
    picture as SVG: the hierarchy as a tree growing to the right, the other nodes beside it.

    The data sits in ``<script type="application/json" id="hgm-data">`` (``<``, ``>``, ``&``
    escaped); the page's script draws it with DOM calls only (no HTML is built from data).
    Node groups are ``<g class="node ..." id="node-ID" data-id="ID">`` and edges ``<path
    class="edge ..." id="edge-N" data-from data-to data-type>``; highlighted results, walk
    edges and the query line carry the class ``highlight`` (nodes a walk passes through:
    ``onpath``). Clicking a node opens the side panel ``#panel`` with its id, type,
    attributes, edges, staleness marks and history (embedded now, from the memory's commits
    up to the state drawn); so does opening the page at ``#select=ID``. The page opens
    scrolled to the first highlighted result, with the keyboard focus on it (the query line's
    ‹ › buttons step through the results); a ``#select=ID`` node wins both.

    A node a rule marked carries the class ``needs_review`` or ``blocked``, a badge saying so
    and, in the panel, each mark's rule, cause, t and reason. ``max_nodes`` (default
    :data:`MAX_NODES`; None: no cap) bounds what is drawn: a larger picture shows the
    neighbourhood of the highlight, or of ``root``
    (:func:`~hgm_engine.render.picture.picture`), and the page's header says what was left out.

    >>> from hgm_engine.cli import sample_document
    >>> from hgm_engine.memory import Memory
    >>> page = to_html(Memory.from_document(sample_document()), highlight="root.subgoals")
    >>> page.startswith("<!DOCTYPE html>"), "http" in page, 'id="hgm-data"' in page
    (True, False, True)
    """
    p = picture(memory, root=root, depth=depth, highlight=highlight, as_of=as_of, focus=focus, params=params, max_nodes=max_nodes)
    if title is None:
        title = "memory" if p.t is None else f"memory at t={p.t}"
    data = _page_data(p, title)
    return (
        _asset("page.html")
        .replace("@TITLE@", html.escape(f"hgm — {title}"))
        .replace("@STYLE@", _asset("style.css"))
        .replace("@SCRIPT@", _asset("script.js"))
        .replace("@DATA@", _script_json(data))
    )


@functools.cache
def _asset(name: str) -> str:
    """The text of ``assets/name`` (package data: it ships in the wheel), read once."""
    return (importlib.resources.files("hgm_engine.render") / "assets" / name).read_text(encoding="utf-8")
