"""How the service's answers and refusals become documents, and which HTTP status each error
category gets: :data:`STATUS_BY_CATEGORY`, :func:`http_status`, :func:`error_document` (the
``{"error": ...}`` body, or a refused transaction's report), :func:`report_document` and
:func:`node_document`.

>>> http_status("unknown-memory")
404
"""

from __future__ import annotations

from typing import Any

from hgm_engine.errors import HGMError, TransactionRefused
from hgm_engine.txn import TransactionReport

__all__ = ["STATUS_BY_CATEGORY", "http_status", "error_document", "report_document", "created_document", "node_document"]

# Categories the engine (and this service) raise, and the HTTP status that fits each.
STATUS_BY_CATEGORY: dict[str, int] = {
    # the request is wrong as written
    "syntax": 400,
    "unknown-name": 400,
    "invalid-argument": 400,
    "misplaced": 400,
    "invalid-regex": 400,
    "missing-parameter": 400,
    "missing-focus": 400,
    "invalid-transaction": 400,
    "invalid-json": 400,
    "invalid-document": 400,
    "missing-node": 400,
    "rule-cycle": 400,
    "limit-exceeded": 400,
    "bad-path": 400,
    "bad-query": 400,
    "bad-steps": 400,
    "bad-rewrite": 400,
    "bad-outcome": 400,
    "bad-trajectory": 400,
    "bad-scenario": 400,
    "bad-data": 400,
    "empty-subtree": 400,
    # it names something that is not there
    "unknown-node": 404,
    "unknown-edge": 404,
    "unknown-snapshot": 404,
    "unknown-path": 404,
    "unknown-version": 404,
    "not-found": 404,
    "method-not-allowed": 405,
    # it collides with the current state
    "conflict": 409,
    "duplicate-id": 409,
    "duplicate-edge": 409,
    "duplicate-path": 409,
    "stale-version": 409,
    "already-invalidated": 409,
    # the rules refused it
    "constraint-violation": 422,
    "rule-loop": 422,
    "no-change": 422,
    "version-cap": 422,
    # a lineage that failed too often waits for a person; rewrites came too fast
    "needs-human": 423,
    "rewrite-cap": 429,
    # many memories (docs/memories.md)
    "unknown-memory": 404,
    "memory-exists": 409,
    "invalid-memory-name": 400,
    "schema-violation": 422,
    # transport-level refusals
    "unauthorized": 401,
    "forbidden": 403,
    "request-timeout": 408,
    "request-too-large": 413,
    "unsupported-media-type": 415,
    # the service cannot do it
    "not-implemented": 501,
    "missing-package": 501,
    # the model behind the LLM routes: no usable answer (a bad gateway), or none reached
    "invalid-model-answer": 502,
    "model-unavailable": 503,
    "overloaded": 503,
    "stopping": 503,
    "store": 503,
    "io": 503,
    "embedder": 503,
    "unknown-embedder": 400,
    "internal": 500,
    "bad-state": 500,
}


def http_status(category: str) -> int:
    """The HTTP status for an error category (400 for a deliberate refusal not listed).

    >>> http_status("unknown-node"), http_status("conflict"), http_status("constraint-violation")
    (404, 409, 422)
    """
    return STATUS_BY_CATEGORY.get(category, 400)


def error_document(err: HGMError) -> dict[str, Any]:
    """The body that reports ``err``: ``{"error": {...}}``; a refused transaction's report
    (``committed: false`` with every violation) carries the same ``error`` key.

    >>> from hgm_engine.server.service.checks import fail
    >>> error_document(fail("unknown-node", "no node 'x'"))["error"]["category"]
    'unknown-node'
    """
    doc = err.to_json()
    if isinstance(err, TransactionRefused):
        report = err.report.to_json()
        report["error"] = doc["error"]
        return report
    report = getattr(err, "report", None)  # a refused ingest carries its report (PathError)
    if report is not None and hasattr(report, "to_json"):
        refused = report.to_json()
        refused["error"] = doc["error"]
        return refused
    attempts = getattr(err, "attempts", None)  # an LLM call that got no usable answer
    if attempts:
        doc["attempts"] = [attempt.to_json() for attempt in attempts]
    return doc


def report_document(report: TransactionReport) -> dict[str, Any]:
    """The document of a transaction's report; a report with violations is refused instead
    (:class:`~hgm_engine.errors.TransactionRefused` carrying it, which :func:`error_document`
    turns into the report with its ``error``).

    >>> from hgm_engine import Memory
    >>> report_document(Memory().apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}))["t"]
    1
    """
    if report.violations:
        raise TransactionRefused(report)
    return report.to_json()


def created_document(report: TransactionReport) -> dict[str, Any]:
    """:func:`report_document` of a commit that made a path version, with ``path``: the id
    of the version it made (the first node it created).

    >>> from hgm_engine import Memory
    >>> memory = Memory()
    >>> _ = memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
    >>> created_document(memory.rewrite_path("r1", ["refund"], "shorter"))["path"]
    'r1@v2'
    """
    doc = report_document(report)
    if report.created:
        doc["path"] = report.created[0]
    return doc


def node_document(node) -> dict[str, Any]:
    """A node as the query document carries it, without thawing its attributes: the frozen
    values (dict subclasses, tuples) serialize to the same JSON as ``node.to_json()``.

    >>> from hgm_engine.model.graph import Node, freeze
    >>> node_document(Node("g", "goal", freeze({"tags": ["a"]}), 1))
    {'id': 'g', 'type': 'goal', 'tags': ('a',)}
    """
    return {"id": node.id, "type": node.type, **node.attrs}
