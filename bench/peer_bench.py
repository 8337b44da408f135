"""hgm against the databases a user would pick instead (issue 15): same memory, same answers.

For one size: generate (or reuse) the memory, store it durably in hgm (a SQLite memory, as
``hgm load`` makes it) and in every installed peer (``peers.py``: SQLite, DuckDB, Kùzu), check
that every system gives hgm's answer set to every query, then measure, side by side:

- **first call**: a fresh process per (system, query): import the library, open the store
  (``open``), answer that one query (``first``). ``open + first`` is "reopen and answer one
  query"; every ``hgm query --db`` one-shot pays it (plus the interpreter's start);
- **resident memory**: a fresh process per system that opens the store and runs every query
  once: ``VmRSS`` then (and before opening), ``VmHWM``;
- **warm**: one process with every system open, each query timed after one warm-up call,
  interleaved batches (as ``query_bench.py``).

``--hgm-tree DIR`` adds a second hgm, run from another source tree (an export of an earlier
commit), to the cold measurements: before and after in the same run.

    python bench/peer_bench.py --nodes 100000 --cold-repeat 3 --out bench/results/peers.json \\
        --markdown bench/results/peers.md

Times are wall-clock medians (DuckDB and Kùzu use several threads, so CPU time would not
compare); CPU-time medians are in the JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["digest", "run", "markdown", "main"]


def digest(answer: Any) -> str:
    """The answer as a set: a count as itself, ids sorted (order is not compared).

    >>> digest(["b", "a"]) == digest(["a", "b"]), digest(3)
    (True, '3')
    """
    if isinstance(answer, int):
        return str(answer)
    ids = sorted(answer)
    if len(set(ids)) != len(ids):
        return "duplicates:" + hashlib.sha1("\n".join(ids).encode()).hexdigest()
    return f"{len(ids)}:" + hashlib.sha1("\n".join(ids).encode()).hexdigest()


def _status_kb(field: str) -> int | None:
    try:
        for line in open("/proc/self/status", encoding="ascii"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class HgmSystem:
    """hgm as the benchmark sees it: a SQLite memory, ``Memory.open``, ``memory.query``."""

    name = "hgm"

    def __init__(self) -> None:
        self.memory = None

    @staticmethod
    def build(doc: dict[str, Any], path: str | pathlib.Path) -> None:
        import hgm_engine

        for suffix in ("", "-wal", "-shm"):
            pathlib.Path(str(path) + suffix).unlink(missing_ok=True)
        with hgm_engine.Memory.open(path) as memory:
            memory.load(doc, reason="peer benchmark")

    def open(self, path: str | pathlib.Path) -> None:
        import hgm_engine

        self.memory = hgm_engine.Memory.open(path)

    def run(self, name: str, anchors: dict[str, str]) -> Any:
        from bench.baselines import QUERIES

        return self.memory.query(QUERIES[name][0].format(**anchors)).value

    def close(self) -> None:
        if self.memory is not None:
            self.memory.close()
            self.memory = None


def _system(name: str):
    if name.startswith("hgm"):
        return HgmSystem
    from bench import peers

    return peers.PEERS[name]


# -- the child: one fresh process -------------------------------------------------------------


def child(system: str, store: str, anchors: dict[str, str], queries: list[str]) -> dict[str, Any]:
    """Import, open, answer ``queries`` once each; times, answers' digests and memory."""
    from bench.baselines import QUERIES  # noqa: F401  (before any timing: HgmSystem reads it)

    rss_start = _status_kb("VmRSS")
    wall, cpu = time.perf_counter(), time.process_time()
    cls = _system(system)
    if system.startswith("hgm"):
        import hgm_engine  # noqa: F401  (the import is part of what a one-shot pays)
    elif system == "duckdb":
        import duckdb  # noqa: F401
    elif system == "kuzu":
        import kuzu  # noqa: F401
    import_wall, import_cpu = time.perf_counter() - wall, time.process_time() - cpu
    rss_imported = _status_kb("VmRSS")
    instance = cls()
    wall, cpu = time.perf_counter(), time.process_time()
    instance.open(store)
    open_wall, open_cpu = time.perf_counter() - wall, time.process_time() - cpu
    rss_open = _status_kb("VmRSS")
    first = {}
    for name in queries:
        wall, cpu = time.perf_counter(), time.process_time()
        answer = instance.run(name, anchors)
        first[name] = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "digest": digest(answer)}
    out = {
        "import": {"wall": import_wall, "cpu": import_cpu},
        "open": {"wall": open_wall, "cpu": open_cpu},
        "first": first,
        "rss_kb": {"start": rss_start, "imported": rss_imported, "open": rss_open, "after": _status_kb("VmRSS"),
                   "hwm": _status_kb("VmHWM")},
    }
    instance.close()
    return out


