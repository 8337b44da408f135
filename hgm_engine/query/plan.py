"""The logical plan: what a query computes, as an immutable tree of sources and operators.

``plan`` turns an analysed query into a plan in the most literal way (``#id`` is a scan with
an id filter); the optimizer then rewrites it; ``describe`` prints it for ``explain``.

>>> from hgm_engine.query.parser import parse
>>> from hgm_engine.query.analyze import analyze
>>> from hgm_engine.model.schema import DEFAULT_SCHEMA
>>> p = plan(analyze(parse("#a_hotel.results.count()"), DEFAULT_SCHEMA), DEFAULT_SCHEMA)
>>> print("\\n".join(describe(p)))
scan all nodes
  filter id = 'a_hotel'
  navigate results: out(produces)
final count
"""

from __future__ import annotations

from typing import Any, Callable, Union

import attrs

from hgm_engine.query import syntax as S
from hgm_engine.query.analyze import Analysis
from hgm_engine.model import Closure, Hop, Latest, Relation, Schema, Siblings, Versions, freeze, slot_setters

__all__ = [
    "plan",
    "plan_path",
    "plan_condition",
    "describe",
    "describe_condition",
    "uses_search",
    "QueryPlan",
    "PathPlan",
    "AllNodes",
    "TypeScan",
    "ValueScan",
    "Roots",
    "FocusNode",
    "CurrentGoal",
    "IdLookup",
    "ParamNodes",
    "SubPlan",
    "SearchNodes",
    "Rank",
    "Navigate",
    "Filter",
    "Index",
    "Slice",
    "Limit",
    "SortBy",
    "Attr",
    "Const",
    "Param",
    "PathCount",
    "PathExists",
    "HasAttr",
    "ValidAt",
    "Cmp",
    "AllOf",
    "AnyOf",
    "Negate",
    "Truthy",
]


# -- sources ----------------------------------------------------------------------------


@attrs.frozen
class AllNodes:
    pass


@attrs.frozen
class TypeScan:
    node_type: str


@attrs.frozen
class ValueScan:
    """The nodes of a type whose attribute holds a string value, from the value index."""

    node_type: str
    attribute: str
    value: str


@attrs.frozen
class Roots:
    pass


@attrs.frozen
class FocusNode:
    pass


@attrs.frozen
class CurrentGoal:
    pass


@attrs.frozen(init=False)
class IdLookup:
    node_id: str | None
    param: str | None
    node_type: str | None

    def __init__(self, node_id: str | None, param: str | None, node_type: str | None):
        set_node_id, set_param, set_node_type = _SET_ID_LOOKUP  # (slot_setters: see below QueryPlan)
        set_node_id(self, node_id)
        set_param(self, param)
        set_node_type(self, node_type)


@attrs.frozen
class ParamNodes:
    param: str


@attrs.frozen
class SubPlan:
    plan: "QueryPlan"


@attrs.frozen
class SearchNodes:
    """``search(TEXT)``: the nodes whose text matches, most relevant first, from the node
    index. ``text`` or ``param`` holds TEXT; ``top`` (set by the optimizer) says only the
    first ``top`` are needed — or the first as many as parameter ``top_param`` holds (a
    ``.limit($k)``, checked like every limit parameter before the query runs) —
    ``node_type`` that only nodes of that type are."""

    text: str | None
    param: str | None
    top: int | None = None
    node_type: str | None = None
    top_param: str | None = None


Source = Union[AllNodes, TypeScan, ValueScan, Roots, FocusNode, CurrentGoal, IdLookup, ParamNodes, SubPlan, SearchNodes]


# -- condition expressions --------------------------------------------------------------


@attrs.frozen(init=False)
class Attr:
    name: str

    def __init__(self, name: str):
        _SET_ATTR[0](self, name)  # (slot_setters: see below QueryPlan)


@attrs.frozen(init=False)
class Const:
    value: Any  # frozen JSON value (lists are tuples)

    def __init__(self, value: Any):
        _SET_CONST[0](self, value)  # (slot_setters: see below QueryPlan)


@attrs.frozen
class Param:
    name: str


@attrs.frozen
class PathCount:
    path: "PathPlan"


@attrs.frozen
class PathExists:
    path: "PathPlan"


@attrs.frozen
class HasAttr:
    name: str


@attrs.frozen
class ValidAt:
    """``valid_at(T)`` (spec §8.2): ``at`` is a ``Const`` holding the ISO 8601 text or a
    ``Param`` bound to one; true when the node's valid time contains that instant."""

    at: Any


