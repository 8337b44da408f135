"""GraphView: what every readable view of a memory's graph offers.

Queries, constraints and the rule engine read a :class:`~hgm_engine.model.graph.MemoryGraph`
(the current state), a :class:`~hgm_engine.model.overlay.GraphOverlay` (a transaction's
state, or an earlier state: the current graph with later commits undone) or the empty view
before a genesis load, all through these methods.

>>> from hgm_engine.model.graph import MemoryGraph
>>> from hgm_engine.model.overlay import GraphOverlay
>>> graph = MemoryGraph()
>>> isinstance(graph, GraphView), isinstance(GraphOverlay(graph), GraphView)
(True, True)
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, Protocol, runtime_checkable

from hgm_engine.model.payloads import Adjacency, Edge, Node

__all__ = ["GraphView"]


@runtime_checkable
class GraphView(Protocol):
    """The read side of a graph: nodes by id and by type, edges, adjacency in edge order, the
    root goals and cycle search (for the acyclicity constraints).

    >>> from hgm_engine.model.graph import MemoryGraph
    >>> graph = MemoryGraph()
    >>> _ = graph.add_node("g", "goal", {})
    >>> def goals(view: GraphView) -> list[str]:
    ...     return list(view.ids_of_type("goal"))
    >>> goals(graph)
    ['g']
    """

    def __contains__(self, node_id: object) -> bool: ...

    def __len__(self) -> int: ...

    def node(self, node_id: str) -> Node | None:
        """The node's payload, or None."""
        ...

    def node_map(self) -> Mapping[str, Node]:
        """Id → payload for every node."""
        ...

    def nodes(self) -> Iterator[Node]: ...

    def ids_of_type(self, node_type: str) -> Iterable[str]: ...

    def nodes_of_type(self, node_type: str) -> Iterable[Node]: ...

    def count_of_type(self, node_type: str) -> int: ...

    def nodes_with(self, node_type: str, attribute: str, value: str) -> Iterable[Node]:
        """The nodes of ``node_type`` whose ``attribute`` is the string ``value``."""
        ...

    def roots(self) -> tuple[str, ...]:
        """The goals without a parent."""
        ...

    def edge(self, source: str, target: str, edge_type: str) -> Edge | None: ...

    def out_edges(self, node_id: str) -> list[Edge]: ...

    def in_edges(self, node_id: str) -> list[Edge]: ...

    def edges_of(self, node_id: str) -> list[Edge]:
        """Every edge touching the node: outgoing, then incoming, each in creation order."""
        ...

    def out_adjacency(self, node_id: str) -> Adjacency:
        """The node's outgoing neighbours by edge type, in edge order."""
        ...

    def in_adjacency(self, node_id: str) -> Adjacency: ...

    @property
    def last_node_seq(self) -> int: ...

    @property
    def last_edge_seq(self) -> int: ...

    def iter_edges(self) -> Iterable[Edge]:
        """Every edge, in no particular order."""
        ...

    def find_cycles(self, edge_types: Iterable[str]) -> dict[str, list[str] | None]:
        """For each edge type, the ids along one of its cycles, or None."""
        ...
