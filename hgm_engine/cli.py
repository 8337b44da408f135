"""The ``hgm`` command: query, explain, validate and show a memory graph from a terminal.

::

    hgm query "root.subgoals[0].actions.where(status='pending')" --graph trip.json
    hgm query "#a_hotel.results" --graph trip.json --json
    hgm explain "root.descendants.where(status='failed').paths()"
    hgm validate trip.json
    hgm show --graph trip.json --root d1 --depth 2
    hgm demo

``hgm --help`` lists the commands and ``hgm COMMAND --help`` explains one, with examples.

Exit codes (the same for every command):

- ``0`` success. A query that finds nothing succeeds too (an empty list, 0 or false).
- ``1`` a graph file that cannot be read, is not JSON or breaks the schema (``hgm validate``
  finding problems included), an unknown ``--root``, a malformed command line, or any other
  failure.
- ``2`` a query error: any :class:`~hgm_engine.errors.HGMError` raised while compiling,
  binding or running a query (``syntax``, ``unknown-name``, ``invalid-argument``,
  ``misplaced``, ``invalid-regex``, ``missing-parameter``, ``missing-focus``). A ``--params``
  value that is not a JSON object is an ``invalid-argument`` query error as well.

With ``--json``, once the command line has been parsed, standard output carries exactly one
JSON document whatever happens: the result, or ``{"error": {"category", "message", "line",
"column", ...}}`` (spec/dsl.md §6). Without it, results go to standard output for people and
errors to standard error with their category, position and a caret under the place.

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
import importlib.resources
import json
import pathlib
import sys
import textwrap
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence, TextIO

import attrs

from . import __version__
from .errors import GraphFileError, HGMError, Problem, QueryAnalysisError
from .graph import MemoryGraph, Node
from .memory import Memory
from .plan import describe
from .query import QueryResult, compile
from .store.graphfile import check_document, parse_graph_text

__all__ = [
    "main",
    "build_parser",
    "sample_document",
    "tree_lines",
    "result_lines",
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_QUERY_ERROR",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_QUERY_ERROR = 2

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


def _read_document(path: str) -> Any:
    """The JSON document of a graph file; GraphFileError (``io`` or ``invalid-json``) if not."""
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise GraphFileError([Problem("io", f"cannot read {path}: {reason}")]) from None
    return parse_graph_text(text, "not valid JSON")


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
) -> list[str]:
    """The ``parent_of`` hierarchy as a terminal tree, children in edge order.

    Without ``root`` every tree is drawn (root goals first, in creation order), followed by
    the nodes that are in no hierarchy with a summary of their edges. A node with several
    parents is drawn under each, and expanded only the first time (``(repeat, shown above)``);
    an edge back to an ancestor is marked ``(cycle)`` and not followed. ``depth`` limits the
    levels drawn below each top node (0 draws the tops only).

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
    if root is not None:
        if root not in graph:
            raise KeyError(root)
        return _draw(graph, [root], depth, glyphs)
    tops = _hierarchy_tops(graph)
    lines = _draw(graph, tops, depth, glyphs)
    loose = [node for node in graph.nodes() if not _in_hierarchy(graph, node.id)]
    if loose:
        if lines:
            lines.append("")
        lines.append("not in the hierarchy:")
        for node in loose:
            lines.append("  " + _node_label(node, glyphs))
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


def _draw(graph: MemoryGraph, tops: Sequence[str], depth: int | None, glyphs: _Glyphs) -> list[str]:
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
    memory = _load(args.graph, out)
    if isinstance(memory, int):
        return memory
    try:
        result = memory.query(args.expr, focus=args.focus, params=params)
    except HGMError as err:
        return out.error(err, EXIT_QUERY_ERROR)
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
    memory = _load(args.graph, out)
    if isinstance(memory, int):
        return memory
    if args.root is not None and args.root not in memory.graph:
        return out.failure("unknown-node", f"no node {args.root!r} in {args.graph}", where="--root")
    lines = tree_lines(memory.graph, args.root, depth=args.depth, unicode=out.unicode)
    out.lines(lines or ["(the graph is empty)"])
    return EXIT_OK


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


def _cmd_demo(args: argparse.Namespace, out: _Output) -> int:
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
  1  unreadable, invalid or schema-breaking graph file; bad command line; other failures
  2  query error (syntax, unknown-name, invalid-argument, misplaced, invalid-regex,
     missing-parameter, missing-focus), including --params that is not a JSON object
