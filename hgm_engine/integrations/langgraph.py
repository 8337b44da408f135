"""A LangGraph store kept in an hgm memory: :class:`HgmStore`, a ``langgraph.store.base.BaseStore``
(``pip install 'hgm-engine[langgraph]'``).

**Namespaces are subtrees of one memory, not memories.** A namespace ``("users", "alice",
"prefs")`` is a chain of ``goal`` nodes under the store's root node (``parent_of``, as a plan's
goals nest), and each item is a ``fact`` node under its namespace. So one memory holds every
namespace of an application and whatever else the agent keeps there; a search over a
namespace prefix (``("users",)``) is one query over one subtree, ranked by one index; a batch
of puts is one transaction (all or nothing, one ``t`` in the history, ``as_of`` and ``diff``
over the store like over any other change); and the store works on any memory a program
has, local (``Memory``) or remote (``hgm_engine.connect(...)``), with no server support for
many memories. (A memory per namespace would need a store of many memories, could not search
across a prefix in one ranking, and would turn ``list_namespaces`` into a catalog walk.)

**Values are nodes.** Each field of a value is an attribute of its node, so hgm queries read
them directly (``#ID.where(color = 'red')``) and a search ``filter`` is a path condition.
The store's own attributes start with ``lg_`` (``lg_key``, ``lg_namespace``,
``lg_created_at``, ``lg_updated_at``); ``content`` is the node's searchable text (the value's
string leaves, or the fields ``index`` names). A field whose name hgm gives a meaning to
(``id``, ``type``, ``content``, ``name``, ``title``, ``description``, ``tags``, ``status``,
``kind``, ``level``, ``dirty``, ``valid_from``, ...) or that starts with ``lg_`` is kept as
``lg_v_NAME`` and comes back under its own name.

**Only JSON round-trips.** A value is a mapping of string keys to JSON values; anything that
would not come back as it went in — a tuple (it would be a list), a set, bytes, a datetime, NaN,
a lone surrogate, an integer of more than 4,300 digits, nesting past 64 levels — is refused
before anything is written: a :class:`~hgm_engine.errors.TransactionError` (``invalid-value``,
a ``ValueError``) whose ``where`` names the field (``value.prefs[2]``).

Batches behave as LangGraph's own stores do: the reads of a batch see the state before its
writes, and of several puts of one key the last wins. ``search(query=...)`` is hgm's search
(BM25 over the text, fused with vectors when the memory has an embedder,
docs/search.md), most relevant first with its ``score``; without a query, the newest
update first (as LangGraph's PostgreSQL store orders). TTLs are not supported.

>>> from hgm_engine import Memory
>>> store = HgmStore(Memory())
>>> store.put(("users", "alice"), "prefs", {"food": "dumplings", "budget": 800})
>>> store.get(("users", "alice"), "prefs").value
{'budget': 800, 'food': 'dumplings'}
>>> [item.key for item in store.search(("users",), query="dumplings")]
['prefs']
>>> store.list_namespaces()
[('users', 'alice')]
"""

from __future__ import annotations

import asyncio
import re
import urllib.parse
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

from hgm_engine.client import RemoteMemory
from hgm_engine.errors import ConflictError, Problem, RequestError, TransactionError, TransactionRefused
from hgm_engine.model import value_problem

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        PutOp,
        SearchItem,
        SearchOp,
        validate_op_namespace,
    )
    from langgraph.store.base.embed import get_text_at_path
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(f"HgmStore needs langgraph: pip install 'hgm-engine[langgraph]' ({exc})") from None

__all__ = ["HgmStore", "RESERVED_FIELDS"]

# Attribute names hgm gives a meaning to (or that an op takes): a value's field of that name
# is stored as lg_v_NAME.
RESERVED_FIELDS = frozenset({
    "id", "type", "parent", "order", "dirty", "dirty_marks", "content", "name", "title", "description",
    "tags", "status", "kind", "level", "valid_from", "valid_to", "summary_of", "scenario", "result",
})
_ESCAPE = "lg_v_"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORDS = frozenset({
    "where", "constraint", "rule", "on", "then", "propagate", "depth", "from", "to", "mark", "as", "because",
    "set", "with", "self", "add", "update", "delete", "forward", "backward", "both", "needs_review", "blocked",
    "each", "must", "or", "and", "not", "in", "contains", "true", "false", "null",
})
_COMPARE = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _attr(field: str) -> str:
    return _ESCAPE + field if field in RESERVED_FIELDS or field.startswith("lg_") else field


