"""A navigation whose predicates are all filters (``#a.results.derived{1,}.where(confidence >=
0.5)``, benchmark ``lineage``) runs each filter once over the union of the sources' outputs
(``operators.then_filters``; docs/performance.md, "Seventh session: lineage"), not once per
source: a filter keeps or drops a node whichever source reached it. Where a node is reached from
two sources the filters run per source, so that the work charged is the per-source form's in
every case. These hold it to the general per-source form (``generic_per_source``, what
``filtered_sources`` returning None gives) on ids, order, work, ``paths()``, the stop at every
``max_work``, a deadline passing at each clock reading, and the errors of the shape.
"""

from __future__ import annotations

import itertools
import re

import pytest

from hgm_engine import Memory
from hgm_engine.errors import QueryAnalysisError, QueryExecutionError, QuerySyntaxError
from hgm_engine.model import MemoryGraph
from hgm_engine.query.executor import context as context_module
from hgm_engine.query.executor import operators
from hgm_engine.query.executor import program as program_module
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
from hgm_engine.query.executor.operators import STORED_WALKS
from hgm_engine.query.limits import Limits
from hgm_engine.query.pipeline import compile_uncached
from tests.test_stored_walks import _records, _stored

# {s}: a source id; several sources reach the same node in the ones marked "overlap"
QUERIES = [
    "#{s}.descendants.where(priority >= 1)",
    "#{s}.descendants.where(type = 'action', status = 'pending')",  # the image's value index: positions
    "#{s}.descendants.where(type = 'action').where(priority >= 2)",  # two filters
    "#{s}.children{{1,3}}.where(status = 'done', priority < 3)",
    "#{s}.children{{0,2}}.where(type = 'goal')",
    "#{s}.children{{2}}.where(priority >= 0)",
    "#{s}.children{{2,}}.where(priority >= 0)",
    "#{s}.children{{0,}}.where(type = 'goal')",
    # nine terms: each node tested weighs 2 (docs/language.md, work)
    "#{s}.descendants.where(" + ", ".join(f"priority >= {n - 9}" for n in range(9)) + ")",
    "nodes.where(type = 'goal').children{{1,2}}.where(" + ", ".join(f"priority >= {n - 9}" for n in range(9)) + ")",  # overlap
    "#{s}.subgoals{{1,}}.where(exists(actions))",  # a condition with a path inside
    "#{s}.ancestors.where(type = 'goal')",
    "#{s}.children.descendants.where(priority >= 2)",  # several sources
    "#{s}.children.children{{1,2}}.where(type = 'action', status = 'pending')",  # several, positions
    "nodes.where(type = 'goal').children{{1,2}}.where(priority >= 2)",  # overlap
    "nodes.where(type = 'action').ancestors.where(type = 'goal')",  # overlap, many sources
    "#{s}.parent.siblings.where(type = 'action')",  # not a walk: each_source
    "#{s}.out(parent_of, related_to).where(priority >= 1)",  # several edge types
    "#{s}.descendants.where(status =~ 'pend')",
    "#{s}.descendants.where(status = $st)",
    "#{s}.descendants.where(priority >= 1) | #g0.ancestors.where(priority >= 0)",
    "(#{s}.children.descendants.where(priority >= 1)).count()",
    "#{s}.children.descendants.where(priority >= 1).exists()",
]


def _general(monkeypatch) -> None:
    """Run filters per source from now on (the reference the new shape must equal)."""
    monkeypatch.setattr(program_module, "filtered_sources", lambda op: None)


def _graphs():
    nodes, edges = _records()
    return (lambda: _stored(nodes, edges), lambda: MemoryGraph.from_records(nodes, edges)), [n[0] for n in nodes]


def _answers(graph_of, text: str) -> list:
    """(ids, work) of a few runs of one program on a fresh graph (the columns' calls, then the
    memo's), then its paths() (for a plain path)."""
    graph = graph_of()
    compiled = compile_uncached(text)
    out = []
    for _ in range(STORED_WALKS + 2):
        ctx = Context(graph, {"st": "done"}, None, DEFAULT_LIMITS)
        value = compiled.program.run(graph, params={"st": "done"}) if compiled.program.final else None
        out.append((compiled.program.fast(ctx), ctx.work, value))
    if compiled.program.final is None and "|" not in text:
        out.append(compile_uncached(text + ".paths()").program.run(graph, params={"st": "done"}))
    return out


