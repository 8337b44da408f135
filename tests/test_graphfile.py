"""Graph files: all-or-nothing loading that names every problem; load → export → load."""

from __future__ import annotations

import json

import pytest

from hgm_engine import GraphFileError, Memory


def test_load_export_load_gives_an_equal_graph(travel_graph_path):
    first = Memory.from_file(travel_graph_path)
    exported = first.export()
    second = Memory.from_document(json.loads(json.dumps(exported)))
    assert second.export() == exported
    original = json.loads(travel_graph_path.read_text())
    assert [n["id"] for n in exported["nodes"]] == [n["id"] for n in original["nodes"]]
    assert exported["edges"] == original["edges"]


def test_export_keeps_query_answers(travel_graph_path):
    first = Memory.from_file(travel_graph_path)
    second = Memory.from_document(first.export())
    for expr in ("root.subgoals", "#trip.descendants", "nodes.where(type='fact')"):
        assert first.query(expr).ids == second.query(expr).ids


def test_bad_file_names_every_problem_and_loads_nothing(tmp_path):
    doc = {
        "format": "hgm-graph/1",
        "nodes": [
            {"id": "g", "type": "goal"},
            {"id": "x", "type": "plac"},
            {"id": "g", "type": "action"},
            {"type": "fact"},
        ],
        "edges": [
            {"from": "g", "to": "nowhere", "type": "parent_of"},
            {"from": "g", "to": "x", "type": "flies_to"},
        ],
    }
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(GraphFileError) as caught:
        Memory.from_file(path)
    found = [(p.category, p.where) for p in caught.value.problems]
    assert found == [
        ("unknown-name", "nodes[1]"),
        ("duplicate-id", "nodes[2]"),
        ("invalid-document", "nodes[3]"),
        ("missing-node", "edges[0]"),
        ("unknown-name", "edges[1]"),
    ]
    assert "did you mean 'place'" not in str(caught.value)  # no such type
    assert "first defined at nodes[0]" in str(caught.value)


def test_invalid_json_reports_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "hgm-graph/1",\n "nodes": [,]}')
    with pytest.raises(GraphFileError) as caught:
        Memory.from_file(path)
    assert caught.value.category == "invalid-json"
    assert caught.value.line == 2


def test_wrong_format_tag_is_reported():
    with pytest.raises(GraphFileError) as caught:
        Memory.from_document({"format": "other", "nodes": [], "edges": []})
    assert caught.value.problems[0].where == "format"


def test_missing_file_is_a_graph_file_error(tmp_path):
    with pytest.raises(GraphFileError) as caught:
        Memory.from_file(tmp_path / "absent.json")
    assert caught.value.category == "io"


def test_duplicate_id_is_blamed_on_the_later_node_even_when_the_first_is_invalid():
    doc = {"format": "hgm-graph/1", "nodes": [{"id": "x", "type": "gol"}, {"id": "x", "type": "goal"}], "edges": []}
    with pytest.raises(GraphFileError) as caught:
        Memory.from_document(doc)
    found = [(p.category, p.where) for p in caught.value.problems]
    assert found == [("unknown-name", "nodes[0]"), ("duplicate-id", "nodes[1]")]


def test_loading_into_a_memory_that_holds_something_is_one_more_transaction():
    memory = Memory.from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []})
    report = memory.load({"format": "hgm-graph/1", "nodes": [
        {"id": "g2", "type": "goal", "parent": "not an edge", "order": 3}], "edges": [
        {"from": "g", "to": "g2", "type": "parent_of"}]})
    assert report.committed and report.t == 2
    assert memory.node("g2") == {"id": "g2", "type": "goal", "parent": "not an edge", "order": 3}
    assert memory.query("#g.subgoals").ids == ["g2"]


def test_loading_names_every_built_in_violation_in_creation_order():
    """The whole-graph check of a load (one pass over the edges, attributes per type) finds
    what the per-node checks of a transaction find, in node creation order."""
    from hgm_engine import Memory
    from hgm_engine.errors import GraphFileError

    doc = {
        "format": "hgm-graph/1",
        "nodes": [
            {"id": "g", "type": "goal", "status": "nonsense"},
            {"id": "f", "type": "fact", "confidence": 3},
            {"id": "a1", "type": "action"},
            {"id": "a2", "type": "action"},
            {"id": "a3", "type": "action"},
            {"id": "r", "type": "result"},
            {"id": "g2", "type": "goal"},
            {"id": "e", "type": "entity"},
        ],
        "edges": [
            {"from": "g", "to": "a1", "type": "parent_of"},
            {"from": "g2", "to": "a1", "type": "parent_of"},
            {"from": "f", "to": "a3", "type": "parent_of"},
            {"from": "e", "to": "r", "type": "produces"},
            {"from": "g", "to": "g2", "type": "parent_of"},
            {"from": "g2", "to": "g", "type": "parent_of"},
        ],
    }
    with pytest.raises(GraphFileError) as info:
        Memory.from_document(doc)
    found = [(p.message.split(":")[0], p.where) for p in info.value.problems]
    assert ("parent_of_endpoints", "f") in found and ("produces_endpoints", "e") in found
    structure = [item for item in found if item[0] in ("action_has_one_parent", "action_parent_is_goal_or_action", "result_is_produced")]
    assert structure == [
        ("action_has_one_parent", "a1"),
        ("action_has_one_parent", "a2"),
        ("action_parent_is_goal_or_action", "a3"),
        ("result_is_produced", "r"),
    ]
    attributes = [item for item in found if item[0].endswith("_attributes")]
    assert attributes == [("goal_attributes", "g"), ("fact_attributes", "f")]
    assert any(item[0] == "parent_of_acyclic" for item in found)


