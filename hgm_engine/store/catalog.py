"""Many memories in one store: names, and where each memory's tables live.

A *memory name* is one or more segments of ``[A-Za-z0-9._-]`` joined by ``/``
(``acme/alice/trip-42``), at most :data:`MAX_NAME_LENGTH` characters; a segment is never
``.`` or ``..``. ``default`` is the memory a store holds when no name is given: it is the
store as hgm has always written it, so a store made before names existed opens as
``default`` unchanged.

A catalog keeps the other names and, for each, the place of its own journal, state,
snapshots, constraints, rule sets and schema:

- SQLite (``SQLiteCatalog``): ``default`` is the file itself; every named memory is a SQLite
  file of its own in the folder ``FILE.memories/``, listed in ``FILE.memories/catalog.db``.
  Each memory has its own write lock, so writers of different memories never wait for each
  other; writers of one memory are serialized by that file's lock.
- PostgreSQL (``PostgresCatalog``): ``default`` is the ``hgm_`` tables of the connection's
  schema; every named memory is a PostgreSQL schema of its own (``hgm_m_`` and a random
  suffix), listed in the table ``hgm_memories``. Its writers lock its own journal, so writers
  of different memories never wait for each other.

>>> check_memory_name("acme/alice/trip-42")
'acme/alice/trip-42'
>>> check_memory_name("acme//x")
Traceback (most recent call last):
...
hgm_engine.errors.RequestError: invalid-memory-name at memory: the memory name 'acme//x' has an empty segment: a name is segments of letters, digits, '.', '_' and '-' joined by '/'
"""

from __future__ import annotations

import abc
import contextlib
import difflib
import os
import re
import secrets
import sqlite3
import time
from typing import Any

from hgm_engine.errors import Problem, RequestError, StoreError
from hgm_engine.store.base import Store

__all__ = [
    "DEFAULT_MEMORY",
    "MAX_NAME_LENGTH",
    "check_memory_name",
    "check_memory_prefix",
    "unknown_memory",
    "MemoryCatalog",
    "SQLiteCatalog",
    "PostgresCatalog",
    "open_catalog",
]

DEFAULT_MEMORY = "default"
MAX_NAME_LENGTH = 200
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+\Z")
_RULES = "a name is segments of letters, digits, '.', '_' and '-' joined by '/'"


def _bad_name(message: str, where: str) -> RequestError:
    return RequestError([Problem("invalid-memory-name", message, where=where)])


def check_memory_name(name: Any, where: str = "memory") -> str:
    """``name`` when it is a memory name, else a ``RequestError`` (category
    ``invalid-memory-name``, ``where`` the argument) saying which rule it breaks.

    >>> check_memory_name("default")
    'default'
    >>> check_memory_name("a/../b")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: invalid-memory-name at memory: the memory name 'a/../b' has the segment '..', which names no memory: a name is segments of letters, digits, '.', '_' and '-' joined by '/'
    """
    if not isinstance(name, str):
        raise _bad_name(f"a memory name is text, not {type(name).__name__}", where)
    shown = name if len(name) <= 60 else name[:57] + "..."
    if not name:
        raise _bad_name(f"the memory name is empty: {_RULES}", where)
    if len(name) > MAX_NAME_LENGTH:
        raise _bad_name(f"the memory name {shown!r} has {len(name)} characters, more than {MAX_NAME_LENGTH}", where)
    for segment in name.split("/"):
        if not segment:
            raise _bad_name(f"the memory name {shown!r} has an empty segment: {_RULES}", where)
        if segment in (".", ".."):
            raise _bad_name(f"the memory name {shown!r} has the segment {segment!r}, which names no memory: {_RULES}", where)
        if not _SEGMENT.match(segment):
            bad = next(ch for ch in segment if not re.match(r"[A-Za-z0-9._-]", ch))
            raise _bad_name(f"the memory name {shown!r} has the character {bad!r}: {_RULES}", where)
    return name


def check_memory_prefix(prefix: Any, where: str = "prefix") -> str:
    """A listing prefix: empty, or the start of a name (``acme/``, ``acme/al``).

    >>> check_memory_prefix("acme/"), check_memory_prefix("")
    ('acme/', '')
    >>> check_memory_prefix("a b")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: invalid-memory-name at prefix: the prefix 'a b' has the character ' ': ...
    """
    if not isinstance(prefix, str):
        raise _bad_name(f"a prefix is text, not {type(prefix).__name__}", where)
    if len(prefix) > MAX_NAME_LENGTH:
        raise _bad_name(f"the prefix has {len(prefix)} characters, more than {MAX_NAME_LENGTH}", where)
    bad = next((ch for ch in prefix if not re.match(r"[A-Za-z0-9._/-]", ch)), None)
    if bad is not None:
        raise _bad_name(f"the prefix {prefix!r} has the character {bad!r}: {_RULES}", where)
    return prefix


