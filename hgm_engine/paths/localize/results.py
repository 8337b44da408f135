"""What :meth:`PathIndex.locate <hgm_engine.paths.localize.PathIndex.locate>` answers: a
:class:`LocateResult` of :class:`Match` es, best first; and the :data:`Expander` callback type
that brings it more candidates.

>>> result = LocateResult((), {"text": 0})
>>> result.to_json(), result.paths
({'matches': [], 'recalled': {'text': 0}}, [])
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

__all__ = ["Match", "LocateResult", "Expander"]

# expand(entry path ids) -> more candidate path ids (e.g. a walk through the memory graph).
Expander = Callable[[Sequence[str]], Iterable[str]]


@attrs.frozen
class Match:
    """One located result: a structure, the path that represents it and why it scored so.

    ``supporting`` lists the recalled paths that share the structure, best first (the
    representative ``path`` is the first); ``paths_with_structure`` counts every indexed path
    with it. ``breakdown`` holds every component of ``score`` plus the ``version`` factor.
    """

    path: str
    score: float
    goal: str
    steps: tuple[str, ...]
    breakdown: Mapping[str, float]
    supporting: tuple[str, ...]
    paths_with_structure: int
    status: str
    version: int
    structure: str

    def to_json(self) -> dict[str, Any]:
        """The match as in formats.md (``path``, ``score``, ``goal``, ``steps``, ``breakdown``) and more."""
        return {
            "path": self.path,
            "score": round(self.score, 6),
            "goal": self.goal,
            "steps": list(self.steps),
            "breakdown": {k: round(v, 6) for k, v in self.breakdown.items()},
            "supporting": list(self.supporting),
            "paths_with_structure": self.paths_with_structure,
            "status": self.status,
            "version": self.version,
            "structure": self.structure,
        }


@attrs.frozen
class LocateResult:
    """Matches best first, and how many candidates each recall channel brought; ``coarse``,
    for a coarse-to-fine locate, what its summary step chose and what the fine step ranked."""

    matches: tuple[Match, ...]
    recalled: Mapping[str, int]
    coarse: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"matches": [...]}`` as ``hgm locate --json`` prints it, with ``recalled`` beside
        (and ``coarse`` after a coarse-to-fine locate)."""
        doc = {"matches": [m.to_json() for m in self.matches], "recalled": dict(self.recalled)}
        if self.coarse is not None:
            doc["coarse"] = dict(self.coarse)
        return doc

    @property
    def paths(self) -> list[str]:
        """The ``path`` of each match, best first."""
        return [m.path for m in self.matches]
