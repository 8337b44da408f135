"""Transaction: ops filled in code, one by one, committed when the ``with`` block ends.

``memory.transaction(...)`` returns one. Each op applies at once to the transaction's private
overlay (so it sees the ops before it, and ``tx.query`` reads them); other readers keep seeing
the committed state until the commit.

>>> from hgm_engine import Memory
>>> m = Memory()
>>> with m.transaction(author="planner", reason="start") as tx:
...     trip = tx.add_node("goal", id="trip")
...     tx.query("nodes.count()").value, m.query("nodes.count()").value
(1, 0)
>>> tx.report.t, m.query("root").ids
(1, ['trip'])
"""

from __future__ import annotations

import uuid
from typing import Any, Mapping

from hgm_engine.errors import Problem, RequestError, TransactionError, TransactionRefused
from hgm_engine.model import GraphOverlay
from hgm_engine.query import QueryResult
from hgm_engine.txn.commit import CommitPipeline, ops_builder
from hgm_engine.txn.ops import MAX_OPS, OpContext, apply_op, parse_op
from hgm_engine.txn.report import TransactionReport

__all__ = ["Transaction", "OpMethods"]


def _ended() -> RequestError:
    return RequestError([Problem("invalid-argument", "this transaction has already ended")])


class OpMethods:
    """One method per op, each building the op's document and handing it to ``self.op(doc)``
    (which returns the ids it created): shared by :class:`Transaction` and by the remote
    memory's transaction, so the two spell every op alike.

    >>> from hgm_engine import Memory
    >>> with Memory().transaction() as tx:
    ...     tx.add_node("goal", id="g"), tx.add_node("action", id="a", parent="g", status="pending")
    ('g', 'a')
    """

    def add_node(self, type: str, *, id: str | None = None, parent: str | None = None, order: float | None = None, **attributes: Any) -> str:  # noqa: A002
        """Add a node (under ``parent`` when given); returns its id (generated if not given)."""
        doc: dict[str, Any] = dict(attributes, op="add_node", type=type)
        if id is not None:
            doc["id"] = id
        if parent is not None:
            doc["parent"] = parent
        if order is not None:
            doc["order"] = order
        return self.op(doc)[0]

    def update_node(self, id: str, *, set: Mapping[str, Any] | None = None, unset: list[str] | tuple = ()) -> None:  # noqa: A002
        self.op({"op": "update_node", "id": id, "set": dict(set or {}), "unset": list(unset)})

    def delete_node(self, id: str, *, cascade: bool = False) -> None:  # noqa: A002
        self.op({"op": "delete_node", "id": id, "cascade": cascade})

    def add_edge(self, source: str, target: str, type: str, **attributes: Any) -> None:  # noqa: A002
        self.op(dict(attributes, op="add_edge", **{"from": source, "to": target, "type": type}))

    def update_edge(self, source: str, target: str, type: str, *, set: Mapping[str, Any] | None = None, unset: list[str] | tuple = ()) -> None:  # noqa: A002
        self.op({"op": "update_edge", "from": source, "to": target, "type": type, "set": dict(set or {}), "unset": list(unset)})

    def delete_edge(self, source: str, target: str, type: str) -> None:  # noqa: A002
        self.op({"op": "delete_edge", "from": source, "to": target, "type": type})

    def replace_branch(self, id: str, plan: list[Mapping[str, Any]], *, set: Mapping[str, Any] | None = None) -> list[str]:  # noqa: A002
        """Replace everything below ``id`` with a nested plan; returns the new top ids."""
        doc: dict[str, Any] = {"op": "replace_branch", "id": id, "with": list(plan)}
        if set:
            doc["set"] = dict(set)
        return self.op(doc)



