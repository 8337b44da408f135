"""The state of one memory — graph, ``t``, cached views of earlier states — and the locks that
keep it in step with its store and safe for this process's threads.

Several processes may share one store; each keeps its own copy of the state and catches up
with the commits the others wrote. Inside a process, queries run in many threads while one
commit at a time is made. Every rule about which lock is taken when is in this module.

Lock order
----------

A thread takes these in this order (outermost first) and never one higher up while it holds
a lower one, with the one exception below:

1. ``write_lock`` (an ``RLock`` of this memory). Held by a commit of this process from the
   first op it builds until the commit is applied and announced, by a load, by a ``refresh``
   that got it without waiting, and by :meth:`Memory.exclusive` users (the path index is
   built from a fixed ``t``): while it is held, no commit of this process starts.
2. The store's write lock (``store.write()``: SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's
   advisory lock): no other process commits. A commit takes it with ``write_lock`` held; the
   writes that are not commits (constraints, rule sets, snapshot names) take it alone,
   holding none of these locks.
3. ``catch_up_lock`` (an ``RLock``). Held while other processes' commits are applied to the
   state, and by a commit of this process from the moment it holds the store's write lock
   until its commit is visible and announced: a reader may catch up while a local writer
   still queues for the store, never once that writer has caught up itself. A thread
   without ``write_lock`` takes it only without waiting.
4. ``lock`` (a :class:`ReadWriteLock`, many readers or one writer). Queries read under it;
   the state changes only under its write side, so no query sees a commit half-applied.

The exception: commit listeners run with ``write_lock`` and ``catch_up_lock`` held, and may
write to the store (the path index saves its state every few commits), so they take the
store's write lock after the catch-up lock. Holding ``write_lock`` makes that safe: the
store's lock is then held only by other processes or by this process's writes that are not
commits, and none of them waits for the catch-up lock.

And the rules that keep that order free of deadlocks:

- A reader (under ``lock.reading()``) reads the store only on its second connection
  (``read_commits``, ``committed_t``, ``snapshots``): a commit of this process holds the
  first one while it waits for readers to finish.
- A thread waits for readers (``lock.writing()`` blocking) while it holds ``catch_up_lock``
  only if it holds ``write_lock`` too: then no commit of this process can be waiting for the
  catch-up lock while those readers wait for the commit.
- Other processes' commits are applied without ``write_lock`` only when the memory has no
  commit listeners (the path index): listeners may write to the store, which a commit of
  this process may hold.
- ``only_own_commit_pending`` (a flag, no lock) is true while a commit of this process holds
  the store's write lock and has applied every other process's commit: until its own is
  applied, the state lacks only that commit, which no client has been told of yet.

>>> from hgm_engine.store import InMemoryStore
>>> state = MemoryState(InMemoryStore())
>>> with state.lock.reading():
...     state.t, len(state.graph)
(0, 0)
"""

from __future__ import annotations

import threading
from typing import Any, Callable, TypeVar

from hgm_engine.model import GraphView, MemoryGraph, apply_changes, bulk_allocation
from hgm_engine.model import Commit
from hgm_engine.store import InMemoryStore
from hgm_engine.txn.history import ViewCache, historical_view

__all__ = ["ReadWriteLock", "MemoryState"]

Result = TypeVar("Result")


