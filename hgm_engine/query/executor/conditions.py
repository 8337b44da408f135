"""Conditions compiled to functions ``(node, ctx) -> bool``.

A condition is written as generated source (:class:`~hgm_engine.query.executor.codegen.ConditionWriter`);
the parts the writer leaves out — comparisons of computed values, regular expressions, path
counts and existence tests, parameters as truth values — become the closures here, which
the generated function calls. Relative paths inside a condition (``count(children)``) are
compiled by ``compile_path``, given by the program.

>>> from hgm_engine.model import Node, freeze
>>> from hgm_engine.query.plan import Attr, Cmp, Const
>>> test = condition(Cmp("contains", Attr("tags"), Const("x")), compile_path=None)
>>> test(Node("a", "fact", freeze({"tags": ["x", "y"]}), 1), None)
True
"""

from __future__ import annotations

import operator
from typing import Callable

from hgm_engine.query.executor.codegen import ConditionWriter
from hgm_engine.query.executor.values import NUMBER_TYPES, contains, member, ordered, values_equal
from hgm_engine.model import INSTANTS, VALID_FROM, VALID_TO, MemoryGraph, holds_at, parse_instant
from hgm_engine.query.plan import AllOf, AnyOf, Attr, Cmp, Const, HasAttr, Negate, Param, PathCount, PathExists, Truthy, ValidAt
from hgm_engine.query.regexcheck import compile_regex

__all__ = ["condition", "condition_writer", "attr_getter", "condition_weight", "interpreted", "number_terms"]

# How many terms of a condition cost about as much as reading a node: a filter charges each
# node it tests once per this many terms (docs/language.md §13).
TERMS_PER_UNIT = 8


def condition_weight(cond) -> int:
    """The work one test of ``cond`` is charged: 1 for up to ``TERMS_PER_UNIT`` terms, one
    more per that many again. A term is a comparison, a truth test or an item of a list
    constant searched item by item (a list of strings is a set: one term). Paths inside
    ``exists()``/``count()`` charge their own work as they run.

    >>> condition_weight(Cmp("=", Attr("status"), Const("done")))
    1
    >>> condition_weight(Cmp("in", Attr("n"), Const(tuple(range(80)))))
    11
    """
    if cond.__class__ is Cmp and cond.left.__class__ is Attr and cond.right.__class__ is Const and not isinstance(cond.right.value, tuple):
        return 1  # the commonest: one term, nothing inside it counted (what the loop gives)
    terms = 0
    stack = [cond]
    while stack:
        item = stack.pop()
        if isinstance(item, (AllOf, AnyOf)):
            stack.extend(item.items)
        elif isinstance(item, Negate):
            stack.append(item.item)
        elif isinstance(item, Cmp):
            terms += 1
            stack.extend((item.left, item.right))
        elif isinstance(item, Truthy):
            terms += 1
            stack.append(item.operand)
        elif isinstance(item, Const) and isinstance(item.value, tuple):
            if not all(type(v) is str for v in item.value):
                terms += _size(item.value)
    return 1 + max(0, terms - 1) // TERMS_PER_UNIT


def _size(value) -> int:
    count = 0
    stack = [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, tuple):
            stack.extend(item)
    return count


def condition_writer(compile_path) -> ConditionWriter:
    """A writer whose fallback compiles what it does not handle as the closures here.

    >>> from hgm_engine.query.plan import Attr, Cmp
    >>> condition_writer(compile_path=None).expression(Cmp("=", Attr("a"), Attr("b")))
    '_k1(n, ctx)'
    """
    return ConditionWriter(fallback=lambda cond: _closure(cond, compile_path))


def condition(cond, compile_path) -> Callable:
    """A function ``(node, ctx) -> bool`` for a condition, generated as one Python function.

    >>> from hgm_engine.model import Node, freeze
    >>> from hgm_engine.query.plan import AllOf, Attr, Cmp, Const
    >>> test = condition(AllOf((Cmp("=", Attr("status"), Const("done")), Cmp("<", Attr("cost"), Const(3)))), None)
    >>> test(Node("a", "action", freeze({"status": "done", "cost": 2}), 1), None)
    True
    """
    return condition_writer(compile_path).function(cond)


