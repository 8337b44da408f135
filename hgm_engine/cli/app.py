"""The ``hgm`` command: query, explain, validate and show a memory graph from a terminal, and
keep a durable memory in a SQLite file (``--db``) changed only through transactions.

::

    hgm query "root.subgoals[0].actions.where(status='pending')" --graph trip.json
    hgm query "#a_hotel.results" --graph trip.json --json
    hgm explain "root.descendants.where(status='failed').paths()"
    hgm validate trip.json
    hgm show --graph trip.json --root d1 --depth 2
    hgm demo

    hgm load trip.json --db memory.db              # the initial load: t=1
    hgm apply change.json --db memory.db [--dry-run] [--json]   # FILE may be - (stdin)
    hgm query "root.actions" --db memory.db --as-of 1
    hgm export --db memory.db [--as-of T] [--compact] > trip.json
    hgm history --db memory.db [NODE_ID]
    hgm diff 1 before-change --db memory.db
    hgm revert 2 --db memory.db
    hgm snapshot before-change --db memory.db ; hgm snapshots --db memory.db
    hgm constraint add NAME "each action where status = 'done' must exists(results)" --db memory.db
    hgm constraint list --db memory.db ; hgm constraint remove NAME --db memory.db

``query`` and ``show`` read a graph file (``--graph``) or a memory (``--db``); ``--as-of T``
(a commit number or a snapshot name) needs ``--db``. ``load``, ``apply`` and ``constraint add``
create the SQLite file when it does not exist; every other ``--db`` command refuses a missing
file (exit 1) rather than quietly starting an empty memory. ``hgm --help`` lists the commands
and ``hgm COMMAND --help`` explains one, with examples.

Exit codes (the same for every command):

- ``0`` success. A query that finds nothing succeeds too (an empty list, 0 or false).
- ``1`` a file that cannot be read, is not JSON or breaks the schema (``hgm validate`` finding
  problems included, a graph file ``hgm load`` refuses included), a malformed transaction, a
  conflict with ``base_t`` or a revert of something changed since, an unknown ``--root``,
  node, snapshot or ``t``, a ``--db`` that cannot be opened, a malformed command line, or any
  other failure.
- ``2`` a query error: any :class:`~hgm_engine.errors.HGMError` raised while compiling,
  binding or running a query (``syntax``, ``unknown-name``, ``invalid-argument``,
  ``misplaced``, ``invalid-regex``, ``missing-parameter``, ``missing-focus``). A ``--params``
  value that is not a JSON object is an ``invalid-argument`` query error as well, and so is a
  constraint text that does not compile (``hgm constraint add``).
- ``3`` refused by constraints: ``hgm apply`` or ``hgm revert`` whose result breaks one, or
  ``hgm constraint add`` of a constraint the memory already breaks. Every violation is listed.

With ``--json``, once the command line has been parsed, standard output carries exactly one
JSON document whatever happens: the result, or ``{"error": {"category", "message", "line",
"column", ...}}`` (spec/dsl.md §6). ``hgm apply --json`` and ``hgm revert --json`` always
print a transaction report (formats.md): refused ones with ``"committed": false``, ``"t":
null`` and the violations, failed ones with an ``"error"`` as well. Without ``--json``,
results go to standard output for people and errors (and refusals) to standard error with
their category, position and a caret under the place. ``hgm export`` always writes the graph
file format.

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
import datetime
import importlib.resources
import json
import pathlib
import sys
import textwrap
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence, TextIO

import attrs

from hgm_engine import __version__
from hgm_engine.errors import GraphFileError, HGMError, Problem, QueryAnalysisError
from hgm_engine.model import MemoryGraph, Node
from hgm_engine.memory import Memory
from hgm_engine.errors import RequestError
from hgm_engine.query.plan import describe
from hgm_engine.query import QueryResult, compile
from hgm_engine.store.graphfile import check_document, graph_from_document, parse_graph_text
from hgm_engine.txn import TransactionReport, change_to_json
from hgm_engine.errors import TransactionError, TransactionRefused

__all__ = [
    "main",
    "build_parser",
    "sample_document",
    "tree_lines",
    "result_lines",
    "change_lines",
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_QUERY_ERROR",
    "EXIT_REFUSED",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_QUERY_ERROR = 2
EXIT_REFUSED = 3

SAMPLE_RESOURCE = "data/sample_memory.json"
_CONTENT_WIDTH = 64
_EXCERPT_WIDTH = 100


# -- output ----------------------------------------------------------------------------------


@attrs.frozen
class _Glyphs:
    tee: str
    last: str
    bar: str
    blank: str
    arrow: str
    ellipsis: str


_UNICODE = _Glyphs("├── ", "└── ", "│   ", "    ", " → ", "…")
_ASCII = _Glyphs("|-- ", "`-- ", "|   ", "    ", " -> ", "...")


def _unicode_ok(stream: TextIO) -> bool:
    """Whether ``stream`` can take box-drawing characters (a StringIO can take anything)."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        "├└│→…".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class _Output:
    """Where a command writes: stdout for results, stderr for people's error messages."""

    def __init__(self, out: TextIO, err: TextIO, as_json: bool = False):
        self.out = out
        self.err = err
        self.as_json = as_json
        self.unicode = _unicode_ok(out)

    def line(self, text: str = "") -> None:
        print(text, file=self.out)

    def lines(self, lines: Iterable[str], indent: str = "") -> None:
        for text in lines:
            print(indent + text if text else "", file=self.out)

    def document(self, doc: Mapping[str, Any]) -> None:
        print(json.dumps(doc, ensure_ascii=not self.unicode), file=self.out)

    def error(self, err: HGMError, code: int, label: str | None = None) -> int:
        """Report ``err`` (JSON on stdout with ``--json``, else text on stderr); returns ``code``."""
        if self.as_json:
            self.document(err.to_json())
        else:
            print("\n".join(_render_error(err, label)), file=self.err)
        return code

    def failure(self, category: str, message: str, where: str | None = None) -> int:
        """A failure that is not a query error (exit 1), reported like one."""
        return self.error(HGMError([Problem(category, message, where=where)]), EXIT_FAILURE)


def _render_error(err: HGMError, label: str | None = None) -> list[str]:
    """Every problem of ``err``: ``error: CATEGORY at PLACE: MESSAGE`` and a caret excerpt.

    With ``label`` (a file's problems) a heading ``LABEL`` comes first and the problems are
    indented below it.
    """
    lines: list[str] = []
    if label is not None:
        lines.append(label)
    for problem in err.problems:
        place = ""
        if problem.line is not None:
            place = f" at line {problem.line}, column {problem.column}"
        elif problem.where is not None:
            place = f" at {problem.where}"
        prefix = "  " if label is not None else "error: "
        lines.append(f"{prefix}{problem.category}{place}: {problem.message}")
        excerpt = _excerpt(err.source, problem.line, problem.column)
        lines.extend(("      " if label is not None else "    ") + text for text in excerpt)
    return lines


