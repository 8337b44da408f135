"""The reference model's ops (docs/transactions.md, "The ops"): each applied in order to a
private copy of the graph, and the net changes between the graph before and after, in the
order the documentation gives (edge removals, node removals, node additions and updates in
creation order, edge additions and updates).

>>> from hgm_engine.testing.graphmodel import ModelGraph
>>> work = Working(ModelGraph(), t=1)
>>> work.apply({"op": "add_node", "type": "goal"})
>>> work.apply({"op": "add_node", "id": "a", "type": "action", "parent": "goal-1-1", "order": 0})
>>> [c["kind"] for c in work.changes()], work.created
(['node_added', 'node_added', 'edge_added'], ['goal-1-1', 'a'])
>>> work.apply({"op": "delete_node", "id": "nope"})
Traceback (most recent call last):
  ...
hgm_engine.testing.ops.ModelError: unknown-node: nope
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.testing.graphmodel import EdgeKey, ModelGraph
from hgm_engine.testing.validtime import VALID_FROM, VALID_TO, bound_problem, instant

__all__ = ["Working", "ModelError", "net_changes", "same_value", "RESERVED", "OPS"]

RESERVED = ("dirty", "dirty_marks")
OPS = ("add_node", "add_edge", "update_node", "update_edge", "delete_node", "delete_edge", "replace_branch", "confirm", "invalidate")
INVALIDATED_REASON = "invalidated_reason"
_KEYS = {
    "update_node": ({"id"}, {"set", "unset"}),
    "delete_node": ({"id"}, {"cascade"}),
    "update_edge": ({"from", "to", "type"}, {"set", "unset"}),
    "delete_edge": ({"from", "to", "type"}, set()),
    "replace_branch": ({"id", "with"}, {"set"}),
    "confirm": ({"id"}, set()),
    "invalidate": ({"id", "at"}, {"by", "reason"}),
}


class ModelError(Exception):
    """The ops cannot apply as written; ``category`` is the engine's error category
    (``invalid-transaction``, ``unknown-node``, ``unknown-edge``, ``unknown-name``,
    ``duplicate-id``, ``duplicate-edge``, ``conflict``, ``rule-loop``, ``invalid-argument``,
    ``invalid-value`` (a valid-time bound), ``already-invalidated``)."""

    def __init__(self, category: str, detail: str = ""):
        super().__init__(category + (f": {detail}" if detail else ""))
        self.category = category


def same_value(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same value written the same way (``1`` is not ``1.0``
    nor ``true``): what makes a ``set`` a change.

    >>> same_value({"a": [1]}, {"a": [1]}), same_value(1, 1.0), same_value(1, True)
    (True, False, False)
    """
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _attrs_differ(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [k for k in dict.fromkeys([*a, *b]) if k not in a or k not in b or not same_value(a[k], b[k])]


class Working:
    """One transaction in progress: the graph before it, the graph as the ops leave it, and
    what the rules and the report need to know about the ops."""

    def __init__(self, graph: ModelGraph, t: int, schema: Schema = DEFAULT_SCHEMA, *, graph_file: bool = False):
        self.before = graph
        self.graph_file = graph_file  # a graph file's bounds are taken as they are (spec §8.2)
        self.graph = graph.copy()
        self.schema = schema
        self.t = t  # the t this transaction expects to commit as (for generated ids, marks)
        self.created: list[str] = []
        # Nodes of ``before`` in the order an op first changed them (updated or removed):
        # the order the report lists removals in.
        self.removed: list[str] = []
        self.orphan_checks: list[tuple[str, list[str]]] = []
        self.clears: list[tuple[str, str]] = []  # (id, "update" | "confirm"), in op order
        self.read: set[str] = set()  # ids the ops read (for base_t conflicts)
        self.generated = 0

    # -- ops -------------------------------------------------------------------------------

    @staticmethod
    def check(op: Any) -> None:
        """The op's shape (a known op, its keys, their JSON kinds), checked for every op of a
        transaction before any applies: ``invalid-transaction`` when it is wrong."""
        if not isinstance(op, dict) or not isinstance(op.get("op"), str) or op["op"] not in OPS:
            raise ModelError("invalid-transaction", "unknown op")
        kind = op["op"]
        if kind in _KEYS:
            required, optional = _KEYS[kind]
            if not required <= set(op) or set(op) - required - optional - {"op"}:
                raise ModelError("invalid-transaction", "keys")
        elif kind == "add_node" and "type" not in op:
            raise ModelError("invalid-transaction", "type")
        elif kind == "add_edge" and not {"from", "to", "type"} <= set(op):
            raise ModelError("invalid-transaction", "keys")
        strings = [op[k] for k in ("id", "from", "to", "type", "parent") if k in op and not (k == "id" and kind == "add_node" and op[k] is None)]
        if not all(isinstance(v, str) for v in strings):
            raise ModelError("invalid-transaction", "kinds")
        if not isinstance(op.get("set", {}), dict) or not isinstance(op.get("unset", []), list):
            raise ModelError("invalid-transaction", "set/unset")
        if kind == "invalidate":
            if not (isinstance(op["at"], str) and op["at"]) or not (op.get("by") is None or (isinstance(op["by"], str) and op["by"])):
                raise ModelError("invalid-transaction", "at/by")
            if not (op.get("reason") is None or isinstance(op["reason"], str)):
                raise ModelError("invalid-transaction", "reason")
        if kind in ("add_node", "add_edge") and any(name in op for name in RESERVED):
            raise ModelError("invalid-transaction", "marks are the rules'")
        if kind in ("update_node", "replace_branch") and any(n in op.get("set", {}) or n in op.get("unset", []) for n in RESERVED):
            raise ModelError("invalid-transaction", "marks are the rules'")

    def apply(self, op: Any) -> None:
        """Apply one op (raises :class:`ModelError`, leaving this transaction unusable)."""
        self.check(op)
        getattr(self, "_" + op["op"])(op)

    def _node(self, node_id: Any) -> str:
        if not isinstance(node_id, str):
            raise ModelError("invalid-transaction", "id")
        if node_id not in self.graph.nodes:
            raise ModelError("unknown-node", node_id)
        self.read.add(node_id)
        return node_id

    def _edge_key(self, op: Mapping[str, Any], existing: bool = False) -> EdgeKey:
        """The op's edge key; with ``existing`` the edge must exist (``unknown-edge``),
        otherwise both ends must (``unknown-node``)."""
        for name in ("from", "to", "type"):
            if not isinstance(op.get(name), str):
                raise ModelError("invalid-transaction", name)
        if op["type"] not in self.schema.edge_types:
            raise ModelError("unknown-name", op["type"])
        key = (op["from"], op["to"], op["type"])
        if existing:
            if key not in self.graph.edges:
                raise ModelError("unknown-edge", str(key))
            self.read |= {key[0], key[1]}
        else:
            self._node(key[0]), self._node(key[1])
        return key

    def _bounds(self, attributes: Mapping[str, Any], written: Any = None) -> None:
        """The valid-time bounds an op writes (``written``: names; all when None) must be
        instants in order (docs/transactions.md, "Valid time"): else ``invalid-value``."""
        if not self.graph_file and bound_problem(attributes, written) is not None:
            raise ModelError("invalid-value", bound_problem(attributes, written))

    def _new_id(self, node_type: str, given: Any) -> str:
        if given is None:
            self.generated += 1
            given = f"{node_type}-{self.t}-{self.generated}"
        if not isinstance(given, str):
            raise ModelError("invalid-transaction", "id")
        if given in self.graph.nodes:
            raise ModelError("duplicate-id", given)
        return given

    def _attributes(self, record: Mapping[str, Any], reserved: tuple[str, ...]) -> dict[str, Any]:
        attributes = {k: v for k, v in record.items() if k not in reserved}
        if any(name in attributes for name in RESERVED):
            raise ModelError("invalid-transaction", "marks are the rules'")
        return attributes

    def _add_node(self, op: Mapping[str, Any]) -> None:
        node_type = op.get("type")
        if not isinstance(node_type, str):
            raise ModelError("invalid-transaction", "type")
        if node_type not in self.schema.node_types:
            raise ModelError("unknown-name", node_type)
        attributes = self._attributes(op, ("op", "id", "type", "parent", "order"))
        parent = op.get("parent")
        if parent is not None:
            self._node(parent)
        self._bounds(attributes)
        node_id = self._new_id(node_type, op.get("id"))
        self.graph.add_node(node_id, node_type, attributes)
        self.created.append(node_id)
        if parent is not None:
            self.graph.add_edge((parent, node_id, "parent_of"), {"order": op["order"]} if op.get("order") is not None else {})

    def _update_node(self, op: Mapping[str, Any]) -> None:
        node_id = self._node(op["id"])
        assignments = op.get("set", {})
        unset = op.get("unset", [])
        if not isinstance(assignments, dict) or not isinstance(unset, list):
            raise ModelError("invalid-transaction", "set/unset")
        if any(name in assignments or name in unset for name in (*RESERVED, "id", "type")):
            raise ModelError("invalid-transaction", "reserved")
        node_type, attributes = self.graph.nodes[node_id]
        attributes = dict(attributes)
        for name in unset:
            attributes.pop(name, None)
        attributes.update(json.loads(json.dumps(assignments)))
        self._bounds(attributes, [*assignments, *unset])
        self.graph.nodes[node_id] = (node_type, attributes)
        self.clears.append((node_id, "update"))
        self._touch(node_id)

    def _owned_below(self, node_id: str) -> list[str]:
        """The nodes below ``node_id`` along parent_of that belong to its subtree alone,
        deepest level first (a node with a parent outside the subtree stays)."""
        g = self.graph
        order, level, seen = [], [node_id], {node_id}
        while level:
            following = []
            for current in level:
                for child in g.out_neighbours(current, ("parent_of",)):
                    if child not in seen:
                        seen.add(child)
                        following.append(child)
            order.extend(following)
            level = following
        owned, changed = {node_id}, True
        while changed:
            changed = False
            for child in order:
                if child not in owned and all(p in owned for p in g.in_neighbours(child, ("parent_of",))):
                    owned.add(child)
                    changed = True
        return [child for child in reversed(order) if child in owned]

    def _touch(self, node_id: str) -> None:
        if node_id in self.before.nodes and self.graph.same(self.before, node_id) and node_id not in self.removed:
            self.removed.append(node_id)

    def remove_node(self, node_id: str) -> None:
        """Remove ``node_id`` and its edges, recording the node as touched (a cascade, a revert).

        >>> work = Working(ModelGraph(), 1)
        >>> work.apply({"op": "add_node", "id": "g", "type": "goal"})
        >>> work.remove_node("g"); "g" in work.graph.nodes
        False
        """
        self._touch(node_id)
        self.graph.remove_node(node_id)

    def _delete_node(self, op: Mapping[str, Any]) -> None:
        node_id = self._node(op["id"])
        if op.get("cascade"):
            for child in self._owned_below(node_id):
                self.remove_node(child)
        else:
            self.orphan_checks.append((node_id, self.graph.out_neighbours(node_id, ("parent_of",))))
        self.remove_node(node_id)

    def _add_edge(self, op: Mapping[str, Any]) -> None:
        key = self._edge_key(op)
        if key in self.graph.edges:
            raise ModelError("duplicate-edge", str(key))
        self.graph.add_edge(key, self._attributes(op, ("op", "from", "to", "type")))

    def _update_edge(self, op: Mapping[str, Any]) -> None:
        key = self._edge_key(op, existing=True)
        attributes = dict(self.graph.edges[key])
        for name in op.get("unset", []):
            attributes.pop(name, None)
        attributes.update(op.get("set", {}))
        self.graph.edges[key] = attributes

    def _delete_edge(self, op: Mapping[str, Any]) -> None:
        self.graph.remove_edge(self._edge_key(op, existing=True))

    def _confirm(self, op: Mapping[str, Any]) -> None:
        self.clears.append((self._node(op["id"]), "confirm"))

    def _invalidate(self, op: Mapping[str, Any]) -> None:
        """docs/time.md, "invalidate": the fact's ``valid_to`` becomes ``at`` (and ``reason``
        its ``invalidated_reason``); ``by``, a node of the same type, gets ``valid_from = at``
        when it has none and the edge ``by -replaces-> id`` (carrying ``at``) when it has
        none. Both nodes count as updated (an update event; their marks are cleared)."""
        node_id = self._node(op["id"])
        at = op["at"]
        if instant(at) is None:
            raise ModelError("invalid-value", "at")
        node_type, attributes = self.graph.nodes[node_id]
        if attributes.get(VALID_TO) is not None:
            raise ModelError("already-invalidated", node_id)
        begins = instant(attributes.get(VALID_FROM))
        if begins is not None and instant(at) <= begins:
            raise ModelError("invalid-value", "at is not after valid_from")
        closed = {**attributes, VALID_TO: at}
        if op.get("reason") is not None:
            closed[INVALIDATED_REASON] = op["reason"]
        self._bounds(closed, [VALID_TO])
        by = op.get("by")
        if by is not None:
            newer = self._node(by)
            if by == node_id:
                raise ModelError("invalid-transaction", "a fact cannot supersede itself")
            if self.graph.type_of(newer) != node_type:
                raise ModelError("invalid-transaction", "by is of another type")
            newer_type, newer_attributes = self.graph.nodes[newer]
            if newer_attributes.get(VALID_FROM) is None:
                opened = {**newer_attributes, VALID_FROM: at}
                self._bounds(opened, [VALID_FROM])  # a bound invalidate writes: by's valid_to must come after it
                self.graph.nodes[newer] = (newer_type, opened)
                self.clears.append((newer, "update"))
                self._touch(newer)
            if (newer, node_id, "replaces") not in self.graph.edges:
                self.graph.add_edge((newer, node_id, "replaces"), {"at": at})
        self.graph.nodes[node_id] = (node_type, closed)
        self.clears.append((node_id, "update"))
        self._touch(node_id)

    def _replace_branch(self, op: Mapping[str, Any]) -> None:
        node_id = self._node(op["id"])
        if not isinstance(op["with"], list) or not isinstance(op.get("set", {}), dict):
            raise ModelError("invalid-transaction", "with/set")
        for child in self._owned_below(node_id):
            self.remove_node(child)
        if op.get("set"):  # not an update_node: the node keeps its marks
            node_type, attributes = self.graph.nodes[node_id]
            attributes = {**attributes, **json.loads(json.dumps(op["set"]))}
            self._bounds(attributes, op["set"])
            self.graph.nodes[node_id] = (node_type, attributes)
            self._touch(node_id)
        for i, plan in enumerate(op["with"]):
            self.created.append(self._plan(plan, node_id, i))

    def _plan(self, plan: Any, parent: str, order: int) -> str:
        if not isinstance(plan, dict) or not isinstance(plan.get("type"), str):
            raise ModelError("invalid-transaction", "plan")
        if plan["type"] not in self.schema.node_types:
            raise ModelError("unknown-name", plan["type"])
        attributes = self._attributes(plan, ("id", "type", "children", "edges"))
        self._bounds(attributes)
        node_id = self._new_id(plan["type"], plan.get("id"))
        self.graph.add_node(node_id, plan["type"], attributes)
        self.graph.add_edge((parent, node_id, "parent_of"), {"order": order})
        for i, child in enumerate(plan.get("children", [])):
            self._plan(child, node_id, i)
        for edge in plan.get("edges", []):
            self._add_edge({"from": node_id, **edge})
        return node_id

    # -- what the ops did ------------------------------------------------------------------

    def orphaned(self) -> set[tuple[str, str]]:
        """``delete_leaves_orphans`` violations, judged on the final state."""
        g = self.graph
        return {
            ("delete_leaves_orphans", deleted)
            for deleted, children in self.orphan_checks
            if deleted not in g.nodes and any(c in g.nodes and not g.in_neighbours(c, ("parent_of",)) for c in children)
        }

    def changes(self) -> list[dict[str, Any]]:
        """The net changes so far (as a report lists them)."""
        return net_changes(self.before, self.graph, self.removed)


def net_changes(before: ModelGraph, after: ModelGraph, removal_order: list[str] = ()) -> list[dict[str, Any]]:
    """One change per node or edge between two graphs; a re-created node or edge is removed
    and added.

    >>> a = ModelGraph.from_document({"nodes": [{"id": "x", "type": "fact", "v": 1}], "edges": []})
    >>> b = a.copy(); b.nodes["x"] = ("fact", {"v": 2})
    >>> net_changes(a, b)
    [{'kind': 'node_updated', 'id': 'x', 'before': {'v': 1}, 'after': {'v': 2}}]
    """
    changes: list[dict[str, Any]] = []
    for key, attributes in before.edges.items():
        if not after.same(before, key):
            changes.append(_edge_change("edge_removed", key, attributes))
    gone = [n for n in before.nodes if not after.same(before, n)]
    for node in sorted(gone, key=lambda n: (list(removal_order).index(n) if n in removal_order else len(removal_order))):
        changes.append({"kind": "node_removed", "id": node, "node": before.node_json(node)})
    for node, (node_type, attributes) in after.nodes.items():
        if not before.same(after, node):
            changes.append({"kind": "node_added", "id": node, "node": after.node_json(node)})
            continue
        old = before.nodes[node][1]
        differing = _attrs_differ(old, attributes)
        if differing:
            changes.append({
                "kind": "node_updated", "id": node,
                "before": {k: old[k] for k in differing if k in old},
                "after": {k: attributes[k] for k in differing if k in attributes},
            })
    for key, attributes in after.edges.items():
        if not before.same(after, key):
            changes.append(_edge_change("edge_added", key, attributes))
        elif _attrs_differ(before.edges[key], attributes):
            changes.append({"kind": "edge_updated", "from": key[0], "to": key[1], "type": key[2],
                            "before": dict(before.edges[key]), "after": dict(attributes)})
    return changes


def _edge_change(kind: str, key: EdgeKey, attributes: Mapping[str, Any]) -> dict[str, Any]:
    change = {"kind": kind, "from": key[0], "to": key[1], "type": key[2]}
    if attributes:
        change["attrs"] = dict(attributes)
    return change
