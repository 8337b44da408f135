"""Node types, edge types and relations: the names a query may use.

The default schema is the one of ``spec/dsl.md`` §1–2. A schema is immutable; ``extend``
returns a new one with more types or relations.

>>> s = DEFAULT_SCHEMA
>>> s.relation("subgoals")
Hop(direction='out', edge_types=('parent_of',), node_type='goal')
>>> s.closest_node_type("gaol")
'goal'
>>> s2 = s.extend(node_types=["tool"], edge_types=["uses"],
...               relations={"tools": Hop("out", ("uses",), "tool")})
>>> s2.relation("tools").edge_types
('uses',)
"""

from __future__ import annotations

import difflib
from typing import Any, Iterable, Mapping, Union

import attrs

from hgm_engine.errors import SchemaError

__all__ = [
    "Hop",
    "Closure",
    "Siblings",
    "Latest",
    "Versions",
    "Relation",
    "EdgeRule",
    "Schema",
    "DEFAULT_EDGE_RULES",
    "DEFAULT_ATTRIBUTE_SCHEMAS",
    "ACYCLIC_EDGE_TYPES",
    "DEFAULT_SCHEMA",
    "NODE_TYPES",
    "EDGE_TYPES",
    "STATUSES",
    "closest",
]

NODE_TYPES = ("goal", "action", "entity", "fact", "result")
EDGE_TYPES = ("parent_of", "before", "related_to", "derived_from", "produces", "replaces", "causes", "summarizes")
STATUSES = (
    "pending",
    "active",
    "done",
    "failed",
    "blocked",
    "needs_review",
    "superseded",
    "cancelled",
)


@attrs.frozen
class EdgeRule:
    """Which node types an edge type may connect (None: any); ``same_type`` demands equal types."""

    sources: frozenset[str] | None = None
    targets: frozenset[str] | None = None
    same_type: bool = False

    def allows(self, source_type: str, target_type: str) -> bool:
        if self.sources is not None and source_type not in self.sources:
            return False
        if self.targets is not None and target_type not in self.targets:
            return False
        return not self.same_type or source_type == target_type

    def describe(self) -> str:
        sources = "any" if self.sources is None else "/".join(sorted(self.sources))
        targets = "any" if self.targets is None else "/".join(sorted(self.targets))
        return f"{sources} -> {targets}" + (" (same type)" if self.same_type else "")


_PLANNING = frozenset({"goal", "action"})

DEFAULT_EDGE_RULES = {
    "parent_of": EdgeRule(_PLANNING, None),
    "before": EdgeRule(_PLANNING, _PLANNING),
    "related_to": EdgeRule(),
    "derived_from": EdgeRule(frozenset({"goal", "action", "fact", "result"}), None),
    "produces": EdgeRule(frozenset({"action"}), frozenset({"result", "fact"})),
    "replaces": EdgeRule(None, None, same_type=True),
    "causes": EdgeRule(),
    "summarizes": EdgeRule(frozenset({"fact"}), None),  # a summary node (docs/time.md) -> what it covers
}

ACYCLIC_EDGE_TYPES = ("parent_of", "before", "replaces")