def _excerpt(source: str | None, line: int | None, column: int | None, width: int = _EXCERPT_WIDTH) -> list[str]:
    """The source line with a caret under ``column``; a long line is cut to a window around it."""
    if source is None or line is None or column is None:
        return []
    source_lines = source.split("\n")
    if not 1 <= line <= len(source_lines):
        return []
    text = source_lines[line - 1].rstrip("\r")
    index = max(0, min(column - 1, len(text)))
    start = 0
    if len(text) > width:
        start = max(0, min(index - width // 2, len(text) - width))
        shown = text[start : start + width]
        if start > 0:
            shown = "..." + shown
        if start + width < len(text):
            shown = shown + "..."
        lead = 3 if start > 0 else 0
    else:
        shown, lead = text, 0
    pad = " " * lead + "".join("\t" if ch == "\t" else " " for ch in text[start:index])
    return [shown, pad + "^"]


def _shorten(text: str, width: int, ellipsis: str) -> str:
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    return text[: width - len(ellipsis)].rstrip() + ellipsis


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# -- loading ---------------------------------------------------------------------------------


def _input_name(path: str) -> str:
    return "standard input" if path == "-" else path


def _read_text(path: str) -> str:
    """The text of the file ``path`` (``-``: standard input); GraphFileError ``io`` if unreadable."""
    try:
        if path == "-":
            return sys.stdin.read()
        return pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise GraphFileError([Problem("io", f"cannot read {_input_name(path)}: {reason}")]) from None


def _read_document(path: str) -> Any:
    """The JSON document of a graph file; GraphFileError (``io`` or ``invalid-json``) if not."""
    return parse_graph_text(_read_text(path), "not valid JSON")


def _load(path: str, out: _Output) -> Memory | int:
    """The memory in the graph file ``path``, or the exit code after reporting why not."""
    try:
        return Memory.from_document(_read_document(path))
    except GraphFileError as err:
        if err.category == "io":
            return out.error(err, EXIT_FAILURE)
        return out.error(err, EXIT_FAILURE, label=f"error: {path}: {_problem_count(err)}; nothing was loaded")


def _problem_count(err: HGMError) -> str:
    return _plural(len(err.problems), "problem")


def sample_document() -> dict[str, Any]:
    """The embedded sample memory (a three-day Beijing trip and an order-status goal).

    It ships inside the package as ``hgm_engine/data/sample_memory.json``; ``hgm demo`` runs
    on it and ``hgm demo --sample`` prints it.

    >>> doc = sample_document()
    >>> doc["format"], doc["nodes"][0]["id"]
    ('hgm-graph/1', 'trip')
    >>> Memory.from_document(doc).query("root").ids
    ['trip', 'orders']
    """
    resource = importlib.resources.files("hgm_engine").joinpath(SAMPLE_RESOURCE)
    return json.loads(resource.read_text(encoding="utf-8"))


# -- people's views of results and graphs ------------------------------------------------------


def _node_label(node: Node, glyphs: _Glyphs = _UNICODE) -> str:
    """``id [type] status: content``, leaving out what the node does not have."""
    label = f"{node.id} [{node.type}]"
    status = node.get("status")
    if status is not None:
        label += f" {status}"
    content = node.get("content")
    if content is not None:
        label += ": " + _shorten(content, _CONTENT_WIDTH, glyphs.ellipsis)
    return label


def result_lines(result: QueryResult, *, unicode: bool = True) -> list[str]:
    """A query result as people read it: a table of nodes, a number, true/false, or walks.

    >>> m = Memory.from_document(sample_document())
    >>> print("\\n".join(result_lines(m.query("root.subgoals[0].actions.where(status = 'pending')"))))
    ID        TYPE    STATUS   CONTENT
    a_alipay  action  pending  Set up Alipay with a foreign card for paying in shops
    a_snacks  action  pending  Evening walk along the Wangfujing snack street
    (2 nodes)
    >>> result_lines(m.query("#trip.subgoals.count()")), result_lines(m.query("#nope.exists()"))
    (['3'], ['false'])
    >>> result_lines(m.query("#f_rate.derived{1,}.paths()"), unicode=False)
    ['f_rate -> r_booking', 'f_rate -> r_booking -> r_budget', '(2 paths)']
    """
    glyphs = _UNICODE if unicode else _ASCII
    if result.kind == "count":
        return [str(result.value)]
    if result.kind == "exists":
        return ["true" if result.value else "false"]
    if result.kind == "paths":
        lines = [glyphs.arrow.join(path) for path in result.paths]
        return lines + [f"({_plural(len(result.paths), 'path')})" if lines else "(no paths)"]
    nodes = result.nodes
    if not nodes:
        return ["(no nodes)"]
    columns = ["ID", "TYPE"]
    with_status = any(node.get("status") is not None for node in nodes)
    if with_status:
        columns.append("STATUS")
    columns.append("CONTENT")
    rows = []
    for node in nodes:
        row = [str(node["id"]), str(node["type"])]
        if with_status:
            row.append("" if node.get("status") is None else str(node["status"]))
        content = node.get("content")
        row.append("" if content is None else _shorten(content, _CONTENT_WIDTH, glyphs.ellipsis))
        rows.append(row)
    widths = [max(len(columns[i]), *(len(row[i]) for row in rows)) for i in range(len(columns) - 1)]
    table = []
    for row in [columns, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]
        table.append("  ".join(cells).rstrip())
    return table + [f"({_plural(len(nodes), 'node')})"]


_EDGE_WORDS = {
    # edge type: (said of the source, said of the target)
    "parent_of": ("children", "parent"),
    "before": ("before", "after"),
    "related_to": ("related to", "related to"),
    "derived_from": ("derived from", "source of"),
    "produces": ("produces", "produced by"),
    "replaces": ("replaces", "replaced by"),
    "causes": ("causes", "caused by"),
}


def _edge_summary(graph: MemoryGraph, node_id: str) -> str:
    """A node's edges grouped by relation, e.g. ``related to: e_x, f_y; produced by: a_z``."""
    groups: dict[str, list[str]] = {}
    for edge in graph.edges_of(node_id):
        outgoing = edge.source == node_id
        words = _EDGE_WORDS.get(edge.type, (edge.type, f"{edge.type} (incoming)"))
        word = words[0] if outgoing else words[1]
        other = edge.target if outgoing else edge.source
        members = groups.setdefault(word, [])
        if other not in members:
            members.append(other)
    return "; ".join(f"{word}: {', '.join(ids)}" for word, ids in groups.items())


def tree_lines(
    graph: MemoryGraph,
    root: str | None = None,
    *,
    depth: int | None = None,
    unicode: bool = True,
    marks: Mapping[str, str] | None = None,
) -> list[str]:
    """The ``parent_of`` hierarchy as a terminal tree, children in edge order.

    Without ``root`` every tree is drawn (root goals first, in creation order), followed by
    the nodes that are in no hierarchy with a summary of their edges. A node with several
    parents is drawn under each, and expanded only the first time (``(repeat, shown above)``);
    an edge back to an ancestor is marked ``(cycle)`` and not followed. ``depth`` limits the
    levels drawn below each top node (0 draws the tops only). ``marks`` maps node ids to a
    mark written at the end of their lines (``hgm show --highlight``).

    >>> g = Memory.from_document({"format": "hgm-graph/1",
    ...     "nodes": [{"id": "trip", "type": "goal", "status": "active", "content": "Trip"},
    ...               {"id": "day1", "type": "goal"}, {"id": "visit", "type": "action", "status": "pending"},
    ...               {"id": "lunch", "type": "action"}, {"id": "park", "type": "entity", "content": "Park"}],
    ...     "edges": [{"from": "trip", "to": "day1", "type": "parent_of"},
    ...               {"from": "day1", "to": "visit", "type": "parent_of"},
    ...               {"from": "day1", "to": "lunch", "type": "parent_of"},
    ...               {"from": "visit", "to": "park", "type": "related_to"}]}).graph
    >>> print("\\n".join(tree_lines(g)))
    trip [goal] active: Trip
    └── day1 [goal]
        ├── visit [action] pending
        └── lunch [action]
    <BLANKLINE>
    not in the hierarchy:
      park [entity]: Park
          related to: visit
    >>> print("\\n".join(tree_lines(g, "trip", depth=1, unicode=False)))
    trip [goal] active: Trip
    `-- day1 [goal] (2 children not shown)
    """
    glyphs = _UNICODE if unicode else _ASCII
    marks = marks or {}
    if root is not None:
        if root not in graph:
            raise KeyError(root)
        return _draw(graph, [root], depth, glyphs, marks)
    tops = _hierarchy_tops(graph)
    lines = _draw(graph, tops, depth, glyphs, marks)
    loose = [node for node in graph.nodes() if not _in_hierarchy(graph, node.id)]
    if loose:
        if lines:
            lines.append("")
        lines.append("not in the hierarchy:")
        for node in loose:
            lines.append("  " + _node_label(node, glyphs) + (f"  {marks[node.id]}" if node.id in marks else ""))
            summary = _edge_summary(graph, node.id)
            if summary:
                lines.append("      " + summary)
    return lines


def _in_hierarchy(graph: MemoryGraph, node_id: str) -> bool:
    node = graph.node(node_id)
    if node is not None and node.type == "goal":
        return True  # a goal is always drawn: a lone goal is a root of its own
    return bool(graph.in_ids(node_id, "parent_of") or graph.out_ids(node_id, "parent_of"))


def _hierarchy_tops(graph: MemoryGraph) -> list[str]:
    """Root goals in creation order, then whatever the hierarchy holds that they do not reach
    (a parentless non-goal with children; a parent_of cycle nothing enters), earliest first."""
    tops = list(graph.roots())
    reached: set[str] = set()

    def reach(start: str) -> None:
        stack = [start]
        while stack:
            node_id = stack.pop()
            if node_id in reached:
                continue
            reached.add(node_id)
            stack.extend(graph.out_ids(node_id, "parent_of"))

    for top in tops:
        reach(top)
    for node in graph.nodes():
        if node.id not in reached and _in_hierarchy(graph, node.id):
            tops.append(node.id)
            reach(node.id)
    return tops


def _draw(graph: MemoryGraph, tops: Sequence[str], depth: int | None, glyphs: _Glyphs, marks: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    expanded: set[str] = set()
    on_path: set[str] = set()
    # Explicit stack (deep hierarchies must not hit the recursion limit); "leave" entries pop
    # a node off the current path once its subtree is drawn.
    stack: list[tuple] = [("visit", top, "", "", 0) for top in reversed(tops)]
    while stack:
        entry = stack.pop()
        if entry[0] == "leave":
            on_path.discard(entry[1])
            continue
        _, node_id, first, rest, level = entry
        label = _node_label(graph.node(node_id), glyphs)
        if node_id in marks:
            label += f"  {marks[node_id]}"
        if node_id in on_path:
            lines.append(f"{first}{label} (cycle)")
            continue
        if node_id in expanded:
            lines.append(f"{first}{label} (repeat, shown above)")
            continue
        children = graph.out_ids(node_id, "parent_of")
        if children and depth is not None and level >= depth:
            hidden = "1 child" if len(children) == 1 else f"{len(children)} children"
            lines.append(f"{first}{label} ({hidden} not shown)")
            continue
        lines.append(first + label)
        expanded.add(node_id)
        on_path.add(node_id)
        stack.append(("leave", node_id))
        for position in reversed(range(len(children))):
            is_last = position == len(children) - 1
            stack.append(
                (
                    "visit",
                    children[position],
                    rest + (glyphs.last if is_last else glyphs.tee),
                    rest + (glyphs.blank if is_last else glyphs.bar),
                    level + 1,
                )
            )
    return lines


# -- commands --------------------------------------------------------------------------------


def _parse_params(text: str | None) -> dict[str, Any] | None:
    """The ``--params`` object; anything else is an ``invalid-argument`` query error.

    >>> _parse_params('{"s": "done"}')
    {'s': 'done'}
    >>> _parse_params('[1]')
    Traceback (most recent call last):
    ...
    hgm_engine.errors.QueryAnalysisError: invalid-argument at --params: --params must be a JSON object such as {"s": "pending"}, not a list
    """
    if text is None:
        return None

    def refuse(message: str) -> QueryAnalysisError:
        return QueryAnalysisError([Problem("invalid-argument", message, where="--params")])

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(f"--params is not valid JSON: {exc.msg} (character {exc.pos + 1})") from None
    if not isinstance(value, dict):
        kinds = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
        kind = kinds.get(type(value), "null")
        raise refuse(f'--params must be a JSON object such as {{"s": "pending"}}, not {kind}')
    return value


def _cmd_query(args: argparse.Namespace, out: _Output) -> int:
    try:
        params = _parse_params(args.params)
    except HGMError as err:
        return out.error(err, EXIT_QUERY_ERROR)
    if args.db is None:
        if args.as_of is not None:
            return out.failure("invalid-argument", "--as-of needs --db: a graph file has no history", where="--as-of")
        memory = _load(args.graph, out)
        if isinstance(memory, int):
            return memory
        return _run_query(memory, args, params, out)
    return _on_db(args.db, out, lambda memory: _run_query(memory, args, params, out))


def _run_query(memory: Memory, args: argparse.Namespace, params: dict[str, Any] | None, out: _Output) -> int:
    try:
        result = memory.query(args.expr, focus=args.focus, params=params, as_of=args.as_of)
    except HGMError as err:
        # An unknown snapshot or a t outside the history is bad input, not a query error.
        return out.error(err, EXIT_FAILURE if isinstance(err, RequestError) else EXIT_QUERY_ERROR)
    if out.as_json:
        out.document(result.to_json())
    else:
        out.lines(result_lines(result, unicode=out.unicode))
    return EXIT_OK


def _explain_document(expr: str) -> dict[str, Any]:
    compiled = compile(expr)
    return {
        "query": compiled.text,
        "kind": compiled.kind,
        "params": list(compiled.params),
        "uses_focus": compiled.uses_focus,
        "rules": list(compiled.optimized_plan.rules),
        "plan": describe(compiled.optimized_plan),
    }


def _cmd_explain(args: argparse.Namespace, out: _Output) -> int:
    try:
        if out.as_json:
            out.document(_explain_document(args.expr))
        else:
            out.line(compile(args.expr).explain())
    except HGMError as err:
        return out.error(err, EXIT_QUERY_ERROR)
    return EXIT_OK


def _type_counts(items: Iterable[Any]) -> dict[str, int]:
    counts = Counter(item.get("type") if isinstance(item, dict) else None for item in items)
    return {str(name): count for name, count in counts.items()}


def _cmd_validate(args: argparse.Namespace, out: _Output) -> int:
    path = args.file
    try:
        doc = _read_document(path)
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
            out.lines(_render_error(err, label=f"{path}: invalid: {_problem_count(err)}"))
        return EXIT_FAILURE
    node_types = _type_counts(doc["nodes"])
    edge_types = _type_counts(doc.get("edges", []))
    if out.as_json:
        out.document(
            {
                "valid": True,
                "file": path,
                "nodes": len(doc["nodes"]),
                "edges": len(doc.get("edges", [])),
                "node_types": node_types,
                "edge_types": edge_types,
            }
        )
        return EXIT_OK

    def breakdown(counts: dict[str, int]) -> str:
        return f" ({', '.join(f'{n} {name}' for name, n in counts.items())})" if counts else ""

    out.line(
        f"{path}: valid: {_plural(len(doc['nodes']), 'node')}{breakdown(node_types)}, "
        f"{_plural(len(doc.get('edges', [])), 'edge')}{breakdown(edge_types)}"
    )
    return EXIT_OK


def _cmd_show(args: argparse.Namespace, out: _Output) -> int:
    if args.db is None:
        if args.as_of is not None:
            return out.failure("invalid-argument", "--as-of needs --db: a graph file has no history", where="--as-of")
        memory = _load(args.graph, out)
        if isinstance(memory, int):
            return memory
        return _draw_tree(memory.graph, args.graph, args, out, memory)

    def run(memory: Memory) -> int:
        if args.as_of is None:
            return _draw_tree(memory.graph, args.db, args, out, memory)
        try:
            doc = memory.export(as_of=args.as_of)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        return _draw_tree(graph_from_document(doc, memory.schema), f"{_shown(args.db)} as of {args.as_of}", args, out, memory)

    return _on_db(args.db, out, run)


def _draw_tree(graph: MemoryGraph, source: str, args: argparse.Namespace, out: _Output, memory: Memory) -> int:
    if args.root is not None and args.root not in graph:
        return out.failure("unknown-node", f"no node {args.root!r} in {source}", where="--root")
    if args.format != "tree" or args.highlight is not None:
        from hgm_engine.render import picture, render

        options = {"root": args.root, "depth": args.depth, "highlight": args.highlight, "as_of": args.as_of}
        try:
            if args.format != "tree":
                _write_utf8(out, render(memory, args.format, title=source, **options))
                return EXIT_OK
            shown = picture(memory, history=False, **options)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE if isinstance(err, RequestError) else EXIT_QUERY_ERROR)
        found = shown.highlight
        summary = f"{found.kind} = {json.dumps(found.value)}" if found.kind in ("count", "exists") else _plural(found.count, "result")
        result_mark, path_mark = ("◀", "◁") if out.unicode else ("<==", "<..")
        legend = f"; {result_mark} result, {path_mark} on its walk" if shown.marked else ""
        out.line(f"highlight: {found.query}  ({summary}{legend})")
        if found.note:
            out.line(f"({found.note})")
        marks = {node_id: result_mark if how == "result" else path_mark for node_id, how in shown.marked.items()}
        lines = tree_lines(graph, args.root, depth=args.depth, unicode=out.unicode, marks=marks)
    else:
        lines = tree_lines(graph, args.root, depth=args.depth, unicode=out.unicode)
    out.lines(lines or ["(the graph is empty)"])
    return EXIT_OK


def _write_utf8(out: _Output, text: str) -> None:
    """A picture file is UTF-8 whatever the terminal's encoding (HTML and DOT say so)."""
    buffer = getattr(out.out, "buffer", None)
    if buffer is None:
        out.out.write(text if text.endswith("\n") else text + "\n")
        return
    out.out.flush()
    buffer.write(text.encode("utf-8") + (b"" if text.endswith("\n") else b"\n"))
    buffer.flush()


# -- the durable store (--db) ------------------------------------------------------------------


def _is_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def _shown(location: str) -> str:
    """A --db location as printed: a URL's password is never shown.

    >>> _shown("postgresql://hgm:secret@127.0.0.1:5432/memory")
    'postgresql://hgm:***@127.0.0.1:5432/memory'
    """
    import re

    return re.sub(r"(://[^:/@]+:)[^@/]*@", r"\1***@", location)


def _open_memory(path: str, *, create: bool) -> Memory:
    """The memory at ``path`` (a SQLite file or a ``postgresql://`` URL). Commands that only
    read refuse a memory that does not exist (a mistyped path must not quietly become a new,
    empty memory)."""
    from hgm_engine.store import open_store

    if not create and not _is_url(path) and not pathlib.Path(path).exists():
        raise HGMError(
            [
                Problem(
                    "io",
                    f"no memory at {path}; create one with 'hgm load FILE.json --db {path}' "
                    f"or 'hgm apply FILE.json --db {path}'",
                    where="--db",
                )
            ]
        )
    return Memory(store=open_store(path, create=create))


def _on_db(path: str, out: _Output, command: Callable[[Memory], int], *, create: bool = False) -> int:
    """Run ``command`` on the memory at ``path`` and close it; exit 1 if it cannot be opened."""
    try:
        memory = _open_memory(path, create=create)
    except HGMError as err:
        return out.error(err, EXIT_FAILURE)
    try:
        return command(memory)
    finally:
        memory.close()


def _resolve_t(memory: Memory, text: str) -> int | str:
    """``text`` as a ``t``: a number, or the ``t`` a snapshot names (unknown names are left for
    the memory to refuse, with the list of known ones)."""
    if text.lstrip("-").isdigit():
        return int(text)
    return memory.snapshots().get(text, text)


def _state_name(text: str, t: int | str) -> str:
    """``t=3``, or ``t=3 (before)`` when a snapshot name was given."""
    return f"t={t}" if str(t) == text else f"t={t} ({text})"


def _time(timestamp: float | None) -> str:
    """A commit time for people and for --json: UTC, ISO 8601, to the second.

    >>> _time(0)
    '1970-01-01T00:00:00Z'
    """
    if timestamp is None:
        return ""
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _value(value: Any, glyphs: _Glyphs = _UNICODE) -> str:
    return _shorten(json.dumps(value, ensure_ascii=False), 48, glyphs.ellipsis)


def _doc_label(node: Mapping[str, Any], glyphs: _Glyphs) -> str:
    """``id [type] status: content`` of a node in its JSON form."""
    label = f"{node.get('id')} [{node.get('type')}]"
    if node.get("status") is not None:
        label += f" {node['status']}"
    if node.get("content") is not None:
        label += ": " + _shorten(node["content"], _CONTENT_WIDTH, glyphs.ellipsis)
    return label


def _attr_changes(before: Mapping[str, Any], after: Mapping[str, Any], glyphs: _Glyphs) -> str:
    parts = []
    for key in [*before, *(k for k in after if k not in before)]:
        old = _value(before[key], glyphs) if key in before else "(unset)"
        new = _value(after[key], glyphs) if key in after else "(unset)"
        if old != new:
            parts.append(f"{key} {old}{glyphs.arrow}{new}")
    return ", ".join(parts) or "(no attribute changed)"


def change_lines(changes: Iterable[Mapping[str, Any]], *, unicode: bool = True) -> list[str]:
    """Changes (in transaction-report form, formats.md) one per line: ``+`` added, ``-``
    removed, ``~`` updated.

    >>> print("\\n".join(change_lines([
    ...     {"kind": "node_added", "id": "a9", "node": {"id": "a9", "type": "action", "status": "pending"}},
    ...     {"kind": "edge_added", "from": "day1", "to": "a9", "type": "parent_of", "attrs": {"order": 2}},
    ...     {"kind": "node_updated", "id": "a1", "before": {"day": "Mon", "slot": "am"}, "after": {"day": "Tue"}},
    ...     {"kind": "node_removed", "id": "a2", "node": {"id": "a2", "type": "action"}},
    ...     {"kind": "edge_removed", "from": "a1", "to": "e1", "type": "related_to"}], unicode=False)))
    + node a9 [action] pending
    + edge day1 -parent_of-> a9 {"order": 2}
    ~ node a1: day "Mon" -> "Tue", slot "am" -> (unset)
    - node a2 [action]
    - edge a1 -related_to-> e1
    """
    glyphs = _UNICODE if unicode else _ASCII
    lines = []
    for change in changes:
        kind = change.get("kind")
        if kind in ("node_added", "node_removed"):
            sign = "+" if kind == "node_added" else "-"
            lines.append(f"{sign} node {_doc_label(change.get('node') or {'id': change.get('id')}, glyphs)}")
        elif kind == "node_updated":
            lines.append(f"~ node {change['id']}: {_attr_changes(change['before'], change['after'], glyphs)}")
        elif kind in ("edge_added", "edge_removed", "edge_updated"):
            edge = f"edge {change['from']} -{change['type']}-> {change['to']}"
            if kind == "edge_updated":
                lines.append(f"~ {edge}: {_attr_changes(change['before'], change['after'], glyphs)}")
            else:
                attributes = f" {json.dumps(change['attrs'], ensure_ascii=False)}" if change.get("attrs") else ""
                lines.append(f"{'+' if kind == 'edge_added' else '-'} {edge}{attributes}")
        elif kind == "loaded":
            lines.append(f"+ node {change['id']} (in the initial load)")
        else:  # a kind added to the engine after this was written
            lines.append(f"* {json.dumps(dict(change), ensure_ascii=False)}")
    return lines


def _violation_lines(violations: Iterable[Any]) -> list[str]:
    lines = []
    for violation in violations:
        place = f" at {violation.node}" if violation.node is not None else ""
        lines.append(f"  {violation.constraint}{place}: {violation.message}")
    return lines


def _print_report(out: _Output, report: TransactionReport) -> int:
    """A transaction report: the JSON document, or for people what was committed (stdout) or
    why it was refused (stderr). Returns 3 when constraints refused it, else 0."""
    refused = bool(report.violations)
    if out.as_json:
        out.document(report.to_json())
        return EXIT_REFUSED if refused else EXIT_OK
    glyphs = _UNICODE if out.unicode else _ASCII
    changes = [change_to_json(change) for change in report.changes]
    by = f" by {report.author}" if report.author else ""
    base = f" (base_t {report.base_t})" if report.base_t is not None else ""
    reason = f": {report.reason}" if report.reason else ""
    if report.committed:
        out.line(f"committed t={report.t}{by}{base}{reason}")
    elif report.dry_run:
        outcome = "would be refused" if refused else "would commit"
        out.line(f"dry run{by}{base}{reason}: {outcome} {_plural(len(changes), 'change')}; nothing was written")
    if report.committed or report.dry_run:
        out.lines(change_lines(changes, unicode=out.unicode) or ["(no changes)"], indent="  ")
        if report.fired_rules:
            out.line("fired rules: " + ", ".join(report.fired_rules))
        for entry in report.dirtied:
            because = f" (because of {', '.join(entry.get('because', []))})" if entry.get("because") else ""
            out.line(f"dirtied: {entry.get('id')} {entry.get('state', '')}{because}".rstrip())
    if refused:
        heading = "dry run: refused" if report.dry_run else "refused"
        print(
            f"{heading} by constraints: {_plural(len(report.violations), 'violation')}; nothing was committed",
            file=out.err,
        )
        print("\n".join(_violation_lines(report.violations)), file=out.err)
        return EXIT_REFUSED
    return EXIT_OK


def _report_failure(out: _Output, err: HGMError, doc: Any = None, *, dry_run: bool = False) -> int:
    """A transaction that could not run (malformed, conflict, unreadable, no store): exit 1.
    With --json, a report-shaped document whose ``error`` says why (formats.md)."""
    if out.as_json:
        fields = doc if isinstance(doc, dict) else {}
        text = {key: fields.get(key) if isinstance(fields.get(key), str) else None for key in ("author", "reason")}
        base_t = fields.get("base_t")
        if isinstance(base_t, bool) or not isinstance(base_t, int):
            base_t = None
        report = TransactionReport(
            False, None, base_t, text["author"], text["reason"], dry_run=dry_run, error=err.to_json()["error"]
        )
        out.document(report.to_json())
    else:
        print("\n".join(_render_error(err)), file=out.err)
        print("nothing was committed", file=out.err)
    return EXIT_FAILURE


def _read_transaction(path: str) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        problem = Problem("invalid-json", f"{_input_name(path)} is not valid JSON: {exc.msg}", exc.lineno, exc.colno)
        raise TransactionError([problem], text) from None


def _cmd_apply(args: argparse.Namespace, out: _Output) -> int:
    doc = None
    try:
        doc = _read_transaction(args.file)
        if args.dry_run and not _is_url(args.db) and not pathlib.Path(args.db).exists():
            memory = Memory()  # a dry run against a memory not created yet leaves no file behind
        else:
            memory = _open_memory(args.db, create=True)
    except HGMError as err:
        return _report_failure(out, err, doc, dry_run=args.dry_run)
    try:
        report = memory.apply(doc, dry_run=args.dry_run)
    except HGMError as err:  # malformed, an unknown node, a conflict with base_t, a locked store
        return _report_failure(out, err, doc, dry_run=args.dry_run)
    finally:
        memory.close()
    return _print_report(out, report)


def _cmd_revert(args: argparse.Namespace, out: _Output) -> int:
    doc = {"author": args.author, "reason": args.reason}
    try:
        memory = _open_memory(args.db, create=False)
    except HGMError as err:
        return _report_failure(out, err, doc)
    try:
        report = memory.revert(args.t, author=args.author, reason=args.reason)
    except HGMError as err:  # not a commit, the initial load, changed again later
        return _report_failure(out, err, doc)
    finally:
        memory.close()
    return _print_report(out, report)


def _load_into(memory: Memory, doc: Any, author: str | None, reason: str) -> TransactionReport:
    """Load a graph document into ``memory`` as one transaction (all or nothing).

    An empty memory takes it as its initial load (``Memory.load``). A memory that already holds
    something gets the file's nodes and edges added by one transaction: the same thing, done
    here because ``Memory.load`` into a non-empty memory fails (see the issue report). Problems
    name their place in the file (``nodes[3]``, ``edges[0]``).
    """
    if memory.t == 0 and len(memory) == 0:
        return memory.load(doc, author=author, reason=reason)
    problems = check_document(doc, memory.schema)
    if not problems:
        graph = memory.graph
        for position, node in enumerate(doc["nodes"]):
            if node["id"] in graph:
                problems.append(
                    Problem("duplicate-id", f"node {node['id']!r} is already in the memory", where=f"nodes[{position}]")
                )
    if problems:
        raise GraphFileError(problems)
    ops: list[dict[str, Any]] = []
    places: list[str] = []
    for position, node in enumerate(doc["nodes"]):
        attributes = {key: value for key, value in node.items() if key not in ("id", "type")}
        # 'parent' and 'order' are op keys of add_node: attributes of those names are set after.
        shadowed = {key: attributes.pop(key) for key in ("parent", "order", "op") if key in attributes}
        ops.append({**attributes, "op": "add_node", "id": node["id"], "type": node["type"]})
        places.append(f"nodes[{position}]")
        if shadowed:
            ops.append({"op": "update_node", "id": node["id"], "set": shadowed})
            places.append(f"nodes[{position}]")
    for position, edge in enumerate(doc.get("edges", [])):
        ops.append({**edge, "op": "add_edge"})
        places.append(f"edges[{position}]")

    def place(where: str | None) -> str | None:
        if where and where.startswith("ops[") and where.endswith("]") and where[4:-1].isdigit():
            index = int(where[4:-1])
            return places[index] if index < len(places) else where
        return where

    try:
        report = memory.apply({"author": author, "reason": reason, "ops": ops})
    except TransactionError as err:
        raise GraphFileError([attrs.evolve(p, where=place(p.where)) for p in err.problems]) from None
    if not report.committed:
        raise GraphFileError(
            [Problem("constraint-violation", f"{v.constraint}: {v.message}", where=v.node) for v in report.violations]
        )
    return report


def _cmd_load(args: argparse.Namespace, out: _Output) -> int:
    name = _input_name(args.file)

    def failed(err: HGMError) -> int:
        if out.as_json:
            out.document({"committed": False, "t": None, "file": name, "db": args.db, **err.to_json()})
        elif err.category in ("io", "store"):
            print("\n".join(_render_error(err)), file=out.err)
        else:
            print("\n".join(_render_error(err, f"error: {name}: {_problem_count(err)}; nothing was loaded")), file=out.err)
        return EXIT_FAILURE

    try:
        doc = _read_document(args.file)
        memory = _open_memory(args.db, create=True)
    except HGMError as err:
        return failed(err)
    try:
        first = memory.t == 0 and len(memory) == 0
        reason = args.reason or f"load {pathlib.Path(args.file).name if args.file != '-' else 'standard input'}"
        report = _load_into(memory, doc, args.author, reason)
        totals = (len(memory), memory.graph.edge_count)
    except HGMError as err:
        return failed(err)
    finally:
        memory.close()
    nodes, edges = len(doc["nodes"]), len(doc.get("edges", []))
    if out.as_json:
        out.document(
            {
                "committed": True,
                "t": report.t,
                "file": name,
                "db": args.db,
                "nodes": nodes,
                "edges": edges,
                "total_nodes": totals[0],
                "total_edges": totals[1],
            }
        )
        return EXIT_OK
    line = f"loaded {name} into {_shown(args.db)} at t={report.t}: {_plural(nodes, 'node')}, {_plural(edges, 'edge')}"
    if not first:
        line += f" (the memory now holds {_plural(totals[0], 'node')}, {_plural(totals[1], 'edge')})"
    out.line(line)
    return EXIT_OK


def _cmd_export(args: argparse.Namespace, out: _Output) -> int:
    def run(memory: Memory) -> int:
        try:
            doc = memory.export(as_of=_resolve_t(memory, args.as_of) if args.as_of is not None else None)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if args.compact:
            out.line(json.dumps(doc, ensure_ascii=not out.unicode, separators=(",", ":")))
        else:
            out.line(json.dumps(doc, ensure_ascii=not out.unicode, indent=1))
        return EXIT_OK

    return _on_db(args.db, out, run)


def _commit_json(commit: Any) -> dict[str, Any]:
    return dict(commit.summary(), time=_time(commit.timestamp))


def _cmd_history(args: argparse.Namespace, out: _Output) -> int:
    def run(memory: Memory) -> int:
        if args.node is not None:
            return _node_history(memory, args.node)
        commits = memory.commits(args.since)
        if args.last is not None:
            commits = commits[len(commits) - args.last :] if args.last else []
        if out.as_json:
            out.document({"t": memory.t, "commits": [_commit_json(c) for c in commits]})
            return EXIT_OK
        if not commits:
            out.line(f"(no commits; the memory is at t={memory.t})")
            return EXIT_OK
        glyphs = _UNICODE if out.unicode else _ASCII
        header = ["T", "KIND", "CHANGES", "TIME", "AUTHOR", "REASON"]
        rows = []
        for commit in commits:
            count = "-" if commit.genesis else str(len(commit.changes))
            reason = _shorten(commit.reason or "", 60, glyphs.ellipsis)
            rows.append([str(commit.t), commit.kind, count, _time(commit.timestamp), commit.author or "-", reason])
        widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header) - 1)]
        for row in [header, *rows]:
            out.line("  ".join([cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]).rstrip())
        out.line(f"({_plural(len(commits), 'commit')}; the memory is at t={memory.t})")
        return EXIT_OK

    def _node_history(memory: Memory, node_id: str) -> int:
        entries = memory.history(node_id)
        if not entries:
            return out.failure("unknown-node", f"no commit in {_shown(args.db)} touched a node {node_id!r}", where="NODE_ID")
        if out.as_json:
            out.document(
                {"id": node_id, "history": [dict(entry, time=_time(entry.get("timestamp"))) for entry in entries]}
            )
            return EXIT_OK
        now = memory.node(node_id)
        state = "now: " + _doc_label(now, _UNICODE if out.unicode else _ASCII) if now else "deleted since"
        out.line(f"history of {node_id} ({_plural(len(entries), 'commit')}; {state})")
        for entry in entries:
            by = f" by {entry['author']}" if entry.get("author") else ""
            reason = f": {entry['reason']}" if entry.get("reason") else ""
            out.line(f"t={entry['t']} {entry['kind']} {_time(entry.get('timestamp'))}{by}{reason}")
            out.lines(change_lines(entry["changes"], unicode=out.unicode), indent="  ")
        return EXIT_OK

    return _on_db(args.db, out, run)


