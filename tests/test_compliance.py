"""Every compliance case (the spec's normative ones and ours) through the Python API."""

from __future__ import annotations

import functools
import json

import pytest

from hgm_engine import HGMError, Memory

from tests.conftest import SHARED_COMPLIANCE, compliance_cases


# The spec's v1.1 cases (spec/compliance/next/) this engine implements: search and rank
# (§8.1) and valid time (§8.2).
NEXT_SUITES = ("search.cases.json", "time.cases.json")


def next_cases() -> list:
    """pytest params for the implemented v1.1 suites, id ``spec/next/FILE::case``."""
    params = []
    for name in NEXT_SUITES:
        path = SHARED_COMPLIANCE / "next" / name
        if path.is_file():
            doc = json.loads(path.read_text())
            graph = (path.parent / doc["graph"]).resolve()
            params.extend(pytest.param(graph, case, id=f"spec/next/{name}::{case['id']}") for case in doc["cases"])
    return params


@functools.lru_cache(maxsize=None)
def _memory(graph_path) -> Memory:
    return Memory.from_file(graph_path)


def test_spec_compliance_cases_are_present_or_skipped_with_reason():
    if not SHARED_COMPLIANCE.is_dir():
        pytest.skip(f"spec compliance folder not found at {SHARED_COMPLIANCE}; only our own cases ran")
    assert list(SHARED_COMPLIANCE.glob("*.cases.json")), "the spec compliance folder holds no cases"


def test_the_implemented_v1_1_suites_are_present():
    if not SHARED_COMPLIANCE.is_dir():
        pytest.skip(f"spec compliance folder not found at {SHARED_COMPLIANCE}")
    for name in NEXT_SUITES:
        assert (SHARED_COMPLIANCE / "next" / name).is_file(), f"spec/compliance/next/{name} is missing"


@pytest.mark.parametrize("graph_path, case", compliance_cases() + next_cases())
def test_case(graph_path, case):
    memory = _memory(graph_path)
    if "error" in case:
        with pytest.raises(HGMError) as caught:
            memory.query(case["expr"], focus=case.get("focus"), params=case.get("params"))
        assert caught.value.category == case["error"], caught.value.render()
        if caught.value.line is not None:
            lines = case["expr"].split("\n")
            assert 1 <= caught.value.line <= len(lines)
            assert 1 <= caught.value.column <= len(lines[caught.value.line - 1]) + 1
    else:
        result = memory.query(case["expr"], focus=case.get("focus"), params=case.get("params"))
        assert result.value == case["result"]
