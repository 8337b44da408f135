"""Text to frozen AST. Lark stays inside this module.

The grammar is ``grammar/hgm.lark`` (shipped in the wheel as ``hgm_engine/grammar/hgm.lark``).
Three verbs read its three start symbols: ``parse`` a query, ``parse_constraint`` a
constraint, ``parse_rule_file`` a rule file. A syntax error names the place with a caret and
lists the tokens that would have been accepted there, written as they are typed.

>>> parse("root.subgoals[0]").paths[0].steps[1].index
0
>>> try:
...     parse("root.subgoals[")
... except QuerySyntaxError as err:
...     print(err.category, err.column)
syntax 15
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import pathlib
from typing import Any


from hgm_engine.query import syntax as S
from hgm_engine.query.fastparse import decode_string, parse_query
from hgm_engine.errors import HGMError, Problem, QuerySyntaxError, line_column
from hgm_engine.query.limits import DEFAULT_LIMITS, MAX_INTEGER_DIGITS, Limits, limit_exceeded

__all__ = ["parse", "parse_with_lark", "parse_constraint", "parse_rule_file", "grammar_text", "grammar_path", "decode_string"]

# How regex-defined terminals are described in "expected ..." lists.
_TERMINAL_WORDS = {
    "NAME": "a name",
    "HASH_ID": "'#id'",
    "HASH_QUOTED": "'#\"id\"'",
    "HASH_PARAM": "'#$param'",
    "PARAM": "'$param'",
    "INT": "an integer",
    "NUMBER": "a number",
    "STRING": "a string",
    "COMP_OP": "a comparison ('=', '!=', '<', '<=', '>', '>=')",
    "$END": "end of query",
    "DIRTY_STATE": "'needs_review' or 'blocked'",
    "EVENT": "'add', 'update' or 'delete'",
    "DIRECTION": "'forward', 'backward' or 'both'",
}


def grammar_path() -> pathlib.Path:
    """Where ``hgm.lark`` is: inside the installed package, else the source tree's ``grammar/``.

    >>> grammar_path().name
    'hgm.lark'
    """
    packaged = importlib.resources.files("hgm_engine").joinpath("grammar/hgm.lark")
    if packaged.is_file():
        return pathlib.Path(str(packaged))
    source_tree = pathlib.Path(__file__).resolve().parents[2] / "grammar" / "hgm.lark"
    if source_tree.is_file():
        return source_tree
    raise FileNotFoundError("grammar/hgm.lark is missing from this installation")


def grammar_text() -> str:
    """The grammar source.

    >>> "query" in grammar_text()
    True
    """
    return grammar_path().read_text(encoding="utf-8")


def _load_lark() -> None:
    """Import Lark into this module's names, the first time a text needs it (most queries are
    read without it: importing it costs a one-shot ``hgm query`` ~0.1 s)."""
    global Lark, Token, Transformer_NonRecursive, Tree, v_args
    global UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError, PatternStr
    if "Lark" in globals():
        return
    from lark import Token, Transformer_NonRecursive, Tree, v_args
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
    from lark.lexer import PatternStr
    from lark import Lark  # last: its name says the others are bound


@functools.lru_cache(maxsize=None)
def _parser(start: str = "start") -> Lark:
    # One parser per start symbol: sharing LALR tables between starts would merge lookaheads
    # and make "expected ..." lists less precise.
    _load_lark()
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        strict=True,
        propagate_positions=True,
        maybe_placeholders=True,
        start=start,
        # Building LALR tables with strict collision checks costs ~0.4 s per process; lark
        # caches the built parser in the temp folder, keyed by the grammar text and options.
        cache=True,
    )


def parse(text: str, limits: Limits = DEFAULT_LIMITS) -> S.Query:
    """Parse a path expression into a frozen :class:`~hgm_engine.query.syntax.Query`.

    The text is at most ``limits.max_length`` characters and nests at most
    ``limits.max_depth`` levels (docs/language.md §13); beyond either, for an integer
    longer than 4,300 digits and for a number too large for a float (``1e999``), it is refused
    with ``limit-exceeded`` at the place.

    >>> q = parse("#a | #b")
    >>> [p.start.node_id for p in q.paths]
    ['a', 'b']
    >>> try:
    ...     parse("(((root)))", Limits(max_depth=2))
    ... except HGMError as err:
    ...     print(err.category, err.column)
    limit-exceeded 3
    """
    if not isinstance(text, str):
        raise TypeError(f"a query is a string, not {type(text).__name__}")
    return _build(text, "start", "query", limits.max_length, limits)


def parse_with_lark(text: str, limits: Limits = DEFAULT_LIMITS) -> S.Query:
    """:func:`parse` by the grammar's own parser alone, without the hand-written reader of
    ``fastparse.py`` (what that reader is held equal to; its errors are :func:`parse`'s).

    >>> parse_with_lark("root.subgoals[0]") == parse("root.subgoals[0]")
    True
    """
    if not isinstance(text, str):
        raise TypeError(f"a query is a string, not {type(text).__name__}")
    return _build(text, "lark", "query", limits.max_length, limits)


def parse_constraint(text: str, limits: Limits = DEFAULT_LIMITS) -> S.ConstraintDef:
    """Parse ``each TYPE [where COND] must COND`` (within ``limits``, as :func:`parse`).

    >>> c = parse_constraint("each action where status = 'done' must exists(results)")
    >>> c.node_type, type(c.must).__name__
    ('action', 'FuncCall')
    """
    if not isinstance(text, str):
        raise TypeError(f"a constraint is a string, not {type(text).__name__}")
    return _build(text, "constraint_def", "constraint", limits.max_length, limits)


def parse_rule_file(text: str, limits: Limits = DEFAULT_LIMITS) -> S.RuleFile:
    """Parse a rule file (docs/rules.md) into a frozen :class:`~hgm_engine.query.syntax.RuleFile`.

    Names are not checked here (``analyze_rule_file`` does that against a schema). A rule
    file is at most ``limits.max_file_length`` characters; each condition nests at most
    ``limits.max_depth`` levels, a trigger's counted from the ``.where()`` it runs in.

    >>> f = parse_rule_file("rule r: on update action where status = 'failed' then mark parent as needs_review")
    >>> rule = f.statements[0]
    >>> rule.name, rule.event, rule.node_type, [type(e).__name__ for e in rule.effects]
    ('r', 'update', 'action', ['MarkEffect'])
    >>> try:
    ...     parse_rule_file("rule r: on add fact then mark self as stale")
    ... except QuerySyntaxError as err:
    ...     print(err.message)
    unexpected 'stale'; expected 'needs_review' or 'blocked'
    """
    if not isinstance(text, str):
        raise TypeError(f"a rule file is a string, not {type(text).__name__}")
    return _build(text, "rule_file", "rule file", limits.max_file_length, limits)


def _build(text: str, start: str, what: str, max_length: int, limits: Limits):
    if len(text) > max_length:
        limit = "max_file_length" if start == "rule_file" else "max_length"
        raise limit_exceeded(
            f"the {what} is {len(text):,} characters long; at most {max_length:,} (Limits.{limit})",
            text,
            max_length,
            excerpt=False,
        )
    if start == "start":
        # Most queries are read without Lark (fastparse.py: the same AST, held equal to
        # Lark's by tests/test_fastparse.py); what it is not certain of, errors included, is
        # Lark's to read.
        query = parse_query(text, limits.max_depth)
        if query is not None:
            return query
    if start == "lark":
        start = "start"
    tree = _tree(text, start)
    _check_depth(tree, text, what, limits.max_depth)
    try:
        return _to_ast()(text).transform(tree)
    except VisitError as exc:  # lark wraps what a callback raises
        if isinstance(exc.orig_exc, HGMError):
            raise exc.orig_exc from None
        raise


# -- nesting ----------------------------------------------------------------------------

# The tree nodes that nest what is inside them one level deeper: each becomes a syntax node
# that the later stages (analysis, planning, the optimizer, code generation) walk into, so
# their depth bounds how deep those stages go. Parentheses around a condition make no node.
_NESTING = frozenset(
    (
        "subquery_start", "where_step", "func_call", "func_value_call", "not_", "or_expr", "and_expr",
        "compare", "in_", "not_in", "contains", "regex_match", "list_literal",
    )
)
# A trigger's condition runs as ``$node.where(COND)``: it starts one level down.
_STARTS_DEEPER = {"trigger_stmt": 6}


def _check_depth(tree: Tree, text: str, what: str, max_depth: int) -> None:
    """Refuse a tree that nests more than ``max_depth`` levels, at the first construct over
    it (without recursion: the tree may be deep)."""
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, level = stack.pop()
        data = node.data
        if data in _NESTING or (data == "condition" and sum(1 for c in node.children if isinstance(c, Tree)) > 1):
            level += 1
            if level > max_depth:
                offset = getattr(node.meta, "start_pos", None)
                raise limit_exceeded(
                    f"the {what} nests more than {max_depth} levels deep here; at most {max_depth} "
                    "(Limits.max_depth: each parenthesised query, .where(), function call, not, and/or, "
                    "comparison and list literal inside another is a level)",
                    text,
                    offset,
                )
        deeper = _STARTS_DEEPER.get(data)
        for position, child in enumerate(node.children):
            if isinstance(child, Tree):
                stack.append((child, level + 1 if position == deeper else level))


def _tree(text: str, start: str) -> Tree:
    parser = _parser(start)
    try:
        return parser.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc, parser) from None


def _describe_terminal(parser: Lark, name: str) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    try:
        terminal = parser.get_terminal(name)
    except KeyError:
        return name
    if isinstance(terminal.pattern, PatternStr):
        return repr(terminal.pattern.value)
    return _TERMINAL_WORDS.get(name, name.lower())


def _syntax_error(text: str, exc: UnexpectedInput, parser: Lark) -> QuerySyntaxError:
    if isinstance(exc, UnexpectedEOF):
        offset = len(text)
        expected = set(exc.expected)
        found = "end of query"
    elif isinstance(exc, UnexpectedToken):
        token = exc.token
        expected = set(exc.accepts or exc.expected)
        if token.type == "$END":
            offset = len(text)
            found = "end of query"
        else:
            offset = token.start_pos if token.start_pos is not None else len(text)
            found = repr(str(token))
    elif isinstance(exc, UnexpectedCharacters):
        offset = exc.pos_in_stream
        expected = set(exc.allowed or ())
        found = repr(text[offset]) if offset < len(text) else "the end of the query"
    else:  # pragma: no cover - lark has no other UnexpectedInput kinds
        offset, expected, found = 0, set(), "input"
    words = {_describe_terminal(parser, name) for name in expected}
    if "a number" in words:
        words.discard("an integer")  # an integer is a number; say it once
    words = sorted(words)
    line, column = line_column(text, offset)
    message = f"unexpected {found}"
    if words:
        message += "; expected " + (words[0] if len(words) == 1 else "one of " + ", ".join(words))
    return QuerySyntaxError([Problem("syntax", message, line, column)], text)


# -- tree to AST ------------------------------------------------------------------------


def _span(meta: Any) -> S.Span:
    return S.Span(meta.start_pos, meta.end_pos)


def _tspan(token: Token) -> S.Span:
    return S.Span(token.start_pos, token.end_pos)


def _integer(token: Token, text: str) -> int:
    """The value of an integer token; one too long to read is ``limit-exceeded`` there."""
    digits = len(token) - (1 if str(token).startswith("-") else 0)
    if digits <= MAX_INTEGER_DIGITS:
        try:
            return int(token)
        except ValueError:  # a lower limit set with sys.set_int_max_str_digits
            pass
    raise limit_exceeded(
        f"an integer of {digits:,} digits; at most {MAX_INTEGER_DIGITS:,}", text, token.start_pos
    )


def _shortened(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _optional_integer(token: Token | None, text: str) -> int | None:
    return None if token is None else _integer(token, text)


@functools.lru_cache(maxsize=None)
def _to_ast() -> type:
    """The transformer from Lark's tree to the AST (a class made once Lark is imported)."""
    _load_lark()

    @v_args(meta=True)
    class _ToAst(Transformer_NonRecursive):
        def __init__(self, text: str):
            super().__init__()
            self.text = text

        # queries and paths
        def query(self, meta, paths):
            return S.Query(tuple(paths), _span(meta), self.text)

        def path(self, meta, children):
            start, *steps = children
            return S.Path(start, tuple(steps), _span(meta))

        def rel_path(self, meta, children):
            return S.Path(None, tuple(children), _span(meta))

        def constraint_def(self, meta, children):
            _each, node_type, _where, where, _must, must = children
            return S.ConstraintDef(str(node_type), _tspan(node_type), where, must, _span(meta), self.text)

        # rule files
        def rule_file(self, meta, statements):
            # an empty file has no position of its own; the file's span is its whole text
            return S.RuleFile(tuple(statements), S.Span(0, len(self.text)), self.text)

        def constraint_stmt(self, meta, children):
            _constraint, name, definition = children
            return S.ConstraintStatement(str(name), _tspan(name), definition, _span(meta))

        def trigger_stmt(self, meta, children):
            _rule, name, _on, event, node_type, _where, condition, _then, *effects = children
            return S.TriggerStatement(
                str(name), _tspan(name), str(event), str(node_type), _tspan(node_type), condition, tuple(effects), _span(meta)
            )

        def propagate_stmt(self, meta, children):
            _propagate, edge_type, direction, _depth, depth, _from, from_type, _to, to_type = children
            return S.PropagateStatement(
                str(edge_type),
                _tspan(edge_type),
                str(direction),
                _optional_integer(depth, self.text),
                None if depth is None else _tspan(depth),
                None if from_type is None else str(from_type),
                None if from_type is None else _tspan(from_type),
                None if to_type is None else str(to_type),
                None if to_type is None else _tspan(to_type),
                _span(meta),
            )

        def mark_effect(self, meta, children):
            _mark, target, _as, state, _because, reason = children
            reason_text = None if reason is None else decode_string(str(reason))
            return S.MarkEffect(target, str(state), reason_text, _span(meta))

        def set_effect(self, meta, children):
            _set, target, _with, *assignments = children
            return S.SetEffect(target, tuple(assignments), _span(meta))

        def self_target(self, meta, children):
            return None  # ``self``: the changed node

        def assignment(self, meta, children):
            name, value = children
            return S.Assignment(str(name), value, _span(meta))

        # starts
        def named_start(self, meta, children):
            (name,) = children
            return S.NamedStart(str(name), _tspan(name))

        def call_start(self, meta, children):
            name, args = children
            return S.CallStart(str(name), tuple(args or ()), _span(meta), _tspan(name))

        def _typed(self, meta, children):
            node_type, token = children
            type_name = str(node_type) if node_type is not None else None
            type_span = _tspan(node_type) if node_type is not None else None
            return type_name, token, type_span

        def id_start(self, meta, children):
            type_name, token, type_span = self._typed(meta, children)
            return S.IdStart(type_name, str(token)[1:], None, _span(meta), type_span)

        def quoted_id_start(self, meta, children):
            type_name, token, type_span = self._typed(meta, children)
            return S.IdStart(type_name, decode_string(str(token)[1:]), None, _span(meta), type_span)

        def param_id_start(self, meta, children):
            type_name, token, type_span = self._typed(meta, children)
            return S.IdStart(type_name, None, str(token)[2:], _span(meta), type_span)

        def param_start(self, meta, children):
            (token,) = children
            return S.ParamStart(str(token)[1:], _tspan(token))

        def subquery_start(self, meta, children):
            (query,) = children
            return S.SubqueryStart(query, _span(meta))

        # steps
        def relation_step(self, meta, children):
            (name,) = children
            return S.RelationStep(str(name), _span(meta))

        def call_step(self, meta, children):
            name, args = children
            return S.CallStep(str(name), tuple(args or ()), _span(meta), _tspan(name))

        def args(self, meta, children):
            return list(children)

        def where_step(self, meta, children):
            _keyword, condition = children
            return S.WhereStep(condition, _span(meta))

        def index_step(self, meta, children):
            (index,) = children
            return S.IndexStep(_integer(index, self.text), _span(meta))

        def slice_step(self, meta, children):
            lower, _colon, upper = children
            return S.SliceStep(_optional_integer(lower, self.text), _optional_integer(upper, self.text), _span(meta))

        def repeat_exact(self, meta, children):
            (count,) = children
            value = _integer(count, self.text)
            return S.RepeatStep(value, value, _span(meta))

        def repeat_range(self, meta, children):
            lower, upper = children
            return S.RepeatStep(_integer(lower, self.text), _optional_integer(upper, self.text), _span(meta))

        # conditions
        def condition(self, meta, terms):
            if len(terms) == 1:
                return terms[0]
            return S.And(tuple(terms), _span(meta))

        def or_expr(self, meta, children):
            return S.Or(tuple(c for c in children if not isinstance(c, Token)), _span(meta))

        def and_expr(self, meta, children):
            return S.And(tuple(c for c in children if not isinstance(c, Token)), _span(meta))

        def not_(self, meta, children):
            _keyword, operand = children
            return S.Not(operand, _span(meta))

        def compare(self, meta, children):
            left, op, right = children
            symbol = "=" if str(op) == "==" else str(op)
            return S.Compare(symbol, left, right, _span(meta), _tspan(op))

        def in_(self, meta, children):
            left, op, right = children
            return S.Compare("in", left, right, _span(meta), _tspan(op))

        def not_in(self, meta, children):
            left, op, _in, right = children
            return S.Compare("not in", left, right, _span(meta), S.Span(op.start_pos, _in.end_pos))

        def contains(self, meta, children):
            left, op, right = children
            return S.Compare("contains", left, right, _span(meta), _tspan(op))

        def regex_match(self, meta, children):
            left, op, right = children
            return S.Compare("=~", left, right, _span(meta), _tspan(op))

        def attr(self, meta, children):
            (name,) = children
            return S.AttrRef(str(name), _tspan(name))

        def name_arg(self, meta, children):
            (name,) = children
            return S.NameArg(str(name), _tspan(name))

        def param_ref(self, meta, children):
            (token,) = children
            return S.ParamRef(str(token)[1:], _tspan(token))

        def func_call(self, meta, children):
            name, path = children
            return S.FuncCall(str(name), path, _span(meta), _tspan(name))

        def func_value_call(self, meta, children):
            name, value = children
            return S.FuncCall(str(name), None, _span(meta), _tspan(name), value)

        # literals
        def string(self, meta, children):
            (token,) = children
            return S.Literal(decode_string(str(token)), _tspan(token))

        def number(self, meta, children):
            (token,) = children
            if token.type == "INT":
                return S.Literal(_integer(token, self.text), _tspan(token))
            value = float(token)
            if not math.isfinite(value):  # 1e999: a float too large becomes infinity, which no value is
                raise limit_exceeded(
                    f"the number {_shortened(str(token))} is out of range: numbers lie between about -1.8e308 and 1.8e308",
                    self.text,
                    token.start_pos,
                )
            return S.Literal(value, _tspan(token))

        def true(self, meta, children):
            return S.Literal(True, _tspan(children[0]))

        def false(self, meta, children):
            return S.Literal(False, _tspan(children[0]))

        def null(self, meta, children):
            return S.Literal(None, _tspan(children[0]))

        def list_literal(self, meta, children):
            items = tuple(c for c in children if c is not None)
            return S.ListLiteral(items, _span(meta))

    return _ToAst
