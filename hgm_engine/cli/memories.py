"""``hgm memories list|create|drop`` (the memories of one store) and ``hgm purge`` (forget a
node), docs/memories.md. Every command that takes ``--db`` also takes ``--memory NAME``
(environment ``HGM_MEMORY``; ``default`` when neither is given), and ``--db`` may come from
the environment variable ``HGM_DB``.

>>> import os, tempfile
>>> from hgm_engine.cli import main
>>> db = os.path.join(tempfile.mkdtemp(), "memories.db")
>>> main(["memories", "create", "acme/alice", "--db", db])
created memory acme/alice
0
>>> main(["memories", "list", "--db", db, "--json"])
{"memories": ["acme/alice"]}
0
"""

from __future__ import annotations

import argparse
import json

from hgm_engine.cli.arguments import FORMATTER, Commands, add_json_flag, examples, wrap
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, Output, on_db, read_text
from hgm_engine.errors import HGMError, Problem, SchemaError
from hgm_engine.memories import open_store
from hgm_engine.memory import Memory
from hgm_engine.model import Schema

__all__ = ["register", "read_schema_file"]

STORE_HELP = "the store: a SQLite file or a postgresql:// URL (default: $HGM_DB)"


def read_schema_file(path: str) -> Schema:
    """The schema in the ``hgm-schema/1`` file ``path``; a :class:`SchemaError` names every
    problem with its place (``invalid-json`` with line and column, else the document path).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "schema.json")
    >>> _ = open(path, "w").write('{"format": "hgm-schema/1", "extends": "default", "node_types": ["tool", 3]}')
    >>> read_schema_file(path)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.SchemaError: invalid-document at node_types[1]: 3 is not a name (letters, digits and _, not first a digit)
    """
    text = read_text(path)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError([Problem("invalid-json", f"{path} is not JSON: {exc.msg}", exc.lineno, exc.colno, where=path)]) from None
    except RecursionError:
        raise SchemaError([Problem("invalid-json", f"{path} is nested too deeply", where=path)]) from None
    return Schema.from_document(doc)


def _store(args: argparse.Namespace, out: Output):
    if not args.db:
        out.failure("invalid-argument", "which store? give --db PATH or set HGM_DB", where="--db")
        return None
    return open_store(args.db)


def _list(args: argparse.Namespace, out: Output) -> int:
    store = _store(args, out)
    if store is None:
        return EXIT_FAILURE
    try:
        names = store.list(args.prefix)
    except HGMError as err:
        return out.error(err, EXIT_FAILURE)
    finally:
        store.close()
    if out.as_json:
        out.document({"memories": names})
    elif not names:
        out.line("(no memories)" if not args.prefix else f"(no memories under {args.prefix!r})")
    else:
        out.lines(names)
    return EXIT_OK


def _create(args: argparse.Namespace, out: Output) -> int:
    store = _store(args, out)
    if store is None:
        return EXIT_FAILURE
    try:
        schema = read_schema_file(args.schema) if args.schema else None
        store.create(args.name, schema=schema).close()
    except SchemaError as err:
        return out.error(err, EXIT_FAILURE, label=args.schema)
    except HGMError as err:
        return out.error(err, EXIT_FAILURE)
    finally:
        store.close()
    if out.as_json:
        out.document({"created": args.name})
    else:
        out.line(f"created memory {args.name}")
    return EXIT_OK


def _drop(args: argparse.Namespace, out: Output) -> int:
    if not args.yes:
        return out.failure(
            "invalid-argument",
            f"dropping removes the memory {args.name!r} and its whole history for good: add --yes to do it",
            where="--yes",
        )
    store = _store(args, out)
    if store is None:
        return EXIT_FAILURE
    try:
        store.drop(args.name)
    except HGMError as err:
        return out.error(err, EXIT_FAILURE)
    finally:
        store.close()
    if out.as_json:
        out.document({"dropped": args.name})
    else:
        out.line(f"dropped memory {args.name} and its history")
    return EXIT_OK


