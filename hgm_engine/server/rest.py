"""``hgm serve``: the REST server (FastAPI on uvicorn) over one memory.

:func:`create_app` builds the ASGI app for a :class:`~hgm_engine.Memory`; :func:`main` is the
command line (``python -m hgm_engine.server.rest --db memory.db``). Every route speaks the JSON
documents of ``formats.md``; every error is ``{"error": {"category", "message", ...}}`` with
the HTTP status of :func:`~hgm_engine.server.service.http_status`. The OpenAPI document is
served at ``/openapi.json`` (and browsable at ``/docs``). Operator documentation:
``docs/server.md``.

>>> from fastapi.testclient import TestClient
>>> from hgm_engine import Memory
>>> client = TestClient(create_app(Memory()))
>>> client.post("/api/v1/transactions", json={"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}).json()["t"]
1
>>> client.post("/api/v1/query", json={"expr": "root"}).json()["ids"]
['g']
>>> r = client.post("/api/v1/query", json={"expr": "root.subgoal"})
>>> r.status_code, r.json()["error"]["category"]
(400, 'unknown-name')
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import hmac
import ipaddress
import json
import logging
import os
import re
import signal
import socket
import sys
import time
from typing import Any, Literal, Mapping

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from hgm_engine import __version__
from hgm_engine.errors import HGMError
from hgm_engine.query import Limits
from hgm_engine.memory import Memory
from hgm_engine.server.service import BudgetExceeded, MemoryService, ServerLimits, error_document, http_status, node_document

__all__ = ["create_app", "main", "add_parser", "add_arguments", "run", "build_parser", "DEFAULT_PORT"]

DEFAULT_PORT = 8765
TOKEN_ENV = "HGM_TOKEN"

logger = logging.getLogger("hgm.server")
access_logger = logging.getLogger("hgm.server.access")
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("hgm_request_id", default="-")

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


# -- request and response documents ----------------------------------------------------------

_STRICT = ConfigDict(extra="forbid", strict=True)

AsOf = int | str


class QueryRequest(BaseModel):
    """A path expression to evaluate (spec dsl.md)."""

    model_config = _STRICT
    expr: str = Field(description="The path expression, e.g. \"root.actions.where(status = 'pending')\".")
    focus: str | None = Field(None, description="The node id that @ refers to.")
    params: dict[str, Any] | None = Field(None, description="Values for the $parameters of the query.")
    as_of: AsOf | None = Field(None, description="Evaluate on the state at this t, or at a snapshot name.")
    nodes: bool = Field(True, description="Include node payloads; false returns ids only.")


class ExplainRequest(BaseModel):
    model_config = _STRICT
    expr: str = Field(description="The path expression to plan.")


class TransactionRequest(BaseModel):
    """A transaction file (formats.md): ops applied in order, all or nothing."""

    model_config = _STRICT
    author: str | None = None
    reason: str | None = None
    base_t: int | None = Field(
        None, ge=0, description="Refuse as a conflict if anything this touches changed after this t."
    )
    ops: list[dict[str, Any]] = Field(description="add_node, update_node, delete_node, add_edge, delete_edge, ...")
    dry_run: bool = Field(False, description="Check everything, commit nothing.")


class ConfirmRequest(BaseModel):
    model_config = _STRICT
    id: str = Field(description="The node whose staleness marks to clear.")
    author: str | None = None
    reason: str | None = None


class RevertRequest(BaseModel):
    model_config = _STRICT
    t: int = Field(ge=1, description="The commit to undo (a new commit is appended).")
    author: str | None = None
    reason: str | None = None


class SnapshotRequest(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1, max_length=200)
    t: int | None = Field(None, ge=0, description="The state to name (the current one by default).")


class LocateRequest(BaseModel):
    model_config = _STRICT
    text: str = Field(min_length=1, description="What the agent is about to do, in natural language.")
    tags: list[str] | None = None
    k: int = Field(5, ge=1, le=100)


class RewritePathRequest(BaseModel):
    model_config = _STRICT
    path_id: str = Field(min_length=1)
    steps: list[Any] = Field(min_length=1, description="The new steps in order, or edit ops (keep/change/add/remove).")
    reason: str = Field(min_length=1, description="Why the path changes (recorded in the history).")
    author: str | None = None


class MemoryNodeRequest(BaseModel):
    """The origin documents' ``POST /api/v1/memory/node``: one node from free text."""

    model_config = _STRICT
    content: str = Field(min_length=1)
    type: str = Field("fact", description="The node type (goal, action, entity, fact, result).")
    level: str | None = Field(None, description="Stored as the attribute 'level' (global / scenario / event).")
    session_id: str | None = Field(None, description="Stored as the attribute 'session_id'.")
    parent_id: str | None = Field(None, description="Put the node under this node (a parent_of edge).")
    id: str | None = Field(None, min_length=1, description="The new node's id (generated when absent).")
    metadata: dict[str, Any] | None = Field(None, description="Further attributes of the node.")
    author: str | None = None
    reason: str | None = None


