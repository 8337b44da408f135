"""A deliberately plain model of a memory under the default schema: dicts and lists, no
overlays, no indexes. The state machine compares the engine against it."""

from __future__ import annotations

import copy
from typing import Any

from hgm_engine.model import DEFAULT_EDGE_RULES, NODE_TYPES, EDGE_TYPES, STATUSES

__all__ = ["ModelMemory", "ModelRefusal", "ModelError"]

NodeValue = tuple  # (type, attrs dict)


class ModelError(Exception):
    """The ops cannot be applied as written (the engine raises TransactionError)."""


class ModelRefusal(Exception):
    """The ops break constraints; ``violations`` is a set of (constraint, node)."""

    def __init__(self, violations: set):
        super().__init__(sorted(violations, key=str))
        self.violations = violations


class ModelMemory:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeValue] = {}
        self.edges: dict[tuple[str, str, str], dict] = {}

    def copy(self) -> "ModelMemory":
        other = ModelMemory()
        other.nodes = copy.deepcopy(self.nodes)
        other.edges = copy.deepcopy(self.edges)
        return other

    def document(self) -> dict[str, Any]:
        return {
            "format": "hgm-graph/1",
            "nodes": [dict({"id": i, "type": t}, **attrs) for i, (t, attrs) in self.nodes.items()],
            "edges": [dict({"from": s, "to": d, "type": k}, **attrs) for (s, d, k), attrs in self.edges.items()],
        }

    # -- structure helpers --------------------------------------------------------------------

    def children(self, node_id: str) -> list[str]:
        return [d for (s, d, k) in self.edges if s == node_id and k == "parent_of"]

    def parents(self, node_id: str) -> list[str]:
        return [s for (s, d, k) in self.edges if d == node_id and k == "parent_of"]

    def remove_node(self, node_id: str) -> None:
        """Drop a node and every edge touching it (no checks: the model's own primitive).

        >>> model = ModelMemory()
        >>> model.nodes["g"] = ("goal", {})
        >>> model.remove_node("g"); model.nodes
        {}
        """
        for key in [k for k in self.edges if node_id in (k[0], k[1])]:
            del self.edges[key]
        del self.nodes[node_id]

    def _reaches(self, start: str, goal: str, edge_type: str) -> bool:
        seen, stack = {start}, [start]
        while stack:
            current = stack.pop()
            if current == goal:
                return True
            for (s, d, k) in self.edges:
                if s == current and k == edge_type and d not in seen:
                    seen.add(d)
                    stack.append(d)
        return False

    # -- applying ops -------------------------------------------------------------------------

    def apply(self, ops: list[dict]) -> "ModelMemory":
        """The model after ``ops``; raises ModelError or ModelRefusal (self is unchanged)."""
        new = self.copy()
        new.deleted_children = {}
        violations: set = set()
        for op in ops:
            new._apply_op(op, violations)
        for deleted, children in new.deleted_children.items():
            if deleted not in new.nodes and any(c in new.nodes and not new.parents(c) for c in children):
                violations.add(("delete_leaves_orphans", deleted))
        violations |= new.violations(self)
        if violations:
            raise ModelRefusal(violations)
        return new

    def _apply_op(self, op: dict, violations: set) -> None:
        kind = op["op"]
        if kind == "add_node":
            node_id, node_type = op["id"], op["type"]
            if node_type not in NODE_TYPES:
                raise ModelError("unknown-name")
            parent = op.get("parent")
            if parent is not None and parent not in self.nodes:
                raise ModelError("unknown-node")
            if node_id in self.nodes:
                raise ModelError("duplicate-id")
            attrs = {k: v for k, v in op.items() if k not in ("op", "id", "type", "parent", "order")}
            self.nodes[node_id] = (node_type, attrs)
            if parent is not None:
                self.edges[(parent, node_id, "parent_of")] = {"order": op["order"]} if "order" in op else {}
        elif kind == "update_node":
            if op["id"] not in self.nodes:
                raise ModelError("unknown-node")
            node_type, attrs = self.nodes[op["id"]]
            attrs = dict(attrs)
            for name in op.get("unset", ()):
                attrs.pop(name, None)
            attrs.update(op.get("set", {}))
            self.nodes[op["id"]] = (node_type, attrs)
        elif kind == "delete_node":
            node_id = op["id"]
            if node_id not in self.nodes:
                raise ModelError("unknown-node")
            if op.get("cascade"):
                order, level, seen = [], [node_id], {node_id}
                while level:
                    following = []
                    for current in level:
                        for child in self.children(current):
                            if child not in seen:
                                seen.add(child)
                                following.append(child)
                    order.extend(following)
                    level = following
                # Only what belongs to the subtree alone goes; a node with another parent stays.
                owned, changed = {node_id}, True
                while changed:
                    changed = False
                    for child in order:
                        if child not in owned and all(p in owned for p in self.parents(child)):
                            owned.add(child)
                            changed = True
                for child in reversed(order):
                    if child in owned:
                        self.remove_node(child)
            else:
                self.deleted_children[node_id] = self.children(node_id)
            self.remove_node(node_id)
        elif kind == "add_edge":
            key = (op["from"], op["to"], op["type"])
            if op["type"] not in EDGE_TYPES:
                raise ModelError("unknown-name")
            if key[0] not in self.nodes or key[1] not in self.nodes:
                raise ModelError("unknown-node")
            if key in self.edges:
                raise ModelError("duplicate-edge")
            self.edges[key] = {k: v for k, v in op.items() if k not in ("op", "from", "to", "type")}
        elif kind == "delete_edge":
            key = (op["from"], op["to"], op["type"])
            if key not in self.edges:
                raise ModelError("unknown-edge")
            del self.edges[key]
        else:
            raise ModelError(f"op {kind}")

    def violations(self, before: "ModelMemory | None" = None) -> set:
        """(constraint, node) pairs broken in this state; edge rules only for edges new since
        ``before`` (as the engine checks only what changed)."""
        found: set = set()
        for node_id, (node_type, attrs) in self.nodes.items():
            if node_type == "action":
                parents = self.parents(node_id)
                if len(parents) != 1:
                    found.add(("action_has_one_parent", node_id))
                elif self.nodes[parents[0]][0] not in ("goal", "action"):
                    found.add(("action_parent_is_goal_or_action", node_id))
            if node_type == "result":
                producers = [s for (s, d, k) in self.edges if d == node_id and k == "produces"]
                if not any(self.nodes[p][0] == "action" for p in producers):
                    found.add(("result_is_produced", node_id))
            status = attrs.get("status")
            if node_type in ("goal", "action") and "status" in attrs and status not in STATUSES:
                found.add((f"{node_type}_attributes", node_id))
        old_edges = before.edges if before is not None else {}
        for (s, d, k) in self.edges:
            if (s, d, k) in old_edges:
                continue
            rule = DEFAULT_EDGE_RULES[k]
            if not rule.allows(self.nodes[s][0], self.nodes[d][0]):
                found.add((f"{k}_endpoints", s))
            if k in ("parent_of", "before", "replaces") and self._reaches(d, s, k):
                found.add((f"{k}_acyclic", s))
        return found