def interpreted(cond, compile_path, members: bool = False) -> Callable:
    """``test(node, ctx) -> bool`` for a condition as closures, nothing compiled: what
    :func:`condition` generates, term for term (the same Python tests in the same order, the
    same closures for what the writer leaves out), for a filter's first run — a query answered
    once never pays ``compile()`` (``operators.list_op``). With ``members``, a string equality
    tests the view's value index first, as the writer's loops do (``ConditionWriter.member``),
    read once a run (``ctx.members``).

    >>> from hgm_engine.model import Node, freeze
    >>> from hgm_engine.query.plan import AllOf, Attr, Cmp, Const
    >>> test = interpreted(AllOf((Cmp("=", Attr("status"), Const("done")), Cmp("<", Attr("cost"), Const(3)))), None)
    >>> test(Node("a", "action", freeze({"status": "done", "cost": 2}), 1), None)
    True
    """
    kind = type(cond)
    if kind is AllOf or kind is AnyOf or kind is Negate:
        if kind is Negate:
            item = interpreted(cond.item, compile_path, members)
            return lambda node, ctx: not item(node, ctx)
        items = tuple([interpreted(c, compile_path, members) for c in cond.items])
        if kind is AllOf:

            def all_of(node, ctx):
                for item in items:
                    if not item(node, ctx):
                        return False
                return True

            return all_of

        def any_of(node, ctx):
            for item in items:
                if item(node, ctx):
                    return True
            return False

        return any_of
    if kind is Truthy:
        operand = cond.operand
        if type(operand) is Attr:
            get = attr_getter(operand.name)
            return lambda node, ctx: get(node, ctx) is True
        if type(operand) is HasAttr:
            get = attr_getter(operand.name)
            return lambda node, ctx: get(node, ctx) is not None
        if type(operand) is ValidAt and type(operand.at) in (Const, Param):
            return _valid_at(operand.at)
    if kind is Cmp and type(cond.left) is Attr and type(cond.right) is Const:
        if (
            members
            and cond.op in ("=", "!=")
            and cond.left.name not in ("id", "type")
            and type(cond.right.value) is str
        ):
            test = _member_test(cond.left.name, cond.right.value)
            return test if cond.op == "=" else (lambda node, ctx: not test(node, ctx))
        test = _inline_comparison(cond.op, attr_getter(cond.left.name), cond.right.value)
        if test is not None:
            return test
    return _closure(cond, compile_path)


def _member_test(name: str, value: str) -> Callable:
    """``name = value`` as ``ConditionWriter.member`` writes it: the id in the value index of
    its type where the view has one at hand, else the attribute."""
    key = (name, value)

    def member_test(node, ctx):
        memo = ctx.members
        if memo is None:
            memo = ctx.members = {}
        found = memo.get(key)
        if found is None:
            view = ctx.view
            found = memo[key] = view.value_members(name, value) if isinstance(view, MemoryGraph) else {}
        node_type = node.type
        if node_type in found:
            return node.id in found[node_type]
        return node.attrs.get(name) == value

    return member_test


def _valid_at(at) -> Callable:
    """``valid_at(T)`` as ``ConditionWriter.valid_at`` writes it (bounds looked up in INSTANTS)."""
    if type(at) is Const:
        instant = parse_instant(at.value)
        moment = lambda ctx: instant  # noqa: E731
    else:
        name = at.name
        moment = lambda ctx: INSTANTS[ctx.params[name]]  # noqa: E731

    def holds(node, ctx):
        attributes = node.attrs
        instant = moment(ctx)
        start = attributes.get(VALID_FROM)
        if not (start is None or INSTANTS[start] <= instant):
            return False
        end = attributes.get(VALID_TO)
        return end is None or INSTANTS[end] > instant

    return holds


def _inline_comparison(op: str, get: Callable, constant) -> Callable | None:
    """``ConditionWriter.comparison`` as a closure: the same test, or None where it has none."""
    kind = type(constant)
    if op in ("=", "!="):
        if kind is str:
            test = lambda node, ctx: get(node, ctx) == constant  # noqa: E731
        elif constant is None or kind is bool:
            test = lambda node, ctx: get(node, ctx) is constant  # noqa: E731
        elif kind in NUMBER_TYPES:

            def test(node, ctx):
                value = get(node, ctx)
                return type(value) in NUMBER_TYPES and value == constant

        else:
            return None
        return test if op == "=" else (lambda node, ctx: not test(node, ctx))
    if op in ("<", "<=", ">", ">="):
        if kind in NUMBER_TYPES or kind is str:
            compare = _ORDER[op]
            kinds = NUMBER_TYPES if kind in NUMBER_TYPES else (str,)

            def ordered_test(node, ctx):
                value = get(node, ctx)
                return type(value) in kinds and compare(value, constant)

            return ordered_test
        return lambda node, ctx: False
    if op in ("in", "not in") and isinstance(constant, tuple) and all(type(c) is str for c in constant):
        strings = frozenset(constant)
        if op == "in":
            return lambda node, ctx: get(node, ctx) in strings
        return lambda node, ctx: get(node, ctx) not in strings
    return None


_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
# What a comparison with a number is, read from a stored number column (NaN where the attribute
# is not a number: false for every one of them but "!=", as _inline_comparison has it).
_COLUMN_TESTS = {**_ORDER, "=": operator.eq, "!=": operator.ne}


