"""The REST server's request and response documents (pydantic models).

The request models are strict (no unknown fields, no type coercion): a body that does not fit
is refused with 400 before anything runs. The response models only describe the answers in
the OpenAPI document; the routes send the service's JSON documents as they are.

>>> QueryRequest.model_validate({"expr": "root"}).nodes
True
>>> error_responses(404)[404]["description"]
'Unknown node, snapshot, path or memory'
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, WithJsonSchema

__all__ = [
    "AsOf",
    "QueryRequest",
    "ExplainRequest",
    "TransactionRequest",
    "ConfirmRequest",
    "RevertRequest",
    "SummarizeRequest",
    "InvalidateOp",
    "FactModel",
    "FactsModel",
    "SummarizeModel",
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
    "SearchRequest",
    "SearchHitModel",
    "SearchModel",
    "EmbedderModel",
    "IndexStatusModel",
    "IndexConfigRequest",
    "int_in",
    "AddNodeOp",
    "UpdateNodeOp",
    "DeleteNodeOp",
    "AddEdgeOp",
    "UpdateEdgeOp",
    "DeleteEdgeOp",
    "ReplaceBranchOp",
    "ConfirmOp",
    "op_schemas",
    "HealthModel",
    "ExplainModel",
    "NodeModel",
    "HistoryEntryModel",
    "HistoryModel",
    "HistoriesModel",
    "DiffModel",
    "CommitSummaryModel",
    "ChangesModel",
    "CommitsModel",
    "StaleEntryModel",
    "StaleModel",
    "FrontierModel",
    "FocusPathModel",
    "SnapshotsModel",
    "SnapshotModel",
    "GraphModel",
    "LocateModel",
    "CreatedReportModel",
    "MemoryNodeModel",
    "NamedTextModel",
    "ConstraintsModel",
    "ConstraintAddedModel",
    "ConstraintRemovedModel",
    "ViolationModel",
    "ViolationsModel",
    "RuleSetsModel",
    "RulesLoadedModel",
    "RulesRemovedModel",
    "IngestModel",
    "PathModel",
    "PathsModel",
    "PathMetricsModel",
    "ProposalModel",
    "LLMRewriteModel",
    "PlanModel",
    "PlannerStepModel",
    "ConstraintRequest",
    "RulesRequest",
    "HistoriesRequest",
    "LoadRequest",
    "IngestRequest",
    "OutcomeRequest",
    "RollbackRequest",
    "ResetRequest",
    "LLMRewriteRequest",
    "ToolCallModel",
    "ObservationModel",
    "PlannerStepRequest",
    "Int",
    "NonBlank",
    "Id",
    "Op",
    "Ops",
    "OP_MODELS",
    "PurgeRequest",
    "PurgeModel",
    "SchemaDocumentRequest",
    "SchemaDocumentModel",
]

_STRICT = ConfigDict(extra="forbid", strict=True)


def _integral(value: Any) -> Any:
    """A JSON number with no fraction (``28.0``) is an integer, as JSON Schema says; anything
    else is left to the strict check (``28.5``, ``"28"`` and ``true`` stay refused)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer field of a request: ``type: integer`` in the document, and 28.0 is accepted.
Int = Annotated[int, BeforeValidator(_integral)]


def int_in(ge: int | None = None, le: int | None = None) -> Any:
    """:data:`Int` within bounds; the bounds go before the validator, so the document keeps
    them as ``minimum`` and ``maximum`` in an optional field's ``anyOf`` too.

    >>> from pydantic import TypeAdapter
    >>> TypeAdapter(int_in(0, 64)).validate_python(3.0), TypeAdapter(int_in(0, 64)).json_schema()["minimum"]
    (3, 0)
    """
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(_integral)]

# Text that must say something: not empty, not only spaces (what the service refuses).
NonBlank = Annotated[str, Field(min_length=1, pattern=r"\S")]

# A model's docstring and field descriptions are its description in the OpenAPI document:
# changing one changes the document clients are generated from.

