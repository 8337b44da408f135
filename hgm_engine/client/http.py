"""The HTTP side of a remote memory: requests to ``hgm serve`` with a deadline, retries of
reads with backoff, and the server's error documents turned back into the engine's errors.

Only the standard library (``http.client``): one keep-alive connection per thread, so a
remote memory may be shared by the threads of an agent framework. Each request has a
deadline (``timeout`` seconds for the whole exchange: connecting, sending, every byte of the
answer), so a server that is down or stalls is a clear :class:`~hgm_engine.errors.ServiceError`
(``unreachable`` or ``timeout``), never a hang.

A request is retried, after ``backoff * 2**attempt`` seconds (with jitter, at most
``max_backoff``), up to ``retries`` more times when retrying cannot do anything twice:

- a read (``idempotent``) that could not reach the server, timed out, lost its connection, or
  got a 502/503/504 (``overloaded``, ``stopping``, a proxy's gateway errors);
- any request the server refused as ``overloaded`` (503 before it started on it).

A write that may have reached the server (a timeout, a dropped connection after sending) is
never sent again: the error says so, and the caller reads ``t`` before trying again.

>>> transport = Transport("http://127.0.0.1:1", timeout=0.5, retries=0)
>>> try:
...     transport.request("GET", "/health")
... except HGMError as err:
...     print(err.category, "|", err.problems[0].where)
unreachable | http://127.0.0.1:1
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
import urllib.parse
from typing import Any, Mapping

import attrs

from hgm_engine.errors import HGMError, Problem, RequestError, ServiceError
from hgm_engine.model import value_problem

__all__ = ["Transport", "Answer", "RetryPolicy", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 30.0  # seconds for one request, answer included (the server's query limit is 5 s)
_RETRY_STATUSES = frozenset({502, 503, 504})
_KEEPALIVE_MARGIN = 2.0  # seconds: a write never goes over a connection idle longer (the server closes them at 5 s)
_CHUNK = 1 << 16


@attrs.frozen
class RetryPolicy:
    """How reads are retried: ``retries`` more attempts, waiting ``backoff * 2**n`` seconds
    (plus up to 50% jitter, at most ``max_backoff``) before attempt ``n + 1``; a 503's
    ``Retry-After`` is honoured when it is longer, up to ``max_backoff``.

    >>> [RetryPolicy(jitter=False).delay(n, None) for n in range(4)]
    [0.1, 0.2, 0.4, 0.8]
    """

    retries: int = 3
    backoff: float = 0.1
    max_backoff: float = 2.0
    jitter: bool = True

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before the retry that follows attempt ``attempt`` (0-based)."""
        wait = self.backoff * (2**attempt)
        if self.jitter:
            wait *= 1 + random.random() / 2
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.max_backoff)


@attrs.frozen
class Answer:
    """One answer: its status, its JSON document (None when the body is empty) and headers."""

    status: int
    doc: Any
    headers: Mapping[str, str]


class _Unsent(Exception):
    """The request never reached the server (connect failed): safe to send again."""


