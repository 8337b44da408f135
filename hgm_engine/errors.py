"""Errors: one root, one subclass per stage, every one with a category and a position.

A category is data (``syntax``, ``unknown-name``, ...) rather than a class, so callers branch
on ``err.category`` and the CLI prints it verbatim. An error may bundle several problems
(analysis and file validation report everything they find); the error's own fields are those
of the first problem.

Every error hgm raises on purpose is defined here. Errors about what the caller passed (a
query, a document, a transaction, a rule file, an argument) are also ``ValueError``, so code
that already handles bad values handles them too:

    HGMError
    ├── QuerySyntaxError       (ValueError)  parse
    ├── QueryAnalysisError     (ValueError)  analyze
    ├── QueryExecutionError                  execute: missing focus, limits
    ├── GraphFileError         (ValueError)  load
    ├── SchemaError            (ValueError)  schema
    ├── TransactionError       (ValueError)  transaction
    │   └── ConflictError                    a base_t conflict
    ├── TransactionRefused                   constraints refused a commit (``report``)
    ├── RuleError              (ValueError)  rules
    ├── RequestError           (ValueError)  memory: unknown snapshot, t out of range, ...
    ├── StoreError                           store: no memory, damaged, read-only, full, locked, newer
    ├── PathError              (ValueError)  paths: ingest, versions, guards (``report``)
    ├── LocalizationError      (ValueError)  localize: path index, embedders, data sets
    ├── SearchError            (ValueError)  search: the node index's embedder and settings
    ├── RewriteProposalError                 llm: no usable rewrite from the model
    └── ServiceError                         server: budgets and request limits

>>> err = QueryAnalysisError.single("unknown-name", "no relation 'subgoal'", "root.subgoal", 5)
>>> (err.category, err.line, err.column)
('unknown-name', 1, 6)
>>> print(err.excerpt)
root.subgoal
     ^
>>> isinstance(err, ValueError), issubclass(StoreError, ValueError)
(True, False)
"""

from __future__ import annotations

from typing import Any, Iterable

import attrs

# The reports some errors carry (TransactionReport, IngestReport, Attempt) are named in
# annotations only: this module is the bottom layer and imports nothing of hgm's.

__all__ = [
    "Problem",
    "HGMError",
    "QuerySyntaxError",
    "QueryAnalysisError",
    "QueryExecutionError",
    "GraphFileError",
    "SchemaError",
    "TransactionError",
    "ConflictError",
    "TransactionRefused",
    "RuleError",
    "RequestError",
    "SearchError",
    "StoreError",
    "PathError",
    "LocalizationError",
    "RewriteProposalError",
    "ServiceError",
    "line_column",
    "caret_excerpt",
]


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a 0-based character offset in ``text``.

    >>> line_column("ab\\ncd", 4)
    (2, 2)
    """
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    last_newline = text.rfind("\n", 0, offset)
    return line, offset - last_newline


def caret_excerpt(text: str, line: int | None, column: int | None, *, width: int | None = None) -> str:
    """The line of ``text`` at ``line`` with a caret under ``column``.

    >>> print(caret_excerpt("root.subgoals[", 1, 15))
    root.subgoals[
                  ^

    With ``width``, a line longer than that is cut to a window of ``width`` characters around
    the column, with ``...`` where it was cut (a terminal shows a one-line query of 400
    characters that way):

    >>> text = "root." + "subgoals." * 6 + "nope." + "subgoals." * 6 + "actions"
    >>> for shown in caret_excerpt(text, 1, text.index("nope") + 1, width=40).split("\\n"):
    ...     print(f"|{shown}")
    |...s.subgoals.subgoals.nope.subgoals.subgoa...
    |                       ^

    An empty string when there is no such line. A line's carriage return (CRLF files) is not
    part of it.
    """
    if line is None or column is None:
        return ""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return ""
    source_line = lines[line - 1].rstrip("\r")
    index = max(0, min(column - 1, len(source_line)))
    start = lead = 0
    shown = source_line
    if width is not None and len(source_line) > width:
        start = max(0, min(index - width // 2, len(source_line) - width))
        shown = source_line[start : start + width]
        if start > 0:
            shown, lead = "..." + shown, 3
        if start + width < len(source_line):
            shown += "..."
    # Tabs keep their width so the caret stays under the right character.
    pad = " " * lead + "".join("\t" if ch == "\t" else " " for ch in source_line[start:index])
    return f"{shown}\n{pad}^"


@attrs.frozen
class Problem:
    """One thing wrong, with where it is (``line``/``column`` are 1-based, or None)."""

    category: str
    message: str
    line: int | None = None
    column: int | None = None
    where: str | None = None  # a node id, op index or file location when not a text position

    @property
    def place(self) -> str:
        """Where the problem is, as messages say it: `` at line L, column C``, `` at WHERE``
        or nothing.

        >>> Problem("x", "m", 1, 6).place, Problem("x", "m", where="ops[0]").place, Problem("x", "m").place
        (' at line 1, column 6', ' at ops[0]', '')
        """
        if self.line is not None:
            return f" at line {self.line}, column {self.column}"
        if self.where is not None:
            return f" at {self.where}"
        return ""

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "category": self.category,
            "message": self.message,
            "line": self.line,
            "column": self.column,
        }
        if self.where is not None:
            doc["where"] = self.where
        return doc


class HGMError(Exception):
    """Root of every error hgm raises on purpose.

    ``problems`` holds everything found; ``category``, ``message``, ``line`` and ``column``
    are those of the first. ``source`` is the text the positions refer to, when there is one.
    """

    stage = "hgm"

    def __init__(self, problems: Iterable[Problem], source: str | None = None):
        self.problems: tuple[Problem, ...] = tuple(problems)
        if not self.problems:
            raise ValueError("an HGMError needs at least one problem")
        self.source = source
        super().__init__(self.render())

    @classmethod
    def single(
        cls,
        category: str,
        message: str,
        source: str | None = None,
        offset: int | None = None,
        *,
        where: str | None = None,
    ) -> "HGMError":
        """An error with one problem located at a 0-based ``offset`` of ``source``."""
        line = column = None
        if source is not None and offset is not None:
            line, column = line_column(source, offset)
        return cls([Problem(category, message, line, column, where)], source)

    @property
    def category(self) -> str:
        return self.problems[0].category

    @property
    def message(self) -> str:
        return self.problems[0].message

    @property
    def line(self) -> int | None:
        return self.problems[0].line

    @property
    def column(self) -> int | None:
        return self.problems[0].column

    @property
    def excerpt(self) -> str:
        """The source line of the first problem with a caret under its column."""
        if self.source is None:
            return ""
        return caret_excerpt(self.source, self.line, self.column)

    def render(self) -> str:
        """Every problem as people read it: category, position, message, caret."""
        parts = []
        for problem in self.problems:
            text = f"{problem.category}{problem.place}: {problem.message}"
            if self.source is not None and problem.line is not None:
                caret = caret_excerpt(self.source, problem.line, problem.column)
                if caret:
                    text += "\n" + _indent(caret)
            parts.append(text)
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The ``{"error": ...}`` document of spec §6, with every problem under ``problems``."""
        first = self.problems[0].to_json()
        if len(self.problems) > 1:
            first["problems"] = [p.to_json() for p in self.problems]
        return {"error": first}


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.split("\n"))