# A t or a snapshot name. Taken as any JSON value and checked by the service, so a wrong one is
# one 400 naming ``as_of`` (pydantic would report one problem per member of ``int | str``);
# the OpenAPI document still says what it is.
AsOf = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}]})]


# -- the ops of a transaction ------------------------------------------------------------------
# Documented as a union discriminated by ``op`` (a generated client gets one type per op); the
# server still hands each op to the engine's transaction parser, whose errors name the op and
# the field (``ops[2].id``), as the CLI and MCP report them. The models mirror
# ``hgm_engine.txn.ops`` (``_OP_KEYS``): add_node and add_edge take further attributes.

_OP_STRICT = ConfigDict(extra="forbid")
_OP_OPEN = ConfigDict(extra="allow")
Id = Annotated[str, Field(min_length=1)]


class AddNodeOp(BaseModel):
    """Add a node; every further key is an attribute of the node."""

    model_config = _OP_OPEN
    op: Literal["add_node"]
    type: str = Field(description="The node type (goal, action, entity, fact, result).")
    id: str | None = Field(None, description="The new node's id (generated when absent).")
    parent: str | None = Field(None, description="Put the node under this node (a parent_of edge).")
    order: float | None = Field(None, description="The order among the parent's children.")


class UpdateNodeOp(BaseModel):
    """Set and unset attributes of a node."""

    model_config = _OP_STRICT
    op: Literal["update_node"]
    id: Id
    set: dict[str, Any] | None = Field(None, description="Attributes to set.")
    unset: list[str] | None = Field(None, description="Attributes to remove.")


class DeleteNodeOp(BaseModel):
    """Delete a node (with ``cascade``, its descendants too)."""

    model_config = _OP_STRICT
    op: Literal["delete_node"]
    id: Id
    cascade: bool = False


class AddEdgeOp(BaseModel):
    """Add an edge; every further key is an attribute of the edge."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    op: Literal["add_edge"]
    from_: str = Field(alias="from")
    to: str
    type: str = Field(description="parent_of, before, related_to, derived_from, produces, replaces, causes.")


class UpdateEdgeOp(BaseModel):
    """Set and unset attributes of an edge."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    op: Literal["update_edge"]
    from_: str = Field(alias="from")
    to: str
    type: str
    set: dict[str, Any] | None = None
    unset: list[str] | None = None


class DeleteEdgeOp(BaseModel):
    """Delete an edge."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    op: Literal["delete_edge"]
    from_: str = Field(alias="from")
    to: str
    type: str


class ReplaceBranchOp(BaseModel):
    """Replace a node's subtree with a nested plan."""

    model_config = _OP_STRICT
    op: Literal["replace_branch"]
    id: Id
    with_: list[dict[str, Any]] = Field(alias="with", description="Nested plan nodes {id?, type, children?: [...], ...attributes}.")
    set: dict[str, Any] | None = None


class ConfirmOp(BaseModel):
    """Clear a node's staleness marks."""

    model_config = _OP_STRICT
    op: Literal["confirm"]
    id: Id


class InvalidateOp(BaseModel):
    """Close a fact's valid time instead of deleting it (docs/time.md)."""

    model_config = _OP_STRICT
    op: Literal["invalidate"]
    id: Id
    at: str = Field(description="When it stops holding: an ISO 8601 date or date-time (its valid_to).")
    by: Id | None = Field(None, description="The newer fact (same type) that supersedes it: linked by replaces.")
    reason: str | None = Field(None, description="Kept on the closed fact as invalidated_reason.")


Op = Annotated[
    AddNodeOp | UpdateNodeOp | DeleteNodeOp | AddEdgeOp | UpdateEdgeOp | DeleteEdgeOp | ReplaceBranchOp | ConfirmOp | InvalidateOp,
    Field(discriminator="op"),
]
OP_MODELS = (AddNodeOp, UpdateNodeOp, DeleteNodeOp, AddEdgeOp, UpdateEdgeOp, DeleteEdgeOp, ReplaceBranchOp, ConfirmOp, InvalidateOp)


