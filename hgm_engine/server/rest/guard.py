"""The REST server's outermost layers: the connection's deadlines, then the request guard.

:func:`deadline_protocol` extends uvicorn's HTTP protocol (httptools or h11) with what uvicorn
lacks against slow or idle clients: a request's headers must be complete within
``header_timeout`` seconds of the connection opening (or of the previous response) and stay
under 64 KiB; past the deadline the connection is closed (with a JSON 408 when part of a
request had arrived). uvicorn's own keep-alive timer starts again at every byte, so a client
trickling one byte at a time would hold a connection for ever.

:class:`Guard` wraps the whole ASGI app (outside the framework's own middleware), so a request
refused for its token, size, content type or time costs no framework work, and every answer —
refused or not — carries ``X-Request-ID`` and one access-log line
(``ID METHOD PATH STATUS DURATION CLIENT``; no query strings, no tokens). It reads a request's
body itself, within ``body_timeout`` seconds, before the app sees the request, and counts a
request against the work limit (``max_concurrency``) only from then on: idle connections,
slow headers and slow bodies never keep an authenticated request out.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from typing import Any, Mapping

from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from hgm_engine.errors import HGMError
from hgm_engine.server.rest.memories import current_grant, current_lease, lease_for, memory_target, slash_hint
from hgm_engine.server.rest.responses import encode, error_response, json_response, request_id_var
from hgm_engine.server.service import error_document, http_status
from hgm_engine.server.tokens import OPEN_ACCESS, TokenFile, TokenScopes

__all__ = ["Guard", "BodyTooLarge", "access_logger", "REQUEST_ID_RE", "deadline_protocol", "MAX_HEADER_BYTES", "RETRY_AFTER"]

access_logger = logging.getLogger("hgm.server.access")
_logger = logging.getLogger("hgm.server")

# A request id the client may choose (else the guard makes one): short and log-safe.
REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")

# The most a request's line and headers may take (uvicorn's h11 protocol stops at 16 KiB of an
# incomplete event; httptools has no limit of its own).
MAX_HEADER_BYTES = 64 * 1024

# After an error answer the protocol sends itself, what the client still sends is read and
# dropped for this long (or up to this many bytes) before the connection is closed.
_DRAIN_SECONDS, _DRAIN_BYTES = 2.0, 1 << 20

# Seconds a client is asked to wait (``Retry-After``) when the work limit is reached.
RETRY_AFTER = 1

# Characters that would forge or garble an access-log line (the path is percent-decoded).
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")


def _log_safe(text: str, limit: int = 200) -> str:
    """``text`` for one log line: control and non-ASCII characters escaped, at most ``limit``.

    >>> _log_safe("/api/v1/nodes/a\\nforged 200")
    '/api/v1/nodes/a\\\\x0aforged 200'
    """
    if len(text) > limit:
        text = text[:limit] + "..."
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", text)


class BodyTooLarge(StarletteHTTPException):
    """A body past the limit (the guard answers 413 itself; FastAPI's own limit raises this)."""

    def __init__(self) -> None:
        super().__init__(413, "request body too large")


def _error_bytes(status: int, reason: str, category: str, message: str) -> tuple[str, bytes]:
    """A whole HTTP/1.1 error answer that closes the connection, and its request id."""
    rid = os.urandom(8).hex()
    body = encode({"error": {"category": category, "message": message, "line": None, "column": None, "request_id": rid}})
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        f"connection: close\r\nx-request-id: {rid}\r\n\r\n"
    )
    return rid, head.encode("ascii") + body


