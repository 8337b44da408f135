"""Scoped access: the token file of ``--token-file`` (``hgm serve``, ``hgm mcp``).

One line per token::

    # who may reach which memories (docs/server.md, "Tokens and scopes")
    9c1e7f0b2d4a6e8c0f2b4d6a8c  acme/          write   # the acme platform
    sha256:3f0a...64 hex digits  acme/alice    read    # alice's dashboard
    0a9b8c7d6e5f4a3b2c1d0e9f    *              read    # the auditor

- ``TOKEN`` is the bearer token a client sends (``Authorization: Bearer TOKEN``): at least
  :data:`MIN_TOKEN_LENGTH` printable ASCII characters, no spaces, not starting with ``#``; or
  ``sha256:HEX``, the SHA-256 of the token in 64 hexadecimal digits, so that the file does
  not hold the token itself (``printf %s TOKEN | sha256sum``, or :func:`token_digest`).
- ``PREFIX`` is the memories the token reaches: ``*`` for every memory, else a memory name
  whose **whole segments** count: ``acme`` (or ``acme/``, the same) covers the memory
  ``acme`` and every memory under ``acme/`` (``acme/alice``, ``acme/alice/trip-42``), but
  not ``acmex``. The memory of the unnamed routes and tools is ``default``.
- The mode is ``read`` (queries, history, search: nothing that commits) or ``write``
  (everything ``read`` allows, and commits); ``read`` when omitted, the safe default.
- Blank lines and lines starting with ``#`` are ignored; so is the rest of a line from a
  field that starts with ``#``.
- A token may appear on several lines, with different prefixes: it reaches the union
  (``write`` wins where a ``write`` and a ``read`` line both cover a memory). The same token
  with the same prefix twice is refused as a likely mistake.

Every problem in the file is a :class:`~hgm_engine.errors.ServiceError` of category
``invalid-token-file`` naming the file and the line, and the server does not start. At a
request, a missing or unknown token is ``unauthorized`` (HTTP 401) and a token outside its
scope ``forbidden`` (403). The check needs the memory's name only, so a token learns nothing
about memories outside its scope (a 403 whether they exist or not), and a listing shows it
only the names it covers. Tokens are compared in constant time: the SHA-256 of the token a
client sends is compared with every token's digest with :func:`hmac.compare_digest`, so
the time taken says nothing about how much of a token was right, its length or its prefix.

>>> scopes = TokenScopes.parse(
...     "reader-token-0123456789 acme/ read\\n"
...     "writer-token-0123456789 acme/alice write\\n", source="tokens.txt")
>>> alice = scopes.grant("writer-token-0123456789")
>>> alice.can_write("acme/alice/trip-42"), alice.can_write("acme/bob"), alice.can_read("acmex")
(True, False, False)
>>> scopes.grant("reader-token-0123456789").visible(["acme/alice", "acmex", "default"])
['acme/alice']
>>> scopes.grant("reader-token-0123456789").check("acme/alice", write=True)
Traceback (most recent call last):
...
hgm_engine.errors.ServiceError: forbidden at acme/alice: this token may only read the memory 'acme/alice' (it reads acme/); a change needs a write token
>>> scopes.grant("guess")
Traceback (most recent call last):
...
hgm_engine.errors.ServiceError: unauthorized: the bearer token is not one of this server's tokens
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from typing import Any, Iterable, Mapping

import attrs

from hgm_engine.errors import HGMError, Problem, ServiceError
from hgm_engine.store import check_memory_name

__all__ = [
    "MIN_TOKEN_LENGTH",
    "EVERY_MEMORY",
    "Scope",
    "Grant",
    "OPEN_ACCESS",
    "TokenScopes",
    "token_digest",
    "bearer_token",
]

MIN_TOKEN_LENGTH = 16  # a shorter token is guessable; a sha256: line has no length to check
EVERY_MEMORY = "*"
_DIGEST = re.compile(r"sha256:([0-9A-Fa-f]{64})\Z")
_TOKEN = re.compile(r"[\x21-\x7e]+\Z")  # printable ASCII, no space: what a header carries as is
_MODES = ("read", "write")


def token_digest(token: str) -> str:
    """The ``sha256:HEX`` form of ``token``, to write in a token file instead of the token.

    >>> token_digest("s3cret")
    'sha256:1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0'
    >>> TokenScopes.parse(token_digest("writer-token-0123456789") + " acme write").grant("writer-token-0123456789").can_write("acme")
    True
    """
    return "sha256:" + _sha256(token).hex()


def _sha256(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization`` header value (``Bearer TOKEN``, the scheme in any
    case), or None when there is none or it uses another scheme.

    >>> bearer_token("Bearer abc"), bearer_token("bearer  abc "), bearer_token("Basic abc"), bearer_token(None)
    ('abc', 'abc', None, None)
    """
    if not authorization:
        return None
    scheme, _, rest = authorization.strip().partition(" ")
    token = rest.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