def op_schemas() -> dict[str, Any]:
    """The JSON Schemas of the ops (``Op``, the union, and one per op) for the OpenAPI
    document's components.

    >>> schemas = op_schemas()
    >>> schemas["Op"]["discriminator"]["propertyName"], sorted(schemas["Op"]["discriminator"]["mapping"])[:2]
    ('op', ['add_edge', 'add_node'])
    """
    schema = TypeAdapter(Op).json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
    defs = schema.pop("$defs", {})
    defs["Op"] = schema
    return defs


# Each op is taken as a JSON object and checked by the engine (see above); the document says
# which objects those are.
Ops = Annotated[list[dict[str, Any]], WithJsonSchema({"type": "array", "items": {"$ref": "#/components/schemas/Op"}})]


class QueryRequest(BaseModel):
    """A path expression to evaluate (spec dsl.md)."""

    model_config = _STRICT
    expr: NonBlank = Field(description="The path expression, e.g. \"root.actions.where(status = 'pending')\".")
    focus: str | None = Field(None, description="The node id that @ refers to.")
    params: dict[str, Any] | None = Field(None, description="Values for the $parameters of the query.")
    as_of: AsOf | None = Field(None, description="Evaluate on the state at this t, a snapshot name, or an ISO 8601 time (the last commit at or before it).")
    nodes: bool = Field(True, description="Include node payloads; false returns ids only.")


class ExplainRequest(BaseModel):
    model_config = _STRICT
    expr: NonBlank = Field(description="The path expression to plan.")
    physical: bool = Field(False, description="Also say how each step runs (the physical plan).")


class TransactionRequest(BaseModel):
    """A transaction file (formats.md): ops applied in order, all or nothing."""

    model_config = _STRICT
    author: str | None = None
    reason: str | None = None
    base_t: int_in(0, None) | None = Field(None, description="Refuse as a conflict if anything this touches changed after this t.")
    ops: Ops = Field(description="The operations, in order (each one discriminated by `op`).")
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
    max_items: int_in(1, 1000) | None = Field(None, description="Steps, entities and outcomes named in the text (default 8).")
    dry_run: bool = False


class RevertRequest(BaseModel):
    model_config = _STRICT
    t: Int = Field(ge=1, description="The commit to undo (a new commit is appended).")
    author: str | None = None
    reason: str | None = None


class SnapshotRequest(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1, max_length=200, description="Any name that is not a number.")
    t: int_in(0, None) | None = Field(None, description="The state to name (the current one by default).")


class LocateRequest(BaseModel):
    model_config = _STRICT
    text: NonBlank = Field(description="What the agent is about to do, in natural language.")
    tags: list[str] | None = None
    k: Int = Field(5, ge=1, le=100, description="How many matches, best first.")
    scenario: str | None = Field(None, description="Rank paths of this scenario first (with cross_scenario) or only.")
    cross_scenario: bool = Field(False, description="Also consider paths of other scenarios.")
    steps: list[str] | None = Field(None, description="Step names the agent has in mind (matched against paths' steps).")
    hops: int_in(0, 64) | None = Field(None, description="How far to expand from the paths found by text.")
    coarse: bool = Field(False, description="Coarse-to-fine: read the scenario summaries first, then rank only their paths.")
    scenarios: int_in(1, 1000) = Field(3, description="With coarse: how many scenarios to keep.")


class RewritePathRequest(BaseModel):
    model_config = _STRICT
    path_id: NonBlank
    steps: list[Any] = Field(min_length=1, description="The new steps in order, or edit ops (keep/change/add/remove).")
    reason: NonBlank = Field(description="Why the path changes (recorded in the history).")
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
    query: NonBlank = Field(description="The question or task, in natural language.")
    max_paths: Int = Field(3, ge=1, le=100)
    max_hops: int_in(1, 64) | None = Field(None, description="Accepted for the origin sketch; whole stored paths are ranked, so it has no effect.")
    tags: list[str] | None = None


class PathRewriteRequest(BaseModel):
    """The origin documents' ``POST /api/v1/memory/path/rewrite``."""

    model_config = _STRICT
    path_id: NonBlank
    feedback: NonBlank = Field(description="Why the path changes (recorded as the commit reason).")
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


