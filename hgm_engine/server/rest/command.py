"""``hgm serve``'s command line: its options, :func:`run` and :func:`main`.

:func:`add_arguments` puts the options on any parser and :func:`add_parser` adds ``serve`` to
a subparsers object, so another command line can offer the server; :func:`run` opens the
memory, binds the port and serves (one process, or a supervisor and workers:
:mod:`hgm_engine.server.rest.workers`) until SIGINT/SIGTERM.

>>> build_parser().parse_args(["--db", "m.db"]).max_concurrency
64
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import math
import os
import socket
import sys
from typing import Any

from hgm_engine.errors import HGMError, Problem, ServiceError
from hgm_engine.server.registry import DEFAULT_MAX_OPEN
from hgm_engine.server.rest.guard import access_logger
from hgm_engine.server.rest.workers import ServeOptions, finish, open_registry, serve, supervise
from hgm_engine.server.service import ServerLimits, add_llm_arguments, llm_endpoint
from hgm_engine.server.tokens import TokenFile, TokenScopes

__all__ = [
    "DEFAULT_PORT",
    "TOKEN_ENV",
    "DESCRIPTION",
    "add_arguments",
    "add_parser",
    "build_parser",
    "resolve_token",
    "resolve_tokens",
    "DB_ENV",
    "is_loopback",
    "configure_logging",
    "run",
    "main",
]

DEFAULT_PORT = 8765
TOKEN_ENV = "HGM_TOKEN"
DB_ENV = "HGM_DB"
MEMORY_ENV = "HGM_MEMORY"
# What ``hgm serve --help`` says the command is (under ``hgm``'s subcommands).
DESCRIPTION = "``hgm serve``: the REST server (FastAPI on uvicorn) over the memories of one store."

logger = logging.getLogger("hgm.server")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``hgm serve`` on ``parser`` (so the ``hgm`` command can reuse them).

    >>> args = add_arguments(argparse.ArgumentParser()).parse_args(["--db", "m.db"])
    >>> args.host, args.port
    ('127.0.0.1', 8765)
    """
    defaults = ServerLimits()
    db_default = os.environ.get(DB_ENV) or None
    parser.add_argument(
        "--db",
        required=db_default is None,
        default=db_default,
        metavar="PATH",
        help="the store: a SQLite file (created if missing) or a postgresql:// URL, each of its memories served (default: $HGM_DB)",
    )
    parser.add_argument(
        "--memory",
        default=os.environ.get(MEMORY_ENV) or "default",
        metavar="NAME",
        help="the memory of the unprefixed routes (/api/v1/ROUTE, /health); every memory is also under /api/v1/memories/NAME/ (default: $HGM_MEMORY, else 'default')",
    )
    parser.add_argument(
        "--max-open",
        type=int,
        default=DEFAULT_MAX_OPEN,
        metavar="N",
        help=f"memories kept open at once (per process); the least recently used idle one is closed for another (default {DEFAULT_MAX_OPEN})",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks a free one)")
    parser.add_argument("--token", default=None, help=f"require 'Authorization: Bearer TOKEN' (default: ${TOKEN_ENV})")
    parser.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help="scoped tokens, one 'TOKEN PREFIX [read|write]' a line (PREFIX * for every memory; TOKEN may be sha256:HEX); docs/server.md",
    )
    parser.add_argument("--max-body", type=int, default=defaults.max_body, metavar="BYTES", help="largest request body (default 1 MiB)")
    parser.add_argument("--max-query-length", type=int, default=defaults.max_query_length, metavar="CHARS")
    parser.add_argument("--max-work", type=int, default=defaults.max_work, metavar="N", help="nodes one query's steps may produce")
    parser.add_argument("--query-timeout", type=float, default=defaults.timeout, metavar="SECONDS", help="time one query may run")
    parser.add_argument(
        "--inline-budget-ms",
        type=float,
        default=defaults.inline_timeout * 1000,
        metavar="MS",
        help="a repeated query first runs on the event loop for at most this long (0: always in the thread pool)",
    )
    parser.add_argument(
        "--switch-interval-ms",
        type=float,
        default=0,
        metavar="MS",
        help="Python's thread switch interval (default: Python's, 5 ms)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="server processes on the one port, each with the memory in RAM, kept in step through the store (default 1)",
    )
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=defaults.max_concurrency,
        metavar="N",
        help="requests answered at once (per process; idle and slow connections do not count); more get 503 (default 64; 0: no limit)",
    )
    parser.add_argument(
        "--header-timeout",
        type=float,
        default=ServeOptions.__attrs_attrs__.header_timeout.default,
        metavar="SECONDS",
        help="time for a request's line and headers to arrive, from the connection or the previous answer (default 10)",
    )
    parser.add_argument(
        "--body-timeout",
        type=float,
        default=defaults.body_timeout,
        metavar="SECONDS",
        help="time for a request's body to arrive once its headers have; then 408 (default 30; 0: no limit)",
    )
    parser.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=ServeOptions.__attrs_attrs__.keep_alive_timeout.default,
        metavar="SECONDS",
        help="how long an idle keep-alive connection stays open (default 5)",
    )
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        default=ServeOptions.__attrs_attrs__.graceful_timeout.default,
        metavar="SECONDS",
        help="how long a stop waits for requests in flight before abandoning them (default 10)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--no-access-log", action="store_true", help="no log line per request")
    add_llm_arguments(parser)
    return parser


