"""Which memory a REST request is for, what its token may do there, and the routes of the
store's memories (``/api/v1/memories``).

Every route of the memory route table (:mod:`~hgm_engine.server.rest.app`,
:mod:`~hgm_engine.server.rest.routes`) is served twice from one definition: as
``/api/v1/ROUTE`` for the memory ``default`` and as ``/api/v1/memories/{name}/ROUTE`` for any
memory of the store, the name one path segment with its ``/`` written ``%2F``
(docs/server.md says why). :func:`memory_target` reads the name from the request's raw path
(Starlette decodes ``%2F`` in ``path``); the :class:`~hgm_engine.server.rest.guard.Guard`
then checks the token's scope (403 outside it), leases the memory from the
:class:`~hgm_engine.server.registry.MemoryRegistry` for the whole request (opening it when it
is not resident) and hands the route table the request with the prefix taken off. The routes
call :class:`RequestService`: the service of the memory the current request leased, which
refuses an operation that changes the memory when the token may only read it.

>>> memory_target("/api/v1/memories/acme%2Falice/query", b"/api/v1/memories/acme%2Falice/query")
MemoryTarget(name='acme/alice', path='/api/v1/query', raw_path=b'/api/v1/query', bound=True)
>>> memory_target("/api/v1/query", b"/api/v1/query")
MemoryTarget(name='default', path='/api/v1/query', raw_path=b'/api/v1/query', bound=True)
>>> memory_target("/api/v1/memories", b"/api/v1/memories").bound
False
"""

from __future__ import annotations

import contextvars
import weakref
from typing import Any, Callable
from urllib.parse import quote, unquote_to_bytes

import attrs
from fastapi import FastAPI, Query
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from hgm_engine.errors import Problem, ServiceError
from hgm_engine.server.registry import Lease, MemoryRegistry
from hgm_engine.server.rest.models import error_responses
from hgm_engine.server.rest.responses import NodeJsonCache, json_response
from hgm_engine.server.service import MemoryService
from hgm_engine.server.tokens import OPEN_ACCESS, Grant
from hgm_engine.store import DEFAULT_MEMORY, MAX_NAME_LENGTH, check_memory_name, check_memory_prefix

__all__ = [
    "MEMORIES_PATH",
    "MemoryTarget",
    "memory_target",
    "memory_url",
    "RequestService",
    "NodeJsonPerMemory",
    "WRITE_OPERATIONS",
    "current_lease",
    "current_grant",
    "add_memory_routes",
    "slash_hint",
    "lease_for",
    "CreateMemoryRequest",
    "MemoriesModel",
    "MemoryInfoModel",
    "MemoryCreatedModel",
    "MemoryDroppedModel",
]

MEMORIES_PATH = "/api/v1/memories"
_PREFIX = MEMORIES_PATH + "/"
_API = "/api/v1/"

# The request's lease on its memory and its token's grant (set by the guard for the request).
current_lease: contextvars.ContextVar[Lease | None] = contextvars.ContextVar("hgm_lease", default=None)
current_grant: contextvars.ContextVar[Grant] = contextvars.ContextVar("hgm_grant", default=OPEN_ACCESS)


@attrs.frozen
class MemoryTarget:
    """Where a request goes: the memory ``name`` (None for a route of no memory), the path
    and raw path the route table sees, and whether the request needs the memory leased
    (``bound``: a route of the memory route table)."""

    name: str | None
    path: str
    raw_path: bytes
    bound: bool


def memory_url(name: str, route: str = "") -> str:
    """The path of ``route`` (``query``, ``nodes/g``) in the memory ``name``.

    >>> memory_url("acme/alice", "query"), memory_url("default")
    ('/api/v1/memories/acme%2Falice/query', '/api/v1/memories/default')
    """
    return _PREFIX + quote(name, safe="") + (("/" + route.lstrip("/")) if route else "")