class PathRetrieveRequest(BaseModel):
    """The origin documents' ``POST /api/v1/memory/path/retrieve``."""

    model_config = _STRICT
    query: str = Field(min_length=1, description="The question or task, in natural language.")
    max_paths: int = Field(3, ge=1, le=100)
    max_hops: int | None = Field(
        None, ge=1, le=64, description="Accepted for the origin sketch; whole stored paths are ranked, so it has no effect."
    )
    tags: list[str] | None = None


class PathRewriteRequest(BaseModel):
    """The origin documents' ``POST /api/v1/memory/path/rewrite``."""

    model_config = _STRICT
    path_id: str = Field(min_length=1)
    feedback: str = Field(min_length=1, description="Why the path changes (recorded as the commit reason).")
    steps: list[Any] = Field(min_length=1, description="The corrected steps of the path, in order.")
    session_context: str | None = Field(None, description="Appended to the reason.")


class ErrorDetail(BaseModel):
    category: str
    message: str
    line: int | None = None
    column: int | None = None
    where: str | None = None
    problems: list[dict[str, Any]] | None = None
    request_id: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class QueryResultModel(BaseModel):
    kind: Literal["nodes", "count", "exists", "paths"]
    t: int
    ids: list[str] | None = None
    nodes: list[dict[str, Any]] | None = None
    value: int | bool | None = None
    paths: list[list[str]] | None = None


class ReportModel(BaseModel):
    committed: bool
    t: int | None
    base_t: int | None
    author: str | None
    reason: str | None
    changes: list[dict[str, Any]]
    fired_rules: list[str]
    dirtied: list[dict[str, Any]]
    violations: list[dict[str, Any]]


class RefusedReportModel(ReportModel):
    error: ErrorDetail


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {
        400: "Bad input: malformed JSON, unknown fields, a query or transaction that is wrong as written, a limit exceeded",
        401: "Missing or wrong bearer token",
        404: "Unknown node, snapshot or path",
        409: "Conflict with a commit after base_t, or a duplicate id",
        413: "Request body too large",
        415: "Body is not application/json",
        422: "Refused by constraints: the report lists every violation",
        501: "Not built into this engine",
    }
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        model = RefusedReportModel if code == 422 else ErrorBody
        out[code] = {"model": model, "description": descriptions[code]}
    return out


# -- the app ---------------------------------------------------------------------------------


try:  # orjson (in the serve extra) encodes a large result about ten times faster than json
    import orjson as _orjson
except ImportError:  # pragma: no cover - the stdlib fallback
    _orjson = None


def _encode(doc: Any) -> bytes:
    """JSON bytes; frozen payloads (dict subclasses, tuples) encode like dicts and lists."""
    if _orjson is not None:
        try:
            return _orjson.dumps(doc, default=str)
        except TypeError:  # e.g. an integer beyond 64 bits: the stdlib encoder takes any
            pass
    return json.dumps(doc, separators=(",", ":"), default=str).encode("ascii")


class _NodeJsonCache:
    """Each node payload's JSON, encoded once: payloads are immutable, so the bytes of a
    payload object never change (a changed node is a new object). Bounded; thread-safe
    under the GIL (a lost race encodes twice).

    >>> from hgm_engine.model.graph import Node
    >>> cache = _NodeJsonCache()
    >>> node = Node("g", "goal", {"title": "trip"}, 1)
    >>> cache.join([node, node])
    b'{"id":"g","type":"goal","title":"trip"},{"id":"g","type":"goal","title":"trip"}'
    """

    def __init__(self, max_entries: int = 200_000):
        self._max = max_entries
        self._entries: dict[int, tuple[Any, bytes]] = {}

    def join(self, payloads) -> bytes:
        entries, parts = self._entries, []
        append = parts.append
        for node in payloads:
            entry = entries.get(id(node))
            if entry is None or entry[0] is not node:  # new, or an id() reused by a newer object
                if len(entries) >= self._max:
                    entries.clear()
                entry = entries[id(node)] = (node, _encode(node_document(node)))
            append(entry[1])
        return b",".join(parts)


def _query_response(doc: dict[str, Any], payloads, node_json: _NodeJsonCache) -> Response:
    """The query document with ``nodes`` spliced in from the per-node JSON cache, in the key
    order of the other documents: kind, ids, nodes, t."""
    if payloads is None:
        return Response(_encode(doc), media_type="application/json")
    head = _encode({key: value for key, value in doc.items() if key != "t"})
    body = b"".join((head[:-1], b',"nodes":[', node_json.join(payloads), b'],"t":', _encode(doc["t"]), b"}"))
    return Response(body, media_type="application/json")


