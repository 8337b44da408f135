"""Engine bugs the differential tests against the reference model (hgm_engine/testing) found,
one regression test each.

- A memory keeps the value it was told: ``true``, ``1`` and ``1.0`` are three values (the
  language says ``true = 1`` is false), so changing one into another is a change.
- A walk (``.paths()``) that follows a loop edge from a node to itself passes through the node
  again; only steps that stay put (level 0 of a repetition, ``latest`` of the newest) add
  nothing.
- The same holds for an edge: updating an edge attribute from ``true`` to ``1`` is a change
  (the overlay took the edge for the base's own again, as ``True == 1`` in Python).
- Reverting the removal of an edge whose end a later commit deleted is a conflict (it raised
  the overlay's ``KeyError``: a traceback for the caller)."""

from __future__ import annotations

import pytest

from hgm_engine import Memory, compile
from hgm_engine.errors import ConflictError
from hgm_engine.store import graph_from_document


def _memory() -> Memory:
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "x", "type": "fact", "ok": True, "v": 2}]})
    return memory


def test_an_update_from_true_to_one_is_a_change() -> None:
    memory = _memory()
    report = memory.apply({"ops": [{"op": "update_node", "id": "x", "set": {"ok": 1, "v": 2.0}}]})
    assert report.to_json()["changes"] == [
        {"kind": "node_updated", "id": "x", "before": {"ok": True, "v": 2}, "after": {"ok": 1, "v": 2.0}}
    ]
    assert memory.query("nodes.where(ok = 1)").ids == ["x"]
    assert memory.diff(1, 2)[0]["after"] == {"ok": 1, "v": 2.0}


def test_a_rule_that_sets_one_over_true_changes_the_node() -> None:
    memory = _memory()
    memory.load_rules("rule r: on update fact where v = 3 then set self with ok = 1")
    memory.apply({"ops": [{"op": "update_node", "id": "x", "set": {"v": 3}}]})
    assert memory.node("x")["ok"] == 1


def test_adding_a_null_attribute_is_an_update_event() -> None:
    memory = _memory()
    memory.load_rules("rule r: on update fact then mark self as needs_review")
    report = memory.apply({"ops": [{"op": "update_node", "id": "x", "set": {"note": None}}]})
    assert report.fired_rules == ("r",)


def test_a_walk_along_a_loop_edge_repeats_the_node() -> None:
    graph = graph_from_document({"format": "hgm-graph/1", "nodes": [{"id": "n0", "type": "goal"}],
                                 "edges": [{"from": "n0", "to": "n0", "type": "related_to"}]})
    assert compile("#n0.out().paths()").run(graph).value == [["n0", "n0"]]
    assert compile("#n0.out(){0}.out().paths()").run(graph).value == [["n0", "n0"]]
    assert compile("#n0.out(){0,1}.paths()").run(graph).value == [["n0"]]
    assert compile("#n0.latest.paths()").run(graph).value == [["n0"]]


def test_a_node_added_by_the_transaction_starts_no_propagation_even_when_a_rule_sets_it() -> None:
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "n0", "type": "goal"}]})
    memory.load_rules("rule r1: on add goal then set self with status = 'done'\npropagate parent_of backward")
    report = memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal", "parent": "n0"}]})
    assert report.fired_rules == ("r1",) and report.dirtied == ()


def test_a_diff_across_a_re_created_node_lists_its_edges_removed_and_added() -> None:
    memory = Memory()
    memory.load({"format": "hgm-graph/1", "nodes": [{"id": "a", "type": "goal"}, {"id": "b", "type": "entity"}],
                 "edges": [{"from": "b", "to": "a", "type": "related_to"}]})
    memory.apply({"ops": [{"op": "delete_node", "id": "a"}]})
    memory.revert(2)
    assert [c["kind"] for c in memory.diff(1, 3)] == ["node_removed", "node_added", "edge_removed", "edge_added"]


def test_cleared_lists_nodes_in_the_order_the_ops_cleared_them() -> None:
    memory = Memory()
    memory.load_rules("rule r: on add goal then mark self as needs_review")
    memory.apply({"ops": [{"op": "add_node", "id": "a", "type": "goal"}, {"op": "add_node", "id": "b", "type": "goal"}]})
    report = memory.apply({"ops": [{"op": "confirm", "id": "b"}, {"op": "update_node", "id": "a", "set": {"status": "done"}}]})
    assert report.cleared == (
        {"id": "b", "state": "needs_review", "by": "confirm"},
        {"id": "a", "state": "needs_review", "by": "update"},
    )


def test_propagation_does_not_walk_through_a_node_the_transaction_deleted() -> None:
    memory = Memory()
    memory.load({"format": "hgm-graph/1", "nodes": [{"id": "a", "type": "fact"}, {"id": "b", "type": "fact"}, {"id": "c", "type": "fact"}],
                 "edges": [{"from": "b", "to": "a", "type": "derived_from"}, {"from": "c", "to": "b", "type": "derived_from"}]})
    memory.load_rules("propagate derived_from backward")
    report = memory.apply({"ops": [{"op": "delete_node", "id": "a"}, {"op": "delete_node", "id": "b"}]})
    assert report.dirtied == ({"id": "c", "state": "needs_review", "because": ["b"], "rules": ["propagate:derived_from"]},)


def test_revert_of_an_edge_removal_conflicts_when_an_end_was_deleted_since() -> None:
    with Memory() as m:
        m.apply({"ops": [{"op": "add_node", "id": "a b", "type": "entity"}, {"op": "add_node", "id": "x", "type": "entity"},
                         {"op": "add_edge", "from": "a b", "to": "x", "type": "related_to"}]})
        m.apply({"ops": [{"op": "delete_edge", "from": "a b", "to": "x", "type": "related_to"}]})
        m.apply({"ops": [{"op": "delete_node", "id": "a b"}]})
        exported = m.export()
        with pytest.raises(ConflictError) as caught:
            m.revert(2)
        assert "'a b'" in str(caught.value) and "t=3" in str(caught.value)
        assert m.t == 3 and m.export() == exported


def test_an_edge_update_from_true_to_one_is_a_change() -> None:
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "a", "type": "entity"}, {"op": "add_node", "id": "x", "type": "entity"},
                          {"op": "add_edge", "from": "a", "to": "x", "type": "related_to", "w": True}]})
    update = {"ops": [{"op": "update_edge", "from": "a", "to": "x", "type": "related_to", "set": {"w": 1}}]}
    changed = [{"kind": "edge_updated", "from": "a", "to": "x", "type": "related_to", "before": {"w": True}, "after": {"w": 1}}]
    assert memory.apply(update, dry_run=True).to_json()["changes"] == changed
    assert memory.apply(update).to_json()["changes"] == changed
    assert memory.t == 2 and memory.export()["edges"][0]["w"] == 1
