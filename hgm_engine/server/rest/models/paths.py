"""The models of the decision-path routes: locate, ingest, paths and their counters,
rewrites, outcomes, rollbacks, resets, and the origin documents' path routes.

>>> LocateRequest.model_validate({"text": "refund an order"}).k
5
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, WithJsonSchema

from hgm_engine.server.rest.models.common import Int, NonBlank, OPEN, STRICT, int_in

__all__ = ["LocateRequest", "RewritePathRequest", "PathRetrieveRequest", "PathRewriteRequest", "LocateModel", "IngestModel", "PathModel", "PathsModel", "PathMetricsModel", "IngestRequest", "OutcomeRequest", "RollbackRequest", "ResetRequest"]


class LocateRequest(BaseModel):
    model_config = STRICT
    text: NonBlank = Field(description="What the agent is about to do, in natural language.")
    tags: list[str] | None = None
    k: Int = Field(5, ge=1, le=100, description="How many matches, best first.")
    scenario: str | None = Field(None, description="Rank paths of this scenario first (with cross_scenario) or only.")
    cross_scenario: bool = Field(False, description="Also consider paths of other scenarios.")
    steps: list[str] | None = Field(None, description="Step names the agent has in mind (matched against paths' steps).")
    hops: int_in(0, 64) | None = Field(None, description="How far to expand from the paths found by text.")
    coarse: bool = Field(False, description="Coarse-to-fine: read the scenario summaries first, then rank only their paths.")
    scenarios: int_in(1, 1000) | None = Field(None, description="With coarse: how many scenarios to keep (default 3; 1 with fuse).")
    fuse: bool = Field(False, description="With coarse: leave no path out; re-rank the flat matches with the chosen scenarios' ranks.")


class RewritePathRequest(BaseModel):
    model_config = STRICT
    path_id: NonBlank
    steps: list[Any] = Field(min_length=1, description="The new steps in order, or edit ops (keep/change/add/remove).")
    reason: NonBlank = Field(description="Why the path changes (recorded in the history).")
    author: str | None = None


class PathRetrieveRequest(BaseModel):
    """The origin documents' ``POST /api/v1/memory/path/retrieve``."""

    model_config = STRICT
    query: NonBlank = Field(description="The question or task, in natural language.")
    max_paths: Int = Field(3, ge=1, le=100)
    max_hops: int_in(1, 64) | None = Field(None, description="Accepted for the origin sketch; whole stored paths are ranked, so it has no effect.")
    tags: list[str] | None = None


class PathRewriteRequest(BaseModel):
    """The origin documents' ``POST /api/v1/memory/path/rewrite``."""

    model_config = STRICT
    path_id: NonBlank
    feedback: NonBlank = Field(description="Why the path changes (recorded as the commit reason).")
    steps: list[Any] = Field(min_length=1, description="The corrected steps of the path, in order.")
    session_context: str | None = Field(None, description="Appended to the reason.")


class LocateModel(BaseModel):
    """The localization result (formats.md): ``matches``, best first."""

    model_config = OPEN
    matches: list[dict[str, Any]]


class IngestModel(BaseModel):
    """The ingest report (formats.md)."""

    model_config = OPEN
    ingested: list[str]
    count: int
    t: int | None
    ts: list[int]
    problems: list[dict[str, Any]]
    skipped: list[Any]


class PathModel(BaseModel):
    """A stored path: goal, steps, edges, versions, counters (docs/paths.md)."""

    model_config = OPEN
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
    model_config = OPEN
    paths: int
    versions: int
    rewrites: int
    rollbacks: int
    guards: dict[str, Any]


class IngestRequest(BaseModel):
    model_config = STRICT
    trajectories: list[Any] = Field(min_length=1, description="Trajectories (formats.md): id, goal, steps, ...")
    skip_invalid: bool = Field(False, description="Store the good ones and list the others (else all or nothing).")
    author: str | None = None
    scenario: str | None = None
    reason: str | None = None


class OutcomeRequest(BaseModel):
    model_config = STRICT
    path_id: NonBlank
    outcome: Literal["success", "failure"]
    reward: float | None = Field(None, ge=0, le=1, description="How well it went, in [0, 1].")
    author: str | None = None


class RollbackRequest(BaseModel):
    model_config = STRICT
    path_id: NonBlank
    version: Annotated[Any, WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "minLength": 1}]})] = Field(
        description="The version to restore: its number or its path id."
    )
    author: str | None = None
    reason: str | None = None


class ResetRequest(BaseModel):
    model_config = STRICT
    path_id: NonBlank
    author: str | None = None
    reason: str | None = None