def _json(doc: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(_encode(doc), status_code=status, media_type="application/json", headers=headers)


def _error(category: str, message: str, status: int | None = None, headers: Mapping[str, str] | None = None) -> Response:
    doc = {"error": {"category": category, "message": message, "line": None, "column": None, "request_id": request_id_var.get()}}
    return _json(doc, status or http_status(category), headers)


class _BodyTooLarge(StarletteHTTPException):
    """Raised while reading a body past the limit; FastAPI re-raises HTTP exceptions as they are."""

    def __init__(self) -> None:
        super().__init__(413, "request body too large")


class _Guard:
    """Pure ASGI middleware: request id, bearer token, content type, one log line per request."""

    def __init__(self, app, token: str | None, max_body: int, direct: Mapping[tuple[str, str], Any] | None = None):
        self.app = app
        self.token = token.encode("utf-8") if token else None
        self.max_body = max_body
        # (method, path) -> a plain ASGI handler answered here, past the checks above but
        # without the framework's per-request layers (the hot query route).
        self.direct = direct if direct is not None else {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = dict(scope["headers"])
        supplied = headers.get(b"x-request-id", b"").decode("latin-1")
        rid = supplied if _REQUEST_ID_RE.match(supplied) else os.urandom(8).hex()
        token_ctx = request_id_var.set(rid)
        status_box = [0]

        async def send_with_id(message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                message["headers"] = list(message.get("headers", [])) + [(b"x-request-id", rid.encode("latin-1"))]
            await send(message)

        received = [0]

        async def receive_counted():
            message = await receive()
            if message["type"] == "http.request":
                received[0] += len(message.get("body", b""))
                if received[0] > self.max_body:
                    raise _BodyTooLarge()
            return message

        try:
            refusal = self._refusal(scope, headers)
            if refusal is not None:
                await refusal(scope, receive, send_with_id)
            else:
                handler = self.direct.get((scope["method"], scope["path"]))
                await (handler or self.app)(scope, receive_counted, send_with_id)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            if access_logger.isEnabledFor(logging.INFO):
                client = scope.get("client")
                access_logger.info(
                    "%s %s %s %d %.2fms %s",
                    rid,
                    scope["method"],
                    scope["path"],
                    status_box[0],
                    elapsed,
                    client[0] if client else "-",
                )
            request_id_var.reset(token_ctx)

    def _refusal(self, scope, headers) -> Response | None:
        if self.token is not None:
            supplied = headers.get(b"authorization", b"")
            scheme, _, credentials = supplied.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(credentials.strip(), self.token):
                message = "a bearer token is required" if not supplied else "the bearer token is not valid"
                return _error("unauthorized", message, 401, {"WWW-Authenticate": 'Bearer realm="hgm"'})
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            # Refused before a byte of the body is read; chunked bodies are counted as they arrive.
            return _error("request-too-large", f"the request body is over this server's limit of {self.max_body} bytes", 413)
        if scope["method"] in ("POST", "PUT", "PATCH"):
            content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            has_body = headers.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in headers
            if has_body and content_type != b"application/json":
                return _error(
                    "unsupported-media-type", "send the body as JSON with 'Content-Type: application/json'", 415
                )
        return None


def _validation_error(exc: RequestValidationError | ValidationError) -> Response:
    problems = []
    category = "invalid-argument"
    for error in exc.errors():
        kind = error.get("type", "")
        loc = [str(part) for part in error.get("loc", ()) if part != "body"]
        where = ".".join(loc) or "body"
        if kind == "json_invalid":
            category = "invalid-json"
            detail = (error.get("ctx") or {}).get("error", "") or error.get("msg", "")
            message = f"the body is not valid JSON: {detail}".rstrip(": ")
            where = "body"
        elif kind == "extra_forbidden":
            message = f"unknown field {loc[-1]!r}" if loc else "unknown field"
        elif kind == "missing":
            message = f"{where} is required"
        else:
            message = f"{where}: {error.get('msg', 'invalid')}"
        problems.append({"category": category if kind == "json_invalid" else "invalid-argument", "message": message, "line": None, "column": None, "where": where})
    first = dict(problems[0]) if problems else {"category": category, "message": "invalid request", "line": None, "column": None}
    if len(problems) > 1:
        first["problems"] = problems
    first["request_id"] = request_id_var.get()
    return _json({"error": first}, 400)


def create_app(
    memory: Memory,
    *,
    token: str | None = None,
    max_body: int | None = None,
    limits: ServerLimits | Limits | None = None,
) -> FastAPI:
    """The REST app over ``memory`` (an ASGI app; run it with uvicorn or test it with
    ``fastapi.testclient.TestClient``).

    ``token``: when set, every request needs ``Authorization: Bearer TOKEN``. ``max_body``:
    the largest request body in bytes (default ``limits.max_body``, 1 MiB). ``limits``: a
    :class:`~hgm_engine.server.service.ServerLimits` (or an executor
    :class:`~hgm_engine.query.executor.Limits` for work and time only).

    >>> from fastapi.testclient import TestClient
    >>> from hgm_engine import Memory
    >>> client = TestClient(create_app(Memory(), token="s3cret"))
    >>> client.get("/health").status_code
    401
    >>> client.get("/health", headers={"Authorization": "Bearer s3cret"}).json()["status"]
    'ok'
    """
    if isinstance(limits, Limits):
        limits = ServerLimits(max_work=limits.max_work, timeout=limits.timeout)
    limits = limits or ServerLimits()
    if max_body is not None:
        limits = ServerLimits(**{**_limits_dict(limits), "max_body": max_body})
    service = MemoryService(memory, limits)
    inline_budget = limits.inline_budget()
    node_json = _NodeJsonCache()

    app = FastAPI(
        title="hgm",
        version=__version__,
        summary="Hierarchical graph memory for LLM agents",
        description=(
            "Path-expression queries, transactions, history and time travel over one hgm memory. "
            "Documents follow spec/formats.md; every error is {\"error\": {\"category\", \"message\", ...}}."
        ),
    )
    app.state.service = service
    app.state.token_required = token is not None

    @app.exception_handler(HGMError)
    async def _hgm_error(request: Request, exc: HGMError) -> Response:
        doc = error_document(exc)
        doc["error"]["request_id"] = request_id_var.get()
        status = http_status(exc.category)
        if status >= 500 and status != 501:
            logger.error("%s %s: %s", request_id_var.get(), exc.category, exc.message)
        return _json(doc, status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        return _validation_error(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 413:
            return _error("request-too-large", f"the request body is over this server's limit of {limits.max_body} bytes", 413)
        if exc.status_code == 404:
            return _error("not-found", f"no route {request.method} {request.url.path}", 404)
        if exc.status_code == 405:
            return _error("method-not-allowed", f"{request.method} is not allowed on {request.url.path}", 405)
        category = "invalid-argument" if exc.status_code < 500 else "internal"
        return _error(category, str(exc.detail), exc.status_code)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> Response:
        logger.exception("%s internal error on %s %s", request_id_var.get(), request.method, request.url.path)
        return _error("internal", f"internal error (request id {request_id_var.get()})", 500)

    direct: dict[tuple[str, str], Any] = {}  # filled below, once the handlers exist
    # The guard goes outside the framework's own middleware (error pages, telemetry, body
    # limit): a direct route then passes no other layer; the rest go through all of them.
    build_stack = app.build_middleware_stack
    app.build_middleware_stack = lambda: _Guard(  # type: ignore[method-assign]
        build_stack(), token=token, max_body=limits.max_body, direct=direct
    )

    # -- operations --------------------------------------------------------------------

    @app.get("/health", tags=["service"], summary="Liveness and the memory's current t")
    async def health() -> Response:
        return _json(service.health())

    @app.post(
        "/api/v1/query",
        tags=["read"],
        summary="Evaluate a path expression",
        response_model=QueryResultModel,
        responses=_errors(400, 401, 404, 413),
    )
    async def query(body: QueryRequest) -> Response:
        """The query document of spec §6 (`kind` nodes/count/exists/paths) plus `t`, the state
        it read; `as_of` reads an earlier state (a t or a snapshot name). Limits: query length,
        repetition bounds, hostile regular expressions, work and time (`limit-exceeded`)."""
        args = (body.expr, body.focus, body.params, body.as_of)
        if inline_budget is not None:
            # A query seen before gets a small budget on the event loop (no thread hand-off);
            # one that needs more, or is new, runs in the thread pool with the full limits.
            try:
                doc, payloads = service.query_payloads(*args, nodes=body.nodes, budget=inline_budget)
                return _query_response(doc, payloads, node_json)
            except BudgetExceeded:
                pass

        def run() -> Response:
            return _query_response(*service.query_payloads(*args, nodes=body.nodes), node_json)

        return await run_in_threadpool(run)

    @app.post("/api/v1/explain", tags=["read"], summary="The optimized plan of a query", responses=_errors(400, 401))
    def explain(body: ExplainRequest) -> Response:
        return _json(service.explain(body.expr))

    @app.post(
        "/api/v1/transactions",
        tags=["write"],
        summary="Apply a transaction file",
        response_model=ReportModel,
        responses=_errors(400, 401, 404, 409, 413, 422),
    )
    def transact(body: TransactionRequest, dry_run: bool = Query(False, description="Same as dry_run in the body.")) -> Response:
        """All ops or none. 200 with the transaction report when committed (or for a clean dry
        run); 422 with the report and every violation when constraints refuse it; 409 when
        something it touches changed after `base_t`; 404 when an op names a missing node."""
        doc = body.model_dump(exclude_none=True)
        doc.pop("dry_run", None)
        return _json(service.transact(doc, dry_run=dry_run or body.dry_run))

    @app.get("/api/v1/nodes/{node_id:path}", tags=["read"], summary="One node", responses=_errors(401, 404))
    def get_node(node_id: str, as_of: str | None = Query(None, description="A t or a snapshot name.")) -> Response:
        return _json(service.node(node_id, as_of))

    @app.get("/api/v1/history", tags=["history"], summary="Every commit that touched a node", responses=_errors(401, 404))
    def history(node: str = Query(min_length=1, description="The node id.")) -> Response:
        return _json(service.history(node))

    @app.get("/api/v1/diff", tags=["history"], summary="What changed between two states", responses=_errors(400, 401, 404))
    def diff(
        t_from: str = Query(alias="from", description="A t or a snapshot name."),
        t_to: str | None = Query(None, alias="to", description="A t or a snapshot name (default: now)."),
    ) -> Response:
        return _json(service.diff(t_from, t_to))

    @app.get("/api/v1/changes", tags=["history"], summary="Commits and net changes since a t", responses=_errors(400, 401, 404))
    def changes(since: str = Query(description="A t or a snapshot name.")) -> Response:
        return _json(service.changes_since(since))

    @app.get("/api/v1/stale", tags=["planner"], summary="Nodes marked needs_review or blocked", responses=_errors(401, 404))
    def stale(as_of: str | None = Query(None)) -> Response:
        return _json(service.stale(as_of))

    @app.get("/api/v1/frontier", tags=["planner"], summary="Actions under a goal that can run now", responses=_errors(401, 404))
    def frontier(goal: str = Query(min_length=1), as_of: str | None = Query(None)) -> Response:
        return _json(service.frontier(goal, as_of))

    @app.get("/api/v1/focus-path", tags=["planner"], summary="The path from a root to a node", responses=_errors(401, 404))
    def focus_path(node: str = Query(min_length=1), as_of: str | None = Query(None)) -> Response:
        return _json(service.focus_path(node, as_of))

    @app.post("/api/v1/confirm", tags=["planner"], summary="Clear a node's staleness marks", response_model=ReportModel, responses=_errors(400, 401, 404))
    def confirm(body: ConfirmRequest) -> Response:
        return _json(service.confirm(body.id, body.author, body.reason))

    @app.post("/api/v1/revert", tags=["history"], summary="Undo a commit with a new commit", response_model=ReportModel, responses=_errors(400, 401, 409, 422))
    def revert(body: RevertRequest) -> Response:
        return _json(service.revert(body.t, body.author, body.reason))

    @app.get("/api/v1/snapshots", tags=["history"], summary="Named states")
    def snapshots() -> Response:
        return _json(service.snapshots())

    @app.post("/api/v1/snapshots", tags=["history"], summary="Name a state", responses=_errors(400, 401))
    def snapshot(body: SnapshotRequest) -> Response:
        return _json(service.snapshot(body.name, body.t), 201)

    @app.get("/api/v1/export", tags=["read"], summary="The whole memory as a graph file", responses=_errors(400, 401, 404))
    def export(as_of: str | None = Query(None)) -> Response:
        return _json(service.export(as_of))

    @app.post("/api/v1/locate", tags=["paths"], summary="Stored decision paths that fit a request", responses=_errors(400, 401, 501))
    def locate(body: LocateRequest) -> Response:
        """The localization result of formats.md (`matches`, best first)."""
        return _json(service.locate(body.text, body.tags, body.k))

    @app.post("/api/v1/rewrite", tags=["paths"], summary="Replace a stored path's steps", responses=_errors(400, 401, 404, 409, 422, 501))
    def rewrite(body: RewritePathRequest) -> Response:
        return _json(service.rewrite_path(body.path_id, body.steps, body.reason, body.author))

    # -- the resource style of the origin documents ------------------------------------

    @app.post(
        "/api/v1/memory/node",
        tags=["origin"],
        summary="Add one node from free text",
        status_code=201,
        responses=_errors(400, 401, 404, 409, 422),
    )
    def memory_node(body: MemoryNodeRequest) -> Response:
        """One `add_node` transaction. `content`, `level`, `session_id` and the keys of
        `metadata` become attributes; `parent_id` puts the node under that node."""
        attributes: dict[str, Any] = dict(body.metadata or {})
        for key in ("id", "type", "parent", "order", "op"):
            if key in attributes:
                raise HGMError.single("invalid-argument", f"metadata cannot set {key!r}")
        attributes["content"] = body.content
        if body.level is not None:
            attributes["level"] = body.level
        if body.session_id is not None:
            attributes["session_id"] = body.session_id
        doc = service.add_node(
            body.type, attributes, node_id=body.id, parent=body.parent_id, author=body.author, reason=body.reason
        )
        return _json(doc, 201)

    @app.post("/api/v1/memory/path/retrieve", tags=["origin"], summary="Locate paths for a question", responses=_errors(400, 401, 501))
    def memory_path_retrieve(body: PathRetrieveRequest) -> Response:
        return _json(service.locate(body.query, body.tags, body.max_paths))

    @app.post("/api/v1/memory/path/rewrite", tags=["origin"], summary="Rewrite a path after feedback", responses=_errors(400, 401, 404, 409, 422, 501))
    def memory_path_rewrite(body: PathRewriteRequest) -> Response:
        reason = body.feedback if body.session_context is None else f"{body.feedback}\ncontext: {body.session_context}"
        return _json(service.rewrite_path(body.path_id, body.steps, reason))

    async def query_direct(scope, receive, send) -> None:
        # The same operation as the documented route above, answered by the guard without the
        # framework's per-request layers (most of the server's CPU for a small query): the
        # body is validated against the same strict model; errors get the same documents.
        try:
            chunks = []
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            try:
                body = QueryRequest.model_validate_json(b"".join(chunks))
            except ValidationError as exc:
                response = _validation_error(exc)
            else:
                response = await query(body)
        except HGMError as exc:
            response = await _hgm_error(None, exc)
        except _BodyTooLarge as exc:
            response = await _http_error(Request(scope), exc)
        except Exception as exc:  # noqa: BLE001 - the same 500 document as every route
            response = await _internal(Request(scope), exc)
        await response(scope, receive, send)
    direct[("POST", "/api/v1/query")] = query_direct
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _limits_dict(limits: ServerLimits) -> dict[str, Any]:
    import attrs

    return attrs.asdict(limits)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document, with our 400 error body in place of its default 422 validation one."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(
        title=app.title, version=app.version, summary=app.summary, description=app.description, routes=app.routes
    )
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            responses = operation.get("responses", {})
            default = responses.get("422")
            if default and default.get("description") == "Validation Error":
                del responses["422"]
                responses.setdefault(
                    "400", {"description": "Bad input", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
                )
    components = schema.setdefault("components", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.get("schemas", {}).pop(name, None)
    if app.state.token_required:
        components.setdefault("securitySchemes", {})["bearer"] = {"type": "http", "scheme": "bearer"}
        schema["security"] = [{"bearer": []}]
    app.openapi_schema = schema
    return schema


# -- command line ----------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``hgm serve`` on ``parser`` (so the ``hgm`` command can reuse them).

    >>> args = add_arguments(argparse.ArgumentParser()).parse_args(["--db", "m.db"])
    >>> args.host, args.port
    ('127.0.0.1', 8765)
    """
    defaults = ServerLimits()
    parser.add_argument("--db", required=True, metavar="PATH", help="the memory (a SQLite file; created if missing)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--token", default=None, help=f"require 'Authorization: Bearer TOKEN' (default: ${TOKEN_ENV})")
    parser.add_argument("--token-file", default=None, metavar="PATH", help="read the token from a file")
    parser.add_argument("--max-body", type=int, default=defaults.max_body, metavar="BYTES", help="largest request body (default 1 MiB)")
    parser.add_argument("--max-query-length", type=int, default=defaults.max_query_length, metavar="CHARS")
    parser.add_argument("--max-work", type=int, default=defaults.max_work, metavar="N", help="nodes one query's steps may produce")
    parser.add_argument("--query-timeout", type=float, default=defaults.timeout, metavar="SECONDS", help="time one query may run")
    parser.add_argument(
        "--inline-budget-ms",
        type=float,
        default=defaults.inline_timeout * 1000,
        metavar="MS",
        help="a repeated query first runs on the event loop for at most this long (0: always in the thread pool)",
    )
    parser.add_argument(
        "--switch-interval-ms",
        type=float,
        default=0,
        metavar="MS",
        help="Python's thread switch interval (default: Python's, 5 ms)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="server processes on the one port, each with the memory in RAM, kept in step through the store (default 1)",
    )
    parser.add_argument("--max-concurrency", type=int, default=64, metavar="N", help="connections served at once; more get 503")
    parser.add_argument("--graceful-timeout", type=float, default=10.0, metavar="SECONDS", help="how long shutdown waits for requests in flight")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--no-access-log", action="store_true", help="no log line per request")
    return parser


def add_parser(subparsers: Any, name: str = "serve") -> argparse.ArgumentParser:
    """Add ``hgm serve`` to an argparse subparsers object; its ``func`` default is :func:`run`.

    >>> parser = argparse.ArgumentParser(prog="hgm")
    >>> sub = add_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["serve", "--db", "m.db", "--port", "9000"]).port
    9000
    """
    parser = subparsers.add_parser(name, help="serve a memory over REST (FastAPI/uvicorn)", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(prog="hgm serve", description="Serve an hgm memory over REST."))


def _resolve_token(args: argparse.Namespace) -> str | None:
    if args.token:
        return args.token
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as handle:
            token = handle.read().strip()
        if not token:
            raise SystemExit(f"hgm serve: {args.token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def configure_logging(level: str) -> None:
    """Log lines on stderr with time, level and logger (request ids are in the messages)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    for name in ("hgm", "uvicorn.error"):
        named = logging.getLogger(name)
        named.handlers[:] = [handler]
        named.setLevel(level.upper())
        named.propagate = False


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM (requests in flight finish, then the memory is closed).

    With ``--workers N`` (N > 1) this process binds the port, forks N workers that each open
    the store, accepts connections and hands them to the workers in turn, forwards
    SIGINT/SIGTERM to them, and starts a worker again if one dies."""
    configure_logging(args.log_level)
    if args.workers < 1:
        print("hgm serve: --workers must be at least 1", file=sys.stderr)
        return 2
    if args.workers > 1 and not hasattr(os, "fork"):  # pragma: no cover - Windows
        print("hgm serve: --workers needs fork (POSIX)", file=sys.stderr)
        return 2
    if args.no_access_log:
        access_logger.setLevel(logging.WARNING)
    token = _resolve_token(args)
    if not _is_loopback(args.host):
        logger.warning(
            "binding to %s: the memory is reachable from other machines%s",
            args.host,
            "" if token else " WITHOUT a token (set --token or HGM_TOKEN)",
        )
    limits = ServerLimits(
        max_body=args.max_body,
        max_query_length=args.max_query_length,
        max_work=args.max_work,
        timeout=args.query_timeout,
        inline_timeout=args.inline_budget_ms / 1000,
    )
    try:
        memory = Memory.open(args.db)
    except (HGMError, OSError) as exc:
        print(f"hgm serve: cannot open {args.db}: {exc}", file=sys.stderr)
        return 1
    try:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP proto: asyncio sets TCP_NODELAY
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((args.host, args.port))
        except OSError as exc:
            sock.close()
            print(f"hgm serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        port = sock.getsockname()[1]
        host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
        logger.info(
            "serving %s (t=%d, %d nodes) on http://%s:%d%s%s",
            args.db,
            memory.t,
            len(memory),
            host,
            port,
            " (bearer token required)" if token else "",
            f" with {args.workers} workers" if args.workers > 1 else "",
        )
        sock.listen(2048)  # before "listening" is printed: connections queue from here on
        if args.workers > 1:
            # Each worker opens the store itself: no connection or thread crosses a fork.
            memory.close()
            memory = None
            print(f"hgm serve: listening on http://{host}:{port}", file=sys.stderr, flush=True)
            return _supervise(args, sock, token, limits)
        print(f"hgm serve: listening on http://{host}:{port}", file=sys.stderr, flush=True)
        _serve(args, memory, sock, token, limits)
    finally:
        if memory is not None:
            memory.close()
    return 0


def _serve(
    args: argparse.Namespace,
    memory: Memory,
    sock: socket.socket | None,
    token: str | None,
    limits: ServerLimits,
    channel: socket.socket | None = None,
) -> None:
    """One server process until SIGINT/SIGTERM: uvicorn accepting on ``sock``, or serving the
    connections the supervisor hands over on ``channel``."""
    import uvicorn

    config = uvicorn.Config(
        create_app(memory, token=token, limits=limits),
        log_config=None,
        log_level=args.log_level,
        access_log=False,
        limit_concurrency=args.max_concurrency,
        timeout_graceful_shutdown=args.graceful_timeout,
        server_header=False,
        # X-Forwarded-* headers are not trusted: the access log shows the peer's address.
        proxy_headers=False,
    )
    server = uvicorn.Server(config) if channel is None else _handed_server_class()(config, channel)
    # uvicorn stops gracefully on SIGINT/SIGTERM, restores the handlers it found and raises
    # the signal again; with these handlers in place that ends here, and the memory is
    # closed by the caller instead of the process dying on the default handler.
    if args.switch_interval_ms > 0:
        sys.setswitchinterval(args.switch_interval_ms / 1000)
    received: list[int] = []
    previous = {sig: signal.signal(sig, lambda number, frame: received.append(number)) for sig in _STOP_SIGNALS}
    try:
        server.run(sockets=[sock] if sock is not None else [])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    who = f"worker {os.getpid()} " if channel is not None else ""
    logger.info("%sstopped%s", who, f" on signal {received[0]}" if received else "")


def _handed_server_class():
    import uvicorn

    class HandedConnectionsServer(uvicorn.Server):
        """uvicorn serving connections another process accepted and passed over a Unix socket
        (SCM_RIGHTS), instead of accepting on a listening socket itself."""

        def __init__(self, config, channel: socket.socket):
            super().__init__(config)
            self._channel = channel

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets=[])  # lifespan and state; no listener of its own
            loop = asyncio.get_running_loop()
            config, channel = self.config, self._channel

            def create_protocol(_loop=None):  # what uvicorn builds for its own listeners
                return config.http_protocol_class(
                    config=config, server_state=self.server_state, app_state=self.lifespan.state, _loop=_loop
                )

            def handed_over() -> None:
                try:
                    data, fds, _, _ = socket.recv_fds(channel, 1024, 64)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    data, fds = b"", []
                if not data and not fds:  # the supervisor is gone: take no more connections
                    loop.remove_reader(channel.fileno())
                    return
                for fd in fds:
                    connection = socket.socket(fileno=fd)
                    connection.setblocking(False)
                    loop.create_task(loop.connect_accepted_socket(create_protocol, connection))

            channel.setblocking(False)
            loop.add_reader(channel.fileno(), handed_over)

        async def shutdown(self, sockets=None) -> None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._channel.fileno())
            await super().shutdown(sockets=sockets)

    return HandedConnectionsServer


def _worker(args: argparse.Namespace, channel: socket.socket, token: str | None, limits: ServerLimits) -> int:
    """The body of a forked worker; its exit status."""
    try:
        memory = Memory.open(args.db)
    except (HGMError, OSError) as exc:
        logger.error("worker %d cannot open %s: %s", os.getpid(), args.db, exc)
        return 1
    try:
        logger.info("worker %d serving (t=%d)", os.getpid(), memory.t)
        _serve(args, memory, None, token, limits, channel=channel)
    finally:
        memory.close()
    return 0


# A worker that dies more often than this within the window is not started again.
_RESTART_LIMIT, _RESTART_WINDOW = 5, 60.0


def _supervise(args: argparse.Namespace, sock: socket.socket, token: str | None, limits: ServerLimits) -> int:
    """Fork ``args.workers`` workers; accept connections here and hand them to the workers in
    turn (a shared listening socket lets one worker take most long-lived connections while
    another idles); forward SIGINT/SIGTERM; start a worker that died again (unless they keep
    dying). Returns 0 after a clean stop, 1 otherwise."""
    import selectors

    stopping: list[int] = []
    workers: dict[int, socket.socket] = {}  # pid -> the Unix socket its connections go over
    order: list[int] = []  # hand-over order (pids)

    def spawn() -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # the worker: serve, then leave without running the parent's cleanup
            code = 1
            try:
                for sig in _STOP_SIGNALS:
                    signal.signal(sig, signal.SIG_DFL)
                sock.close()
                mine.close()
                for other in workers.values():
                    other.close()
                code = _worker(args, theirs, token, limits)
            except BaseException:  # noqa: BLE001 - report and leave with a failure status
                logger.exception("worker %d failed", os.getpid())
            finally:
                logging.shutdown()
                os._exit(code)
        theirs.close()
        workers[pid] = mine
        order.append(pid)

    def forward(number, frame) -> None:
        stopping.append(number)

    def stop_workers() -> None:
        for pid in list(workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def hand_over(connection: socket.socket) -> None:
        for _ in range(len(order)):
            pid = order.pop(0)
            order.append(pid)
            try:
                socket.send_fds(workers[pid], [b"c"], [connection.fileno()])
                return
            except OSError:  # that worker is gone; its exit is handled below
                continue
        logger.error("no worker to take a connection")

    def reap(block: bool) -> bool:
        """Collect exited workers; start new ones unless stopping. False: give up."""
        nonlocal failed
        while workers:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                workers.clear()
                return True
            if pid == 0:
                return True
            channel = workers.pop(pid, None)
            if channel is None:
                continue
            channel.close()
            order.remove(pid)
            code = os.waitstatus_to_exitcode(status)
            if stopping or shutting_down:
                failed = failed or code != 0
                continue
            logger.error("worker %d exited with %d", pid, code)
            now = time.monotonic()
            deaths[:] = [d for d in deaths if now - d < _RESTART_WINDOW] + [now]
            if len(deaths) > _RESTART_LIMIT:
                logger.error("workers keep dying (%d in %.0f s): stopping", len(deaths), _RESTART_WINDOW)
                return False
            spawn()
        return True

    previous = {sig: signal.signal(sig, forward) for sig in _STOP_SIGNALS}
    deaths: list[float] = []
    failed = shutting_down = False
    selector = selectors.DefaultSelector()
    try:
        for _ in range(args.workers):
            spawn()
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        while not stopping:
            if selector.select(timeout=0.2):
                while True:
                    try:
                        connection, _ = sock.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError as exc:  # e.g. out of file descriptors: keep serving
                        logger.error("accept failed: %s", exc)
                        break
                    with connection:
                        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        hand_over(connection)
            if not reap(block=False):
                failed = True
                break
        shutting_down = True
        sock.close()  # no new connections; the workers finish what they have
        stop_workers()
        reap(block=True)
    finally:
        selector.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for channel in workers.values():
            channel.close()
    logger.info("stopped%s", f" on signal {stopping[0]}" if stopping else "")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """``hgm serve`` as a function: parse ``argv`` and serve until stopped; returns the exit code.

    Example (not run here: it serves until interrupted)::

        main(["--db", "memory.db", "--port", "8765"])
    """
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
