"""``hgm serve`` (REST) and ``hgm mcp`` (Model Context Protocol on stdio): the servers parse
their own options, so ``hgm`` hands them the rest of its command line (:func:`run_server`);
they are registered in the parser only so that ``hgm --help`` lists them.

>>> sorted(SERVER_COMMANDS)
['mcp', 'serve']
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Sequence

from hgm_engine.cli.arguments import Commands
from hgm_engine.cli.common import EXIT_FAILURE

__all__ = ["SERVER_COMMANDS", "TAKES_MEMORY", "register", "run_server"]

SERVER_COMMANDS = {
    "serve": "serve a memory over REST with an OpenAPI document (hgm serve --db PATH; --help for options)",
    "mcp": "serve memories as Model Context Protocol tools on stdio or streamable HTTP (hgm mcp --db PATH)",
}
# The module whose main(argv) runs each server.
_SERVER_MODULES = {"serve": "hgm_engine.server.rest", "mcp": "hgm_engine.server.mcp"}
# The extra of the hgm-engine distribution each server needs (pyproject.toml).
_EXTRAS = {"serve": "server", "mcp": "mcp"}
# The servers that serve many memories and read --memory / HGM_MEMORY for their default one.
TAKES_MEMORY = frozenset({"mcp", "serve"})


def register(commands: Commands) -> None:
    """List ``serve`` and ``mcp`` in the ``hgm`` parser (``main`` runs them before parsing).

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> parser.parse_known_args(["mcp", "--db", "m.db"])[0].command
    'mcp'
    """
    for name, text in SERVER_COMMANDS.items():
        commands.add_parser(name, help=text, add_help=False)


def run_server(name: str, argv: Sequence[str]) -> int:
    """Run the server ``name`` (``serve`` or ``mcp``) with its own command line ``argv``.

    The server module is imported only here: it needs the ``server`` extra (FastAPI, uvicorn)
    or the ``mcp`` extra (the MCP SDK), which the other commands do without.

    >>> run_server("mcp", ["--help"])  # doctest: +ELLIPSIS
    usage: hgm mcp ...
    0
    """
    if name not in TAKES_MEMORY and os.environ.get("HGM_MEMORY") not in (None, "", "default"):
        print(f"warning: hgm {name} serves the memory 'default' of its --db; HGM_MEMORY is not used by servers yet", file=sys.stderr)
    try:
        module = importlib.import_module(_SERVER_MODULES[name])
    except ImportError as exc:
        extra = _EXTRAS[name]
        print(f"hgm {name}: needs the {extra} extra: pip install 'hgm-engine[{extra}]' ({exc})", file=sys.stderr)
        return EXIT_FAILURE
    try:
        return module.main(list(argv))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_FAILURE
