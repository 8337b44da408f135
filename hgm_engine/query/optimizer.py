"""Optimizer: rewrite a logical plan with rules that keep its meaning and make it cheaper.

Each rule is a function from a path plan to a new path plan, or None when it does not apply
(as in sqlglot's optimizer). ``optimize`` applies them to every path, including subqueries
and the relative paths inside ``exists``/``count``, and records which rules fired.

>>> from hgm_engine.query.parser import parse
>>> from hgm_engine.query.analyze import analyze
>>> from hgm_engine.query.plan import plan, describe
>>> from hgm_engine.model.schema import DEFAULT_SCHEMA
>>> p = optimize(plan(analyze(parse("nodes.where(type = 'fact', confidence > 0.5)"), DEFAULT_SCHEMA), DEFAULT_SCHEMA))
>>> p.rules
('type_index',)
>>> print("\\n".join(describe(p)))
scan type index 'fact'
  filter confidence > 0.5
"""

from __future__ import annotations

from typing import Callable

import attrs

from hgm_engine.query.plan import (
    AllNodes,
    AllOf,
    AnyOf,
    Attr,
    Cmp,
    Const,
    Filter,
    IdLookup,
    Index,
    Limit,
    Navigate,
    Negate,
    Param,
    PathCount,
    PathExists,
    PathPlan,
    QueryPlan,
    SearchNodes,
    Slice,
    SubPlan,
    Truthy,
    TypeScan,
    ValueScan,
)
from hgm_engine.model import Hop

__all__ = ["optimize", "RULES", "id_lookup", "type_index", "value_index", "type_pushdown", "search_type", "search_top"]


def _conjuncts(condition) -> tuple:
    return condition.items if isinstance(condition, AllOf) else (condition,)


def _rebuild(conjuncts: list):
    if not conjuncts:
        return None
    return conjuncts[0] if len(conjuncts) == 1 else AllOf(tuple(conjuncts))


def _equality_on(attr_name: str, conjunct, value_types=(Const, Param)):
    """The compared operand when ``conjunct`` is ``attr_name = value``, else None."""
    if isinstance(conjunct, Cmp) and conjunct.op == "=":
        left, right = conjunct.left, conjunct.right
        if type(left) is Attr and left.name == attr_name and isinstance(right, value_types):
            return right
        if type(right) is Attr and right.name == attr_name and isinstance(left, value_types):
            return left
    return None


def _take(conjuncts: tuple, attr_name: str, value_types) -> tuple:
    """Split off the first ``attr = value`` conjunct: (value, remaining conjuncts)."""
    for position, conjunct in enumerate(conjuncts):
        value = _equality_on(attr_name, conjunct, value_types)
        if value is not None:
            if isinstance(value, Const) and not isinstance(value.value, str):
                continue  # an id or type is a string; other constants match nothing, keep the filter
            return value, list(conjuncts[:position]) + list(conjuncts[position + 1 :])
    return None, list(conjuncts)


def _with_filter(path: PathPlan, source, remaining: list) -> PathPlan:
    condition = _rebuild(remaining)
    rest = path.ops[1:]
    ops = ((Filter(condition),) + rest) if condition is not None else rest
    return PathPlan(source, ops)


def id_lookup(path: PathPlan) -> PathPlan | None:
    """``nodes.where(id = X [, type = T])`` (which ``#X`` and ``T#X`` plan to) → a direct lookup."""
    if not isinstance(path.source, AllNodes) or not path.ops or not isinstance(path.ops[0], Filter):
        return None
    key, remaining = _take(_conjuncts(path.ops[0].condition), "id", (Const, Param))
    if key is None:
        return None
    node_type, remaining = _take(tuple(remaining), "type", (Const,))
    lookup = IdLookup(
        key.value if isinstance(key, Const) else None,
        key.name if isinstance(key, Param) else None,
        node_type.value if node_type is not None else None,
    )
    return _with_filter(path, lookup, remaining)