def _spawn(system: str, store: pathlib.Path, meta: pathlib.Path, queries: list[str], tree: pathlib.Path) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has its bytecode cached
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    code = (
        "import importlib.util, json, sys\n"
        f"sys.path[:0] = [{str(tree)!r}, {str(ROOT)!r}]\n"
        # this runner, whichever tree hgm is imported from
        f"spec = importlib.util.spec_from_file_location('peer_bench_child', {str(pathlib.Path(__file__))!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "child = module.child\n"
        "args = json.loads(sys.argv[1])\n"
        "print(json.dumps(child(*args)))\n"
    )
    anchors = json.loads(meta.read_text(encoding="utf-8"))["anchors"]
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps([system, str(store), anchors, queries])],
        capture_output=True, text=True, env=env, cwd=str(tree),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{system} child failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- the run ----------------------------------------------------------------------------------


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(
    nodes: int,
    *,
    seed: int = 0,
    graph_dir: pathlib.Path = ROOT / "bench" / "results" / "tmp",
    systems: list[str] | None = None,
    cold_repeat: int = 3,
    repeat: int = 5,
    min_batch: float = 0.05,
    hgm_tree: pathlib.Path | None = None,
    rebuild: bool = False,
    log=_log,
) -> dict[str, Any]:
    from bench import baselines, generate, peers, query_bench

    path, meta, _ = generate.ensure_graph(graph_dir, nodes, seed)
    meta_path = path.with_name(path.stem + ".meta.json")
    anchors = meta["anchors"]
    names = list(baselines.QUERIES)
    systems = systems or ["hgm", *peers.available()]
    stores = {s: graph_dir / f"peer-{s}-n{nodes}-s{seed}.db" for s in systems}
    doc = json.loads(path.read_text(encoding="utf-8"))
    build_seconds = {}
    for s in systems:
        if rebuild or not stores[s].exists():
            started = time.perf_counter()
            _system(s).build(doc, stores[s])
            build_seconds[s] = time.perf_counter() - started
            log(f"[{nodes}] built {s} in {build_seconds[s]:.1f}s")
    del doc
    cold_systems = list(systems) + (["hgm-before"] if hgm_tree else [])
    trees = {s: ROOT for s in systems}
    if hgm_tree:
        trees["hgm-before"] = hgm_tree
        stores["hgm-before"] = stores["hgm"]

    # first calls: a fresh process per (system, query), rounds interleaved
    cold: dict[str, dict[str, list[dict[str, Any]]]] = {s: {q: [] for q in names} for s in cold_systems}
    for r in range(cold_repeat):
        for q in names:
            for s in cold_systems:
                cold[s][q].append(_spawn(s, stores[s], meta_path, [q], trees[s]))
        log(f"[{nodes}] cold round {r + 1}/{cold_repeat} done")
    # resident memory: every query once in one fresh process
    resident = {s: _spawn(s, stores[s], meta_path, names, trees[s]) for s in cold_systems}

    # warm: every system open in this process
    opened = {}
    for s in systems:
        opened[s] = _system(s)()
        opened[s].open(stores[s])
    expected = {q: digest(opened["hgm"].run(q, anchors)) for q in names}
    mismatches = []
    for s in cold_systems:
        for q in names:
            got = {c["first"][q]["digest"] for c in cold[s][q]} | {resident[s]["first"][q]["digest"]}
            if got != {expected[q]}:
                mismatches.append((s, q, sorted(got), expected[q]))
    warm = {}
    for q in names:
        fns = {}
        for s in systems:
            answer = opened[s].run(q, anchors)  # warm-up, untimed
            if digest(answer) != expected[q]:
                mismatches.append((s, q, digest(answer), expected[q]))
            fns[s] = (lambda inst=opened[s], q=q: inst.run(q, anchors))
        warm[q] = query_bench.measure(fns, repeat, min_batch)
        log(f"[{nodes}] warm {q}: " + "  ".join(f"{s} {warm[q][s]['wall'] * 1e6:,.0f}us" for s in systems))
    for inst in opened.values():
        inst.close()
    if mismatches:
        raise AssertionError(f"answers differ from hgm's: {mismatches}")

    def med(values):
        return statistics.median(values)

    table = {}
    for s in cold_systems:
        per = {}
        for q in names:
            runs = cold[s][q]
            per[q] = {
                "first_wall_ms": med(c["first"][q]["wall"] for c in runs) * 1e3,
                "first_cpu_ms": med(c["first"][q]["cpu"] for c in runs) * 1e3,
                "first_wall_ms_all": [round(c["first"][q]["wall"] * 1e3, 2) for c in runs],
                "open_wall_ms": med(c["open"]["wall"] for c in runs) * 1e3,
                "open_plus_first_wall_ms": med(c["open"]["wall"] + c["first"][q]["wall"] for c in runs) * 1e3,
                "open_plus_first_cpu_ms": med(c["open"]["cpu"] + c["first"][q]["cpu"] for c in runs) * 1e3,
                "import_wall_ms": med(c["import"]["wall"] for c in runs) * 1e3,
            }
            if s in warm[q]:
                per[q]["warm_us"] = warm[q][s]["wall"] * 1e6
                per[q]["warm_cpu_us"] = warm[q][s]["cpu"] * 1e6
        rss = resident[s]["rss_kb"]
        table[s] = {
            "queries": per,
            "open_wall_ms": med(c["open"]["wall"] for q in names for c in cold[s][q]) * 1e3,
            "open_cpu_ms": med(c["open"]["cpu"] for q in names for c in cold[s][q]) * 1e3,
            "import_wall_ms": med(c["import"]["wall"] for q in names for c in cold[s][q]) * 1e3,
            "rss_mb_after_all": rss["after"] / 1024 if rss["after"] else None,
            "rss_mb_imported": rss["imported"] / 1024 if rss["imported"] else None,
            "rss_mb_open": rss["open"] / 1024 if rss["open"] else None,
            "hwm_mb": rss["hwm"] / 1024 if rss["hwm"] else None,
            "first_in_sequence_ms": {q: v["wall"] * 1e3 for q, v in resident[s]["first"].items()},
            "store_mb": _size_mb(stores[s]),
        }
    return {
        "benchmark": "peers",
        "environment": query_bench.environment() | _versions(),
        "nodes": meta["nodes"],
        "edges": meta["edges"],
        "anchors": anchors,
        "config": {"cold_repeat": cold_repeat, "repeat": repeat, "min_batch_seconds": min_batch,
                   "hgm_before_tree": str(hgm_tree) if hgm_tree else None},
        "build_seconds": build_seconds,
        "systems": table,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }


