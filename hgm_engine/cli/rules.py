"""``hgm rules`` and the planner views: ``frontier``, ``stale``, ``changes``, ``focus-path``,
``confirm``. Registered into the ``hgm`` parser by :func:`register`.

>>> import os, tempfile
>>> from hgm_engine.cli import main
>>> path = os.path.join(tempfile.mkdtemp(), "travel.hgmr")
>>> _ = open(path, "w").write("propagate derived_from backward depth 2")
>>> main(["rules", "check", path])  # doctest: +ELLIPSIS
/...travel.hgmr: valid (0 constraints, 0 triggers, 1 propagations)
0
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from hgm_engine.cli.arguments import DB_HELP, FORMATTER, T_HELP, Commands, add_command, add_json_flag, examples, state
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_QUERY_ERROR, EXIT_REFUSED, Output, on_db, resolve_t, unreadable
from hgm_engine.errors import HGMError, Problem, TransactionRefused
from hgm_engine.memory import Memory
from hgm_engine.rules import compile_rule_file

__all__ = ["register"]


def _read(path: str) -> str:
    """A rule file's text (``-``: standard input); an ``io`` error placed at the file if not."""
    if path == "-":
        return sys.stdin.read()
    try:
        return pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HGMError([Problem("io", f"cannot read {path}: {unreadable(exc)}", where=path)]) from None


def _rules_load(args: argparse.Namespace, out: Output) -> int:
    try:
        text = _read(args.file)
    except HGMError as err:
        return out.error(err, EXIT_FAILURE)

    def run(memory: Memory) -> int:
        try:
            rule_set = memory.load_rules(text, name=args.name)
        except TransactionRefused as refusal:
            violations = refusal.report.violations
            if out.as_json:
                out.document({"loaded": False, "violations": [v.to_json() for v in violations]})
            else:
                print("refused: the file's constraints do not hold now; nothing was loaded", file=out.err)
                print("\n".join(f"  {v.constraint} at {v.node}: {v.message}" for v in violations), file=out.err)
            return EXIT_REFUSED
        except HGMError as err:
            return out.error(err, EXIT_QUERY_ERROR if err.source is not None else EXIT_FAILURE, label=args.file)
        summary = {
            "loaded": True,
            "name": args.name,
            "constraints": [c.name for c in rule_set.constraints],
            "triggers": [t.name for t in rule_set.triggers],
            "propagations": [p.name for p in rule_set.propagations],
        }
        if out.as_json:
            out.document(summary)
        else:
            out.line(
                f"loaded rule set {args.name!r}: {len(rule_set.constraints)} constraints, "
                f"{len(rule_set.triggers)} triggers, {len(rule_set.propagations)} propagations"
            )
        return EXIT_OK

    return on_db(args.db, out, run, create=True)


def _rules_check(args: argparse.Namespace, out: Output) -> int:
    try:  # the same checks and compile as loading, so what passes here also loads
        rule_set = compile_rule_file(_read(args.file)).rule_set
    except HGMError as err:
        return out.error(err, EXIT_QUERY_ERROR if err.source is not None else EXIT_FAILURE, label=args.file)
    if out.as_json:
        out.document({"valid": True, "triggers": [t.name for t in rule_set.triggers]})
    else:
        out.line(f"{args.file}: valid ({len(rule_set.constraints)} constraints, {len(rule_set.triggers)} triggers, "
                 f"{len(rule_set.propagations)} propagations)")
    return EXIT_OK


