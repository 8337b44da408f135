"""The served OpenAPI document matches what the REST server does (issue 16's acceptance).

A property-based API checker, schemathesis, reads ``/openapi.json`` from the app and, for every
operation, sends requests made from the document (valid ones, and invalid ones that must be
refused) and checks each answer against it: the status is documented, the body fits the
documented schema, the content type and headers are right, a method the document does not
list is a 405 with ``Allow``, the token is not ignored. Bounded: a few examples per operation.

Two of schemathesis's checks are replaced by stricter ones of ours:

- *schema-valid data is accepted*: the server may refuse a request that fits the schema for
  what no JSON Schema can say (a query with a syntax error, an op naming a missing node, a
  constraint that breaks) with 400/404/409/422 and that category; what it must never do is
  refuse it for its *shape*: the request model (the same pydantic model the route validates
  with) must accept every body the document allows, and a refusal is never ``invalid-json``;
- *no server error*: never a 500; 502/503 only from the LLM routes (no usable model answer,
  none reached), documented there.

Run alone (about a minute): ``python -m pytest -q tests/test_openapi_contract.py``; the
checker's own command line works too (``schemathesis run http://127.0.0.1:8765/openapi.json``
against ``hgm serve``).
"""

from __future__ import annotations

import json

import pytest

schemathesis = pytest.importorskip("schemathesis")
from fastapi.routing import APIRoute  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from schemathesis.checks import not_a_server_error, positive_data_acceptance  # noqa: E402

from hgm_engine import Memory  # noqa: E402
from hgm_engine.server import create_app  # noqa: E402
from hgm_engine.server.service import LLMEndpoint  # noqa: E402

TOKEN = "contract-token"
PLAN = [
    {"op": "add_node", "id": "trip", "type": "goal", "content": "Plan a trip", "status": "active"},
    {"op": "add_node", "id": "visit", "type": "action", "parent": "trip", "content": "Visit", "status": "pending"},
    {"op": "add_node", "id": "hotel", "type": "result", "content": "Hotel"},
    {"op": "add_edge", "from": "visit", "to": "hotel", "type": "produces"},
]


class _Unhelpful:
    """A chat client whose model never answers usably (the LLM routes answer 502 or plan.error)."""

    class _Completions:
        def create(self, **kwargs):
            from types import SimpleNamespace

            message = SimpleNamespace(content="not JSON", refusal=None)
            return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason="stop")], usage=None)

    def __init__(self) -> None:
        self.chat = type("Chat", (), {"completions": self._Completions()})()


def _app():
    memory = Memory()
    memory.apply({"ops": PLAN})
    memory.snapshot("start")
    memory.ingest([{"id": "r1", "goal": "Refund order A1", "steps": ["check_policy", "refund"]}])
    memory.load_rules("propagate derived_from backward depth 2", "stale")
    return create_app(memory, token=TOKEN, llm=LLMEndpoint(client=_Unhelpful(), model="stub", max_attempts=1))


APP = _app()
BODY_MODELS = {
    route.operation_id or route.name: route.body_field.field_info.annotation
    for route in APP.routes
    if isinstance(route, APIRoute) and route.body_field is not None
}
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)

# What a route may answer with a 5xx, and why (documented on those routes).
_GATEWAY = {"invalid-model-answer", "model-unavailable"}


def _error_category(response) -> str | None:
    try:
        return response.json()["error"]["category"]
    except (ValueError, KeyError, TypeError):
        return None


@schemathesis.check
def never_a_500(ctx, response, case) -> bool | None:
    """No 500 ever; 502/503 only for a model that gave no usable answer."""
    if response.status_code >= 500:
        category = _error_category(response)
        assert response.status_code in (502, 503) and category in _GATEWAY, (
            f"{case.method} {case.path}: {response.status_code} {response.text[:300]}"
        )
    return None


@schemathesis.check
def schema_valid_requests_are_not_refused_for_their_shape(ctx, response, case) -> bool | None:
    """A body the document allows fits the route's request model, and is never refused as not JSON."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    category = _error_category(response)
    assert category != "invalid-json", f"{case.operation.label}: valid JSON refused: {response.text[:300]}"
    model = BODY_MODELS.get(case.operation.definition.raw.get("operationId"))
    if model is not None and case.body is not None and not isinstance(case.body, (bytes, str)):
        try:
            model.model_validate_json(json.dumps(case.body))
        except ValidationError as exc:
            raise AssertionError(f"{case.operation.label}: the document allows what the request model refuses: {exc}") from None
    return None


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_the_server_does_what_its_openapi_document_says(case):
    case.call_and_validate(
        headers={"Authorization": f"Bearer {TOKEN}"},
        excluded_checks=[positive_data_acceptance, not_a_server_error],
        additional_checks=[never_a_500, schema_valid_requests_are_not_refused_for_their_shape],
    )
