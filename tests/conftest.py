"""Shared test helpers: where the normative compliance cases and evaluation data live."""

from __future__ import annotations

import json
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_COMPLIANCE = SHARED / "spec" / "compliance"
OWN_COMPLIANCE = REPO / "tests" / "compliance"


def compliance_suites() -> list[tuple[str, pathlib.Path, dict]]:
    """(suite name, folder, document) for the spec's cases (when present) and our own."""
    suites = []
    for folder, origin in ((SHARED_COMPLIANCE, "spec"), (OWN_COMPLIANCE, "own")):
        if folder.is_dir():
            for path in sorted(folder.glob("*.cases.json")):
                suites.append((f"{origin}/{path.name}", folder, json.loads(path.read_text())))
    return suites


def compliance_cases() -> list:
    """pytest params: one per case, id ``suite::case``."""
    params = []
    for name, folder, doc in compliance_suites():
        graph = folder / doc["graph"]
        for case in doc["cases"]:
            params.append(pytest.param(graph, case, id=f"{name}::{case['id']}"))
    return params


@pytest.fixture
def travel_graph_path() -> pathlib.Path:
    """The spec's travel memory (tests that use it speak of its nodes by name)."""
    path = SHARED_COMPLIANCE / "travel.graph.json"
    if not path.exists():
        pytest.skip(f"the spec's travel graph is not here ({path}); ../shared is absent")
    return path