def type_index(path: PathPlan) -> PathPlan | None:
    """``nodes.where(type = T, ...)`` → a scan of the per-type index of T."""
    if not isinstance(path.source, AllNodes) or not path.ops or not isinstance(path.ops[0], Filter):
        return None
    node_type, remaining = _take(_conjuncts(path.ops[0].condition), "type", (Const,))
    if node_type is None:
        return None
    return _with_filter(path, TypeScan(node_type.value), remaining)


def value_index(path: PathPlan) -> PathPlan | None:
    """``type scan → where(attr = 'text', ...)`` → the nodes of the type with that value, from
    the value index (strings only: an equality with a string matches strings only)."""
    if not isinstance(path.source, TypeScan) or not path.ops or not isinstance(path.ops[0], Filter):
        return None
    conjuncts = _conjuncts(path.ops[0].condition)
    for position, conjunct in enumerate(conjuncts):
        if not (isinstance(conjunct, Cmp) and conjunct.op == "="):
            continue
        for attr_side, value_side in ((conjunct.left, conjunct.right), (conjunct.right, conjunct.left)):
            if (
                isinstance(attr_side, Attr)
                and attr_side.name not in ("id", "type")
                and isinstance(value_side, Const)
                and type(value_side.value) is str
            ):
                remaining = list(conjuncts[:position]) + list(conjuncts[position + 1 :])
                source = ValueScan(path.source.node_type, attr_side.name, value_side.value)
                return _with_filter(path, source, remaining)
    return None


def type_pushdown(path: PathPlan) -> PathPlan | None:
    """``.hop.where(type = T, ...)`` → the hop only follows edges to nodes of type T."""
    changed = False
    ops = list(path.ops)
    for position, op in enumerate(ops):
        if not (isinstance(op, Navigate) and isinstance(op.relation, Hop) and op.repeat is None):
            continue
        if not op.predicates or not isinstance(op.predicates[0], Filter):
            continue
        node_type, remaining = _take(_conjuncts(op.predicates[0].condition), "type", (Const,))
        if node_type is None or op.relation.node_type not in (None, node_type.value):
            continue
        condition = _rebuild(remaining)
        predicates = ((Filter(condition),) if condition is not None else ()) + op.predicates[1:]
        relation = attrs.evolve(op.relation, node_type=node_type.value)
        ops[position] = attrs.evolve(op, relation=relation, predicates=predicates)
        changed = True
    return PathPlan(path.source, tuple(ops)) if changed else None


def search_type(path: PathPlan) -> PathPlan | None:
    """``search(TEXT).where(type = T, ...)`` → the search only ranks nodes of type T (so a
    ``.limit(n)`` after it can stop at the first n of that type)."""
    source = path.source
    if not isinstance(source, SearchNodes) or source.node_type is not None:
        return None
    if not path.ops or not isinstance(path.ops[0], Filter):
        return None
    node_type, remaining = _take(_conjuncts(path.ops[0].condition), "type", (Const,))
    if node_type is None:
        return None
    return _with_filter(path, attrs.evolve(source, node_type=node_type.value), remaining)


def _first_needed(op) -> int | None:
    """How many nodes from the front of a list ``op`` can return, when it is a fixed number."""
    if isinstance(op, Limit) and op.param is None:
        return op.count
    if isinstance(op, Index) and op.index >= 0:
        return op.index + 1
    if isinstance(op, Slice) and op.upper is not None and op.upper >= 0 and (op.lower is None or op.lower >= 0):
        return op.upper
    return None


def search_top(path: PathPlan) -> PathPlan | None:
    """``search(TEXT).limit(n)`` (or ``.limit($k)``, ``.first()``, ``[i]``, ``[a:b]``) → the
    search selects the best n instead of ordering every match (the list step still runs
    after it)."""
    source = path.source
    if not isinstance(source, SearchNodes) or source.top is not None or source.top_param is not None or not path.ops:
        return None
    first = path.ops[0]
    if isinstance(first, Limit) and first.param is not None:
        # .limit($k): the parameter is checked (an integer >= 0) before the query runs
        return PathPlan(attrs.evolve(source, top_param=first.param), path.ops)
    needed = _first_needed(first)
    if needed is None:
        return None
    return PathPlan(attrs.evolve(source, top=needed), path.ops)


