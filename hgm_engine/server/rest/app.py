"""``create_app``: the REST routes over one memory (FastAPI).

Each route hands its validated body to :class:`~hgm_engine.server.service.MemoryService` (the
operations the MCP server runs too) and answers its JSON document; every
:class:`~hgm_engine.errors.HGMError` becomes ``{"error": {...}}`` with the status of
:func:`~hgm_engine.server.service.http_status`. The query route is also answered directly by
the :class:`~hgm_engine.server.rest.guard.Guard`, past the framework's per-request layers.
The OpenAPI document is FastAPI's, with the 400 error body in place of its 422 one.

>>> from fastapi.testclient import TestClient
>>> from hgm_engine import Memory
>>> client = TestClient(create_app(Memory()))
>>> client.post("/api/v1/memory/node", json={"content": "trains", "id": "pref"}).json()["node"]
{'id': 'pref', 'type': 'fact', 'content': 'trains'}
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from hgm_engine import __version__
from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory
from hgm_engine.query import Limits
from hgm_engine.server.rest.guard import BodyTooLarge, Guard
from hgm_engine.server.rest.models import (
    ChangesModel,
    ConfirmRequest,
    CreatedReportModel,
    DiffModel,
    ExplainModel,
    FocusPathModel,
    FrontierModel,
    GraphModel,
    HealthModel,
    HistoryModel,
    LocateModel,
    MemoryNodeModel,
    NodeModel,
    SnapshotModel,
    SnapshotsModel,
    StaleModel,
    ExplainRequest,
    LocateRequest,
    MemoryNodeRequest,
    PathRetrieveRequest,
    PathRewriteRequest,
    QueryRequest,
    QueryResultModel,
    FactsModel,
    SummarizeModel,
    SummarizeRequest,
    ReportModel,
    RevertRequest,
    RewritePathRequest,
    SnapshotRequest,
    TransactionRequest,
    error_responses,
)
from hgm_engine.server.rest.models import IndexConfigRequest, IndexStatusModel, SearchModel, SearchRequest  # the node index's routes
from hgm_engine.server.rest.responses import (
    error_response,
    json_response,
    query_response,
    request_id_var,
    validation_error_response,
)
from hgm_engine.server.registry import MemoryRegistry
from hgm_engine.store import DEFAULT_MEMORY, check_memory_name
from hgm_engine.server.rest.memories import NodeJsonPerMemory, RequestService, add_memory_routes, slash_hint
from hgm_engine.server.rest.routes import add_capability_routes, allowed_methods, docs_app, public_paths, refine_openapi
from hgm_engine.server.service import BudgetExceeded, LLMEndpoint, ServerLimits, error_document, http_status
from hgm_engine.server.tokens import TokenFile, TokenScopes

__all__ = ["create_app"]

logger = logging.getLogger("hgm.server")


def create_app(
    memory: Memory | MemoryRegistry | None = None,
    *,
    token: str | None = None,
    max_body: int | None = None,
    limits: ServerLimits | Limits | None = None,
    llm: LLMEndpoint | None = None,
    tokens: TokenScopes | TokenFile | None = None,
    default_memory: str = DEFAULT_MEMORY,
) -> FastAPI:
    """The REST app over ``memory`` (an ASGI app; run it with uvicorn or test it with
    ``fastapi.testclient.TestClient``).

    Without ``memory`` (and nothing else) it is the application factory of process managers
    (``uvicorn --factory hgm_engine.server.rest:create_app``): everything comes from the
    environment (``HGM_DB``, ``HGM_MAX_OPEN``, ``HGM_TOKEN_FILE``, ...;
    :mod:`~hgm_engine.server.rest.factory`, docs/deployment.md).

    ``memory``: one :class:`~hgm_engine.Memory` (served as the memory ``default``), or a
    :class:`~hgm_engine.server.registry.MemoryRegistry` over a store of many memories, each
    served under ``/api/v1/memories/{name}/`` (its ``limits`` and ``llm`` are the registry's:
    give them to the registry). ``token``: when set, every request needs ``Authorization:
    Bearer TOKEN``; ``tokens``: the tokens of a token file, each reaching the memories of its
    scopes (:class:`~hgm_engine.server.tokens.TokenScopes`, or a
    :class:`~hgm_engine.server.tokens.TokenFile`, read again when it changes). ``default_memory``: the memory of
    the unprefixed routes (``/api/v1/ROUTE``, ``/health``) of a registry. ``max_body``:
    the largest request body in bytes (default ``limits.max_body``, 1 MiB). ``limits``: a
    :class:`~hgm_engine.server.service.ServerLimits` (or an executor
    :class:`~hgm_engine.query.executor.Limits` for work and time only). ``llm``: the model
    endpoint of the LLM routes (:class:`~hgm_engine.server.service.LLMEndpoint`; default:
    the environment's, as ``hgm rewrite`` reads it). ``/openapi.json`` and ``/docs`` (its
    assets are served from the ``fastapi-offline`` package, so the page works offline) need
    no token: they hold no data.

    >>> from fastapi.testclient import TestClient
    >>> from hgm_engine import Memory
    >>> client = TestClient(create_app(Memory(), token="s3cret"))
    >>> client.get("/health").status_code
    401
    >>> client.get("/health", headers={"Authorization": "Bearer s3cret"}).json()["status"]
    'ok'
    """
    if memory is None:
        if any(v is not None for v in (token, max_body, limits, llm, tokens)) or default_memory != DEFAULT_MEMORY:
            raise TypeError("create_app() without a memory reads everything from the environment")
        from hgm_engine.server.rest.factory import app_from_environment

        return app_from_environment()
    if isinstance(limits, Limits):
        limits = ServerLimits(max_work=limits.max_work, timeout=limits.timeout)
    if isinstance(memory, MemoryRegistry):
        if limits is not None or llm is not None:
            raise TypeError("create_app(registry): give limits and llm to the MemoryRegistry")
        registry = memory
        limits = registry.limits
    else:
        limits = limits or ServerLimits()
        registry = MemoryRegistry.of(memory, limits=limits, llm=llm)
        if default_memory != DEFAULT_MEMORY:
            raise TypeError("create_app(memory): one memory is served as 'default'")
    check_memory_name(default_memory, where="default_memory")
    if max_body is not None:
        limits = attrs.evolve(limits, max_body=max_body)
    if token is not None and tokens is not None:
        raise TypeError("create_app: give token or tokens, not both")
    service = RequestService(registry)  # the service of the memory each request leased
    inline_budget = limits.inline_budget()
    node_json = NodeJsonPerMemory(service)

    app = docs_app(
        title="hgm",
        version=__version__,
        summary="Hierarchical graph memory for LLM agents",
        description=(
            "Path-expression queries, transactions, history and time travel over one hgm memory. "
            "Documents follow spec/formats.md; every error is {\"error\": {\"category\", \"message\", ...}}."
        ),
    )
    app.state.registry = registry
    app.state.token_required = token is not None or tokens is not None

    @app.exception_handler(HGMError)
    async def _hgm_error(request: Request, exc: HGMError) -> Response:
        doc = error_document(exc)
        doc["error"]["request_id"] = request_id_var.get()
        status = http_status(exc.category)
        if status >= 500 and status != 501:
            logger.error("%s %s: %s", request_id_var.get(), exc.category, exc.message)
        return json_response(doc, status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        return validation_error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 413:
            return error_response("request-too-large", f"the request body is over this server's limit of {limits.max_body} bytes", 413)
        if exc.status_code == 404:
            raw = request.scope.get("hgm.original_raw_path")
            original = raw.decode("latin-1") if raw else request.url.path  # as sent: %2F stays
            hint = slash_hint(raw or b"")
            return error_response("not-found", f"no route {request.method} {original}{hint}", 404)
        if exc.status_code == 405:  # Allow lists every method of the path (RFC 9110), not one route's
            allowed = allowed_methods(app, request.scope)
            headers = {"Allow": ", ".join(allowed)} if allowed else exc.headers
            return error_response("method-not-allowed", f"{request.method} is not allowed on {request.url.path}", 405, headers)
        unreadable = _unreadable_json(exc)
        if unreadable is not None:
            return error_response("invalid-json", f"the body is not valid JSON: {unreadable}", 400)
        category = "invalid-argument" if exc.status_code < 500 else "internal"
        return error_response(category, str(exc.detail), exc.status_code)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> Response:
        logger.exception("%s internal error on %s %s", request_id_var.get(), request.method, request.url.path)
        return error_response("internal", f"internal error (request id {request_id_var.get()})", 500)

    direct: dict[tuple[str, str], Any] = {}  # filled below, once the handlers exist
    # The guard goes outside the framework's own middleware (error pages, telemetry, body
    # limit): a direct route then passes no other layer; the rest go through all of them.
    build_stack = app.build_middleware_stack
    app.build_middleware_stack = lambda: Guard(  # type: ignore[method-assign]
        build_stack(),
        token=token,
        tokens=tokens,
        registry=registry,
        default_memory=default_memory,
        max_body=limits.max_body,
        direct=direct,
        public=public_paths(app),
        body_timeout=limits.body_timeout,
        max_concurrency=limits.max_concurrency,
    )

    # -- operations --------------------------------------------------------------------

    @app.get("/health", tags=["service"], summary="Liveness and the memory's current t", response_model=HealthModel)
    async def health() -> Response:
        return json_response(service.health())

    @app.post(
        "/api/v1/query",
        tags=["read"],
        summary="Evaluate a path expression",
        response_model=QueryResultModel,
        responses=error_responses(400, 401, 404),
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
                return query_response(doc, payloads, node_json)
            except BudgetExceeded:
                pass

        def run() -> Response:
            return query_response(*service.query_payloads(*args, nodes=body.nodes), node_json)

        return await run_in_threadpool(run)

    @app.post(
        "/api/v1/explain", tags=["read"], summary="The optimized plan of a query", response_model=ExplainModel, responses=error_responses(400, 401)
    )
    def explain(body: ExplainRequest) -> Response:
        return json_response(service.explain(body.expr, physical=body.physical))

    @app.post(
        "/api/v1/transactions",
        tags=["write"],
        summary="Apply a transaction file",
        operation_id="apply_transaction",
        response_model=CreatedReportModel,
        responses=error_responses(400, 401, 404, 409, 413, 422),
    )
    def transact(body: TransactionRequest, dry_run: bool = Query(False, description="Same as dry_run in the body.")) -> Response:
        """All ops or none. 200 with the transaction report when committed (or for a clean dry
        run); 422 with the report and every violation when constraints refuse it; 409 when
        something it touches changed after `base_t`; 404 when an op names a missing node."""
        doc = body.model_dump(exclude_none=True)
        doc.pop("dry_run", None)
        return json_response(service.transact(doc, dry_run=dry_run or body.dry_run))

    @app.get("/api/v1/nodes/{node_id:path}", tags=["read"], summary="One node", response_model=NodeModel, responses=error_responses(400, 401, 404))
    def get_node(node_id: str, as_of: str | None = Query(None, description="A t, a snapshot name or an ISO 8601 time.")) -> Response:
        return json_response(service.node(node_id, as_of))

    @app.get("/api/v1/history", tags=["history"], summary="Every commit that touched a node", response_model=HistoryModel, responses=error_responses(401, 404))
    def history(node: str = Query(min_length=1, description="The node id.")) -> Response:
        return json_response(service.history(node))

    @app.get("/api/v1/diff", tags=["history"], summary="What changed between two states", response_model=DiffModel, responses=error_responses(400, 401, 404))
    def diff(
        t_from: str = Query(alias="from", description="A t or a snapshot name."),
        t_to: str | None = Query(None, alias="to", description="A t or a snapshot name (default: now)."),
    ) -> Response:
        return json_response(service.diff(t_from, t_to))

    @app.get(
        "/api/v1/changes",
        tags=["history"],
        summary="Commits and net changes since a t",
        operation_id="changes_since",
        response_model=ChangesModel,
        responses=error_responses(400, 401, 404),
    )
    def changes(since: str = Query(description="A t, a snapshot name or an ISO 8601 time.")) -> Response:
        return json_response(service.changes_since(since))

    @app.get("/api/v1/stale", tags=["planner"], summary="Nodes marked needs_review or blocked", response_model=StaleModel, responses=error_responses(400, 401, 404))
    def stale(as_of: str | None = Query(None)) -> Response:
        return json_response(service.stale(as_of))

    @app.get("/api/v1/frontier", tags=["planner"], summary="Actions under a goal that can run now", response_model=FrontierModel, responses=error_responses(400, 401, 404))
    def frontier(goal: str = Query(min_length=1), as_of: str | None = Query(None)) -> Response:
        return json_response(service.frontier(goal, as_of))

    @app.get("/api/v1/facts", tags=["read"], summary="What holds about an entity at a time", response_model=FactsModel, responses=error_responses(400, 401, 404))
    def facts(
        id: str = Query(min_length=1, description="The entity's node id."),  # noqa: A002
        at: str | None = Query(None, description="The valid time, ISO 8601; omit for now."),
        as_of: str | None = Query(None, description="A t, a snapshot name or an ISO 8601 time."),
    ) -> Response:
        return json_response(service.facts(id, at, as_of))

    @app.get("/api/v1/focus-path", tags=["planner"], summary="The path from a root to a node", response_model=FocusPathModel, responses=error_responses(400, 401, 404))
    def focus_path(node: str = Query(min_length=1), as_of: str | None = Query(None)) -> Response:
        return json_response(service.focus_path(node, as_of))

    @app.post("/api/v1/confirm", tags=["planner"], summary="Clear a node's staleness marks", response_model=ReportModel, responses=error_responses(400, 401, 404, 422))
    def confirm(body: ConfirmRequest) -> Response:
        return json_response(service.confirm(body.id, body.author, body.reason))

    @app.post("/api/v1/summarize", tags=["planner"], summary="Roll a subtree up into one summary node", response_model=SummarizeModel, responses=error_responses(400, 401, 404, 422))
    def summarize(body: SummarizeRequest) -> Response:
        return json_response(service.summarize(body.id, body.author, body.reason, body.max_items, body.dry_run))

    @app.post("/api/v1/revert", tags=["history"], summary="Undo a commit with a new commit", response_model=ReportModel, responses=error_responses(400, 401, 404, 409, 422))
    def revert(body: RevertRequest) -> Response:
        return json_response(service.revert(body.t, body.author, body.reason))

    @app.get("/api/v1/snapshots", tags=["history"], summary="Named states", operation_id="list_snapshots", response_model=SnapshotsModel)
    def snapshots() -> Response:
        return json_response(service.snapshots())

    @app.post(
        "/api/v1/snapshots",
        tags=["history"],
        summary="Name a state",
        operation_id="create_snapshot",
        status_code=201,
        response_model=SnapshotModel,
        responses=error_responses(400, 401, 404),
    )
    def snapshot(body: SnapshotRequest) -> Response:
        return json_response(service.snapshot(body.name, body.t), 201)

    @app.get("/api/v1/export", tags=["read"], summary="The whole memory as a graph file", response_model=GraphModel, responses=error_responses(400, 401, 404))
    def export(as_of: str | None = Query(None)) -> Response:
        return json_response(service.export(as_of))

    @app.post(
        "/api/v1/locate",
        tags=["paths"],
        summary="Stored decision paths that fit a request",
        response_model=LocateModel,
        responses=error_responses(400, 401, 501),
    )
    def locate(body: LocateRequest) -> Response:
        """The localization result of formats.md (`matches`, best first)."""
        return json_response(
            service.locate(body.text, body.tags, body.k, scenario=body.scenario, cross_scenario=body.cross_scenario, steps=body.steps, hops=body.hops,
                           coarse=body.coarse, scenarios=body.scenarios, fuse=body.fuse)
        )

    @app.post(
        "/api/v1/rewrite",
        tags=["paths"],
        summary="Replace a stored path's steps",
        operation_id="rewrite_path",
        response_model=CreatedReportModel,
        responses=error_responses(400, 401, 404, 409, 422, 423, 429, 501),
    )
    def rewrite(body: RewritePathRequest) -> Response:
        return json_response(service.rewrite_path(body.path_id, body.steps, body.reason, body.author))

    # -- the resource style of the origin documents ------------------------------------

    @app.post(
        "/api/v1/memory/node",
        tags=["origin"],
        summary="Add one node from free text",
        operation_id="add_memory_node",
        status_code=201,
        response_model=MemoryNodeModel,
        responses=error_responses(400, 401, 404, 409, 422),
    )
    def memory_node(body: MemoryNodeRequest) -> Response:
        """One `add_node` transaction. `content`, `level`, `session_id` and the keys of
        `metadata` become attributes; `parent_id` puts the node under that node."""
        doc = service.add_memory_node(
            body.content,
            body.type,
            level=body.level,
            session_id=body.session_id,
            parent=body.parent_id,
            node_id=body.id,
            metadata=body.metadata,
            author=body.author,
            reason=body.reason,
        )
        return json_response(doc, 201)

    @app.post(
        "/api/v1/memory/path/retrieve",
        tags=["origin"],
        summary="Locate paths for a question",
        operation_id="retrieve_paths",
        response_model=LocateModel,
        responses=error_responses(400, 401, 501),
    )
    def memory_path_retrieve(body: PathRetrieveRequest) -> Response:
        return json_response(service.locate(body.query, body.tags, body.max_paths))

    @app.post(
        "/api/v1/memory/path/rewrite",
        tags=["origin"],
        summary="Rewrite a path after feedback",
        operation_id="rewrite_path_from_feedback",
        response_model=CreatedReportModel,
        responses=error_responses(400, 401, 404, 409, 422, 423, 429, 501),
    )
    def memory_path_rewrite(body: PathRewriteRequest) -> Response:
        return json_response(service.rewrite_path_from_feedback(body.path_id, body.feedback, body.steps, body.session_context))

    # -- search: the node index (hgm_engine.retrieval; docs/search.md) -------------------------

    @app.post(
        "/api/v1/search",
        tags=["read"],
        summary="Nodes whose text matches, most relevant first",
        response_model=SearchModel,
        responses=error_responses(400, 401, 404),
    )
    def search(body: SearchRequest) -> Response:
        """search(TEXT) with each node's score and the words of `text` it contains (with an
        embedder set, also `similarity` and `lexical`), at most `limit` hits, of `type` only
        when given. With `coarse`, the summaries first: the best `summaries` of them choose
        the nodes ranked (those they cover, and those no summary covers), each hit says `via`
        which summary, and `coarse` says what each step did. A `text` with no word to search
        for (empty, or only stop words such as 'the') is a 400 naming `text`; an unknown
        snapshot name in `as_of` is a 404."""
        return json_response(service.search(body.text, body.type, body.limit, body.as_of, body.coarse, body.summaries))

    @app.get("/api/v1/index", tags=["read"], summary="What the node index holds", response_model=IndexStatusModel)
    def index_status() -> Response:
        """The node index behind search: nodes with text, terms, how it was read, its embedder."""
        return json_response(service.search_status())

    @app.put(
        "/api/v1/index/embedder",
        tags=["write"],
        summary="Set the memory's embedder",
        response_model=IndexStatusModel,
        responses=error_responses(400, 401, 503),
    )
    def set_embedder(body: IndexConfigRequest) -> Response:
        """Every node's text is embedded now, in one store transaction with the setting; an
        embedder that is unknown (400) or fails (503, category `embedder`) changes nothing.
        From then on every commit embeds the texts it adds and fails whole when the embedder
        does. `embedder: null` is words only again."""
        return json_response(service.configure_search(body.embedder, body.base_url, body.min_similarity))

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
                response = validation_error_response(exc)
            else:
                response = await query(body)
        except HGMError as exc:
            response = await _hgm_error(None, exc)
        except BodyTooLarge as exc:
            response = await _http_error(Request(scope), exc)
        except Exception as exc:  # noqa: BLE001 - the same 500 document as every route
            response = await _internal(Request(scope), exc)
        await response(scope, receive, send)

    direct[("POST", "/api/v1/query")] = query_direct
    add_capability_routes(app, service)
    add_memory_routes(app, registry)
    app.openapi = lambda: refine_openapi(app, _openapi(app))  # type: ignore[method-assign]
    return app


def _unreadable_json(exc: StarletteHTTPException) -> str | None:
    """Why FastAPI could not parse a body as JSON, when ``exc`` is its "There was an error
    parsing the body" (the parser raised something else than a ``JSONDecodeError``: nesting
    past the interpreter's recursion limit, an integer over 4,300 digits, bytes that are not
    UTF-8); None for any other error.

    >>> err = StarletteHTTPException(400, "There was an error parsing the body")
    >>> err.__cause__ = RecursionError("maximum recursion depth exceeded")
    >>> _unreadable_json(err)
    'it is nested too deeply for this parser'
    >>> _unreadable_json(StarletteHTTPException(400, "bad")) is None
    True
    """
    cause = exc.__cause__
    if exc.status_code != 400 or not isinstance(cause, (RecursionError, ValueError)):
        return None
    if isinstance(cause, RecursionError):
        return "it is nested too deeply for this parser"
    if isinstance(cause, UnicodeDecodeError):
        return f"it is not UTF-8 text (byte {cause.object[cause.start:cause.start + 1]!r} at offset {cause.start})"
    if "digits" in str(cause):
        return "an integer has more than 4,300 digits"
    return str(cause)[:200]


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
