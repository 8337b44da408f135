"""What one query may cost: the limits checked while it compiles and while it runs.

Compiling is bounded before it starts (text length, nesting depth, the size and shape of each
regular expression); running is bounded as it goes (work, time, the size of a ``paths()``
result). Over a limit is an error of category ``limit-exceeded``: a
:class:`~hgm_engine.errors.QueryAnalysisError` with a position while compiling, a
:class:`~hgm_engine.errors.QueryExecutionError` while running.

>>> Limits(max_work=10).max_work, DEFAULT_LIMITS.max_depth
(10, 64)
>>> limit_exceeded("too deep", "root", 2).render()
'limit-exceeded at line 1, column 3: too deep\\n    root\\n      ^'
"""

from __future__ import annotations

from hgm_engine.errors import Problem, QueryAnalysisError, line_column

__all__ = ["Limits", "DEFAULT_LIMITS", "limit_exceeded", "MAX_INTEGER_DIGITS"]

# The longest integer a query may write: CPython's own default for converting text to int
# (``sys.get_int_max_str_digits``); a longer one could be neither read nor printed.
MAX_INTEGER_DIGITS = 4300


class Limits:
    """How much one query may ask for; over a limit it is stopped with ``limit-exceeded``.

    While it runs: ``max_work`` counts the nodes a query reads (start lists, scanned
    candidates, filtered and navigated nodes, and every node id of the walks ``paths()``
    builds); ``timeout`` (seconds, None for none) bounds the whole run; ``regex_timeout``
    bounds one regular-expression match and ``regex_budget`` (seconds, None for none) all the
    matches of one query together; ``max_output`` bounds the node ids the walks of a
    ``paths()`` result hold together (a chain of n nodes has walks of n²/2 ids).

    While it compiles — queries, constraints and rule files alike: ``max_length`` characters
    of a query or a constraint, ``max_file_length`` of a rule file; ``max_depth`` levels of nesting (docs/language.md §13 says what counts);
    ``max_regex_length`` characters per regular expression; ``max_regex_size`` items that
    the regular expressions of one query may expand to when compiled (``a{5000}`` is 5,001);
    ``max_regex_unbounded`` unbounded quantifiers per regular expression; ``max_search_length``
    characters of the text of one ``search(TEXT)`` or ``.rank(TEXT)`` (a literal, or a
    parameter's value when it is bound). The postings a search reads count as work
    (``max_work``), and so does every node it returns.

    >>> Limits(max_work=10).max_work
    10
    >>> Limits(max_depth=8).compile_key() != DEFAULT_LIMITS.compile_key()
    True
    """

    __slots__ = (
        "max_work",
        "timeout",
        "regex_timeout",
        "regex_budget",
        "max_output",
        "max_length",
        "max_file_length",
        "max_depth",
        "max_regex_length",
        "max_regex_size",
        "max_regex_unbounded",
        "max_search_length",
    )

    def __init__(
        self,
        max_work: int | None = 50_000_000,
        timeout: float | None = None,
        regex_timeout: float = 1.0,
        *,
        regex_budget: float | None = 10.0,
        max_output: int | None = 5_000_000,
        max_length: int = 20_000,
        max_file_length: int = 1_000_000,
        max_depth: int = 64,
        max_regex_length: int = 1000,
        max_regex_size: int = 10_000,
        max_regex_unbounded: int = 8,
        max_search_length: int = 4_000,
    ):
        self.max_work = max_work
        self.timeout = timeout
        self.regex_timeout = regex_timeout
        self.regex_budget = regex_budget
        self.max_output = max_output
        self.max_length = max_length
        self.max_file_length = max_file_length
        self.max_depth = max_depth
        self.max_regex_length = max_regex_length
        self.max_regex_size = max_regex_size
        self.max_regex_unbounded = max_regex_unbounded
        self.max_search_length = max_search_length

    def compile_key(self) -> tuple:
        """The limits compiling depends on: a compiled query is reused only under the same.

        >>> Limits(max_work=1).compile_key() == Limits().compile_key()
        True
        """
        return (
            self.max_length, self.max_file_length, self.max_depth, self.max_regex_length, self.max_regex_size,
            self.max_regex_unbounded, self.max_search_length,
        )

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in Limits.__slots__)
        return f"Limits({fields})"


DEFAULT_LIMITS = Limits()


def limit_exceeded(message: str, source: str | None, offset: int | None, *, excerpt: bool = True) -> QueryAnalysisError:
    """A ``limit-exceeded`` error at ``offset`` of ``source`` (compile-time limits).

    With ``excerpt=False`` the source is not kept for a caret (a text refused for its
    length is not echoed back).

    >>> err = limit_exceeded("the query is too long", "x" * 10, 5, excerpt=False)
    >>> (err.category, err.column, err.excerpt)
    ('limit-exceeded', 6, '')
    """
    line = column = None
    if source is not None and offset is not None:
        line, column = line_column(source, offset)
    return QueryAnalysisError([Problem("limit-exceeded", message, line, column)], source if excerpt else None)