def unknown_memory(name: str, names: list[str], location: str) -> RequestError:
    """The ``unknown-memory`` error for ``name``, suggesting the closest of ``names``.

    >>> print(unknown_memory("acme/alcie", ["acme/alice", "acme/bob"], "m.db").message)
    no memory 'acme/alcie' in m.db; did you mean 'acme/alice'? (create it with 'hgm memories create acme/alcie')
    """
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = ""
    if close:
        hint = "; did you mean " + " or ".join(repr(n) for n in close) + "?"
    return RequestError(
        [Problem("unknown-memory", f"no memory {name!r} in {location}{hint} (create it with 'hgm memories create {name}')", where=name)]
    )


def _exists_error(name: str, location: str) -> RequestError:
    return RequestError([Problem("memory-exists", f"a memory {name!r} is already in {location}", where=name)])


class MemoryCatalog(abc.ABC):
    """The memories of one store location: what every catalog does (see the module)."""

    location: str

    @abc.abstractmethod
    def names(self, prefix: str = "") -> list[str]:
        """The names of the memories, sorted, that start with ``prefix``."""

    def exists(self, name: str) -> bool:
        """Whether a memory ``name`` is in the store."""
        return name in self.names(name)

    @abc.abstractmethod
    def open(self, name: str, *, create: bool = False) -> Store:
        """The store of memory ``name``; ``unknown-memory`` when it is not there (``create``:
        ``default`` is made on its first write, as ever; other names need :meth:`create`)."""

    @abc.abstractmethod
    def create(self, name: str, meta: dict[str, str]) -> None:
        """Make memory ``name`` with the metadata ``meta`` (its schema); ``memory-exists``
        when the name is taken."""

    @abc.abstractmethod
    def drop(self, name: str) -> None:
        """Remove memory ``name`` and its whole history; ``unknown-memory`` when not there."""

    def close(self) -> None:
        """Release what the catalog holds open."""

    def __enter__(self) -> "MemoryCatalog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- SQLite -------------------------------------------------------------------------------------


