"""The durable memory (``--db``): ``hgm load``, ``export``, ``apply``, ``history``, ``diff``,
``revert``, ``snapshot`` and ``snapshots``. A memory changes only through transactions; its
history, diffs and earlier states can be read back.

>>> import os, tempfile
>>> from hgm_engine.cli import main, sample_document
>>> folder = tempfile.mkdtemp()
>>> trip, db = os.path.join(folder, "trip.json"), os.path.join(folder, "memory.db")
>>> _ = open(trip, "w").write(json.dumps(sample_document()))
>>> main(["load", trip, "--db", db])  # doctest: +ELLIPSIS
loaded /.../trip.json into /.../memory.db at t=1: 32 nodes, 43 edges
0
>>> main(["snapshot", "start", "--db", db])
snapshot 'start' names t=1
0
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
from typing import Any


from hgm_engine.cli.arguments import (
    DB_HELP,
    NEW_DB_HELP,
    T_HELP,
    Commands,
    add_command,
    add_json_flag,
    commit_number,
    examples,
    non_negative,
    state,
)
from hgm_engine.cli.common import (
    EXIT_FAILURE,
    EXIT_OK,
    Output,
    input_name,
    is_url,
    on_db,
    open_memory,
    print_report,
    problem_count,
    read_document,
    read_text,
    render_error,
    report_failure,
    resolve_t,
    shown,
)
from hgm_engine.cli.progress import ProgressDisplay
from hgm_engine.errors import GraphFileError, HGMError, Problem, TransactionError
from hgm_engine.memory import Memory
from hgm_engine.model import parse_json
from hgm_engine.render.text import change_lines, document_label, json_terminal_safe, plural, shorten, terminal_safe
from hgm_engine.store import check_document
from hgm_engine.txn import TransactionReport, apply_op, parse_op

__all__ = ["register", "load_into", "commit_time"]


# -- load and export ---------------------------------------------------------------------------


def load_into(memory: Memory, doc: Any, author: str | None, reason: str, progress: Any = None) -> TransactionReport:
    """Load a graph document into ``memory`` as one transaction (all or nothing).

    An empty memory takes it as its initial load (``Memory.load``). A memory that already holds
    something gets the file's nodes and edges added by one transaction: the same thing, done
    here because ``Memory.load`` into a non-empty memory fails (see the issue report). Problems
    name their place in the file (``nodes[3]``, ``edges[0]``). ``progress(phase, done, total)``
    hears of the work (:mod:`hgm_engine.cli.progress` draws it).

    >>> memory = Memory()
    >>> load_into(memory, {"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}, None, "first").t
    1
    >>> load_into(memory, {"format": "hgm-graph/1", "nodes": [{"id": "h", "type": "goal"}], "edges": []}, None, "more").t
    2
    >>> load_into(memory, {"format": "hgm-graph/1", "nodes": [{"id": "h", "type": "goal"}], "edges": []}, None, "again")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.GraphFileError: duplicate-id at nodes[0]: node id 'h' is already in the memory
    """
    if memory.t == 0 and len(memory) == 0:
        return memory.load(doc, author=author, reason=reason, progress=progress)
    if progress is not None:
        progress("checking the graph", 0, None)
    # The memory's nodes: the file may not reuse their ids, and its edges may point at them.
    problems = check_document(doc, memory.schema, existing=memory.graph.node_map())
    if problems:
        raise GraphFileError(problems)
    # Parsed and applied as ops one by one (not as one transaction document): a file may hold
    # more records than a transaction may hold ops, and each error names its record.
    ops: list[tuple[Any, str]] = []
    try:
        for position, node in enumerate(doc.get("nodes", [])):
            where = f"nodes[{position}]"
            attributes = {key: value for key, value in node.items() if key not in ("id", "type")}
            # 'parent' and 'order' are op keys of add_node: attributes of those names are set after.
            shadowed = {key: attributes.pop(key) for key in ("parent", "order", "op") if key in attributes}
            ops.append((parse_op({**attributes, "op": "add_node", "id": node["id"], "type": node["type"]}, where), where))
            if shadowed:
                ops.append((parse_op({"op": "update_node", "id": node["id"], "set": shadowed}, where), where))
        for position, edge in enumerate(doc.get("edges", [])):
            where = f"edges[{position}]"
            ops.append((parse_op({**edge, "op": "add_edge"}, where), where))

        def build(overlay: Any, ctx: Any) -> list[str]:
            created: list[str] = []
            for count, (op, where) in enumerate(ops, 1):
                created.extend(apply_op(overlay, op, ctx, where))
                if progress is not None:
                    progress("adding nodes and edges", count, len(ops))
            if progress is not None:
                progress("checking constraints and writing", 0, None)
            return created

        report = memory.commit_built(build, author=author, reason=reason)
    except TransactionError as err:
        raise GraphFileError(list(err.problems)) from None
    if not report.committed:
        raise GraphFileError(
            [Problem("constraint-violation", f"{v.constraint}: {v.message}", where=v.node) for v in report.violations]
        )
    return report


def _load(args: argparse.Namespace, out: Output) -> int:
    name = input_name(args.file)

    def failed(err: HGMError) -> int:
        if out.as_json:
            out.document({"committed": False, "t": None, "file": name, "db": args.db, **err.to_json()})
        elif err.category in ("io", "store"):
            out.note("\n".join(render_error(err)))
        else:
            out.note("\n".join(render_error(err, f"error: {name}: {problem_count(err)}; nothing was loaded")))
        return EXIT_FAILURE

    with ProgressDisplay(out.err) as display:  # on a terminal only: a pipe gets no progress
        progress = display.callback
        try:
            if progress is not None:
                progress(f"reading {name}", 0, None)
            doc = read_document(args.file)
            memory = open_memory(args.db, create=True)
        except HGMError as err:
            return failed(err)
        try:
            first = memory.t == 0 and len(memory) == 0
            reason = args.reason or f"load {pathlib.Path(args.file).name if args.file != '-' else 'standard input'}"
            report = load_into(memory, doc, args.author, reason, progress)
            totals = (len(memory), memory.graph.edge_count)
        except HGMError as err:
            return failed(err)
        finally:
            memory.close()
    nodes, edges = len(doc.get("nodes", [])), len(doc.get("edges", []))
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
    line = f"loaded {name} into {shown(args.db)} at t={report.t}: {plural(nodes, 'node')}, {plural(edges, 'edge')}"
    if not first:
        line += f" (the memory now holds {plural(totals[0], 'node')}, {plural(totals[1], 'edge')})"
    out.line(line)
    return EXIT_OK


def _export(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            doc = memory.export(as_of=resolve_t(memory, args.as_of) if args.as_of is not None else None)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        # The same JSON value, with what JSON leaves raw (DEL, C1, bidi controls) as \u escapes.
        if args.compact:
            out.line(json_terminal_safe(json.dumps(doc, ensure_ascii=not out.unicode, separators=(",", ":"))))
        else:
            out.line(json_terminal_safe(json.dumps(doc, ensure_ascii=not out.unicode, indent=1)))
        return EXIT_OK

    return on_db(args.db, out, run)


# -- transactions --------------------------------------------------------------------------------


def _read_transaction(path: str) -> Any:
    text = read_text(path)
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        problem = Problem("invalid-json", f"{input_name(path)} is not valid JSON: {exc.msg}", exc.lineno, exc.colno)
        raise TransactionError([problem], text) from None


def _apply(args: argparse.Namespace, out: Output) -> int:
    doc = None
    try:
        doc = _read_transaction(args.file)
        if args.dry_run and not is_url(args.db) and not pathlib.Path(args.db).exists():
            memory = Memory()  # a dry run against a memory not created yet leaves no file behind
        else:
            memory = open_memory(args.db, create=True)
    except HGMError as err:
        return report_failure(out, err, doc, dry_run=args.dry_run)
    if args.max_ops is not None:
        memory.max_ops = args.max_ops
    try:
        report = memory.apply(doc, dry_run=args.dry_run)
    except HGMError as err:  # malformed, an unknown node, a conflict with base_t, a locked store
        return report_failure(out, err, doc, dry_run=args.dry_run)
    finally:
        memory.close()
    return print_report(out, report)


def _revert(args: argparse.Namespace, out: Output) -> int:
    doc = {"author": args.author, "reason": args.reason}
    try:
        memory = open_memory(args.db, create=False)
    except HGMError as err:
        return report_failure(out, err, doc)
    try:
        report = memory.revert(args.t, author=args.author, reason=args.reason)
    except HGMError as err:  # not a commit, the initial load, changed again later
        return report_failure(out, err, doc)
    finally:
        memory.close()
    return print_report(out, report)


# -- history, diffs and snapshots ------------------------------------------------------------------


def commit_time(timestamp: float | None) -> str:
    """A commit time for people and for --json: UTC, ISO 8601, to the second.

    >>> commit_time(0)
    '1970-01-01T00:00:00Z'
    """
    if timestamp is None:
        return ""
    return datetime.datetime.fromtimestamp(timestamp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _state_name(text: str, t: int | str) -> str:
    """``t=3``, or ``t=3 (before)`` when a snapshot name was given."""
    return f"t={t}" if str(t) == text else f"t={t} ({text})"


def _commit_json(commit: Any) -> dict[str, Any]:
    return dict(commit.summary(), time=commit_time(commit.timestamp))


def _history(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        if args.node is not None:
            return node_history(memory, args.node)
        try:  # a number is taken as it is (past the last t: no commits); a name must be a snapshot
            since = int(args.since) if args.since.lstrip("-").isdigit() else memory.resolve_t(args.since)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if since < 0:
            return out.failure("invalid-argument", f"--since must be 0 or more, not {since}", where="--since")
        commits = memory.commits(since)
        if args.last is not None:
            commits = commits[len(commits) - args.last :] if args.last else []
        if out.as_json:
            out.document({"t": memory.t, "commits": [_commit_json(c) for c in commits]})
            return EXIT_OK
        if not commits:
            out.line(f"(no commits; the memory is at t={memory.t})")
            return EXIT_OK
        header = ["T", "KIND", "CHANGES", "TIME", "AUTHOR", "REASON"]
        rows = []
        for commit in commits:
            count = "-" if commit.genesis else str(len(commit.changes))
            reason = terminal_safe(shorten(commit.reason or "", 60, out.glyphs.ellipsis), lines=False)
            author = terminal_safe(commit.author or "-", lines=False)
            rows.append([str(commit.t), commit.kind, count, commit_time(commit.timestamp), author, reason])
        widths = [max(len(header[i]), *(len(row[i]) for row in rows)) for i in range(len(header) - 1)]
        for row in [header, *rows]:
            out.line("  ".join([cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]).rstrip())
        out.line(f"({plural(len(commits), 'commit')}; the memory is at t={memory.t})")
        return EXIT_OK

    def node_history(memory: Memory, node_id: str) -> int:
        entries = memory.history(node_id)
        if not entries:
            return out.failure("unknown-node", f"no commit in {shown(args.db)} touched a node {node_id!r}", where="NODE_ID")
        if out.as_json:
            out.document(
                {"id": node_id, "history": [dict(entry, time=commit_time(entry.get("timestamp"))) for entry in entries]}
            )
            return EXIT_OK
        now = memory.node(node_id)
        state = "now: " + document_label(now, out.glyphs) if now else "deleted since"
        out.line(f"history of {terminal_safe(node_id, lines=False)} ({plural(len(entries), 'commit')}; {state})")
        for entry in entries:
            by = f" by {terminal_safe(entry['author'], lines=False)}" if entry.get("author") else ""
            reason = f": {terminal_safe(entry['reason'], lines=False)}" if entry.get("reason") else ""
            out.line(f"t={entry['t']} {entry['kind']} {commit_time(entry.get('timestamp'))}{by}{reason}")
            out.lines(change_lines(entry["changes"], unicode=out.unicode), indent="  ")
        return EXIT_OK

    return on_db(args.db, out, run)


def _diff(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        t2_text = str(memory.t) if args.t2 is None else args.t2  # one state: from it to now (as REST)
        t1, t2 = resolve_t(memory, args.t1), resolve_t(memory, t2_text)
        try:
            changes = memory.diff(t1, t2)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document({"from": t1, "to": t2, "changes": changes})
            return EXIT_OK
        out.line(
            f"from {_state_name(args.t1, t1)}{out.glyphs.arrow}{_state_name(t2_text, t2)}: {plural(len(changes), 'change')}"
        )
        out.lines(change_lines(changes, unicode=out.unicode), indent="  ")
        return EXIT_OK

    return on_db(args.db, out, run)


def _snapshot(args: argparse.Namespace, out: Output) -> int:
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

    return on_db(args.db, out, run)


def _snapshots(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        snapshots = memory.snapshots()
        if out.as_json:
            out.document({"t": memory.t, "snapshots": [{"name": name, "t": t} for name, t in snapshots.items()]})
            return EXIT_OK
        if not snapshots:
            out.line(f"(no snapshots; the memory is at t={memory.t})")
            return EXIT_OK
        names = {name: terminal_safe(name, lines=False) for name in snapshots}
        width = max(len("NAME"), *(len(shown_name) for shown_name in names.values()))
        out.line(f"{'NAME'.ljust(width)}  T")
        for name, t in snapshots.items():
            out.line(f"{names[name].ljust(width)}  {t}")
        out.line(f"(the memory is at t={memory.t})")
        return EXIT_OK

    return on_db(args.db, out, run)


# -- the parser ------------------------------------------------------------------------------------


def register(commands: Commands) -> None:
    """Add ``load``, ``export``, ``apply``, ``history``, ``diff``, ``revert``, ``snapshot`` and
    ``snapshots`` to the ``hgm`` parser, in that order (``hgm --help`` lists them so).

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["revert", "4", "--db", "m.db"])
    >>> args.command, args.t, args.author
    ('revert', 4, None)
    """
    load = add_command(
        commands,
        "load",
        "fill a memory (SQLite file or PostgreSQL) from a graph file, as one transaction",
        "Load a graph file into the memory at --db (created if missing) as one transaction: all "
        "or nothing. Into an empty memory it is the initial load (t=1); into one that holds "
        "something, the file's nodes and edges are added by one commit. A file that breaks a "
        "rule (unknown type, duplicate id, an edge to a missing node, a violated constraint) "
        "loads nothing, and every problem is listed with its place.",
        examples(
            "hgm load trip.json --db memory.db",
            "hgm demo --sample | hgm load - --db memory.db --json",
            note='with --json: {"committed": true, "t": T, "nodes": N, "edges": E, "total_nodes": ...,\n'
            '"total_edges": ...} or {"committed": false, "t": null, "error": {..., "problems": [...]}}.',
        ),
        _load,
    )
    load.add_argument("file", metavar="FILE.json", help="graph file to load ('-': standard input)")
    load.add_argument("--db", required=True, metavar="PATH", help=NEW_DB_HELP)
    load.add_argument("--author", metavar="A", help="who loads it (kept in the history)")
    load.add_argument("--reason", metavar="R", help="why (kept in the history; default 'load FILE')")
    add_json_flag(load, "print one JSON document: t and counts, or the problems")

    export = add_command(
        commands,
        "export",
        "write a memory (now or as of T) as a graph file on standard output",
        "Write the memory at --db as a graph file (hgm-graph/1) on standard output, nodes and "
        "edges in creation order; load -> export -> load gives an equal graph. --as-of writes an "
        "earlier state.",
        examples(
            "hgm export --db memory.db > trip.json",
            "hgm export --db memory.db --as-of before-change --compact",
        ),
        _export,
    )
    export.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    export.add_argument("--as-of", type=state, metavar="T", help=f"the state to export: {T_HELP}")
    export.add_argument("--compact", action="store_true", help="one line instead of indented JSON")

    apply = add_command(
        commands,
        "apply",
        "apply a transaction file to a memory (all or nothing)",
        "Apply a transaction file (formats.md: author, reason, optional base_t, ops) to the "
        "memory at --db (created if missing). Ops apply in order; constraints are checked on the "
        "final state and a transaction that breaks any is refused whole with every violation "
        "listed. With base_t, a transaction touching something committed after base_t is "
        "refused as a conflict. --dry-run shows what would happen and writes nothing.",
        examples(
            "hgm apply change.json --db memory.db",
            "hgm apply change.json --db memory.db --dry-run",
            "echo '{\"ops\": [{\"op\": \"update_node\", \"id\": \"a1\", \"set\": {\"status\": \"done\"}}]}' | hgm apply - --db memory.db --json",
            note="with --json, stdout holds the transaction report (formats.md): {\"committed\": true, \"t\": T,\n"
            "\"changes\": [...], \"violations\": [], ...}; refused: \"committed\": false, \"t\": null and the\n"
            "violations (exit 3); malformed or conflicting: the same shape with \"error\": {\"category\",\n"
            "\"message\", ...} (exit 1). Without --json: the commit and its changes one per line, or\n"
            "the violations / the error on standard error.",
        ),
        _apply,
    )
    apply.add_argument("file", metavar="FILE.json", help="transaction file ('-': standard input)")
    apply.add_argument("--db", required=True, metavar="PATH", help=NEW_DB_HELP)
    apply.add_argument("--dry-run", action="store_true", help="check and report, commit nothing")
    apply.add_argument(
        "--max-ops",
        type=non_negative,
        metavar="N",
        help="refuse a transaction of more than N ops (default 10,000; limit-exceeded, exit 1)",
    )
    add_json_flag(apply, "print the transaction report (formats.md)")

    history = add_command(
        commands,
        "history",
        "list the commits of a memory, or those that touched one node",
        "Without NODE_ID: every commit (t, kind, number of changes, time in UTC, author, "
        "reason), oldest first. With NODE_ID: each commit that touched that node (its attributes "
        "or its edges) with what it changed.",
        examples(
            "hgm history --db memory.db",
            "hgm history --db memory.db --last 5 --json",
            "hgm history --db memory.db --since before-change",
            "hgm history a_forbidden --db memory.db",
        ),
        _history,
    )
    history.add_argument("node", nargs="?", metavar="NODE_ID", help="show the history of this node only")
    history.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    history.add_argument("--since", type=state, default="0", metavar="T", help=f"only commits after state T: {T_HELP}")
    history.add_argument("--last", type=non_negative, metavar="N", help="only the last N commits")
    add_json_flag(history, 'print {"t", "commits": [...]} or {"id", "history": [...]}')

    diff = add_command(
        commands,
        "diff",
        "what changed between two states of a memory",
        "The net changes from state T1 to state T2 (each a commit number or a snapshot name), one "
        "per node or edge: + added, - removed, ~ updated (attribute: before -> after). T1 later "
        "than T2 shows the way back. Without T2, from T1 to the current state (as hgm changes T1).",
        examples(
            "hgm diff 1 4 --db memory.db",
            "hgm diff before-change --db memory.db",
            "hgm diff before-change 5 --db memory.db --json",
        ),
        _diff,
    )
    diff.add_argument("t1", type=state, metavar="T1", help=T_HELP)
    diff.add_argument("t2", nargs="?", type=state, metavar="T2", help=f"{T_HELP} (default: the current state)")
    diff.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    add_json_flag(diff, 'print {"from": T1, "to": T2, "changes": [...]}')

    revert = add_command(
        commands,
        "revert",
        "undo one commit by appending a new one",
        "Append a commit that undoes commit T (history is never rewritten). Refused as a "
        "conflict (exit 1) when a later commit changed the same nodes or edges again, and by "
        "constraints (exit 3) when the undone state breaks one. The initial load cannot be "
        "reverted.",
        examples(
            "hgm revert 4 --db memory.db",
            "hgm revert 4 --db memory.db --author me --reason 'wrong day' --json",
            note="output and --json document as for hgm apply.",
        ),
        _revert,
    )
    revert.add_argument("t", type=commit_number, metavar="T", help="the commit to undo")
    revert.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    revert.add_argument("--author", metavar="A", help="who reverts (kept in the history)")
    revert.add_argument("--reason", metavar="R", help="why (default 'revert t=T')")
    add_json_flag(revert, "print the transaction report (formats.md)")

    snapshot = add_command(
        commands,
        "snapshot",
        "name a state of a memory",
        "Give the current state (or --t T) a name that --as-of, diff and export accept. Naming an "
        "existing snapshot again moves it. A name cannot be a number.",
        examples("hgm snapshot before-change --db memory.db", "hgm snapshot day1-planned --t 3 --db memory.db"),
        _snapshot,
    )
    snapshot.add_argument("name", metavar="NAME", help="the snapshot's name")
    snapshot.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    snapshot.add_argument("--t", type=state, metavar="T", help=f"the state to name (default: the current one): {T_HELP}")
    add_json_flag(snapshot, 'print {"name", "t", "previous"}')

    snapshots = add_command(
        commands,
        "snapshots",
        "list the named states of a memory",
        "List every snapshot name with the t it names, oldest state first.",
        examples("hgm snapshots --db memory.db"),
        _snapshots,
    )
    snapshots.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    add_json_flag(snapshots, 'print {"t", "snapshots": [{"name", "t"}, ...]}')
