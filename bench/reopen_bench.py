"""Reopening a memory and answering one query, from its stored image and from its rows (issue 15).

For one SQLite memory (``--db``, made by ``hgm load`` or ``peer_bench.py``'s build, which store
the image), fresh processes, interleaved: each opens the memory — from the image (as
``Memory.open`` does), or from the state rows (``SQLiteStore(image_min_nodes=None)``: the
path before images, and the fallback) — and answers one benchmark query. Reported per mode:
the CPU time (``time.process_time``, this single-threaded process) of the open, of the first
query and of both, medians over ``--repeat`` processes, plus ``VmRSS`` after the query.

    python bench/reopen_bench.py --db /tmp/g/peer-hgm-n100000-s0.db \\
        --meta /tmp/g/memory-v1-n100000-s0.meta.json --repeat 5 --out bench/results/reopen-100k.json

``--build GRAPH`` first makes ``--db`` from a graph file (``bench/generate.py``), in a fresh
process, as ``hgm load`` does (``Memory.open(db).load(doc)``: the genesis rows, the search
index and the image), and reports its CPU, wall time and peak RSS (``build`` in the output):

    python bench/generate.py --nodes 1000000 --out /tmp/g/memory-v1-n1000000-s0.json
    python bench/reopen_bench.py --build /tmp/g/memory-v1-n1000000-s0.json --db /tmp/g/m1m.db \\
        --meta /tmp/g/memory-v1-n1000000-s0.meta.json --modes image --repeat 3 --out bench/results/reopen-1m.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

__all__ = ["build", "child", "main"]

_CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
import hgm_engine
from hgm_engine.store.sqlite import SQLiteStore
from bench.baselines import QUERIES
mode, db, query, anchors = json.loads(sys.argv[1])
cpu = time.process_time()
store = SQLiteStore(db, create=False) if mode == "image" else SQLiteStore(db, create=False, image_min_nodes=None)
memory = hgm_engine.Memory(store=store)
opened = time.process_time()
memory.query(QUERIES[query][0].format(**anchors))
done = time.process_time()
rss = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS:"))
print(json.dumps({{"open": opened - cpu, "first": done - opened, "load": store.last_load, "rss_mb": rss / 1024}}))
"""


_BUILD = """
import json, pathlib, resource, sys, time
sys.path.insert(0, {root!r})
import hgm_engine
graph, db = sys.argv[1], sys.argv[2]
for suffix in ("", "-wal", "-shm"):
    pathlib.Path(db + suffix).unlink(missing_ok=True)
cpu, wall = time.process_time(), time.perf_counter()
with open(graph, encoding="utf-8") as fh:
    doc = json.load(fh)
with hgm_engine.Memory.open(db) as memory:
    memory.load(doc, reason="reopen benchmark")
print(json.dumps({{"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def build(graph: str, db: str) -> dict[str, Any]:
    """Make the SQLite memory ``db`` from the graph file ``graph`` in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-c", _BUILD.format(root=str(ROOT)), graph, db], capture_output=True, text=True, cwd=str(ROOT)
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child(mode: str, db: str, query: str, anchors: dict[str, str]) -> dict[str, Any]:
    """One fresh process: open ``db`` in ``mode`` ("image" or "rows"), answer ``query``."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD.format(root=str(ROOT)), json.dumps([mode, db, query, anchors])],
        capture_output=True, text=True, env=env, cwd=str(ROOT),
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="reopen + one query: from the image and from the rows")
    parser.add_argument("--db", required=True)
    parser.add_argument("--meta", required=True, type=pathlib.Path)
    parser.add_argument("--queries", default="entity_facts,card,failed_urgent,five_steps")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modes", default="image,rows")
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--build", metavar="GRAPH", help="first make --db from this graph file (timed)")
    args = parser.parse_args(argv)
    built = None
    if args.build:
        built = build(args.build, args.db)
        print(f"build  cpu {built['cpu']:.1f} s  wall {built['wall']:.1f} s  peak rss {built['peak_rss_mb']:.0f} MB", flush=True)
    anchors = json.loads(args.meta.read_text(encoding="utf-8"))["anchors"]
    modes, queries = args.modes.split(","), args.queries.split(",")
    runs: dict[str, dict[str, list]] = {m: {q: [] for q in queries} for m in modes}
    for _ in range(args.repeat):
        for q in queries:
            for m in modes:
                runs[m][q].append(child(m, args.db, q, anchors))
    report: dict[str, Any] = {"db": args.db, "repeat": args.repeat, "load_average": os.getloadavg(), "cpu_seconds_median": {}}
    if built is not None:
        report["build"] = built
    for m in modes:
        for q in queries:
            got = runs[m][q]
            assert {r["load"] for r in got} == {m}, f"{m} opened as {[r['load'] for r in got]}"
            row = {k: statistics.median(r[k] for r in got) for k in ("open", "first", "rss_mb")}
            row["open_and_first"] = statistics.median(r["open"] + r["first"] for r in got)
            report["cpu_seconds_median"].setdefault(m, {})[q] = row
            print(f"{m:6s} {q:14s} open {row['open']:.3f} s  first {row['first'] * 1e3:8.1f} ms  "
                  f"both {row['open_and_first']:.3f} s  rss {row['rss_mb']:.0f} MB", flush=True)
    report["runs"] = runs
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
