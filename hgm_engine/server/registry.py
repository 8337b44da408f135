"""The open memories of a server: one registry shared by REST and MCP (docs/server.md).

A server over a store of many memories (``hgm_engine.open_store``) cannot hold them all in
RAM. :class:`MemoryRegistry` opens a memory (a
:class:`~hgm_engine.server.service.MemoryService` over its :class:`~hgm_engine.Memory`) the
first time a request names it, keeps at most ``max_open`` of them resident and, when one
more is needed, closes the least recently used one that no request is using. A request
*leases* its memory for as long as it runs (a reference count): a leased memory is never
closed, so a memory is never closed mid-request. An evicted memory opens again, from the
store, the next time it is named — with every commit made before it was closed, and any
other process's since.

When more than ``max_open`` memories are leased at once, all of them stay open (a request is
never made to wait for another memory's request); the extra ones are closed as soon as their
last request ends. Opening happens outside the registry's lock: a memory being opened (its
journal read, its indexes built) delays only the requests for that memory.

>>> import os, tempfile
>>> from hgm_engine import open_store
>>> path = os.path.join(tempfile.mkdtemp(), "memories.db")
>>> with open_store(path) as store:
...     for name in ("acme/alice", "acme/bob", "zed"):
...         store.create(name).close()
>>> registry = MemoryRegistry(path, max_open=2)
>>> with registry.lease("acme/alice") as service:
...     service.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})["t"]
1
>>> with registry.lease("acme/bob"), registry.lease("zed"):
...     registry.resident()          # least recently used first; alice was evicted
['acme/bob', 'zed']
>>> with registry.lease("acme/alice") as service:   # opened again, from the store
...     service.query("root")["ids"]
['g']
>>> registry.list("acme/")
['acme/alice', 'acme/bob']
>>> registry.lease("acme/alcie")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
hgm_engine.errors.RequestError: unknown-memory at acme/alcie: no memory 'acme/alcie' in ...; did you mean 'acme/alice'? ...
>>> registry.close()
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from hgm_engine.errors import Problem, RequestError
from hgm_engine.memories import MemoryStore, open_store
from hgm_engine.memory import Memory
from hgm_engine.model import Schema, collect_kept
from hgm_engine.store import DEFAULT_MEMORY, check_memory_name, check_memory_prefix, unknown_memory
from hgm_engine.server.service import LLMEndpoint, MemoryService, ServerLimits

__all__ = ["MemoryRegistry", "Lease", "DEFAULT_MAX_OPEN", "DEFAULT_COLLECT_GROWTH", "MAX_OPEN_ENV", "MALLOC_TRIM_ENV", "max_open_from_env", "malloc_trim",
           "malloc_trim_from_env"]

logger = logging.getLogger("hgm.server")

# Memories a server keeps open at once unless told otherwise (``hgm serve --max-open``,
# ``$HGM_MAX_OPEN``). Each open memory holds its graph and indexes in RAM: a memory of 1,000
# nodes takes a few MB, so the default keeps a server of small memories within a few hundred MB.
DEFAULT_MAX_OPEN = 100
MAX_OPEN_ENV = "HGM_MAX_OPEN"

# ``0`` turns off the registry's ``malloc_trim`` after its collections (see ``malloc_trim``):
# on by default, since it keeps a server's resident set flat at no measurable CPU cost.
MALLOC_TRIM_ENV = "HGM_MALLOC_TRIM"

# How much Python's heap (its allocated blocks) must have grown since the registry's last
# collection before it runs another (MemoryRegistry's ``collect_growth``; see ``_collect``).
DEFAULT_COLLECT_GROWTH = 0.05

# How long dropping a memory waits for the requests that use it to end.
_DROP_WAIT = 30.0


class _Entry:
    """One memory of the registry: its service once open, how many requests lease it."""

    __slots__ = ("name", "service", "refs", "opening", "closed", "dropping", "last_used")

    def __init__(self, name: str):
        self.name = name
        self.service: MemoryService | None = None
        self.refs = 0
        self.opening = threading.Lock()  # held while the memory is being opened
        self.closed = threading.Event()  # set once an evicted entry's memory is closed
        self.dropping = False
        self.last_used = time.monotonic()


class Lease:
    """A request's hold on one open memory: ``service`` stays open until :meth:`release` (or
    the end of a ``with`` block). Releasing twice is harmless.

    >>> registry = MemoryRegistry.of(Memory())
    >>> lease = registry.lease("default")
    >>> lease.name, lease.service.health()["t"]
    ('default', 0)
    >>> lease.release(); lease.release()
    """

    __slots__ = ("name", "service", "_registry", "_entry")

    def __init__(self, registry: "MemoryRegistry", entry: _Entry):
        self._registry = registry
        self._entry: _Entry | None = entry
        self.name = entry.name
        self.service: MemoryService = entry.service  # type: ignore[assignment]

    def release(self) -> None:
        """End the hold (the memory may now be evicted)."""
        entry, self._entry = self._entry, None
        if entry is not None:
            self._registry._release(entry)

    def __enter__(self) -> MemoryService:
        return self.service

    def __exit__(self, *exc: Any) -> None:
        self.release()


class MemoryRegistry:
    """The memories a server has open, at most ``max_open`` of them (see the module).

    ``location``: a SQLite file or a ``postgresql://`` URL (a store of many memories,
    :func:`hgm_engine.open_store`). ``limits`` and ``llm`` are given to every memory's
    :class:`~hgm_engine.server.service.MemoryService`; ``memory_options`` to every
    :class:`~hgm_engine.Memory` opened. The registry runs a full garbage collection once
    ``max(1, max_open // 4)`` memories have closed since its last one and Python's heap has
    grown by ``collect_growth`` (a fraction, 0.05 by default; ``0``: whatever the heap) since
    that one ended (see ``_collect``). ``trim``: whether each of those collections ends with
    :func:`malloc_trim`, which hands the C allocator's free pages back to the system (None:
    ``$HGM_MALLOC_TRIM``, on unless it is ``0``; :func:`malloc_trim_from_env`). :meth:`of` makes the registry of one memory already
    open (the server of ``create_app(memory)``): it holds ``default`` alone, never closes it,
    and cannot create or drop memories.

    Thread-safe: leases, listing, creating and dropping may come from any thread.

    >>> registry = MemoryRegistry.of(Memory())
    >>> registry.list(), registry.max_open
    (['default'], 1)
    """

    def __init__(
        self,
        location: str | os.PathLike | None,
        *,
        max_open: int = DEFAULT_MAX_OPEN,
        limits: ServerLimits | None = None,
        llm: LLMEndpoint | None = None,
        memory_options: dict[str, Any] | None = None,
        trim: bool | None = None,
        collect_growth: float = DEFAULT_COLLECT_GROWTH,
        _pinned: Memory | None = None,
    ):
        if isinstance(max_open, bool) or not isinstance(max_open, int) or max_open < 1:
            raise RequestError([Problem("invalid-argument", f"max_open is a count of at least 1, not {max_open!r}", where="max_open")])
        if isinstance(collect_growth, bool) or not isinstance(collect_growth, (int, float)) or not math.isfinite(collect_growth) or collect_growth < 0:
            raise RequestError(
                [Problem("invalid-argument", f"collect_growth is a fraction of at least 0 (0.05: a twentieth), not {collect_growth!r}", where="collect_growth")]
            )
        self.limits = limits or ServerLimits()
        self.llm = llm or LLMEndpoint()
        self.max_open = max_open
        self._memory_options = dict(memory_options or {})
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)  # notified when a lease ends
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._closing: dict[str, _Entry] = {}  # evicted entries whose memory is being closed
        self._pinned = _pinned
        self._closer: ThreadPoolExecutor | None = None  # closes evicted memories, off the caller's thread
        self._closed_since_collect = 0
        self._collect_every = max(1, max_open // 4)  # closes between the registry's collections
        self.collect_growth = float(collect_growth)  # and the heap's growth since the last one
        self._heap_after: int | None = None  # Python's allocated blocks when the last collection ended
        self.collections = 0  # full garbage collections the registry ran (see _collect)
        if trim is None:
            trim = malloc_trim_from_env()
        self.trim = bool(trim)  # hand the allocator's free pages back after each collection
        self.trimmed = 0  # times malloc_trim gave pages back
        self.opened = 0  # memories opened so far (reopenings too)
        self.evicted = 0  # memories closed to make room
        if _pinned is not None:
            self._store: MemoryStore | None = None
            self.location = _pinned.store.location
            entry = _Entry(DEFAULT_MEMORY)
            entry.service = MemoryService(_pinned, self.limits, llm=self.llm)
            self._entries[DEFAULT_MEMORY] = entry
        else:
            if location is None:
                raise RequestError([Problem("invalid-argument", "a registry needs a store location (or use MemoryRegistry.of)", where="location")])
            self._store = open_store(location)
            self.location = self._store.location
        # A PostgreSQL catalog shares one connection: its calls take turns. SQLite's open a
        # connection each.
        from hgm_engine.store.postgres import is_postgres_url

        shared = self._store is not None and is_postgres_url(str(location))
        self._catalog_lock: Any = threading.Lock() if shared else contextlib.nullcontext()

    @classmethod
    def of(cls, memory: Memory, *, limits: ServerLimits | None = None, llm: LLMEndpoint | None = None) -> "MemoryRegistry":
        """The registry of the one memory ``memory`` (named ``default``), which stays open and
        belongs to the caller (:meth:`close` does not close it).

        >>> MemoryRegistry.of(Memory()).lease("x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hgm_engine.errors.RequestError: unknown-memory at x: no memory 'x' in ...
        """
        return cls(None, max_open=1, limits=limits, llm=llm, _pinned=memory)

    @property
    def single(self) -> bool:
        """Whether this is the registry of one memory (:meth:`of`): no other names, no create or drop."""
        return self._pinned is not None

    def __repr__(self) -> str:
        return f"MemoryRegistry({self.location!r}, max_open={self.max_open})"

    # -- leases ---------------------------------------------------------------------------------

    def lease(self, name: str = DEFAULT_MEMORY) -> Lease:
        """Hold the memory ``name`` open for a request, opening it first if it is not resident
        (that may take a while: call it off the event loop); a ``with`` block gives its
        :class:`~hgm_engine.server.service.MemoryService`. A bad name is
        ``invalid-memory-name``, one the store lacks ``unknown-memory`` with the closest
        names; nothing is kept open then.

        >>> registry = MemoryRegistry.of(Memory())
        >>> with registry.lease() as service:
        ...     service.health()["status"]
        'ok'
        """
        check_memory_name(name)
        with self._lock:
            entry = self._take(name)
        if entry is None:
            raise self._unknown(name)
        try:
            with entry.opening:
                if entry.service is None:
                    self._open(entry)
        except BaseException:
            self._release(entry)
            raise
        self._evict_over()
        return Lease(self, entry)

    def lease_resident(self, name: str = DEFAULT_MEMORY) -> Lease | None:
        """The lease of ``name`` when it is open now (no waiting, no store access: fit for the
        event loop), else None (then call :meth:`lease` in a thread).

        >>> registry = MemoryRegistry.of(Memory())
        >>> registry.lease_resident("default").service is not None, registry.lease_resident("other")
        (True, None)
        """
        with self._lock:
            entry = self._entries.get(name)
            if entry is None or entry.service is None or entry.dropping:
                return None
            entry.refs += 1
            entry.last_used = time.monotonic()
            self._entries.move_to_end(name)
        return Lease(self, entry)

    def health(self, name: str = DEFAULT_MEMORY) -> dict[str, Any]:
        """Open ``name`` now when it is not resident and give its service's health (``t``,
        ``nodes``): what a server reads at its start, so that a store that cannot be read
        says so at once. Unlike ``with registry.lease(name) as service`` in a function that
        runs as long as the server, it leaves no variable holding the memory: an evicted
        memory must be garbage, and a ``with`` target stays bound after its block.

        >>> MemoryRegistry.of(Memory()).health()["t"]
        0
        """
        lease = self.lease(name)
        try:
            return lease.service.health()
        finally:
            lease.release()

    def _take(self, name: str) -> _Entry | None:
        """The entry of ``name``, made when missing, with one more reference (under the lock);
        None when there is no such memory here (it is being dropped; a registry of one)."""
        entry = self._entries.get(name)
        if entry is not None and entry.dropping:
            return None
        if entry is None:
            if self._pinned is not None:
                return None
            entry = self._entries[name] = _Entry(name)
        entry.refs += 1
        entry.last_used = time.monotonic()
        self._entries.move_to_end(name)
        return entry

    def _unknown(self, name: str) -> RequestError:
        if self._pinned is not None:
            return unknown_memory(name, [DEFAULT_MEMORY], self.location)
        return unknown_memory(name, self.list(), self.location)

    def _open(self, entry: _Entry) -> None:
        """Open the memory of ``entry`` (under ``entry.opening``, outside the registry's lock),
        after the close of an earlier copy of it has finished."""
        with self._lock:
            earlier = self._closing.get(entry.name)
        if earlier is not None:
            earlier.closed.wait()
        assert self._store is not None  # a pinned registry's one entry is always open
        name = entry.name
        with self._catalog_lock:
            store = self._store.catalog.open(name, create=name == DEFAULT_MEMORY)
        try:
            memory = Memory(store=store, **self._memory_options)
        except BaseException:
            store.close()
            raise
        try:
            service = MemoryService(memory, self.limits, llm=self.llm)
        except BaseException:
            memory.close()
            raise
        with self._lock:
            entry.service = service
            self.opened += 1
        logger.debug("opened memory %s (t=%d, %d nodes)", name, memory.t, len(memory))

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.refs -= 1
            if entry.refs == 0 and entry.service is None and self._entries.get(entry.name) is entry:
                del self._entries[entry.name]  # it never opened (an unknown name, a store error)
            self._released.notify_all()
        self._evict_over()

    def _evict_over(self) -> None:
        """Close least recently used, unleased memories while more than ``max_open`` are open."""
        victims: list[_Entry] = []
        with self._lock:
            over = len(self._entries) - self.max_open
            if over > 0:
                for entry in self._entries.values():
                    if over <= 0:
                        break
                    if entry.refs == 0 and entry.service is not None and not entry.dropping and self._pinned is None:
                        victims.append(entry)
                        over -= 1
                for entry in victims:
                    del self._entries[entry.name]
                    self._closing[entry.name] = entry
                    self.evicted += 1
        for entry in victims:
            self._close_later(entry)

    def _close_later(self, entry: _Entry) -> None:
        """Close an evicted memory in the registry's closing thread, so the request whose end
        evicted it (on an event loop, perhaps) does not wait for it; a reopening of the same
        name waits for it (``entry.closed``)."""
        with self._lock:
            if self._closer is None:
                self._closer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hgm-evict")
            closer = self._closer
        try:
            closer.submit(self._close, entry)
        except RuntimeError:  # the registry is closing: close it here
            self._close(entry)

    def _close(self, entry: _Entry) -> None:
        try:
            with self._lock:  # taken once: an eviction and a drop never close it twice
                service, entry.service = entry.service, None
            if service is not None:
                service.memory.close()
                logger.debug("closed memory %s", entry.name)
            del service  # the collection below must find it unreferenced
        except Exception:  # noqa: BLE001 - a failed close must not fail the request that caused it
            logger.exception("closing memory %s failed", entry.name)
        finally:
            entry.closed.set()
            with self._lock:
                if self._closing.get(entry.name) is entry:
                    del self._closing[entry.name]
                self._closed_since_collect += 1
                collect = self._closed_since_collect >= self._collect_every and self._heap_grew()
                if collect:
                    self._closed_since_collect = 0
            if collect:
                self._collect()

    def _heap_grew(self) -> bool:
        """Whether Python's heap grew by ``collect_growth`` since the registry's last collection
        ended (always before the first one, and when ``collect_growth`` is 0). Measured in the
        blocks of Python's allocator (``sys.getallocatedblocks``: a walk over its pools, not its
        objects; 0.5 ms for 3M blocks), under the registry's lock."""
        if self.collect_growth == 0 or self._heap_after is None:
            return True
        return sys.getallocatedblocks() >= self._heap_after * (1 + self.collect_growth)

    def _collect(self) -> None:
        """A full pass of the cyclic garbage collector, for the memories closed since the last,
        then :func:`malloc_trim` (unless ``trim`` is off).

        A memory's objects form reference cycles, and loading a memory moves every object of
        the process out of the collector's reach (``gc.freeze``, so that its young payloads are
        not walked again and again). Closing one gives them back only when no other open memory
        holds frozen objects (``hgm_engine.model.release_kept``: gc cannot unfreeze one
        memory's objects alone), so a closed memory's cycles stay frozen until a collection
        unfreezes everything, collects and freezes what is left again (``collect_kept``). The
        collector's own schedule never reaches them, so the registry collects itself, once per
        ``max(1, max_open // 4)`` closed memories: a full pass walks every open memory (about
        0.1-0.2 s CPU with 100 open memories of 1,000 nodes), which comes to a few ms per
        memory closed, against some 20 ms to open one.

        A full pass walks every object of the process, though, not only the memories: in a
        process that holds much more than its open memories (an application embedding the
        registry, a test runner: some 1.2M objects, 0.5-1 s CPU a pass) a collection per
        ``max_open // 4`` closes of small memories cost far more than the opens. So the
        registry also waits until Python's heap has grown by ``collect_growth`` (a twentieth by
        default) since its last collection ended, as CPython itself runs a full collection
        only once a quarter more objects than it last found alive wait for one. What closed
        memories leave waiting is then at most ``max_open // 4`` memories or a twentieth of the
        heap, whichever is more, and the collections' cost stays in proportion to what the
        opens allocate. Where the open memories are most of the heap (a server of 1,000-node
        memories, ``max_open`` 30: a twentieth is a few memories, fewer than ``max_open // 4``)
        nothing changes.

        What the collection frees goes back to Python's allocator and to the C allocator's
        arenas, which keep it: a server whose request threads each open memories in their own
        glibc arena holds some tens of MB more than it uses (docs/deployment.md, "Memory").
        ``malloc_trim`` hands those free pages back: about 2 ms wall each (4 request threads,
        30 open memories of 1,000 nodes), some 0.3 ms per memory closed against about 37 ms of
        server CPU to open one."""
        started = time.process_time()
        collect_kept()  # gc.collect(), reaching the frozen objects of closed memories too
        self.collections += 1
        if self.trim and malloc_trim():
            self.trimmed += 1
        if self.collect_growth:
            heap = sys.getallocatedblocks()
            with self._lock:
                self._heap_after = heap
        logger.debug("collected after closing memories: %.1f ms CPU", (time.process_time() - started) * 1000)

    def flush(self) -> None:
        """Wait until the memories being closed (evicted) are closed, and collected.

        >>> MemoryRegistry.of(Memory()).flush()
        """
        with self._lock:
            closer = self._closer
        if closer is not None:
            with contextlib.suppress(RuntimeError):  # shut down: nothing is pending
                closer.submit(lambda: None).result()

    # -- the store's memories -----------------------------------------------------------------

    def resident(self) -> list[str]:
        """The names of the open memories, least recently used first.

        >>> MemoryRegistry.of(Memory()).resident()
        ['default']
        """
        with self._lock:
            return [name for name, entry in self._entries.items() if entry.service is not None]

    def in_use(self) -> dict[str, int]:
        """The memories leased now, with how many requests hold each.

        >>> registry = MemoryRegistry.of(Memory())
        >>> with registry.lease():
        ...     registry.in_use()
        {'default': 1}
        """
        with self._lock:
            return {name: entry.refs for name, entry in self._entries.items() if entry.refs}

    def list(self, prefix: str = "") -> list[str]:
        """The store's memories whose names start with ``prefix``, sorted (open or not).

        >>> MemoryRegistry.of(Memory()).list("x")
        []
        """
        check_memory_prefix(prefix)
        if self._store is None:
            return [DEFAULT_MEMORY] if DEFAULT_MEMORY.startswith(prefix) else []
        with self._catalog_lock:
            return self._store.list(prefix)

    def exists(self, name: str) -> bool:
        """Whether the store holds the memory ``name`` (``default`` always exists here: it is
        made on its first commit).

        >>> MemoryRegistry.of(Memory()).exists("default")
        True
        """
        check_memory_name(name)
        if name == DEFAULT_MEMORY:
            return True
        return self._store is not None and name in self.list(name)

    def _refuse_single(self, what: str) -> None:
        if self._pinned is not None:
            raise RequestError(
                [Problem("not-implemented", f"this server serves one memory; {what} needs a server over a store (hgm serve --db)", where="memory")]
            )

    def create(self, name: str, *, schema: Schema | None = None) -> None:
        """Make the memory ``name`` in the store (``memory-exists`` when it is there), with
        ``schema`` stored with it (the default schema when None). It opens on first use.

        >>> import os, tempfile
        >>> registry = MemoryRegistry(os.path.join(tempfile.mkdtemp(), "m.db"))
        >>> registry.create("acme/alice"); registry.list()
        ['acme/alice']
        """
        check_memory_name(name)
        self._refuse_single("creating a memory")
        assert self._store is not None
        with self._catalog_lock:
            self._store.create(name, schema=schema).close()

    def drop(self, name: str) -> None:
        """Remove the memory ``name`` and its whole history from the store. Requests that use
        it now finish first (at most 30 s; then the drop is refused with ``conflict`` and
        nothing is removed); new ones get ``unknown-memory`` from the moment the drop begins.

        >>> import os, tempfile
        >>> registry = MemoryRegistry(os.path.join(tempfile.mkdtemp(), "m.db"))
        >>> registry.create("tmp")
        >>> with registry.lease("tmp"):
        ...     pass
        >>> registry.drop("tmp"); registry.list(), registry.resident()
        ([], [])
        """
        check_memory_name(name)
        self._refuse_single("dropping a memory")
        assert self._store is not None
        deadline = time.monotonic() + _DROP_WAIT
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                entry = self._entries[name] = _Entry(name)
            already = entry.dropping
            entry.dropping = True
            while entry.refs > 0 and not already:
                left = deadline - time.monotonic()
                if left <= 0:
                    entry.dropping = False
                    raise RequestError(
                        [Problem("conflict", f"memory {name!r} is still in use by {entry.refs} request(s) after {_DROP_WAIT:g} s; nothing was dropped", where=name)]
                    )
                self._released.wait(left)
        if already:
            raise self._unknown(name)
        try:
            self._close(entry)
            with self._catalog_lock:
                self._store.drop(name)
        finally:
            with self._lock:
                if self._entries.get(name) is entry:
                    del self._entries[name]

    def close(self) -> None:
        """Close every memory the registry opened, and the store's catalog (a memory given to
        :meth:`of` stays open: it is the caller's).

        >>> MemoryRegistry.of(Memory()).close()
        """
        with self._lock:
            entries = list(self._entries.values()) if self._pinned is None else []
            if self._pinned is None:
                self._entries.clear()
        for entry in entries:
            self._close(entry)
        if self._closer is not None:
            self._closer.shutdown(wait=True)
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> "MemoryRegistry":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def stats(self) -> dict[str, Any]:
        """What the registry holds: ``max_open``, ``open`` (resident now), ``in_use``
        (leased now), ``opened`` and ``evicted`` since it started.

        >>> MemoryRegistry.of(Memory()).stats()
        {'max_open': 1, 'open': 1, 'in_use': 0, 'opened': 0, 'evicted': 0}
        """
        with self._lock:
            resident = sum(1 for entry in self._entries.values() if entry.service is not None)
            leased = sum(1 for entry in self._entries.values() if entry.refs)
            return {"max_open": self.max_open, "open": resident, "in_use": leased, "opened": self.opened, "evicted": self.evicted}


