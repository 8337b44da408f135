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
import re
from typing import Any, Iterable, Mapping, Union

import attrs
import jsonschema

from hgm_engine.errors import Problem, SchemaError

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
    "SCHEMA_FORMAT",
]

SCHEMA_FORMAT = "hgm-schema/1"

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

    def to_document(self) -> dict[str, Any]:
        """The whole schema as an ``hgm-schema/1`` document (docs/formats.md): every node
        type, edge type, relation, attribute JSON Schema, edge rule and acyclic edge type,
        written out in full (the default schema's parts too), so that
        ``Schema.from_document(schema.to_document()) == schema``.

        >>> doc = DEFAULT_SCHEMA.to_document()
        >>> doc["format"], doc["relations"]["subgoals"], doc["edge_rules"]["produces"]
        ('hgm-schema/1', {'kind': 'hop', 'direction': 'out', 'edge_types': ['parent_of'], 'node_type': 'goal'}, {'sources': ['action'], 'targets': ['fact', 'result'], 'same_type': False})
        >>> Schema.from_document(doc) == DEFAULT_SCHEMA
        True
        """
        return {
            "format": SCHEMA_FORMAT,
            "node_types": list(self.node_types),
            "edge_types": list(self.edge_types),
            "relations": {name: _relation_document(r) for name, r in self.relations.items()},
            "attribute_schemas": {k: _plain(v) for k, v in self.attribute_schemas.items()},
            "edge_rules": {
                k: {"sources": None if r.sources is None else sorted(r.sources),
                    "targets": None if r.targets is None else sorted(r.targets), "same_type": r.same_type}
                for k, r in self.edge_rules.items()
            },
            "acyclic_edge_types": list(self.acyclic_edge_types),
        }

    @classmethod
    def from_document(cls, doc: Any) -> "Schema":
        """A schema from an ``hgm-schema/1`` document; a :class:`SchemaError` names every
        problem with its place (``relations.tools.edge_types[0]``).

        With ``"extends": "default"`` the document's names are added to the default schema
        (its lists and maps may then be short); without, it must say everything.

        >>> tools = Schema.from_document({"format": "hgm-schema/1", "extends": "default",
        ...     "node_types": ["tool"], "edge_types": ["uses"],
        ...     "relations": {"tools": {"kind": "hop", "direction": "out", "edge_types": ["uses"], "node_type": "tool"}}})
        >>> tools.relation("tools"), "goal" in tools.node_types
        (Hop(direction='out', edge_types=('uses',), node_type='tool'), True)
        >>> Schema.from_document({"format": "hgm-schema/1", "node_types": [], "edge_types": ["uses"],
        ...     "relations": {"r": {"kind": "hop", "direction": "up", "edge_types": ["usse"]}}})
        Traceback (most recent call last):
          ...
        hgm_engine.errors.SchemaError: invalid-document at node_types: a schema needs at least one node type
        invalid-document at relations.r.direction: direction must be 'out', 'in' or 'both', not 'up'
        unknown-name at relations.r.edge_types[0]: unknown edge type 'usse'; did you mean 'uses'?
        """
        problems: list[Problem] = []
        schema = _SchemaReader(problems).read(doc)
        if problems:
            raise SchemaError(problems)
        return schema

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


# -- the schema document (docs/formats.md) ----------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SCHEMA_KEYS = ("format", "extends", "node_types", "edge_types", "relations", "attribute_schemas", "edge_rules", "acyclic_edge_types")
_RELATION_KINDS = {"hop": Hop, "closure": Closure, "siblings": Siblings, "latest": Latest, "versions": Versions}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _hop_document(hop: Hop) -> dict[str, Any]:
    return {"direction": hop.direction, "edge_types": None if hop.edge_types is None else list(hop.edge_types), "node_type": hop.node_type}


def _relation_document(relation: Relation) -> dict[str, Any]:
    if isinstance(relation, Hop):
        return {"kind": "hop", **_hop_document(relation)}
    if isinstance(relation, Closure):
        return {"kind": "closure", "hop": _hop_document(relation.hop)}
    return {"kind": {Siblings: "siblings", Latest: "latest", Versions: "versions"}[type(relation)]}


