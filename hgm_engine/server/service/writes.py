"""The service's changes to a memory: transactions (``transact``), one node (``add_node``,
``add_memory_node``), ``confirm``, ``summarize``, ``revert``, ``snapshot``, loading a graph
file (``load``) and forgetting (``purge``). Every string a change brings is checked to be
text a store can hold; a transaction the constraints refuse raises
:class:`~hgm_engine.errors.TransactionRefused` carrying its report.

>>> from hgm_engine import Memory
>>> WriteVerbs(Memory()).transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})["t"]
1
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.server.service.checks import check_text, fail, text_problem
from hgm_engine.server.service.documents import report_document
from hgm_engine.server.service.core import ServiceCore

__all__ = ["WriteVerbs"]


class WriteVerbs(ServiceCore):
    """Changing the memory (see the module)."""

    def transact(self, doc: Mapping[str, Any], dry_run: bool = False) -> dict[str, Any]:
        """Apply a transaction file; the report when committed (or a clean dry run).
        Refused by constraints: :class:`TransactionRefused` carrying the report."""
        if not isinstance(doc, Mapping):
            raise fail("invalid-transaction", "a transaction is a JSON object with 'ops'", "document")
        ops = doc.get("ops")
        if isinstance(ops, list) and len(ops) > self.limits.max_ops:
            raise fail("limit-exceeded", f"{len(ops)} ops; this server takes at most {self.limits.max_ops} per transaction")
        if isinstance(ops, list):
            for i, op in enumerate(ops):
                if isinstance(op, Mapping) and "op" in op and not isinstance(op["op"], str):
                    raise fail("invalid-transaction", f"'op' must be the name of an op (add_node, update_node, ...), not {type(op['op']).__name__}", f"ops[{i}]")
        at = text_problem(dict(doc), "")
        if at is not None:
            check_text("invalid-transaction", **{at: "\udfff"})
        report = self.memory.apply(dict(doc), dry_run=dry_run)
        return report_document(report)

    def add_node(
        self,
        node_type: str,
        attributes: Mapping[str, Any],
        *,
        node_id: str | None = None,
        parent: str | None = None,
        author: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """One ``add_node`` as its own transaction; ``{"id", "node", "t", "report"}``."""
        check_text(type=node_type, id=node_id, parent=parent, author=author, reason=reason)
        op: dict[str, Any] = dict(attributes)
        op.update({"op": "add_node", "type": node_type})
        if node_id is not None:
            op["id"] = node_id
        if parent is not None:
            op["parent"] = parent
        report = self.memory.apply({"author": author, "reason": reason or "add node", "ops": [op]})
        doc = report_document(report)
        created = report.created[0]
        return {"id": created, "t": report.t, "node": self.memory.node(created, as_of=report.t), "report": doc}

    def add_memory_node(
        self,
        content: str,
        node_type: str = "fact",
        *,
        level: str | None = None,
        session_id: str | None = None,
        parent: str | None = None,
        node_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        author: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """The origin documents' memory node: free text stored as one ``add_node``.
        ``content``, ``level``, ``session_id`` and the keys of ``metadata`` become attributes;
        ``metadata`` cannot set what the op itself says (``id``, ``type``, ``parent``,
        ``order``, ``op``). Returns what :meth:`add_node` returns.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> s.add_memory_node("The user prefers trains", node_id="pref", level="global", metadata={"source": "chat"})["node"]
        {'id': 'pref', 'type': 'fact', 'source': 'chat', 'content': 'The user prefers trains', 'level': 'global'}
        >>> s.add_memory_node("x", metadata={"type": "goal"})
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: invalid-argument: metadata cannot set 'type'
        """
        check_text(content=content, level=level, session_id=session_id, metadata=metadata)
        attributes: dict[str, Any] = dict(metadata or {})
        for key in ("id", "type", "parent", "order", "op"):
            if key in attributes:
                raise fail("invalid-argument", f"metadata cannot set {key!r}")
        attributes["content"] = content
        if level is not None:
            attributes["level"] = level
        if session_id is not None:
            attributes["session_id"] = session_id
        return self.add_node(node_type, attributes, node_id=node_id, parent=parent, author=author, reason=reason)

    def confirm(self, node_id: str, author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        check_text(id=node_id, author=author, reason=reason)
        return report_document(self.memory.confirm(node_id, author=author, reason=reason))

    def summarize(
        self, node_id: str, author: str | None = None, reason: str | None = None, max_items: int | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """Make or refresh the extractive summary of ``node_id``'s subtree (docs/time.md):
        ``{"id", "t", "summary", "report"}``.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"},
        ...     {"op": "add_node", "id": "a", "type": "action", "parent": "g", "content": "Ask"}]})
        >>> s.summarize("g")["summary"]["covers"]
        1
        """
        check_text(id=node_id, author=author, reason=reason)
        if not isinstance(node_id, str) or not node_id:
            raise fail("invalid-argument", "'id' must be a non-empty string", "id")
        if not isinstance(dry_run, bool):
            raise fail("invalid-argument", "'dry_run' must be true or false", "dry_run")
        options: dict[str, Any] = {"author": author, "reason": reason, "dry_run": dry_run}
        if max_items is not None:
            options["max_items"] = max_items
        report = self.memory.summarize(node_id, **options)
        doc = report_document(report)
        summary_node = self.memory.summary_of(node_id) if report.committed else None
        return {"id": None if summary_node is None else summary_node["id"], "t": report.t, "summary": summary_node, "report": doc}

    def revert(self, t: int, author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        if isinstance(t, bool) or not isinstance(t, int):
            raise fail("invalid-argument", "'t' must be an integer", "t")
        check_text(author=author, reason=reason)
        return report_document(self.memory.revert(t, author=author, reason=reason))

    def snapshot(self, name: str, t: int | str | None = None) -> dict[str, Any]:
        check_text(name=name)
        return {"name": name, "t": self.memory.snapshot(name, self.resolve(t, "t"))}

    def load(self, doc: Mapping[str, Any], author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        """Load a graph document (formats.md, ``hgm-graph/1``) as one transaction: into an
        empty memory it is the genesis commit; otherwise its nodes and edges are added (every
        id must be new). All or nothing, every problem named.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> s.load({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []})["t"]
        1
        """
        if not isinstance(doc, Mapping):
            raise fail("invalid-document", "a graph document is a JSON object with 'format', 'nodes' and 'edges'", "graph")
        check_text("invalid-document", graph=dict(doc), author=author, reason=reason)
        nodes = doc.get("nodes")
        if isinstance(nodes, list) and len(nodes) > self.limits.max_ops:
            raise fail("limit-exceeded", f"{len(nodes)} nodes; this server loads at most {self.limits.max_ops} per request", "graph.nodes")
        return report_document(self.memory.load(dict(doc), author=author, reason=reason))

    def purge(self, node_id: str, reason: str, *, subtree: bool = False, author: str | None = None) -> dict[str, Any]:
        """Forget ``node_id`` (and with ``subtree`` every node below it) from the state, the
        journal and every snapshot (docs/memories.md); the tombstone commit's summary, with
        ``purged``, the ids forgotten.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "s", "type": "fact", "content": "card 4111"}]})
        >>> doc = s.purge("s", "the user asked")
        >>> doc["kind"], doc["purged"], doc["t"]
        ('purge', ['s'], 2)
        """
        check_text(id=node_id, reason=reason, author=author)
        if not isinstance(subtree, bool):
            raise fail("invalid-argument", "'subtree' must be true or false", "subtree")
        tombstone = self.memory.purge(node_id, reason=reason, subtree=subtree, author=author)
        return tombstone.summary()
