"""A small OpenAI-compatible HTTP server for tests: scripted chat answers, deterministic embeddings.

It listens on 127.0.0.1 (a free port) and serves ``POST /v1/chat/completions`` from a queue of
scripted answers (:class:`Scripted`: a content string, an HTTP error, a delay), ``POST
/v1/embeddings`` with deterministic vectors (a hash of each text; ``encoding_format`` base64
or float, as the ``openai`` client asks) and ``GET /v1/models``. Every request is recorded
(:attr:`OpenAIStub.requests`) so tests can check what the client sent. No network beyond
127.0.0.1 is involved.

Use it with the :func:`openai_stub` fixture, or directly::

    with OpenAIStub() as stub:
        stub.push(Scripted.json({"kept": [0]}), Scripted.error(500))
        client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)

>>> import json, urllib.request
>>> with OpenAIStub() as stub:
...     stub.push(Scripted.text("hello"))
...     body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
...     request = urllib.request.Request(stub.base_url + "/chat/completions", body, {"Content-Type": "application/json"})
...     answer = json.load(urllib.request.urlopen(request, timeout=5))
>>> answer["choices"][0]["message"]["content"], stub.chat_requests[0]["messages"][0]["content"]
('hello', 'hi')
"""

from __future__ import annotations

import array
import base64
import hashlib
import json
import math
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

__all__ = ["OpenAIStub", "Scripted", "Recorded", "openai_stub", "stub_vector"]

EMBEDDING_DIMENSIONS = 16


@dataclass(frozen=True)
class Scripted:
    """One scripted reply to a chat request: ``content`` with HTTP 200, or an HTTP ``status``
    error with ``message``; sent after ``delay`` seconds, with the extra response ``headers``
    (``Retry-After``, ...)."""

    content: str | None = None
    status: int = 200
    message: str = ""
    delay: float = 0.0
    finish_reason: str = "stop"
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def text(cls, content: str | None, *, delay: float = 0.0) -> "Scripted":
        return cls(content=content, delay=delay)

    @classmethod
    def json(cls, doc: Any, *, delay: float = 0.0) -> "Scripted":
        return cls(content=json.dumps(doc), delay=delay)

    @classmethod
    def error(
        cls, status: int = 500, message: str = "the stub was told to fail", *, retry_after: str | None = None
    ) -> "Scripted":
        """An HTTP error; ``retry_after`` (seconds, as the header's text) adds a Retry-After header."""
        headers = () if retry_after is None else (("Retry-After", retry_after),)
        return cls(status=status, message=message, headers=headers)

    @classmethod
    def slow(cls, seconds: float, content: str = "{}") -> "Scripted":
        """An answer that comes only after ``seconds`` (past the client's timeout)."""
        return cls(content=content, delay=seconds)


