"""``StoreTests`` and ``DurableStoreTests``: the conformance suites a store implementation
runs (in the way zarr-python's ``StoreTests`` is subclassed by every zarr store).

Subclass one in a pytest module and say how to open your store in a folder made for the test:
``DurableStoreTests`` for a store that keeps its contents when closed (every check is then
made again after closing and reopening it, and a write that raises must leave nothing behind),
``StoreTests`` for one that lives only as long as its object::

    class TestMyStore(DurableStoreTests):
        def open_store(self, folder):
            return MyStore(f"{folder}/memory")

Every ``test_*`` method is then a pytest test; each takes pytest's ``tmp_path``. The suite
checks the :class:`~hgm_engine.store.Store` interface through a
:class:`~hgm_engine.Memory` (commits in order, a refused or failed transaction writes nothing,
history, snapshots, constraints, rule sets and meta values kept) and finishes with the
:class:`MemoryStateMachine` on the store.

>>> from hgm_engine.store import InMemoryStore
>>> class InMemory(StoreTests):
...     def open_store(self, folder):
...         return InMemoryStore()
>>> InMemory().test_commits_get_consecutive_t(pathlib.Path(tempfile.mkdtemp()))
"""

from __future__ import annotations

import pathlib
import tempfile
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory
from hgm_engine.store import Store
from hgm_engine.testing.machine import MemoryStateMachine

__all__ = ["StoreTests", "DurableStoreTests"]

_PLAN = {"author": "conformance", "reason": "a plan", "ops": [
    {"op": "add_node", "id": "g", "type": "goal", "content": "Plan"},
    {"op": "add_node", "id": "a", "type": "action", "parent": "g", "order": 1, "status": "pending"},
    {"op": "add_node", "id": "f", "type": "fact", "content": "x", "tags": ["t"]},
    {"op": "add_edge", "from": "a", "to": "f", "type": "related_to"},
]}