class Transaction(OpMethods):
    """Ops applied in order, each seeing the ones before; committed when the block ends.

    Reads inside the transaction (``tx.query``) see its own changes; other readers keep
    seeing the committed state until the commit.

    >>> from hgm_engine import Memory
    >>> tx = Memory().transaction(dry_run=True)
    >>> tx.add_node("goal", id="g")
    'g'
    >>> report = tx.commit()
    >>> report.committed, [c.kind for c in report.changes]
    (False, ['node_added'])
    """

    def __init__(
        self,
        memory: Any,
        pipeline: CommitPipeline,
        author: str | None,
        reason: str | None,
        base_t: int | None,
        dry_run: bool,
    ):
        self.memory = memory
        self.author = author
        self.reason = reason
        self.base_t = base_t
        self.dry_run = dry_run
        self.ops: list = []
        self.report: TransactionReport | None = None
        self._pipeline = pipeline
        self._overlay: GraphOverlay | None = None
        self._ctx: OpContext | None = None
        self._created: list[str] = []
        self._built_at = -1
        self._done = False
        # Generated ids must not change if the ops are replayed on a newer state at commit.
        self._id_prefix = uuid.uuid4().hex[:6] + "-"

    def __enter__(self) -> "Transaction":
        self._start()
        return self

    def _start(self) -> None:
        memory = self.memory
        with memory.reading():
            self._built_at = memory.graph.version
            self._overlay = GraphOverlay(memory.graph)
        self._ctx = OpContext(memory.schema, id_prefix=self._id_prefix)

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._done = True
            return
        if not self._done:  # commit() or rollback() inside the block already ended it
            self.commit()

    # ops
    def op(self, doc: Mapping[str, Any]) -> list[str]:
        """Apply one op in transaction-file form; returns the ids it created.

        A transaction holds at most the memory's ``max_ops`` ops (10,000 unless the memory
        was made with another ``max_ops``); the op beyond is ``limit-exceeded``.

        >>> from hgm_engine import Memory
        >>> with Memory(max_ops=1).transaction() as tx:
        ...     tx.op({"op": "add_node", "type": "goal"})
        ...     tx.op({"op": "add_node", "type": "goal"})
        Traceback (most recent call last):
        ...
        hgm_engine.errors.TransactionError: limit-exceeded at ops[1]: a transaction may hold at most 1 ops
        """
        if self._done:
            raise _ended()
        limit = getattr(self.memory, "max_ops", MAX_OPS)
        if len(self.ops) >= limit:
            raise TransactionError(
                [Problem("limit-exceeded", f"a transaction may hold at most {limit} ops", where=f"ops[{len(self.ops)}]")]
            )
        if self._overlay is None:
            self._start()
        if not isinstance(doc, Mapping):
            raise TransactionError([Problem("invalid-transaction", "an op is a JSON object", where=f"ops[{len(self.ops)}]")])
        op = parse_op(dict(doc), f"ops[{len(self.ops)}]")
        created = apply_op(self._overlay, op, self._ctx, f"ops[{len(self.ops)}]")
        self.ops.append(op)
        self._created.extend(created)
        return created

    def query(self, expr: str, *, focus: str | None = None, params: Mapping[str, Any] | None = None) -> QueryResult:
        """Read the memory as this transaction has changed it so far."""
        if self._overlay is None:
            self._start()
        return self.memory.compile(expr).run(self._overlay, focus=focus, params=params, limits=self.memory.limits)

    def commit(self) -> TransactionReport:
        """Commit now (the ``with`` block does this); raises TransactionRefused on violations."""
        if self._done:
            raise _ended()
        self._done = True
        ops = tuple(self.ops)
        prepared = None
        if self._overlay is not None:
            prepared = (self._overlay, self._ctx, self._created, self._built_at)
        report = self._pipeline.commit(
            ops_builder(ops),
            author=self.author,
            reason=self.reason,
            base_t=self.base_t,
            dry_run=self.dry_run,
            prepared=prepared,
            id_prefix=self._id_prefix,
        )
        self.report = report
        if report.violations:
            raise TransactionRefused(report)
        return report

    def rollback(self) -> None:
        """Drop every op; nothing is committed."""
        self._done = True
