"""Transactions: the only way memory changes.

A transaction is a list of operations (the transaction file of formats.md). Operations apply
in order to a :class:`~hgm_engine.model.overlay.GraphOverlay`, each seeing the ones before it; the
memory checks constraints once on the final state and commits the net changes, or drops the
overlay and nothing has changed.

>>> doc = {"author": "me", "reason": "demo", "ops": [
...     {"op": "add_node", "id": "g", "type": "goal", "content": "Trip"},
...     {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"}]}
>>> [type(op).__name__ for op in parse_transaction(doc).ops]
['AddNode', 'AddNode']
>>> parse_transaction({"ops": [{"op": "fly"}]})
Traceback (most recent call last):
...
hgm_engine.errors.TransactionError: invalid-transaction at ops[0]: unknown op 'fly'; known: add_node, add_edge, update_node, update_edge, delete_node, delete_edge, replace_branch, confirm, invalidate
"""

from __future__ import annotations

import itertools
from typing import Any, Mapping

import attrs

from hgm_engine.errors import Problem, TransactionError
from hgm_engine.model import (
    VALID_FROM,
    VALID_TO,
    GraphOverlay,
    Schema,
    closest,
    id_problem,
    parse_instant,
    slot_setters,
    text_problem,
    valid_time_problem,
    value_problem,
)
from hgm_engine.txn.report import Violation

__all__ = [
    "OpContext",
    "AddNode",
    "UpdateNode",
    "DeleteNode",
    "AddEdge",
    "UpdateEdge",
    "DeleteEdge",
    "ReplaceBranch",
    "Confirm",
    "Invalidate",
    "INVALIDATED_REASON",
    "PlanNode",
    "TransactionDoc",
    "parse_transaction",
    "parse_op",
    "op_places",
    "apply_op",
    "orphan_violations",
    "MARK_ATTRS",
    "NODE_KEYS",
    "EDGE_KEYS",
    "MAX_OPS",
    "MAX_PLAN_DEPTH",
]

MAX_OPS = 10_000
"""The most ops one transaction may hold (``Memory(max_ops=...)`` sets another limit)."""

MAX_PLAN_DEPTH = 100
"""How many levels of ``children`` a ``replace_branch`` plan may nest."""

_MAX_BASE_T = 2**63 - 1  # the largest integer SQLite and PostgreSQL store


# -- operations ---------------------------------------------------------------------------------


@attrs.frozen(init=False)
class AddNode:
    node_id: str | None
    node_type: str
    attributes: Mapping[str, Any]
    parent: str | None = None
    order: int | float | None = None  # the ``order`` of the parent edge, when given

    def __init__(
        self, node_id: str | None, node_type: str, attributes: Mapping[str, Any], parent: str | None = None, order: int | float | None = None
    ) -> None:
        # the slots' setters, not attrs' object.__setattr__ per field (most ops are these two)
        s_id, s_type, s_attributes, s_parent, s_order = _SET_ADD_NODE
        s_id(self, node_id)
        s_type(self, node_type)
        s_attributes(self, attributes)
        s_parent(self, parent)
        s_order(self, order)


@attrs.frozen(init=False)
class UpdateNode:
    node_id: str
    set: Mapping[str, Any]
    unset: tuple[str, ...] = ()

    def __init__(self, node_id: str, set: Mapping[str, Any], unset: tuple[str, ...] = ()) -> None:  # noqa: A002 (the field's name)
        s_id, s_set, s_unset = _SET_UPDATE_NODE  # as AddNode's
        s_id(self, node_id)
        s_set(self, set)
        s_unset(self, unset)


_SET_ADD_NODE = slot_setters(AddNode)
_SET_UPDATE_NODE = slot_setters(UpdateNode)


@attrs.frozen
class Confirm:
    """Clear a node's staleness marks (``dirty``): the planner has looked and it still holds."""

    node_id: str


@attrs.frozen
class Invalidate:
    """Close a fact's valid time at ``at`` instead of deleting it (docs/time.md): its
    ``valid_to`` becomes ``at``; ``by`` (a node of the same type) is the fact that supersedes
    it — linked ``by -replaces-> node_id``, and holding from ``at`` when it had no
    ``valid_from``; ``reason`` is kept on the closed fact as ``invalidated_reason``."""

    node_id: str
    at: str
    by: str | None = None
    reason: str | None = None


INVALIDATED_REASON = "invalidated_reason"
"""The attribute where ``invalidate`` keeps its ``reason`` on the fact it closed."""


@attrs.frozen
class DeleteNode:
    node_id: str
    cascade: bool = False


