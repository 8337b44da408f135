"""Levels and roll-up: a summary node for a scenario's events, or for any subtree (docs/time.md).

The levels of the second origin document are a convention over the graph: a **global** goal
(``kind: 'global'``, or a root goal with scenarios under it) holds long-lived aims; a
**scenario** goal (``kind: 'scenario'``) one task or session; the **events** are everything
under a scenario along ``parent_of`` (paths, steps, their results and facts). :func:`level_of`
reads the convention; a node's own ``level`` attribute wins.

A summary is one ``fact`` node with ``kind: 'summary'``, linked ``summary -summarizes-> X``
to the summarized node and to every event under it; ``summary_of`` names the summarized node.
The default summary is extractive, offline and deterministic (:func:`extract`): counts by type
and status, the salient steps, the entities the events mention, the outcomes.

>>> from hgm_engine.model import MemoryGraph
>>> g = MemoryGraph()
>>> _ = g.add_node("s", "goal", {"kind": "scenario", "content": "Order a refund"})
>>> _ = g.add_node("a", "action", {"content": "Look up the order", "status": "done"})
>>> _ = g.add_node("b", "action", {"content": "Issue the refund", "status": "failed"})
>>> for child in "ab": _ = g.add_edge("s", child, "parent_of")
>>> draft = extract(g, "s")
>>> draft.members, draft.attributes["counts"]["status"]
(('a', 'b'), {'done': 1, 'failed': 1})
>>> print(draft.attributes["content"])
Summary of scenario 's' (Order a refund): 2 events — 2 actions (1 done, 1 failed). Steps: Look up the order → Issue the refund. Outcomes: failed: Issue the refund.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

import attrs

from hgm_engine.errors import Problem, RequestError
from hgm_engine.model import GraphOverlay, GraphView

__all__ = [
    "SUMMARY_KIND",
    "SUMMARIZES",
    "LEVELS",
    "MAX_SUMMARIZED",
    "MAX_ITEMS",
    "SummaryDraft",
    "level_of",
    "is_summary",
    "subtree",
    "extract",
    "summary_id",
    "write_summary",
]

SUMMARY_KIND = "summary"
SUMMARIZES = "summarizes"
LEVELS = ("global", "scenario", "event")
MAX_SUMMARIZED = 20_000
"""The most nodes one summary may cover (``Memory.summarize(max_nodes=...)`` sets another)."""
MAX_ITEMS = 8
"""How many steps, entities and outcomes a summary lists by name (the rest are counted)."""
_TEXT = 120  # characters of one step, entity or outcome quoted in a summary


@attrs.frozen
class SummaryDraft:
    """What a summary of ``root`` will hold: the ``members`` it covers (in preorder) and the
    summary node's ``attributes`` (``content`` included)."""

    root: str
    members: tuple[str, ...]
    attributes: Mapping[str, Any]


def is_summary(node: Any) -> bool:
    """Whether ``node`` is a summary node.

    >>> from hgm_engine.model import Node, freeze
    >>> is_summary(Node("s", "fact", freeze({"kind": "summary"}), 1)), is_summary(None)
    (True, False)
    """
    return node is not None and node.attrs.get("kind") == SUMMARY_KIND


def level_of(view: GraphView, node_id: str) -> str | None:
    """The level of a node by the convention: its ``level`` attribute when it is one of
    ``LEVELS``; ``scenario`` for a scenario goal; ``global`` for a goal with ``kind: 'global'``
    or a goal with a scenario below it (not under one); ``event`` under a scenario; else None.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph()
    >>> _ = g.add_node("top", "goal", {}); _ = g.add_node("s", "goal", {"kind": "scenario"}); _ = g.add_node("a", "action", {})
    >>> _ = g.add_edge("top", "s", "parent_of"); _ = g.add_edge("s", "a", "parent_of")
    >>> [level_of(g, n) for n in ("top", "s", "a")]
    ['global', 'scenario', 'event']
    """
    node = view.node(node_id)
    if node is None:
        return None
    own = node.attrs.get("level")
    if own in LEVELS:
        return own
    kind = node.attrs.get("kind")
    if node.type == "goal" and kind == "scenario":
        return "scenario"
    if node.type == "goal" and kind == "global":
        return "global"
    # above or below a scenario?
    seen = {node_id}
    level = [node_id]
    for _ in range(64):
        parents = [p for n in level for p in view.in_adjacency(n).by_type.get("parent_of", ()) if p not in seen]
        if not parents:
            break
        for parent in parents:
            seen.add(parent)
            if view.node(parent).attrs.get("kind") == "scenario":
                return "event"
        level = parents
    if node.type == "goal":
        stack = list(view.out_adjacency(node_id).by_type.get("parent_of", ()))
        visited: set[str] = set()
        while stack and len(visited) < 10_000:
            child = stack.pop()
            if child in visited:
                continue
            visited.add(child)
            if view.node(child).attrs.get("kind") == "scenario":
                return "global"
            stack.extend(view.out_adjacency(child).by_type.get("parent_of", ()))
    return None


