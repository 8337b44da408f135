"""MemoryGraph: stable ids over rustworkx, immutable payloads, creation and edge order."""

from __future__ import annotations

import pytest

from hgm_engine.model import FrozenDict, GraphOverlay, GraphView, MemoryGraph


def small_tree() -> MemoryGraph:
    g = MemoryGraph()
    for node_id, node_type in (("g", "goal"), ("a", "action"), ("b", "action"), ("c", "action")):
        g.add_node(node_id, node_type, {"content": node_id.upper()})
    g.add_edge("g", "a", "parent_of")
    g.add_edge("g", "b", "parent_of")
    g.add_edge("g", "c", "parent_of")
    return g


def test_ids_stay_correct_when_rustworkx_reuses_an_index():
    g = small_tree()
    g.remove_node("a")
    g.add_node("d", "action", {"content": "D"})  # rustworkx hands out a's old index here
    g.add_edge("g", "d", "parent_of")
    assert g.out_ids("g", "parent_of") == ("b", "c", "d")
    assert g.node("d").attrs["content"] == "D"
    assert g.node("a") is None


def test_payloads_are_immutable():
    g = small_tree()
    node = g.node("a")
    with pytest.raises(TypeError):
        node.attrs["content"] = "changed"
    with pytest.raises(AttributeError):
        node.type = "goal"  # type: ignore[misc]


def test_nested_attribute_values_are_frozen_too():
    g = MemoryGraph()
    node = g.add_node("x", "fact", {"tags": ["a"], "meta": {"k": [1]}})
    assert node.attrs["tags"] == ("a",)
    assert isinstance(node.attrs["meta"], FrozenDict)
    assert node.to_json() == {"id": "x", "type": "fact", "tags": ["a"], "meta": {"k": [1]}}


def test_changing_attributes_writes_a_new_payload():
    g = small_tree()
    old = g.node("a")
    new = g.set_node_attrs("a", {"content": "A2"})
    assert old.attrs["content"] == "A"
    assert new.attrs["content"] == "A2" and new.seq == old.seq


def test_edges_with_numeric_order_come_first_ascending():
    g = small_tree()
    g.set_edge_attrs("g", "c", "parent_of", {"order": 0})
    g.set_edge_attrs("g", "b", "parent_of", {"order": 1})
    assert g.out_ids("g", "parent_of") == ("c", "b", "a")


def test_boolean_order_is_not_a_number():
    g = small_tree()
    g.set_edge_attrs("g", "c", "parent_of", {"order": True})
    assert g.out_ids("g", "parent_of") == ("a", "b", "c")


def test_adjacency_cache_follows_removals_and_additions():
    g = small_tree()
    assert g.out_ids("g", "parent_of") == ("a", "b", "c")
    g.remove_edge("g", "b", "parent_of")
    assert g.out_ids("g", "parent_of") == ("a", "c")
    g.add_edge("g", "b", "parent_of")
    assert g.out_ids("g", "parent_of") == ("a", "c", "b")  # a new edge is created last


def test_roots_are_goals_without_parent_in_creation_order():
    g = small_tree()
    g.add_node("g2", "goal", {})
    g.add_node("g3", "goal", {})
    g.add_edge("g2", "g3", "parent_of")
    assert g.roots() == ("g", "g2")
    g.remove_edge("g2", "g3", "parent_of")
    assert g.roots() == ("g", "g2", "g3")


def test_parallel_edges_of_different_types_are_allowed_but_not_of_the_same_type():
    g = small_tree()
    g.add_edge("a", "b", "before")
    g.add_edge("a", "b", "related_to")
    with pytest.raises(KeyError):
        g.add_edge("a", "b", "before")
    assert g.out_adjacency("a").pairs == (("before", "b"), ("related_to", "b"))


def test_removing_a_node_removes_its_edges_and_index_entries():
    g = small_tree()
    g.add_edge("a", "b", "before")
    removed = g.remove_node("a")
    assert [e.key for e in removed] == [("a", "b", "before"), ("g", "a", "parent_of")]
    assert g.in_ids("b", "before") == ()
    assert list(g.ids_of_type("action")) == ["b", "c"]
    assert g.edge_count == 2


# -- the root goals are kept up to date by every change (not recomputed by a scan) ----------

from hypothesis import given, settings, strategies as st  # noqa: E402


def _roots_by_scan(graph: MemoryGraph) -> tuple[str, ...]:
    return tuple(
        node.id for node in graph.nodes() if node.type == "goal" and not graph.in_ids(node.id, "parent_of")
    )


_GRAPH_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add_goal", "add_action", "link", "unlink", "remove", "roots"]),
        st.integers(0, 7),
        st.integers(0, 7),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(_GRAPH_OPS)