def _cmd_diff(args: argparse.Namespace, out: _Output) -> int:
    def run(memory: Memory) -> int:
        t1, t2 = _resolve_t(memory, args.t1), _resolve_t(memory, args.t2)
        try:
            changes = memory.diff(t1, t2)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document({"from": t1, "to": t2, "changes": changes})
            return EXIT_OK
        arrow = (_UNICODE if out.unicode else _ASCII).arrow
        out.line(
            f"from {_state_name(args.t1, t1)}{arrow}{_state_name(args.t2, t2)}: {_plural(len(changes), 'change')}"
        )
        out.lines(change_lines(changes, unicode=out.unicode), indent="  ")
        return EXIT_OK

    return _on_db(args.db, out, run)


def _cmd_snapshot(args: argparse.Namespace, out: _Output) -> int:
    def run(memory: Memory) -> int:
        previous = memory.snapshots().get(args.name)
        try:
            t = memory.snapshot(args.name, args.t)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document({"name": args.name, "t": t, "previous": previous})
        else:
            moved = f" (it named t={previous} before)" if previous is not None and previous != t else ""
            out.line(f"snapshot {args.name!r} names t={t}{moved}")
        return EXIT_OK

    return _on_db(args.db, out, run)


def _cmd_snapshots(args: argparse.Namespace, out: _Output) -> int:
    def run(memory: Memory) -> int:
        snapshots = memory.snapshots()
        if out.as_json:
            out.document({"t": memory.t, "snapshots": [{"name": name, "t": t} for name, t in snapshots.items()]})
            return EXIT_OK
        if not snapshots:
            out.line(f"(no snapshots; the memory is at t={memory.t})")
            return EXIT_OK
        width = max(len("NAME"), *(len(name) for name in snapshots))
        out.line(f"{'NAME'.ljust(width)}  T")
        for name, t in snapshots.items():
            out.line(f"{name.ljust(width)}  {t}")
        out.line(f"(the memory is at t={memory.t})")
        return EXIT_OK

    return _on_db(args.db, out, run)


