"""The REST routes of every other capability of a memory, the documentation pages, and the
finishing touches of the OpenAPI document.

:func:`add_capability_routes` adds, over the same :class:`~hgm_engine.server.service.MemoryService`
as the routes of :mod:`~hgm_engine.server.rest.app`: constraints and rule sets, violations,
commits, several nodes' histories, loading a graph file, ingesting trajectories, paths (list,
one, metrics, outcome, rollback, reset), the LLM rewrite and the LLM planner's step. Each route
is thin: validate the body (its model), call the service, answer its document.

:func:`docs_app` makes the FastAPI app with ``/docs`` (Swagger UI) and ``/redoc`` served from
the ``fastapi-offline`` package's copies of their assets, so the pages work without network;
:func:`public_paths` are what the guard lets through without a token (the document and the
pages: they hold no data). :func:`refine_openapi` adds what every route can answer (401 with a
token, 413 and 415 with a body, 503 when overloaded) and the ops' schemas.

>>> from fastapi.testclient import TestClient
>>> from hgm_engine import Memory
>>> from hgm_engine.server import create_app
>>> client = TestClient(create_app(Memory(), token="s3cret"))
>>> client.get("/openapi.json").status_code, client.get("/docs").status_code
(200, 200)
>>> client.get("/api/v1/rules").status_code
401
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi.responses import Response

from hgm_engine.errors import Problem, ServiceError
from hgm_engine.server.rest.models import (
    CommitsModel,
    ConstraintAddedModel,
    ConstraintRemovedModel,
    ConstraintRequest,
    ConstraintsModel,
    CreatedReportModel,
    HistoriesModel,
    HistoriesRequest,
    IngestModel,
    IngestRequest,
    LLMRewriteModel,
    LLMRewriteRequest,
    LoadRequest,
    OutcomeRequest,
    PathMetricsModel,
    PathModel,
    PathsModel,
    PlannerStepModel,
    PlannerStepRequest,
    PurgeModel,
    PurgeRequest,
    ReportModel,
    ResetRequest,
    RollbackRequest,
    RuleSetsModel,
    RulesLoadedModel,
    RulesRemovedModel,
    RulesRequest,
    SchemaDocumentModel,
    SchemaDocumentRequest,
    ViolationsModel,
    error_responses,
    op_schemas,
)
from hgm_engine.server.rest.responses import json_response
from hgm_engine.server.service import MemoryService

__all__ = ["add_capability_routes", "allowed_methods", "known_query_parameters", "docs_app", "public_paths", "refine_openapi", "DOCS_ASSETS"]

# Where the documentation pages' scripts and styles are served (fastapi-offline's static files).
DOCS_ASSETS = "/docs-assets"


def docs_app(**kwargs: Any) -> FastAPI:
    """A FastAPI app whose ``/docs`` and ``/redoc`` load their assets from this server (the
    ``fastapi-offline`` package ships them), not from a CDN; without that package there are no
    pages (the document is still served). ``kwargs`` go to ``FastAPI``; operation ids are the
    route functions' names (``query``, ``apply_transaction``), so they stay stable.

    >>> from fastapi.testclient import TestClient
    >>> page = TestClient(docs_app(title="t")).get("/docs").text
    >>> f"{DOCS_ASSETS}/swagger-ui-bundle.js" in page and "cdn" not in page
    True
    """
    kwargs.setdefault("generate_unique_id_function", lambda route: route.name)
    kwargs.setdefault("dependencies", [Depends(known_query_parameters)])
    try:
        from fastapi_offline import FastAPIOffline
    except ImportError:  # pragma: no cover - the serve extra installs it
        return FastAPI(docs_url=None, redoc_url=None, **kwargs)
    return FastAPIOffline(static_url=DOCS_ASSETS, favicon_url=f"{DOCS_ASSETS}/favicon.png", **kwargs)


def public_paths(app: FastAPI) -> tuple[str, ...]:
    """Paths answered without the token (GET and HEAD only): the OpenAPI document, the
    documentation pages and their assets (a trailing ``/`` marks a prefix).

    >>> public_paths(docs_app(title="t"))
    ('/openapi.json', '/docs', '/redoc', '/docs/oauth2-redirect', '/docs-assets/')
    """
    found = [app.openapi_url]
    found += [path for path in ("/docs", "/redoc", app.swagger_ui_oauth2_redirect_url) if any(getattr(r, "path", None) == path for r in app.routes)]
    if any(getattr(r, "path", None) == DOCS_ASSETS for r in app.routes):
        found.append(DOCS_ASSETS + "/")
    return tuple(p for p in found if p)


async def known_query_parameters(request: Request) -> None:
    """Refuse a query parameter the route does not take (400 ``invalid-argument``), as unknown
    body fields are: a misspelt ``as_of`` would otherwise read the current state unnoticed.

    >>> from fastapi.testclient import TestClient
    >>> from hgm_engine import Memory
    >>> from hgm_engine.server import create_app
    >>> TestClient(create_app(Memory())).get("/api/v1/stale?asof=1").json()["error"]["message"]
    "unknown query parameter 'asof' (this route takes: as_of)"
    """
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None or not request.query_params:
        return
    known = {param.alias for param in dependant.query_params}
    for name in request.query_params:
        if name not in known:
            takes = ", ".join(sorted(known)) or "no query parameters"
            raise ServiceError([Problem("invalid-argument", f"unknown query parameter {name!r} (this route takes: {takes})", where=name)])


def allowed_methods(app: FastAPI, scope: Any) -> list[str]:
    """Every method some route of ``app`` answers on the path of ``scope`` (for ``Allow``).

    >>> from hgm_engine import Memory
    >>> from hgm_engine.server import create_app
    >>> allowed_methods(create_app(Memory()), {"type": "http", "path": "/api/v1/snapshots", "method": "PUT", "root_path": ""})
    ['GET', 'POST']
    """
    from starlette.routing import Match

    methods: set[str] = set()
    for route in app.router.routes:
        route_methods = getattr(route, "methods", None)
        if route_methods and route.matches(dict(scope))[0] != Match.NONE:
            methods |= set(route_methods)
    return sorted(methods)


def refine_openapi(app: FastAPI, schema: dict[str, Any]) -> dict[str, Any]:
    """The document with what every route can answer besides its own statuses, and the ops'
    schemas (``Op``, discriminated by ``op``) among the components. Done once per document.

    >>> from fastapi.testclient import TestClient
    >>> from hgm_engine import Memory
    >>> from hgm_engine.server import create_app
    >>> doc = TestClient(create_app(Memory())).get("/openapi.json").json()
    >>> sorted(doc["paths"]["/api/v1/transactions"]["post"]["responses"])
    ['200', '400', '401', '404', '409', '413', '415', '422', '503']
    """
    if schema.get("x-hgm-refined"):
        return schema
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components.update(op_schemas())
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}
    for path, methods in schema.get("paths", {}).items():
        for method, operation in methods.items():
            responses = operation.setdefault("responses", {})
            if app.state.token_required and path not in public_paths(app):
                responses.setdefault("401", {"description": "Missing or wrong bearer token", **error})
            if "requestBody" in operation:
                responses.setdefault("413", {"description": "Request body too large", **error})
                responses.setdefault("415", {"description": "Body is not application/json", **error})
            responses.setdefault("503", {"description": "Overloaded or stopping: retry after Retry-After seconds", **error})
    schema["x-hgm-refined"] = True
    return schema


def add_capability_routes(app: FastAPI, service: MemoryService) -> None:
    """The routes of every capability :mod:`~hgm_engine.server.rest.app` does not route itself
    (docs/server.md has the table: each ``Memory`` method, its route and its MCP tool)."""

    # -- constraints and rule sets (docs/rules.md) -------------------------------------------

    @app.get("/api/v1/constraints", tags=["rules"], summary="User constraints, and the broken ones", response_model=ConstraintsModel)
    def list_constraints() -> Response:
        return json_response(service.constraints())

    @app.post(
        "/api/v1/constraints",
        tags=["rules"],
        summary="Add or replace a constraint",
        response_model=ConstraintAddedModel,
        responses=error_responses(400, 401, 422),
    )
    def add_constraint(body: ConstraintRequest) -> Response:
        """`each TYPE [where COND] must COND`; 422 with every violation when it does not hold now."""
        return json_response(service.add_constraint(body.name, body.text, check_existing=body.check_existing))

    @app.delete(
        "/api/v1/constraints/{name}",
        tags=["rules"],
        summary="Remove a constraint",
        response_model=ConstraintRemovedModel,
        responses=error_responses(400, 401),
    )
    def remove_constraint(name: str) -> Response:
        return json_response(service.remove_constraint(name))

    @app.get("/api/v1/violations", tags=["rules"], summary="Constraint violations in the current state", response_model=ViolationsModel)
    def violations() -> Response:
        return json_response(service.violations())

    @app.get("/api/v1/rules", tags=["rules"], summary="Loaded rule sets, and the broken ones", operation_id="list_rules", response_model=RuleSetsModel)
    def list_rules() -> Response:
        return json_response(service.rules())

    @app.post(
        "/api/v1/rules",
        tags=["rules"],
        summary="Load a rule file",
        response_model=RulesLoadedModel,
        responses=error_responses(400, 401, 422),
    )
    def load_rules(body: RulesRequest) -> Response:
        """Constraints, triggers and propagation under `name` (a set of that name is replaced);
        422 with every violation when its constraints do not hold now."""
        return json_response(service.load_rules(body.text, body.name))

    @app.delete(
        "/api/v1/rules/{name}",
        tags=["rules"],
        summary="Unload a rule set",
        response_model=RulesRemovedModel,
        responses=error_responses(400, 401),
    )
    def remove_rules(name: str) -> Response:
        return json_response(service.remove_rules(name))

    # -- history and loading -------------------------------------------------------------------

    @app.get(
        "/api/v1/commits",
        tags=["history"],
        summary="The commits after a t",
        operation_id="list_commits",
        response_model=CommitsModel,
        responses=error_responses(400, 401, 404),
    )
    def list_commits(
        since: str = Query("0", description="A t or a snapshot name."),
        limit: int = Query(100, ge=1, le=1000, description="At most this many commits."),
    ) -> Response:
        return json_response(service.commits(since, limit))

    @app.post(
        "/api/v1/histories",
        tags=["history"],
        summary="The histories of several nodes",
        operation_id="node_histories",
        response_model=HistoriesModel,
        responses=error_responses(400, 401),
    )
    def node_histories(body: HistoriesRequest) -> Response:
        return json_response(service.histories(body.nodes))

    @app.post(
        "/api/v1/load",
        tags=["write"],
        summary="Load a graph file",
        operation_id="load_graph",
        response_model=ReportModel,
        responses=error_responses(400, 401, 409, 422),
    )
    def load_graph(body: LoadRequest) -> Response:
        """One transaction: the genesis commit of an empty memory, else every node and edge added."""
        return json_response(service.load(body.graph, body.author, body.reason))

    # -- forgetting and the stored schema (docs/memories.md) -----------------------------------

    @app.post(
        "/api/v1/purge",
        tags=["write"],
        summary="Forget a node: every trace, in every state",
        operation_id="purge",
        response_model=PurgeModel,
        responses=error_responses(400, 401, 403, 404),
    )
    def purge(body: PurgeRequest) -> Response:
        """The node's content (with `subtree`, every node below it) leaves the state, the
        journal and so every `as_of`, export and snapshot, and the store's files are scrubbed;
        history keeps a tombstone (a commit of kind `purge` with the ids, `author`, time and
        `reason`). A node the memory never held is a 404 `unknown-node`; nothing changes then."""
        return json_response(service.purge(body.id, body.reason, subtree=body.subtree, author=body.author))

    @app.get("/api/v1/schema", tags=["read"], summary="The memory's stored schema", operation_id="get_schema", response_model=SchemaDocumentModel)
    def get_schema() -> Response:
        """The `hgm-schema/1` document (docs/formats.md) every interface uses for this memory."""
        return json_response(service.schema_document())

    @app.put(
        "/api/v1/schema",
        tags=["write"],
        summary="Change the memory's schema",
        operation_id="set_schema",
        response_model=SchemaDocumentModel,
        responses=error_responses(400, 401, 403, 422),
    )
    def set_schema(body: SchemaDocumentRequest) -> Response:
        """A transaction: refused with 422 `schema-violation` and every problem (a node of a
        type the schema lacks, an attribute its JSON Schema forbids, a constraint or rule set
        that would not compile) when what the memory holds breaks it; a document with errors is
        a 400 naming each place. Nothing changes then."""
        return json_response(service.set_schema(body.model_dump(by_alias=True, exclude_unset=True)))

    # -- paths (docs/paths.md) --------------------------------------------------------------------

    @app.post(
        "/api/v1/paths/ingest",
        tags=["paths"],
        summary="Store trajectories as paths",
        operation_id="ingest",
        response_model=IngestModel,
        responses=error_responses(400, 401, 409, 422),
    )
    def ingest(body: IngestRequest) -> Response:
        """All in one transaction; a refusal carries the ingest report (every trajectory that
        does not fit, and where)."""
        doc = service.ingest(body.trajectories, skip_invalid=body.skip_invalid, author=body.author, scenario=body.scenario, reason=body.reason)
        return json_response(doc)

    @app.get("/api/v1/paths", tags=["paths"], summary="Every path (its current version)", operation_id="list_paths", response_model=PathsModel)
    def list_paths(all_versions: bool = Query(False, description="Every version, not only the current ones.")) -> Response:
        return json_response(service.paths(all_versions))

    @app.get("/api/v1/path", tags=["paths"], summary="One stored path", operation_id="get_path", response_model=PathModel, responses=error_responses(400, 401, 404))
    def get_path(path_id: str = Query(alias="id", min_length=1, description="The path id (any version of a lineage).")) -> Response:
        """By query parameter, so no path id can be taken for a route (`/api/v1/paths/metrics`)."""
        return json_response(service.path(path_id))

    @app.get("/api/v1/paths/metrics", tags=["paths"], summary="Rewrites, versions, failure streaks, the index", response_model=PathMetricsModel)
    def path_metrics() -> Response:
        return json_response(service.path_metrics())

    _path_refusals = error_responses(400, 401, 404, 409, 422, 423, 429)

    @app.post("/api/v1/paths/outcome", tags=["paths"], summary="Record a run of a path", operation_id="record_outcome", response_model=ReportModel, responses=_path_refusals)
    def record_outcome(body: OutcomeRequest) -> Response:
        return json_response(service.record_outcome(body.path_id, body.outcome, reward=body.reward, author=body.author))

    @app.post(
        "/api/v1/paths/rollback", tags=["paths"], summary="Make an older version current again", operation_id="rollback_path",
        response_model=CreatedReportModel, responses=_path_refusals,
    )
    def rollback_path(body: RollbackRequest) -> Response:
        return json_response(service.rollback_path(body.path_id, body.version, author=body.author, reason=body.reason))

    @app.post(
        "/api/v1/paths/reset", tags=["paths"], summary="Clear a lineage's needs_human and failure streak", operation_id="reset_path",
        response_model=ReportModel, responses=_path_refusals,
    )
    def reset_path(body: ResetRequest) -> Response:
        return json_response(service.reset_path(body.path_id, author=body.author, reason=body.reason))

    @app.post(
        "/api/v1/paths/llm-rewrite",
        tags=["paths", "llm"],
        summary="Let the server's model rewrite a path",
        operation_id="llm_rewrite",
        response_model=LLMRewriteModel,
        responses={**_path_refusals, **error_responses(502, 503)},
    )
    def llm_rewrite(body: LLMRewriteRequest) -> Response:
        """`hgm rewrite` over REST: the model configured on the server proposes a rewrite, hgm
        validates it (an invalid answer goes back to the model, at most `attempts` requests) and
        commits it as a new version. 502 `invalid-model-answer` or 503 `model-unavailable` (every
        attempt listed): nothing was written."""
        doc = service.llm_rewrite(
            body.path_id, body.feedback, model=body.model, attempts=body.attempts, author=body.author, dry_run=body.dry_run
        )
        return json_response(doc)


    # -- the LLM planner ----------------------------------------------------------------------

    @app.post(
        "/api/v1/planner/step",
        tags=["planner", "llm"],
        summary="One step of the LLM planner",
        operation_id="planner_step",
        response_model=PlannerStepModel,
        responses=error_responses(400, 401, 404, 409, 422, 501, 503),
    )
    def planner_step(body: PlannerStepRequest) -> Response:
        """The model reads the memory with queries and answers with the ops of one transaction,
        at most one tool call, and whether the task is done; the engine validates each answer
        (queries compiled, ops dry-run). Nothing is committed unless `commit` is true; pass
        `focus` and `last_t` from the answer to the next step, with the tool's answer as the
        `observation`. A step that got no valid answer has `plan.error`."""
        request = body.model_dump(exclude={"commit", "author"}, exclude_none=True)
        return json_response(service.planner_step(request, commit=body.commit, author=body.author))
