"""What keeping the node index costs a SQLite commit, and that the cheaper way of writing it
reads back the same as before (a store whose tables an older hgm made included)."""

from __future__ import annotations

import sqlite3

from bench import generate, txn_bench
from hgm_engine import Memory
from hgm_engine.model.nodeindex import DEFAULT_FIELDS, Doc, text_changes


def wal_frames(path) -> int:
    """The pages in the write-ahead log of ``path`` (a PASSIVE checkpoint reports them)."""
    db = sqlite3.connect(path)
    try:
        busy, frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        db.close()
    assert busy == 0
    return frames


def test_keeping_the_index_adds_at_most_three_pages_to_a_commit(tmp_path):
    """The entries a commit changes and the index's t: one page each in the usual case (the
    change table in one B-tree, the t row updated in place), where it took four."""
    doc, _ = generate.generate(2000, seed=0)
    frames = {}
    for name in ("with_index", "without_index"):
        path = tmp_path / f"{name}.db"
        memory = Memory.open(path)
        memory.load(doc)
        memory.close()
        memory = Memory.open(path)  # the log emptied: only the commits below are in it
        if name == "without_index":
            memory.store_hooks = []
        workload = txn_bench.Workload(memory.graph, seed=0)
        for _ in range(20):
            assert memory.apply(workload.next()).committed
        frames[name] = wal_frames(path)
        memory.close()
    assert frames["without_index"] > 0
    assert frames["with_index"] - frames["without_index"] <= 3 * 20, frames


def test_a_store_whose_change_table_is_a_rowid_table_keeps_its_index(tmp_path):
    """A store made before the change table was WITHOUT ROWID is read and written as before."""
    path = tmp_path / "m.db"
    memory = Memory.open(path)
    memory.apply({"ops": [{"op": "add_node", "id": "h", "type": "fact", "content": "The hotel is closed"}]})
    memory.apply({"ops": [{"op": "add_node", "id": "m", "type": "fact", "content": "The museum is open"}]})
    memory.close()
    db = sqlite3.connect(path)
    rows = db.execute("SELECT id, terms, crc FROM node_index_changes").fetchall()
    assert rows
    db.execute("DROP TABLE node_index_changes")
    db.execute("CREATE TABLE node_index_changes (id TEXT PRIMARY KEY, terms TEXT, crc INTEGER)")
    db.executemany("INSERT INTO node_index_changes VALUES (?, ?, ?)", rows)
    db.commit()
    db.close()
    older = Memory.open(path)
    assert older.query("search('museum')").ids == ["m"]
    assert older.search_status()["source"] == "stored"
    older.apply({"ops": [{"op": "update_node", "id": "h", "set": {"content": "The hotel museum"}},
                         {"op": "delete_node", "id": "m"}]})
    older.close()
    again = Memory.open(path)
    assert again.query("search('museum')").ids == ["h"]
    assert again.search_status()["source"] == "stored" and again.search_status()["t"] == 3
    db = sqlite3.connect(path)
    assert "WITHOUT ROWID" not in db.execute("SELECT sql FROM sqlite_master WHERE name = 'node_index_changes'").fetchone()[0]
    db.close()


def test_the_index_t_is_kept_in_one_row_whatever_the_commits(tmp_path):
    path = tmp_path / "m.db"
    memory = Memory.open(path)
    for i in range(5):
        memory.apply({"ops": [{"op": "add_node", "id": f"n{i}", "type": "fact", "content": f"note {i}"}]})
    memory.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT t FROM node_index WHERE name = 't'").fetchall() == [(5,)]
    db.close()


def test_an_update_of_other_attributes_is_not_a_text_change():
    from hgm_engine.model import Change, Node

    before = Node("a", "action", {"content": "Book", "tags": ["trip"], "status": "pending"}, 1)
    status = Node("a", "action", {"content": "Book", "tags": ["trip"], "status": "done"}, 1)
    number = Node("a", "action", {"content": "Book", "tags": ["trip"], "name": 7}, 1)
    retagged = Node("a", "action", {"content": "Book", "tags": ["trip", "paid"]}, 1)
    reworded = Node("a", "action", {"content": "Book it", "tags": ["trip"]}, 1)
    changes = [Change("node_updated", before, after) for after in (status, number, retagged, reworded)]
    assert [list(text_changes([c], DEFAULT_FIELDS)) for c in changes] == [[], [], ["a"], ["a"]]
    assert Doc.of(retagged).terms_json() == '{"book":1,"trip":1,"paid":1}'


# -- the sixth session's cheaper upkeep: the same entries, rows and index -------------------