@attrs.frozen
class Scope:
    """One memory prefix a token reaches (``*`` for all), and whether it may write there.

    >>> Scope("acme", write=False).covers("acme/alice"), Scope("acme", write=False).covers("acmex")
    (True, False)
    """

    prefix: str  # "*", or a memory name without a trailing "/"
    write: bool = False

    def covers(self, name: str) -> bool:
        """Whether the memory ``name`` is under this scope (whole segments).

        >>> Scope("*").covers("anything"), Scope("acme").covers("acme")
        (True, True)
        """
        if self.prefix == EVERY_MEMORY:
            return True
        return name == self.prefix or name.startswith(self.prefix + "/")

    def shown(self) -> str:
        """The prefix as a message shows it: ``*``, or ``acme/``.

        >>> Scope("acme").shown(), Scope("*").shown()
        ('acme/', '*')
        """
        return self.prefix if self.prefix == EVERY_MEMORY else self.prefix + "/"


def _forbidden(message: str, name: str) -> ServiceError:
    return ServiceError([Problem("forbidden", message, where=name)])


@attrs.frozen
class Grant:
    """What one token may do: its scopes, and where it was given (``tokens.txt:3``, for logs;
    never the token itself).

    >>> grant = Grant((Scope("acme", write=True), Scope("shared")), "tokens.txt:4")
    >>> grant.can_write("acme/a"), grant.can_read("shared/x"), grant.can_write("shared/x")
    (True, True, False)
    """

    scopes: tuple[Scope, ...]
    where: str = ""

    @property
    def everything(self) -> bool:
        """Whether it may write every memory (no token file, or a ``* write`` token).

        >>> OPEN_ACCESS.everything, Grant((Scope("*"),)).everything
        (True, False)
        """
        return any(s.prefix == EVERY_MEMORY and s.write for s in self.scopes)

    def can_read(self, name: str) -> bool:
        """Whether the token may read the memory ``name``.

        >>> Grant((Scope("acme"),)).can_read("acme/alice")
        True
        """
        return isinstance(name, str) and any(s.covers(name) for s in self.scopes)

    def can_write(self, name: str) -> bool:
        """Whether the token may commit to the memory ``name``.

        >>> Grant((Scope("acme"),)).can_write("acme/alice")
        False
        """
        return isinstance(name, str) and any(s.write and s.covers(name) for s in self.scopes)

    def check(self, name: str, *, write: bool = False) -> str:
        """``name`` when the token may read it (or write it, with ``write``), else a
        ``forbidden`` error (403) whose ``where`` is the name.

        >>> Grant((Scope("acme"),)).check("acme/alice")
        'acme/alice'
        >>> Grant((Scope("acme"),)).check("other")
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: forbidden at other: this token may not use the memory 'other' (it reads acme/)
        """
        if write and self.can_write(name):
            return name
        if not write and self.can_read(name):
            return name
        if write and self.can_read(name):
            raise _forbidden(
                f"this token may only read the memory {name!r} ({self.describe()}); a change needs a write token", name
            )
        raise _forbidden(f"this token may not use the memory {name!r} ({self.describe()})", name)

    def visible(self, names: Iterable[str]) -> list[str]:
        """The names in ``names`` the token may read, in their order: what a listing shows it.

        >>> Grant((Scope("a"),)).visible(["a", "a/b", "ab", "b"])
        ['a', 'a/b']
        """
        return [name for name in names if self.can_read(name)]

    def describe(self) -> str:
        """The scopes in words, for messages: ``it reads acme/, writes acme/alice/``.

        >>> Grant((Scope("acme"), Scope("acme/alice", write=True))).describe()
        'it reads acme/, writes acme/alice/'
        """
        reads = [s.shown() for s in self.scopes if not s.write]
        writes = [s.shown() for s in self.scopes if s.write]
        parts = []
        if reads:
            parts.append("reads " + ", ".join(reads))
        if writes:
            parts.append("writes " + ", ".join(writes))
        return "it " + ", ".join(parts) if parts else "it reaches no memory"

    def to_json(self) -> dict[str, Any]:
        """The scopes as a document (what a server may show a client about its own token).

        >>> Grant((Scope("acme", write=True),)).to_json()
        {'scopes': [{'prefix': 'acme/', 'mode': 'write'}]}
        """
        return {"scopes": [{"prefix": s.shown(), "mode": "write" if s.write else "read"} for s in self.scopes]}


