"""The models of the LLM routes: a path rewrite by the server's model and one step of the
LLM planner.

>>> PlannerStepRequest.model_validate({"task": "Plan a trip"}).commit
False
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from hgm_engine.server.rest.models.common import Int, NonBlank, OPEN, ReportModel, STRICT, int_in

__all__ = ["ProposalModel", "LLMRewriteModel", "PlanModel", "PlannerStepModel", "LLMRewriteRequest", "ToolCallModel", "ObservationModel", "PlannerStepRequest"]


class ProposalModel(BaseModel):
    """A validated LLM rewrite: the edit ops, the new steps, the reason and every attempt."""

    model_config = OPEN
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

    model_config = OPEN
    committed: bool
    proposal: ProposalModel
    dry_run: bool | None = None
    t: int | None = None
    path: str | None = None


class PlanModel(BaseModel):
    """The planner's step (planners.protocol.StepPlan): ops for one transaction, at most one
    tool call, whether the task is done; ``error`` when no valid answer came."""

    model_config = OPEN
    ops: list[dict[str, Any]]
    reason: str | None
    calls: int
    tool: dict[str, Any] | None = None
    done: bool | None = None
    outcome: str | None = None
    error: dict[str, Any] | None = None


class PlannerStepModel(BaseModel):
    model_config = OPEN
    plan: PlanModel
    focus: str | None = Field(description="Pass it to the next step.")
    last_t: int | None = Field(description="Pass it to the next step.")
    queries: list[dict[str, Any]] = Field(description="What the model read.")
    t: int = Field(description="The t the step read (the base_t of its ops).")
    report: ReportModel | None = Field(None, description="With commit: the report of the ops' transaction.")


class LLMRewriteRequest(BaseModel):
    model_config = STRICT
    path_id: NonBlank
    feedback: NonBlank = Field(description="What went wrong or changed.")
    model: str | None = Field(None, description="The model (default: the server's).")
    attempts: int_in(1, 10) | None = Field(None, description="Requests to the model at most (the server may allow fewer).")
    author: str | None = Field(None, description="Who rewrites (default llm:MODEL).")
    dry_run: bool = Field(False, description="Return the validated proposal, commit nothing.")


class ToolCallModel(BaseModel):
    model_config = STRICT
    name: NonBlank
    args: dict[str, Any] | None = None
    action: str | None = Field(None, description="The action node the call executes.")


class ObservationModel(BaseModel):
    """What happened since the last step (planners.protocol.Observation): the ``task``, a
    ``tool``'s answer (``call``, ``ok``, ``value`` or ``error``), or ``step-failed`` (the last
    step's ops were refused: ``error``)."""

    model_config = STRICT
    kind: Literal["task", "tool", "step-failed"]
    text: str | None = None
    data: dict[str, Any] | None = None
    call: ToolCallModel | None = None
    ok: bool | None = None
    value: Any = None
    error: dict[str, Any] | None = None


class PlannerStepRequest(BaseModel):
    model_config = STRICT
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