def _field(attr: str) -> str | None:
    if attr.startswith(_ESCAPE):
        return attr[len(_ESCAPE):]
    if attr.startswith("lg_") or attr in RESERVED_FIELDS:
        return None
    return attr


def _round_trip_problem(value: Any, where: str) -> Problem | None:
    """The first part of ``value`` that would not come back as it went in (JSON only)."""
    kind = type(value)
    if value is None or kind in (str, bool, int, float):
        return value_problem(value, where)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return Problem("invalid-value", f"object keys must be strings, not {key!r}", where=where)
            found = _round_trip_problem(item, f"{where}.{key}")
            if found is not None:
                return found
        return value_problem(value, where)
    if kind is list:
        for i, item in enumerate(value):
            found = _round_trip_problem(item, f"{where}[{i}]")
            if found is not None:
                return found
        return value_problem(value, where)
    hint = " (it would come back as a list)" if isinstance(value, tuple) else ""
    return Problem(
        "invalid-value",
        f"a {kind.__name__} is not a JSON value{hint}: the store keeps JSON objects, lists, strings, numbers, booleans and null",
        where=where,
    )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class HgmStore(BaseStore):
    """A LangGraph ``BaseStore`` in ``memory`` (a :class:`~hgm_engine.Memory` or a
    :class:`~hgm_engine.client.RemoteMemory`), under the node ``root`` (default
    ``"langgraph"``: several stores may share a memory under different roots). ``author`` is
    recorded with each commit; a batch of writes that meets a concurrent change is read and
    tried again, up to ``max_attempts`` times.

    >>> from hgm_engine import Memory
    >>> memory = Memory()
    >>> store = HgmStore(memory, root="app")
    >>> store.put(("docs",), "a", {"title": "Trains", "stars": 5})
    >>> memory.query("#app.descendants.where(stars > 4)").nodes[0]["lg_v_title"]
    'Trains'
    """

    supports_ttl = False

    def __init__(self, memory: Any, *, root: str = "langgraph", author: str = "langgraph", max_attempts: int = 5):
        if not isinstance(root, str) or not root or "/" in root or "#" in root:
            raise RequestError([Problem("invalid-argument", f"root is a node id without '/' or '#', not {root!r}", where="root")])
        self.memory = memory
        self.root = root
        self.author = author
        self.max_attempts = max_attempts

    # -- ids -------------------------------------------------------------------------------

    def _ns_id(self, namespace: tuple[str, ...]) -> str:
        return "/".join((self.root, *(urllib.parse.quote(label, safe="") for label in namespace)))

    def _item_id(self, namespace: tuple[str, ...], key: str) -> str:
        return f"{self._ns_id(namespace)}#{urllib.parse.quote(key, safe='')}"

    # -- reading ---------------------------------------------------------------------------

    def _item(self, node: Mapping[str, Any], cls: type = Item, score: float | None = None) -> Any:
        value = {}
        for attr, item in node.items():
            field = _field(attr)
            if field is not None:
                value[field] = item
        common = {
            "value": dict(sorted(value.items())),
            "key": node["lg_key"],
            "namespace": tuple(node["lg_namespace"]),
            "created_at": datetime.fromisoformat(node["lg_created_at"]),
            "updated_at": datetime.fromisoformat(node["lg_updated_at"]),
        }
        if cls is SearchItem:
            return SearchItem(score=score, **common)
        return Item(**common)

    def _get(self, op: GetOp, t: int) -> Item | None:
        nodes = self.memory.query("#$id.where(has(lg_key))", params={"id": self._item_id(op.namespace, str(op.key))}, as_of=t).nodes
        return self._item(nodes[0]) if nodes else None

    def _conditions(self, filter: Mapping[str, Any] | None, params: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
        """The filter as path conditions, and what is left to check here (a nested object's
        fields, a field whose name the language cannot write)."""
        conditions, rest = [], {}
        for field, wanted in (filter or {}).items():
            attr = _attr(field)
            if not _NAME.match(attr) or attr in _KEYWORDS:
                rest[field] = wanted
                continue
            if isinstance(wanted, dict) and wanted and all(k in _COMPARE for k in wanted):
                for op, operand in wanted.items():
                    name = f"p{len(params)}"
                    params[name] = operand
                    conditions.append(f"not ({attr} = ${name})" if op == "$ne" else f"{attr} {_COMPARE[op]} ${name}")
            elif isinstance(wanted, dict):
                rest[field] = wanted
            elif wanted is None:
                conditions.append(f"(not has({attr}) or {attr} = null)")
            else:
                name = f"p{len(params)}"
                params[name] = wanted
                conditions.append(f"{attr} = ${name}")
        return conditions, rest

    def _search(self, op: SearchOp, t: int) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise RequestError([Problem("invalid-argument", "limit and offset are integers >= 0", where="search")])
        params: dict[str, Any] = {"prefix": self._ns_id(tuple(op.namespace_prefix))}
        conditions, rest = self._conditions(op.filter, params)
        where = ", ".join(["lg_prefixes contains $prefix", *conditions])
        window = "" if rest else f"[{op.offset}:{op.offset + op.limit}]"
        if op.query:
            params["q"] = op.query
            expr = f"search($q).where({where}){window}"
        else:
            expr = f"#$prefix.descendants.where({where}).sort_by(lg_updated_at, 'desc'){window}"
        nodes = self.memory.query(expr, params=params, as_of=t).nodes
        if rest:
            nodes = [n for n in nodes if all(_matches(self._item(n).value.get(f), w) for f, w in rest.items())]
            nodes = nodes[op.offset : op.offset + op.limit]
        scores: dict[str, float] = {}
        if op.query and nodes:
            scores = {hit["id"]: hit["score"] for hit in self.memory.search(op.query, type="fact", limit=None, as_of=t)}
        return [self._item(n, SearchItem, scores.get(n["id"]) if op.query else None) for n in nodes]

    def _list_namespaces(self, op: ListNamespacesOp, t: int) -> list[tuple[str, ...]]:
        nodes = self.memory.query(
            "#$root.descendants.where(lg_role = 'namespace', exists(children.where(has(lg_key))))",
            params={"root": self.root}, as_of=t,
        ).nodes
        namespaces = [tuple(n["lg_namespace"]) for n in nodes]
        for condition in op.match_conditions or ():
            namespaces = [ns for ns in namespaces if _namespace_matches(condition.match_type, tuple(condition.path), ns)]
        if op.max_depth is not None:
            namespaces = list({ns[: op.max_depth] for ns in namespaces})
        return sorted(set(namespaces))[op.offset : op.offset + op.limit]

    # -- writing ---------------------------------------------------------------------------

    def _attributes(self, op: PutOp, created: str, now: str) -> dict[str, Any]:
        value = op.value
        if not isinstance(value, Mapping):
            raise TransactionError([Problem("invalid-value", f"a value is a mapping of field names to JSON values, not a {type(value).__name__}", where="value")])
        found = _round_trip_problem(dict(value), "value")
        if found is not None:
            raise TransactionError([found])
        attributes = {_attr(field): item for field, item in value.items()}
        if op.index is None:
            text = _strings(dict(value))
        elif op.index is False:
            text = []
        else:
            text = [s for path in op.index for s in get_text_at_path(dict(value), path)]
        if text:
            attributes["content"] = "\n".join(text)
        namespace = tuple(op.namespace)
        attributes.update(
            lg_key=op.key,
            lg_namespace=list(namespace),
            lg_prefixes=[self._ns_id(namespace[:i]) for i in range(len(namespace) + 1)],
            lg_created_at=created,
            lg_updated_at=now,
        )
        return attributes

    def _ops(self, puts: dict[tuple[tuple[str, ...], str], PutOp], t: int) -> list[dict[str, Any]]:
        """The transaction that makes ``puts`` on the state at ``t``."""
        namespaces = {ns[:i] for (ns, _), op in puts.items() if op.value is not None for i in range(len(ns) + 1)}
        wanted = sorted({self._ns_id(ns) for ns in namespaces} | {self._item_id(ns, key) for ns, key in puts})
        known = self._nodes(wanted, t)
        ops: list[dict[str, Any]] = []
        for ns in sorted(namespaces, key=len):
            ns_id = self._ns_id(ns)
            if ns_id in known:
                continue
            doc = {"op": "add_node", "id": ns_id, "type": "goal", "lg_role": "namespace" if ns else "store", "lg_namespace": list(ns)}
            if ns:
                doc.update(parent=self._ns_id(ns[:-1]), lg_label=ns[-1])
            ops.append(doc)
        now = _now()
        for (ns, key), op in puts.items():
            item_id = self._item_id(ns, key)
            old = known.get(item_id)
            if op.value is None:
                if old is not None:
                    ops.append({"op": "delete_node", "id": item_id})
                continue
            attributes = self._attributes(op, old["lg_created_at"] if old else now, now)
            if old is None:
                ops.append(dict(attributes, op="add_node", id=item_id, type="fact", parent=self._ns_id(ns)))
            else:
                gone = sorted(a for a in old if a not in attributes and a not in ("id", "type"))
                ops.append({"op": "update_node", "id": item_id, "set": attributes, "unset": gone})
        return ops

    def _nodes(self, ids: list[str], t: int) -> dict[str, dict[str, Any]]:
        """The nodes of ``ids`` that exist at ``t``: one lookup each in this process, one
        query over the wire (a request per id would cost more than the scan)."""
        if not ids:
            return {}
        if isinstance(self.memory, RemoteMemory):
            return {n["id"]: n for n in self.memory.query("nodes.where(id in $ids)", params={"ids": ids}, as_of=t).nodes}
        found = {}
        for node_id in ids:
            node = self.memory.node(node_id, as_of=t)
            if node is not None:
                found[node_id] = node
        return found

    def _write(self, puts: dict[tuple[tuple[str, ...], str], PutOp]) -> None:
        for op in puts.values():  # refuse a value before any request is made
            if op.value is not None:
                self._attributes(op, "", "")
        for attempt in range(self.max_attempts):
            t = self.memory.t
            ops = self._ops(puts, t)
            if not ops:
                return
            try:
                report = self.memory.apply({"author": self.author, "reason": "langgraph store batch", "base_t": t, "ops": ops})
            except ConflictError:
                continue
            except TransactionError as err:
                if err.category == "duplicate-id" and attempt + 1 < self.max_attempts:
                    continue  # another writer made the same namespace meanwhile
                raise
            if report.violations:
                raise TransactionRefused(report)
            return
        raise ConflictError([Problem("conflict", f"the store's batch met a concurrent change {self.max_attempts} times in a row; nothing of it was written")])

    # -- BaseStore -------------------------------------------------------------------------

    def batch(self, ops: Iterable[Any]) -> list[Any]:
        """Run ``ops`` (GetOp, SearchOp, ListNamespacesOp, PutOp): every read on the state before
        the batch's writes, then the writes as one transaction. Results in the order of ``ops``."""
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        reads = [op for op in ops if not isinstance(op, PutOp)]
        t = self.memory.t if reads else 0
        results: list[Any] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op, t))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, t))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, t))
            elif isinstance(op, PutOp):
                if not op.namespace:
                    raise RequestError([Problem("invalid-argument", "a namespace has at least one label", where="namespace")])
                if op.ttl is not None:
                    raise NotImplementedError("TTL is not supported by HgmStore: put with ttl=None")
                puts[(tuple(op.namespace), str(op.key))] = op
                results.append(None)
            else:
                raise RequestError([Problem("invalid-argument", f"unknown store operation {type(op).__name__}")])
        if puts:
            self._write(puts)
        return results

    async def abatch(self, ops: Iterable[Any]) -> list[Any]:
        """:meth:`batch` in a worker thread (the memory's calls block)."""
        return await asyncio.to_thread(self.batch, list(ops))


def _matches(item: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics for what the path conditions leave over (a nested
    object's fields)."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(item, k, v) for k, v in wanted.items())
        return isinstance(item, dict) and all(_matches(item.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return isinstance(item, list) and len(item) == len(wanted) and all(_matches(i, w) for i, w in zip(item, wanted))
    return item == wanted


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return value == operand
    if op == "$ne":
        return value != operand
    if op not in _COMPARE:
        raise RequestError([Problem("invalid-argument", f"unknown filter operator {op!r}; known: {', '.join(_COMPARE)}", where="filter")])
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


def _namespace_matches(kind: str, path: tuple[str, ...], namespace: tuple[str, ...]) -> bool:
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if kind == "prefix" else zip(reversed(namespace), reversed(path))
    return all(p == "*" or n == p for n, p in pairs)