@dataclass
class Recorded:
    """One request the stub received, and when (``time.monotonic()``)."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)


def stub_vector(text: str, dimensions: int = EMBEDDING_DIMENSIONS) -> list[float]:
    """The stub's embedding of ``text``: unit length, the same for the same text.

    >>> stub_vector("a") == stub_vector("a") != stub_vector("b")
    True
    >>> round(sum(x * x for x in stub_vector("a")), 6)
    1.0
    """
    values: list[float] = []
    counter = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode("utf-8")).digest()
        values.extend((byte - 127.5) / 127.5 for byte in digest)
        counter += 1
    values = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    # float32-exact, so a base64 round trip gives back the same numbers
    return list(array.array("f", (v / norm for v in values)))


class OpenAIStub:
    """The server. ``push`` scripted answers, point a client at ``base_url``, read ``requests``.

    Chat requests take answers first in, first out; when none is left the stub answers HTTP
    500 "no scripted answer left" and counts it in ``unexpected``.
    """

    def __init__(self, dimensions: int = EMBEDDING_DIMENSIONS):
        self.dimensions = dimensions
        self.requests: list[Recorded] = []
        self.unexpected = 0
        self._answers: list[Scripted] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ------------------------------------------------------------------------------

    def start(self) -> "OpenAIStub":
        stub = self

        class Handler(_Handler):
            owner = stub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes slow answers up
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "OpenAIStub":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: what ``OPENAI_BASE_URL`` should be."""
        assert self._server is not None, "the stub is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *answers: Scripted) -> None:
        with self._lock:
            self._answers.extend(answers)

    @property
    def pending(self) -> int:
        """Scripted answers not yet used."""
        with self._lock:
            return len(self._answers)

    @property
    def chat_requests(self) -> list[Any]:
        """The JSON bodies of the chat requests received, oldest first."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def chat_times(self) -> list[float]:
        """When each chat request arrived (``time.monotonic()``), oldest first."""
        return [r.at for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[Any]:
        return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    # -- answers ------------------------------------------------------------------------------

    def _next(self) -> Scripted:
        with self._lock:
            if self._answers:
                return self._answers.pop(0)
            self.unexpected += 1
        return Scripted.error(500, "no scripted answer left")

    def _chat(self, body: Any) -> tuple[int, Any, float, tuple[tuple[str, str], ...]]:
        answer = self._next()
        if answer.status != 200:
            return answer.status, _error_body(answer.status, answer.message), answer.delay, answer.headers
        with self._lock:
            number = len(self.chat_requests)
        doc = {
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub") if isinstance(body, dict) else "stub",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.content},
                    "finish_reason": answer.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
        return 200, doc, answer.delay, answer.headers

    def _embeddings(self, body: Any) -> tuple[int, Any, float]:
        if not isinstance(body, dict) or "input" not in body:
            return 400, _error_body(400, "'input' is required"), 0.0
        texts = body["input"]
        if isinstance(texts, str) or (isinstance(texts, list) and texts and isinstance(texts[0], int)):
            texts = [texts]
        dimensions = int(body.get("dimensions") or self.dimensions)
        data = []
        for index, text in enumerate(texts):
            vector = stub_vector(text if isinstance(text, str) else json.dumps(text), dimensions)
            if body.get("encoding_format") == "base64":
                embedding: Any = base64.b64encode(array.array("f", vector).tobytes()).decode("ascii")
            else:
                embedding = vector
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        doc = {
            "object": "list",
            "data": data,
            "model": body.get("model", "stub"),
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }
        return 200, doc, 0.0


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIStub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def _record(self, body: Any) -> None:
        with self.owner._lock:
            self.owner.requests.append(Recorded(self.command, self.path, body, dict(self.headers.items())))

    def do_GET(self) -> None:  # noqa: N802
        self._record(None)
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "stub-model", "object": "model", "created": 0, "owned_by": "stub"}]})
        else:
            self._send(404, _error_body(404, f"no route {self.path}"))

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        self._record(body)
        route = self.path.split("?", 1)[0].rstrip("/")
        headers: tuple[tuple[str, str], ...] = ()
        if route.endswith("/chat/completions"):
            status, doc, delay, headers = self.owner._chat(body)
        elif route.endswith("/embeddings"):
            status, doc, delay = self.owner._embeddings(body)
        else:
            status, doc, delay = 404, _error_body(404, f"no route {self.path}"), 0.0
        if delay and self.owner._stopping.wait(delay):
            return  # the stub is stopping: drop the answer
        self._send(status, doc, headers)

    def _send(self, status: int, doc: Any, headers: tuple[tuple[str, str], ...] = ()) -> None:
        payload = json.dumps(doc).encode("utf-8")
        try:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout): nothing to do


@pytest.fixture
def openai_stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIStub]:
    """A running stub, with ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` pointing at it for this test
    only (the rest of the environment is untouched), stopped afterwards."""
    with OpenAIStub() as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-for-the-stub")
        monkeypatch.delenv("HGM_LLM_MODEL", raising=False)
        yield stub
