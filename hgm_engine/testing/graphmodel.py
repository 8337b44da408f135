"""The reference model's graph: two ordered dicts and nothing else.

``nodes`` maps an id to ``(type, attributes)`` and ``edges`` maps ``(from, to, type)`` to the
edge's attributes. Python dicts keep insertion order, and that order *is* creation order
(spec §1): a deleted and re-added node goes to the end, as a new node does. There are no
indexes: every question is answered by looking at every edge.

>>> g = ModelGraph.from_document({"format": "hgm-graph/1",
...     "nodes": [{"id": "g", "type": "goal"}, {"id": "a", "type": "action"}, {"id": "b", "type": "action"}],
...     "edges": [{"from": "g", "to": "b", "type": "parent_of", "order": 1},
...               {"from": "g", "to": "a", "type": "parent_of"}]})
>>> g.out_neighbours("g", ("parent_of",))
['b', 'a']
>>> g.document() == g.copy().document()
True
"""

from __future__ import annotations

import copy
from typing import Any, Iterable, Mapping

__all__ = ["ModelGraph", "EdgeKey", "is_number"]

EdgeKey = tuple  # (from, to, type)


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, never a boolean.

    >>> is_number(1), is_number(1.5), is_number(True)
    (True, True, False)
    """
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class ModelGraph:
    """Nodes and edges in creation order, as plain dicts (see the module docstring)."""

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[str, dict[str, Any]]] = {}
        self.edges: dict[EdgeKey, dict[str, Any]] = {}
        # Which creation each node and edge is (a re-created id is another node): a number
        # from ``births``, shared by every copy of the graph's history.
        self.born: dict[Any, int] = {}
        self.births = [0]

    # -- building -------------------------------------------------------------------------

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> "ModelGraph":
        """A graph from a graph document (``hgm-graph/1``), in file order; no checks.

        >>> ModelGraph.from_document({"nodes": [{"id": "x", "type": "fact", "v": 1}], "edges": []}).nodes
        {'x': ('fact', {'v': 1})}
        """
        graph = cls()
        for node in doc.get("nodes", ()):
            graph.add_node(node["id"], node["type"], {k: v for k, v in node.items() if k not in ("id", "type")})
        for edge in doc.get("edges", ()):
            graph.add_edge((edge["from"], edge["to"], edge["type"]), {k: v for k, v in edge.items() if k not in ("from", "to", "type")})
        return graph

    def _birth(self) -> int:
        self.births[0] += 1
        return self.births[0]

    def add_node(self, node_id: str, node_type: str, attributes: Mapping[str, Any]) -> None:
        """Create a node (at the end of creation order)."""
        self.nodes[node_id] = (node_type, copy.deepcopy(dict(attributes)))
        self.born[node_id] = self._birth()

    def add_edge(self, key: EdgeKey, attributes: Mapping[str, Any]) -> None:
        """Create an edge (at the end of creation order)."""
        self.edges[key] = copy.deepcopy(dict(attributes))
        self.born[("edge", *key)] = self._birth()

    def copy(self) -> "ModelGraph":
        """An independent copy (attribute values too).

        >>> g = ModelGraph(); g.add_node("x", "fact", {"tags": ["a"]})
        >>> h = g.copy(); h.nodes["x"][1]["tags"].append("b"); g.nodes["x"]
        ('fact', {'tags': ['a']})
        """
        other = ModelGraph()
        other.nodes = copy.deepcopy(self.nodes)
        other.edges = copy.deepcopy(self.edges)
        other.born = dict(self.born)
        other.births = self.births
        return other

    def document(self) -> dict[str, Any]:
        """The graph as a graph document: nodes and edges in creation order.

        >>> ModelGraph().document()
        {'format': 'hgm-graph/1', 'nodes': [], 'edges': []}
        """
        return {
            "format": "hgm-graph/1",
            "nodes": [self.node_json(node_id) for node_id in self.nodes],
            "edges": [self.edge_json(key) for key in self.edges],
        }

    def node_json(self, node_id: str) -> dict[str, Any]:
        """One node as a JSON object: ``id``, ``type``, then its attributes."""
        node_type, attributes = self.nodes[node_id]
        return {"id": node_id, "type": node_type, **copy.deepcopy(attributes)}

    def edge_json(self, key: EdgeKey) -> dict[str, Any]:
        """One edge as a JSON object: ``from``, ``to``, ``type``, then its attributes."""
        return {"from": key[0], "to": key[1], "type": key[2], **copy.deepcopy(self.edges[key])}

    def remove_node(self, node_id: str) -> None:
        """Drop a node and every edge that touches it.

        >>> g = ModelGraph(); g.add_node("x", "goal", {}); g.add_edge(("x", "x", "before"), {})
        >>> g.remove_node("x"); g.document()["edges"]
        []
        """
        for key in [k for k in self.edges if node_id in (k[0], k[1])]:
            self.remove_edge(key)
        del self.nodes[node_id]
        self.born.pop(node_id, None)

    def remove_edge(self, key: EdgeKey) -> None:
        """Drop one edge."""
        del self.edges[key]
        self.born.pop(("edge", *key), None)

    def same(self, other: "ModelGraph", key: Any) -> bool:
        """Whether a node id (or an edge key) names the same creation here and in ``other``."""
        born_key = key if isinstance(key, str) else ("edge", *key)
        return born_key in self.born and self.born.get(born_key) == other.born.get(born_key)

    # -- reading --------------------------------------------------------------------------

    def type_of(self, node_id: str) -> str:
        return self.nodes[node_id][0]

    def value(self, node_id: str, name: str) -> Any:
        """An attribute as a condition reads it: ``id`` and ``type`` too; None when missing."""
        node_type, attributes = self.nodes[node_id]
        if name == "id":
            return node_id
        if name == "type":
            return node_type
        return attributes.get(name)

    def _ordered(self, keys: Iterable[EdgeKey]) -> list[EdgeKey]:
        """Edge order (spec §1): a numeric ``order`` first, ascending; then the others; ties
        by creation order (the position in ``edges``)."""
        position = {key: i for i, key in enumerate(self.edges)}

        def rank(key: EdgeKey) -> tuple:
            order = self.edges[key].get("order")
            return (0, order, position[key]) if is_number(order) else (1, 0, position[key])

        return sorted(keys, key=rank)

    def out_edges(self, node_id: str, edge_types: Iterable[str] | None = None) -> list[EdgeKey]:
        """The node's outgoing edges (of ``edge_types``, or all) in edge order."""
        types = None if edge_types is None else set(edge_types)
        return self._ordered(k for k in self.edges if k[0] == node_id and (types is None or k[2] in types))

    def in_edges(self, node_id: str, edge_types: Iterable[str] | None = None) -> list[EdgeKey]:
        """The node's incoming edges (of ``edge_types``, or all) in edge order."""
        types = None if edge_types is None else set(edge_types)
        return self._ordered(k for k in self.edges if k[1] == node_id and (types is None or k[2] in types))

    def out_neighbours(self, node_id: str, edge_types: Iterable[str] | None = None) -> list[str]:
        """Targets of the outgoing edges, in edge order, each once."""
        return list(dict.fromkeys(k[1] for k in self.out_edges(node_id, edge_types)))

    def in_neighbours(self, node_id: str, edge_types: Iterable[str] | None = None) -> list[str]:
        """Sources of the incoming edges, in edge order, each once."""
        return list(dict.fromkeys(k[0] for k in self.in_edges(node_id, edge_types)))

    def reaches(self, start: str, goal: str, edge_type: str) -> bool:
        """Whether ``goal`` can be reached from ``start`` along edges of ``edge_type``
        (``start`` reaches itself).

        >>> g = ModelGraph(); g.add_edge(("a", "b", "before"), {})
        >>> g.reaches("a", "b", "before"), g.reaches("b", "a", "before")
        (True, False)
        """
        seen, stack = {start}, [start]
        while stack:
            current = stack.pop()
            if current == goal:
                return True
            for (source, target, kind) in self.edges:
                if source == current and kind == edge_type and target not in seen:
                    seen.add(target)
                    stack.append(target)
        return False
