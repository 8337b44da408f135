"""The frozen abstract syntax tree of the path language, every node with its source span.

The parser builds these; analysis reads them and never changes them. Spans are 0-based
character offsets into the query text (``start`` inclusive, ``end`` exclusive). A rule file
(constraints, triggers, propagation declarations) has nodes of its own at the end of this
module; its conditions and paths are the query nodes, with spans into the rule file's text.

>>> from hgm_engine.query.parser import parse
>>> q = parse("root.subgoals[0]")
>>> [type(s).__name__ for s in q.paths[0].steps]
['RelationStep', 'IndexStep']
>>> q.paths[0].steps[0].name, q.paths[0].steps[0].span
('subgoals', Span(start=4, end=13))
"""

from __future__ import annotations

from typing import Any, Union

import attrs

__all__ = [
    "Span",
    "Query",
    "ConstraintDef",
    "RuleFile",
    "ConstraintStatement",
    "TriggerStatement",
    "PropagateStatement",
    "MarkEffect",
    "SetEffect",
    "Assignment",
    "Statement",
    "RuleEffect",
    "Path",
    "NamedStart",
    "IdStart",
    "ParamStart",
    "SubqueryStart",
    "CallStart",
    "RelationStep",
    "CallStep",
    "WhereStep",
    "IndexStep",
    "SliceStep",
    "RepeatStep",
    "NameArg",
    "Literal",
    "ListLiteral",
    "ParamRef",
    "AttrRef",
    "FuncCall",
    "Compare",
    "Not",
    "And",
    "Or",
    "Start",
    "Step",
    "Expr",
]


@attrs.frozen
class Span:
    start: int
    end: int


# -- starts -----------------------------------------------------------------------------


@attrs.frozen
class NamedStart:
    """``root``, ``nodes``, ``focus``, ``current_goal`` (or an unknown name)."""

    name: str
    span: Span


@attrs.frozen
class IdStart:
    """``#id``, ``TYPE#id``, ``#"quoted id"``, ``#$param``, ``TYPE#$param``.

    Exactly one of ``node_id`` and ``param`` is set.
    """

    node_type: str | None
    node_id: str | None
    param: str | None
    span: Span
    type_span: Span | None = None


@attrs.frozen
class ParamStart:
    """``$p``: the node(s) whose id(s) the parameter holds."""

    param: str
    span: Span


@attrs.frozen
class SubqueryStart:
    """``( query )``."""

    query: "Query"
    span: Span


@attrs.frozen
class CallStart:
    """``name(args)`` as a start: ``search(TEXT)`` (spec v1.1 §8.1), or an unknown name."""

    name: str
    args: tuple["Expr", ...]
    span: Span
    name_span: Span


Start = Union[NamedStart, IdStart, ParamStart, SubqueryStart, CallStart]


# -- steps ------------------------------------------------------------------------------


@attrs.frozen
class RelationStep:
    """``.name``: a relation of the schema."""

    name: str
    span: Span


@attrs.frozen
class CallStep:
    """``.name(args)``: generic navigation, a list step or a final, by name."""

    name: str
    args: tuple["Expr", ...]
    span: Span
    name_span: Span


@attrs.frozen
class WhereStep:
    """``.where(condition)``; ``condition`` is a tuple of terms joined by "and" (commas)."""

    condition: "Expr"
    span: Span


@attrs.frozen
class IndexStep:
    index: int
    span: Span


@attrs.frozen
class SliceStep:
    lower: int | None
    upper: int | None
    span: Span


@attrs.frozen
class RepeatStep:
    """``{m,n}``, ``{m,}`` (``upper`` None), ``{n}``."""

    lower: int
    upper: int | None
    span: Span


Step = Union[RelationStep, CallStep, WhereStep, IndexStep, SliceStep, RepeatStep]


# -- conditions and arguments -----------------------------------------------------------


@attrs.frozen
class NameArg:
    """A bare name used as an argument: an edge type, an attribute."""

    name: str
    span: Span


@attrs.frozen
class Literal:
    value: Any  # str, int, float, bool, None
    span: Span


@attrs.frozen
class ListLiteral:
    items: tuple[Literal | "ListLiteral", ...]
    span: Span


@attrs.frozen
class ParamRef:
    name: str
    span: Span


@attrs.frozen
class AttrRef:
    name: str
    span: Span