OPEN_ACCESS = Grant((Scope(EVERY_MEMORY, write=True),), "no token file")
"""The grant of every request when a server has no token file: every memory, read and write."""


@attrs.frozen
class _Entry:
    digest: bytes
    grant: Grant


class TokenScopes:
    """The tokens of a token file (see the module) and what each may do.

    :meth:`load` reads a file, :meth:`parse` a text; :meth:`grant` answers which token a
    client sent (``unauthorized`` when none or an unknown one) with its :class:`Grant`.

    >>> scopes = TokenScopes.parse("audit-token-0123456789 * read", source="t.txt")
    >>> len(scopes), scopes.grant("audit-token-0123456789").where
    (1, 't.txt:1')
    """

    def __init__(self, entries: Iterable[_Entry], source: str = "<tokens>"):
        self._entries = tuple(entries)
        self.source = source

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"TokenScopes({self.source!r}, {len(self)} tokens)"

    @classmethod
    def single(cls, token: str, *, source: str = "--token") -> "TokenScopes":
        """One token that may write every memory (``hgm serve --token``).

        >>> TokenScopes.single("s3cret").grant("s3cret").everything
        True
        """
        if not isinstance(token, str) or not token:
            raise _file_error(source, None, "the token is empty")
        return cls([_Entry(_sha256(token), Grant((Scope(EVERY_MEMORY, write=True),), source))], source)

    @classmethod
    def load(cls, path: str | os.PathLike, *, min_length: int = MIN_TOKEN_LENGTH) -> "TokenScopes":
        """The token file at ``path``; an ``invalid-token-file`` error naming the file (and
        the line) when it cannot be read or breaks the format.

        >>> TokenScopes.load("/no/such/tokens.txt")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: invalid-token-file at /no/such/tokens.txt: cannot read the token file /no/such/tokens.txt: ...
        """
        source = os.fspath(path)
        try:
            with open(source, "rb") as handle:
                data = handle.read(1 << 22)  # 4 MiB: tens of thousands of tokens
                too_long = bool(handle.read(1))
        except OSError as exc:
            raise _file_error(source, None, f"cannot read the token file {source}: {exc.strerror or exc}") from None
        if too_long:
            raise _file_error(source, None, f"the token file {source} is larger than 4 MiB")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise _file_error(source, line, "the token file is not UTF-8 text") from None
        return cls.parse(text, source=source, min_length=min_length)

    @classmethod
    def parse(cls, text: str, *, source: str = "<tokens>", min_length: int = MIN_TOKEN_LENGTH) -> "TokenScopes":
        """The tokens of a token file's ``text``; every problem found is listed (an
        ``invalid-token-file`` error, one problem per line at fault, ``where`` ``FILE:LINE``).

        >>> TokenScopes.parse("short acme\\nlong-enough-token-0123 acme rw", source="t.txt")
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: invalid-token-file at t.txt:1: the token is 5 characters long; a token has at least 16 (or write it as sha256:HEX)
        invalid-token-file at t.txt:2: the mode is 'read' or 'write', not 'rw'
        """
        problems: list[Problem] = []
        found: dict[bytes, list[tuple[Scope, int]]] = {}
        for number, raw in enumerate(text.split("\n"), start=1):
            line = raw.rstrip("\r")
            try:
                parsed = _parse_line(line, min_length)
            except ValueError as exc:
                problems.append(_line_problem(source, number, str(exc)))
                continue
            if parsed is None:
                continue
            digest, scope = parsed
            seen = found.setdefault(digest, [])
            earlier = next((n for s, n in seen if s.prefix == scope.prefix), None)
            if earlier is not None:
                problems.append(
                    _line_problem(source, number, f"this token is given the prefix {scope.shown()} already on line {earlier}")
                )
                continue
            seen.append((scope, number))
        if not problems and not found:
            problems.append(Problem("invalid-token-file", f"{source} holds no token: every request would be refused", where=source))
        if problems:
            raise ServiceError(problems)
        entries = []
        for digest, scopes in found.items():
            where = f"{source}:{scopes[0][1]}"
            entries.append(_Entry(digest, Grant(tuple(s for s, _ in scopes), where)))
        return cls(entries, source)

    def grant(self, token: str | None) -> Grant:
        """The grant of ``token`` (what the client sent, None for nothing), or an
        ``unauthorized`` error (401). Constant time over the tokens: every digest is compared.

        >>> TokenScopes.single("s3cret").grant(None)
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: unauthorized: a bearer token is required: send the header 'Authorization: Bearer TOKEN'
        """
        if token is None or token == "":
            raise ServiceError([Problem("unauthorized", "a bearer token is required: send the header 'Authorization: Bearer TOKEN'")])
        presented = _sha256(token) if isinstance(token, str) else b""
        match: Grant | None = None
        for entry in self._entries:  # no early exit: the time does not say which entry matched
            if hmac.compare_digest(presented, entry.digest) and match is None:
                match = entry.grant
        if match is None:
            raise ServiceError([Problem("unauthorized", "the bearer token is not one of this server's tokens")])
        return match

    def grant_for_header(self, authorization: str | None) -> Grant:
        """The grant for an ``Authorization`` header's value (see :func:`bearer_token`).

        >>> TokenScopes.single("s3cret").grant_for_header("Bearer s3cret").where
        '--token'
        """
        return self.grant(bearer_token(authorization))


