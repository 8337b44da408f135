"""What a store does for a Memory: keep the journal of commits, the current state, snapshots
and user constraints, and serialize writers. ``InMemoryStore`` keeps them in the process."""

from __future__ import annotations

import abc
import contextlib
from typing import Iterator

from hgm_engine.model import MemoryGraph

__all__ = ["Store", "InMemoryStore"]


class Store(abc.ABC):
    """The interface stores implement (see ``InMemoryStore``, ``SQLiteStore`` and
    ``PostgresStore``): the abstract methods, and the others where a store can do better.

    >>> sorted(Store.__abstractmethods__)[:3]
    ['append', 'commits_after', 'constraints']
    """

    location = ":memory:"

    @abc.abstractmethod
    def load_state(self) -> tuple[MemoryGraph, int]:
        """The current graph and its ``t``."""

    @abc.abstractmethod
    def write(self) -> contextlib.AbstractContextManager["Store"]:
        """Hold the write lock for one commit; changes made inside commit together or not at
        all. Re-entrant: a ``write()`` inside another joins it."""

    @abc.abstractmethod
    def latest_t(self) -> int:
        """The ``t`` of the last commit in the store."""

    def change_token(self) -> object:
        """A cheap value that differs after another process wrote to the store (commits,
        constraints, rule sets). Equal tokens mean nothing new to apply; a changed token may
        be a false alarm. By default the latest ``t``.

        >>> InMemoryStore().change_token() is None  # nothing else writes to it
        True
        """
        return self.latest_t()

    def committed_t(self) -> int:
        """The latest committed ``t``, read without waiting for a commit of this process in
        progress (a reader's quick "is there anything newer?"). By default :meth:`latest_t`.

        >>> InMemoryStore().committed_t()
        0
        """
        return self.latest_t()

    def read_commits(self, t: int, upto: int) -> list:
        """:meth:`commits_after` for a reader: never waits for a commit of this process in
        progress (it reads on the same second connection as :meth:`committed_t`).

        >>> InMemoryStore().read_commits(0, 0)
        []
        """
        return self.commits_after(t, upto)

    @abc.abstractmethod
    def commits_after(self, t: int, upto: int | None = None) -> list:
        """Commits with ``t < commit.t <= upto``, oldest first."""

    @abc.abstractmethod
    def append(self, commit) -> None:
        """Record ``commit`` and apply its changes to the stored state (inside ``write``)."""

    def write_genesis(self, commit, graph: MemoryGraph) -> None:
        """Record the genesis ``commit`` (a load into an empty store) whose state is ``graph``
        (inside ``write``). By default :meth:`append`: a store that keeps the state apart from
        the journal writes the whole graph here, in bulk.

        >>> from hgm_engine import Commit
        >>> store = InMemoryStore()
        >>> with store.write():
        ...     store.write_genesis(Commit(1, None, "load", None, 0.0, (), genesis=True), MemoryGraph())
        >>> store.latest_t()
        1
        """
        self.append(commit)

    @abc.abstractmethod
    def snapshots(self) -> dict[str, int]:
        """Snapshot name → ``t``."""

    @abc.abstractmethod
    def set_snapshot(self, name: str, t: int) -> None: ...

    @abc.abstractmethod
    def constraints(self) -> dict[str, str]:
        """User constraint name → text."""

    @abc.abstractmethod
    def set_constraint(self, name: str, text: str | None) -> None:
        """Store a user constraint's text (None deletes it)."""

    @abc.abstractmethod
    def get_meta(self, key: str) -> str | None: ...

    @abc.abstractmethod
    def set_meta(self, key: str, value: str | None) -> None:
        """Store a value under ``key`` (None deletes it)."""

    def purge(self, ids: frozenset[str], tombstone) -> None:
        """Remove every trace of the nodes ``ids`` and of the edges that touch them from the
        journal and the state, and append ``tombstone`` (a commit of kind ``purge`` with no
        changes), inside ``write``. By default through :meth:`rewrite_journal`.

        >>> from hgm_engine import Commit
        >>> store = InMemoryStore()
        >>> with store.write():
        ...     store.purge(frozenset({"s"}), Commit(1, None, "gdpr", None, 0.0, (), kind="purge", purged=("s",)))
        >>> store.commits_after(0)[0].purged
        ('s',)
        """
        raise NotImplementedError(f"{type(self).__name__} cannot purge")

    def scrub(self) -> None:
        """After a purge: make the files hold no byte of what was deleted (SQLite: VACUUM and
        an emptied write-ahead log; PostgreSQL: VACUUM FULL). Nothing to do by default.

        >>> InMemoryStore().scrub()
        """

    def forget_cached(self) -> None:
        """Drop every commit read before (another process purged: they may hold what it
        removed). Nothing to do by default.

        >>> InMemoryStore().forget_cached()
        """

    # -- the node index (hgm_engine.search keeps it; these keep its rows) --------------------

    keeps_node_index = False
    """Whether the store keeps the node index with the state (SQLite and PostgreSQL do: a
    memory opened again reads its index instead of analysing every node's text)."""

    def read_node_index(self) -> tuple[int, bytes | None, list[tuple[str, str | None]]] | None:
        """The node index kept with the state: the ``t`` it reflects, its last saved segment
        (None: none yet, an empty one) and the entries changed since, ``(id, terms JSON or
        None for none)``; None when the store keeps none (or no ``t`` was written yet).

        >>> InMemoryStore().read_node_index() is None
        True
        """
        return None

    def node_index_t(self) -> int | None:
        """Inside ``write()``: the ``t`` the kept node index reflects (None: none kept)."""
        return None

    def write_node_index(self, t: int, changed: list[tuple[str, str | None]], segment: bytes | None = None) -> None:
        """Inside ``write()``: the node index now reflects ``t``; ``changed`` are the entries
        that differ from the saved segment since it was saved (upserted; None: no entry), or,
        with ``segment``, the new segment replaces the saved one and every changed entry."""

    def read_node_vectors(self, model: str, keys: list[str] | None = None) -> dict[str, bytes]:
        """The vectors kept for ``model``, by the key of the text they embed (all, or those of
        ``keys``).

        >>> InMemoryStore().read_node_vectors("m")
        {}
        """
        return {}

    def write_node_vectors(self, model: str, rows: list[tuple[str, bytes]], *, clear: bool = False) -> None:
        """Inside ``write()``: keep ``rows`` (text key, vector bytes) for ``model``; ``clear``
        drops every vector kept before (of any model)."""

    def close(self) -> None:
        """Release connections (nothing to do for a store in the process)."""


