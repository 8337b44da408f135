"""The default durable store: one SQLite file holding the journal and the current state.

A commit writes its journal row and its state changes in one SQLite transaction with
``synchronous=FULL`` in WAL mode, so it is durable when it returns and a process killed at
any moment reopens at the last committed ``t``. Writers take SQLite's write lock
(``BEGIN IMMEDIATE``) for the whole commit, so two processes on one file are serialized.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "m.db")
>>> store = SQLiteStore(path)
>>> store.latest_t()
0
>>> store.close()
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from typing import Iterator

from hgm_engine.errors import Problem, StoreError
from hgm_engine.model import EMPTY_ATTRS, Edge, FrozenDict, MemoryGraph, Node, bulk_allocation, freeze, thaw
from hgm_engine.store.base import Store
from hgm_engine.model import Commit
from hgm_engine.store.journal import commit_from_record, commit_to_record

__all__ = ["SQLiteStore"]

SCHEMA_VERSION = "1"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    t INTEGER PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    attrs TEXT NOT NULL,
    seq INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS edges (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    type TEXT NOT NULL,
    attrs TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (source, target, type)
);
CREATE TABLE IF NOT EXISTS snapshots (name TEXT PRIMARY KEY, t INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS constraints (name TEXT PRIMARY KEY, text TEXT NOT NULL);
"""


