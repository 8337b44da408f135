"""The LLM planner's step as JSON in, JSON out: what the REST and MCP servers offer.

The servers (``hgm_engine.server``) never import this package: they find :func:`step` through
the entry point group ``hgm.planners`` (``pyproject.toml``: ``llm = "planners.remote"``), as
``hgm demo NAME`` finds the scenarios. A step over a server is stateless: what
:class:`~planners.llm.LLMPlanner` keeps between steps (the task, the focus, the ``t`` of its
last step) travels in the request and comes back in the answer.

>>> from hgm_engine import Memory
>>> from hgm_engine.llm import ScriptedClient
>>> memory = Memory()
>>> client = ScriptedClient(['{"queries": [], "ops": [{"op": "add_node", "id": "g", "type": "goal",'
...     ' "content": "Say hi"}], "tool": null, "done": true, "outcome": "success", "reason": "nothing else to do"}'])
>>> doc = step(memory, {"task": "Say hi"}, client=client, model="m", timeout=5.0)
>>> doc["plan"]["ops"][0]["id"], doc["plan"]["done"], memory.t
('g', True, 0)
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.errors import Problem, RequestError

from planners.llm import LLMPlanner, ToolSpec
from planners.protocol import MemoryView, Observation

__all__ = ["step"]


def _tools(specs: Any) -> list[ToolSpec]:
    tools = []
    for spec in specs or []:
        if isinstance(spec, str):
            tools.append(ToolSpec(spec))
        elif isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
            args = spec.get("args") or {}
            tools.append(ToolSpec(spec["name"], str(spec.get("description") or ""), {str(k): str(v) for k, v in dict(args).items()}))
    return tools


def step(memory: Any, request: Mapping[str, Any], *, client: Any, model: str | None, timeout: float) -> dict[str, Any]:
    """One :meth:`LLMPlanner.step <planners.llm.LLMPlanner.step>` on ``memory``.

    ``request``: ``task`` (the request the run serves), ``observation`` (an
    :class:`~planners.protocol.Observation` document; the task itself when absent), ``focus``,
    ``last_t`` (the ``t`` after the previous step), ``tools`` (names, or ``{"name",
    "description", "args"}``), ``max_repairs`` and ``max_reads``. Returns ``plan`` (the
    :class:`~planners.protocol.StepPlan` document: ``ops``, ``tool``, ``done``, ``outcome``,
    ``reason``, ``calls``, or ``error`` when no valid answer came), ``focus`` and ``last_t`` for
    the next step, and ``queries`` (what the model read). Nothing is committed here.
    """
    planner = LLMPlanner(
        client=client,
        model=model,
        tools=_tools(request.get("tools")),
        max_repairs=int(request.get("max_repairs", 1)),
        max_reads=int(request.get("max_reads", 2)),
        timeout=timeout,
    )
    task = str(request["task"])
    planner.task = task
    planner.focus = request.get("focus")
    planner.last_t = request.get("last_t")
    observation = request.get("observation")
    try:
        observed = Observation.task(task) if observation is None else Observation.from_json(observation)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RequestError([Problem("invalid-argument", f"observation: not an observation ({type(exc).__name__}: {exc}); "
                                    "give kind (task, tool, step-failed) and its fields", where="observation")]) from None
    if observed.kind == "task" and planner.focus is not None:
        observed = Observation("task", observed.text or task, {**observed.data, "focus": planner.focus})
    view = MemoryView(memory)
    plan = planner.step(view, observed)
    return {
        "plan": plan.to_json(),
        "focus": planner.focus,
        "last_t": planner.last_t,
        "queries": [record.to_json() for record in view.log],
    }