def _cmd_constraint_add(args: argparse.Namespace, out: _Output) -> int:
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
                    f"refused: constraint {args.name!r} does not hold now: {_plural(len(violations), 'violation')}; "
                    "nothing was added",
                    file=out.err,
                )
                print("\n".join(_violation_lines(violations)), file=out.err)
            return EXIT_REFUSED
        except HGMError as err:  # the text does not parse or names what the schema does not know
            return out.error(err, EXIT_QUERY_ERROR if err.source is not None else EXIT_FAILURE)
        if out.as_json:
            out.document({"added": True, "name": args.name, "text": args.text, "replaced": replaced})
        else:
            out.line(f"{'replaced' if replaced is not None else 'added'} constraint {args.name}: {args.text}")
        return EXIT_OK

    return _on_db(args.db, out, run, create=True)


def _cmd_constraint_list(args: argparse.Namespace, out: _Output) -> int:
    def run(memory: Memory) -> int:
        constraints = memory.constraints()
        if out.as_json:
            out.document({"constraints": [{"name": name, "text": text} for name, text in constraints.items()]})
        elif not constraints:
            out.line("(no constraints besides the schema's own)")
        else:
            width = max(len(name) for name in constraints)
            out.lines(f"{name.ljust(width)}  {text}" for name, text in constraints.items())
        return EXIT_OK

    return _on_db(args.db, out, run)