@attrs.frozen(init=False)
class Cmp:
    op: str  # = != < <= > >= in "not in" contains =~
    left: Any
    right: Any

    def __init__(self, op: str, left: Any, right: Any):
        set_op, set_left, set_right = _SET_CMP  # (slot_setters: see below QueryPlan)
        set_op(self, op)
        set_left(self, left)
        set_right(self, right)


@attrs.frozen
class AllOf:
    items: tuple


@attrs.frozen
class AnyOf:
    items: tuple


@attrs.frozen
class Negate:
    item: Any


@attrs.frozen
class Truthy:
    """A bare operand used as a condition: holds when its value is exactly ``true``."""

    operand: Any


# -- operators --------------------------------------------------------------------------


@attrs.frozen(init=False)
class Filter:
    condition: Any

    def __init__(self, condition: Any):
        _SET_FILTER[0](self, condition)  # (slot_setters: see below QueryPlan)


@attrs.frozen
class Index:
    index: int


@attrs.frozen
class Slice:
    lower: int | None
    upper: int | None


@attrs.frozen
class Limit:
    count: int | None
    param: str | None = None


@attrs.frozen
class Rank:
    """``.rank(TEXT)``: the list reordered by relevance to TEXT, the rest after, in order."""

    text: str | None
    param: str | None


@attrs.frozen
class SortBy:
    attr: str
    descending: bool = False


@attrs.frozen(init=False)
class Navigate:
    """Apply ``relation`` to each node; ``repeat`` is ``(m, n)`` (n None: unbounded);
    ``predicates`` (Filter/Index/Slice) apply to each source node's output separately."""

    name: str
    relation: Relation
    repeat: tuple[int, int | None] | None = None
    predicates: tuple = ()

    def __init__(self, name: str, relation: Relation, repeat: tuple[int, int | None] | None = None, predicates: tuple = ()):
        set_name, set_relation, set_repeat, set_predicates = _SET_NAVIGATE  # (slot_setters: see below QueryPlan)
        set_name(self, name)
        set_relation(self, relation)
        set_repeat(self, repeat)
        set_predicates(self, predicates)


Op = Union[Navigate, Filter, Index, Slice, Limit, SortBy, Rank]


@attrs.frozen(init=False)
class PathPlan:
    """``source`` None means a relative path evaluated from the node under test."""

    source: Source | None
    ops: tuple

    def __init__(self, source: Source | None, ops: tuple):
        set_source, set_ops = _SET_PATH_PLAN  # (slot_setters: see below QueryPlan)
        set_source(self, source)
        set_ops(self, ops)


@attrs.frozen(init=False)
class QueryPlan:
    branches: tuple[PathPlan, ...]
    final: str | None = None  # count | exists | paths
    rules: tuple[str, ...] = ()  # optimizer rules that changed this plan, in order

    def __init__(self, branches: tuple[PathPlan, ...], final: str | None = None, rules: tuple[str, ...] = ()):
        set_branches, set_final, set_rules = _SET_QUERY_PLAN  # (slot_setters: see below QueryPlan)
        set_branches(self, branches)
        set_final(self, final)
        set_rules(self, rules)


# The plan nodes every query makes (a direct-path query's: its source, navigations, a
# comparison's parts, the path and the plan) set their fields with their slots' setters in
# their own __init__ (model.slot_setters, as Node and Commit do), not through attrs' generated
# one (object.__setattr__ per field): in a fresh process, where nothing is specialized yet, a
# node costs ~15% less to make. Same class, fields, defaults, equality, hash and repr.
_SET_ID_LOOKUP = slot_setters(IdLookup)
_SET_ATTR = slot_setters(Attr)
_SET_CONST = slot_setters(Const)
_SET_CMP = slot_setters(Cmp)
_SET_FILTER = slot_setters(Filter)
_SET_NAVIGATE = slot_setters(Navigate)
_SET_PATH_PLAN = slot_setters(PathPlan)
_SET_QUERY_PLAN = slot_setters(QueryPlan)


# -- building ---------------------------------------------------------------------------


def plan(analysis: Analysis, schema: Schema) -> QueryPlan:
    """The literal logical plan of an analysed query."""
    return _plan_query(analysis.query, schema)


def _plan_query(query: S.Query, schema: Schema) -> QueryPlan:
    final = None
    branches = []
    for path in query.paths:
        steps = path.steps
        if steps and isinstance(steps[-1], S.CallStep) and steps[-1].name in ("count", "exists", "paths"):
            final = steps[-1].name
            steps = steps[:-1]
        branches.append(plan_path(path.start, steps, schema))
    return QueryPlan(tuple(branches), final)


