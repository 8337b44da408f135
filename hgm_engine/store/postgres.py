"""The PostgreSQL store: the same journal and state as the SQLite store, in a PostgreSQL database.

``PostgresStore("postgresql://user@host:5432/db")`` keeps the tables of ``SQLiteStore``
(prefixed ``hgm_``, records and attributes as ``json`` so they read back exactly as written)
in the connection's current schema; put several memories in one database with
``?options=-csearch_path%3Dname``.

A commit is one transaction at SERIALIZABLE isolation. Its first statement takes a
transaction-level lock, ``LOCK TABLE hgm_journal IN EXCLUSIVE MODE``, so writers are
serialized across processes and machines while readers are never blocked. The lock is a table
lock rather than ``pg_advisory_xact_lock``: a lock *function* runs inside a ``SELECT``, and the
first ``SELECT`` of a SERIALIZABLE transaction fixes its snapshot before the lock is granted,
so a writer that waited would not see the commit it waited for. ``LOCK TABLE`` takes no
snapshot; the snapshot starts after the lock is held, and every writer sees every earlier
commit. The lock is released when the transaction ends, also when the client dies. A commit is
durable when it returns (the server's ``synchronous_commit`` decides what durable means).

psycopg 3 is an optional dependency (``pip install 'hgm-engine[postgres]'``); it is imported when a
store is opened, so the engine imports without it.

Nothing here needs a server to show:

>>> redact_url("postgresql://agent:s3cret@db.example:5433/memory?sslmode=require")
'postgresql://agent:***@db.example:5433/memory?sslmode=require'
>>> is_postgres_url("postgres://localhost/memory"), is_postgres_url("memory.db")
(True, False)
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.parse
from typing import Any, Callable, Iterator

from hgm_engine.errors import Problem, StoreError
from hgm_engine.model import Commit, MemoryGraph, thaw
from hgm_engine.store.base import Store
from hgm_engine.store.journal import commit_from_row, commit_to_record
from hgm_engine.store.rows import build_state

__all__ = ["PostgresStore", "is_postgres_url", "redact_url"]

SCHEMA_VERSION = "1"
URL_SCHEMES = ("postgresql://", "postgres://")

_TABLES = """
CREATE TABLE IF NOT EXISTS hgm_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hgm_journal (t BIGINT PRIMARY KEY, record JSON NOT NULL);
CREATE TABLE IF NOT EXISTS hgm_nodes (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    attrs JSON NOT NULL,
    seq BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS hgm_edges (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    type TEXT NOT NULL,
    attrs JSON NOT NULL,
    seq BIGINT NOT NULL,
    PRIMARY KEY (source, target, type)
);
CREATE TABLE IF NOT EXISTS hgm_snapshots (name TEXT PRIMARY KEY, t BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS hgm_constraints (name TEXT PRIMARY KEY, text TEXT NOT NULL);
"""

# The node index (hgm_engine.search): its saved segment and its t (rows 'segment' and 't'),
# the entries changed since the segment was saved, the vectors of texts by model. Created
# with a new store, and by the first index write of a store made before them.
_INDEX_TABLES = """
CREATE TABLE IF NOT EXISTS hgm_node_index (name TEXT PRIMARY KEY, t BIGINT NOT NULL, data BYTEA);
CREATE TABLE IF NOT EXISTS hgm_node_index_changes (id TEXT PRIMARY KEY, terms TEXT);
CREATE TABLE IF NOT EXISTS hgm_node_vectors (
    model TEXT NOT NULL,
    key TEXT NOT NULL,
    vector BYTEA NOT NULL,
    PRIMARY KEY (model, key)
);
"""

# Serializes table creation when several processes open a new database at once.
_INIT_LOCK_KEY = 0x68676D5F696E6974  # "hgm_init"

# The tables and the columns hgm reads.
_COLUMNS: dict[str, tuple[str, ...]] = {
    "hgm_meta": ("key", "value"),
    "hgm_journal": ("t", "record"),
    "hgm_nodes": ("id", "type", "attrs", "seq"),
    "hgm_edges": ("source", "target", "type", "attrs", "seq"),
    "hgm_snapshots": ("name", "t"),
    "hgm_constraints": ("name", "text"),
}

_RESTORE = "restore the database from a backup (pg_dump), or load an 'hgm export' of a good copy into a new database"

# What a server error means for a user, by SQLSTATE.
_HINTS = {
    "53100": "no space left on the database server's disk: free some space there and run the command again",
    "53200": "the database server ran out of memory: run the command again later",
    "25006": "the database is read-only (a standby, or default_transaction_read_only is on): write to the primary",
    "42501": "this role may not do that: grant it the rights it needs, or only read",
    "42P01": f"one of the memory's tables is missing: the store is damaged; {_RESTORE}",
    "42703": f"one of the memory's columns is missing: the store is damaged; {_RESTORE}",
    "XX001": f"the server found damaged data: {_RESTORE}",
    "XX002": "the server found a damaged index: REINDEX the hgm_ tables, or " + _RESTORE,
    "55P03": "another process holds the store's lock: run the command again when it is done",
    "57014": "the statement was cancelled (statement_timeout?): run the command again",
}


def is_postgres_url(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://`` or ``postgres://``).

    >>> is_postgres_url("postgresql://hgm@127.0.0.1:5432/hgm")
    True
    >>> is_postgres_url("/var/lib/hgm/memory.db")
    False
    """
    return str(location).lower().startswith(URL_SCHEMES)


def redact_url(url: str) -> str:
    """``url`` without its password (in the user part or as a ``password=`` parameter).

    >>> redact_url("postgresql://hgm@127.0.0.1:5432/hgm")
    'postgresql://hgm@127.0.0.1:5432/hgm'
    >>> redact_url("postgres://u:pw@h1:5432,h2:5433/db?password=pw&connect_timeout=3")
    'postgres://u:***@h1:5432,h2:5433/db?password=***&connect_timeout=3'
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, slash, tail = rest.partition("/")
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:***@{hosts}" if colon else f"{user}@{hosts}"
    path, question, query = tail.partition("?")
    if question:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        if any(key == "password" for key, _ in pairs):
            query = "&".join(
                f"{key}=***" if key == "password" else f"{key}={urllib.parse.quote(value, safe='')}"
                for key, value in pairs
            )
    return f"{scheme}://{netloc}{slash}{path}{question}{query}"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _psycopg():
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            [
                Problem(
                    "store",
                    "a PostgreSQL store needs psycopg 3: pip install 'hgm-engine[postgres]' (or 'psycopg[binary]')",
                )
            ]
        ) from None
    return psycopg


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PostgresStore(Store):
    """Journal and state in a PostgreSQL database (``location`` is the URL without password).

    ``timeout`` bounds how long a writer waits for another writer's lock (seconds) and how
    long connecting may take. Tables are created on first open, unless ``create`` is false:
    then a database without them is a ``StoreError`` ("no memory at ..."). As with a SQLite
    file, a memory exists once something was committed to it: the first commit writes the
    row ``hgm_meta 'complete'`` with it, and tables without that row (a first ``hgm load``
    that failed, say) are no memory either when ``create`` is false. Tables written before
    that row existed count as a memory when they hold anything.

    >>> from hgm_engine import Memory
    >>> store = PostgresStore("postgresql://hgm@127.0.0.1:5432/hgm")  # doctest: +SKIP
    >>> with Memory(store=store) as memory:  # doctest: +SKIP
    ...     memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}).t
    1
    """

    def __init__(self, url: str, *, timeout: float = 30.0, create: bool = True):
        self._psycopg = _psycopg()
        self._url = str(url)
        self.location = redact_url(self._url)
        self._timeout = timeout
        self._lock = threading.RLock()
        # A second connection answers committed_t: the first one is held for a whole commit.
        self._peek_lock = threading.Lock()
        self._peek_db = None
        self._in_write = 0
        self._commit_cache: dict[int, Commit] = {}
        self._pending: dict[int, Commit] = {}  # appended in the open write, not committed yet
        self._complete = False  # whether a commit was ever made (the 'complete' row is there)
        self._db = self._connect()
        try:
            row = self._existing_version()
            if row is None and not create:
                self._db.close()
                raise StoreError(
                    [Problem("store", f"no memory at {self.location} (its hgm tables do not exist)", where=self.location)]
                )
            self._complete = row is not None and row[0] == SCHEMA_VERSION and self._committed_before()
            if row is not None and row[0] == SCHEMA_VERSION and not self._complete and not create:
                self._db.close()
                raise StoreError(
                    [
                        Problem(
                            "store",
                            f"no memory at {self.location} (its hgm tables are there, but nothing was ever "
                            "committed to them: a first load or apply that failed made them)",
                            where=self.location,
                        )
                    ]
                )
            if row is None:  # a new store (or one being created by another process right now)
                with self._db.transaction():
                    self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_INIT_LOCK_KEY,))
                    self._db.execute(_TABLES)
                    self._db.execute(_INDEX_TABLES)
                    row = self._db.execute("SELECT value FROM hgm_meta WHERE key = 'schema_version'").fetchone()
                    if row is None:
                        self._db.execute("INSERT INTO hgm_meta VALUES ('schema_version', %s)", (SCHEMA_VERSION,))
        except self._psycopg.Error as exc:
            self._db.close()
            raise self._error(f"cannot set up the tables in {self.location}", exc) from None
        except StoreError:
            self._db.close()
            raise
        if row is not None and row[0] != SCHEMA_VERSION:
            self._db.close()
            raise StoreError(
                [Problem("store", f"{self.location} has store format {row[0]}, this hgm reads {SCHEMA_VERSION}")]
            )

    def _existing_version(self):
        """The stored format version when the tables exist (no DDL, so read-only roles can
        open a store), None when none of them does (a new store). Some tables but not all,
        a column or the format row missing: the store is damaged."""
        names = list(_COLUMNS)
        found = dict(
            self._db.execute(
                "SELECT name, to_regclass(name)::oid FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
                (names,),
            ).fetchall()
        )
        if not found:
            return None
        for name in names:
            if name not in found:
                raise self._damaged(f"table {name!r} is missing")
        columns: dict[int, set[str]] = {}
        for relation, column in self._db.execute(
            "SELECT attrelid::oid, attname FROM pg_attribute WHERE attrelid = ANY(%s::oid[]) AND attnum > 0 AND NOT attisdropped",
            (list(found.values()),),
        ).fetchall():
            columns.setdefault(relation, set()).add(column)
        for name, wanted in _COLUMNS.items():
            for column in wanted:
                if column not in columns.get(found[name], set()):
                    raise self._damaged(f"table {name!r} has no column {column!r}")
        row = self._db.execute("SELECT value FROM hgm_meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            raise self._damaged("it has no store format row (hgm_meta 'schema_version')")
        return row

    def _committed_before(self) -> bool:
        """Whether the tables hold a memory: the 'complete' row its first commit wrote, or,
        in tables from before that row, anything at all (a commit, a snapshot, a constraint,
        metadata besides the store format)."""
        return bool(
            self._db.execute(
                "SELECT EXISTS (SELECT 1 FROM hgm_meta WHERE key <> 'schema_version')"
                " OR EXISTS (SELECT 1 FROM hgm_journal)"
                " OR EXISTS (SELECT 1 FROM hgm_snapshots)"
                " OR EXISTS (SELECT 1 FROM hgm_constraints)"
            ).fetchone()[0]
        )

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r})"

    # -- connection ---------------------------------------------------------------------------

    def _connect(self):
        psycopg = self._psycopg
        kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in self._url:
            kwargs["connect_timeout"] = max(1, int(self._timeout))
        if "application_name" not in self._url:
            kwargs["application_name"] = "hgm"
        try:
            return psycopg.connect(self._url, **kwargs)
        except (psycopg.Error, ValueError) as exc:  # a malformed URL is a ProgrammingError
            raise StoreError(
                [Problem("store", f"cannot connect to {self.location}: {_first_line(exc)}", where=self.location)]
            ) from None

    def _conn(self):
        """The connection, opened again when the last one was lost (never inside a write)."""
        if self._db.closed and not self._in_write:
            self._db = self._connect()
        return self._db

    def _error(self, action: str, exc: BaseException) -> StoreError:
        hint = _HINTS.get(getattr(exc, "sqlstate", None) or "")
        text = f"{action}: {_first_line(exc)}" + (f" ({hint})" if hint else "")
        return StoreError([Problem("store", text, where=self.location)])

    def _damaged(self, what: str) -> StoreError:
        """A StoreError for damage found in the stored rows, with the way to recover."""
        return StoreError([Problem("store", f"{self.location} is damaged: {what}. To recover, {_RESTORE}", where=self.location)])

    def _read(self, action: str, read: Callable[[Any], Any]) -> Any:
        """``read(connection)`` under the lock. Outside a write, a lost connection is opened
        again and the read tried once more (a read changes nothing, so that is safe)."""
        with self._lock:
            for attempt in (1, 2):
                db = self._conn()
                try:
                    return read(db)
                except self._psycopg.Error as exc:
                    if attempt == 1 and db.closed and not self._in_write:
                        continue
                    raise self._error(f"cannot {action} in {self.location}", exc) from None

    # -- reading ------------------------------------------------------------------------------

    def load_state(self) -> tuple[MemoryGraph, int]:
        return self._read("read the state", self._load_state)

    def _load_state(self, db) -> tuple[MemoryGraph, int]:
        nested = bool(self._in_write)
        if not nested:
            # One snapshot, so the state and its t agree even while others write.
            db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            t = self._latest_t(db)
            # Attribute maps come as text and are decoded in one pass (store/rows.py).
            node_rows = db.execute("SELECT id, type, attrs::text, seq FROM hgm_nodes ORDER BY seq").fetchall()
            edge_rows = db.execute("SELECT source, target, type, attrs::text, seq FROM hgm_edges ORDER BY seq").fetchall()
        except BaseException:
            if not nested:
                self._rollback(db)
            raise
        if not nested:
            db.execute("COMMIT")
        return build_state(node_rows, edge_rows, self._damaged), t

    @staticmethod
    def _latest_t(db) -> int:
        row = db.execute("SELECT MAX(t) FROM hgm_journal").fetchone()
        return row[0] or 0

    def latest_t(self) -> int:
        return self._read("read the journal", self._latest_t)

    def _peek(self, action: str, read: Callable[[Any], Any]) -> Any:
        """``read(connection)`` on the second, read-only connection (opened on first use, and
        again once if it was lost: a read changes nothing)."""
        with self._peek_lock:
            for attempt in (1, 2):
                if self._peek_db is None or self._peek_db.closed:
                    self._peek_db = self._connect()
                try:
                    return read(self._peek_db)
                except self._psycopg.Error as exc:
                    if attempt == 1 and self._peek_db.closed:
                        continue
                    raise self._error(f"cannot {action} in {self.location}", exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def committed_t(self) -> int:
        return self._peek("read the journal", self._latest_t)

    def read_commits(self, t: int, upto: int) -> list[Commit]:
        missing = [n for n in range(t + 1, upto + 1) if self._cached(n) is None]
        if missing:
            rows = self._peek(
                "read the journal",
                lambda db: db.execute(
                    "SELECT t, record FROM hgm_journal WHERE t > %s AND t <= %s ORDER BY t", (t, upto)
                ).fetchall(),
            )
            for number, record in rows:
                if self._commit_cache.get(number) is None:
                    self._commit_cache[number] = commit_from_row(number, record, self._damaged)
        return [c for c in (self._cached(n) for n in range(t + 1, upto + 1)) if c is not None]

    def change_token(self) -> object:
        # One round trip: the latest t and digests of the constraints and the rule sets
        # (what another process can change without a commit).
        def read(db) -> tuple:
            return db.execute(
                "SELECT (SELECT COALESCE(MAX(t), 0) FROM hgm_journal),"
                " (SELECT md5(COALESCE(string_agg(name || chr(31) || text, chr(30) ORDER BY name), ''))"
                "  FROM hgm_constraints),"
                " (SELECT md5(COALESCE(string_agg(key || chr(31) || value, chr(30) ORDER BY key), ''))"
                "  FROM hgm_meta WHERE key = 'rule_sets' OR key LIKE 'rules:%%')"
            ).fetchone()

        return self._read("read the journal", read)

    def _cached(self, t: int) -> Commit | None:
        return self._pending.get(t) or self._commit_cache.get(t)

    def commits_after(self, t: int, upto: int | None = None) -> list[Commit]:
        def read(db) -> list[Commit]:
            high = self._latest_t(db) if upto is None else upto
            missing = [n for n in range(t + 1, high + 1) if self._cached(n) is None]
            if missing:
                rows = db.execute(
                    "SELECT t, record FROM hgm_journal WHERE t >= %s AND t <= %s ORDER BY t", (missing[0], missing[-1])
                ).fetchall()
                for number, record in rows:
                    if self._cached(number) is None:
                        self._commit_cache[number] = commit_from_row(number, record, self._damaged)
            found = (self._cached(n) for n in range(t + 1, high + 1))
            return [commit for commit in found if commit is not None]

        return self._read("read the journal", read)

    # -- writing ------------------------------------------------------------------------------

    @staticmethod
    def _rollback(db) -> None:
        with contextlib.suppress(Exception):
            db.execute("ROLLBACK")

    @contextlib.contextmanager
    def write(self) -> Iterator["PostgresStore"]:
        """Hold the write lock for one commit (nested calls join the open one).

        Changes made inside commit together when the block ends, or not at all."""
        psycopg = self._psycopg
        with self._lock:
            if self._in_write:
                self._in_write += 1
                try:
                    yield self
                finally:
                    self._in_write -= 1
                return
            for attempt in (1, 2):
                db = self._conn()
                try:
                    db.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
                    # Neither statement takes a snapshot: it starts after the lock is held.
                    db.execute(f"SET LOCAL lock_timeout = '{max(1, int(self._timeout * 1000))}ms'")
                    db.execute("LOCK TABLE hgm_journal IN EXCLUSIVE MODE")
                    break
                except psycopg.Error as exc:
                    self._rollback(db)
                    if attempt == 1 and db.closed:
                        continue  # the connection was lost: nothing was written, open it again
                    raise self._error(f"cannot lock {self.location} for writing", exc) from None
            self._in_write = 1
            self._pending = {}
            try:
                yield self
            except BaseException:
                self._rollback(db)
                raise
            else:
                try:
                    if not self._complete:  # the first commit makes the memory (see the class)
                        db.execute("INSERT INTO hgm_meta (key, value) VALUES ('complete', '1') ON CONFLICT (key) DO NOTHING")
                    db.execute("COMMIT")
                except psycopg.Error as exc:
                    self._rollback(db)
                    raise self._error(f"cannot commit to {self.location}; nothing was written", exc) from None
                self._complete = True
                self._commit_cache.update(self._pending)
            finally:
                self._pending = {}
                self._in_write = 0

    @contextlib.contextmanager
    def _statement(self, action: str) -> Iterator[Any]:
        assert self._in_write, f"{action} runs inside write()"
        try:
            yield self._db
        except self._psycopg.Error as exc:
            raise self._error(f"cannot {action} in {self.location}", exc) from None

    def append(self, commit: Commit) -> None:
        """Record ``commit`` and apply its changes to the stored state (inside ``write``)."""
        with self._statement("append a commit") as db:
            db.execute(
                "INSERT INTO hgm_journal (t, record) VALUES (%s, %s)", (commit.t, _dumps(commit_to_record(commit)))
            )
            self._apply_state(db, commit)
        self._pending[commit.t] = commit

    @staticmethod
    def _apply_state(db, commit: Commit) -> None:
        # The last change of each node or edge decides its row (an upsert replaces the row).
        nodes: dict[str, Any] = {}
        edges: dict[tuple, Any] = {}
        for change in commit.changes:
            kind = change.kind
            if kind == "node_removed":
                nodes[change.before.id] = None
            elif kind in ("node_added", "node_updated"):
                nodes[change.after.id] = change.after
            elif kind == "edge_removed":
                edges[change.before.key] = None
            elif kind in ("edge_added", "edge_updated"):
                edges[change.after.key] = change.after
        cur = db.cursor()
        gone_edges = [key for key, edge in edges.items() if edge is None]
        if gone_edges:
            cur.executemany("DELETE FROM hgm_edges WHERE source = %s AND target = %s AND type = %s", gone_edges)
        gone_nodes = [(node_id,) for node_id, node in nodes.items() if node is None]
        if gone_nodes:
            cur.executemany("DELETE FROM hgm_nodes WHERE id = %s", gone_nodes)
        kept_nodes = [(n.id, n.type, _dumps(thaw(n.attrs)), n.seq) for n in nodes.values() if n is not None]
        if kept_nodes:
            cur.executemany(
                "INSERT INTO hgm_nodes (id, type, attrs, seq) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET type = EXCLUDED.type, attrs = EXCLUDED.attrs, seq = EXCLUDED.seq",
                kept_nodes,
            )
        kept_edges = [
            (e.source, e.target, e.type, _dumps(thaw(e.attrs)), e.seq) for e in edges.values() if e is not None
        ]
        if kept_edges:
            cur.executemany(
                "INSERT INTO hgm_edges (source, target, type, attrs, seq) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (source, target, type) DO UPDATE SET attrs = EXCLUDED.attrs, seq = EXCLUDED.seq",
                kept_edges,
            )

    def write_genesis(self, commit: Commit, graph: MemoryGraph) -> None:
        """Record a load into an empty store: the whole graph, in bulk (COPY)."""
        assert commit.genesis
        with self._statement("load the graph") as db:
            db.execute(
                "INSERT INTO hgm_journal (t, record) VALUES (%s, %s)", (commit.t, _dumps(commit_to_record(commit)))
            )
            with db.cursor() as cur:
                with cur.copy("COPY hgm_nodes (id, type, attrs, seq) FROM STDIN") as copy:
                    for n in graph.nodes():
                        copy.write_row((n.id, n.type, _dumps(thaw(n.attrs)), n.seq))
                with cur.copy("COPY hgm_edges (source, target, type, attrs, seq) FROM STDIN") as copy:
                    for e in graph.edges():
                        copy.write_row((e.source, e.target, e.type, _dumps(thaw(e.attrs)), e.seq))
        self._pending[commit.t] = commit

    # -- the node index -----------------------------------------------------------------------

    keeps_node_index = True

    @staticmethod
    def _index_tables(db) -> bool:
        row = db.execute(
            "SELECT to_regclass('hgm_node_index') IS NOT NULL AND to_regclass('hgm_node_index_changes') IS NOT NULL"
            " AND to_regclass('hgm_node_vectors') IS NOT NULL"
        ).fetchone()
        return bool(row[0])

    def _ensure_index_tables(self, db) -> None:
        """The index tables of a store made before them (created in the open write; known
        to be there once a write finds them)."""
        if getattr(self, "_index_ready", False):
            return
        if self._index_tables(db):
            self._index_ready = True
        else:
            db.execute(_INDEX_TABLES)

    def read_node_index(self) -> tuple[int, bytes | None, list[tuple[str, str | None]]] | None:
        """The kept node index (see :meth:`Store.read_node_index`), in one snapshot, on the
        second connection."""

        def read(db):
            if not self._index_tables(db):
                return None
            db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                rows = {name: (t, data) for name, t, data in db.execute("SELECT name, t, data FROM hgm_node_index")}
                changed = db.execute("SELECT id, terms FROM hgm_node_index_changes").fetchall()
            finally:
                self._rollback(db)
            head = rows.get("t")
            if head is None:
                return None
            segment = rows.get("segment")
            return head[0], None if segment is None or segment[1] is None else bytes(segment[1]), [tuple(r) for r in changed]

        return self._peek("read the node index", read)

    def node_index_t(self) -> int | None:
        with self._statement("read the node index") as db:
            if not self._index_tables(db):
                return None
            row = db.execute("SELECT t FROM hgm_node_index WHERE name = 't'").fetchone()
        return None if row is None else row[0]

    def write_node_index(self, t: int, changed: list[tuple[str, str | None]], segment: bytes | None = None) -> None:
        with self._statement("write the node index") as db:
            self._ensure_index_tables(db)
            cur = db.cursor()
            if segment is not None:
                cur.execute("DELETE FROM hgm_node_index_changes")
                cur.execute(
                    "INSERT INTO hgm_node_index (name, t, data) VALUES ('segment', %s, %s) "
                    "ON CONFLICT (name) DO UPDATE SET t = EXCLUDED.t, data = EXCLUDED.data",
                    (t, segment),
                )
            if changed:
                cur.executemany(
                    "INSERT INTO hgm_node_index_changes (id, terms) VALUES (%s, %s) "
                    "ON CONFLICT (id) DO UPDATE SET terms = EXCLUDED.terms",
                    changed,
                )
            cur.execute(
                "INSERT INTO hgm_node_index (name, t, data) VALUES ('t', %s, NULL) ON CONFLICT (name) DO UPDATE SET t = EXCLUDED.t",
                (t,),
            )

    def read_node_vectors(self, model: str, keys: list[str] | None = None) -> dict[str, bytes]:
        def read(db):
            if not self._index_tables(db):
                return {}
            if keys is None:
                rows = db.execute("SELECT key, vector FROM hgm_node_vectors WHERE model = %s", (model,)).fetchall()
            else:
                rows = db.execute(
                    "SELECT key, vector FROM hgm_node_vectors WHERE model = %s AND key = ANY(%s)", (model, list(keys))
                ).fetchall()
            return {key: bytes(vector) for key, vector in rows}

        return self._peek("read the node vectors", read)

    def write_node_vectors(self, model: str, rows: list[tuple[str, bytes]], *, clear: bool = False) -> None:
        with self._statement("write the node vectors") as db:
            self._ensure_index_tables(db)
            cur = db.cursor()
            if clear:
                cur.execute("DELETE FROM hgm_node_vectors")
            if rows:
                cur.executemany(
                    "INSERT INTO hgm_node_vectors (model, key, vector) VALUES (%s, %s, %s) "
                    "ON CONFLICT (model, key) DO UPDATE SET vector = EXCLUDED.vector",
                    [(model, key, vector) for key, vector in rows],
                )

    # -- small tables -------------------------------------------------------------------------

    def snapshots(self) -> dict[str, int]:
        # On the reading connection: a reader resolving a snapshot name under the memory's
        # read lock must not wait for a commit that is waiting for readers to finish.
        return self._peek(
            "read the snapshots", lambda db: dict(db.execute("SELECT name, t FROM hgm_snapshots ORDER BY t, name").fetchall())
        )

    def set_snapshot(self, name: str, t: int) -> None:
        with self.write(), self._statement("name a snapshot") as db:
            db.execute(
                "INSERT INTO hgm_snapshots (name, t) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET t = EXCLUDED.t",
                (name, t),
            )

    def constraints(self) -> dict[str, str]:
        return self._read(
            "read the constraints",
            lambda db: dict(db.execute("SELECT name, text FROM hgm_constraints ORDER BY name").fetchall()),
        )

    def set_constraint(self, name: str, text: str | None) -> None:
        with self.write(), self._statement("store a constraint") as db:
            if text is None:
                db.execute("DELETE FROM hgm_constraints WHERE name = %s", (name,))
            else:
                db.execute(
                    "INSERT INTO hgm_constraints (name, text) VALUES (%s, %s) "
                    "ON CONFLICT (name) DO UPDATE SET text = EXCLUDED.text",
                    (name, text),
                )

    def get_meta(self, key: str) -> str | None:
        row = self._read(
            "read the metadata", lambda db: db.execute("SELECT value FROM hgm_meta WHERE key = %s", (key,)).fetchone()
        )
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str | None) -> None:
        with self.write(), self._statement("store metadata") as db:
            if value is None:
                db.execute("DELETE FROM hgm_meta WHERE key = %s", (key,))
            else:
                db.execute(
                    "INSERT INTO hgm_meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    (key, value),
                )

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(Exception):
                self._db.close()
        with self._peek_lock:
            if self._peek_db is not None:
                with contextlib.suppress(Exception):
                    self._peek_db.close()
                self._peek_db = None