def test_roots_stay_right_across_any_changes(ops) -> None:
    graph = MemoryGraph()
    for kind, a, b in ops:
        source, target = f"n{a}", f"n{b}"
        if kind in ("add_goal", "add_action") and source not in graph:
            graph.add_node(source, "goal" if kind == "add_goal" else "action", {})
        elif kind == "link" and source in graph and target in graph and source != target:
            if not graph.out_ids(source, "parent_of") or target not in graph.out_ids(source, "parent_of"):
                graph.add_edge(source, target, "parent_of")
        elif kind == "unlink" and target in graph.out_ids(source, "parent_of"):
            graph.remove_edge(source, target, "parent_of")
        elif kind == "remove" and source in graph:
            graph.remove_node(source)
        elif kind == "roots":  # computed now (from then on kept up to date by each change)
            assert graph.roots() == _roots_by_scan(graph)
    assert graph.roots() == _roots_by_scan(graph)


def test_every_readable_view_is_a_graph_view():
    from hgm_engine.model import apply_changes
    from hgm_engine import Commit
    from hgm_engine.txn import historical_view

    g = small_tree()
    overlay = GraphOverlay(g)
    overlay.remove_node("c")
    commit = Commit(1, None, None, None, 0.0, tuple(overlay.changes()))
    apply_changes(g, list(commit.changes))
    genesis = Commit(1, None, None, None, 0.0, (), genesis=True)
    for view in (g, overlay, historical_view(g, [commit]), historical_view(g, [genesis])):
        assert isinstance(view, GraphView), type(view).__name__


def test_an_overlay_finds_the_cycles_its_own_edges_close():
    g = small_tree()
    g.add_edge("a", "b", "before")
    overlay = GraphOverlay(g)
    overlay.add_edge("b", "a", "before")
    assert overlay.find_cycles(["before", "parent_of"]) == {"before": ["a", "b"], "parent_of": None}
    overlay.remove_edge("a", "b", "before")
    assert overlay.find_cycles(["before"]) == {"before": None}
    assert g.find_cycles(["before"]) == {"before": None}  # the base is never changed


def test_checking_a_whole_overlay_reports_its_cycles():
    from hgm_engine.rules import check_full

    g = small_tree()
    g.add_edge("a", "b", "before")
    overlay = GraphOverlay(g)
    overlay.add_edge("b", "a", "before")
    assert [(v.constraint, v.node) for v in check_full(overlay)] == [("before_acyclic", "a")]


def test_a_hops_remembered_answers_follow_every_change_to_the_edges():
    g = MemoryGraph.from_records(
        [("g", "goal", {}), ("s", "goal", {}), ("a", "action", {}), ("f", "fact", {})],
        [("g", "s", "parent_of", {}), ("g", "a", "parent_of", {}), ("f", "a", "related_to", {})],
    )
    hops = {
        (edge_type, node_type, outgoing): g.hop_memo(edge_type, node_type, outgoing)
        for edge_type in ("parent_of", "related_to") for node_type in (None, "goal", "action") for outgoing in (True, False)
    }

    def answers():  # every hop of every node, read through the memo as the executor does
        out = {}
        for key, (memo, find) in hops.items():
            for node_id in g.node_ids():
                found = memo.get(node_id)
                out[key + (node_id,)] = found if found is not None else find(node_id)
        return out

    def fresh():  # the same from the adjacencies, nothing remembered
        return {
            (edge_type, node_type, outgoing, node_id): tuple(
                other for other in (g.out_adjacency if outgoing else g.in_adjacency)(node_id).by_type.get(edge_type, ())
                if node_type is None or g.node_map()[other].type == node_type
            )
            for (edge_type, node_type, outgoing) in hops for node_id in g.node_ids()
        }

    assert answers() == fresh()
    assert hops[("parent_of", "goal", True)][0]["g"] == ("s",)
    g.add_node("t", "goal", {})
    g.add_edge("g", "t", "parent_of", {"order": 0})  # ordered first
    assert answers() == fresh() and hops[("parent_of", None, True)][0]["g"] == ("t", "s", "a")
    g.remove_edge("g", "s", "parent_of")
    assert answers() == fresh() and hops[("parent_of", None, False)][0]["s"] == ()
    g.set_edge_attrs("g", "a", "parent_of", {"order": -1})
    assert answers() == fresh() and hops[("parent_of", None, True)][0]["g"] == ("a", "t")
    g.remove_node("a")
    assert "a" not in hops[("parent_of", None, True)][0] and answers() == fresh()
    assert hops[("related_to", "action", True)][0]["f"] == ()
    g.add_node("a", "goal", {})  # the same id again, another type
    g.add_edge("f", "a", "related_to")
    assert answers() == fresh() and hops[("related_to", "goal", True)][0]["f"] == ("a",)
