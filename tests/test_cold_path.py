"""The cold path (issue 15): what a fresh process pays between opening a memory and its
first answers — work that must not be done at all, or not twice."""

from __future__ import annotations

import gc
import weakref

import pytest

from hgm_engine import Memory
from hgm_engine.model import MemoryGraph, collect_kept, kept_memories


def _stored(tmp_path, goals: int = 30):
    path = tmp_path / "memory.db"
    ops = []
    for i in range(goals):
        ops.append({"op": "add_node", "id": f"g{i}", "type": "goal"})
        ops.append({"op": "add_node", "id": f"a{i}", "type": "action", "attrs": {"status": "pending"}})
        ops.append({"op": "add_edge", "from": f"g{i}", "to": f"a{i}", "type": "parent_of"})
        if i:
            ops.append({"op": "add_edge", "from": "g0", "to": f"g{i}", "type": "parent_of"})
    with Memory.open(path) as memory:
        memory.apply({"ops": ops})
    return path


def test_first_root_builds_no_incoming_adjacency(monkeypatch):
    graph = MemoryGraph.from_records(
        [("r", "goal", {}), ("s", "goal", {}), ("t", "goal", {}), ("a", "action", {})],
        [("r", "s", "parent_of", {}), ("s", "a", "parent_of", {}), ("t", "a", "related_to", {})],
    )
    built = []
    real = MemoryGraph.in_adjacency
    monkeypatch.setattr(MemoryGraph, "in_adjacency", lambda self, node_id: built.append(node_id) or real(self, node_id))
    assert graph.roots() == ("r", "t")
    assert built == []


def test_reopened_state_is_out_of_the_collectors_generations(tmp_path):
    path = _stored(tmp_path)
    gc.unfreeze()
    memory = Memory.open(path)
    try:
        assert gc.get_freeze_count() >= len(memory)
        assert gc.isenabled()
    finally:
        memory.close()


def test_closing_a_memory_lets_its_graph_be_collected(tmp_path):
    path = _stored(tmp_path)
    memory = Memory.open(path)
    graph = weakref.ref(memory.graph)
    memory.close()
    del memory
    # Other tests' memories may still be open in this process, holding frozen objects: then
    # the close unfreezes nothing, and collect_kept is what reaches a closed memory's cycles
    # (tests/test_kept_objects.py checks the counts in a fresh process).
    collect_kept()
    assert graph() is None
    assert gc.get_freeze_count() == 0 or kept_memories() > 0


def test_a_refused_load_freezes_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "nope"}], "edges": []}', encoding="utf-8")
    gc.unfreeze()
    try:
        Memory.from_file(bad)
    except Exception:
        pass
    else:  # pragma: no cover
        raise AssertionError("an unknown node type loaded")
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_a_generated_function_the_collector_frees_inside_linecache_checkcache_does_not_break_it(monkeypatch):
    # linecache.checkcache loops over a copy of the cache's keys; a collection inside that
    # loop (after a memory's frozen objects are released, many functions go at once) must not
    # take entries away under it, or checkcache fails with a KeyError
    import linecache
    import os

    from hgm_engine.model.generated import compile_function

    linecache.cache["<checked first>"] = (1, 1.0, ["x\n"], "/nonexistent/checked-first")  # stat()ed by checkcache
    function = compile_function("def f():\n    return 1\n", "f", {}, kind="test")
    filename = function.__code__.co_filename
    holder = [function]
    holder.append(holder)  # only the cyclic collector can free it now
    del function, holder

    def stat_that_collects(path, *args, **kwargs):
        if path == "/nonexistent/checked-first":  # one collection, just before the function's entry
            gc.collect()  # (one at every entry costs minutes once the suite has filled the cache)
        raise FileNotFoundError(path)

    monkeypatch.setattr(os, "stat", stat_that_collects)
    linecache.checkcache()
    monkeypatch.undo()
    gc.collect()  # a collection outside checkcache drops what waited
    assert filename not in linecache.cache


