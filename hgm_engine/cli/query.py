"""``hgm query``, ``hgm explain`` and ``hgm validate``: asking a graph file or a memory a path
expression, seeing how one is planned, and checking a graph file.

>>> from hgm_engine.cli import main
>>> main(["explain", "root.subgoals[0]"])  # doctest: +ELLIPSIS
query: root.subgoals[0]
rules applied: ...
plan:
  roots (goals without a parent)
    navigate subgoals: out(parent_of) to type 'goal'
      per source: index [0]
0
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any, Iterable

from hgm_engine.cli.arguments import DB_HELP, T_HELP, Commands, add_command, add_json_flag, examples, state
from hgm_engine.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_QUERY_ERROR,
    Output,
    on_graph_or_db,
    parse_params,
    problem_count,
    read_document,
    render_error,
    resolve_t,
)
from hgm_engine.errors import GraphFileError, HGMError, RequestError
from hgm_engine.memory import Memory
from hgm_engine.query import compile
from hgm_engine.query.plan import describe
from hgm_engine.render.text import plural, result_lines
from hgm_engine.store import check_document

__all__ = ["register", "explain_document"]


def _query(args: argparse.Namespace, out: Output) -> int:
    try:
        params = parse_params(args.params)
    except HGMError as err:
        return out.error(err, EXIT_QUERY_ERROR)

    def run(memory: Memory, source: str) -> int:
        try:
            with memory.reading():  # no commit lands between the query and the t it read
                result = memory.query(args.expr, focus=args.focus, params=params, as_of=args.as_of)
                read = memory.t if args.as_of is None else resolve_t(memory, args.as_of)
        except HGMError as err:
            # An unknown snapshot or a t outside the history is bad input, not a query error.
            return out.error(err, EXIT_FAILURE if isinstance(err, RequestError) else EXIT_QUERY_ERROR)
        if out.as_json:
            # With --db, "t" is the state read: a safe base_t for a transaction built on this
            # answer (a graph file has no history, and its document is spec §6's exactly).
            out.document({**result.to_json(), "t": read} if args.db is not None else result.to_json())
        else:
            out.lines(result_lines(result, unicode=out.unicode))
        return EXIT_OK

    return on_graph_or_db(args, out, run)


def explain_document(expr: str, *, physical: bool = False) -> dict[str, Any]:
    """What ``hgm explain --json`` prints: the query, its kind and parameters, the optimizer
    rules that changed it and the plan's lines (with ``physical``, each step's strategy too).

    >>> doc = explain_document("#a1.results.count()")
    >>> doc["kind"], doc["params"], doc["plan"][0]
    ('count', [], "lookup id 'a1'")
    >>> any(line.strip().startswith("physical:") for line in explain_document("#a1.results", physical=True)["plan"])
    True
    """
    compiled = compile(expr)
    strategy = compiled.program.strategy if physical else None
    return {
        "query": compiled.text,
        "kind": compiled.kind,
        "params": list(compiled.params),
        "uses_focus": compiled.uses_focus,
        "rules": list(compiled.optimized_plan.rules),
        "plan": describe(compiled.optimized_plan, physical=strategy),
    }


def _explain(args: argparse.Namespace, out: Output) -> int:
    try:
        if out.as_json:
            out.document(explain_document(args.expr, physical=args.physical))
        else:
            out.line(compile(args.expr).explain(physical=args.physical))
    except HGMError as err:
        return out.error(err, EXIT_QUERY_ERROR)
    return EXIT_OK


def _type_counts(items: Iterable[Any]) -> dict[str, int]:
    counts = Counter(item.get("type") if isinstance(item, dict) else None for item in items)
    return {str(name): count for name, count in counts.items()}


def _validate(args: argparse.Namespace, out: Output) -> int:
    path = args.file
    try:
        doc = read_document(path)
    except GraphFileError as err:
        problems = list(err.problems)
        source = err.source
    else:
        source = None
        problems = check_document(doc)
        if not problems:
            # The schema's constraints (one parent per action, acyclic parent_of, ...) are
            # checked by loading: valid here means `hgm query` will load it.
            try:
                Memory.from_document(doc)
            except GraphFileError as err:
                problems = list(err.problems)
    if problems:
        if out.as_json:
            out.document({"valid": False, "file": path, "problems": [p.to_json() for p in problems]})
        else:
            err = GraphFileError(problems, source)
            out.lines(render_error(err, label=f"{path}: invalid: {problem_count(err)}"))
        return EXIT_FAILURE
    nodes, edges = doc.get("nodes", []), doc.get("edges", [])  # a file without them is empty
    node_types = _type_counts(nodes)
    edge_types = _type_counts(edges)
    if out.as_json:
        out.document(
            {
                "valid": True,
                "file": path,
                "nodes": len(nodes),
                "edges": len(edges),
                "node_types": node_types,
                "edge_types": edge_types,
            }
        )
        return EXIT_OK

    def breakdown(counts: dict[str, int]) -> str:
        return f" ({', '.join(f'{n} {name}' for name, n in counts.items())})" if counts else ""

    out.line(
        f"{path}: valid: {plural(len(nodes), 'node')}{breakdown(node_types)}, "
        f"{plural(len(edges), 'edge')}{breakdown(edge_types)}"
    )
    return EXIT_OK


def register(commands: Commands) -> None:
    """Add ``query``, ``explain`` and ``validate`` to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["query", "root", "--db", "m.db", "--as-of", "before"])
    >>> args.expr, args.db, args.as_of, args.graph
    ('root', 'm.db', 'before', None)
    """
    query = add_command(
        commands,
        "query",
        "evaluate a path expression on a graph file or a memory",
        "Evaluate a path expression (docs/language.md) on a graph file (--graph) or on the memory in "
        "a SQLite file (--db), now or as of an earlier state (--as-of, --db only), and print the "
        "nodes, count, boolean or paths it finds.",
        examples(
            "hgm query \"root.subgoals[0].actions.where(status='pending')\" --graph trip.json",
            "hgm query '#f_price.derived{1,}.paths()' --graph trip.json --json",
            "hgm query 'current_goal.actions' --db memory.db --focus a_pay",
            "hgm query 'nodes.where(status = $s).count()' --db memory.db --params '{\"s\": \"failed\"}'",
            "hgm query '#a_forbidden' --db memory.db --as-of 3",
            "hgm query 'root.actions' --db memory.db --as-of before-change",
            note="with --json, stdout holds one document: {\"kind\": \"nodes\", \"ids\": [...], \"nodes\": [...]},\n"
            "{\"kind\": \"count\", \"value\": N}, {\"kind\": \"exists\", \"value\": B}, {\"kind\": \"paths\", \"paths\": [...]}\n"
            "or {\"error\": {\"category\": C, \"message\": M, \"line\": L, \"column\": K}}; with --db it also\n"
            "holds \"t\", the state the query read (a safe base_t for a transaction built on it).\n"
            "An unknown --as-of snapshot or a t outside the history exits 1.",
        ),
        _query,
    )
    query.add_argument("expr", metavar="EXPR", help="the path expression")
    source = query.add_mutually_exclusive_group(required=True)
    source.add_argument("--graph", metavar="FILE.json", help="graph file to query")
    source.add_argument("--db", metavar="PATH", help=DB_HELP)
    query.add_argument("--as-of", type=state, metavar="T", help=f"query an earlier state (--db only): {T_HELP}")
    query.add_argument("--focus", metavar="ID", help="the node 'focus' and 'current_goal' start from")
    query.add_argument(
        "--params", metavar="JSON", help="parameter values as a JSON object, e.g. '{\"s\": \"pending\"}'"
    )
    add_json_flag(query, "print one JSON document (docs/formats.md)")

    explain = add_command(
        commands,
        "explain",
        "show how a path expression is planned (no graph needed)",
        "Compile a path expression against the default schema and print its optimized plan and "
        "the optimizer rules that changed it.",
        examples("hgm explain \"root.subgoals[0].actions.where(status='pending')\"", "hgm explain '#a_hotel.results' --json"),
        _explain,
    )
    explain.add_argument("expr", metavar="EXPR", help="the path expression")
    explain.add_argument(
        "--physical", action="store_true", help="also show how each step runs (the executor's strategy for it)"
    )
    add_json_flag(explain, 'print {"query", "rules", "plan": [lines], ...}')

    validate = add_command(
        commands,
        "validate",
        "check a graph file and list every problem",
        "Check a graph file against the default schema: valid JSON, the hgm-graph/1 format, "
        "known node and edge types, unique ids, edges between existing nodes, then the schema's "
        "constraints (what loading checks). Every problem is listed with its place (nodes[3], "
        "edges[0], a node id, or line/column).",
        examples("hgm validate trip.json", "hgm validate trip.json --json"),
        _validate,
    )
    validate.add_argument("file", metavar="FILE.json", help="graph file to check")
    add_json_flag(validate, 'print {"valid": ..., "problems": [...]} or the counts')
