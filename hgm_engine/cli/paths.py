"""``hgm ingest``, ``locate``, ``paths``, ``path``, ``outcome``, ``rollback``, ``rewrite-path``
and ``path-reset``: stored paths from the command line (docs/paths.md). Registered into the
``hgm`` parser by :func:`register`.

>>> import json, os, tempfile
>>> from hgm_engine.cli import main
>>> folder = tempfile.mkdtemp()
>>> db, trajectories = os.path.join(folder, "m.db"), os.path.join(folder, "t.jsonl")
>>> _ = open(trajectories, "w").write(json.dumps({"id": "order-17", "goal": "Check order A1001",
...     "steps": [{"name": "query_order"}, {"name": "notify_user"}]}) + "\\n")
>>> main(["ingest", trajectories, "--db", db])
ingested 1 path at t=1
0
>>> main(["locate", "check my order", "--db", db, "--k", "1"])  # doctest: +ELLIPSIS
1. order-17  score ...  query_order > notify_user
   Check order A1001
   text ...
0
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from hgm_engine.cli.arguments import DB_HELP, NEW_DB_HELP, Commands, add_command, add_json_flag, examples
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_REFUSED, Output, input_name, on_db, read_text
from hgm_engine.cli.progress import ProgressDisplay
from hgm_engine.errors import HGMError, PathError, Problem, TransactionError
from hgm_engine.memory import Memory
from hgm_engine.model import parse_json
from hgm_engine.paths import REFUSALS, read_jsonl
from hgm_engine.render.text import plural, shorten
from hgm_engine.txn import TransactionReport

__all__ = ["register"]


def _split(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


def _exit_for(err: HGMError) -> int:
    return EXIT_REFUSED if err.category in REFUSALS else EXIT_FAILURE


# -- ingest --------------------------------------------------------------------------------------


def _ingest(args: argparse.Namespace, out: Output) -> int:
    if (args.file is None) == (args.taskplan is None):
        return out.failure("invalid-argument", "give a trajectory file (FILE.jsonl or -) or --taskplan DIR, not both")
    text = None
    if args.file is not None:
        try:
            text = read_text(args.file)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
    source = args.taskplan if args.taskplan is not None else input_name(args.file)

    def run(memory: Memory) -> int:
        try:
            with ProgressDisplay(out.err) as display:  # on a terminal only: a pipe gets no progress
                if text is not None:
                    docs, lines = read_jsonl(text)
                    report = memory.path_memory.ingest(
                        docs, skip_invalid=args.skip_invalid, author=args.author, scenario=args.scenario,
                        lines=lines, reason=f"ingest {source}", progress=display.callback,
                    )
                else:
                    ids: Any = args.ids
                    if ids is not None and ids not in ("memory", "test"):
                        ids = _split(ids)
                    report = memory.ingest_taskplan(
                        args.taskplan, ids=ids, skip_invalid=args.skip_invalid, author=args.author,
                        scenario=args.scenario, prefix=args.prefix, progress=display.callback,
                    )
                if display.callback is not None:  # written on close anyway; here its time is shown
                    display.callback("saving the path index", 0, None)
                    memory.save_index()
        except PathError as err:
            if err.report is None:
                return out.error(err, EXIT_FAILURE)
            if out.as_json:
                doc = err.report.to_json()
                doc["error"] = err.to_json()["error"]
                out.document(doc)
            else:
                count = len(err.report.problems)
                print(f"error: {source}: {plural(count, 'problem')}; nothing was ingested", file=out.err)
                for problem in err.report.problems:
                    print("  " + _problem_line(problem), file=out.err)
            return EXIT_FAILURE
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document(report.to_json())
        else:
            where = f" at t={report.t}" if report.t is not None else ""
            out.line(f"ingested {plural(len(report.ingested), 'path')}{where}")
            if report.problems:
                print(f"skipped {plural(len(report.problems), 'line')}:", file=out.err)
                for problem in report.problems:
                    print("  " + _problem_line(problem), file=out.err)
        return EXIT_OK

    return on_db(args.db, out, run, create=True)


def _problem_line(problem) -> str:
    place = f"line {problem.line}" if problem.line is not None else "(no line)"
    who = f" ({problem.id})" if problem.id else ""
    return f"{place}{who}: {problem.category}: {problem.message}"


# -- locate and reading ----------------------------------------------------------------------------


def _locate(args: argparse.Namespace, out: Output) -> int:
    if args.k < 1:
        return out.failure("invalid-argument", f"--k must be at least 1, not {args.k}", where="--k")

    def run(memory: Memory) -> int:
        try:
            result = memory.locate(
                args.text, _split(args.tags), args.k, scenario=args.scenario,
                cross_scenario=args.cross_scenario, steps=_split(args.steps), hops=args.hops,
                **({"coarse": True, "scenarios": args.scenarios, "fuse": args.fuse} if args.coarse or args.fuse else {}),
            )
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document(result.to_json())
            return EXIT_OK
        if result.coarse is not None:
            coarse = result.coarse
            chosen = ", ".join(f"{c['scenario']} ({c['score']:.3f}{', needs review' if c['needs_review'] else ''})" for c in coarse["chosen"])
            out.line(f"coarse: {coarse['summaries']} scenario summaries read; " + (chosen and f"chose {chosen}" or coarse.get("fallback", "")))
            fine = coarse["fine"]
            if "fused" in fine:
                out.line(f"fine: ranked every path, the first {fine['fused']['depth']} re-ranked with the chosen scenarios "
                         f"(flat order: {', '.join(fine['fused']['flat']) or 'none'})")
            else:
                out.line(f"fine: ranked {fine['paths']} paths ({fine['excluded']} in other scenarios left out)")
        if not result.matches:
            out.line("(no path matches)")
        ellipsis = "…" if out.unicode else "..."
        for rank, match in enumerate(result.matches, 1):
            arrow = " > "
            status = "" if match.status == "active" else f"  [{match.status}]"
            out.line(f"{rank}. {match.path}  score {match.score:.3f}  {arrow.join(match.steps)}{status}")
            out.line(f"   {shorten(match.goal, 84, ellipsis)}")
            out.line("   " + "  ".join(f"{k} {v:.2f}" for k, v in match.breakdown.items()))
            others = [p for p in match.supporting if p != match.path]
            if others:
                shown = ", ".join(others[:4]) + (", ..." if len(others) > 4 else "")
                out.line(f"   also: {shown} ({match.paths_with_structure} paths with this structure)")
        return EXIT_OK

    return on_db(args.db, out, run)


def _paths(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        listing = memory.paths(all_versions=args.all)
        metrics = memory.path_metrics() if args.metrics else None
        if out.as_json:
            doc: dict[str, Any] = {"paths": listing}
            if metrics is not None:
                doc["metrics"] = metrics
            out.document(doc)
            return EXIT_OK
        if not listing:
            out.line("(no paths)")
        ellipsis = "…" if out.unicode else "..."
        for entry in listing:
            flags = [entry["status"] or "-"]
            if entry["needs_human"]:
                flags.append("needs_human")
            reward = "-" if entry["reward"] is None else f"{entry['reward']:.2f}"
            out.line(
                f"{entry['id']}  v{entry['version']}/{entry['versions']}  {','.join(flags)}  reward {reward}  "
                f"{' > '.join(entry['steps'])}  {shorten(entry['goal'], 60, ellipsis)}"
            )
        if metrics is not None:
            out.line("")
            out.line(f"paths {metrics['paths']}, versions {metrics['versions']}, rewrites {metrics['rewrites']}, "
                     f"rollbacks {metrics['rollbacks']}, max versions in a lineage {metrics['max_versions_in_a_lineage']}")
            out.line(f"needs_human: {', '.join(metrics['needs_human']) or '(none)'}")
            streaks = ", ".join(f"{k} {v}" for k, v in metrics["consecutive_failures"].items()) or "(none)"
            out.line(f"consecutive failures: {streaks}")
            out.line(f"refusals: {json.dumps(metrics['refusals'])}")
        return EXIT_OK

    return on_db(args.db, out, run)


def _path(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            doc = memory.path(args.id)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document(doc)
            return EXIT_OK
        head = "" if doc["current"] else f" (not current: {doc['head']} is)"
        out.line(f"{doc['id']}  version {doc['version']}  {doc['status']}{head}")
        out.line(f"goal: {doc['goal']}")
        if doc["tags"]:
            out.line(f"tags: {', '.join(doc['tags'])}")
        if doc["scenario"]:
            out.line(f"scenario: {doc['scenario']}")
        reward = "-" if doc["reward"] is None else f"{doc['reward']:.3f}"
        out.line(f"reward {reward}, result {doc['result'] or '-'}, successes {doc['successes']}, "
                 f"failures {doc['failures']}")
        if doc["rewrite_reason"]:
            out.line(f"reason: {doc['rewrite_reason']}")
        out.line("steps:")
        for i, step in enumerate(doc["steps"]):
            content = f": {step['content']}" if step.get("content") else ""
            out.line(f"  {i}. {step.get('name', step['id'])} [{step.get('status', '-')}]{content}")
        out.line(f"lineage ({doc['root']}): rewrites {doc['rewrite_count']}, rollbacks {doc['rollback_count']}, "
                 f"failure streak {doc['failed_streak']}" + (", NEEDS A HUMAN" if doc["needs_human"] else ""))
        for version in doc["versions"]:
            mark = "*" if version["id"] == doc["head"] else " "
            why = f"  {version['reason']}" if version["reason"] else ""
            reward = "-" if version["reward"] is None else f"{version['reward']:.3f}"
            out.line(f" {mark} v{version['version']} {version['id']}  {version['status']}  reward {reward}{why}")
        return EXIT_OK

    return on_db(args.db, out, run)


# -- changing paths ----------------------------------------------------------------------------------


def _report_out(out: Output, report: TransactionReport, what: str) -> int:
    if out.as_json:
        doc = report.to_json()
        if report.created:
            doc["path"] = report.created[0]
        out.document(doc)
    elif report.committed:
        out.line(f"t={report.t}: {what}")
    else:
        print("refused: the change breaks constraints; nothing changed", file=out.err)
        for v in report.violations:
            print(f"  {v.constraint} at {v.node}: {v.message}", file=out.err)
    return EXIT_OK if report.committed else EXIT_REFUSED


def _failed(out: Output, err: HGMError, reason: str | None) -> int:
    code = _exit_for(err)
    if out.as_json:
        doc = TransactionReport(False, None, None, None, reason).to_json()
        doc["error"] = err.to_json()["error"]
        out.document(doc)
        return code
    return out.error(err, code)


def _change(
    args: argparse.Namespace,
    out: Output,
    action: Callable[[Memory], TransactionReport],
    describe: Callable[[Memory, TransactionReport], str],
    reason: str | None,
) -> int:
    def run(memory: Memory) -> int:
        try:
            report = action(memory)
        except (PathError, TransactionError) as err:
            return _failed(out, err, reason)
        return _report_out(out, report, describe(memory, report))

    return on_db(args.db, out, run)


def _outcome(args: argparse.Namespace, out: Output) -> int:
    return _change(
        args, out,
        lambda m: m.record_outcome(args.id, args.outcome, reward=args.reward, author=args.author),
        lambda m, r: f"{args.outcome} recorded on {args.id}",
        f"{args.outcome} of {args.id}",
    )


def _rollback(args: argparse.Namespace, out: Output) -> int:
    digits = args.version.isascii() and args.version.isdigit() and len(args.version) <= 18  # not "²"
    version: Any = int(args.version) if digits else args.version
    return _change(
        args, out,
        lambda m: m.rollback_path(args.id, version, author=args.author, reason=args.reason),
        lambda m, r: f"{r.created[0]} restores {args.id} version {args.version}",
        args.reason,
    )


def _rewrite_path(args: argparse.Namespace, out: Output) -> int:
    try:
        text = read_text(args.steps)
        spec = parse_json(text)  # nested past the recursion limit or a 4,301-digit integer: a JSONDecodeError
    except HGMError as err:
        return _failed(out, err, args.reason)
    except json.JSONDecodeError as exc:
        err = HGMError([Problem("invalid-json", f"{args.steps} is not JSON: {exc.msg}", exc.lineno, exc.colno)], text)
        return _failed(out, err, args.reason)
    return _change(
        args, out,
        lambda m: m.rewrite_path(args.id, spec, args.reason, author=args.author),
        lambda m, r: f"{r.created[0]} replaces {m.path(r.created[0])['replaces']}",
        args.reason,
    )


def _path_reset(args: argparse.Namespace, out: Output) -> int:
    return _change(
        args, out,
        lambda m: m.reset_path(args.id, author=args.author, reason=args.reason),
        lambda m, r: f"{args.id} reset (needs_human cleared, failure streak 0)",
        args.reason,
    )


# -- the parser ------------------------------------------------------------------------------------


def register(commands: Commands) -> None:
    """Add the path subcommands to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["locate", "where is my order", "--db", "m.db", "--k", "3"])
    >>> args.text, args.k, args.tags
    ('where is my order', 3, None)
    """
    refusals = "exit 3: refused by constraints or a guard (rewrite-cap, version-cap, needs-human)"

    ingest = add_command(
        commands,
        "ingest",
        "store trajectories (JSON Lines) or task plans as paths",
        "Store each trajectory of FILE (JSON Lines, formats.md; - for standard input) or each request "
        "of a task-plan data set (--taskplan DIR) as a path: a goal with ordered action nodes, all in "
        "one transaction. Malformed lines are reported with their line numbers and nothing is "
        "ingested, unless --skip-invalid, which ingests the valid lines and reports the rest.",
        examples(
            "hgm ingest trajectories.jsonl --db memory.db",
            "hgm ingest --taskplan ../shared/data/taskplan/tmdb --db memory.db --json",
            "hgm ingest runs.jsonl --db memory.db --skip-invalid --scenario orders",
        ),
        _ingest,
    )
    ingest.add_argument("file", nargs="?", metavar="FILE.jsonl", help="trajectories, one a line (- for stdin)")
    ingest.add_argument("--taskplan", metavar="DIR", help="a task-plan data set folder (data.json, graph_desc.json)")
    ingest.add_argument("--db", required=True, metavar="PATH", help=NEW_DB_HELP)
    ingest.add_argument("--skip-invalid", action="store_true", help="ingest the valid lines, report the others")
    ingest.add_argument("--scenario", metavar="NAME", help="put the paths under this scenario goal (created if missing)")
    ingest.add_argument("--ids", metavar="IDS", help="--taskplan only: request ids a,b,c, or 'memory' / 'test'")
    ingest.add_argument("--prefix", metavar="P", help="--taskplan only: path id prefix (default 'FOLDER-')")
    ingest.add_argument("--author")
    add_json_flag(ingest, 'print {"ingested", "count", "t", "problems": [{"line", "id", "category", "message"}], ...}')

    locate = add_command(
        commands,
        "locate",
        "find the stored paths that fit a request",
        "Path-level localization: the K stored paths (merged by structure) that best fit TEXT, best "
        "first, with every component of their score. Makes no network call with the default embedder.",
        examples(
            "hgm locate 'where is my order A1001' --db memory.db",
            "hgm locate 'refund a damaged item' --db memory.db --tags order,refund --k 3 --json",
        ),
        _locate,
    )
    locate.add_argument("text", metavar="TEXT")
    locate.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    locate.add_argument("--tags", metavar="a,b", help="the request's tags, comma-separated")
    locate.add_argument("--k", type=int, default=5, metavar="K", help="how many results (default 5)")
    locate.add_argument("--scenario", metavar="NAME", help="keep to this scenario's paths (and paths without one)")
    locate.add_argument("--cross-scenario", action="store_true", help="let graph expansion cross scenario boundaries")
    locate.add_argument("--coarse", action="store_true",
                        help="coarse-to-fine: read the scenario summaries first (hgm summarize), then rank only their paths")
    locate.add_argument("--scenarios", type=int, default=None, metavar="N",
                        help="with --coarse: how many scenarios to keep (default 3; 1 with --fuse)")
    locate.add_argument("--fuse", action="store_true",
                        help="coarse-to-fine by fusion (implies --coarse): leave no path out; re-rank the flat matches with the chosen scenarios' ranks")
    locate.add_argument("--steps", metavar="a,b", help="the step names you expect (decides 'structure')")
    locate.add_argument("--hops", type=int, metavar="N", help="walk the memory graph N hops from the best entry paths for more candidates (off by default)")
    add_json_flag(locate, 'print {"matches": [{"path", "score", "goal", "steps", "breakdown", ...}]} (formats.md)')

    paths = add_command(
        commands,
        "paths",
        "list the stored paths (one per lineage)",
        "Every stored path: its current version, how many versions its lineage has, status, reward "
        "and steps. --all lists every version; --metrics adds the rewrite counters.",
        examples("hgm paths --db memory.db", "hgm paths --db memory.db --all --metrics --json"),
        _paths,
    )
    paths.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    paths.add_argument("--all", action="store_true", help="every version, not only the current ones")
    paths.add_argument("--metrics", action="store_true", help="rewrites, versions, failure streaks, needs_human")
    add_json_flag(paths, 'print {"paths": [...], "metrics": {...}}')

    path = add_command(
        commands,
        "path",
        "one path with its steps and versions",
        "A path's goal, steps, reward, counters and every version of its lineage. A lineage's first "
        "id names its current version; ID@v1 the first version itself.",
        examples("hgm path order-17 --db memory.db", "hgm path order-17@v1 --db memory.db --json"),
        _path,
    )
    path.add_argument("id", metavar="ID")
    path.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    add_json_flag(path, "print the path as JSON")

    outcome = add_command(
        commands,
        "outcome",
        "record a run's outcome on a path",
        "Record success or failure of a run of path ID: updates its reward (moving average), result "
        "and counters; failures of rewritten versions count towards needs_human.",
        examples("hgm outcome order-17 success --db memory.db", "hgm outcome order-17 failure --db memory.db --reward 0.2"),
        _outcome,
    )
    outcome.add_argument("id", metavar="ID")
    outcome.add_argument("outcome", choices=("success", "failure"))
    outcome.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    outcome.add_argument("--reward", type=float, metavar="R", help="this run's reward in [0, 1] (default 1 or 0)")
    outcome.add_argument("--author")
    add_json_flag(outcome, "print the transaction report")

    rollback = add_command(
        commands,
        "rollback",
        "make an older version of a path current again (as a new version)",
        "Restore version VERSION (a number, vN or a version id) of path ID as a new version that "
        "replaces the current one. " + refusals + ".",
        examples("hgm rollback order-17 1 --db memory.db --reason 'v2 kept failing'"),
        _rollback,
    )
    rollback.add_argument("id", metavar="ID")
    rollback.add_argument("version", metavar="VERSION")
    rollback.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    rollback.add_argument("--reason")
    rollback.add_argument("--author")
    add_json_flag(rollback, "print the transaction report")

    rewrite = add_command(
        commands,
        "rewrite-path",
        "rewrite a path as a new version from a steps file",
        "Create a new version of path ID from --steps FILE.json: a list of steps, {\"steps\", "
        "\"edges\", \"tags\", \"goal\"}, or a list of edit ops (keep/change/add/remove; docs/paths.md). "
        "The old version is superseded and down-weighted, in one transaction. " + refusals + ".",
        examples(
            "hgm rewrite-path order-17 --steps new_steps.json --reason 'check the cache first' --db memory.db",
            "echo '[{\"keep\": 0}, {\"add\": {\"name\": \"check_cache\"}, \"after\": 0}]' | "
            "hgm rewrite-path order-17 --steps - --reason cache --db memory.db --json",
        ),
        _rewrite_path,
    )
    rewrite.add_argument("id", metavar="ID")
    rewrite.add_argument("--steps", required=True, metavar="FILE.json", help="the new steps or edit ops (- for stdin)")
    rewrite.add_argument("--reason", required=True, help="why (recorded as rewrite_reason)")
    rewrite.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    rewrite.add_argument("--author")
    add_json_flag(rewrite, 'print the transaction report with "path": the new version')

    reset = add_command(
        commands,
        "path-reset",
        "clear a path's needs_human flag and failure streak",
        "A human has looked at path ID: clear needs_human and the failure streak so it may be "
        "rewritten again.",
        examples("hgm path-reset order-17 --db memory.db --reason 'fixed the API key'"),
        _path_reset,
    )
    reset.add_argument("id", metavar="ID")
    reset.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    reset.add_argument("--reason")
    reset.add_argument("--author")
    add_json_flag(reset, "print the transaction report")
