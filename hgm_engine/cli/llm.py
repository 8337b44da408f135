"""``hgm rewrite``: a model proposes a rewrite of a stored path; hgm validates it and commits it.
Registered into the ``hgm`` parser by :func:`register`.

::

    export OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=...
    hgm rewrite order-17 --feedback "the order API now needs a login first" --db memory.db
    hgm rewrite order-17 --feedback "..." --db memory.db --dry-run --json

Exit codes: 0 committed (or, with ``--dry-run``, a valid proposal shown), 1 no valid answer
from the model (each attempt's problem is listed), an unknown path or any other failure, 3
refused by constraints (the violations are listed) or by a storm guard (``rewrite-cap``,
``version-cap``, ``needs-human``; checked before the model is asked). Nothing is written
unless the exit code is 0 without ``--dry-run``.

>>> from hgm_engine.cli import build_parser
>>> args = build_parser().parse_args(["rewrite", "p1", "--feedback", "too slow", "--db", "m.db", "--attempts", "2"])
>>> args.path_id, args.feedback, args.attempts, args.dry_run
('p1', 'too slow', 2, False)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from hgm_engine.cli.arguments import DB_HELP, Commands, add_command, add_json_flag, examples, integer_in
from hgm_engine.cli.common import EXIT_FAILURE, EXIT_OK, EXIT_REFUSED, Output, on_db
from hgm_engine.errors import HGMError, RewriteProposalError, TransactionRefused
from hgm_engine.memory import Memory
from hgm_engine.llm import (
    DEFAULT_ATTEMPTS,
    DEFAULT_RETRIES,
    MAX_RETRIES,
    DEFAULT_TIMEOUT,
    MODEL_ENV,
    Proposal,
    guard_refusal,
    propose_rewrite,
    rewrite_with_llm,
)
from hgm_engine.paths import REFUSALS

__all__ = ["register", "proposal_lines"]


def proposal_lines(proposal: Proposal, path: dict[str, Any], *, arrow: str = " → ") -> list[str]:
    """A proposal as people read it: each old step's fate, the added steps, the reason.

    >>> from hgm_engine.llm import ScriptedClient, propose_rewrite
    >>> path = {"id": "p1", "steps": [{"name": "a"}, {"name": "b"}]}
    >>> answer = ('{"kept": [0], "changed": [{"index": 1, "step": {"name": "b2", "content": "b, politely"}}],'
    ...           ' "added": [{"after": -1, "step": {"name": "login"}}], "removed": [], "reason": "log in first"}')
    >>> proposal = propose_rewrite(path, "needs a login", client=ScriptedClient([answer]), model="m")
    >>> print("\\n".join(proposal_lines(proposal, path, arrow=" -> ")))
    proposal for p1 (model m, attempt 1):
      add     before [0]  login
      keep    [0] a
      change  [1] b: name b -> b2; content = "b, politely"
    reason: log in first
    new steps: login -> a -> b2
    """
    old = list(path.get("steps") or [])

    def name(index: int) -> str:
        step = old[index]
        return str(step.get("name", "?")) if isinstance(step, dict) else str(step)

    def described(step: dict[str, Any]) -> str:
        content = step.get("content")
        return f"{step['name']}: {content}" if content else str(step["name"])

    used = proposal.attempts[-1].number
    lines = [f"proposal for {proposal.path_id} (model {proposal.model}, attempt {used}):"]
    for attempt in proposal.attempts[:-1]:
        lines.append(f"  (attempt {attempt.number} failed: {'; '.join(attempt.problems)})")
    for op in proposal.ops:
        if "keep" in op:
            lines.append(f"  keep    [{op['keep']}] {name(op['keep'])}")
        elif "change" in op:
            lines.append(f"  change  [{op['change']}] {name(op['change'])}: {_changes(old[op['change']], op['step'], arrow)}")
        elif "remove" in op:
            lines.append(f"  remove  [{op['remove']}] {name(op['remove'])}")
        else:
            where = "before [0]" if op["after"] == -1 else f"after [{op['after']}]"
            lines.append(f"  add     {where}  {described(op['add'])}")
    lines.append(f"reason: {proposal.reason}")
    lines.append("new steps: " + arrow.join(str(step.get("name")) for step in proposal.steps))
    return lines


def _changes(old: Any, update: dict[str, Any], arrow: str) -> str:
    """What a ``change`` op does to a step: ``name a → b; content "x" → "y"; args removed``."""
    old = old if isinstance(old, dict) else {"name": str(old)}
    parts = []
    for key, value in update.items():
        if value is None:
            if key in old:
                parts.append(f"{key} removed")
        elif old.get(key) != value:
            shown = (lambda v: v if key == "name" else json.dumps(v, ensure_ascii=False))
            parts.append(f"{key} {shown(old[key])}{arrow}{shown(value)}" if key in old else f"{key} = {shown(value)}")
    return "; ".join(parts) or "unchanged"


def _rewrite(args: argparse.Namespace, out: Output) -> int:
    arrow = " → " if out.unicode else " -> "

    def failed(err: HGMError, proposal: Proposal | None = None) -> int:
        # The storm guards refuse like constraints do (exit 3).
        code = EXIT_REFUSED if err.category in REFUSALS else EXIT_FAILURE
        if out.as_json:
            doc = err.to_json()
            doc["committed"] = False
            if isinstance(err, RewriteProposalError):
                doc["attempts"] = [a.to_json() for a in err.attempts]
            if proposal is not None:
                doc["proposal"] = proposal.to_json()
            out.document(doc)
            return code
        return out.error(err, code)

    def run(memory: Memory) -> int:
        try:
            path = memory.path(args.path_id)
        except HGMError as err:
            return failed(err)
        refusal = guard_refusal(memory, path)
        if refusal is not None:
            return failed(refusal)
        try:
            proposal = propose_rewrite(
                path, args.feedback, model=args.model, max_attempts=args.attempts, timeout=args.timeout,
                retries=args.retries,
            )
        except RewriteProposalError as err:
            return failed(err)
        if args.dry_run:
            if out.as_json:
                out.document({"committed": False, "dry_run": True, "proposal": proposal.to_json()})
            else:
                out.lines(proposal_lines(proposal, path, arrow=arrow))
                out.line("(dry run: nothing was committed)")
            return EXIT_OK
        try:
            report = rewrite_with_llm(memory, args.path_id, args.feedback, author=args.author, proposal=proposal)
        except TransactionRefused as refusal:
            report = refusal.report
        except HGMError as err:
            return failed(err, proposal)
        if out.as_json:
            out.document({**report.to_json(), "proposal": proposal.to_json()})
        else:
            out.lines(proposal_lines(proposal, path, arrow=arrow))
        if not report.committed:
            if not out.as_json:
                print("refused: the rewrite breaks constraints; nothing was committed", file=out.err)
                for v in report.violations:
                    print(f"  {v.constraint} at {v.node}: {v.message}", file=out.err)
            return EXIT_REFUSED
        if not out.as_json:
            created = f" (new nodes: {', '.join(report.created)})" if report.created else ""
            out.line(f"committed t={report.t}: {args.path_id} rewritten{created}")
        return EXIT_OK

    return on_db(args.db, out, run)


_attempts = integer_in(1, 10)
_retries = integer_in(0, MAX_RETRIES)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {value}")
    return value


def register(commands: Commands) -> None:
    """Add ``hgm rewrite`` to the ``hgm`` parser (the module's example parses one)."""
    rewrite = add_command(
        commands,
        "rewrite",
        "let a model propose a rewrite of a stored path, validate it and commit it",
        "Send the path PATH_ID and the feedback to an OpenAI-compatible chat endpoint "
        "(OPENAI_BASE_URL, OPENAI_API_KEY; model: --model or $" + MODEL_ENV + "). The answer "
        "must be JSON valid against the rewrite schema (kept, changed, added and removed steps "
        "and a reason) and account for every old step; an invalid answer is sent back with what "
        "is wrong, up to --attempts requests in all. A valid proposal is committed as a new "
        "version of the path (the old one superseded); otherwise nothing changes and every "
        "attempt's problem is listed (exit 1). A path the storm guards stop (rewrite-cap, "
        "version-cap, needs-human) is refused before the model is asked (exit 3), as is a "
        "rewrite that breaks constraints. docs/llm.md explains the prompt and the schema.",
        examples(
            "hgm rewrite order-17 --feedback 'the order API now needs a login first' --db memory.db",
            "hgm rewrite order-17 --feedback 'skip the SMS step' --db memory.db --dry-run",
            "hgm rewrite order-17 --feedback '...' --db memory.db --model qwen2.5-7b-instruct --attempts 5 --json",
            note="with --json: the transaction report with the \"proposal\" (ops, new steps, reason,\n"
            "attempts); on failure {\"error\": {..., \"problems\": [...]}, \"committed\": false, \"attempts\": [...]};\n"
            "with --dry-run {\"committed\": false, \"dry_run\": true, \"proposal\": {...}}.",
        ),
        _rewrite,
    )
    rewrite.add_argument("path_id", metavar="PATH_ID", help="the stored path to rewrite")
    rewrite.add_argument("--feedback", required=True, metavar="TEXT", help="what went wrong or changed")
    rewrite.add_argument("--db", required=True, metavar="PATH", help=DB_HELP)
    rewrite.add_argument("--model", metavar="M", help=f"the model name (default: ${MODEL_ENV} or gpt-4o-mini)")
    rewrite.add_argument(
        "--attempts", type=_attempts, default=DEFAULT_ATTEMPTS, metavar="N",
        help=f"answers to ask for at most: an invalid one is sent back to be repaired (default {DEFAULT_ATTEMPTS})",
    )
    rewrite.add_argument(
        "--retries", type=_retries, default=DEFAULT_RETRIES, metavar="N",
        help=f"retries of a request that gets no answer (timeout, connection, HTTP 408/409/429/5xx), with "
        f"backoff and the server's Retry-After (0-{MAX_RETRIES}, default {DEFAULT_RETRIES})",
    )
    rewrite.add_argument(
        "--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="S",
        help=f"seconds to wait for each answer (default {DEFAULT_TIMEOUT:g})",
    )
    rewrite.add_argument("--author", metavar="A", help="who rewrites (default llm:MODEL)")
    rewrite.add_argument("--dry-run", action="store_true", help="show the validated proposal, commit nothing")
    add_json_flag(rewrite, "print one JSON document (see below)")