def _rules_list(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        entries = [{"name": n, "text": t} for n, t in memory.rules().items()]
        for broken in memory.broken():
            if broken.kind != "constraint":  # a broken rule set, or the list of them
                doc = broken.to_json()
                entries.append({"name": doc["name"], "text": doc["text"], "broken": doc["error"]})
        if out.as_json:
            out.document({"rule_sets": entries})
        elif not entries:
            out.line("(no rule sets)")
        else:
            for entry in entries:
                if "broken" in entry:
                    error = entry["broken"]
                    place = f" at line {error['line']}, column {error['column']}" if error.get("line") else ""
                    out.line(f"== {entry['name']} (broken, inactive: {error['category']}{place}: {error['message']})")
                else:
                    out.line(f"== {entry['name']}")
                out.lines(entry["text"].strip().splitlines(), indent="  ")
        return EXIT_OK

    return on_db(args.db, out, run)


def _rules_remove(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            memory.remove_rules(args.name)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        out.document({"removed": args.name}) if out.as_json else out.line(f"removed rule set {args.name!r}")
        return EXIT_OK

    return on_db(args.db, out, run)


def _frontier(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            as_of = memory.resolve_t(args.as_of) if args.as_of is not None else None
            if memory.node(args.goal, as_of=as_of) is None:  # as REST: a mistyped goal is not "nothing to do"
                state = "" if as_of is None else f" as of t={as_of}"
                return out.failure("unknown-node", f"no node {args.goal!r}{state}", where="GOAL")
            ids = memory.frontier(args.goal, as_of=as_of)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document({"goal": args.goal, "frontier": ids})
        elif not ids:
            out.line(f"(nothing can run now under {args.goal})")
        else:
            for node_id in ids:
                node = memory.node(node_id) or {}
                out.line(f"{node_id}  {node.get('content', '')}".rstrip())
        return EXIT_OK

    return on_db(args.db, out, run)


def _stale(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            entries = memory.stale(as_of=memory.resolve_t(args.as_of) if args.as_of is not None else None)
        except HGMError as err:  # an unknown snapshot, a t outside the history
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document({"stale": entries})
        elif not entries:
            out.line("(nothing is stale)")
        else:
            for entry in entries:
                out.line(f"{entry['id']} [{entry['type']}] {entry['state'] or '(malformed marks)'}")
                for mark in entry["marks"]:
                    reason = f": {mark['reason']}" if mark.get("reason") else ""
                    out.line(f"    {mark['state']} by {mark['rule']} because {', '.join(mark['because'])} at t={mark['t']}{reason}")
                for problem in entry.get("problems", ()):
                    out.line(f"    malformed: {problem}")
        return EXIT_OK

    return on_db(args.db, out, run)


def _changes(args: argparse.Namespace, out: Output) -> int:
    since = args.since_position if args.since is None else args.since
    if since is None:
        return out.failure(
            "invalid-argument", "changes needs SINCE, a t or a snapshot name: hgm changes SINCE --db PATH", where="SINCE"
        )
    if args.since_position is not None and args.since is not None and args.since_position != args.since:
        return out.failure(
            "invalid-argument",
            f"give the state once, as SINCE or as --since, not both ({args.since_position!r} and {args.since!r})",
            where="--since",
        )

    def run(memory: Memory) -> int:
        try:
            doc = memory.changes_since(resolve_t(memory, since))
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document(doc)
        else:
            out.line(f"since t={doc['since']} (now t={doc['t']}): {len(doc['commits'])} commits")
            for commit in doc["commits"]:
                out.line(f"  t={commit['t']} {commit['author'] or '-'}: {commit['reason'] or ''}".rstrip())
            for change in doc["changes"]:
                out.line(f"  {change['kind']} {change.get('id') or (change['from'] + ' -' + change['type'] + '-> ' + change['to'])}")
        return EXIT_OK

    return on_db(args.db, out, run)


def _focus_path(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            as_of = memory.resolve_t(args.as_of) if args.as_of is not None else None
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        path = memory.focus_path(args.node, as_of=as_of)
        if not path:
            state = "" if as_of is None else f" as of t={as_of}"
            return out.failure("unknown-node", f"no node {args.node!r}{state}", where=args.node)
        out.document({"node": args.node, "path": path}) if out.as_json else out.line(" → ".join(path))
        return EXIT_OK

    return on_db(args.db, out, run)


def _confirm(args: argparse.Namespace, out: Output) -> int:
    def run(memory: Memory) -> int:
        try:
            report = memory.confirm(args.node, author=args.author, reason=args.reason)
        except HGMError as err:
            return out.error(err, EXIT_FAILURE)
        if out.as_json:
            out.document(report.to_json())
        else:
            cleared = ", ".join(c["id"] for c in report.cleared) or "nothing to clear"
            out.line(f"t={report.t}: confirmed {args.node} ({cleared})")
        return EXIT_OK

    return on_db(args.db, out, run)


def register(commands: Commands) -> None:
    """Add ``rules`` and the planner views (``frontier``, ``stale``, ``changes``, ``focus-path``,
    ``confirm``) to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["frontier", "trip", "--db", "m.db"])
    >>> args.goal, args.as_of
    ('trip', None)
    """
    rules = commands.add_parser(
        "rules",
        help="load, check, list or remove memory rules (constraints, triggers, propagation)",
        description="Memory rules are written in hgm's rule language (docs/rules.md).",
        epilog=examples(
            "hgm rules check travel.hgmr",
            "hgm rules load travel.hgmr --db memory.db --name travel",
            "hgm rules list --db memory.db",
        ),
        formatter_class=FORMATTER,
    )
    actions = rules.add_subparsers(dest="action", metavar="ACTION", required=True)
    load = actions.add_parser("load", help="load a rule file into a memory (all or nothing)")
    load.add_argument("file", metavar="FILE", help="a rule file (.hgmr), or - for standard input")
    load.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    load.add_argument("--name", default="default", help="the rule set's name (a set of that name is replaced)")
    add_json_flag(load, "print a JSON summary")
    load.set_defaults(run=_rules_load)
    check = actions.add_parser("check", help="check a rule file without loading it")
    check.add_argument("file", metavar="FILE", help="a rule file, or - for standard input")
    add_json_flag(check, "print a JSON summary")
    check.set_defaults(run=_rules_check)
    listing = actions.add_parser("list", help="list the loaded rule sets")
    listing.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    add_json_flag(listing, "print JSON")
    listing.set_defaults(run=_rules_list)
    remove = actions.add_parser("remove", help="remove a rule set (and its constraints)")
    remove.add_argument("name", metavar="NAME")
    remove.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    add_json_flag(remove, "print JSON")
    remove.set_defaults(run=_rules_remove)

    frontier = add_command(
        commands,
        "frontier",
        "pending actions under a goal that can run now",
        "Pending actions under GOAL whose 'before' predecessors are all done and that are neither "
        "blocked nor stale, now or --as-of an earlier state. An unknown GOAL exits 1.",
        examples("hgm frontier trip --db memory.db"),
        _frontier,
    )
    frontier.add_argument("goal", metavar="GOAL")
    frontier.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    frontier.add_argument("--as-of", type=state, metavar="T", help=f"the state to read: {T_HELP}")
    add_json_flag(frontier, 'print {"goal", "frontier": [ids]}')

    stale = add_command(
        commands,
        "stale",
        "nodes marked needs_review or blocked, with why",
        "Every node with a staleness mark, each mark with its rule, cause and t; --as-of reads "
        "the marks of an earlier state.",
        examples("hgm stale --db memory.db", "hgm stale --db memory.db --as-of before-change --json"),
        _stale,
    )
    stale.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    stale.add_argument("--as-of", type=state, metavar="T", help=f"the state to read: {T_HELP}")
    add_json_flag(stale, 'print {"stale": [...]}')

    changes = add_command(
        commands,
        "changes",
        "what changed since a t (commits and the net diff)",
        "The commits after state SINCE and the net changes from SINCE to now (hgm diff SINCE "
        "gives the same changes). SINCE may also be given as --since SINCE, as before.",
        examples("hgm changes 3 --db memory.db", "hgm changes before-change --db memory.db --json"),
        _changes,
    )
    changes.add_argument("since_position", nargs="?", type=state, metavar="SINCE", help=T_HELP)
    changes.add_argument("--since", type=state, metavar="T", help="the same as SINCE (the older form, still accepted)")
    changes.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    add_json_flag(changes, "print JSON")

    focus = add_command(
        commands,
        "focus-path",
        "the path from a root down to a node",
        "The chain of first parents from a root goal down to NODE, now or --as-of an earlier state.",
        examples("hgm focus-path a_pay --db memory.db", "hgm focus-path a_pay --db memory.db --as-of 1"),
        _focus_path,
    )
    focus.add_argument("node", metavar="NODE")
    focus.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    focus.add_argument("--as-of", type=state, metavar="T", help=f"the state to read: {T_HELP}")
    add_json_flag(focus, 'print {"node", "path"}')

    confirm = add_command(
        commands,
        "confirm",
        "clear a node's staleness marks (recorded as a commit)",
        "The planner has looked at NODE and it still holds: clear its needs_review/blocked marks.",
        examples("hgm confirm a_dinner --db memory.db --reason 'budget still fine'"),
        _confirm,
    )
    confirm.add_argument("node", metavar="NODE")
    confirm.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    confirm.add_argument("--author")
    confirm.add_argument("--reason")
    add_json_flag(confirm, "print the transaction report")

