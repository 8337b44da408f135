"""How long the first ``locate`` takes after reopening a memory of many paths.

    .venv/bin/python bench/localize/reopen.py [--paths 100000] [--dir /tmp/hgm-reopen] [--out FILE]
        [--label after]

Builds (once per size, reused after) a SQLite memory holding ``--paths`` synthetic paths
(:mod:`synthetic`: UltraTool requests rewritten by a seeded generator; ingested in batches), makes
its path index (the first ``locate``) and saves it with the memory (``save_index``). Then, in a
*fresh Python process* each time (so nothing is warm but the operating system's file cache), it
opens the memory and times: opening (``Memory.open``), the first ``locate`` (loading the saved
index, or rebuilding it) in wall-clock and in this process's CPU seconds (the machine is
shared: CPU time is what the load does not inflate as much), and the second; the 1-minute
load average is noted with each run. The figures are appended to ``--out`` under
``--label`` (``before``: the code before the index was persisted in binary form; ``after``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

QUERIES = ["book a flight from Beijing to Shanghai on March 3 and reserve a hotel",
           "cancel my 8 AM alarm and set a new one at 9 AM",
           "where is my order A1001? tell me its status"]


def build(db: pathlib.Path, n: int) -> dict:
    from synthetic import synthetic_paths

    from hgm_engine import Memory
    from hgm_engine.paths.localize.taskplan import find_taskplan_root, load_taskplan

    root = find_taskplan_root(REPO)
    seeds = load_taskplan(root / "ultratool").records() if root else None
    records = list(synthetic_paths(n, seeds) if seeds else synthetic_paths(n))
    db.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    memory = Memory.open(str(db))
    batch = 5000
    for at in range(0, len(records), batch):
        memory.ingest([r.to_json() for r in records[at:at + batch]])
    ingested = time.perf_counter() - start
    start = time.perf_counter()
    memory.locate(QUERIES[0])
    first = time.perf_counter() - start
    memory.save_index()
    memory.close()
    return {"ingest_s": round(ingested, 1), "build_index_s": round(first, 1)}


def reopen(db: pathlib.Path) -> dict:
    """Runs in the child process: open, first locate, second locate."""
    from hgm_engine import Memory

    start = time.perf_counter()
    memory = Memory.open(str(db))
    opened = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    first = memory.locate(QUERIES[1])
    first_s, first_cpu = time.perf_counter() - start, time.process_time() - cpu
    start = time.perf_counter()
    memory.locate(QUERIES[2])
    second_s = time.perf_counter() - start
    metrics = memory.path_metrics()["index"]
    memory.close()
    return {"open_s": round(opened, 3), "first_locate_s": round(first_s, 3),
            "first_locate_cpu_s": round(first_cpu, 3), "load_average": round(os.getloadavg()[0], 1), "second_locate_s": round(second_s, 4),
            "index_source": metrics["source"], "index_size": metrics["size"],
            "top": first.matches[0].path if first.matches else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", type=int, default=100_000)
    parser.add_argument("--dir", default="/tmp/hgm-reopen")
    parser.add_argument("--label", default="after")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "localize-reopen.json"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(reopen(pathlib.Path(args.child))))
        return 0
    db = pathlib.Path(args.dir) / f"paths-{args.paths}-{args.label}.db"
    built = None
    if not db.exists():
        built = build(db, args.paths)
    runs = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, __file__, "--child", str(db)], capture_output=True, text=True,
                             check=True, cwd=REPO)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(runs[-1], file=sys.stderr, flush=True)
    result = {"paths": args.paths, "label": args.label, "built": built, "runs": runs,
              "first_locate_s_best": min(r["first_locate_s"] for r in runs),
              "first_locate_s_worst": max(r["first_locate_s"] for r in runs),
              "first_locate_cpu_s_worst": max(r["first_locate_cpu_s"] for r in runs),
              "machine": f"{platform.machine()}, {platform.python_implementation()} {platform.python_version()}",
              "db_bytes": db.stat().st_size,
              "command": "bench/localize/reopen.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    out_path = pathlib.Path(args.out)
    doc = json.loads(out_path.read_text(encoding="utf-8")) if out_path.exists() else {}
    doc[f"{args.label}-{args.paths}"] = result
    out_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