class _SchemaReader:
    """Reads a schema document, collecting every problem with its place."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems

    def fail(self, where: str, message: str, category: str = "invalid-document") -> None:
        self.problems.append(Problem(category, message, where=where))

    def names(self, value: Any, where: str, *, empty: bool = True) -> list[str]:
        if not isinstance(value, list):
            self.fail(where, f"{where} must be a list of names")
            return []
        if not value and not empty:
            self.fail(where, "a schema needs at least one node type")
        found: list[str] = []
        for i, name in enumerate(value):
            if not isinstance(name, str) or not _NAME.match(name):
                self.fail(f"{where}[{i}]", f"{name!r} is not a name (letters, digits and _, not first a digit)")
            elif name in found:
                self.fail(f"{where}[{i}]", f"{name!r} is listed twice")
            else:
                found.append(name)
        return found

    def known(self, name: Any, known: Iterable[str], what: str, where: str) -> bool:
        known = list(known)
        if isinstance(name, str) and name in known:
            return True
        hint = closest(name, known) if isinstance(name, str) else None
        self.fail(where, f"unknown {what} {name!r}" + (f"; did you mean {hint!r}?" if hint else ""), "unknown-name")
        return False

    def mapping(self, doc: Mapping[str, Any], key: str) -> dict[str, Any]:
        value = doc.get(key, {})
        if not isinstance(value, dict):
            self.fail(key, f"{key} must be an object")
            return {}
        return value

    def read(self, doc: Any) -> Schema:
        if not isinstance(doc, dict):
            self.fail("document", "a schema file is a JSON object")
            return DEFAULT_SCHEMA
        if doc.get("format") != SCHEMA_FORMAT:
            self.fail("format", f"format must be {SCHEMA_FORMAT!r}, found {doc.get('format')!r}")
        for key in doc:
            if key not in _SCHEMA_KEYS:
                hint = closest(key, _SCHEMA_KEYS)
                self.fail(key, f"unknown key {key!r}" + (f"; did you mean {hint!r}?" if hint else ""))
        extends = doc.get("extends")
        if extends not in (None, "default"):
            self.fail("extends", f"extends may only be 'default', not {extends!r}")
        base = DEFAULT_SCHEMA if extends == "default" else None
        for key in ("node_types", "edge_types"):
            if base is None and key not in doc:
                self.fail(key, f"{key} is required (or \"extends\": \"default\")")
        node_types = self.names(doc.get("node_types", []), "node_types", empty=base is not None)
        edge_types = self.names(doc.get("edge_types", []), "edge_types")
        if base is not None:
            node_types = list(dict.fromkeys([*base.node_types, *node_types]))
            edge_types = list(dict.fromkeys([*base.edge_types, *edge_types]))
        relations = {} if base is None else dict(base.relations)
        for name, value in self.mapping(doc, "relations").items():
            where = f"relations.{name}"
            if not _NAME.match(name):
                self.fail(where, f"{name!r} is not a name")
            relation = self.relation(value, where, node_types, edge_types)
            if relation is not None:
                if base is not None and name in base.relations and base.relations[name] != relation:
                    self.fail(where, f"relation {name!r} is the default schema's and means something else there", "invalid-argument")
                relations[name] = relation
        attribute_schemas = {} if base is None else dict(base.attribute_schemas)
        for node_type, value in self.mapping(doc, "attribute_schemas").items():
            where = f"attribute_schemas.{node_type}"
            if self.known(node_type, node_types, "node type", where):
                try:
                    jsonschema.validators.validator_for(value).check_schema(value)
                    attribute_schemas[node_type] = value
                except (jsonschema.SchemaError, TypeError, AttributeError) as exc:
                    self.fail(where, f"not a JSON Schema: {getattr(exc, 'message', exc)}", "invalid-argument")
        edge_rules = {} if base is None else dict(base.edge_rules)
        for edge_type, value in self.mapping(doc, "edge_rules").items():
            where = f"edge_rules.{edge_type}"
            if self.known(edge_type, edge_types, "edge type", where):
                rule = self.edge_rule(value, where, node_types)
                if rule is not None:
                    edge_rules[edge_type] = rule
        acyclic = list(base.acyclic_edge_types) if base is not None else []
        if "acyclic_edge_types" in doc:
            listed = self.names(doc["acyclic_edge_types"], "acyclic_edge_types")
            for i, edge_type in enumerate(listed):
                if self.known(edge_type, edge_types, "edge type", f"acyclic_edge_types[{i}]") and edge_type not in acyclic:
                    acyclic.append(edge_type)
        if self.problems:
            return DEFAULT_SCHEMA
        return Schema(tuple(node_types), tuple(edge_types), relations, attribute_schemas, edge_rules, tuple(acyclic))

    def hop(self, value: Any, where: str, node_types: list[str], edge_types: list[str], keys: set[str]) -> Hop | None:
        if not isinstance(value, dict):
            self.fail(where, "a hop is an object with direction, edge_types and node_type")
            return None
        for key in value:
            if key not in keys:
                self.fail(f"{where}.{key}", f"unknown key {key!r}")
        direction = value.get("direction")
        ok = True
        if direction not in ("out", "in", "both"):
            self.fail(f"{where}.direction", f"direction must be 'out', 'in' or 'both', not {direction!r}")
            ok = False
        types = value.get("edge_types")
        if types is not None:
            if not isinstance(types, list) or not types:
                self.fail(f"{where}.edge_types", "edge_types is a non-empty list of edge types, or null for every type")
                ok = False
            else:
                ok = all([self.known(t, edge_types, "edge type", f"{where}.edge_types[{i}]") for i, t in enumerate(types)]) and ok
        node_type = value.get("node_type")
        if node_type is not None:
            ok = self.known(node_type, node_types, "node type", f"{where}.node_type") and ok
        return Hop(direction, None if types is None else tuple(types), node_type) if ok else None

    def relation(self, value: Any, where: str, node_types: list[str], edge_types: list[str]) -> Relation | None:
        if not isinstance(value, dict) or value.get("kind") not in _RELATION_KINDS:
            kind = value.get("kind") if isinstance(value, dict) else None
            self.fail(f"{where}.kind", f"kind must be one of {', '.join(_RELATION_KINDS)}, not {kind!r}")
            return None
        kind = value["kind"]
        if kind == "hop":
            return self.hop(value, where, node_types, edge_types, {"kind", "direction", "edge_types", "node_type"})
        if kind == "closure":
            for key in value:
                if key not in ("kind", "hop"):
                    self.fail(f"{where}.{key}", f"unknown key {key!r}")
            hop = self.hop(value.get("hop"), f"{where}.hop", node_types, edge_types, {"direction", "edge_types", "node_type"})
            return None if hop is None else Closure(hop)
        for key in value:
            if key != "kind":
                self.fail(f"{where}.{key}", f"a {kind} relation takes no {key!r}")
        for needed in ("parent_of",) if kind == "siblings" else ("replaces",):
            if needed not in edge_types:
                self.fail(where, f"a {kind} relation needs the edge type {needed!r}", "unknown-name")
                return None
        return _RELATION_KINDS[kind]()

    def edge_rule(self, value: Any, where: str, node_types: list[str]) -> EdgeRule | None:
        if not isinstance(value, dict):
            self.fail(where, "an edge rule is an object with sources, targets and same_type")
            return None
        for key in value:
            if key not in ("sources", "targets", "same_type"):
                self.fail(f"{where}.{key}", f"unknown key {key!r}")
        ends = {}
        ok = True
        for end in ("sources", "targets"):
            listed = value.get(end)
            if listed is None:
                ends[end] = None
                continue
            if not isinstance(listed, list):
                self.fail(f"{where}.{end}", f"{end} is a list of node types, or null for any")
                ok = False
                continue
            ok = all([self.known(t, node_types, "node type", f"{where}.{end}[{i}]") for i, t in enumerate(listed)]) and ok
            ends[end] = frozenset(listed)
        same = value.get("same_type", False)
        if not isinstance(same, bool):
            self.fail(f"{where}.same_type", "same_type is true or false")
            ok = False
        return EdgeRule(ends.get("sources"), ends.get("targets"), same) if ok else None
