"""Loading a graph file into a new SQLite store writes its rows in bulk (issue 15: a 1M-node
memory in minutes) — and exactly the rows the store's own definitions give: each state row
is its payload's canonical JSON text with ``row_crc`` over it, and the image reads back as the
graph the rows hold."""

from __future__ import annotations

import json
import sqlite3

import pytest

from bench.generate import generate
from hgm_engine import Memory
from hgm_engine.model import Edge, Node, freeze, thaw
from hgm_engine.store.sqlite import SQLiteStore, row_crc

TRICKY = [
    {},
    {"content": "día 2: Zürich → 北京", "status": "done"},
    {"tags": ["a", "b"], "nested": {"where": {"city": "Lyon", "at": [1, 2.5, None, True]}}},
    {"big": 10**40, "small": -7, "ratio": 1e-300, "zero": -0.0, "huge": 1.7976931348623157e308},
    {"quote": 'say "hi"\\n', "control": "tab\tand\nnewline", "empty": "", "list": []},
    {"objects": [{"k": 1}, {"k": [{"deep": "x"}]}], "flag": False, "none": None},
]


def _canonical(attrs) -> str:
    return json.dumps(thaw(attrs), ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("attrs", TRICKY)
def test_the_attribute_text_of_a_payload_is_its_canonical_json(attrs):
    frozen = freeze(attrs)
    assert Node("n", "fact", frozen, 1).attrs_text() == _canonical(frozen)
    assert Edge("a", "b", "related_to", frozen, 1).attrs_text() == _canonical(frozen)


def _document() -> dict:
    doc, _ = generate(400, seed=5)
    for position, node in enumerate(doc["nodes"][: len(TRICKY) * 3]):
        node.update(TRICKY[position % len(TRICKY)])
    for position, edge in enumerate(doc["edges"][: len(TRICKY)]):
        edge.update({k: v for k, v in TRICKY[position].items() if k not in ("order",)})
    return doc


def test_a_loaded_store_holds_exactly_the_rows_its_definitions_give(tmp_path):
    path = tmp_path / "memory.db"
    with Memory(store=SQLiteStore(path, image_min_nodes=0)) as memory:
        memory.load(_document(), reason="bulk")
        graph = memory.graph
        expected_nodes = [
            (n.id, n.type, _canonical(n.attrs), n.seq, row_crc(n.id, n.type, _canonical(n.attrs), n.seq)) for n in graph.nodes()
        ]
        expected_edges = [
            (e.source, e.target, e.type, _canonical(e.attrs), e.seq, row_crc(e.source, e.target, e.type, _canonical(e.attrs), e.seq))
            for e in graph.edges()
        ]
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT id, type, attrs, seq, crc FROM nodes ORDER BY rowid").fetchall() == expected_nodes
        assert db.execute("SELECT source, target, type, attrs, seq, crc FROM edges ORDER BY rowid").fetchall() == expected_edges
    finally:
        db.close()


def test_a_loaded_store_reads_back_the_same_from_its_image_and_from_its_rows(tmp_path):
    path = tmp_path / "memory.db"
    with Memory(store=SQLiteStore(path, image_min_nodes=0)) as memory:
        memory.load(_document(), reason="bulk")

    def state(image: bool):
        store = SQLiteStore(path, image_min_nodes=0 if image else None)
        with Memory(store=store) as memory:
            assert store.last_load == ("image" if image else "rows")
            graph = memory.graph
            return (
                [(n.id, n.type, thaw(n.attrs), n.seq) for n in graph.nodes()],
                [(e.key, thaw(e.attrs), e.seq) for e in graph.edges()],
            )

    assert state(image=True) == state(image=False)
