"""The read verbs of a memory — ``query``, ``explain``, ``compile``, ``view``, ``node``,
``export`` — over its state and history, with the compiled-query cache they share.

``Memory`` forwards these verbs here (``hgm_engine/facade.py``). A read holds the state's
read lock (:mod:`hgm_engine.txn.sync`) while it runs, so no commit is applied under it; the
node index (:class:`SearchVerbs`) is brought up to date first, since ``search(TEXT)`` and
``.rank(TEXT)`` read it.

>>> from hgm_engine import Memory
>>> m = Memory()
>>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal", "content": "Plan a trip"}]})
>>> m.query("root").ids, m.node("g")["content"], len(m.export()["nodes"])
(['g'], 'Plan a trip', 1)
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Mapping

from hgm_engine.model import GraphView, Node, Schema
from hgm_engine.query import CompiledQuery, QueryCache, QueryResult
from hgm_engine.query.plan import uses_search
from hgm_engine.retrieval.verbs import SearchVerbs
from hgm_engine.store import graph_document

__all__ = ["ReadVerbs"]


class ReadVerbs:
    """The read verbs of ``memory`` (a :class:`~hgm_engine.Memory`: its ``limits`` and
    ``resolve_t`` are read at each call, its ``state`` once) and the cache of compiled queries for
    its schema (:attr:`cache`; :meth:`use_schema` starts a new one). ``search`` is the
    memory's :class:`SearchVerbs`, whose node index a query may read."""

    def __init__(self, memory: Any, search: SearchVerbs, schema: Schema):
        self.memory = memory
        self.state = memory.state  # the memory's for its whole life
        # the state's read lock, held by every read (one context manager serves them all)
        self.reading = self.state.lock.reading()
        self.search = search
        self.cache = QueryCache(schema)

    def use_schema(self, schema: Schema) -> None:
        """Compile queries for ``schema`` from now on (the cached ones were for the old one)."""
        self.cache = QueryCache(schema)

    def compile(self, expr: str) -> CompiledQuery:
        """The compiled form of ``expr`` for this memory's schema (cached by text).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> m.compile("root.children") is m.compile("root.children")
        True
        """
        return self.cache.get(expr, self.memory.limits)

    @contextlib.contextmanager
    def view(self, as_of: int | str | None = None) -> Iterator[GraphView]:
        """The graph now, or ``as_of`` an earlier ``t``, snapshot name or ISO 8601 time, held
        still while inside (no commit is applied meanwhile); read it, never change it.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> with m.view(as_of=0) as before, m.view() as now:
        ...     before.node("g"), now.node("g").type
        (None, 'goal')
        """
        state = self.state
        with self.reading:
            yield state.graph if as_of is None else state.view_at(self.memory.resolve_t(as_of))

    def query(
        self,
        expr: str,
        *,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
        as_of: int | str | None = None,
    ) -> QueryResult:
        """Evaluate a path expression on the current state, or ``as_of`` an earlier ``t`` or a
        snapshot name. Errors are raised before anything runs.

        >>> from hgm_engine import Memory
        >>> Memory().query("nodes.count()").value
        0
        """
        memory = self.memory
        limits = memory.limits
        compiled = self.cache.get(expr, limits)
        state = self.state
        with self.reading:
            self.search.index.ensure()
            if as_of is None:  # the current state (what view_at gives for its t)
                t = state.t
                view = state.graph
            else:
                t = memory.resolve_t(as_of)
                view = state.view_at(t)
            return compiled.run(view, focus=focus, params=params, limits=limits, payloads=lambda ids: self._payloads(ids, t))

    def _payloads(self, ids: list[str], t: int) -> tuple[Node, ...]:
        """Node payloads as they were at ``t`` (for results read after later commits)."""
        state = self.state
        with self.reading:
            nodes = state.view_at(t).node_map()
            return tuple(nodes[i] for i in ids)

    def explain(self, expr: str, *, physical: bool = False) -> str:
        """The optimized plan of ``expr`` as text; ``physical`` adds how each step runs.

        >>> from hgm_engine import Memory
        >>> print(Memory().explain("#x.children").splitlines()[1])
        rules applied: id_lookup
        >>> print(Memory().explain("#x.children", physical=True).splitlines()[-1].strip())
        physical: one-type hop: one loop over out(parent_of) of all sources
        """
        compiled = self.cache.get(expr, self.memory.limits)
        text = compiled.explain(physical=physical)
        if uses_search(compiled.optimized_plan):
            text += f"\nindex: {self.search.index.describe()}"
        return text

    def node(self, node_id: str, *, as_of: int | str | None = None) -> dict[str, Any] | None:
        """One node as a JSON object, or None.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> m.node("g"), m.node("g", as_of=0)
        ({'id': 'g', 'type': 'goal'}, None)
        """
        with self.view(as_of) as view:
            node = view.node(node_id)
            return None if node is None else node.to_json()

    def export(self, *, as_of: int | str | None = None) -> dict[str, Any]:
        """The whole memory as a graph document (formats.md), now or at an earlier state.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> m.export(), m.export(as_of=0)["nodes"]
        ({'format': 'hgm-graph/1', 'nodes': [{'id': 'g', 'type': 'goal'}], 'edges': []}, [])
        """
        with self.view(as_of) as view:
            return graph_document(view)
