"""Objects a memory's load moved out of the collector's reach (``gc.freeze``) are given back
only when no other open memory still holds its own (hgm_engine.model.release_kept): gc has no
per-object unfreeze, and ``gc.unfreeze`` on every close made the collector walk every other
open memory's payloads again (a server holds many). Each check runs in a fresh interpreter:
the counts are the process's, and a test runner's process holds memories of other tests."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

from hgm_engine import Memory

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture
def two_stores(tmp_path):
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.db"
        with Memory.open(path) as memory:
            memory.apply({"ops": [{"op": "add_node", "id": f"{name}{i}", "type": "goal"} for i in range(20)]})
        paths.append(str(path))
    return paths


def _run(code: str, *args: str) -> dict:
    script = "import gc, json, sys, weakref\nsys.path.insert(0, %r)\n" % str(ROOT) + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_closing_one_of_two_memories_leaves_the_others_objects_frozen(two_stores):
    got = _run(
        """
        from hgm_engine import Memory
        from hgm_engine.model import kept_memories
        out = {"start": [gc.get_freeze_count(), kept_memories()]}
        a, b = Memory.open(sys.argv[1]), Memory.open(sys.argv[2])
        out["both open"] = [gc.get_freeze_count() > 0, kept_memories()]
        graph = b.graph
        a.close()
        frozen = {id(o) for o in gc.get_objects()}  # the collector's generations: frozen objects are not in them
        out["a closed"] = [gc.get_freeze_count() > 0, kept_memories(), id(graph) in frozen, len(b.query("root").ids)]
        a.close()  # a second close gives nothing back twice
        out["a closed twice"] = [gc.get_freeze_count() > 0, kept_memories()]
        b.close()
        out["both closed"] = [gc.get_freeze_count(), kept_memories()]
        print(json.dumps(out))
        """,
        *two_stores,
    )
    assert got == {
        "start": [0, 0],
        "both open": [True, 2],
        "a closed": [True, 1, False, 20],
        "a closed twice": [True, 1],
        "both closed": [0, 0],
    }


def test_a_failed_open_holds_nothing(two_stores):
    got = _run(
        """
        from hgm_engine import Memory, Schema
        from hgm_engine.errors import SchemaError
        from hgm_engine.model import kept_memories
        b = Memory.open(sys.argv[2])
        lacking = Schema(node_types=("fact",), edge_types=(), relations={}, attribute_schemas={}, edge_rules={}, acyclic_edge_types=())
        try:
            Memory.open(sys.argv[1], schema=lacking)  # the state loads, then the schema is refused
        except SchemaError:
            refused = True
        out = {"refused": [refused, kept_memories(), gc.get_freeze_count() > 0]}
        b.close()
        out["closed"] = [gc.get_freeze_count(), kept_memories()]
        print(json.dumps(out))
        """,
        *two_stores,
    )
    assert got == {"refused": [True, 1, True], "closed": [0, 0]}


def test_a_memory_closed_while_another_stays_open_is_freed_by_a_collection(two_stores):
    # Its cycles stay frozen (no per-object unfreeze); collect_kept reaches them and freezes
    # the open memory's objects again. A memory dropped without a close gives its hold back
    # when it is collected.
    got = _run(
        """
        from hgm_engine import Memory
        from hgm_engine.model import collect_kept, kept_memories
        a, b = Memory.open(sys.argv[1]), Memory.open(sys.argv[2])
        graph_a, graph_b = weakref.ref(a.graph), b.graph
        a.close()
        del a
        gc.collect()
        out = {"closed, collector's pass": [graph_a() is not None, kept_memories()]}
        collect_kept()
        frozen = {id(o) for o in gc.get_objects()}
        out["collect_kept"] = [graph_a() is None, kept_memories(), gc.get_freeze_count() > 0, id(graph_b) in frozen]
        c = Memory.open(sys.argv[1])
        graph_c = weakref.ref(c.graph)
        del c  # never closed
        collect_kept()
        out["dropped"] = [graph_c() is None, kept_memories()]
        b.close()
        out["closed"] = [gc.get_freeze_count(), kept_memories()]
        print(json.dumps(out))
        """,
        *two_stores,
    )
    assert got == {
        "closed, collector's pass": [True, 1],
        "collect_kept": [True, 1, True, False],
        "dropped": [True, 1],
        "closed": [0, 0],
    }


def test_closes_while_others_hold_collect_once_the_heap_has_grown_by_a_quarter(two_stores):
    # A process keeping one memory open and opening and closing others: their frozen cycles
    # do not pile up, a close collects once Python's heap has grown by KEPT_GROWTH.
    got = _run(
        """
        from hgm_engine import Memory
        from hgm_engine.model import kept_memories
        b = Memory.open(sys.argv[2])
        graphs = []
        for _ in range(200):  # 20 goals: ~400 blocks of heap left frozen a close, ~200k blocks in all
            a = Memory.open(sys.argv[1])
            graphs.append(weakref.ref(a.graph))
            a.close()
            del a
        alive = sum(g() is not None for g in graphs)
        print(json.dumps({"alive": alive, "kept": kept_memories(), "frozen": gc.get_freeze_count() > 0}))
        b.close()
        """,
        *two_stores,
    )
    assert got["kept"] == 1 and got["frozen"] and got["alive"] < 150  # a collection came, at about the 125th
