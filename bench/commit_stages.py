"""Where a durable 10-op commit's time goes (issue 15): each stage of the commit pipeline timed.

A generated memory is loaded into a SQLite file once (kept in ``--graph-dir``); each run opens a
copy (from its stored image, as a user's process would), makes 20 warm-up commits of
``txn_bench.Workload`` and then ``--commits`` more, with every stage wrapped by a timer (CPU
and wall per commit): parsing, building the overlay, the rule hook, the net changes, the
constraints, the journal record, the state rows, the node index hook, ``BEGIN`` and
``COMMIT``, applying the commit to the graph. ``--no-gc`` keeps the collector off (a full
collection over a 100k-node heap lands in whatever stage allocates at that moment).

    python bench/commit_stages.py --nodes 100000 --commits 300 --graph-dir /tmp/g --no-gc

``--reduce`` runs the measured commits inside ``functools.reduce`` and times nothing, so that
a deterministic instruction count of the commits alone can be taken, whatever the machine's load:

    valgrind --tool=callgrind --toggle-collect=functools_reduce python bench/commit_stages.py --nodes 10000 --commits 50 --reduce
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import gc
import json
import pathlib
import shutil
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import hgm_engine  # noqa: E402

from bench import generate, txn_bench  # noqa: E402

__all__ = ["open_copy", "stages", "main"]


def open_copy(nodes: int, graph_dir: pathlib.Path, seed: int = 0) -> hgm_engine.Memory:
    """A memory on a fresh copy of the loaded ``nodes``-node SQLite file (loaded once)."""
    path, _, _ = generate.ensure_graph(graph_dir, nodes, seed)
    base = graph_dir / f"stages-base-n{nodes}.db"
    if not base.exists():
        with hgm_engine.Memory.open(base) as memory:
            memory.load(json.loads(path.read_text(encoding="utf-8")))
            memory.store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # noqa: SLF001 (one file to copy)
    work = graph_dir / f"stages-work-n{nodes}.db"
    for suffix in ("", "-wal", "-shm"):
        pathlib.Path(str(work) + suffix).unlink(missing_ok=True)
    shutil.copyfile(base, work)
    return hgm_engine.Memory.open(work)


def stages(memory: hgm_engine.Memory, docs: list) -> dict[str, tuple[float, float, float]]:
    """CPU and wall microseconds per commit of each stage, and calls per commit."""
    import hgm_engine.memory as memory_module
    import hgm_engine.model.overlay as overlay_module
    import hgm_engine.store.sqlite as sqlite_module
    import hgm_engine.txn.commit as commit_module

    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])

    def timed(name, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                entry = totals[name]
                entry[0] += time.process_time() - cpu
                entry[1] += time.perf_counter() - wall
                entry[2] += 1

        return wrapper

    store_class = sqlite_module.SQLiteStore
    patches = [
        (memory_module, "parse_transaction", "parse"),
        (commit_module.CommitPipeline, "_build", "build (ops -> overlay)"),
        (overlay_module.GraphOverlay, "changes", "net changes"),
        (store_class, "_journal_row", "journal record"),
        (store_class, "_apply_state", "state rows"),
        (store_class, "append", "append (record + rows)"),
        (memory.state, "_apply_commits", "apply to graph"),
        (memory._pipeline.checker, "check", "constraints"),  # noqa: SLF001
    ]
    saved = [(owner, name, owner.__dict__.get(name, getattr(owner, name))) for owner, name, _ in patches]
    hooks = (list(memory.commit_hooks), list(memory.store_hooks))
    original_write = store_class.write

    @contextlib.contextmanager
    def write(self):
        cpu, wall = time.process_time(), time.perf_counter()
        with original_write(self) as inside:
            entry = totals["BEGIN + catch-up"]
            entry[0] += time.process_time() - cpu
            entry[1] += time.perf_counter() - wall
            entry[2] += 1
            yield inside
            cpu, wall = time.process_time(), time.perf_counter()
        entry = totals["COMMIT"]
        entry[0] += time.process_time() - cpu
        entry[1] += time.perf_counter() - wall
        entry[2] += 1

    try:
        for owner, name, label in patches:
            setattr(owner, name, timed(label, getattr(owner, name)))
        memory.commit_hooks[:] = [timed("rules hook", hook) for hook in memory.commit_hooks]
        memory.store_hooks[:] = [timed("node index hook", hook) for hook in memory.store_hooks]
        store_class.write = write
        cpu, wall = time.process_time(), time.perf_counter()
        for doc in docs:
            memory.apply(doc)
        total = (time.process_time() - cpu, time.perf_counter() - wall)
    finally:
        for owner, name, value in saved:
            if isinstance(owner, type) or owner.__dict__.get(name) is not None:
                setattr(owner, name, value)
        memory.commit_hooks[:], memory.store_hooks[:] = hooks
        store_class.write = original_write
    n = len(docs)
    out = {name: (c / n * 1e6, w / n * 1e6, k / n) for name, (c, w, k) in totals.items()}
    out["TOTAL"] = (total[0] / n * 1e6, total[1] / n * 1e6, 1.0)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a durable commit's stages (issue 15)")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--graph-dir", type=pathlib.Path, default=ROOT / "bench" / "results" / "tmp")
    parser.add_argument("--no-gc", action="store_true")
    parser.add_argument("--reduce", action="store_true", help="run the commits in functools.reduce, untimed (for callgrind)")
    args = parser.parse_args(argv)
    args.graph_dir.mkdir(parents=True, exist_ok=True)
    memory = open_copy(args.nodes, args.graph_dir)
    workload = txn_bench.Workload(memory.graph, seed=0)
    docs = [workload.next() for _ in range(args.commits + 20)]
    for doc in docs[:20]:
        if not memory.apply(doc).committed:
            raise AssertionError("a warm-up commit was refused")
    gc.collect()
    if args.no_gc:
        gc.disable()
    if args.reduce:
        functools.reduce(lambda _, doc: memory.apply(doc), docs[20:], None)
        print(f"{args.commits} commits, t={memory.t}")
    else:
        print(f"{'stage':26s} {'CPU µs':>8s} {'wall µs':>8s} calls/commit")
        for name, (cpu, wall, calls) in stages(memory, docs[20:]).items():
            print(f"{name:26s} {cpu:8.1f} {wall:8.1f} {calls:.1f}")
    memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
