"""The REST app configured by environment variables, for any ASGI process manager
(docs/deployment.md)::

    HGM_DB=postgresql://hgm@db/hgm HGM_MAX_OPEN=200 HGM_TOKEN_FILE=/etc/hgm/tokens \\
        uvicorn --factory hgm_engine.server.rest:create_app --host 0.0.0.0 --port 8765 --workers 4
    gunicorn -k uvicorn.workers.UvicornWorker 'hgm_engine.server.rest:create_app()'

Each worker process the manager starts calls the factory once and gets its own
:class:`~hgm_engine.server.registry.MemoryRegistry` of the store (no connection crosses a
fork); the memories it opened are closed when the manager stops it (the app's lifespan).

:data:`ENVIRONMENT` lists every variable, its default and the ``hgm serve`` option it
mirrors. A value that does not fit is refused before anything is opened: the factory prints
``hgm: HGM_X ...`` on stderr and leaves with status 1 (no traceback).

>>> import os, tempfile
>>> from fastapi.testclient import TestClient
>>> env = {"HGM_DB": os.path.join(tempfile.mkdtemp(), "m.db"), "HGM_MAX_OPEN": "10"}
>>> with TestClient(app_from_environment(env)) as client:
...     client.get("/health").json()["status"], client.app.state.registry.max_open
('ok', 10)
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from typing import Any, Mapping

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from hgm_engine.errors import HGMError, Problem, ServiceError
from hgm_engine.server.registry import DEFAULT_MAX_OPEN, MemoryRegistry, malloc_trim_from_env
from hgm_engine.server.service import LLMEndpoint, ServerLimits
from hgm_engine.server.tokens import TokenFile, TokenScopes
from hgm_engine.store import DEFAULT_MEMORY, check_memory_name

__all__ = ["ENVIRONMENT", "app_from_environment", "settings_from_environment"]

_DEFAULTS = ServerLimits()

# name -> (default, the hgm serve option it mirrors, what it is)
ENVIRONMENT: dict[str, tuple[Any, str, str]] = {
    "HGM_DB": (None, "--db", "the store: a SQLite file or a postgresql:// URL (required)"),
    "HGM_MEMORY": (DEFAULT_MEMORY, "--memory", "the memory of the unprefixed routes"),
    "HGM_MAX_OPEN": (DEFAULT_MAX_OPEN, "--max-open", "memories kept open at once, per worker process"),
    "HGM_TOKEN_FILE": (None, "--token-file", "scoped tokens, one 'TOKEN PREFIX [read|write]' a line"),
    "HGM_TOKEN": (None, "--token", "one token that may do everything (not with HGM_TOKEN_FILE)"),
    "HGM_MAX_BODY": (_DEFAULTS.max_body, "--max-body", "largest request body, bytes"),
    "HGM_MAX_QUERY_LENGTH": (_DEFAULTS.max_query_length, "--max-query-length", "characters of query text"),
    "HGM_MAX_WORK": (_DEFAULTS.max_work, "--max-work", "nodes one query's steps may produce"),
    "HGM_QUERY_TIMEOUT": (_DEFAULTS.timeout, "--query-timeout", "seconds one query may run"),
    "HGM_INLINE_BUDGET_MS": (_DEFAULTS.inline_timeout * 1000, "--inline-budget-ms", "a repeated query's budget on the event loop (0: none)"),
    "HGM_BODY_TIMEOUT": (_DEFAULTS.body_timeout, "--body-timeout", "seconds for a body to arrive (0: no limit)"),
    "HGM_MAX_CONCURRENCY": (_DEFAULTS.max_concurrency, "--max-concurrency", "requests answered at once per process (0: no limit)"),
    "HGM_MALLOC_TRIM": (True, "(none: hgm serve reads the variable too)", "0: evictions do not hand the C allocator's free pages back"),
}


def _bad(name: str, message: str) -> ServiceError:
    return ServiceError([Problem("invalid-argument", f"{name} {message}", where=name)])


def _number(env: Mapping[str, str], name: str, *, integer: bool, least: float) -> Any:
    text = env.get(name)
    default = ENVIRONMENT[name][0]
    if text is None or text.strip() == "":
        return default
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise _bad(name, f"is {'a whole number' if integer else 'a number'}, not {text[:40]!r}") from None
    if not (least <= value < math.inf):
        raise _bad(name, f"must be a finite number of at least {least:g}, not {text[:40]!r}")
    return value


def settings_from_environment(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What :data:`ENVIRONMENT` says, checked: ``db``, ``memory``, ``max_open``, ``tokens``
    (a :class:`~hgm_engine.server.tokens.TokenFile`, read again when it changes, a
    :class:`~hgm_engine.server.tokens.TokenScopes` of ``HGM_TOKEN``, or None), ``limits`` and
    ``trim`` (``HGM_MALLOC_TRIM``). A bad value is
    an ``invalid-argument`` naming the variable (a bad token file: ``invalid-token-file``).

    >>> settings_from_environment({"HGM_DB": "m.db", "HGM_MAX_WORK": "500"})["limits"].max_work
    500
    >>> settings_from_environment({"HGM_DB": "m.db", "HGM_MAX_OPEN": "0"})
    Traceback (most recent call last):
    ...
    hgm_engine.errors.ServiceError: invalid-argument at HGM_MAX_OPEN: HGM_MAX_OPEN must be a finite number of at least 1, not '0'
    """
    env = os.environ if env is None else env
    db = env.get("HGM_DB")
    if not db:
        raise _bad("HGM_DB", "is not set: it names the store (a SQLite file or a postgresql:// URL)")
    memory = env.get("HGM_MEMORY") or DEFAULT_MEMORY
    check_memory_name(memory, where="HGM_MEMORY")
    token_file, token = env.get("HGM_TOKEN_FILE") or None, env.get("HGM_TOKEN") or None
    if token_file and token:
        raise _bad("HGM_TOKEN_FILE", "and HGM_TOKEN are both set: give one")
    tokens = TokenFile(token_file) if token_file else (TokenScopes.single(token, source="HGM_TOKEN") if token else None)
    body_timeout = _number(env, "HGM_BODY_TIMEOUT", integer=False, least=0)
    concurrency = _number(env, "HGM_MAX_CONCURRENCY", integer=True, least=0)
    limits = ServerLimits(
        max_body=_number(env, "HGM_MAX_BODY", integer=True, least=1),
        max_query_length=_number(env, "HGM_MAX_QUERY_LENGTH", integer=True, least=1),
        max_work=_number(env, "HGM_MAX_WORK", integer=True, least=1),
        timeout=_number(env, "HGM_QUERY_TIMEOUT", integer=False, least=1e-3),
        inline_timeout=_number(env, "HGM_INLINE_BUDGET_MS", integer=False, least=0) / 1000,
        body_timeout=body_timeout or None,
        max_concurrency=concurrency or None,
    )
    return {
        "db": db,
        "memory": memory,
        "max_open": _number(env, "HGM_MAX_OPEN", integer=True, least=1),
        "tokens": tokens,
        "limits": limits,
        "trim": malloc_trim_from_env(env.get),
    }


def app_from_environment(env: Mapping[str, str] | None = None) -> FastAPI:
    """The REST app over the store ``$HGM_DB`` (see the module), its memory ``$HGM_MEMORY``
    opened once to check the store. Bad settings or a store that cannot be opened: the reason
    on stderr and ``SystemExit(1)`` (a process manager then reports the worker failed).

    >>> app_from_environment({})  # doctest: +SKIP
    hgm: invalid-argument at HGM_DB: HGM_DB is not set: it names the store (a SQLite file or a postgresql:// URL)
    """
    from hgm_engine.server.rest.app import create_app

    try:
        settings = settings_from_environment(env)
        registry = MemoryRegistry(settings["db"], max_open=settings["max_open"], limits=settings["limits"], llm=LLMEndpoint(),
                                  trim=settings["trim"])
        try:
            registry.lease(settings["memory"]).release()
        except BaseException:
            registry.close()
            raise
    except (HGMError, OSError) as exc:
        print(f"hgm: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    app = create_app(registry, tokens=settings["tokens"], default_memory=settings["memory"])
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(started: Any):
        try:
            async with inner(started) as state:
                yield state
        finally:
            await run_in_threadpool(registry.close)  # every memory this worker opened

    app.router.lifespan_context = lifespan
    return app