def test_a_generated_function_freed_by_another_thread_while_one_is_inside_checkcache_does_not_break_it(monkeypatch):
    # a request thread dropping its last program while another thread (a traceback, a
    # doctest) is in linecache.checkcache's loop: the entry it already listed must stay until
    # that loop is over, then go
    import linecache
    import os
    import threading

    from hgm_engine.model.generated import compile_function

    real_stat = os.stat
    inside, release = threading.Event(), threading.Event()

    def stat_that_waits(path, *args, **kwargs):
        if path == "/nonexistent/held-in-checkcache":
            inside.set()
            assert release.wait(10)
            raise FileNotFoundError(path)
        return real_stat(path, *args, **kwargs)

    linecache.cache["<held in checkcache>"] = (1, 1.0, ["x\n"], "/nonexistent/held-in-checkcache")
    function = compile_function("def f():\n    return 1\n", "f", {}, kind="test")  # listed after it
    filename = function.__code__.co_filename
    monkeypatch.setattr(os, "stat", stat_that_waits)
    failures = []

    def check():
        try:
            linecache.checkcache()
        except BaseException as error:  # pragma: no cover - what the test is about
            failures.append(error)

    checker = threading.Thread(target=check)
    checker.start()
    try:
        assert inside.wait(10)
        del function  # freed here, in this thread, while the checker is in its loop
        assert filename in linecache.cache
        compile_function("def g():\n    return 2\n", "g", {}, kind="test")  # a compile meanwhile drops nothing
        assert filename in linecache.cache
    finally:
        release.set()
        checker.join(10)
    monkeypatch.undo()
    assert not checker.is_alive() and failures == []
    compile_function("def h():\n    return 3\n", "h", {}, kind="test")  # nobody in checkcache now
    assert filename not in linecache.cache


def test_a_row_whose_seq_is_not_a_number_is_still_reported_as_damage_when_reopening(tmp_path):
    # the state rows are sorted by seq in Python (faster than SQLite's ORDER BY); a text seq
    # must still end in the store's own "wrong type" report, not in a TypeError from the sort
    import sqlite3

    import pytest

    from hgm_engine.errors import HGMError

    path = _stored(tmp_path, goals=3)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE nodes SET seq = 'x', crc = NULL WHERE id = 'a1'")
    with pytest.raises(HGMError) as caught:
        Memory.open(path)
    assert "node 'a1'" in str(caught.value) and "wrong type" in str(caught.value)


def test_a_reopened_memory_keeps_one_string_per_id_and_per_type_name(tmp_path):
    # footprint: the driver hands out a fresh string in every row; an edge's ends and type
    # share the node's own id and one type name object (~170 bytes an edge otherwise)
    path = _stored(tmp_path, goals=3)
    with Memory.open(path) as memory:
        graph = memory.graph
        edge = next(e for e in graph.iter_edges() if e.source == "g1")
        assert edge.source is graph.node("g1").id
        assert edge.target is graph.node(edge.target).id
        types = {id(e.type) for e in graph.iter_edges() if e.type == "parent_of"}
        assert len(types) == 1
        assert len({id(graph.node(n).type) for n in ("a0", "a1", "a2")}) == 1


def test_attribute_texts_decode_alike_across_chunks():
    from hgm_engine.store.rows import decode_attrs

    texts = ['{"n":%d,"tags":["x"]}' % i if i % 3 else "{}" for i in range(20_005)]  # several chunks
    decoded = decode_attrs(texts)
    assert [dict(d) for d in decoded[-3:]] == [
        {"n": len(texts) - 3, "tags": ("x",)} if (len(texts) - 3) % 3 else {},
        {"n": len(texts) - 2, "tags": ("x",)} if (len(texts) - 2) % 3 else {},
        {"n": len(texts) - 1, "tags": ("x",)} if (len(texts) - 1) % 3 else {},
    ]
    assert len(decoded) == len(texts)
