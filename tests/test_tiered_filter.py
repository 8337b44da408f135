"""A filter runs as closures on its first call and as generated code once it proves hot
(``TieredFilter``, ``conditions.interpreted``): both tiers give the same answers on every
condition, and the switch happens when it should."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgm_engine.model import MemoryGraph, Node, freeze
from hgm_engine.query.executor.conditions import condition, condition_writer, interpreted
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
from hgm_engine.query.executor.operators import GENERATE_AFTER, TieredFilter, TieredHopThenFilters
from hgm_engine.query.pipeline import compile_uncached
from hgm_engine.query.plan import AllOf, AnyOf, Attr, Cmp, Const, HasAttr, Negate, Param, Truthy, ValidAt

# A small domain, so that equalities and orders hold often: numbers of both kinds and a
# boolean (not a number), strings, null, lists, an object.
VALUES = st.sampled_from([0, 1, 1.0, 2, 2.5, -1, True, False, None, "a", "b", "", ("a", "b"), (1, "a"), ("a",)])
BOUNDS = st.sampled_from(["2026-01-01", "2026-06-01", "2027-01-01", "soon", 3])
NAMES = st.sampled_from(["n", "s", "type", "id", "missing"])
OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "in", "not in", "contains"])


def _leaf():
    constant = st.one_of(VALUES, st.lists(st.sampled_from(["a", "b", "c"]), max_size=3).map(tuple)).map(Const)
    return st.one_of(
        st.builds(Cmp, OPS, NAMES.map(Attr), constant),
        st.builds(Cmp, OPS, NAMES.map(Attr), NAMES.map(Attr)),  # through the fallback closures
        NAMES.map(lambda name: Truthy(Attr(name))),
        NAMES.map(lambda name: Truthy(HasAttr(name))),
        st.sampled_from(["2026-03-01", "2026-09-01"]).map(lambda at: Truthy(ValidAt(Const(at)))),
        st.just(Truthy(ValidAt(Param("t")))),
    )


CONDITIONS = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda items: AllOf(tuple(items))),
        st.lists(inner, min_size=1, max_size=3).map(lambda items: AnyOf(tuple(items))),
        inner.map(Negate),
    ),
    max_leaves=6,
)


@st.composite
def nodes(draw, node_id="x"):
    attributes = draw(st.dictionaries(st.sampled_from(["n", "s", "id"]), VALUES, max_size=3))
    for bound in ("valid_from", "valid_to"):
        if draw(st.booleans()):
            attributes[bound] = draw(BOUNDS)
    return Node(node_id, draw(st.sampled_from(["fact", "goal", "a"])), freeze(attributes), 1)


def _outcome(test, node, ctx):
    try:
        return test(node, ctx)
    except Exception as exc:  # the same exception in both tiers counts as the same answer
        return type(exc)


QUICK = settings(deadline=None, max_examples=200, suppress_health_check=list(HealthCheck))


SMALL = [1, 1.0, 2, True, None, "a", "b", ("a", "b"), (1, "a")]


def test_every_comparison_of_an_attribute_with_a_constant_answers_as_generated():
    ctx = Context(MemoryGraph(), {}, None, DEFAULT_LIMITS)
    for op in ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "contains"]:
        for constant in SMALL:
            cond = Cmp(op, Attr("n"), Const(constant))
            closures, generated = interpreted(cond, None), condition(cond, None)
            for value in SMALL + ["missing"]:
                node = Node("x", "fact", freeze({} if value == "missing" else {"n": value}), 1)
                assert closures(node, ctx) == generated(node, ctx), (op, constant, value)


def test_string_equalities_on_an_indexed_graph_keep_on_the_first_call_what_the_generated_loop_keeps():
    graph = MemoryGraph()
    for number, (node_type, status) in enumerate([("action", "done"), ("action", "failed"), ("goal", "done"), ("action", 1)]):
        graph.add_node(f"n{number}", node_type, {"status": status})
    graph.nodes_with("action", "status", "done")  # the actions' index of status; the goal's none
    ids = [f"n{number}" for number in range(4)]
    for op in ("=", "!="):
        for value in ("done", "failed", "other"):
            cond = Cmp(op, Attr("status"), Const(value))
            ctx = Context(graph, {}, None, DEFAULT_LIMITS)
            keep = TieredFilter(cond, None)
            assert keep(ids, ctx) == condition_writer(None).id_filter(cond)(ids, ctx), (op, value)
            assert keep.generated is None and ctx.members  # the closures read the index


@QUICK
@given(CONDITIONS, nodes())
def test_the_closures_of_a_condition_answer_as_its_generated_function(cond, node):
    ctx = Context(MemoryGraph(), {"t": "2026-03-01"}, None, DEFAULT_LIMITS)
    assert _outcome(interpreted(cond, None), node, ctx) == _outcome(condition(cond, None), node, ctx)


@QUICK
@given(CONDITIONS, st.lists(nodes(), min_size=1, max_size=6), st.booleans())
def test_a_tiered_filter_keeps_on_its_first_call_what_the_generated_loop_keeps(cond, payloads, indexed):
    graph = MemoryGraph()
    for number, node in enumerate(payloads):
        graph.add_node(f"n{number}", node.type, dict(node.attrs))
    if indexed:  # string equalities then read the value indexes (value_members), both tiers
        for node_type in ("fact", "goal"):
            for name in ("n", "s"):
                graph.nodes_with(node_type, name, "a")
    ids = [f"n{number}" for number in range(len(payloads))]
    ctx = Context(graph, {"t": "2026-03-01"}, None, DEFAULT_LIMITS)
    generated = condition_writer(None).id_filter(cond)
    keep = TieredFilter(cond, None)
    first = _outcome(keep, ids, ctx)
    assert keep.generated is None  # the closures answered
    assert first == _outcome(generated, ids, ctx)
    many = -(-GENERATE_AFTER // len(ids))  # a call over more than GENERATE_AFTER nodes in all
    again = _outcome(keep, ids * many, ctx)
    assert keep.generated is not None  # ran the generated loop
    assert again == (first * many if isinstance(first, list) else first)


def _graph(count: int) -> MemoryGraph:
    graph = MemoryGraph()
    graph.add_node("g", "goal", {})
    for number in range(count):
        graph.add_node(f"a{number}", "action", {"priority": number % 5})
        graph.add_edge("g", f"a{number}", "parent_of")
    return graph


def test_a_query_answered_once_compiles_no_filter_and_a_hot_one_does(monkeypatch):
    written = []
    function = TieredFilter.function
    monkeypatch.setattr(TieredFilter, "function", lambda self: written.append(self) or function(self))
    compiled = compile_uncached("root.actions.where(priority >= 3)")
    graph = _graph(10)
    first = compiled.run(graph).value
    assert written == [] and first == ["a3", "a4", "a8", "a9"]
    for _ in range(GENERATE_AFTER // 11 - 1):  # each run tests 10 nodes, counted 11
        assert compiled.run(graph).value == first
    assert written == []
    assert compiled.run(graph).value == first
    assert len(written) == 1


def test_a_first_call_over_more_than_generate_after_nodes_runs_the_generated_loop_at_once(monkeypatch):
    written = []
    function = TieredFilter.function
    monkeypatch.setattr(TieredFilter, "function", lambda self: written.append(self) or function(self))
    compiled = compile_uncached("root.actions.where(priority >= 4)")
    answer = compiled.run(_graph(GENERATE_AFTER + 1)).value
    assert len(written) == 1
    assert answer == [f"a{n}" for n in range(GENERATE_AFTER + 1) if n % 5 == 4]


@pytest.mark.parametrize("runs", [0, 1])
def test_explain_physical_names_the_generated_filter_before_and_after_the_first_run(runs):
    compiled = compile_uncached("#g.children{1,2}.where(priority >= 3)")
    for _ in range(runs):
        compiled.run(_graph(3))
    (line,) = [line for line in compiled.explain(physical=True).splitlines() if "physical:" in line]
    assert "generic, then filters over the whole list <hgm filter " in line
    assert compiled.run(_graph(3)).value == []


def test_a_hot_hop_then_filters_switches_to_one_generated_step_with_the_same_answers_and_work(monkeypatch):
    # A one-type hop followed by filters runs the hop and its filters one by one (the filters
    # as closures) until the first filter has proved hot, then the one function
    # codegen.hop_then_filters_step writes for both: same ids, same work charged.
    written = []
    function = TieredHopThenFilters.function
    monkeypatch.setattr(TieredHopThenFilters, "function", lambda self: written.append(self) or function(self))
    compiled = compile_uncached("root.actions.where(priority >= 3, priority != 4)")
    graph = _graph(10)
    first = compiled.run(graph)
    assert written == [] and first.value == ["a3", "a8"]
    work = []
    for _ in range(GENERATE_AFTER // 11 + 2):
        ctx = Context(graph, {}, None, DEFAULT_LIMITS)
        assert compiled.program.fast(ctx) == first.value
        work.append(ctx.work)
    assert len(set(written)) == 1 and written[0].generated is not None
    assert len(set(work)) == 1  # the closures and the generated step charge the same work
