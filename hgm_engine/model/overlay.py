"""GraphOverlay: a graph that differs from a base graph by a few changes, without copying it.

One mechanism serves two purposes. A transaction works on an overlay over the current graph,
so readers keep seeing the committed state and a refused transaction is simply dropped. A
historical state (``as_of(t)``) is an overlay over the current graph that undoes the commits
after ``t``. Either way the cost is proportional to the changes, never to the graph.

An overlay is a :class:`~hgm_engine.model.view.GraphView` like
:class:`~hgm_engine.model.graph.MemoryGraph` (``node_map``, ``ids_of_type``, ``roots``,
``out_adjacency``, ``in_adjacency``, ``find_cycles``, ...), so queries and constraints run on
it unchanged.

>>> from hgm_engine.model.graph import MemoryGraph
>>> base = MemoryGraph()
>>> _ = base.add_node("g", "goal", {}); _ = base.add_node("a", "action", {})
>>> _ = base.add_edge("g", "a", "parent_of")
>>> o = GraphOverlay(base)
>>> _ = o.add_node("b", "action", {"status": "pending"}); _ = o.add_edge("g", "b", "parent_of")
>>> o.out_adjacency("g").by_type["parent_of"], base.out_adjacency("g").by_type["parent_of"]
(('a', 'b'), ('a',))
>>> [c.kind for c in o.changes()]
['node_added', 'edge_added']
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

import attrs

from hgm_engine.model.graph import MemoryGraph
from hgm_engine.model.payloads import Adjacency, Edge, Node, slot_setters
from hgm_engine.model.values import EMPTY_ATTRS, freeze, same_json

__all__ = ["GraphOverlay", "Change", "apply_changes"]

_MISSING = object()


@attrs.frozen(init=False)
class Change:
    """One net change: ``kind`` is node_added/node_updated/node_removed or
    edge_added/edge_updated/edge_removed; ``before``/``after`` are payloads (None when absent)."""

    kind: str
    before: Node | Edge | None
    after: Node | Edge | None

    def __init__(self, kind: str, before: Node | Edge | None, after: Node | Edge | None) -> None:
        # the slots' setters, not object.__setattr__ per field as attrs' frozen __init__ (Node's)
        set_kind, set_before, set_after = _SET_CHANGE
        set_kind(self, kind)
        set_before(self, before)
        set_after(self, after)

    @property
    def node_id(self) -> str | None:
        payload = self.after if self.after is not None else self.before
        return payload.id if isinstance(payload, Node) else None

    @property
    def touched(self) -> tuple[str, ...]:
        """The node ids this change touches (an edge touches both ends)."""
        payload = self.after if self.after is not None else self.before
        if isinstance(payload, Node):
            return (payload.id,)
        return (payload.source, payload.target)

    def inverse(self) -> "Change":
        """The change that undoes this one."""
        kind = self.kind
        if kind.endswith("_added"):
            kind = kind.replace("_added", "_removed")
        elif kind.endswith("_removed"):
            kind = kind.replace("_removed", "_added")
        return Change(kind, self.after, self.before)


_SET_CHANGE = slot_setters(Change)  # kind, before, after


class _OverlayNodes(dict):
    """Id → Node for the overlay's own entries (None marks a removal); other ids fall back
    to the base. Iterates in creation order, merging the base order with the overlay's."""

    __slots__ = ("_base",)

    def __init__(self, base_nodes: Mapping[str, Node]):
        super().__init__()
        self._base = base_nodes

    def __missing__(self, key: str) -> Node:
        return self._base[key]

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        value = dict.get(self, key, _MISSING)
        if value is _MISSING:
            return self._base.get(key, default)
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        value = dict.get(self, key, _MISSING)
        if value is _MISSING:
            return key in self._base
        return value is not None

    def __len__(self) -> int:
        size = len(self._base)
        for key, value in dict.items(self):
            in_base = key in self._base
            if value is None and in_base:
                size -= 1
            elif value is not None and not in_base:
                size += 1
        return size

    def own_items(self):
        return dict.items(self)

    def merged(self, base_ids, keep=lambda node: True) -> Iterator[str]:
        """``base_ids`` (in creation order) with this overlay's entries applied, in order."""
        own = sorted(
            (node.seq, node_id) for node_id, node in dict.items(self) if node is not None and keep(node)
        )
        base_nodes = self._base
        position = 0
        for node_id in base_ids:
            if dict.__contains__(self, node_id):
                continue  # removed here, or its overlay version is merged from ``own``
            if position < len(own):
                seq = base_nodes[node_id].seq
                while position < len(own) and own[position][0] < seq:
                    yield own[position][1]
                    position += 1
            yield node_id
        for _, node_id in own[position:]:
            yield node_id

    def __iter__(self) -> Iterator[str]:
        return self.merged(self._base.keys())

    def keys(self):  # type: ignore[override]
        return list(iter(self))

    def values(self):  # type: ignore[override]
        return [self[k] for k in self]

    def items(self):  # type: ignore[override]
        return [(k, self[k]) for k in self]


