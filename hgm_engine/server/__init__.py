"""Servers for agents in other processes: REST (``hgm serve``) and MCP (``hgm mcp``).

Nothing here is imported by the engine: ``import hgm_engine`` never loads FastAPI, uvicorn or
the MCP SDK (the optional dependencies of the ``serve`` extra). The pieces:

- :mod:`hgm_engine.server.service`: the operations as JSON in, JSON out, with the limits a
  shared service needs, and the mapping from error categories to HTTP statuses;
- :mod:`hgm_engine.server.rest`: ``create_app(memory, ...)`` (FastAPI) and ``main(argv)``;
- :mod:`hgm_engine.server.mcp`: the MCP tools, resources and prompts, over stdio or streamable
  HTTP, and ``main(argv)``.

>>> import sys, hgm_engine.server
>>> "fastapi" in sys.modules or "hgm_engine.server.rest" not in sys.modules
True
>>> from hgm_engine.server import create_app  # loads FastAPI on first use
>>> callable(create_app)
True
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app", "MemoryService", "ServerLimits"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from hgm_engine.server.rest import create_app

        return create_app
    if name in ("MemoryService", "ServerLimits"):
        from hgm_engine.server import service

        return getattr(service, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