def number_terms(cond) -> tuple[list, tuple] | None:
    """``([(attribute, compare, number)], the other terms)`` when the leading terms of the
    conjunction ``cond`` compare an attribute with a number (an int or a float, never a bool:
    ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``), which a stored number column answers
    (``NumberColumns``: ``compare(column value, number)``, NaN where the attribute is not a
    number); else None. Only these pure terms lead (they raise nothing, so testing them first
    for every node and the other terms on those kept is the filter's test).

    >>> import operator
    >>> number_terms(Cmp(">=", Attr("confidence"), Const(0.5))) == ([("confidence", operator.ge, 0.5)], ())
    True
    >>> found, rest = number_terms(AllOf((Cmp("<", Attr("n"), Const(3)), Cmp("=", Attr("s"), Const("x")), Cmp(">", Attr("m"), Const(1)))))
    >>> [name for name, _, _ in found], len(rest)
    (['n'], 2)
    >>> number_terms(Cmp("=", Attr("n"), Const(True))), number_terms(Cmp(">", Const(1), Attr("n"))), number_terms(Cmp(">", Attr("id"), Const(1)))
    (None, None, None)
    """
    if cond.__class__ is not AllOf:  # one term, the commonest
        term = _column_term(cond)
        return None if term is None else ([term], ())
    found = []
    for term in cond.items:
        term = _column_term(term)
        if term is None:
            break
        found.append(term)
    if not found:
        return None
    return found, cond.items[len(found):]


def _column_term(term) -> tuple | None:
    """``(attribute, compare, number)`` of a comparison a number column answers, else None."""
    if term.__class__ is not Cmp or term.left.__class__ is not Attr or term.right.__class__ is not Const:
        return None
    name, number, compare = term.left.name, term.right.value, _COLUMN_TESTS.get(term.op)
    if compare is None or name == "id" or name == "type" or (number.__class__ is not int and number.__class__ is not float):
        return None
    return name, compare, number


def attr_getter(name: str) -> Callable:
    """``get(node, ctx)``: the attribute ``name``, or the node's ``id`` or ``type``.

    >>> from hgm_engine.model import Node, freeze
    >>> node = Node("a", "fact", freeze({"n": 1}), 1)
    >>> attr_getter("id")(node, None), attr_getter("n")(node, None), attr_getter("m")(node, None)
    ('a', 1, None)
    """
    if name == "id":
        return lambda node, ctx: node.id
    if name == "type":
        return lambda node, ctx: node.type
    return lambda node, ctx: node.attrs.get(name)


def _operand(operand, compile_path) -> Callable:
    if isinstance(operand, Attr):
        return attr_getter(operand.name)
    if isinstance(operand, Const):
        value = operand.value
        return lambda node, ctx: value
    if isinstance(operand, Param):
        name = operand.name
        return lambda node, ctx: ctx.params[name]
    if isinstance(operand, HasAttr):
        get = attr_getter(operand.name)
        return lambda node, ctx: get(node, ctx) is not None
    if isinstance(operand, ValidAt):
        at = _operand(operand.at, compile_path)
        return lambda node, ctx: holds_at(node.attrs, parse_instant(at(node, ctx)))
    if isinstance(operand, PathCount):
        run = compile_path(operand.path)
        return lambda node, ctx: len(run([node.id], ctx))
    if isinstance(operand, PathExists):
        run = compile_path(operand.path)
        return lambda node, ctx: bool(run([node.id], ctx))
    # a parenthesised condition used as a value
    return condition(operand, compile_path)


def _closure(cond, compile_path) -> Callable:
    """The closure for a truth test or comparison the writer leaves out. (Attribute-versus-
    constant comparisons never get here: the writer inlines them; connectives only when they
    nest deeper than one generated function may, and then they start a function of their own.)"""
    if isinstance(cond, (AllOf, AnyOf, Negate)):
        return condition(cond, compile_path)
    if isinstance(cond, Truthy):
        value = _operand(cond.operand, compile_path)
        return lambda node, ctx: value(node, ctx) is True
    if isinstance(cond, Cmp):
        left = _operand(cond.left, compile_path)
        right = _operand(cond.right, compile_path)
        op = cond.op
        if op == "=":
            return lambda node, ctx: values_equal(left(node, ctx), right(node, ctx))
        if op == "!=":
            return lambda node, ctx: not values_equal(left(node, ctx), right(node, ctx))
        if op in ("<", "<=", ">", ">="):
            holds = ordered(op)
            return lambda node, ctx: holds(left(node, ctx), right(node, ctx))
        if op == "in":
            return lambda node, ctx: member(left(node, ctx), right(node, ctx))
        if op == "not in":
            return lambda node, ctx: not member(left(node, ctx), right(node, ctx))
        if op == "contains":
            return lambda node, ctx: contains(left(node, ctx), right(node, ctx))
        if op == "=~":
            return _regex_condition(left, cond.right)
        raise ValueError(f"unknown comparison {op!r}")
    raise TypeError(cond)


def _regex_condition(left: Callable, pattern_operand) -> Callable:
    if isinstance(pattern_operand, Const):
        pattern = compile_regex(pattern_operand.value)  # analysis checked it within the limits

        def matches(node, ctx):
            value = left(node, ctx)
            return type(value) is str and ctx.search(pattern, value) is not None

        return matches
    name = pattern_operand.name

    def matches_param(node, ctx):
        value = left(node, ctx)
        if type(value) is not str:
            return False
        pattern = ctx.regexes.get(name)
        if pattern is None:
            pattern = ctx.regexes[name] = compile_regex(ctx.params[name])  # checked when bound
        return ctx.search(pattern, value) is not None

    return matches_param