def memory_target(path: str, raw_path: bytes | None, default: str = DEFAULT_MEMORY) -> MemoryTarget | None:
    """The memory and route of a request for ``path`` (decoded) and ``raw_path`` (as sent);
    None when it is for no memory (the documentation pages, ``/openapi.json``). A bad name is
    a ``RequestError`` ``invalid-memory-name``.

    ``/health`` and ``/api/v1/ROUTE`` are the memory ``default`` (the server's default
    memory, ``hgm serve --memory``);
    ``/api/v1/memories/NAME/ROUTE`` is the memory NAME (its ``/`` as ``%2F``), served by the
    route ``/api/v1/ROUTE``; ``/api/v1/memories`` and ``/api/v1/memories/NAME`` are the
    store's routes (not bound: they lease nothing themselves here).

    >>> memory_target("/api/v1/memories/a/b/nodes/c", b"/api/v1/memories/a/b/nodes/c").path
    '/api/v1/b/nodes/c'
    >>> memory_target("/api/v1/memories/a%2Fb", b"/api/v1/memories/a%2Fb")
    MemoryTarget(name='a/b', path='/api/v1/memories/a%2Fb', raw_path=b'/api/v1/memories/a%2Fb', bound=False)
    >>> memory_target("/docs", b"/docs") is None
    True
    """
    if path == "/health":
        return MemoryTarget(default, path, raw_path or path.encode(), True)
    if not path.startswith(_API):
        return None
    if path == MEMORIES_PATH or path == _PREFIX:
        return MemoryTarget(None, path, raw_path or path.encode(), False)
    if not path.startswith(_PREFIX):
        return MemoryTarget(default, path, raw_path or path.encode(), True)
    raw = raw_path if raw_path else quote(path, safe="/").encode("ascii")
    tail = raw[len(_PREFIX):] if raw.startswith(_PREFIX.encode()) else quote(path[len(_PREFIX):], safe="/").encode("ascii")
    segment, slash, rest = tail.partition(b"/")
    try:
        name = unquote_to_bytes(segment).decode("utf-8")
    except UnicodeDecodeError:
        name = unquote_to_bytes(segment).decode("utf-8", "replace")
    if len(name) > MAX_NAME_LENGTH * 3:
        name = name[: MAX_NAME_LENGTH + 1]
    check_memory_name(name, where="memory")
    if not slash or not rest:
        encoded = quote(name, safe="")
        return MemoryTarget(name, _PREFIX + encoded, (_PREFIX + encoded).encode("ascii"), False)
    route = unquote_to_bytes(rest).decode("utf-8", "surrogateescape")
    if route == "memories" or route.startswith("memories/"):
        return MemoryTarget(name, path, raw, True)  # the store's routes are not a memory's: no route
    return MemoryTarget(name, "/api/v1/" + route, b"/api/v1/" + rest, True)


def slash_hint(raw_path: bytes | str) -> str:
    """What a 404 under ``/api/v1/memories/`` adds when the name may have been sent with a
    literal ``/`` (``raw_path``: the path as sent; nothing when its name holds a ``%``).

    >>> slash_hint(b"/api/v1/memories/acme/alice/query")
    "; a memory name's '/' is written %2F in the URL: /api/v1/memories/acme%2Falice/query"
    >>> slash_hint(b"/api/v1/memories/acme%2Falice/querry"), slash_hint("/api/v1/query")
    ('', '')
    """
    text = raw_path.decode("latin-1") if isinstance(raw_path, bytes) else raw_path
    if not text.startswith(_PREFIX):
        return ""
    parts = text[len(_PREFIX):].split("/")
    if len(parts) < 3 or "%" in parts[0]:
        return ""
    return f"; a memory name's '/' is written %2F in the URL: {_PREFIX}{parts[0]}%2F{'/'.join(parts[1:])}"


# -- the service of the request's memory -----------------------------------------------------

# The service operations that change a memory; a read token gets 403 ``forbidden`` for them.
# An operation given ``dry_run``/``commit`` as the second item is a read when that says so.
WRITE_OPERATIONS: dict[str, Callable[[tuple, dict], bool]] = {}


def _always(args: tuple, kwargs: dict) -> bool:
    return True


for _name in (
    "add_node", "confirm", "revert", "snapshot", "add_memory_node", "rewrite_path", "rewrite_path_from_feedback",
    "configure_search", "add_constraint", "remove_constraint", "load_rules", "remove_rules", "load", "ingest",
    "record_outcome", "rollback_path", "reset_path", "set_schema", "purge",
):
    WRITE_OPERATIONS[_name] = _always
