"""Is the resident set of a server over many memories bounded? (issue 13)

``bench/memories_bench.py`` saw a server's RSS rise across its phases (``--max-open 30`` over
300 memories of 1,000 nodes: 132 -> 140 -> 175 -> 191 MiB). This script tells a leak (something
kept per memory ever opened) from the C allocator's fragmentation: it serves a store with
``hgm serve --max-open N`` in a child process that, on ``SIGUSR1``, writes what it holds —

- ``VmRSS`` (``/proc/self/status``);
- Python's side: the objects the cyclic collector tracks (``gc.get_objects``, after a full
  collection), the live ``Memory`` objects among them, and ``sys.getallocatedblocks()``
  (every block of Python's small-object allocator, strings and numbers included);
- glibc's side (``mallinfo2``): bytes in use (``used``) and bytes free but kept inside its
  arenas (``free``), the arenas' total (``arena``);

— and drives it with ``--clients`` threads taking the memories in turn, so that every request
opens a memory and evicts another (``--opens`` of them, a sample every ``--every``), then
asks for one last sample after calling ``malloc_trim(0)`` in the server. A leak shows as
Python's objects or glibc's ``used`` growing with the opens; fragmentation as ``free`` and
RSS growing while both stay flat.

Each configuration (``--configs``) is a fresh server over the same store: ``trim`` (the
default: the registry calls ``malloc_trim`` after each of its collections), ``notrim``
(``HGM_MALLOC_TRIM=0``), ``arena2`` (``HGM_MALLOC_TRIM=0 MALLOC_ARENA_MAX=2``: glibc keeps at
most two arenas instead of one per thread, up to 8 per core).

    python bench/memories_rss.py --memories 300 --nodes 1000 --max-open 30 --opens 3000 \\
        --out bench/results/memories/rss-300.json
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["allocator", "sample", "main"]

CONFIGS = {
    "trim": {},
    "notrim": {"HGM_MALLOC_TRIM": "0"},
    "arena2": {"HGM_MALLOC_TRIM": "0", "MALLOC_ARENA_MAX": "2"},
}


def allocator() -> dict[str, float] | None:
    """glibc's ``mallinfo2`` in MiB (``arena``, ``used``, ``free``, ``mmap``); None elsewhere.

    >>> found = allocator()
    >>> found is None or found["used"] > 0
    True
    """
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    try:
        function = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    function.restype = MallInfo2
    info = function()
    mib = 2**20
    return {"arena": round(info.arena / mib, 1), "used": round(info.uordblks / mib, 1), "free": round(info.fordblks / mib, 1),
            "mmap": round(info.hblkhd / mib, 1)}


def _rss() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def sample(trim: bool = False) -> dict[str, Any]:
    """What this process holds now (see the module); with ``trim``, after ``malloc_trim(0)``.

    >>> sorted(sample())
    ['blocks', 'frozen', 'malloc', 'memories', 'objects', 'rss_mib']
    """
    from hgm_engine.memory import Memory
    from hgm_engine.model.graph import kept_memories
    from hgm_engine.server.registry import malloc_trim

    # Open memories keep what their load made in the collector's permanent generation
    # (gc.freeze, bulk_allocation.keep), which gc.get_objects does not list: give it back for
    # the count (and the collection, as collect_kept does), then freeze again what is alive
    # while any memory holds frozen objects, as the engine would have it.
    frozen = gc.get_freeze_count()
    gc.unfreeze()
    try:
        gc.collect()
        objects = gc.get_objects()
        found = {"objects": len(objects), "memories": sum(1 for obj in objects if type(obj) is Memory), "frozen": frozen}
        del objects
    finally:
        if kept_memories():
            gc.freeze()
    if trim:
        malloc_trim()
    return {"rss_mib": _rss(), **found, "blocks": sys.getallocatedblocks(), "malloc": allocator()}


def _serve(argv: list[str]) -> int:
    """The server child: ``hgm serve`` with a sample written to ``$HGM_RSS_OUT.N`` on SIGUSR1
    (``$HGM_RSS_OUT.trim`` present: after ``malloc_trim``)."""
    from hgm_engine.server.rest.command import main as serve

    out = os.environ["HGM_RSS_OUT"]
    wake, count = threading.Event(), itertools.count(1)

    def dumper() -> None:
        while True:
            wake.wait()
            wake.clear()
            found = sample(trim=os.path.exists(out + ".trim"))
            path = f"{out}.{next(count)}"
            pathlib.Path(path + ".tmp").write_text(json.dumps(found))
            os.replace(path + ".tmp", path)

    threading.Thread(target=dumper, daemon=True, name="rss-sampler").start()
    signal.signal(signal.SIGUSR1, lambda *_: wake.set())
    return serve(argv)


def _run(config: str, location: str, args: argparse.Namespace, log) -> dict[str, Any]:
    from bench.memories_bench import queries_from_clients, queries_one_at_a_time
    from bench.serve.load_test import Client  # noqa: F401 - the clients' module, loaded before timing

    work = pathlib.Path(tempfile.mkdtemp(prefix="hgm-rss-"))
    out = str(work / "sample")
    env = dict(os.environ, **CONFIGS[config], HGM_RSS_OUT=out,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("HGM_TOKEN", None)
    log_path = work / "server.log"
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--serve", "--db", location, "--host", "127.0.0.1",
               "--port", "0", "--no-access-log", "--max-open", str(args.max_open), "--max-concurrency", "0", "--log-level", "warning"]
    with open(log_path, "wb") as server_log:
        process = subprocess.Popen(command, stdout=server_log, stderr=subprocess.STDOUT, env=env, cwd=str(ROOT))
    taken = itertools.count(1)

    def take(label: str, opens: int) -> dict[str, Any]:
        path = f"{out}.{next(taken)}"
        process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 300
        while not os.path.exists(path):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server gave no sample:\n{log_path.read_text()}")
            time.sleep(0.1)
        found = {"after": label, "opens": opens, "cpu_s": _cpu(process.pid), **json.loads(pathlib.Path(path).read_text())}
        log(f"{config}: {label}: {json.dumps(found)}")
        return found

    try:
        port = None
        deadline = time.monotonic() + 60
        while port is None:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start:\n{log_path.read_text()}")
            for line in log_path.read_text(errors="replace").splitlines():
                if "listening on http://" in line:
                    port = int(line.rsplit(":", 1)[1].strip("/ "))
            time.sleep(0.1)
        samples = []
        queries_one_at_a_time(port, list(range(args.max_open)))
        samples.append(take(f"the first {args.max_open} opens", 0))
        turn = itertools.count(args.max_open)  # shared by the clients: each takes the next memory
        done = 0
        while done < args.opens:
            step = min(args.every, args.opens - done)
            queries_from_clients(port, args.clients, lambda rng: next(turn) % args.memories, step, seed=done)
            done += step
            samples.append(take(f"{done} more opens", done))
        pathlib.Path(out + ".trim").touch()
        samples.append(take("malloc_trim(0)", done))
        return {"config": config, "environment": CONFIGS[config], "samples": samples, "summary": _summary(samples, args.every)}
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(work, ignore_errors=True)


def _cpu(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)


def _summary(samples: list[dict[str, Any]], every: int) -> dict[str, Any]:
    """RSS and what Python and glibc hold, from the first sample after ``every`` opens (the
    threads all started) to the last before the trim.

    >>> at = lambda opens, rss, blocks: {"after": "x", "opens": opens, "rss_mib": rss, "cpu_s": opens / 100, "blocks": blocks,
    ...                                  "objects": 9, "memories": 2, "frozen": 0, "malloc": None}
    >>> summary = _summary([at(0, 100.0, 5), at(10, 120.0, 7), at(20, 121.0, 7)], every=10)
    >>> summary["rss_spread_mib"], summary["blocks_change"], summary["server_cpu_ms_per_open"]
    (1.0, 0, 10.0)
    """
    steady = [s for s in samples if s["opens"] >= every and s["after"] != "malloc_trim(0)"]
    first, last, trimmed = steady[0], steady[-1], samples[-1]

    def spread(key: Any) -> float:
        values = [key(s) for s in steady]
        return round(max(values) - min(values), 1)

    malloc = first["malloc"] is not None
    seen = steady  # (each sample counts the frozen objects too: see sample)
    return {
        "rss_first_mib": samples[0]["rss_mib"],
        "rss_steady_mib": [s["rss_mib"] for s in steady],
        "rss_spread_mib": spread(lambda s: s["rss_mib"]),
        "rss_after_trim_mib": trimmed["rss_mib"],
        "blocks_change": seen[-1]["blocks"] - seen[0]["blocks"],
        "objects_change": seen[-1]["objects"] - seen[0]["objects"],
        "memories_alive": sorted({s["memories"] for s in seen}),
        "malloc_used_spread_mib": spread(lambda s: s["malloc"]["used"]) if malloc else None,
        "malloc_free_mib": [s["malloc"]["free"] for s in steady] if malloc else None,
        "server_cpu_ms_per_open": round((last["cpu_s"] - samples[0]["cpu_s"]) * 1000 / max(1, last["opens"]), 2),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        return _serve(argv[1:])
    from bench.memories_bench import build, write_report
    from bench.serve.load_test import environment

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--max-open", type=int, default=30)
    parser.add_argument("--opens", type=int, default=3000, help="requests taking the memories in turn (each opens one)")
    parser.add_argument("--every", type=int, default=500, help="opens between samples")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--builders", type=int, default=2)
    parser.add_argument("--configs", default="trim,notrim,arena2")
    parser.add_argument("--store", default=None, help="a folder holding memories.db from an earlier run (built there when missing)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.max_open >= args.memories:
        parser.error("--max-open must be below --memories, or nothing is evicted")
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    folder = pathlib.Path(args.store) if args.store else pathlib.Path(tempfile.mkdtemp(prefix="hgm-rss-store-"))
    location = str(folder / "memories.db")
    try:
        if not (folder / "memories.db.memories").exists():
            folder.mkdir(parents=True, exist_ok=True)
            build(location, args.memories, args.nodes, args.builders, log)
        report: dict[str, Any] = {"environment": environment(), "settings": {k: v for k, v in vars(args).items() if k != "out"},
                                  "results": [_run(config.strip(), location, args, log) for config in args.configs.split(",")]}
    finally:
        if not args.store:
            shutil.rmtree(folder, ignore_errors=True)
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
