"""Model-based tests: random transactions, refusals, reverts and as_of reads vs a plain model."""

from __future__ import annotations

import shutil
import tempfile

from hypothesis import HealthCheck, settings

from hgm_engine import Memory
from hgm_engine.testing import MemoryStateMachine

SETTINGS = settings(
    max_examples=60, stateful_step_count=25, deadline=None, suppress_health_check=list(HealthCheck)
)


class InMemoryMachine(MemoryStateMachine):
    pass


class SQLiteMachine(MemoryStateMachine):
    """The same machine on a SQLite store, closing and reopening the file now and then."""

    def make_memory(self) -> Memory:
        self.folder = tempfile.mkdtemp(prefix="hgm-sm-")
        self.path = f"{self.folder}/memory.db"
        return Memory.open(self.path)

    def reopen(self, memory: Memory) -> Memory:
        memory.close()
        return Memory.open(self.path)

    def teardown(self) -> None:
        if hasattr(self, "memory"):
            self.memory.close()
            shutil.rmtree(self.folder, ignore_errors=True)


TestInMemoryMachine = InMemoryMachine.TestCase
TestInMemoryMachine.settings = SETTINGS
TestSQLiteMachine = SQLiteMachine.TestCase
TestSQLiteMachine.settings = settings(SETTINGS, max_examples=25)