def subtree(view: GraphView, root: str, *, max_nodes: int = MAX_SUMMARIZED) -> list[str]:
    """The events under ``root``: its descendants along ``parent_of`` in preorder (edge order),
    then the results and facts they produce; summaries are never members. More than
    ``max_nodes`` is ``limit-exceeded``.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph()
    >>> for n, t in (("g", "goal"), ("a", "action"), ("r", "result")): _ = g.add_node(n, t, {})
    >>> _ = g.add_edge("g", "a", "parent_of"); _ = g.add_edge("a", "r", "produces")
    >>> subtree(g, "g")
    ['a', 'r']
    """
    nodes = view.node_map()
    order: list[str] = []
    seen = {root}
    stack = [root]
    while stack:
        current = stack.pop()
        if current != root:
            order.append(current)
            if len(order) > max_nodes:
                raise _too_many(root, max_nodes)
        children = [c for c in view.out_adjacency(current).by_type.get("parent_of", ()) if c not in seen and not is_summary(nodes[c])]
        seen.update(children)
        stack.extend(reversed(children))
    produced: list[str] = []
    for member in order:
        for target in view.out_adjacency(member).by_type.get("produces", ()):
            if target not in seen and not is_summary(nodes[target]):
                seen.add(target)
                produced.append(target)
    if len(order) + len(produced) > max_nodes:
        raise _too_many(root, max_nodes)
    return order + produced


def _too_many(root: str, max_nodes: int) -> RequestError:
    return RequestError(
        [
            Problem(
                "limit-exceeded",
                f"{root!r} has more than {max_nodes:,} events; summarize its scenarios or subgoals one by one "
                "(or raise max_nodes)",
                where=root,
            )
        ]
    )


def _text(node: Any) -> str:
    text = node.attrs.get("content") or node.attrs.get("name") or node.attrs.get("title") or node.id
    text = " ".join(str(text).split())
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"


def _listed(items: list[str], limit: int, separator: str) -> str:
    shown = separator.join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def extract(view: GraphView, root: str, *, max_nodes: int = MAX_SUMMARIZED, max_items: int = MAX_ITEMS) -> SummaryDraft:
    """The extractive summary of ``root``'s events (deterministic: the same graph gives the
    same summary). Unknown ``root``: ``unknown-node``; nothing under it: ``empty-subtree``.

    Salient steps are the actions that produced something or ended (done or failed), then the
    others, ``max_items`` of them, shown in their order; entities are those the events are
    ``related_to``, most mentioned first; outcomes are the results and facts produced, then
    the failed actions.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("g", "goal", {})
    >>> extract(g, "g")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: empty-subtree at g: 'g' has nothing under it to summarize (no parent_of children)
    """
    node = view.node(root)
    if node is None:
        raise RequestError([Problem("unknown-node", f"no node {root!r}", where=root)])
    if is_summary(node):
        raise RequestError([Problem("invalid-argument", f"{root!r} is a summary; summarize what it summarizes", where=root)])
    members = subtree(view, root, max_nodes=max_nodes)
    if not members:
        raise RequestError(
            [Problem("empty-subtree", f"{root!r} has nothing under it to summarize (no parent_of children)", where=root)]
        )
    nodes = view.node_map()
    member_set = set(members)
    by_type = Counter(nodes[m].type for m in members)
    by_status = Counter(nodes[m].attrs["status"] for m in members if isinstance(nodes[m].attrs.get("status"), str))
    actions = [m for m in members if nodes[m].type == "action"]

    def salience(node_id: str) -> int:
        attrs_ = nodes[node_id].attrs
        produced = bool(view.out_adjacency(node_id).by_type.get("produces"))
        return 2 * produced + (attrs_.get("status") in ("done", "failed"))

    position = {m: i for i, m in enumerate(members)}
    chosen = sorted(actions, key=lambda a: (-salience(a), position[a]))[:max_items]
    steps = sorted(chosen, key=position.__getitem__)
    mentions: Counter = Counter()
    for member in members:
        adjacency = (view.out_adjacency(member), view.in_adjacency(member))
        for other in dict.fromkeys(o for a in adjacency for o in a.by_type.get("related_to", ())):
            if other not in member_set and nodes[other].type == "entity":
                mentions[other] += 1
    entities = [e for e, _ in sorted(mentions.items(), key=lambda item: (-item[1], nodes[item[0]].seq))]
    outcomes = [m for m in members if nodes[m].type in ("result", "fact") and view.in_adjacency(m).by_type.get("produces")]
    outcomes += [m for m in members if nodes[m].type in ("result", "fact") and m not in outcomes]
    failed = [a for a in actions if nodes[a].attrs.get("status") == "failed"]
    level = level_of(view, root)
    kinds = ", ".join(
        f"{count} {name}{'s' if count != 1 else ''}" + (_status_part(nodes, members, name, by_status) if name == "action" else "")
        for name, count in sorted(by_type.items(), key=lambda item: (-item[1], item[0]))
    )
    title = _text(node)
    head = f"Summary of {level or node.type} {root!r}" + (f" ({title})" if title != root else "")
    parts = [f"{head}: {len(members)} event{'s' if len(members) != 1 else ''} — {kinds}."]
    goals = [m for m in members if nodes[m].type == "goal"]
    if goals:
        parts.append(f"Goals: {_listed([_text(nodes[g]) for g in goals], max_items, '; ')}.")
    if steps:
        parts.append(f"Steps: {_listed([_text(nodes[s]) for s in steps], max_items, ' → ')}" + (f" (of {len(actions)})" if len(actions) > len(steps) else "") + ".")
    if entities:
        parts.append(f"Entities: {_listed([_text(nodes[e]) for e in entities], max_items, ', ')}.")
    outcome_texts = [_text(nodes[o]) for o in outcomes] + [f"failed: {_text(nodes[a])}" for a in failed]
    if outcome_texts:
        parts.append(f"Outcomes: {_listed(outcome_texts, max_items, '; ')}.")
    attributes: dict[str, Any] = {
        "content": " ".join(parts),
        "kind": SUMMARY_KIND,
        "summary_of": root,
        "method": "extractive",
        "covers": len(members),
        "counts": {"type": dict(sorted(by_type.items())), "status": dict(sorted(by_status.items()))},
        "steps": steps,
        "entities": entities[:max_items],
        "outcomes": (outcomes + failed)[:max_items],
    }
    if level is not None:
        attributes["level"] = level
    return SummaryDraft(root, tuple(members), attributes)


