"""The schema stored with a memory: reading it back, and what a schema change would break.

A memory's schema is the ``hgm-schema/1`` document in its meta row ``schema``
(:data:`SCHEMA_META`, docs/memories.md); every process and interface that opens the memory
reads it with :func:`stored_schema`. A schema change is refused when :func:`schema_problems`
finds the memory breaking it: its nodes and edges, its stored constraints and rule sets.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from hgm_engine.errors import Problem, SchemaError, StoreError
from hgm_engine.model import DEFAULT_SCHEMA, GraphView, Schema
from hgm_engine.rules.compile import compile_rule_file
from hgm_engine.rules.constraints import UserConstraint, check_full
from hgm_engine.store import Store

__all__ = ["SCHEMA_META", "MAX_SCHEMA_PROBLEMS", "SchemaKeeper", "stored_schema", "schema_problems", "schema_text"]

SCHEMA_META = "schema"
"""The meta key a memory's ``hgm-schema/1`` document is stored under."""

MAX_SCHEMA_PROBLEMS = 20
"""A refused schema change lists at most this many problems (and a count of the rest)."""


def schema_text(schema: Schema) -> str:
    """The text a schema is stored as: its document as compact JSON with sorted keys, so one
    schema always has one text.

    >>> schema_text(DEFAULT_SCHEMA) == schema_text(Schema())
    True
    """
    return json.dumps(schema.to_document(), ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def stored_schema(text: str | None, location: str = "") -> Schema:
    """The schema of a memory whose meta row ``schema`` is ``text`` (None: the default schema);
    a row that is not an ``hgm-schema/1`` document is a :class:`StoreError` (damage).

    >>> stored_schema(None) == DEFAULT_SCHEMA
    True
    >>> stored_schema("[1]", "m.db")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hgm_engine.errors.StoreError: store at m.db: m.db is damaged: its stored schema (meta 'schema') is not an hgm-schema/1 document: ...
    """
    if text is None:
        return DEFAULT_SCHEMA
    try:
        return _schema_of_text(text)
    except (ValueError, RecursionError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StoreError(
            [Problem("store", f"{location} is damaged: its stored schema (meta 'schema') is not an hgm-schema/1 document: {why}", where=location)]
        ) from None


@functools.lru_cache(maxsize=64)
def _schema_of_text(text: str) -> Schema:
    """The schema of a stored document, read once per text (a server opening many memories
    of one schema reads it once); the default schema is the one object ``DEFAULT_SCHEMA``,
    so the checks compiled for it are shared."""
    schema = Schema.from_document(json.loads(text))
    return DEFAULT_SCHEMA if schema == DEFAULT_SCHEMA else schema


def schema_problems(graph: GraphView, schema: Schema, store: Store) -> list[Problem]:
    """Why the memory in ``graph`` and ``store`` (its constraints and rule sets) breaks
    ``schema``: at most ``MAX_SCHEMA_PROBLEMS`` problems, category ``schema-violation``.

    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.store import InMemoryStore
    >>> schema_problems(MemoryGraph(), DEFAULT_SCHEMA, InMemoryStore())
    []
    """
    problems: list[Problem] = []
    node_types, edge_types = set(schema.node_types), set(schema.edge_types)
    for node in graph.nodes():
        if node.type not in node_types:
            problems.append(Problem("schema-violation", f"node {node.id!r} has the type {node.type!r}, which the new schema does not have", where=node.id))
    for edge in graph.edges():
        if edge.type not in edge_types:
            problems.append(
                Problem("schema-violation", f"edge {edge.source} -{edge.type}-> {edge.target} has a type the new schema does not have", where=edge.source)
            )
    constraints = {}
    for name, text in store.constraints().items():
        try:
            constraints[name] = UserConstraint.compile(name, text, schema)
        except Exception as exc:  # noqa: BLE001 - any reason it does not compile is reported
            problems.append(Problem("schema-violation", f"constraint {name!r} does not compile with the new schema: {exc}", where=name))
    try:
        names = json.loads(store.get_meta("rule_sets") or "[]")
    except (ValueError, RecursionError):
        names = []  # a broken list: its rule sets are inactive already
    for name in names if isinstance(names, list) else []:
        try:
            compile_rule_file(store.get_meta(f"rules:{name}") or "", schema)
        except Exception as exc:  # noqa: BLE001
            problems.append(Problem("schema-violation", f"rule set {name!r} does not compile with the new schema: {exc}", where=name))
    if not problems:
        for violation in check_full(graph, schema, constraints):
            problems.append(Problem("schema-violation", f"{violation.constraint}: {violation.message}", where=violation.node))
    if len(problems) > MAX_SCHEMA_PROBLEMS:
        more = len(problems) - MAX_SCHEMA_PROBLEMS
        problems = problems[:MAX_SCHEMA_PROBLEMS] + [Problem("schema-violation", f"and {more} more problems")]
    return problems


class SchemaKeeper:
    """The schema stored with ``memory`` (a :class:`~hgm_engine.Memory`, read through its
    public ``state``, ``store``, ``graph`` and ``schema``): read when the memory opens, changed
    by :meth:`set_schema`, followed across other processes by :meth:`sync`; ``on_change(schema)``
    rebuilds what the memory compiled for its schema."""

    def __init__(self, memory: Any, on_change: Callable[[Schema], None]):
        self.memory = memory
        self.on_change = on_change
        self.text = memory.store.get_meta(SCHEMA_META)

    def stored(self) -> Schema:
        """The schema the store holds (the default schema when none was stored)."""
        return stored_schema(self.text, self.memory.store.location)

    def set_schema(self, schema: Schema) -> None:
        """Make ``schema`` the memory's schema, stored with it (every process and interface
        that opens the memory then uses it). A transaction: under the memory's write lock,
        after catching up with other processes, and refused with a :class:`SchemaError`
        (category ``schema-violation``, each problem with its node or object) when what the
        memory holds breaks it — a node or edge of a type it lacks, an attribute its JSON
        Schema forbids, an edge rule, a stored constraint or rule set that would not compile;
        then nothing changes.

        >>> from hgm_engine import Memory, Schema
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> m.set_schema(Schema(node_types=("fact",), edge_types=(), relations={}, attribute_schemas={}, edge_rules={}, acyclic_edge_types=()))
        Traceback (most recent call last):
        ...
        hgm_engine.errors.SchemaError: schema-violation at g: node 'g' has the type 'goal', which the new schema does not have
        >>> m.schema == Schema()
        True
        """
        if not isinstance(schema, Schema):
            raise SchemaError([Problem("invalid-argument", f"a schema is a Schema, not {type(schema).__name__}")])
        memory, store = self.memory, self.memory.store
        text = schema_text(schema)
        with memory.state.write_lock, store.write():
            memory.state.catch_up()
            if schema == memory.schema and text == self.text:
                return
            problems = schema_problems(memory.graph, schema, store)
            if problems:
                raise SchemaError(problems)
            store.set_meta(SCHEMA_META, text)
        self.text = text
        self.on_change(schema)

    def sync(self) -> None:
        """Follow a schema another process stored."""
        text = self.memory.store.get_meta(SCHEMA_META)
        if text != self.text:
            self.text = text
            self.on_change(stored_schema(text, self.memory.store.location))
