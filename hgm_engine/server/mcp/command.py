"""``hgm mcp``: memories as Model Context Protocol tools, over stdio or streamable HTTP (the
official SDK).

The command line of the MCP server: its options (:func:`add_arguments`), ``hgm mcp``'s
subparser (:func:`add_parser`), and :func:`run`, which opens the store and serves on
stdin/stdout (:func:`~hgm_engine.server.mcp.stdio.serve`) or, with ``--transport
streamable-http``, over HTTP (:func:`~hgm_engine.server.mcp.http.http_app`)::

    python -m hgm_engine.server.mcp --db memory.db
    python -m hgm_engine.server.mcp --db memory.db --transport streamable-http --port 8766 --token-file tokens.txt

>>> build_parser().prog
'hgm mcp'
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from hgm_engine.errors import HGMError
from hgm_engine.server.mcp.http import DEFAULT_HTTP_PATH, DEFAULT_HTTP_PORT, http_app, is_loopback, serve_http
from hgm_engine.server.mcp.stdio import serve
from hgm_engine.server.service import ServerLimits, add_llm_arguments, llm_endpoint
from hgm_engine.server.tokens import TokenFile, TokenScopes
from hgm_engine.store import DEFAULT_MEMORY, check_memory_name

__all__ = ["DB_ENV", "MEMORY_ENV", "TOKEN_ENV", "TRANSPORTS", "add_arguments", "add_parser", "build_parser", "run", "main"]

logger = logging.getLogger("hgm.mcp")

DB_ENV, MEMORY_ENV, TOKEN_ENV = "HGM_DB", "HGM_MEMORY", "HGM_TOKEN"
TRANSPORTS = ("stdio", "streamable-http")


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``hgm mcp``.

    >>> args = add_arguments(argparse.ArgumentParser()).parse_args(["--db", "m.db"])
    >>> args.query_timeout, args.transport, args.port
    (5.0, 'stdio', 8766)
    """
    from hgm_engine.server.registry import DEFAULT_MAX_OPEN, MAX_OPEN_ENV

    defaults = ServerLimits()
    parser.add_argument(
        "--db", default=None, metavar="PATH",
        help=f"the store: a SQLite file (created if missing) or a postgresql:// URL (default: ${DB_ENV})",
    )
    parser.add_argument(
        "--memory", default=None, metavar="NAME",
        help=f"the memory of tool calls that name none (default: ${MEMORY_ENV}, else 'default')",
    )
    parser.add_argument(
        "--max-open", type=int, default=None, metavar="N",
        help=f"memories kept open at once, the least recently used closed first (default: ${MAX_OPEN_ENV}, else {DEFAULT_MAX_OPEN})",
    )
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio", help="stdio (default) or streamable-http")
    parser.add_argument("--host", default="127.0.0.1", help="streamable-http: address to bind (default 127.0.0.1: loopback only)")
    parser.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help=f"streamable-http: port (default {DEFAULT_HTTP_PORT}; 0 picks a free one)")
    parser.add_argument("--path", default=DEFAULT_HTTP_PATH, help=f"streamable-http: the endpoint's path (default {DEFAULT_HTTP_PATH})")
    parser.add_argument(
        "--token", default=None,
        help=f"streamable-http: require 'Authorization: Bearer TOKEN', one token for every memory (default: ${TOKEN_ENV})",
    )
    parser.add_argument(
        "--token-file", default=None, metavar="PATH",
        help="streamable-http: the tokens and the memories each may use (TOKEN PREFIX [read|write] per line; docs/server.md)",
    )
    parser.add_argument("--max-body", type=int, default=defaults.max_body, metavar="BYTES", help="streamable-http: largest request body (default 1 MiB)")
    parser.add_argument("--max-query-length", type=int, default=defaults.max_query_length, metavar="CHARS")
    parser.add_argument("--max-work", type=int, default=defaults.max_work, metavar="N", help="nodes one query's steps may produce")
    parser.add_argument("--query-timeout", type=float, default=defaults.timeout, metavar="SECONDS")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    add_llm_arguments(parser)
    return parser