def _purge(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            tombstone = memory.purge(args.id, subtree=args.subtree, reason=args.reason, author=args.author)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document({"t": tombstone.t, "purged": list(tombstone.purged), "reason": tombstone.reason})
        else:
            ids = ", ".join(tombstone.purged)
            out.line(f"t={tombstone.t}: purged {ids} from the memory and its history ({tombstone.reason})")
        return EXIT_OK

    return on_db(args.db, out, run)


def register(commands: Commands) -> None:
    """Add ``memories`` (``list``, ``create``, ``drop``) and ``purge`` to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["memories", "drop", "acme/bob", "--db", "m.db", "--yes"])
    >>> args.action, args.name, args.yes
    ('drop', 'acme/bob', True)
    """
    memories = commands.add_parser(
        "memories",
        help="list, create or drop the memories of a store",
        description=wrap(
            "One store (a SQLite file or a PostgreSQL database) holds any number of named memories, "
            "each with its own history, schema, constraints, rules and snapshots. A name is segments "
            "of letters, digits, '.', '_' and '-' joined by '/' (acme/alice/trip-42), at most 200 "
            "characters; 'default' is the memory used when no --memory is given."
        ),
        epilog=examples(
            "hgm memories create acme/alice --db memories.db",
            "hgm memories create acme/tools --schema tools.schema.json --db memories.db",
            "hgm memories list --prefix acme/ --db memories.db",
            "hgm apply change.json --db memories.db --memory acme/alice",
            "hgm memories drop acme/alice --yes --db memories.db",
        ),
        formatter_class=FORMATTER,
    )
    actions = memories.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list",
        help="list the memories' names",
        description="List the names of the store's memories, sorted ('default' once it holds something).",
        epilog=examples("hgm memories list --db memories.db", "hgm memories list --prefix acme/ --json --db memories.db"),
        formatter_class=FORMATTER,
    )
    listing.add_argument("--prefix", default="", metavar="P", help="only names that start with P")
    listing.add_argument("--db", metavar="PATH", help=STORE_HELP)
    add_json_flag(listing, 'print {"memories": [NAME, ...]}')
    listing.set_defaults(run=_list)
    create = actions.add_parser(
        "create",
        help="create a memory (with a schema file)",
        description=wrap(
            "Create the memory NAME, empty, with the schema in FILE (an hgm-schema/1 document, "
            "docs/formats.md) stored with it; every command, server and process that opens the "
            "memory then uses that schema. A taken name, a bad name or a schema file with errors "
            "(each named with its place) exits 1 and creates nothing."
        ),
        epilog=examples("hgm memories create acme/tools --schema tools.schema.json --db memories.db"),
        formatter_class=FORMATTER,
    )
    create.add_argument("name", metavar="NAME", help="the new memory's name")
    create.add_argument("--schema", metavar="FILE", help="its schema file (default: the default schema)")
    create.add_argument("--db", metavar="PATH", help=STORE_HELP)
    add_json_flag(create, 'print {"created": NAME}')
    create.set_defaults(run=_create)
    drop = actions.add_parser(
        "drop",
        help="remove a memory and its whole history",
        description="Remove the memory NAME and its whole history, for good (--yes says you mean it).",
        epilog=examples("hgm memories drop acme/alice --yes --db memories.db"),
        formatter_class=FORMATTER,
    )
    drop.add_argument("name", metavar="NAME", help="the memory to remove")
    drop.add_argument("--yes", action="store_true", help="really remove it")
    drop.add_argument("--db", metavar="PATH", help=STORE_HELP)
    add_json_flag(drop, 'print {"dropped": NAME}')
    drop.set_defaults(run=_drop)

    purge = commands.add_parser(
        "purge",
        help="forget a node: remove it from the memory and its whole history",
        description=wrap(
            "Remove the node ID (with --subtree, everything below it too) and the edges that touch it "
            "from the memory, from every commit of its history and so from every snapshot, as_of, "
            "export and from the store's files; the history keeps a tombstone (a commit of kind "
            "'purge' with the ids, the time and --reason). An id the memory never held exits 1."
        ),
        epilog=examples(
            "hgm purge f7 --reason 'the user asked to be forgotten' --db memory.db",
            "hgm purge trip --subtree --reason 'GDPR request 2026-114' --db memories.db --memory acme/alice",
        ),
        formatter_class=FORMATTER,
    )
    purge.add_argument("id", metavar="ID", help="the node to forget")
    purge.add_argument("--subtree", action="store_true", help="also every node below it (parent_of)")
    purge.add_argument("--reason", required=True, metavar="TEXT", help="why (kept in the tombstone)")
    purge.add_argument("--author", metavar="NAME", help="who purges (kept in the tombstone)")
    purge.add_argument("--db", required=True, metavar="PATH", help="the memory: a SQLite file or a postgresql:// URL")
    add_json_flag(purge, 'print {"t", "purged": [ID, ...], "reason"}')
    purge.set_defaults(run=_purge)
