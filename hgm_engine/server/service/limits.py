"""What one request may ask of a shared memory (:class:`ServerLimits`), and the small budget a
query answered on the server's event loop runs under (:func:`within_budget`,
:class:`BudgetedLimits`, :class:`BudgetExceeded`).

>>> ServerLimits().max_query_length
4096
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator

import attrs

from hgm_engine.query import Limits

__all__ = ["ServerLimits", "BudgetExceeded", "BudgetedLimits", "within_budget"]

@attrs.frozen
class ServerLimits:
    """What one request may ask of a shared memory.

    ``max_body`` bytes per request body; ``max_query_length`` characters of query text;
    ``max_repeat`` the largest explicit bound in ``{m,n}`` (``{m,}`` stays allowed: it stops
    at the graph's depth and is charged like any step); ``max_regex_repeats`` unbounded
    quantifiers per regular expression; ``max_work`` nodes produced by one query's steps and
    ``timeout`` seconds per query (see :class:`~hgm_engine.query.executor.Limits`);
    ``max_ops`` operations per transaction; ``max_k`` matches per localization request;
    ``max_search_hits`` hits per search request;
    ``body_timeout`` seconds for a request's body to arrive once its headers have (None or 0:
    no limit); ``max_concurrency`` requests answered at once by one server process — counted
    from when a request's body is all there, so idle and slow connections do not count (None
    or 0: no limit).

    >>> ServerLimits().executor_limits().max_work
    2000000
    """

    max_body: int = 1 << 20
    max_query_length: int = 4096
    max_repeat: int = 100
    max_regex_repeats: int = 4
    max_work: int = 2_000_000
    timeout: float = 5.0
    max_ops: int = 10_000
    max_k: int = 100
    max_search_hits: int = 1_000
    inline_work: int = 50_000
    inline_timeout: float = 0.01
    body_timeout: float | None = 30.0
    max_concurrency: int | None = 64

    def executor_limits(self) -> Limits:
        return Limits(max_work=self.max_work, timeout=self.timeout)

    def inline_budget(self) -> Limits | None:
        """The budget of a query answered on the server's event loop (None: never inline)."""
        if self.inline_timeout <= 0 or self.inline_work <= 0:
            return None
        return Limits(max_work=self.inline_work, timeout=self.inline_timeout)


class BudgetExceeded(Exception):
    """A query run under a small budget needs more: run it again with the full limits."""


_budget: contextvars.ContextVar[Limits | None] = contextvars.ContextVar("hgm_query_budget", default=None)


class BudgetedLimits(Limits):
    """``memory.limits`` of a served memory: the budget of the current call when one is set
    (a context variable, so per thread and per task), the service's limits otherwise."""

    __slots__ = ("_full",)

    def __init__(self, full: Limits):  # noqa: D107 - max_work and timeout are shadowed below
        self._full = full
        for name in Limits.__slots__:  # any further limit the engine knows (regex_timeout)
            if name not in ("max_work", "timeout"):
                setattr(self, name, getattr(full, name))

    @property  # type: ignore[override]
    def max_work(self) -> int | None:
        return (_budget.get() or self._full).max_work

    @property  # type: ignore[override]
    def timeout(self) -> float | None:
        return (_budget.get() or self._full).timeout


@contextlib.contextmanager
def within_budget(budget: Limits | None) -> Iterator[None]:
    """Run the block under ``budget``: every :class:`BudgetedLimits` reads it in this thread or
    task until the block ends (None: the full limits, as outside any block).

    >>> limits = BudgetedLimits(Limits(max_work=1000, timeout=1.0))
    >>> with within_budget(Limits(max_work=10, timeout=0.01)):
    ...     inside = limits.max_work
    >>> inside, limits.max_work
    (10, 1000)
    """
    token = _budget.set(budget) if budget is not None else None
    try:
        yield
    finally:
        if token is not None:
            _budget.reset(token)