@pytest.mark.parametrize("query", QUERIES)
def test_filters_once_over_the_union_answer_and_charge_as_per_source(query, monkeypatch) -> None:
    graph_ofs, ids = _graphs()
    sources = ["g0", *ids[1:14]]
    found = []
    for graph_of in graph_ofs:
        lean = {s: _answers(graph_of, query.format(s=s)) for s in sources}
        with monkeypatch.context() as patch:
            _general(patch)
            general = {s: _answers(graph_of, query.format(s=s)) for s in sources}
        assert lean == general, query
        found.append(lean)
    assert found[0] == found[1], query  # the walks over the stored columns as the memo's
    assert any(answers[0][0] for answers in found[0].values()), query  # not all empty


def test_the_physical_plan_names_the_shape_and_what_runs() -> None:
    compiled = compile_uncached("#a1.results.derived{1,}.where(confidence >= 0.5)")
    lines = [line.strip() for line in compiled.explain(physical=True).splitlines()]
    assert "per source: filter confidence >= 0.5" in lines  # the plan: the language's meaning
    (physical,) = [line for line in lines if line.startswith("physical: generic")]
    assert re.fullmatch(
        r"physical: generic, then filters over the whole list <hgm filter \d+>: each source expanded on its own "
        r"\(breadth-first levels\), then the filters once over their union", physical), physical
    # a positional predicate picks from each source's own list: per source, as before
    compiled = compile_uncached("#a1.results.derived{1,}.where(confidence >= 0.5)[0]")
    assert "physical: generic per source " in compiled.explain(physical=True)


def _counting_filters(monkeypatch) -> list:
    calls = []
    real = operators.TieredFilter.__call__
    monkeypatch.setattr(operators.TieredFilter, "__call__", lambda self, ids, ctx: calls.append(len(ids)) or real(self, ids, ctx))
    return calls


def _fan() -> MemoryGraph:
    # a -> r1, r2 (produces); f1, f2 derived from r1, f3 from r2; f2 also from r2 when shared
    graph = MemoryGraph.from_records(
        [("a", "action", {}), ("r1", "result", {}), ("r2", "result", {}),
         ("f1", "fact", {"confidence": 0.9}), ("f2", "fact", {"confidence": 0.2}), ("f3", "fact", {"confidence": 0.7}),
         ("f4", "fact", {"confidence": 0.6})],
        [("a", "r1", "produces", {}), ("a", "r2", "produces", {}), ("f1", "r1", "derived_from", {}),
         ("f2", "r1", "derived_from", {}), ("f3", "r2", "derived_from", {}), ("f4", "f3", "derived_from", {})])
    return graph


def test_disjoint_sources_run_the_filter_once_and_shared_nodes_per_source(monkeypatch) -> None:
    text = "#a.results.derived{1,}.where(confidence >= 0.5)"
    graph = _fan()
    calls = _counting_filters(monkeypatch)
    ctx = Context(graph, {}, None, DEFAULT_LIMITS)
    # an id 1, the hop 2, the walks' levels 2 + 1 + 1, the filter its 4 nodes, the step its 3
    assert (compile_uncached(text).program.fast(ctx), ctx.work) == (["f1", "f3", "f4"], 1 + 2 + 4 + 4 + 3)
    assert calls == [4]  # once, over the union
    graph.add_edge("f2", "r2", "derived_from")  # f2 reached from both results now
    calls.clear()
    ctx = Context(graph, {}, None, DEFAULT_LIMITS)
    # per source: the filter tests r1's 2 and r2's 3, as the general form does
    assert (compile_uncached(text).program.fast(ctx), ctx.work) == (["f1", "f3", "f4"], 1 + 2 + 5 + 5 + 3)
    assert calls == [2, 3]
    with monkeypatch.context() as patch:
        _general(patch)
        ctx = Context(graph, {}, None, DEFAULT_LIMITS)
        assert (compile_uncached(text).program.fast(ctx), ctx.work) == (["f1", "f3", "f4"], 1 + 2 + 5 + 5 + 3)


