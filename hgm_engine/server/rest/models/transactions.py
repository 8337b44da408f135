"""The models of the routes that change a memory as a whole: the ops of a transaction (one
model per op, documented as a union discriminated by ``op``: :data:`Op`, :func:`op_schemas`),
transactions, confirm, revert, graph files (load and export) and purge.

>>> TransactionRequest.model_validate({"ops": [{"op": "add_node", "type": "goal"}]}).dry_run
False
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, WithJsonSchema

from hgm_engine.server.rest.models.common import Id, Int, NonBlank, OPEN, ReportModel, STRICT, int_in

__all__ = ["AddNodeOp", "UpdateNodeOp", "DeleteNodeOp", "AddEdgeOp", "UpdateEdgeOp", "DeleteEdgeOp", "ReplaceBranchOp", "ConfirmOp", "InvalidateOp", "Op", "OP_MODELS", "op_schemas", "Ops", "TransactionRequest", "ConfirmRequest", "RevertRequest", "GraphModel", "CreatedReportModel", "LoadRequest", "PurgeRequest", "PurgeModel"]


_OP_STRICT = ConfigDict(extra="forbid")


_OP_OPEN = ConfigDict(extra="allow")


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


class TransactionRequest(BaseModel):
    """A transaction file (formats.md): ops applied in order, all or nothing."""

    model_config = STRICT
    author: str | None = None
    reason: str | None = None
    base_t: int_in(0, None) | None = Field(None, description="Refuse as a conflict if anything this touches changed after this t.")
    ops: Ops = Field(description="The operations, in order (each one discriminated by `op`).")
    dry_run: bool = Field(False, description="Check everything, commit nothing.")


class ConfirmRequest(BaseModel):
    model_config = STRICT
    id: str = Field(description="The node whose staleness marks to clear.")
    author: str | None = None
    reason: str | None = None


class RevertRequest(BaseModel):
    model_config = STRICT
    t: Int = Field(ge=1, description="The commit to undo (a new commit is appended).")
    author: str | None = None
    reason: str | None = None


class GraphModel(BaseModel):
    """A graph file (formats.md)."""

    model_config = OPEN
    format: str
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


class CreatedReportModel(ReportModel):
    """A transaction report; ``created`` lists the ids of new nodes, ``path`` the new path version."""

    model_config = OPEN
    created: list[str] | None = None
    path: str | None = None


class LoadRequest(BaseModel):
    model_config = STRICT
    graph: dict[str, Any] = Field(description="A graph file (formats.md, format hgm-graph/1).")
    author: str | None = None
    reason: str | None = None


class PurgeRequest(BaseModel):
    """What to forget, and why (docs/memories.md)."""

    model_config = STRICT
    id: Id = Field(description="The node to purge (a node removed earlier may be purged too).")
    reason: NonBlank = Field(description="Why: kept in the tombstone.")
    subtree: bool = Field(False, description="Also every node below it (through parent_of).")
    author: str | None = None


class PurgeModel(BaseModel):
    """The tombstone commit."""

    model_config = OPEN
    t: int
    kind: Literal["purge"]
    purged: list[str] = Field(description="The ids whose every trace was removed.")
    author: str | None
    reason: str | None
