"""``hgm facts`` and ``hgm summarize``: valid time and levels (docs/time.md).

``facts`` shows what holds about an entity at a time, with what superseded what;
``summarize`` rolls a scenario's events (or any subtree) up into one summary node.

>>> from hgm_engine.cli.arguments import ArgumentParser
>>> parser = ArgumentParser(prog="hgm")
>>> register(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["facts", "e_hotel", "--graph", "g.json", "--at", "2026-03-01"])
>>> args.id, args.at, args.graph
('e_hotel', '2026-03-01', 'g.json')
"""

from __future__ import annotations

import argparse

from hgm_engine.cli.arguments import DB_HELP, T_HELP, Commands, add_command, add_json_flag, examples
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, Output, on_graph_or_db, resolve_t
from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory

__all__ = ["register"]


def _facts(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory, source: str) -> int:
        try:
            with memory.reading():
                as_of = None if args.as_of is None else resolve_t(memory, args.as_of)
                doc = memory.facts(args.id, at=args.at, as_of=as_of)
                t = memory.t if as_of is None else memory.resolve_t(as_of)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if args.db is not None:
            doc = dict(doc, t=t)
        if out.as_json:
            out.document(doc)
            return EXIT_OK
        out.line(f"{args.id} at {doc['at']}: {len(doc['holding'])} of {len(doc['facts'])} facts hold")
        for fact in doc["facts"]:
            mark = "holds " if fact["holds"] else "      "
            window = f"[{fact['valid_from'] or '…'} → {fact['valid_to'] or '…'})"
            line = f"  {mark} {fact['id']}  {fact['content'] or ''}  {window}"
            if fact["superseded_by"]:
                line += f"  superseded by {', '.join(fact['superseded_by'])}"
            if fact["reason"]:
                line += f" ({fact['reason']})"
            out.line(line)
        if doc["more"]:
            out.line(f"  … and {doc['more']} more")
        return EXIT_OK

    return on_graph_or_db(args, out, run)


def register(commands: Commands) -> None:
    """Add ``facts`` to the ``hgm`` parser (the module's example shows it)."""
    facts = add_command(
        commands,
        "facts",
        "what holds about an entity at a time, with what superseded what",
        "The facts related to ID (related_to, either way) and the facts they superseded or were "
        "superseded by (replaces), each with its valid time [valid_from, valid_to) and whether it "
        "holds at --at (an ISO 8601 date or date-time; default: now). --as-of reads what memory "
        "knew at an earlier state instead (transaction time).",
        examples(
            "hgm facts e_hotel --db memory.db",
            "hgm facts e_hotel --db memory.db --at 2026-03-01",
            "hgm facts e_hotel --db memory.db --at 2026-07-01 --as-of 2026-05-01T12:00:00Z --json",
        ),
        _facts,
    )
    facts.add_argument("id", metavar="ID", help="the entity (any node) the facts are about")
    source = facts.add_mutually_exclusive_group(required=True)
    source.add_argument("--graph", metavar="FILE.json", help="a graph file")
    source.add_argument("--db", metavar="PATH", help=DB_HELP)
    facts.add_argument("--at", metavar="TIME", help="the valid time: an ISO 8601 date or date-time (default: now)")
    facts.add_argument("--as-of", metavar="T", help=f"what memory knew then (--db only): {T_HELP}")
    add_json_flag(facts, 'print {"id", "at", "holding": [ids], "facts": [...], "more", "t"}')