class InMemoryStore(Store):
    """Everything in the process: nothing survives it. The default for ``Memory()``.

    >>> store = InMemoryStore()
    >>> store.set_snapshot("start", 0)
    >>> store.snapshots(), store.latest_t()
    ({'start': 0}, 0)
    """

    def __init__(self) -> None:
        self._commits: list = []
        self._snapshots: dict[str, int] = {}
        self._constraints: dict[str, str] = {}
        self._meta: dict[str, str] = {}
        self._in_write = 0

    def load_state(self) -> tuple[MemoryGraph, int]:
        return MemoryGraph(), 0

    @contextlib.contextmanager
    def write(self) -> Iterator["InMemoryStore"]:
        """As every store's: what is changed inside is undone if the block fails (a nested
        ``write()`` joins the outer one)."""
        if self._in_write:
            self._in_write += 1
            try:
                yield self
            finally:
                self._in_write -= 1
            return
        saved = (len(self._commits), dict(self._snapshots), dict(self._constraints), dict(self._meta))
        self._in_write = 1
        try:
            yield self
        except BaseException:
            del self._commits[saved[0] :]
            self._snapshots, self._constraints, self._meta = saved[1], saved[2], saved[3]
            raise
        finally:
            self._in_write = 0

    def latest_t(self) -> int:
        return len(self._commits)

    def change_token(self) -> object:
        return None  # only this process writes to it

    def commits_after(self, t: int, upto: int | None = None) -> list:
        return self._commits[t:upto]

    def append(self, commit) -> None:
        assert commit.t == len(self._commits) + 1, "commits are appended in order"
        self._commits.append(commit)

    def purge(self, ids: frozenset[str], tombstone) -> None:
        from hgm_engine.store.purge import without_nodes

        assert self._in_write, "purge() runs inside write()"
        self._commits[:] = [without_nodes(commit, ids) for commit in self._commits]
        self.append(tombstone)

    def snapshots(self) -> dict[str, int]:
        return dict(self._snapshots)

    def set_snapshot(self, name: str, t: int) -> None:
        self._snapshots[name] = t

    def constraints(self) -> dict[str, str]:
        return dict(self._constraints)

    def set_constraint(self, name: str, text: str | None) -> None:
        if text is None:
            self._constraints.pop(name, None)
        else:
            self._constraints[name] = text

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def set_meta(self, key: str, value: str | None) -> None:
        if value is None:
            self._meta.pop(key, None)
        else:
            self._meta[key] = value
