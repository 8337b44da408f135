"""A hop from several sources drops repeats only when some node can be reached twice.

MemoryGraph.distinct_ends(edge_type, outgoing) says that no node is the far end of two edges
of that type in that direction; the generated hop steps then skip the pass that drops
repeats. These tests hold that the lists stay free of repeats, and equal to those of a graph
that knows nothing yet, through every change to the edges.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgm_engine.model import MemoryGraph
from hgm_engine.query.pipeline import compile_uncached

QUERIES = (
    "root.actions",  # one-type hop (not generated: drops repeats itself)
    "root.actions.where(status = 'pending')",  # one-type hop then filters (generated)
    "root.actions[0]",  # generated per source, a pick
    "root.actions.where(status = 'pending')[-1:]",  # generated per source, filter and slice
    "root.children.results",  # results: out(produces), no node type
)


def _graph() -> MemoryGraph:
    nodes = [(f"r{k}", "goal", {}) for k in range(3)]
    nodes += [(f"a{k}", "action", {"status": ("pending", "done")[k % 2]}) for k in range(6)]
    nodes += [(f"x{k}", "result", {}) for k in range(3)]
    edges = [(f"r{k % 3}", f"a{k}", "parent_of", {}) for k in range(6)]
    edges += [(f"a{k}", f"x{k % 3}", "produces", {}) for k in range(3)]
    return MemoryGraph.from_records(nodes, edges)


def _answers(graph: MemoryGraph) -> dict:
    return {q: compile_uncached(q).program.run(graph) for q in QUERIES}


def _fresh(graph: MemoryGraph) -> MemoryGraph:
    doc = graph.to_document()
    nodes = [(n.pop("id"), n.pop("type"), n) for n in doc["nodes"]]
    edges = [(e.pop("from"), e.pop("to"), e.pop("type"), e) for e in doc["edges"]]
    return MemoryGraph.from_records(nodes, edges)


def _known(graph: MemoryGraph) -> None:
    for edge_type in ("parent_of", "produces"):
        graph.distinct_ends(edge_type, True, work=graph.edge_count)


def test_an_edge_that_gives_a_node_a_second_parent_makes_the_hop_drop_repeats_again() -> None:
    graph = _graph()
    _known(graph)
    assert graph.distinct_ends("parent_of", True)
    graph.add_edge("r1", "a0", "parent_of")  # a0 now under r0 and r1
    assert not graph.distinct_ends("parent_of", True)
    answers = _answers(graph)
    assert answers["root.actions"].count("a0") == 1
    assert answers["root.actions.where(status = 'pending')"] == ["a0", "a4", "a2"]  # r0, r1, r2 in turn
    assert answers == _answers(_fresh(graph))
    graph.remove_edge("r1", "a0", "parent_of")  # unknown again, found out again
    assert not graph.distinct_ends("parent_of", True)
    assert graph.distinct_ends("parent_of", True, work=graph.edge_count)


def test_a_hop_whose_ends_repeat_is_found_out_as_such() -> None:
    graph = _graph()
    # x0 is produced by a0 only; a second producer makes produces' ends repeat
    graph.add_edge("a3", "x0", "produces")
    assert not graph.distinct_ends("produces", True, work=graph.edge_count)
    assert compile_uncached("root.children.results").program.run(graph) == ["x0", "x1", "x2"]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    changes=st.lists(
        st.tuples(st.booleans(), st.sampled_from(["parent_of", "produces"]), st.integers(0, 2), st.integers(0, 5)),
        min_size=1,
        max_size=10,
    )
)
def test_the_hops_lists_equal_those_of_a_graph_that_knows_nothing_after_any_edge_changes(changes) -> None:
    graph = _graph()
    for add, edge_type, k, j in changes:
        _known(graph)  # found out (again) before every change where it is unknown
        source, target = (f"r{k}", f"a{j}") if edge_type == "parent_of" else (f"a{j}", f"x{k}")
        exists = graph.edge(source, target, edge_type) is not None
        if add and not exists:
            graph.add_edge(source, target, edge_type)
        elif not add and exists:
            graph.remove_edge(source, target, edge_type)
        answers = _answers(graph)
        assert answers == _answers(_fresh(graph))
        assert all(len(set(ids)) == len(ids) for ids in answers.values())


def test_a_graph_read_from_edge_columns_finds_out_from_the_columns() -> None:
    from hgm_engine.model import lazy_edges, lazy_nodes
    from hgm_engine.model.payloads import EdgeColumns

    nodes = lazy_nodes(["g", "h", "a"], ["goal", "goal", "action"], [None] * 3, [1, 2, 3])
    edges = lazy_edges(["g", "h"], ["a", "a"], ["parent_of", "parent_of"], [None, None], [1, 2])
    graph = MemoryGraph.from_columns(nodes, {"goal": [0, 1], "action": [2]}, EdgeColumns.of_edges(nodes, edges))
    assert graph._csr is not None  # still columns: no edge payloads made for it
    assert not graph.distinct_ends("parent_of", True, work=2)  # a has two parents
    assert graph.distinct_ends("parent_of", False, work=2)  # g and h one child each
    assert graph.distinct_ends("before", True, work=2)  # no such edge at all
    assert graph._csr is not None
