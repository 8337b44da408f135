"""The data model: the graph, its overlay for transactions, the schema and its attribute checks.

This layer imports nothing above it (no queries, transactions, rules or stores).
"""

from __future__ import annotations

from hgm_engine.model.values import (
    FrozenDict,
    freeze,
    same_json,
    thaw,
    EMPTY_ATTRS,
    MAX_VALUE_DEPTH,
    MAX_INT_DIGITS,
    text_problem,
    name_problem,
    id_problem,
    value_problem,
    values_ok,
    strings_ok,
    parse_json,
)
from hgm_engine.model.payloads import (
    Node,
    Edge,
    Adjacency,
    edge_order_key,
    lazy_nodes,
    lazy_edges,
    EdgeColumns,
    packed_attrs,
    stored_value_indexes,
    decode_payloads,
    NumberIndex,
    compact_ids,
    slot_setters,
)
from hgm_engine.model.graph import (
    MemoryGraph,
    bulk_allocation,
    release_kept,
)
from hgm_engine.model.overlay import (
    GraphOverlay,
    Change,
    apply_changes,
)
from hgm_engine.model.schema import (
    Hop,
    Closure,
    Siblings,
    Latest,
    Versions,
    Relation,
    EdgeRule,
    Schema,
    DEFAULT_EDGE_RULES,
    DEFAULT_ATTRIBUTE_SCHEMAS,
    ACYCLIC_EDGE_TYPES,
    DEFAULT_SCHEMA,
    NODE_TYPES,
    EDGE_TYPES,
    STATUSES,
    closest,
)
from hgm_engine.model.schemacheck import (
    compile_schema,
)
from hgm_engine.model.commit import (
    Commit,
)
from hgm_engine.model.generated import (
    compile_function,
)
from hgm_engine.model.view import (
    GraphView,
)
from hgm_engine.model.validtime import (
    INSTANTS,
    InstantCache,
    VALID_FROM,
    VALID_TO,
    parse_instant,
    format_instant,
    holds_at,
    valid_time_problem,
)

__all__ = [
    "INSTANTS",
    "InstantCache",
    "VALID_FROM",
    "VALID_TO",
    "parse_instant",
    "format_instant",
    "holds_at",
    "valid_time_problem",
    "FrozenDict",
    "Node",
    "Edge",
    "Adjacency",
    "MemoryGraph",
    "freeze",
    "same_json",
    "thaw",
    "edge_order_key",
    "EMPTY_ATTRS",
    "bulk_allocation",
    "release_kept",
    "MAX_VALUE_DEPTH",
    "MAX_INT_DIGITS",
    "text_problem",
    "name_problem",
    "id_problem",
    "value_problem",
    "values_ok",
    "strings_ok",
    "parse_json",
    "lazy_nodes",
    "lazy_edges",
    "EdgeColumns",
    "packed_attrs",
    "stored_value_indexes",
    "NumberIndex",
    "compact_ids",
    "slot_setters",
    "decode_payloads",
    "GraphOverlay",
    "Change",
    "apply_changes",
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
    "compile_schema",
    "compile_function",
    "GraphView",
    "Commit",
]