def _size_mb(path: pathlib.Path) -> float:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20
    total = 0
    for suffix in ("", "-wal", ".wal"):
        p = pathlib.Path(str(path) + suffix)
        if p.exists():
            total += p.stat().st_size
    return total / 2**20


def _versions() -> dict[str, Any]:
    import sqlite3

    out: dict[str, Any] = {"sqlite": sqlite3.sqlite_version}
    for module in ("duckdb", "kuzu"):
        try:
            out[module] = __import__(module).__version__
        except ImportError:
            out[module] = None
    return out


def _ms(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 1:
        return f"{value:.1f} ms"
    return f"{value * 1000:.0f} µs"


def markdown(report: dict[str, Any]) -> str:
    """The tables of docs/performance.md for a report."""
    systems = list(report["systems"])
    head = "| query | " + " | ".join(systems) + " |"
    rule = "|---|" + "---:|" * len(systems)
    lines = [f"#### {report['nodes']:,} nodes, {report['edges']:,} edges", ""]
    for title, key, scale in (
        ("First call in a fresh process (after open; wall, median)", "first_wall_ms", 1),
        ("Reopen and answer this one query (open + first call; wall, median)", "open_plus_first_wall_ms", 1),
        ("Warm (after one warm-up call; wall, median per call)", "warm_us", 1e-3),
    ):
        lines += [f"**{title}**", "", head, rule]
        for q in report["systems"][systems[0]]["queries"]:
            cells = []
            for s in systems:
                v = report["systems"][s]["queries"][q].get(key)
                cells.append("–" if v is None else _ms(v * scale))
            lines.append(f"| `{q}` | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["| | " + " | ".join(systems) + " |", rule]
    for label, key in (("import (ms)", "import_wall_ms"), ("open (ms)", "open_wall_ms"),
                       ("RSS after every query once (MB)", "rss_mb_after_all"), ("RSS before open (MB)", "rss_mb_imported"),
                       ("peak RSS (MB)", "hwm_mb"), ("store on disk (MB)", "store_mb")):
        cells = []
        for s in systems:
            v = report["systems"][s].get(key)
            cells.append("–" if v is None else f"{v:,.1f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="hgm against SQLite, DuckDB and Kùzu (issue 15)")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--systems", default="", help="comma-separated (default: hgm and every installed peer)")
    parser.add_argument("--cold-repeat", type=int, default=3, help="fresh processes per (system, query)")
    parser.add_argument("--repeat", type=int, default=5, help="warm batches per measurement (median)")
    parser.add_argument("--min-batch", type=float, default=0.05)
    parser.add_argument("--hgm-tree", type=pathlib.Path, help="another source tree of hgm to run cold beside this one")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the stores even when present")
    parser.add_argument("--graph-dir", type=pathlib.Path, default=ROOT / "bench" / "results" / "tmp")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "results" / "peers.json")
    parser.add_argument("--markdown", type=pathlib.Path)
    args = parser.parse_args(argv)
    report = run(
        args.nodes, seed=args.seed, graph_dir=args.graph_dir, systems=[s for s in args.systems.split(",") if s] or None,
        cold_repeat=args.cold_repeat, repeat=args.repeat, min_batch=args.min_batch, hgm_tree=args.hgm_tree,
        rebuild=args.rebuild,
    )
    report["command"] = "python bench/peer_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    text = markdown(report)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