"""


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=88)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hgm`` command (every subcommand with its examples).

    >>> args = build_parser().parse_args(["query", "root", "--graph", "g.json", "--json"])
    >>> args.command, args.expr, args.graph, args.json
    ('query', 'root', 'g.json', True)
    """
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _ArgumentParser(
        prog="hgm",
        description=_wrap(
            "hgm: hierarchical graph memory for LLM agents. Query, explain, check and "
            "draw memory graphs written in the graph file format (hgm-graph/1)."
        ),
        epilog="examples:\n"
        "  hgm demo\n"
        "  hgm query \"root.subgoals[0].actions.where(status='pending')\" --graph trip.json\n"
        "  hgm explain \"#f_price.derived{1,}.paths()\"\n"
        "  hgm validate trip.json\n"
        "  hgm show --graph trip.json --depth 2\n\n" + _EXIT_CODES,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"hgm {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    query = commands.add_parser(
        "query",
        help="evaluate a path expression on a graph file",
        description=_wrap(
            "Evaluate a path expression (spec/dsl.md) on a graph file and print the "
            "nodes, count, boolean or paths it finds."
        ),
        epilog="examples:\n"
        "  hgm query \"root.subgoals[0].actions.where(status='pending')\" --graph trip.json\n"
        "  hgm query '#f_price.derived{1,}.paths()' --graph trip.json --json\n"
        "  hgm query 'current_goal.actions' --graph trip.json --focus a_pay\n"
        "  hgm query 'nodes.where(status = $s).count()' --graph trip.json --params '{\"s\": \"failed\"}'\n\n"
        "with --json, stdout holds one document: {\"kind\": \"nodes\", \"ids\": [...], \"nodes\": [...]},\n"
        "{\"kind\": \"count\", \"value\": N}, {\"kind\": \"exists\", \"value\": B}, {\"kind\": \"paths\", \"paths\": [...]}\n"
        "or {\"error\": {\"category\": C, \"message\": M, \"line\": L, \"column\": K}}.\n\n" + _EXIT_CODES,
        formatter_class=formatter,
    )
    query.add_argument("expr", metavar="EXPR", help="the path expression")
    query.add_argument("--graph", required=True, metavar="FILE.json", help="graph file to query")
    query.add_argument("--focus", metavar="ID", help="the node 'focus' and 'current_goal' start from")
    query.add_argument(
        "--params", metavar="JSON", help="parameter values as a JSON object, e.g. '{\"s\": \"pending\"}'"
    )
    query.add_argument("--json", action="store_true", help="print one JSON document (spec/dsl.md §6)")
    query.set_defaults(run=_cmd_query)

    explain = commands.add_parser(
        "explain",
        help="show how a path expression is planned (no graph needed)",
        description=_wrap(
            "Compile a path expression against the default schema and print its "
            "optimized plan and the optimizer rules that changed it."
        ),
        epilog="examples:\n"
        "  hgm explain \"root.subgoals[0].actions.where(status='pending')\"\n"
        "  hgm explain '#a_hotel.results' --json\n\n" + _EXIT_CODES,
        formatter_class=formatter,
    )
    explain.add_argument("expr", metavar="EXPR", help="the path expression")
    explain.add_argument("--json", action="store_true", help='print {"query", "rules", "plan": [lines], ...}')
    explain.set_defaults(run=_cmd_explain)

    validate = commands.add_parser(
        "validate",
        help="check a graph file and list every problem",
        description=_wrap(
            "Check a graph file against the default schema: valid JSON, the "
            "hgm-graph/1 format, known node and edge types, unique ids, edges between existing "
            "nodes, then the schema's constraints (what loading checks). Every problem is listed "
            "with its place (nodes[3], edges[0], a node id, or line/column)."
        ),
        epilog="examples:\n"
        "  hgm validate trip.json\n"
        "  hgm validate trip.json --json\n\n" + _EXIT_CODES,
        formatter_class=formatter,
    )
    validate.add_argument("file", metavar="FILE.json", help="graph file to check")
    validate.add_argument("--json", action="store_true", help='print {"valid": ..., "problems": [...]} or the counts')
    validate.set_defaults(run=_cmd_validate)

    show = commands.add_parser(
        "show",
        help="draw the goal hierarchy as a tree",
        description=_wrap(
            "Draw the parent_of hierarchy as a tree, children in edge order, each "
            "line 'id [type] status: content'. Nodes under no parent (entities, facts, results) "
            "follow with a summary of their edges. A node with two parents appears under both; "
            "cycles are marked, never followed."
        ),
        epilog="examples:\n"
        "  hgm show --graph trip.json\n"
        "  hgm show --graph trip.json --root day1 --depth 1\n\n" + _EXIT_CODES,
        formatter_class=formatter,
    )
    show.add_argument("--graph", required=True, metavar="FILE.json", help="graph file to draw")
    show.add_argument("--root", metavar="ID", help="draw only the subtree of this node")
    show.add_argument("--depth", type=_depth, metavar="N", help="draw at most N levels below the top (0: tops only)")
    show.add_argument("--format", choices=["tree"], default="tree", help="output format (default: tree)")
    show.set_defaults(run=_cmd_show)

    demo = commands.add_parser(
        "demo",
        help="a guided tour on the embedded sample memory (offline)",
        description=_wrap(
            "Load the sample memory shipped with hgm (a three-day Beijing trip and an "
            "order-status goal), draw it, run illustrative queries with their results, explain "
            "one, and show what a query error looks like. Needs no network and no API key."
        ),
        epilog="examples:\n"
        "  hgm demo\n"
        "  hgm demo --sample > trip.json && hgm show --graph trip.json\n\n" + _EXIT_CODES,
        formatter_class=formatter,
    )
    demo.add_argument("--sample", action="store_true", help="print the sample memory (a graph file) and stop")
    demo.set_defaults(run=_cmd_demo)
    return parser


def _depth(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hgm`` command with ``argv`` (``sys.argv[1:]`` if None); returns the exit code.

    >>> main(["query", "#nope.exists()", "--graph", "missing.json", "--json"])
    {"error": {"category": "io", "message": "cannot read missing.json: No such file or directory", "line": null, "column": null}}
    1
    """
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
