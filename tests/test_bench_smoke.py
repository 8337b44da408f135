"""Smoke test of the query benchmark (bench/): tiny size, one repeat, answers must agree.

This is not a timed test: it only checks that the generator is deterministic and valid and
that hgm, the hand-written rustworkx floor and networkx give the same answer to every
benchmark query.
"""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

networkx = pytest.importorskip("networkx")

from bench import baselines, generate, query_bench  # noqa: E402

import hgm_engine  # noqa: E402

SIZE = 2_000


def test_generator_is_deterministic_and_loads(tmp_path: pathlib.Path) -> None:
    doc, meta = generate.generate(SIZE, seed=3)
    again, _ = generate.generate(SIZE, seed=3)
    assert doc == again
    assert generate.generate(SIZE, seed=4)[0] != doc
    assert len(doc["nodes"]) == meta["nodes"] == SIZE
    assert meta["edges"] == len(doc["edges"])
    assert set(meta["node_types"]) == {"goal", "action", "entity", "fact", "result"}
    assert {"parent_of", "before", "related_to", "derived_from", "produces"} <= set(meta["edge_types"])
    assert meta["ordered_parent_of_edges"] > 0

    path, meta_path = generate.graph_paths(tmp_path, SIZE, 3)
    generate.write_graph(doc, meta, path, meta_path)
    assert json.loads(meta_path.read_text()) == meta
    memory = hgm_engine.Memory.from_file(path)
    assert len(memory) == SIZE
    assert memory.graph.edge_count == meta["edges"]
    for anchor in meta["anchors"].values():
        assert memory.node(anchor) is not None


def test_benchmark_answers_agree(tmp_path: pathlib.Path) -> None:
    result = query_bench.run_size(SIZE, repeat=1, min_batch=0.001, graph_dir=tmp_path, load_repeat=1, log=lambda _: None)
    names = [q["name"] for q in result["queries"]]
    assert names == list(baselines.QUERIES)  # run_size raises if an answer differs
    assert result["nodes"] == SIZE
    assert result["load"]["peak_mb"] > 0 and result["load"]["seconds"] > 0
    assert result["compile"]["uncached_ms"] >= 0 and result["compile"]["cached_us"] >= 0
    for query in result["queries"]:
        assert query["touches"] > 0, query["name"]
        assert min(query["hgm_us"], query["floor_us"], query["networkx_us"]) >= 0
    # the whole report renders and checks without the sizes the targets are set for
    report = {"sizes": [result]}
    assert "| `card` |" in query_bench.markdown(report)
    assert query_bench.check_targets(report["sizes"]) == {}


@pytest.mark.parametrize("peer", ["sqlite", "duckdb", "kuzu"])
def test_every_peer_gives_hgms_answer_set_to_every_query(tmp_path: pathlib.Path, peer: str) -> None:
    from bench import peer_bench, peers

    if peer != "sqlite":
        pytest.importorskip(peer)  # the bench extra
    doc, meta = generate.generate(SIZE, seed=0)
    anchors = meta["anchors"]
    memory = hgm_engine.Memory.from_document(doc)
    store = tmp_path / f"{peer}.db"
    peers.PEERS[peer].build(doc, store)
    instance = peers.PEERS[peer]()
    instance.open(store)
    try:
        for name, (template, _) in baselines.QUERIES.items():
            expected = memory.query(template.format(**anchors)).value
            assert peer_bench.digest(instance.run(name, anchors)) == peer_bench.digest(expected), name
    finally:
        instance.close()


def test_the_memo_floor_gives_the_naive_floors_answers() -> None:
    doc, meta = generate.generate(SIZE, seed=0)
    naive, memo = baselines.RxFloor(doc), baselines.RxMemo(doc)
    for name in baselines.QUERIES:
        first = getattr(memo, name)(meta["anchors"])[0]
        assert first == getattr(naive, name)(meta["anchors"])[0] == getattr(memo, name)(meta["anchors"])[0], name


def test_the_memo_floor_remembers_no_more_than_hgm_does() -> None:
    # hgm remembers a node's typed neighbours per direction (Adjacency.of_type) and nothing
    # for a `both` hop: the fair floor keeps the same, so related_facts joins out and in.
    doc, meta = generate.generate(SIZE, seed=0)
    memo = baselines.RxMemo(doc)
    for name in baselines.QUERIES:
        getattr(memo, name)(meta["anchors"])
    assert memo._typed and {key[-1] for key in memo._typed} <= {1, -1}
    assert ("related_to", "fact", 1) in memo._typed and ("related_to", "fact", -1) in memo._typed
