"""The durable commit path made cheaper (issue 15): what a commit writes and detects is what it
wrote and detected before — the journal record's text, the state rows, damage named by row —
only with less work per commit."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hgm_engine import Memory
from hgm_engine.errors import StoreError
from hgm_engine.model import Change, Commit, Edge, Node, freeze
from hgm_engine.store.journal import attrs_json, commit_from_row, commit_to_record, commit_to_text
from hgm_engine.store.sqlite import SQLiteStore, row_crc
from hgm_engine.txn import AddNode, TransactionReport, UpdateNode

_texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=False, allow_infinity=False), _texts)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3), max_leaves=8)
_attrs = st.dictionaries(_texts, _values, max_size=4).map(freeze)
_nodes = st.builds(Node, _texts, _texts, _attrs, st.integers(0, 10**12))
_edges = st.builds(Edge, _texts, _texts, _texts, _attrs, st.integers(0, 10**12))


@st.composite
def _changes(draw) -> Change:
    kind = draw(st.sampled_from(["node_added", "node_updated", "node_removed", "edge_added", "edge_updated", "edge_removed"]))
    payloads = _nodes if kind.startswith("node") else _edges
    before = None if kind.endswith("added") else draw(payloads)
    after = None if kind.endswith("removed") else draw(payloads)
    return Change(kind, before, after)


_commits = st.builds(
    Commit,
    st.integers(1, 10**9),
    st.none() | _texts,
    st.none() | _texts,
    st.none() | st.integers(0, 10**9),
    st.floats(0, 4e9, allow_nan=False),
    st.lists(_changes(), max_size=6).map(tuple),
    st.lists(_texts, max_size=2).map(tuple),
    st.lists(st.dictionaries(_texts, _values, max_size=2).map(freeze), max_size=2).map(tuple),
    st.booleans(),
    st.sampled_from(["transaction", "load", "revert", "purge"]),
    st.lists(_texts, max_size=2).map(tuple),
)


@settings(max_examples=60, deadline=None)
@given(_commits)
def test_the_journal_text_is_the_record_encoded_as_before(commit):
    before = json.dumps(commit_to_record(commit), ensure_ascii=False, separators=(",", ":"))
    assert commit_to_text(commit) == before
    shared = [None if c.after is None else attrs_json(c.after.attrs) for c in commit.changes]
    assert commit_to_text(commit, shared) == before


@settings(max_examples=30, deadline=None)
@given(_commits.filter(lambda c: not c.genesis))
def test_the_journal_text_reads_back_as_the_commit(commit):
    damaged = lambda what: StoreError([])  # noqa: E731
    assert commit_from_row(commit.t, commit_to_text(commit), damaged) == commit


def _memory(path) -> Memory:
    return Memory(store=SQLiteStore(path, image_min_nodes=0))


def _seeded(path) -> None:
    with _memory(path) as memory:
        memory.apply({"ops": [
            {"op": "add_node", "id": "g", "type": "goal", "content": "trip"},
            {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"},
            {"op": "add_node", "id": "f", "type": "fact", "content": "héllo"},
            {"op": "add_edge", "from": "a", "to": "f", "type": "produces"},
        ]})


def test_the_state_rows_of_a_commit_are_the_payloads_and_their_checksums(tmp_path):
    path = tmp_path / "m.db"
    _seeded(path)
    with _memory(path) as memory:
        memory.apply({"ops": [
            {"op": "update_node", "id": "a", "set": {"status": "done"}},
            {"op": "delete_edge", "from": "a", "to": "f", "type": "produces"},
            {"op": "add_node", "id": "b", "type": "action", "parent": "g", "order": 2, "status": "pending"},
        ]})
        graph = memory.graph
        nodes = {(n.id, n.type, attrs_json(n.attrs), n.seq) for n in graph.nodes()}
        edges = {(e.source, e.target, e.type, attrs_json(e.attrs), e.seq) for e in graph.edges()}
    db = sqlite3.connect(path)
    stored_nodes = db.execute("SELECT id, type, attrs, seq, crc FROM nodes").fetchall()
    stored_edges = db.execute("SELECT source, target, type, attrs, seq, crc FROM edges").fetchall()
    db.close()
    assert {row[:-1] for row in stored_nodes} == nodes
    assert {row[:-1] for row in stored_edges} == edges
    assert all(row[-1] == row_crc(*row[:-1]) for row in stored_nodes + stored_edges)


@pytest.mark.parametrize(
    "hand_edit, ops, named",
    [
        ("DELETE FROM nodes WHERE id = 'a'", [{"op": "update_node", "id": "a", "set": {"status": "done"}}], "node 'a' is not in the state tables"),
        (
            "DELETE FROM edges WHERE source = 'a'",
            [{"op": "delete_edge", "from": "a", "to": "f", "type": "produces"}],
            "edge a -produces-> f is not in the state tables",
        ),
        (
            "INSERT INTO nodes (id, type, attrs, seq) VALUES ('n2', 'fact', '{}', 99)",
            [{"op": "add_node", "id": "n1", "type": "fact"}, {"op": "add_node", "id": "n2", "type": "fact"}, {"op": "add_node", "id": "n3", "type": "fact"}],
            "node 'n2' is already in the state tables",
        ),
        (
            "INSERT INTO edges (source, target, type, attrs, seq) VALUES ('g', 'f', 'related_to', '{}', 99)",
            [{"op": "add_edge", "from": "a", "to": "f", "type": "related_to"}, {"op": "add_edge", "from": "g", "to": "f", "type": "related_to"}],
            "edge g -related_to-> f is already in the state tables",
        ),
    ],
)
def test_a_state_row_that_disagrees_with_the_journal_fails_the_commit_naming_it(tmp_path, hand_edit, ops, named):
    path = tmp_path / "m.db"
    _seeded(path)
    with _memory(path) as memory:
        db = sqlite3.connect(path)
        db.execute(hand_edit)
        db.commit()
        db.close()
        t = memory.t
        with pytest.raises(StoreError, match=named):
            memory.apply({"ops": ops})
        assert memory.t == t
    db = sqlite3.connect(path)
    assert db.execute("SELECT MAX(t) FROM journal").fetchone()[0] == t  # nothing of the commit was written
    assert db.execute("SELECT COUNT(*) FROM nodes WHERE id IN ('n1', 'n3')").fetchone()[0] == 0
    db.close()


def test_the_node_index_t_a_store_remembers_gives_way_to_another_connections_write(tmp_path):
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    with store.write():
        store.write_node_index(5, [("g", '{"trip":1}')])
    with store.write():
        assert store.node_index_t() == 5
    other = sqlite3.connect(path)
    other.execute("UPDATE node_index SET t = 7, crc = ? WHERE name = 't'", (row_crc("t", 7),))
    other.commit()
    other.close()
    with store.write():
        assert store.node_index_t() == 7
    with pytest.raises(RuntimeError), store.write():
        store.write_node_index(9, [])
        raise RuntimeError("rolled back")
    with store.write():
        assert store.node_index_t() == 7  # what was rolled back is not remembered
    store.close()


# -- the constraints check what the changes can break (fourth session) --------------------------

def _planned() -> Memory:
    memory = Memory()
    memory.apply({"ops": [
        {"op": "add_node", "id": "g", "type": "goal", "content": "Trip"},
        {"op": "add_node", "id": "h", "type": "goal", "content": "Other"},
        {"op": "add_node", "id": "a", "type": "action", "parent": "g", "status": "pending"},
        {"op": "add_node", "id": "b", "type": "action", "parent": "a", "status": "pending"},
        {"op": "add_node", "id": "r", "type": "result", "content": "Booked"},
        {"op": "add_edge", "from": "a", "to": "r", "type": "produces"},
        {"op": "add_node", "id": "e", "type": "entity", "name": "Hotel"},
    ]})
    return memory


@pytest.mark.parametrize(
    "ops, expected",
    [
        ([{"op": "add_node", "id": "c", "type": "action"}], {("action_has_one_parent", "c")}),
        ([{"op": "add_node", "id": "c", "type": "action", "parent": "g"}, {"op": "add_edge", "from": "h", "to": "c", "type": "parent_of"}],
         {("action_has_one_parent", "c")}),
        ([{"op": "add_node", "id": "c", "type": "action", "parent": "r"}],
         {("action_parent_is_goal_or_action", "c"), ("parent_of_endpoints", "r")}),
        ([{"op": "add_edge", "from": "h", "to": "a", "type": "parent_of"}], {("action_has_one_parent", "a")}),
        ([{"op": "update_node", "id": "b", "set": {"status": "active"}},
          {"op": "add_edge", "from": "h", "to": "b", "type": "parent_of"}], {("action_has_one_parent", "b")}),
        ([{"op": "delete_edge", "from": "g", "to": "a", "type": "parent_of"}], {("action_has_one_parent", "a")}),
        ([{"op": "delete_edge", "from": "a", "to": "r", "type": "produces"}], {("result_is_produced", "r")}),
        ([{"op": "add_node", "id": "r2", "type": "result"}, {"op": "add_edge", "from": "e", "to": "r2", "type": "produces"}],
         {("produces_endpoints", "e"), ("result_is_produced", "r2")}),
        ([{"op": "delete_node", "id": "a", "cascade": False}],
         {("action_has_one_parent", "b"), ("delete_leaves_orphans", "a"), ("result_is_produced", "r")}),
        # a made again as an entity: b's parent is not a goal or an action
        ([{"op": "delete_node", "id": "a", "cascade": True}, {"op": "add_node", "id": "a", "type": "entity"},
          {"op": "add_node", "id": "b", "type": "action"}, {"op": "add_edge", "from": "a", "to": "b", "type": "parent_of"}],
         {("action_parent_is_goal_or_action", "b"), ("parent_of_endpoints", "a"), ("result_is_produced", "r")}),
    ],
)
def test_a_change_that_breaks_a_structure_rule_is_still_refused_and_changes_nothing(ops, expected):
    """The structure rules are checked only on nodes added or whose incoming edges changed."""
    memory = _planned()
    before, t = memory.export(), memory.t
    report = memory.apply({"ops": ops})
    # every violation, as the check of every touched node found them (pinned from before)
    assert {(v.constraint, v.node) for v in report.violations} == expected
    assert not report.committed
    assert memory.export() == before and memory.t == t


def test_new_actions_and_results_in_their_places_commit():
    memory = _planned()
    report = memory.apply({"ops": [
        {"op": "add_node", "id": "k", "type": "goal", "parent": "g"},
        {"op": "add_node", "id": "c", "type": "action", "parent": "k"},
        {"op": "add_node", "id": "d", "type": "action", "parent": "c"},
        {"op": "add_node", "id": "r2", "type": "result"}, {"op": "add_edge", "from": "d", "to": "r2", "type": "produces"},
    ]})
    assert report.committed and report.violations == ()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("xyzmnp"), st.sampled_from("xyzmnp")), max_size=7), st.integers(0, 3))
@example([("m", "n"), ("n", "m")], 2)  # a ring of new nodes
@example([("x", "m"), ("m", "n"), ("n", "p")], 3)  # a new chain under an old node: no cycle
@example([("z", "m"), ("m", "n"), ("n", "y")], 2)  # a new chain back to an old node
def test_the_edges_a_commit_refuses_as_cycles_are_those_on_a_cycle_of_the_final_state(pairs, made):
    # x, y, z exist (y -> z); m, n, p are made by the commit (the first ``made`` of them, as
    # actions under g; the others are left out with their edges): every new ``before`` edge
    # whose target reaches its source in the final state is refused, and no other
    memory = _actions()
    new = ["m", "n", "p"][:made]
    names = {"x", "y", "z", *new}
    edges = list(dict.fromkeys((s, t) for s, t in pairs if s in names and t in names and (s, t) != ("y", "z")))
    final = {("y", "z"), *edges}

    def reaches(start, goal):
        seen, level = {start}, [start]
        while level:
            level = [t for s in level for (a, t) in final if a == s and t not in seen and not seen.add(t)]
        return goal in seen

    expected = {("before_acyclic", s) for s, t in edges if reaches(t, s)}
    report = memory.apply({"ops": [
        *({"op": "add_node", "id": name, "type": "action", "parent": "g"} for name in new),
        *({"op": "add_edge", "from": s, "to": t, "type": "before"} for s, t in edges),
    ], "dry_run": True})
    assert {(v.constraint, v.node) for v in report.violations if v.constraint.endswith("_acyclic")} == expected


def test_an_update_of_every_node_passes_the_structure_rules():
    memory = _planned()
    ops = [{"op": "update_node", "id": node_id, "set": {"note": "seen"}} for node_id in ("g", "h", "a", "b", "r", "e")]
    report = memory.apply({"ops": ops})
    assert report.committed and report.violations == ()


# -- attribute values: the usual ones pass at once, every other one is looked at closer ----------

_any_text = st.text(st.characters(), max_size=6)  # lone surrogates included
_any_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([4299, 4300, -4300]).map(lambda n: 10**n if n > 0 else -(10**-n)), st.sampled_from([2**63, -2**63, 2**63 - 1]),
    st.floats(), st.sampled_from([float("nan"), float("inf"), -float("inf")]), _any_text,
)
_any_value = st.recursive(
    _any_scalar | st.text("abc", max_size=3), lambda inner: st.lists(inner, max_size=2) | st.dictionaries(_any_text, inner, max_size=2), max_leaves=5
)
_attribute_names = (st.text("abcdef_", min_size=1, max_size=4) | _any_text | st.integers(0, 3)).filter(lambda k: k not in ("id", "type", "dirty", "dirty_marks", "valid_from", "valid_to"))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_attribute_names, _any_value, max_size=4))
@example({"a": float("nan")})
@example({"a": "ok", "b": float("-inf")})
@example({"a": 10**4300})
@example({"a": -(2**63)})
@example({"a": "\ud800"})
@example({"\ud800": 1})
@example({1: "a"})
@example({"a": [float("nan")]})
@example({"a": {"b": "\udfff"}})
@example({"a": "é", "b": 1.5, "c": None, "d": True})
def test_an_attribute_value_is_refused_exactly_when_value_problem_finds_a_problem(attributes):
    from hgm_engine.errors import TransactionError
    from hgm_engine.model import text_problem, value_problem

    expected = None
    for key, value in attributes.items():
        if not isinstance(key, str):
            expected = ("invalid-value", f"attribute names are strings, not {key!r}", "ops[1].set")
            break
        problem = text_problem(key, "ops[1].set", "an attribute name") or value_problem(value, f"ops[1].set.{key}")
        if problem is not None:
            expected = (problem.category, problem.message, problem.where)
            break
    memory = Memory()
    try:
        memory.apply({"ops": [{"op": "add_node", "id": "n", "type": "fact"}, {"op": "update_node", "id": "n", "set": attributes}]})
        refused = None
    except TransactionError as err:
        refused = (err.problems[0].category, err.problems[0].message, err.problems[0].where)
    assert refused == expected
    if refused is not None:
        assert memory.t == 0 and memory.node("n") is None


# -- the root goals after commits: decided when asked, the same as computed from scratch ------------


def test_the_root_goals_after_each_commit_are_those_of_the_same_memory_built_afresh():
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "h", "type": "goal"},
                          {"op": "add_node", "id": "a", "type": "action", "parent": "g"}]})
    assert memory.graph.roots() == ("g", "h")  # known from here on: commits keep them
    steps = [
        [{"op": "add_node", "id": "k", "type": "goal"}],                                      # a new root
        [{"op": "add_edge", "from": "h", "to": "k", "type": "parent_of"}],                    # no longer one
        [{"op": "add_node", "id": "m", "type": "goal", "parent": "k"},                        # added with its parent
         {"op": "add_node", "id": "n", "type": "goal"}],
        [{"op": "delete_edge", "from": "h", "to": "k", "type": "parent_of"}],                 # a root again
        [{"op": "delete_node", "id": "g", "cascade": True}],                                  # a root gone
        [{"op": "add_node", "id": "g", "type": "goal", "parent": "n"}],                       # made again, under n
        [{"op": "delete_edge", "from": "n", "to": "g", "type": "parent_of"}],                 # g a root again
        [{"op": "update_node", "id": "k", "set": {"content": "renamed"}}],
    ]
    for ops in steps:
        assert memory.apply({"ops": ops}).committed
        afresh = Memory.from_document(memory.export())
        assert memory.graph.roots() == afresh.graph.roots()
        assert memory.query("root").value == list(afresh.graph.roots())


# -- the shape checks of ops: the same refusals, with the same place, made with less work ----------


@pytest.mark.parametrize(
    "ops, category, where",
    [
        ([{"op": "add_node", "id": "g", "type": "goal"}], "duplicate-id", "ops[0]"),
        ([{"op": "add_node", "id": "n", "type": "goal"}, {"op": "add_node", "id": "n", "type": "goal"}], "duplicate-id", "ops[1]"),
        ([{"op": "add_edge", "from": "g", "to": "a", "type": "parent_of"}], "duplicate-edge", "ops[0]"),
        ([{"op": "add_node", "id": "n", "type": "action", "parent": "g"}, {"op": "add_edge", "from": "g", "to": "n", "type": "parent_of"}],
         "duplicate-edge", "ops[1]"),
        ([{"op": "add_edge", "from": "g", "to": "nowhere", "type": "related_to"}], "unknown-node", "ops[0]"),
        ([{"op": "add_node", "id": "n", "type": "action", "parent": "nowhere"}], "unknown-node", "ops[0]"),
    ],
)
def test_the_ops_refuse_taken_ids_and_edges_and_missing_ends_themselves(ops, category, where):
    # the overlay does not look them up again after the ops did (add_node/add_edge checked=True)
    from hgm_engine.errors import TransactionError

    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "a", "type": "action", "parent": "g"}]})
    before = memory.export()
    with pytest.raises(TransactionError) as caught:
        memory.apply({"ops": ops})
    assert (caught.value.problems[0].category, caught.value.problems[0].where) == (category, where)
    assert memory.export() == before and memory.t == 1


def test_a_node_deleted_and_made_again_in_one_commit_gets_its_new_parent_edge():
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "a", "type": "action", "parent": "g", "order": 1}]})
    report = memory.apply({"ops": [{"op": "delete_node", "id": "a"}, {"op": "add_node", "id": "a", "type": "action", "parent": "g", "order": 2}]})
    assert report.committed
    assert [c.kind for c in report.changes] == ["edge_removed", "node_removed", "node_added", "edge_added"]
    assert memory.graph.edge("g", "a", "parent_of").attrs == {"order": 2}
    assert Memory.from_document(memory.export()).export() == memory.export()


@pytest.mark.parametrize(
    "op, category, message, where",
    [
        ({"op": "add_node", "id": "a\x00b", "type": "goal"}, "invalid-value",
         "an id may not hold the character NUL (PostgreSQL cannot store it)", "ops[0].id"),
        ({"op": "add_node", "id": "a\ud800", "type": "goal"}, "invalid-value",
         "a string may not hold a lone surrogate ('\\ud800' at character 2): it is not a Unicode character", "ops[0].id"),
        ({"op": "add_edge", "from": "g", "to": "x\udfff", "type": "parent_of"}, "invalid-value",
         "a string may not hold a lone surrogate ('\\udfff' at character 2): it is not a Unicode character", "ops[0].to"),
        ({"op": "add_node", "id": "n"}, "invalid-transaction", "add_node needs 'type'", "ops[0]"),
        ({"op": "update_node", "id": "g", "set": {}, "colour": "red"}, "invalid-transaction", "update_node does not take 'colour'", "ops[0]"),
        ({"op": "delete_edge", "from": "g", "to": "h"}, "invalid-transaction", "delete_edge needs 'type'", "ops[0]"),
        ({"op": "add_node", "id": "f", "type": "fact", "valid_from": "2026-06-01", "valid_to": "2026-01-01"}, "invalid-value",
         "valid_to '2026-01-01' is before valid_from '2026-06-01'", "ops[0].valid_to"),
        ({"op": "update_node", "id": "g", "set": {"valid_from": "soon"}}, "invalid-value",
         "valid_from 'soon' is not an ISO 8601 date or date-time (e.g. '2026-03-01' or '2026-03-01T09:30:00Z')", "ops[0].set.valid_from"),
    ],
)
def test_a_malformed_op_is_refused_naming_what_and_where_and_nothing_changes(op, category, message, where):
    from hgm_engine.errors import TransactionError

    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    before = memory.export()
    with pytest.raises(TransactionError) as caught:
        memory.apply({"ops": [op]})
    problem = caught.value.problems[0]
    assert (problem.category, problem.message, problem.where) == (category, message, where)
    assert memory.export() == before and memory.t == 1


# -- an overlay's adjacency: each change touches the directions it changes, and only those ------

_overlay_ids = st.sampled_from(["a", "b", "c", "d", "e"])
_overlay_steps = st.lists(
    st.tuples(st.sampled_from(["add_node", "remove_node", "add_edge", "remove_edge", "set_edge"]), _overlay_ids, _overlay_ids,
              st.sampled_from(["parent_of", "before", "related_to"])),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(_overlay_steps)
def test_an_overlays_adjacency_is_that_of_its_state_built_afresh(steps):
    from hgm_engine.model import GraphOverlay, MemoryGraph

    base = MemoryGraph()
    for node_id in "abc":
        base.add_node(node_id, "goal", {})
    base.add_edge("a", "b", "parent_of", {})
    base.add_edge("b", "c", "before", {"order": 2})
    base.add_edge("c", "a", "related_to", {})
    ids = "abcde"
    for node_id in ids:  # the base's adjacencies known first, as a commit finds them
        base.out_adjacency(node_id), base.in_adjacency(node_id)
    overlay = GraphOverlay(base)
    for kind, one, other, edge_type in steps:
        if kind == "add_node" and one not in overlay:
            overlay.add_node(one, "goal", {})
        elif kind == "remove_node" and one in overlay:
            overlay.remove_node(one)
        elif kind == "add_edge" and one in overlay and other in overlay and overlay.edge(one, other, edge_type) is None:
            overlay.add_edge(one, other, edge_type, {"order": len(steps)})
        elif kind == "remove_edge" and overlay.edge(one, other, edge_type) is not None:
            overlay.remove_edge(one, other, edge_type)
        elif kind == "set_edge" and overlay.edge(one, other, edge_type) is not None:
            overlay.set_edge_attrs(one, other, edge_type, {"order": -1})
        for node_id in ids:  # read between changes too: a stale cached adjacency would show
            overlay.out_adjacency(node_id), overlay.in_adjacency(node_id)
    afresh = MemoryGraph.from_payloads(list(overlay.nodes()), list(overlay.iter_edges()))
    for node_id in ids:
        assert overlay.out_adjacency(node_id).pairs == afresh.out_adjacency(node_id).pairs
        assert overlay.in_adjacency(node_id).pairs == afresh.in_adjacency(node_id).pairs
        assert sorted(e.key for e in overlay.out_edges(node_id)) == sorted(e.key for e in afresh.out_edges(node_id)) if node_id in overlay else True
    # membership and edge lookups (GraphOverlay.__contains__ reads the overlay's own entries first)
    assert [node_id in overlay for node_id in ids] == [afresh.node(node_id) is not None for node_id in ids]
    keys = [(one, other, edge_type) for one in ids for other in ids for edge_type in ("parent_of", "before", "related_to")]
    assert [overlay.edge(*key) for key in keys] == [afresh.edge(*key) if afresh.node(key[0]) and afresh.node(key[1]) else None for key in keys]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add_node", "remove_node", "add_edge", "remove_edge", "set_edge", "set_node"]), _overlay_ids,
                          _overlay_ids, st.sampled_from(["parent_of", "before", "related_to"]), st.sampled_from(["done", "pending"])),
                max_size=25))
def test_a_commit_applied_at_once_leaves_the_graph_its_changes_one_by_one_leave(steps):
    # MemoryGraph.apply_changes (a commit onto the state) against the graph's own methods
    # change by change: the same nodes in the same order, types, adjacency, edges, roots, value
    # indexes (built before), creation numbers
    from hgm_engine.model import GraphOverlay, MemoryGraph

    def base():
        graph = MemoryGraph()
        for node_id, node_type in (("a", "goal"), ("b", "action"), ("c", "action")):
            graph.add_node(node_id, node_type, {"status": "pending"})
        graph.add_edge("a", "b", "parent_of", {})
        graph.add_edge("b", "c", "before", {"order": 2})
        for node_type in ("goal", "action"):
            graph.nodes_with(node_type, "status", "pending")
        graph.roots()
        return graph

    at_once, one_by_one = base(), base()
    overlay = GraphOverlay(at_once)
    for kind, one, other, edge_type, status in steps:
        if kind == "add_node" and one not in overlay:
            overlay.add_node(one, "goal" if other < "c" else "action", {"status": status})
        elif kind == "remove_node" and one in overlay:
            overlay.remove_node(one)
        elif kind == "set_node" and one in overlay:
            overlay.set_node_attrs(one, {"status": status, "n": len(steps)})
        elif kind == "add_edge" and one in overlay and other in overlay and overlay.edge(one, other, edge_type) is None:
            overlay.add_edge(one, other, edge_type, {"order": len(steps)})
        elif kind == "remove_edge" and overlay.edge(one, other, edge_type) is not None:
            overlay.remove_edge(one, other, edge_type)
        elif kind == "set_edge" and overlay.edge(one, other, edge_type) is not None:
            overlay.set_edge_attrs(one, other, edge_type, {"order": -1})
    changes = overlay.changes()
    at_once.apply_changes(changes)
    for change in changes:
        payload = change.after if change.after is not None else change.before
        if change.kind == "edge_removed":
            one_by_one.remove_edge(*payload.key)
        elif change.kind == "node_removed":
            one_by_one.remove_node(payload.id)
        elif change.kind == "node_added":
            one_by_one.restore_node(payload)
        elif change.kind == "node_updated":
            one_by_one.put_node(payload)
        elif change.kind == "edge_added":
            one_by_one.restore_edge(payload)
        else:
            one_by_one.set_edge_attrs(*payload.key, payload.attrs)
    for graph in (at_once, one_by_one):
        assert graph.version > 0
    assert list(at_once.node_map().items()) == list(one_by_one.node_map().items())
    assert at_once.version == one_by_one.version
    assert (at_once.last_node_seq, at_once.last_edge_seq) == (one_by_one.last_node_seq, one_by_one.last_edge_seq)
    assert sorted(e.key for e in at_once.iter_edges()) == sorted(e.key for e in one_by_one.iter_edges())
    assert at_once.roots() == one_by_one.roots()
    for node_id in "abcde":
        assert at_once.out_adjacency(node_id).pairs == one_by_one.out_adjacency(node_id).pairs
        assert at_once.in_adjacency(node_id).pairs == one_by_one.in_adjacency(node_id).pairs
    for node_type in ("goal", "action"):
        assert list(at_once.ids_of_type(node_type)) == list(one_by_one.ids_of_type(node_type))
        for status in ("done", "pending"):
            expected = [n.id for n in one_by_one.nodes_of_type(node_type) if n.attrs.get("status") == status]
            assert [n.id for n in at_once.nodes_with(node_type, "status", status)] == expected
            assert [n.id for n in one_by_one.nodes_with(node_type, "status", status)] == expected


# -- cycles: an edge into a node the commit made is walked from only when that node leads on --------


def _actions() -> Memory:
    memory = Memory()
    memory.apply({"ops": [
        {"op": "add_node", "id": "g", "type": "goal"},
        *({"op": "add_node", "id": name, "type": "action", "parent": "g"} for name in ("x", "y", "z")),
        {"op": "add_edge", "from": "y", "to": "z", "type": "before"},
    ]})
    return memory


@pytest.mark.parametrize(
    "ops, expected",
    [
        # new n between x and x
        ([{"op": "add_node", "id": "n", "type": "action", "parent": "g"},
          {"op": "add_edge", "from": "x", "to": "n", "type": "before"}, {"op": "add_edge", "from": "n", "to": "x", "type": "before"}],
         {("before_acyclic", "x"), ("before_acyclic", "n")}),
        # new n leads on to z, which leads back to n through the existing y -> z? no: z -> n -> y -> z
        ([{"op": "add_node", "id": "n", "type": "action", "parent": "g"},
          {"op": "add_edge", "from": "z", "to": "n", "type": "before"}, {"op": "add_edge", "from": "n", "to": "y", "type": "before"}],
         {("before_acyclic", "z"), ("before_acyclic", "n")}),
        # two new nodes in a ring
        ([{"op": "add_node", "id": "n", "type": "action", "parent": "g"}, {"op": "add_node", "id": "m", "type": "action", "parent": "g"},
          {"op": "add_edge", "from": "n", "to": "m", "type": "before"}, {"op": "add_edge", "from": "m", "to": "n", "type": "before"}],
         {("before_acyclic", "n"), ("before_acyclic", "m")}),
        # a self-loop on a new node
        ([{"op": "add_node", "id": "n", "type": "action", "parent": "g"}, {"op": "add_edge", "from": "n", "to": "n", "type": "before"}],
         {("before_acyclic", "n")}),
        # a new goal above g's parent chain, made its own child's parent: g -> k -> g
        ([{"op": "add_node", "id": "k", "type": "goal", "parent": "g"}, {"op": "add_edge", "from": "k", "to": "g", "type": "parent_of"}],
         {("parent_of_acyclic", "g"), ("parent_of_acyclic", "k")}),
    ],
)
def test_a_cycle_through_a_node_the_commit_made_is_refused_and_changes_nothing(ops, expected):
    memory = _actions()
    before, t = memory.export(), memory.t
    report = memory.apply({"ops": ops})
    assert not report.committed
    assert {(v.constraint, v.node) for v in report.violations if v.constraint.endswith("_acyclic")} == expected
    assert memory.export() == before and memory.t == t


def test_new_leaves_under_new_and_old_nodes_close_no_cycle():
    memory = _actions()
    report = memory.apply({"ops": [
        {"op": "add_node", "id": "k", "type": "goal", "parent": "g"},
        *({"op": "add_node", "id": name, "type": "action", "parent": "k"} for name in ("p", "q")),
        {"op": "add_edge", "from": "p", "to": "q", "type": "before"}, {"op": "add_edge", "from": "z", "to": "p", "type": "before"},
    ]})
    assert report.committed and report.violations == ()


def test_value_indexes_built_between_commits_follow_every_commit_after():
    # A commit updates the value indexes of the changed nodes' type only (kept by type, looked
    # up again when a reader built another index since): every index answers as a scan does
    memory = Memory()
    memory.apply({"ops": [
        {"op": "add_node", "id": "g", "type": "goal", "status": "active"},
        *({"op": "add_node", "id": f"a{i}", "type": "action", "parent": "g", "status": "pending", "slot": "am"} for i in range(4)),
        {"op": "add_node", "id": "f", "type": "fact", "kind": "note"},
    ]})
    graph = memory.graph
    probes = [("action", "status", "pending"), ("action", "status", "done"), ("action", "slot", "am"),
              ("action", "slot", "pm"), ("goal", "status", "active"), ("goal", "status", "done"), ("fact", "kind", "note")]

    def check():
        for node_type, attribute, value in probes:
            scan = [n.id for n in graph.nodes_of_type(node_type) if n.attrs.get(attribute) == value]
            assert [n.id for n in graph.nodes_with(node_type, attribute, value)] == scan, (node_type, attribute, value)

    graph.nodes_with("action", "status", "pending")  # the first index, before any commit
    memory.apply({"ops": [{"op": "update_node", "id": "a1", "set": {"status": "done", "slot": "pm"}}]})
    graph.nodes_with("action", "slot", "am")  # another index of the same type, built between commits
    memory.apply({"ops": [{"op": "update_node", "id": "a2", "set": {"slot": "pm"}}, {"op": "delete_node", "id": "a3"}]})
    graph.nodes_with("goal", "status", "active")  # and one of another type
    memory.apply({"ops": [
        {"op": "update_node", "id": "g", "set": {"status": "done"}},
        {"op": "add_node", "id": "a9", "type": "action", "parent": "g", "status": "done", "slot": "pm"},
        {"op": "update_node", "id": "f", "set": {"kind": "other"}},
    ]})
    check()


def test_every_row_a_commit_writes_carries_the_checksum_row_crc_gives(tmp_path):
    path = tmp_path / "m.db"
    with Memory.open(path) as memory:
        memory.apply({"ops": [
            {"op": "add_node", "id": "é-goal", "type": "goal", "content": "Reise nach Köln"},
            {"op": "add_node", "id": "a", "type": "action", "parent": "é-goal", "order": 1},
            {"op": "add_node", "id": "f", "type": "fact", "content": "東京"},
            {"op": "add_edge", "from": "f", "to": "a", "type": "related_to", "note": "ß"},
        ]})
        memory.apply({"ops": [
            {"op": "update_edge", "from": "é-goal", "to": "a", "type": "parent_of", "set": {"order": 7}},
            {"op": "update_node", "id": "f", "set": {"content": "大阪"}},
            {"op": "delete_edge", "from": "f", "to": "a", "type": "related_to"},
        ]})
    db = sqlite3.connect(path)
    rows = db.execute("SELECT id, type, attrs, seq, crc FROM nodes").fetchall() + db.execute(
        "SELECT source, target, type, attrs, seq, crc FROM edges").fetchall()
    db.close()
    assert len(rows) == 4 and all(row[-1] == row_crc(*row[:-1]) for row in rows)
    assert ("é-goal", "a", "parent_of", '{"order":7}', 1) in {row[:-1] for row in rows}


@pytest.mark.parametrize(
    "before, after, updated",
    [
        ({"status": "pending"}, {"status": "done"}, True),
        ({"flag": True}, {"flag": 1}, True),          # equal in Python, not the same JSON value
        ({"n": 2}, {"n": 2.0}, True),
        ({"items": ["a", 1]}, {"items": ["a", True]}, True),
        ({"status": "done", "n": 1}, {"n": 1, "status": "done"}, False),
        ({"items": ["a"], "x": None}, {"items": ["a"], "x": None}, False),
    ],
)
def test_an_update_is_a_change_exactly_when_the_json_value_differs(before, after, updated):
    memory = Memory()
    assert memory.apply({"ops": [{"op": "add_node", "id": "f", "type": "entity", **before}]}).committed
    report = memory.apply({"ops": [{"op": "update_node", "id": "f", "set": after}]})
    assert report.committed
    assert [c.kind for c in report.changes] == (["node_updated"] if updated else [])
    assert json.dumps(memory.graph.node("f").attrs, sort_keys=True) == json.dumps(after, sort_keys=True)


def test_the_node_index_rows_a_commit_writes_carry_row_crcs_checksum(tmp_path):
    path = tmp_path / "m.db"
    with Memory.open(path) as memory:
        memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal", "content": "Trip to Köln"}]})
        memory.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact", "content": "The hotel is closed"},
                              {"op": "add_node", "id": "é", "type": "fact", "content": "東京 hotel"}]})
        memory.apply({"ops": [{"op": "delete_node", "id": "f"}]})
    db = sqlite3.connect(path)
    rows = db.execute("SELECT id, terms, crc FROM node_index_changes").fetchall()
    db.close()
    assert {row[0] for row in rows} >= {"f", "é"} and any(row[1] is None for row in rows)
    assert all(crc == row_crc(node_id, terms) for node_id, terms, crc in rows)
    with Memory.open(path) as again:
        assert [hit["id"] for hit in again.search("hotel")] == ["é"] and again.search_status()["source"] == "stored"


# -- payloads: plain slot reads; a payload read from a store decodes into a plain one -------------


def test_the_payload_classes_have_no_attribute_hook():
    # A class with __getattr__ sends every attribute read through it and Python does not
    # specialise those reads: node.id, edge.source cost 4x on every commit and query.
    for cls in (Node, Edge):
        assert not hasattr(cls, "__getattr__"), cls


@pytest.mark.parametrize(
    "cls, values",
    [
        (Node, ("g", "goal", freeze({"status": "done"}), 7)),
        (Edge, ("g", "a", "parent_of", freeze({"order": 1}), 8)),
        (Change, ("node_added", None, Node("g", "goal", freeze({}), 1))),
        (Commit, (3, "me", "why", 2, 1.5, (), ("rule",), (freeze({"id": "g"}),), True, "load", ("x",))),
        (TransactionReport, (True, 3, 2, "me", "why", (), ("rule",), (), (), True, freeze({"code": 1}), ("g",), ())),
        (AddNode, ("g", "goal", freeze({"status": "done"}), "p", 2)),
        (UpdateNode, ("g", freeze({"status": "done"}), ("note",))),
    ],
)
def test_payloads_changes_commits_and_ops_made_by_their_constructor_are_the_frozen_values_attrs_describes(cls, values):
    # Node, Edge, Change, Commit, the report and the two commonest ops set their slots
    # themselves (not attrs' __init__): every field by position and by name, the defaults attrs
    # declares for those left out, equal and hashed by them, printed by them, still frozen
    import attrs
    import pickle

    fields = [field for field in attrs.fields(cls) if field.init]
    names = [field.name for field in fields]
    made, named = cls(*values), cls(**dict(zip(names, values)))
    assert [getattr(made, name) for name in names] == list(values) and made == named and hash(made) == hash(named)
    assert repr(made) == f"{cls.__name__}({', '.join(f'{n}={v!r}' for n, v in zip(names, values))})"
    assert attrs.evolve(made) == made and pickle.loads(pickle.dumps(made)) == made
    required = [field for field in fields if field.default is attrs.NOTHING]
    bare = cls(*values[: len(required)])
    assert [getattr(bare, field.name) for field in fields[len(required):]] == [field.default for field in fields[len(required):]]
    if cls in (Node, Edge):
        assert made._raw is None and made.attrs_text() == attrs_json(values[-2])
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(made, names[0], "other")
    with pytest.raises(TypeError):
        cls(*values[: len(required) - 1])


def _packed(text: str | bytes, kind: str = "node"):
    from hgm_engine.model import lazy_edges, lazy_nodes

    if kind == "node":
        return lazy_nodes(["g"], ["goal"], [text], [1])[0]
    return lazy_edges(["g"], ["a"], ["parent_of"], [text], [1])[0]


@pytest.mark.parametrize("kind", ["node", "edge"])
def test_a_payload_kept_packed_becomes_the_plain_payload_when_its_attributes_are_read(kind):
    plain_class = Node if kind == "node" else Edge
    plain = Node("g", "goal", freeze({"status": "done"}), 1) if kind == "node" else Edge("g", "a", "parent_of", freeze({"status": "done"}), 1)
    payload = _packed('{"status":"done"}', kind)
    assert isinstance(payload, plain_class) and payload.__class__ is not plain_class  # not decoded yet
    assert payload.attrs == {"status": "done"}
    assert payload.__class__ is plain_class and payload._raw is None
    assert payload == plain and hash(payload) == hash(plain)


@pytest.mark.parametrize("compare", [
    lambda lazy, plain: lazy == plain,
    lambda lazy, plain: plain == lazy,
    lambda lazy, plain: not (lazy != plain),
    lambda lazy, plain: not (plain != lazy),
    lambda lazy, plain: hash(lazy) == hash(plain) and {plain: 1}[lazy] == 1,
    lambda lazy, plain: repr(lazy) == repr(plain),
    lambda lazy, plain: __import__("pickle").loads(__import__("pickle").dumps(lazy)) == plain,
    lambda lazy, plain: __import__("copy").deepcopy(lazy) == plain,
    lambda lazy, plain: lazy == _packed('{"status":"done"}'),
])
def test_a_packed_payload_compares_hashes_and_prints_as_the_plain_one(compare):
    plain = Node("g", "goal", freeze({"status": "done"}), 1)
    assert compare(_packed('{"status":"done"}'), plain)
    assert _packed('{"status":"other"}') != plain and plain != _packed('{"status":"other"}')


def test_payloads_decoded_in_bulk_are_plain_payloads():
    from hgm_engine.model import decode_payloads, packed_attrs

    plain = Node("g", "goal", freeze({"status": "done", "tags": ["a"]}), 1)
    payloads = [_packed(packed_attrs(plain)), _packed(packed_attrs(plain))]
    decode_payloads(payloads)
    assert all(p.__class__ is Node and p._raw is None and p == plain for p in payloads)


def test_a_packed_payload_that_is_not_an_object_is_still_refused_when_read():
    payload = _packed("[1, 2]")
    with pytest.raises(StoreError, match="not a JSON object"):
        payload.attrs  # noqa: B018
    with pytest.raises(StoreError, match="not a JSON object"):
        payload.attrs  # noqa: B018 (still packed: refused again)


@pytest.mark.parametrize("kind", ["node", "edge"])
def test_the_journal_text_of_packed_payloads_is_that_of_the_plain_ones(kind):
    plain = Node("g", "goal", freeze({"status": "done"}), 1) if kind == "node" else Edge("g", "a", "parent_of", freeze({"status": "done"}), 1)
    updated = (Node("g", "goal", freeze({"status": "open"}), 1) if kind == "node"
               else Edge("g", "a", "parent_of", freeze({"status": "open"}), 1))
    change_kind = f"{kind}_updated"

    def text(before, after):
        return commit_to_text(Commit(2, None, None, None, 1.0, (Change(change_kind, before, after),)))

    expected = text(plain, updated)
    assert text(_packed('{"status":"done"}', kind), updated) == expected
    assert text(plain, _packed('{"status":"open"}', kind)) == expected
    assert text(_packed('{"status":"done"}', kind), _packed('{"status":"open"}', kind)) == expected


def test_attrs_json_of_no_attributes_is_an_empty_object():
    from hgm_engine.model import EMPTY_ATTRS

    assert [attrs_json(v) for v in (EMPTY_ATTRS, {}, freeze({}), [], ())] == ["{}", "{}", "{}", "[]", "[]"]


# -- an op's attribute names and values checked in one loop when they are plain ---------------------

_names_with_reserved = st.sampled_from(["id", "type", "dirty", "dirty_marks", "from", "to", "status", "é", "\ud800"]) | _attribute_names


def _refusal(run):
    from hgm_engine.errors import TransactionError

    try:
        run()
    except TransactionError as err:
        return [(p.category, p.message, p.where) for p in err.problems]
    return None


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_names_with_reserved, _any_value, max_size=3), st.sampled_from(["add_node", "add_edge", "update_node"]))
@example({"dirty": 1}, "add_node")
@example({"from": "x"}, "add_edge")
@example({"id": "x", "a": float("nan")}, "update_node")
@example({"a": float("nan"), "type": "x"}, "add_node")
def test_an_ops_attributes_are_refused_as_the_name_checks_then_the_value_checks_refuse_them(attributes, kind):
    from hgm_engine.model import DEFAULT_SCHEMA, GraphOverlay, MemoryGraph
    from hgm_engine.txn import ops

    base = MemoryGraph()
    base.add_node("g", "goal", {})
    base.add_node("f", "fact", {})
    overlay = GraphOverlay(base)
    ctx = ops.OpContext(DEFAULT_SCHEMA)
    if kind == "add_node":
        op = ops.AddNode("n", "fact", attributes)
        names, values = ops._check_attrs, ops._check_values  # noqa: SLF001 (the checks as they were)
        oracle = lambda: (names(attributes, "ops[0]"), values(attributes, "ops[0]"))  # noqa: E731
    elif kind == "add_edge":
        op = ops.AddEdge("g", "f", "related_to", attributes)
        oracle = lambda: (ops._check_edge_attrs(attributes, "ops[0]"), ops._check_values(attributes, "ops[0]"))  # noqa: E731,SLF001
    else:
        op = ops.UpdateNode("f", attributes, ("unset_me",))
        oracle = lambda: (ops._check_attrs(attributes, "ops[0]"), ops._check_values(attributes, "ops[0]", "set"))  # noqa: E731,SLF001
    expected = _refusal(oracle)
    assert _refusal(lambda: ops.apply_op(overlay, op, ctx, "ops[0]")) == expected
    if expected is not None:
        assert overlay.changes() == []


def test_the_cycle_filter_is_linear_in_a_commits_edges():
    # a chain of new nodes under an old one: each edge into a new node asked once, not a walk
    # from each (a 20,000-step ingest took minutes that way)
    from types import SimpleNamespace

    from hgm_engine.rules.constraints import _may_close

    class Counted(set):
        asked = 0

        def __contains__(self, item):
            Counted.asked += 1
            return set.__contains__(self, item)

    n = 2000
    names = [f"n{i}" for i in range(n)]
    edges = [SimpleNamespace(source=a, target=b) for a, b in zip(["old"] + names, names)]
    # the edge from the old node closes nothing, nor the one into the last (a leaf); the rest are walked
    assert _may_close(edges, Counted(names)) == edges[1:-1]
    assert Counted.asked <= 8 * len(edges)
    back = edges + [SimpleNamespace(source=names[-1], target="old")]
    assert _may_close(back, set(names)) == back  # the chain leads back to the old node: all walked