@attrs.frozen
class AddEdge:
    source: str
    target: str
    edge_type: str
    attributes: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class UpdateEdge:
    source: str
    target: str
    edge_type: str
    set: Mapping[str, Any]
    unset: tuple[str, ...] = ()


@attrs.frozen
class DeleteEdge:
    source: str
    target: str
    edge_type: str


@attrs.frozen
class PlanNode:
    """A node of a nested plan: its children come under it with ``parent_of`` in list order;
    ``edges`` are further outgoing edges ``(target, type, attributes)``."""

    node_id: str | None
    node_type: str
    attributes: Mapping[str, Any]
    children: tuple["PlanNode", ...] = ()
    edges: tuple[tuple[str, str, Mapping[str, Any]], ...] = ()


@attrs.frozen
class ReplaceBranch:
    """Remove everything below ``node_id`` (its descendants along ``parent_of``) and put the
    nested plan ``children`` there instead, in one op. Attributes in ``set`` update the node."""

    node_id: str
    children: tuple[PlanNode, ...]
    set: Mapping[str, Any] = attrs.field(factory=dict)


Op = AddNode | UpdateNode | DeleteNode | AddEdge | UpdateEdge | DeleteEdge | ReplaceBranch | Confirm | Invalidate


@attrs.frozen
class TransactionDoc:
    author: str | None
    reason: str | None
    base_t: int | None
    ops: tuple


# -- parsing the transaction file ---------------------------------------------------------------

_OP_KEYS = {
    "add_node": ({"op", "type"}, {"id", "parent", "order"}),
    "add_edge": ({"op", "from", "to", "type"}, set()),
    "update_node": ({"op", "id"}, {"set", "unset"}),
    "update_edge": ({"op", "from", "to", "type"}, {"set", "unset"}),
    "delete_node": ({"op", "id"}, {"cascade"}),
    "delete_edge": ({"op", "from", "to", "type"}, set()),
    "replace_branch": ({"op", "id", "with"}, {"set"}),
    "confirm": ({"op", "id"}, set()),
    "invalidate": ({"op", "id", "at"}, {"by", "reason"}),
}
_OP_NAMED = {name: frozenset(required | optional) for name, (required, optional) in _OP_KEYS.items()}
_OP_NEEDS = {name: tuple(sorted(required - {"op"})) for name, (required, _) in _OP_KEYS.items()}
_ADD_NODE_NAMED = tuple(sorted(_OP_NAMED["add_node"]))
_ADD_EDGE_KEYS = tuple(sorted(_OP_KEYS["add_edge"][0]))
_DOCUMENT_KEYS = ("author", "reason", "base_t", "ops", "dry_run")
_DOCUMENT_KEY_SET = frozenset(_DOCUMENT_KEYS)
_OP_PLACES = tuple(f"ops[{i}]" for i in range(256))  # see op_places


def op_places(count: int) -> tuple[str, ...]:
    """The places of a transaction's ops in errors, ``ops[0]``, ``ops[1]``, ...: at least
    ``count`` of them. Up to 256 they are made once and shared, not formatted again for each
    op of each commit (parsing and applying both name them).

    >>> op_places(3)[:3]
    ('ops[0]', 'ops[1]', 'ops[2]')
    >>> op_places(300)[299]
    'ops[299]'
    """
    if count <= len(_OP_PLACES):
        return _OP_PLACES
    return tuple(f"ops[{i}]" for i in range(count))


def _fail(message: str, where: str, category: str = "invalid-transaction") -> TransactionError:
    return TransactionError([Problem(category, message, where=where)])


def _raise_if(problem: Problem | None) -> None:
    if problem is not None:
        raise TransactionError([problem])


def _names_of(keys: Any) -> str:
    return ", ".join(repr(k) for k in keys)