def deadline_protocol(base: type, header_timeout: float, max_header_bytes: int = MAX_HEADER_BYTES) -> type:
    """uvicorn's HTTP protocol class ``base`` (``config.http_protocol_class``: httptools or
    h11) with a deadline and a size limit for each request's headers.

    From the moment a connection opens, and again when a response is complete, the client
    has ``header_timeout`` seconds to send a request's line and headers, at most
    ``max_header_bytes`` of them. Past the deadline the connection is closed: silently when
    nothing of a new request arrived (an idle keep-alive connection), else after a JSON 408
    ``request-timeout``; too many header bytes get a JSON 431. The body has its own deadline
    (:class:`Guard`), and a request being answered is never cut.

    >>> import asyncio
    >>> class Base(asyncio.Protocol):
    ...     pass
    >>> deadline_protocol(Base, 10.0).__name__
    'DeadlineBase'
    """

    class DeadlineProtocol(base):  # type: ignore[misc, valid-type]
        _hgm_timer: asyncio.TimerHandle | None = None
        _hgm_awaited: Any = None  # the request cycle that was current when the wait began
        _hgm_bytes = 0  # bytes received since the wait began
        _hgm_since = 0.0
        _hgm_draining = False  # answered and closing: what still comes is read and dropped

        def connection_made(self, transport) -> None:  # noqa: D102 - asyncio.Protocol
            super().connection_made(transport)
            self._hgm_arm()

        def data_received(self, data: bytes) -> None:  # noqa: D102
            self._hgm_bytes += len(data)
            if self._hgm_draining:
                if self._hgm_bytes > _DRAIN_BYTES:
                    self.transport.close()
                return
            super().data_received(data)
            if self._hgm_bytes > max_header_bytes and self._hgm_waiting() and not self.transport.is_closing():
                self._hgm_refuse(431, "Request Header Fields Too Large", "request-too-large",
                                 f"the request line and headers are over this server's limit of {max_header_bytes} bytes")

        def on_response_complete(self) -> None:  # noqa: D102 - uvicorn's hook
            super().on_response_complete()
            if not self.transport.is_closing():
                self._hgm_arm()

        def connection_lost(self, exc) -> None:  # noqa: D102
            self._hgm_cancel()
            super().connection_lost(exc)

        def _hgm_arm(self) -> None:
            self._hgm_cancel()
            self._hgm_awaited, self._hgm_bytes, self._hgm_since = self.cycle, 0, time.perf_counter()
            self._hgm_timer = self.loop.call_later(header_timeout, self._hgm_expired)

        def _hgm_cancel(self) -> None:
            if self._hgm_timer is not None:
                self._hgm_timer.cancel()
                self._hgm_timer = None

        def _hgm_waiting(self) -> bool:
            """No request began since the wait did (none is being answered either)."""
            cycle = self.cycle
            return cycle is self._hgm_awaited and (cycle is None or cycle.response_complete)

        def _hgm_expired(self) -> None:
            self._hgm_timer = None
            if self.transport.is_closing() or not self._hgm_waiting():
                return  # a request began in time: its response arms the next deadline
            if self._hgm_bytes == 0:
                self.transport.close()
                return
            self._hgm_refuse(408, "Request Timeout", "request-timeout",
                             f"the request's headers did not arrive within {header_timeout:g} seconds")

        def _hgm_refuse(self, status: int, reason: str, category: str, message: str) -> None:
            rid, answer = _error_bytes(status, reason, category, message)
            self._hgm_cancel()
            self.transport.write(answer)
            # Closing with unread bytes would reset the connection (TCP RST) and the client
            # could lose the answer: end our side, drop what still comes for a moment, close.
            if self.transport.can_write_eof():
                self.transport.write_eof()
                self._hgm_draining, self._hgm_bytes = True, 0
                self.loop.call_later(_DRAIN_SECONDS, self.transport.close)
            else:
                self.transport.close()
            if access_logger.isEnabledFor(logging.INFO):
                elapsed = (time.perf_counter() - self._hgm_since) * 1000
                access_logger.info("%s - - %d %.2fms %s", rid, status, elapsed, self.client[0] if self.client else "-")

    DeadlineProtocol.__name__ = DeadlineProtocol.__qualname__ = f"Deadline{base.__name__}"
    return DeadlineProtocol


