"""The reference model (hgm_engine.testing) against the spec itself: every compliance case —
the spec's v1 cases, its v1.1 cases (spec/compliance/next/: search, rank, valid time) and our
own — answered by the model, not the engine.

The model interprets queries that hgm's parser and analyzer accept; what it decides itself is
the meaning of every such query, the errors of binding (a missing focus or parameter, a
parameter of the wrong kind for its place) and the v1.1 argument errors (a TEXT with no word,
a ``valid_at`` argument that is not an instant). So every result case runs here, and every
error case the model decides: those of spec/compliance/next/, and those whose query the
engine's analyzer accepts (the error comes when the query is bound). The other error cases
(syntax, unknown names, misplaced finals, bad literal arguments of v1 steps) are the
analyzer's, which tests/test_compliance.py checks."""

from __future__ import annotations

import functools
import json
import pathlib

import pytest

from hgm_engine import HGMError, compile
from hgm_engine.testing import ModelGraph, ModelQueryError, evaluate

from tests.conftest import SHARED_COMPLIANCE, compliance_suites

NEXT = SHARED_COMPLIANCE / "next"


def _cases() -> tuple[list, list]:
    """(result params, model-decided error params), each ``(graph path, case, v1.1?)``."""
    suites = [(name, folder, doc, False) for name, folder, doc in compliance_suites()]
    if NEXT.is_dir():
        for path in sorted(NEXT.glob("*.cases.json")):
            suites.append((f"spec/next/{path.name}", NEXT, json.loads(path.read_text()), True))
    results, errors = [], []
    for name, folder, doc, next_suite in suites:
        graph = (folder / doc["graph"]).resolve()
        for case in doc["cases"]:
            param = pytest.param(graph, case, id=f"{name}::{case['id']}")
            if "error" not in case:
                results.append(param)
            elif next_suite or _analyzer_accepts(case["expr"]):
                errors.append(param)
    return results, errors


def _analyzer_accepts(expr: str) -> bool:
    try:
        compile(expr)
    except HGMError:
        return False
    return True


RESULT_CASES, ERROR_CASES = _cases()


@functools.lru_cache(maxsize=None)
def _graph(path: pathlib.Path) -> ModelGraph:
    return ModelGraph.from_document(json.loads(path.read_text(encoding="utf-8")))


def test_the_spec_v1_1_cases_are_among_those_the_model_answers():
    if not NEXT.is_dir():
        pytest.skip(f"the spec's v1.1 cases are not here ({NEXT})")
    ids = [param.id for param in RESULT_CASES + ERROR_CASES]
    assert sum("spec/next/search" in i for i in ids) >= 20
    assert sum("spec/next/time" in i for i in ids) >= 10


@pytest.mark.parametrize("graph_path, case", RESULT_CASES)
def test_the_model_gives_the_compliance_result(graph_path, case):
    answer = evaluate(case["expr"], _graph(graph_path), focus=case.get("focus"), params=case.get("params"))
    assert answer.value == case["result"]


@pytest.mark.parametrize("graph_path, case", ERROR_CASES)
def test_the_model_refuses_with_the_compliance_error(graph_path, case):
    with pytest.raises(ModelQueryError) as refused:
        evaluate(case["expr"], _graph(graph_path), focus=case.get("focus"), params=case.get("params"))
    assert refused.value.category == case["error"]