WRITE_OPERATIONS["transact"] = lambda args, kwargs: not (
    kwargs.get("dry_run") or (len(args) > 1 and args[1]) or (args and isinstance(args[0], dict) and args[0].get("dry_run") is True)
)
WRITE_OPERATIONS["summarize"] = lambda args, kwargs: not (kwargs.get("dry_run") or (len(args) > 4 and args[4]))
WRITE_OPERATIONS["llm_rewrite"] = lambda args, kwargs: not kwargs.get("dry_run")
WRITE_OPERATIONS["planner_step"] = lambda args, kwargs: bool(kwargs.get("commit"))


class RequestService:
    """The :class:`~hgm_engine.server.service.MemoryService` of the memory the current request
    leased (see the module), for the routes: every attribute is that service's. An operation
    that changes the memory (:data:`WRITE_OPERATIONS`) is refused with 403 ``forbidden``
    when the request's token may only read the memory. Outside a request it is the service
    of ``fallback`` (a registry of one memory), else an ``internal`` error.

    >>> from hgm_engine import Memory
    >>> registry = MemoryRegistry.of(Memory())
    >>> RequestService(registry).health()["status"]
    'ok'
    """

    def __init__(self, registry: MemoryRegistry):
        self._registry = registry

    def _service(self) -> tuple[MemoryService, str]:
        lease = current_lease.get()
        if lease is not None:
            return lease.service, lease.name
        if self._registry.single:
            found = self._registry.lease_resident(DEFAULT_MEMORY)
            if found is not None:
                found.release()  # the one memory of a registry of one is never closed
                return found.service, DEFAULT_MEMORY
        raise ServiceError([Problem("internal", "no memory is leased for this request")])

    def __getattr__(self, attribute: str) -> Any:
        service, name = self._service()
        value = getattr(service, attribute)
        writes = WRITE_OPERATIONS.get(attribute)
        if writes is None or not callable(value):
            return value

        def checked(*args: Any, **kwargs: Any) -> Any:
            if writes(args, kwargs):
                current_grant.get().check(name, write=True)
            return value(*args, **kwargs)

        return checked


class NodeJsonPerMemory:
    """The per-node JSON cache of the query route, one per open memory (it goes with the
    memory when the memory is closed, so an evicted memory's nodes are not kept).

    >>> from hgm_engine import Memory
    >>> from hgm_engine.model.graph import Node
    >>> NodeJsonPerMemory(RequestService(MemoryRegistry.of(Memory()))).join([Node("g", "goal", {}, 1)])
    b'{"id":"g","type":"goal"}'
    """

    def __init__(self, service: RequestService):
        self._service = service
        self._caches: weakref.WeakKeyDictionary[MemoryService, NodeJsonCache] = weakref.WeakKeyDictionary()

    def join(self, payloads: Any) -> bytes:
        """The JSON of each payload, comma-separated, from the current memory's cache."""
        service = self._service._service()[0]
        cache = self._caches.get(service)
        if cache is None:
            cache = self._caches.setdefault(service, NodeJsonCache())
        return cache.join(payloads)


# -- the routes of the store's memories ---------------------------------------------------------


