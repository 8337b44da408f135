"""The service's verbs over decision paths (docs/paths.md): ``locate``, ``ingest``, reading
paths and their counters, rewrites (full steps or edit ops), outcomes, rollbacks and resets.

>>> from hgm_engine import Memory
>>> PathVerbs(Memory()).paths()
{'t': 0, 'paths': []}
"""

from __future__ import annotations

from typing import Any

from hgm_engine.server.service.checks import check_text, fail, require_text
from hgm_engine.server.service.documents import created_document, report_document
from hgm_engine.server.service.core import ServiceCore

__all__ = ["PathVerbs"]


class PathVerbs(ServiceCore):
    """Stored decision paths (see the module)."""

    def locate(
        self,
        text: str,
        tags: list[str] | None = None,
        k: int = 5,
        *,
        scenario: str | None = None,
        cross_scenario: bool = False,
        steps: list[str] | None = None,
        hops: int | None = None,
        coarse: bool = False,
        scenarios: int | None = None,
        fuse: bool = False,
    ) -> dict[str, Any]:
        """Stored decision paths that fit ``text``: the localization result of formats.md.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
        >>> [match["path"] for match in s.locate("refund my order")["matches"]]
        ['r1']
        """
        if not isinstance(text, str) or not text.strip():
            raise fail("invalid-argument", "'text' must be a non-empty string")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= self.limits.max_k:
            raise fail("invalid-argument", f"'k' must be an integer from 1 to {self.limits.max_k}")
        if not isinstance(coarse, bool):
            raise fail("invalid-argument", "'coarse' must be true or false", "coarse")
        if scenarios is not None and (isinstance(scenarios, bool) or not isinstance(scenarios, int) or not 1 <= scenarios <= 1000):
            raise fail("invalid-argument", "'scenarios' must be an integer from 1 to 1000", "scenarios")
        if not isinstance(fuse, bool) or (fuse and not coarse):
            raise fail("invalid-argument", "'fuse' must be true or false, and true only with 'coarse'", "fuse")
        check_text(text=text, tags=tags, scenario=scenario, steps=steps)
        self.fresh()
        options: dict[str, Any] = {"scenario": scenario, "cross_scenario": cross_scenario, "steps": steps, "hops": hops}
        if coarse:  # summaries first, then the paths of the scenarios they choose (docs/time.md)
            options.update(coarse=True, scenarios=scenarios, fuse=fuse)
        return self.memory.locate(text, tags=tags, k=k, **options).to_json()

    def rewrite_path(
        self, path_id: str, steps: list[Any], reason: str | None = None, author: str | None = None
    ) -> dict[str, Any]:
        """A new version of a stored path (full steps or edit ops); the transaction report,
        with ``path``: the new version's id."""
        if not isinstance(path_id, str) or not path_id:
            raise fail("invalid-argument", "'path_id' must be a non-empty string")
        if not isinstance(steps, list) or not steps:
            raise fail("invalid-argument", "'steps' must be a non-empty list")
        check_text(path_id=path_id, steps=steps, reason=reason, author=author)
        return created_document(self.memory.rewrite_path(path_id, steps, reason or "rewrite", author=author))

    def rewrite_path_from_feedback(
        self, path_id: str, feedback: str, steps: list[Any], session_context: str | None = None
    ) -> dict[str, Any]:
        """The origin documents' path rewrite: :meth:`rewrite_path` with the user's
        ``feedback`` as the recorded reason, followed by the ``session_context`` when given.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
        >>> s.rewrite_path_from_feedback("r1", "ask first", [{"keep": 0}, {"add": "ask_user", "after": 0}, {"keep": 1}], "chat 7")["reason"].splitlines()
        ['ask first', 'context: chat 7']
        """
        check_text(feedback=feedback, session_context=session_context)
        reason = feedback if session_context is None else f"{feedback}\ncontext: {session_context}"
        return self.rewrite_path(path_id, steps, reason)

    def ingest(
        self,
        trajectories: list[Any],
        *,
        skip_invalid: bool = False,
        author: str | None = None,
        scenario: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Store trajectories (formats.md) as paths, all in one transaction: the ingest
        report. A refused ingest is a ``PathError`` whose document carries the report
        (``problems``: every trajectory that does not fit, and where); ``skip_invalid`` stores
        the good ones and lists the others.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> s.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])["ingested"]
        ['r1']
        """
        if not isinstance(trajectories, list) or not trajectories:
            raise fail("invalid-argument", "'trajectories' must be a non-empty list of trajectories", "trajectories")
        if len(trajectories) > self.limits.max_ops:
            raise fail("limit-exceeded", f"{len(trajectories)} trajectories; at most {self.limits.max_ops} per request", "trajectories")
        check_text(trajectories=trajectories, author=author, scenario=scenario, reason=reason)
        report = self.memory.ingest(trajectories, skip_invalid=skip_invalid, author=author, scenario=scenario, reason=reason or "ingest")
        return report.to_json()

    def path(self, path_id: str) -> dict[str, Any]:
        """One stored path with its steps, versions, counters and guards' state."""
        require_text("path_id", path_id)
        check_text(path_id=path_id)
        self.fresh()
        return self.memory.path(path_id)

    def paths(self, all_versions: bool = False) -> dict[str, Any]:
        """A summary of every path: its current version per lineage, or every version.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> MemoryService(Memory()).paths()
        {'t': 0, 'paths': []}
        """
        self.fresh()
        return {"t": self.memory.t, "paths": self.memory.paths(all_versions=bool(all_versions))}

    def path_metrics(self) -> dict[str, Any]:
        """Counters to watch (rewrites, versions per lineage, failure streaks, the guards, the
        path index)."""
        self.fresh()
        return self.memory.path_metrics()

    def record_outcome(
        self, path_id: str, outcome: str, *, reward: float | None = None, author: str | None = None
    ) -> dict[str, Any]:
        """Record a run of a path version: ``success`` or ``failure`` with an optional
        ``reward`` in [0, 1]; the transaction report."""
        require_text("path_id", path_id)
        if outcome not in ("success", "failure"):
            raise fail("bad-outcome", "'outcome' is 'success' or 'failure'", "outcome")
        check_text(path_id=path_id, author=author)
        return report_document(self.memory.record_outcome(path_id, outcome, reward=reward, author=author))

    def rollback_path(
        self, path_id: str, version: int | str, *, author: str | None = None, reason: str | None = None
    ) -> dict[str, Any]:
        """Make an older version current again (a new version copying its steps); the report
        with ``path``, the new version's id."""
        require_text("path_id", path_id)
        if isinstance(version, bool) or not isinstance(version, (int, str)) or version == "":
            raise fail("invalid-argument", "'version' is a version number or a version's path id", "version")
        check_text(path_id=path_id, version=version, author=author, reason=reason)
        report = self.memory.rollback_path(path_id, version, author=author, reason=reason)
        return created_document(report)

    def reset_path(self, path_id: str, *, author: str | None = None, reason: str | None = None) -> dict[str, Any]:
        """A human has looked: clear the lineage's ``needs_human`` and failure streak."""
        require_text("path_id", path_id)
        check_text(path_id=path_id, author=author, reason=reason)
        return report_document(self.memory.reset_path(path_id, author=author, reason=reason))
