"""Value semantics of the language (spec §3): equality, order, membership and sort order.

Numbers compare as numbers whatever their Python type; booleans are not numbers; a string
never equals a number; comparisons between kinds that have no order are false, never errors.

>>> values_equal(1, 1.0), values_equal(True, 1), ordered("<")("a", 1)
(True, False, False)
"""

from __future__ import annotations

import operator
from typing import Any, Callable

__all__ = ["NUMBER_TYPES", "values_equal", "ordered", "contains", "member", "sort_key"]

# ``type(v) in NUMBER_TYPES`` is the number test: it leaves out bool, a subclass of int.
NUMBER_TYPES = (int, float)

_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def values_equal(a: Any, b: Any) -> bool:
    """``=`` of the language: same kind only, numbers as numbers, booleans are not numbers.

    >>> values_equal(1, 1.0), values_equal(True, 1), values_equal(None, None), values_equal((1, "a"), (1.0, "a"))
    (True, False, True, True)
    """
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in NUMBER_TYPES and tb in NUMBER_TYPES:
        return a == b
    if a is None or b is None:
        return a is b
    if ta is str or tb is str:
        return ta is tb and a == b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    return False


def ordered(op: str) -> Callable[[Any, Any], bool]:
    """The test for ``<``, ``<=``, ``>`` or ``>=``: numbers with numbers, strings with strings.

    >>> ordered(">=")(2, 1.5), ordered("<")("a", "b"), ordered("<")(1, "b"), ordered("<")(False, 1)
    (True, True, False, False)
    """
    compare = _COMPARE[op]

    def holds(a: Any, b: Any) -> bool:
        ta, tb = type(a), type(b)
        if (ta in NUMBER_TYPES and tb in NUMBER_TYPES) or (ta is str and tb is str):
            return compare(a, b)
        return False

    return holds


def contains(a: Any, b: Any) -> bool:
    """``a contains b``: an item of a list, or a substring of a string.

    >>> contains((1, "x"), 1.0), contains("abc", "b"), contains("abc", 1)
    (True, True, False)
    """
    if isinstance(a, tuple):
        return any(values_equal(item, b) for item in a)
    if type(a) is str and type(b) is str:
        return b in a
    return False


def member(a: Any, items: Any) -> bool:
    """``a in items``: false unless ``items`` is a list.

    >>> member(2, (1, 2.0)), member("a", "abc")
    (True, False)
    """
    if not isinstance(items, tuple):
        return False
    return any(values_equal(a, item) for item in items)


def sort_key(value: Any) -> tuple:
    """The ascending order of ``sort_by``: numbers, then strings, then booleans, then the rest.

    >>> sorted([True, "b", 2, (1,), "a", 1.5], key=sort_key)
    [1.5, 2, 'a', 'b', True, (1,)]
    """
    kind = type(value)
    if kind in NUMBER_TYPES:
        return (0, value)
    if kind is str:
        return (1, value)
    if kind is bool:
        return (2, value)
    return (3, 0)