def plan_path(start: S.Start | None, steps: tuple, schema: Schema) -> PathPlan:
    """The plan of one path; ``start`` None gives a relative path."""
    source = _plan_start(start, schema) if start is not None else None
    ops: list = []
    if isinstance(start, S.IdStart):
        ops.append(Filter(_id_condition(start)))
    for position, step in enumerate(steps):
        if isinstance(step, S.RelationStep):
            ops.append(Navigate(step.name, schema.relations[step.name]))
        elif isinstance(step, S.CallStep):
            ops.append(_plan_call(step))
        elif isinstance(step, S.RepeatStep):
            nav = ops[-1]
            ops[-1] = Navigate(nav.name, nav.relation, (step.lower, step.upper), nav.predicates)
        else:
            predicate = _plan_predicate(step, schema)
            last = ops[-1] if ops else None
            if isinstance(last, Navigate) and _directly_follows(steps, position):
                ops[-1] = Navigate(last.name, last.relation, last.repeat, last.predicates + (predicate,))
            else:
                ops.append(predicate)
    return PathPlan(source, tuple(ops))


def _directly_follows(steps: tuple, position: int) -> bool:
    """Whether ``steps[position]`` (a predicate) sits after a navigation step with only
    predicates between (a position, not the step: equal steps compare deeply, and a long
    chain of them made finding one quadratic)."""
    for earlier in reversed(steps[:position]):
        if isinstance(earlier, (S.WhereStep, S.IndexStep, S.SliceStep)):
            continue
        return isinstance(earlier, (S.RelationStep, S.RepeatStep)) or (
            isinstance(earlier, S.CallStep) and earlier.name in ("out", "in", "both")
        )
    return False


def _plan_start(start: S.Start, schema: Schema) -> Source:
    if isinstance(start, S.NamedStart):
        return {"root": Roots(), "nodes": AllNodes(), "focus": FocusNode(), "current_goal": CurrentGoal()}[
            start.name
        ]
    if isinstance(start, S.IdStart):
        return AllNodes()
    if isinstance(start, S.ParamStart):
        return ParamNodes(start.param)
    if isinstance(start, S.SubqueryStart):
        return SubPlan(_plan_query(start.query, schema))
    if isinstance(start, S.CallStart):  # search(TEXT), the one start function
        text, param = _text_argument(start.args[0])
        return SearchNodes(text, param)
    raise TypeError(start)


def _text_argument(arg) -> tuple[str | None, str | None]:
    if isinstance(arg, S.ParamRef):
        return None, arg.name
    return arg.value, None


def _id_condition(start: S.IdStart):
    key = Param(start.param) if start.param is not None else Const(start.node_id)
    condition = Cmp("=", Attr("id"), key)
    if start.node_type is not None:
        return AllOf((condition, Cmp("=", Attr("type"), Const(start.node_type))))
    return condition


def _plan_call(step: S.CallStep):
    name, args = step.name, step.args
    if name in ("out", "in", "both"):
        edge_types = tuple(a.name for a in args) or None
        label = f"{name}({', '.join(edge_types or ())})"
        return Navigate(label, Hop(name, edge_types))
    if name == "first":
        return Index(0)
    if name == "last":
        return Index(-1)
    if name == "limit":
        arg = args[0]
        if isinstance(arg, S.ParamRef):
            return Limit(None, arg.name)
        return Limit(arg.value)
    if name == "sort_by":
        descending = len(args) == 2 and args[1].value == "desc"
        return SortBy(args[0].name, descending)
    if name == "rank":
        return Rank(*_text_argument(args[0]))
    raise ValueError(f"not a step function: {name}")


def _plan_predicate(step: S.Step, schema: Schema):
    if isinstance(step, S.WhereStep):
        return Filter(plan_condition(step.condition, schema))
    if isinstance(step, S.IndexStep):
        return Index(step.index)
    if isinstance(step, S.SliceStep):
        return Slice(step.lower, step.upper)
    raise TypeError(step)


def plan_condition(expr: S.Expr, schema: Schema):
    """The plan of a condition (``Cmp``, ``AllOf``, ``PathExists`` ...), evaluated on one node.

    >>> from hgm_engine.query.parser import parse_constraint
    >>> from hgm_engine.model import DEFAULT_SCHEMA
    >>> describe_condition(plan_condition(parse_constraint("each action must status = 'done', has(cost)").must, DEFAULT_SCHEMA))
    "status = 'done' and has(cost)"
    """
    if isinstance(expr, S.And):
        return AllOf(tuple(plan_condition(e, schema) for e in expr.operands))
    if isinstance(expr, S.Or):
        return AnyOf(tuple(plan_condition(e, schema) for e in expr.operands))
    if isinstance(expr, S.Not):
        return Negate(plan_condition(expr.operand, schema))
    if isinstance(expr, S.Compare):
        return Cmp(expr.op, _operand(expr.left, schema), _operand(expr.right, schema))
    return Truthy(_operand(expr, schema))