def add_parser(subparsers: Any, name: str = "serve") -> argparse.ArgumentParser:
    """Add ``hgm serve`` to an argparse subparsers object; its ``func`` default is :func:`run`.

    >>> parser = argparse.ArgumentParser(prog="hgm")
    >>> sub = add_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["serve", "--db", "m.db", "--port", "9000"]).port
    9000
    """
    parser = subparsers.add_parser(name, help="serve a memory over REST (FastAPI/uvicorn)", description=DESCRIPTION)
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``hgm serve`` on its own (what :func:`main` parses).

    >>> build_parser().parse_args(["--db", "m.db", "--workers", "2"]).workers
    2
    """
    return add_arguments(argparse.ArgumentParser(prog="hgm serve", description="Serve an hgm memory over REST."))


def resolve_token(args: argparse.Namespace) -> str | None:
    """The one bearer token of ``--token``, else ``$HGM_TOKEN`` (None: none; a token file
    is read by :func:`resolve_tokens`).

    >>> resolve_token(argparse.Namespace(token="s3cret", token_file=None))
    's3cret'
    """
    if args.token:
        return args.token
    if getattr(args, "token_file", None):
        return None
    return os.environ.get(TOKEN_ENV) or None


def resolve_tokens(args: argparse.Namespace) -> TokenScopes | TokenFile | None:
    """What each token may do: the token file of ``--token-file``, else the one token of
    ``--token`` or ``$HGM_TOKEN`` (every memory, read and write); None: no token needed. A
    token file with errors is an ``invalid-token-file`` error naming each line. The token
    file is a :class:`~hgm_engine.server.tokens.TokenFile`, read again when it changes (as
    ``hgm mcp`` reads its own), so adding or revoking a token needs no restart.

    >>> resolve_tokens(argparse.Namespace(token="s3cret", token_file=None)).grant("s3cret").everything
    True
    """
    if args.token_file:
        if args.token:
            raise ServiceError([Problem("invalid-argument", "give --token or --token-file, not both", where="--token-file")])
        return TokenFile(args.token_file)  # read again when it changes: no restart to revoke a token
    token = resolve_token(args)
    return TokenScopes.single(token) if token else None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only.

    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def configure_logging(level: str) -> None:
    """Log lines on stderr with time, level and logger (request ids are in the messages).

    Example (not run here: it replaces the handlers of the ``hgm`` loggers)::

        configure_logging("warning")
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    for name in ("hgm", "uvicorn.error"):
        named = logging.getLogger(name)
        named.handlers[:] = [handler]
        named.setLevel(level.upper())
        named.propagate = False


