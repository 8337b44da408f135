"""Tests of a stored image's value-index buckets by id (issue 15, the first call).

A graph read from its image keeps each string bucket as the ascending positions of its nodes
(``model.graph._Positions``): a test finds the id's position (its node's ``seq - base`` when
the image's seqs are consecutive, else the graph's lookup) and bisects, until tests have added
up to what making the set of the bucket's ids costs. A filter over a list knows how many ids it
is about to test and says so (``MemoryGraph.value_bucket(..., tests=N)``): the bucket then
makes its set at once when that many tests would cost more (a first call over 1,588 ids paid
617 tests by position, then the set). A filter after a walk of the image's columns tests
positions instead (``operators.stored_levels``, the first ``STORED_WALKS`` calls); the count
matters from the calls after those, which read the walk's memo. These tests hold that every way of asking gives the
answers of the attributes themselves.
"""

from __future__ import annotations

import pytest

from hgm_engine import Memory
from hgm_engine.model import MemoryGraph
from hgm_engine.query.executor.operators import STORED_WALKS
from hgm_engine.store.image import decode_image, encode_image
from hgm_engine.store.sqlite import SQLiteStore

STATUSES = ("pending", "done", "failed")
TYPED = "root.descendants.where(type = 'action', status = 'pending')"
QUERIES = (TYPED, "root.actions.where(status = 'done')", "nodes.where(type = 'action', status = 'failed')")


def _records(actions: int = 300):
    nodes = [("g", "goal", {"status": "active"})]
    edges = []
    for k in range(actions):
        nodes.append((f"a{k}", "action", {"status": STATUSES[k % 3]}))
        edges.append(("g", f"a{k}", "parent_of", {}))
    return nodes, edges


def _image_graph(remove: str | None = None) -> MemoryGraph:
    graph = MemoryGraph.from_records(*_records())
    if remove is not None:
        graph.remove_node(remove)  # the seqs are no longer consecutive
    return decode_image(encode_image(graph, t=1, edits=0)).graph


def _expected(graph: MemoryGraph, value: str) -> set[str]:
    return {n.id for n in graph.nodes_of_type("action") if n.attrs.get("status") == value}


@pytest.mark.parametrize("remove", [None, "a7"], ids=["consecutive seqs", "a gap in the seqs"])
def test_a_stored_bucket_tested_by_position_answers_as_the_attributes_do(remove):
    graph = _image_graph(remove)
    assert (graph._seq_base is None) == (remove is not None)
    bucket = graph.value_bucket("action", "status", "pending")
    assert type(bucket).__name__ == "_Positions"
    expected = _expected(graph, "pending")
    probes = [n.id for n in graph.nodes()] + ["missing", "a7"]
    assert {i for i in probes if i in bucket} == expected


def test_told_of_many_tests_a_stored_bucket_makes_its_set_at_once():
    graph = _image_graph()
    bucket = graph.value_bucket("action", "status", "done", tests=10_000)
    assert isinstance(bucket, frozenset) and bucket == _expected(graph, "done")
    assert graph.value_members("status", "done")["action"] is bucket  # later queries ask the set
    # the container handed out before goes on answering, from the set
    assert graph.value_bucket("action", "status", "done", tests=10_000) is bucket


def test_told_of_a_few_tests_a_stored_bucket_is_tested_by_position():
    graph = _image_graph()
    bucket = graph.value_bucket("action", "status", "done", tests=3)
    assert type(bucket).__name__ == "_Positions" and bucket.made is None
    assert {i for i in ("a1", "a2", "a4") if i in bucket} == {"a1", "a4"}


def test_a_filter_over_a_long_list_on_a_memory_read_from_its_image_makes_the_set_before_its_first_test(tmp_path, monkeypatch):
    from hgm_engine.model import graph as graph_module

    path = tmp_path / "memory.db"
    nodes, edges = _records(600)
    doc = {"format": "hgm-graph/1",
           "nodes": [{"id": i, "type": t, **a} for i, t, a in nodes],
           "edges": [{"from": s, "to": d, "type": t} for s, d, t, _ in edges]}
    with Memory(store=SQLiteStore(path, image_min_nodes=0)) as memory:
        memory.load(doc, reason="bucket probes")  # stores the image
    with Memory(store=SQLiteStore(path, image_min_nodes=None)) as memory:
        expected = {q: memory.query(q).ids for q in QUERIES}  # read from the rows
    with Memory(store=SQLiteStore(path, image_min_nodes=0)) as memory:
        assert memory.store.last_load == "image"
        tested = []
        real = graph_module._Positions.__contains__
        monkeypatch.setattr(graph_module._Positions, "__contains__", lambda self, i: tested.append(i) or real(self, i))
        got = {TYPED: memory.query(TYPED).ids}
        # the first calls walk the image's columns and test positions (operators.stored_levels):
        # no id is tested, no set is made
        assert tested == [] and not isinstance(memory.graph.value_members("status", "pending")["action"], frozenset)
        for _ in range(STORED_WALKS):  # then the walk reads its memo and hands the filter ids
            assert memory.query(TYPED).ids == got[TYPED]
        assert tested == []  # no id tested by position: 600 tests cost more than the set
        # the filter over the 600 descendants was told how many: the set, made in that call
        assert isinstance(memory.graph.value_members("status", "pending")["action"], frozenset)
        got.update({q: memory.query(q).ids for q in QUERIES})
        memory.apply({"ops": [{"op": "update_node", "id": "a0", "set": {"status": "done"}}]})
        after = memory.query(TYPED).ids
    assert got == expected and after == [i for i in expected[TYPED] if i != "a0"]