def _status_part(nodes: Mapping[str, Any], members: list[str], node_type: str, by_status: Counter) -> str:
    statuses = Counter(
        nodes[m].attrs["status"] for m in members if nodes[m].type == node_type and isinstance(nodes[m].attrs.get("status"), str)
    )
    if not statuses:
        return ""
    return " (" + ", ".join(f"{count} {status}" for status, count in sorted(statuses.items(), key=lambda i: (-i[1], i[0]))) + ")"


def summary_id(view: GraphView, root: str) -> tuple[str, bool]:
    """The id of ``root``'s summary and whether it exists already: the summary node that
    ``summarizes`` it with ``summary_of`` = ``root``, else a fresh ``summary-ROOT`` id.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("g", "goal", {})
    >>> summary_id(g, "g")
    ('summary-g', False)
    """
    for source in view.in_adjacency(root).by_type.get(SUMMARIZES, ()):
        node = view.node(source)
        if is_summary(node) and node.attrs.get("summary_of") == root:
            return source, True
    candidate, number = f"summary-{root}", 1
    while view.node(candidate) is not None:
        number += 1
        candidate = f"summary-{root}-{number}"
    return candidate, False


def write_summary(overlay: GraphOverlay, ctx: Any, draft: SummaryDraft) -> str:
    """Add (or refresh) the summary node of ``draft`` on ``overlay`` and its ``summarizes``
    edges to the root and every member; returns its id. A refreshed summary loses the edges
    to nodes it no longer covers, and its staleness marks (an update clears them)."""
    node_id, exists = summary_id(overlay, draft.root)
    targets = (draft.root, *draft.members)
    if exists:
        old = overlay.node(node_id)
        # the marks stay for the rule engine to clear (an update clears them, and the report says so)
        keep = {k: v for k, v in old.attrs.items() if k not in ("steps", "entities", "outcomes", "counts", "model")}
        keep.update(draft.attributes)
        overlay.set_node_attrs(node_id, keep)
        ctx.updated_ids[node_id] = None
        ctx.clearing_ids[node_id] = None
        wanted = set(targets)
        for target in list(overlay.out_adjacency(node_id).by_type.get(SUMMARIZES, ())):
            if target not in wanted:
                overlay.remove_edge(node_id, target, SUMMARIZES)
    else:
        overlay.add_node(node_id, "fact", dict(draft.attributes))
    for target in targets:
        if overlay.edge(node_id, target, SUMMARIZES) is None:
            overlay.add_edge(node_id, target, SUMMARIZES, None)
    return node_id
