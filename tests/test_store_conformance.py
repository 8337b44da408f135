"""Every store passes hgm_engine.testing's conformance suites: StoreTests in memory,
DurableStoreTests on SQLite and on PostgreSQL (a throwaway server started on loopback by
tests/conftest.py, stopped at the end of the session)."""

from __future__ import annotations

import hashlib

import pytest

from hgm_engine.store import InMemoryStore, open_store
from hgm_engine.testing import DurableStoreTests, StoreTests


class TestInMemoryStore(StoreTests):
    def open_store(self, folder):
        return InMemoryStore()


class TestSQLiteStore(DurableStoreTests):
    def open_store(self, folder):
        return open_store(str(folder / "memory.db"))


class TestPostgresStore(DurableStoreTests):
    """Each test in a database of its own; each folder of a test in a schema of its own."""

    machine_examples = 5

    @pytest.fixture(autouse=True)
    def _database(self, postgres_url):
        self.url = postgres_url

    def open_store(self, folder):
        import psycopg

        schema = "s" + hashlib.sha1(str(folder).encode()).hexdigest()[:12]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        return open_store(f"{self.url}?options=-csearch_path%3D{schema}")
