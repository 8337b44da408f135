"""The level verbs of a memory (docs/time.md): what holds about an entity at a valid time
(``facts``), and rolling a scenario's events up into a summary node (``summarize``,
``summary_of``). ``Memory`` forwards them here; the summary itself is :mod:`.summary`'s and the
valid-time reading :mod:`.validity`'s.
"""

from __future__ import annotations

from typing import Any, Callable

from attrs import evolve as attrs_evolve

from hgm_engine.errors import Problem, RequestError
from hgm_engine.model import GraphOverlay
from hgm_engine.txn.ops import OpContext
from hgm_engine.txn.report import TransactionReport
from hgm_engine.txn.summary import MAX_ITEMS, MAX_SUMMARIZED, extract, summary_id, write_summary
from hgm_engine.txn.validity import facts_about

__all__ = ["LevelVerbs", "MAX_PROMPT_EVENTS"]

MAX_PROMPT_EVENTS = 200
"""How many of a summary's events ``Memory.summarize`` shows a ``content`` writer (a model)."""


class LevelVerbs:
    """The level verbs of ``memory`` (a :class:`~hgm_engine.Memory`, read through its public
    ``view`` and ``commit_built``)."""

    def __init__(self, memory: Any):
        self.memory = memory

    def facts(self, entity: str, *, at: str | None = None, as_of: int | str | None = None) -> dict[str, Any]:
        """What holds about ``entity`` at the valid time ``at`` (ISO 8601; None: now), as
        memory knew it ``as_of`` (a t, snapshot or ISO 8601 time; None: now): every fact
        about it with its valid time, whether it holds, and what superseded what
        (docs/time.md).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "e", "type": "entity"},
        ...     {"op": "add_node", "id": "f1", "type": "fact", "content": "780 CNY", "valid_from": "2026-01-01"},
        ...     {"op": "add_edge", "from": "e", "to": "f1", "type": "related_to"}]})
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "f2", "type": "fact", "content": "820 CNY"},
        ...     {"op": "add_edge", "from": "e", "to": "f2", "type": "related_to"},
        ...     {"op": "invalidate", "id": "f1", "at": "2026-06-01", "by": "f2", "reason": "new season"}]})
        >>> m.facts("e", at="2026-03-01")["holding"], m.facts("e", at="2026-07-01")["holding"]
        (['f1'], ['f2'])
        """
        with self.memory.view(as_of) as view:
            return facts_about(view, entity, at)

    def summarize(
        self,
        node_id: str,
        *,
        author: str | None = None,
        reason: str | None = None,
        max_nodes: int = MAX_SUMMARIZED,
        max_items: int = MAX_ITEMS,
        content: Callable[[dict[str, Any]], str] | None = None,
        dry_run: bool = False,
    ) -> TransactionReport:
        """Roll the events under ``node_id`` (a scenario, or any subtree) up into one summary
        node (``kind: 'summary'``) linked to each node it covers by ``summarizes``; a second
        call refreshes the same summary. The summary is extractive and deterministic unless
        ``content(draft)`` writes its text (``hgm_engine.llm.summarize_with_model`` asks a
        model); ``draft`` is the extractive summary's attributes with ``events``: the
        summarized node then the first ``MAX_PROMPT_EVENTS`` members (id, type, content,
        status). An exception from ``content`` changes nothing. Any edit of a covered node
        marks the summary ``needs_review`` (docs/time.md).

        Errors (nothing changes): ``unknown-node``, ``empty-subtree``, ``invalid-argument`` (a
        summary given), ``limit-exceeded`` (more than ``max_nodes`` events).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "s", "type": "goal", "kind": "scenario", "content": "Refund"},
        ...     {"op": "add_node", "id": "a", "type": "action", "parent": "s", "content": "Look up the order", "status": "done"}]})
        >>> m.summarize("s").created, m.query("#s.summaries").ids, m.node("summary-s")["covers"]
        (('summary-s',), ['summary-s'], 1)
        >>> _ = m.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "failed"}}]})
        >>> m.node("summary-s")["dirty"]
        'needs_review'
        """
        for name, value in (("max_nodes", max_nodes), ("max_items", max_items)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RequestError([Problem("invalid-argument", f"{name} is a positive integer, not {value!r}", where=name)])
        with self.memory.view(None) as view:
            draft = extract(view, node_id, max_nodes=max_nodes, max_items=max_items)
            if content is not None:
                nodes = view.node_map()
                events = [
                    {k: v for k, v in (("id", m), ("type", nodes[m].type), ("content", nodes[m].attrs.get("content")),
                                       ("status", nodes[m].attrs.get("status"))) if v is not None}
                    for m in (node_id, *draft.members[:MAX_PROMPT_EVENTS])
                ]
        written = None if content is None else content(dict(draft.attributes, events=events))
        if written is not None and (not isinstance(written, str) or not written.strip()):
            raise RequestError([Problem("invalid-argument", "a summary's text is a non-empty string", where="content")])

        def build(overlay: GraphOverlay, ctx: OpContext) -> list[str]:
            fresh = extract(overlay, node_id, max_nodes=max_nodes, max_items=max_items)
            if written is not None:
                fresh = attrs_evolve(fresh, attributes=dict(fresh.attributes, content=written, method="model"))
            existed = summary_id(overlay, node_id)[1]
            made = write_summary(overlay, ctx, fresh)
            return [] if existed else [made]

        return self.memory.commit_built(
            build, author=author, reason=reason or f"summarize {node_id}", kind="transaction", dry_run=dry_run
        )

    def summary_of(self, node_id: str, *, as_of: int | str | None = None) -> dict[str, Any] | None:
        """The summary node of ``node_id`` (made by :meth:`summarize`) as JSON, or None.

        >>> from hgm_engine import Memory
        >>> Memory().summary_of("trip") is None
        True
        """
        with self.memory.view(as_of) as view:
            if not isinstance(node_id, str) or view.node(node_id) is None:
                return None
            found, exists = summary_id(view, node_id)
            return view.node(found).to_json() if exists else None