@pytest.mark.parametrize("shared", [False, True])
def test_a_union_of_walks_over_the_columns_keeps_their_positions_for_the_value_index(shared, monkeypatch) -> None:
    # r -> g1, g2 -> actions (a1 under both when shared): two sources, both walked over the columns
    nodes = [("r", "goal", {}), ("g1", "goal", {}), ("g2", "goal", {}), ("a1", "action", {"status": "pending"}),
             ("a2", "action", {"status": "done"}), ("a3", "action", {"status": "pending"})]
    edges = [("r", "g1", "parent_of", {}), ("r", "g2", "parent_of", {}), ("g1", "a1", "parent_of", {}),
             ("g1", "a2", "parent_of", {}), ("g2", "a3", "parent_of", {})] + ([("g2", "a1", "parent_of", {})] if shared else [])
    text = "#r.children.children{1,2}.where(type = 'action', status = 'pending')"
    expected = compile_uncached(text).program.run(MemoryGraph.from_records(nodes, edges))
    assert expected == ["a1", "a3"]
    tested = []
    real = MemoryGraph.stored_positions
    monkeypatch.setattr(MemoryGraph, "stored_positions", lambda self, *args: tested.append(args) or real(self, *args))
    assert compile_uncached(text).program.run(_stored(nodes, edges)) == expected
    # the positions tested against the image's index: once over the union, or per source
    assert tested == [("action", "status", "pending")] * (2 if shared else 1)


def test_a_filter_over_max_work_stops_the_query_before_it_runs(monkeypatch) -> None:
    # the id 1, the hop 2, the walks 4: the filter's charge of its 4 nodes passes 9
    text = "#a.results.derived{1,}.where(confidence >= 0.5)"
    calls = _counting_filters(monkeypatch)
    for max_work in (7, 9, 10):
        calls.clear()
        ctx = Context(_fan(), {}, None, Limits(max_work=max_work))
        if max_work < 11:
            with pytest.raises(QueryExecutionError, match=f"more than {max_work} nodes"):
                compile_uncached(text).program.fast(ctx)
        assert calls == ([] if max_work < 11 else [4]), max_work
    ctx = Context(_fan(), {}, None, Limits(max_work=11))  # the filter runs; the step's 3 pass 11
    with pytest.raises(QueryExecutionError, match="more than 11 nodes"):
        compile_uncached(text).program.fast(ctx)
    assert calls == [4] and ctx.work == 14


def _outcome(graph, text: str, limits: Limits):
    ctx = Context(graph, {"st": "done"}, None, limits)
    try:
        return compile_uncached(text).program.fast(ctx), ctx.work
    except QueryExecutionError as error:
        return type(error), str(error)


