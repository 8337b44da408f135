"""The ids a loader hands the graph are copies made in one go (``model.compact_ids``), side by
side in creation order, instead of the parser's or the driver's strings, each of which sits
among its record's other values (issue 15: a query step reads every id object it passes on,
and ids made at load probed 2–3× slower than fresh consecutive ones).

These tests hold that the copies are the graph's only id strings (the node map's keys, the
payloads' ids, every edge end and edge-index key are the same objects) and that a memory
loaded that way answers like one built node by node, after commits, reverts and a reopen.
"""

from __future__ import annotations

import hgm_engine
from hgm_engine import Memory
from hgm_engine.model import compact_ids
from hgm_engine.store import graph_from_document
from hgm_engine.store.rows import build_state
from hgm_engine.store.sqlite import SQLiteStore

QUERIES = (
    "root.subgoals[0].actions.where(status = 'pending')",
    "root.descendants.where(type = 'action', status = 'pending')",
    "nodes.where(type = 'action', status = 'done')",
    "#a1.following",
    "#g1.children{1,2}",
)


def _doc(goals: int = 4, actions: int = 6) -> dict:
    nodes, edges = [], []
    for g in range(goals):
        nodes.append({"id": f"g{g}", "type": "goal", "content": f"goal {g}"})
        if g:
            edges.append({"from": "g0", "to": f"g{g}", "type": "parent_of", "order": goals - g})
        for k in range(actions):
            a = f"a{g * actions + k}"
            nodes.append({"id": a, "type": "action", "status": ("pending", "done", "failed")[k % 3], "priority": k})
            edges.append({"from": f"g{g}", "to": a, "type": "parent_of"})
            if k:
                edges.append({"from": f"a{g * actions + k - 1}", "to": a, "type": "before"})
    return {"format": "hgm-graph/1", "nodes": nodes, "edges": edges}


def _one_string_per_id(graph) -> None:
    nodes = graph.node_map()
    for key, node in nodes.items():
        assert node.id is key
    for edge in graph.iter_edges():
        assert edge.source is nodes[edge.source].id and edge.target is nodes[edge.target].id


def _answers(memory) -> dict:
    return {q: memory.query(q).value for q in QUERIES}


def _built_one_by_one(memory) -> dict:
    doc = memory.graph.to_document()
    fresh = Memory()
    ops = [{"op": "add_node", **n} for n in doc["nodes"]] + [{"op": "add_edge", **e} for e in doc["edges"]]
    fresh.apply({"ops": ops})
    return _answers(fresh)


def test_compact_ids_are_equal_new_strings_in_the_same_order():
    old = ["g1", "a2", "é3", "x" * 300]
    new = compact_ids(old)
    assert new == old and not any(a is b for a, b in zip(new, old))
    assert compact_ids(("a", "b")) == ["a", "b"] and compact_ids(iter(["c"])) == ["c"]


def test_an_id_holding_the_separator_is_copied_whole():
    assert compact_ids(["a\x00b", "", "c"]) == ["a\x00b", "", "c"]


def test_a_graph_file_s_ids_are_not_the_document_s_strings_and_every_end_is_the_node_s_own_id():
    doc = _doc()
    graph = graph_from_document(doc)
    ids_in_doc = {id(n["id"]) for n in doc["nodes"]} | {id(e["from"]) for e in doc["edges"]} | {id(e["to"]) for e in doc["edges"]}
    assert not any(id(node_id) in ids_in_doc for node_id in graph.node_map())
    _one_string_per_id(graph)
    for source, target, edge_type in list(graph._keys()):  # the edge index is keyed by the graph's strings too
        assert source is graph.node(source).id and target is graph.node(target).id
        assert graph.edge(source, target, edge_type).seq >= 1


def test_rows_read_back_share_one_new_string_per_id():
    node_rows = [(f"n{i}", "goal", "{}", i + 1) for i in range(5)]
    edge_rows = [("n0", f"n{i}", "parent_of", "{}", i) for i in range(1, 5)]
    for checked in (False, True):
        graph = build_state(node_rows, edge_rows, damaged=ValueError, checked=checked)
        assert not any(node_id is row[0] for node_id, row in zip(graph.node_map(), node_rows))
        _one_string_per_id(graph)
        assert graph.out_ids("n0", "parent_of") == ("n1", "n2", "n3", "n4")


def test_a_loaded_memory_answers_like_one_built_node_by_node_after_commits_and_reverts():
    memory = hgm_engine.Memory.from_document(_doc())
    assert _answers(memory) == _built_one_by_one(memory)
    memory.apply({"ops": [
        {"op": "add_node", "id": "late", "type": "action", "attrs": {"status": "pending"}},
        {"op": "add_edge", "from": "g1", "to": "late", "type": "parent_of"},
        {"op": "update_node", "id": "a7", "set": {"status": "pending"}},
        {"op": "delete_edge", "from": "a1", "to": "a2", "type": "before"},
    ]})
    assert _answers(memory) == _built_one_by_one(memory)
    memory.revert(memory.commits()[-1].t)
    assert _answers(memory) == _built_one_by_one(memory)


def test_a_memory_reopened_from_its_rows_answers_as_before(tmp_path):
    path = tmp_path / "memory.db"
    with Memory(store=SQLiteStore(path, image_min_nodes=None)) as memory:
        memory.load(_doc(), reason="compact ids")
        memory.apply({"ops": [{"op": "update_node", "id": "a3", "set": {"status": "done"}}]})
        before = _answers(memory)
    with Memory(store=SQLiteStore(path, image_min_nodes=None)) as memory:
        _one_string_per_id(memory.graph)
        assert _answers(memory) == before == _built_one_by_one(memory)
