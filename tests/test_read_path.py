"""What every query pays on its way to the program (issue 15, the first call): the read lock
and the node index's registration — done once, not per query, and still correct."""

from __future__ import annotations

import threading

from hgm_engine import Memory
from hgm_engine.retrieval import keeper
from hgm_engine.txn import ReadWriteLock


def test_a_query_does_not_register_the_node_index_again(monkeypatch):
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal", "content": "Plan a trip"}]})
    registered = []
    real = keeper.register
    monkeypatch.setattr(keeper, "register", lambda graph, searcher: registered.append(graph) or real(graph, searcher))
    assert memory.query("root").ids == ["g"]
    assert memory.query("root.children").ids == []
    assert registered == []  # registered when the memory was made, once
    assert memory.query("search('trip')").ids == ["g"]


def test_a_new_graph_is_registered_for_searches_on_the_next_query():
    memory = Memory()
    memory.load({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal", "content": "Plan a trip"}], "edges": []})
    assert memory.query("search('trip')").ids == ["g"]
    memory.load({"format": "hgm-graph/1", "nodes": [{"id": "h", "type": "goal", "content": "Book a hotel"}], "edges": []})
    assert memory.query("search('hotel')").ids == ["h"]


def test_a_writer_waiting_for_readers_goes_on_when_the_last_one_leaves():
    lock = ReadWriteLock()
    written = threading.Event()

    def write():
        with lock.writing():
            written.set()

    with lock.reading():
        with lock.reading():  # reads nest
            writer = threading.Thread(target=write)
            writer.start()
            assert not written.wait(0.05)
        assert not written.wait(0.05)  # one reader is still in
    assert written.wait(5)
    writer.join(5)
    with lock.writing(blocking=False) as acquired:
        assert acquired  # nothing is left held


def test_readers_wait_while_a_writer_holds_the_lock():
    lock = ReadWriteLock()
    read = threading.Event()

    def reader():
        with lock.reading():
            read.set()

    with lock.writing():
        thread = threading.Thread(target=reader)
        thread.start()
        assert not read.wait(0.05)
    assert read.wait(5)
    thread.join(5)
