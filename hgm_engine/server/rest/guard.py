"""The REST server's outermost layer: request ids, the bearer token and body limits.

:class:`Guard` wraps the whole ASGI app (outside the framework's own middleware), so a request
refused for its token, size or content type costs no framework work, and every answer —
refused or not — carries ``X-Request-ID`` and one access-log line
(``ID METHOD PATH STATUS DURATION CLIENT``; no query strings, no tokens).
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import time
from typing import Any, Mapping

from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from hgm_engine.server.rest.responses import error_response, request_id_var

__all__ = ["Guard", "BodyTooLarge", "access_logger", "REQUEST_ID_RE"]

access_logger = logging.getLogger("hgm.server.access")

# A request id the client may choose (else the guard makes one): short and log-safe.
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class BodyTooLarge(StarletteHTTPException):
    """Raised while reading a body past the limit; FastAPI re-raises HTTP exceptions as they are."""

    def __init__(self) -> None:
        super().__init__(413, "request body too large")


class Guard:
    """Pure ASGI middleware: request id, bearer token, content type, one log line per request.

    A request with a wrong or missing token, a ``Content-Length`` over ``max_body`` or a body
    that is not JSON is answered here, before the app sees it; a body sent in chunks is
    counted as it arrives (:class:`BodyTooLarge` past the limit). ``direct`` maps
    ``(method, path)`` to plain ASGI handlers answered past these checks but without the
    framework's per-request layers (the hot query route).

    >>> import asyncio
    >>> async def app(scope, receive, send):
    ...     raise AssertionError("not reached")
    >>> sent = []
    >>> async def send(message):
    ...     sent.append(message)
    >>> scope = {"type": "http", "method": "GET", "path": "/health", "headers": []}
    >>> asyncio.run(Guard(app, token="s3cret", max_body=1024)(scope, None, send))
    >>> sent[0]["status"], dict(sent[0]["headers"])[b"www-authenticate"]
    (401, b'Bearer realm="hgm"')
    """

    def __init__(self, app, token: str | None, max_body: int, direct: Mapping[tuple[str, str], Any] | None = None):
        self.app = app
        self.token = token.encode("utf-8") if token else None
        self.max_body = max_body
        # (method, path) -> a plain ASGI handler answered here, past the checks above but
        # without the framework's per-request layers (the hot query route).
        self.direct = direct if direct is not None else {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = dict(scope["headers"])
        supplied = headers.get(b"x-request-id", b"").decode("latin-1")
        rid = supplied if REQUEST_ID_RE.match(supplied) else os.urandom(8).hex()
        token_ctx = request_id_var.set(rid)
        status_box = [0]

        async def send_with_id(message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
                message["headers"] = list(message.get("headers", [])) + [(b"x-request-id", rid.encode("latin-1"))]
            await send(message)

        received = [0]

        async def receive_counted():
            message = await receive()
            if message["type"] == "http.request":
                received[0] += len(message.get("body", b""))
                if received[0] > self.max_body:
                    raise BodyTooLarge()
            return message

        try:
            refusal = self._refusal(scope, headers)
            if refusal is not None:
                await refusal(scope, receive, send_with_id)
            else:
                handler = self.direct.get((scope["method"], scope["path"]))
                await (handler or self.app)(scope, receive_counted, send_with_id)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            if access_logger.isEnabledFor(logging.INFO):
                client = scope.get("client")
                access_logger.info(
                    "%s %s %s %d %.2fms %s",
                    rid,
                    scope["method"],
                    scope["path"],
                    status_box[0],
                    elapsed,
                    client[0] if client else "-",
                )
            request_id_var.reset(token_ctx)

    def _refusal(self, scope, headers) -> Response | None:
        if self.token is not None:
            supplied = headers.get(b"authorization", b"")
            scheme, _, credentials = supplied.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(credentials.strip(), self.token):
                message = "a bearer token is required" if not supplied else "the bearer token is not valid"
                return error_response("unauthorized", message, 401, {"WWW-Authenticate": 'Bearer realm="hgm"'})
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            # Refused before a byte of the body is read; chunked bodies are counted as they arrive.
            return error_response("request-too-large", f"the request body is over this server's limit of {self.max_body} bytes", 413)
        if scope["method"] in ("POST", "PUT", "PATCH"):
            content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            has_body = headers.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in headers
            if has_body and content_type != b"application/json":
                return error_response(
                    "unsupported-media-type", "send the body as JSON with 'Content-Type: application/json'", 415
                )
        return None
