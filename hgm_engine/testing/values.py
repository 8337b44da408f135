"""What values mean in the reference model: equality, order, ``in``, ``contains``, ``=~`` and
the sort order of ``sort_by``, each written out from ``docs/language.md`` §10 and §8.

Values are JSON values as Python holds them (None, bool, int, float, str, list or tuple,
dict). A *kind* is one of null, boolean, number, string, list, object; booleans are not
numbers.

>>> equal(1, 1.0), equal(True, 1), equal([1, "a"], (1.0, "a"))
(True, False, True)
>>> less(1, 2), less("a", 1)
(True, False)
"""

from __future__ import annotations

import re
from typing import Any

from hgm_engine.testing.graphmodel import is_number

__all__ = ["kind", "equal", "less", "compare", "contains", "member", "matches", "sort_rank"]


def kind(value: Any) -> str:
    """The JSON kind of a value.

    >>> [kind(v) for v in (None, True, 2, 2.5, "x", [1], (1,), {"a": 1})]
    ['null', 'boolean', 'number', 'number', 'string', 'list', 'list', 'object']
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    return "object"


def equal(a: Any, b: Any) -> bool:
    """``a = b``: same kind and equal; numbers as numbers; lists and objects element by element.

    >>> equal(None, None), equal(None, False), equal({"a": [1]}, {"a": [1.0]})
    (True, False, True)
    """
    kind_a, kind_b = kind(a), kind(b)
    if kind_a != kind_b:
        return False
    if kind_a == "list":
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if kind_a == "object":
        return set(a) == set(b) and all(equal(a[k], b[k]) for k in a)
    return a == b


def _orderable(a: Any, b: Any) -> bool:
    return (is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))


def less(a: Any, b: Any) -> bool:
    """``a < b``: both numbers or both strings, and less; anything else is false."""
    return _orderable(a, b) and a < b


def compare(op: str, a: Any, b: Any) -> bool:
    """One comparison operator of the language (``=``, ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``,
    ``in``, ``not in``, ``contains``); ``=~`` is :func:`matches`.

    >>> compare("<=", 2, 2.0), compare(">", "b", "a"), compare("!=", None, 0)
    (True, True, True)
    """
    if op in ("=", "=="):
        return equal(a, b)
    if op == "!=":
        return not equal(a, b)
    if op == "<":
        return less(a, b)
    if op == ">":
        return less(b, a)
    if op == "<=":
        return less(a, b) or (_orderable(a, b) and a == b)
    if op == ">=":
        return less(b, a) or (_orderable(a, b) and a == b)
    if op == "in":
        return member(a, b)
    if op == "not in":
        return not member(a, b)
    if op == "contains":
        return contains(a, b)
    raise ValueError(f"not a comparison: {op}")


def member(x: Any, collection: Any) -> bool:
    """``x in L``: L is a list with an element equal to x (a non-list matches nothing).

    >>> member(None, [None]), member("a", "abc")
    (True, False)
    """
    return kind(collection) == "list" and any(equal(x, item) for item in collection)


def contains(a: Any, b: Any) -> bool:
    """``a contains b``: a list with an element equal to b, or two strings, b inside a.

    >>> contains(["x", 1], 1.0), contains("hotel", "tel"), contains("hotel", 1)
    (True, True, False)
    """
    if kind(a) == "list":
        return member(b, a)
    return isinstance(a, str) and isinstance(b, str) and b in a


def matches(a: Any, pattern: Any) -> bool:
    """``a =~ pattern``: a is a string and Python's ``re.search`` finds the pattern in it.

    >>> matches("Visit the palace", "^Visit"), matches(3, "3")
    (True, False)
    """
    return isinstance(a, str) and isinstance(pattern, str) and re.search(pattern, a) is not None


def sort_rank(value: Any) -> tuple:
    """The ascending sort key of a present (not missing, not null) value: numbers, then
    strings by code point, then booleans (false first), then everything else, all equal.

    >>> sorted([True, "b", 2, [1], "a", 1.5, False], key=sort_rank)
    [1.5, 2, 'a', 'b', False, True, [1]]
    """
    if is_number(value):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, bool):
        return (2, value)
    return (3, 0)