# -- the other answers (every route has a response model: a generated client is typed) --------
# Documents that carry user data (nodes, attributes, changes) are open objects; the keys hgm
# always writes are listed.

_OPEN = ConfigDict(extra="allow")


class HealthModel(BaseModel):
    status: Literal["ok"]
    t: int = Field(description="The memory's current t.")
    nodes: int
    pid: int = Field(description="The server process that answered (one of several with --workers).")


class ExplainModel(BaseModel):
    query: str
    kind: Literal["nodes", "count", "exists", "paths"]
    params: list[str] = Field(description="The $parameters the query needs.")
    uses_focus: bool
    plan: str = Field(description="The optimized plan as text.")


class NodeModel(BaseModel):
    """A node: its id, its type and its attributes."""

    model_config = _OPEN
    id: str
    type: str


class HistoryEntryModel(BaseModel):
    model_config = _OPEN
    t: int
    author: str | None
    reason: str | None
    timestamp: float | None
    kind: str
    changes: list[dict[str, Any]]


class HistoryModel(BaseModel):
    node: str
    t: int
    history: list[HistoryEntryModel]


class HistoriesModel(BaseModel):
    t: int
    histories: dict[str, list[HistoryEntryModel]]


class DiffModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    from_: int = Field(alias="from")
    to: int
    changes: list[dict[str, Any]]


class CommitSummaryModel(BaseModel):
    model_config = _OPEN
    t: int
    author: str | None
    reason: str | None
    base_t: int | None
    timestamp: float | None
    kind: str
    changes: int | None = Field(description="How many changes (None for a genesis load).")
    fired_rules: list[str]


class ChangesModel(BaseModel):
    since: int
    t: int
    commits: list[CommitSummaryModel]
    changes: list[dict[str, Any]]


class CommitsModel(BaseModel):
    since: int
    t: int
    commits: list[CommitSummaryModel]
    more: bool = Field(description="Later commits were left out: ask again from the last t.")


class StaleEntryModel(BaseModel):
    model_config = _OPEN
    id: str
    type: str
    state: str = Field(description="needs_review or blocked.")
    marks: list[dict[str, Any]]


class StaleModel(BaseModel):
    t: int
    stale: list[StaleEntryModel]


class FrontierModel(BaseModel):
    goal: str
    t: int
    frontier: list[str]


class FocusPathModel(BaseModel):
    node: str
    path: list[str]


class FactModel(BaseModel):
    id: str
    content: Any = None
    valid_from: Any = None
    valid_to: Any = None
    holds: bool
    supersedes: list[str]
    superseded_by: list[str]
    reason: str | None = None


class FactsModel(BaseModel):
    id: str = Field(description="The entity.")
    at: str = Field(description="The valid time asked about.")
    holding: list[str] = Field(description="The facts that hold at it, in creation order.")
    facts: list[FactModel] = Field(description="Every fact about the entity, holding ones first.")
    more: int = Field(description="Facts not listed (beyond the limit).")
    t: int = Field(description="The state read.")


class SummarizeModel(BaseModel):
    id: str | None = Field(description="The summary node (None for a dry run).")
    t: int | None
    summary: dict[str, Any] | None = Field(description="The summary node as JSON.")
    report: dict[str, Any] = Field(description="The transaction report.")


class SnapshotsModel(BaseModel):
    snapshots: dict[str, int] = Field(description="Snapshot name -> t.")


class SnapshotModel(BaseModel):
    name: str
    t: int


class GraphModel(BaseModel):
    """A graph file (formats.md)."""

    model_config = _OPEN
    format: str
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


class LocateModel(BaseModel):
    """The localization result (formats.md): ``matches``, best first."""

    model_config = _OPEN
    matches: list[dict[str, Any]]


class CreatedReportModel(ReportModel):
    """A transaction report; ``created`` lists the ids of new nodes, ``path`` the new path version."""

    model_config = _OPEN
    created: list[str] | None = None
    path: str | None = None


