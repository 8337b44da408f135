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
from typing import Any, Callable, Mapping

from hgm_engine.errors import Problem, QueryExecutionError
from hgm_engine.query.limits import DEFAULT_LIMITS, Limits

__all__ = ["Limits", "DEFAULT_LIMITS", "Context"]

_NOTHING_REMEMBERED = {}.get  # the lookup of a view that remembers no hop: always a miss


class Context:
    """The state of one run: every operator receives it as ``ctx``.

    ``view`` is anything with ``node_map()``, ``ids_of_type()``, ``roots()``,
    ``out_adjacency()`` and ``in_adjacency()`` (a graph or a historical view); the operators
    read ``nodes``, ``out_adj`` and ``in_adj`` from here, bound once per run, and a hop's
    remembered answers through :meth:`hop`.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {})
    >>> ctx = Context(g, {"s": "done"}, "a", DEFAULT_LIMITS)
    >>> list(ctx.nodes), ctx.params["s"], ctx.focus
    (['a'], 'done', 'a')
    """

    __slots__ = (
        "view", "nodes", "out_adj", "in_adj", "_hop_memo", "params", "focus", "work", "max_work", "deadline", "regexes",
        "regex_timeout", "regex_left", "output", "max_output", "members", "ceiling",
    )

    def __init__(self, view, params: Mapping[str, Any], focus: str | None, limits: Limits):
        self.view = view
        self.nodes = view.node_map()
        self.out_adj = view.out_adjacency
        self.in_adj = view.in_adjacency
        self._hop_memo = getattr(view, "hop_memo", None)  # a graph remembers hops' answers
        self.params = params
        self.focus = focus
        self.work = 0
        self.max_work = limits.max_work
        self.deadline = None if limits.timeout is None else time.monotonic() + limits.timeout
        # An operator charging work inline calls charge(0) only when the work passes this
        # (which stops it with charge's error): max_work, or -1 under a deadline (every charge
        # then looks at the clock, as charge does); None: nothing to check.
        self.ceiling = -1 if self.deadline is not None else self.max_work
        self.regexes: dict[str, Any] = {}  # parameter name -> its compiled pattern, this run
        self.regex_timeout = limits.regex_timeout
        self.regex_left = limits.regex_budget  # seconds all matches of this run may still take
        self.output = 0
        self.max_output = limits.max_output
        # (attribute, string) -> the view's value members (MemoryGraph.value_members), read
        # once a run by a filter running as closures (conditions.interpreted); made when needed
        self.members: dict | None = None

    def hop(self, edge_type: str, node_type: str | None, outgoing: bool) -> tuple[Callable, Callable]:
        """``(get, find)`` for one hop (the other ends over ``edge_type``, of ``node_type``
        unless None, in edge order): a loop reads ``get(i)`` and calls ``find(i)`` only when
        it gives None. A graph remembers the answers by id (``MemoryGraph.hop_memo``);
        another view's ``get`` always misses and ``find`` reads its adjacency.

        >>> from hgm_engine.model import MemoryGraph
        >>> g = MemoryGraph(); _ = g.add_node("g", "goal", {}); _ = g.add_node("a", "action", {})
        >>> _ = g.add_edge("g", "a", "parent_of")
        >>> get, find = Context(g, {}, None, DEFAULT_LIMITS).hop("parent_of", "action", True)
        >>> get("g") or find("g")
        ('a',)
        """
        if self._hop_memo is not None:
            memo, find = self._hop_memo(edge_type, node_type, outgoing)
            return memo.get, find
        adjacency, nodes = (self.out_adj if outgoing else self.in_adj), self.nodes
        if node_type is None:
            return _NOTHING_REMEMBERED, lambda node_id: adjacency(node_id).by_type.get(edge_type, ())
        return _NOTHING_REMEMBERED, lambda node_id: adjacency(node_id).of_type(edge_type, node_type, nodes)

    def search(self, pattern, value: str):
        """``pattern.search(value)`` within the regex and query time limits: one match may
        take ``regex_timeout`` seconds, all the matches of the run ``regex_budget``.

        >>> import regex
        >>> from hgm_engine.model import MemoryGraph
        >>> Context(MemoryGraph(), {}, None, DEFAULT_LIMITS).search(regex.compile("b+"), "abbc").group()
        'bb'
        """
        timeout = self.regex_timeout
        left = self.regex_left
        if left is not None and left < timeout:
            timeout = max(0.0, left)
        started = time.monotonic()
        if self.deadline is not None:
            timeout = max(0.0, min(timeout, self.deadline - started))
        try:
            return pattern.search(value, timeout=timeout)
        except TimeoutError:
            if left is not None and timeout >= left:
                message = "the query's regular expressions together ran past their time budget (Limits.regex_budget)"
            else:
                message = f"a regular expression ran past its time limit ({timeout:.3g} s)"
            raise QueryExecutionError([Problem("limit-exceeded", message)]) from None
        finally:
            if left is not None:
                self.regex_left = left - (time.monotonic() - started)

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

    def charge_walks(self, amount: int) -> None:
        """Count ``amount`` node ids put into the walks of ``paths()``: they are work, and
        together they may not exceed ``max_output``.

        >>> from hgm_engine.model import MemoryGraph
        >>> ctx = Context(MemoryGraph(), {}, None, Limits(max_output=5))
        >>> ctx.charge_walks(5); ctx.work
        5
        >>> ctx.charge_walks(1)
        Traceback (most recent call last):
          ...
        hgm_engine.errors.QueryExecutionError: limit-exceeded: the walks of paths() would hold more than 5 node ids (Limits.max_output)
        """
        self.output += amount
        if self.max_output is not None and self.output > self.max_output:
            raise QueryExecutionError(
                [Problem("limit-exceeded", f"the walks of paths() would hold more than {self.max_output} node ids (Limits.max_output)")]
            )
        self.charge(amount)