def _operand(expr: S.Expr, schema: Schema):
    if isinstance(expr, S.AttrRef):
        return Attr(expr.name)
    if isinstance(expr, S.Literal):
        return Const(expr.value)
    if isinstance(expr, S.ListLiteral):
        return Const(freeze(_list_value(expr)))
    if isinstance(expr, S.ParamRef):
        return Param(expr.name)
    if isinstance(expr, S.FuncCall):
        if expr.name == "has":
            return HasAttr(expr.path.steps[0].name)
        if expr.name == "valid_at":
            return ValidAt(_operand(expr.value, schema))
        relative = plan_path(None, expr.path.steps, schema)
        return PathCount(relative) if expr.name == "count" else PathExists(relative)
    # a parenthesised boolean expression used as an operand
    return plan_condition(expr, schema)


def _list_value(expr: S.ListLiteral) -> list:
    return [_list_value(i) if isinstance(i, S.ListLiteral) else i.value for i in expr.items]


# -- describing -------------------------------------------------------------------------


def describe(query_plan: QueryPlan, indent: str = "", *, physical: Callable[[Any], object] | None = None) -> list[str]:
    """The plan as indented lines, one operator each.

    ``physical(node)``, when given, says how a source or operator runs (the executor's
    :meth:`~hgm_engine.query.executor.Program.strategy`), or None; each answer is printed
    as a ``physical:`` line under its node.

    >>> p = QueryPlan((PathPlan(Roots(), (Navigate("subgoals", Hop("out", ("parent_of",), "goal")),)),))
    >>> print("\\n".join(describe(p, physical=lambda node: "one loop" if isinstance(node, Navigate) else None)))
    roots (goals without a parent)
      navigate subgoals: out(parent_of) to type 'goal'
        physical: one loop
    """
    lines: list[str] = []
    for number, branch in enumerate(query_plan.branches):
        if len(query_plan.branches) > 1:
            lines.append(f"{indent}branch {number + 1} of {len(query_plan.branches)} (union, first occurrence wins)")
            lines.extend(_describe_path(branch, indent + "  ", physical))
        else:
            lines.extend(_describe_path(branch, indent, physical))
    if query_plan.final:
        lines.append(f"{indent}final {query_plan.final}")
    return lines


def _describe_path(path: PathPlan, indent: str, physical) -> list[str]:
    lines = []
    source = path.source
    if isinstance(source, SubPlan):
        lines.append(f"{indent}subquery")
        lines.extend(describe(source.plan, indent + "    ", physical=physical))
        lines.append(f"{indent}then")
    elif source is not None:
        lines.append(indent + _describe_source(source))
        lines.extend(_describe_physical(source, indent + "  ", physical))
    else:
        lines.append(indent + "from the node under test")
    for op in path.ops:
        lines.extend(_describe_op(op, indent + "  "))
        lines.extend(_describe_physical(op, indent + "    ", physical))
    return lines


def _describe_physical(node, indent: str, physical) -> list[str]:
    how = None if physical is None else physical(node)
    return [] if how is None else [f"{indent}physical: {how}"]


def _describe_source(source: Source) -> str:
    if isinstance(source, AllNodes):
        return "scan all nodes"
    if isinstance(source, TypeScan):
        return f"scan type index {source.node_type!r}"
    if isinstance(source, ValueScan):
        return f"scan value index {source.node_type!r}.{source.attribute} = {source.value!r}"
    if isinstance(source, Roots):
        return "roots (goals without a parent)"
    if isinstance(source, FocusNode):
        return "focus node"
    if isinstance(source, CurrentGoal):
        return "current goal of the focus"
    if isinstance(source, IdLookup):
        key = f"${source.param}" if source.param else repr(source.node_id)
        typed = f" of type {source.node_type!r}" if source.node_type else ""
        return f"lookup id {key}{typed}"
    if isinstance(source, ParamNodes):
        return f"nodes named by ${source.param}"
    if isinstance(source, SearchNodes):
        text = f"${source.param}" if source.param is not None else repr(source.text)
        scope = f" of type {source.node_type!r}" if source.node_type is not None else ""
        first = f", the first {source.top} only" if source.top is not None else ""
        if source.top_param is not None:
            first = f", the first ${source.top_param} only"
        return f"search the node index for {text}{scope}, most relevant first{first}"
    raise TypeError(source)


