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

from hgm_engine.cli.arguments import DB_HELP, T_HELP, Commands, add_command, add_json_flag, examples, non_negative
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, Output, on_db, on_graph_or_db, print_report, resolve_t
from hgm_engine.errors import HGMError
from hgm_engine.memory import Memory
from hgm_engine.txn import MAX_ITEMS, MAX_SUMMARIZED

__all__ = ["register"]


def positive(text: str) -> int:
    """An integer argument that is 1 or more (``--max-items``, ``--attempts``).

    >>> positive("3")
    3
    """
    value = non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more, not 0")
    return value


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


def _summarize(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        options = {"author": args.author, "reason": args.reason, "max_nodes": args.max_nodes,
                   "max_items": args.max_items, "dry_run": args.dry_run}
        try:
            if args.model is not None or args.llm:
                from hgm_engine.llm import summarize_with_model

                report = summarize_with_model(memory, args.id, model=args.model, attempts=args.attempts, **options)
            else:
                report = memory.summarize(args.id, **options)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if not report.committed:
            return print_report(out, report)
        summary = memory.summary_of(args.id) or {}
        node_id = summary.get("id")
        if out.as_json:
            out.document({"id": node_id, "t": report.t, "summary": summary, "report": report.to_json()})
            return EXIT_OK
        verb = "summarized" if report.created else "refreshed the summary of"
        out.line(f"{verb} {args.id} as {node_id} at t={report.t}: covers {summary.get('covers')} nodes")
        out.line(f"  {summary.get('content', '')}")
        return EXIT_OK

    return on_db(args.db, out, run)


def register(commands: Commands) -> None:
    """Add ``facts`` and ``summarize`` to the ``hgm`` parser (the module's example shows one)."""
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

    summarize = add_command(
        commands,
        "summarize",
        "roll a scenario's events (or any subtree) up into one summary node",
        "Make or refresh the summary of ID: one fact node with kind 'summary', linked by a "
        "'summarizes' edge to ID and to each node under it (parent_of, and what those nodes "
        "produce). The text is extractive and deterministic (counts by type and status, the "
        "salient steps, the entities, the outcomes) unless --llm or --model asks an "
        "OpenAI-compatible model (OPENAI_BASE_URL, OPENAI_API_KEY), whose answer must meet a "
        "JSON Schema; with no valid answer nothing is written. When anything the summary covers "
        "changes, the summary is marked needs_review; summarizing again refreshes it.",
        examples(
            "hgm summarize shopping --db memory.db",
            "hgm summarize shopping --db memory.db --json",
            "hgm summarize shopping --db memory.db --llm --attempts 2",
        ),
        _summarize,
    )
    summarize.add_argument("id", metavar="ID", help="the scenario (or any node) whose subtree is summarized")
    summarize.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    summarize.add_argument("--max-items", type=positive, default=MAX_ITEMS, metavar="N",
                           help=f"steps, entities and outcomes named in the text (default {MAX_ITEMS})")
    summarize.add_argument("--max-nodes", type=positive, default=MAX_SUMMARIZED, metavar="N",
                           help=f"refuse a subtree of more nodes than this (default {MAX_SUMMARIZED:,})")
    summarize.add_argument("--llm", action="store_true", help="have a model write the text ($HGM_LLM_MODEL or gpt-4o-mini)")
    summarize.add_argument("--model", metavar="NAME", help="the model to ask (implies --llm)")
    summarize.add_argument("--attempts", type=positive, default=3, metavar="N", help="model requests at most (default 3)")
    summarize.add_argument("--author", help="recorded with the commit")
    summarize.add_argument("--reason", help="recorded with the commit (default: summarize ID)")
    summarize.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
    add_json_flag(summarize, 'print {"id", "t", "summary": {...}, "report": {...}}')