class ReadWriteLock:
    """Many readers or one writer: queries never see a commit half-applied.

    >>> lock = ReadWriteLock()
    >>> with lock.reading():
    ...     with lock.writing(blocking=False) as acquired:
    ...         acquired
    False
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()  # the condition's lock, taken directly by readers
        self._condition = threading.Condition(self._mutex)
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0  # threads in writing() waiting for readers to finish
        self._reading = _Reading(self)

    def reading(self) -> "_Reading":
        """Shared access: waits while a writer holds the lock. (One context manager, made
        with the lock, serves every read: every query takes it.)"""
        return self._reading

    def writing(self, *, blocking: bool = True) -> "_Writing":
        """Exclusive access; with ``blocking=False`` gives False at once instead of waiting
        for readers or a writer (and nothing is held). (A plain context manager, as
        :meth:`reading`'s: every commit takes it, and a generator-based one costs more.)"""
        return _Writing(self, blocking)

    def wait_until(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` holds after a writer finished (or ``timeout`` passed)."""
        with self._condition:
            return self._condition.wait_for(predicate, timeout)


class _Writing:
    """``with lock.writing(blocking=...) as acquired:`` — the write side of a
    :class:`ReadWriteLock`: waits while another writer or any reader holds it (unless not
    ``blocking``: then ``acquired`` is False and nothing is held), released on leaving."""

    __slots__ = ("_lock", "_blocking", "_acquired")

    def __init__(self, lock: ReadWriteLock, blocking: bool) -> None:
        self._lock = lock
        self._blocking = blocking
        self._acquired = False

    def __enter__(self) -> bool:
        lock = self._lock
        with lock._condition:
            if not self._blocking and (lock._writer or lock._readers):
                return False
            while lock._writer or lock._readers:
                lock._writers_waiting += 1
                try:
                    lock._condition.wait()
                finally:
                    lock._writers_waiting -= 1
            lock._writer = self._acquired = True
        return True

    def __exit__(self, *exc: object) -> None:
        if self._acquired:
            self._acquired = False
            lock = self._lock
            with lock._condition:
                lock._writer = False
                lock._condition.notify_all()


class _Reading:
    """``with lock.reading():`` — the read side of a :class:`ReadWriteLock`, without a
    generator: the last reader out wakes the condition only when a writer waits for it."""

    __slots__ = ("_lock",)

    def __init__(self, lock: ReadWriteLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        lock = self._lock
        with lock._mutex:  # the condition's own lock (no Python-level Condition.__enter__)
            while lock._writer:
                lock._condition.wait()
            lock._readers += 1

    def __exit__(self, *exc: object) -> None:
        lock = self._lock
        with lock._mutex:
            lock._readers -= 1
            if not lock._readers and lock._writers_waiting:
                lock._condition.notify_all()


class MemoryState:
    """One memory's copy of its store's state, the locks around it (see the module's lock
    order) and catching up with what other processes wrote.

    ``sync_meta`` is called after every catch-up: it reads what other processes stored
    besides commits (constraints, rule sets). ``listeners`` are called with every commit the
    state applies, its own or caught up.

    >>> from hgm_engine.store import InMemoryStore
    >>> state = MemoryState(InMemoryStore())
    >>> state.refresh(), state.store_changed(), state.behind_store()
    (0, False, False)
    """

    def __init__(self, store: Any, sync_meta: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.sync_meta = sync_meta
        # Read before the state: a commit landing in between shows as news, never as nothing.
        self.seen_token = store.change_token()
        self.graph: MemoryGraph
        # The state's payloads live as long as the memory: out of the collector's reach
        # (bulk_allocation.keep), the first queries after opening do not walk them all.
        with bulk_allocation() as bulk:
            self.graph, self.t = store.load_state()
            if len(self.graph):
                bulk.keep()
        self.kept = bulk.kept  # the memory gives them back when it closes (release_kept)
        self.views = ViewCache()
        self.listeners: list[Callable[[Commit], None]] = []
        self.write_lock = threading.RLock()
        # Held while other processes' commits are applied, and by a commit of this process
        # from the moment it holds the store's write lock until it is visible and announced:
        # a reader may catch up while a local writer still queues for the store.
        self.catch_up_lock = threading.RLock()
        # True while a commit of this process holds the store's write lock and has applied
        # every other process's commit: until its own is applied, the state lacks only that
        # commit, which no client has been told of yet.
        self.only_own_commit_pending = False
        self.lock = ReadWriteLock()

    # -- reading --------------------------------------------------------------------------

    def view_at(self, t: int) -> GraphView:
        """The state at ``t`` (a ``t`` of the history; call under ``lock.reading()``)."""
        if t == self.t:
            return self.graph
        cached = self.views.get(t, self.graph.version, self.t)
        if cached is not None:
            return cached
        # Read on the store's second connection: this runs under the read lock, and a commit
        # of this process may hold the first one while it waits for readers to finish.
        view = historical_view(self.graph, self.store.read_commits(t, self.t))
        self.views.put(t, self.graph.version, self.t, view)
        return view

    # -- committing -----------------------------------------------------------------------

    def commit(self, write: Callable[[], tuple[Commit | None, Result]]) -> Result:
        """Make one commit of this process. ``write()`` runs while no other commit can start
        (here or in another process) and the state holds every other commit; it builds and
        checks the commit, appends it to the store and returns ``(commit, result)`` — or
        ``(None, result)`` to commit nothing. The commit is then applied and announced, and
        ``result`` returned.

        >>> from hgm_engine.store import InMemoryStore
        >>> state = MemoryState(InMemoryStore())
        >>> state.commit(lambda: (None, "nothing to commit"))
        'nothing to commit'
        """
        with self.write_lock:
            held = pending = False
            try:
                with self.store.write():
                    # From here no other process can commit; readers of this process stop
                    # catching up until this commit is applied and announced (then released).
                    self.catch_up_lock.acquire()
                    held = True
                    self.catch_up()
                    self.only_own_commit_pending = pending = True
                    commit, result = write()
                    if commit is None:
                        return result
                # Durable now; make it visible.
                with self.lock.writing():
                    self._apply_commits([commit])
                self.notify(commit)
            finally:  # after the store's transaction ended, in this order (as an ExitStack would)
                if pending:
                    self.only_own_commit_pending = False
                if held:
                    self.catch_up_lock.release()
        return result

    def alone(self, run: Callable[[], Result]) -> Result:
        """``run()`` while no other commit can start (here or in another process) and the
        state holds every commit in the store (for a load, which must know whether the
        store is empty: two processes loading one empty store at once must not both take it
        for empty).

        >>> from hgm_engine.store import InMemoryStore
        >>> state = MemoryState(InMemoryStore())
        >>> state.alone(lambda: state.t)
        0
        """
        with self.write_lock, self.store.write():
            self.catch_up()
            return run()

    def replace(self, commit: Commit, graph: MemoryGraph) -> None:
        """Write the genesis ``commit`` and make ``graph`` the state (inside :meth:`alone`)."""
        with self.store.write():
            self.store.write_genesis(commit, graph)
        with self.lock.writing():
            self.graph = graph
            self.t = commit.t
            self.views.clear()
        self.notify(commit)

    def purge(self, build: Callable[[], tuple[frozenset[str], Commit]]) -> Commit:
        """Forget nodes: ``build()`` (run while no other commit can start and the state holds
        every commit) returns the ids and the tombstone commit; the store removes every trace
        of them, the state is read again from the store, the files are scrubbed
        (``store.scrub()``), and the tombstone is announced.

        >>> from hgm_engine.store import InMemoryStore
        >>> state = MemoryState(InMemoryStore())
        >>> state.purge(lambda: (frozenset({"x"}), Commit(1, None, "why", None, 0.0, (), kind="purge", purged=("x",)))).t
        1
        """
        with self.write_lock:
            with self.store.write(), self.catch_up_lock:
                self.catch_up()
                ids, tombstone = build()
                self.store.purge(ids, tombstone)
            with self.catch_up_lock, self.lock.writing():
                if isinstance(self.store, InMemoryStore):  # it keeps no state to read back
                    for node_id in ids:
                        if self.graph.node(node_id) is not None:
                            self.graph.remove_node(node_id)
                    self.t = tombstone.t
                else:
                    self.graph, self.t = self.store.load_state()
                self.views.clear()
            self.store.scrub()
            self.notify(tombstone)
        return tombstone

    def notify(self, commit: Commit) -> None:
        for listener in self.listeners:
            listener(commit)

    # -- catching up with other processes -------------------------------------------------

    def store_changed(self) -> bool:
        """Whether another process may have written to the store (commits, constraints, rule
        sets) since this memory last looked; cheap (SQLite: one PRAGMA, no table read).

        >>> from hgm_engine import Memory
        >>> Memory().store_changed()
        False
        """
        return self.store.change_token() != self.seen_token

    def behind_store(self) -> bool:
        """Whether the store holds commits another process made that this memory has not
        applied yet. Never waits for a commit of this process in progress (the store answers
        on a second connection), so a server can ask before every read.

        >>> from hgm_engine import Memory
        >>> Memory().behind_store()
        False
        """
        return self.store.committed_t() > self.t

    def catch_up(self, *, wait: bool = True) -> bool:
        """Apply commits another process wrote to the store since we last looked (under the
        write lock). With ``wait=False`` nothing happens and False is returned when queries
        in other threads would have to finish first."""
        with self.catch_up_lock:
            token = self.store.change_token()
            if token == self.seen_token:
                # Equal tokens: nothing written by anyone else since we last looked (the
                # store's contract), so the journal, constraints and rule sets need no read.
                return True
            latest = self.store.latest_t()
            if latest <= self.t:
                self.sync_meta()
                self.seen_token = token
                return True
            commits = self.store.commits_after(self.t, latest)
            with self.lock.writing(blocking=wait) as acquired:
                if not acquired:
                    return False
                if any(c.genesis or c.kind == "purge" for c in commits):
                    if any(c.kind == "purge" for c in commits):  # what this process read may hold what was purged
                        self.store.forget_cached()
                    self.graph, self.t = self.store.load_state()
                    self.views.clear()
                else:
                    self._apply_commits(commits)
            self.sync_meta()
            self.seen_token = token
            for commit in commits:
                self.notify(commit)
            return True

    def refresh(self, *, wait: bool = True) -> int | None:
        """Catch up with commits (and constraints, rule sets) other processes wrote to the
        store; returns the new ``t``. Cheap when there is nothing new.

        While a commit of this process is under way, that commit applies what others
        committed before it (it holds the store's write lock), so this waits only until the
        state has reached the store's latest ``t`` — not for the commit to finish. With
        ``wait=False`` it returns None instead of waiting at all (a server's event loop).

        >>> from hgm_engine import Memory
        >>> memory = Memory()
        >>> memory.refresh(), memory.refresh(wait=False)
        (0, 0)
        """
        target = self.store.committed_t()  # never waits for a commit of this process
        while True:
            if self.write_lock.acquire(blocking=False):
                try:
                    if self.store_changed() and not self.catch_up(wait=wait):
                        return None
                finally:
                    self.write_lock.release()
                return self.t
            if self.t >= target:
                return self.t
            # A commit of this process holds the write lock. Until it holds the store's too,
            # other processes' commits can be applied from here (read on the second connection).
            # (Never waiting for readers while holding the catch-up lock: a commit of this
            # process may be waiting for that lock while those readers wait for the commit.)
            if self._apply_committed(target):
                return self.t
            if self.only_own_commit_pending:
                # The store is ahead only by the commit under way here, which no client has
                # been told of: a read from this state comes before that commit.
                return self.t
            if not wait:
                return None
            self.lock.wait_until(lambda: self.t >= target, 0.05)

    def _apply_committed(self, target: int) -> bool:
        """Apply the store's commits up to ``target`` without the write lock; False when a
        commit of this process is past its catch-up (it applies them) or when queries in
        other threads would have to finish first. Not with commit listeners (the path
        index): they may write to the store, which that commit holds."""
        if self.listeners or not self.catch_up_lock.acquire(blocking=False):
            return False
        try:
            if self.t >= target:
                return True
            commits = self.store.read_commits(self.t, target)
            if not commits or commits[0].t != self.t + 1 or any(c.genesis or c.kind == "purge" for c in commits):
                return False  # a reload: left to the full catch-up
            with self.lock.writing(blocking=False) as acquired:
                if not acquired:
                    return False
                self._apply_commits(commits)
            return True
        finally:
            self.catch_up_lock.release()

    def _apply_commits(self, commits: list[Commit]) -> None:
        """Commits onto the state (under the state's write lock)."""
        for commit in commits:
            changes = commit.changes  # a tuple: nothing can change it on the way
            apply_changes(self.graph, changes)
            self.t = commit.t
            self.views.carry(self.graph.version, self.t, changes)
