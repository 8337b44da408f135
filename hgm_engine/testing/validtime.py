"""The reference model of valid time (spec ``dsl.md`` §8.2, ``docs/time.md``): reading an
ISO 8601 instant, ``valid_at(T)`` on one node, and the bounds an op may write.

An instant is a date ``YYYY-MM-DD`` (midnight UTC) or a date-time
``YYYY-MM-DDThh:mm[:ss[.fraction]]`` with ``Z``, ``±hh:mm`` or nothing (UTC) after it. It is
read into an exact count of microseconds since 0001-01-01 UTC — integers, so instants compare
exactly, whatever their offsets. (The engine reads a few more spellings — a space for ``T``,
``±hhmm``, ``,`` for the decimal point; the strategies draw none of them, and the model does
not decide them: see docs/testing.md.)

>>> instant("2026-06-01T02:00:00+02:00") == instant("2026-06-01") == instant("2026-06-01T00:00Z")
True
>>> instant("2026-02-30"), instant("yesterday"), instant(5)
(None, None, None)
>>> holds_at({"valid_from": "2026-01-01", "valid_to": "2026-06-01"}, "2026-06-01T00:00:00Z")
False
"""

from __future__ import annotations

import datetime
from typing import Any, Mapping

__all__ = ["VALID_FROM", "VALID_TO", "instant", "holds_at", "bound_problem"]

VALID_FROM, VALID_TO = "valid_from", "valid_to"
_EPOCH = datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc)
_DIGITS = "0123456789"


def _number(text: str, start: int, width: int) -> int | None:
    piece = text[start:start + width]
    if len(piece) != width or any(c not in _DIGITS for c in piece):
        return None
    return int(piece)


def instant(text: Any) -> int | None:
    """Microseconds since 0001-01-01T00:00:00Z for an ISO 8601 date or date-time (see the
    module docstring), else None.

    >>> instant("0001-01-02"), instant("0001-01-01T00:00:01.5Z")
    (86400000000, 1500000)
    """
    if type(text) is not str or len(text) < 10 or text[4] != "-" or text[7] != "-":
        return None
    year, month, day = _number(text, 0, 4), _number(text, 5, 2), _number(text, 8, 2)
    if None in (year, month, day):
        return None
    hour = minute = second = micro = offset = 0
    rest = text[10:]
    if rest:
        if rest[0] != "T" or len(rest) < 6 or rest[3] != ":":
            return None
        hour, minute = _number(rest, 1, 2), _number(rest, 4, 2)
        if None in (hour, minute):
            return None
        rest = rest[6:]
        if rest.startswith(":"):
            second = _number(rest, 1, 2)
            if second is None:
                return None
            rest = rest[3:]
            if rest.startswith("."):
                digits = ""
                rest = rest[1:]
                while rest and rest[0] in _DIGITS:
                    digits, rest = digits + rest[0], rest[1:]
                if not 1 <= len(digits) <= 6:
                    return None
                micro = int(digits.ljust(6, "0"))
        if rest == "Z":
            rest = ""
        elif rest:
            if len(rest) != 6 or rest[0] not in "+-" or rest[3] != ":":
                return None
            hours, minutes = _number(rest, 1, 2), _number(rest, 4, 2)
            if None in (hours, minutes) or hours > 23 or minutes > 59:
                return None
            offset = (1 if rest[0] == "+" else -1) * (hours * 60 + minutes)
            rest = ""
    try:
        moment = datetime.datetime(year, month, day, hour, minute, second, micro, tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds - offset * 60_000_000


def holds_at(attributes: Mapping[str, Any], at: str) -> bool:
    """``valid_at(at)`` on a node's attributes: ``valid_from`` missing (or null) or ≤ at, and
    ``valid_to`` missing (or null) or > at; a bound that is not an instant never holds."""
    moment = instant(at)
    start, end = attributes.get(VALID_FROM), attributes.get(VALID_TO)
    if start is not None and (instant(start) is None or instant(start) > moment):
        return False
    if end is not None and (instant(end) is None or instant(end) <= moment):
        return False
    return True


def bound_problem(attributes: Mapping[str, Any], written: Any = None) -> str | None:
    """Which bound makes an op's write refused (``invalid-value``), or None: each bound among
    ``written`` (names; every bound when None) that is present and not null must be an
    instant, and then ``valid_to`` must come after ``valid_from`` when both are instants.

    >>> bound_problem({"valid_from": "2026-06-01", "valid_to": "2026-06-01"})
    'valid_to'
    >>> bound_problem({"valid_from": "soon", "content": "x"}, ["content"]) is None
    True
    """
    names = [n for n in (VALID_FROM, VALID_TO) if written is None or n in written]
    if not names:
        return None
    for name in names:
        if attributes.get(name) is not None and instant(attributes[name]) is None:
            return name
    start, end = instant(attributes.get(VALID_FROM)), instant(attributes.get(VALID_TO))
    if start is not None and end is not None and end <= start:
        return VALID_TO
    return None