_TAGS = {"type": "array", "items": {"type": "string"}}
_CONTENT = {"type": "string"}
_PLAN_ATTRIBUTES = {
    "type": "object",
    "properties": {
        "content": _CONTENT,
        "status": {"enum": list(STATUSES)},
        "priority": {"type": "number"},
        "tags": _TAGS,
    },
}
DEFAULT_ATTRIBUTE_SCHEMAS = {
    "goal": _PLAN_ATTRIBUTES,
    "action": _PLAN_ATTRIBUTES,
    "entity": {"type": "object", "properties": {"content": _CONTENT, "tags": _TAGS}},
    "fact": {
        "type": "object",
        "properties": {"content": _CONTENT, "tags": _TAGS, "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
    },
    "result": {"type": "object", "properties": {"content": _CONTENT, "tags": _TAGS}},
}


@attrs.frozen
class Hop:
    """One step along edges: ``direction`` is ``out``, ``in`` or ``both``; ``edge_types`` None
    means every type; ``node_type`` restricts the nodes reached (and passed through when
    repeated)."""

    direction: str
    edge_types: tuple[str, ...] | None
    node_type: str | None = None


@attrs.frozen
class Closure:
    """``hop{1,}``: every node reachable by repeating ``hop``, breadth-first."""

    hop: Hop


@attrs.frozen
class Siblings:
    """The children of each parent, in the parent's order, without the node itself."""


@attrs.frozen
class Latest:
    """Follow ``replaced_by`` to the newest version."""


@attrs.frozen
class Versions:
    """The whole ``replaces`` chain through the node, oldest first."""


Relation = Union[Hop, Closure, Siblings, Latest, Versions]


def _default_relations() -> dict[str, Relation]:
    children = Hop("out", ("parent_of",))
    parent = Hop("in", ("parent_of",))
    following = Hop("out", ("before",))
    preceding = Hop("in", ("before",))
    related = Hop("both", ("related_to",))
    return {
        "children": children,
        "parent": parent,
        "subgoals": Hop("out", ("parent_of",), "goal"),
        "actions": Hop("out", ("parent_of",), "action"),
        "descendants": Closure(children),
        "ancestors": Closure(parent),
        "siblings": Siblings(),
        "next": following,
        "prev": preceding,
        "following": Closure(following),
        "preceding": Closure(preceding),
        "related": related,
        "related_facts": Hop("both", ("related_to",), "fact"),
        "related_entities": Hop("both", ("related_to",), "entity"),
        "results": Hop("out", ("produces",)),
        "produced_by": Hop("in", ("produces",)),
        "sources": Hop("out", ("derived_from",)),
        "derived": Hop("in", ("derived_from",)),
        "replaces": Hop("out", ("replaces",)),
        "replaced_by": Hop("in", ("replaces",)),
        "latest": Latest(),
        "versions": Versions(),
        "summaries": Hop("in", ("summarizes",)),
        "summarized": Hop("out", ("summarizes",)),
    }


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate nearest to ``name`` by spelling, or None when none is near.

    >>> closest("subgoal", ["subgoals", "actions"])
    'subgoals'
    """
    found = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return found[0] if found else None


@attrs.frozen
class Schema:
    """The vocabulary of a memory: node types, edge types, relations, attribute schemas.

    ``attribute_schemas`` maps a node type to a JSON Schema for its attributes (checked by
    the transaction layer).
    """

    node_types: tuple[str, ...] = NODE_TYPES
    edge_types: tuple[str, ...] = EDGE_TYPES
    relations: Mapping[str, Relation] = attrs.field(factory=_default_relations)
    attribute_schemas: Mapping[str, Mapping[str, Any]] = attrs.field(factory=lambda: dict(DEFAULT_ATTRIBUTE_SCHEMAS))
    edge_rules: Mapping[str, EdgeRule] = attrs.field(factory=lambda: dict(DEFAULT_EDGE_RULES))
    acyclic_edge_types: tuple[str, ...] = ACYCLIC_EDGE_TYPES

    def __attrs_post_init__(self) -> None:
        for name, relation in self.relations.items():
            hop = relation.hop if isinstance(relation, Closure) else relation
            if isinstance(hop, Hop):
                if hop.direction not in ("out", "in", "both"):
                    raise SchemaError.single(
                        "invalid-argument", f"relation {name!r}: direction {hop.direction!r}"
                    )
                for edge_type in hop.edge_types or ():
                    if edge_type not in self.edge_types:
                        raise SchemaError.single(
                            "unknown-name", f"relation {name!r} uses unknown edge type {edge_type!r}"
                        )
                if hop.node_type is not None and hop.node_type not in self.node_types:
                    raise SchemaError.single(
                        "unknown-name", f"relation {name!r} uses unknown node type {hop.node_type!r}"
                    )

    def extend(
        self,
        *,
        node_types: Iterable[str] = (),
        edge_types: Iterable[str] = (),
        relations: Mapping[str, Relation] | None = None,
        attribute_schemas: Mapping[str, Mapping[str, Any]] | None = None,
        edge_rules: Mapping[str, EdgeRule] | None = None,
    ) -> "Schema":
        """A new schema with more names; existing names keep their meaning."""
        new_nodes = tuple(dict.fromkeys((*self.node_types, *node_types)))
        new_edges = tuple(dict.fromkeys((*self.edge_types, *edge_types)))
        new_relations = dict(self.relations)
        for name, relation in (relations or {}).items():
            if name in new_relations and new_relations[name] != relation:
                raise SchemaError.single("invalid-argument", f"relation {name!r} is already defined")
            new_relations[name] = relation
        schemas = dict(self.attribute_schemas)
        schemas.update(attribute_schemas or {})
        rules = dict(self.edge_rules)
        rules.update(edge_rules or {})
        return Schema(new_nodes, new_edges, new_relations, schemas, rules, self.acyclic_edge_types)

    def relation(self, name: str) -> Relation | None:
        return self.relations.get(name)

    def closest_node_type(self, name: str) -> str | None:
        return closest(name, self.node_types)

    def closest_edge_type(self, name: str) -> str | None:
        return closest(name, self.edge_types)

    @property
    def fingerprint(self) -> tuple:
        """A hashable identity, used to key compiled-query caches."""
        return (
            self.node_types,
            self.edge_types,
            tuple(sorted((k, repr(v)) for k, v in self.relations.items())),
        )

    def to_json(self) -> dict[str, Any]:
        """The schema's names as JSON (relations by kind), for ``hgm schema`` and the servers."""
        return {
            "node_types": list(self.node_types),
            "edge_types": list(self.edge_types),
            "relations": sorted(self.relations),
            "edge_rules": {k: v.describe() for k, v in self.edge_rules.items()},
            "attribute_schemas": {k: dict(v) for k, v in self.attribute_schemas.items()},
        }


DEFAULT_SCHEMA = Schema()