class Transport:
    """Requests to one ``hgm serve`` at ``url`` (``http://HOST:PORT``, optionally with a path
    prefix), with ``Authorization: Bearer token`` when a token is given.

    >>> Transport("http://127.0.0.1:8765/").base
    'http://127.0.0.1:8765'
    >>> Transport("ftp://x")
    Traceback (most recent call last):
      ...
    hgm_engine.errors.ServiceError: invalid-argument at url: the url of an hgm server is http://HOST:PORT (or https://), not 'ftp://x'
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int | RetryPolicy = 3,
        headers: Mapping[str, str] | None = None,
    ):
        parsed = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ServiceError([Problem("invalid-argument", f"the url of an hgm server is http://HOST:PORT (or https://), not {url!r}", where="url")])
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ServiceError([Problem("invalid-argument", f"timeout is a number of seconds > 0, not {timeout!r}", where="timeout")])
        if not isinstance(retries, RetryPolicy) and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
            raise ServiceError([Problem("invalid-argument", f"retries is a count >= 0 or a RetryPolicy, not {retries!r}", where="retries")])
        if token is not None and (not isinstance(token, str) or not token or any(c in token for c in "\r\n")):
            raise ServiceError([Problem("invalid-argument", "token is a non-empty string on one line", where="token")])
        self.scheme = parsed.scheme
        self.host = parsed.hostname
        self.port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self.prefix = parsed.path.rstrip("/")
        self.base = f"{parsed.scheme}://{parsed.netloc}{self.prefix}"
        self.timeout = float(timeout)
        self.policy = retries if isinstance(retries, RetryPolicy) else RetryPolicy(retries=retries)
        self._headers = {"Accept": "application/json", "User-Agent": "hgm-engine-client"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._headers.update(headers or {})
        self._local = threading.local()

    # -- one connection per thread -------------------------------------------------------------

    def _connection(self, fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection and whether it was used before (a reused one may have been
        closed by the server meanwhile)."""
        held = getattr(self._local, "conn", None)
        if held is not None and not fresh:
            return held, True
        if held is not None:
            held.close()
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        conn = cls(self.host, self.port, timeout=self.timeout)
        self._local.conn = conn
        return conn, False

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            held.close()
            self._local.conn = None

    # -- requests ------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        idempotent: bool | None = None,
    ) -> Answer:
        """Send one request and return its :class:`Answer` (any status: the caller reads the
        error documents). ``idempotent`` (default: GET, HEAD, PUT, DELETE) lets it be retried
        after a failure that may have reached the server. Raises :class:`ServiceError`
        ``unreachable`` or ``timeout`` when no answer came, after the retries."""
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "PUT", "DELETE")
        target = self.prefix + path
        if query:
            pairs = [(k, _param(v)) for k, v in query.items() if v is not None]
            if pairs:
                target += "?" + urllib.parse.urlencode(pairs)
        data = None
        headers = dict(self._headers)
        if body is not None:
            problem = value_problem(body, "body")
            if problem is not None:  # nothing JSON cannot carry is sent (the server would refuse it anyway)
                raise RequestError([problem])
            try:
                data = json.dumps(body, ensure_ascii=True, allow_nan=False).encode("ascii")
            except (TypeError, ValueError, RecursionError) as exc:
                raise RequestError([Problem("invalid-value", f"the request cannot be written as JSON: {exc}", where="body")]) from None
            headers["Content-Type"] = "application/json"
        started = time.monotonic()
        attempt = 0
        while True:
            retry_after = None
            try:
                answer = self._once(method, target, data, headers, idempotent)
            except _Unsent as exc:
                failure: HGMError = ServiceError([Problem("unreachable", f"cannot reach the hgm server at {self.base}: {exc}", where=self.base)])
                retryable = True
            except TimeoutError:
                failure = ServiceError([Problem(
                    "timeout",
                    f"no answer from the hgm server at {self.base} within {self.timeout:g} s ({method} {path})"
                    + ("" if idempotent else "; the change may or may not have been made: read t before sending it again"),
                    where=self.base,
                )])
                retryable = idempotent
            except (OSError, http.client.HTTPException) as exc:
                failure = ServiceError([Problem(
                    "unreachable",
                    f"the connection to the hgm server at {self.base} failed during {method} {path}: {exc or type(exc).__name__}"
                    + ("" if idempotent else "; the change may or may not have been made: read t before sending it again"),
                    where=self.base,
                )])
                retryable = idempotent
            else:
                category = answer.doc.get("error", {}).get("category") if isinstance(answer.doc, dict) and isinstance(answer.doc.get("error"), dict) else None
                overloaded = answer.status == 503 and category == "overloaded"
                if not (answer.status in _RETRY_STATUSES and (idempotent or overloaded)) or attempt >= self.policy.retries:
                    return answer
                retry_after = _retry_after(answer.headers)
                failure, retryable = None, True
            if failure is not None and (not retryable or attempt >= self.policy.retries):
                if attempt:
                    failure = type(failure)([attrs.evolve(failure.problems[0], message=f"{failure.message} ({attempt + 1} attempts over {time.monotonic() - started:.1f} s)")])
                raise failure
            time.sleep(self.policy.delay(attempt, retry_after))
            attempt += 1

    def _once(self, method: str, target: str, data: bytes | None, headers: dict[str, str], idempotent: bool) -> Answer:
        """One exchange within the deadline. A socket timeout bounds each read, not the whole
        answer (a server sending a byte now and then would keep it going for ever), so a timer
        shuts the connection down when the deadline passes, whatever is blocked on it."""
        holder: dict[str, Any] = {}
        expired = threading.Event()
        settled = threading.Lock()

        def expire() -> None:
            with settled:  # never after the answer is in: the connection may serve the next request
                if holder.get("done"):
                    return
                expired.set()
                sock = getattr(holder.get("conn"), "sock", None)
                if sock is not None:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        timer = threading.Timer(self.timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            answer = self._exchange(method, target, data, headers, idempotent, holder)
            with settled:
                holder["done"] = True
            if expired.is_set():
                self.close()
                raise TimeoutError("deadline passed")
            return answer
        except Exception:  # noqa: BLE001 - whatever the cut connection made of the answer
            if expired.is_set():
                self.close()
                raise TimeoutError("deadline passed") from None
            raise
        finally:
            timer.cancel()

    def _exchange(
        self, method: str, target: str, data: bytes | None, headers: dict[str, str], idempotent: bool, holder: dict[str, Any]
    ) -> Answer:
        deadline = time.monotonic() + self.timeout
        last_used = getattr(self._local, "used", 0.0)
        fresh = not idempotent and time.monotonic() - last_used > _KEEPALIVE_MARGIN
        conn, reused = self._connection(fresh)
        for again in (False, True):
            holder["conn"] = conn
            try:
                if conn.sock is None:
                    try:
                        conn.connect()
                    except TimeoutError:
                        raise
                    except OSError as exc:
                        self.close()
                        raise _Unsent(exc.strerror or str(exc)) from None
                    reused = False
                conn.sock.settimeout(_remaining(deadline))
                conn.request(method, target, body=data, headers=headers)
                response = conn.getresponse()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A kept-alive connection the server had closed meanwhile: a read is sent once
                # more on a new one. (A write never goes over a connection idle long enough
                # for that; one that fails so may have been read: it is not sent again.)
                self.close()
                if not reused or again or not idempotent:
                    raise
                conn, reused = self._connection(True)
            except BaseException:
                self.close()
                raise
        try:
            chunks = []
            while True:
                if conn.sock is not None:
                    conn.sock.settimeout(_remaining(deadline))
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
        except BaseException:
            self.close()
            raise
        if response.will_close:
            self.close()
        self._local.used = time.monotonic()
        raw = b"".join(chunks)
        headers_out = {k.lower(): v for k, v in response.getheaders()}
        if not raw:
            return Answer(response.status, None, headers_out)
        try:
            doc = json.loads(raw)
        except ValueError:
            shown = raw[:200].decode("utf-8", "replace")
            raise ServiceError([Problem(
                "bad-response", f"the server at {self.base} answered {response.status} with a body that is not JSON: {shown!r}", where=self.base
            )]) from None
        return Answer(response.status, doc, headers_out)


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    return left


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