def add_parser(subparsers: Any, name: str = "mcp") -> argparse.ArgumentParser:
    """Add ``hgm mcp`` to an argparse subparsers object; its ``func`` default is :func:`run`.

    >>> parser = argparse.ArgumentParser(prog="hgm")
    >>> _ = add_parser(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["mcp", "--db", "m.db"]).db
    'm.db'
    """
    parser = subparsers.add_parser(name, help="serve memories as MCP tools over stdio or streamable HTTP", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def build_parser() -> argparse.ArgumentParser:
    return add_arguments(
        argparse.ArgumentParser(prog="hgm mcp", description="Serve hgm memories as MCP tools over stdio or streamable HTTP.")
    )


def _configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    for name in ("hgm", "mcp", "uvicorn.error"):
        named = logging.getLogger(name)
        named.handlers[:] = [handler]
        named.setLevel(level.upper())
        named.propagate = False


def _usage(message: str) -> int:
    print(f"hgm mcp: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio: stdin closes) or the server is stopped
    (streamable-http: SIGINT, SIGTERM); logs on stderr. Exit 2 for a bad command line, 1
    when the store, the token file or the port cannot be used."""
    try:
        import anyio
        import mcp.server.lowlevel  # noqa: F401 - the SDK, before the memory is opened
    except ImportError as exc:
        print(f"hgm mcp: needs the mcp extra: pip install 'hgm-engine[mcp]' ({exc})", file=sys.stderr)
        return 1
    from hgm_engine.server.registry import MemoryRegistry, max_open_from_env

    db = args.db or os.environ.get(DB_ENV) or None
    if db is None:
        return _usage(f"the store is missing: give --db PATH (or set ${DB_ENV})")
    http = args.transport == "streamable-http"
    for given, option in ((args.token_file, "--token-file"), (args.token, "--token")):
        if given and not http:
            return _usage(f"{option} needs --transport streamable-http (a stdio server's client is the process that started it)")
    if args.token_file and args.token:
        return _usage("give --token or --token-file, not both")
    if not 0 <= args.port <= 65535:
        return _usage(f"--port is 0 to 65535, not {args.port}")
    if not args.path.startswith("/"):
        return _usage(f"--path starts with '/', not {args.path[:40]!r}")
    if args.max_body < 1:
        return _usage("--max-body must be at least 1")
    try:
        default_memory = args.memory or os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY
        check_memory_name(default_memory, where="--memory" if args.memory else MEMORY_ENV)
        max_open = args.max_open if args.max_open is not None else max_open_from_env()
        if max_open < 1:
            return _usage(f"--max-open must be at least 1, not {max_open}")
        tokens = None
        if args.token_file:
            tokens = TokenFile(args.token_file)  # read again when it changes: no restart to revoke a token
        elif http and (args.token or os.environ.get(TOKEN_ENV)):
            tokens = TokenScopes.single(args.token or os.environ[TOKEN_ENV], source="--token" if args.token else TOKEN_ENV)
    except HGMError as err:
        print(f"hgm mcp: {err}", file=sys.stderr)
        return 1 if err.category == "invalid-token-file" else 2
    limits = ServerLimits(max_body=args.max_body, max_query_length=args.max_query_length, max_work=args.max_work, timeout=args.query_timeout)
    try:
        registry = MemoryRegistry(db, max_open=max_open, limits=limits, llm=llm_endpoint(args))
    except (HGMError, OSError) as exc:
        print(f"hgm mcp: cannot open {db}: {exc}", file=sys.stderr)
        return 1
    try:
        try:  # the default memory opens now: a store that cannot be read says so at once
            health = registry.health(default_memory)  # (keeps no reference: the memory can be evicted)
            opened = health["t"], health["nodes"]
        except HGMError as err:
            print(f"hgm mcp: cannot open the memory {default_memory!r} of {db}: {err}", file=sys.stderr)
            return 1
        _configure_logging(args.log_level)  # only now: a refused command line leaves logging alone
        logger.info("serving %s, default memory %r (t=%d, %d nodes)", db, default_memory, *opened)
        if not http:
            anyio.run(lambda: serve(registry, default_memory=default_memory))
            return 0
        return _run_http(args, registry, default_memory, tokens)
    except KeyboardInterrupt:
        return 0
    finally:
        registry.close()


def _run_http(args: argparse.Namespace, registry: Any, default_memory: str, tokens: Any) -> int:
    import socket

    if not is_loopback(args.host):
        logger.warning(
            "binding to %s: the memories are reachable from other machines%s",
            args.host,
            "" if tokens else " WITHOUT a token (set --token-file or --token)",
        )
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        sock.close()
        print(f"hgm mcp: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    sock.listen(2048)
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    app = http_app(registry, default_memory=default_memory, tokens=tokens, host=args.host, path=args.path, max_body=args.max_body)
    print(
        f"hgm mcp: listening on http://{host}:{port}{args.path}{' (bearer token required)' if tokens else ''}",
        file=sys.stderr,
        flush=True,
    )
    try:
        serve_http(app, sock, log_level=args.log_level)
    finally:
        sock.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``hgm mcp`` as a function: parse ``argv``, serve on stdio until the client disconnects.

    Example (not run here: it reads MCP messages from stdin)::

        main(["--db", "memory.db"])
    """
    return run(build_parser().parse_args(argv))

