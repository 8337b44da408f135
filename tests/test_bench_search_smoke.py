"""Smoke test of the search benchmark (bench/search_bench.py) on 500 nodes: not a timed test.
It checks that the queries it draws are searchable, that the search and vector parts run and
answer, that both upkeep memories commit the workload, and that a reopened memory reads its
index from the store (``source`` is ``stored``) while one whose index was dropped rebuilds it."""

from __future__ import annotations

import pathlib
import sqlite3
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import generate, search_bench  # noqa: E402

import hgm_engine  # noqa: E402


def test_the_hash_embedder_is_deterministic_and_dense():
    first, second = search_bench.HashEmbedder(16), search_bench.HashEmbedder(16)
    assert (first.embed_documents(["book the hotel"]) == second.embed_documents(["book the hotel"])).all()
    assert first.embed_query("hotel").shape == (16,)


def test_search_upkeep_and_reopen_run_on_a_small_memory(tmp_path):
    doc, _ = generate.generate(500, seed=0)
    queries = search_bench.queries_of(doc, 12)
    assert len(queries) == 12 and all(hgm_engine.Memory().search(q) == [] for q in queries)
    search = search_bench.run_search(doc, queries, rounds=1, dimensions=16)
    assert search["lexical"]["mean_hits"] > 0 and search["vectors"]["vectors"] == search["nodes"]
    assert search["vectors"]["memory_search"]["n"] == 12
    # the bare BLAS step, timed beside each query in the same run, and the searches' ratios to it
    assert search["vectors"]["bare_blas_top_k"]["n"] == 12
    assert search["vectors"]["ratio_to_bare"]["memory_search_cpu_p95"] > 0
    upkeep = search_bench.run_upkeep(doc, tmp_path, commits=4, block=2)
    assert upkeep["sqlite"]["with_index"]["n"] == 4 and upkeep["in_process"]["commit_and_next_search"]["n"] == 4
    kept = search_bench.run_reopen(tmp_path / "with_index.db", 1, queries[0])
    assert kept["source"] == "stored" and kept["hits"] > 0
    db = sqlite3.connect(tmp_path / "with_index.db")
    db.execute("DELETE FROM node_index")
    db.execute("DELETE FROM node_index_changes")
    db.commit()
    db.close()
    assert search_bench.run_reopen(tmp_path / "with_index.db", 1, queries[0])["source"] == "built"


def test_parts_runs_only_the_vector_search():
    report = search_bench.run(300, queries=4, rounds=1, commits=2, block=1, reopen_runs=1, dimensions=8,
                              graph_dir=None, work_dir=None, parts=("vectors",), doc=generate.generate(300, seed=0)[0])
    assert "vectors" in report["search"] and "lexical" not in report["search"]
    assert "upkeep" not in report and "reopen" not in report
    assert set(report["target_checks"]) == {"vectors_p95_ms", "vectors_p95_ratio_to_bare_blas_top_k"}
