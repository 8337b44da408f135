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
    read ``nodes`` (bound once per run) and ``view`` from here, and a hop's remembered answers
    through :meth:`hop`. Only what every run reads is set when it starts: the limits that
    only a regular expression or ``paths()`` asks for are read from ``limits`` when asked.

    >>> from hgm_engine.model import MemoryGraph
    >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {})
    >>> ctx = Context(g, {"s": "done"}, "a", DEFAULT_LIMITS)
    >>> list(ctx.nodes), ctx.params["s"], ctx.focus
    (['a'], 'done', 'a')
    """

    __slots__ = (
        "view", "nodes", "params", "focus", "work", "limits", "deadline", "ceiling", "regexes", "regex_left", "output",
        "members",
    )

    def __init__(self, view, params: Mapping[str, Any], focus: str | None, limits: Limits):
        self.view = view
        self.nodes = view.node_map()
        self.params = params
        self.focus = focus
        self.work = 0
        self.limits = limits
        # An operator charging work inline calls charge(0) only when the work passes the
        # ceiling (which stops it with charge's error): max_work, or -1 under a deadline (every
        # charge then looks at the clock, as charge does); None: nothing to check.
        if limits.timeout is None:
            self.deadline = None
            self.ceiling = limits.max_work
        else:
            self.deadline = time.monotonic() + limits.timeout
            self.ceiling = -1
        self.regexes: dict[str, Any] = {}  # parameter name -> its compiled pattern, this run
        # (attribute, string) -> the view's value members (MemoryGraph.value_members), read
        # once a run by a filter running as closures (conditions.interpreted); made when needed
        self.members: dict | None = None
        # (regex_left: the seconds all matches of this run may still take, and output: the node
        # ids put into the walks of paths() so far, are set by the first search and the first
        # charge_walks: most runs make neither)

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
        view = self.view
        remembered = getattr(view, "hop_memo", None)  # a graph remembers the answers
        if remembered is not None:
            memo, find = remembered(edge_type, node_type, outgoing)
            return memo.get, find
        adjacency, nodes = (view.out_adjacency if outgoing else view.in_adjacency), self.nodes
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
        timeout = self.limits.regex_timeout
        try:
            left = self.regex_left
        except AttributeError:  # the run's first match
            left = self.regex_left = self.limits.regex_budget
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
        max_work = self.limits.max_work
        if max_work is not None and self.work > max_work:
            raise QueryExecutionError(
                [Problem("limit-exceeded", f"the query produced more than {max_work} nodes in its steps")]
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
        output = self.output = getattr(self, "output", 0) + amount
        max_output = self.limits.max_output
        if max_output is not None and output > max_output:
            raise QueryExecutionError(
                [Problem("limit-exceeded", f"the walks of paths() would hold more than {max_output} node ids (Limits.max_output)")]
            )
        self.charge(amount)
