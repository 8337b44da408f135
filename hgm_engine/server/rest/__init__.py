"""``hgm serve``: the REST server (FastAPI on uvicorn) over the memories of a store.

:func:`create_app` builds the ASGI app for a :class:`~hgm_engine.Memory` or a
:class:`~hgm_engine.server.registry.MemoryRegistry` (with no argument: from the environment); :func:`main` is the
command line (``python -m hgm_engine.server.rest --db memory.db``). Every route speaks the JSON
documents of ``formats.md``; every error is ``{"error": {"category", "message", ...}}`` with
the HTTP status of :func:`~hgm_engine.server.service.http_status`. The OpenAPI document is
served at ``/openapi.json`` (and browsable at ``/docs``). Operator documentation:
``docs/server.md``.

The modules, one job each:

- :mod:`~hgm_engine.server.rest.models`: the request and response documents (pydantic);
- :mod:`~hgm_engine.server.rest.responses`: JSON encoding, error documents, the per-node
  JSON cache the query route splices results from;
- :mod:`~hgm_engine.server.rest.guard`: the outermost ASGI layer (request ids, bearer token,
  body limits, the access log);
- :mod:`~hgm_engine.server.rest.app`: :func:`create_app`, the routes over
  :class:`~hgm_engine.server.service.MemoryService`;
- :mod:`~hgm_engine.server.rest.routes`: the routes of rules, paths, loading and the LLM, the
  documentation pages (assets from ``fastapi-offline``) and the OpenAPI document's finish;
- :mod:`~hgm_engine.server.rest.workers`: one server process, or a supervisor handing
  connections to pre-forked workers;
- :mod:`~hgm_engine.server.rest.command`: ``hgm serve``'s options, :func:`run`, :func:`main`;
- :mod:`~hgm_engine.server.rest.memories`: which memory a request is for, its token's scope,
  the routes of the store's memories (``/api/v1/memories``);
- :mod:`~hgm_engine.server.rest.factory`: the app configured by environment variables
  (``uvicorn --factory hgm_engine.server.rest:create_app``).

>>> from fastapi.testclient import TestClient
>>> from hgm_engine import Memory
>>> client = TestClient(create_app(Memory()))
>>> client.post("/api/v1/transactions", json={"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}).json()["t"]
1
>>> client.post("/api/v1/query", json={"expr": "root"}).json()["ids"]
['g']
>>> r = client.post("/api/v1/query", json={"expr": "root.subgoal"})
>>> r.status_code, r.json()["error"]["category"]
(400, 'unknown-name')
"""

from __future__ import annotations

from hgm_engine.server.rest.app import create_app
from hgm_engine.server.rest.command import DEFAULT_PORT, TOKEN_ENV, add_arguments, add_parser, build_parser, main, run

__all__ = ["create_app", "main", "add_parser", "add_arguments", "run", "build_parser", "DEFAULT_PORT", "TOKEN_ENV"]