@pytest.mark.parametrize("query", [
    "#g0.descendants.where(priority >= 1)",
    "#g0.children.descendants.where(type = 'action').where(priority >= 2)",
    "nodes.where(type = 'goal').children{1,2}.where(priority >= 2)",  # overlap: per source
    "#g0.children.children{1,2}.where(type = 'action', status = 'pending')",
])
@pytest.mark.parametrize("stored", [True, False])
def test_the_shape_stops_at_every_max_work_as_per_source(query, stored, monkeypatch) -> None:
    nodes, edges = _records()
    graph_of = (lambda: _stored(nodes, edges)) if stored else (lambda: MemoryGraph.from_records(nodes, edges))
    most = _outcome(graph_of(), query, DEFAULT_LIMITS)[1]
    stopped = []
    for max_work in [*range(0, 8), *range(8, most - 4, max(1, most // 20)), *range(max(0, most - 4), most + 3)]:
        for timeout in (None, 60.0):  # under a deadline every charge looks at the clock
            limits = Limits(max_work=max_work, timeout=timeout)
            lean = _outcome(graph_of(), query, limits)
            with monkeypatch.context() as patch:
                _general(patch)
                assert _outcome(graph_of(), query, limits) == lean, (query, max_work, timeout)
            # stopped exactly when the whole query's work is over max_work
            assert (lean[0] is QueryExecutionError) == (max_work < most), (query, max_work)
            stopped.append(lean[0] is QueryExecutionError)
    assert True in stopped and False in stopped


@pytest.mark.parametrize("query", ["#g0.descendants.where(priority >= 1)", "#g0.children.descendants.where(priority >= 1)",
                                   "nodes.where(type = 'goal').children{1,2}.where(priority >= 2)"])
def test_a_deadline_passing_at_each_clock_reading_stops_the_shape(query, monkeypatch) -> None:
    nodes, edges = _records()
    readings = itertools.count()
    monkeypatch.setattr(context_module.time, "monotonic", lambda: next(readings) and 0.0)
    _outcome(MemoryGraph.from_records(nodes, edges), query, Limits(timeout=5.0))
    most = next(readings)  # the clock's readings of a whole run
    monkeypatch.undo()
    outcomes = []
    for passes_at in sorted({*range(1, 12), *range(12, most, max(1, most // 15)), most - 1, most, most + 1}):
        seen = []
        for graph in (_stored(nodes, edges), MemoryGraph.from_records(nodes, edges)):
            readings = itertools.count()
            monkeypatch.setattr(context_module.time, "monotonic", lambda: 0.0 if next(readings) < passes_at else 100.0)
            seen.append(_outcome(graph, query, Limits(timeout=5.0)))
        assert seen[0] == seen[1], (query, passes_at)  # the columns read the clock where the memo does
        if seen[0][0] is QueryExecutionError:
            assert seen[0][1] == "limit-exceeded: the query ran past its time limit", seen[0]
        outcomes.append(seen[0][0] is QueryExecutionError)
    assert outcomes[0] and not outcomes[-1], outcomes  # it stops early, and a late deadline is not reached


def _memory() -> Memory:
    return _memory_with(Memory())


@pytest.mark.parametrize(("text", "category", "column"), [
    ("#a.results.derived{1,}.where(confidence >= $c)", "missing-parameter", 44),
    ("#a.results.derived{1,}.where(content =~ '(')", "invalid-regex", 41),
    ("#a.results.derived{1,}.where(confidense >= 0.5, nosuch(x))", "unknown-name", 49),
    ("#a.results.derived{2,1}.where(confidence >= 0.5)", "invalid-argument", 19),
    ("#a.results.derived{1,}.where(confidence >= 0.5", "syntax", 47),
])
def test_errors_of_the_shape_have_a_category_and_a_place_and_change_nothing(text, category, column) -> None:
    memory = _memory()
    before = memory.query("nodes").to_json()
    with pytest.raises((QueryAnalysisError, QuerySyntaxError)) as caught:
        memory.query(text)
    assert caught.value.category == category and caught.value.column == column, (caught.value.category, caught.value.column)
    assert memory.query("nodes").to_json() == before
    assert memory.query("#a.results.derived{1,}.where(confidence >= 0.5)").ids == ["f"]


def test_the_shape_over_max_work_is_limit_exceeded_through_memory_query() -> None:
    memory = Memory(limits=Limits(max_work=4))  # the id 1, the hop 1, the walk 1, the filter 1: the step's 1 more
    with pytest.raises(QueryExecutionError) as caught:
        _memory_with(memory).query("#a.results.derived{1,}.where(confidence >= 0.5)")
    assert caught.value.category == "limit-exceeded" and "more than 4 nodes" in str(caught.value)
    assert Memory(limits=Limits(max_work=5)).query("nodes").ids == []
    roomy = _memory_with(Memory(limits=Limits(max_work=5)))
    assert roomy.query("#a.results.derived{1,}.where(confidence >= 0.5)").ids == ["f"]


def _memory_with(memory: Memory) -> Memory:
    memory.apply({"ops": [
        {"op": "add_node", "id": "g", "type": "goal", "title": "g"},
        {"op": "add_node", "id": "a", "type": "action", "title": "x"},
        {"op": "add_edge", "from": "g", "to": "a", "type": "parent_of"},
        {"op": "add_node", "id": "r", "type": "result", "content": "r"},
        {"op": "add_node", "id": "f", "type": "fact", "content": "f", "confidence": 0.8},
        {"op": "add_edge", "from": "a", "to": "r", "type": "produces"},
        {"op": "add_edge", "from": "f", "to": "r", "type": "derived_from"},
    ]})
    return memory
