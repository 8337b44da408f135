"""``hgm check``: property-test a rule file (and its constraints) against random memories and
transactions of a schema. Registered into the ``hgm`` parser by :func:`register`.

It searches for triggers that loop past the round cap, rule orders that reach different
states, triggers whose marks or sets a constraint then refuses, and pairs of constraints no
new node meets together; each finding comes with a minimal counterexample written as a graph
file (``hgm load``) and a transaction file (``hgm apply``). Exit 0 when nothing is found in
the examples, 3 with a counterexample, 2 for a rule file with errors (as ``hgm rules check``),
1 for other bad input. It needs hypothesis (``pip install hgm-engine[testing]``).

>>> import os, tempfile
>>> from hgm_engine.cli import main
>>> folder = tempfile.mkdtemp()
>>> path = os.path.join(folder, "plan.hgmr")
>>> _ = open(path, "w").write("propagate derived_from backward depth 2")
>>> main(["check", path, "--examples", "5", "--seed", "1", "--out", folder])
checked 5 examples (seed 1): nothing found
0
>>> main(["check", path, "--examples", "0", "--json"])
{"error": {"category": "invalid-argument", "message": "--examples must be at least 1, not 0", "line": null, "column": null}}
1
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

from hgm_engine.cli.arguments import FORMATTER, Commands, add_json_flag, examples
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_QUERY_ERROR, EXIT_REFUSED, Output, unreadable
from hgm_engine.errors import HGMError, Problem, SchemaError
from hgm_engine.model import DEFAULT_SCHEMA, Schema, parse_json

__all__ = ["register"]


def _read(path: str, what: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HGMError([Problem("io", f"cannot read {what} {path}: {unreadable(exc)}", where=path)]) from None


def _schema(path: str | None) -> Schema:
    if path is None:
        return DEFAULT_SCHEMA
    text = _read(path, "schema file")
    try:
        doc = parse_json(text)  # nested past the recursion limit or a 4,301-digit integer: a JSONDecodeError
    except json.JSONDecodeError as exc:
        raise SchemaError([Problem("invalid-json", f"{path} is not JSON: {exc.msg}", exc.lineno, exc.colno, where=path)]) from None
    return Schema.from_document(doc)


def _check(args: argparse.Namespace, out: Output) -> int:
    if args.examples < 1:
        return out.failure("invalid-argument", f"--examples must be at least 1, not {args.examples}")
    try:
        schema = _schema(args.schema)
        text = _read(args.rules, "rule file")
    except HGMError as err:
        return out.error(err, EXIT_FAILURE, label=args.schema)
    problem = _unwritable(pathlib.Path(args.out))
    if problem:  # before the search, which can take minutes
        return out.failure("io", f"cannot write counterexamples to --out {args.out}: {problem}", where=args.out)
    try:
        from hgm_engine.testing.check import check_rules
    except ImportError:  # hypothesis comes with the test and testing extras
        return out.failure("missing-dependency", "hgm check needs hypothesis: pip install 'hgm-engine[testing]'")
    try:
        result = check_rules(text, schema, examples=args.examples, seed=args.seed)
    except HGMError as err:  # the rule file's errors, exactly as `hgm rules check` reports them
        return out.error(err, EXIT_QUERY_ERROR if err.source is not None else EXIT_FAILURE, label=args.rules)
    folder = pathlib.Path(args.out)
    written = []
    for finding in result.findings:
        graph = folder / f"{finding.kind}.graph.json"
        transaction = folder / f"{finding.kind}.transaction.json"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            graph.write_text(json.dumps(finding.graph, indent=1) + "\n", encoding="utf-8")
            transaction.write_text(json.dumps(finding.transaction, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            return out.failure("io", f"cannot write counterexamples to --out {args.out}: {exc.strerror}", where=args.out)
        written.append({"kind": finding.kind, "message": finding.message, "graph": str(graph), "transaction": str(transaction)})
    if out.as_json:
        out.document({"examples": result.examples, "seed": result.seed, "findings": written})
    elif not written:
        out.line(f"checked {result.examples} examples (seed {result.seed}): nothing found")
    else:
        out.line(f"checked {result.examples} examples (seed {result.seed}): {len(written)} found")
        for entry in written:
            out.line(f"{entry['kind']}: {entry['message']}")
            out.line(f"  hgm load {entry['graph']} --db check.db && hgm rules load {args.rules} --db check.db "
                     f"&& hgm apply {entry['transaction']} --db check.db")
    return EXIT_REFUSED if written else EXIT_OK


def _unwritable(folder: pathlib.Path) -> str | None:
    """Why counterexample files could not be written in ``folder`` (made when needed), or None.

    >>> _unwritable(pathlib.Path(".")) is None
    True
    """
    for place in (folder, *folder.absolute().parents):
        if place.exists():
            if not place.is_dir():
                return f"{place} is not a folder"
            if not os.access(place, os.W_OK | os.X_OK):
                return f"{place} is not writable"
            return None
    return None


def register(commands: Commands) -> None:
    """Add ``check`` to the ``hgm`` parser.

    >>> from hgm_engine.cli.arguments import ArgumentParser
    >>> parser = ArgumentParser(prog="hgm")
    >>> register(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["check", "agent.hgmr", "--examples", "50"])
    >>> args.rules, args.schema, args.examples, args.seed, args.out
    ('agent.hgmr', None, 50, None, '.')
    """
    check = commands.add_parser(
        "check",
        help="property-test a rule file against random memories and transactions",
        description=(
            "Search random memories of the schema and random transactions against them for "
            "problems of a rule file: triggers that loop past the round cap (rule-loop), rule "
            "orders that reach different states (non-confluence), triggers whose marks or sets "
            "a constraint then refuses (marks-refused), and constraints that no new node meets "
            "together (unsatisfiable). Each finding is written as KIND.graph.json (for hgm load) "
            "and KIND.transaction.json (for hgm apply) in --out, made minimal. Exit 0 when "
            "nothing is found, 3 with a counterexample, 2 when the rule file has errors."
        ),
        epilog=examples(
            "hgm check agent.hgmr",
            "hgm check agent.hgmr --schema schema.json --examples 500 --seed 7",
            "hgm check agent.hgmr --json --out findings/",
        ),
        formatter_class=FORMATTER,
    )
    check.add_argument("rules", metavar="RULES", help="a rule file (.hgmr), or - for standard input")
    check.add_argument("--schema", metavar="FILE", help="a schema file (hgm-schema/1, docs/formats.md); default: the default schema")
    check.add_argument("--examples", type=int, default=100, metavar="N", help="random scenarios per search (default 100)")
    check.add_argument("--seed", type=int, metavar="S", help="the random seed (printed, so a run can be repeated)")
    check.add_argument("--out", default=".", metavar="DIR", help="where counterexample files go (default: here)")
    add_json_flag(check, 'print {"examples", "seed", "findings": [{"kind", "message", "graph", "transaction"}]}')
    check.set_defaults(run=_check)
