"""Old against new search with vectors, in one process, query by query (issue 14, i14-vec).

The search path of an older commit (``--old``: its ``IndexView.hits`` and ``ranks_of``,
``NodeSearch.hits``, ``VectorIndex.nearest`` and ``_best_rows``, ``SearchVerbs.search``,
read with ``git show``) is swapped in and out of the worktree's, and beside each query the
bare step (the memory's own 100k × 384 matrix times the query's vector by one BLAS product,
and the 50 best rows by ``argpartition``). The order of the three alternates by round; every
search embeds its text (the query cache emptied first, as in the benchmark, whose 200 texts
overflow the 64 it keeps). Each answer of the old path is compared with the new one's.
Clocks: wall, the process's CPU time (BLAS's worker threads included: OpenBLAS's workers
spin a while after each product, and that counts), the calling thread's CPU time.

    python bench/results/search/vectors_ab.py --old 312e9eb --nodes 100000 --rounds 2 \\
        --graph-dir /tmp/hgm-vec-graphs-i14 --out bench/results/search/vectors-ab.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
import types

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import hgm_engine  # noqa: E402
from bench import generate  # noqa: E402
from bench.search_bench import HashEmbedder, _percentile, queries_of  # noqa: E402
from hgm_engine.model import nodeindex  # noqa: E402
from hgm_engine.retrieval import keeper, vectors, verbs  # noqa: E402

SWAPPED = {  # class -> (its file then, the methods swapped)
    nodeindex.IndexView: ("hgm_engine/model/nodeindex.py", ("hits", "ranks_of")),
    keeper.NodeSearch: ("hgm_engine/retrieval/keeper.py", ("hits",)),
    vectors.VectorIndex: ("hgm_engine/retrieval/vectors.py", ("nearest", "_best_rows")),
    verbs.SearchVerbs: ("hgm_engine/retrieval/verbs.py", ("search",)),
}


def old_methods(commit: str) -> dict:
    out = {}
    for cls, (path, names) in SWAPPED.items():
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True,
                              check=True).stdout
        package = ".".join(path[:-3].split("/")[:-1])
        module = types.ModuleType(f"{package}._old_{cls.__name__}")
        module.__package__ = package
        sys.modules[module.__name__] = module
        exec(compile(text, f"{commit}:{path}", "exec"), module.__dict__)
        for name in names:
            out[(cls, name)] = getattr(getattr(module, cls.__name__), name)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="312e9eb")
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--graph-dir", type=pathlib.Path, default=ROOT / "bench" / "results" / "tmp")
    parser.add_argument("--out", type=pathlib.Path, default=None)
    args = parser.parse_args()
    old = old_methods(args.old)
    new = {(cls, name): cls.__dict__[name] for cls, name in old}

    def use(methods):
        for (cls, name), method in methods.items():
            setattr(cls, name, method)

    graph_path, _, _ = generate.ensure_graph(args.graph_dir, args.nodes, 0)
    doc = json.loads(graph_path.read_text(encoding="utf-8"))
    texts = queries_of(doc, 200)
    memory = hgm_engine.Memory.from_document(doc)
    memory.search(texts[0])
    memory.configure_search(embedder=HashEmbedder(384), min_similarity=0.35)
    index = memory._search.index
    kept = index.vectors()
    matrix = kept.matrix[: kept._next]

    def bare(query):
        approx = matrix @ query
        return np.argpartition(approx, len(approx) - 50)[len(approx) - 50:]

    clocks = {"wall": time.perf_counter, "cpu": time.process_time, "thread": time.thread_time}
    samples = {name: {c: [] for c in clocks} for name in ("old", "new", "bare")}
    same = 0
    load_start = list(os.getloadavg())
    for round_ in range(args.rounds):
        gc.disable()
        for text in texts:
            got = {}
            for name in (("old", "new", "bare") if round_ % 2 == 0 else ("bare", "new", "old")):
                if name != "bare":
                    use(old if name == "old" else new)
                index._queries.clear()
                query = index.query_vector(text) if name == "bare" else None
                starts = {c: clock() for c, clock in clocks.items()}
                got[name] = memory.search(text, limit=10) if name != "bare" else bare(query)
                for c, clock in clocks.items():
                    samples[name][c].append(clock() - starts[c])
            same += got["old"] == got["new"]
        gc.enable()
    use(new)
    out = {"old": args.old, "nodes": args.nodes, "queries": len(texts), "rounds": args.rounds,
           "identical_answers": f"{same}/{len(texts) * args.rounds}", "load_start": load_start, "load_end": list(os.getloadavg())}
    for name, by in samples.items():
        out[name] = {c: {"p50_ms": round(statistics.median(v) * 1e3, 3), "p95_ms": round(_percentile(v, 0.95) * 1e3, 3),
                         "mean_ms": round(statistics.fmean(v) * 1e3, 3)} for c, v in by.items()}
    out["ratio_to_bare"] = {f"{c}_{stat}": {k: round(out[k][c][f"{stat}_ms"] / out["bare"][c][f"{stat}_ms"], 3) for k in ("old", "new")}
                            for c in clocks for stat in ("p50", "p95", "mean")}
    out["over_bare_ms"] = {f"{c}_{stat}": {k: round(out[k][c][f"{stat}_ms"] - out["bare"][c][f"{stat}_ms"], 3) for k in ("old", "new")}
                           for c in clocks for stat in ("p50", "mean")}
    text = json.dumps(out, indent=1)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0 if same == len(texts) * args.rounds else 1


if __name__ == "__main__":
    raise SystemExit(main())