class SQLiteCatalog(MemoryCatalog):
    """``default`` in the file ``path``; named memories in ``path.memories/`` (see the module).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.db")
    >>> catalog = SQLiteCatalog(path)
    >>> catalog.names()
    []
    >>> catalog.create("acme/alice", {"note": "hi"})
    >>> catalog.names(), catalog.open("acme/alice").get_meta("note")
    (['acme/alice'], 'hi')
    >>> catalog.drop("acme/alice"); catalog.names()
    []
    """

    def __init__(self, path: str | os.PathLike, *, check: str = "quick", timeout: float = 30.0):
        self.location = os.fspath(path)
        self.folder = self.location + ".memories"
        self._check = check
        self._timeout = timeout

    def __repr__(self) -> str:
        return f"SQLiteCatalog({self.location!r})"

    def _problem(self, message: str) -> StoreError:
        return StoreError([Problem("store", message, where=self.location)])

    @contextlib.contextmanager
    def _catalog(self, *, write: bool):
        """The catalog file's connection, inside one transaction (``write``: the catalog's
        write lock, so two processes never take one name at once). None when there is no
        catalog yet and ``write`` is false."""
        file = os.path.join(self.folder, "catalog.db")
        if not write and not os.path.exists(file):
            yield None
            return
        try:
            if write:
                os.makedirs(self.folder, exist_ok=True)
            db = sqlite3.connect(file, timeout=self._timeout, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise self._problem(f"cannot open the catalog of memories {file}: {exc}") from None
        try:
            db.execute("PRAGMA secure_delete=ON")
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            if write:
                db.execute("CREATE TABLE IF NOT EXISTS memories (name TEXT PRIMARY KEY, file TEXT NOT NULL, created REAL NOT NULL)")
            yield db
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise self._problem(f"cannot use the catalog of memories {file}: {exc}") from None
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    def _rows(self, db) -> dict[str, str]:
        if db is None:
            return {}
        try:
            return dict(db.execute("SELECT name, file FROM memories ORDER BY name").fetchall())
        except sqlite3.OperationalError:  # a catalog file made, but no table yet
            return {}

    def names(self, prefix: str = "") -> list[str]:
        with self._catalog(write=False) as db:
            names = list(self._rows(db))
        if os.path.exists(self.location):
            names.append(DEFAULT_MEMORY)
        return sorted(n for n in names if n.startswith(prefix))

    def _file(self, name: str) -> str | None:
        with self._catalog(write=False) as db:
            found = self._rows(db).get(name)
        return None if found is None else os.path.join(self.folder, found)

    def open(self, name: str, *, create: bool = False) -> Store:
        from hgm_engine.store.sqlite import SQLiteStore

        check_memory_name(name)
        if name == DEFAULT_MEMORY:
            if not create and not os.path.exists(self.location):
                raise unknown_memory(name, self.names(), self.location)
            return SQLiteStore(self.location, create=create, check=self._check, timeout=self._timeout)
        file = self._file(name)
        if file is None:
            raise unknown_memory(name, self.names(), self.location)
        if not os.path.exists(file):
            raise self._problem(
                f"{self.location} is damaged: memory {name!r} is listed in its catalog but its file {file} is missing; "
                f"restore the file from a backup, or remove the name with 'hgm memories drop {name} --yes'"
            )
        return SQLiteStore(file, create=False, check=self._check, timeout=self._timeout)

    def create(self, name: str, meta: dict[str, str]) -> None:
        from hgm_engine.store.sqlite import SQLiteStore

        check_memory_name(name)
        if name == DEFAULT_MEMORY:
            if os.path.exists(self.location):
                raise _exists_error(name, self.location)
            store = SQLiteStore(self.location, check=self._check, timeout=self._timeout)
            try:
                with store.write():
                    for key, value in {"memory": name, **meta}.items():
                        store.set_meta(key, value)
            finally:
                store.close()
            return
        with self._catalog(write=True) as db:
            if name in self._rows(db):
                raise _exists_error(name, self.location)
            file = f"m-{secrets.token_hex(8)}.db"
            path = os.path.join(self.folder, file)
            store = SQLiteStore(path, check=self._check, timeout=self._timeout)
            try:
                with store.write():  # the first write puts the file in place, complete
                    for key, value in {"memory": name, **meta}.items():
                        store.set_meta(key, value)
            finally:
                store.close()
            try:
                db.execute("INSERT INTO memories (name, file, created) VALUES (?, ?, ?)", (name, file, time.time()))
            except BaseException:
                _remove_sqlite_files(path)
                raise

    def drop(self, name: str) -> None:
        check_memory_name(name)
        if name == DEFAULT_MEMORY:
            if not os.path.exists(self.location):
                raise unknown_memory(name, self.names(), self.location)
            _remove_sqlite_files(self.location)
            return
        with self._catalog(write=True) as db:
            file = self._rows(db).get(name)
            if file is None:
                raise unknown_memory(name, self.names(), self.location)
            db.execute("DELETE FROM memories WHERE name = ?", (name,))
        # After the name is gone (a crash here leaves a file no name points to, never a name
        # without its file).
        _remove_sqlite_files(os.path.join(self.folder, file))


def _remove_sqlite_files(file: str) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(file + suffix)


# -- PostgreSQL ---------------------------------------------------------------------------------

_REGISTRY = """
CREATE TABLE IF NOT EXISTS hgm_memories (
    name TEXT PRIMARY KEY,
    schema_name TEXT NOT NULL UNIQUE,
    created DOUBLE PRECISION NOT NULL
)
"""
_DEFAULT_TABLES = ("hgm_meta", "hgm_journal", "hgm_nodes", "hgm_edges", "hgm_snapshots", "hgm_constraints")
_CATALOG_LOCK_KEY = 0x68676D5F63617461  # "hgm_cata": serializes creating and dropping names


class PostgresCatalog(MemoryCatalog):
    """``default`` in the connection's schema; each named memory in a schema of its own (see
    the module). Needs a server to show:

    >>> catalog = PostgresCatalog("postgresql://hgm@127.0.0.1:5432/hgm")  # doctest: +SKIP
    >>> catalog.create("acme/alice", {}); catalog.names("acme/")  # doctest: +SKIP
    ['acme/alice']
    """

    def __init__(self, url: str, *, timeout: float = 30.0):
        from hgm_engine.store.postgres import redact_url

        self._url = str(url)
        self.location = redact_url(self._url)
        self._timeout = timeout
        self._db = None

    def __repr__(self) -> str:
        return f"PostgresCatalog({self.location!r})"

    def _conn(self):
        from hgm_engine.store.postgres import connect

        if self._db is None or self._db.closed:
            self._db = connect(self._url, self.location, self._timeout)
        return self._db

    def _error(self, action: str, exc: BaseException) -> StoreError:
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return StoreError([Problem("store", f"cannot {action} in {self.location}: {text}", where=self.location)])

    def _rows(self, db) -> dict[str, str]:
        if db.execute("SELECT to_regclass('hgm_memories')").fetchone()[0] is None:
            return {}
        return dict(db.execute("SELECT name, schema_name FROM hgm_memories ORDER BY name").fetchall())

    def _default_exists(self, db) -> bool:
        if db.execute("SELECT to_regclass('hgm_meta'), to_regclass('hgm_journal')").fetchone() == (None, None):
            return False
        try:
            return bool(
                db.execute(
                    "SELECT EXISTS (SELECT 1 FROM hgm_meta WHERE key <> 'schema_version') OR EXISTS (SELECT 1 FROM hgm_journal)"
                ).fetchone()[0]
            )
        except Exception:  # noqa: BLE001 - damaged default tables: listed, and opening says why
            db.rollback()
            return True

    def names(self, prefix: str = "") -> list[str]:
        import psycopg

        try:
            db = self._conn()
            names = list(self._rows(db))
            if self._default_exists(db):
                names.append(DEFAULT_MEMORY)
        except psycopg.Error as exc:
            raise self._error("list the memories", exc) from None
        return sorted(n for n in names if n.startswith(prefix))

    def schema_of(self, name: str) -> str | None:
        """The PostgreSQL schema of the named memory ``name`` (None when there is none)."""
        import psycopg

        try:
            return self._rows(self._conn()).get(name)
        except psycopg.Error as exc:
            raise self._error("read the memories", exc) from None

    def open(self, name: str, *, create: bool = False) -> Store:
        from hgm_engine.store.postgres import PostgresStore

        check_memory_name(name)
        if name == DEFAULT_MEMORY:
            if not create and DEFAULT_MEMORY not in self.names(DEFAULT_MEMORY):
                raise unknown_memory(name, self.names(), self.location)
            return PostgresStore(self._url, create=create, timeout=self._timeout)
        schema = self.schema_of(name)
        if schema is None:
            raise unknown_memory(name, self.names(), self.location)
        return PostgresStore(self._url, create=False, timeout=self._timeout, schema=schema)

    def create(self, name: str, meta: dict[str, str]) -> None:
        import psycopg
        from psycopg import sql

        from hgm_engine.store.postgres import PostgresStore

        check_memory_name(name)
        db = self._conn()
        if name == DEFAULT_MEMORY:
            if DEFAULT_MEMORY in self.names(DEFAULT_MEMORY):
                raise _exists_error(name, self.location)
            store = PostgresStore(self._url, timeout=self._timeout)
            try:
                with store.write():
                    for key, value in {"memory": name, **meta}.items():
                        store.set_meta(key, value)
            finally:
                store.close()
            return
        schema = f"hgm_m_{secrets.token_hex(8)}"
        try:
            with db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (_CATALOG_LOCK_KEY,))
                db.execute(_REGISTRY)
                if name in self._rows(db):
                    raise _exists_error(name, self.location)
                db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
                db.execute("INSERT INTO hgm_memories (name, schema_name, created) VALUES (%s, %s, %s)", (name, schema, time.time()))
        except psycopg.Error as exc:
            raise self._error(f"create the memory {name!r}", exc) from None
        try:
            store = PostgresStore(self._url, timeout=self._timeout, schema=schema)
            try:
                with store.write():
                    for key, value in {"memory": name, **meta}.items():
                        store.set_meta(key, value)
            finally:
                store.close()
        except BaseException:
            with contextlib.suppress(Exception):
                self._drop_named(name)
            raise

    def _drop_named(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        db = self._conn()
        try:
            with db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (_CATALOG_LOCK_KEY,))
                schema = self._rows(db).get(name)
                if schema is None:
                    raise unknown_memory(name, self.names(), self.location)
                db.execute("DELETE FROM hgm_memories WHERE name = %s", (name,))
                db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        except psycopg.Error as exc:
            raise self._error(f"drop the memory {name!r}", exc) from None

    def drop(self, name: str) -> None:
        import psycopg

        check_memory_name(name)
        if name != DEFAULT_MEMORY:
            self._drop_named(name)
            return
        db = self._conn()
        if DEFAULT_MEMORY not in self.names(DEFAULT_MEMORY):
            raise unknown_memory(name, self.names(), self.location)
        try:
            with db.transaction():
                db.execute("DROP TABLE IF EXISTS " + ", ".join(_DEFAULT_TABLES))
        except psycopg.Error as exc:
            raise self._error("drop the memory 'default'", exc) from None

    def close(self) -> None:
        if self._db is not None:
            with contextlib.suppress(Exception):
                self._db.close()
            self._db = None


def open_catalog(location: str | os.PathLike, *, check: str | None = None) -> MemoryCatalog:
    """The catalog of memories at ``location``: a ``PostgresCatalog`` for a ``postgresql://``
    URL, a ``SQLiteCatalog`` otherwise (nothing is created until a memory is).

    >>> open_catalog("memory.db")
    SQLiteCatalog('memory.db')
    """
    from hgm_engine.store.postgres import is_postgres_url

    text = os.fspath(location)
    if is_postgres_url(text):
        return PostgresCatalog(text)
    from hgm_engine.store import STORE_CHECK_ENV

    return SQLiteCatalog(text, check=check or os.environ.get(STORE_CHECK_ENV) or "quick")
