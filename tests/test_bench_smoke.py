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


def test_the_memo_floor_tests_value_membership_where_hgm_has_the_index() -> None:
    # hgm's generated filters answer `status = 'pending'` from a value index only for the node
    # types whose index is at hand (MemoryGraph.value_members), and build none for a filter:
    # run in the benchmark's order, the floor has the same indexes before every query.
    doc, meta = generate.generate(SIZE, seed=0)
    memory = hgm_engine.Memory.from_document(doc)
    memo = baselines.RxMemo(doc)
    seen = set()
    for name, (template, _) in baselines.QUERIES.items():
        for value in ("pending", "done", "failed"):
            hgm_types = set(memory.graph.value_members("status", value))
            floor_types = {t for t in meta["node_types"] if memo.members(t, "status", value) is not None}
            assert floor_types == hgm_types, (name, value)
            seen |= hgm_types
        memory.query(template.format(**meta["anchors"]))
        getattr(memo, name)(meta["anchors"])
    assert seen == {"action"}  # failed_urgent builds (action, status); five_steps reads it


def test_the_memo_floor_filters_by_the_bucket_once_the_index_exists() -> None:
    doc, meta = generate.generate(SIZE, seed=0)
    memo = baselines.RxMemo(doc)
    anchors = meta["anchors"]
    before = memo.five_steps(anchors)[0]
    memo.failed_urgent(anchors)  # builds the (action, status) index, as hgm's nodes_with
    for i in memo.by_type["action"]:
        memo.g[i]["status"] = "changed behind the index"
    assert before and memo.five_steps(anchors)[0] == before  # the bucket answered, not the attributes


def test_the_memo_floors_typed_hops_are_the_ones_hgm_remembers() -> None:
    # After every query has run once, the floor has filled a typed memo (edge type, node type,
    # direction) exactly where hgm's graph has filled MemoryGraph.hop_memo, and no other.
    doc, meta = generate.generate(SIZE, seed=0)
    memory, memo = hgm_engine.Memory.from_document(doc), baselines.RxMemo(doc)
    for name, (template, _) in baselines.QUERIES.items():
        memory.query(template.format(**meta["anchors"]))
        getattr(memo, name)(meta["anchors"])
    graph = memory.graph
    for edge_type in meta["edge_types"]:
        for node_type in meta["node_types"]:
            for direction in (1, -1):
                filled_by_hgm = bool(graph.hop_memo(edge_type, node_type, direction > 0)[0])
                assert filled_by_hgm == bool(memo._typed.get((edge_type, node_type, direction))), (edge_type, node_type, direction)


@pytest.mark.parametrize("name", ["card", "project_pending", "five_steps"])
def test_the_memo_floor_builds_a_filters_value_index_at_the_call_hgm_does(name: str) -> None:
    # hgm builds the (action, status) index once its filters have read as many actions as
    # there are (MemoryGraph.tested_without_index); the floor counts the same way (RxMemo.tested).
    doc, meta = generate.generate(SIZE, seed=0)
    memory, memo = hgm_engine.Memory.from_document(doc), baselines.RxMemo(doc)
    expr = baselines.QUERIES[name][0].format(**meta["anchors"])
    built = []
    for call in range(20):
        answer = memory.query(expr).ids
        assert getattr(memo, name)(meta["anchors"])[0] == answer, (name, call)
        hgm_has = memory.graph.value_bucket("action", "status", "pending") is not None
        assert hgm_has == (memo.members("action", "status", "pending") is not None), (name, call)
        built.append(hgm_has)
    assert not built[0] and built[-1]  # not on the first call; within twenty
