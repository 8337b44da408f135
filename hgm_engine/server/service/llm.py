"""The service's verbs that ask the server's model (its
:class:`~hgm_engine.server.service.endpoint.LLMEndpoint`): ``llm_rewrite`` (a path rewrite
from feedback, validated by the engine) and ``planner_step`` (one step of the LLM planner).

>>> sorted(name for name in vars(LLMVerbs) if not name.startswith("_"))
['llm_rewrite', 'planner_step']
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.errors import TransactionRefused
from hgm_engine.llm import guard_refusal, propose_rewrite, rewrite_with_llm
from hgm_engine.server.service.checks import check_text, fail, require_text
from hgm_engine.server.service.core import ServiceCore
from hgm_engine.server.service.documents import report_document
from hgm_engine.server.service.endpoint import planner_entry

__all__ = ["LLMVerbs"]


class LLMVerbs(ServiceCore):
    """The service's verbs that ask the server's model (:class:`LLMEndpoint`): a path
    rewrite from feedback, one step of the LLM planner."""

    def llm_rewrite(
        self,
        path_id: str,
        feedback: str,
        *,
        model: str | None = None,
        attempts: int | None = None,
        author: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """``hgm rewrite`` as a service: the model configured on the server proposes a
        rewrite of ``path_id`` given ``feedback`` (:func:`hgm_engine.llm.propose_rewrite`: the
        engine's loop, each answer validated, an invalid one sent back, at most ``attempts``
        requests); a valid proposal is committed as a new version (the report, with
        ``proposal`` and ``path``), or only returned with ``dry_run``. No valid answer:
        :class:`~hgm_engine.errors.RewriteProposalError` (``invalid-model-answer``, 502, or
        ``model-unavailable``, 503) with every attempt, and nothing written. The storm guards
        refuse before the model is asked.

        >>> from hgm_engine import Memory
        >>> from hgm_engine.llm import ScriptedClient
        >>> from hgm_engine.server.service import LLMEndpoint, MemoryService
        >>> answer = '{"kept": [0], "changed": [], "added": [], "removed": [1], "reason": "refund at once"}'
        >>> s = MemoryService(Memory(), llm=LLMEndpoint(client=ScriptedClient([answer]), model="m"))
        >>> _ = s.memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
        >>> done = s.llm_rewrite("r1", "the policy check is not needed")
        >>> done["committed"], done["path"], done["proposal"]["steps"]
        (True, 'r1@v2', [{'name': 'check_policy'}])
        """
        require_text("path_id", path_id)
        require_text("feedback", feedback)
        check_text(path_id=path_id, feedback=feedback, model=model, author=author)
        llm = self.llm
        attempts = llm.attempts(attempts)
        self.fresh()
        path = self.memory.path(path_id)
        refusal = guard_refusal(self.memory, path)
        if refusal is not None:
            raise refusal
        proposal = propose_rewrite(
            path, feedback, client=llm.client(), model=model or llm.model, max_attempts=attempts, timeout=llm.timeout
        )
        if dry_run:
            return {"committed": False, "dry_run": True, "proposal": proposal.to_json()}
        report = rewrite_with_llm(self.memory, path_id, feedback, author=author, proposal=proposal)
        if report.violations:
            raise TransactionRefused(report)
        doc = report.to_json()
        if report.created:
            doc["path"] = report.created[0]
        doc["proposal"] = proposal.to_json()
        return doc

    def planner_step(self, request: Mapping[str, Any], *, commit: bool = False, author: str | None = None) -> dict[str, Any]:
        """One step of the LLM planner (package ``planners``, reached through the entry point
        group :data:`PLANNER_GROUP`: the engine never imports it): the model reads the memory
        with queries and answers with the ops of one transaction, at most one tool call and
        whether the task is done, each validated by the engine (queries compiled, ops dry-run).
        ``request`` holds ``task``, the ``observation`` (formats of ``planners.protocol``),
        ``focus``, ``last_t``, ``tools``; the answer holds the ``plan`` and what the next step
        needs (``focus``, ``last_t``). With ``commit`` the plan's ops are committed at once
        (``report``; ``base_t`` is the t the step read, so a change made meanwhile is a
        conflict); otherwise the caller commits them (``transact``) and runs the tool."""
        if not isinstance(request, Mapping):
            raise fail("invalid-argument", "a planner step request is a JSON object", "request")
        require_text("task", request.get("task"))
        check_text(request=dict(request), author=author)
        planner = planner_entry()
        llm = self.llm
        self.fresh()
        t = self.memory.t
        step = planner.step(self.memory, dict(request), client=llm.client(), model=request.get("model") or llm.model, timeout=llm.timeout)
        doc = dict(step)
        doc["t"] = t
        plan = doc.get("plan") or {}
        if commit and not plan.get("error") and plan.get("ops"):
            report = self.memory.apply(
                {"author": author or "llm-planner", "reason": plan.get("reason") or "planner step", "base_t": t, "ops": plan["ops"]}
            )
            doc["report"] = report_document(report)
        return doc