class Guard:
    """Pure ASGI middleware: request id, bearer token, content type, the body read within its
    deadline, the work limit, one log line per request.

    A request with a wrong or missing token, a ``Content-Length`` over ``max_body`` or a body
    that is not JSON is answered here, before the app sees it. A body is read here too (counted
    as it arrives: 413 past ``max_body``; a JSON 408 ``request-timeout`` when it is not all
    there ``body_timeout`` seconds after the headers) and handed to the app whole. Only then
    does the request count against ``max_concurrency``: past it the answer is a JSON 503
    ``overloaded`` with ``Retry-After``; a request the server cancels as it stops (past its
    graceful timeout) gets a JSON 503 ``stopping``. ``direct`` maps ``(method, path)`` to plain ASGI
    handlers answered past these checks but without the framework's per-request layers (the
    hot query route). ``public`` paths are read (GET, HEAD) without the token: the OpenAPI
    document and its pages hold no data.

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

    def __init__(
        self,
        app,
        token: str | None,
        max_body: int,
        direct: Mapping[tuple[str, str], Any] | None = None,
        *,
        public: tuple[str, ...] = (),
        body_timeout: float | None = 30.0,
        max_concurrency: int | None = None,
        tokens: TokenScopes | TokenFile | None = None,
        registry: Any = None,
        default_memory: str = "default",
    ):
        self.app = app
        # The tokens and what each may do (a token file); ``token`` alone is one token that
        # may do everything. None: no token needed, every memory open.
        self.tokens = tokens if tokens is not None else (TokenScopes.single(token) if token else None)
        # The open memories (server/registry.py): a request of a memory's route leases its
        # memory for as long as it runs. None: the app routes no memory (tests of the guard).
        self.registry = registry
        self.default_memory = default_memory  # the memory of the unprefixed routes
        self.max_body = max_body
        # (method, path) -> a plain ASGI handler answered here, past the checks above but
        # without the framework's per-request layers (the hot query route).
        self.direct = direct if direct is not None else {}
        # Paths read without the token (GET and HEAD): the API's document and its pages; a
        # trailing "/" marks a prefix (the pages' assets).
        self.public = tuple(p for p in public if not p.endswith("/"))
        self.public_prefixes = tuple(p for p in public if p.endswith("/"))
        self.body_timeout = body_timeout if body_timeout and body_timeout > 0 else None
        self.max_concurrency = max_concurrency if max_concurrency and max_concurrency > 0 else None
        self.working = 0  # requests past the checks with their whole body, not yet answered

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

        original_path = scope["path"]
        original_raw = scope.get("raw_path") or original_path.encode("utf-8", "surrogateescape")
        grant = OPEN_ACCESS
        lease = None
        try:
            refusal, grant = self._authorize(scope, headers)
            if refusal is None:
                refusal = self._refusal(scope, headers)
            target = None
            if refusal is None:
                try:
                    target = memory_target(scope["path"], scope.get("raw_path"), self.default_memory)
                    if target is not None and target.name is not None and target.bound:
                        grant.check(target.name, write=scope["method"] in ("PUT", "DELETE", "PATCH"))
                except HGMError as exc:
                    refusal = _error_answer(exc)
            if target is not None and target.path != scope["path"]:
                scope = dict(scope, path=target.path, raw_path=target.raw_path)
                scope["hgm.original_path"] = original_path
                scope["hgm.original_raw_path"] = original_raw
            if refusal is None and (headers.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in headers):
                body, refusal = await self._read_body(receive)
                if body is None and refusal is None:
                    return  # the client left before its body was all there
                if body is not None:
                    receive = _replay(body, receive)
            if refusal is not None:
                await refusal(scope, receive, send_with_id)
            elif self.max_concurrency is not None and self.working >= self.max_concurrency:
                await error_response(
                    "overloaded",
                    f"this server is answering {self.working} requests, its limit (--max-concurrency); "
                    f"retry after {RETRY_AFTER} second{'s' if RETRY_AFTER != 1 else ''}",
                    503,
                    {"Retry-After": str(RETRY_AFTER)},
                )(scope, receive, send_with_id)
            else:
                handler = self.direct.get((scope["method"], scope["path"]))
                self.working += 1
                grant_ctx = current_grant.set(grant)
                lease_ctx = None
                try:
                    if target is not None and target.bound and self.registry is not None:
                        try:
                            lease = await lease_for(self.registry, target.name)
                        except HGMError as exc:
                            await _error_answer(exc, slash_hint(original_raw))(scope, receive, send_with_id)
                            return
                        except Exception:  # noqa: BLE001 - the same JSON 500 as every route, never uvicorn's text
                            _logger.exception("%s opening memory %r failed", rid, target.name)
                            await error_response("internal", f"internal error (request id {rid})", 500)(scope, receive, send_with_id)
                            return
                        lease_ctx = current_lease.set(lease)
                    await (handler or self.app)(scope, receive, send_with_id)
                except asyncio.CancelledError:
                    # The server stops and its graceful timeout is over: the work may still
                    # be running in a thread (and a commit may yet land), so say exactly that.
                    if status_box[0]:
                        raise
                    await error_response(
                        "stopping",
                        "the server stopped before this request was answered; a transaction it carried may "
                        "or may not have been committed: read the memory's t before you retry",
                        503,
                        {"Retry-After": str(RETRY_AFTER), "Connection": "close"},
                    )(scope, receive, send_with_id)
                finally:
                    self.working -= 1
                    if lease_ctx is not None:
                        current_lease.reset(lease_ctx)
                    current_grant.reset(grant_ctx)
        finally:
            if lease is not None:
                lease.release()
            elapsed = (time.perf_counter() - started) * 1000
            if access_logger.isEnabledFor(logging.INFO):
                client = scope.get("client")
                access_logger.info(
                    "%s %s %s %d %.2fms %s",
                    rid,
                    scope["method"],
                    _log_safe(original_path),
                    status_box[0],
                    elapsed,
                    client[0] if client else "-",
                )
            request_id_var.reset(token_ctx)

    async def _read_body(self, receive) -> tuple[bytes | None, Response | None]:
        """The whole body, or the refusal that answers instead (408, 413); (None, None) when
        the client disconnected."""
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None, None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body:
                        return None, error_response(
                            "request-too-large",
                            f"the request body is over this server's limit of {self.max_body} bytes",
                            413,
                            {"Connection": "close"},
                        )
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks), None
        except TimeoutError:
            return None, error_response(
                "request-timeout",
                f"the request body did not arrive within {self.body_timeout:g} seconds ({size} bytes came)",
                408,
                {"Connection": "close"},
            )

    def _is_public(self, scope) -> bool:
        path = scope["path"]
        return scope["method"] in ("GET", "HEAD") and (path in self.public or path.startswith(self.public_prefixes or ("\0",)))

    def _authorize(self, scope, headers) -> tuple[Response | None, Any]:
        """The grant of the request's token (every memory without a token file), or the 401
        that answers instead."""
        if self.tokens is None or self._is_public(scope):
            return None, OPEN_ACCESS
        supplied = headers.get(b"authorization", b"").decode("latin-1")
        try:
            return None, self.tokens.grant_for_header(supplied)
        except HGMError as exc:
            return error_response("unauthorized", exc.message, 401, {"WWW-Authenticate": 'Bearer realm="hgm"'}), OPEN_ACCESS

    def _refusal(self, scope, headers) -> Response | None:
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or len(length) > 19 or int(length) > self.max_body):
            # Refused before a byte of the body is read; chunked bodies are counted as they arrive.
            return error_response(
                "request-too-large", f"the request body is over this server's limit of {self.max_body} bytes", 413, {"Connection": "close"}
            )
        if scope["method"] in ("POST", "PUT", "PATCH"):
            content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            has_body = headers.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in headers
            if has_body and content_type != b"application/json":
                return error_response(
                    "unsupported-media-type", "send the body as JSON with 'Content-Type: application/json'", 415
                )
        return None


def _error_answer(exc: HGMError, hint: str = "") -> Response:
    """The error document of ``exc`` with its status (``hint`` added to the message)."""
    doc = error_document(exc)
    doc["error"]["request_id"] = request_id_var.get()
    if hint and exc.category == "unknown-memory":
        doc["error"]["message"] += hint
    return json_response(doc, http_status(exc.category))


def _replay(body: bytes, receive):
    """An ASGI ``receive`` that gives the body read already, then waits as ``receive`` does
    (for the client's disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed():
        if pending:
            return pending.pop()
        return await receive()

    return replayed
