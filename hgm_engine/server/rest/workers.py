"""The server processes: one uvicorn server, or a supervisor with pre-forked workers.

:func:`serve` runs one process: uvicorn accepting on a listening socket. With several
workers, :func:`supervise` forks them, accepts every connection itself and hands each to the
next worker over a Unix socket (``SCM_RIGHTS``): a listening socket shared by the workers
tends to give one of them most of the long-lived keep-alive connections while another idles.
Each worker opens the store itself (no connection or thread crosses a fork), so it holds the
whole memory and keeps it current through the store.

>>> ServeOptions("memory.db", workers=2).limits.max_body
1048576
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import selectors
import signal
import socket
import sys
import time

import attrs

from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory
from hgm_engine.server.rest.app import create_app
from hgm_engine.server.service import ServerLimits

__all__ = ["ServeOptions", "serve", "supervise"]

logger = logging.getLogger("hgm.server")

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@attrs.frozen
class ServeOptions:
    """How the server processes run: the store each opens, the token and limits of the app,
    how many workers, and uvicorn's settings (``hgm serve``'s options of the same names).

    >>> ServeOptions("memory.db", token="s3cret").max_concurrency
    64
    """

    db: str
    token: str | None = None
    limits: ServerLimits = attrs.field(factory=ServerLimits)
    workers: int = 1
    log_level: str = "info"
    max_concurrency: int = 64  # connections served at once (per process); more get 503
    graceful_timeout: float = 10.0  # seconds a stop waits for requests in flight
    switch_interval_ms: float = 0  # Python's thread switch interval; 0 keeps Python's


def serve(
    memory: Memory, sock: socket.socket | None, options: ServeOptions, channel: socket.socket | None = None
) -> None:
    """One server process until SIGINT/SIGTERM: uvicorn accepting on ``sock``, or serving the
    connections the supervisor hands over on ``channel``.

    Example (not run here: it serves until stopped)::

        serve(Memory.open("memory.db"), socket.create_server(("127.0.0.1", 8765)), ServeOptions("memory.db"))
    """
    import uvicorn

    config = uvicorn.Config(
        create_app(memory, token=options.token, limits=options.limits),
        log_config=None,
        log_level=options.log_level,
        access_log=False,
        limit_concurrency=options.max_concurrency,
        timeout_graceful_shutdown=options.graceful_timeout,
        server_header=False,
        # X-Forwarded-* headers are not trusted: the access log shows the peer's address.
        proxy_headers=False,
    )
    server = uvicorn.Server(config) if channel is None else _handed_server_class()(config, channel)
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


def _handed_server_class():
    import uvicorn

    class HandedConnectionsServer(uvicorn.Server):
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
        memory = Memory.open(options.db)
    except (HGMError, OSError) as exc:
        logger.error("worker %d cannot open %s: %s", os.getpid(), options.db, exc)
        return 1
    try:
        logger.info("worker %d serving (t=%d)", os.getpid(), memory.t)
        serve(memory, None, options, channel=channel)
    finally:
        memory.close()
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
        """Collect exited workers; start new ones unless stopping. False: give up."""
        nonlocal failed
        while workers:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                workers.clear()
                return True
            if pid == 0:
                return True
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
