"""What one MCP request reaches: the server's memories (:func:`memories_of`), the grant of
its bearer token (:func:`request_grant`) and the memory a call names (:class:`Access`).

Every tool call and resource read goes through an :class:`Access`: the ``memory`` argument
(else the server's default) is checked as a name, then against the token's
:class:`~hgm_engine.server.tokens.Grant` (``forbidden`` outside its prefix, and for a change
with a read token); the HTTP transport's token check leaves that grant in the request's scope
under :data:`GRANT_SCOPE_KEY`.

>>> from hgm_engine import Memory
>>> from hgm_engine.server.service import MemoryService
>>> Access(memories_of(MemoryService(Memory()))).name({}, write=True)
'default'
"""

from __future__ import annotations

import contextlib
from typing import Any, Mapping

import attrs

from hgm_engine.errors import Problem, ServiceError
from hgm_engine.server.service import MemoryService
from hgm_engine.server.tokens import OPEN_ACCESS, Grant, TokenFile, TokenScopes
from hgm_engine.store import DEFAULT_MEMORY, check_memory_name, check_memory_prefix, unknown_memory

__all__ = ["Access", "memories_of", "GRANT_SCOPE_KEY", "request_grant"]

class _OneMemory:
    """The memories of a server of one memory (a :class:`MemoryService` given as it is):
    ``default`` alone."""

    def __init__(self, service: MemoryService):
        self.service = service

    @contextlib.contextmanager
    def lease(self, name: str = DEFAULT_MEMORY):
        if name != DEFAULT_MEMORY:
            raise unknown_memory(name, [DEFAULT_MEMORY], "this server (it serves one memory)")
        yield self.service

    def list(self, prefix: str = "") -> list[str]:
        return [DEFAULT_MEMORY] if DEFAULT_MEMORY.startswith(prefix) else []

    def create(self, name: str, *, schema: Any = None) -> None:
        raise ServiceError([Problem("not-implemented", "this server serves one memory: it cannot create others", where=name)])


def memories_of(target: Any) -> Any:
    """The memories a tool call reaches: a registry (``lease(name)``, ``list(prefix)``) as
    it is, a single :class:`MemoryService` as a server of the memory ``default`` alone.

    >>> from hgm_engine import Memory
    >>> memories_of(MemoryService(Memory())).list()
    ['default']
    """
    if isinstance(target, MemoryService):
        return _OneMemory(target)
    return target


@attrs.frozen
class Access:
    """What one tool call (one MCP request) reaches: the server's memories, the grant of the
    request's token (every memory without a token file) and the default memory.

    >>> from hgm_engine import Memory
    >>> Access(memories_of(MemoryService(Memory()))).list_memories("")
    {'memories': ['default'], 'default': 'default', 'prefix': ''}
    """

    memories: Any
    grant: Grant = OPEN_ACCESS
    default: str = DEFAULT_MEMORY

    def name(self, arguments: Mapping[str, Any], *, write: bool) -> str:
        """The memory a call names (its ``memory``, else the default), checked against the
        grant: ``invalid-memory-name``, or ``forbidden`` outside the token's scope.

        >>> from hgm_engine import Memory
        >>> from hgm_engine.server.tokens import Scope
        >>> access = Access(memories_of(MemoryService(Memory())), Grant((Scope("acme"),)), "acme/alice")
        >>> access.name({}, write=False), access.name({"memory": "acme/bob"}, write=False)
        ('acme/alice', 'acme/bob')
        >>> access.name({}, write=True)
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: forbidden at acme/alice: this token may only read the memory 'acme/alice' (it reads acme/); a change needs a write token
        """
        name = arguments.get("memory")
        name = self.default if name is None else check_memory_name(name, where="memory")
        return self.grant.check(name, write=write)

    def list_memories(self, prefix: str) -> dict[str, Any]:
        """The ``list_memories`` document: the names under ``prefix`` the grant covers.

        >>> from hgm_engine import Memory
        >>> Access(memories_of(MemoryService(Memory()))).list_memories("x")["memories"]
        []
        """
        check_memory_prefix(prefix)
        return {"memories": self.grant.visible(self.memories.list(prefix)), "default": self.default, "prefix": prefix}

    def create_memory(self, name: str, schema: Any) -> dict[str, Any]:
        """Make the memory ``name`` (a write grant over it needed) with the ``hgm-schema/1``
        document ``schema`` (None: the default schema).

        >>> import os, tempfile
        >>> from hgm_engine.server.registry import MemoryRegistry
        >>> registry = MemoryRegistry(os.path.join(tempfile.mkdtemp(), "m.db"))
        >>> Access(registry).create_memory("acme/alice", None), registry.list()
        ({'created': 'acme/alice'}, ['acme/alice'])
        >>> registry.close()
        """
        from hgm_engine.model import Schema

        self.grant.check(check_memory_name(name, where="name"), write=True)
        parsed = None if schema is None else Schema.from_document(schema)
        self.memories.create(name, schema=parsed)
        return {"created": name}


GRANT_SCOPE_KEY = "hgm.grant"  # where the HTTP transport's token check leaves a request's Grant


def request_grant(ctx: Any, tokens: TokenScopes | TokenFile | None) -> Grant:
    """The grant of the request behind a handler's ``ctx``: the one the token check of the
    HTTP transport left in the request's scope; every memory when the server has no token
    file (stdio, or HTTP without ``--token-file``). With a token file and no grant found,
    ``unauthorized`` (never open by mistake).

    >>> request_grant(None, None) is OPEN_ACCESS
    True
    """
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    grant = scope.get(GRANT_SCOPE_KEY) if isinstance(scope, dict) else None
    if isinstance(grant, Grant):
        return grant
    if tokens is None:
        return OPEN_ACCESS
    raise ServiceError([Problem("unauthorized", "this request carries no checked bearer token")])
