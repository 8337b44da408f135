"""The REST server's answers as bytes: JSON encoding, error documents, query results.

Every answer is ``application/json``. Node payloads are frozen, so each payload's JSON is
encoded once and kept (:class:`NodeJsonCache`); a query result splices those bytes in
(:func:`query_response`). Error documents carry the id of the request they answer
(:data:`request_id_var`, set by the guard for each request).

>>> json_response({"t": 1}).body
b'{"t":1}'
>>> error_response("unknown-node", "no node 'x'").status_code
404
"""

from __future__ import annotations

import contextvars
import json
from typing import Any, Iterable, Mapping

from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ValidationError

from hgm_engine.server.service import http_status, node_document

__all__ = [
    "request_id_var",
    "encode",
    "json_response",
    "error_response",
    "validation_error_response",
    "NodeJsonCache",
    "query_response",
]

# The id of the request being answered ("-" outside one): set by the guard, repeated in every
# error document and in the access log.
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("hgm_request_id", default="-")

try:  # orjson (in the serve extra) encodes a large result about ten times faster than json
    import orjson as _orjson
except ImportError:  # pragma: no cover - the stdlib fallback
    _orjson = None


def encode(doc: Any) -> bytes:
    """JSON bytes; frozen payloads (dict subclasses, tuples) encode like dicts and lists.

    >>> encode({"ids": ("a", "b"), "t": 2})
    b'{"ids":["a","b"],"t":2}'
    """
    if _orjson is not None:
        try:
            return _orjson.dumps(doc, default=str)
        except TypeError:  # e.g. an integer beyond 64 bits: the stdlib encoder takes any
            pass
    return json.dumps(doc, separators=(",", ":"), default=str).encode("ascii")


def json_response(doc: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """``doc`` as a JSON response.

    >>> json_response({"name": "s1", "t": 3}, 201).status_code
    201
    """
    return Response(encode(doc), status_code=status, media_type="application/json", headers=headers)


def error_response(
    category: str, message: str, status: int | None = None, headers: Mapping[str, str] | None = None
) -> Response:
    """The ``{"error": ...}`` document of one problem, with the status of its category
    (:func:`~hgm_engine.server.service.http_status`) unless ``status`` says otherwise.

    >>> error_response("unauthorized", "a bearer token is required").body
    b'{"error":{"category":"unauthorized","message":"a bearer token is required","line":null,"column":null,"request_id":"-"}}'
    """
    doc = {"error": {"category": category, "message": message, "line": None, "column": None, "request_id": request_id_var.get()}}
    return json_response(doc, status or http_status(category), headers)


def validation_error_response(exc: RequestValidationError | ValidationError) -> Response:
    """400 for a body that does not fit its request model: ``invalid-json`` when it is not
    JSON, ``invalid-argument`` otherwise, one problem per field (all under ``problems``).

    >>> from pydantic import BaseModel, ConfigDict
    >>> class Body(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    ...     expr: str
    >>> try:
    ...     Body.model_validate_json(b'{"expr": "root", "bogus": 1}')
    ... except ValidationError as exc:
    ...     print(validation_error_response(exc).body.decode())
    {"error":{"category":"invalid-argument","message":"unknown field 'bogus'","line":null,"column":null,"where":"bogus","request_id":"-"}}
    """
    problems = []
    category = "invalid-argument"
    for error in exc.errors():
        kind = error.get("type", "")
        loc = [str(part) for part in error.get("loc", ()) if part != "body"]
        where = ".".join(loc) or "body"
        if kind == "json_invalid":
            category = "invalid-json"
            detail = (error.get("ctx") or {}).get("error", "") or error.get("msg", "")
            message = f"the body is not valid JSON: {detail}".rstrip(": ")
            where = "body"
        elif kind == "extra_forbidden":
            message = f"unknown field {loc[-1]!r}" if loc else "unknown field"
        elif kind == "missing":
            message = f"{where} is required"
        elif kind == "string_unicode":
            message = f"{where}: a lone surrogate (\\ud800-\\udfff) is not a character; send text as UTF-8 or JSON escapes of whole characters"
        else:
            message = f"{where}: {error.get('msg', 'invalid')}"
        problems.append({"category": category if kind == "json_invalid" else "invalid-argument", "message": message, "line": None, "column": None, "where": where})
    first = dict(problems[0]) if problems else {"category": category, "message": "invalid request", "line": None, "column": None}
    if len(problems) > 1:
        first["problems"] = problems
    first["request_id"] = request_id_var.get()
    return json_response({"error": first}, 400)


class NodeJsonCache:
    """Each node payload's JSON, encoded once: payloads are immutable, so the bytes of a
    payload object never change (a changed node is a new object). Bounded; thread-safe
    under the GIL (a lost race encodes twice).

    >>> from hgm_engine.model.graph import Node
    >>> cache = NodeJsonCache()
    >>> node = Node("g", "goal", {"title": "trip"}, 1)
    >>> cache.join([node, node])
    b'{"id":"g","type":"goal","title":"trip"},{"id":"g","type":"goal","title":"trip"}'
    """

    def __init__(self, max_entries: int = 200_000):
        self._max = max_entries
        self._entries: dict[int, tuple[Any, bytes]] = {}

    def join(self, payloads: Iterable[Any]) -> bytes:
        """The JSON of each payload, comma-separated (the inside of a JSON list)."""
        entries, parts = self._entries, []
        append = parts.append
        for node in payloads:
            entry = entries.get(id(node))
            if entry is None or entry[0] is not node:  # new, or an id() reused by a newer object
                if len(entries) >= self._max:
                    entries.clear()
                entry = entries[id(node)] = (node, encode(node_document(node)))
            append(entry[1])
        return b",".join(parts)


def query_response(doc: dict[str, Any], payloads: Iterable[Any] | None, node_json: NodeJsonCache) -> Response:
    """The query document with ``nodes`` spliced in from the per-node JSON cache, in the key
    order of the other documents: kind, ids, nodes, t.

    >>> from hgm_engine.model.graph import Node
    >>> query_response({"kind": "nodes", "ids": ["g"], "t": 1}, [Node("g", "goal", {}, 1)], NodeJsonCache()).body
    b'{"kind":"nodes","ids":["g"],"nodes":[{"id":"g","type":"goal"}],"t":1}'
    """
    if payloads is None:
        return Response(encode(doc), media_type="application/json")
    head = encode({key: value for key, value in doc.items() if key != "t"})
    body = b"".join((head[:-1], b',"nodes":[', node_json.join(payloads), b'],"t":', encode(doc["t"]), b"}"))
    return Response(body, media_type="application/json")
