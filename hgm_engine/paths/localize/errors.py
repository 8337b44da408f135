"""The error raised by path localization (index, embedders, task-plan reader).

It is an :class:`~hgm_engine.errors.HGMError` like every other, with a category that callers
branch on: ``bad-path`` (a path record or trajectory that breaks the format), ``unknown-path``
(an id the index does not hold), ``duplicate-path``, ``bad-state`` (an index state that cannot
be restored), ``embedder`` (an embedder that is missing, mismatched or failed), ``bad-query``
and ``bad-data`` (an unreadable task-plan data set).

>>> err = LocalizationError.single("unknown-path", "no path 'p9' in the index", where="p9")
>>> (err.category, err.stage)
('unknown-path', 'localize')
"""

from __future__ import annotations

from hgm_engine.errors import HGMError

__all__ = ["LocalizationError"]


class LocalizationError(HGMError):
    """Raised by the path index, the embedders and the task-plan reader."""

    stage = "localize"
