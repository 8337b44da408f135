"""The direct path (hgm_engine/query/direct.py) against the front end's stages: on every text
it reads it gives the optimized plan that parse → analyze → plan → optimize gives, node for
node (rules included); on every text the stages refuse it gives up (so the error is theirs)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgm_engine import HGMError
from hgm_engine.model import DEFAULT_SCHEMA, Hop, MemoryGraph
from hgm_engine.query.analyze import analyze
from hgm_engine.query.direct import direct_plan
from hgm_engine.query.executor import build
from hgm_engine.query.limits import Limits
from hgm_engine.query.optimizer import optimize
from hgm_engine.query.parser import parse
from hgm_engine.query.pipeline import compile_uncached
from hgm_engine.query.plan import plan
from hgm_engine.testing.strategies import graphs, queries

from bench.baselines import QUERIES
from tests.conftest import compliance_suites
from tests.test_fuzz import TOKENS

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CUSTOM = DEFAULT_SCHEMA.extend(relations={"uses": Hop("out", ("related_to",), "fact"), "used": Hop("in", ("related_to",))})


def _same(text: str, schema=DEFAULT_SCHEMA, limits: Limits = Limits()):
    """The direct path's plan for ``text`` is the stages' (None: it gave up); returns it."""
    direct = direct_plan(text, schema, limits)
    try:
        expected = optimize(plan(analyze(parse(text, limits), schema, limits), schema))
    except HGMError:
        assert direct is None, f"the stages refuse {text!r}; the direct path planned {direct!r}"
        return None
    if direct is not None:
        # repr: node types and values (1, 1.0 and True compare equal, but differ)
        assert repr(direct) == repr(expected), text
        assert direct == expected, text
    return direct


# The direct path's shapes, and texts one character away from them.
_STARTS = ["#a1", "#g-1_x", "root", "nodes", "#", "rooty", "focus", "goal#x", '#"x"', "#$p", "(root)", "search('x')"]
_PIECES = [
    # relations, good and bad
    ".children", ".subgoals", ".actions", ".results", ".derived", ".ancestors", ".following", ".related_facts",
    ".parent", ".siblings", ".latest", ".uses", ".used", ".subgoal", ".where", ".count", ".out", ".x1", ".", "..",
    # repetitions
    "{1,3}", "{2}", "{0,}", "{3,1}", "{-1,2}", "{1, 2}", "{ 1}", "{1,2,3}", "{}", "{1", "{99999999999999999999}", "{007}",
    # where
    ".where(status = 'done')", ".where(confidence >= 0.5)", ".where(type = 'fact')", ".where(id = 'x')",
    ".where(a == 1)", ".where(x=true)", ".where(x = -3)", ".where(x = 'a\\\\b')", ".where(x = 1e3)", ".where(x =~ 'a')",
    ".where(x in [1])", ".where (x = 1)", ".where(not = 1)", ".where(x = null)", ".where( x != \"y\" )", ".where(x < .5)",
    ".where(x = 1.)", ".where(x = 'it''s')", ".where(x = 1 // c\n)", ".where(status = 'done', x = 1)", ".where()",
    # indexes and finals
    "[0]", "[-1]", "[1:2]", "[ 0]", "[]", "[-]", "[01]", ".count()", ".exists()", ".paths()", ".count( )", ".first()",
    # junk
    " ", "|", "(", ")", "//c\n", "\n",
]


# The pieces the direct path may read (the stages may still refuse them in their place).
_READABLE = [p for p in _PIECES if p in {
    ".children", ".subgoals", ".actions", ".results", ".derived", ".ancestors", ".following", ".siblings", ".uses",
    "{1,3}", "{2}", "{0,}", "{3,1}", "{007}", ".where(status = 'done')", ".where(confidence >= 0.5)",
    ".where(type = 'fact')", ".where(id = 'x')", ".where(a == 1)", ".where(x=true)", ".where( x != \"y\" )",
    "[0]", "[-1]", ".count()", ".exists()"}]
_TEXTS = st.tuples(
    st.sampled_from(_STARTS[:4] * 3 + _STARTS),
    st.lists(st.one_of(st.sampled_from(_READABLE), st.sampled_from(_READABLE), st.sampled_from(_PIECES)), max_size=6),
).map(lambda t: t[0] + "".join(t[1]))

TRICKY = [
    "root.children.where(type = 'goal')", "#a1.children.where(id = 'x')", "nodes.where(type = 'fact')", "#a1{1,2}",
    "#a1.children{3,1}", "#a1.children{1,2}{1,2}", "#a1.children.where(a = 1){1,2}", "#a1.ancestors{1,2}",
    "#a1.children[0]{1,2}", "#a1.count().children", "#a1.where", "#a1.where(a = 1)", "#a1[0].children[1]",
    "root.children.where(a = 1).subgoals.where(b = 2)[0]", "nodes.count()", "#a1.children{0,}.where(a = 1)[-1]",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_texts_plan_as_the_stages_plan_them(text):
    _same(text)


@given(_TEXTS)
@FUZZ
def test_the_direct_shapes_and_their_neighbours_plan_as_the_stages_plan_them(text):
    _same(text)


@given(_TEXTS)
@FUZZ
def test_a_schemas_own_relations_plan_as_the_stages_plan_them(text):
    _same(text, CUSTOM)


@given(st.lists(st.sampled_from(_STARTS + _PIECES), min_size=1, max_size=7).map("".join))
@FUZZ
def test_the_pieces_in_any_order_plan_as_the_stages_plan_them(text):
    _same(text)


@given(queries(depth=3))
@FUZZ
def test_generated_queries_plan_as_the_stages_plan_them(case):
    _same(case.text)


@given(st.lists(st.sampled_from(TOKENS), max_size=14).map("".join))
@FUZZ
def test_token_soup_plans_as_the_stages_plan_it(text):
    _same(text)


def test_every_compliance_query_plans_as_the_stages_plan_it():
    texts = [case["expr"] for _name, _folder, doc in compliance_suites() for case in doc["cases"]]
    planned = [text for text in texts if _same(text) is not None]
    assert len(planned) >= 0.2 * len(texts), (len(planned), len(texts))  # it reads the common shapes


@pytest.mark.parametrize("name", ["card", "hub_facts", "entity_facts", "grandchildren", "derived_chain", "lineage", "ancestors", "following"])
def test_the_small_benchmark_queries_take_the_direct_path(name):
    text = QUERIES[name][0].format(big_root="g1", hub_entity="e1", small_entity="e2", mid_root="g2", chain_result="r1",
                                   chain_action="a1", deep_action="a2", first_action="a3")
    assert _same(text) is not None, text


def test_limits_send_a_text_to_the_stages_and_their_error():
    text = "#a1.children.where(status = 'done')"
    assert _same(text, limits=Limits(max_depth=1)) is None
    assert _same(text, limits=Limits(max_length=10)) is None
    with pytest.raises(HGMError) as error:
        compile_uncached(text, limits=Limits(max_length=10))
    assert error.value.category == "limit-exceeded"


@given(graphs(max_nodes=8, max_edges=16), _TEXTS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_direct_path_query_answers_as_the_stages_compiled_one(doc, text):
    direct = direct_plan(text, DEFAULT_SCHEMA)
    if direct is None:
        return
    graph = MemoryGraph()
    for node in doc["nodes"]:
        graph.add_node(node["id"], node["type"], {k: v for k, v in node.items() if k not in ("id", "type")})
    for edge in doc["edges"]:
        graph.add_edge(edge["from"], edge["to"], edge["type"], {k: v for k, v in edge.items() if k not in ("from", "to", "type")})
    stages = optimize(plan(analyze(parse(text), DEFAULT_SCHEMA), DEFAULT_SCHEMA))
    assert build(direct).run(graph) == build(stages).run(graph), text


def test_a_direct_path_query_gives_the_stages_tree_analysis_and_literal_plan_when_asked():
    for text in ("#a1.results.derived{1,}.where(confidence >= 0.5)", "root.children.where(status = 'done')"):
        compiled = compile_uncached(text)
        ast = parse(text)
        analysis = analyze(ast, DEFAULT_SCHEMA)
        assert compiled.ast == ast and compiled.analysis == analysis
        assert compiled.logical_plan == plan(analysis, DEFAULT_SCHEMA)
        assert (compiled.params, compiled.uses_focus) == ((), False)
    # no rule fired: the literal plan is the optimized one, as optimize() returns it
    assert compiled.logical_plan is compiled.optimized_plan


def test_a_direct_path_query_says_it_has_no_parameter_roles_without_running_the_stages(monkeypatch):
    from hgm_engine.query import pipeline

    compiled = compile_uncached("#a1.following")
    monkeypatch.setattr(pipeline, "parse", lambda *a, **k: pytest.fail("the stages ran"))
    assert compiled.param_roles == {} and compiled.params == ()
    monkeypatch.undo()
    with_param = compile_uncached("#a1.where(content =~ $r)")
    assert with_param.param_roles == with_param.analysis.param_roles == {"r": frozenset({"value", "regex"})}
