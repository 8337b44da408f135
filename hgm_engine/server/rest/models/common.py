"""What every request and response model of the REST server shares: the strict config of a
request body (:data:`STRICT`: no unknown field, no coercion) and the open one of a document
carrying user data (:data:`OPEN`), the field types (:data:`Int`, :func:`int_in`,
:data:`NonBlank`, :data:`AsOf`, :data:`Id`), the error body and the transaction report, and
the ``responses`` of a route's error statuses (:func:`error_responses`).

>>> error_responses(404)[404]["description"]
'Unknown node, snapshot, path or memory'
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

__all__ = ["STRICT", "Int", "int_in", "NonBlank", "AsOf", "Id", "ErrorDetail", "ErrorBody", "ReportModel", "RefusedReportModel", "OPEN", "error_responses"]


STRICT = ConfigDict(extra="forbid", strict=True)


def _integral(value: Any) -> Any:
    """A JSON number with no fraction (``28.0``) is an integer, as JSON Schema says; anything
    else is left to the strict check (``28.5``, ``"28"`` and ``true`` stay refused)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer field of a request: ``type: integer`` in the document, and 28.0 is accepted.
Int = Annotated[int, BeforeValidator(_integral)]


def int_in(ge: int | None = None, le: int | None = None) -> Any:
    """:data:`Int` within bounds; the bounds go before the validator, so the document keeps
    them as ``minimum`` and ``maximum`` in an optional field's ``anyOf`` too.

    >>> from pydantic import TypeAdapter
    >>> TypeAdapter(int_in(0, 64)).validate_python(3.0), TypeAdapter(int_in(0, 64)).json_schema()["minimum"]
    (3, 0)
    """
    return Annotated[int, Field(ge=ge, le=le), BeforeValidator(_integral)]


# Text that must say something: not empty, not only spaces (what the service refuses).
NonBlank = Annotated[str, Field(min_length=1, pattern=r"\S")]


# A t or a snapshot name. Taken as any JSON value and checked by the service, so a wrong one is
# one 400 naming ``as_of`` (pydantic would report one problem per member of ``int | str``);
# the OpenAPI document still says what it is.
AsOf = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}]})]


Id = Annotated[str, Field(min_length=1)]


class ErrorDetail(BaseModel):
    category: str
    message: str
    line: int | None = None
    column: int | None = None
    where: str | None = None
    problems: list[dict[str, Any]] | None = None
    request_id: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


class ReportModel(BaseModel):
    committed: bool
    t: int | None
    base_t: int | None
    author: str | None
    reason: str | None
    changes: list[dict[str, Any]]
    fired_rules: list[str]
    dirtied: list[dict[str, Any]]
    violations: list[dict[str, Any]]


class RefusedReportModel(ReportModel):
    error: ErrorDetail


OPEN = ConfigDict(extra="allow")


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses`` of a route for the error statuses it can answer with: the error body
    (a refused transaction's report for 422) and what the status means.

    >>> sorted(error_responses(400, 422))
    [400, 422]
    >>> error_responses(422)[422]["model"].__name__
    'RefusedReportModel'
    """
    descriptions = {
        400: "Bad input: malformed JSON, unknown fields, a query or transaction that is wrong as written, a limit exceeded",
        401: "Missing or wrong bearer token",
        403: "The token does not reach this memory, or may only read it (forbidden)",
        404: "Unknown node, snapshot, path or memory",
        409: "Conflict with a commit after base_t, or a duplicate id",
        413: "Request body too large",
        415: "Body is not application/json",
        422: "Refused by constraints: the report lists every violation",
        423: "The path's lineage failed too often and waits for a person (needs-human: reset it)",
        429: "The path was rewritten too often (rewrite-cap)",
        501: "Not built into this engine, or the package offering it is not installed",
        502: "The model answered, but no answer was usable (invalid-model-answer; every attempt listed)",
        503: "No model or embedder reached (model-unavailable, embedder: none configured, connection, timeout), or overloaded; nothing was changed",
    }
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        model = RefusedReportModel if code == 422 else ErrorBody
        out[code] = {"model": model, "description": descriptions[code]}
    return out
