"""The REST server's request and response documents (pydantic models).

The request models are strict (no unknown fields, no type coercion): a body that does not fit
is refused with 400 before anything runs. The response models only describe the answers in
the OpenAPI document; the routes send the service's JSON documents as they are.

>>> QueryRequest.model_validate({"expr": "root"}).nodes
True
>>> error_responses(404)[404]["description"]
'Unknown node, snapshot or path'
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

__all__ = [
    "AsOf",
    "QueryRequest",
    "ExplainRequest",
    "TransactionRequest",
    "ConfirmRequest",
    "RevertRequest",
    "SummarizeRequest",
    "SnapshotRequest",
    "LocateRequest",
    "RewritePathRequest",
    "MemoryNodeRequest",
    "PathRetrieveRequest",
    "PathRewriteRequest",
    "ErrorDetail",
    "ErrorBody",
    "QueryResultModel",
    "ReportModel",
    "RefusedReportModel",
    "error_responses",
]

_STRICT = ConfigDict(extra="forbid", strict=True)

# A model's docstring and field descriptions are its description in the OpenAPI document:
# changing one changes the document clients are generated from.

# A t or a snapshot name. Taken as any JSON value and checked by the service, so a wrong one is
# one 400 naming ``as_of`` (pydantic would report one problem per member of ``int | str``);
# the OpenAPI document still says what it is.
AsOf = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}]})]


class QueryRequest(BaseModel):
    """A path expression to evaluate (spec dsl.md)."""

    model_config = _STRICT
    expr: str = Field(description="The path expression, e.g. \"root.actions.where(status = 'pending')\".")
    focus: str | None = Field(None, description="The node id that @ refers to.")
    params: dict[str, Any] | None = Field(None, description="Values for the $parameters of the query.")
    as_of: AsOf | None = Field(None, description="Evaluate on the state at this t, a snapshot name, or an ISO 8601 time (the last commit at or before it).")
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


class SummarizeRequest(BaseModel):
    model_config = _STRICT
    id: str = Field(description="The scenario (or any node) whose subtree to roll up into one summary node.")
    author: str | None = None
    reason: str | None = None
    max_items: int | None = Field(None, ge=1, le=1000, description="Steps, entities and outcomes named in the text (default 8).")
    dry_run: bool = False


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
    coarse: bool = Field(False, description="Coarse-to-fine: read the scenario summaries first, then rank only their paths.")
    scenarios: int = Field(3, ge=1, le=1000, description="With coarse: how many scenarios to keep.")


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


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route for the error statuses it can answer with: the error body
    (a refused transaction's report for 422) and what the status means.

    >>> sorted(error_responses(400, 422))
    [400, 422]
    >>> error_responses(422)[422]["model"].__name__
    'RefusedReportModel'
    """
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