def _describe_relation(relation: Relation) -> str:
    if isinstance(relation, Hop):
        types = ", ".join(relation.edge_types or ())
        text = f"{relation.direction}({types})"
        if relation.node_type:
            text += f" to type {relation.node_type!r}"
        return text
    if isinstance(relation, Closure):
        return _describe_relation(relation.hop) + "{1,}"
    if isinstance(relation, Siblings):
        return "siblings"
    if isinstance(relation, Latest):
        return "latest version"
    if isinstance(relation, Versions):
        return "version chain"
    return repr(relation)


def _describe_op(op, indent: str) -> list[str]:
    if isinstance(op, Navigate):
        text = f"{indent}navigate {op.name}: {_describe_relation(op.relation)}"
        if op.repeat:
            low, high = op.repeat
            text += f" repeated {{{low},{'' if high is None else high}}}"
        lines = [text]
        for predicate in op.predicates:
            lines.extend(_describe_op(predicate, indent + "  per source: "))
        return lines
    if isinstance(op, Filter):
        return [f"{indent}filter {describe_condition(op.condition)}"]
    if isinstance(op, Index):
        return [f"{indent}index [{op.index}]"]
    if isinstance(op, Slice):
        low = "" if op.lower is None else op.lower
        high = "" if op.upper is None else op.upper
        return [f"{indent}slice [{low}:{high}]"]
    if isinstance(op, Limit):
        return [f"{indent}limit {op.count if op.param is None else '$' + op.param}"]
    if isinstance(op, SortBy):
        return [f"{indent}sort by {op.attr} {'desc' if op.descending else 'asc'} (stable, missing last)"]
    if isinstance(op, Rank):
        text = f"${op.param}" if op.param is not None else repr(op.text)
        return [f"{indent}rank by relevance to {text} (matches first, the rest in their order)"]
    raise TypeError(op)


def uses_search(query_plan: QueryPlan) -> bool:
    """Whether the plan reads the node index (``search`` or ``rank`` anywhere in it).

    >>> uses_search(QueryPlan((PathPlan(SearchNodes("hotel", None), ()),)))
    True
    >>> uses_search(QueryPlan((PathPlan(Roots(), ()),)))
    False
    """
    pending: list = list(query_plan.branches)
    while pending:
        item = pending.pop()
        if isinstance(item, PathPlan):
            if isinstance(item.source, SearchNodes):
                return True
            if isinstance(item.source, SubPlan):
                pending.extend(item.source.plan.branches)
            pending.extend(item.ops)
        elif isinstance(item, Rank):
            return True
        elif isinstance(item, Navigate):
            pending.extend(item.predicates)
        elif isinstance(item, Filter):
            pending.append(item.condition)
        elif isinstance(item, (AllOf, AnyOf)):
            pending.extend(item.items)
        elif isinstance(item, Negate):
            pending.append(item.item)
        elif isinstance(item, Truthy):
            pending.append(item.operand)
        elif isinstance(item, Cmp):
            pending.extend((item.left, item.right))
        elif isinstance(item, (PathCount, PathExists)):
            pending.append(item.path)
    return False


def describe_condition(cond) -> str:
    """A condition as text.

    >>> describe_condition(AllOf((Cmp("=", Attr("status"), Const("done")), HasAttr("cost"))))
    "status = 'done' and has(cost)"
    """
    if isinstance(cond, AllOf):
        return " and ".join(_paren(c) for c in cond.items)
    if isinstance(cond, AnyOf):
        return " or ".join(_paren(c) for c in cond.items)
    if isinstance(cond, Negate):
        return "not " + _paren(cond.item)
    if isinstance(cond, Cmp):
        return f"{describe_condition(cond.left)} {cond.op} {describe_condition(cond.right)}"
    if isinstance(cond, Truthy):
        return describe_condition(cond.operand)
    if isinstance(cond, Attr):
        return cond.name
    if isinstance(cond, Const):
        return _literal(cond.value)
    if isinstance(cond, Param):
        return "$" + cond.name
    if isinstance(cond, HasAttr):
        return f"has({cond.name})"
    if isinstance(cond, ValidAt):
        return f"valid_at({describe_condition(cond.at)})"
    if isinstance(cond, (PathCount, PathExists)):
        word = "count" if isinstance(cond, PathCount) else "exists"
        inner = "; ".join(" ".join(line.strip() for line in _describe_op(op, "")) for op in cond.path.ops)
        return f"{word}({inner})"
    return repr(cond)


def _paren(cond) -> str:
    text = describe_condition(cond)
    return f"({text})" if isinstance(cond, (AllOf, AnyOf)) else text


def _literal(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return repr(value)
