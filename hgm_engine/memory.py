"""Memory: the object an agent holds — a graph, its schema, and the queries it answers.

>>> m = Memory.from_document({"format": "hgm-graph/1",
...     "nodes": [{"id": "trip", "type": "goal"},
...               {"id": "visit", "type": "action", "status": "pending"}],
...     "edges": [{"from": "trip", "to": "visit", "type": "parent_of"}]})
>>> r = m.query("root.actions.where(status = 'pending')")
>>> r.kind, r.ids
('nodes', ['visit'])
>>> m.query("root.descendants.count()").value
1
"""

from __future__ import annotations

import pathlib
from typing import Any, Mapping

from .graph import MemoryGraph
from .query import CompiledQuery, Limits, QueryCache, QueryResult
from .executor import DEFAULT_LIMITS
from .schema import DEFAULT_SCHEMA, Schema
from .store.graphfile import graph_from_document, read_graph_file

__all__ = ["Memory"]


class Memory:
    """A task memory: typed hierarchical graph plus schema, query cache and limits.

    ``Memory()`` is empty; use the named constructors to load one.
    """

    def __init__(self, schema: Schema = DEFAULT_SCHEMA, *, limits: Limits = DEFAULT_LIMITS):
        self.schema = schema
        self.limits = limits
        self._graph = MemoryGraph()
        self._cache = QueryCache(schema)

    # -- constructors -----------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | pathlib.Path, schema: Schema = DEFAULT_SCHEMA) -> "Memory":
        """A memory loaded from a graph file (formats.md); nothing is loaded if it has problems."""
        memory = cls(schema)
        memory._graph = read_graph_file(path, schema)
        return memory

    @classmethod
    def from_document(cls, doc: Mapping[str, Any], schema: Schema = DEFAULT_SCHEMA) -> "Memory":
        """A memory built from a graph document already parsed from JSON."""
        memory = cls(schema)
        memory._graph = graph_from_document(doc, schema)
        return memory

    # -- reading ------------------------------------------------------------------------------

    @property
    def graph(self) -> MemoryGraph:
        """The current graph (read it; change memory only through transactions)."""
        return self._graph

    def __len__(self) -> int:
        return len(self._graph)

    def compile(self, expr: str) -> CompiledQuery:
        """The compiled form of ``expr`` for this memory's schema (cached by text)."""
        return self._cache.get(expr)

    def query(
        self,
        expr: str,
        *,
        focus: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult:
        """Evaluate a path expression; errors are raised before anything runs.

        >>> m = Memory()
        >>> m.query("nodes.count()").value
        0
        """
        return self._cache.get(expr).run(self._graph, focus=focus, params=params, limits=self.limits)

    def explain(self, expr: str) -> str:
        """The optimized plan of ``expr`` as text.

        >>> print(Memory().explain("#x.children").splitlines()[1])
        rules applied: id_lookup
        """
        return self._cache.get(expr).explain()

    def node(self, node_id: str) -> dict[str, Any] | None:
        """One node as a JSON object, or None."""
        node = self._graph.node(node_id)
        return None if node is None else node.to_json()

    def export(self) -> dict[str, Any]:
        """The whole memory as a graph document (formats.md)."""
        return self._graph.to_document()
