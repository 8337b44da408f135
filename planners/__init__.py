"""Planners that read and write hgm memory at every step.

- :mod:`planners.protocol` — the :class:`Planner` protocol, the read-only :class:`MemoryView`,
  :class:`Observation`, :class:`StepPlan`, :class:`ToolCall`;
- :mod:`planners.loop` — the agent loop :func:`run`, its :class:`RunRecord` (JSON, replay);
- :mod:`planners.htn` — the HTN planner (callable methods or a JSON/YAML method table);
- :mod:`planners.llm` — the LLM planner (prompts as pure functions, a response schema);
- :mod:`planners.tools` — simulated tools with scripted failures;
- :mod:`planners.scenarios` — the origin scenarios end to end (``hgm demo NAME``).

``planners`` uses :mod:`hgm_engine`; the engine never imports ``planners``.

>>> import planners
>>> sorted(set(planners.__all__) - set(dir(planners)))
[]
"""

from planners.htn import Domain, DomainError, HTNPlanner, Method, Operator, TaskContext, load_domain
from planners.llm import LLMPlanner, ToolSpec
from planners.loop import FAILED_STATUSES, ReplayResult, RunRecord, StepRecord, replay, run
from planners.protocol import MemoryView, Observation, Planner, PreviewView, QueryRecord, StepPlan, ToolCall
from planners.tools import ToolError, Toolbox, ToolTimeout

__all__ = [
    "Planner",
    "MemoryView",
    "PreviewView",
    "Observation",
    "StepPlan",
    "ToolCall",
    "QueryRecord",
    "run",
    "replay",
    "RunRecord",
    "StepRecord",
    "ReplayResult",
    "FAILED_STATUSES",
    "HTNPlanner",
    "Domain",
    "DomainError",
    "Method",
    "Operator",
    "TaskContext",
    "load_domain",
    "LLMPlanner",
    "ToolSpec",
    "Toolbox",
    "ToolError",
    "ToolTimeout",
]
