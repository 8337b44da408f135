"""MemoryGraph: typed nodes and edges on rustworkx, addressed by stable string ids.

rustworkx reuses an index after its node is removed, so indices never leave this module:
everything outside speaks node ids. Payloads are immutable; changing a node stores a new
payload. The graph keeps derived indexes that queries need — nodes by type, goal roots, and
each node's edges in *edge order* (spec/dsl.md §1) — and refreshes them as it changes.

>>> g = MemoryGraph()
>>> _ = g.add_node("trip", "goal", {"content": "Plan a trip"})
>>> _ = g.add_node("day2", "goal", {})
>>> _ = g.add_node("day1", "goal", {})
>>> _ = g.add_edge("trip", "day2", "parent_of", {"order": 1})
>>> _ = g.add_edge("trip", "day1", "parent_of", {"order": 0})
>>> g.out_ids("trip", "parent_of")
('day1', 'day2')
>>> g.roots()
('trip',)
"""

from __future__ import annotations

import json
import marshal
import math
import re
import operator
import sys
import threading
from collections import deque
from itertools import chain, compress, repeat
from typing import Any, Callable, Iterable, Iterator, Mapping

import attrs
import rustworkx as rx

from hgm_engine.errors import Problem

__all__ = [
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
]


class FrozenDict(dict):
    """A dict that refuses to change; reads are as fast as a plain dict's.

    >>> d = FrozenDict(a=1)
    >>> d["a"]
    1
    >>> d["b"] = 2
    Traceback (most recent call last):
    ...
    TypeError: FrozenDict is immutable
    """

    __slots__ = ()

    def _immutable(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("FrozenDict is immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable  # type: ignore
    __ior__ = _immutable  # type: ignore

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))

    def __reduce__(self):
        return (FrozenDict, (dict(self),))


EMPTY_ATTRS = FrozenDict()
_EMPTY = EMPTY_ATTRS
_intern = sys.intern
_SEQ = operator.attrgetter("seq")
_MATERIALIZING = threading.Lock()  # one reader makes a graph's edge payloads from its columns


class bulk_allocation:
    """Pause the cyclic garbage collector while millions of payloads are made.

    Loads allocate objects that live on; every full collection would walk all of them again,
    which made loading a million nodes superlinear. Nothing made here forms reference cycles
    that need collecting, and the collector's previous state is restored afterwards.

    :meth:`keep` (called inside the block once a memory's state is loaded) also moves every
    object alive at the end into the collector's permanent generation (``gc.freeze``): the
    payloads would otherwise still be young when the collector is enabled again, and its next
    passes would walk all of them (about 80 ms after reopening a 100k-node memory, falling
    on whatever query came next). :func:`release_kept` gives them back (``Memory.close``),
    so a closed memory's objects can be collected again.

    >>> with bulk_allocation():
    ...     payloads = [Node(str(i), "fact", EMPTY_ATTRS, i) for i in range(3)]
    >>> len(payloads)
    3
    """

    _keep = False

    def keep(self) -> None:
        """What the block made lives on: freeze it when the block ends without an error."""
        self._keep = True

    def __enter__(self) -> "bulk_allocation":
        import gc

        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        import gc

        if self._was_enabled:
            if self._keep and exc_type is None:
                gc.freeze()
            gc.enable()


def release_kept() -> None:
    """Let the collector see again what ``bulk_allocation.keep`` moved out of its reach
    (``gc.unfreeze``): called when a memory closes, so that its objects can be freed.

    >>> release_kept()
    """
    import gc

    gc.unfreeze()


_SCALARS = frozenset({str, int, float, bool})
_FLAT = _SCALARS | {type(None)}