def _decode_all(texts: list[str]) -> list[FrozenDict]:
    """Frozen attribute maps for JSON object texts, decoded in one pass."""
    full = [i for i, text in enumerate(texts) if text != "{}"]
    decoded = json.loads("[" + ",".join(texts[i] for i in full) + "]") if full else []
    out: list[FrozenDict] = [EMPTY_ATTRS] * len(texts)
    for i, value in zip(full, decoded):
        out[i] = freeze(value) if value else EMPTY_ATTRS
    return out


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class SQLiteStore(Store):
    """Journal and state in one SQLite file."""

    def __init__(self, path: str, *, timeout: float = 30.0):
        self.location = str(path)
        try:
            self._db = sqlite3.connect(
                self.location, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_TABLES)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError([Problem("store", f"cannot open {self.location}: {exc}", where=self.location)]) from None
        if row is None:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise StoreError(
                [Problem("store", f"{self.location} has store format {row[0]}, this hgm reads {SCHEMA_VERSION}")]
            )
        self._lock = threading.RLock()
        # A second connection answers committed_t: the first one is held for a whole commit.
        self._peek_lock = threading.Lock()
        self._peek_db: sqlite3.Connection | None = None
        self._peek_version: int | None = None
        self._peek_latest = 0
        self._timeout = timeout
        self._in_write = 0
        self._pending: list[Commit] = []
        self._commit_cache: dict[int, Commit] = {}

    # -- reading ------------------------------------------------------------------------------

    def load_state(self) -> tuple[MemoryGraph, int]:
        with self._lock, bulk_allocation():
            # One read transaction, so the state and its t agree even while others write.
            self._db.execute("BEGIN")
            try:
                t = self._latest_t()
                # Bulk build: payloads straight from the rows, in creation order. The attribute
                # maps are decoded by one json.loads over all of them (a call per row costs more
                # than the decoding), and empty ones ('{}', most edges) are not decoded at all.
                node_rows = self._db.execute("SELECT id, type, attrs, seq FROM nodes ORDER BY seq").fetchall()
                node_attrs = _decode_all([row[2] for row in node_rows])
                nodes = [Node(row[0], row[1], attrs, row[3]) for row, attrs in zip(node_rows, node_attrs)]
                edge_rows = self._db.execute(
                    "SELECT source, target, type, attrs, seq FROM edges ORDER BY seq"
                ).fetchall()
                edge_attrs = _decode_all([row[3] for row in edge_rows])
                edges = [Edge(row[0], row[1], row[2], attrs, row[4]) for row, attrs in zip(edge_rows, edge_attrs)]
                graph = MemoryGraph.from_payloads(nodes, edges)
            finally:
                self._db.execute("COMMIT")
            return graph, t

    def _latest_t(self) -> int:
        row = self._db.execute("SELECT MAX(t) FROM journal").fetchone()
        return row[0] or 0

    def latest_t(self) -> int:
        with self._lock:
            return self._latest_t()

    def _reader(self) -> sqlite3.Connection:
        """The second, read-only connection (opened on first use; call under ``_peek_lock``)."""
        if self._peek_db is None:
            self._peek_db = sqlite3.connect(
                self.location, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
        return self._peek_db

    def committed_t(self) -> int:
        with self._peek_lock:
            db = self._reader()
            # data_version moves when any other connection (our writer included) commits:
            # unchanged, the journal is not read at all.
            version = db.execute("PRAGMA data_version").fetchone()[0]
            if version != self._peek_version:
                self._peek_latest = db.execute("SELECT MAX(t) FROM journal").fetchone()[0] or 0
                self._peek_version = version
            return self._peek_latest

    def read_commits(self, t: int, upto: int) -> list[Commit]:
        missing = [n for n in range(t + 1, upto + 1) if n not in self._commit_cache]
        if missing:
            with self._peek_lock:
                rows = self._reader().execute(
                    "SELECT t, record FROM journal WHERE t > ? AND t <= ? ORDER BY t", (t, upto)
                ).fetchall()
            for number, record in rows:
                self._commit_cache.setdefault(number, commit_from_record(json.loads(record)))
        return [self._commit_cache[n] for n in range(t + 1, upto + 1) if n in self._commit_cache]

    def change_token(self) -> object:
        # SQLite counts commits made by *other* connections (one PRAGMA, no table read):
        # this process's own commits are already applied where they were made.
        with self._lock:
            return self._db.execute("PRAGMA data_version").fetchone()[0]

    def commits_after(self, t: int, upto: int | None = None) -> list[Commit]:
        with self._lock:
            high = self._latest_t() if upto is None else upto
            missing = [n for n in range(t + 1, high + 1) if n not in self._commit_cache]
            if missing:
                rows = self._db.execute(
                    "SELECT t, record FROM journal WHERE t > ? AND t <= ? ORDER BY t", (t, high)
                ).fetchall()
                for number, record in rows:
                    if number not in self._commit_cache:
                        self._commit_cache[number] = commit_from_record(json.loads(record))
            return [self._commit_cache[n] for n in range(t + 1, high + 1) if n in self._commit_cache]

    # -- writing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def write(self) -> Iterator["SQLiteStore"]:
        with self._lock:
            if self._in_write:
                self._in_write += 1
                try:
                    yield self
                finally:
                    self._in_write -= 1
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError([Problem("store", f"cannot lock {self.location} for writing: {exc}")]) from None
            self._in_write = 1
            self._pending: list[Commit] = []
            try:
                yield self
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")
                # Only what was really written may be served from the cache.
                for commit in self._pending:
                    self._commit_cache[commit.t] = commit
            finally:
                self._in_write = 0
                self._pending = []

    def append(self, commit: Commit) -> None:
        assert self._in_write, "append() runs inside write()"
        record = commit_to_record(commit)
        self._db.execute("INSERT INTO journal (t, record) VALUES (?, ?)", (commit.t, _dumps(record)))
        self._apply_state(commit)
        self._pending.append(commit)

    def _apply_state(self, commit: Commit) -> None:
        db = self._db
        for change in commit.changes:
            kind = change.kind
            if kind == "edge_removed":
                db.execute("DELETE FROM edges WHERE source = ? AND target = ? AND type = ?", change.before.key)
            elif kind == "node_removed":
                db.execute("DELETE FROM nodes WHERE id = ?", (change.before.id,))
            elif kind in ("node_added", "node_updated"):
                node = change.after
                db.execute(
                    "INSERT OR REPLACE INTO nodes (id, type, attrs, seq) VALUES (?, ?, ?, ?)",
                    (node.id, node.type, _dumps(thaw(node.attrs)), node.seq),
                )
            elif kind in ("edge_added", "edge_updated"):
                edge = change.after
                db.execute(
                    "INSERT OR REPLACE INTO edges (source, target, type, attrs, seq) VALUES (?, ?, ?, ?, ?)",
                    (edge.source, edge.target, edge.type, _dumps(thaw(edge.attrs)), edge.seq),
                )

    def write_genesis(self, commit: Commit, graph: MemoryGraph) -> None:
        """Record a load into an empty store: the whole graph, in bulk."""
        assert self._in_write and commit.genesis
        self._db.execute("INSERT INTO journal (t, record) VALUES (?, ?)", (commit.t, _dumps(commit_to_record(commit))))
        self._db.executemany(
            "INSERT INTO nodes (id, type, attrs, seq) VALUES (?, ?, ?, ?)",
            ((n.id, n.type, _dumps(thaw(n.attrs)), n.seq) for n in graph.nodes()),
        )
        self._db.executemany(
            "INSERT INTO edges (source, target, type, attrs, seq) VALUES (?, ?, ?, ?, ?)",
            ((e.source, e.target, e.type, _dumps(thaw(e.attrs)), e.seq) for e in graph.edges()),
        )
        self._pending.append(commit)

    # -- small tables -------------------------------------------------------------------------

    def snapshots(self) -> dict[str, int]:
        # On the reading connection: a reader resolving a snapshot name under the memory's
        # read lock must not wait for a commit that is waiting for readers to finish.
        with self._peek_lock:
            return dict(self._reader().execute("SELECT name, t FROM snapshots ORDER BY t, name"))

    def set_snapshot(self, name: str, t: int) -> None:
        with self.write():
            self._db.execute("INSERT OR REPLACE INTO snapshots (name, t) VALUES (?, ?)", (name, t))

    def constraints(self) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT name, text FROM constraints ORDER BY name"))

    def set_constraint(self, name: str, text: str | None) -> None:
        with self.write():
            if text is None:
                self._db.execute("DELETE FROM constraints WHERE name = ?", (name,))
            else:
                self._db.execute("INSERT OR REPLACE INTO constraints (name, text) VALUES (?, ?)", (name, text))

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            return None if row is None else row[0]

    def set_meta(self, key: str, value: str | None) -> None:
        with self.write():
            if value is None:
                self._db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        with self._lock:
            self._db.close()
        with self._peek_lock:
            if self._peek_db is not None:
                self._peek_db.close()
                self._peek_db = None