class QuerySyntaxError(HGMError, ValueError):
    """The query (or rule) text does not parse: category ``syntax``."""

    stage = "parse"


class QueryAnalysisError(HGMError, ValueError):
    """The query parses but means nothing the schema knows, or misuses an argument."""

    stage = "analyze"


class QueryExecutionError(HGMError):
    """Raised while binding or running a query (``missing-focus``, limits)."""

    stage = "execute"


class GraphFileError(HGMError, ValueError):
    """A graph document is malformed or breaks the schema; nothing was loaded.

    Categories include ``invalid-json``, ``invalid-document``, ``unknown-name``,
    ``duplicate-id``, ``missing-node`` and ``invalid-value`` (a value the engine does not store:
    a lone surrogate, NaN, an integer of more than 4,300 digits, nesting deeper than 64 levels,
    malformed staleness marks; ``where`` is its place, ``nodes[3].content``)."""

    stage = "load"


class SchemaError(HGMError, ValueError):
    """A schema definition is inconsistent (e.g. a relation over an unknown edge type), a
    schema file breaks the ``hgm-schema/1`` format (``invalid-document``, ``unknown-name``,
    each with its place), or a schema change is refused because what the memory holds breaks
    the new schema (``schema-violation``, ``where`` the node, constraint or rule set)."""

    stage = "schema"


class TransactionError(HGMError, ValueError):
    """A transaction that cannot be applied as written (malformed, unknown node, ...).

    Categories include ``invalid-transaction`` (its shape, a reserved name), ``invalid-value``
    (a value the engine does not store, ``where`` going down to it: ``ops[3].set.tags[1]``),
    ``limit-exceeded`` (more ops than the memory's ``max_ops``), ``unknown-node``,
    ``unknown-edge``, ``unknown-name``, ``duplicate-id``, ``duplicate-edge`` and
    ``already-invalidated`` (``invalidate`` of a fact whose valid time is already closed).
    A ``valid_from``/``valid_to`` that is not ISO 8601, or a ``valid_to`` not after the
    ``valid_from``, is ``invalid-value``."""

    stage = "transaction"


class ConflictError(TransactionError):
    """A transaction naming ``base_t`` touches something committed after it."""


class TransactionRefused(HGMError):
    """Constraints refused the transaction; ``report`` lists every violation."""

    stage = "constraints"

    def __init__(self, report: "TransactionReport"):
        self.report = report
        problems = [
            Problem("constraint-violation", f"{v.constraint}: {v.message}", where=v.node) for v in report.violations
        ] or [Problem("constraint-violation", "refused")]
        super().__init__(problems)


