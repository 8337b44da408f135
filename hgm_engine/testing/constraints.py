"""The reference model's constraints (docs/transactions.md, "Constraints"): the built-in ones,
each node type's attribute JSON Schema (checked with ``jsonschema``) and user constraints in
the path language, all checked on the whole final state — no radius, no incremental pass.

A violation is a ``(constraint, node)`` pair. Endpoint and acyclicity rules are judged for the
edges a transaction added or changed (``new_edges``), as the documentation says; every other
rule is judged on every node.

>>> from hgm_engine.testing.graphmodel import ModelGraph
>>> g = ModelGraph.from_document({"nodes": [{"id": "a", "type": "action"}, {"id": "r", "type": "result"}], "edges": []})
>>> sorted(violations(g))
[('action_has_one_parent', 'a'), ('result_is_produced', 'r')]
"""

from __future__ import annotations

from typing import Iterable, Mapping

import jsonschema

from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.query import parse_constraint
from hgm_engine.query import syntax as S
from hgm_engine.testing.graphmodel import EdgeKey, ModelGraph
from hgm_engine.testing.interpreter import holds

__all__ = ["violations", "user_violations", "compile_constraint"]

Violation = tuple  # (constraint name, node id)


def compile_constraint(text: str) -> S.ConstraintDef:
    """The syntax tree of ``each TYPE [where COND] must COND`` (hgm's parser)."""
    return parse_constraint(text)


def user_violations(name: str, definition: S.ConstraintDef, graph: ModelGraph, schema: Schema = DEFAULT_SCHEMA) -> set[Violation]:
    """The nodes of the constraint's type that meet ``where`` (all without it) but not ``must``.

    >>> g = ModelGraph.from_document({"nodes": [{"id": "f", "type": "fact", "confidence": 0.2}], "edges": []})
    >>> user_violations("sure", compile_constraint("each fact must confidence >= 0.5"), g)
    {('sure', 'f')}
    """
    found = set()
    for node in graph.nodes:
        if graph.type_of(node) != definition.node_type:
            continue
        if definition.where is not None and not holds(definition.where, node, graph, schema):
            continue
        if not holds(definition.must, node, graph, schema):
            found.add((name, node))
    return found


def violations(
    graph: ModelGraph,
    schema: Schema = DEFAULT_SCHEMA,
    constraints: Mapping[str, S.ConstraintDef] | None = None,
    new_edges: Iterable[EdgeKey] | None = None,
) -> set[Violation]:
    """Every violation in ``graph``; endpoint and cycle rules only for ``new_edges`` (every
    edge when None)."""
    found: set[Violation] = set()
    types = set(schema.node_types)
    for node, (node_type, attributes) in graph.nodes.items():
        if node_type == "action":
            parents = graph.in_neighbours(node, ("parent_of",))
            if len(parents) != 1:
                found.add(("action_has_one_parent", node))
            elif graph.type_of(parents[0]) not in ("goal", "action"):
                found.add(("action_parent_is_goal_or_action", node))
        if node_type == "result" and "action" in types:
            if not any(graph.type_of(p) == "action" for p in graph.in_neighbours(node, ("produces",))):
                found.add(("result_is_produced", node))
        attribute_schema = schema.attribute_schemas.get(node_type)
        if attribute_schema is not None:
            validator = jsonschema.validators.validator_for(attribute_schema)(attribute_schema)
            if not validator.is_valid(attributes):
                found.add((f"{node_type}_attributes", node))
    for key in graph.edges if new_edges is None else new_edges:
        if key not in graph.edges:
            continue
        source, target, edge_type = key
        rule = schema.edge_rules.get(edge_type)
        if rule is not None and not rule.allows(graph.type_of(source), graph.type_of(target)):
            found.add((f"{edge_type}_endpoints", source))
        if edge_type in schema.acyclic_edge_types and graph.reaches(target, source, edge_type):
            found.add((f"{edge_type}_acyclic", source))
    for name, definition in (constraints or {}).items():
        found |= user_violations(name, definition, graph, schema)
    return found
