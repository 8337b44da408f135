"""Smoke test of the REST load test (bench/serve): tiny memory, three clients, two short phases.

Not a timed test: it checks that the harness runs against a real ``hgm serve`` process on
loopback, over SQLite and over PostgreSQL, and that its own check holds (every committed t exactly once, the final state and the
reopened store equal what the committed reports imply, a clean stop).
"""

from __future__ import annotations

import pathlib
import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.serve import load_test  # noqa: E402


def test_load_test_runs_and_nothing_is_lost(store_location: str) -> None:
    """On a SQLite file and on a PostgreSQL database (conftest's throwaway cluster)."""
    report = load_test.run(
        db=store_location,
        nodes=500,
        clients=3,
        duration=1.5,
        max_requests=600,
        write_ratio=0.4,
        bad_ratio=0.2,
        log=lambda message: None,
    )
    assert report["checks"]["ok"], report["checks"]
    assert report["server_exit_code"] == 0
    mixed = report["phases"]["mixed"]
    assert mixed["transactions"]["count"] > 0 and mixed["refused_transactions"]["count"] > 0
    assert report["phases"]["queries"]["queries"]["count"] > 0
    assert report["checks"]["server"]["commits"] == mixed["transactions"]["count"] + 1  # + the setup
    assert set(report["phases"]["queries"]["per_query"]) >= {"card", "hub_facts", "own_counter"}
    assert "| mixed | 3 |" in load_test.markdown(report)