class MemoryNodeModel(BaseModel):
    id: str
    t: int
    node: NodeModel
    report: ReportModel


class NamedTextModel(BaseModel):
    """A constraint or a rule set; ``broken`` (the error) when it does not compile and is inactive."""

    name: str
    text: Any
    broken: ErrorDetail | None = None


class ConstraintsModel(BaseModel):
    t: int
    constraints: list[NamedTextModel]


class ConstraintAddedModel(BaseModel):
    added: bool
    name: str
    text: str
    replaced: str | None = Field(description="The text it replaced (None: it is new).")


class ConstraintRemovedModel(BaseModel):
    removed: bool
    name: str
    text: Any


class ViolationModel(BaseModel):
    constraint: str
    node: str | None
    message: str


class ViolationsModel(BaseModel):
    t: int
    violations: list[ViolationModel]


class RuleSetsModel(BaseModel):
    t: int
    rule_sets: list[NamedTextModel]


class RulesLoadedModel(BaseModel):
    loaded: bool
    name: str
    constraints: list[str]
    triggers: list[str]
    propagations: list[str]


class RulesRemovedModel(BaseModel):
    removed: str


class IngestModel(BaseModel):
    """The ingest report (formats.md)."""

    model_config = _OPEN
    ingested: list[str]
    count: int
    t: int | None
    ts: list[int]
    problems: list[dict[str, Any]]
    skipped: list[Any]


class PathModel(BaseModel):
    """A stored path: goal, steps, edges, versions, counters (docs/paths.md)."""

    model_config = _OPEN
    id: str
    root: str
    goal: Any
    steps: list[dict[str, Any]]
    version: int
    current: bool


class PathsModel(BaseModel):
    t: int
    paths: list[dict[str, Any]]


class PathMetricsModel(BaseModel):
    model_config = _OPEN
    paths: int
    versions: int
    rewrites: int
    rollbacks: int
    guards: dict[str, Any]


class ProposalModel(BaseModel):
    """A validated LLM rewrite: the edit ops, the new steps, the reason and every attempt."""

    model_config = _OPEN
    path: str
    feedback: str
    model: str
    reason: str
    ops: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    attempts: list[dict[str, Any]]


class LLMRewriteModel(BaseModel):
    """Committed: the transaction report with ``path`` (the new version) and ``proposal``;
    with ``dry_run``: ``committed`` false, ``dry_run`` true and the ``proposal``."""

    model_config = _OPEN
    committed: bool
    proposal: ProposalModel
    dry_run: bool | None = None
    t: int | None = None
    path: str | None = None


class PlanModel(BaseModel):
    """The planner's step (planners.protocol.StepPlan): ops for one transaction, at most one
    tool call, whether the task is done; ``error`` when no valid answer came."""

    model_config = _OPEN
    ops: list[dict[str, Any]]
    reason: str | None
    calls: int
    tool: dict[str, Any] | None = None
    done: bool | None = None
    outcome: str | None = None
    error: dict[str, Any] | None = None


class PlannerStepModel(BaseModel):
    model_config = _OPEN
    plan: PlanModel
    focus: str | None = Field(description="Pass it to the next step.")
    last_t: int | None = Field(description="Pass it to the next step.")
    queries: list[dict[str, Any]] = Field(description="What the model read.")
    t: int = Field(description="The t the step read (the base_t of its ops).")
    report: ReportModel | None = Field(None, description="With commit: the report of the ops' transaction.")


# -- the requests of the other routes ----------------------------------------------------------


class ConstraintRequest(BaseModel):
    model_config = _STRICT
    name: NonBlank
    text: NonBlank = Field(description="each TYPE [where COND] must COND (docs/rules.md).")
    check_existing: bool = Field(True, description="Refuse (422, every violation) unless it holds now.")


class RulesRequest(BaseModel):
    model_config = _STRICT
    text: NonBlank = Field(description="A rule file: constraints, triggers, propagation (docs/rules.md).")
    name: NonBlank = Field("default", description="The rule set's name; a set of that name is replaced.")


