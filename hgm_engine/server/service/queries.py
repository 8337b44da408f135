"""The query verbs of the service: checking a query text against the server's limits before it
is compiled (:meth:`QueryVerbs.check_query`: length, repetition bounds, regular expressions),
running it (``query``, ``query_payloads``, with the small budget of a query answered on the
event loop) and ``explain``. The texts checked before are kept, so a repeated query is only
checked for its new parameter values.

>>> from hgm_engine import Memory
>>> QueryVerbs(Memory()).query("nodes.count()")["value"]
0
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Mapping

from hgm_engine.errors import QueryExecutionError
from hgm_engine.memory import Memory
from hgm_engine.query import Limits, parse
from hgm_engine.query import syntax as S
from hgm_engine.server.service.checks import fail, regex_hazard, syntax_nodes, t_or_name
from hgm_engine.server.service.core import ServiceCore
from hgm_engine.server.service.documents import node_document
from hgm_engine.server.service.endpoint import LLMEndpoint
from hgm_engine.server.service.limits import BudgetExceeded, ServerLimits, within_budget

__all__ = ["QueryVerbs"]


class QueryVerbs(ServiceCore):
    """Checking, running and explaining queries (see the module); it keeps the texts it
    checked (at most 256 of them, 64k characters together) and those whose budgeted run
    went over."""

    def __init__(self, memory: Memory, limits: ServerLimits | None = None, *, llm: LLMEndpoint | None = None):
        super().__init__(memory, limits, llm=llm)
        # Query texts compiled and checked before: text -> (compiled, names of regex parameters).
        # A budgeted run only takes these (it never compiles); entries are not reordered on use.
        self._known: OrderedDict[str, tuple[Any, tuple[str, ...]]] = OrderedDict()
        self._known_lock = threading.Lock()
        self._known_chars = 0
        # Texts whose budgeted run went over: skip the budget for their next runs.
        self._heavy: dict[str, int] = {}

    def check_query(self, expr: str, params: Mapping[str, Any] | None = None):
        """Compile ``expr`` (cached) after the service's limits; returns the compiled query.

        >>> from hgm_engine import Memory
        >>> from hgm_engine.server.service import MemoryService
        >>> MemoryService(Memory()).check_query("root.children{1,3}").params
        ()
        """
        limits = self.limits
        known = self._known.get(expr)
        if known is not None:  # checked before: only the parameter values are new
            compiled, regex_params = known
            for name in regex_params:
                value = (params or {}).get(name)
                if isinstance(value, str):
                    self._check_regex(value, f"${name}")
            return compiled
        if not isinstance(expr, str) or not expr.strip():
            raise fail("invalid-argument", "a query is a non-empty string")
        if len(expr) > limits.max_query_length:
            raise fail(
                "limit-exceeded", f"the query is {len(expr)} characters long; this server takes at most {limits.max_query_length}"
            )
        # The service's own limits are checked on the syntax tree before the query is compiled:
        # what this service refuses never enters the memory's compiled-query cache.
        for node in syntax_nodes(parse(expr, self.memory.limits)):
            if isinstance(node, S.RepeatStep):
                bound = max(node.lower, node.upper or 0)
                if bound > limits.max_repeat:
                    raise fail(
                        "limit-exceeded",
                        f"repetition bound {bound} is over this server's limit of {limits.max_repeat} "
                        "(use {m,} to follow a relation as deep as it goes)",
                    )
            elif isinstance(node, S.Compare) and node.op == "=~":
                if isinstance(node.right, S.Literal) and isinstance(node.right.value, str):
                    self._check_regex(node.right.value)
        try:
            compiled = self.memory.compile(expr)
        except RecursionError:
            raise fail("limit-exceeded", "the query is nested too deeply") from None
        except SyntaxError as exc:  # Python's own nesting limit, met by the generated code
            if "nested" not in str(exc):
                raise
            raise fail("limit-exceeded", "the query is nested too deeply") from None
        roles = compiled.param_roles  # a direct-path query has none: its stages are not run
        regex_params = tuple(name for name, role in roles.items() if "regex" in role)
        for name in regex_params:
            value = (params or {}).get(name)
            if isinstance(value, str):
                self._check_regex(value, f"${name}")
        with self._known_lock:  # 256 texts, 64k characters together (what they keep grows with their text)
            if expr not in self._known:
                self._known_chars += len(expr)
            self._known[expr] = (compiled, regex_params)
            while len(self._known) > 256 or self._known_chars > 65_536:
                dropped, _ = self._known.popitem(last=False)
                self._known_chars -= len(dropped)
        return compiled

    def _check_regex(self, pattern: str, what: str = "regular expression") -> None:
        hazard = regex_hazard(pattern, self.limits.max_regex_repeats)
        if hazard is not None:
            raise fail("limit-exceeded", f"{what} {pattern[:80]!r} is refused: {hazard} can backtrack without bound")

    def query(
        self,
        expr: str,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
        as_of: int | str | None = None,
        *,
        nodes: bool = True,
        budget: Limits | None = None,
    ) -> dict[str, Any]:
        """The query document of spec §6 plus ``t``, the state it read (``as_of`` or the
        ``t`` current when it started, so it is safe to use as ``base_t``). ``nodes=False``
        leaves out the node payloads (ids only).

        With a ``budget`` the query runs only if it is cheap for sure: its text was compiled
        before, it reads the current state, and it stays within the budget; otherwise
        :class:`BudgetExceeded` is raised and nothing was returned.

        >>> from hgm_engine import Memory
        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> s.query("nodes.count()", budget=Limits(max_work=10, timeout=0.01))
        Traceback (most recent call last):
        ...
        hgm_engine.server.service.limits.BudgetExceeded: not compiled yet
        >>> s.query("nodes.count()")["value"], s.query("nodes.count()", budget=Limits(10, 0.01))["value"]
        (0, 0)
        """
        doc, payloads = self.query_payloads(expr, focus, params, as_of, nodes=nodes, budget=budget)
        if payloads is not None:
            doc["nodes"] = [node_document(node) for node in payloads]
        return doc

    def query_payloads(
        self,
        expr: str,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
        as_of: int | str | None = None,
        *,
        nodes: bool = True,
        budget: Limits | None = None,
    ) -> tuple[dict[str, Any], tuple | None]:
        """:meth:`query` without building the ``nodes`` list: the document and, for a node
        result with ``nodes``, the result's frozen node payloads in order (else None). For a
        server that serializes payloads itself (the REST server caches each node's JSON).

        >>> from hgm_engine import Memory
        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> doc, payloads = s.query_payloads("root")
        >>> doc, [node.id for node in payloads]
        ({'kind': 'nodes', 'ids': ['g'], 't': 1}, ['g'])
        """
        as_of = t_or_name(as_of, "as_of")
        if budget is not None:
            if as_of is not None:
                raise BudgetExceeded("reads an earlier state")
            if expr not in self._known:
                raise BudgetExceeded("not compiled yet")
            if self._heavy.get(expr, 0) > 0:
                self._heavy[expr] -= 1  # try the budget again now and then: the data changes
                raise BudgetExceeded("went over the budget before")
            if self.memory.behind_store() and self.memory.refresh(wait=False) is None:
                raise BudgetExceeded("other processes committed since, and catching up would wait")
        else:
            self.fresh()
        self.check_query(expr, params)
        t = self.memory.t if as_of is None else self.resolve(as_of, "as_of")
        payloads = None
        with within_budget(budget):
            try:
                result = self._run(expr, focus, params, None if as_of is None else t)
                doc: dict[str, Any]
                if result.kind == "nodes":
                    doc = {"kind": "nodes", "ids": list(result.value)}
                    if nodes:
                        payloads = result.payloads()
                else:
                    doc = result.to_json()
            except QueryExecutionError as err:
                if budget is not None and err.category == "limit-exceeded":
                    if len(self._heavy) >= 256:
                        self._heavy.clear()
                    self._heavy[expr] = 50
                    raise BudgetExceeded(err.message) from None
                raise
        doc["t"] = t
        return doc, payloads

    def _run(self, expr, focus, params, as_of):
        try:
            return self.memory.query(expr, focus=focus, params=params, as_of=as_of)
        except RecursionError:
            raise fail("limit-exceeded", "the query is nested too deeply") from None

    def explain(self, expr: str, *, physical: bool = False) -> dict[str, Any]:
        """The optimized plan as text, with the query's parameters and result kind;
        ``physical`` adds how each step runs (``hgm explain --physical``)."""
        compiled = self.check_query(expr)
        return {
            "query": expr,
            "kind": compiled.kind,
            "params": list(compiled.params),
            "uses_focus": compiled.uses_focus,
            "plan": compiled.explain(physical=bool(physical)),
        }
