"""The server processes: one uvicorn server, or a supervisor with pre-forked workers.

:func:`serve` runs one process: uvicorn accepting on a listening socket. With several
workers, :func:`supervise` forks them, accepts every connection itself and hands each to the
next worker over a Unix socket (``SCM_RIGHTS``): a listening socket shared by the workers
tends to give one of them most of the long-lived keep-alive connections while another idles.
Each worker opens the store itself (no connection or thread crosses a fork), with a registry of
its own (at most ``max_open`` memories open), and keeps each open memory current through the
store.

Every connection gets the deadlines of :func:`~hgm_engine.server.rest.guard.deadline_protocol`
(handed-over ones too), and a stop is bounded: SIGINT/SIGTERM lets requests in flight finish
for ``graceful_timeout`` seconds, then abandons what still runs (a thread cannot be
interrupted; a commit is durable when acknowledged, so an unacknowledged one is wholly there
or not at all) and leaves. Should leaving itself hang, a watchdog that needs no Python (the
``faulthandler`` thread) prints every thread's stack and ends the process
:data:`STOP_MARGIN` seconds later; the supervisor kills a worker that is still there by then.

>>> ServeOptions("memory.db", workers=2).limits.max_body
1048576
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time

import attrs

from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory
from hgm_engine.server.registry import DEFAULT_MAX_OPEN, MemoryRegistry
from hgm_engine.server.rest.app import create_app
from hgm_engine.server.rest.guard import deadline_protocol
from hgm_engine.server.service import LLMEndpoint, ServerLimits
from hgm_engine.server.tokens import TokenFile, TokenScopes

__all__ = ["ServeOptions", "serve", "supervise", "finish", "open_registry", "STOP_MARGIN"]

logger = logging.getLogger("hgm.server")

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# Seconds past ``graceful_timeout`` within which a stopping process is gone, whatever runs in
# it: leaving takes at most _JOIN_TIMEOUT + _CLOSE_TIMEOUT of them, the watchdog ends the
# process at STOP_MARGIN, the supervisor kills a worker at STOP_MARGIN + _KILL_MARGIN.
STOP_MARGIN = 10.0
_JOIN_TIMEOUT, _CLOSE_TIMEOUT, _KILL_MARGIN = 1.0, 5.0, 5.0

# Whether a stop signal armed the faulthandler watchdog (so finish() may cancel it).
_watchdog = {"armed": False}


@attrs.frozen
class ServeOptions:
    """How the server processes run: the store each opens, the token and limits of the app
    (``limits.max_concurrency``: requests answered at once per process), how many workers,
    and the connection's settings (``hgm serve``'s options of the same names).

    >>> ServeOptions("memory.db", token="s3cret").header_timeout
    10.0
    """

    db: str
    token: str | None = None  # one token for everything (``tokens`` says more)
    limits: ServerLimits = attrs.field(factory=ServerLimits)
    tokens: TokenScopes | TokenFile | None = None  # the token file's tokens and their scopes (read again when it changes)
    max_open: int = DEFAULT_MAX_OPEN  # memories kept open at once, per process
    memory: str = "default"  # the memory of the unprefixed routes (hgm serve --memory)
    workers: int = 1
    log_level: str = "info"
    graceful_timeout: float = 10.0  # seconds a stop waits for requests in flight
    switch_interval_ms: float = 0  # Python's thread switch interval; 0 keeps Python's
    header_timeout: float = 10.0  # seconds for a request's line and headers to arrive
    keep_alive_timeout: float = 5.0  # seconds an idle keep-alive connection stays open
    llm: LLMEndpoint | None = None  # the model of the LLM routes (None: the environment's)


def open_registry(options: ServeOptions) -> MemoryRegistry:
    """The registry of the store ``options.db`` with the options' limits, model endpoint and
    ``max_open``; its default memory (``options.memory``) is opened once to check the store
    (a store that cannot be opened, or a default memory it lacks, fails here, before a port is
    bound).

    >>> import os, tempfile
    >>> registry = open_registry(ServeOptions(os.path.join(tempfile.mkdtemp(), "m.db"), max_open=5))
    >>> registry.max_open, registry.resident()
    (5, ['default'])
    >>> registry.close()
    """
    registry = MemoryRegistry(options.db, max_open=options.max_open, limits=options.limits, llm=options.llm)
    try:
        registry.lease(options.memory).release()
    except BaseException:
        registry.close()
        raise
    return registry


def serve(
    memory: Memory | MemoryRegistry, sock: socket.socket | None, options: ServeOptions, channel: socket.socket | None = None
) -> None:
    """One server process until SIGINT/SIGTERM: uvicorn accepting on ``sock``, or serving the
    connections the supervisor hands over on ``channel``.

    Example (not run here: it serves until stopped)::

        serve(Memory.open("memory.db"), socket.create_server(("127.0.0.1", 8765)), ServeOptions("memory.db"))
    """
    import uvicorn

    if isinstance(memory, MemoryRegistry):
        app = create_app(memory, token=None if options.tokens else options.token, tokens=options.tokens, default_memory=options.memory)
    else:
        app = create_app(memory, token=options.token, tokens=options.tokens, limits=options.limits, llm=options.llm)
    config = uvicorn.Config(
        app,
        log_config=None,
        log_level=options.log_level,
        access_log=False,
        # No limit_concurrency: uvicorn counts every open connection, idle ones too, and
        # answers 503 in plain text; the guard counts requests being answered instead.
        limit_concurrency=None,
        timeout_keep_alive=options.keep_alive_timeout,
        timeout_graceful_shutdown=options.graceful_timeout,
        server_header=False,
        # X-Forwarded-* headers are not trusted: the access log shows the peer's address.
        proxy_headers=False,
    )
    config.load()  # picks the protocol (httptools, else h11), which gets the header deadline
    config.http_protocol_class = deadline_protocol(config.http_protocol_class, options.header_timeout)
    server = _server_class()(config) if channel is None else _handed_server_class()(config, channel)
    # uvicorn stops gracefully on SIGINT/SIGTERM, restores the handlers it found and raises
    # the signal again; with these handlers in place that ends here, and the memory is
    # closed by the caller instead of the process dying on the default handler.
    if options.switch_interval_ms > 0:
        sys.setswitchinterval(options.switch_interval_ms / 1000)
    received: list[int] = []
    previous = {sig: signal.signal(sig, lambda number, frame: received.append(number)) for sig in _STOP_SIGNALS}
    try:
        server.run(sockets=[sock] if sock is not None else [])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    who = f"worker {os.getpid()} " if channel is not None else ""
    logger.info("%sstopped%s", who, f" on signal {received[0]}" if received else "")


def _server_class():
    import uvicorn

    class BoundedStopServer(uvicorn.Server):
        """uvicorn's server; the first stop signal also arms the watchdog that ends the process
        if stopping takes more than ``graceful_timeout`` + :data:`STOP_MARGIN` seconds."""

        def handle_exit(self, sig, frame) -> None:
            super().handle_exit(sig, frame)
            if not _watchdog["armed"]:
                _watchdog["armed"] = True
                faulthandler.dump_traceback_later((self.config.timeout_graceful_shutdown or 0) + STOP_MARGIN, exit=True)

    return BoundedStopServer


def finish(memory: Memory | MemoryRegistry | None, who: str = "") -> list[str]:
    """After the server stopped: give the threads still answering a moment, close the memory
    (a registry: every memory it has open; within a bound), and return the names of the threads that still run — requests the stop
    abandons (the caller then leaves with ``os._exit``: Python would wait for them). When none
    is left the stop is over, and the watchdog a stop signal armed is called off.

    >>> finish(None)
    []
    """
    me = threading.current_thread()

    def running() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t is not me and not t.daemon and t.is_alive()]

    deadline = time.monotonic() + _JOIN_TIMEOUT
    for thread in running():
        thread.join(max(0.0, deadline - time.monotonic()))
    if memory is not None:
        closer = threading.Thread(target=memory.close, name="hgm-close", daemon=True)
        closer.start()
        closer.join(_CLOSE_TIMEOUT)
        if closer.is_alive():
            logger.error("%sclosing the memory took over %g s: leaving without (acknowledged commits are durable)", who, _CLOSE_TIMEOUT)
    left = [t.name for t in running()]
    if left:
        logger.warning("%sabandoning %d request(s) still running after the graceful timeout", who, len(left))
    elif _watchdog["armed"]:
        faulthandler.cancel_dump_traceback_later()
        _watchdog["armed"] = False
    return left


def _handed_server_class():
    class HandedConnectionsServer(_server_class()):
        """uvicorn serving connections another process accepted and passed over a Unix socket
        (SCM_RIGHTS), instead of accepting on a listening socket itself."""

        def __init__(self, config, channel: socket.socket):
            super().__init__(config)
            self._channel = channel

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets=[])  # lifespan and state; no listener of its own
            loop = asyncio.get_running_loop()
            config, channel = self.config, self._channel

            def create_protocol(_loop=None):  # what uvicorn builds for its own listeners
                return config.http_protocol_class(
                    config=config, server_state=self.server_state, app_state=self.lifespan.state, _loop=_loop
                )

            def handed_over() -> None:
                try:
                    data, fds, _, _ = socket.recv_fds(channel, 1024, 64)
                except (BlockingIOError, InterruptedError):
                    return
                except OSError:
                    data, fds = b"", []
                if not data and not fds:  # the supervisor is gone: take no more connections
                    loop.remove_reader(channel.fileno())
                    return
                for fd in fds:
                    connection = socket.socket(fileno=fd)
                    connection.setblocking(False)
                    loop.create_task(loop.connect_accepted_socket(create_protocol, connection))

            channel.setblocking(False)
            loop.add_reader(channel.fileno(), handed_over)

        async def shutdown(self, sockets=None) -> None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._channel.fileno())
            await super().shutdown(sockets=sockets)

    return HandedConnectionsServer


def _worker(channel: socket.socket, options: ServeOptions) -> int:
    """The body of a forked worker; its exit status."""
    try:
        registry = open_registry(options)
    except (HGMError, OSError) as exc:
        logger.error("worker %d cannot open %s: %s", os.getpid(), options.db, exc)
        return 1
    try:
        logger.info("worker %d serving (at most %d memories open)", os.getpid(), options.max_open)
        serve(registry, None, options, channel=channel)
    finally:
        finish(registry, f"worker {os.getpid()}: ")  # the caller leaves with os._exit
    return 0


# A worker that dies more often than this within the window is not started again.
_RESTART_LIMIT, _RESTART_WINDOW = 5, 60.0


def supervise(sock: socket.socket, options: ServeOptions) -> int:
    """Fork ``options.workers`` workers; accept connections here and hand them to the workers in
    turn (a shared listening socket lets one worker take most long-lived connections while
    another idles); forward SIGINT/SIGTERM; start a worker that died again (unless they keep
    dying). Returns 0 after a clean stop, 1 otherwise.

    Example (not run here: it forks and serves until stopped)::

        supervise(socket.create_server(("127.0.0.1", 8765)), ServeOptions("memory.db", workers=2))
    """

    stopping: list[int] = []
    workers: dict[int, socket.socket] = {}  # pid -> the Unix socket its connections go over
    order: list[int] = []  # hand-over order (pids)

    def spawn() -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # the worker: serve, then leave without running the parent's cleanup
            code = 1
            try:
                for sig in _STOP_SIGNALS:
                    signal.signal(sig, signal.SIG_DFL)
                sock.close()
                mine.close()
                for other in workers.values():
                    other.close()
                code = _worker(theirs, options)
            except BaseException:  # noqa: BLE001 - report and leave with a failure status
                logger.exception("worker %d failed", os.getpid())
            finally:
                logging.shutdown()
                os._exit(code)
        theirs.close()
        workers[pid] = mine
        order.append(pid)

    def forward(number, frame) -> None:
        stopping.append(number)

    def stop_workers() -> None:
        for pid in list(workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def hand_over(connection: socket.socket) -> None:
        for _ in range(len(order)):
            pid = order.pop(0)
            order.append(pid)
            try:
                socket.send_fds(workers[pid], [b"c"], [connection.fileno()])
                return
            except OSError:  # that worker is gone; its exit is handled below
                continue
        logger.error("no worker to take a connection")

    def reap(block: bool) -> bool:
        """Collect exited workers; start new ones unless stopping. False: give up. Blocking
        (when stopping) waits ``graceful_timeout`` + the margins at most, then kills."""
        nonlocal failed
        deadline = time.monotonic() + options.graceful_timeout + STOP_MARGIN + _KILL_MARGIN
        while workers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                workers.clear()
                return True
            if pid == 0:
                if not block:
                    return True
                if time.monotonic() > deadline:
                    for late in list(workers):
                        logger.error("worker %d did not stop in time: killing it", late)
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(late, signal.SIGKILL)
                    deadline = float("inf")
                    failed = True
                time.sleep(0.05)
                continue
            channel = workers.pop(pid, None)
            if channel is None:
                continue
            channel.close()
            order.remove(pid)
            code = os.waitstatus_to_exitcode(status)
            if stopping or shutting_down:
                failed = failed or code != 0
                continue
            logger.error("worker %d exited with %d", pid, code)
            now = time.monotonic()
            deaths[:] = [d for d in deaths if now - d < _RESTART_WINDOW] + [now]
            if len(deaths) > _RESTART_LIMIT:
                logger.error("workers keep dying (%d in %.0f s): stopping", len(deaths), _RESTART_WINDOW)
                return False
            spawn()
        return True

    previous = {sig: signal.signal(sig, forward) for sig in _STOP_SIGNALS}
    deaths: list[float] = []
    failed = shutting_down = False
    selector = selectors.DefaultSelector()
    try:
        for _ in range(options.workers):
            spawn()
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        while not stopping:
            if selector.select(timeout=0.2):
                while True:
                    try:
                        connection, _ = sock.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError as exc:  # e.g. out of file descriptors: keep serving
                        logger.error("accept failed: %s", exc)
                        break
                    with connection:
                        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        hand_over(connection)
            if not reap(block=False):
                failed = True
                break
        shutting_down = True
        sock.close()  # no new connections; the workers finish what they have
        stop_workers()
        reap(block=True)
    finally:
        selector.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for channel in workers.values():
            channel.close()
    logger.info("stopped%s", f" on signal {stopping[0]}" if stopping else "")
    return 1 if failed else 0
