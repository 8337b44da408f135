"""What one run of a query carries: the view it reads, the focus, the parameters, and the
work and time it may still spend (:class:`Limits`).

>>> from hgm_engine.model import MemoryGraph
>>> ctx = Context(MemoryGraph(), {}, None, Limits(max_work=2))
>>> ctx.charge(2)
>>> ctx.charge(1)
Traceback (most recent call last):
  ...
hgm_engine.errors.QueryExecutionError: limit-exceeded: the query produced more than 2 nodes in its steps
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from hgm_engine.errors import Problem, QueryExecutionError

__all__ = ["Limits", "DEFAULT_LIMITS", "Context"]


class Limits:
    """How much work one query may do before it is stopped with ``limit-exceeded``.

    ``max_work`` counts the nodes a query reads: start lists, scanned candidates, filtered
    and navigated nodes. ``timeout`` (seconds) bounds the whole query; ``regex_timeout`` bounds
    one regular-expression match (a hostile pattern cannot hang the engine).

    >>> Limits(max_work=10).max_work
    10
    """

    __slots__ = ("max_work", "timeout", "regex_timeout")

    def __init__(
        self, max_work: int | None = 50_000_000, timeout: float | None = None, regex_timeout: float = 1.0
    ):
        self.max_work = max_work
        self.timeout = timeout
        self.regex_timeout = regex_timeout


DEFAULT_LIMITS = Limits()


class Context:
    """The state of one run: every operator receives it as ``ctx``.

    ``view`` is anything with ``node_map()``, ``ids_of_type()``, ``roots()``,
    ``out_adjacency()`` and ``in_adjacency()`` (a graph or a historical view); the operators
    read ``nodes``, ``out_adj`` and ``in_adj`` from here, bound once per run.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {})
    >>> ctx = Context(g, {"s": "done"}, "a", DEFAULT_LIMITS)
    >>> list(ctx.nodes), ctx.params["s"], ctx.focus
    (['a'], 'done', 'a')
    """

    __slots__ = (
        "view", "nodes", "out_adj", "in_adj", "params", "focus", "work", "max_work", "deadline", "regexes",
        "regex_timeout",
    )

    def __init__(self, view, params: Mapping[str, Any], focus: str | None, limits: Limits):
        self.view = view
        self.nodes = view.node_map()
        self.out_adj = view.out_adjacency
        self.in_adj = view.in_adjacency
        self.params = params
        self.focus = focus
        self.work = 0
        self.max_work = limits.max_work
        self.deadline = None if limits.timeout is None else time.monotonic() + limits.timeout
        self.regexes: dict[str, Any] = {}  # parameter name -> its compiled pattern, this run
        self.regex_timeout = limits.regex_timeout

    def search(self, pattern, value: str):
        """``pattern.search(value)`` within the regex and query time limits.

        >>> import regex
        >>> from hgm_engine.model import MemoryGraph
        >>> Context(MemoryGraph(), {}, None, DEFAULT_LIMITS).search(regex.compile("b+"), "abbc").group()
        'bb'
        """
        timeout = self.regex_timeout
        if self.deadline is not None:
            timeout = max(0.0, min(timeout, self.deadline - time.monotonic()))
        try:
            return pattern.search(value, timeout=timeout)
        except TimeoutError:
            raise QueryExecutionError(
                [Problem("limit-exceeded", f"a regular expression ran past its time limit ({timeout:.3g} s)")]
            ) from None

    def charge(self, amount: int) -> None:
        """Count ``amount`` nodes of work; stop the query past ``max_work`` or its deadline.

        >>> from hgm_engine.model import MemoryGraph
        >>> ctx = Context(MemoryGraph(), {}, None, DEFAULT_LIMITS)
        >>> ctx.charge(3); ctx.work
        3
        """
        self.work += amount
        if self.max_work is not None and self.work > self.max_work:
            raise QueryExecutionError(
                [Problem("limit-exceeded", f"the query produced more than {self.max_work} nodes in its steps")]
            )
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise QueryExecutionError([Problem("limit-exceeded", "the query ran past its time limit")])