# The least value of each option that is a count or a time (0 where it means "no limit").
_LEAST = {
    "max_concurrency": 0,
    "body_timeout": 0,
    "header_timeout": 1e-3,
    "keep_alive_timeout": 1e-3,
    "graceful_timeout": 0,
    "query_timeout": 1e-3,
    "llm_timeout": 1e-3,
    "llm_attempts": 1,
    "max_body": 1,
    "max_query_length": 1,
    "max_work": 1,
    "max_open": 1,
}


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM (requests in flight finish, then every open memory is closed).

    With ``--workers N`` (N > 1) this process binds the port, forks N workers that each open
    the store, accepts connections and hands them to the workers in turn, forwards
    SIGINT/SIGTERM to them, and starts a worker again if one dies.

    Example (not run here: it serves until stopped)::

        run(build_parser().parse_args(["--db", "memory.db", "--workers", "2"]))
    """
    try:
        import uvicorn  # noqa: F401 - imported where it serves; checked before anything is opened
    except ImportError as exc:
        print(f"hgm serve: needs the server extra: pip install 'hgm-engine[server]' ({exc})", file=sys.stderr)
        return 1
    configure_logging(args.log_level)
    if args.workers < 1:
        print("hgm serve: --workers must be at least 1", file=sys.stderr)
        return 2
    for name, least in _LEAST.items():
        value = getattr(args, name)
        if not (least <= value < math.inf):  # NaN and infinity too
            print(f"hgm serve: --{name.replace('_', '-')} must be a finite number {'above 0' if least > 0 else 'of at least 0'}", file=sys.stderr)
            return 2
    if args.workers > 1 and not hasattr(os, "fork"):  # pragma: no cover - Windows
        print("hgm serve: --workers needs fork (POSIX)", file=sys.stderr)
        return 2
    if args.no_access_log:
        access_logger.setLevel(logging.WARNING)
    try:
        tokens = resolve_tokens(args)
    except HGMError as exc:
        print(f"hgm serve: {exc}", file=sys.stderr)
        return 2
    token = tokens is not None
    if not is_loopback(args.host):
        logger.warning(
            "binding to %s: the memory is reachable from other machines%s",
            args.host,
            "" if token else " WITHOUT a token (set --token or HGM_TOKEN)",
        )
    limits = ServerLimits(
        max_body=args.max_body,
        max_query_length=args.max_query_length,
        max_work=args.max_work,
        timeout=args.query_timeout,
        inline_timeout=args.inline_budget_ms / 1000,
        body_timeout=args.body_timeout or None,
        max_concurrency=args.max_concurrency or None,
    )
    options = ServeOptions(
        db=args.db,
        tokens=tokens,
        max_open=args.max_open,
        memory=args.memory,
        limits=limits,
        workers=args.workers,
        log_level=args.log_level,
        graceful_timeout=args.graceful_timeout,
        switch_interval_ms=args.switch_interval_ms,
        header_timeout=args.header_timeout,
        keep_alive_timeout=args.keep_alive_timeout,
        llm=llm_endpoint(args),
    )
    try:
        registry = open_registry(options)
    except (HGMError, OSError) as exc:
        print(f"hgm serve: cannot open {args.db}: {exc}", file=sys.stderr)
        return 1
    try:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP proto: asyncio sets TCP_NODELAY
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((args.host, args.port))
        except OSError as exc:
            sock.close()
            print(f"hgm serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        port = sock.getsockname()[1]
        host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
        health = registry.health(args.memory)  # (no variable may keep the memory: it can be evicted)
        t, nodes = health["t"], health["nodes"]
        logger.info(
            "serving %s (%s: t=%d, %d nodes; at most %d memories open) on http://%s:%d%s%s",
            args.db,
            args.memory,
            t,
            nodes,
            args.max_open,
            host,
            port,
            " (bearer token required)" if token else "",
            f" with {args.workers} workers" if args.workers > 1 else "",
        )
        sock.listen(2048)  # before "listening" is printed: connections queue from here on
        if args.workers > 1:
            # Each worker opens the store itself: no connection or thread crosses a fork.
            registry.close()
            registry = None
            print(f"hgm serve: listening on http://{host}:{port}", file=sys.stderr, flush=True)
            return supervise(sock, options)
        print(f"hgm serve: listening on http://{host}:{port}", file=sys.stderr, flush=True)
        serve(registry, sock, options)
        closing, registry = registry, None
        if finish(closing):
            # Requests still run in threads Python would wait for at exit: leave without them.
            logging.shutdown()
            sys.stderr.flush()
            os._exit(0)
    finally:
        if registry is not None:
            registry.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``hgm serve`` as a function: parse ``argv`` and serve until stopped; returns the exit code.

    Example (not run here: it serves until interrupted)::

        main(["--db", "memory.db", "--port", "8765"])
    """
    return run(build_parser().parse_args(argv))
