"""A hand-written reader for queries that gives the AST the grammar's parser gives, or None.

``grammar/hgm.lark`` stays the definition of the language: this module reads the same query
syntax (``start`` of the grammar: paths, steps, conditions, literals) by recursive descent and
builds the very syntax nodes :mod:`hgm_engine.query.parser` builds from Lark's tree, spans
included, so that a fresh process answers its first query without building Lark's lexer and
parser (~5-15 ms, more than a whole small query). It never reports an error: on anything it is
not certain of — a syntax error, an integer too long, a number out of range, nesting over
``max_depth``, parentheses deeper than it recurses — it returns None
and the caller hands the text to Lark, which gives the answer or the error with its
"expected ..." list. ``tests/test_fastparse.py`` holds it equal to Lark's on the compliance
queries, generated queries and token soups.

How it matches Lark's contextual lexer: a token is read where the grammar expects one, with
the terminal's own pattern (``NAME``, ``INT``, ``NUMBER`` before ``INT``, ``STRING``, the
hash forms, ``=~`` before the comparison operators). A word is a keyword only where the
parser's state has that keyword (the sets below, read from Lark's LALR table and checked
against it by the tests), and only as a whole word; a keyword Lark would cut out of a longer
word (``andy`` after an operand is ``and`` ``y`` to Lark) makes this reader give up. Spans
follow Lark's position propagation: a node starts at its first token and ends at its last;
parentheses around a condition widen the span of the node it is an operand of, not its own.

>>> q = parse_query("root.subgoals[0].actions.where(status = 'pending')")
>>> q.paths[0].steps[3].condition.right.value, q.paths[0].steps[3].span
('pending', Span(start=24, end=50))
>>> parse_query("root.where") is None  # a syntax error: Lark says what was expected
True
"""

from __future__ import annotations

import math
from typing import Any

from hgm_engine.query import syntax as S
from hgm_engine.query.limits import MAX_INTEGER_DIGITS

__all__ = ["parse_query", "decode_string", "scan_comparison"]

_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_DIGITS = frozenset("0123456789")
_WORD = _LETTERS | _DIGITS
_HASH_ID = _WORD | {"-"}
_SPACE = frozenset(" \t\r\n")
_CONSTANTS = {"true": True, "false": False, "null": None}
# The keywords of the parser's states that also take a NAME (read from Lark's LALR table):
# a start and a step's name take every word ("where" after a dot is read before); an
# argument, the path or value in a function's parentheses and the right side of a comparison
# take the three constants; the left side of a comparison takes "not" too.
_NO_WORDS: frozenset = frozenset()
_LITERAL_WORDS = frozenset(_CONSTANTS)
_OPERAND_WORDS = _LITERAL_WORDS | {"not"}
_COMPARISONS = ("==", "!=", "<=", ">=", "<", ">", "=")
_COMPARISON_SET = frozenset(_COMPARISONS)
# Words the fast path of a simple comparison does not take as its attribute's name (the
# constants and every keyword: the general reader decides what they are there).
_SIMPLE_NOT_NAMES = frozenset({"true", "false", "null", "not", "and", "or", "in", "contains", "where"})
_DEEPEST = 200  # recursion of this reader (parentheses count); deeper texts go to Lark
_NESTING = (S.WhereStep, S.SubqueryStart, S.FuncCall, S.Not, S.Or, S.And, S.Compare, S.ListLiteral)


def decode_string(token_text: str) -> str:
    r"""The value of a quoted string literal: JSON/Python escapes, unknown escapes kept.

    Unknown escapes such as ``\d`` keep their backslash so regular expressions read naturally.

    >>> decode_string(r"'it\'s'")
    "it's"
    >>> decode_string(r"'\d+'")
    '\\d+'
    """
    body = token_text[1:-1]
    if "\\" not in body:
        return body
    out = []
    i = 0
    simple = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "/": "/"}
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif nxt == "u" and i + 6 <= len(body):
            try:
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
            except ValueError:
                out.append("\\u")
                i += 2
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


class _GiveUp(Exception):
    """Not certain: let Lark read the text."""


