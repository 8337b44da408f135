"""The default durable store: one SQLite file holding the journal and the current state.

A commit writes its journal row and its state changes in one SQLite transaction with
``synchronous=FULL`` in WAL mode, so it is durable when it returns and a process killed at
any moment reopens at the last committed ``t``. Writers take SQLite's write lock
(``BEGIN IMMEDIATE``) for the whole commit, so two processes on one file are serialized.

A store is checked when it is opened, and refused with a :class:`StoreError` that says what is
wrong and how to recover when it is not an intact hgm memory: a 0-byte file, a file that is not
a SQLite database, another program's database, a missing table or column, no store format row,
or damage SQLite's ``PRAGMA quick_check`` finds (``check="quick"``, the default; ``"full"``
runs ``integrity_check``, ``"none"`` skips it). Every row carries a CRC-32 of its content
(column ``crc``), checked whenever the row is read, so a changed byte that SQLite cannot see
is reported too, naming the row. Any SQLite error on any path becomes a ``StoreError`` that
names the store and the cause: the file is read-only, no space is left, the file is damaged,
another process holds the lock.

Reopening reads the state from the stored *image* of the built graph when it can be trusted
(:mod:`hgm_engine.store.image`: one checksummed blob, then the journal's commits after it),
else from the rows, each checked as above; triggers count every change to the state and journal
rows made outside hgm, so an image is never used over a hand edit (``image_min_nodes``: the
size from which a memory keeps one, :data:`IMAGE_MIN_NODES` by default, None for never).

A new store is built in a temporary file next to ``path`` and renamed into place by its first
commit: a memory that never committed anything (a first ``hgm load`` that failed on a full
disk, say) leaves no file behind, and a 0-byte or half-made file is never hgm's.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "m.db")
>>> store = SQLiteStore(path)
>>> store.latest_t(), os.path.exists(path)
(0, False)
>>> store.set_meta("note", "hello")  # the first write puts the file in place
>>> os.path.exists(path), store.get_meta("note")
(True, 'hello')
>>> store.close()
"""

from __future__ import annotations

import contextlib
import logging
import operator
import os
import pathlib
import re
import secrets
import shlex
import sqlite3
import threading
import zlib
from typing import Any, Iterator

from hgm_engine.errors import Problem, StoreError
from hgm_engine.model import Commit, MemoryGraph, apply_changes, bulk_allocation
from hgm_engine.store.image import ImageMismatch, decode_image, encode_image
from hgm_engine.store.base import Store
from hgm_engine.store.journal import attrs_json, commit_from_row, commit_to_text
from hgm_engine.store.rows import build_state, edge_name, node_name

__all__ = ["SQLiteStore", "CHECKS", "row_crc"]

SCHEMA_VERSION = "1"
CHECKS = ("quick", "full", "none")  # what opening a store runs: PRAGMA quick_check, integrity_check, nothing

# The tables and the columns hgm reads; ``crc`` (the row's checksum) is added to stores
# written before rows carried one by their first write.
_COLUMNS: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "journal": ("t", "record"),
    "nodes": ("id", "type", "attrs", "seq"),
    "edges": ("source", "target", "type", "attrs", "seq"),
    "snapshots": ("name", "t"),
    "constraints": ("name", "text"),
}

_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL, crc INTEGER);
CREATE TABLE journal (
    t INTEGER PRIMARY KEY,
    record TEXT NOT NULL,
    crc INTEGER
);
CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    attrs TEXT NOT NULL,
    seq INTEGER NOT NULL,
    crc INTEGER
);
CREATE TABLE edges (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    type TEXT NOT NULL,
    attrs TEXT NOT NULL,
    seq INTEGER NOT NULL,
    crc INTEGER,
    PRIMARY KEY (source, target, type)
);
CREATE TABLE snapshots (name TEXT PRIMARY KEY, t INTEGER NOT NULL, crc INTEGER);
CREATE TABLE constraints (name TEXT PRIMARY KEY, text TEXT NOT NULL, crc INTEGER);
"""

# The node index (hgm_engine.search): its saved segment and its t (node_index rows 'segment'
# and 't'), the entries changed since the segment was saved, the vectors of texts by model.
# Created with a new store, and by the first index write of a store made before them. The
# changed entries are small rows written by every commit: WITHOUT ROWID keeps them in one
# B-tree (a rowid table and its primary-key index would be two, each a page more per commit).
# A store made before that has a rowid table, read and written the same way.
_INDEX_TABLES = """
CREATE TABLE IF NOT EXISTS node_index (name TEXT PRIMARY KEY, t INTEGER NOT NULL, data BLOB, crc INTEGER);
CREATE TABLE IF NOT EXISTS node_index_changes (id TEXT PRIMARY KEY, terms TEXT, crc INTEGER) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS node_vectors (
    model TEXT NOT NULL,
    key TEXT NOT NULL,
    vector BLOB NOT NULL,
    crc INTEGER,
    PRIMARY KEY (model, key)
);
"""

# The stored image of the built graph (hgm_engine.store.image): what reopening reads instead of
# every state row. ``image_guard`` counts changes to the state and journal rows made outside
# hgm (``edits``): a trigger on each of those tables bumps it unless hgm itself is writing
# (``writing`` = 1, set and cleared inside hgm's own write transactions, so no other connection
# ever sees it set). An image records the count it was made at; any other count means a row
# was changed by hand (or by a program that is not hgm) and the image is not used: the rows
# are read and checked as before.
_IMAGE_STATEMENTS = [
    "CREATE TABLE IF NOT EXISTS state_image (name TEXT PRIMARY KEY, t INTEGER NOT NULL, data BLOB)",
    "CREATE TABLE IF NOT EXISTS image_guard (k INTEGER PRIMARY KEY CHECK (k = 1), writing INTEGER NOT NULL, edits INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO image_guard (k, writing, edits) VALUES (1, 0, 0)",
] + [
    f"CREATE TRIGGER IF NOT EXISTS hgm_outside_{table}_{event.lower()} AFTER {event} ON {table} "
    "WHEN (SELECT writing FROM image_guard) IS NOT 1 BEGIN UPDATE image_guard SET edits = edits + 1; END"
    for table in ("nodes", "edges", "journal")
    for event in ("INSERT", "UPDATE", "DELETE")
]
_IMAGE_TRIGGERS = 9

IMAGE_MIN_NODES = 2000
"""Memories with fewer nodes keep no image (reading their rows is fast enough); the default of
``SQLiteStore(image_min_nodes=...)``, where None keeps none at all."""

IMAGE_REPLAY_MAX = 1000
"""An image older than this many commits is not replayed forward: the rows are read (and a
new image written)."""

IMAGE_REWRITE_AFTER = 50
"""Opening writes a new image when it replayed at least this many commits onto the old one."""

_log = logging.getLogger("hgm.store")
_UNSET = object()

# Read in table order and sorted by seq here: the rows come nearly in creation order, which
# Python's sort orders in one pass, where SQLite's ORDER BY sorts them all (a third of the read).
_NODE_ROWS = "SELECT id, type, attrs, seq, {crc} FROM nodes NOT INDEXED"
_EDGE_ROWS = "SELECT source, target, type, attrs, seq, {crc} FROM edges NOT INDEXED"
_BY_SEQ = {"nodes": operator.itemgetter(3), "edges": operator.itemgetter(4)}


class _Guard:
    """:meth:`SQLiteStore._guard`'s context: a SQLite, Unicode or overflow error raised inside
    becomes the store's :class:`StoreError` (one that is a StoreError already passes)."""

    __slots__ = ("store", "action", "written")

    def __init__(self, store: "SQLiteStore", action: str, written: bool) -> None:
        self.store, self.action, self.written = store, action, written

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, traceback: Any) -> bool:
        if kind is not None and not issubclass(kind, StoreError) and issubclass(kind, (sqlite3.Error, UnicodeError, OverflowError)):
            raise self.store._failure(self.action, exc, written=self.written) from None
        return False


