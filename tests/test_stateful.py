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


def test_the_machine_runs_for_a_schema_and_rules_of_ones_own():
    from hgm_engine.model import Schema

    schema = Schema.from_document({"format": "hgm-schema/1", "extends": "default", "node_types": ["tool"],
                                   "edge_types": ["uses"],
                                   "attribute_schemas": {"tool": {"type": "object", "properties": {"cost": {"type": "number"}}}}})
    Machine = MemoryStateMachine.configured(
        schema=schema, rules="propagate uses backward depth 2\nrule r: on update tool then mark self as needs_review")
    run_state_machine_as_test(Machine, settings=settings(SETTINGS, max_examples=8, stateful_step_count=10))


def test_a_store_that_loses_a_commit_fails_the_machine_with_the_story_of_the_run(tmp_path):
    import pytest

    from hgm_engine.store.sqlite import SQLiteStore

    class LosesTheSecondCommit(SQLiteStore):
        def append(self, commit) -> None:
            if commit.t != 2:
                super().append(commit)

    from hypothesis import Phase

    Machine = MemoryStateMachine.configured(store=lambda folder: LosesTheSecondCommit(f"{folder}/m.db"))
    with pytest.raises(Exception) as failure:  # a fixed seed, no shrinking: quick and the same every run
        run_state_machine_as_test(Machine, settings=settings(SETTINGS, max_examples=60, stateful_step_count=12,
                                                             phases=[Phase.generate], report_multiple_bugs=False, derandomize=True))
    story = "\n".join(getattr(failure.value, "__notes__", []))
    # the story: the commit the store lost, then the reopening that shows it
    assert "-> committed t=2" in story and "close and reopen the store" in story