RULES: tuple[tuple[str, Callable[[PathPlan], PathPlan | None]], ...] = (
    ("id_lookup", id_lookup),
    ("type_index", type_index),
    ("value_index", value_index),
    ("type_pushdown", type_pushdown),
    ("search_type", search_type),
    ("search_top", search_top),
)

# The source each rule rewrites (None: any source); a rule is not called on a path whose source
# it cannot apply to. These tests are the rules' own first tests, made once per path instead of
# once per rule: a fresh process pays for every function its first query runs.
_RULE_SOURCES = {
    "id_lookup": AllNodes, "type_index": AllNodes, "value_index": TypeScan, "type_pushdown": None,
    "search_type": SearchNodes, "search_top": SearchNodes,
}


def optimize(query_plan: QueryPlan) -> QueryPlan:
    """Apply every rule to every path of the plan; ``rules`` lists those that fired. A plan no
    rule changes is returned as it is (so are the parts of a plan no rule changed).

    >>> from hgm_engine.query.plan import Roots
    >>> literal = QueryPlan((PathPlan(Roots(), ()),))
    >>> optimize(literal) is literal
    True
    """
    fired: list[str] = []
    branches = tuple([_optimize_path(branch, fired) for branch in query_plan.branches])
    if not fired and branches == query_plan.branches:  # the same paths (identity settles it)
        return query_plan
    names = tuple(dict.fromkeys(query_plan.rules + tuple(fired)))
    return QueryPlan(branches, query_plan.final, names)


def _optimize_path(path: PathPlan, fired: list[str]) -> PathPlan:
    source = path.source
    if isinstance(source, SubPlan):
        inner = optimize(source.plan)
        fired.extend(inner.rules)
        if inner is not source.plan:
            source = SubPlan(QueryPlan(inner.branches, inner.final))
    ops = path.ops
    optimized = tuple([_optimize_op(op, fired) for op in ops])
    if source is not path.source or optimized != ops:
        path = PathPlan(source, optimized)
    navigates = _has_predicates(path.ops)
    for name, rule in RULES:
        needs = _RULE_SOURCES[name]
        if needs is None:
            if not navigates:
                continue
        elif type(path.source) is not needs:
            continue
        rewritten = rule(path)
        if rewritten is not None:
            fired.append(name)
            path = rewritten
            navigates = _has_predicates(path.ops)
    return path


def _has_predicates(ops: tuple) -> bool:
    """Whether a navigation among ``ops`` has predicates (what type_pushdown rewrites)."""
    for op in ops:
        if type(op) is Navigate and op.predicates:
            return True
    return False


def _optimize_op(op, fired: list[str]):
    """``op`` with the paths inside its conditions optimized (``op`` itself when none changed)."""
    if isinstance(op, Filter):
        condition = _optimize_condition(op.condition, fired)
        return op if condition is op.condition else Filter(condition)
    if isinstance(op, Navigate) and op.predicates:
        predicates = tuple([_optimize_op(p, fired) for p in op.predicates])
        if predicates == op.predicates:
            return op
        return attrs.evolve(op, predicates=predicates)
    return op


def _optimize_condition(cond, fired: list[str]):
    kind = type(cond)
    if kind is Attr or kind is Const or kind is Param:
        return cond
    if kind is AllOf or kind is AnyOf:
        items = tuple([_optimize_condition(c, fired) for c in cond.items])
        return cond if items == cond.items else kind(items)
    if kind is Negate:
        item = _optimize_condition(cond.item, fired)
        return cond if item is cond.item else Negate(item)
    if kind is Truthy:
        operand = _optimize_condition(cond.operand, fired)
        return cond if operand is cond.operand else Truthy(operand)
    if kind is Cmp:
        left, right = _optimize_condition(cond.left, fired), _optimize_condition(cond.right, fired)
        return cond if left is cond.left and right is cond.right else Cmp(cond.op, left, right)
    if kind is PathCount or kind is PathExists:
        path = _optimize_path(cond.path, fired)
        return cond if path is cond.path else kind(path)
    return cond
