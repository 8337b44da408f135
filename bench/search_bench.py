"""Search benchmark (issue 14): ``search(TEXT)`` at 100k nodes, with and without vectors, the
node index's upkeep in a commit, and what the index adds to reopening a memory.

On the generated graph (``generate.py``, seed 0; ``--nodes``, 100,000 by default):

1. **Lexical search** — ``Memory.from_document``, then ``--queries`` texts drawn (seeded) from
   the graph's own node texts: one to three words of a random node's text, so that most
   queries match many nodes (the generator's vocabulary is small: the worst case for posting
   lists). Timed: ``memory.search(text, limit=10)`` and the language's
   ``search($q).limit(10)`` (``memory.query``, compiled once and cached), each query once per
   round, ``--rounds`` rounds interleaved; p50, p95, max in ms. The first search (which builds
   the index of an in-process memory) is timed apart.
2. **With vectors** — the same memory with a local, deterministic embedder set
   (:class:`HashEmbedder`: 384 numbers per text, the sum of seeded random unit vectors of its
   words — MiniLM's size; the bundled MiniLM extra needs torch, not installable offline
   here): time to embed every node (``configure_search``), then the same queries. After the
   two searches of each query, in the same conditions, the bare step no exact search can do
   without (``bare_blas_top_k``: the query's vector times a random float32 matrix of the same
   size by one BLAS product, and the 50 best rows by ``argpartition``), and the searches'
   ratios to it (``ratio_to_bare``: wall clock, the process's CPU time, the calling thread's
   CPU time — BLAS's other threads left out of both sides). Then, over a random matrix of the
   same size, interleaved: one BLAS matrix-vector product (what the scan reads; its threads
   are numpy's OpenBLAS's, recorded in ``blas_threads``) and the row-by-row ``vecdot`` scan the
   search used before.
3. **Upkeep in a commit** — two SQLite memories loaded from the same graph, one keeping the
   node index (as every memory does) and one with its store hook removed
   (``memory.store_hooks = []``: nothing of the index written); ``--commits`` 10-op
   transactions of ``txn_bench.Workload`` on each, in interleaved blocks of ``--block``.
   Upkeep = median(with) / median(without) - 1. The same for an in-process memory, where a
   commit writes nothing and the next search folds the commit in: with = commit + the next
   search, without = commit + a search of an index already up to date.
4. **Reopen** — the SQLite memory of 3 closed, then opened in fresh subprocesses
   (``--reopen-runs``): ``Memory.open`` and the first search; the index's share is what the
   index reports it took to read (``search_status()["open_seconds"]``: the saved segment and
   changes, no text analysed) and the first search minus the second. For comparison, the same
   file with its saved index dropped (what every reopen would cost if it rebuilt).

    python bench/search_bench.py --nodes 100000 --out bench/results/search/search.json
    python bench/search_bench.py --nodes 100000 --parts vectors   # part 2 only (about a minute)

``--parts`` (comma-separated, of ``lexical``, ``vectors``, ``upkeep``, ``reopen``; all by
default) runs some of them; ``reopen`` reads the SQLite memory ``upkeep`` made, so it runs
that too.

Timing: ``time.perf_counter`` around each call, and the process's CPU time
(``time.process_time``: on a shared machine the wall clock also counts other processes'
turns), the garbage collector off within a round of queries (as query_bench.py) and on for
commits (as txn_bench.py).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import pathlib
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import hgm_engine  # noqa: E402

from bench import generate, query_bench, txn_bench  # noqa: E402
from hgm_engine.retrieval.vectors import similarities  # noqa: E402

TARGETS = {
    "lexical_p95_ms": 5.0,
    "vectors_p95_ms": 20.0,
    "upkeep_fraction": 0.20,
    "reopen_index_seconds": 0.2,
}
_WORD = re.compile(r"[A-Za-z0-9]+")


class HashEmbedder:
    """A local, deterministic dense embedder for timing: each word's vector is a unit vector
    drawn from a generator seeded by the word's hash; a text's vector is the sum of its words'.

    >>> e = HashEmbedder(dimensions=8)
    >>> a, b = e.embed_documents(["the hotel", "hotel"])
    >>> len(a), bool(np.allclose(e.embed_query("hotel"), b))
    (8, True)
    """

    sparse = False

    def __init__(self, dimensions: int = 384):
        self.dimensions = dimensions
        self.name = f"hash-embedder/{dimensions}"
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        vector = self._words.get(word)
        if vector is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vector = np.random.default_rng(seed).standard_normal(self.dimensions).astype(np.float32)
            vector /= np.linalg.norm(vector)
            self._words[word] = vector
        return vector

    def _vectors(self, texts: list[str]) -> np.ndarray:
        out = np.full((len(texts), self.dimensions), 1e-3, dtype=np.float32)
        rows, vectors = [], []
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                rows.append(row)
                vectors.append(self._word(word))
        if rows:
            np.add.at(out, np.asarray(rows), np.stack(vectors))
        return out

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._vectors(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._vectors([text])[0]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _ms(values: list[float], cpu: list[float] | None = None) -> dict[str, Any]:
    """Wall-clock figures in ms (and the CPU time's, when given: on a shared machine the wall
    clock also counts the time other processes had the core)."""
    ms = [v * 1e3 for v in values]
    out = {"n": len(ms), "p50_ms": round(statistics.median(ms), 4), "p95_ms": round(_percentile(ms, 0.95), 4),
           "max_ms": round(max(ms), 4), "mean_ms": round(statistics.fmean(ms), 4)}
    if cpu is not None:
        cpu_ms = [v * 1e3 for v in cpu]
        out.update({"cpu_p50_ms": round(statistics.median(cpu_ms), 4), "cpu_p95_ms": round(_percentile(cpu_ms, 0.95), 4),
                    "cpu_mean_ms": round(statistics.fmean(cpu_ms), 4)})
    return out


def queries_of(doc: dict[str, Any], count: int, seed: int = 0) -> list[str]:
    """``count`` query texts: one to three consecutive words of random nodes' texts.

    >>> queries_of({"nodes": [{"id": "a", "type": "fact", "content": "Book the museum"}]}, 2)
    ['Book the', 'Book the museum']
    """
    rng = random.Random(seed)
    texts = [n.get("content") or n.get("name") for n in doc["nodes"]]
    texts = [t for t in texts if isinstance(t, str) and _WORD.search(t)]
    out: list[str] = []
    while len(out) < count:
        words = _WORD.findall(rng.choice(texts))
        size = rng.randint(1, min(3, len(words)))
        start = rng.randint(0, len(words) - size)
        text = " ".join(words[start:start + size])
        try:
            hgm_engine.Memory().search(text)  # a text of stop words only is refused: draw again
        except hgm_engine.SearchError:
            continue
        out.append(text)
    return out


def time_queries(memory, queries: list[str], rounds: int, bare=None) -> dict[str, Any]:
    """p50/p95 of ``memory.search`` and of the language's ``search($q).limit(10)`` (through
    ``memory.query``: its compiled query cached after the first). With ``bare`` (a function of
    the query text that returns what to time: see :func:`bare_scan`), that step is timed
    right after the two searches of each query, in the same conditions, and the ratios of the
    searches to it are reported (wall clock, the process's CPU time and the calling thread's:
    ``time.thread_time`` leaves out BLAS's other threads, in the bare step as in the search)."""
    clocks = {"wall": time.perf_counter, "cpu": time.process_time, "thread": time.thread_time}
    samples: dict[str, dict[str, list[float]]] = {name: {c: [] for c in clocks} for name in ("api", "language", "bare")}
    sizes = []

    def timed(name, call):
        starts = {c: clock() for c, clock in clocks.items()}
        result = call()
        for c, clock in clocks.items():
            samples[name][c].append(clock() - starts[c])
        return result

    for _ in range(rounds):
        gc.disable()
        try:
            for text in queries:
                hits = timed("api", lambda: memory.search(text, limit=10))
                sizes.append(len(hits))
                timed("language", lambda: memory.query("search($q).limit(10)", params={"q": text}))
                if bare is not None:
                    step = bare(text)  # made outside the clock: the query's vector
                    timed("bare", step)
        finally:
            gc.enable()
    out = {"memory_search": _ms(samples["api"]["wall"], samples["api"]["cpu"]),
           "language": _ms(samples["language"]["wall"], samples["language"]["cpu"]),
           "mean_hits": round(statistics.fmean(sizes), 2)}
    for name in ("api", "language"):
        key = "memory_search" if name == "api" else "language"
        out[key]["thread_p50_ms"] = round(statistics.median(samples[name]["thread"]) * 1e3, 4)
        out[key]["thread_p95_ms"] = round(_percentile(samples[name]["thread"], 0.95) * 1e3, 4)
    if bare is not None:
        out["bare_blas_top_k"] = _ms(samples["bare"]["wall"], samples["bare"]["cpu"])
        out["bare_blas_top_k"]["thread_p50_ms"] = round(statistics.median(samples["bare"]["thread"]) * 1e3, 4)
        out["bare_blas_top_k"]["thread_p95_ms"] = round(_percentile(samples["bare"]["thread"], 0.95) * 1e3, 4)
        ratios = {}
        for name in ("api", "language"):
            key = "memory_search" if name == "api" else "language"
            for c in clocks:
                for q, label in ((0.5, "p50"), (0.95, "p95")):
                    ratios[f"{key}_{c}_{label}"] = round(
                        _percentile(samples[name][c], q) / _percentile(samples["bare"][c], q), 3)
        out["ratio_to_bare"] = ratios
    return out


def bare_scan(embedder: "HashEmbedder", rows: int, k: int = 50):
    """The bare step a search with vectors cannot do without, for :func:`time_queries`: one
    BLAS matrix-vector product of the query's unit vector (from ``embedder``, as the memory
    makes it) with a float32 matrix of ``rows`` × the embedder's size (random: what matters
    is how many numbers are read), and the ``k`` best rows by ``argpartition`` — no fusion,
    no exact second pass, no ids, no lexical side.

    >>> step = bare_scan(HashEmbedder(8), 100, k=5)("the hotel")
    >>> len(step())
    5
    """
    matrix = np.random.default_rng(1).standard_normal((rows, embedder.dimensions)).astype(np.float32)

    def for_text(text: str):
        query = embedder.embed_query(text).astype(np.float32)
        query /= np.linalg.norm(query)

        def step():
            approx = matrix @ query
            return np.argpartition(approx, len(approx) - k)[len(approx) - k:]

        return step

    return for_text


def run_search(doc: dict[str, Any], queries: list[str], rounds: int, dimensions: int,
               parts: tuple[str, ...] = ("lexical", "vectors")) -> dict[str, Any]:
    memory = hgm_engine.Memory.from_document(doc)
    started = time.perf_counter()
    memory.search(queries[0], limit=10)
    first = time.perf_counter() - started
    out: dict[str, Any] = {"nodes": len(memory), "first_search_builds_index_seconds": round(first, 4)}
    if "lexical" in parts:
        out["lexical"] = time_queries(memory, queries, rounds)
    if "vectors" not in parts:
        return out
    embedder = HashEmbedder(dimensions)
    started = time.perf_counter()
    status = memory.configure_search(embedder=embedder, min_similarity=0.35)
    out["vectors"] = {"embedder": embedder.name, "dimensions": dimensions, "vectors": status["embedder"]["vectors"],
                      "embed_every_node_seconds": round(time.perf_counter() - started, 3)}
    out["vectors"].update(time_queries(memory, queries, rounds, bare=bare_scan(HashEmbedder(dimensions), len(memory))))
    # The floor under any exact search: one float32 matrix-vector product over every vector
    # (BLAS, what the scan does); and the row-by-row scan the search used before (numpy's
    # vecdot), interleaved with it over the same matrix.
    matrix = np.random.default_rng(0).standard_normal((len(memory), dimensions)).astype(np.float32)
    query = matrix[0].copy()
    timings: dict[str, tuple[list[float], list[float]]] = {"numpy_matvec_floor": ([], []), "row_by_row_vecdot": ([], [])}
    for _ in range(50):
        for name, scan in (("numpy_matvec_floor", lambda: matrix @ query), ("row_by_row_vecdot", lambda: similarities(matrix, query))):
            cpu, started = time.process_time(), time.perf_counter()
            scan()
            timings[name][0].append(time.perf_counter() - started)
            timings[name][1].append(time.process_time() - cpu)
    for name, (wall, cpu_times) in timings.items():
        out["vectors"][name] = _ms(wall, cpu_times)
    out["vectors"]["blas_threads"] = {name: os.environ.get(name) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    return out


def _commits(memories: dict[str, Any], commits: int, block: int, after=None) -> dict[str, list[float]]:
    workloads = {name: txn_bench.Workload(m.graph, seed=0) for name, m in memories.items()}
    samples: dict[str, list[float]] = {key: [] for name in memories for key in (name, name + ":cpu")}
    for _ in range(3):  # warm-up
        for name, memory in memories.items():
            memory.apply(workloads[name].next())
            if after is not None:
                after(name, memory)
    done = 0
    while done < commits:
        for name, memory in memories.items():
            for _ in range(block):
                tx = workloads[name].next()
                cpu, started = time.process_time(), time.perf_counter()
                report = memory.apply(tx)
                if after is not None:
                    after(name, memory)
                samples[name].append(time.perf_counter() - started)
                samples[name + ":cpu"].append(time.process_time() - cpu)
                assert report.committed
        done += block
    return samples


def run_upkeep(doc: dict[str, Any], directory: pathlib.Path, commits: int, block: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    memories = {}
    for name in ("with_index", "without_index"):
        path = directory / f"{name}.db"
        memory = hgm_engine.Memory.open(path)
        if name == "without_index":
            memory.store_hooks = []
        started = time.perf_counter()
        memory.load(doc)
        out[f"load_{name}_seconds"] = round(time.perf_counter() - started, 3)
        memories[name] = memory
    samples = _commits(memories, commits, block)
    with_ms, without_ms = statistics.median(samples["with_index"]), statistics.median(samples["without_index"])
    with_cpu, without_cpu = statistics.median(samples["with_index:cpu"]), statistics.median(samples["without_index:cpu"])
    out["sqlite"] = {"with_index": _ms(samples["with_index"], samples["with_index:cpu"]),
                     "without_index": _ms(samples["without_index"], samples["without_index:cpu"]),
                     "upkeep_fraction": round(with_ms / without_ms - 1, 4),
                     "upkeep_fraction_cpu": round(with_cpu / without_cpu - 1, 4)}
    status = memories["with_index"].search_status()
    assert status["t"] == memories["with_index"].t and status["kept_in_store"], status
    for memory in memories.values():
        memory.close()
    # In process: a commit writes nothing; the next search folds it into the index. Per
    # commit (paired): with = the commit and the search after it; without = the commit and a
    # second search, of an index already up to date.
    memory = hgm_engine.Memory.from_document(doc)
    memory.search("bench")
    workload = txn_bench.Workload(memory.graph, seed=0)
    samples, baseline, samples_cpu, baseline_cpu = [], [], [], []
    clock = time.process_time
    for _ in range(commits + 3):
        tx = workload.next()
        t0, c0 = time.perf_counter(), clock()
        assert memory.apply(tx).committed
        t1, c1 = time.perf_counter(), clock()
        memory.search("onboarding report", limit=10)
        t2, c2 = time.perf_counter(), clock()
        memory.search("onboarding report", limit=10)
        t3, c3 = time.perf_counter(), clock()
        samples.append(t2 - t0)
        baseline.append((t1 - t0) + (t3 - t2))
        samples_cpu.append(c2 - c0)
        baseline_cpu.append((c1 - c0) + (c3 - c2))
    samples, baseline, samples_cpu, baseline_cpu = samples[3:], baseline[3:], samples_cpu[3:], baseline_cpu[3:]
    out["in_process"] = {"commit_and_next_search": _ms(samples, samples_cpu),
                         "commit_and_search_of_an_up_to_date_index": _ms(baseline, baseline_cpu),
                         "upkeep_fraction": round(statistics.median(samples) / statistics.median(baseline) - 1, 4),
                         "upkeep_fraction_cpu": round(statistics.median(samples_cpu) / statistics.median(baseline_cpu) - 1, 4)}
    return out


_REOPEN = r"""
import json, sys, time
import hgm_engine
hgm_engine.Memory().search("warm the text analysis")  # code paths loaded: what follows is the index
wall = time.perf_counter()
memory = hgm_engine.Memory.open(sys.argv[1])
opened = time.perf_counter() - wall
started, cpu = time.perf_counter(), time.process_time()
hits = memory.search(sys.argv[2], limit=10)
first, first_cpu = time.perf_counter() - started, time.process_time() - cpu
started, cpu = time.perf_counter(), time.process_time()
memory.search(sys.argv[2], limit=10)
second, second_cpu = time.perf_counter() - started, time.process_time() - cpu
status = memory.search_status()
print(json.dumps({"open_seconds": opened, "first_search_seconds": first, "second_search_seconds": second,
                  "first_search_cpu_seconds": first_cpu, "second_search_cpu_seconds": second_cpu,
                  "index_read_seconds": status["open_seconds"], "source": status["source"], "nodes": len(memory),
                  "hits": len(hits)}))
"""


def run_reopen(path: pathlib.Path, runs: int, text: str) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    results = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", _REOPEN, str(path), text], capture_output=True, text=True, env=env, check=True)
        results.append(json.loads(proc.stdout))
    out = {k: round(statistics.median(r[k] for r in results), 4)
           for k in ("open_seconds", "first_search_seconds", "second_search_seconds", "index_read_seconds",
                     "first_search_cpu_seconds", "second_search_cpu_seconds")}
    out["index_added_seconds"] = round(out["first_search_seconds"] - out["second_search_seconds"], 4)
    out["index_added_cpu_seconds"] = round(out["first_search_cpu_seconds"] - out["second_search_cpu_seconds"], 4)
    out.update({k: results[0][k] for k in ("source", "nodes", "hits")})
    out["runs"] = runs
    return out


PARTS = ("lexical", "vectors", "upkeep", "reopen")


def run(nodes: int, *, queries: int, rounds: int, commits: int, block: int, reopen_runs: int, dimensions: int,
        graph_dir: pathlib.Path | None, work_dir: pathlib.Path | None, parts: tuple[str, ...] = PARTS,
        doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """The benchmark's report: ``parts`` of :data:`PARTS` on the generated graph of ``nodes``
    (from ``graph_dir``, made there once), or on ``doc`` when given."""
    if doc is None:
        graph_path, meta, _ = generate.ensure_graph(graph_dir, nodes, 0)
        doc = json.loads(graph_path.read_text(encoding="utf-8"))
    texts = queries_of(doc, queries)
    report: dict[str, Any] = {"benchmark": "search", "environment": query_bench.environment(),
                              "config": {"nodes": nodes, "seed": 0, "queries": queries, "rounds": rounds, "commits": commits,
                                         "block": block, "reopen_runs": reopen_runs, "dimensions": dimensions,
                                         "query_examples": texts[:8], "parts": list(parts)},
                              "targets": TARGETS}
    started = time.time()
    report["search"] = run_search(doc, texts, rounds, dimensions, parts) if {"lexical", "vectors"} & set(parts) else {}
    if "upkeep" in parts or "reopen" in parts:
        directory = pathlib.Path(tempfile.mkdtemp(prefix="search-bench-", dir=work_dir))
        try:
            report["upkeep"] = run_upkeep(doc, directory, commits, block)  # reopen reads its SQLite memory
            if "reopen" in parts:
                kept = directory / "with_index.db"
                report["reopen"] = {"kept_index": run_reopen(kept, reopen_runs, texts[0])}
                dropped = directory / "dropped.db"
                shutil.copy(kept, dropped)
                db = sqlite3.connect(dropped)
                db.execute("DELETE FROM node_index")
                db.execute("DELETE FROM node_index_changes")
                db.commit()
                db.close()
                report["reopen"]["index_dropped_rebuilt"] = run_reopen(dropped, reopen_runs, texts[0])
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    report["seconds"] = round(time.time() - started, 1)
    report["load_average_at_end"] = list(os.getloadavg())
    search, upkeep, reopen = report["search"], report.get("upkeep"), report.get("reopen", {}).get("kept_index")
    cpu_checks: dict[str, Any] = {}
    checks: dict[str, Any] = {}
    for part, target in (("lexical", "lexical_p95_ms"), ("vectors", "vectors_p95_ms")):
        if part in search:
            figures = search[part]["memory_search"]
            cpu_checks[target] = figures["cpu_p95_ms"]
            checks[target] = [figures["p95_ms"], figures["p95_ms"] <= TARGETS[target]]
    if "vectors" in search:
        ratios = search["vectors"]["ratio_to_bare"]
        cpu_checks["vectors_p95_ratio_to_bare_blas_top_k"] = ratios["memory_search_cpu_p95"]
        checks["vectors_p95_ratio_to_bare_blas_top_k"] = ratios["memory_search_wall_p95"]
    if upkeep is not None:
        for where in ("sqlite", "in_process"):
            cpu_checks[f"upkeep_fraction_{where}"] = upkeep[where]["upkeep_fraction_cpu"]
            checks[f"upkeep_fraction_{where}"] = [upkeep[where]["upkeep_fraction"],
                                                  upkeep[where]["upkeep_fraction"] <= TARGETS["upkeep_fraction"]]
    if reopen is not None:
        cpu_checks["reopen_index_seconds"] = reopen["index_added_cpu_seconds"]
        checks["reopen_index_seconds"] = [reopen["index_read_seconds"], reopen["index_read_seconds"] <= TARGETS["reopen_index_seconds"]]
    report["target_checks_cpu"] = cpu_checks
    report["target_checks"] = checks
    report["command"] = "python bench/search_bench.py " + " ".join(sys.argv[1:])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--block", type=int, default=10)
    parser.add_argument("--reopen-runs", type=int, default=3)
    parser.add_argument("--dimensions", type=int, default=384)
    parser.add_argument("--graph-dir", type=pathlib.Path, default=ROOT / "bench" / "results" / "tmp")
    parser.add_argument("--work-dir", type=pathlib.Path, default=None, help="where the SQLite files go (a temporary directory in it)")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"which parts to run, comma-separated, of {','.join(PARTS)} (default: all); "
                             "'vectors' alone times the search with vectors and the bare BLAS step beside it")
    args = parser.parse_args(argv)
    parts = tuple(part.strip() for part in args.parts.split(",") if part.strip())
    unknown = [part for part in parts if part not in PARTS]
    if unknown or not parts:
        parser.error(f"--parts: unknown {', '.join(unknown) or '(none given)'}; choose among {', '.join(PARTS)}")
    report = run(args.nodes, queries=args.queries, rounds=args.rounds, commits=args.commits, block=args.block,
                 reopen_runs=args.reopen_runs, dimensions=args.dimensions, graph_dir=args.graph_dir, work_dir=args.work_dir,
                 parts=parts)
    text = json.dumps(report, indent=2)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps({"wall": report["target_checks"], "cpu": report["target_checks_cpu"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
