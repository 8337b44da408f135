"""MCP over HTTP: the SDK's streamable HTTP transport (:func:`http_app`), behind the bearer
token check (:class:`TokenCheck`) when the server has tokens, served by uvicorn
(:func:`serve_http`).

>>> DEFAULT_HTTP_PATH, DEFAULT_HTTP_PORT
('/mcp', 8766)
"""

from __future__ import annotations

import json
from typing import Any

from hgm_engine.errors import HGMError
from hgm_engine.server.mcp.access import GRANT_SCOPE_KEY
from hgm_engine.server.mcp.sdk import build_server
from hgm_engine.server.mcp.stdio import INVALID_REQUEST
from hgm_engine.server.service import error_document
from hgm_engine.server.tokens import TokenFile, TokenScopes
from hgm_engine.store import DEFAULT_MEMORY

__all__ = ["DEFAULT_HTTP_PATH", "DEFAULT_HTTP_PORT", "TokenCheck", "http_app", "serve_http", "is_loopback"]

DEFAULT_HTTP_PATH = "/mcp"
DEFAULT_HTTP_PORT = 8766  # hgm serve's 8765, plus one


class TokenCheck:
    """ASGI middleware in front of the SDK's streamable HTTP app: every HTTP request needs
    ``Authorization: Bearer TOKEN`` with a token of ``tokens``. A missing or unknown token is
    answered 401 with ``WWW-Authenticate: Bearer error="invalid_token"`` (RFC 6750) and a
    JSON-RPC error whose message says what was wrong (the SDK's client raises it as an
    ``MCPError`` with that message) and whose ``data`` is the ``{"category": "unauthorized",
    ...}`` error. A known token's :class:`~hgm_engine.server.tokens.Grant` goes with the
    request to the tools (:func:`request_grant`), and the SDK binds the session it opens to that
    token (a session id used with another token is answered 404, as an unknown session).

    >>> TokenCheck(None, TokenScopes.single("s3cret-s3cret-s3cret")).tokens
    TokenScopes('--token', 1 tokens)
    """

    def __init__(self, app: Any, tokens: TokenScopes | TokenFile):
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"), None)
        try:
            grant = self.tokens.grant_for_header(header)
        except HGMError as err:
            await self._refuse(err, send)
            return
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from mcp.server.auth.provider import AccessToken

        scope = dict(scope)
        scope[GRANT_SCOPE_KEY] = grant
        # The session's owner (the SDK compares it on every request of a session): the token's
        # line in the file names it without holding the token.
        scope["user"] = AuthenticatedUser(AccessToken(token=grant.where, client_id=grant.where, scopes=[]))
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(err: HGMError, send) -> None:
        error = error_document(err)["error"]
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": f"{err.category}: {err.message}", "data": error}}
        ).encode()
        challenge = 'Bearer error="invalid_token", error_description="' + err.message.replace('"', "'") + '"'
        await send({
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode("latin-1", "replace")),
            ],
        })
        await send({"type": "http.response.body", "body": body})


def http_app(
    target: Any,
    *,
    default_memory: str = DEFAULT_MEMORY,
    tokens: TokenScopes | TokenFile | None = None,
    host: str = "127.0.0.1",
    path: str = DEFAULT_HTTP_PATH,
    max_body: int | None = None,
):
    """The ASGI app of MCP over streamable HTTP at ``path``: the SDK's own transport
    (``Server.streamable_http_app``: sessions, SSE or JSON answers, DNS-rebinding protection
    on a loopback ``host``), behind :class:`TokenCheck` when ``tokens`` is given. Run it
    with any ASGI server; :func:`serve_http` runs it on uvicorn.

    >>> from hgm_engine import Memory
    >>> from hgm_engine.server.service import MemoryService
    >>> type(http_app(MemoryService(Memory()))).__name__
    'Starlette'
    """
    from mcp.server.streamable_http_manager import DEFAULT_MAX_REQUEST_BODY_SIZE

    server = build_server(target, default_memory=default_memory, tokens=tokens)
    app = server.streamable_http_app(
        streamable_http_path=path,
        host=host,
        max_request_body_size=max_body or DEFAULT_MAX_REQUEST_BODY_SIZE,
    )
    return app if tokens is None else TokenCheck(app, tokens)


def serve_http(app: Any, sock: Any, *, log_level: str = "warning") -> None:
    """Serve ``app`` on the listening socket ``sock`` with uvicorn until SIGINT or SIGTERM.

    Example (not run here: it serves until stopped)::

        serve_http(http_app(service), socket.create_server(("127.0.0.1", 0)))
    """
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address to bind) reaches this machine alone.

    >>> is_loopback("localhost"), is_loopback("::1"), is_loopback("0.0.0.0"), is_loopback("example.org")
    (True, True, False, False)
    """
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
