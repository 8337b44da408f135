"""What a stored value is: frozen JSON values, the rules every stored value obeys, JSON text.

Every value that enters a memory (a graph file, a transaction document, an op built in code,
an ingested trajectory, query parameters) goes through :func:`value_problem` (one value) or
:func:`values_ok` (whole columns), and JSON text through :func:`parse_json`; payloads hold the
frozen form (:func:`freeze`: tuples and :class:`FrozenDict`), compared with :func:`same_json`.

>>> value_problem(freeze({"tags": ["a", 1.5]}), "ops[0].set") is None
True
>>> thaw(freeze({"tags": ["a"]}))
{'tags': ['a']}
"""

from __future__ import annotations

import json
import math
import re
from itertools import chain, compress
from typing import Any, Iterable, Mapping

from hgm_engine.errors import Problem

__all__ = [
    "FrozenDict",
    "EMPTY_ATTRS",
    "freeze",
    "same_json",
    "thaw",
    "MAX_VALUE_DEPTH",
    "MAX_INT_DIGITS",
    "text_problem",
    "name_problem",
    "id_problem",
    "value_problem",
    "values_ok",
    "strings_ok",
    "parse_json",
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