@pytest.mark.parametrize(
    "nodes, edges",
    [
        ([{"id": ["x"], "type": "goal"}], []),
        ([{"id": "a", "type": ["goal"]}], []),
        ([{"id": "a", "type": "goal"}], [{"from": ["a"], "to": "a", "type": "related_to"}]),
        ([{"id": "a", "type": "goal"}], [{"from": "a", "to": "a", "type": {"t": 1}}]),
        ([{"id": "a", "type": "goal"}], [{"from": "a", "type": "related_to"}]),
        ([{"id": 7, "type": "goal"}], []),
        ([{"id": "", "type": "goal"}], []),
        (["not a record"], []),
    ],
)
def test_records_with_values_of_the_wrong_kind_are_named_not_crashed_on(nodes, edges):
    from hgm_engine.errors import GraphFileError
    from hgm_engine.store import graph_from_document

    with pytest.raises(GraphFileError) as info:
        graph_from_document({"format": "hgm-graph/1", "nodes": nodes, "edges": edges})
    assert info.value.problems and all(p.where for p in info.value.problems)


def test_nested_attribute_values_load_frozen_and_export_as_they_were():
    from hgm_engine.model import FrozenDict
    from hgm_engine.store import graph_from_document

    node = {
        "id": "f", "type": "fact", "content": "x", "tags": ["a", "b"], "n": 1,
        "source": {"url": "u", "pages": [1, 2], "authors": [{"name": "k"}]}, "matrix": [[1, 2], [3]],
    }
    doc = {"format": "hgm-graph/1", "nodes": [node, {"id": "e", "type": "entity"}],
           "edges": [{"from": "f", "to": "e", "type": "related_to", "weights": [0.5, 1]}]}
    graph = graph_from_document(doc)
    attrs = graph.node("f").attrs
    assert attrs["tags"] == ("a", "b") and type(attrs["source"]) is FrozenDict
    assert attrs["source"]["pages"] == (1, 2) and type(attrs["source"]["authors"][0]) is FrozenDict
    assert attrs["matrix"] == ((1, 2), (3,))
    with pytest.raises(TypeError):
        attrs["source"]["url"] = "v"
    assert graph.to_document() == doc
    assert node["tags"] == ["a", "b"] and "id" in node  # the caller's document is untouched


def test_a_loaded_graphs_edge_ends_are_its_own_id_strings_and_types_the_schemas():
    # The document holds its own copy of every id at each end of an edge; the graph keeps one
    # string per id (an adjacency's lookup into the node map then compares by identity).
    import sys

    text = json.dumps({"format": "hgm-graph/1", "nodes": [{"id": "goal-1", "type": "goal"}, {"id": "act-1", "type": "action"}],
                       "edges": [{"from": "goal-1", "to": "act-1", "type": "parent_of"}]})
    graph = Memory.from_document(json.loads(text)).graph
    keys = {key: key for key in graph.node_map()}
    (target,) = graph.out_adjacency("goal-1").by_type["parent_of"]
    (source,) = graph.in_adjacency("act-1").by_type["parent_of"]
    assert target is keys["act-1"] and source is keys["goal-1"]
    assert graph.node_map()["act-1"].type is sys.intern("action")
    assert next(iter(graph.out_adjacency("goal-1").by_type)) is sys.intern("parent_of")


@pytest.mark.parametrize("doc", [
    {"format": 10**4301, "nodes": [], "edges": []},
    {"format": "hgm-graph/1", "nodes": [{"id": "a", "type": "fact", 10**4301: 1}], "edges": []},
    {"format": [10**5000], "nodes": [], "edges": []},
])
def test_an_integer_too_long_to_print_in_a_document_is_named_in_the_error(doc):
    # str() refuses integers of more than 4,300 digits: the message must not try to print one
    with pytest.raises(GraphFileError) as caught:
        Memory.from_document(doc)
    assert "digits" in str(caught.value) or "a list" in str(caught.value)