def _string(doc: Mapping, key: str, where: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise _fail(f"{key!r} must be a non-empty string", where)
    if not value.isascii():  # an ASCII string has no lone surrogate (text_problem)
        _raise_if(text_problem(value, f"{where}.{key}"))
    return value


def _edge_key(doc: Mapping, where: str) -> tuple[str, str, str]:
    """``from``, ``to`` and ``type`` of an edge op (all there), each as :func:`_string` gives
    it: at once when all three are non-empty ASCII strings, else by :func:`_string` in that
    order (the same error for the first bad one)."""
    source, target, edge_type = doc["from"], doc["to"], doc["type"]
    if (
        source.__class__ is str and target.__class__ is str and edge_type.__class__ is str
        and source and target and edge_type
        and source.isascii() and target.isascii() and edge_type.isascii()
    ):
        return source, target, edge_type
    return _string(doc, "from", where), _string(doc, "to", where), _string(doc, "type", where)


def _mapping(value: Any, what: str, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(f"{what} must be an object", where)
    return value


def _names(value: Any, what: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _fail(f"{what} must be a list of attribute names", where)
    return tuple(value)


NODE_KEYS = ("id", "type")
"""What a node record holds besides its attributes: no attribute may have these names."""

EDGE_KEYS = ("from", "to", "type")
"""What an edge record holds besides its attributes: no attribute may have these names."""

# Staleness marks belong to the rule engine; ops clear them with ``confirm`` or an update.
MARK_ATTRS = ("dirty", "dirty_marks")


def _check_attrs(attributes: Mapping[str, Any], where: str) -> None:
    for key in attributes:
        if key in NODE_KEYS:
            raise _fail(f"{key!r} is not an attribute and cannot be set", where)
        if key in MARK_ATTRS:
            raise _fail(f"{key!r} holds staleness marks set by rules; clear them with the confirm op", where)


def _check_edge_attrs(attributes: Any, where: str) -> None:
    for key in attributes:
        if key in EDGE_KEYS:
            raise _fail(f"{key!r} names the edge itself (from, to, type); it is not an attribute and cannot be set", where)


_PLAIN_INT = 2**63  # far inside MAX_INT_DIGITS
_PLAIN_FLOAT = 1.7976931348623157e308  # the largest finite float


_NODE_RESERVED = frozenset(NODE_KEYS + MARK_ATTRS)
_EDGE_RESERVED = frozenset(EDGE_KEYS)


def _plain_attributes(attributes: Mapping[Any, Any], reserved: frozenset) -> bool:
    """True when every name of ``attributes`` is an ASCII string outside ``reserved`` and every
    value plainly storable (the fast loop of :func:`_check_values`): then neither the name
    checks (:func:`_check_attrs`, :func:`_check_edge_attrs`) nor :func:`_check_values` can
    refuse them, and one loop stands for both."""
    for key, value in attributes.items():
        kind = type(value)
        if type(key) is not str or not key.isascii() or key in reserved:
            return False
        if kind is str:
            if not value.isascii():
                return False
        elif kind is int:
            if not -_PLAIN_INT < value < _PLAIN_INT:
                return False
        elif kind is float:
            if not -_PLAIN_FLOAT <= value <= _PLAIN_FLOAT:  # False for NaN and the infinities
                return False
        elif value is not None and kind is not bool:
            return False
    return True


def _check_values(attributes: Mapping[Any, Any], where: str, prefix: str = "") -> None:
    """Every attribute name and value of ``attributes`` can be stored (model.value_problem);
    the place of a bad one is ``WHERE.PREFIX.NAME...`` (``ops[3].set.tags[1]``)."""
    for key, value in attributes.items():
        # the usual attributes, at once: ASCII names, ASCII strings, numbers of any use, flags
        kind = type(value)
        if type(key) is not str or not key.isascii():
            break
        if kind is str:
            if not value.isascii():
                break
        elif kind is int:
            if not -_PLAIN_INT < value < _PLAIN_INT:
                break
        elif kind is float:
            if not -_PLAIN_FLOAT <= value <= _PLAIN_FLOAT:  # False for NaN and the infinities
                break
        elif value is not None and kind is not bool:
            break
    else:
        return
    # look closer (model.value_problem names the first problem and its place)
    base = f"{where}.{prefix}" if prefix else where
    for key, value in attributes.items():
        if not isinstance(key, str):
            raise _fail(f"attribute names are strings, not {key!r}", base, "invalid-value")
        _raise_if(text_problem(key, base, "an attribute name") or value_problem(value, f"{base}.{key}"))


def _op_name(doc: Mapping, where: str) -> str:
    name = doc.get("op")
    if not isinstance(name, str):
        kind = "null" if name is None else f"a {type(name).__name__}"
        raise _fail(f"'op' must be the name of an op ({', '.join(_OP_KEYS)}), not {kind}", where)
    if name not in _OP_KEYS:
        known = ", ".join(_OP_KEYS)
        raise _fail(f"unknown op {name!r}; known: {known}", where)
    return name


def parse_op(doc: Any, where: str) -> Op:
    """One op of a transaction file; ``where`` (e.g. ``ops[2]``) names it in errors.

    Its shape is checked here; attribute values are checked when it applies (every op does,
    those built in code too), against the rules of ``hgm_engine.model.value_problem``.

    >>> parse_op({"op": "update_node", "id": "g", "set": {"status": "done"}}, "ops[0]")
    UpdateNode(node_id='g', set={'status': 'done'}, unset=())
    >>> parse_op({"op": ["add_node"]}, "ops[1]")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.TransactionError: invalid-transaction at ops[1]: 'op' must be the name of an op (add_node, add_edge, update_node, update_edge, delete_node, delete_edge, replace_branch, confirm, invalidate), not a list
    """
    if not isinstance(doc, dict):
        raise _fail("an op is a JSON object", where)
    name = doc.get("op")
    if name.__class__ is not str or name not in _OP_KEYS:
        name = _op_name(doc, where)  # raises
    required, optional = _OP_KEYS[name]
    # the required keys besides 'op' (there: it named the op), looked up one by one: cheaper
    # than a set against the keys for the one to three an op needs
    for key in _OP_NEEDS[name]:
        if key not in doc:
            break
    else:
        key = None
    if key is not None:
        missing = sorted(required - set(doc))
        raise _fail(f"{name} needs {', '.join(repr(m) for m in missing)}", where)
    if name == "add_node":
        # the attributes are the other keys, in the document's order: a copy made in C less the
        # op's own keys (a comprehension tests every key in Python)
        attributes = doc.copy()
        for key in _ADD_NODE_NAMED:
            attributes.pop(key, None)
        node_id = doc.get("id")
        # a non-empty ASCII string is what _string returns as it is; it checks anything else
        if node_id is not None and (node_id.__class__ is not str or not node_id or not node_id.isascii()):
            node_id = _string(doc, "id", where)
        parent = doc.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise _fail("'parent' must be a node id", where)
        order = doc.get("order")
        if order is not None and (isinstance(order, bool) or not isinstance(order, (int, float))):
            raise _fail("'order' must be a number", where)
        node_type = doc["type"]  # required
        if node_type.__class__ is not str or not node_type or not node_type.isascii():  # as the id
            node_type = _string(doc, "type", where)
        return AddNode(node_id, node_type, attributes, parent, order)
    if name == "add_edge":
        attributes = doc.copy()  # as add_node's
        for key in _ADD_EDGE_KEYS:
            del attributes[key]  # all there (required)
        return AddEdge(*_edge_key(doc, where), attributes)
    if not doc.keys() <= _OP_NAMED[name]:
        unknown = sorted((k for k in doc if k not in required and k not in optional), key=str)
        raise _fail(f"{name} does not take {_names_of(unknown)}", where)
    if name == "update_node":
        changes = _mapping(doc.get("set"), "'set'", where)
        _check_attrs(changes, where)
        unset = _names(doc.get("unset"), "'unset'", where)
        if unset:
            _check_attrs(dict.fromkeys(unset), where)
        node_id = doc["id"]  # required
        if node_id.__class__ is not str or not node_id or not node_id.isascii():  # as add_node's
            node_id = _string(doc, "id", where)
        return UpdateNode(node_id, changes, unset)
    if name == "update_edge":
        changes = _mapping(doc.get("set"), "'set'", where)
        _check_edge_attrs(changes, where)
        unset = _names(doc.get("unset"), "'unset'", where)
        _check_edge_attrs(unset, where)
        return UpdateEdge(_string(doc, "from", where), _string(doc, "to", where), _string(doc, "type", where), changes, unset)
    if name == "delete_node":
        cascade = doc.get("cascade", False)
        if not isinstance(cascade, bool):
            raise _fail("'cascade' must be true or false", where)
        return DeleteNode(_string(doc, "id", where), cascade)
    if name == "confirm":
        return Confirm(_string(doc, "id", where))
    if name == "invalidate":
        by = _string(doc, "by", where) if doc.get("by") is not None else None
        reason = doc.get("reason")
        if reason is not None:
            if not isinstance(reason, str):
                raise _fail("'reason' must be a string", where)
            _raise_if(text_problem(reason, f"{where}.reason"))
        return Invalidate(_string(doc, "id", where), _string(doc, "at", where), by, reason)
    if name == "delete_edge":
        return DeleteEdge(*_edge_key(doc, where))
    if name == "replace_branch":
        plan = doc.get("with")
        if not isinstance(plan, list):
            raise _fail("'with' must be a list of nested plan nodes", where)
        children = tuple(_plan_node(child, f"{where}.with[{i}]", 1) for i, child in enumerate(plan))
        changes = _mapping(doc.get("set"), "'set'", where)
        _check_attrs(changes, where)
        return ReplaceBranch(_string(doc, "id", where), children, changes)
    raise AssertionError(name)  # pragma: no cover


def _plan_node(doc: Any, where: str, level: int) -> PlanNode:
    if not isinstance(doc, dict):
        raise _fail("a plan node is a JSON object", where)
    if level > MAX_PLAN_DEPTH:
        raise _fail(f"a plan may nest at most {MAX_PLAN_DEPTH} levels of children", where)
    node_id = doc.get("id")
    if node_id is not None:
        node_id = _string(doc, "id", where)
    children_doc = doc.get("children", [])
    if not isinstance(children_doc, list):
        raise _fail("'children' must be a list", where)
    edges_doc = doc.get("edges", [])
    if not isinstance(edges_doc, list):
        raise _fail("'edges' must be a list of {\"to\", \"type\"} objects", where)
    edges = []
    for i, edge in enumerate(edges_doc):
        edge_where = f"{where}.edges[{i}]"
        if not isinstance(edge, dict):
            raise _fail("an edge is a JSON object", edge_where)
        extra = {k: v for k, v in edge.items() if k not in ("to", "type")}
        _check_edge_attrs(extra, edge_where)  # a plan edge starts at its plan node: no 'from'
        edges.append((_string(edge, "to", edge_where), _string(edge, "type", edge_where), extra))
    attributes = {k: v for k, v in doc.items() if k not in ("id", "type", "children", "edges")}
    children = tuple(_plan_node(child, f"{where}.children[{i}]", level + 1) for i, child in enumerate(children_doc))
    return PlanNode(node_id, _string(doc, "type", where), attributes, children, tuple(edges))


def parse_transaction(doc: Any, *, max_ops: int = MAX_OPS) -> TransactionDoc:
    """Check a transaction document's shape; raise :class:`TransactionError` naming the op.

    At most ``max_ops`` ops (default :data:`MAX_OPS`; ``limit-exceeded`` beyond); booleans
    (``dry_run``) must be JSON booleans.

    >>> parse_transaction({"ops": [], "dry_run": "yes"})
    Traceback (most recent call last):
    ...
    hgm_engine.errors.TransactionError: invalid-transaction at dry_run: 'dry_run' must be true or false, not 'yes'
    >>> parse_transaction({"ops": [{"op": "confirm", "id": "g"}] * 3}, max_ops=2)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.TransactionError: limit-exceeded at ops: 3 ops; a transaction may hold at most 2
    """
    if not isinstance(doc, dict):
        raise _fail("a transaction is a JSON object with 'ops'", "document")
    if not doc.keys() <= _DOCUMENT_KEY_SET:
        unknown = sorted((k for k in doc if k not in _DOCUMENT_KEYS), key=str)
        raise _fail(f"unknown keys {unknown}", "document")
    ops = doc.get("ops")
    if not isinstance(ops, list):
        raise _fail("'ops' must be a list", "ops")
    if len(ops) > max_ops:
        raise _fail(f"{len(ops)} ops; a transaction may hold at most {max_ops}", "ops", "limit-exceeded")
    base_t = doc.get("base_t")
    if base_t is not None and (isinstance(base_t, bool) or not isinstance(base_t, int) or not 0 <= base_t <= _MAX_BASE_T):
        raise _fail("'base_t' must be a non-negative integer (a t of the memory)", "base_t")
    for key in ("author", "reason"):
        if doc.get(key) is not None:
            if not isinstance(doc[key], str):
                raise _fail(f"{key!r} must be a string", key)
            _raise_if(text_problem(doc[key], key))
    dry_run = doc.get("dry_run")
    if dry_run is not None and not isinstance(dry_run, bool):
        shown = repr(dry_run) if isinstance(dry_run, str) and len(dry_run) < 40 else f"a {type(dry_run).__name__}"
        raise _fail(f"'dry_run' must be true or false, not {shown}", "dry_run")
    parsed = tuple(map(parse_op, ops, op_places(len(ops))))
    return TransactionDoc(doc.get("author"), doc.get("reason"), base_t, parsed)


# -- applying ops to an overlay -----------------------------------------------------------------


class OpContext:
    """What applying ops needs besides the overlay: the schema, an id generator, and the
    list where refusals found while applying (e.g. orphaned children) are collected."""

    def __init__(self, schema: Schema, id_prefix: str = ""):
        self.schema = schema
        self.violations: list[Violation] = []
        self.read_ids: set[str] = set()
        self.updated_ids: dict[str, None] = {}  # nodes the ops updated (in order)
        # node deleted without cascade -> its children then; checked on the final state
        self.deleted_children: dict[str, tuple[str, ...]] = {}
        self.confirmed_ids: dict[str, None] = {}
        # nodes an update or a confirm touched, in the order of the first such op: the order
        # of the report's ``cleared``
        self.clearing_ids: dict[str, None] = {}
        self.cleared: list[dict[str, Any]] = []
        self._counter = itertools.count(1)
        self.id_prefix = id_prefix
        self.graph_file = False  # loading a graph file: its values are taken as they are

    def new_id(self, overlay: GraphOverlay, node_type: str) -> str:
        while True:
            candidate = f"{node_type}-{self.id_prefix}{next(self._counter)}"
            if candidate not in overlay:
                return candidate


def _need_node(overlay: GraphOverlay, node_id: str, where: str, ctx: OpContext):
    if not isinstance(node_id, str):
        raise _fail(f"a node id is a string, not a {type(node_id).__name__}", where)
    ctx.read_ids.add(node_id)
    node = overlay.node(node_id)
    if node is None:
        raise _fail(f"no node {node_id!r}", where, "unknown-node")
    return node


def _check_edge_ends(source: Any, target: Any, where: str) -> None:
    for end in (source, target):
        if not isinstance(end, str):
            raise _fail(f"a node id is a string, not a {type(end).__name__}", where)


def _check_node_type(schema: Schema, node_type: str, where: str) -> None:
    if not isinstance(node_type, str):
        raise _fail("'type' must be a non-empty string", where)
    if node_type not in schema.node_types:
        suggestion = closest(node_type, schema.node_types)
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        raise _fail(f"unknown node type {node_type!r}{hint}", where, "unknown-name")


def _check_edge_type(schema: Schema, edge_type: str, where: str) -> None:
    if not isinstance(edge_type, str):
        raise _fail("'type' must be a non-empty string", where)
    if edge_type not in schema.edge_types:
        suggestion = closest(edge_type, schema.edge_types)
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        raise _fail(f"unknown edge type {edge_type!r}{hint}", where, "unknown-name")


def _check_valid_time(attributes: Mapping[str, Any], changed: Mapping[str, Any] | None, where: str, ctx: "OpContext") -> None:
    """The valid-time bounds written (``changed``; all when None) are ISO 8601 and in order.
    A graph file being loaded is taken as it is (spec §8.2: a bound that is not a time
    never satisfies ``valid_at``)."""
    if ctx.graph_file:
        return
    if VALID_FROM not in (attributes if changed is None else changed) and VALID_TO not in (attributes if changed is None else changed):
        return  # no bound written (valid_time_problem finds nothing then)
    problem = valid_time_problem(attributes, changed)
    if problem is not None:
        raise _fail(problem, f"{where}.{problem.split(' ', 1)[0]}", "invalid-value")  # the bound it names


def _add_node(overlay, ctx, node_id, node_type, attributes, where) -> str:
    if node_type.__class__ is not str or node_type not in ctx.schema.node_types:
        _check_node_type(ctx.schema, node_type, where)
    if not _plain_attributes(attributes, _NODE_RESERVED):  # else neither check below can refuse
        _check_attrs(attributes, where)
        _check_values(attributes, where)
    if VALID_FROM in attributes or VALID_TO in attributes:  # else no bound written
        _check_valid_time(attributes, None, where, ctx)
    if node_id is not None and (not isinstance(node_id, str) or not node_id):
        raise _fail("'id' must be a non-empty string", where)
    if node_id is not None and (not node_id.isascii() or "\x00" in node_id):
        _raise_if(id_problem(node_id, f"{where}.id"))
    if node_id is None:
        node_id = ctx.new_id(overlay, node_type)
    elif node_id in overlay:
        raise _fail(f"node {node_id!r} already exists", where, "duplicate-id")
    overlay.add_node(node_id, node_type, attributes, checked=True)  # a new id: checked here or made new
    return node_id


def _add_edge(overlay, ctx, source, target, edge_type, attributes, where) -> None:
    if edge_type.__class__ is not str or edge_type not in ctx.schema.edge_types:
        _check_edge_type(ctx.schema, edge_type, where)
    if not _plain_attributes(attributes, _EDGE_RESERVED):  # else neither check below can refuse
        _check_edge_attrs(attributes, where)
        _check_values(attributes, where)
    _need_node(overlay, source, where, ctx)
    _need_node(overlay, target, where, ctx)
    if overlay.edge(source, target, edge_type) is not None:
        raise _fail(f"edge {source!r} -{edge_type}-> {target!r} already exists", where, "duplicate-edge")
    overlay.add_edge(source, target, edge_type, attributes, checked=True)  # both ends and the key looked up above


def _descendants(overlay: GraphOverlay, node_id: str) -> list[str]:
    """Every node below ``node_id`` along parent_of, breadth-first (each once)."""
    seen = {node_id}
    order = []
    level = [node_id]
    while level:
        following = []
        for current in level:
            for child in overlay.out_adjacency(current).by_type.get("parent_of", ()):
                if child not in seen:
                    seen.add(child)
                    following.append(child)
        order.extend(following)
        level = following
    return order


def _owned_descendants(overlay: GraphOverlay, node_id: str) -> list[str]:
    """The descendants that belong to ``node_id``'s subtree alone: a node that also has a
    parent outside the subtree stays (it only loses its parent inside)."""
    below = _descendants(overlay, node_id)
    owned = {node_id}
    changed = True
    while changed:  # a node's parents may sit deeper in the subtree than the node itself
        changed = False
        for other in below:
            if other not in owned and all(
                parent in owned for parent in overlay.in_adjacency(other).by_type.get("parent_of", ())
            ):
                owned.add(other)
                changed = True
    return [other for other in below if other in owned]


def orphan_violations(overlay: GraphOverlay, ctx: "OpContext") -> list[Violation]:
    """Children of nodes deleted without cascade that end the transaction without a parent."""
    found = []
    for deleted, children in ctx.deleted_children.items():
        if deleted in overlay:
            continue  # re-created under the same id in a later op
        orphans = [
            child
            for child in children
            if child in overlay and not overlay.in_adjacency(child).by_type.get("parent_of")
        ]
        if orphans:
            found.append(
                Violation(
                    "delete_leaves_orphans",
                    deleted,
                    f"deleting {deleted!r} without cascade leaves {', '.join(repr(o) for o in orphans)} without a parent",
                )
            )
    return found


def _add_plan(overlay, ctx, parent: str, plan: PlanNode, order: int | None, where: str, level: int = 1) -> str:
    if level > MAX_PLAN_DEPTH:
        raise _fail(f"a plan may nest at most {MAX_PLAN_DEPTH} levels of children", where)
    node_id = _add_node(overlay, ctx, plan.node_id, plan.node_type, plan.attributes, where)
    # into the node just made: no such edge yet (its parent exists: the op's node or the plan's)
    overlay.add_edge(parent, node_id, "parent_of", {"order": order} if order is not None else None, checked=True)
    for i, child in enumerate(plan.children):
        _add_plan(overlay, ctx, node_id, child, i, f"{where}.children[{i}]", level + 1)
    for i, (target, edge_type, attributes) in enumerate(plan.edges):
        _add_edge(overlay, ctx, node_id, target, edge_type, attributes, f"{where}.edges[{i}]")
    return node_id


def apply_op(overlay: GraphOverlay, op: Op, ctx: OpContext, where: str) -> list[str]:
    """Apply one op; returns the ids of the nodes it created. Raises TransactionError."""
    if isinstance(op, AddNode):
        if op.order is not None:
            _raise_if(value_problem(op.order, f"{where}.order"))
        if op.parent is not None:
            _need_node(overlay, op.parent, where, ctx)
        node_id = _add_node(overlay, ctx, op.node_id, op.node_type, op.attributes, where)
        if op.parent is not None:  # looked up above; into the node just made, so a new edge
            overlay.add_edge(op.parent, node_id, "parent_of", {"order": op.order} if op.order is not None else None, checked=True)
        return [node_id]
    if isinstance(op, UpdateNode):
        plain = _plain_attributes(op.set, _NODE_RESERVED)  # else the checks below, in their order
        if not plain:
            _check_attrs(op.set, where)
        if op.unset:
            _check_attrs(dict.fromkeys(op.unset), where)
        if not plain:
            _check_values(op.set, where, "set")
        node = _need_node(overlay, op.node_id, where, ctx)
        attributes = dict(node.attrs)
        for name in op.unset:
            attributes.pop(name, None)
        attributes.update(op.set)
        if op.unset or VALID_FROM in op.set or VALID_TO in op.set:  # else no bound written
            _check_valid_time(attributes, {**op.set, **dict.fromkeys(op.unset)}, f"{where}.set", ctx)
        overlay.set_node_attrs(op.node_id, attributes)
        ctx.updated_ids[op.node_id] = None
        ctx.clearing_ids[op.node_id] = None
        return []
    if isinstance(op, Invalidate):
        _invalidate(overlay, op, ctx, where)
        return []
    if isinstance(op, Confirm):
        _need_node(overlay, op.node_id, where, ctx)
        ctx.confirmed_ids[op.node_id] = None
        ctx.clearing_ids[op.node_id] = None
        return []
    if isinstance(op, DeleteNode):
        _need_node(overlay, op.node_id, where, ctx)
        if op.cascade:
            for node_id in reversed(_owned_descendants(overlay, op.node_id)):
                overlay.remove_node(node_id)
        else:
            ctx.deleted_children[op.node_id] = overlay.out_adjacency(op.node_id).by_type.get("parent_of", ())
        overlay.remove_node(op.node_id)
        return []
    if isinstance(op, AddEdge):
        _add_edge(overlay, ctx, op.source, op.target, op.edge_type, op.attributes, where)
        return []
    if isinstance(op, UpdateEdge):
        _check_edge_attrs(op.set, where)
        _check_edge_attrs(op.unset, where)
        _check_values(op.set, where, "set")
        _check_edge_ends(op.source, op.target, where)
        _check_edge_type(ctx.schema, op.edge_type, where)
        edge = overlay.edge(op.source, op.target, op.edge_type)
        if edge is None:
            raise _fail(f"no edge {op.source!r} -{op.edge_type}-> {op.target!r}", where, "unknown-edge")
        attributes = dict(edge.attrs)
        for name in op.unset:
            attributes.pop(name, None)
        attributes.update(op.set)
        overlay.set_edge_attrs(op.source, op.target, op.edge_type, attributes)
        return []
    if isinstance(op, DeleteEdge):
        _check_edge_ends(op.source, op.target, where)
        _check_edge_type(ctx.schema, op.edge_type, where)
        ctx.read_ids.update((op.source, op.target))
        if overlay.edge(op.source, op.target, op.edge_type) is None:
            raise _fail(f"no edge {op.source!r} -{op.edge_type}-> {op.target!r}", where, "unknown-edge")
        overlay.remove_edge(op.source, op.target, op.edge_type)
        return []
    if isinstance(op, ReplaceBranch):
        _check_attrs(op.set, where)
        _check_values(op.set, where, "set")
        node = _need_node(overlay, op.node_id, where, ctx)
        for node_id in reversed(_owned_descendants(overlay, op.node_id)):
            overlay.remove_node(node_id)
        if op.set:
            attributes = dict(node.attrs)
            attributes.update(op.set)
            _check_valid_time(attributes, op.set, f"{where}.set", ctx)
            overlay.set_node_attrs(op.node_id, attributes)
        created = []
        for i, child in enumerate(op.children):
            created.append(_add_plan(overlay, ctx, op.node_id, child, i, f"{where}.with[{i}]"))
        return created
    raise TypeError(op)


def _invalidate(overlay: GraphOverlay, op: Invalidate, ctx: OpContext, where: str) -> None:
    node = _need_node(overlay, op.node_id, where, ctx)
    at = parse_instant(op.at)
    if at is None:
        raise _fail(
            f"'at' {op.at[:60]!r} is not an ISO 8601 date or date-time (e.g. '2026-03-01' or '2026-03-01T09:30:00Z')",
            f"{where}.at",
            "invalid-value",
        )
    closed = node.attrs.get(VALID_TO)
    if closed is not None:
        raise _fail(
            f"{op.node_id!r} is already closed (valid_to {closed!r}); a fact is invalidated once — "
            "change its valid_to with update_node if it was wrong",
            where,
            "already-invalidated",
        )
    begins = parse_instant(node.attrs.get(VALID_FROM))
    if begins is not None and at <= begins:
        raise _fail(
            f"'at' {op.at!r} is not after {op.node_id!r}'s valid_from {node.attrs[VALID_FROM]!r}: "
            "a fact closes after it starts holding",
            f"{where}.at",
            "invalid-value",
        )
    attributes = dict(node.attrs)
    attributes[VALID_TO] = op.at
    if op.reason is not None:
        attributes[INVALIDATED_REASON] = op.reason
    _check_valid_time(attributes, {VALID_TO: op.at}, where, ctx)
    if op.by is not None:
        newer = _need_node(overlay, op.by, where, ctx)
        if op.by == op.node_id:
            raise _fail(f"{op.node_id!r} cannot supersede itself ('by' names the fact being closed)", f"{where}.by")
        if newer.type != node.type:
            raise _fail(
                f"'by' {op.by!r} is a {newer.type} and {op.node_id!r} a {node.type}: a fact is superseded by one of its own type",
                f"{where}.by",
            )
        if newer.attrs.get(VALID_FROM) is None:
            newer_attributes = dict(newer.attrs)
            newer_attributes[VALID_FROM] = op.at
            _check_valid_time(newer_attributes, {VALID_FROM: op.at}, f"{where}.by", ctx)
            overlay.set_node_attrs(op.by, newer_attributes)
            ctx.updated_ids[op.by] = None
            ctx.clearing_ids[op.by] = None
        if overlay.edge(op.by, op.node_id, "replaces") is None:
            overlay.add_edge(op.by, op.node_id, "replaces", {"at": op.at})
    overlay.set_node_attrs(op.node_id, attributes)
    ctx.updated_ids[op.node_id] = None
    ctx.clearing_ids[op.node_id] = None
