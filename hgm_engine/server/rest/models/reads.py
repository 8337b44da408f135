"""The models of the routes that read a memory's nodes and history: nodes, histories, diffs,
commits, changes, stale nodes, frontiers, focus paths, facts, summaries, snapshots and the
origin documents' memory node.

>>> SnapshotRequest.model_validate({"name": "nightly"}).t is None
True
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hgm_engine.server.rest.models.common import Id, OPEN, ReportModel, STRICT, int_in

__all__ = ["SummarizeRequest", "SnapshotRequest", "MemoryNodeRequest", "NodeModel", "HistoryEntryModel", "HistoryModel", "HistoriesModel", "DiffModel", "CommitSummaryModel", "ChangesModel", "CommitsModel", "StaleEntryModel", "StaleModel", "FrontierModel", "FocusPathModel", "FactModel", "FactsModel", "SummarizeModel", "SnapshotsModel", "SnapshotModel", "MemoryNodeModel", "HistoriesRequest"]


class SummarizeRequest(BaseModel):
    model_config = STRICT
    id: str = Field(description="The scenario (or any node) whose subtree to roll up into one summary node.")
    author: str | None = None
    reason: str | None = None
    max_items: int_in(1, 1000) | None = Field(None, description="Steps, entities and outcomes named in the text (default 8).")
    dry_run: bool = False


class SnapshotRequest(BaseModel):
    model_config = STRICT
    name: str = Field(min_length=1, max_length=200, description="Any name that is not a number.")
    t: int_in(0, None) | None = Field(None, description="The state to name (the current one by default).")


class MemoryNodeRequest(BaseModel):
    """The origin documents' ``POST /api/v1/memory/node``: one node from free text."""

    model_config = STRICT
    content: str = Field(min_length=1)
    type: str = Field("fact", description="The node type (goal, action, entity, fact, result).")
    level: str | None = Field(None, description="Stored as the attribute 'level' (global / scenario / event).")
    session_id: str | None = Field(None, description="Stored as the attribute 'session_id'.")
    parent_id: str | None = Field(None, description="Put the node under this node (a parent_of edge).")
    id: str | None = Field(None, min_length=1, description="The new node's id (generated when absent).")
    metadata: dict[str, Any] | None = Field(None, description="Further attributes of the node.")
    author: str | None = None
    reason: str | None = None


class NodeModel(BaseModel):
    """A node: its id, its type and its attributes."""

    model_config = OPEN
    id: str
    type: str


class HistoryEntryModel(BaseModel):
    model_config = OPEN
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
    model_config = OPEN
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
    model_config = OPEN
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


class MemoryNodeModel(BaseModel):
    id: str
    t: int
    node: NodeModel
    report: ReportModel


class HistoriesRequest(BaseModel):
    model_config = STRICT
    nodes: list[Id] = Field(min_length=1, max_length=1000, description="Node ids.")
