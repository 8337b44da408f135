"""Every store passes hgm_engine.testing's conformance suites: StoreTests in memory,
DurableStoreTests on SQLite and on PostgreSQL (a throwaway server started on loopback by
tests/conftest.py, stopped at the end of the session)."""

from __future__ import annotations

import hashlib

import pytest

import hgm_engine
from hgm_engine.store import InMemoryStore, open_catalog, open_store
from hgm_engine.testing import DurableStoreTests, NamedMemoryTests, StoreTests


class TestInMemoryStore(StoreTests):
    def open_store(self, folder):
        return InMemoryStore()


class TestSQLiteStore(DurableStoreTests):
    def open_store(self, folder):
        return open_store(str(folder / "memory.db"))


class TestSQLiteMemories(NamedMemoryTests):
    def open_memory_store(self, folder):
        return hgm_engine.open_store(str(folder / "memories.db"))


def _named_store(location: str, name: str):
    """The store of the named memory ``name`` at ``location`` (made on first use)."""
    with open_catalog(location) as catalog:
        if name not in catalog.names(name):
            catalog.create(name, {})
        return catalog.open(name)


class TestSQLiteNamedMemory(DurableStoreTests):
    """The whole suite, and the state machine, on a named memory of a SQLite store."""

    def open_store(self, folder):
        return _named_store(str(folder / "memories.db"), "acme/alice/trip-42")


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


class TestPostgresMemories(NamedMemoryTests):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_url):
        self.url = postgres_url

    def open_memory_store(self, folder):
        return hgm_engine.open_store(self.url)


class TestPostgresNamedMemory(DurableStoreTests):
    """The whole suite, and the state machine, on named memories of one PostgreSQL database
    (each folder of a test is a memory of its own)."""

    machine_examples = 5

    @pytest.fixture(autouse=True)
    def _database(self, postgres_url):
        self.url = postgres_url

    def open_store(self, folder):
        return _named_store(self.url, "m/" + hashlib.sha1(str(folder).encode()).hexdigest()[:12])
