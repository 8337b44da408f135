"""Building blocks of the ``hgm`` argument parser, shared by every command group: a parser
that exits 1 on a malformed command line, :func:`add_command` (a subcommand with its help,
description, examples and handler), ``--json``, the common help texts and argument types.

A command group's module has a ``register(commands)`` that adds its subcommands to
``commands`` (the parser's subparsers) with these:

>>> import argparse
>>> parser = ArgumentParser(prog="hgm")
>>> commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
>>> hello = add_command(commands, "hello", "say hello", "Say hello.", examples("hgm hello"), lambda args, out: 0)
>>> add_json_flag(hello, "print JSON")
>>> args = parser.parse_args(["hello", "--json"])
>>> args.command, args.json, args.run(args, None)
('hello', True, 0)
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any, Callable

from hgm_engine.cli.common import EXIT_FAILURE

__all__ = [
    "ArgumentParser",
    "Commands",
    "FORMATTER",
    "EXIT_CODES_HELP",
    "DB_HELP",
    "NEW_DB_HELP",
    "T_HELP",
    "wrap",
    "examples",
    "add_command",
    "add_json_flag",
    "integer_in",
    "non_negative",
    "commit_number",
    "state",
]

Commands = Any
"""The subcommands of a parser, what ``parser.add_subparsers()`` returns (argparse keeps the
class private); a command group's ``register(commands)`` adds its commands to it."""

FORMATTER = argparse.RawDescriptionHelpFormatter  # descriptions are wrapped by wrap(), epilogs kept as written


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a malformed command line exits 1: 2 is kept for query errors.

    >>> ArgumentParser(prog="hgm").parse_args(["--frobnicate"])
    Traceback (most recent call last):
    ...
    SystemExit: 1
    """

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_FAILURE, f"{self.prog}: error: {message}\n")


EXIT_CODES_HELP = """\
exit codes:
  0  success (a query that finds nothing succeeds too)
  1  unreadable, invalid or schema-breaking file; malformed transaction; conflict with
     base_t; unknown snapshot, t or node; a --db that cannot be opened; bad command line
  2  query error (syntax, unknown-name, invalid-argument, misplaced, invalid-regex,
     missing-parameter, missing-focus), including --params that is not a JSON object
     and the text of a constraint
  3  refused by constraints (apply, revert, constraint add): every violation is listed
"""

# A --db is a SQLite file or a PostgreSQL URL (docs/postgres.md); open_memory tells them apart.
DB_HELP = "the memory: a SQLite file (hgm load / hgm apply create it) or a postgresql:// URL"
NEW_DB_HELP = "the memory: a SQLite file (created if missing) or a postgresql:// URL"
T_HELP = (
    "a commit number t (0 is the empty memory), a snapshot name, or an ISO 8601 time "
    "(2026-03-01T09:30:00Z: the last commit at or before it)"
)


def wrap(text: str) -> str:
    """A description wrapped to 88 columns (the help keeps the epilog's lines as written).

    >>> len(wrap("word " * 40).splitlines())
    3
    """
    return textwrap.fill(text, width=88)


def examples(*lines: str, note: str = "") -> str:
    """A command's epilog: its examples, an optional note, then the exit codes.

    >>> print(examples("hgm demo").splitlines()[:3])
    ['examples:', '  hgm demo', '']
    """
    text = "examples:\n" + "".join(f"  {line}\n" for line in lines)
    if note:
        text += "\n" + note.rstrip("\n") + "\n"
    return text + "\n" + EXIT_CODES_HELP


def add_command(
    commands: Commands,
    name: str,
    help: str,  # noqa: A002 - argparse's name for it
    description: str,
    epilog: str,
    run: Callable,
) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` whose handler is ``run(args, out) -> exit code`` (the
    module's example shows one)."""
    sub = commands.add_parser(name, help=help, description=wrap(description), epilog=epilog, formatter_class=FORMATTER)
    sub.set_defaults(run=run)
    return sub


def add_json_flag(sub: argparse.ArgumentParser, what: str) -> None:
    """``--json``: ``what`` says which document the command then prints (the module's example
    shows one)."""
    sub.add_argument("--json", action="store_true", help=what)


def integer_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer from ``low``, up to ``high`` when given.

    >>> attempts = integer_in(1, 10)
    >>> attempts("3")
    3
    >>> attempts("11")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be from 1 to 10, not 11
    >>> integer_in(1)("x")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: not an integer: 'x'
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"{low} or more" if high is None else f"from {low} to {high}"
            raise argparse.ArgumentTypeError(f"must be {bound}, not {value}")
        return value

    return parse


_non_negative = integer_in(0)


def non_negative(text: str) -> int:
    """An integer argument that is 0 or more (``--depth``, ``--since``, ``--last``).

    >>> non_negative("2")
    2
    >>> non_negative("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be 0 or more, not -1
    """
    return _non_negative(text)


def commit_number(text: str) -> int:
    """A commit number argument: 1 or more (``hgm revert T``).

    >>> commit_number("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: commits are numbered from 1, not 0
    """
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a commit number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"commits are numbered from 1, not {value}")
    return value


def state(text: str) -> str:
    """A state argument (``--as-of T``, ``--since T``, ``diff T1 T2``...): a t or a snapshot
    name, resolved by the command (only the memory knows its names and its last t). A t is
    written with the ASCII digits 0-9: ``²`` or ``١`` look like numbers to Python but are
    neither a t nor a snapshot name (a snapshot name is never a number).

    >>> state("3"), state("before-change"), state("-1")
    ('3', 'before-change', '-1')
    >>> state("²")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: a t is written with the digits 0-9: '²' is neither a t nor a snapshot name
    """
    if not text:
        raise argparse.ArgumentTypeError("a state is a t or a snapshot name, not empty")
    if text.lstrip("-").isdigit() and not text.isascii():
        raise argparse.ArgumentTypeError(f"a t is written with the digits 0-9: {text!r} is neither a t nor a snapshot name")
    return text
