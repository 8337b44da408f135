"""The ``hgm`` command line: :func:`build_parser` makes the parser from the command groups
(each module of :mod:`hgm_engine.cli` adds its own commands and their arguments) and
:func:`main` runs a command.

>>> main(["validate", "no-such-file.json", "--json"])
{"valid": false, "file": "no-such-file.json", "problems": [{"category": "io", "message": "cannot read no-such-file.json: No such file or directory", "line": null, "column": null}]}
1
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from hgm_engine import __version__
from hgm_engine.errors import HGMError
from hgm_engine.cli import check, constraints, demo, levels, llm, memories, paths, query, rules, search, servers, show, store
from hgm_engine.cli.arguments import FORMATTER, ArgumentParser, examples, wrap
from hgm_engine.cli.common import EXIT_FAILURE, MEMORY_ENV, Output, chosen_memory
from hgm_engine.cli.demo import sample_document  # noqa: F401 - still importable from here, as before

__all__ = ["main", "build_parser", "COMMAND_GROUPS"]

# The modules that add commands, in the order `hgm --help` lists their commands.
COMMAND_GROUPS = (query, search, show, store, memories, constraints, demo, rules, levels, check, paths, llm, servers)

DB_ENV = "HGM_DB"  # the --db of every command that takes one, when it is not given
MEMORY_HELP = "which memory of the store (default: $HGM_MEMORY, else 'default'); docs/memories.md"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hgm`` command (every subcommand with its examples).

    >>> args = build_parser().parse_args(["query", "root", "--graph", "g.json", "--json"])
    >>> args.command, args.expr, args.graph, args.db, args.json
    ('query', 'root', 'g.json', None, True)
    >>> args = build_parser().parse_args(["constraint", "add", "c1", "each goal must true", "--db", "m.db"])
    >>> args.command, args.name, args.text, args.db
    ('constraint', 'c1', 'each goal must true', 'm.db')
    """
    parser = ArgumentParser(
        prog="hgm",
        description=wrap(
            "hgm: hierarchical graph memory for LLM agents. Query, explain, check and draw "
            "memory graphs written in the graph file format (hgm-graph/1), and keep a durable "
            "memory in a SQLite file or a PostgreSQL database (--db): load it, change it only through transactions "
            "checked against constraints, and read its history, diffs and earlier states."
        ),
        epilog=examples(
            "hgm demo",
            "hgm query \"root.subgoals[0].actions.where(status='pending')\" --graph trip.json",
            "hgm load trip.json --db memory.db",
            "hgm apply change.json --db memory.db",
            "hgm query 'root.actions' --db memory.db --as-of before-change",
            "hgm history --db memory.db",
        ),
        formatter_class=FORMATTER,
    )
    parser.add_argument("--version", action="version", version=f"hgm {__version__}")
    parser.add_argument("--memory", metavar="NAME", default=None, help=MEMORY_HELP)
    parser.set_defaults(json=False)  # the commands without --json print for people
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for group in COMMAND_GROUPS:
        group.register(commands)
    _store_options(parser)
    return parser


def _each_parser(parser: argparse.ArgumentParser):
    """``parser`` and every subcommand's parser below it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _each_parser(sub)


def _store_options(parser: argparse.ArgumentParser) -> None:
    """Every command with ``--db`` also takes ``--memory NAME``; its ``--db`` defaults to
    ``$HGM_DB`` (then it is no longer required: a ``--db`` in a required either-or group with
    ``--graph`` is filled in after parsing, by :func:`_fill_db`)."""
    db_default = os.environ.get(DB_ENV) or None
    for sub in _each_parser(parser):
        if sub is parser or sub.prog.endswith(" demo"):  # a demo's --db is a new file of its own
            continue
        db = next((a for a in sub._actions if "--db" in a.option_strings), None)
        if db is None:
            continue
        if "--memory" not in sub._option_string_actions:
            sub.add_argument("--memory", metavar="NAME", default=argparse.SUPPRESS, help=MEMORY_HELP)
        if db_default is not None:
            db.required = False
            for group in sub._mutually_exclusive_groups:
                if db in group._group_actions:
                    group.required = False
            if not any(db in g._group_actions for g in sub._mutually_exclusive_groups):
                db.default = db_default


def _fill_db(args: argparse.Namespace) -> None:
    """``$HGM_DB`` for a command whose ``--db`` is one of ``--graph`` or ``--db``, when
    neither was given."""
    db_default = os.environ.get(DB_ENV) or None
    if db_default and hasattr(args, "db") and args.db is None and getattr(args, "graph", "given") is None:
        args.db = db_default


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hgm`` command with ``argv`` (``sys.argv[1:]`` if None); returns the exit code.

    >>> main(["query", "#nope.exists()", "--graph", "missing.json", "--json"])
    {"error": {"category": "io", "message": "cannot read missing.json: No such file or directory", "line": null, "column": null}}
    1
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if len(arguments) > 2 and arguments[0] == "--memory" and arguments[2] in servers.TAKES_MEMORY:
        # hgm --memory NAME mcp ...: the server's own --memory (its default memory)
        return servers.run_server(arguments[2], ["--memory", arguments[1], *arguments[3:]])
    if len(arguments) > 2 and arguments[0] == "--memory" and arguments[2] in servers.SERVER_COMMANDS:
        print(
            f"error: invalid-argument at --memory: hgm {arguments[2]} does not take --memory yet: "
            "it serves the memory 'default' of its --db",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    if arguments and arguments[0] in servers.SERVER_COMMANDS:
        return servers.run_server(arguments[0], arguments[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, a malformed command line
        return exit_.code if isinstance(exit_.code, int) else EXIT_FAILURE
    out = Output(sys.stdout, sys.stderr, as_json=args.json)
    _fill_db(args)
    name = getattr(args, "memory", None) or os.environ.get(MEMORY_ENV) or None
    try:
        with chosen_memory(name, where="--memory" if getattr(args, "memory", None) else MEMORY_ENV):
            code = args.run(args, out)
        out.out.flush()
        return code
    except HGMError as err:  # a bad --memory name
        return out.error(err, EXIT_FAILURE)
    except BrokenPipeError:
        # The reader went away (``hgm demo | head``): stop quietly, as Unix tools do.
        _silence_stdout()
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no real file behind stdout
        pass


if __name__ == "__main__":
    sys.exit(main())
