"""What every picture format writes the same way: node captions, counts, colours, class names,
and which nodes the hierarchy is drawn from.

Mermaid, DOT and the HTML page draw one :class:`~hgm_engine.render.picture.Picture`; the words
and colours they put on it come from here, so the three say the same thing.

>>> colors_of("goal"), colors_of("no-such-type")
(('#dbeafe', '#3b82f6'), ('#f1f5f9', '#64748b'))
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from hgm_engine.model import MemoryGraph, Node

if TYPE_CHECKING:
    from hgm_engine.render.picture import Highlight

__all__ = [
    "TYPE_COLORS",
    "OTHER_COLORS",
    "HIGHLIGHT_COLOR",
    "LABEL_WIDTH",
    "colors_of",
    "plural",
    "short",
    "caption",
    "time_mark",
    "hidden_note",
    "css_name",
    "highlight_summary",
    "DIRTY_COLORS",
    "dirty_note",
    "omitted_note",
    "in_hierarchy",
    "hierarchy_tops",
]

# (fill, stroke) of a node box by node type; types without an entry get OTHER_COLORS.
TYPE_COLORS = {
    "goal": ("#dbeafe", "#3b82f6"),
    "action": ("#dcfce7", "#22c55e"),
    "entity": ("#fef3c7", "#f59e0b"),
    "fact": ("#f3e8ff", "#a855f7"),
    "result": ("#fce7f3", "#ec4899"),
}
OTHER_COLORS = ("#f1f5f9", "#64748b")
HIGHLIGHT_COLOR = "#ea580c"
# (fill, stroke) of a node a rule marked: needs_review (stale) and blocked.
DIRTY_COLORS = {"needs_review": ("#fef9c3", "#ca8a04"), "blocked": ("#fee2e2", "#b91c1c")}
LABEL_WIDTH = 48  # characters of content in Mermaid/DOT labels


def colors_of(node_type: str) -> tuple[str, str]:
    """The (fill, stroke) colours of a node box of type ``node_type``.

    >>> colors_of("fact")
    ('#f3e8ff', '#a855f7')
    """
    return TYPE_COLORS.get(node_type, OTHER_COLORS)


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, with an ``s`` unless ``n`` is 1.

    >>> plural(1, "result"), plural(3, "result")
    ('1 result', '3 results')
    """
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def short(text: Any, width: int) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to ``width`` characters
    with an ellipsis.

    >>> short("Visit   the\\nGreat Wall", 12)
    'Visit the G…'
    """
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def time_mark(node: Any) -> str | None:
    """How a picture tells a summary or a closed fact (docs/time.md) from the rest: ``summary
    of ID``, ``closed VALID_TO``, or None. ``node`` is a payload or its JSON form.

    >>> time_mark({"kind": "summary", "summary_of": "refund"}), time_mark({"valid_to": "2026-06-01"}), time_mark({})
    ('summary of refund', 'closed 2026-06-01', None)
    """
    get = node.get
    if get("kind") == "summary":
        return f"summary of {get('summary_of')}"
    if get("valid_to") is not None:
        return f"closed {get('valid_to')}"
    return None


def caption(node: Node, width: int) -> tuple[str, str]:
    """(``id [type]``, ``status: content``) with the content cut to ``width`` characters.

    >>> from hgm_engine.model import MemoryGraph
    >>> graph = MemoryGraph.from_records([("a", "action", {"status": "done", "content": "Book the hotel"})], [])
    >>> caption(graph.node("a"), 12)
    ('a [action]', 'done: Book …')
    """
    status, content = node.get("status"), node.get("content")
    detail = "" if status is None else str(status)
    if content is not None:
        detail = f"{detail}: {content}" if detail else str(content)
    mark = time_mark(node)
    kind = node.type if mark is None else f"{node.type}, {mark}"
    return f"{node.id} [{kind}]", short(detail, width) if detail else ""


def hidden_note(count: int) -> str:
    """What a node whose ``count`` children a depth limit left out says about them.

    >>> hidden_note(1), hidden_note(4)
    ('(+1 child not shown)', '(+4 children not shown)')
    """
    return "(+1 child not shown)" if count == 1 else f"(+{count} children not shown)"


def css_name(kind: str) -> str:
    """A class name made of safe characters (type names are identifiers in practice) that is
    none of the classes the pictures use for themselves.

    >>> css_name("goal"), css_name("highlight"), css_name("my-type"), css_name("blocked")
    ('goal', 't_highlight', 'my_type', 't_blocked')
    """
    safe = re.sub(r"[^A-Za-z0-9_]", "_", kind)
    reserved = ("highlight", "onpath", "default", "needs_review", "blocked")
    return "t_" + safe if safe in reserved or not safe[:1].isalpha() else safe


def highlight_summary(found: Highlight) -> str:
    """What a highlight found, in a few words (the title line of Mermaid and DOT).

    >>> from hgm_engine.render.picture import Highlight
    >>> highlight_summary(Highlight("root.actions", "nodes", ("a", "b"))), highlight_summary(Highlight("nodes.count()", "count", value=7))
    ('2 results', 'count = 7, marks no nodes')
    """
    if found.kind in ("count", "exists"):
        return f"{found.kind} = {json.dumps(found.value)}, marks no nodes"
    return plural(found.count, "result")


def dirty_note(node: Node) -> str | None:
    """What a picture writes on a node a rule marked ``needs_review`` or ``blocked``: ``!``,
    the state, and what it is because of (the ids its marks name, then the first reason
    given), or None for a node without a mark.

    >>> from hgm_engine.model import MemoryGraph
    >>> graph = MemoryGraph.from_records([("a", "action", {"dirty": "blocked", "dirty_marks": [
    ...     {"state": "blocked", "rule": "closed", "because": ["f_closed"], "t": 3, "reason": "closed on Mondays"}]}),
    ...     ("b", "action", {"dirty": "needs_review", "dirty_marks": [{"state": "needs_review", "because": ["f1", "f2"]}]})], [])
    >>> dirty_note(graph.node("a")), dirty_note(graph.node("b"))
    ('! blocked because f_closed: closed on Mondays', '! needs_review because f1, f2')
    """
    state = node.get("dirty")
    if state not in ("needs_review", "blocked"):
        return None
    marks = node.get("dirty_marks") or ()
    because: list[str] = []
    reason = None
    for mark in marks if isinstance(marks, (list, tuple)) else ():
        if not isinstance(mark, dict):
            continue
        for cause in mark.get("because") or ():
            if str(cause) not in because:
                because.append(str(cause))
        if reason is None and isinstance(mark.get("reason"), str) and mark["reason"]:
            reason = mark["reason"]
    note = f"! {state}"
    if because:
        note += " because " + ", ".join(because[:3]) + (f" and {len(because) - 3} more" if len(because) > 3 else "")
    if reason:
        note += f": {reason}"
    return note


def omitted_note(note: str | None) -> str | None:
    """The cap's note as the text formats print it, with what to do about it.

    >>> omitted_note("showing 2 of 9 nodes"), omitted_note(None)
    ('showing 2 of 9 nodes (draw more with a larger max_nodes, hgm show --max-nodes N)', None)
    """
    return None if note is None else f"{note} (draw more with a larger max_nodes, hgm show --max-nodes N)"


def in_hierarchy(graph: MemoryGraph, node: Node) -> bool:
    """Whether ``node`` is drawn in the hierarchy: a goal (a lone goal is a tree of its own),
    or a node with a ``parent_of`` edge in or out.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "f", "type": "fact"}]})
    >>> in_hierarchy(m.graph, m.graph.node("g")), in_hierarchy(m.graph, m.graph.node("f"))
    (True, False)
    """
    if node.type == "goal":
        return True  # a lone goal is a tree of its own
    return bool(graph.in_ids(node.id, "parent_of") or graph.out_ids(node.id, "parent_of"))


def hierarchy_tops(graph: MemoryGraph) -> list[str]:
    """Where the hierarchy is drawn from (``hgm show``, every picture): root goals in creation
    order, then whatever the hierarchy holds that they do not reach (a parentless non-goal
    with children; a ``parent_of`` cycle nothing enters), earliest first.

    >>> from hgm_engine import Memory
    >>> m = Memory()
    >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "h", "type": "goal"},
    ...     {"op": "add_node", "id": "a", "type": "action", "parent": "g"}]}).committed
    >>> hierarchy_tops(m.graph)
    ['g', 'h']
    """
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
        if node.id not in reached and in_hierarchy(graph, node):
            tops.append(node.id)
            reach(node.id)
    return tops
