"""Filters that test a node id against a value index's bucket (MemoryGraph.value_bucket).

A string equality on nodes whose type is known — after a hop to one type
(``actions.where(status = 'pending')``) or with a ``type = '...'`` term — is answered by
``id in bucket`` when the graph has the value index of that type and attribute, without
reaching the node; without it the nodes are read, and once filters have read as many nodes
as the type has the index is built (MemoryGraph.tested_without_index). These tests hold that
the answers are the ones read from the attributes, before and after the index exists and
after every kind of change.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hgm_engine
from hgm_engine.model import MemoryGraph
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
from hgm_engine.query.pipeline import compile_uncached

HOP = "root.actions.where(status = 'pending')"
TYPED = "root.descendants.where(type = 'action', status = 'pending')"
PER_SOURCE = "root.actions.where(status = 'pending')[0]"
QUERIES = (HOP, TYPED, PER_SOURCE, "root.actions.where(status = 'pending', priority >= 2)")


def _doc(actions: int = 6) -> dict:
    nodes = [{"id": "g", "type": "goal"}, {"id": "s", "type": "goal", "status": "pending"}]
    edges = [{"from": "g", "to": "s", "type": "parent_of"}]
    for k in range(actions):
        nodes.append({"id": f"a{k}", "type": "action", "status": ("pending", "done")[k % 2], "priority": k})
        edges.append({"from": "g" if k < actions // 2 else "s", "to": f"a{k}", "type": "parent_of"})
    return {"format": "hgm-graph/1", "nodes": nodes, "edges": edges}


def _answers(memory) -> dict:
    return {q: memory.query(q).value for q in QUERIES}


def _expected(memory) -> dict:
    fresh = hgm_engine.Memory.from_document(memory.graph.to_document())  # no index built yet
    assert fresh.graph.value_bucket("action", "status", "pending") is None
    return _answers(fresh)


def _warm(memory, calls: int = 8) -> None:
    for _ in range(calls):
        _answers(memory)
    assert memory.graph.value_bucket("action", "status", "pending") is not None


def test_a_filter_after_a_hop_to_one_type_builds_the_index_once_it_has_read_as_many_nodes_as_the_type_has() -> None:
    memory = hgm_engine.Memory.from_document(_doc(actions=8))
    graph = memory.graph
    # the hop from the root reaches its own 4 actions (the other 4 are under its subgoal)
    answers = []
    while graph.value_bucket("action", "status", "pending") is None:
        answers.append(memory.query(HOP).ids)
        assert len(answers) <= 2
    assert len(answers) == 2  # 4 + 4 nodes read = the 8 actions: built after the second call
    assert memory.query(HOP).ids == answers[0] == ["a0", "a2"]


def test_a_filter_that_knows_the_type_tests_ids_against_the_bucket_without_reaching_the_nodes() -> None:
    class Counting(dict):
        reads = 0

        def __getitem__(self, key):
            Counting.reads += 1
            return dict.__getitem__(self, key)

    class Graph(MemoryGraph):
        def node_map(self):
            return self._counted

    memory = hgm_engine.Memory.from_document(_doc())
    graph = Graph.from_payloads(list(memory.graph.nodes()), memory.graph.edges())
    graph._counted = Counting(graph._nodes)
    graph.nodes_with("action", "status", "done")  # the (action, status) index
    for query, answer in ((HOP, ["a0", "a2"]), (PER_SOURCE, ["a0"]), (TYPED, ["a0", "a2", "a4"])):
        program = compile_uncached(query).program
        Counting.reads = 0
        assert program.run(graph) == answer, query
        assert Counting.reads == 0, query
    Counting.reads = 0
    assert compile_uncached("root.actions.where(status = $s)").program.run(graph, params={"s": "pending"}) == ["a0", "a2"]
    assert Counting.reads == 0
    # a term the index cannot answer still reads the nodes the bucket let through
    Counting.reads = 0
    assert compile_uncached("root.actions.where(status = 'pending', priority >= 2)").program.run(graph) == ["a2"]
    assert Counting.reads == 2  # a0 and a2: the pending ones


def test_answers_from_the_buckets_follow_every_change() -> None:
    memory = hgm_engine.Memory.from_document(_doc())
    _warm(memory)
    assert _answers(memory) == _expected(memory)
    steps = [
        lambda tx: tx.update_node("a1", set={"status": "pending"}),  # into the bucket
        lambda tx: tx.update_node("a0", set={"status": "done"}),  # out of it
        lambda tx: tx.update_node("a2", unset=["status"]),  # no value at all
        lambda tx: tx.update_node("a3", set={"status": "failed"}),  # another value
        lambda tx: tx.add_node("action", id="n1", parent="g", status="pending"),  # a new node and edge
        lambda tx: tx.delete_node("a4"),
        lambda tx: (tx.delete_edge("g", "a1", "parent_of"), tx.add_edge("s", "a1", "parent_of")),  # moved
    ]
    seen = []
    for step in steps:
        with memory.transaction() as tx:
            step(tx)
        seen.append(_answers(memory))
        assert seen[-1] == _expected(memory)
    # revert each commit, newest first: the answers go back the same way
    for t in range(memory.t, 1, -1):
        memory.revert(t)
        assert _answers(memory) == _expected(memory)
    assert _answers(memory) == _answers(hgm_engine.Memory.from_document(_doc()))


def test_earlier_states_and_a_transactions_own_changes_are_read_from_the_attributes() -> None:
    memory = hgm_engine.Memory.from_document(_doc())
    _warm(memory)
    before = _answers(memory)
    with memory.transaction() as tx:
        tx.update_node("a1", set={"status": "pending"})
        tx.update_node("a0", set={"status": "done"})
        inside = {q: tx.query(q).value for q in QUERIES}  # the overlay: not the index's state
        assert inside[HOP] == ["a1", "a2"] and inside[PER_SOURCE] == ["a1"]
    assert _answers(memory) == inside
    assert {q: memory.as_of(1).query(q).value for q in QUERIES} == before


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    changes=st.lists(
        st.tuples(st.integers(0, 7), st.sampled_from(["pending", "done", "failed", None])), min_size=1, max_size=8
    ),
    warm=st.integers(0, 6),
)
def test_the_bucket_answers_equal_the_attribute_answers_after_any_updates(changes, warm) -> None:
    memory = hgm_engine.Memory.from_document(_doc(actions=8))
    for _ in range(warm):  # the index is built somewhere in between, or not at all
        _answers(memory)
    for k, value in changes:
        with memory.transaction() as tx:
            if value is None:
                tx.update_node(f"a{k}", unset=["status"])
            else:
                tx.update_node(f"a{k}", set={"status": value})
        assert _answers(memory) == _expected(memory)


def test_a_view_without_value_indexes_counts_nothing() -> None:
    memory = hgm_engine.Memory.from_document(_doc())
    with memory.transaction() as tx:
        tx.update_node("a1", set={"status": "pending"})
    for _ in range(10):  # an earlier state: a view of its own, not the graph
        assert memory.as_of(1).query(HOP).ids == ["a0", "a2"]
    assert memory.graph.value_bucket("action", "status", "pending") is None
    assert Context(memory.graph, {}, None, DEFAULT_LIMITS).view is memory.graph


def test_a_value_that_is_not_a_string_leaves_the_bucket_on_the_graph() -> None:
    graph = hgm_engine.Memory.from_document(_doc()).graph
    graph.nodes_with("action", "status", "done")
    program = compile_uncached(HOP).program
    assert program.run(graph) == ["a0", "a2"]
    graph.set_node_attrs("a0", {"status": 7})
    graph.set_node_attrs("a1", {"status": "pending"})
    assert program.run(graph) == ["a1", "a2"]
    graph.remove_node("a2")
    assert program.run(graph) == ["a1"]


def test_an_index_of_mostly_unique_values_is_not_kept_for_a_filter() -> None:
    nodes = [("g", "goal", {})] + [(f"a{k}", "action", {"name": f"n{k}", "status": "done"}) for k in range(6)]
    graph = MemoryGraph.from_records(nodes, [("g", f"a{k}", "parent_of", {}) for k in range(6)])
    program = compile_uncached("root.actions.where(name = 'n3')").program
    for _ in range(5):  # 30 nodes read: five times the actions
        assert program.run(graph) == ["a3"]
    assert graph.value_bucket("action", "name", "n3") is None
    assert graph._tested[("action", "name")] == -1  # not tried again


def test_a_parameter_bound_to_a_string_is_tested_against_the_bucket_and_any_other_value_on_the_attributes() -> None:
    memory = hgm_engine.Memory.from_document(_doc())
    query = "root.actions.where(status = $s)"
    answers = [memory.query(query, params={"s": "pending"}).ids for _ in range(6)]
    assert memory.graph.value_bucket("action", "status", "pending") is not None  # built on the way
    assert answers == [["a0", "a2"]] * 6
    assert memory.query(query, params={"s": "done"}).ids == ["a1"]
    assert memory.query(query, params={"s": 3}).ids == []
    with memory.transaction() as tx:
        tx.update_node("a1", set={"status": "pending"})
    assert memory.query(query, params={"s": "pending"}).ids == ["a0", "a1", "a2"]