def _cmd_constraint_remove(args: argparse.Namespace, out: _Output) -> int:
    def run(memory: Memory) -> int:
        try:
            text = memory.constraints().get(args.name)
            memory.remove_constraint(args.name)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document({"removed": True, "name": args.name, "text": text})
        else:
            out.line(f"removed constraint {args.name}: {text}")
        return EXIT_OK

    return _on_db(args.db, out, run)


# -- demo ------------------------------------------------------------------------------------


@attrs.frozen
class _DemoQuery:
    expr: str
    why: str
    focus: str | None = None
    params: Mapping[str, Any] | None = None


DEMO_QUERIES = (
    _DemoQuery(
        "root.subgoals[0].actions.where(status='pending')",
        "The design-card query: the pending actions of the first subgoal (day 1) of each root goal.",
    ),
    _DemoQuery(
        "#a_palace.related_entities.related_facts",
        "What is known about the places the Forbidden City visit touches?",
    ),
    _DemoQuery(
        "#f_rate.derived{1,}",
        "Repetition: everything derived from the hotel price, at any distance (stale if it changes).",
    ),
    _DemoQuery(
        "root.descendants.where(status='failed').paths()",
        "Where did something fail? The path from its root goal to each failed step.",
    ),
    _DemoQuery(
        "#a_wall_bus.latest",
        "The failed Great Wall plan was rewritten: follow 'replaces' edges to the newest version.",
    ),
    _DemoQuery(
        "#trip.descendants.where(type='action', status='pending').count()",
        "How much of the trip is still to do?",
    ),
    _DemoQuery(
        'root.descendants.where(type = "action", status = "pending", priority <= $max_priority)',
        "A parameter: urgent pending actions; the value is bound, never pasted into the text.",
        params={"max_priority": 1},
    ),
    _DemoQuery(
        "current_goal.actions.where(status != 'done')",
        "The planner is paying the deposit: what is still open in the goal around it?",
        focus="a_deposit",
    ),
)
DEMO_EXPLAIN = "root.subgoals[0].actions.where(status='pending')"
DEMO_ERROR = "root.subgoal[0].actions"


