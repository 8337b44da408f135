"""Long paths (issue 12, item 2): how long a path rewrite holds the write lock, how long a
transaction waiting behind it waits, and what ``locate`` and ``ingest`` cost on long paths.

Every measurement runs in a fresh subprocess (``--one KIND N``) with a time limit, so a run
that would take hours is cut off and reported as ``> LIMIT s`` instead of stopping the bench:

``rewrite N``
    a memory with a one-step path whose path index is built (``locate`` once, so the index
    follows every commit, as in an agent's process), then ``rewrite_path`` to ``N`` chained
    steps. *lock held*: from the moment the rewrite's builder runs (the commit holds the
    write lock from before that moment) until ``commit_built`` returns (the lock is released
    then); *waiting transaction*: a one-op ``apply`` started in another thread once the
    builder runs, from its call to its return.
``rewrite-noindex N``
    the same without the path index (no ``locate`` before): the commit alone.
``locate N``
    one ``N``-step path ingested (untimed), then the first ``locate`` (builds the index:
    every record's shape) and a second one (the index built).
``ingest N``
    one trajectory of ``N`` chained steps in one ``ingest`` (``PathGuards.max_steps`` raised
    to ``N`` when the bound exists).

Wall-clock times (``time.perf_counter``), one sample each (these are seconds, not
microseconds: noise is small against them). Run::

    python bench/path_scale.py --out bench/results/path_scale.json

``--plan`` picks the measurements (``rewrite:1000,ingest:20000``), ``--limit`` the seconds one
may take (default 300).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.progress import tracked  # noqa: E402

DEFAULT_PLAN = ("rewrite:200,rewrite:1000,rewrite-noindex:1000,locate:300,locate:1000,"
                "ingest:1000,ingest:20000")


def _chain(path_id: str, n: int) -> dict[str, Any]:
    return {"id": path_id, "goal": f"goal of {path_id}", "steps": [f"s{i}" for i in range(n)]}


def _guards(n: int) -> Any:
    from hgm_engine.paths import PathGuards

    if "max_steps" in {f.name for f in PathGuards.__attrs_attrs__}:
        return PathGuards(max_steps=max(n, PathGuards().max_steps))
    return PathGuards()


def measure_rewrite(n: int, *, index: bool) -> dict[str, Any]:
    """Lock held by a rewrite to ``n`` steps, and the wait of a transaction behind it."""
    from hgm_engine import Memory
    from hgm_engine.paths.versions import rewrite_builder

    memory = Memory()
    memory.path_guards = _guards(n)
    memory.ingest([_chain("p", 1)])
    if index:
        memory.locate("goal of p")
    inner = rewrite_builder("p", [f"s{i}" for i in range(n)], "long", memory.path_guards)
    started = threading.Event()
    marks: dict[str, float] = {}

    def build(overlay: Any, ctx: Any) -> Any:
        marks["locked"] = time.perf_counter()
        started.set()
        return inner(overlay, ctx)

    def wait_behind() -> None:
        started.wait()
        begin = time.perf_counter()
        memory.apply({"ops": [{"op": "add_node", "id": "waiting", "type": "fact"}]})
        marks["waited"] = time.perf_counter() - begin

    waiter = threading.Thread(target=wait_behind)
    waiter.start()
    begin = time.perf_counter()
    report = memory.commit_built(build, kind="path-rewrite")
    end = time.perf_counter()
    waiter.join()
    assert report.committed
    return {"steps": n, "index": index, "commit_s": end - begin, "lock_held_s": end - marks["locked"],
            "waiting_transaction_s": marks["waited"]}


def measure_locate(n: int) -> dict[str, Any]:
    """First (index built) and second ``locate`` over one ``n``-step path."""
    from hgm_engine import Memory

    memory = Memory()
    memory.path_guards = _guards(n)
    memory.ingest([_chain("p", n)])
    begin = time.perf_counter()
    first = memory.locate("goal of p s3 s7")
    middle = time.perf_counter()
    second = memory.locate("goal of p s7 s3")
    end = time.perf_counter()
    assert first.matches and second.matches
    return {"steps": n, "first_locate_s": middle - begin, "second_locate_s": end - middle}


def measure_ingest(n: int) -> dict[str, Any]:
    """One ``ingest`` of one trajectory of ``n`` chained steps."""
    from hgm_engine import Memory

    memory = Memory()
    memory.path_guards = _guards(n)
    doc = _chain("p", n)
    begin = time.perf_counter()
    report = memory.ingest([doc])
    end = time.perf_counter()
    assert report.ingested == ["p"]
    return {"steps": n, "ingest_s": end - begin}


def run_one(kind: str, n: int) -> dict[str, Any]:
    if kind == "rewrite":
        return measure_rewrite(n, index=True)
    if kind == "rewrite-noindex":
        return measure_rewrite(n, index=False)
    if kind == "locate":
        return measure_locate(n)
    if kind == "ingest":
        return measure_ingest(n)
    raise SystemExit(f"unknown measurement {kind!r}")


def run_plan(plan: str, limit: float) -> list[dict[str, Any]]:
    results = []
    for item in tracked(plan.split(","), "measurements"):
        kind, _, size = item.strip().partition(":")
        command = [sys.executable, __file__, "--one", kind, size]
        begin = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=limit, check=False)
        except subprocess.TimeoutExpired:
            entry = {"kind": kind, "steps": int(size), "timed_out_after_s": limit}
        else:
            if done.returncode != 0:
                raise SystemExit(f"{item} failed:\n{done.stderr}")
            entry = {"kind": kind, **json.loads(done.stdout.strip().splitlines()[-1])}
        entry["process_s"] = round(time.perf_counter() - begin, 3)
        print(json.dumps(entry), flush=True)
        results.append(entry)
    return results


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", default=DEFAULT_PLAN, help="kind:steps,... (kinds: rewrite, rewrite-noindex, locate, ingest)")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds one measurement may take")
    parser.add_argument("--out", help="write the results (JSON) here")
    parser.add_argument("--label", default=None, help="a name for this run in the JSON (e.g. before/after)")
    parser.add_argument("--one", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]))))
        return 0
    results = run_plan(args.plan, args.limit)
    doc = {
        "label": args.label,
        "commit": _git_commit(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "limit_s": args.limit,
        "command": "python bench/path_scale.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "results": results,
    }
    if args.out:
        out = pathlib.Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
