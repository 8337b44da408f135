"""The models of the query routes (query, explain) and of ``/health``.

>>> QueryRequest.model_validate({"expr": "root"}).nodes
True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hgm_engine.server.rest.models.common import AsOf, NonBlank, STRICT

__all__ = ["QueryRequest", "ExplainRequest", "QueryResultModel", "HealthModel", "ExplainModel"]


class QueryRequest(BaseModel):
    """A path expression to evaluate (spec dsl.md)."""

    model_config = STRICT
    expr: NonBlank = Field(description="The path expression, e.g. \"root.actions.where(status = 'pending')\".")
    focus: str | None = Field(None, description="The node id that @ refers to.")
    params: dict[str, Any] | None = Field(None, description="Values for the $parameters of the query.")
    as_of: AsOf | None = Field(None, description="Evaluate on the state at this t, a snapshot name, or an ISO 8601 time (the last commit at or before it).")
    nodes: bool = Field(True, description="Include node payloads; false returns ids only.")


class ExplainRequest(BaseModel):
    model_config = STRICT
    expr: NonBlank = Field(description="The path expression to plan.")
    physical: bool = Field(False, description="Also say how each step runs (the physical plan).")


class QueryResultModel(BaseModel):
    kind: Literal["nodes", "count", "exists", "paths"]
    t: int
    ids: list[str] | None = None
    nodes: list[dict[str, Any]] | None = None
    value: int | bool | None = None
    paths: list[list[str]] | None = None


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
