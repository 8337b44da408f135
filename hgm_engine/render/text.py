"""A memory for a terminal: query results as tables, the goal hierarchy as a tree, changes one
per line. The ``hgm`` command prints these, and so do the planner scenarios (``hgm demo NAME``).

Every renderer returns a list of lines (no trailing newlines) and takes ``unicode=False`` for
terminals that cannot draw box-drawing characters and arrows.

>>> print("\\n".join(change_lines([{"kind": "node_removed", "id": "a2", "node": {"id": "a2", "type": "action"}}])))
- node a2 [action]
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping, Sequence

import attrs

from hgm_engine.model import MemoryGraph, Node
from hgm_engine.query import QueryResult
from hgm_engine.render.labels import dirty_note, hierarchy_tops, in_hierarchy, time_mark

__all__ = [
    "Glyphs",
    "UNICODE",
    "ASCII",
    "glyphs_for",
    "CONTENT_WIDTH",
    "shorten",
    "plural",
    "node_label",
    "document_label",
    "edge_summary",
    "result_lines",
    "tree_lines",
    "change_lines",
    "terminal_safe",
    "json_terminal_safe",
]

CONTENT_WIDTH = 64  # a node's content is shortened to this many characters on one line

# What a terminal would act on instead of showing: C0 controls (ESC starts escape sequences),
# DEL, C1 controls (U+009B is a one-character CSI), the bidirectional overrides that reorder
# what is shown, and lone surrogates (which no terminal encoding can write).
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_CONTROL = re.compile(f"[{_UNSAFE}]")
_CONTROL_OR_BREAK = re.compile(f"[{_UNSAFE}\t\n]")
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")  # JSON escapes C0 itself


def _escaped(match: "re.Match[str]") -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: Any, *, lines: bool = True) -> str:
    """``text`` with every character a terminal would act on written as an escape (``\\x1b``,
    ``\\u202e``), so an id or a content cannot move the cursor, clear the screen or retitle
    the window. With ``lines`` (text of several lines) newlines and tabs stay; without, they
    are escaped too (one table cell, one id).

    >>> print(terminal_safe("red\\x1b[31m alert\\x07"))
    red\\x1b[31m alert\\x07
    >>> terminal_safe("a\\tb\\nc"), terminal_safe("a\\tb\\nc", lines=False)
    ('a\\tb\\nc', 'a\\\\x09b\\\\x0ac')
    """
    text = str(text)
    pattern = _CONTROL if lines else _CONTROL_OR_BREAK
    if text.isascii() and text.isprintable():
        return text
    return pattern.sub(_escaped, text)


def json_terminal_safe(text: str) -> str:
    """A JSON text with the control characters JSON leaves as they are (DEL, C1, bidirectional
    overrides, lone surrogates) written as ``\\u`` escapes: the same JSON value, safe on a
    terminal.

    >>> doc = json.dumps({"id": "a\\x9bb"}, ensure_ascii=False)
    >>> json_terminal_safe(doc), json.loads(json_terminal_safe(doc)) == json.loads(doc)
    ('{"id": "a\\\\u009bb"}', True)
    """
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@attrs.frozen
class Glyphs:
    """The characters a terminal picture is drawn with: tree branches, an arrow, an ellipsis.

    >>> UNICODE.tee + "child", ASCII.arrow.join(["a", "b"])
    ('├── child', 'a -> b')
    """

    tee: str
    last: str
    bar: str
    blank: str
    arrow: str
    ellipsis: str


UNICODE = Glyphs("├── ", "└── ", "│   ", "    ", " → ", "…")
ASCII = Glyphs("|-- ", "`-- ", "|   ", "    ", " -> ", "...")


def glyphs_for(unicode: bool) -> Glyphs:
    """:data:`UNICODE` or, for a terminal that cannot take it, :data:`ASCII`.

    >>> glyphs_for(False).ellipsis
    '...'
    """
    return UNICODE if unicode else ASCII


def shorten(text: Any, width: int, ellipsis: str) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``width`` characters.

    >>> shorten("Visit   the\\nForbidden City", 12, "...")
    'Visit the...'
    >>> shorten("short", 12, "…")
    'short'
    """
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    return text[: width - len(ellipsis)].rstrip() + ellipsis


def plural(count: int, word: str) -> str:
    """``1 node``, ``2 nodes``.

    >>> plural(1, "node"), plural(0, "path")
    ('1 node', '0 paths')
    """
    return f"{count} {word}{'' if count == 1 else 's'}"


def node_label(node: Node, glyphs: Glyphs = UNICODE) -> str:
    """``id [type] status: content``, leaving out what the node does not have.

    >>> from hgm_engine import Memory
    >>> m = Memory.from_document({"format": "hgm-graph/1", "edges": [],
    ...     "nodes": [{"id": "trip", "type": "goal", "status": "active", "content": "Three days in Beijing"}]})
    >>> node_label(m.graph.node("trip"))
    'trip [goal] active: Three days in Beijing'
    """
    mark = time_mark(node)  # a summary, a closed fact (docs/time.md)
    label = f"{_cell(node.id)} [{_cell(node.type)}{'' if mark is None else ', ' + _cell(mark)}]"
    status = node.get("status")
    if status is not None:
        label += f" {_cell(status)}"
    content = node.get("content")
    if content is not None:
        label += ": " + _cell(shorten(content, CONTENT_WIDTH, glyphs.ellipsis))
    return label


def document_label(node: Mapping[str, Any], glyphs: Glyphs = UNICODE) -> str:
    """``id [type] status: content`` of a node in its JSON form (a graph file's, a report's).

    >>> document_label({"id": "e1", "type": "entity", "content": "Wangfujing"})
    'e1 [entity]: Wangfujing'
    """
    mark = time_mark(node)
    label = f"{_cell(node.get('id'))} [{_cell(node.get('type'))}{'' if mark is None else ', ' + _cell(mark)}]"
    if node.get("status") is not None:
        label += f" {_cell(node['status'])}"
    if node.get("content") is not None:
        label += ": " + _cell(shorten(node["content"], CONTENT_WIDTH, glyphs.ellipsis))
    return label


def _cell(value: Any) -> str:
    """One value on one line of a table or a label: every control character escaped."""
    return terminal_safe(value, lines=False)


def result_lines(result: QueryResult, *, unicode: bool = True) -> list[str]:
    """A query result as people read it: a table of nodes, a number, true/false, or walks.

    >>> from hgm_engine import Memory
    >>> m = Memory.from_document({"format": "hgm-graph/1",
    ...     "nodes": [{"id": "day1", "type": "goal"},
    ...               {"id": "a_alipay", "type": "action", "status": "pending", "content": "Set up Alipay"},
    ...               {"id": "a_snacks", "type": "action", "status": "pending"},
    ...               {"id": "f_rate", "type": "fact"}, {"id": "r_booking", "type": "result"}],
    ...     "edges": [{"from": "day1", "to": "a_alipay", "type": "parent_of"},
    ...               {"from": "day1", "to": "a_snacks", "type": "parent_of"},
    ...               {"from": "a_alipay", "to": "r_booking", "type": "produces"},
    ...               {"from": "r_booking", "to": "f_rate", "type": "derived_from"}]})
    >>> print("\\n".join(result_lines(m.query("#day1.actions.where(status = 'pending')"))))
    ID        TYPE    STATUS   CONTENT
    a_alipay  action  pending  Set up Alipay
    a_snacks  action  pending
    (2 nodes)
    >>> result_lines(m.query("#day1.actions.count()")), result_lines(m.query("#nope.exists()"))
    (['2'], ['false'])
    >>> result_lines(m.query("#f_rate.derived{1,}.paths()"), unicode=False)
    ['f_rate -> r_booking', '(1 path)']
    """
    glyphs = glyphs_for(unicode)
    if result.kind == "count":
        return [str(result.value)]
    if result.kind == "exists":
        return ["true" if result.value else "false"]
    if result.kind == "paths":
        lines = [glyphs.arrow.join(map(_cell, path)) for path in result.paths]
        return lines + [f"({plural(len(result.paths), 'path')})" if lines else "(no paths)"]
    nodes = result.nodes
    if not nodes:
        return ["(no nodes)"]
    columns = ["ID", "TYPE"]
    with_status = any(node.get("status") is not None for node in nodes)
    if with_status:
        columns.append("STATUS")
    columns.append("CONTENT")
    rows = []
    for node in nodes:
        row = [_cell(node["id"]), _cell(node["type"])]
        if with_status:
            row.append("" if node.get("status") is None else _cell(node["status"]))
        content = node.get("content")
        row.append("" if content is None else _cell(shorten(content, CONTENT_WIDTH, glyphs.ellipsis)))
        rows.append(row)
    widths = [max(len(columns[i]), *(len(row[i]) for row in rows)) for i in range(len(columns) - 1)]
    table = []
    for row in [columns, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]
        table.append("  ".join(cells).rstrip())
    return table + [f"({plural(len(nodes), 'node')})"]


_EDGE_WORDS = {
    # edge type: (said of the source, said of the target)
    "parent_of": ("children", "parent"),
    "before": ("before", "after"),
    "related_to": ("related to", "related to"),
    "derived_from": ("derived from", "source of"),
    "produces": ("produces", "produced by"),
    "replaces": ("replaces", "replaced by"),
    "causes": ("causes", "caused by"),
}


def edge_summary(graph: MemoryGraph, node_id: str) -> str:
    """A node's edges grouped by relation, e.g. ``related to: e_x, f_y; produced by: a_z``.

    >>> from hgm_engine import Memory
    >>> g = Memory.from_document({"format": "hgm-graph/1",
    ...     "nodes": [{"id": "g", "type": "goal"}, {"id": "a", "type": "action"},
    ...               {"id": "e", "type": "entity"}, {"id": "r", "type": "result"}],
    ...     "edges": [{"from": "g", "to": "a", "type": "parent_of"}, {"from": "a", "to": "e", "type": "related_to"},
    ...               {"from": "a", "to": "r", "type": "produces"}]}).graph
    >>> edge_summary(g, "a")
    'related to: e; produces: r; parent: g'
    >>> edge_summary(g, "r")
    'produced by: a'
    """
    groups: dict[str, list[str]] = {}
    for edge in graph.edges_of(node_id):
        outgoing = edge.source == node_id
        words = _EDGE_WORDS.get(edge.type, (edge.type, f"{edge.type} (incoming)"))
        word = words[0] if outgoing else words[1]
        other = edge.target if outgoing else edge.source
        members = groups.setdefault(word, [])
        if other not in members:
            members.append(other)
    return "; ".join(f"{_cell(word)}: {', '.join(map(_cell, ids))}" for word, ids in groups.items())


def tree_lines(
    graph: MemoryGraph,
    root: str | None = None,
    *,
    depth: int | None = None,
    unicode: bool = True,
    marks: Mapping[str, str] | None = None,
) -> list[str]:
    """The ``parent_of`` hierarchy as a terminal tree, children in edge order.

    Without ``root`` every tree is drawn (root goals first, in creation order), followed by
    the nodes that are in no hierarchy with a summary of their edges. A node with several
    parents is drawn under each, and expanded only the first time (``(repeat, shown above)``);
    an edge back to an ancestor is marked ``(cycle)`` and not followed. ``depth`` limits the
    levels drawn below each top node (0 draws the tops only). ``marks`` maps node ids to a
    mark written at the end of their lines (``hgm show --highlight``). A node a rule marked
    stale or blocked says so after its label: ``! needs_review because f_price`` (its marks'
    causes, then the first reason given).

    >>> from hgm_engine import Memory
    >>> g = Memory.from_document({"format": "hgm-graph/1",
    ...     "nodes": [{"id": "trip", "type": "goal", "status": "active", "content": "Trip"},
    ...               {"id": "day1", "type": "goal"}, {"id": "visit", "type": "action", "status": "pending"},
    ...               {"id": "lunch", "type": "action"}, {"id": "park", "type": "entity", "content": "Park"}],
    ...     "edges": [{"from": "trip", "to": "day1", "type": "parent_of"},
    ...               {"from": "day1", "to": "visit", "type": "parent_of"},
    ...               {"from": "day1", "to": "lunch", "type": "parent_of"},
    ...               {"from": "visit", "to": "park", "type": "related_to"}]}).graph
    >>> print("\\n".join(tree_lines(g)))
    trip [goal] active: Trip
    └── day1 [goal]
        ├── visit [action] pending
        └── lunch [action]
    <BLANKLINE>
    not in the hierarchy:
      park [entity]: Park
          related to: visit
    >>> print("\\n".join(tree_lines(g, "trip", depth=1, unicode=False)))
    trip [goal] active: Trip
    `-- day1 [goal] (2 children not shown)
    """
    glyphs = glyphs_for(unicode)
    marks = marks or {}
    if root is not None:
        if root not in graph:
            raise KeyError(root)
        return _draw(graph, [root], depth, glyphs, marks)
    tops = hierarchy_tops(graph)
    lines = _draw(graph, tops, depth, glyphs, marks)
    loose = [node for node in graph.nodes() if not in_hierarchy(graph, node)]
    if loose:
        if lines:
            lines.append("")
        lines.append("not in the hierarchy:")
        for node in loose:
            lines.append("  " + _marked_label(node, glyphs) + (f"  {marks[node.id]}" if node.id in marks else ""))
            summary = edge_summary(graph, node.id)
            if summary:
                lines.append("      " + summary)
    return lines


def _marked_label(node: Node, glyphs: Glyphs) -> str:
    """:func:`node_label`, and the node's staleness mark when a rule marked it
    (``  ! needs_review because f_price``)."""
    label = node_label(node, glyphs)
    note = dirty_note(node)
    return label if note is None else f"{label}  {_cell(shorten(note, CONTENT_WIDTH, glyphs.ellipsis))}"


def _draw(graph: MemoryGraph, tops: Sequence[str], depth: int | None, glyphs: Glyphs, marks: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    expanded: set[str] = set()
    on_path: set[str] = set()
    # Explicit stack (deep hierarchies must not hit the recursion limit); "leave" entries pop
    # a node off the current path once its subtree is drawn.
    stack: list[tuple] = [("visit", top, "", "", 0) for top in reversed(tops)]
    while stack:
        entry = stack.pop()
        if entry[0] == "leave":
            on_path.discard(entry[1])
            continue
        _, node_id, first, rest, level = entry
        label = _marked_label(graph.node(node_id), glyphs)
        if node_id in marks:
            label += f"  {marks[node_id]}"
        if node_id in on_path:
            lines.append(f"{first}{label} (cycle)")
            continue
        if node_id in expanded:
            lines.append(f"{first}{label} (repeat, shown above)")
            continue
        children = graph.out_ids(node_id, "parent_of")
        if children and depth is not None and level >= depth:
            hidden = "1 child" if len(children) == 1 else f"{len(children)} children"
            lines.append(f"{first}{label} ({hidden} not shown)")
            continue
        lines.append(first + label)
        expanded.add(node_id)
        on_path.add(node_id)
        stack.append(("leave", node_id))
        for position in reversed(range(len(children))):
            is_last = position == len(children) - 1
            stack.append(
                (
                    "visit",
                    children[position],
                    rest + (glyphs.last if is_last else glyphs.tee),
                    rest + (glyphs.blank if is_last else glyphs.bar),
                    level + 1,
                )
            )
    return lines


def _value(value: Any, glyphs: Glyphs) -> str:
    return shorten(json_terminal_safe(json.dumps(value, ensure_ascii=False)), 48, glyphs.ellipsis)


def _attr_changes(before: Mapping[str, Any], after: Mapping[str, Any], glyphs: Glyphs) -> str:
    parts = []
    for key in [*before, *(k for k in after if k not in before)]:
        old = _value(before[key], glyphs) if key in before else "(unset)"
        new = _value(after[key], glyphs) if key in after else "(unset)"
        if old != new:
            parts.append(f"{_cell(key)} {old}{glyphs.arrow}{new}")
    return ", ".join(parts) or "(no attribute changed)"


def change_lines(changes: Iterable[Mapping[str, Any]], *, unicode: bool = True) -> list[str]:
    """Changes (in transaction-report form, formats.md) one per line: ``+`` added, ``-``
    removed, ``~`` updated.

    >>> print("\\n".join(change_lines([
    ...     {"kind": "node_added", "id": "a9", "node": {"id": "a9", "type": "action", "status": "pending"}},
    ...     {"kind": "edge_added", "from": "day1", "to": "a9", "type": "parent_of", "attrs": {"order": 2}},
    ...     {"kind": "node_updated", "id": "a1", "before": {"day": "Mon", "slot": "am"}, "after": {"day": "Tue"}},
    ...     {"kind": "node_removed", "id": "a2", "node": {"id": "a2", "type": "action"}},
    ...     {"kind": "edge_removed", "from": "a1", "to": "e1", "type": "related_to"}], unicode=False)))
    + node a9 [action] pending
    + edge day1 -parent_of-> a9 {"order": 2}
    ~ node a1: day "Mon" -> "Tue", slot "am" -> (unset)
    - node a2 [action]
    - edge a1 -related_to-> e1
    """
    glyphs = glyphs_for(unicode)
    lines = []
    for change in changes:
        kind = change.get("kind")
        if kind in ("node_added", "node_removed"):
            sign = "+" if kind == "node_added" else "-"
            lines.append(f"{sign} node {document_label(change.get('node') or {'id': change.get('id')}, glyphs)}")
        elif kind == "node_updated":
            lines.append(f"~ node {_cell(change['id'])}: {_attr_changes(change['before'], change['after'], glyphs)}")
        elif kind in ("edge_added", "edge_removed", "edge_updated"):
            edge = f"edge {_cell(change['from'])} -{_cell(change['type'])}-> {_cell(change['to'])}"
            if kind == "edge_updated":
                lines.append(f"~ {edge}: {_attr_changes(change['before'], change['after'], glyphs)}")
            else:
                attributes = f" {json_terminal_safe(json.dumps(change['attrs'], ensure_ascii=False))}" if change.get("attrs") else ""
                lines.append(f"{'+' if kind == 'edge_added' else '-'} {edge}{attributes}")
        elif kind == "loaded":
            lines.append(f"+ node {_cell(change['id'])} (in the initial load)")
        else:  # a kind added to the engine after this was written
            lines.append(f"* {json_terminal_safe(json.dumps(dict(change), ensure_ascii=False))}")
    return lines
