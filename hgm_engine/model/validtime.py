"""Valid time: when a fact holds in the world (spec/dsl.md §8.2), as instants.

A node may carry ``valid_from`` and ``valid_to``: ISO 8601 date-times, or dates meaning
midnight UTC. A date-time without an offset is read as UTC. Instants compare as instants
(``2026-06-01T02:00:00+02:00`` is ``2026-06-01T00:00:00Z``). The interval is half-open: a
fact holds from its ``valid_from`` (included) to its ``valid_to`` (excluded); a missing bound
is open.

>>> parse_instant("2026-06-01T02:00:00+02:00") == parse_instant("2026-06-01")
True
>>> parse_instant("yesterday") is None
True
>>> holds_at({"valid_from": "2026-01-01", "valid_to": "2026-06-01"}, parse_instant("2026-06-01"))
False
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Mapping

__all__ = [
    "INSTANTS",
    "InstantCache",
    "VALID_FROM",
    "VALID_TO",
    "parse_instant",
    "format_instant",
    "holds_at",
    "valid_time_problem",
]

VALID_FROM = "valid_from"
VALID_TO = "valid_to"

# What an ISO 8601 date or date-time looks like before Python is asked to read it: the
# extended calendar forms only (YYYY-MM-DD, then optionally T or a space, hh:mm[:ss[.f]], then
# optionally Z or ±hh[:mm]). Python's reader alone would also take forms no one means as a
# time here ("20260301", week dates), and numbers (t values) must never look like times.
_SHAPE = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|z|[+-]\d{2}(?::?\d{2})?)?)?"
)
_UTC = datetime.timezone.utc
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)

_NAN = float("nan")


class InstantCache(dict):
    """Parsed bounds by value: ``INSTANTS[value]`` is the instant of an ISO 8601 text, or NaN
    for anything else (NaN compares false with every instant, so a bound that is not a time
    never holds). A filter over 100k facts reads the same texts again and again; the
    generated condition code indexes this dict inline. At most ``size`` values are kept.

    >>> cache = InstantCache(); cache["1970-01-02"], cache[5] != cache[5]
    (86400.0, True)
    """

    size = 200_000

    def __missing__(self, value: Any) -> float:
        parsed = _parse(value) if type(value) is str else None
        found = _NAN if parsed is None else parsed
        if len(self) < self.size:
            self[value] = found
        return found


INSTANTS = InstantCache()


def parse_instant(text: Any) -> float | None:
    """Seconds since 1970-01-01 UTC for an ISO 8601 date or date-time, else None.

    >>> parse_instant("1970-01-02"), parse_instant("1970-01-01T01:00:00+01:00"), parse_instant("1970-01-01T00:00:01Z")
    (86400.0, 0.0, 1.0)
    >>> parse_instant("2026-02-30"), parse_instant(5), parse_instant("12")
    (None, None, None)
    """
    if type(text) is not str:
        return None
    found = INSTANTS[text]
    return None if found != found else found


def _parse(text: str) -> float | None:
    if len(text) > 40 or not _SHAPE.fullmatch(text):
        return None
    normalized = text.replace(",", ".")
    if normalized[-1] in "zZ":
        normalized = normalized[:-1] + "+00:00"
    try:
        moment = datetime.datetime.fromisoformat(normalized)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_UTC)
    return (moment - _EPOCH).total_seconds()


def format_instant(seconds: float) -> str:
    """The instant as ``YYYY-MM-DDThh:mm:ssZ`` (fractions of a second kept when there are any).

    >>> format_instant(86400.0), format_instant(1.5)
    ('1970-01-02T00:00:00Z', '1970-01-01T00:00:01.500000Z')
    """
    moment = _EPOCH + datetime.timedelta(seconds=seconds)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def holds_at(attributes: Mapping[str, Any], at: float) -> bool:
    """``valid_at``: ``valid_from`` missing or <= ``at``, and ``valid_to`` missing or > ``at``.
    A bound that is present but not a timestamp never holds (spec §8.2).

    >>> holds_at({}, 0.0), holds_at({"valid_from": "soon"}, 0.0), holds_at({"valid_to": "1970-01-01"}, 0.0)
    (True, False, False)
    """
    start = attributes.get(VALID_FROM)
    if start is not None and not INSTANTS[start] <= at:  # NaN (not a time): never holds
        return False
    end = attributes.get(VALID_TO)
    return end is None or INSTANTS[end] > at


def valid_time_problem(attributes: Mapping[str, Any], changed: Mapping[str, Any] | None = None) -> str | None:
    """Why the valid-time bounds of ``attributes`` cannot be stored, or None.

    Only the bounds that ``changed`` holds (all of them when None) must be timestamps — a
    graph file may carry a bound that is not one, which ``valid_at`` then never matches —
    but whenever either is written, both present bounds must be in order
    (``valid_from`` < ``valid_to``: a fact that holds for no instant is a mistake).

    >>> valid_time_problem({"valid_from": "2026-06-01", "valid_to": "2026-01-01"})
    "valid_to '2026-01-01' is before valid_from '2026-06-01'"
    >>> valid_time_problem({"valid_from": "next week"})
    "valid_from 'next week' is not an ISO 8601 date or date-time (e.g. '2026-03-01' or '2026-03-01T09:30:00Z')"
    >>> valid_time_problem({"valid_from": "soon", "content": "x"}, {"content": "y"}) is None
    True
    """
    names = (VALID_FROM, VALID_TO) if changed is None else tuple(n for n in (VALID_FROM, VALID_TO) if n in changed)
    if not names:
        return None
    for name in names:
        value = attributes.get(name)
        if value is not None and parse_instant(value) is None:
            return f"{name} {_shown(value)} is not an ISO 8601 date or date-time (e.g. '2026-03-01' or '2026-03-01T09:30:00Z')"
    start, end = parse_instant(attributes.get(VALID_FROM)), parse_instant(attributes.get(VALID_TO))
    if start is not None and end is not None and end <= start:
        word = "the same instant as" if end == start else "before"
        return f"valid_to {_shown(attributes[VALID_TO])} is {word} valid_from {_shown(attributes[VALID_FROM])}"
    return None


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if value is None:
        return "null"
    return f"{value!r} (a {type(value).__name__}, not a string)"