@attrs.frozen
class FuncCall:
    """``exists(path)``, ``count(path)``, ``has(attr)``; ``path`` holds the relative path.
    A function of a value (``valid_at('2026-03-01')``, ``valid_at($now)``) holds it in
    ``value`` (a literal or a parameter) and has no path."""

    name: str
    path: "Path | None"
    span: Span
    name_span: Span
    value: "Literal | ListLiteral | ParamRef | None" = None


@attrs.frozen
class Compare:
    """``left OP right`` with OP one of = != < <= > >= in not_in contains =~."""

    op: str
    left: "Expr"
    right: "Expr"
    span: Span
    op_span: Span


@attrs.frozen
class Not:
    operand: "Expr"
    span: Span


@attrs.frozen
class And:
    operands: tuple["Expr", ...]
    span: Span


@attrs.frozen
class Or:
    operands: tuple["Expr", ...]
    span: Span


Expr = Union[NameArg, Literal, ListLiteral, ParamRef, AttrRef, FuncCall, Compare, Not, And, Or]


# -- whole queries ----------------------------------------------------------------------


@attrs.frozen
class Path:
    """A start followed by steps; a relative path (inside ``exists``) has ``start`` None."""

    start: Start | None
    steps: tuple[Step, ...]
    span: Span


@attrs.frozen
class ConstraintDef:
    """``each TYPE [where COND] must COND``."""

    node_type: str
    type_span: Span
    where: "Expr | None"
    must: "Expr"
    span: Span
    text: str = attrs.field(eq=False, repr=False, default="")


@attrs.frozen
class Query:
    """One or more paths joined by ``|``."""

    paths: tuple[Path, ...]
    span: Span
    text: str = attrs.field(eq=False, repr=False, default="")


# -- rule files (docs/rules.md) ---------------------------------------------------------


@attrs.frozen
class ConstraintStatement:
    """``constraint NAME: each TYPE [where COND] must COND``."""

    name: str
    name_span: Span
    definition: ConstraintDef
    span: Span


@attrs.frozen
class MarkEffect:
    """``mark TARGET as STATE [because 'REASON']``; ``target`` None is ``self``.

    ``reason`` is the string's value (quotes and escapes decoded)."""

    target: Path | None
    state: str  # needs_review | blocked
    reason: str | None
    span: Span


@attrs.frozen
class Assignment:
    """``name = literal`` in a ``set`` effect."""

    name: str
    value: Literal | ListLiteral
    span: Span


@attrs.frozen
class SetEffect:
    """``set TARGET with a = v, ...``; ``target`` None is ``self``."""

    target: Path | None
    assignments: tuple[Assignment, ...]
    span: Span


RuleEffect = Union[MarkEffect, SetEffect]


@attrs.frozen
class TriggerStatement:
    """``rule NAME: on EVENT TYPE [where COND] then EFFECT (; EFFECT)*``."""

    name: str
    name_span: Span
    event: str  # add | update | delete
    node_type: str
    type_span: Span
    condition: Expr | None
    effects: tuple[RuleEffect, ...]
    span: Span


@attrs.frozen
class PropagateStatement:
    """``propagate EDGE_TYPE DIRECTION [depth N] [from TYPE] [to TYPE]``; absent parts are None."""

    edge_type: str
    edge_span: Span
    direction: str  # forward | backward | both
    depth: int | None
    depth_span: Span | None
    from_type: str | None
    from_span: Span | None
    to_type: str | None
    to_span: Span | None
    span: Span


Statement = Union[ConstraintStatement, TriggerStatement, PropagateStatement]


@attrs.frozen
class RuleFile:
    """The statements of a rule file, in the order written.

    >>> from hgm_engine.query.parser import parse_rule_file
    >>> f = parse_rule_file("propagate derived_from backward depth 3")
    >>> f.statements[0].edge_type, f.statements[0].depth, f.statements[0].from_type
    ('derived_from', 3, None)
    """

    statements: tuple[Statement, ...]
    span: Span
    text: str = attrs.field(eq=False, repr=False, default="")

    def source(self, node: Any) -> str:
        """The text a node was parsed from.

        >>> from hgm_engine.query.parser import parse_rule_file
        >>> f = parse_rule_file("rule r: on add fact where status = 'new' then mark parent as blocked")
        >>> f.source(f.statements[0].condition)
        "status = 'new'"
        """
        return self.text[node.span.start : node.span.end]
