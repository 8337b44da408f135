"""The checks every service verb makes of the values a request brings, before the memory
sees them: a ``t`` or a snapshot name (:func:`t_or_name`), text that every store can hold
(:func:`check_text`, :func:`require_text`), regular expressions that cannot backtrack without
bound (:data:`regex_hazard`), the syntax tree of a query (:func:`syntax_nodes`); each refusal
a :class:`~hgm_engine.errors.ServiceError` built by :func:`fail`.

>>> t_or_name("7", "as_of")
7
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

import attrs

from hgm_engine.errors import Problem, ServiceError
from hgm_engine.query import regex_hazard as query_regex_hazard

__all__ = ["fail", "regex_hazard", "syntax_nodes", "t_or_name", "text_problem", "check_text", "require_text", "shown_int"]

def fail(category: str, message: str, where: str | None = None) -> ServiceError:
    """The refusal of one problem: ``category``, ``message`` and where in the request.

    >>> str(fail("invalid-argument", "'k' must be an integer", "k"))
    "invalid-argument at k: 'k' must be an integer"
    """
    return ServiceError([Problem(category, message, where=where)])


# The engine checks every regular expression before compiling it (hgm_engine.query.regexcheck,
# in the regex dialect queries run on); the service applies the same check with its stricter
# ServerLimits.max_regex_repeats. ``regex_hazard`` stays importable from hgm_engine.server.service.
regex_hazard = query_regex_hazard


def syntax_nodes(node: Any) -> Iterator[Any]:
    """Every attrs node of a syntax tree, without recursion (trees can be deep).

    >>> from hgm_engine.query import parse
    >>> [n.upper for n in syntax_nodes(parse("root.children{1,3}")) if type(n).__name__ == "RepeatStep"]
    [3]
    """
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (list, tuple)):
            stack.extend(current)
        elif attrs.has(type(current)):
            yield current
            for field in attrs.fields(type(current)):
                if field.name not in ("span", "op_span", "name_span", "type_span", "text"):
                    stack.append(getattr(current, field.name))


_ASCII_INT = re.compile(r"-?[0-9]+")


def t_or_name(value: Any, what: str) -> int | str | None:
    """A ``t`` (an integer, or ASCII digits: query strings arrive as text) or a snapshot name
    from a request; anything else is ``invalid-argument`` naming the parameter ``what``.

    >>> t_or_name("12", "as_of"), t_or_name("nightly", "as_of"), t_or_name(None, "as_of")
    (12, 'nightly', None)
    >>> t_or_name("²", "as_of")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.ServiceError: invalid-argument at as_of: as_of must be a t (ASCII digits 0-9) or a snapshot name; '²' is neither
    """
    if value is None:
        return None
    if isinstance(value, str):
        if _ASCII_INT.fullmatch(value):
            if len(value.lstrip("-")) > 19:  # beyond any t (and beyond int()'s digit limit)
                raise fail("invalid-argument", f"{what}: {value[:20]}... ({len(value)} characters) is not a t of this memory", what)
            return int(value)
        if not value or value.lstrip("-").isdigit() or not value.isprintable():
            # Other digits ('²', '٣') and empty or control-character strings are no t, and no
            # snapshot can be named so (a snapshot name is never all digits).
            shown = repr(value[:40]) + ("..." if len(value) > 40 else "")
            raise fail("invalid-argument", f"{what} must be a t (ASCII digits 0-9) or a snapshot name; {shown} is neither", what)
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail("invalid-argument", f"{what} must be a t (an integer) or a snapshot name, not {type(value).__name__}", what)
    return value


def text_problem(value: Any, where: str) -> str | None:
    """Where in a JSON value a string is no text (a lone surrogate such as ``\\ud800``, which
    JSON can escape but UTF-8, SQLite and PostgreSQL cannot store), else None. Walks without
    recursion; keys count as strings.

    >>> text_problem({"ops": [{"id": "ok"}, {"id": "\\ud800"}]}, "")
    'ops[1].id'
    >>> text_problem(["fine", {"k": 1}], "steps") is None
    True
    """
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        current, at = stack.pop()
        if isinstance(current, str):
            if not current.isascii():
                try:
                    current.encode("utf-8")
                except UnicodeEncodeError:
                    return at
        elif isinstance(current, Mapping):
            for key, item in current.items():
                if isinstance(key, str) and text_problem(key, at) is not None:
                    return at
                stack.append((item, f"{at}.{key}" if at else str(key)))
        elif isinstance(current, (list, tuple)):
            stack.extend((item, f"{at}[{i}]") for i, item in enumerate(current))
    return None


def check_text(category: str = "invalid-argument", **values: Any) -> None:
    """Refuse a request whose strings are no text (see :func:`text_problem`), naming where.

    >>> check_text(author="planner", reason=None)
    >>> check_text(reason="\\udfff")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.ServiceError: invalid-argument at reason: reason: a lone surrogate (\\ud800-\\udfff) is not a character; send text as UTF-8 or JSON escapes of whole characters
    """
    for name, value in values.items():
        at = text_problem(value, name)
        if at is not None:
            raise fail(
                category,
                f"{at}: a lone surrogate (\\ud800-\\udfff) is not a character; send text as UTF-8 or JSON escapes of whole characters",
                at,
            )


def require_text(what: str, value: Any) -> None:
    """Refuse ``value`` unless it is a string with a character that is not a space.

    >>> require_text("name", "ok")
    >>> require_text("name", " ")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.ServiceError: invalid-argument at name: 'name' must be a non-empty string
    """
    if not isinstance(value, str) or not value.strip():
        raise fail("invalid-argument", f"{what!r} must be a non-empty string", what)


def shown_int(value: int) -> str:
    """An integer for a message: in full when short (``str`` refuses over 4,300 digits).

    >>> shown_int(42), shown_int(-10**5000)
    ('42', '-a number of more than 19 digits')
    """
    return str(value) if -(10**19) < value < 10**19 else ("-" if value < 0 else "") + "a number of more than 19 digits"