class GraphOverlay:
    """A mutable view of ``base`` plus changes. The base is never modified."""

    def __init__(self, base: MemoryGraph):
        self.base = base
        self._base_nodes = base.node_map()
        self._nodes = _OverlayNodes(self._base_nodes)
        self._added_edges: dict[tuple[str, str, str], Edge] = {}
        # The added edges again, by source and by target (so a node's edges cost its degree).
        self._added_out: dict[str, dict[tuple[str, str, str], Edge]] = {}
        self._added_in: dict[str, dict[tuple[str, str, str], Edge]] = {}
        self._type_ids: dict[str, list[str]] = {}  # merged per-type ids, valid until a change
        self._type_counts: dict[str, int] = {}
        self._removed_edges: dict[tuple[str, str, str], Edge] = {}
        self._out_touched: set[str] = set()
        self._in_touched: set[str] = set()
        self._out_cache: dict[str, Adjacency] = {}
        self._in_cache: dict[str, Adjacency] = {}
        self._types_touched: set[str] = set()
        self._roots: tuple[str, ...] | None = None
        self._node_seq = base.last_node_seq
        self._edge_seq = base.last_edge_seq
        self.version = 0
        self._net: tuple[tuple[int, int], list[Change]] | None = None  # changes() at (version, base's version)

    # -- read protocol ------------------------------------------------------------------------

    def node_map(self) -> Mapping[str, Node]:
        return self._nodes

    def node(self, node_id: str) -> Node | None:
        return self._nodes.get(node_id)

    def __contains__(self, node_id: object) -> bool:
        # _OverlayNodes.__contains__, inlined (asked for every id an op names)
        value = dict.get(self._nodes, node_id, _MISSING)
        if value is _MISSING:
            return node_id in self._base_nodes
        return value is not None

    def __len__(self) -> int:
        return len(self._nodes)

    def nodes(self) -> Iterator[Node]:
        nodes = self._nodes
        return (nodes[node_id] for node_id in nodes)

    def ids_of_type(self, node_type: str):
        if node_type not in self._types_touched:
            return self.base.ids_of_type(node_type)
        ids = self._type_ids.get(node_type)
        if ids is None:
            ids = list(self._nodes.merged(self.base.ids_of_type(node_type), lambda n: n.type == node_type))
            self._type_ids[node_type] = ids
        return ids

    def nodes_of_type(self, node_type: str):
        nodes = self._nodes
        return [nodes[node_id] for node_id in self.ids_of_type(node_type)]

    def nodes_with(self, node_type: str, attribute: str, value: str) -> list[Node]:
        """Nodes of ``node_type`` whose ``attribute`` is ``value`` (scans; views are small-lived)."""
        if node_type not in self._types_touched:
            return list(self.base.nodes_with(node_type, attribute, value))
        return [node for node in self.nodes_of_type(node_type) if node.attrs.get(attribute) == value]

    def count_of_type(self, node_type: str) -> int:
        if node_type not in self._types_touched:
            return self.base.count_of_type(node_type)
        cached = self._type_counts.get(node_type)
        if cached is not None:
            return cached
        base = self.base.node_map()
        count = self.base.count_of_type(node_type)
        for node_id, node in self._nodes.own_items():
            old = base.get(node_id)
            if old is not None and old.type == node_type:
                count -= 1
            if node is not None and node.type == node_type:
                count += 1
        self._type_counts[node_type] = count
        return count

    def roots(self) -> tuple[str, ...]:
        if self._roots is None:
            self._roots = tuple(
                node_id
                for node_id in self.ids_of_type("goal")
                if not self.in_adjacency(node_id).by_type.get("parent_of")
            )
        return self._roots

    def edge(self, source: str, target: str, edge_type: str) -> Edge | None:
        key = (source, target, edge_type)
        added = self._added_edges.get(key)
        if added is not None:
            return added
        if key in self._removed_edges:
            return None
        if source not in self or target not in self:
            return None
        return self.base.edge(source, target, edge_type)

    def out_edges(self, node_id: str) -> list[Edge]:
        if node_id not in self._out_touched:  # added and removed nodes are always touched
            return self.base.out_edges(node_id)
        edges = [e for e in self.base.out_edges(node_id) if e.key not in self._removed_edges]
        edges.extend(self._added_out.get(node_id, {}).values())
        return edges

    def in_edges(self, node_id: str) -> list[Edge]:
        if node_id not in self._in_touched:
            return self.base.in_edges(node_id)
        edges = [e for e in self.base.in_edges(node_id) if e.key not in self._removed_edges]
        edges.extend(self._added_in.get(node_id, {}).values())
        return edges

    def edges_of(self, node_id: str) -> list[Edge]:
        out = sorted(self.out_edges(node_id), key=lambda e: e.seq)
        inc = sorted((e for e in self.in_edges(node_id) if e.source != node_id), key=lambda e: e.seq)
        return out + inc

    def out_adjacency(self, node_id: str) -> Adjacency:
        if node_id not in self._out_touched:
            return self.base.out_adjacency(node_id)
        adjacency = self._out_cache.get(node_id)
        if adjacency is None:
            adjacency = self._out_cache[node_id] = Adjacency(self.out_edges(node_id), True)
        return adjacency

    def in_adjacency(self, node_id: str) -> Adjacency:
        if node_id not in self._in_touched:
            return self.base.in_adjacency(node_id)
        adjacency = self._in_cache.get(node_id)
        if adjacency is None:
            adjacency = self._in_cache[node_id] = Adjacency(self.in_edges(node_id), False)
        return adjacency

    @property
    def last_node_seq(self) -> int:
        return self._node_seq

    @property
    def last_edge_seq(self) -> int:
        return self._edge_seq

    def iter_edges(self) -> Iterable[Edge]:
        """Every edge of the state, in no particular order.

        >>> g = MemoryGraph(); _ = g.add_node("a", "goal", {}); _ = g.add_node("b", "action", {})
        >>> o = GraphOverlay(g); _ = o.add_edge("a", "b", "parent_of")
        >>> [edge.key for edge in o.iter_edges()]
        [('a', 'b', 'parent_of')]
        """
        removed, added = self._removed_edges, self._added_edges
        for edge in self.base.iter_edges():
            if edge.key not in removed and edge.key not in added:
                yield edge
        yield from added.values()

    def find_cycles(self, edge_types: Iterable[str]) -> dict[str, list[str] | None]:
        """For each edge type, the ids along one of its cycles in this state, or None.

        >>> base = MemoryGraph()
        >>> for node_id in "ab":
        ...     _ = base.add_node(node_id, "action", {})
        >>> _ = base.add_edge("a", "b", "before", {})
        >>> overlay = GraphOverlay(base)
        >>> _ = overlay.add_edge("b", "a", "before", {})
        >>> overlay.find_cycles(["before"]), base.find_cycles(["before"])
        ({'before': ['a', 'b']}, {'before': None})
        """
        edge_types = tuple(edge_types)
        wanted = set(edge_types)
        edges = [edge for node_id in self._nodes for edge in self.out_edges(node_id) if edge.type in wanted]
        return MemoryGraph.from_payloads(list(self.nodes()), edges).find_cycles(edge_types)

    # -- changing -----------------------------------------------------------------------------

    def _changed(self) -> None:
        self.version += 1
        self._roots = None
        if self._type_ids:
            self._type_ids.clear()
        if self._type_counts:
            self._type_counts.clear()

    def add_node(self, node_id: str, node_type: str, attributes: Mapping[str, Any], *, checked: bool = False) -> Node:
        """Add a node (a KeyError when ``node_id`` is taken; ``checked``: the caller has just
        made sure it is not, and it is not asked again)."""
        if not checked and node_id in self:
            raise KeyError(f"node {node_id!r} already exists")
        self._node_seq += 1
        node = Node(node_id, node_type, freeze(attributes) if attributes else EMPTY_ATTRS, self._node_seq)
        self._place_node(node)  # its id checked above
        return node

    def restore_node(self, node: Node) -> None:
        """Put a node payload in place as it is (its creation number too)."""
        if node.id in self._nodes:
            raise KeyError(f"node {node.id!r} already exists")
        self._place_node(node)

    def _place_node(self, node: Node) -> None:
        dict.__setitem__(self._nodes, node.id, node)
        self._types_touched.add(node.type)
        # A node re-created under an old id must not inherit the old node's base edges.
        self._touch_edges(node.id, node.id)
        self._changed()

    def set_node_attrs(self, node_id: str, attributes: Mapping[str, Any]) -> Node:
        old = self._nodes[node_id]
        node = Node(node_id, old.type, freeze(attributes) if attributes else EMPTY_ATTRS, old.seq)
        dict.__setitem__(self._nodes, node_id, node)
        self._changed()
        return node

    def put_node(self, node: Node) -> None:
        """Replace an existing node's payload by ``node`` (same id), e.g. to undo an update."""
        if node.id not in self._nodes:
            raise KeyError(node.id)
        dict.__setitem__(self._nodes, node.id, node)
        self._types_touched.add(node.type)
        self._changed()

    def remove_node(self, node_id: str) -> list[Edge]:
        node = self._nodes.get(node_id)
        if node is None:
            raise KeyError(node_id)
        removed = self.edges_of(node_id)
        for edge in removed:
            self._drop_edge(edge)
        dict.__setitem__(self._nodes, node_id, None)
        self._types_touched.add(node.type)
        self._touch_edges(node_id, node_id)
        self._changed()
        return removed

    def add_edge(
        self, source: str, target: str, edge_type: str, attributes: Mapping[str, Any] | None = None, *, checked: bool = False
    ) -> Edge:
        """Add an edge between two nodes of the overlay (a KeyError when an end is missing or the
        edge exists; ``checked``: the caller has just made sure of both, and they are not asked
        again — the transaction's ops look up the ends and the edge themselves).

        >>> o = GraphOverlay(MemoryGraph()); _ = o.add_node("g", "goal", {}); _ = o.add_node("a", "action", {})
        >>> o.add_edge("g", "a", "parent_of", checked=True) == o.edge("g", "a", "parent_of")
        True
        >>> o.add_edge("g", "a", "parent_of")
        Traceback (most recent call last):
        ...
        KeyError: "edge 'g' -parent_of-> 'a' already exists"
        """
        key = (source, target, edge_type)
        if not checked:
            for end in (source, target):
                if end not in self:
                    raise KeyError(f"node {end!r} does not exist")
            # both ends are here: self.edge() without asking for them again
            if key in self._added_edges or (key not in self._removed_edges and self.base.edge(source, target, edge_type) is not None):
                raise KeyError(f"edge {source!r} -{edge_type}-> {target!r} already exists")
        self._edge_seq += 1
        edge = Edge(source, target, edge_type, freeze(attributes) if attributes else EMPTY_ATTRS, self._edge_seq)
        self._place_edge(edge)  # its key checked above
        return edge

    def restore_edge(self, edge: Edge) -> None:
        """Put an edge payload in place as it is (its creation number too)."""
        if self.edge(*edge.key) is not None:
            raise KeyError(f"edge {edge.key!r} already exists")
        self._place_edge(edge)

    def _place_edge(self, edge: Edge) -> None:
        key = edge.key
        base_edge = self._removed_edges.get(key)
        # equal payloads may still differ as JSON (True == 1 in Python): only the same JSON is
        # the base's own edge again
        if base_edge is not None and base_edge == edge and same_json(base_edge.attrs, edge.attrs):
            del self._removed_edges[key]  # back to the base's own edge
        else:
            self._added_edges[key] = edge
            self._added_out.setdefault(edge.source, {})[key] = edge
            self._added_in.setdefault(edge.target, {})[key] = edge
        self._touch_edges(edge.source, edge.target)
        self._changed()

    def remove_edge(self, source: str, target: str, edge_type: str) -> Edge:
        edge = self.edge(source, target, edge_type)
        if edge is None:
            raise KeyError(f"edge {source!r} -{edge_type}-> {target!r} does not exist")
        self._drop_edge(edge)
        self._changed()
        return edge

    def set_edge_attrs(self, source: str, target: str, edge_type: str, attributes: Mapping[str, Any]) -> Edge:
        old = self.remove_edge(source, target, edge_type)
        edge = Edge(source, target, edge_type, freeze(attributes) if attributes else EMPTY_ATTRS, old.seq)
        self._place_edge(edge)  # just removed: not there
        return edge

    def _drop_edge(self, edge: Edge) -> None:
        key = edge.key
        if key in self._added_edges:
            del self._added_edges[key]
            del self._added_out[edge.source][key]
            del self._added_in[edge.target][key]
        else:
            self._removed_edges[key] = edge
        self._touch_edges(edge.source, edge.target)

    def _touch_edges(self, source: str, target: str) -> None:
        """An edge ``source -> target`` changed: the outgoing edges of ``source`` and the
        incoming ones of ``target`` are no longer the base's (a node's own change passes its id
        as both). The other two directions stay the base's, and so do their adjacencies."""
        self._out_touched.add(source)
        self._in_touched.add(target)
        self._out_cache.pop(source, None)
        self._in_cache.pop(target, None)

    def undo_later(self, changes: list[Change]) -> None:
        """Keep showing the same earlier state after ``changes`` were applied to the base.

        A historical view pins every node and edge it restores or hides; a later commit only
        changes what the view shows where nothing is pinned yet, and then it is undone here.
        Costs the size of ``changes``: a view survives commits instead of being rebuilt.
        """
        # What was pinned before this commit stays; within the commit, undoing in reverse
        # order lets the earliest state of a key (removed, then added again) win.
        pinned_nodes = set(dict.keys(self._nodes))
        pinned_edges = set(self._added_edges) | set(self._removed_edges)
        for change in reversed(changes):
            kind, before, after = change.kind, change.before, change.after
            if kind.startswith("edge"):
                key = (after or before).key
                self._touch_edges(key[0], key[1])  # the base's edges of both ends changed
                pinned = key in pinned_edges
                if kind != "edge_removed":
                    self._removed_edges[key] = after  # the base now holds ``after``: hide it
                if kind != "edge_added" and not pinned:  # show the edge as it was before
                    self._added_edges[key] = before
                    self._added_out.setdefault(before.source, {})[key] = before
                    self._added_in.setdefault(before.target, {})[key] = before
                continue
            node_id = (after or before).id
            if node_id in pinned_nodes:
                continue  # pinned to the earlier state already
            if kind == "node_added":
                dict.__setitem__(self._nodes, node_id, None)
                self._types_touched.add(after.type)
                self._touch_edges(node_id, node_id)
            else:  # node_removed or node_updated: show the payload from before
                dict.__setitem__(self._nodes, node_id, before)
                self._types_touched.add(before.type)
                if kind == "node_removed":
                    self._touch_edges(node_id, node_id)
        self._changed()

    # -- net result ---------------------------------------------------------------------------

    def changes(self) -> list[Change]:
        """The net changes against the base, in the order that applies them safely:
        edge removals, node removals, node additions and updates, edge additions (computed
        once while neither the overlay nor its base changes: a commit asks several times)."""
        stamp = (self.version, getattr(self.base, "version", None))
        if self._net is not None and self._net[0] == stamp and stamp[1] is not None:
            return list(self._net[1])
        out = self._net_changes()
        self._net = (stamp, out)
        return list(out)

    def _net_changes(self) -> list[Change]:
        base = self.base
        out: list[Change] = []
        added_keys = self._added_edges
        for key, edge in sorted(self._removed_edges.items(), key=lambda kv: kv[1].seq):
            replacement = added_keys.get(key)
            if replacement is not None and replacement.seq == edge.seq:
                continue  # reported below as an update
            out.append(Change("edge_removed", edge, None))
        node_changes = []
        for node_id, node in self._nodes.own_items():
            old = base.node(node_id)
            if node is None:
                if old is not None:
                    out.append(Change("node_removed", old, None))
            elif old is None:
                node_changes.append(Change("node_added", None, node))
            elif old.seq != node.seq or old.type != node.type:
                out.append(Change("node_removed", old, None))
                node_changes.append(Change("node_added", None, node))
            # payloads hold frozen values (tuples, FrozenDicts): unequal ones are not the same JSON
            elif old.attrs != node.attrs or not same_json(old.attrs, node.attrs):
                node_changes.append(Change("node_updated", old, node))
        node_changes.sort(key=lambda c: c.after.seq)
        out.extend(node_changes)
        for key, edge in sorted(added_keys.items(), key=lambda kv: kv[1].seq):
            previous = self._removed_edges.get(key)
            if previous is not None and previous.seq == edge.seq:
                if previous.attrs != edge.attrs or not same_json(previous.attrs, edge.attrs):
                    out.append(Change("edge_updated", previous, edge))
                continue
            out.append(Change("edge_added", None, edge))
        return out


def apply_changes(graph, changes: list[Change]) -> None:
    """Apply net changes (as :meth:`GraphOverlay.changes` orders them) to a graph or overlay."""
    if graph.__class__ is MemoryGraph:
        graph.apply_changes(changes)  # the same, the per-node look-ups made once
        return
    for change in changes:
        kind = change.kind
        if kind == "edge_removed":
            graph.remove_edge(*change.before.key)
        elif kind == "node_removed":
            graph.remove_node(change.before.id)
        elif kind == "node_added":
            graph.restore_node(change.after)
        elif kind == "node_updated":
            graph.put_node(change.after)
        elif kind == "edge_added":
            graph.restore_edge(change.after)
        elif kind == "edge_updated":
            graph.set_edge_attrs(*change.after.key, change.after.attrs)
        else:
            raise ValueError(f"unknown change kind {kind!r}")
