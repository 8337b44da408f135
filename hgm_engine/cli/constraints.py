"""``hgm constraint add|list|remove``: the constraints a memory keeps, written in the path
language (``each TYPE [where COND] must COND``); every later transaction is checked against
them.

>>> import os, tempfile
>>> from hgm_engine.cli import main
>>> db = os.path.join(tempfile.mkdtemp(), "memory.db")
>>> main(["constraint", "add", "named", "each goal must content != 'x'", "--db", db])
added constraint named: each goal must content != 'x'
0
>>> main(["constraint", "list", "--db", db])
named  each goal must content != 'x'
0
"""

from __future__ import annotations

import argparse

from hgm_engine.cli.arguments import DB_HELP, FORMATTER, NEW_DB_HELP, Commands, add_json_flag, examples, wrap
from hgm_engine.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_QUERY_ERROR,
    EXIT_REFUSED,
    Output,
    on_db,
    violation_lines,
)
from hgm_engine.errors import HGMError, TransactionRefused
from hgm_engine.memory import Memory
from hgm_engine.render.text import plural

__all__ = ["register"]


def _add(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        replaced = memory.constraints().get(args.name)
        try:
            memory.add_constraint(args.name, args.text)
        except TransactionRefused as refusal:
            violations = refusal.report.violations
            if out.as_json:
                out.document(
                    {
                        "added": False,
                        "name": args.name,
                        "text": args.text,
                        "violations": [v.to_json() for v in violations],
                    }
                )
            else:
                print(
                    f"refused: constraint {args.name!r} does not hold now: {plural(len(violations), 'violation')}; "
                    "nothing was added",
                    file=out.err,
                )
                print("\n".join(violation_lines(violations)), file=out.err)
            return EXIT_REFUSED
        except HGMError as err:  # the text does not parse or names what the schema does not know
            return out.error(err, EXIT_QUERY_ERROR if err.source is not None else EXIT_FAILURE)
        if out.as_json:
            out.document({"added": True, "name": args.name, "text": args.text, "replaced": replaced})
        else:
            out.line(f"{'replaced' if replaced is not None else 'added'} constraint {args.name}: {args.text}")
        return EXIT_OK

    return on_db(args.db, out, run, create=True)


def _list(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        entries = [{"name": name, "text": text} for name, text in memory.constraints().items()]
        for broken in memory.broken():
            if broken.kind == "constraint":
                doc = broken.to_json()
                entries.append({"name": doc["name"], "text": doc["text"], "broken": doc["error"]})
        if out.as_json:
            out.document({"constraints": entries})
        elif not entries:
            out.line("(no constraints besides the schema's own)")
        else:
            width = max(len(entry["name"]) for entry in entries)
            for entry in entries:
                note = ""
                if "broken" in entry:
                    error = entry["broken"]
                    note = f"  (broken, inactive: {error['category']}: {error['message']})"
                out.line(f"{entry['name'].ljust(width)}  {entry['text']}{note}")
        return EXIT_OK

    return on_db(args.db, out, run)


def _remove(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            text = memory.constraints().get(args.name)
            if text is None:  # a broken one
                text = next((b.text for b in memory.broken() if b.kind == "constraint" and b.name == args.name), None)
            memory.remove_constraint(args.name)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document({"removed": True, "name": args.name, "text": text})
        else:
            out.line(f"removed constraint {args.name}: {text}")
        return EXIT_OK

    return on_db(args.db, out, run)


def register(commands: Commands) -> None:
    """Add ``constraint`` and its actions ``add``, ``list`` and ``remove`` to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["constraint", "remove", "c1", "--db", "m.db"])
    >>> args.action, args.name
    ('remove', 'c1')
    """
    constraint = commands.add_parser(
        "constraint",
        help="add, list or remove a memory's constraints",
        description=wrap(
            "A constraint is written in the path language: 'each TYPE [where COND] must COND'. "
            "Every later transaction is checked against it and refused whole when it breaks it."
        ),
        epilog=examples(
            "hgm constraint add done_has_result \"each action where status = 'done' must exists(results)\" --db memory.db",
            "hgm constraint list --db memory.db",
            "hgm constraint remove done_has_result --db memory.db",
        ),
        formatter_class=FORMATTER,
    )
    actions = constraint.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add",
        help="add a constraint (it must already hold)",
        description=wrap(
            "Add (or replace) the constraint NAME. It must hold in the current state: otherwise "
            "every violation is listed, nothing is added and the exit code is 3. A TEXT that "
            "does not parse, or names what the schema does not know, is shown with a caret "
            "under the place (exit 2)."
        ),
        epilog=examples(
            "hgm constraint add done_has_result \"each action where status = 'done' must exists(results)\" --db memory.db",
            "hgm constraint add day_set \"each action where status = 'pending' must exists(day)\" --db memory.db --json",
        ),
        formatter_class=FORMATTER,
    )
    add.add_argument("name", metavar="NAME", help="the constraint's name")
    add.add_argument("text", metavar="TEXT", help="each TYPE [where COND] must COND")
    add.add_argument("--db", required=True, metavar="PATH", help=NEW_DB_HELP)
    add_json_flag(add, 'print {"added", "name", "text", ...} (with "violations" when refused)')
    add.set_defaults(run=_add)
    listing = actions.add_parser(
        "list",
        help="list the constraints added to a memory",
        description="List the constraints added to the memory (the schema's built-in rules always apply too).",
        epilog=examples("hgm constraint list --db memory.db --json"),
        formatter_class=FORMATTER,
    )
    listing.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    add_json_flag(listing, 'print {"constraints": [{"name", "text"}, ...]}')
    listing.set_defaults(run=_list)
    remove = actions.add_parser(
        "remove",
        help="remove a constraint",
        description="Remove the constraint NAME; an unknown name exits 1.",
        epilog=examples("hgm constraint remove done_has_result --db memory.db"),
        formatter_class=FORMATTER,
    )
    remove.add_argument("name", metavar="NAME", help="the constraint's name")
    remove.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    add_json_flag(remove, 'print {"removed", "name", "text"}')
    remove.set_defaults(run=_remove)
