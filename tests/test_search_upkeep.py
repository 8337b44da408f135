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