def parse_query(text: str, max_depth: int = 64) -> S.Query | None:
    """The query ``text`` as :func:`hgm_engine.query.parser.parse` builds it, or None when
    this reader is not certain (then Lark reads it and reports any error).

    >>> parse_query("#a | #b").paths[1].start
    IdStart(node_type=None, node_id='b', param=None, span=Span(start=5, end=7), type_span=None)
    >>> parse_query("(((root)))", max_depth=2) is None
    True
    """
    # A text without whitespace or a comment (most queries) needs no skipping between tokens.
    reader = _Reader(text) if _SPACE.intersection(text) or "/" in text else _PlainReader(text)
    try:
        query = reader.query()
        if reader.skip() != reader.n:
            return None
    except (_GiveUp, RecursionError):
        return None
    # Each level of nesting is a node with a token of its own (``where``, a parenthesis, an
    # operator, a comma...), so a text of at most max_depth characters cannot nest deeper.
    if len(text) > max_depth and _depth(query) > max_depth:
        return None
    return query


def _depth(query: S.Query) -> int:
    """Levels of nesting as ``parser._check_depth`` counts them on Lark's tree."""
    deepest = 0
    stack: list[tuple[object, int]] = [(query, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, level = pop()
        kind = node.__class__
        if kind in _NESTING:
            level += 1
            if level > deepest:
                deepest = level
        if kind is S.Query:
            for path in node.paths:
                push((path, level))
        elif kind is S.Path:
            if node.start is not None:
                push((node.start, level))
            for step in node.steps:
                push((step, level))
        elif kind is S.SubqueryStart:
            push((node.query, level))
        elif kind is S.WhereStep:
            push((node.condition, level))
        elif kind is S.CallStart or kind is S.CallStep:
            for arg in node.args:
                push((arg, level))
        elif kind is S.FuncCall:
            if node.path is not None:
                push((node.path, level))
            if node.value is not None:
                push((node.value, level))
        elif kind is S.Compare:
            push((node.left, level))
            push((node.right, level))
        elif kind is S.Not:
            push((node.operand, level))
        elif kind is S.And or kind is S.Or:
            for operand in node.operands:
                push((operand, level))
        elif kind is S.ListLiteral:
            for item in node.items:
                push((item, level))
    return deepest


def scan_comparison(text: str, i: int) -> tuple | None:
    """``NAME OP LITERAL`` then ``)`` from ``i`` (spaces between, no comment), as the grammar
    reads it: ``(name_start, name_end, op_start, op_text, literal_start, literal_end, value,
    parenthesis)``, or None for anything else. The literal is a string without a backslash,
    an integer or a decimal number of at most 19 characters without an exponent, or a
    constant; the name is none of the words the grammar may read otherwise there.

    >>> scan_comparison("status = 'done')", 0)
    (0, 6, 7, '=', 9, 15, 'done', 15)
    >>> scan_comparison("status = 1e3)", 0) is None
    True
    """
    n = len(text)
    while i < n and text[i] in _SPACE:
        i += 1
    a = i
    if i >= n or text[i] not in _LETTERS:
        return None
    i = _run_end(text, i + 1, _WORD_CHARS)
    b = i
    if text[a:b] in _SIMPLE_NOT_NAMES:
        return None
    while i < n and text[i] in _SPACE:
        i += 1
    c = text[i : i + 2]
    if c in _COMPARISON_SET:  # two characters
        symbol = c
    elif c == "=~":
        return None
    elif c[:1] in _COMPARISON_SET:  # one
        symbol = c[:1]
    else:
        return None
    op_start, i = i, i + len(symbol)
    while i < n and text[i] in _SPACE:
        i += 1
    start = i
    c = text[i] if i < n else ""
    if c == "'" or c == '"':
        j = text.find(c, i + 1)
        if j < 0 or "\\" in text[i + 1 : j]:
            return None
        value: Any = text[i + 1 : j]
        i = j + 1
    elif c in _DIGITS or c == "-":
        j = i + 1 if c == "-" else i
        k = _run_end(text, j, _DIGIT_CHARS)
        if k == j:
            return None
        fraction = k < n and text[k] == "."
        if fraction:
            k = _run_end(text, k + 1, _DIGIT_CHARS)
        if k - j > 19 or (k < n and text[k] in "eE"):
            return None  # long or with an exponent: the general reader's rules
        value = float(text[i:k]) if fraction else int(text[i:k])
        i = k
    elif c in _LETTERS:
        j = _run_end(text, i + 1, _WORD_CHARS)
        word = text[i:j]
        if word not in _CONSTANTS:
            return None
        value = _CONSTANTS[word]
        i = j
    else:
        return None
    end = i
    while i < n and text[i] in _SPACE:
        i += 1
    if i >= n or text[i] != ")":
        return None
    return a, b, op_start, symbol, start, end, value, i


# Runs of characters are skipped with str.lstrip, one call into C (a loop over characters costs
# ~900 machine instructions a character in a fresh process), over a window of _RUN_WINDOW
# characters at a time, so that a long text is not copied from each position.
_WORD_CHARS = "".join(sorted(_WORD))
_DIGIT_CHARS = "0123456789"
_RUN_WINDOW = 64


def _run_end(text: str, i: int, chars: str) -> int:
    """The end of the run of ``chars`` from ``i`` (``i`` when none is there).

    >>> _run_end("ab1_c+", 0, _WORD_CHARS), _run_end("+", 0, _WORD_CHARS), _run_end("9" * 200, 3, _DIGIT_CHARS)
    (5, 0, 200)
    """
    while True:
        window = text[i : i + _RUN_WINDOW]
        rest = len(window.lstrip(chars))
        i += len(window) - rest
        if rest or len(window) < _RUN_WINDOW:
            return i


class _Reader:
    """Recursive descent over one text; ``i`` is the position of the next character."""

    __slots__ = ("text", "n", "i", "nest")

    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.i = 0
        self.nest = 0

    # -- characters and tokens ----------------------------------------------------------

    def skip(self) -> int:
        """Past whitespace and ``//`` comments (the grammar's ``%ignore``); the position."""
        text, n, i = self.text, self.n, self.i
        while i < n:
            c = text[i]
            if c in _SPACE:
                i += 1
            elif c == "/" and text.startswith("//", i):
                j = text.find("\n", i)
                i = n if j < 0 else j
            else:
                break
        self.i = i
        return i

    def peek(self) -> str:
        i = self.skip()
        return self.text[i] if i < self.n else ""

    def expect(self, char: str) -> int:
        """Consume ``char`` (after ignored text); its position."""
        i = self.skip()
        if i >= self.n or self.text[i] != char:
            raise _GiveUp
        self.i = i + 1
        return i

    def word_at(self, i: int) -> int:
        """The end of the ``NAME`` starting at ``i`` (``i`` when none starts there)."""
        text, n = self.text, self.n
        if i >= n or text[i] not in _LETTERS:
            return i
        j = i + 1
        while j < n and text[j] in _WORD:
            j += 1
        return j

    def name(self, keywords: frozenset) -> tuple[str, int, int]:
        """A ``NAME`` where the parser's state has ``keywords`` as terminals of their own
        (a word among them is not a name there): (text, start, end)."""
        i = self.skip()
        j = self.word_at(i)
        if j == i:
            raise _GiveUp
        word = self.text[i:j]
        if word in keywords:
            raise _GiveUp
        self.i = j
        return word, i, j

    def keyword(self, word: str) -> tuple[int, int] | None:
        """Consume the keyword ``word`` if it is the next whole word: its span."""
        i = self.skip()
        j = self.word_at(i)
        if j - i == len(word) and self.text.startswith(word, i):
            self.i = j
            return i, j
        return None

    def next_word(self) -> str:
        i = self.skip()
        return self.text[i : self.word_at(i)]

    def integer(self) -> tuple[int, int, int]:
        """An ``INT`` (``-?[0-9]+``): (value, start, end)."""
        text, n = self.text, self.n
        i = self.skip()
        j = i + 1 if i < n and text[i] == "-" else i
        k = j
        while k < n and text[k] in _DIGITS:
            k += 1
        if k == j:
            raise _GiveUp
        return self._int_value(i, j, k), i, k

    def _int_value(self, i: int, j: int, k: int) -> int:
        if k - j > MAX_INTEGER_DIGITS:
            raise _GiveUp  # Lark's path reports it as limit-exceeded
        try:
            value = int(self.text[i:k])
        except ValueError:  # a lower limit set with sys.set_int_max_str_digits
            raise _GiveUp from None
        self.i = k
        return value

    def digits(self, k: int) -> int:
        text, n = self.text, self.n
        while k < n and text[k] in _DIGITS:
            k += 1
        return k

    def exponent(self, k: int) -> int:
        """The end of ``[eE][-+]?[0-9]+`` at ``k`` (``k`` when there is none)."""
        text, n = self.text, self.n
        if k < n and text[k] in "eE":
            m = k + 1
            if m < n and text[m] in "+-":
                m += 1
            e = self.digits(m)
            if e > m:
                return e
        return k

    def number(self) -> S.Literal:
        """``NUMBER`` (tried first, as Lark's lexer orders them) or ``INT``."""
        text, n = self.text, self.n
        i = self.skip()
        j = i + 1 if i < n and text[i] == "-" else i
        k = self.digits(j)
        end = None
        # -?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?
        if k > j and k < n and text[k] == ".":
            end = self.exponent(self.digits(k + 1))
        elif k == j and k < n and text[k] == ".":
            m = self.digits(k + 1)
            if m > k + 1:
                end = self.exponent(m)
        # -?[0-9]+[eE][-+]?[0-9]+
        if end is None and k > j:
            e = self.exponent(k)
            if e > k:
                end = e
        if end is not None:
            value = float(text[i:end])
            if not math.isfinite(value):
                raise _GiveUp  # Lark's path reports it as limit-exceeded
            self.i = end
            return S.Literal(value, S.Span(i, end))
        if k == j:
            raise _GiveUp
        return S.Literal(self._int_value(i, j, k), S.Span(i, k))

    def quoted(self, i: int) -> int:
        """The end of the quoted text opening at ``i`` (the ``STRING`` patterns)."""
        text, n = self.text, self.n
        quote = text[i]
        j = i + 1
        while j < n:
            c = text[j]
            if c == quote:
                return j + 1
            if c == "\\":
                if j + 1 >= n or text[j + 1] == "\n":
                    raise _GiveUp
                j += 2
            else:
                j += 1
        raise _GiveUp

    def literal(self) -> S.Literal | S.ListLiteral:
        i = self.skip()
        text = self.text
        c = text[i] if i < self.n else ""
        if c == "'" or c == '"':
            j = self.quoted(i)
            self.i = j
            return S.Literal(decode_string(text[i:j]), S.Span(i, j))
        if c == "[":
            self.i = i + 1
            items = []
            if self.peek() != "]":
                self.enter()
                items.append(self.literal())
                while self.peek() == ",":
                    self.i += 1
                    items.append(self.literal())
                self.nest -= 1
            end = self.expect("]") + 1
            return S.ListLiteral(tuple(items), S.Span(i, end))
        if c in _DIGITS or c == "-" or c == ".":
            return self.number()
        j = self.word_at(i)
        word = text[i:j]
        if word in _CONSTANTS:
            self.i = j
            return S.Literal(_CONSTANTS[word], S.Span(i, j))
        raise _GiveUp

    def starts_literal(self) -> bool:
        c = self.peek()
        return c in "'\"[-." or c in _DIGITS or self.next_word() in _CONSTANTS

    def param(self) -> tuple[str, int, int]:
        """A ``PARAM`` (``$name``): (name, start, end)."""
        i = self.skip()
        if i >= self.n or self.text[i] != "$":
            raise _GiveUp
        j = self.word_at(i + 1)
        if j == i + 1:
            raise _GiveUp
        self.i = j
        return self.text[i + 1 : j], i, j

    def enter(self) -> None:
        self.nest += 1
        if self.nest > _DEEPEST:
            raise _GiveUp

    # -- queries, paths, steps ----------------------------------------------------------

    def query(self) -> S.Query:
        paths = [self.path()]
        while self.peek() == "|":
            self.i += 1
            paths.append(self.path())
        return S.Query(tuple(paths), S.Span(paths[0].span.start, paths[-1].span.end), self.text)

    def path(self) -> S.Path:
        start = self.start()
        steps = self.steps()
        return S.Path(start, steps, S.Span(start.span.start, (steps[-1] if steps else start).span.end))

    def start(self) -> S.Start:
        i = self.skip()
        text = self.text
        c = text[i] if i < self.n else ""
        if c == "#":
            return self.hashed(None, None)
        if c == "$":
            name, a, b = self.param()
            return S.ParamStart(name, S.Span(a, b))
        if c == "(":
            self.i = i + 1
            self.enter()
            query = self.query()
            self.nest -= 1
            end = self.expect(")") + 1
            return S.SubqueryStart(query, S.Span(i, end))
        name, a, b = self.name(_NO_WORDS)
        nxt = self.peek()
        if nxt == "(":
            self.i += 1
            args, end = self.args()
            return S.CallStart(name, args, S.Span(a, end), S.Span(a, b))
        if nxt == "#":
            return self.hashed(name, S.Span(a, b))
        return S.NamedStart(name, S.Span(a, b))

    def hashed(self, node_type: str | None, type_span: S.Span | None) -> S.IdStart:
        """``#id``, ``#"id"`` or ``#$param`` at the next position, after an optional type."""
        text, n = self.text, self.n
        i = self.skip()
        start = i if type_span is None else type_span.start
        nxt = text[i + 1] if i + 1 < n else ""
        if nxt == '"':
            j = self.quoted(i + 1)
            self.i = j
            return S.IdStart(node_type, decode_string(text[i + 1 : j]), None, S.Span(start, j), type_span)
        if nxt == "$":
            j = self.word_at(i + 2)
            if j == i + 2:
                raise _GiveUp
            self.i = j
            return S.IdStart(node_type, None, text[i + 2 : j], S.Span(start, j), type_span)
        j = i + 1
        while j < n and text[j] in _HASH_ID:
            j += 1
        if j == i + 1:
            raise _GiveUp
        self.i = j
        return S.IdStart(node_type, text[i + 1 : j], None, S.Span(start, j), type_span)

    def steps(self) -> tuple[S.Step, ...]:
        steps = []
        while True:
            i = self.skip()
            c = self.text[i] if i < self.n else ""
            if c == ".":
                # the step's word, scanned once (keyword("where") then name() read it twice)
                self.i = i + 1
                text, n = self.text, self.n
                a = b = self.skip()
                if b < n and text[b] in _LETTERS:
                    b += 1
                    while b < n and text[b] in _WORD:
                        b += 1
                if b == a:
                    raise _GiveUp
                if b - a == 5 and text.startswith("where", a):
                    self.i = b
                    self.expect("(")
                    simple = self.simple_comparison()
                    if simple is not None:  # NAME OP LITERAL ")": read in one go
                        condition, end = simple
                        steps.append(S.WhereStep(condition, S.Span(i, end)))
                        continue
                    self.enter()
                    condition = self.condition()
                    self.nest -= 1
                    end = self.expect(")") + 1
                    steps.append(S.WhereStep(condition, S.Span(i, end)))
                    continue
                name = text[a:b]  # a NAME: no keyword is one of its own after a dot
                self.i = b
                if self.peek() == "(":
                    self.i += 1
                    args, end = self.args()
                    steps.append(S.CallStep(name, args, S.Span(i, end), S.Span(a, b)))
                else:
                    steps.append(S.RelationStep(name, S.Span(i, b)))
            elif c == "[":
                self.i = i + 1
                lower = upper = None
                if self.peek() != ":":
                    lower, _, _ = self.integer()
                    if self.peek() == "]":
                        end = self.expect("]") + 1
                        steps.append(S.IndexStep(lower, S.Span(i, end)))
                        continue
                self.expect(":")
                if self.peek() != "]":
                    upper, _, _ = self.integer()
                end = self.expect("]") + 1
                steps.append(S.SliceStep(lower, upper, S.Span(i, end)))
            elif c == "{":
                self.i = i + 1
                lower, _, _ = self.integer()
                if self.peek() == "}":
                    upper = lower
                else:
                    self.expect(",")
                    upper = None if self.peek() == "}" else self.integer()[0]
                end = self.expect("}") + 1
                steps.append(S.RepeatStep(lower, upper, S.Span(i, end)))
            else:
                return tuple(steps)

    def simple_comparison(self) -> tuple[S.Compare, int] | None:
        """The commonest condition, ``NAME OP LITERAL`` and the closing parenthesis, read in
        one go (:func:`scan_comparison`): the Compare that :meth:`condition` builds and the
        position after the parenthesis; None — nothing consumed — for anything else (then
        :meth:`condition` reads it)."""
        found = scan_comparison(self.text, self.i)
        if found is None:
            return None
        a, b, op_start, symbol, start, end, value, close = found
        self.i = close + 1
        compare = S.Compare(
            "=" if symbol == "==" else symbol,
            S.AttrRef(self.text[a:b], S.Span(a, b)),
            S.Literal(value, S.Span(start, end)),
            S.Span(a, end),
            S.Span(op_start, op_start + len(symbol)),
        )
        return compare, close + 1

    def args(self) -> tuple[tuple, int]:
        """``[args] ")"`` after an opening parenthesis: the arguments and the end."""
        args = []
        if self.peek() != ")":
            while True:
                c = self.peek()
                if c == "$":
                    name, a, b = self.param()
                    args.append(S.ParamRef(name, S.Span(a, b)))
                elif self.starts_literal():
                    args.append(self.literal())
                else:
                    name, a, b = self.name(_LITERAL_WORDS)
                    args.append(S.NameArg(name, S.Span(a, b)))
                if self.peek() != ",":
                    break
                self.i += 1
        return tuple(args), self.expect(")") + 1

    # -- conditions: each returns (node, start, end), the span of what it stands in --------

    def condition(self) -> S.Expr:
        terms = [self.or_expr()]
        while self.peek() == ",":
            self.i += 1
            terms.append(self.or_expr())
        if len(terms) == 1:
            return terms[0][0]
        return S.And(tuple(t[0] for t in terms), S.Span(terms[0][1], terms[-1][2]))

    def or_expr(self) -> tuple:
        parts = [self.and_expr()]
        while self.keyword("or") is not None:
            parts.append(self.and_expr())
        if len(parts) == 1:
            return parts[0]
        node = S.Or(tuple(p[0] for p in parts), S.Span(parts[0][1], parts[-1][2]))
        return node, parts[0][1], parts[-1][2]

    def and_expr(self) -> tuple:
        parts = [self.not_expr()]
        while self.keyword("and") is not None:
            parts.append(self.not_expr())
        if len(parts) == 1:
            return parts[0]
        node = S.And(tuple(p[0] for p in parts), S.Span(parts[0][1], parts[-1][2]))
        return node, parts[0][1], parts[-1][2]

    def not_expr(self) -> tuple:
        keyword = self.keyword("not")
        if keyword is None:
            return self.comparison()
        self.enter()
        operand = self.not_expr()
        self.nest -= 1
        return S.Not(operand[0], S.Span(keyword[0], operand[2])), keyword[0], operand[2]

    def comparison(self) -> tuple:
        left = self.operand()
        i = self.skip()
        text = self.text
        if text.startswith("=~", i):
            op, op_span = "=~", S.Span(i, i + 2)
            self.i = i + 2
        else:
            for symbol in _COMPARISONS:
                if text.startswith(symbol, i):
                    op, op_span = ("=" if symbol == "==" else symbol), S.Span(i, i + len(symbol))
                    self.i = i + len(symbol)
                    break
            else:
                word = text[i : self.word_at(i)]
                if word == "in" or word == "contains":
                    op, op_span = word, S.Span(i, i + len(word))
                    self.i = i + len(word)
                elif word == "not":
                    self.i = i + 3
                    in_ = self.keyword("in")
                    if in_ is None:
                        raise _GiveUp
                    op, op_span = "not in", S.Span(i, in_[1])
                else:
                    return left
        right = self.operand(_LITERAL_WORDS)
        return S.Compare(op, left[0], right[0], S.Span(left[1], right[2]), op_span), left[1], right[2]

    def operand(self, keywords: frozenset = _OPERAND_WORDS) -> tuple:
        c = self.peek()
        if c == "$":
            name, a, b = self.param()
            return S.ParamRef(name, S.Span(a, b)), a, b
        if c == "(":
            i = self.i
            self.i = i + 1
            self.enter()
            inner = self.or_expr()
            self.nest -= 1
            end = self.expect(")") + 1
            return inner[0], i, end
        if self.starts_literal():
            node = self.literal()
            return node, node.span.start, node.span.end
        name, a, b = self.name(keywords)
        if self.peek() != "(":
            return S.AttrRef(name, S.Span(a, b)), a, b
        self.i += 1
        self.enter()
        path = value = None
        c = self.peek()
        if c == "$":
            p, pa, pb = self.param()
            value = S.ParamRef(p, S.Span(pa, pb))
        elif c != ")":
            if self.starts_literal():
                value = self.literal()
            else:
                path = self.rel_path()
        self.nest -= 1
        end = self.expect(")") + 1
        return S.FuncCall(name, path, S.Span(a, end), S.Span(a, b), value), a, end

    def rel_path(self) -> S.Path:
        name, a, b = self.name(_LITERAL_WORDS)
        if self.peek() == "(":
            self.i += 1
            args, end = self.args()
            first: S.Step = S.CallStep(name, args, S.Span(a, end), S.Span(a, b))
        else:
            first = S.RelationStep(name, S.Span(a, b))
        steps = (first,) + self.steps()
        return S.Path(None, steps, S.Span(a, steps[-1].span.end))


class _PlainReader(_Reader):
    """The reader of a text with no whitespace and no ``/``: nothing to skip between tokens."""

    __slots__ = ()

    def skip(self) -> int:
        return self.i

    def peek(self) -> str:
        i = self.i
        return self.text[i] if i < self.n else ""
