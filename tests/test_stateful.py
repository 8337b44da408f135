"""Model-based tests: random transactions, refusals, reverts and as_of reads vs a plain model,
in memory and on the durable stores (SQLite, PostgreSQL) with reopening."""

from __future__ import annotations

import itertools
import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from hgm_engine import Memory
from hgm_engine.store import open_store
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


class PostgresMachine(MemoryStateMachine):
    """The same machine on a PostgreSQL store: each run in a schema of its own, reconnecting
    (closing and reopening the store) now and then."""

    url = ""  # the test database, set by the test
    _runs = itertools.count(1)

    def make_memory(self) -> Memory:
        import psycopg

        self.pg_schema = f"machine_{next(self._runs)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {self.pg_schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {self.pg_schema}")
        self.location = f"{self.url}?options=-csearch_path%3D{self.pg_schema}"
        return Memory(store=open_store(self.location))

    def reopen(self, memory: Memory) -> Memory:
        memory.close()
        return Memory(store=open_store(self.location))

    def teardown(self) -> None:
        if hasattr(self, "memory"):
            import psycopg

            self.memory.close()
            with psycopg.connect(self.url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {self.pg_schema} CASCADE")


TestInMemoryMachine = InMemoryMachine.TestCase
TestInMemoryMachine.settings = SETTINGS
TestSQLiteMachine = SQLiteMachine.TestCase
TestSQLiteMachine.settings = settings(SETTINGS, max_examples=25)


def test_postgres_machine(postgres_url):
    class Machine(PostgresMachine):
        url = postgres_url

    run_state_machine_as_test(Machine, settings=settings(SETTINGS, max_examples=25))
