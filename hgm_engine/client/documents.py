"""The server's JSON documents as the engine's objects: errors, query results, transaction
reports, localization results.

A remote memory returns what a local one does, so code written against
:class:`~hgm_engine.Memory` runs against ``hgm serve`` unchanged. The error documents say a
category and a position but not the Python class; the class is the one the engine raises
for that category in that kind of request (:data:`CATEGORY_CLASSES` first, then the
request's own family: a query's ``unknown-name`` is a
:class:`~hgm_engine.errors.QueryAnalysisError`, a search's ``invalid-argument`` a
:class:`~hgm_engine.errors.SearchError`).

>>> err = error_from_document({"error": {"category": "unknown-name", "message": "no relation 'subgoal'",
...     "line": 1, "column": 6}}, family="query", source="root.subgoal")
>>> type(err).__name__, err.category, (err.line, err.column)
('QueryAnalysisError', 'unknown-name', (1, 6))
>>> print(err.excerpt)
root.subgoal
     ^
>>> report = report_from_json({"committed": True, "t": 1, "base_t": None, "author": None, "reason": None,
...     "changes": [{"kind": "node_added", "id": "g", "node": {"id": "g", "type": "goal"}}],
...     "fired_rules": [], "dirtied": [], "violations": [], "created": ["g"]})
>>> report.t, report.created, [change.kind for change in report.changes]
(1, ('g',), ['node_added'])
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.errors import (
    ConflictError,
    GraphFileError,
    HGMError,
    PathError,
    Problem,
    QueryAnalysisError,
    QueryExecutionError,
    QuerySyntaxError,
    RequestError,
    RewriteProposalError,
    RuleError,
    SearchError,
    ServiceError,
    StoreError,
    TransactionError,
    TransactionRefused,
)
from hgm_engine.model import Change, Edge, Node, freeze
from hgm_engine.paths import IngestProblem, IngestReport
from hgm_engine.paths.localize import LocateResult, Match
from hgm_engine.query import QueryResult
from hgm_engine.txn import TransactionReport, Violation

__all__ = [
    "CATEGORY_CLASSES",
    "FAMILIES",
    "error_from_document",
    "node_from_json",
    "query_result_from_json",
    "report_from_json",
    "locate_result_from_json",
    "ingest_report_from_json",
]

# Categories that mean one class whatever the request was.
CATEGORY_CLASSES: dict[str, type[HGMError]] = {
    "syntax": QuerySyntaxError,
    "conflict": ConflictError,
    "unknown-snapshot": RequestError,
    "rule-cycle": RuleError,
    "store": StoreError,
    "unknown-embedder": SearchError,
    "embedder": SearchError,
    "invalid-model-answer": RewriteProposalError,
    "model-unavailable": RewriteProposalError,
    "unknown-memory": RequestError,
    "invalid-memory-name": RequestError,
    "memory-exists": RequestError,
    "empty-subtree": RequestError,
    # the server's own refusals, before the engine is reached
    "unauthorized": ServiceError,
    "forbidden": ServiceError,
    "request-timeout": ServiceError,
    "request-too-large": ServiceError,
    "unsupported-media-type": ServiceError,
    "overloaded": ServiceError,
    "stopping": ServiceError,
    "not-found": ServiceError,
    "method-not-allowed": ServiceError,
    "not-implemented": ServiceError,
    "missing-package": ServiceError,
    "internal": ServiceError,
    "invalid-json": ServiceError,
}

_QUERY = {
    "unknown-name": QueryAnalysisError,
    "misplaced": QueryAnalysisError,
    "invalid-regex": QueryAnalysisError,
    "missing-parameter": QueryAnalysisError,
    "invalid-argument": QueryAnalysisError,
    "missing-focus": QueryExecutionError,
    "limit-exceeded": QueryExecutionError,
}
_TRANSACTION = {"": TransactionError}
_PATHS = {"": PathError}
_RULES = {"": RuleError, "unknown-name": QueryAnalysisError, "misplaced": QueryAnalysisError, "invalid-argument": RequestError}

# A request's family: the class of each category in that kind of request ("" for the rest).
FAMILIES: dict[str, Mapping[str, type[HGMError]]] = {
    "query": _QUERY,
    "transaction": _TRANSACTION,
    "load": {"": GraphFileError, "unknown-node": TransactionError, "duplicate-id": TransactionError},
    "search": {"": SearchError, "limit-exceeded": QueryExecutionError},
    "paths": _PATHS,
    "rules": _RULES,
    "request": {"": RequestError},
}


def error_from_document(
    doc: Any, *, family: str = "request", source: str | None = None, status: int | None = None
) -> HGMError:
    """The :class:`~hgm_engine.errors.HGMError` a server's ``{"error": {...}}`` document (or a
    refused transaction's report, which carries one) stands for: every problem with its
    category, message, line, column and ``where``; ``source`` is the text the positions
    point into (a query's). A refused transaction is a
    :class:`~hgm_engine.errors.TransactionRefused` holding the rebuilt report; a refused
    ingest a :class:`~hgm_engine.errors.PathError` whose ``report`` is the document.

    >>> err = error_from_document({"error": {"category": "conflict", "message": "g changed", "line": None,
    ...     "column": None, "where": "ops[0]"}}, family="transaction")
    >>> isinstance(err, ConflictError), err.problems[0].where
    (True, 'ops[0]')
    >>> type(error_from_document("<html>", status=502)).__name__
    'ServiceError'
    """
    error = doc.get("error") if isinstance(doc, Mapping) else None
    if not isinstance(error, Mapping) or not isinstance(error.get("category"), str):
        shown = repr(doc)[:200]
        return ServiceError([Problem("bad-response", f"the server answered {status or '?'} without an error document: {shown}")])
    listed = error.get("problems")
    entries = listed if isinstance(listed, list) and listed else [error]
    problems = [_problem(entry) for entry in entries if isinstance(entry, Mapping)] or [_problem(error)]
    category = problems[0].category
    if category == "constraint-violation" and isinstance(doc, Mapping) and "committed" in doc:
        try:
            return TransactionRefused(report_from_json(doc))
        except _UNREADABLE:
            pass  # a report of another shape: the error without it
    table = FAMILIES.get(family, FAMILIES["request"])
    cls = CATEGORY_CLASSES.get(category) or table.get(category) or table.get("") or RequestError
    if family == "paths" and category == "constraint-violation":
        cls = PathError
    err = cls(problems, source)
    if isinstance(err, PathError) and isinstance(doc, Mapping) and "ingested" in doc:
        try:
            err.report = ingest_report_from_json(doc)  # a refused ingest carries its report
        except _UNREADABLE:
            pass
    if isinstance(err, RewriteProposalError) and isinstance(doc, Mapping) and isinstance(doc.get("attempts"), list):
        err.attempts = tuple(doc["attempts"])
    request_id = error.get("request_id")
    if isinstance(request_id, str):
        err.request_id = request_id
    return err


_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def _problem(entry: Mapping[str, Any]) -> Problem:
    def whole(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    where = entry.get("where")
    return Problem(
        str(entry.get("category", "internal")),
        str(entry.get("message", "")),
        whole(entry.get("line")),
        whole(entry.get("column")),
        where if isinstance(where, str) else None,
    )


def node_from_json(doc: Mapping[str, Any]) -> Node:
    """A node payload from its JSON object (``id``, ``type`` and its attributes); ``seq`` is
    not sent over the wire (0).

    >>> node_from_json({"id": "g", "type": "goal", "title": "trip"}).attrs["title"]
    'trip'
    """
    attributes = {k: v for k, v in doc.items() if k not in ("id", "type")}
    return Node(doc["id"], doc["type"], freeze(attributes), 0)


def query_result_from_json(doc: Mapping[str, Any]) -> QueryResult:
    """The :class:`~hgm_engine.QueryResult` of a query document (spec §6).

    >>> result = query_result_from_json({"kind": "nodes", "ids": ["g"], "nodes": [{"id": "g", "type": "goal"}], "t": 1})
    >>> result.ids, result.nodes
    (['g'], [{'id': 'g', 'type': 'goal'}])
    >>> query_result_from_json({"kind": "count", "value": 3, "t": 1}).value
    3
    """
    kind = doc["kind"]
    if kind == "nodes":
        payloads = tuple(node_from_json(node) for node in doc.get("nodes", ()))
        return QueryResult("nodes", list(doc["ids"]), payloads)
    if kind == "paths":
        return QueryResult("paths", [list(walk) for walk in doc["paths"]])
    return QueryResult(kind, doc["value"])


def _change(doc: Mapping[str, Any]) -> Change:
    kind = doc["kind"]
    if kind in ("node_added", "node_removed"):
        node = node_from_json(doc["node"])
        return Change(kind, None, node) if kind == "node_added" else Change(kind, node, None)
    if kind == "node_updated":
        before = Node(doc["id"], "", freeze(dict(doc.get("before", {}))), 0)
        after = Node(doc["id"], "", freeze(dict(doc.get("after", {}))), 0)
        return Change(kind, before, after)
    if kind == "edge_updated":
        before = Edge(doc["from"], doc["to"], doc["type"], freeze(dict(doc.get("before", {}))), 0)
        after = Edge(doc["from"], doc["to"], doc["type"], freeze(dict(doc.get("after", {}))), 0)
        return Change(kind, before, after)
    edge = Edge(doc["from"], doc["to"], doc["type"], freeze(dict(doc.get("attrs", {}))), 0)
    return Change(kind, None, edge) if kind == "edge_added" else Change(kind, edge, None)


def report_from_json(doc: Mapping[str, Any]) -> TransactionReport:
    """The :class:`~hgm_engine.TransactionReport` of a report document; its ``to_json()`` is
    the document again (an update's ``before``/``after`` hold the changed attributes only,
    as the document does; node types of updates are not sent: ``""``)."""
    error = doc.get("error")
    return TransactionReport(
        bool(doc.get("committed")),
        doc.get("t"),
        doc.get("base_t"),
        doc.get("author"),
        doc.get("reason"),
        changes=tuple(_change(change) for change in doc.get("changes", ())),
        fired_rules=tuple(doc.get("fired_rules", ())),
        dirtied=tuple(doc.get("dirtied", ())),
        violations=tuple(Violation(v["constraint"], v.get("node"), v["message"]) for v in doc.get("violations", ())),
        dry_run=bool(doc.get("dry_run", False)),
        error=dict(error) if isinstance(error, Mapping) else None,
        created=tuple(doc.get("created", ())),
        cleared=tuple(doc.get("cleared", ())),
    )


def locate_result_from_json(doc: Mapping[str, Any]) -> LocateResult:
    """The :class:`~hgm_engine.paths.localize.LocateResult` of a localization document.

    >>> result = locate_result_from_json({"matches": [{"path": "r1", "score": 0.5, "goal": "Refund", "steps": ["a"],
    ...     "breakdown": {"text": 0.5}, "supporting": ["r1"], "paths_with_structure": 1, "status": "active",
    ...     "version": 1, "structure": "s"}], "recalled": {"text": 1}})
    >>> result.paths, result.matches[0].steps
    (['r1'], ('a',))
    """
    matches = tuple(
        Match(
            m["path"], m["score"], m.get("goal", ""), tuple(m.get("steps", ())), dict(m.get("breakdown", {})),
            tuple(m.get("supporting", ())), m.get("paths_with_structure", 1), m.get("status", ""), m.get("version", 1),
            m.get("structure", ""),
        )
        for m in doc.get("matches", ())
    )
    return LocateResult(matches, dict(doc.get("recalled", {})), doc.get("coarse"))


def ingest_report_from_json(doc: Mapping[str, Any]) -> IngestReport:
    """The ``IngestReport`` of an ingest document.

    >>> ingest_report_from_json({"ingested": ["a"], "count": 1, "t": 3, "ts": [3], "problems": [], "skipped": []}).to_json()["t"]
    3
    """
    problems = [IngestProblem(p.get("line"), p.get("id"), p["category"], p["message"]) for p in doc.get("problems", ())]
    return IngestReport(list(doc.get("ingested", ())), doc.get("t"), problems)