def row_crc(*values: Any) -> int:
    """The checksum a row carries: CRC-32 of its values as text, joined by U+001F.

    >>> row_crc("g", "goal", "{}", 1) == row_crc("g", "goal", "{}", 1), row_crc("g", "goal", "{}", 2) == row_crc("g", "goal", "{}", 1)
    (True, False)
    """
    return zlib.crc32("\x1f".join(map(str, values)).encode("utf-8", "surrogatepass"))


def _unchecked_or_bad(node_rows: list, edge_rows: list) -> tuple[list, list]:
    """The state rows ``(..., crc)`` without a checksum or whose checksum does not match
    (``row_crc`` inlined: a Python f-string per row). A value of the wrong type cannot match:
    bytes, a float or None print otherwise than the text or integer the checksum was of."""
    crc32 = zlib.crc32
    nodes = [r for r in node_rows if r[4] is None or r[4] != crc32(f"{r[0]}\x1f{r[1]}\x1f{r[2]}\x1f{r[3]}".encode())]
    edges = [
        r for r in edge_rows if r[5] is None or r[5] != crc32(f"{r[0]}\x1f{r[1]}\x1f{r[2]}\x1f{r[3]}\x1f{r[4]}".encode())
    ]
    return nodes, edges


_NODE_TYPES = (str, str, str, int)
_EDGE_TYPES = (str, str, str, str, int)