def _parse_line(line: str, min_length: int) -> tuple[bytes, Scope] | None:
    fields = line.split()
    for index, field in enumerate(fields):
        if field.startswith("#"):
            fields = fields[:index]
            break
    if not fields:
        return None
    if len(fields) < 2:
        raise ValueError("a line is 'TOKEN PREFIX [read|write]': the prefix is missing (use * for every memory)")
    if len(fields) > 3:
        raise ValueError(f"a line is 'TOKEN PREFIX [read|write]', not {len(fields)} fields (start a comment with #)")
    token, prefix = fields[0], fields[1]
    mode = fields[2] if len(fields) == 3 else "read"
    digest_match = _DIGEST.match(token)
    if digest_match:
        digest = bytes.fromhex(digest_match.group(1))
    elif token.lower().startswith("sha256:"):
        raise ValueError("a sha256: token is 'sha256:' and 64 hexadecimal digits (the SHA-256 of the token)")
    elif not _TOKEN.match(token):
        bad = next(ch for ch in token if not _TOKEN.match(ch))
        raise ValueError(f"the token has the character {bad!r}: a token is printable ASCII without spaces")
    elif len(token) < min_length:
        raise ValueError(
            f"the token is {len(token)} characters long; a token has at least {min_length} (or write it as sha256:HEX)"
        )
    else:
        digest = _sha256(token)
    if mode not in _MODES:
        raise ValueError(f"the mode is 'read' or 'write', not {mode[:40]!r}")
    if prefix != EVERY_MEMORY:
        name = prefix[:-1] if prefix.endswith("/") else prefix
        try:
            check_memory_name(name, where="prefix")
        except HGMError as err:
            raise ValueError(f"the prefix {prefix[:80]!r} is not '*' or a memory name: {err.message}") from None
        prefix = name
    return digest, Scope(prefix, write=mode == "write")


def _line_problem(source: str, line: int, message: str) -> Problem:
    return Problem("invalid-token-file", message, where=f"{source}:{line}")


def _file_error(source: str, line: int | None, message: str) -> ServiceError:
    return ServiceError([Problem("invalid-token-file", message, where=source if line is None else f"{source}:{line}")])