def _shell_quote(text: str) -> str:
    """Quote a query for a POSIX shell the way a person would type it."""
    if "'" not in text:
        return f"'{text}'"
    if not any(ch in text for ch in '"$`\\'):
        return f'"{text}"'
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _demo_command(query: _DemoQuery) -> str:
    command = f"$ hgm query {_shell_quote(query.expr)} --graph trip.json"
    if query.focus is not None:
        command += f" --focus {query.focus}"
    if query.params is not None:
        command += f" --params {_shell_quote(json.dumps(query.params))}"
    return command


def _heading(out: _Output, title: str) -> None:
    rule = ("─" if out.unicode else "-") * len(title)
    out.line()
    out.line(title)
    out.line(rule)


def _demo_scenario(args: argparse.Namespace, out: _Output) -> int:
    """``hgm demo NAME``: a planner scenario. ``planners`` is imported here, by name, only when
    asked for: the engine itself never imports it."""
    if args.sample:
        return out.failure("invalid-argument", "--sample prints the sample memory; it takes no scenario NAME")
    try:
        scenarios = importlib.import_module("planners.scenarios")
    except ImportError as exc:
        return out.failure("missing-package", f"hgm demo {args.name} needs the 'planners' package, shipped with hgm ({exc})")
    return scenarios.demo(args.name, db=args.db, out=out.out, err=out.err, unicode=out.unicode)


def _cmd_demo(args: argparse.Namespace, out: _Output) -> int:
    if args.name is not None:
        return _demo_scenario(args, out)
    if args.db is not None:
        return out.failure("invalid-argument", "--db keeps a scenario's memory: give a NAME (travel, orders, research)")
    doc = sample_document()
    if args.sample:
        out.line(json.dumps(doc, indent=1, ensure_ascii=not out.unicode))
        return EXIT_OK
    memory = Memory.from_document(doc)
    graph = memory.graph
    out.line("hgm demo: the memory of a planner halfway through a three-day Beijing trip")
    out.line(
        f"(the embedded sample: {_plural(len(graph), 'node')}, {_plural(graph.edge_count, 'edge')}; "
        "offline, no API key needed)"
    )
    out.line("The commands shown assume the sample was saved first: hgm demo --sample > trip.json")

    _heading(out, "The memory as a tree  (hgm show --graph trip.json)")
    out.lines(tree_lines(graph, unicode=out.unicode))

    _heading(out, "Asking it questions  (hgm query)")
    for number, query in enumerate(DEMO_QUERIES, 1):
        out.line()
        out.line(f"[{number}] {query.expr}")
        out.line(f"    {query.why}")
        out.line(f"    {_demo_command(query)}")
        result = memory.query(query.expr, focus=query.focus, params=query.params)
        out.lines(result_lines(result, unicode=out.unicode), indent="    ")

    _heading(out, "How a query runs  (hgm explain)")
    out.line(f"$ hgm explain {_shell_quote(DEMO_EXPLAIN)}")
    out.line(memory.explain(DEMO_EXPLAIN))

    _heading(out, "When a query is wrong")
    out.line(f"$ hgm query {_shell_quote(DEMO_ERROR)} --graph trip.json")
    try:
        memory.query(DEMO_ERROR)
    except HGMError as err:
        out.lines(_render_error(err))
        out.line(f"(exit code {EXIT_QUERY_ERROR}; with --json: {json.dumps(err.to_json())})")
    else:  # pragma: no cover - the demo's error query must fail
        raise AssertionError(f"the demo error query {DEMO_ERROR!r} did not fail")

    _heading(out, "Try it yourself")
    out.line("$ hgm demo --sample > trip.json")
    out.line(f"$ hgm show --graph trip.json --root d3")
    out.line(f"$ hgm query {_shell_quote(DEMO_QUERIES[0].expr)} --graph trip.json --json")
    return EXIT_OK


# -- the command line ------------------------------------------------------------------------


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, but a malformed command line exits 1: 2 is kept for query errors."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_FAILURE, f"{self.prog}: error: {message}\n")


_EXIT_CODES = """\
exit codes:
  0  success (a query that finds nothing succeeds too)
  1  unreadable, invalid or schema-breaking file; malformed transaction; conflict with
     base_t; unknown snapshot, t or node; a --db that cannot be opened; bad command line
  2  query error (syntax, unknown-name, invalid-argument, misplaced, invalid-regex,
     missing-parameter, missing-focus), including --params that is not a JSON object
     and the text of a constraint
  3  refused by constraints (apply, revert, constraint add): every violation is listed
"""

_DB_HELP = "the memory: a SQLite file (hgm load / hgm apply create it)"
_T_HELP = "a commit number t (0 is the empty memory) or a snapshot name"


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=88)