_TRIM: list[Any] = []  # [glibc's malloc_trim, or None], looked up on first use


def malloc_trim() -> bool:
    """Hand the C allocator's free pages back to the system: glibc's ``malloc_trim(0)``, which
    walks every arena (one per thread that allocated, up to 8 per core) and releases the free
    pages inside them, not only at their top. True when some memory was released; False when
    none was, and always where the C library has no ``malloc_trim`` (musl, macOS, Windows).
    Python's objects are untouched: only memory already freed is given back.

    >>> malloc_trim() in (True, False)
    True
    """
    if not _TRIM:
        function = None
        try:
            import ctypes

            function = ctypes.CDLL(None).malloc_trim  # the C library the process runs on
            function.argtypes = [ctypes.c_size_t]
            function.restype = ctypes.c_int
        except (OSError, AttributeError, TypeError):
            function = None
        _TRIM.append(function)
    function = _TRIM[0]
    return bool(function is not None and function(0))


def malloc_trim_from_env(environ: Callable[[str], str | None] = os.environ.get) -> bool:
    """``$HGM_MALLOC_TRIM`` as a switch: on when unset; ``0``/``false``/``no``/``off`` turn it
    off, ``1``/``true``/``yes``/``on`` on; anything else is an ``invalid-argument`` naming the
    variable.

    >>> malloc_trim_from_env(environ=lambda key: None), malloc_trim_from_env(environ=lambda key: "0")
    (True, False)
    >>> malloc_trim_from_env(environ=lambda key: "sometimes")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: invalid-argument at HGM_MALLOC_TRIM: HGM_MALLOC_TRIM is 0 or 1 (off or on), not 'sometimes'
    """
    text = environ(MALLOC_TRIM_ENV)
    word = (text or "").strip().lower()
    if word in ("", "1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise RequestError([Problem("invalid-argument", f"{MALLOC_TRIM_ENV} is 0 or 1 (off or on), not {text!r}", where=MALLOC_TRIM_ENV)])


def max_open_from_env(default: int = DEFAULT_MAX_OPEN, environ: Callable[[str], str | None] = os.environ.get) -> int:
    """``$HGM_MAX_OPEN`` as a count (``default`` when unset); a value that is not a count of at
    least 1 is an ``invalid-argument`` naming the variable.

    >>> max_open_from_env(environ=lambda key: "7")
    7
    >>> max_open_from_env(environ=lambda key: "0")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: invalid-argument at HGM_MAX_OPEN: HGM_MAX_OPEN is a count of at least 1, not '0'
    """
    text = environ(MAX_OPEN_ENV)
    if text is None or text == "":
        return default
    if not text.strip().isdigit() or int(text) < 1:
        raise RequestError([Problem("invalid-argument", f"{MAX_OPEN_ENV} is a count of at least 1, not {text!r}", where=MAX_OPEN_ENV)])
    return int(text)