import json  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hgm_engine.model import Change, MemoryGraph, Node  # noqa: E402
from hgm_engine.model.nodeindex import IndexView, LexicalIndex, entries_of, query_terms  # noqa: E402

_TERM_KEYS = st.text(st.sampled_from(list('ab"\\\x01 é東\u2028') + ["\ud800"]), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.one_of(_TERM_KEYS, st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True)), st.integers(1, 3), max_size=6))
def test_an_entrys_row_is_the_json_encoders_text(terms):
    """terms_json writes every count-1 entry by one join: the same text as the encoder's,
    whatever its terms hold (quotes, backslashes, control and non-ASCII characters)."""
    doc = Doc(terms, sum(terms.values()), 1, "fact")
    assert doc.terms_json() == json.dumps(terms, ensure_ascii=False, separators=(",", ":"))


def test_the_entries_of_a_commit_are_those_of_each_node():
    nodes = {
        "a": Node("a", "fact", {"content": "Book the hotel, the hotel #26", "tags": ["Travel"]}, 3),
        "b": None,
        "c": Node("c", "goal", {"status": "done"}, 4),
        "d": Node("d", "entity", {"name": "GetMovieCredit", "description": "北京 hotels"}, 5),
    }
    assert entries_of(nodes, DEFAULT_FIELDS) == {k: None if n is None else Doc.of(n, DEFAULT_FIELDS) for k, n in nodes.items()}


_ATTRS = st.fixed_dictionaries({}, optional={
    "content": st.sampled_from(["Book", "Book it", 3, None]),
    "name": st.sampled_from(["Hotel", 4, 5]),
    "tags": st.sampled_from([["a"], ["a", "b"], "a", ("a",)]),
    "status": st.sampled_from(["pending", "done"]),
})


@settings(max_examples=300, deadline=None)
@given(_ATTRS, _ATTRS, st.booleans())
def test_an_update_is_a_text_change_when_its_type_or_its_text_changes(before, after, retyped):
    """text_changes (same_text inlined) names an updated node exactly when its type or its
    text (TextFields.text) differs."""
    old = Node("a", "fact", before, 1)
    new = Node("a", "goal" if retyped else "fact", after, 1)
    changed = retyped or DEFAULT_FIELDS.text(before) != DEFAULT_FIELDS.text(after)
    assert text_changes([Change("node_updated", old, new)], DEFAULT_FIELDS) == ({"a": new} if changed else {})
    assert DEFAULT_FIELDS.same_text(before, after) == (DEFAULT_FIELDS.text(before) == DEFAULT_FIELDS.text(after))


_WORDS = ["hotel", "museum", "pay", "book", "trip"]
_ENTRY = st.one_of(st.none(), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e", "f"]), _ENTRY), max_size=12))
def test_replacing_a_commits_entries_at_once_gives_the_index_built_afresh(steps):
    """replace_all (the fold of a commit's entries) leaves the index of the state built
    from scratch: statistics, entries and hits; a node replaced twice, removed and added
    again, added new, or changed in the segment."""
    base = {"a": "hotel museum", "b": "pay the hotel", "c": "book a trip"}
    graph = MemoryGraph.from_records([(k, "fact", {"content": v}) for k, v in base.items()], [])
    index = LexicalIndex.build(graph)
    state = {k: graph.node(k) for k in base}
    entries = []
    for seq, (node_id, words) in enumerate(steps, start=10):
        node = None if words is None else Node(node_id, "fact", {"content": " ".join(words)}, state[node_id].seq if state.get(node_id) else seq)
        state[node_id] = node
        entries.append((node_id, None if node is None else Doc.of(node)))
    index.replace_all(entries)
    fresh = LexicalIndex.build(MemoryGraph.from_records(
        [(k, "fact", {"content": n.attrs["content"]}) for k, n in sorted(state.items(), key=lambda kv: kv[1].seq if kv[1] else 0) if n], []))
    assert (index.n_docs, index.total_length) == (fresh.n_docs, fresh.total_length)
    # every segment node replaced is counted (changed or gone), and every other node with an entry now
    assert index.n_changed == len({k for k, _ in entries if k in base}) + sum(1 for k, n in state.items() if k not in base and n)
    for word in _WORDS:
        assert index.df(word) == fresh.df(word)
    for node_id in "abcdef":
        got, want = index.doc(node_id), fresh.doc(node_id)
        assert (got is None) == (want is None) and (got is None or dict(got.terms) == dict(want.terms))
    terms = query_terms("hotel museum trip")
    assert [(h.id, h.score) for h in IndexView(index).hits(terms)] == [(h.id, h.score) for h in IndexView(index.compact()).hits(terms)]