class RuleError(HGMError, ValueError):
    """A rule file that cannot be loaded: ``rule-cycle`` (a trigger cycle), ``limit-exceeded``
    (a condition, target or constraint too deeply nested to compile, or over the query
    compiler's limits, placed at its line and column in the file); syntax and unknown names
    raise the query errors. Also why a stored rule set is broken: any of those, ``store`` (the
    stored list of rule sets cannot be read) or ``internal`` (compiling it failed otherwise)."""

    stage = "rules"


class RequestError(HGMError, ValueError):
    """A request the memory cannot serve (unknown snapshot, ``t`` out of range, a transaction
    that has already ended, an unknown constraint or rule set; ``empty-subtree`` when there
    is nothing under a node to summarize, ``limit-exceeded`` when there is too much).

    For a store of many memories (docs/memories.md) also: ``unknown-memory`` (no memory of that
    name; the message suggests the closest names), ``invalid-memory-name`` (a name that breaks
    the rules: segments of ``[A-Za-z0-9._-]`` joined by ``/``, at most 200 characters),
    ``memory-exists`` (creating a name that is taken) and ``unknown-node`` (purging a node
    that is not there)."""

    stage = "memory"


class StoreError(HGMError):
    """The store cannot be opened, read or written; category ``store``, ``where`` the store.

    It covers: no hgm memory there (a missing file or database, a 0-byte file, another
    program's database, tables without a commit), a damaged store (a missing table or column,
    no store format row, a page or row checksum that does not match, a row that cannot be
    decoded; the message says how to recover), a read-only file or database, no space left
    on the disk, a lock another process holds past the timeout, and a newer store format
    than this hgm reads. Nothing was written when a write fails."""

    stage = "store"


class PathError(HGMError, ValueError):
    """A path request that changed nothing, with why: ``unknown-path``, ``stale-version``,
    ``bad-steps``, ``bad-rewrite``, ``no-change``, ``bad-outcome``, ``unknown-version``, the guard refusals
    ``rewrite-cap``, ``version-cap``, ``needs-human``, ``limit-exceeded`` (more steps or edges
    than ``PathGuards.max_steps`` / ``max_edges``), and for ingest ``invalid-json``,
    ``bad-trajectory``, ``duplicate-id``, ``bad-scenario``, ``unknown-node``,
    ``constraint-violation`` (``report`` then holds the ingest report).

    >>> PathError.single("unknown-path", "no path 'x'").stage
    'paths'
    """

    stage = "paths"
    report: "IngestReport | None" = None


class LocalizationError(HGMError, ValueError):
    """Raised by the path index, the embedders and the task-plan reader: ``bad-path`` (a path
    record or trajectory that breaks the format), ``unknown-path`` (an id the index does not
    hold), ``duplicate-path``, ``bad-state`` (an index state that cannot be restored),
    ``embedder`` (an embedder that is missing, mismatched or failed), ``bad-query`` and
    ``bad-data`` (an unreadable task-plan data set).

    >>> err = LocalizationError.single("unknown-path", "no path 'p9' in the index", where="p9")
    >>> (err.category, err.stage)
    ('unknown-path', 'localize')
    """

    stage = "localize"


class SearchError(HGMError, ValueError):
    """The node index cannot do what was asked; nothing was changed (no commit, no setting):
    ``unknown-embedder`` (a name that is not minilm, openai or openai:MODEL), ``embedder``
    (one that cannot be loaded, an endpoint that failed or answered with vectors of another
    size than the memory's; the servers answer 503), ``invalid-argument`` (a
    setting or a search request that is not one: an empty text, a limit below 0, an unknown
    field).

    >>> err = SearchError.single("embedder", "unknown embedder 'bert'")
    >>> (err.category, err.stage)
    ('embedder', 'search')
    """

    stage = "search"


class RewriteProposalError(HGMError):
    """No usable rewrite came from the model; nothing was changed.

    Categories: ``invalid-model-answer`` (answers came but none was valid),
    ``model-unavailable`` (no answer at all: connection, timeout, server error, no ``openai``
    package) and ``invalid-argument``. When attempts were made, the first problem sums up and
    one problem per attempt follows (``where`` = ``attempt N``).
    """

    stage = "llm"
    attempts: tuple["Attempt", ...] = ()  # every request made, when the model was asked


class ServiceError(HGMError):
    """A request the service refuses before it reaches the engine (limits, missing features).

    Besides the engine's categories, the REST server answers with these of its own (as
    ``{"error": ...}`` documents; ``hgm_engine.server.service.STATUS_BY_CATEGORY`` has the
    statuses): ``request-timeout`` (408: headers or body came too slowly), ``overloaded``
    (503: the work limit is reached; retry), ``stopping`` (503: the server stopped before it
    answered), alongside ``unauthorized``, ``request-too-large`` and ``unsupported-media-type``.
    Scoped access (``hgm_engine.server.tokens``): ``unauthorized`` (401: no bearer token, or
    one the server does not know), ``forbidden`` (403: a token outside its memories, or a read
    token asked to change one) and ``invalid-token-file`` (a token file that cannot be read or
    breaks the format; ``where`` is ``FILE:LINE``; the server does not start).
    """

    stage = "server"
