"""How many examples per second the differential query test runs at (engine vs reference
model, hgm_engine.testing), and the same for the transaction test and for the three tests of
the language's version 1.1 (search, rank, valid time, invalidate).

    python -m bench.differential_rate [--examples N] [--out FILE]

Runs the bodies of tests/test_differential.py and tests/test_differential_v11.py under
hypothesis with a fixed seed (``derandomize``) and no example database, and prints examples
per second of wall-clock and of CPU time (the machine may be shared: the CPU figure, from
``time.process_time``, is the steadier one). ``--out`` writes the figures as JSON (the last
run is in bench/results/differential.json).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

__all__ = ["rate", "main"]


def rate(test, examples: int) -> dict:
    """Run ``test`` (a ``@given(st.data())`` test of tests/test_differential.py) for
    ``examples`` examples: ``{"examples", "wall_s", "cpu_s", "per_s_wall", "per_s_cpu"}``."""
    inner = test.hypothesis.inner_test
    count = [0]

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
    @given(st.data())
    def run(data) -> None:
        count[0] += 1
        inner(data)

    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"examples": count[0], "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "per_s_wall": round(count[0] / wall, 1), "per_s_cpu": round(count[0] / cpu, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.differential_rate")
    parser.add_argument("--examples", type=int, default=400)
    parser.add_argument("--out", help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
    import test_differential as v1
    import test_differential_v11 as v11

    import hypothesis

    doc = {
        "command": "python -m bench.differential_rate --examples " + str(args.examples),
        "hypothesis": f"{hypothesis.__version__}, derandomize=True, no database",
        "load_average_before": round(os.getloadavg()[0], 1),
    }
    for module, name in (
        (v1, "test_random_queries_on_random_graphs_agree"),
        (v1, "test_random_transactions_with_rules_reach_the_same_states"),
        (v11, "test_search_rank_and_valid_at_queries_agree"),
        (v11, "test_whole_rankings_and_valid_sets_agree"),
        (v11, "test_invalidate_and_the_index_commits_keep_agree_with_the_model"),
    ):
        doc[name] = rate(getattr(module, name), args.examples)
        print(name, doc[name], flush=True)
    doc["load_average_after"] = round(os.getloadavg()[0], 1)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