def _json_kind(value: Any) -> str:
    if value is None or isinstance(value, (bool, str)):
        return type(value).__name__
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, (list, tuple)):
        return "list"
    return "object"


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values (frozen or not) are the same value written the same way.

    Python's ``==`` says ``True == 1 == 1.0``, but the language does not (``true = 1`` is
    false), and a memory must keep what it was told: an update of ``true`` to ``1`` is a
    change. Lists and objects compare element by element.

    >>> same_json(freeze({"a": [1]}), {"a": [1]}), same_json(True, 1), same_json(2, 2.0)
    (True, False, False)
    """
    kind = _json_kind(a)
    if kind != _json_kind(b):
        return False
    if kind == "list":
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if kind == "object":
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return a == b


def freeze(value: Any) -> Any:
    """A deep, immutable copy of a JSON value: lists become tuples, objects FrozenDicts.

    >>> freeze({"tags": ["a", "b"]})
    {'tags': ('a', 'b')}
    """
    kind = type(value)
    if kind in _SCALARS or value is None or kind is FrozenDict:
        return value
    if kind is dict:
        # Most attribute maps are flat; copy them without a call per value.
        if set(map(type, value.values())) <= _FLAT:
            return FrozenDict(value)
        return FrozenDict({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return FrozenDict({str(k): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    raise TypeError(f"not a JSON value: {type(value).__name__}")


# -- what a stored value may be -----------------------------------------------------------------
#
# Every value that enters a memory (a graph file, a transaction document, an op built in code,
# an ingested trajectory, query parameters) obeys these rules, so that whatever is stored can be
# written back as strict JSON, in UTF-8, to SQLite and PostgreSQL, and read again:
#
# - strings (values, object keys, ids, types) are valid Unicode: no lone surrogate;
# - numbers are finite (no NaN or Infinity) and integers have at most MAX_INT_DIGITS digits
#   (Python's own limit for printing one);
# - lists and objects nest at most MAX_VALUE_DEPTH levels deep; object keys are strings;
# - nothing else (no sets, bytes or other objects).

MAX_VALUE_DEPTH = 64
"""How deep lists and objects may nest in one attribute value (``[[1]]`` is 2 levels)."""

MAX_INT_DIGITS = 4300
"""The most digits an integer value may have (Python's default limit for int → str)."""

_INT_BOUND = 10**MAX_INT_DIGITS
_SURROGATE = re.compile("[\ud800-\udfff]")
_IS_STR = frozenset({str}).__contains__
_IS_NUMBER = frozenset({int, float}).__contains__
_MAPPING_TYPES = frozenset({dict, FrozenDict})
_SEQUENCE_TYPES = frozenset({list, tuple})
_KNOWN_TYPES = _FLAT | _MAPPING_TYPES | _SEQUENCE_TYPES
_STR_TYPE = frozenset({str})


def _invalid(message: str, where: str | None) -> Problem:
    return Problem("invalid-value", message, where=where)


def text_problem(text: Any, where: str | None, what: str = "a string") -> Problem | None:
    """Why ``text`` is not a valid string (not a ``str``, or a lone surrogate in it), or None.

    >>> text_problem("trip", "ops[0].id") is None
    True
    >>> print(text_problem("a\\ud800", "ops[0].id").message)
    a string may not hold a lone surrogate ('\\ud800' at character 2): it is not a Unicode character
    """
    if not isinstance(text, str):
        return _invalid(f"{what} must be a string, not {_kind(text)}", where)
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return _invalid(
        f"{what} may not hold a lone surrogate ({found.group()!r} at character {found.start() + 1}): "
        "it is not a Unicode character",
        where,
    )


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def name_problem(name: str, where: str | None, what: str) -> Problem | None:
    """Why ``name`` (of a snapshot, a rule set, a constraint: ``what``) cannot be stored, or
    None: it holds a lone surrogate (the rule of every stored string) or a control character
    (``\\x00`` cannot be stored in PostgreSQL, the others would move a terminal that lists
    the names). ``name`` is a string already.

    >>> name_problem("before-change", "name", "a snapshot name") is None
    True
    >>> print(name_problem("a\\x1b[2J", "name", "a rule set name").message)
    a rule set name may not hold a control character ('\\x1b' at character 2)
    """
    found = text_problem(name, where, what)
    if found is not None:
        return found
    control = _CONTROL.search(name)
    if control is None:
        return None
    return _invalid(f"{what} may not hold a control character ({control.group()!r} at character {control.start() + 1})", where)


def id_problem(node_id: str, where: str | None) -> Problem | None:
    """Why the string ``node_id`` cannot be a node's id, or None: a lone surrogate (as in
    every string) or NUL, which PostgreSQL cannot store in the text column of an id (a memory
    holding one could not move there).

    >>> id_problem("trip", "ops[0].id") is None
    True
    >>> print(id_problem("a\\x00b", "ops[0].id").message)
    an id may not hold the character NUL (PostgreSQL cannot store it)
    """
    found = text_problem(node_id, where)
    if found is None and "\x00" in node_id:
        found = _invalid("an id may not hold the character NUL (PostgreSQL cannot store it)", where)
    return found


def _kind(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", list: "a list", tuple: "a list", dict: "an object"}
    if value is None:
        return "null"
    return names.get(type(value), f"a {type(value).__name__}")


def value_problem(value: Any, where: str | None, *, depth: int = MAX_VALUE_DEPTH, outer: int = 0) -> Problem | None:
    """The first thing in ``value`` that cannot be stored (see the rules above), as a Problem
    of category ``invalid-value`` whose ``where`` extends ``where`` to the place inside the
    value (``ops[3].set.tags[2]``); None when the whole value is fine. ``depth`` is how many
    levels of lists and objects it may nest; ``outer`` more levels are allowed above those
    (a document whose values sit that deep: a trajectory's steps are 3 levels down). Nesting
    too deep is reported at the value that does (not 64 ``[0]`` further down).

    >>> value_problem({"tags": ["a", 1.5, {"n": None}]}, "ops[0]") is None
    True
    >>> print(value_problem({"tags": ["a", float("nan")]}, "ops[0].set").where)
    ops[0].set.tags[1]
    >>> value_problem(10**5000, "nodes[3].size").message
    'an integer may have at most 4300 digits; this one has 5001'
    >>> found = value_problem([[[1]]], "ops[0].set.v", depth=2)
    >>> found.where, found.message
    ('ops[0].set.v', 'lists and objects may nest at most 2 levels deep in a value')
    >>> value_problem({1: "a"}, "x").message
    'object keys must be strings, not a number'
    >>> value_problem({"a"}, "x").message
    'a set is not a JSON value'
    """
    return _value_problem(value, where, depth + outer, depth, outer, where)


def _value_problem(value: Any, where: str | None, left: int, limit: int, outer: int, top: str | None) -> Problem | None:
    """``left``: levels still allowed; ``outer``: structural levels still above the values;
    ``top``: the place of the value being checked (where nesting too deep is reported)."""
    kind = type(value)
    if kind is str:
        return text_problem(value, where)
    if value is None or kind is bool:
        return None
    if kind is int:
        if -_INT_BOUND < value < _INT_BOUND:
            return None
        return _invalid(f"an integer may have at most {MAX_INT_DIGITS} digits; this one has {_digits(value)}", where)
    if kind is float:
        if math.isfinite(value):
            return None
        return _invalid(f"{json.dumps(value)} is not a JSON number: numbers must be finite", where)
    if outer <= 0 and top is None:
        top = where
    if isinstance(value, (Mapping, list, tuple)) and left <= 0:
        return _invalid(f"lists and objects may nest at most {limit} levels deep in a value", top if top else where)
    inner = top if outer <= 0 else None  # below the document's own levels, the value's place stays
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return _invalid(f"object keys must be strings, not {_kind(key)}", where)
            found = text_problem(key, where, "an object key")
            if found is None:
                found = _value_problem(item, f"{where}.{key}" if where else key, left - 1, limit, outer - 1, inner)
            if found is not None:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            found = _value_problem(item, f"{where or ''}[{position}]", left - 1, limit, outer - 1, inner)
            if found is not None:
                return found
        return None
    for base in (bool, str, int, float):  # a subclass (an IntEnum, a str enum) counts as its base
        if isinstance(value, base):
            return _value_problem(base(value), where, left, limit, outer, top)
    return _invalid(f"{_kind(value)} is not a JSON value", where)


def _digits(number: int) -> int:
    """How many decimal digits ``number`` has (without printing it: that is what fails)."""
    size = abs(number)
    digits = max(1, int(size.bit_length() * 0.30102999566398120))  # a lower bound, within 1
    return digits + 1 if size >= 10**digits else digits


def values_ok(values: Iterable[Any], keys: Iterable[Any] = ()) -> bool:
    """Whether every value of ``values`` (and every object key of ``keys``) can be stored, by
    whole columns rather than one value at a time: a million attribute values take a fraction
    of a second. False means "look closer": :func:`value_problem` then finds the problem (a
    subclass of ``str`` or ``dict``, which this check does not know, is fine there).

    >>> values_ok(["a", 1, 2.5, None, True, ("x", {"k": [1]})], keys=["status"])
    True
    >>> values_ok(["a", float("inf")]), values_ok(["\\ud800"]), values_ok([1], keys=[2])
    (False, False, False)
    """
    level = values if isinstance(values, list) else list(values)
    key_set = set(keys)
    for depth in range(MAX_VALUE_DEPTH + 1):
        if key_set and not (set(map(type, key_set)) <= _STR_TYPE and strings_ok(list(key_set))):
            return False
        if not level:
            return True
        types = list(map(type, level))
        kinds = set(types)
        if not kinds <= _KNOWN_TYPES:
            return False
        if str in kinds and not strings_ok(list(compress(level, map(_IS_STR, types)))):
            return False
        if float in kinds or int in kinds:
            try:  # one pass for both: an int too large for a float overflows, then look closer
                if not all(map(math.isfinite, compress(level, map(_IS_NUMBER, types)))):
                    return False
            except OverflowError:
                return False
        containers = kinds - _FLAT
        if not containers:
            return True
        if depth == MAX_VALUE_DEPTH:
            return False
        following: list[Any] = []
        key_set = set()
        for kind in containers:
            items = list(compress(level, map(frozenset({kind}).__contains__, types)))
            if kind in _MAPPING_TYPES:
                key_set.update(chain.from_iterable(items))
                following.extend(chain.from_iterable(map(dict.values, items)))
            else:
                following.extend(chain.from_iterable(items))
        level = following
    return True  # pragma: no cover - the loop returns


def strings_ok(strings: Iterable[str]) -> bool:
    """Whether no string of ``strings`` (all of type ``str``) holds a lone surrogate.

    >>> strings_ok(["trip", "día"]), strings_ok(["a", "b\\udc80"])
    (True, False)
    """
    strings = strings if isinstance(strings, (list, tuple)) else list(strings)
    return all(map(str.isascii, strings)) or not any(map(_SURROGATE.search, strings))


# -- JSON text -------------------------------------------------------------------------------

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?', re.S)


def parse_json(text: str) -> Any:
    """``json.loads``, except that text the parser cannot take is a ``json.JSONDecodeError``
    with its position too: nesting deeper than the interpreter's recursion allows (Python
    raises ``RecursionError``) and an integer longer than Python's limit for reading one
    (``ValueError``). Callers already report a ``JSONDecodeError`` with its line and column.

    >>> parse_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> try:
    ...     parse_json('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    ... except json.JSONDecodeError as exc:
    ...     print(exc.msg[:33], exc.lineno, exc.colno > 6)
    nested too deeply for this parser 1 True
    >>> try:
    ...     parse_json('{"n": ' + "7" * 5000 + "}")
    ... except json.JSONDecodeError as exc:
    ...     print(exc.msg, exc.colno)
    an integer may have at most 4300 digits; this one has 5000 7
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(_deepest(text), text, _deep_offset(text)) from None
    except ValueError as exc:  # Python's limit on the digits of an integer it reads
        offset, digits = _long_integer(text)
        if offset is None:
            raise json.JSONDecodeError(str(exc), text, 0) from None
        raise json.JSONDecodeError(
            f"an integer may have at most {MAX_INT_DIGITS} digits; this one has {digits}", text, offset
        ) from None


_DEEP_REPORTED = 1000  # the nesting level whose place a too-deep text is reported at


def _deepest(text: str) -> str:
    return f"nested too deeply for this parser (more than {min(_max_depth(text), _DEEP_REPORTED)} levels of lists and objects)"


def _scan_depths(text: str):
    depth = 0
    for token in _TOKENS.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            yield depth, token.start()
        elif char in "]}":
            depth -= 1


def _max_depth(text: str) -> int:
    return max((depth for depth, _ in _scan_depths(text)), default=0)


def _deep_offset(text: str) -> int:
    """Where the text first nests :data:`_DEEP_REPORTED` levels deep (or its deepest point)."""
    deepest, where = 0, 0
    for depth, offset in _scan_depths(text):
        if depth >= _DEEP_REPORTED:
            return offset
        if depth > deepest:
            deepest, where = depth, offset
    return where


def _long_integer(text: str) -> tuple[int | None, int]:
    """The offset and length of the first integer (outside strings) longer than Python reads."""
    for token in _TOKENS.finditer(text):
        found = token.group().lstrip("-")
        if found.isdigit() and len(found) > MAX_INT_DIGITS:  # a float, however long, is read
            return token.start(), len(found)
    return None, 0


def thaw(value: Any) -> Any:
    """The plain JSON form of a frozen value (tuples to lists, FrozenDicts to dicts).

    >>> thaw(freeze({"tags": ["a"]}))
    {'tags': ['a']}
    """
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def _decoded_attrs(raw: str | bytes, owner: Any) -> FrozenDict:
    """The frozen attributes of a payload whose attributes were kept undecoded (a state row's
    JSON text, or a stored image's ``marshal`` bytes, whose checksum matched): keys, and short
    string values such as a status, are interned, so a hundred thousand nodes share one
    ``"status"`` and one ``"done"``."""
    try:
        if raw.__class__ is bytes:  # packed_attrs: frozen and interned already
            value = marshal.loads(raw)
            if value.__class__ is dict:
                return FrozenDict(value)
        else:
            value = json.loads(raw)
    except (TypeError, ValueError, EOFError, RecursionError):
        value = None
    if value.__class__ is not dict:
        from hgm_engine.errors import StoreError

        raise StoreError([Problem("store", f"the stored attributes of {owner._name()} are not a JSON object: {str(raw)[:80]!r}")])
    if not value:
        return _EMPTY
    intern = _intern
    out = {}
    for key, item in value.items():
        kind = item.__class__
        if kind is str:
            if len(item) <= _INTERNED_LENGTH:
                item = intern(item)
        elif kind is dict or kind is list:
            item = freeze(item)
        out[intern(key)] = item
    return FrozenDict(out)


_INTERNED_LENGTH = 24  # string values up to this long are shared between payloads (a status, a kind)


def packed_attrs(payload: "Node | Edge") -> bytes | str | None:
    """A payload's attributes as ``marshal`` bytes (what a stored image keeps: decoded several
    times faster than JSON when a query first reads them), None when it has none; attributes
    with an object inside stay JSON text (they are frozen when read).

    >>> node = Node("g", "goal", freeze({"tags": ["a"], "status": "done"}), 1)
    >>> lazy_nodes(["g"], ["goal"], [packed_attrs(node)], [1])[0].attrs
    {'tags': ('a',), 'status': 'done'}
    >>> packed_attrs(Node("n", "fact", freeze({"where": {"city": "Lyon"}}), 2))
    '{"where":{"city":"Lyon"}}'
    """
    raw = payload._raw
    if raw.__class__ is bytes:
        return raw
    return _packed(payload.attrs if raw is None else _decoded_attrs(raw, payload))


def _packed(attrs: FrozenDict) -> bytes | str | None:
    if not attrs:
        return None
    if not all(map(_flat_or_list, attrs.values())):  # an object inside: kept as JSON text, frozen when read
        return json.dumps(thaw(attrs), ensure_ascii=False, separators=(",", ":"))
    # Interned strings stay interned through marshal, and lists are tuples already: reading
    # them back is marshal.loads and one copy, both in C.
    intern = _intern
    return marshal.dumps({intern(k): intern(v) if v.__class__ is str and len(v) <= _INTERNED_LENGTH else v for k, v in attrs.items()})


def stored_value_indexes(nodes: list[Node], limit: int = 64) -> tuple[list, dict[tuple[str, str], dict[str, list[int]]]]:
    """``packed_attrs`` of every node, and the value indexes worth keeping with them: for each
    (node type, attribute) whose string values take at most ``limit`` distinct values (a
    status, a kind: what ``where(status = 'failed')`` looks up), each value's node positions.

    >>> nodes = [Node("a", "action", freeze({"status": "done", "content": "x"}), 1), Node("b", "action", freeze({"status": "failed"}), 2)]
    >>> stored_value_indexes(nodes, limit=1)[1]
    {('action', 'content'): {'x': [0]}}
    """
    packed = []
    found: dict[tuple[str, str], dict[str, list[int]]] = {}
    dropped: set[tuple[str, str]] = set()
    for position, node in enumerate(nodes):
        raw = node._raw
        attrs = node.attrs if raw is None else _decoded_attrs(raw, node)
        packed.append(packed_attrs(node) if raw.__class__ is bytes else _packed(attrs))
        node_type = node.type
        for attribute, value in attrs.items():
            if value.__class__ is not str:
                continue
            key = (node_type, attribute)
            if key in dropped:
                continue
            buckets = found.get(key)
            if buckets is None:
                buckets = found[key] = {}
            bucket = buckets.get(value)
            if bucket is None:
                if len(buckets) >= limit:
                    dropped.add(key)
                    del found[key]
                    continue
                bucket = buckets[value] = []
            bucket.append(position)
    return packed, found


def _flat_or_list(value: Any) -> bool:
    kind = value.__class__
    if kind is tuple:
        return all(map(_flat_or_list, value))
    return kind is not FrozenDict and kind is not dict


class _LazyAttrs:
    """``attrs`` of a payload made by :func:`lazy_nodes` / :func:`lazy_edges` is decoded
    from its kept JSON text on first read (the slot is then set: later reads are plain slot
    reads). A payload made otherwise has ``attrs`` set and ``_raw`` None."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name != "attrs":
            raise AttributeError(name)
        raw = object.__getattribute__(self, "_raw")
        if raw is None:  # another thread decoded it meanwhile (attrs is set before _raw is cleared)
            return object.__getattribute__(self, "attrs")
        value = _decoded_attrs(raw, self)
        object.__setattr__(self, "attrs", value)
        object.__setattr__(self, "_raw", None)
        return value


@attrs.frozen(slots=True)
class Node(_LazyAttrs):
    """A node payload. ``seq`` is its creation number (the tie-breaker for "in order")."""

    id: str
    type: str
    attrs: FrozenDict
    seq: int
    _raw: Any = attrs.field(default=None, init=False, eq=False, hash=False, repr=False)

    def _name(self) -> str:
        return f"node {self.id!r}"

    def get(self, name: str) -> Any:
        """An attribute by name; ``id`` and ``type`` are attributes like any other."""
        if name == "id":
            return self.id
        if name == "type":
            return self.type
        return self.attrs.get(name)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"id": self.id, "type": self.type}
        doc.update(thaw(self.attrs))
        return doc

    def attrs_text(self) -> str:
        """The attributes as compact JSON text (the kept text itself while not decoded).

        >>> Node("g", "goal", freeze({"status": "done"}), 1).attrs_text()
        '{"status":"done"}'
        """
        raw = self._raw
        if raw.__class__ is str:
            return raw
        return json.dumps(thaw(self.attrs), ensure_ascii=False, separators=(",", ":"))


@attrs.frozen(slots=True)
class Edge(_LazyAttrs):
    """An edge payload; ``(source, target, type)`` identifies it."""

    source: str
    target: str
    type: str
    attrs: FrozenDict
    seq: int
    _raw: Any = attrs.field(default=None, init=False, eq=False, hash=False, repr=False)

    def _name(self) -> str:
        return f"edge {self.source} -{self.type}-> {self.target}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.type)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"from": self.source, "to": self.target, "type": self.type}
        doc.update(thaw(self.attrs))
        return doc

    def attrs_text(self) -> str:
        """The attributes as compact JSON text (see :meth:`Node.attrs_text`)."""
        raw = self._raw
        if raw.__class__ is str:
            return raw
        return json.dumps(thaw(self.attrs), ensure_ascii=False, separators=(",", ":"))


def _fill(cls: type, count: int, columns: dict[str, list], raws: list) -> list:
    """``count`` new payloads of ``cls`` with their slots set from ``columns`` (one list per
    field), without a Python call per payload: ``attrs`` stays unset (decoded on first read)
    where ``raws`` holds a text, and is the empty map where it holds None."""
    objects = list(map(object.__new__, repeat(cls, count)))
    for name, column in columns.items():
        deque(map(getattr(cls, name).__set__, objects, column), 0)
    deque(map(cls._raw.__set__, objects, raws), 0)
    empty = [raw is None for raw in raws]
    deque(map(cls.attrs.__set__, compress(objects, empty), repeat(_EMPTY)), 0)
    return objects


def lazy_nodes(ids: list[str], types: list[str], raws: list[str | None], seqs: list[int]) -> list[Node]:
    """Node payloads made in bulk from columns, their attributes kept as the JSON texts
    ``raws`` (None: no attributes) and decoded when first read. The texts must be what
    hgm wrote (a checksum matched): a text that is not a JSON object is a ``StoreError``
    when it is read.

    >>> nodes = lazy_nodes(["g", "a"], ["goal", "action"], ['{"status":"done"}', None], [1, 2])
    >>> nodes[0].attrs["status"], nodes[1].attrs, nodes[0] == Node("g", "goal", freeze({"status": "done"}), 1)
    ('done', {}, True)
    """
    return _fill(Node, len(ids), {"id": ids, "type": types, "seq": seqs}, raws)


def lazy_edges(sources: list[str], targets: list[str], types: list[str], raws: list[str | None], seqs: list[int]) -> list[Edge]:
    """Edge payloads made in bulk from columns (see :func:`lazy_nodes`).

    >>> [e.attrs for e in lazy_edges(["g"], ["a"], ["parent_of"], ['{"order":0}'], [1])]
    [{'order': 0}]
    """
    return _fill(Edge, len(sources), {"source": sources, "target": targets, "type": types, "seq": seqs}, raws)


def edge_order_key(edge: Edge) -> tuple:
    """Edge order (spec §1): numeric ``order`` first, ascending; then the rest; then creation."""
    order = edge.attrs.get("order")
    if isinstance(order, (int, float)) and not isinstance(order, bool):
        return (0, order, edge.seq)
    return (1, 0, edge.seq)


class Adjacency:
    """One node's edges in one direction, in edge order: ``pairs`` of (edge type, other id),
    and ``by_type`` mapping each edge type to the other ids."""

    __slots__ = ("pairs", "by_type", "typed")

    def __init__(self, edges: list[Edge], outgoing: bool):
        edges.sort(key=edge_order_key)
        if outgoing:
            self.pairs = tuple((e.type, e.target) for e in edges)
        else:
            self.pairs = tuple((e.type, e.source) for e in edges)
        by_type: dict[str, list[str]] = {}
        for edge_type, other in self.pairs:
            by_type.setdefault(edge_type, []).append(other)
        self.by_type = {k: tuple(v) for k, v in by_type.items()}
        # (edge type, node type) -> the other ids of that node type, filled by of_type.
        self.typed: dict[tuple[str, str], tuple[str, ...]] = {}

    def of_type(self, edge_type: str, node_type: str, nodes: Mapping[str, "Node"]) -> tuple[str, ...]:
        """The other ids over ``edge_type`` whose node is a ``node_type`` (``subgoals``:
        goal children), remembered: node types never change, and an adjacency is replaced
        whenever its edges change (a node deleted and made again has lost its edges).

        >>> a = Adjacency([Edge("g", "s", "parent_of", EMPTY_ATTRS, 1), Edge("g", "a", "parent_of", EMPTY_ATTRS, 2)], True)
        >>> a.of_type("parent_of", "goal", {"s": Node("s", "goal", EMPTY_ATTRS, 2), "a": Node("a", "action", EMPTY_ATTRS, 3)})
        ('s',)
        """
        key = (edge_type, node_type)
        found = self.typed.get(key)
        if found is None:
            found = self.typed[key] = tuple(o for o in self.by_type.get(edge_type, ()) if nodes[o].type == node_type)
        return found


NO_ADJACENCY = Adjacency([], True)


def _pairs_adjacency(pairs: tuple) -> Adjacency:
    adjacency = Adjacency.__new__(Adjacency)
    adjacency.pairs = pairs
    by_type: dict[str, list[str]] = {}
    for edge_type, other in pairs:
        group = by_type.get(edge_type)
        if group is None:
            by_type[edge_type] = [other]
        else:
            group.append(other)
    adjacency.by_type = {k: tuple(v) for k, v in by_type.items()}
    adjacency.typed = {}
    return adjacency


class EdgeColumns:
    """The edges of a graph as columns, in *out order* (by source position, then edge
    order): each edge's source and target as positions in ``ids`` (the node ids in creation
    order), its type as a position in ``type_names``, its creation number and its attribute
    text (None: none); ``out_start[p]:out_start[p + 1]`` are node ``p``'s outgoing edges, and
    ``in_start``, ``in_other``, ``in_type`` the incoming ones, in edge order. What a stored
    image holds: a query reads adjacency straight from it, and only a change to the edges (or a
    read of edge payloads) makes the 165k payloads of a 100k-node memory.

    >>> nodes = lazy_nodes(["g", "b", "a"], ["goal"] * 3, [None] * 3, [1, 2, 3])
    >>> edges = lazy_edges(["g", "g"], ["a", "b"], ["parent_of"] * 2, ['{"order":1}', '{"order":0}'], [1, 2])
    >>> columns = EdgeColumns.of_edges(nodes, edges)
    >>> columns.adjacency(0, True).pairs, columns.adjacency(1, False).pairs
    ((('parent_of', 'b'), ('parent_of', 'a')), (('parent_of', 'g'),))
    """

    __slots__ = ("ids", "type_names", "source", "target", "type", "seq", "raw", "out_start", "in_start", "in_other", "in_type", "last_seq")

    def __init__(self, ids, type_names, source, target, type_, seq, raw, out_start, in_start, in_other, in_type, last_seq):
        self.ids, self.type_names = ids, type_names
        self.source, self.target, self.type, self.seq, self.raw = source, target, type_, seq, raw
        self.out_start, self.in_start, self.in_other, self.in_type = out_start, in_start, in_other, in_type
        self.last_seq = last_seq

    @classmethod
    def of_edges(cls, nodes: list[Node], edges: list[Edge]) -> "EdgeColumns":
        """The columns of ``edges`` between ``nodes`` (in creation order)."""
        from array import array

        position = {node.id: i for i, node in enumerate(nodes)}
        names: dict[str, int] = {}
        for edge in edges:
            names.setdefault(edge.type, len(names))
        keyed = sorted(((position[e.source], edge_order_key(e), e) for e in edges), key=lambda item: item[:2])
        out = [e for _, _, e in keyed]
        out_at = {id(e): j for j, e in enumerate(out)}
        incoming = sorted(((position[e.target], edge_order_key(e), e) for e in edges), key=lambda item: item[:2])
        count = len(nodes)

        def starts(ends: list[int]) -> array:
            found = array("i", [0]) * (count + 1)
            for end in ends:
                found[end + 1] += 1
            for p in range(count):
                found[p + 1] += found[p]
            return found

        return cls(
            [node.id for node in nodes],
            list(names),
            array("i", [position[e.source] for e in out]),
            array("i", [position[e.target] for e in out]),
            array("i", [names[e.type] for e in out]),
            array("q", [e.seq for e in out]),
            [packed_attrs(e) for e in out],
            starts([position[e.source] for e in out]),
            starts([p for p, _, _ in incoming]),
            array("i", [position[e.source] for _, _, e in incoming]),
            array("i", [names[e.type] for _, _, e in incoming]),
            max((e.seq for e in edges), default=0),
        )

    @property
    def edge_count(self) -> int:
        return len(self.seq)

    def adjacency(self, p: int, outgoing: bool) -> Adjacency:
        """Node ``p``'s edges in one direction (a node added since has none here)."""
        starts = self.out_start if outgoing else self.in_start
        if p + 1 >= len(starts):
            return NO_ADJACENCY
        a, b = starts[p], starts[p + 1]
        if a == b:
            return NO_ADJACENCY
        others, types = (self.target, self.type) if outgoing else (self.in_other, self.in_type)
        return _pairs_adjacency(tuple(zip(map(self.type_names.__getitem__, types[a:b]), map(self.ids.__getitem__, others[a:b]))))

    def targets_of(self, edge_type: str) -> set[str]:
        """The ids at the end of an edge of ``edge_type``."""
        if edge_type not in self.type_names:
            return set()
        code = self.type_names.index(edge_type)
        return set(map(self.ids.__getitem__, compress(self.target, map(code.__eq__, self.type))))

    def materialize(self, graph: rx.PyDiGraph) -> None:
        """Add every edge, as a payload, to ``graph`` (whose node ``p`` is ``ids[p]``)."""
        at = self.ids.__getitem__
        edges = lazy_edges(
            list(map(at, self.source)), list(map(at, self.target)), list(map(self.type_names.__getitem__, self.type)), self.raw, list(self.seq)
        )
        graph.add_edges_from(list(zip(self.source, self.target, edges)))


class MemoryGraph:
    """A typed multigraph with stable string ids, creation order and edge order.

    Mutations are primitive and unchecked beyond structural integrity (ids exist, no
    duplicate); schema and constraint checks belong to the transaction layer.
    """

    def __init__(self) -> None:
        self._rx = rx.PyDiGraph(multigraph=True)
        self._index: dict[str, int] = {}  # id -> rustworkx index, in creation order
        self._nodes: dict[str, Node] = {}  # id -> payload, in creation order
        # (source, target, type) -> rustworkx edge index; None until first needed (a graph read
        # from a stored image answers queries without it: 165k 3-tuples cost 20 MB).
        self._edge_index: dict[tuple[str, str, str], int] | None = {}
        self._by_type: dict[str, dict[str, Node]] = {}  # type -> id -> payload, creation order
        self._out: dict[str, Adjacency] = {}
        self._in: dict[str, Adjacency] = {}
        # edge type -> (node type or None, outgoing) -> (id -> the other ends, their finder):
        # hop_memo; an entry goes whenever the node's adjacency does.
        self._hops: dict[str, dict[tuple[str | None, bool], tuple[dict[str, tuple[str, ...]], Callable]]] = {}
        self._roots: tuple[str, ...] | None = None
        # The root goals as a set, kept up to date by every change once computed (None: not
        # yet); ``_roots`` is its creation-ordered tuple, rebuilt from the set when needed.
        self._root_ids: set[str] | None = None
        # (type, attribute) -> string value -> id -> payload; built on first use, then kept.
        self._values: dict[tuple[str, str], dict[str, dict[str, Node]]] = {}
        self._unsorted: set[tuple[str, str, str]] = set()  # buckets whose order needs a sort
        self._node_seq = 0
        self._edge_seq = 0
        self.version = 0  # bumped by every change; caches compare it
        # The edges of a graph read from a stored image, as columns (EdgeColumns), until
        # something needs them as payloads: queries read adjacency straight from them.
        self._csr: EdgeColumns | None = None
        # Value indexes kept in that image: (type, attribute) -> value -> positions in
        # ``_stored_ids``; used until the first change to a node (then built by scanning).
        self._stored_values: dict[tuple[str, str], dict[str, Iterable[int]]] | None = None
        self._stored_ids: list[str] = []

    @classmethod
    def from_records(cls, nodes: Iterable[tuple], edges: Iterable[tuple]) -> "MemoryGraph":
        """Build a graph in bulk from ``(id, type, attrs)`` and ``(from, to, type, attrs)``
        records, in creation order; the records must already be valid (ids unique, ends exist).

        >>> g = MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {})], [("g", "a", "parent_of", {})])
        >>> g.out_ids("g", "parent_of")
        ('a',)
        """
        node_payloads = [
            Node(node_id, node_type, freeze(attributes) if attributes else _EMPTY, seq)
            for seq, (node_id, node_type, attributes) in enumerate(nodes, start=1)
        ]
        edge_payloads = [
            Edge(source, target, edge_type, freeze(attributes) if attributes else _EMPTY, seq)
            for seq, (source, target, edge_type, attributes) in enumerate(edges, start=1)
        ]
        return cls.from_payloads(node_payloads, edge_payloads)

    @classmethod
    def from_payloads(cls, nodes: list[Node], edges: list[Edge]) -> "MemoryGraph":
        """Build a graph in bulk from payloads in creation order (ids unique, ends present)."""
        index = {node.id: position for position, node in enumerate(nodes)}
        ends = [(index[e.source], index[e.target], e) for e in edges]
        edge_index = {(e.source, e.target, e.type): position for position, e in enumerate(edges)}
        if len(edge_index) != len(edges):
            raise KeyError("duplicate edge in bulk payloads")
        return cls.from_numbered(nodes, index, ends, edge_index)

    @classmethod
    def from_numbered(
        cls,
        nodes: list[Node],
        index: dict[str, int],
        ends: list[tuple[int, int, Edge]],
        edge_index: dict[tuple[str, str, str], int],
    ) -> "MemoryGraph":
        """Build a graph in bulk from payloads a loader has already numbered by position:
        ``index[node.id]`` is the node's position in ``nodes``, ``ends[j]`` is ``(source
        position, target position, edge j)`` and ``edge_index[edge j's key]`` is ``j``. The
        loader's dictionaries become the graph's own (a fresh rustworkx graph numbers nodes
        and edges from 0 in insertion order), so a million-node file is not indexed twice.

        >>> g = MemoryGraph.from_numbered(
        ...     [Node("g", "goal", EMPTY_ATTRS, 1), Node("a", "action", EMPTY_ATTRS, 2)],
        ...     {"g": 0, "a": 1},
        ...     [(0, 1, Edge("g", "a", "parent_of", EMPTY_ATTRS, 1))],
        ...     {("g", "a", "parent_of"): 0},
        ... )
        >>> g.out_ids("g", "parent_of"), g.roots()
        (('a',), ('g',))
        """
        graph = cls()
        indices = graph._rx.add_nodes_from(nodes)
        if len(indices) and (indices[0] != 0 or indices[-1] != len(nodes) - 1):
            raise AssertionError("a fresh rustworkx graph numbers nodes from 0")
        graph._index = index
        graph._nodes = {node.id: node for node in nodes}
        by_type = graph._by_type
        for node in nodes:
            by_type.setdefault(node.type, {})[node.id] = node
        graph._node_seq = max((node.seq for node in nodes), default=0)
        edge_indices = graph._rx.add_edges_from(ends)
        if len(edge_indices) and (edge_indices[0] != 0 or edge_indices[-1] != len(ends) - 1):
            raise AssertionError("a fresh rustworkx graph numbers edges from 0")
        graph._edge_index = edge_index
        graph._edge_seq = max((edge.seq for _, _, edge in ends), default=0)
        graph.version = 1
        return graph

    @classmethod
    def from_columns(
        cls,
        nodes: list[Node],
        groups: dict[str, Iterable[int]],
        edges: "EdgeColumns",
        values: dict[tuple[str, str], dict[str, Iterable[int]]] | None = None,
        roots: tuple[str, ...] | None = None,
    ) -> "MemoryGraph":
        """Build a graph in bulk from node payloads in creation order (``groups``: each node
        type's positions in ``nodes``, ascending) and the edges as columns, which stay
        columns until something needs them as payloads (queries read adjacency from them).
        ``values``: value indexes kept with them ((type, attribute) → string value → the
        positions, ascending, of the nodes of that type with that value), used by
        :meth:`nodes_with` until a node changes; ``roots``: the root goals in creation order,
        when known (:meth:`roots` then needs no pass over the edges). Nothing is checked: the caller read them from
        a store image whose checksum matched.

        >>> nodes = lazy_nodes(["g", "a"], ["goal", "action"], [None, None], [1, 2])
        >>> columns = EdgeColumns.of_edges(nodes, lazy_edges(["g"], ["a"], ["parent_of"], [None], [1]))
        >>> g = MemoryGraph.from_columns(nodes, {"goal": [0], "action": [1]}, columns)
        >>> g.out_ids("g", "parent_of"), g.roots(), g.edge("g", "a", "parent_of").seq
        (('a',), ('g',), 1)
        """
        graph = cls()
        graph._rx.add_nodes_from(nodes)
        ids = edges.ids
        graph._index = dict(zip(ids, range(len(ids))))
        graph._nodes = dict(zip(ids, nodes))
        id_at, node_at = ids.__getitem__, nodes.__getitem__
        graph._by_type = {name: dict(zip(map(id_at, where), map(node_at, where))) for name, where in groups.items()}
        graph._csr = edges
        graph._stored_values, graph._stored_ids = values, ids
        if roots is not None:
            graph._roots, graph._root_ids = roots, set(roots)
        graph._edge_index = None
        graph._node_seq = max(map(_SEQ, nodes), default=0)
        graph._edge_seq = edges.last_seq
        graph.version = 1
        return graph

    # -- reading ------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    @property
    def edge_count(self) -> int:
        csr = self._csr
        return self._rx.num_edges() if csr is None else csr.edge_count

    def _edge_graph(self) -> rx.PyDiGraph:
        """The rustworkx graph with every edge in it: edges still held as columns (a graph
        read from a stored image) are made into payloads now, once."""
        if self._csr is not None:
            # Readers may ask at the same time (under the state's read lock): one makes the
            # payloads, the others wait; an adjacency read from the columns meanwhile is the
            # same as one read from the payloads.
            with _MATERIALIZING:
                csr = self._csr
                if csr is not None:
                    csr.materialize(self._rx)
                    self._csr = None
        return self._rx

    def _keys(self) -> dict[tuple[str, str, str], int]:
        """The edge-key index, built from the edges on first use."""
        index = self._edge_index
        if index is None:
            rxg = self._edge_graph()
            index = self._edge_index = {edge.key: i for i, edge in zip(rxg.edge_indices(), rxg.edges())}
        return index

    def node(self, node_id: str) -> Node | None:
        """The payload of ``node_id``, or None."""
        return self._nodes.get(node_id)

    def node_map(self) -> Mapping[str, Node]:
        """Id → payload for every node, in creation order (read-only by convention)."""
        return self._nodes

    def nodes(self) -> Iterator[Node]:
        """Every node, in creation order."""
        return iter(self._nodes.values())

    def node_ids(self) -> Iterable[str]:
        return self._nodes.keys()

    def ids_of_type(self, node_type: str) -> Iterable[str]:
        """Ids of the nodes of one type, in creation order (the per-type index)."""
        return self._by_type.get(node_type, {}).keys()

    def nodes_of_type(self, node_type: str) -> Iterable[Node]:
        """Payloads of the nodes of one type, in creation order."""
        return self._by_type.get(node_type, {}).values()

    def count_of_type(self, node_type: str) -> int:
        return len(self._by_type.get(node_type, ()))

    def nodes_with(self, node_type: str, attribute: str, value: str) -> Iterable[Node]:
        """Payloads of the nodes of ``node_type`` whose ``attribute`` is the string ``value``,
        in creation order (a value index per type and attribute, built on first use).

        >>> g = MemoryGraph.from_records([("a", "action", {"status": "done"}), ("b", "action", {"status": "failed"})], [])
        >>> [n.id for n in g.nodes_with("action", "status", "failed")]
        ['b']
        """
        key = (node_type, attribute)
        buckets = self._values.get(key)
        if buckets is None and self._stored_values is not None and key in self._stored_values:
            # kept in the image the graph was read from: the nodes' positions, per value
            nodes, at = self._nodes, self._stored_ids.__getitem__
            buckets = self._values[key] = {
                found: {node_id: nodes[node_id] for node_id in map(at, where)} for found, where in self._stored_values[key].items()
            }
        if buckets is None:
            buckets = self._values[key] = {}
            for node in self._by_type.get(node_type, {}).values():
                found = node.attrs.get(attribute)
                if type(found) is str:
                    buckets.setdefault(found, {})[node.id] = node
        bucket = buckets.get(value)
        if bucket is None:
            return ()
        if (node_type, attribute, value) in self._unsorted:
            ordered = dict(sorted(bucket.items(), key=lambda item: item[1].seq))
            buckets[value] = bucket = ordered
            self._unsorted.discard((node_type, attribute, value))
        return bucket.values()

    def _index_values(self, old: Node | None, new: Node | None) -> None:
        """Keep the built value indexes in step with one node's change."""
        if self._stored_values is not None:
            # The image's positions describe the nodes before this change: every index kept
            # there becomes a built one (the node just changed is in the bucket of its old
            # value, or not there at all), then follows the change as built ones do.
            stored, self._stored_values = self._stored_values, None
            nodes, at = self._nodes, self._stored_ids.__getitem__
            for key, buckets in stored.items():
                if key not in self._values:
                    self._values[key] = {
                        found: {node_id: nodes[node_id] for node_id in map(at, where) if node_id in nodes}
                        for found, where in buckets.items()
                    }
        if not self._values:
            return
        node = new if new is not None else old
        for (node_type, attribute), buckets in self._values.items():
            if node_type != node.type:
                continue
            before = old.attrs.get(attribute) if old is not None else None
            after = new.attrs.get(attribute) if new is not None else None
            if type(before) is str and (before != after or new is None):
                bucket = buckets.get(before)
                if bucket is not None:
                    bucket.pop(node.id, None)
            if type(after) is str:
                bucket = buckets.setdefault(after, {})
                if node.id in bucket:
                    bucket[node.id] = new  # same value, new payload: the position stays
                    continue
                last = next(reversed(bucket.values()), None)
                bucket[node.id] = new
                if last is not None and last.seq > new.seq:
                    self._unsorted.add((node_type, attribute, after))

    def edge(self, source: str, target: str, edge_type: str) -> Edge | None:
        index = self._keys().get((source, target, edge_type))
        return None if index is None else self._edge_graph().get_edge_data_by_index(index)

    def edges(self) -> list[Edge]:
        """Every edge, in creation order."""
        return sorted(self._edge_graph().edges(), key=lambda e: e.seq)

    def edges_of(self, node_id: str) -> list[Edge]:
        """Every edge touching ``node_id`` (outgoing, then incoming), in creation order."""
        index = self._index[node_id]
        rxg = self._edge_graph()
        out = [e for _, _, e in rxg.out_edges(index)]
        inc = [e for _, _, e in rxg.in_edges(index) if e.source != node_id]
        return sorted(out, key=lambda e: e.seq) + sorted(inc, key=lambda e: e.seq)

    def out_edges(self, node_id: str) -> list[Edge]:
        """Outgoing edge payloads of ``node_id`` (any order)."""
        index = self._index.get(node_id)
        return [] if index is None else [e for _, _, e in self._edge_graph().out_edges(index)]

    def in_edges(self, node_id: str) -> list[Edge]:
        """Incoming edge payloads of ``node_id`` (any order)."""
        index = self._index.get(node_id)
        return [] if index is None else [e for _, _, e in self._edge_graph().in_edges(index)]

    @property
    def last_node_seq(self) -> int:
        """The highest creation number handed out so far (nodes)."""
        return self._node_seq

    @property
    def last_edge_seq(self) -> int:
        """The highest creation number handed out so far (edges)."""
        return self._edge_seq

    def out_adjacency(self, node_id: str) -> Adjacency:
        """Outgoing edges of ``node_id`` in edge order (cached until they change)."""
        adjacency = self._out.get(node_id)
        if adjacency is None:
            index = self._index.get(node_id)
            if index is None:
                return NO_ADJACENCY
            csr = self._csr
            if csr is not None:
                adjacency = csr.adjacency(index, True)
            else:
                adjacency = Adjacency([e for _, _, e in self._rx.out_edges(index)], True)
            self._out[node_id] = adjacency
        return adjacency

    def in_adjacency(self, node_id: str) -> Adjacency:
        """Incoming edges of ``node_id`` in edge order (cached until they change)."""
        adjacency = self._in.get(node_id)
        if adjacency is None:
            index = self._index.get(node_id)
            if index is None:
                return NO_ADJACENCY
            csr = self._csr
            if csr is not None:
                adjacency = csr.adjacency(index, False)
            else:
                adjacency = Adjacency([e for _, _, e in self._rx.in_edges(index)], False)
            self._in[node_id] = adjacency
        return adjacency

    def hop_memo(
        self, edge_type: str, node_type: str | None, outgoing: bool
    ) -> tuple[Mapping[str, tuple[str, ...]], Callable[[str], tuple[str, ...]]]:
        """One hop's answers remembered by node id — the other ends over ``edge_type``
        (outgoing or incoming), of ``node_type`` only unless it is None, in edge order — and
        ``find(node_id)``, which works out a node's missing answer (from its adjacency) and
        remembers it. A loop reads ``memo.get(i)`` and calls ``find(i)`` only on a miss: one
        dictionary read per node, where the adjacency costs three. Forgotten for a node
        whenever its adjacency is (any change to its edges of that type, its removal).

        >>> g = MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {}), ("s", "goal", {})],
        ...                              [("g", "a", "parent_of", {}), ("g", "s", "parent_of", {})])
        >>> memo, find = g.hop_memo("parent_of", "goal", True)
        >>> memo.get("g"), find("g"), memo.get("g")
        (None, ('s',), ('s',))
        >>> _ = g.add_node("t", "goal", {}); _ = g.add_edge("g", "t", "parent_of")
        >>> memo.get("g"), find("g")
        (None, ('s', 't'))
        """
        kinds = self._hops.setdefault(edge_type, {})
        known = kinds.get((node_type, outgoing))
        if known is not None:
            return known
        memo: dict[str, tuple[str, ...]] = {}
        adjacency = self.out_adjacency if outgoing else self.in_adjacency
        nodes = self._nodes

        def find(node_id: str) -> tuple[str, ...]:
            found = adjacency(node_id)
            others = found.by_type.get(edge_type, ()) if node_type is None else found.of_type(edge_type, node_type, nodes)
            if node_id in nodes:  # an unknown id may be a node later: nothing remembered
                memo[node_id] = others
            return others

        known = kinds[(node_type, outgoing)] = (memo, find)
        return known

    def out_ids(self, node_id: str, edge_type: str) -> tuple[str, ...]:
        return self.out_adjacency(node_id).by_type.get(edge_type, ())

    def in_ids(self, node_id: str, edge_type: str) -> tuple[str, ...]:
        return self.in_adjacency(node_id).by_type.get(edge_type, ())

    def roots(self) -> tuple[str, ...]:
        """Goals with no incoming ``parent_of`` edge, in creation order."""
        if self._roots is None:
            if self._root_ids is None:
                # One pass over the edge payloads, not an incoming adjacency built for every
                # goal: the first ``root`` of a fresh process at 100k nodes cost 0.5 s that way.
                csr = self._csr
                if csr is not None:
                    children = csr.targets_of("parent_of")
                else:
                    children = {e.target for e in self._rx.edges() if e.type == "parent_of"}
                self._roots = tuple(node_id for node_id in self.ids_of_type("goal") if node_id not in children)
                self._root_ids = set(self._roots)
            else:  # a commit changed a few roots: order the set, do not scan every goal
                nodes = self._nodes
                self._roots = tuple(sorted(self._root_ids, key=lambda node_id: nodes[node_id].seq))
        return self._roots

    def _recheck_root(self, node_id: str) -> None:
        """``node_id``'s incoming ``parent_of`` edges or existence changed: is it a root now?"""
        self._roots = None
        if self._root_ids is None:
            return
        node = self._nodes.get(node_id)
        if node is not None and node.type == "goal" and not self.in_ids(node_id, "parent_of"):
            self._root_ids.add(node_id)
        else:
            self._root_ids.discard(node_id)

    # -- changing -----------------------------------------------------------------------

    def add_node(self, node_id: str, node_type: str, attributes: Mapping[str, Any]) -> Node:
        """Add a node; ``node_id`` must be new."""
        if node_id in self._nodes:
            raise KeyError(f"node {node_id!r} already exists")
        self._node_seq += 1
        node = Node(node_id, node_type, freeze(attributes) if attributes else _EMPTY, self._node_seq)
        self._index[node_id] = self._rx.add_node(node)
        self._nodes[node_id] = node
        self._by_type.setdefault(node_type, {})[node_id] = node
        self._index_values(None, node)
        if node_type == "goal":
            self._recheck_root(node_id)
        self.version += 1
        return node

    def restore_node(self, node: Node) -> None:
        """Put back a node payload exactly as it was (its ``seq`` too); used by loaders."""
        if node.id in self._nodes:
            raise KeyError(f"node {node.id!r} already exists")
        self._node_seq = max(self._node_seq, node.seq)
        self._index[node.id] = self._rx.add_node(node)
        self._nodes[node.id] = node
        self._by_type.setdefault(node.type, {})[node.id] = node
        self._index_values(None, node)
        if node.type == "goal":
            self._recheck_root(node.id)
        self.version += 1

    def set_node_attrs(self, node_id: str, attributes: Mapping[str, Any]) -> Node:
        """Replace a node's attributes with a new immutable payload; returns it."""
        old = self._nodes[node_id]
        node = Node(node_id, old.type, freeze(attributes) if attributes else _EMPTY, old.seq)
        self._rx[self._index[node_id]] = node
        self._nodes[node_id] = node
        self._by_type[node.type][node_id] = node
        self._index_values(old, node)
        self.version += 1
        return node

    def put_node(self, node: Node) -> None:
        """Replace an existing node's payload by ``node`` (same id and type)."""
        old = self._nodes[node.id]
        if old.type != node.type:
            raise ValueError(f"node {node.id!r} cannot change type from {old.type!r} to {node.type!r}")
        self._rx[self._index[node.id]] = node
        self._nodes[node.id] = node
        self._by_type[node.type][node.id] = node
        self._index_values(old, node)
        self.version += 1

    def remove_node(self, node_id: str) -> list[Edge]:
        """Remove a node and its edges; returns the removed edges in creation order."""
        node = self._nodes[node_id]
        removed = self.edges_of(node_id)
        for edge in removed:
            self._forget_edge(edge)
        self._rx.remove_node(self._index.pop(node_id))
        del self._nodes[node_id]
        del self._by_type[node.type][node_id]
        self._index_values(node, None)
        self._out.pop(node_id, None)
        self._in.pop(node_id, None)
        for kinds in self._hops.values():
            for memo, _ in kinds.values():
                memo.pop(node_id, None)
        if node.type == "goal":
            self._recheck_root(node_id)
        self.version += 1
        return removed

    def add_edge(
        self, source: str, target: str, edge_type: str, attributes: Mapping[str, Any] | None = None
    ) -> Edge:
        """Add an edge between existing nodes; ``(source, target, type)`` must be new."""
        key = (source, target, edge_type)
        if key in self._keys():
            raise KeyError(f"edge {source!r} -{edge_type}-> {target!r} already exists")
        if source not in self._nodes or target not in self._nodes:
            missing = source if source not in self._nodes else target
            raise KeyError(f"node {missing!r} does not exist")
        self._edge_seq += 1
        edge = Edge(source, target, edge_type, freeze(attributes) if attributes else _EMPTY, self._edge_seq)
        self._insert_edge(edge)
        return edge

    def restore_edge(self, edge: Edge) -> None:
        """Put back an edge payload exactly as it was (its ``seq`` too)."""
        if edge.key in self._keys():
            raise KeyError(f"edge {edge.key!r} already exists")
        self._edge_seq = max(self._edge_seq, edge.seq)
        self._insert_edge(edge)

    def remove_edge(self, source: str, target: str, edge_type: str) -> Edge:
        """Remove one edge; returns its payload."""
        index = self._keys()[(source, target, edge_type)]
        edge = self._edge_graph().get_edge_data_by_index(index)
        self._forget_edge(edge)
        self.version += 1
        return edge

    def set_edge_attrs(self, source: str, target: str, edge_type: str, attributes: Mapping[str, Any]) -> Edge:
        """Replace an edge's attributes (its creation number stays)."""
        index = self._keys()[(source, target, edge_type)]
        old = self._edge_graph().get_edge_data_by_index(index)
        edge = Edge(source, target, edge_type, freeze(attributes) if attributes else _EMPTY, old.seq)
        self._rx.update_edge_by_index(index, edge)
        self._invalidate(source, target, edge_type)
        self.version += 1
        return edge

    def _insert_edge(self, edge: Edge) -> None:
        index = self._edge_graph().add_edge(self._index[edge.source], self._index[edge.target], edge)
        self._keys()[edge.key] = index
        self._invalidate(edge.source, edge.target, edge.type)
        self.version += 1

    def _forget_edge(self, edge: Edge) -> None:
        index = self._keys().pop(edge.key)
        self._edge_graph().remove_edge_from_index(index)
        self._invalidate(edge.source, edge.target, edge.type)

    def _invalidate(self, source: str, target: str, edge_type: str) -> None:
        self._out.pop(source, None)
        self._in.pop(target, None)
        kinds = self._hops.get(edge_type)
        if kinds:
            for (_, outgoing), (memo, _) in kinds.items():
                memo.pop(source if outgoing else target, None)
        if edge_type == "parent_of":
            self._recheck_root(target)

    # -- whole-graph --------------------------------------------------------------------

    def iter_edges(self) -> Iterable[Edge]:
        """Every edge, in no particular order (cheaper than :meth:`edges`)."""
        return self._edge_graph().edges()

    def find_cycles(self, edge_types: Iterable[str]) -> dict[str, list[str] | None]:
        """For each edge type, the ids along one of its cycles, or None (one pass over edges)."""
        wanted = {edge_type: [] for edge_type in edge_types}
        index = self._index
        for source, target, edge in self._edge_graph().weighted_edge_list():  # indices already: no id lookups
            pairs = wanted.get(edge.type)
            if pairs is not None:
                pairs.append((source, target))
        found: dict[str, list[str] | None] = {}
        for edge_type, pairs in wanted.items():
            found[edge_type] = None
            if not pairs:
                continue
            sub = rx.PyDiGraph(multigraph=False)
            sub.extend_from_edge_list(pairs)  # node i of sub is node i here (gaps are filled)
            if rx.is_directed_acyclic_graph(sub):
                continue
            ids = {i: node_id for node_id, i in index.items()}
            for start in sub.node_indices():
                cycle = rx.digraph_find_cycle(sub, start)
                if cycle:
                    found[edge_type] = [ids[a] for a, _ in cycle]
                    break
        return found

    def to_document(self) -> dict[str, Any]:
        """The graph file document (formats.md): nodes and edges in creation order."""
        return {
            "format": "hgm-graph/1",
            "nodes": [node.to_json() for node in self._nodes.values()],
            "edges": [edge.to_json() for edge in self.edges()],
        }
