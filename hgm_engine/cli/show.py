"""``hgm show``: the goal hierarchy of a graph file or a memory as a terminal tree, or as a
Mermaid, DOT or HTML picture; ``--highlight QUERY`` marks what a query finds.

>>> import json, os, tempfile
>>> from hgm_engine.cli import main
>>> path = os.path.join(tempfile.mkdtemp(), "g.json")
>>> _ = open(path, "w").write(json.dumps({"format": "hgm-graph/1", "edges": [{"from": "g", "to": "a", "type": "parent_of"}],
...     "nodes": [{"id": "g", "type": "goal", "content": "Trip"}, {"id": "a", "type": "action", "status": "done"}]}))
>>> main(["show", "--graph", path])
g [goal]: Trip
└── a [action] done
0
"""

from __future__ import annotations

import argparse
import json

from hgm_engine.cli.arguments import DB_HELP, T_HELP, Commands, add_command, examples, integer_in, non_negative, state
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_QUERY_ERROR, Output, on_graph_or_db, shown
from hgm_engine.errors import HGMError, RequestError
from hgm_engine.memory import Memory
from hgm_engine.model import MemoryGraph
from hgm_engine.render import MAX_NODES, picture, render
from hgm_engine.render.text import plural, terminal_safe, tree_lines
from hgm_engine.store import graph_from_document

__all__ = ["register"]


def _show(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory, source: str) -> int:
        if args.db is None or args.as_of is None:
            return _draw(memory.graph, source, args, out, memory)
        try:
            doc = memory.export(as_of=args.as_of)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        return _draw(graph_from_document(doc, memory.schema), f"{shown(args.db)} as of {args.as_of}", args, out, memory)

    return on_graph_or_db(args, out, run)


def _draw(graph: MemoryGraph, source: str, args: argparse.Namespace, out: Output, memory: Memory) -> int:
    if args.root is not None and args.root not in graph:
        return out.failure("unknown-node", f"no node {args.root!r} in {source}", where="--root")
    if args.max_nodes is not None and args.format == "tree":
        return out.failure(
            "invalid-argument", "--max-nodes caps a picture: use it with --format mermaid, dot or html", where="--max-nodes"
        )
    if args.format != "tree" or args.highlight is not None:
        options = {"root": args.root, "depth": args.depth, "highlight": args.highlight, "as_of": args.as_of}
        try:
            if args.format != "tree":
                cap = {} if args.max_nodes is None else {"max_nodes": args.max_nodes}  # html has a default cap
                picture_text = render(memory, args.format, title=source, **options, **cap)
                if args.format != "html":  # Mermaid and DOT are read on terminals too; HTML in a browser
                    picture_text = terminal_safe(picture_text)
                _write_utf8(out, picture_text)
                return EXIT_OK
            drawn = picture(memory, history=False, **options)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE if isinstance(err, RequestError) else EXIT_QUERY_ERROR)
        found = drawn.highlight
        summary = f"{found.kind} = {json.dumps(found.value)}" if found.kind in ("count", "exists") else plural(found.count, "result")
        result_mark, path_mark = ("◀", "◁") if out.unicode else ("<==", "<..")
        legend = f"; {result_mark} result, {path_mark} on its walk" if drawn.marked else ""
        out.line(f"highlight: {found.query}  ({summary}{legend})")
        if found.note:
            out.line(f"({found.note})")
        marks = {node_id: result_mark if how == "result" else path_mark for node_id, how in drawn.marked.items()}
        lines = tree_lines(graph, args.root, depth=args.depth, unicode=out.unicode, marks=marks)
    else:
        lines = tree_lines(graph, args.root, depth=args.depth, unicode=out.unicode)
    out.lines(lines or ["(the graph is empty)"])
    return EXIT_OK


def _write_utf8(out: Output, text: str) -> None:
    """A picture file is UTF-8 whatever the terminal's encoding (HTML and DOT say so)."""
    buffer = getattr(out.out, "buffer", None)  # a StringIO has none: it takes text as it is
    if buffer is None:
        out.out.write(text if text.endswith("\n") else text + "\n")
        return
    out.out.flush()
    buffer.write(text.encode("utf-8") + (b"" if text.endswith("\n") else b"\n"))
    buffer.flush()


def register(commands: Commands) -> None:
    """Add ``show`` to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["show", "--graph", "g.json", "--depth", "1"])
    >>> args.graph, args.depth, args.format
    ('g.json', 1, 'tree')
    """
    show = add_command(
        commands,
        "show",
        "draw the goal hierarchy as a tree, Mermaid, DOT or an HTML page",
        "Draw the parent_of hierarchy of a graph file or a memory as a tree, children in edge "
        "order, each line 'id [type] status: content'. Nodes under no parent (entities, facts, "
        "results) follow with a summary of their edges. A node with two parents appears under "
        "both; cycles are marked, never followed. --format mermaid|dot|html prints the same "
        "picture as a Mermaid flowchart, a Graphviz digraph or one self-contained HTML page "
        "(nothing fetched; click a node for its attributes and history). --highlight QUERY "
        "marks what a path expression finds and the walks that reached it, and the HTML page opens "
        "scrolled to it. Nodes a rule marked stale (needs_review) or blocked say so in every format. "
        "A picture of more than --max-nodes nodes (HTML: 2000 unless given) shows the "
        "neighbourhood of the highlight, or of --root, and says what it left out.",
        examples(
            "hgm show --graph trip.json",
            "hgm show --graph trip.json --root day1 --depth 1",
            "hgm show --db memory.db --as-of before-change",
            "hgm show --graph trip.json --highlight \"nodes.where(status = 'failed')\"",
            "hgm show --db memory.db --format html --highlight '#f_rate.derived{1,}' > memory.html",
            "hgm show --graph trip.json --format mermaid --root d1",
            "hgm show --db memory.db --format html --max-nodes 500 --highlight '#a_wall_bus' > near.html",
            note="a --highlight query that does not compile exits 2; one ending in .count() or\n"
            ".exists() marks nothing (the page says so).",
        ),
        _show,
    )
    source = show.add_mutually_exclusive_group(required=True)
    source.add_argument("--graph", metavar="FILE.json", help="graph file to draw")
    source.add_argument("--db", metavar="PATH", help=DB_HELP)
    show.add_argument("--as-of", type=state, metavar="T", help=f"draw an earlier state (--db only): {T_HELP}")
    show.add_argument("--root", metavar="ID", help="draw only the subtree of this node")
    show.add_argument("--depth", type=non_negative, metavar="N", help="draw at most N levels below the top (0: tops only)")
    show.add_argument(
        "--format",
        choices=["tree", "mermaid", "dot", "html"],
        default="tree",
        help="tree (default), mermaid (flowchart), dot (Graphviz) or html (one self-contained page)",
    )
    show.add_argument("--highlight", metavar="QUERY", help="mark what this path expression finds and its walks")
    show.add_argument(
        "--max-nodes",
        type=_positive,
        metavar="N",
        help=f"draw at most N nodes (mermaid, dot, html; html's default {MAX_NODES}): a larger picture shows the "
        "neighbourhood of the highlight or --root and says what it left out",
    )


_positive = integer_in(1)  # a count of 1 or more (--max-nodes)