def _sql_text(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _shell_word(text: str) -> str:
    """``text`` as one shell word, in double quotes when that is enough (SQL has ' in it).

    >>> print(_shell_word("UPDATE t SET crc = NULL WHERE id = 'a'"), _shell_word("a$b"))
    "UPDATE t SET crc = NULL WHERE id = 'a'" 'a$b'
    """
    if not any(ch in text for ch in '"$`\\!'):
        return f'"{text}"'
    return shlex.quote(text)


def _cause(exc: BaseException) -> tuple[str, str]:
    """What a SQLite error means for a user: (kind, SQLite's words)."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    text = str(exc) or type(exc).__name__
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return "read-only", text
    if name.startswith("SQLITE_FULL") or "database or disk is full" in text:
        return "full", text
    if name.startswith("SQLITE_NOTADB") or "file is not a database" in text:
        return "not-a-database", text
    if name.startswith("SQLITE_CORRUPT") or "malformed" in text or "Could not decode" in text:
        return "damaged", text
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
        return "locked", text
    if name in ("SQLITE_IOERR_WRITE", "SQLITE_IOERR_TRUNCATE", "SQLITE_IOERR_SHMSIZE"):
        return "write-failed", text  # ENOSPC on a short write is SQLITE_FULL; EFBIG lands here
    if name.startswith("SQLITE_IOERR") or "disk I/O error" in text:
        return "io", text
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")) or "unable to open" in text:
        return "cannot-open", text
    return "other", text


class SQLiteStore(Store):
    """Journal and state in one SQLite file.

    ``timeout`` is how long a writer waits for another process's write lock (seconds);
    ``create`` whether a missing file becomes a new memory (else ``StoreError``, "no memory
    at ..."); ``check`` what opening runs besides the table checks (:data:`CHECKS`);
    ``image_min_nodes`` from how many nodes the memory keeps a stored image of its graph
    (None: never; see the module's docstring). ``last_load`` says how the last state was
    read: ``"image"``, ``"rows"`` or ``"none"``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "notes.txt")
    >>> _ = open(path, "w").write("not a memory")
    >>> try:
    ...     SQLiteStore(path)
    ... except StoreError as err:
    ...     print(err.message.replace(path, "PATH"))  # doctest: +ELLIPSIS
    PATH is not a SQLite database (or its first page is damaged): file is not a database; ...
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        timeout: float = 30.0,
        create: bool = True,
        check: str = "quick",
        image_min_nodes: int | None = IMAGE_MIN_NODES,
    ):
        if check not in CHECKS:
            raise ValueError(f"check must be one of {', '.join(CHECKS)}, not {check!r}")
        self.location = os.fspath(path)
        self._timeout = timeout
        self._check = check
        self._lock = threading.RLock()
        # A second connection answers committed_t: the first one is held for a whole commit.
        self._peek_lock = threading.Lock()
        self._peek_db: sqlite3.Connection | None = None
        self._peek_version: int | None = None
        self._peek_latest = 0
        self._in_write = 0
        self._pending: list[Commit] = []
        self._commit_cache: dict[int, Commit] = {}
        # While the memory has never committed, it lives in this temporary file (see _publish).
        self._unpublished: str | None = None
        self._generation = 0  # counts connection switches (change_token differs across them)
        self._crc = {table: "crc" for table in _COLUMNS}  # the crc column, or NULL in an older store
        self._image_min_nodes = image_min_nodes
        self._guarding = False  # this write transaction has set image_guard.writing
        self._write_token = None  # change_token() as read inside the current write transaction
        # The node index's t: as the current write transaction wrote it (_UNSET: not written),
        # and (change token, t) as the last committed one left it (None: read it).
        self._index_t_written: Any = _UNSET
        self._index_t_cache: tuple[object, int | None] | None = None
        self._unchecked: tuple[str, ...] = ()  # tables the open's quick_check left for when they are read
        self.last_load = "none"  # how the last load_state read the state (for tests and benchmarks)
        if os.path.exists(self.location):
            self._db = self._open_existing()
        elif not create:
            raise self._problem(f"no memory at {self.location}")
        else:
            self._db = self._create()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.location!r})"

    # -- errors -------------------------------------------------------------------------------

    def _problem(self, message: str) -> StoreError:
        return StoreError([Problem("store", message, where=self.location)])

    def _failure(self, action: str, exc: BaseException, *, written: bool = False) -> StoreError:
        """A StoreError for SQLite error ``exc`` while doing ``action`` ("write", "read the
        journal of", ...): what it means and what to do. ``written``: the action was a write
        that SQLite rolled back."""
        loc = self.location
        if isinstance(exc, OSError):
            kind, text = ("read-only" if isinstance(exc, PermissionError) else "io"), exc.strerror or str(exc)
        elif isinstance(exc, UnicodeError):
            kind, text = "other", f"a text cannot be stored as UTF-8 ({exc.reason})"
        else:
            kind, text = _cause(exc)
        nothing = "; nothing was written" if written else ""
        if kind == "read-only":
            why = f"the file is read-only ({text}){nothing}: make {loc} and its folder writable for this user, or only read it"
        elif kind == "full":
            why = f"no space left on the device, or the file reached its size limit ({text}){nothing}: free some space and run the command again"
        elif kind == "not-a-database":
            return self._problem(
                f"{loc} is not a SQLite database (or its first page is damaged): {text}; "
                "if it was an hgm memory, restore it from a backup or an 'hgm export'"
            )
        elif kind == "damaged":
            return self._damaged(f"SQLite reports: {text}")
        elif kind == "locked":
            why = f"another process holds the store's lock (waited {self._timeout:g} s: {text}){nothing}: run the command again when it is done"
        elif kind == "write-failed":
            why = (
                f"the operating system refused to write the file ({text}){nothing}: no space left on the device, "
                "the file over its size limit (ulimit -f) or a failing disk; free some space and run the command again"
            )
        elif kind == "io":
            why = (
                f"the operating system reported an I/O error ({text}){nothing}: the disk may be full or failing, "
                "or the file over a size limit; check it and run the command again"
            )
        elif kind == "cannot-open":
            why = f"{text} (does the file's folder exist, and may this user read and write both?)"
        else:
            why = f"{text}{nothing}"
        return self._problem(f"cannot {action} {loc}: {why}")

    def _damaged(self, what: str, fix: str | None = None) -> StoreError:
        """A StoreError for damage found in the file, with the ways to recover."""
        loc = self.location if re.fullmatch(r"[\w./+-]+", self.location) else _shell_word(self.location)
        ways = [f"restore {self.location} from a backup or load an 'hgm export' of a good copy into a new memory"]
        if fix:
            ways.append(f"keep the row as it is now with: sqlite3 {loc} {_shell_word(fix)}")
        ways.append(f"or recover what SQLite can still read: sqlite3 {loc} .recover | sqlite3 RECOVERED.db")
        return self._problem(f"{self.location} is damaged: {what}. To recover, " + "; ".join(ways))

    def _guard(self, action: str, *, written: bool = False) -> "_Guard":
        """Turn SQLite errors raised inside into StoreErrors (see :meth:`_failure`); a plain
        context manager, not a generator's (a commit enters several)."""
        return _Guard(self, action, written)

    # -- opening and creating -----------------------------------------------------------------

    def _connect(self, file: str, *, existing: bool) -> sqlite3.Connection:
        """A connection to ``file``; ``existing``: fail rather than create a missing file."""
        target, uri = file, False
        if existing:
            target, uri = pathlib.Path(file).absolute().as_uri() + "?mode=rw", True
        return sqlite3.connect(target, timeout=self._timeout, isolation_level=None, check_same_thread=False, uri=uri)

    def _open_existing(self) -> sqlite3.Connection:
        loc = self.location
        try:
            size = os.path.getsize(loc)
            wal = os.path.getsize(loc + "-wal") if os.path.exists(loc + "-wal") else 0
        except OSError as exc:
            raise self._failure("open", exc) from None
        if os.path.isdir(loc):
            raise self._problem(f"{loc} is a folder, not an hgm memory")
        if size == 0 and wal == 0:
            raise self._problem(
                f"{loc} is an empty file (0 bytes), not an hgm memory: hgm builds a new memory in a "
                "temporary file and puts it in place complete, so another program made this one (or an "
                "older hgm failed while creating it); delete it and run 'hgm load' or 'hgm apply' again"
            )
        with self._guard("open"):
            db = self._connect(loc, existing=True)
        try:
            self._check_tables(db)
            with self._guard("open"):
                try:
                    db.execute("PRAGMA journal_mode=WAL")
                except sqlite3.OperationalError as exc:
                    if _cause(exc)[0] != "read-only":  # a read-only file is read in the mode it has
                        raise
                db.execute("PRAGMA synchronous=FULL")
        except BaseException:
            db.close()
            raise
        return db

    def _check_tables(self, db: sqlite3.Connection) -> None:
        """Refuse a file that is not an intact hgm memory (before anything is written to it)."""
        with self._guard("open"):
            tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            present = [name for name in _COLUMNS if name in tables]
            if not present:
                if not tables:
                    raise self._problem(
                        f"{self.location} is a SQLite database with no tables, not an hgm memory; "
                        "delete it, or give another path, to make a new memory"
                    )
                raise self._problem(
                    f"{self.location} is not an hgm memory: it is another program's SQLite database "
                    f"(its tables: {', '.join(tables[:8])}{', ...' if len(tables) > 8 else ''})"
                )
            for table in _COLUMNS:
                if table not in tables:
                    raise self._damaged(f"table '{table}' is missing")
                columns = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
                for column in _COLUMNS[table]:
                    if column not in columns:
                        raise self._damaged(f"table '{table}' has no column '{column}'")
                self._crc[table] = "crc" if "crc" in columns else "NULL"
            rows = db.execute(f"SELECT value, {self._crc['meta']} FROM meta NOT INDEXED WHERE key = 'schema_version'").fetchall()
            if not rows:
                raise self._damaged("it has no store format row (meta 'schema_version')")
            if len(rows) > 1 or (rows[0][1] is not None and rows[0][1] != row_crc("schema_version", rows[0][0])):
                raise self._damaged("its store format row (meta 'schema_version') does not match its checksum")
            if rows[0][0] != SCHEMA_VERSION:
                raise self._problem(f"{self.location} has store format {rows[0][0]}, this hgm reads {SCHEMA_VERSION}")
            if self._check != "none":
                pragma = "quick_check" if self._check == "quick" else "integrity_check"
                if pragma == "quick_check" and self._image_min_nodes is not None and {"state_image", "image_guard"} <= set(tables):
                    # The state will most likely be read from its image: check the tables that
                    # are read; the state rows are checked if they are read (_load_rows).
                    self._unchecked = ("nodes", "edges")
                    for table in tables:
                        if table not in self._unchecked:
                            self._quick_check(db, pragma, table)
                else:
                    self._quick_check(db, pragma)

    def _quick_check(self, db: sqlite3.Connection, pragma: str, table: str | None = None) -> None:
        found = [row[0] for row in db.execute(f"PRAGMA {pragma}({_sql_text(table) if table else 5})")]
        if found != ["ok"]:
            raise self._damaged(f"SQLite's {pragma} found: " + "; ".join(map(str, found)))

    def _create(self) -> sqlite3.Connection:
        """A new, empty memory in a temporary file next to the store's path (see _publish)."""
        folder = os.path.dirname(os.path.abspath(self.location))
        if not os.path.isdir(folder):
            raise self._problem(f"cannot create {self.location}: the folder {folder} does not exist")
        if os.path.exists(self.location + "-wal") and os.path.getsize(self.location + "-wal"):
            raise self._problem(
                f"cannot create {self.location}: its write-ahead log {self.location}-wal is there without it; "
                "move the log away (it may hold the last commits of a memory whose file was deleted)"
            )
        temp = os.path.join(folder, f".{os.path.basename(self.location)}.{os.getpid()}-{secrets.token_hex(4)}.hgm-new")
        db = None
        try:
            db = self._connect(temp, existing=False)
            # One file, no WAL, until the file is renamed into place: nothing beside it to move.
            db.execute("PRAGMA journal_mode=DELETE")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("BEGIN IMMEDIATE")
            for statement in (_TABLES + _INDEX_TABLES).split(";"):
                if statement.strip():
                    db.execute(statement)
            for statement in _IMAGE_STATEMENTS:
                db.execute(statement)
            db.execute(
                "INSERT INTO meta (key, value, crc) VALUES ('schema_version', ?, ?)",
                (SCHEMA_VERSION, row_crc("schema_version", SCHEMA_VERSION)),
            )
            db.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            if db is not None:
                db.close()
            self._remove_files(temp)
            raise self._failure("create", exc) from None
        self._unpublished = temp
        return db

    @staticmethod
    def _remove_files(file: str) -> None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.remove(file + suffix)

    def _file(self) -> str:
        """The file the connections are on: the store's path, or the temporary file."""
        return self._unpublished or self.location

    def _close_reader(self) -> None:
        with self._peek_lock:
            if self._peek_db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._peek_db.close()
                self._peek_db = None
                self._peek_version = None

    def _adopt_existing(self) -> None:
        """Another process created the memory while this one had not committed yet: drop the
        temporary file and use theirs (the next commit catches up with it first)."""
        temp = self._unpublished
        self._close_reader()
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._remove_files(temp)
        self._unpublished = None
        self._generation += 1
        self._db = self._open_existing()

    def _follow(self) -> None:
        """Before a read of a memory that never committed: if another process has created the
        file meanwhile, read that (never waiting for a commit of this process under way)."""
        if self._unpublished is None or not os.path.exists(self.location):
            return
        if self._lock.acquire(blocking=False):
            try:
                if self._unpublished is not None and not self._in_write:
                    self._adopt_existing()
            finally:
                self._lock.release()

    def _publish(self) -> None:
        """Put the temporary file in place, after its first commit (which is in it, synced).

        A hard link never replaces a memory another process created meanwhile; on a file
        system without hard links, a rename when nothing is there yet."""
        temp, loc = self._unpublished, self.location
        self._close_reader()
        self._db.close()
        folder = os.path.dirname(os.path.abspath(loc))
        try:
            try:
                os.link(temp, loc)
            except FileExistsError:
                raise
            except OSError:
                if os.path.exists(loc):
                    raise FileExistsError(loc) from None
                os.rename(temp, loc)
            with contextlib.suppress(OSError):  # the new name must survive a power loss too
                fd = os.open(folder, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except FileExistsError:
            self._remove_files(temp)
            self._unpublished = None
            self._db = self._open_existing()
            raise self._problem(
                f"cannot create {loc}: another process created it at the same moment; this commit "
                "was not written: run it again (it will see what the other process wrote)"
            ) from None
        except OSError as exc:
            self._remove_files(temp)
            self._unpublished = None
            self._db = self._create()
            raise self._failure("create", exc, written=True) from None
        self._remove_files(temp)
        self._unpublished = None
        self._generation += 1
        with self._guard("open"):
            self._db = self._connect(loc, existing=True)
            with contextlib.suppress(sqlite3.OperationalError):  # stays in rollback mode if it cannot
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")

    # -- reading ------------------------------------------------------------------------------

    def _end_read(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self._db.in_transaction:
                self._db.execute("COMMIT")

    def load_state(self) -> tuple[MemoryGraph, int]:
        """The state: from the stored image and the commits after it when it can be trusted
        (see :mod:`hgm_engine.store.image`), else from the rows, each checked; a memory read
        from its rows (or from an image many commits old) then gets a new image, if it can be
        written without waiting for another process."""
        with self._lock, bulk_allocation():
            found = self._load_image()
            if found is not None:
                graph, t, replayed = found
                self.last_load = "image"
                if replayed >= IMAGE_REWRITE_AFTER:
                    self._save_image(graph, t, self._read_version)
                return graph, t
            graph, t = self._load_rows()
            self.last_load = "rows"
            if self._image_min_nodes is not None and len(graph) >= self._image_min_nodes:
                self._save_image(graph, t, self._read_version)
            return graph, t

    def _load_image(self) -> tuple[MemoryGraph, int, int] | None:
        """(graph, t, commits replayed) from the image, or None (logged: why not)."""
        if self._image_min_nodes is None:
            return None
        db = self._db
        with self._guard("read the state of"):
            db.execute("BEGIN")
            try:
                names = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE name IN ('state_image', 'image_guard') OR name LIKE 'hgm_outside_%'")}
                if "state_image" not in names or "image_guard" not in names:
                    return None
                # The blob is read through sqlite3.Blob, a section at a time (decode_image): a
                # SELECT of it would copy it twice (SQLite's buffer, then Python's bytes), 33 MB
                # of fresh pages for a 16 MB image.
                row = db.execute("SELECT t, rowid, typeof(data) FROM state_image WHERE name = 'state'").fetchone()
                if row is None:
                    return None
                if len(names) != 2 + _IMAGE_TRIGGERS:
                    _log.info("%s: the stored image is not used: its triggers are missing; reading the rows", self.location)
                    return None
                guard = db.execute("SELECT edits FROM image_guard WHERE k = 1").fetchone()
                t = self._latest_t()
                self._read_version = db.execute("PRAGMA data_version").fetchone()[0]
                image_t, rowid, kind = row
                try:
                    if kind == "blob":
                        with db.blobopen("state_image", "data", rowid, readonly=True) as blob:
                            image = decode_image(blob)
                    else:  # NULL, a text: not an image (decode_image says so)
                        image = decode_image(db.execute("SELECT data FROM state_image WHERE rowid = ?", (rowid,)).fetchone()[0])
                    if image.t != image_t:
                        raise ImageMismatch(f"the image is of t={image.t}, its row says t={image_t}")
                    if guard is None or image.edits != guard[0]:
                        raise ImageMismatch("rows were changed outside hgm since it was written")
                    if image.t > t:
                        raise ImageMismatch(f"it is of t={image.t}, past the journal's last t={t}")
                    if t - image.t > IMAGE_REPLAY_MAX:
                        raise ImageMismatch(f"it is {t - image.t} commits old")
                    rows = self._journal_rows(db, image.t, t) if t > image.t else []
                except ImageMismatch as why:
                    _log.info("%s: the stored image is not used (%s); reading the rows", self.location, why)
                    return None
            finally:
                self._end_read()
        graph = image.graph
        try:
            for number, record, crc in rows:
                commit = self._decode_commit(number, record, crc)
                if commit.genesis or commit.kind == "purge":
                    raise ImageMismatch(f"commit t={number} replaced the state")
                apply_changes(graph, list(commit.changes))
        except (ImageMismatch, KeyError, ValueError) as why:
            _log.info("%s: the stored image is not used (replaying the journal after it: %s); reading the rows", self.location, why)
            return None
        return graph, t, len(rows)

    def _save_image(self, graph: MemoryGraph, t: int, version: int) -> None:
        """Store the image of ``graph`` at ``t``, read when the connection's ``data_version``
        was ``version``, unless another process holds the write lock, the file is read-only, a
        commit of this process is under way, or another connection wrote since the state was
        read (then the next open tries again). Never raises."""
        if self._in_write or self._unpublished is not None:
            return
        db = self._db
        try:
            db.execute("PRAGMA busy_timeout = 0")
            try:
                db.execute("BEGIN IMMEDIATE")
            finally:
                db.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            try:
                if db.execute("PRAGMA data_version").fetchone()[0] != version or self._latest_t() != t:
                    db.execute("ROLLBACK")
                    return
                for statement in _IMAGE_STATEMENTS:
                    db.execute(statement)
                edits = db.execute("SELECT edits FROM image_guard WHERE k = 1").fetchone()[0]
                data = encode_image(graph, t, edits)
                db.execute("INSERT OR REPLACE INTO state_image (name, t, data) VALUES ('state', ?, ?)", (t, data))
                db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except (sqlite3.Error, OSError) as exc:
            _log.info("%s: no image of the state was stored (%s)", self.location, exc)

    def _load_rows(self) -> tuple[MemoryGraph, int]:
        if True:
            with self._guard("open"):
                for table in self._unchecked:
                    self._quick_check(self._db, "quick_check", table)
                self._unchecked = ()
            with self._guard("read the state of"):
                # One read transaction, so the state and its t agree even while others write.
                self._db.execute("BEGIN")
                try:
                    t = self._latest_t()
                    self._read_version = self._db.execute("PRAGMA data_version").fetchone()[0]
                    node_rows = self._db.execute(_NODE_ROWS.format(crc=self._crc["nodes"])).fetchall()
                    edge_rows = self._db.execute(_EDGE_ROWS.format(crc=self._crc["edges"])).fetchall()
                    try:
                        node_rows.sort(key=_BY_SEQ["nodes"])
                        edge_rows.sort(key=_BY_SEQ["edges"])
                    except TypeError:  # a seq that is not a number: SQLite orders mixed types
                        node_rows = self._db.execute(_NODE_ROWS.format(crc=self._crc["nodes"]) + " ORDER BY seq").fetchall()
                        edge_rows = self._db.execute(_EDGE_ROWS.format(crc=self._crc["edges"]) + " ORDER BY seq").fetchall()
                finally:
                    self._end_read()
            return self._build_state(node_rows, edge_rows), t

    def _build_state(self, node_rows: list, edge_rows: list) -> MemoryGraph:
        """The graph of the state rows, each checked: its checksum, its types, its attributes,
        unique ids, edges between nodes that are there."""

        def node_fix(row) -> str:
            return f"UPDATE nodes SET crc = NULL WHERE id = {_sql_text(row[0])}"

        def edge_fix(row) -> str:
            where = " AND ".join(f"{c} = {_sql_text(v)}" for c, v in zip(("source", "target", "type"), row))
            return f"UPDATE edges SET crc = NULL WHERE {where}"

        suspects = _unchecked_or_bad(node_rows, edge_rows)
        if not suspects[0] and not suspects[1]:  # every row is as hgm wrote it
            return build_state(node_rows, edge_rows, self._damaged, checked=True)
        for rows, name, fix, types in zip(suspects, (node_name, edge_name), (node_fix, edge_fix), (_NODE_TYPES, _EDGE_TYPES)):
            bad = [row for row in rows if row[-1] is not None]
            if bad:
                more = f" (and {len(bad) - 1} more rows)" if len(bad) > 1 else ""
                raise self._damaged(f"{name(bad[0])} does not match its checksum{more}", fix(bad[0]))
            for row in rows:  # rows written before checksums: their types are checked one by one
                if any(type(value) is not kind for value, kind in zip(row, types)):
                    raise self._damaged(f"{name(row)} has a value of the wrong type")
        return build_state(node_rows, edge_rows, self._damaged)

    def _latest_t(self, db: sqlite3.Connection | None = None) -> int:
        row = (db or self._db).execute("SELECT MAX(t) FROM journal").fetchone()
        return row[0] or 0

    def latest_t(self) -> int:
        self._follow()
        with self._lock, self._guard("read the journal of"):
            return self._latest_t()

    def _reader(self) -> sqlite3.Connection:
        """The second, read-only connection (opened on first use; call under ``_peek_lock``)."""
        if self._peek_db is None:
            self._peek_db = self._connect(self._file(), existing=True)
        return self._peek_db

    def committed_t(self) -> int:
        self._follow()
        with self._peek_lock, self._guard("read the journal of"):
            db = self._reader()
            # data_version moves when any other connection (our writer included) commits:
            # unchanged, the journal is not read at all.
            version = db.execute("PRAGMA data_version").fetchone()[0]
            if version != self._peek_version:
                self._peek_latest = self._latest_t(db)
                self._peek_version = version
            return self._peek_latest

    def _journal_rows(self, db: sqlite3.Connection, low: int, high: int) -> list:
        return db.execute(
            f"SELECT t, record, {self._crc['journal']} FROM journal WHERE t > ? AND t <= ? ORDER BY t", (low, high)
        ).fetchall()

    def _decode_commit(self, t: int, record: Any, crc: int | None) -> Commit:
        if crc is not None and crc != row_crc(t, record):
            raise self._damaged(f"journal row t={t} does not match its checksum", f"UPDATE journal SET crc = NULL WHERE t = {t}")
        return commit_from_row(t, record, self._damaged)

    def read_commits(self, t: int, upto: int) -> list[Commit]:
        self._follow()
        missing = [n for n in range(t + 1, upto + 1) if n not in self._commit_cache]
        if missing:
            with self._peek_lock, self._guard("read the journal of"):
                rows = self._journal_rows(self._reader(), t, upto)
            for number, record, crc in rows:
                if number not in self._commit_cache:
                    self._commit_cache[number] = self._decode_commit(number, record, crc)
        return [self._commit_cache[n] for n in range(t + 1, upto + 1) if n in self._commit_cache]

    def change_token(self) -> object:
        # SQLite counts commits made by *other* connections (one PRAGMA, no table read):
        # this process's own commits are already applied where they were made. Inside a
        # write transaction nobody else can commit: the token is read once per transaction.
        self._follow()
        with self._lock:
            if self._in_write and self._write_token is not None:
                return self._write_token
            with self._guard("read"):
                token = (self._generation, self._db.execute("PRAGMA data_version").fetchone()[0])
            if self._in_write:
                self._write_token = token
            return token

    def commits_after(self, t: int, upto: int | None = None) -> list[Commit]:
        self._follow()
        with self._lock:
            with self._guard("read the journal of"):
                high = self._latest_t() if upto is None else upto
                missing = [n for n in range(t + 1, high + 1) if n not in self._commit_cache]
                rows = self._journal_rows(self._db, t, high) if missing else []
            for number, record, crc in rows:
                if number not in self._commit_cache:
                    self._commit_cache[number] = self._decode_commit(number, record, crc)
            return [self._commit_cache[n] for n in range(t + 1, high + 1) if n in self._commit_cache]

    # -- writing ------------------------------------------------------------------------------

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

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
            if self._unpublished is not None and os.path.exists(self.location):
                self._adopt_existing()
            with self._guard("lock"):
                self._db.execute("BEGIN IMMEDIATE")
            self._in_write = 1
            self._pending = []
            self._write_token = None
            self._index_t_written = _UNSET
            try:
                self._add_checksum_columns()
                yield self
            except BaseException:
                self._rollback()
                raise
            else:
                index_t = self._index_t_written
                token = self.change_token() if index_t is not _UNSET and index_t is not None else None
                try:
                    if self._guarding:
                        self._db.execute("UPDATE image_guard SET writing = 0")
                    self._db.execute("COMMIT")
                except (sqlite3.Error, UnicodeError) as exc:
                    self._rollback()
                    raise self._failure("commit to", exc, written=True) from None
                if self._unpublished is not None:
                    self._publish()
                    token = None  # another file, another connection: read the next time
                # Only what was really written may be served from the cache.
                for commit in self._pending:
                    self._commit_cache[commit.t] = commit
                if index_t is not _UNSET:
                    # The node index's t as this transaction left it, valid while no other
                    # connection writes (the change token stays the same): node_index_t.
                    self._index_t_cache = (token, index_t) if token is not None else None
            finally:
                self._in_write = 0
                self._guarding = False
                self._pending = []
                self._write_token = None

    def _add_checksum_columns(self) -> None:
        """Give the tables of a store written before rows had checksums their ``crc`` column
        (rows written from now on carry one; older rows are read unchecked)."""
        if all(column == "crc" for column in self._crc.values()):
            return
        with self._guard("write", written=True):
            for table in _COLUMNS:
                if "crc" not in {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN crc INTEGER")
                self._crc[table] = "crc"

    def _journal_row(self, commit: Commit, after_texts: list[str | None] | None = None) -> tuple:
        record = commit_to_text(commit, after_texts)
        return (commit.t, record, row_crc(commit.t, record))

    def _hgm_writing(self) -> None:
        """Inside ``write()``, before hgm changes the state or journal rows: tell the triggers
        it is hgm (so the stored image stays valid and the journal brings it forward)."""
        if self._guarding:
            return
        try:
            self._db.execute("UPDATE image_guard SET writing = 1")
        except sqlite3.OperationalError:  # a store made before images: no triggers either
            return
        self._guarding = True

    def append(self, commit: Commit) -> None:
        assert self._in_write, "append() runs inside write()"
        # Each payload's attributes are encoded once: the journal record and the state row
        # hold the same text.
        after_texts = [None if change.after is None else attrs_json(change.after.attrs) for change in commit.changes]
        self._hgm_writing()
        with self._guard("write", written=True):
            try:
                self._db.execute("INSERT INTO journal (t, record, crc) VALUES (?, ?, ?)", self._journal_row(commit, after_texts))
            except sqlite3.IntegrityError:
                raise self._damaged(f"the journal already holds a row t={commit.t} past its latest t") from None
            self._apply_state(commit, after_texts)
        self._pending.append(commit)

    def _apply_state(self, commit: Commit, after_texts: list[str | None]) -> None:
        """The commit's changes to the state tables, one ``executemany`` per statement, in the
        order of the changes' kinds (removals before additions, so a node or edge made again
        under its key is deleted first); a row that should be there and is not (or the other
        way round) means the tables and the journal disagree: damage."""
        db = self._db
        edge_deletes: list[tuple] = []
        node_deletes: list[tuple] = []
        node_updates: list[tuple] = []
        node_inserts: list[tuple] = []
        edge_updates: list[tuple] = []
        edge_inserts: list[tuple] = []
        crc32 = zlib.crc32  # row_crc of each row, inlined (the text it checksums, as an f-string)
        for change, attrs in zip(commit.changes, after_texts):
            kind = change.kind
            if kind == "edge_removed":
                edge_deletes.append(change.before.key)
            elif kind == "node_removed":
                node_deletes.append((change.before.id,))
            elif kind == "node_added" or kind == "node_updated":
                node = change.after
                crc = crc32(f"{node.id}\x1f{node.type}\x1f{attrs}\x1f{node.seq:d}".encode("utf-8", "surrogatepass"))
                row = (node.type, attrs, node.seq, crc, node.id)
                (node_updates if kind == "node_updated" else node_inserts).append(row)
            elif kind == "edge_added" or kind == "edge_updated":
                edge = change.after
                crc = crc32(
                    f"{edge.source}\x1f{edge.target}\x1f{edge.type}\x1f{attrs}\x1f{edge.seq:d}".encode("utf-8", "surrogatepass")
                )
                row = (attrs, edge.seq, crc, edge.source, edge.target, edge.type)
                (edge_updates if kind == "edge_updated" else edge_inserts).append(row)
        if edge_deletes:
            cursor = db.executemany("DELETE FROM edges WHERE source = ? AND target = ? AND type = ?", edge_deletes)
            if cursor.rowcount != len(edge_deletes):
                self._missing_rows("edges", edge_deletes)
        if node_deletes:
            if db.executemany("DELETE FROM nodes WHERE id = ?", node_deletes).rowcount != len(node_deletes):
                self._missing_rows("nodes", node_deletes)
        if node_updates:
            cursor = db.executemany("UPDATE nodes SET type = ?, attrs = ?, seq = ?, crc = ? WHERE id = ?", node_updates)
            if cursor.rowcount != len(node_updates):
                self._missing_rows("nodes", [row[-1:] for row in node_updates])
        if node_inserts:
            self._insert_rows("nodes", "INSERT INTO nodes (type, attrs, seq, crc, id) VALUES (?, ?, ?, ?, ?)", node_inserts)
        if edge_updates:
            cursor = db.executemany(
                "UPDATE edges SET attrs = ?, seq = ?, crc = ? WHERE source = ? AND target = ? AND type = ?", edge_updates
            )
            if cursor.rowcount != len(edge_updates):
                self._missing_rows("edges", [row[-3:] for row in edge_updates])
        if edge_inserts:
            self._insert_rows("edges", "INSERT INTO edges (attrs, seq, crc, source, target, type) VALUES (?, ?, ?, ?, ?, ?)", edge_inserts)

    @staticmethod
    def _row_name(table: str, key: tuple) -> str:
        return f"node {key[0]!r}" if table == "nodes" else f"edge {key[0]} -{key[2]}-> {key[1]}"

    def _insert_rows(self, table: str, statement: str, rows: list[tuple]) -> None:
        """Insert ``rows`` (their key last); a key already in the table is damage, named: the
        rows before it were inserted (SQLite's change count says how many), it was not."""
        before = self._db.total_changes
        try:
            self._db.executemany(statement, rows)
        except sqlite3.IntegrityError:
            row = rows[min(self._db.total_changes - before, len(rows) - 1)]
            key = row[-1:] if table == "nodes" else row[-3:]
            raise self._damaged(f"{self._row_name(table, key)} is already in the state tables, though the journal removed it") from None

    def _missing_rows(self, table: str, keys: list[tuple]) -> None:
        """Damage: a row the commit changes or removes is not in the state tables (the first
        such key is named; called when an ``executemany`` changed fewer rows than it had)."""
        where = "id = ?" if table == "nodes" else "source = ? AND target = ? AND type = ?"
        for key in keys:
            if self._db.execute(f"SELECT 1 FROM {table} WHERE {where}", key).fetchone() is None:
                break
        else:  # pragma: no cover - the count differed, so one is missing
            key = keys[0]
        raise self._damaged(f"{self._row_name(table, key)} is not in the state tables, though the journal has it")

    def write_genesis(self, commit: Commit, graph: MemoryGraph) -> None:
        """Record a load into an empty store: the whole graph, in bulk, and its image (so the
        first reopening reads no row either)."""
        assert self._in_write and commit.genesis
        imaged = self._image_min_nodes is not None and len(graph) >= self._image_min_nodes
        if imaged:
            with self._guard("write", written=True):
                for statement in _IMAGE_STATEMENTS:
                    self._db.execute(statement)
        self._hgm_writing()

        # The rows row_crc and _dumps(thaw(attrs)) describe, made without a call per value (a
        # million-node load writes 2.6M rows): attrs_text is that JSON text, the f-string the
        # text row_crc checksums (tests/test_bulk_load.py compares every table).
        crc32 = zlib.crc32

        def node_rows() -> Iterator[tuple]:
            for n in graph.nodes():
                attrs = n.attrs_text()
                yield n.id, n.type, attrs, n.seq, crc32(f"{n.id}\x1f{n.type}\x1f{attrs}\x1f{n.seq}".encode("utf-8", "surrogatepass"))

        def edge_rows() -> Iterator[tuple]:
            for e in graph.edges():
                attrs = e.attrs_text()
                yield e.source, e.target, e.type, attrs, e.seq, crc32(
                    f"{e.source}\x1f{e.target}\x1f{e.type}\x1f{attrs}\x1f{e.seq}".encode("utf-8", "surrogatepass")
                )

        # Millions of rows and image columns are made here, and the graph's payloads are alive:
        # every full pass of the collector would walk them all (see bulk_allocation).
        with self._guard("write", written=True), bulk_allocation():
            try:
                self._db.execute("INSERT INTO journal (t, record, crc) VALUES (?, ?, ?)", self._journal_row(commit))
                self._db.executemany("INSERT INTO nodes (id, type, attrs, seq, crc) VALUES (?, ?, ?, ?, ?)", node_rows())
                self._db.executemany(
                    "INSERT INTO edges (source, target, type, attrs, seq, crc) VALUES (?, ?, ?, ?, ?, ?)", edge_rows()
                )
            except sqlite3.IntegrityError:
                raise self._damaged("the state tables are not empty, though the journal is") from None
            if imaged:
                edits = self._db.execute("SELECT edits FROM image_guard WHERE k = 1").fetchone()[0]
                data = encode_image(graph, commit.t, edits)
                self._db.execute("INSERT OR REPLACE INTO state_image (name, t, data) VALUES ('state', ?, ?)", (commit.t, data))
        self._pending.append(commit)

    # -- forgetting ---------------------------------------------------------------------------

    def purge(self, ids: frozenset[str], tombstone: Commit) -> None:
        """Rewrite every journal row that names one of ``ids`` without it, delete their state
        rows, append ``tombstone`` (inside ``write``; :meth:`scrub` then clears the file)."""
        from hgm_engine.store.purge import mentions, without_nodes

        assert self._in_write, "purge() runs inside write()"
        self._hgm_writing()
        with self._guard("write", written=True):
            db = self._db
            db.execute("PRAGMA secure_delete=ON")  # freed space is overwritten with zeros
            for t, record, crc in self._journal_rows(db, 0, self._latest_t()):
                if not mentions(record, ids):
                    continue
                commit = self._decode_commit(t, record, crc)
                kept = without_nodes(commit, ids)
                if kept is not commit:
                    _, text, check = self._journal_row(kept)
                    db.execute("UPDATE journal SET record = ?, crc = ? WHERE t = ?", (text, check, t))
            marks = ",".join("?" * len(ids))
            db.execute(f"DELETE FROM edges WHERE source IN ({marks}) OR target IN ({marks})", (*ids, *ids))
            db.execute(f"DELETE FROM nodes WHERE id IN ({marks})", tuple(ids))
            # The kept node index (search) holds the nodes' terms: dropped, rebuilt from the state.
            kept = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table in ("node_index", "node_index_changes", "node_vectors", "state_image"):
                if table in kept:
                    db.execute(f"DELETE FROM {table}")
            self._index_t_written = None  # no kept index now
        self._commit_cache.clear()
        self.append(tombstone)

    def scrub(self) -> None:
        """Rebuild the file (``VACUUM``: no free page keeps old bytes) and empty its
        write-ahead log (``wal_checkpoint(TRUNCATE)``); a reader in another process can keep
        the log from emptying, so the checkpoint is tried for up to the store's timeout."""
        import time

        with self._lock, self._guard("clean"):
            self._close_reader()
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.execute("VACUUM")
            deadline = time.monotonic() + self._timeout
            while True:
                busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                if not busy or time.monotonic() > deadline:
                    break
                time.sleep(0.05)

    def forget_cached(self) -> None:
        self._commit_cache.clear()

    # -- the node index -----------------------------------------------------------------------

    keeps_node_index = True

    def _index_tables(self, db: sqlite3.Connection) -> bool:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'node_%'")}
        return {"node_index", "node_index_changes", "node_vectors"} <= names

    def _create_index_tables(self, db: sqlite3.Connection) -> None:
        """The index tables of a store made before them (inside the open write: one statement
        at a time, as ``executescript`` would commit)."""
        if getattr(self, "_index_ready", None) is db:
            return
        if self._index_tables(db):
            self._index_ready = db  # known to be there, on this connection's file
        else:
            for statement in _INDEX_TABLES.split(";"):
                if statement.strip():
                    db.execute(statement)

    def read_node_index(self) -> tuple[int, bytes | None, list[tuple[str, str | None]]] | None:
        """The kept node index (see :meth:`Store.read_node_index`), read on the second
        connection in one read transaction; a row that does not match its checksum, or a
        value of the wrong type, reads as no index (the index is derived: it is rebuilt)."""
        self._follow()
        with self._peek_lock, self._guard("read the node index of"):
            db = self._reader()
            if not self._index_tables(db):
                return None
            db.execute("BEGIN")
            try:
                rows = {name: (t, data, crc) for name, t, data, crc in db.execute("SELECT name, t, data, crc FROM node_index")}
                changed = db.execute("SELECT id, terms, crc FROM node_index_changes").fetchall()
            finally:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("COMMIT")
        head = rows.get("t")
        if head is None or type(head[0]) is not int or head[2] != row_crc("t", head[0]):
            return None
        segment = rows.get("segment")
        data = None
        if segment is not None:
            t, data, crc = segment
            if type(data) is not bytes or crc != row_crc("segment", t, zlib.crc32(data)):
                return None
        out = []
        for node_id, terms, crc in changed:
            if crc != row_crc(node_id, terms):
                return None
            out.append((node_id, terms))
        return head[0], data, out

    def node_index_t(self) -> int | None:
        assert self._in_write, "node_index_t() runs inside write()"
        cached = self._index_t_cache
        if self._index_t_written is not _UNSET:  # written in this transaction
            return self._index_t_written
        if cached is not None and cached[0] == self.change_token():
            return cached[1]  # this store wrote it, and no other connection wrote since
        with self._guard("read the node index of"):
            if getattr(self, "_index_ready", None) is not self._db and not self._index_tables(self._db):
                return None
            row = self._db.execute("SELECT t, crc FROM node_index WHERE name = 't'").fetchone()
        if row is None or row[1] != row_crc("t", row[0]):
            return None
        return row[0]

    def write_node_index(self, t: int, changed: list[tuple[str, str | None]], segment: bytes | None = None) -> None:
        assert self._in_write, "write_node_index() runs inside write()"
        db = self._db
        with self._guard("write", written=True):
            self._create_index_tables(db)
            if segment is not None:
                db.execute("DELETE FROM node_index_changes")
                db.execute(
                    "INSERT OR REPLACE INTO node_index (name, t, data, crc) VALUES ('segment', ?, ?, ?)",
                    (t, segment, row_crc("segment", t, zlib.crc32(segment))),
                )
            if changed:
                db.executemany(
                    "INSERT OR REPLACE INTO node_index_changes (id, terms, crc) VALUES (?, ?, ?)",
                    [  # row_crc(node_id, terms), inlined
                        (node_id, terms, zlib.crc32(f"{node_id}\x1f{terms}".encode("utf-8", "surrogatepass")))
                        for node_id, terms in changed
                    ],
                )
            # In place: a REPLACE would delete the row and insert it again, in the table and its
            # primary-key index (a page more per commit).
            head = (t, row_crc("t", t))
            if db.execute("UPDATE node_index SET t = ?, data = NULL, crc = ? WHERE name = 't'", head).rowcount != 1:
                db.execute("INSERT OR REPLACE INTO node_index (name, t, data, crc) VALUES ('t', ?, NULL, ?)", head)
        self._index_t_written = t

    def read_node_vectors(self, model: str, keys: list[str] | None = None) -> dict[str, bytes]:
        self._follow()
        with self._peek_lock, self._guard("read the node vectors of"):
            db = self._reader()
            if not self._index_tables(db):
                return {}
            if keys is None:
                rows = db.execute("SELECT key, vector, crc FROM node_vectors WHERE model = ?", (model,)).fetchall()
            else:
                rows = []
                for start in range(0, len(keys), 500):
                    batch = keys[start : start + 500]
                    marks = ", ".join("?" * len(batch))
                    rows += db.execute(
                        f"SELECT key, vector, crc FROM node_vectors WHERE model = ? AND key IN ({marks})", (model, *batch)
                    ).fetchall()
        return {key: vector for key, vector, crc in rows if type(vector) is bytes and crc == row_crc(model, key, zlib.crc32(vector))}

    def write_node_vectors(self, model: str, rows: list[tuple[str, bytes]], *, clear: bool = False) -> None:
        assert self._in_write, "write_node_vectors() runs inside write()"
        db = self._db
        with self._guard("write", written=True):
            self._create_index_tables(db)
            if clear:
                db.execute("DELETE FROM node_vectors")
            db.executemany(
                "INSERT OR REPLACE INTO node_vectors (model, key, vector, crc) VALUES (?, ?, ?, ?)",
                [(model, key, vector, row_crc(model, key, zlib.crc32(vector))) for key, vector in rows],
            )

    # -- small tables -------------------------------------------------------------------------

    def _small_rows(self, db: sqlite3.Connection, table: str, columns: str, where: str = "", params: tuple = ()) -> list:
        """Rows of a small table read past its index, each checked against its checksum."""
        rows = db.execute(f"SELECT {columns}, {self._crc[table]} FROM {table} NOT INDEXED {where}", params).fetchall()
        for row in rows:
            if row[-1] is not None and row[-1] != row_crc(*row[:-1]):
                key = "key" if table == "meta" else "name"
                raise self._damaged(
                    f"the {table} row {row[0]!r} does not match its checksum",
                    f"UPDATE {table} SET crc = NULL WHERE {key} = {_sql_text(row[0])}",
                )
        return [row[:-1] for row in rows]

    def snapshots(self) -> dict[str, int]:
        self._follow()
        # On the reading connection: a reader resolving a snapshot name under the memory's
        # read lock must not wait for a commit that is waiting for readers to finish.
        with self._peek_lock, self._guard("read the snapshots of"):
            rows = self._small_rows(self._reader(), "snapshots", "name, t", "ORDER BY t, name")
        return dict(rows)

    def set_snapshot(self, name: str, t: int) -> None:
        with self.write(), self._guard("write", written=True):
            self._db.execute(
                "INSERT OR REPLACE INTO snapshots (name, t, crc) VALUES (?, ?, ?)", (name, t, row_crc(name, t))
            )

    def constraints(self) -> dict[str, str]:
        self._follow()
        with self._lock, self._guard("read the constraints of"):
            return dict(self._small_rows(self._db, "constraints", "name, text", "ORDER BY name"))

    def set_constraint(self, name: str, text: str | None) -> None:
        with self.write(), self._guard("write", written=True):
            if text is None:
                self._db.execute("DELETE FROM constraints WHERE name = ?", (name,))
            else:
                self._db.execute(
                    "INSERT OR REPLACE INTO constraints (name, text, crc) VALUES (?, ?, ?)", (name, text, row_crc(name, text))
                )

    def get_meta(self, key: str) -> str | None:
        self._follow()
        with self._lock, self._guard("read the metadata of"):
            rows = self._small_rows(self._db, "meta", "key, value", "WHERE key = ?", (key,))
        if len(rows) > 1:
            raise self._damaged(f"the meta row {key!r} is in the table twice")
        return rows[0][1] if rows else None

    def set_meta(self, key: str, value: str | None) -> None:
        with self.write(), self._guard("write", written=True):
            if value is None:
                self._db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self._db.execute(
                    "INSERT OR REPLACE INTO meta (key, value, crc) VALUES (?, ?, ?)", (key, value, row_crc(key, value))
                )

    def close(self) -> None:
        """Close the connections (never raises: nothing unwritten is lost by closing); a memory
        that never committed leaves no file."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._close_reader()
            if self._unpublished is not None:
                self._remove_files(self._unpublished)
                self._unpublished = None
