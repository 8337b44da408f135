"""Programs: an optimized plan compiled once into closures and generated functions.

:func:`build` compiles each branch of a plan into a chain of steps (:class:`~hgm_engine.query.executor.operators.Step`),
choosing for each navigation step the fastest way it can run (:func:`navigation_step`):

- **one-type hop**: a hop over one edge type without predicates — one loop over the sources'
  adjacency lists;
- **one-type hop, then filters over the whole list**: its predicates are all filters, which keep
  or drop a node whichever source reached it, so they run once over the whole result;
- **generated per source**: filters and at most one pick after them, per source — the hop,
  the type test, the conditions and the pick written as one Python function;
- **per-source loop**: any other predicates of a one-type out/in hop, applied per source in
  one loop;
- **generic, then filters over the whole list**: everything else (repetitions, closures,
  siblings, versions, several edge types) with only filters after it — each source expanded
  on its own (a walk's sources in one call), then the filters once over the union (per source
  where a node is reached from two sources);
- **generic** / **generic per source**: everything else expands each source on its own, then
  applies its predicates, if any, to each source's outputs.

:meth:`Program.strategy` says which one runs for each node of the plan; ``explain(physical=True)``
prints it.

>>> from hgm_engine.query.pipeline import compile
>>> program = compile("root.subgoals[0]").program
>>> print(program.strategy(program.plan.branches[0].ops[0]))  # doctest: +ELLIPSIS
generated per source <hgm step ...>: out(parent_of) to type 'goal' (cached per adjacency), pick [0:1]
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Mapping

from hgm_engine.model import Closure, Hop, Latest, Siblings, Versions
from hgm_engine.query.executor.codegen import hop_then_filters_detail, per_source_step
from hgm_engine.query.executor.conditions import condition_weight, condition_writer
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context, Limits
from hgm_engine.query.executor.operators import (
    Step,
    Strategy,
    TieredFilter,
    TieredHopThenFilters,
    Walked,
    expanders,
    filtered_sources,
    generated_name,
    generic_hop,
    generic_per_source,
    hop_then_filters,
    list_op,
    one_type_hop,
    per_source_loop,
    then_filters,
    traced_navigation,
    walk_levels,
    walk_step,
)
from hgm_engine.query.executor.sources import charged, index_counter, scan_filter, source
from hgm_engine.query.plan import AllOf, Filter, Navigate, PathPlan, QueryPlan, SubPlan

__all__ = ["Program", "build", "navigation_step"]


def navigation_step(op: Navigate, compile_path) -> Step:
    """The :class:`~hgm_engine.query.executor.operators.Step` of a navigation step, its fast
    form the fastest strategy that fits (the module docstring lists them).

    >>> from hgm_engine.query.plan import Filter, Attr, Cmp, Const, Index
    >>> navigation_step(Navigate("actions", Hop("out", ("parent_of",), "action")), None).strategy.name
    'one-type hop'
    >>> done = Filter(Cmp("=", Attr("status"), Const("done")))
    >>> navigation_step(Navigate("children", Hop("out", ("parent_of",)), (1, 2), (done,)), None).strategy.name
    'generic, then filters over the whole list'
    >>> navigation_step(Navigate("children", Hop("out", ("parent_of",)), (1, 2), (Index(0),)), None).strategy.name
    'generic per source'
    """
    walk = walk_step(op)
    if walk is not None:  # a walk without predicates
        return Step(walk, _lazy_traced(op, None), _WALK)
    relation = op.relation
    plain_hop = isinstance(relation, Hop) and op.repeat is None
    single = one_type_hop(relation) if plain_hop else None
    # The predicates' own steps are built only when something uses them (compiling a query
    # must stay cheap): a strategy below, or traced mode for .paths().
    built: list = []

    def predicate_steps() -> list[Step]:
        if not built:
            built.append([list_op(p, compile_path) for p in op.predicates])
        return built[0]

    # the traced form (only .paths() runs it) and the general expansion are made when used
    traced = _lazy_traced(op, predicate_steps if op.predicates else None)
    if single is not None and not op.predicates:
        return Step(single, traced, Strategy("one-type hop", _one_loop(relation)))
    if single is not None and all(isinstance(p, Filter) for p in op.predicates):
        # Filters alone keep or drop a node whichever source reached it: they can run once
        # over the whole hop's result instead of per source.
        conditions = [p.condition for p in op.predicates]
        inlined = hop_then_filters_detail(relation, len(conditions))
        if inlined is not None:  # the hop and the filters in one generated function, once hot
            tiered = TieredHopThenFilters(relation, conditions, compile_path)
            return Step(tiered, traced, Strategy("one-type hop, then filters over the whole list", inlined, (tiered,)))
        filters = [step.fast for step in predicate_steps()]
        return Step(hop_then_filters(single, filters), traced, Strategy(
            "one-type hop, then filters over the whole list", _one_loop(relation), _generated(predicate_steps())))
    if plain_hop and op.predicates:
        filters = tuple(p.condition for p in op.predicates if isinstance(p, Filter))
        weight = condition_weight(AllOf(filters)) if filters else 1
        generated = per_source_step(relation, op.predicates, condition_writer(compile_path), weight)
        if generated is not None:
            step, inlined = generated
            return Step(step, traced, Strategy("generated per source", inlined, (generated_name(step),)))
        loop = per_source_loop(relation, [step.fast for step in predicate_steps()])
        if loop is not None:
            tests = "the type test and the predicates" if relation.node_type is not None else "the predicates"
            detail = f"one loop over {relation.direction}({relation.edge_types[0]}) of all sources, {tests} on each source's targets"
            return Step(loop, traced, Strategy("per-source loop", detail, _generated(predicate_steps())))
    lists = filtered_sources(op)
    if lists is not None:
        # Filters alone keep or drop a node whichever source reached it: they run once over the
        # union of the sources' outputs (then_filters: per source where two reach one node).
        conditions = [p.condition for p in op.predicates]
        filters = [TieredFilter(c, compile_path) for c in conditions]
        return Step(then_filters(lists, filters, [condition_weight(c) for c in conditions]), traced, Strategy(
            "generic, then filters over the whole list", _expansion(op) + ", then the filters once over their union",
            tuple(filters)))
    plain = walk_levels(op) or expanders(op)[0]  # a walk's levels without the expansions it does not use
    if not op.predicates:
        return Step(generic_hop(plain), traced, Strategy("generic", _expansion(op)))
    detail = _expansion(op) + ", then its predicates"
    return Step(generic_per_source(plain, [step.fast for step in predicate_steps()]), traced, Strategy(
        "generic per source", detail, _generated(predicate_steps())))


def _lazy_traced(op: Navigate, predicate_steps: Callable[[], list[Step]] | None) -> Callable:
    """The traced form of navigation ``op`` (:func:`traced_navigation` over its traced
    expansion, then ``predicate_steps()``' traced forms), made on its first call: only
    ``.paths()`` runs it."""
    made: list = []

    def traced(items, ctx):
        if not made:
            made.append(traced_navigation(expanders(op)[1], predicate_steps))
        return made[0](items, ctx)

    return traced


def _one_loop(relation: Hop) -> str:
    text = f"one loop over {relation.direction}({relation.edge_types[0]}) of all sources"
    if relation.node_type is not None:
        text += f", to type {relation.node_type!r} (cached per adjacency)"
    return text


def _expansion(op: Navigate) -> str:
    relation = op.relation
    if op.repeat is not None or isinstance(relation, Closure):
        how = "breadth-first levels"
    elif isinstance(relation, Siblings):
        how = "through each parent"
    elif isinstance(relation, Latest):
        how = "along the replaces chain to the newest"
    elif isinstance(relation, Versions):
        how = "along the replaces chain both ways"
    elif relation.edge_types is None:
        how = "every edge type"
    elif len(relation.edge_types) > 1:
        how = "several edge types"
    else:
        how = "outgoing then incoming"
    return f"each source expanded on its own ({how})"


def _generated(steps: list[Step]) -> tuple[str, ...]:
    return tuple(name for step in steps if step.strategy is not None for name in step.strategy.generated)


# what _expansion says of a repetition or closure without predicates
_WALK = Strategy("generic", "each source expanded on its own (breadth-first levels)")
_TRACED_NAVIGATION = Strategy(
    "traced", "each (node, walk) expanded on its own, then its predicates; the walk to each node kept"
)
_TRACED_FILTER = Strategy("traced filter", "the condition tested on each (node, walk)")
_INDEX_SIZE = Strategy("index size", "count() reads the size of the index, no list is built")


class _PathProgram:
    __slots__ = ("source", "fast_ops", "traced_ops", "traced_source", "scan_filter", "counter")

    def run_fast(self, ctx, start_ids=None) -> list:
        if start_ids is not None:
            ids = start_ids
            ops = self.fast_ops
        elif self.scan_filter is not None:
            # A scan followed by a filter reads payloads straight from the index.
            ids = self.scan_filter(ctx)
            ops = self.fast_ops[1:]
        else:
            ids = self.source(ctx)
            ops = self.fast_ops
        for op in ops:
            ids = op(ids, ctx)
        return ids

    def count(self, ctx) -> int:
        if self.counter is not None:
            return self.counter(ctx)
        return len(self.run_fast(ctx))

    def run_traced(self, ctx) -> list:
        items = self.traced_source(ctx)
        for op in self.traced_ops:
            items = op(items, ctx)
        return items


class Program:
    """A compiled query: run it on any view, with a focus and parameter values.

    >>> from hgm_engine.model import MemoryGraph
    >>> from hgm_engine.query.pipeline import compile
    >>> g = MemoryGraph(); _ = g.add_node("g", "goal", {})
    >>> compile("root").program.run(g)
    ['g']
    """

    def __init__(self, query_plan: QueryPlan):
        self.plan = query_plan
        self.final = query_plan.final
        # id(node) -> (node, how its fast form runs), for every source and operator compiled,
        # subqueries' and conditions' paths included; the plan keeps the nodes (and ids) alive.
        self._strategies: dict[int, tuple[Any, Strategy]] = {}
        self._physical: dict[int, tuple[Any, Strategy]] | None = None
        # id(relative path) -> (path, its program): a condition is compiled more than once
        # (as a test for paths(), as a loop over ids, as a payload scan), and each compiled
        # the paths inside it again, so nesting exists(children.where(...)) doubled the work
        # per level. Each relative path of the plan is compiled once.
        self._relatives: dict[int, tuple[PathPlan, Callable]] = {}
        branches = query_plan.branches
        if len(branches) == 1:  # (no comprehension: one function less in a fresh process)
            self._paths = [self._compile_path(branches[0])]
        else:
            self._paths = [self._compile_path(p) for p in branches]

    def _compile_path(self, path: PathPlan) -> _PathProgram:
        program = _PathProgram()
        fast_ops, traced_ops = [], []
        for op in path.ops:
            step = navigation_step(op, self._relative) if isinstance(op, Navigate) else list_op(op, self._relative)
            fast_ops.append(step.fast)
            traced_ops.append(step.traced)
            if step.strategy is not None:
                self._strategies[id(op)] = (op, step.strategy)
        program.fast_ops = tuple(fast_ops)
        program.traced_ops = tuple(traced_ops)
        program.scan_filter = None
        ops = path.ops
        # (scan_filter needs a filter first, index_counter no operator: not called otherwise)
        scan = scan_filter(path, self._relative) if ops and isinstance(ops[0], Filter) else None
        if scan is not None:
            program.scan_filter, strategy = scan
            self._strategies[id(ops[0])] = (ops[0], strategy)
        program.counter = None if ops else index_counter(path)
        if path.source is None:
            program.source = None
            program.traced_source = None
        elif isinstance(path.source, SubPlan):
            inner = Program(path.source.plan)
            self._strategies.update(inner._strategies)
            program.source = inner.fast
            program.traced_source = inner.traced
        else:
            start = charged(source(path.source))
            program.source = start
            program.traced_source = lambda ctx: [(i, (i,)) for i in start(ctx)]
        return program

    def _relative(self, path: PathPlan) -> Callable[[list, Any], list]:
        known = self._relatives.get(id(path))
        if known is not None and known[0] is path:
            return known[1]
        program = self._compile_path(path)
        run = program.run_fast

        def relative(start_ids, ctx):
            return run(ctx, start_ids)

        self._relatives[id(path)] = (path, relative)
        return relative

    def count(self, ctx) -> int:
        """The number of nodes the query gives in ``ctx`` (an index's size when that is it).

        >>> from hgm_engine.model import MemoryGraph
        >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
        >>> from hgm_engine.query.pipeline import compile
        >>> g = MemoryGraph(); _ = g.add_node("f", "fact", {})
        >>> compile("nodes.where(type = 'fact')").program.count(Context(g, {}, None, DEFAULT_LIMITS))
        1
        """
        if len(self._paths) == 1:
            return self._paths[0].count(ctx)
        return len(self.fast(ctx))

    def fast(self, ctx) -> list:
        """The ids the query gives in ``ctx``, each once, in order (the union of its branches).

        >>> from hgm_engine.model import MemoryGraph
        >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
        >>> from hgm_engine.query.pipeline import compile
        >>> g = MemoryGraph(); _ = g.add_node("a", "fact", {}); _ = g.add_node("b", "fact", {})
        >>> compile("#b | #a | #b").program.fast(Context(g, {}, None, DEFAULT_LIMITS))
        ['b', 'a']
        """
        if len(self._paths) == 1:
            ids = self._paths[0].run_fast(ctx)
            return list(ids) if ids.__class__ is Walked else ids  # a plain list, whatever the steps made
        return list(dict.fromkeys(itertools.chain.from_iterable(p.run_fast(ctx) for p in self._paths)))

    def traced(self, ctx) -> list:
        """``(id, walk)`` for each node the query gives in ``ctx``, the first walk that got there.

        >>> from hgm_engine.model import MemoryGraph
        >>> from hgm_engine.query.executor.context import Context, DEFAULT_LIMITS
        >>> from hgm_engine.query.pipeline import compile
        >>> g = MemoryGraph(); _ = g.add_node("g", "goal", {}); _ = g.add_node("a", "action", {})
        >>> _ = g.add_edge("g", "a", "parent_of")
        >>> compile("root.actions").program.traced(Context(g, {}, None, DEFAULT_LIMITS))
        [('a', ('g', 'a'))]
        """
        out: dict[str, tuple] = {}
        for path in self._paths:
            for node_id, walk in path.run_traced(ctx):
                out.setdefault(node_id, walk)
        return list(out.items())

    def run(self, view, *, focus: str | None = None, params: Mapping[str, Any] | None = None, limits: Limits = DEFAULT_LIMITS):
        """Run on ``view``: a list of ids, an int (count), a bool (exists) or a list of walks.

        Parameters must already be bound and checked (``hgm_engine.query.pipeline`` does that).
        """
        ctx = Context(view, params or {}, focus, limits)
        final = self.final
        if final is None and len(self._paths) == 1:  # the common case: one path's ids
            path = self._paths[0]
            if path.scan_filter is None and path.source is not None:  # run_fast's own loop, inline
                ids = path.source(ctx)
                for op in path.fast_ops:
                    ids = op(ids, ctx)
            else:
                ids = path.run_fast(ctx)
            return list(ids) if ids.__class__ is Walked else ids
        if final == "paths":
            return [list(walk) for _, walk in self.traced(ctx)]
        if final == "count":
            return self.count(ctx)
        ids = self.fast(ctx)
        if final == "exists":
            return bool(ids)
        return ids

    def strategy(self, node) -> Strategy | None:
        """How ``node`` — a source or operator of this program's plan — runs when the program
        does, or None when it runs just as the plan says (an index, a sort...).

        >>> from hgm_engine.query.pipeline import compile
        >>> program = compile("nodes.where(type = 'fact').count()").program
        >>> print(program.strategy(program.plan.branches[0].source))
        index size: count() reads the size of the index, no list is built
        """
        if self._physical is None:
            self._physical = self._physical_plan()
        entry = self._physical.get(id(node))
        # resolved: a filter not generated yet (it runs as closures until it proves hot) is
        # written now, so that the physical plan names the function that will run
        return entry[1].resolved() if entry is not None and entry[0] is node else None

    def _physical_plan(self) -> dict[int, tuple[Any, Strategy]]:
        physical = dict(self._strategies)
        if self.final == "count" and len(self._paths) == 1 and self._paths[0].counter is not None:
            start = self.plan.branches[0].source
            physical[id(start)] = (start, _INDEX_SIZE)
        if self.final == "paths":  # the whole query runs traced, subqueries as sources included
            pending = list(self.plan.branches)
            while pending:
                path = pending.pop()
                if isinstance(path.source, SubPlan):
                    pending.extend(path.source.plan.branches)
                for op in path.ops:
                    if isinstance(op, Navigate):
                        physical[id(op)] = (op, _TRACED_NAVIGATION)
                    elif isinstance(op, Filter):
                        physical[id(op)] = (op, _TRACED_FILTER)
        return physical


def build(query_plan: QueryPlan) -> Program:
    """Compile an optimized plan into a :class:`Program`.

    >>> from hgm_engine.query.pipeline import compile
    >>> build(compile("root.count()").optimized_plan).final
    'count'
    """
    return Program(query_plan)