class HistoriesRequest(BaseModel):
    model_config = _STRICT
    nodes: list[Id] = Field(min_length=1, max_length=1000, description="Node ids.")


class LoadRequest(BaseModel):
    model_config = _STRICT
    graph: dict[str, Any] = Field(description="A graph file (formats.md, format hgm-graph/1).")
    author: str | None = None
    reason: str | None = None


class IngestRequest(BaseModel):
    model_config = _STRICT
    trajectories: list[Any] = Field(min_length=1, description="Trajectories (formats.md): id, goal, steps, ...")
    skip_invalid: bool = Field(False, description="Store the good ones and list the others (else all or nothing).")
    author: str | None = None
    scenario: str | None = None
    reason: str | None = None


class OutcomeRequest(BaseModel):
    model_config = _STRICT
    path_id: NonBlank
    outcome: Literal["success", "failure"]
    reward: float | None = Field(None, ge=0, le=1, description="How well it went, in [0, 1].")
    author: str | None = None


class RollbackRequest(BaseModel):
    model_config = _STRICT
    path_id: NonBlank
    version: Annotated[Any, WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "minLength": 1}]})] = Field(
        description="The version to restore: its number or its path id."
    )
    author: str | None = None
    reason: str | None = None


class ResetRequest(BaseModel):
    model_config = _STRICT
    path_id: NonBlank
    author: str | None = None
    reason: str | None = None


class LLMRewriteRequest(BaseModel):
    model_config = _STRICT
    path_id: NonBlank
    feedback: NonBlank = Field(description="What went wrong or changed.")
    model: str | None = Field(None, description="The model (default: the server's).")
    attempts: int_in(1, 10) | None = Field(None, description="Requests to the model at most (the server may allow fewer).")
    author: str | None = Field(None, description="Who rewrites (default llm:MODEL).")
    dry_run: bool = Field(False, description="Return the validated proposal, commit nothing.")


class ToolCallModel(BaseModel):
    model_config = _STRICT
    name: NonBlank
    args: dict[str, Any] | None = None
    action: str | None = Field(None, description="The action node the call executes.")


class ObservationModel(BaseModel):
    """What happened since the last step (planners.protocol.Observation): the ``task``, a
    ``tool``'s answer (``call``, ``ok``, ``value`` or ``error``), or ``step-failed`` (the last
    step's ops were refused: ``error``)."""

    model_config = _STRICT
    kind: Literal["task", "tool", "step-failed"]
    text: str | None = None
    data: dict[str, Any] | None = None
    call: ToolCallModel | None = None
    ok: bool | None = None
    value: Any = None
    error: dict[str, Any] | None = None


class PlannerStepRequest(BaseModel):
    model_config = _STRICT
    task: NonBlank = Field(description="The request the run serves.")
    observation: ObservationModel | None = Field(None, description="What happened since the last step (default: the task).")
    focus: str | None = Field(None, description="The node the planner works on (from the previous step).")
    last_t: int_in(0, None) | None = Field(None, description="The t after the previous step (from its answer).")
    tools: list[Any] | None = Field(None, description="Tools the model may call: names or {name, description, args}.")
    max_repairs: Int = Field(1, ge=0, le=3)
    max_reads: Int = Field(2, ge=0, le=4)
    model: str | None = None
    commit: bool = Field(False, description="Commit the plan's ops at once (else the caller does).")
    author: str | None = None


class PurgeRequest(BaseModel):
    """What to forget, and why (docs/memories.md)."""

    model_config = _STRICT
    id: Id = Field(description="The node to purge (a node removed earlier may be purged too).")
    reason: NonBlank = Field(description="Why: kept in the tombstone.")
    subtree: bool = Field(False, description="Also every node below it (through parent_of).")
    author: str | None = None


class PurgeModel(BaseModel):
    """The tombstone commit."""

    model_config = _OPEN
    t: int
    kind: Literal["purge"]
    purged: list[str] = Field(description="The ids whose every trace was removed.")
    author: str | None
    reason: str | None


