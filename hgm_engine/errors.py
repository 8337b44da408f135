"""Errors: one root, one subclass per stage, every one with a category and a position.

A category is data (``syntax``, ``unknown-name``, ...) rather than a class, so callers branch
on ``err.category`` and the CLI prints it verbatim. An error may bundle several problems
(analysis and file validation report everything they find); the error's own fields are those
of the first problem.

>>> err = QueryAnalysisError.single("unknown-name", "no relation 'subgoal'", "root.subgoal", 5)
>>> (err.category, err.line, err.column)
('unknown-name', 1, 6)
>>> print(err.excerpt)
root.subgoal
     ^
"""

from __future__ import annotations

from typing import Any, Iterable

import attrs

__all__ = [
    "Problem",
    "HGMError",
    "QuerySyntaxError",
    "QueryAnalysisError",
    "QueryExecutionError",
    "GraphFileError",
    "SchemaError",
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


def caret_excerpt(text: str, line: int | None, column: int | None) -> str:
    """The line of ``text`` at ``line`` with a caret under ``column``.

    >>> print(caret_excerpt("root.subgoals[", 1, 15))
    root.subgoals[
                  ^
    """
    if line is None or column is None:
        return ""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return ""
    source_line = lines[line - 1]
    # Tabs keep their width so the caret stays under the right character.
    pad = "".join("\t" if ch == "\t" else " " for ch in source_line[: column - 1])
    return f"{source_line}\n{pad}^"


@attrs.frozen
class Problem:
    """One thing wrong, with where it is (``line``/``column`` are 1-based, or None)."""

    category: str
    message: str
    line: int | None = None
    column: int | None = None
    where: str | None = None  # a node id, op index or file location when not a text position

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
            where = ""
            if problem.line is not None:
                where = f" at line {problem.line}, column {problem.column}"
            elif problem.where is not None:
                where = f" at {problem.where}"
            text = f"{problem.category}{where}: {problem.message}"
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


class QuerySyntaxError(HGMError):
    """The query (or rule) text does not parse: category ``syntax``."""

    stage = "parse"


class QueryAnalysisError(HGMError):
    """The query parses but means nothing the schema knows, or misuses an argument."""

    stage = "analyze"


class QueryExecutionError(HGMError):
    """Raised while binding or running a query (``missing-focus``, limits)."""

    stage = "execute"


class GraphFileError(HGMError):
    """A graph document is malformed or breaks the schema; nothing was loaded."""

    stage = "load"


class SchemaError(HGMError):
    """A schema definition is inconsistent (e.g. a relation over an unknown edge type)."""

    stage = "schema"
