"""Parsing and applying ops name each op by its place, and parsing keeps an op's attributes.

Issue 15, seventh session: the places ``ops[i]`` are made once (``op_places``) instead of
formatted for each op of each commit, and an ``add_node``/``add_edge`` op's attributes are the
document less the op's own keys, copied in C. These tests pin what must not change with that:
every op of a long transaction is parsed and applied (none dropped past the shared places),
an error names the op's exact place before and past them, and the attributes are the same
keys in the same order as the document's.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hgm_engine import Memory
from hgm_engine.errors import TransactionError
from hgm_engine.txn.ops import op_places, parse_op, parse_transaction


def _adds(count: int) -> list[dict]:
    return [{"op": "add_node", "id": f"n{i}", "type": "goal"} for i in range(count)]


@pytest.mark.parametrize("count", [1, 255, 256, 257, 300])
def test_every_op_of_a_transaction_is_parsed_and_committed(count):
    assert len(parse_transaction({"ops": _adds(count)}).ops) == count
    memory = Memory()
    assert memory.apply({"ops": _adds(count)}).committed
    assert all(memory.graph.node(f"n{i}") is not None for i in range(count))


@pytest.mark.parametrize("bad", [0, 3, 255, 256, 299])
def test_a_parse_error_names_the_ops_place(bad):
    ops = _adds(300)
    ops[bad] = {"op": "add_node", "id": f"n{bad}"}  # no type
    with pytest.raises(TransactionError) as raised:
        parse_transaction({"ops": ops})
    assert raised.value.problems[0].where == f"ops[{bad}]"


@pytest.mark.parametrize("bad", [0, 3, 255, 256, 299])
def test_an_apply_error_names_the_ops_place_and_leaves_memory_as_it_was(bad):
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    ops = _adds(300)
    ops[bad] = {"op": "add_edge", "from": "g", "to": "nowhere", "type": "related_to"}
    with pytest.raises(TransactionError) as raised:
        memory.apply({"ops": ops})
    assert [(p.category, p.where) for p in raised.value.problems] == [("unknown-node", f"ops[{bad}]")]
    assert list(memory.graph.node_ids()) == ["g"] and memory.t == 1


def test_op_places_are_the_ops_indexes():
    for count in (0, 10, 256, 1000):
        places = op_places(count)
        assert len(places) >= count
        assert list(places[:count]) == [f"ops[{i}]" for i in range(count)]


_NAMES = st.sampled_from(["op", "id", "type", "parent", "order", "from", "to", "content", "status", "a", "zz", "priority"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_NAMES, unique=True), st.sampled_from(["add_node", "add_edge"]))
def test_an_ops_attributes_are_its_other_keys_in_the_documents_order(keys, name):
    doc = {key: f"v-{key}" for key in keys}
    doc.update(op=name, type="goal" if name == "add_node" else "related_to")
    if name == "add_edge":
        doc.update({"from": "a1", "to": "b1"})
    doc.pop("order", None)  # a string order is refused; its place is the op's, tested above
    op = parse_op(doc, "ops[0]")
    own = {"op", "type", "id", "parent", "order"} if name == "add_node" else {"op", "from", "to", "type"}
    expected = [(k, v) for k, v in doc.items() if k not in own]
    assert list(op.attributes.items()) == expected
    assert op.attributes is not doc


_GOOD = {
    "add_node": {"op": "add_node", "id": "n1", "type": "goal"},
    "update_node": {"op": "update_node", "id": "n1", "set": {}},
    "add_edge": {"op": "add_edge", "from": "a1", "to": "b1", "type": "related_to"},
    "delete_edge": {"op": "delete_edge", "from": "a1", "to": "b1", "type": "related_to"},
}
_FIELDS = [("add_node", "id"), ("add_node", "type"), ("update_node", "id")] + [
    (name, key) for name in ("add_edge", "delete_edge") for key in ("from", "to", "type")
]


class _Text(str):
    pass


@pytest.mark.parametrize("name,key", _FIELDS)
@pytest.mark.parametrize("value,where_suffix", [("", ""), (1, ""), (["x"], ""), ("a\ud800", ".KEY")])
def test_an_ops_id_type_and_ends_are_checked_strings(name, key, value, where_suffix):
    doc = dict(_GOOD[name], **{key: value})
    with pytest.raises(TransactionError) as raised:
        parse_op(doc, "ops[4]")
    problem = raised.value.problems[0]
    assert problem.where == "ops[4]" + where_suffix.replace("KEY", key)
    assert (key in problem.message) if not where_suffix else ("surrogate" in problem.message)


@pytest.mark.parametrize("name,key", _FIELDS)
@pytest.mark.parametrize("value", ["é-ü", _Text("plain"), "x"])
def test_an_ops_id_type_and_ends_may_be_any_valid_string(name, key, value):
    op = parse_op(dict(_GOOD[name], **{key: value}), "ops[0]")
    field = {"id": "node_id", "type": "node_type" if name == "add_node" else "edge_type", "from": "source", "to": "target"}[key]
    assert getattr(op, field) == value


@pytest.mark.parametrize("name", ["add_edge", "delete_edge"])
def test_the_first_bad_end_of_an_edge_is_the_one_named(name):
    with pytest.raises(TransactionError) as raised:
        parse_op(dict(_GOOD[name], to="", type=3), "ops[0]")
    assert "'to'" in raised.value.problems[0].message
    with pytest.raises(TransactionError) as raised:
        parse_op(dict(_GOOD[name], **{"from": 7, "to": ""}), "ops[0]")
    assert "'from'" in raised.value.problems[0].message


def test_unknown_document_keys_are_named_sorted():
    with pytest.raises(TransactionError) as raised:
        parse_transaction({"ops": [], "zeta": 1, "alpha": 2})
    assert raised.value.problems[0].message == "unknown keys ['alpha', 'zeta']"
    assert raised.value.problems[0].where == "document"


def test_an_unset_name_that_is_a_mark_or_the_id_is_refused():
    for name in ("dirty", "id"):
        with pytest.raises(TransactionError):
            parse_op({"op": "update_node", "id": "n1", "unset": [name]}, "ops[0]")


_REQUIRED = {
    "add_node": {"type": "goal"},
    "add_edge": {"from": "a1", "to": "b1", "type": "related_to"},
    "update_node": {"id": "n1"},
    "update_edge": {"from": "a1", "to": "b1", "type": "related_to"},
    "delete_node": {"id": "n1"},
    "delete_edge": {"from": "a1", "to": "b1", "type": "related_to"},
    "replace_branch": {"id": "n1", "with": []},
    "confirm": {"id": "n1"},
    "invalidate": {"id": "n1", "at": "2024-01-01"},
}


@pytest.mark.parametrize("name", sorted(_REQUIRED))
def test_an_op_without_a_required_key_is_refused_naming_every_missing_one(name):
    parse_op({"op": name, **_REQUIRED[name]}, "ops[2]")  # all there: parsed
    keys = sorted(_REQUIRED[name])
    for left_out in keys:
        doc = {"op": name, **{k: v for k, v in _REQUIRED[name].items() if k != left_out}}
        with pytest.raises(TransactionError) as raised:
            parse_op(doc, "ops[2]")
        assert (raised.value.problems[0].message, raised.value.problems[0].where) == (f"{name} needs {left_out!r}", "ops[2]")
    with pytest.raises(TransactionError) as raised:
        parse_op({"op": name}, "ops[2]")
    assert raised.value.problems[0].message == f"{name} needs {', '.join(repr(k) for k in keys)}"