def _examples(*lines: str, note: str = "") -> str:
    text = "examples:\n" + "".join(f"  {line}\n" for line in lines)
    if note:
        text += "\n" + note.rstrip("\n") + "\n"
    return text + "\n" + _EXIT_CODES


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hgm`` command (every subcommand with its examples).

    >>> args = build_parser().parse_args(["query", "root", "--graph", "g.json", "--json"])
    >>> args.command, args.expr, args.graph, args.db, args.json
    ('query', 'root', 'g.json', None, True)
    >>> args = build_parser().parse_args(["constraint", "add", "c1", "each goal must true", "--db", "m.db"])
    >>> args.command, args.name, args.text, args.db
    ('constraint', 'c1', 'each goal must true', 'm.db')
    """
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _ArgumentParser(
        prog="hgm",
        description=_wrap(
            "hgm: hierarchical graph memory for LLM agents. Query, explain, check and draw "
            "memory graphs written in the graph file format (hgm-graph/1), and keep a durable "
            "memory in a SQLite file (--db): load it, change it only through transactions "
            "checked against constraints, and read its history, diffs and earlier states."
        ),
        epilog=_examples(
            "hgm demo",
            "hgm query \"root.subgoals[0].actions.where(status='pending')\" --graph trip.json",
            "hgm load trip.json --db memory.db",
            "hgm apply change.json --db memory.db",
            "hgm query 'root.actions' --db memory.db --as-of before-change",
            "hgm history --db memory.db",
        ),
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"hgm {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str, description: str, epilog: str, run: Callable) -> argparse.ArgumentParser:  # noqa: A002
        sub = commands.add_parser(
            name, help=help, description=_wrap(description), epilog=epilog, formatter_class=formatter
        )
        sub.set_defaults(run=run)
        return sub

    def json_flag(sub: argparse.ArgumentParser, what: str) -> None:
        sub.add_argument("--json", action="store_true", help=what)

    # -- reading ------------------------------------------------------------------------------

    query = command(
        "query",
        "evaluate a path expression on a graph file or a memory",
        "Evaluate a path expression (spec/dsl.md) on a graph file (--graph) or on the memory in "
        "a SQLite file (--db), now or as of an earlier state (--as-of, --db only), and print the "
        "nodes, count, boolean or paths it finds.",
        _examples(
            "hgm query \"root.subgoals[0].actions.where(status='pending')\" --graph trip.json",
            "hgm query '#f_price.derived{1,}.paths()' --graph trip.json --json",
            "hgm query 'current_goal.actions' --db memory.db --focus a_pay",
            "hgm query 'nodes.where(status = $s).count()' --db memory.db --params '{\"s\": \"failed\"}'",
            "hgm query '#a_forbidden' --db memory.db --as-of 3",
            "hgm query 'root.actions' --db memory.db --as-of before-change",
            note="with --json, stdout holds one document: {\"kind\": \"nodes\", \"ids\": [...], \"nodes\": [...]},\n"
            "{\"kind\": \"count\", \"value\": N}, {\"kind\": \"exists\", \"value\": B}, {\"kind\": \"paths\", \"paths\": [...]}\n"
            "or {\"error\": {\"category\": C, \"message\": M, \"line\": L, \"column\": K}}.\n"
            "An unknown --as-of snapshot or a t outside the history exits 1.",
        ),
        _cmd_query,
    )
    query.add_argument("expr", metavar="EXPR", help="the path expression")
    source = query.add_mutually_exclusive_group(required=True)
    source.add_argument("--graph", metavar="FILE.json", help="graph file to query")
    source.add_argument("--db", metavar="PATH", help=_DB_HELP)
    query.add_argument("--as-of", metavar="T", help=f"query an earlier state (--db only): {_T_HELP}")
    query.add_argument("--focus", metavar="ID", help="the node 'focus' and 'current_goal' start from")
    query.add_argument(
        "--params", metavar="JSON", help="parameter values as a JSON object, e.g. '{\"s\": \"pending\"}'"
    )
    json_flag(query, "print one JSON document (spec/dsl.md §6)")

    explain = command(
        "explain",
        "show how a path expression is planned (no graph needed)",
        "Compile a path expression against the default schema and print its optimized plan and "
        "the optimizer rules that changed it.",
        _examples("hgm explain \"root.subgoals[0].actions.where(status='pending')\"", "hgm explain '#a_hotel.results' --json"),
        _cmd_explain,
    )
    explain.add_argument("expr", metavar="EXPR", help="the path expression")
    json_flag(explain, 'print {"query", "rules", "plan": [lines], ...}')

    validate = command(
        "validate",
        "check a graph file and list every problem",
        "Check a graph file against the default schema: valid JSON, the hgm-graph/1 format, "
        "known node and edge types, unique ids, edges between existing nodes, then the schema's "
        "constraints (what loading checks). Every problem is listed with its place (nodes[3], "
        "edges[0], a node id, or line/column).",
        _examples("hgm validate trip.json", "hgm validate trip.json --json"),
        _cmd_validate,
    )
    validate.add_argument("file", metavar="FILE.json", help="graph file to check")
    json_flag(validate, 'print {"valid": ..., "problems": [...]} or the counts')

    show = command(
        "show",
        "draw the goal hierarchy as a tree, Mermaid, DOT or an HTML page",
        "Draw the parent_of hierarchy of a graph file or a memory as a tree, children in edge "
        "order, each line 'id [type] status: content'. Nodes under no parent (entities, facts, "
        "results) follow with a summary of their edges. A node with two parents appears under "
        "both; cycles are marked, never followed. --format mermaid|dot|html prints the same "
        "picture as a Mermaid flowchart, a Graphviz digraph or one self-contained HTML page "
        "(nothing fetched; click a node for its attributes and history). --highlight QUERY "
        "marks what a path expression finds and the walks that reached it.",
        _examples(
            "hgm show --graph trip.json",
            "hgm show --graph trip.json --root day1 --depth 1",
            "hgm show --db memory.db --as-of before-change",
            "hgm show --graph trip.json --highlight \"nodes.where(status = 'failed')\"",
            "hgm show --db memory.db --format html --highlight '#f_rate.derived{1,}' > memory.html",
            "hgm show --graph trip.json --format mermaid --root d1",
            note="a --highlight query that does not compile exits 2; one ending in .count() or\n"
            ".exists() marks nothing (the page says so).",
        ),
        _cmd_show,
    )
    source = show.add_mutually_exclusive_group(required=True)
    source.add_argument("--graph", metavar="FILE.json", help="graph file to draw")
    source.add_argument("--db", metavar="PATH", help=_DB_HELP)
    show.add_argument("--as-of", metavar="T", help=f"draw an earlier state (--db only): {_T_HELP}")
    show.add_argument("--root", metavar="ID", help="draw only the subtree of this node")
    show.add_argument("--depth", type=_depth, metavar="N", help="draw at most N levels below the top (0: tops only)")
    show.add_argument(
        "--format",
        choices=["tree", "mermaid", "dot", "html"],
        default="tree",
        help="tree (default), mermaid (flowchart), dot (Graphviz) or html (one self-contained page)",
    )
    show.add_argument("--highlight", metavar="QUERY", help="mark what this path expression finds and its walks")

    # -- the durable memory -------------------------------------------------------------------

    load = command(
        "load",
        "fill a memory (SQLite file) from a graph file, as one transaction",
        "Load a graph file into the memory at --db (created if missing) as one transaction: all "
        "or nothing. Into an empty memory it is the initial load (t=1); into one that holds "
        "something, the file's nodes and edges are added by one commit. A file that breaks a "
        "rule (unknown type, duplicate id, an edge to a missing node, a violated constraint) "
        "loads nothing, and every problem is listed with its place.",
        _examples(
            "hgm load trip.json --db memory.db",
            "hgm demo --sample | hgm load - --db memory.db --json",
            note='with --json: {"committed": true, "t": T, "nodes": N, "edges": E, "total_nodes": ...,\n'
            '"total_edges": ...} or {"committed": false, "t": null, "error": {..., "problems": [...]}}.',
        ),
        _cmd_load,
    )
    load.add_argument("file", metavar="FILE.json", help="graph file to load ('-': standard input)")
    load.add_argument("--db", required=True, metavar="PATH", help="the memory (a SQLite file; created if missing)")
    load.add_argument("--author", metavar="A", help="who loads it (kept in the history)")
    load.add_argument("--reason", metavar="R", help="why (kept in the history; default 'load FILE')")
    json_flag(load, "print one JSON document: t and counts, or the problems")

    export = command(
        "export",
        "write a memory (now or as of T) as a graph file on standard output",
        "Write the memory at --db as a graph file (hgm-graph/1) on standard output, nodes and "
        "edges in creation order; load -> export -> load gives an equal graph. --as-of writes an "
        "earlier state.",
        _examples(
            "hgm export --db memory.db > trip.json",
            "hgm export --db memory.db --as-of before-change --compact",
        ),
        _cmd_export,
    )
    export.add_argument("--db", required=True, metavar="PATH", help=_DB_HELP)
    export.add_argument("--as-of", metavar="T", help=f"the state to export: {_T_HELP}")
    export.add_argument("--compact", action="store_true", help="one line instead of indented JSON")

    apply = command(
        "apply",
        "apply a transaction file to a memory (all or nothing)",
        "Apply a transaction file (formats.md: author, reason, optional base_t, ops) to the "
        "memory at --db (created if missing). Ops apply in order; constraints are checked on the "
        "final state and a transaction that breaks any is refused whole with every violation "
        "listed. With base_t, a transaction touching something committed after base_t is "
        "refused as a conflict. --dry-run shows what would happen and writes nothing.",
        _examples(
            "hgm apply change.json --db memory.db",
            "hgm apply change.json --db memory.db --dry-run",
            "echo '{\"ops\": [{\"op\": \"update_node\", \"id\": \"a1\", \"set\": {\"status\": \"done\"}}]}' | hgm apply - --db memory.db --json",
            note="with --json, stdout holds the transaction report (formats.md): {\"committed\": true, \"t\": T,\n"
            "\"changes\": [...], \"violations\": [], ...}; refused: \"committed\": false, \"t\": null and the\n"
            "violations (exit 3); malformed or conflicting: the same shape with \"error\": {\"category\",\n"
            "\"message\", ...} (exit 1). Without --json: the commit and its changes one per line, or\n"
            "the violations / the error on standard error.",
        ),
        _cmd_apply,
    )
    apply.add_argument("file", metavar="FILE.json", help="transaction file ('-': standard input)")
    apply.add_argument("--db", required=True, metavar="PATH", help="the memory (a SQLite file; created if missing)")
    apply.add_argument("--dry-run", action="store_true", help="check and report, commit nothing")
    json_flag(apply, "print the transaction report (formats.md)")

    history = command(
        "history",
        "list the commits of a memory, or those that touched one node",
        "Without NODE_ID: every commit (t, kind, number of changes, time in UTC, author, "
        "reason), oldest first. With NODE_ID: each commit that touched that node (its attributes "
        "or its edges) with what it changed.",
        _examples(
            "hgm history --db memory.db",
            "hgm history --db memory.db --last 5 --json",
            "hgm history a_forbidden --db memory.db",
        ),
        _cmd_history,
    )
    history.add_argument("node", nargs="?", metavar="NODE_ID", help="show the history of this node only")
    history.add_argument("--db", required=True, metavar="PATH", help=_DB_HELP)
    history.add_argument("--since", type=_depth, default=0, metavar="T", help="only commits after t=T")
    history.add_argument("--last", type=_depth, metavar="N", help="only the last N commits")
    json_flag(history, 'print {"t", "commits": [...]} or {"id", "history": [...]}')

    diff = command(
        "diff",
        "what changed between two states of a memory",
        "The net changes from state T1 to state T2 (each a commit number or a snapshot name), one "
        "per node or edge: + added, - removed, ~ updated (attribute: before -> after). T1 later "
        "than T2 shows the way back.",
        _examples(
            "hgm diff 1 4 --db memory.db",
            "hgm diff before-change 5 --db memory.db --json",
        ),
        _cmd_diff,
    )
    diff.add_argument("t1", metavar="T1", help=_T_HELP)
    diff.add_argument("t2", metavar="T2", help=_T_HELP)
    diff.add_argument("--db", required=True, metavar="PATH", help=_DB_HELP)
    json_flag(diff, 'print {"from": T1, "to": T2, "changes": [...]}')

    revert = command(
        "revert",
        "undo one commit by appending a new one",
        "Append a commit that undoes commit T (history is never rewritten). Refused as a "
        "conflict (exit 1) when a later commit changed the same nodes or edges again, and by "
        "constraints (exit 3) when the undone state breaks one. The initial load cannot be "
        "reverted.",
        _examples(
            "hgm revert 4 --db memory.db",
            "hgm revert 4 --db memory.db --author me --reason 'wrong day' --json",
            note="output and --json document as for hgm apply.",
        ),
        _cmd_revert,
    )
    revert.add_argument("t", type=_commit_number, metavar="T", help="the commit to undo")
    revert.add_argument("--db", required=True, metavar="PATH", help=_DB_HELP)
    revert.add_argument("--author", metavar="A", help="who reverts (kept in the history)")
    revert.add_argument("--reason", metavar="R", help="why (default 'revert t=T')")
    json_flag(revert, "print the transaction report (formats.md)")

    snapshot = command(
        "snapshot",
        "name a state of a memory",
        "Give the current state (or --t T) a name that --as-of, diff and export accept. Naming an "
        "existing snapshot again moves it. A name cannot be a number.",
        _examples("hgm snapshot before-change --db memory.db", "hgm snapshot day1-planned --t 3 --db memory.db"),
        _cmd_snapshot,
    )
    snapshot.add_argument("name", metavar="NAME", help="the snapshot's name")
    snapshot.add_argument("--db", required=True, metavar="PATH", help=_DB_HELP)
    snapshot.add_argument("--t", metavar="T", help=f"the state to name (default: the current one): {_T_HELP}")
    json_flag(snapshot, 'print {"name", "t", "previous"}')

    snapshots = command(
        "snapshots",
        "list the named states of a memory",
        "List every snapshot name with the t it names, oldest state first.",
        _examples("hgm snapshots --db memory.db"),
        _cmd_snapshots,
    )
    snapshots.add_argument("--db", required=True, metavar="PATH", help=_DB_HELP)
    json_flag(snapshots, 'print {"t", "snapshots": [{"name", "t"}, ...]}')

    constraint = commands.add_parser(
        "constraint",
        help="add, list or remove a memory's constraints",
        description=_wrap(
            "A constraint is written in the path language: 'each TYPE [where COND] must COND'. "
            "Every later transaction is checked against it and refused whole when it breaks it."
        ),
        epilog=_examples(
            "hgm constraint add done_has_result \"each action where status = 'done' must exists(results)\" --db memory.db",
            "hgm constraint list --db memory.db",
            "hgm constraint remove done_has_result --db memory.db",
        ),
        formatter_class=formatter,
    )
    actions = constraint.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add",
        help="add a constraint (it must already hold)",
        description=_wrap(
            "Add (or replace) the constraint NAME. It must hold in the current state: otherwise "
            "every violation is listed, nothing is added and the exit code is 3. A TEXT that "
            "does not parse, or names what the schema does not know, is shown with a caret "
            "under the place (exit 2)."
        ),
        epilog=_examples(
            "hgm constraint add done_has_result \"each action where status = 'done' must exists(results)\" --db memory.db",
            "hgm constraint add day_set \"each action where status = 'pending' must exists(day)\" --db memory.db --json",
        ),
        formatter_class=formatter,
    )
    add.add_argument("name", metavar="NAME", help="the constraint's name")
    add.add_argument("text", metavar="TEXT", help="each TYPE [where COND] must COND")
    add.add_argument("--db", required=True, metavar="PATH", help="the memory (a SQLite file; created if missing)")
    json_flag(add, 'print {"added", "name", "text", ...} (with "violations" when refused)')
    add.set_defaults(run=_cmd_constraint_add)
    listing = actions.add_parser(
        "list",
        help="list the constraints added to a memory",
        description="List the constraints added to the memory (the schema's built-in rules always apply too).",
        epilog=_examples("hgm constraint list --db memory.db --json"),
        formatter_class=formatter,
    )
    listing.add_argument("--db", required=True, metavar="PATH", help=_DB_HELP)
    json_flag(listing, 'print {"constraints": [{"name", "text"}, ...]}')
    listing.set_defaults(run=_cmd_constraint_list)
    remove = actions.add_parser(
        "remove",
        help="remove a constraint",
        description="Remove the constraint NAME; an unknown name exits 1.",
        epilog=_examples("hgm constraint remove done_has_result --db memory.db"),
        formatter_class=formatter,
    )
    remove.add_argument("name", metavar="NAME", help="the constraint's name")
    remove.add_argument("--db", required=True, metavar="PATH", help=_DB_HELP)
    json_flag(remove, 'print {"removed", "name", "text"}')
    remove.set_defaults(run=_cmd_constraint_remove)

    # -- the tour -----------------------------------------------------------------------------

    demo = command(
        "demo",
        "a guided tour on the embedded sample memory (offline)",
        "Load the sample memory shipped with hgm (a three-day Beijing trip and an order-status "
        "goal), draw it, run illustrative queries with their results, explain one, and show what "
        "a query error looks like. Needs no network and no API key.",
        _examples(
            "hgm demo",
            "hgm demo --sample > trip.json && hgm show --graph trip.json",
            "hgm demo travel --db trip.db && hgm history --db trip.db",
            note="NAME runs a planner scenario end to end (HTN planner, simulated tools, offline):\n"
            "travel, orders or research; --db PATH keeps its memory (a new SQLite file).",
        ),
        _cmd_demo,
    )
    demo.add_argument("name", nargs="?", metavar="NAME", help="a planner scenario: travel, orders or research")
    demo.add_argument("--db", metavar="PATH", help="with NAME: keep the scenario's memory in this new SQLite file")
    demo.add_argument("--sample", action="store_true", help="print the sample memory (a graph file) and stop")

    from hgm_engine.cli import rules as cli_rules

    cli_rules.register(sys.modules[__name__], commands, command, json_flag)
    from hgm_engine.cli import paths as cli_paths

    cli_paths.register(sys.modules[__name__], commands, command, json_flag)
    from hgm_engine.cli import llm as cli_llm

    cli_llm.register(sys.modules[__name__], commands, command, json_flag)

    # The servers parse their own options (main() hands them the rest of the command line);
    # they are listed here so that `hgm --help` shows them.
    for name, text in SERVER_COMMANDS.items():
        commands.add_parser(name, help=text, add_help=False)
    return parser


def _commit_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a commit number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"commits are numbered from 1, not {value}")
    return value


def _depth(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


SERVER_COMMANDS = {
    "serve": "serve a memory over REST with an OpenAPI document (hgm serve --db PATH; --help for options)",
    "mcp": "serve a memory as Model Context Protocol tools on stdio (hgm mcp --db PATH)",
}
_SERVER_MODULES = {"serve": "server.rest", "mcp": "server.mcp_server"}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hgm`` command with ``argv`` (``sys.argv[1:]`` if None); returns the exit code.

    >>> main(["query", "#nope.exists()", "--graph", "missing.json", "--json"])
    {"error": {"category": "io", "message": "cannot read missing.json: No such file or directory", "line": null, "column": null}}
    1
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments and arguments[0] in _SERVER_MODULES:
        # Imported only here: the servers need the 'serve' extra (FastAPI, uvicorn, mcp).
        try:
            module = importlib.import_module(f"hgm_engine.{_SERVER_MODULES[arguments[0]]}")
        except ImportError as exc:
            print(f"hgm {arguments[0]}: needs the server extra: pip install 'hgm[serve]' ({exc})", file=sys.stderr)
            return EXIT_FAILURE
        try:
            return module.main(arguments[1:])
        except SystemExit as exit_:
            return exit_.code if isinstance(exit_.code, int) else EXIT_FAILURE
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, a malformed command line
        return exit_.code if isinstance(exit_.code, int) else EXIT_FAILURE
    out = _Output(sys.stdout, sys.stderr, as_json=getattr(args, "json", False))
    try:
        code = args.run(args, out)
        out.out.flush()
        return code
    except BrokenPipeError:
        # The reader went away (``hgm demo | head``): stop quietly, as Unix tools do.
        _silence_stdout()
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130


def _silence_stdout() -> None:
    try:
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no real file behind stdout
        pass


if __name__ == "__main__":
    sys.exit(main())