class SchemaDocumentRequest(BaseModel):
    """An hgm-schema/1 document (docs/formats.md); checked whole by the engine, which names
    every problem with its place."""

    model_config = ConfigDict(extra="allow")
    format: Literal["hgm-schema/1"]
    extends: Literal["default"] | None = Field(None, description="Add to the default schema instead of saying everything.")


class SchemaDocumentModel(BaseModel):
    model_config = _OPEN
    format: Literal["hgm-schema/1"]
    node_types: list[str]
    edge_types: list[str]
    relations: dict[str, Any]
    attribute_schemas: dict[str, Any]
    edge_rules: dict[str, Any]
    acyclic_edge_types: list[str]


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
        403: "The token does not reach this memory, or may only read it (forbidden)",
        404: "Unknown node, snapshot, path or memory",
        409: "Conflict with a commit after base_t, or a duplicate id",
        413: "Request body too large",
        415: "Body is not application/json",
        422: "Refused by constraints: the report lists every violation",
        423: "The path's lineage failed too often and waits for a person (needs-human: reset it)",
        429: "The path was rewritten too often (rewrite-cap)",
        501: "Not built into this engine, or the package offering it is not installed",
        502: "The model answered, but no answer was usable (invalid-model-answer; every attempt listed)",
        503: "No model or embedder reached (model-unavailable, embedder: none configured, connection, timeout), or overloaded; nothing was changed",
    }
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        model = RefusedReportModel if code == 422 else ErrorBody
        out[code] = {"model": model, "description": descriptions[code]}
    return out


# -- search: the node index (hgm_engine.retrieval; docs/search.md) ----------------------------


class SearchRequest(BaseModel):
    """Nodes whose text matches, most relevant first (search(TEXT), docs/search.md)."""

    model_config = _STRICT
    text: NonBlank = Field(description="What to look for, in words: 'hotel price', 'closed on Monday'.")
    type: str | None = Field(None, description="Only nodes of this type (goal, action, entity, fact, result).")
    limit: int_in(0, None) = Field(10, description="How many nodes at most (up to the server's max_search_hits, 1,000 by default).")
    as_of: AsOf | None = Field(None, description="Search the state at this t, or at a snapshot name.")


class SearchHitModel(BaseModel):
    """One node found: its score (the fused one with an embedder), the words of the text it
    contains, and with an embedder its cosine ``similarity`` and BM25 ``lexical`` score (None
    when it did not match that way)."""

    model_config = _OPEN
    id: str
    type: str
    score: float
    matched: list[str] = Field(description="The words of the text the node contains (by stem), in the text's order.")
    similarity: float | None = None
    lexical: float | None = None
    node: NodeModel


class SearchModel(BaseModel):
    """The hits of a search, most relevant first, and the state read."""

    query: str
    t: int
    hits: list[SearchHitModel]


class EmbedderModel(BaseModel):
    """The memory's embedder: its name and model, the size of its vectors, the similarity a
    text needs, how many vectors are kept (None: not read yet)."""

    model_config = _OPEN
    name: str
    model: str
    dimensions: int | None
    min_similarity: float
    vectors: int | None
    base_url: str | None = None


class IndexStatusModel(BaseModel):
    """What the node index holds: the t it is at, nodes with text, terms, how it was read
    (``stored``: from the store, ``built``: from the state), the fields it reads, the embedder."""

    model_config = _OPEN
    t: int
    nodes: int
    terms: int
    changed_entries: int
    kept_in_store: bool
    source: str
    open_seconds: float | None
    fields: list[str]
    embedder: EmbedderModel | None
    score: str
    last_problem: str | None


class IndexConfigRequest(BaseModel):
    """The memory's embedder for the node index: every node's text is embedded at once, in one
    transaction with the setting (an embedder that fails changes nothing)."""

    model_config = _STRICT
    embedder: str | None = Field(description="minilm, openai, openai:MODEL, or null for words only.")
    base_url: str | None = Field(None, description="An OpenAI-compatible endpoint (default: the server's OPENAI_BASE_URL).")
    min_similarity: float | None = Field(None, ge=-1, le=1, description="Cosine a text needs to match by meaning (default 0.35).")
