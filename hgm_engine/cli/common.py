"""What every ``hgm`` command shares: the exit codes, the :class:`Output` a command writes to,
how errors are shown, reading files, opening a memory (``--db``), ``--params`` and ``--as-of``
values, and how a transaction report is printed.

Every command handler is ``run(args, out) -> exit code``: it writes through ``out`` and never
raises an :class:`~hgm_engine.errors.HGMError` (it reports it and returns its exit code).

>>> import io
>>> out = Output(io.StringIO(), io.StringIO())
>>> out.failure("unknown-node", "no node 'x'", where="--root")
1
>>> print(out.err.getvalue(), end="")
error: unknown-node at --root: no node 'x'
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import pathlib
import re
import shlex
import sys
from typing import Any, Callable, Iterable, Iterator, Mapping, TextIO

from hgm_engine.errors import GraphFileError, HGMError, Problem, QueryAnalysisError, StoreError, caret_excerpt
from hgm_engine.memory import Memory
from hgm_engine.model import parse_instant, parse_json, text_problem, value_problem
from hgm_engine.render.text import Glyphs, change_lines, glyphs_for, json_terminal_safe, plural, terminal_safe
from hgm_engine.store import DEFAULT_MEMORY, check_memory_name, open_store
from hgm_engine.store.graphfile import parse_graph_text  # not (yet) exported by hgm_engine.store
from hgm_engine.txn import TransactionReport, change_to_json

__all__ = [
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_QUERY_ERROR",
    "EXIT_REFUSED",
    "EXCERPT_WIDTH",
    "Output",
    "unicode_ok",
    "render_error",
    "problem_count",
    "input_name",
    "read_text",
    "unreadable",
    "read_document",
    "load_graph_file",
    "is_url",
    "shown",
    "open_memory",
    "MEMORY_ENV",
    "chosen_memory",
    "current_memory",
    "on_db",
    "on_graph_or_db",
    "parse_params",
    "resolve_t",
    "violation_lines",
    "print_report",
    "report_failure",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_QUERY_ERROR = 2
EXIT_REFUSED = 3

EXCERPT_WIDTH = 100  # a longer source line is shown as a window around the caret


# -- output ----------------------------------------------------------------------------------


def unicode_ok(stream: TextIO) -> bool:
    """Whether ``stream`` can take box-drawing characters (a StringIO can take anything).

    >>> import io
    >>> unicode_ok(io.StringIO()), unicode_ok(io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    (True, False)
    """
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        "├└│→…".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


class Output:
    """Where a command writes: stdout for results, stderr for people's error messages.

    ``as_json`` is the command's ``--json``: results and errors are then one JSON document on
    stdout. ``unicode`` says whether stdout can take box drawing and arrows.

    Text for people goes out with every control character escaped (``\\x1b``: an id or a
    content cannot drive the terminal); JSON goes out as the same JSON value, with the
    control characters JSON leaves raw written as ``\\u`` escapes.

    >>> import io
    >>> out = Output(io.StringIO(), io.StringIO(), as_json=True)
    >>> out.document({"t": 3}); out.out.getvalue()
    '{"t": 3}\\n'
    """

    def __init__(self, out: TextIO, err: TextIO, as_json: bool = False):
        self.out = out
        self.err = err
        self.as_json = as_json
        self.unicode = unicode_ok(out)

    @property
    def glyphs(self) -> Glyphs:
        """The characters pictures on this output are drawn with."""
        return glyphs_for(self.unicode)

    def line(self, text: str = "") -> None:
        print(terminal_safe(text), file=self.out)

    def lines(self, lines: Iterable[str], indent: str = "") -> None:
        for text in lines:
            print(terminal_safe(indent + text) if text else "", file=self.out)

    def document(self, doc: Mapping[str, Any]) -> None:
        print(json_terminal_safe(json.dumps(doc, ensure_ascii=not self.unicode)), file=self.out)

    def note(self, text: str) -> None:
        """A message for people on stderr (control characters escaped)."""
        print(terminal_safe(text), file=self.err)

    def error(self, err: HGMError, code: int, label: str | None = None) -> int:
        """Report ``err`` (JSON on stdout with ``--json``, else text on stderr); returns ``code``."""
        if self.as_json:
            self.document(err.to_json())
        else:
            self.note("\n".join(render_error(err, label)))
        return code

    def failure(self, category: str, message: str, where: str | None = None) -> int:
        """A failure that is not a query error (exit 1), reported like one."""
        return self.error(HGMError([Problem(category, message, where=where)]), EXIT_FAILURE)


def render_error(err: HGMError, label: str | None = None) -> list[str]:
    """Every problem of ``err``: ``error: CATEGORY at PLACE: MESSAGE`` and a caret excerpt.

    With ``label`` (a file's problems) a heading ``LABEL`` comes first and the problems are
    indented below it.

    >>> from hgm_engine import compile
    >>> try:
    ...     compile("root.subgoal")
    ... except HGMError as err:
    ...     print("\\n".join(render_error(err)))
    error: unknown-name at line 1, column 6: unknown relation 'subgoal'; did you mean 'subgoals'?
        root.subgoal
             ^
    """
    lines: list[str] = []
    if label is not None:
        lines.append(terminal_safe(label))
    for problem in err.problems:
        prefix = "  " if label is not None else "error: "
        lines.append(terminal_safe(f"{prefix}{problem.category}{problem.place}: {problem.message}"))
        excerpt = "" if err.source is None else caret_excerpt(err.source, problem.line, problem.column, width=EXCERPT_WIDTH)
        if excerpt:
            indent = "      " if label is not None else "    "
            lines.extend(terminal_safe(indent + text) for text in excerpt.split("\n"))
    return lines


def problem_count(err: HGMError) -> str:
    """``1 problem``, ``3 problems``: how many ``err`` holds.

    >>> problem_count(GraphFileError([Problem("io", "cannot read x.json")]))
    '1 problem'
    """
    return plural(len(err.problems), "problem")


# -- reading files ---------------------------------------------------------------------------


def input_name(path: str) -> str:
    """A FILE argument as messages name it (``-`` is standard input).

    >>> input_name("-"), input_name("trip.json")
    ('standard input', 'trip.json')
    """
    return "standard input" if path == "-" else path


def read_text(path: str) -> str:
    """The text of the file ``path`` (``-``: standard input); GraphFileError ``io`` if unreadable.

    >>> read_text("no/such/file.json")
    Traceback (most recent call last):
    ...
    hgm_engine.errors.GraphFileError: io: cannot read no/such/file.json: No such file or directory
    """
    try:
        if path == "-":
            return sys.stdin.read()
        return pathlib.Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GraphFileError([Problem("io", f"cannot read {input_name(path)}: {unreadable(exc)}")]) from None


def unreadable(exc: OSError | UnicodeDecodeError) -> str:
    """Why a file could not be read as text, for an ``io`` error's message.

    >>> unreadable(FileNotFoundError(2, "No such file or directory"))
    'No such file or directory'
    >>> try:
    ...     b"caf\\xe9".decode("utf-8")
    ... except UnicodeDecodeError as exc:
    ...     unreadable(exc)
    "it is not UTF-8 text (byte b'\\\\xe9' at offset 3)"
    """
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} at offset {exc.start})"
    return exc.strerror or str(exc)


def read_document(path: str) -> Any:
    """The JSON document of a graph file; GraphFileError (``io`` or ``invalid-json``) if not.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "broken.json")
    >>> _ = open(path, "w").write('{"nodes": [1,]}')
    >>> try:
    ...     read_document(path)
    ... except GraphFileError as err:
    ...     print(err.category, err.line, err.column, err.message)
    invalid-json 1 14 not valid JSON: Expecting value
    """
    return parse_graph_text(read_text(path), "not valid JSON")


def load_graph_file(path: str, out: Output) -> Memory | int:
    """The memory in the graph file ``path``, or the exit code after reporting why not.

    >>> import io
    >>> out = Output(io.StringIO(), io.StringIO())
    >>> load_graph_file("no/such/file.json", out), out.err.getvalue()
    (1, 'error: io: cannot read no/such/file.json: No such file or directory\\n')
    """
    try:
        return Memory.from_document(read_document(path))
    except GraphFileError as err:
        if err.category == "io":
            return out.error(err, EXIT_FAILURE)
        return out.error(err, EXIT_FAILURE, label=f"error: {path}: {problem_count(err)}; nothing was loaded")


# -- opening a memory (--db) -------------------------------------------------------------------


def is_url(location: str) -> bool:
    """Whether a ``--db`` value is a PostgreSQL URL rather than a SQLite file.

    >>> is_url("postgresql://127.0.0.1/memory"), is_url("memory.db")
    (True, False)
    """
    return location.startswith(("postgresql://", "postgres://"))


def shown(location: str) -> str:
    """A --db location as printed: a URL's password is never shown.

    >>> shown("postgresql://hgm:secret@127.0.0.1:5432/memory")
    'postgresql://hgm:***@127.0.0.1:5432/memory'
    """
    return re.sub(r"(://[^:/@]+:)[^@/]*@", r"\1***@", location)


MEMORY_ENV = "HGM_MEMORY"  # the memory every command uses when no --memory is given
_CHOSEN: contextvars.ContextVar[str | None] = contextvars.ContextVar("hgm_memory", default=None)


@contextlib.contextmanager
def chosen_memory(name: str | None, where: str = "--memory") -> Iterator[None]:
    """While inside, :func:`open_memory` opens the memory ``name`` of a store (None:
    ``default``); a bad name is a ``RequestError`` ``invalid-memory-name`` at ``where``.

    >>> with chosen_memory("acme/alice"):
    ...     current_memory()
    'acme/alice'
    >>> current_memory() is None
    True
    """
    if name is not None:
        check_memory_name(name, where=where)
    token = _CHOSEN.set(name)
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def current_memory() -> str | None:
    """The memory name chosen by ``--memory`` or ``$HGM_MEMORY`` (None: ``default``).

    >>> current_memory() is None
    True
    """
    return _CHOSEN.get()


def open_memory(path: str, *, create: bool) -> Memory:
    """The memory at ``path`` (a SQLite file or a ``postgresql://`` URL), or its memory named
    by ``--memory`` (:func:`chosen_memory`). Commands that only read refuse a memory that
    does not exist (a mistyped path must not quietly become a new, empty memory); a named
    memory must have been made with ``hgm memories create``.

    >>> open_memory("no/such/memory.db", create=False)
    Traceback (most recent call last):
    ...
    hgm_engine.errors.HGMError: io at --db: no memory at no/such/memory.db; create one with 'hgm load FILE.json --db no/such/memory.db' or 'hgm apply FILE.json --db no/such/memory.db'
    """
    name = current_memory()
    if name is not None and name != DEFAULT_MEMORY:
        return Memory.open(path, memory=name)
    if not create and not is_url(path) and not pathlib.Path(path).exists():
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
    store = open_store(path, create=create)
    try:
        return Memory(store=store)
    except BaseException:  # a store that opens but whose state cannot be read (damage)
        store.close()
        raise


def on_db(path: str, out: Output, command: Callable[[Memory], int], *, create: bool = False) -> int:
    """Run ``command`` on the memory at ``path`` and close it (which saves the path index);
    exit 1 if it cannot be opened, or if the store fails while the command runs (a damaged
    row, a read-only file, a full disk: the ``StoreError`` is reported like any error).

    >>> import io, os, tempfile
    >>> out = Output(io.StringIO(), io.StringIO())
    >>> on_db(os.path.join(tempfile.mkdtemp(), "new.db"), out, lambda memory: memory.t, create=True)
    0
    >>> on_db("no/such/memory.db", out, lambda memory: memory.t)
    1
    >>> def damaged(memory):
    ...     raise StoreError([Problem("store", "m.db is damaged: journal row t=3 is not a JSON object", where="m.db")])
    >>> on_db(os.path.join(tempfile.mkdtemp(), "new.db"), out, damaged, create=True)
    1
    >>> print(out.err.getvalue().splitlines()[-1])
    error: store at m.db: m.db is damaged: journal row t=3 is not a JSON object
    """
    try:
        memory = open_memory(path, create=create)
    except HGMError as err:
        return out.error(err, EXIT_FAILURE)
    for line in broken_notice(memory, path):
        print(line, file=out.err)
    try:
        return command(memory)
    except StoreError as err:
        return out.error(err, EXIT_FAILURE)
    finally:
        memory.close()


def broken_notice(memory: Memory, path: str) -> list[str]:
    """Lines for stderr naming each stored object of ``memory`` that is broken (so inactive),
    why, and the command that removes it.

    >>> from hgm_engine.store import InMemoryStore
    >>> store = InMemoryStore()
    >>> store.set_constraint("bad", "each fakt must has(content)")
    >>> print("\\n".join(broken_notice(Memory(store=store), "m.db")))
    warning: constraint 'bad' is broken and inactive: unknown-name at line 1, column 6: unknown node type 'fakt'; did you mean 'fact'?
      remove it with: hgm constraint remove bad --db m.db
    """
    def word(text: str) -> str:  # a shell word; a name with control characters only as its repr
        return shlex.quote(text) if text.isprintable() else f"NAME (the name {text!r})"

    lines = []
    db = word(shown(path))
    for broken in memory.broken():
        if broken.kind == "constraint":
            fix = f"remove it with: hgm constraint remove {word(broken.name)} --db {db}"
        elif broken.kind == "rule set":
            fix = f"remove it with: hgm rules remove {word(broken.name)} --db {db}"
        else:
            fix = f"loading a rule set rewrites it: hgm rules load FILE --db {db}"
        lines += [f"warning: {broken}", f"  {fix}"]
    return lines


def on_graph_or_db(args: Any, out: Output, command: Callable[[Memory, str], int]) -> int:
    """Run ``command(memory, source)`` on the graph file ``args.graph`` or the memory at
    ``args.db`` (``source`` is the one given); ``--as-of`` needs ``--db`` (exit 1).

    >>> import argparse, io
    >>> out = Output(io.StringIO(), io.StringIO(), as_json=True)
    >>> on_graph_or_db(argparse.Namespace(graph="g.json", db=None, as_of="1"), out, lambda memory, source: 0)
    1
    >>> out.out.getvalue()  # doctest: +ELLIPSIS
    '{"error": {"category": "invalid-argument", "message": "--as-of needs --db: a graph file has no history", ...}}\\n'
    """
    if args.db is not None:
        return on_db(args.db, out, lambda memory: command(memory, args.db))
    if args.as_of is not None:
        return out.failure("invalid-argument", "--as-of needs --db: a graph file has no history", where="--as-of")
    memory = load_graph_file(args.graph, out)
    if isinstance(memory, int):
        return memory
    return command(memory, args.graph)


# -- option values -----------------------------------------------------------------------------


def parse_params(text: str | None) -> dict[str, Any] | None:
    """The ``--params`` object; anything else is an ``invalid-argument`` query error.

    >>> parse_params('{"s": "done"}')
    {'s': 'done'}
    >>> parse_params('[1]')
    Traceback (most recent call last):
    ...
    hgm_engine.errors.QueryAnalysisError: invalid-argument at --params: --params must be a JSON object such as {"s": "pending"}, not a list
    >>> parse_params('{"s": NaN}')
    Traceback (most recent call last):
    ...
    hgm_engine.errors.QueryAnalysisError: invalid-argument at --params.s: NaN is not a JSON number: numbers must be finite
    """
    if text is None:
        return None

    def refuse(message: str) -> QueryAnalysisError:
        return QueryAnalysisError([Problem("invalid-argument", message, where="--params")])

    try:
        value = parse_json(text)
    except json.JSONDecodeError as exc:
        raise refuse(f"--params is not valid JSON: {exc.msg} (character {exc.pos + 1})") from None
    if not isinstance(value, dict):
        kinds = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
        kind = kinds.get(type(value), "null")
        raise refuse(f'--params must be a JSON object such as {{"s": "pending"}}, not {kind}')
    for name, item in value.items():  # the rules every value follows (docs/transactions.md)
        problem = text_problem(name, "--params", "a parameter name") or value_problem(item, f"--params.{name}")
        if problem is not None:
            raise QueryAnalysisError([Problem("invalid-argument", problem.message, where=problem.where)])
    return value


def resolve_t(memory: Memory, text: str) -> int | str:
    """``text`` (an ``--as-of``, ``--since`` or T argument) as a ``t``: a number, the ``t`` a
    snapshot names, or for an ISO 8601 time the last commit at or before it (unknown names
    are left for the memory to refuse, with the known ones).

    >>> resolve_t(Memory(), "3"), resolve_t(Memory(), "before"), resolve_t(Memory(), "²"), resolve_t(Memory(), "2026-03-01T09:30:00Z")
    (3, 'before', '²', 0)
    """
    digits = text.lstrip("-")
    if digits.isascii() and digits.isdigit() and len(digits) <= 18:  # a longer one: the memory says why not
        return int(text)
    snapshots = memory.snapshots()
    if text in snapshots:
        return snapshots[text]
    if parse_instant(text) is not None:
        return memory.resolve_t(text)
    return text


# -- transaction reports -------------------------------------------------------------------------


def violation_lines(violations: Iterable[Any]) -> list[str]:
    """Constraint violations one per line: ``  CONSTRAINT at NODE: MESSAGE``.

    >>> from hgm_engine.txn import Violation
    >>> violation_lines([Violation("done_has_result", "a1", "no result")])
    ['  done_has_result at a1: no result']
    """
    lines = []
    for violation in violations:
        place = f" at {violation.node}" if violation.node is not None else ""
        lines.append(f"  {violation.constraint}{place}: {violation.message}")
    return lines


def print_report(out: Output, report: TransactionReport) -> int:
    """A transaction report: the JSON document, or for people what was committed (stdout) or
    why it was refused (stderr). Returns 3 when constraints refused it, else 0.

    >>> import io
    >>> memory = Memory.from_document({"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []})
    >>> report = memory.apply({"author": "me", "ops": [{"op": "update_node", "id": "g", "set": {"status": "done"}}]})
    >>> out = Output(io.StringIO(), io.StringIO())
    >>> print_report(out, report)
    0
    >>> print(out.out.getvalue(), end="")
    committed t=2 by me
      ~ node g: status (unset) → "done"
    """
    refused = bool(report.violations)
    if out.as_json:
        out.document(report.to_json())
        return EXIT_REFUSED if refused else EXIT_OK
    changes = [change_to_json(change) for change in report.changes]
    by = f" by {report.author}" if report.author else ""
    base = f" (base_t {report.base_t})" if report.base_t is not None else ""
    reason = f": {report.reason}" if report.reason else ""
    if report.committed:
        out.line(f"committed t={report.t}{by}{base}{reason}")
    elif report.dry_run:
        outcome = "would be refused" if refused else "would commit"
        out.line(f"dry run{by}{base}{reason}: {outcome} {plural(len(changes), 'change')}; nothing was written")
    if report.committed or report.dry_run:
        out.lines(change_lines(changes, unicode=out.unicode) or ["(no changes)"], indent="  ")
        if report.fired_rules:
            out.line("fired rules: " + ", ".join(report.fired_rules))
        for entry in report.dirtied:
            because = f" (because of {', '.join(entry.get('because', []))})" if entry.get("because") else ""
            out.line(f"dirtied: {entry.get('id')} {entry.get('state', '')}{because}".rstrip())
    if refused:
        heading = "dry run: refused" if report.dry_run else "refused"
        out.note(f"{heading} by constraints: {plural(len(report.violations), 'violation')}; nothing was committed")
        out.note("\n".join(violation_lines(report.violations)))
        return EXIT_REFUSED
    return EXIT_OK


def report_failure(out: Output, err: HGMError, doc: Any = None, *, dry_run: bool = False) -> int:
    """A transaction that could not run (malformed, conflict, unreadable, no store): exit 1.
    With --json, a report-shaped document whose ``error`` says why (formats.md); ``doc`` (the
    transaction, if it was read) gives the report its author, reason and base_t.

    >>> import io
    >>> out = Output(io.StringIO(), io.StringIO())
    >>> report_failure(out, HGMError([Problem("conflict", "a1 changed at t=4")]))
    1
    >>> print(out.err.getvalue(), end="")
    error: conflict: a1 changed at t=4
    nothing was committed
    """
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
        out.note("\n".join(render_error(err)))
        out.note("nothing was committed")
    return EXIT_FAILURE