class CreateMemoryRequest(BaseModel):
    """A new memory of the store, with its schema."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=MAX_NAME_LENGTH, description="Segments of [A-Za-z0-9._-] joined by '/'.")
    schema_: dict[str, Any] | None = Field(
        None, alias="schema", description="An hgm-schema/1 document (docs/formats.md); the default schema when omitted."
    )


class MemoriesModel(BaseModel):
    prefix: str
    memories: list[str] = Field(description="The names this token may see, sorted.")


class MemoryInfoModel(BaseModel):
    name: str
    t: int
    nodes: int
    url: str = Field(description="The prefix of this memory's routes (its name's '/' as %2F).")


class MemoryCreatedModel(BaseModel):
    name: str
    url: str
    schema_: dict[str, Any] = Field(alias="schema")


class MemoryDroppedModel(BaseModel):
    name: str
    dropped: bool


def _name_param(name: str) -> str:
    decoded = unquote_to_bytes(name).decode("utf-8", "replace")
    return check_memory_name(decoded, where="memory")


def add_memory_routes(app: FastAPI, registry: MemoryRegistry) -> None:
    """``GET /api/v1/memories`` (``?prefix=``: the names the token may see), ``POST
    /api/v1/memories`` (create, with a write token for the name), ``GET
    /api/v1/memories/{name}`` (its t and size: opens it) and ``DELETE
    /api/v1/memories/{name}`` (drop it and its whole history, with a write token).

    >>> from fastapi.testclient import TestClient
    >>> import os, tempfile
    >>> registry = MemoryRegistry(os.path.join(tempfile.mkdtemp(), "m.db"))
    >>> from hgm_engine.server import create_app
    >>> client = TestClient(create_app(registry))
    >>> client.post("/api/v1/memories", json={"name": "acme/alice"}).json()["url"]
    '/api/v1/memories/acme%2Falice'
    >>> client.get("/api/v1/memories", params={"prefix": "acme/"}).json()
    {'prefix': 'acme/', 'memories': ['acme/alice']}
    """
    name_doc = "The memory's name, its '/' written %2F (acme%2Falice)."

    @app.get(MEMORIES_PATH, tags=["memories"], summary="The store's memories", operation_id="list_memories",
             response_model=MemoriesModel, responses=error_responses(400, 401))
    def list_memories(prefix: str = Query("", max_length=MAX_NAME_LENGTH, description="Only names that start with this.")) -> Response:
        check_memory_prefix(prefix)
        names = current_grant.get().visible(registry.list(prefix))
        return json_response({"prefix": prefix, "memories": names})

    @app.post(MEMORIES_PATH, tags=["memories"], summary="Create a memory", operation_id="create_memory", status_code=201,
              response_model=MemoryCreatedModel, responses=error_responses(400, 401, 403, 409, 501))
    def create_memory(body: CreateMemoryRequest) -> Response:
        """The name must be free (409 `memory-exists`) and under a write token's prefix (403);
        `schema` is stored with the memory (a document with errors: 400 naming each place)."""
        from hgm_engine.model import Schema

        name = check_memory_name(body.name, where="name")
        current_grant.get().check(name, write=True)
        schema = None if body.schema_ is None else Schema.from_document(body.schema_)
        registry.create(name, schema=schema)
        return json_response({"name": name, "url": memory_url(name), "schema": (schema or Schema()).to_document()}, 201)

    @app.get(MEMORIES_PATH + "/{name}", tags=["memories"], summary="A memory's t and size", operation_id="get_memory",
             response_model=MemoryInfoModel, responses=error_responses(400, 401, 403, 404))
    def get_memory(name: str) -> Response:
        """Opens the memory when it is not resident (404 `unknown-memory` with the closest names)."""
        memory = _name_param(name)
        current_grant.get().check(memory)
        with registry.lease(memory) as service:
            health = service.health()
        return json_response({"name": memory, "t": health["t"], "nodes": health["nodes"], "url": memory_url(memory)})

    @app.delete(MEMORIES_PATH + "/{name}", tags=["memories"], summary="Drop a memory and its whole history", operation_id="drop_memory",
                response_model=MemoryDroppedModel, responses=error_responses(400, 401, 403, 404, 409, 501))
    def drop_memory(name: str) -> Response:
        """Requests that use it finish first (409 `conflict` if they take over 30 s); from
        the start of the drop new ones get 404 `unknown-memory`."""
        memory = _name_param(name)
        current_grant.get().check(memory, write=True)
        registry.drop(memory)
        return json_response({"name": memory, "dropped": True})


async def lease_for(registry: MemoryRegistry, name: str) -> Lease:
    """The lease of ``name`` for a request: at once when it is resident, else opened in a
    thread (opening reads the store; the event loop goes on meanwhile).

    >>> import asyncio
    >>> from hgm_engine import Memory
    >>> lease = asyncio.run(lease_for(MemoryRegistry.of(Memory()), "default"))
    >>> lease.name
    'default'
    """
    lease = registry.lease_resident(name)
    if lease is not None:
        return lease
    return await run_in_threadpool(registry.lease, name)