class StoreTests:
    """The conformance suite of any store (see the module docstring); ``machine_examples``
    sizes the state-machine run."""

    reopens: bool = False
    machine_examples: int = 10

    def open_store(self, folder: pathlib.Path) -> Store:
        """The store kept in ``folder`` (a new one the first time)."""
        raise NotImplementedError("a StoreTests subclass says how to open its store")

    # -- helpers ---------------------------------------------------------------------------

    def memory(self, folder: pathlib.Path) -> Memory:
        return Memory(store=self.open_store(folder))

    def reopened(self, memory: Memory, folder: pathlib.Path) -> Memory:
        """The memory again, read back from the store after closing it when the store keeps its
        contents (:class:`DurableStoreTests`); otherwise the same memory."""
        if not self.reopens:
            return memory
        memory.close()
        return self.memory(folder)

    # -- the suite -------------------------------------------------------------------------

    def test_a_new_store_is_empty(self, tmp_path: pathlib.Path) -> None:
        memory = self.memory(tmp_path)
        assert memory.t == 0 and memory.store.latest_t() == 0
        assert memory.export() == {"format": "hgm-graph/1", "nodes": [], "edges": []}
        memory.close()

    def test_commits_get_consecutive_t(self, tmp_path: pathlib.Path) -> None:
        memory = self.memory(tmp_path)
        assert memory.apply(_PLAN).t == 1
        assert memory.apply({"ops": [{"op": "update_node", "id": "a", "set": {"status": "done"}}]}).t == 2
        assert [c.t for c in memory.store.commits_after(0)] == [1, 2]
        assert [c.t for c in memory.store.commits_after(1, 2)] == [2]
        memory.close()

    def test_a_refused_or_failed_transaction_writes_nothing(self, tmp_path: pathlib.Path) -> None:
        memory = self.memory(tmp_path)
        memory.apply(_PLAN)
        refused = memory.apply({"ops": [{"op": "add_node", "id": "orphan", "type": "action"}]})
        assert not refused.committed
        try:
            memory.apply({"ops": [{"op": "update_node", "id": "a", "set": {"x": 1}}, {"op": "delete_node", "id": "nope"}]})
        except HGMError:
            pass
        assert memory.store.latest_t() == 1
        state = memory.export()
        memory = self.reopened(memory, tmp_path)
        assert memory.export() == state and memory.t == 1
        memory.close()

    def test_state_and_history_survive_reopening(self, tmp_path: pathlib.Path) -> None:
        memory = self.memory(tmp_path)
        memory.apply(_PLAN)
        memory.apply({"ops": [{"op": "delete_node", "id": "f"}, {"op": "update_node", "id": "g", "set": {"v": 1.0, "w": True}}]})
        memory.revert(2)
        states = [memory.export(as_of=t) for t in range(memory.t + 1)]
        diff = memory.diff(0, memory.t)
        memory = self.reopened(memory, tmp_path)
        assert [memory.export(as_of=t) for t in range(memory.t + 1)] == states
        assert memory.diff(0, memory.t) == diff
        assert [h["t"] for h in memory.history("f")] == [1, 2, 3]
        memory.close()

    def test_snapshots_constraints_rules_and_meta_are_kept(self, tmp_path: pathlib.Path) -> None:
        memory = self.memory(tmp_path)
        memory.apply(_PLAN)
        memory.snapshot("plan")
        memory.add_constraint("has_content", "each goal must has(content)")
        memory.load_rules("propagate related_to both depth 1", name="stale")
        memory.store.set_meta("conformance", "yes")
        memory = self.reopened(memory, tmp_path)
        assert memory.snapshots() == {"plan": 1}
        assert memory.constraints() == {"has_content": "each goal must has(content)"}
        assert memory.rules() == {"stale": "propagate related_to both depth 1"}
        assert memory.store.get_meta("conformance") == "yes"
        report = memory.apply({"ops": [{"op": "update_node", "id": "f", "set": {"content": "y"}}]})
        assert [d["id"] for d in report.dirtied] == ["a"]
        memory.close()

    def test_write_is_reentrant_and_all_or_nothing(self, tmp_path: pathlib.Path) -> None:
        store = self.open_store(tmp_path)
        with store.write():
            with store.write():
                store.set_snapshot("inner", 0)
        assert store.snapshots() == {"inner": 0}
        store.close()

    def test_the_state_machine_runs_on_the_store(self, tmp_path: pathlib.Path) -> None:
        suite = self

        class Machine(MemoryStateMachine):
            counter = [0]

            def make_memory(self) -> Memory:
                self.counter[0] += 1
                self.folder_path = tmp_path / f"run{self.counter[0]}"
                self.folder_path.mkdir()
                return suite.memory(self.folder_path)

            def reopen(self, memory: Memory) -> Memory:
                if not suite.reopens:
                    return memory
                memory.close()
                return suite.memory(self.folder_path)

            def teardown(self) -> None:
                memory: Any = getattr(self, "memory", None)
                if memory is not None:
                    memory.close()

        run_state_machine_as_test(Machine, settings=settings(
            max_examples=self.machine_examples, stateful_step_count=10, deadline=None,
            suppress_health_check=list(HealthCheck)))


class DurableStoreTests(StoreTests):
    """The conformance suite of a store that keeps its contents when closed (SQLite,
    PostgreSQL): every check of :class:`StoreTests` is made again on the reopened store, the
    state machine closes and reopens it now and then, and a write that raises keeps nothing."""

    reopens = True

    def test_a_write_that_raises_keeps_nothing(self, tmp_path: pathlib.Path) -> None:
        memory = self.memory(tmp_path)
        memory.apply(_PLAN)
        store = memory.store
        try:
            with store.write():
                store.set_snapshot("half", 1)
                store.set_meta("half", "written")
                raise RuntimeError("the writer fails half way")
        except RuntimeError:
            pass
        assert store.snapshots() == {} and store.get_meta("half") is None
        memory = self.reopened(memory, tmp_path)
        assert memory.snapshots() == {} and memory.store.get_meta("half") is None and memory.t == 1
        memory.close()
