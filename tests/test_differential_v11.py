"""Differential tests of the language's version 1.1 (spec dsl.md §8): ``search(TEXT)``,
``.rank(TEXT)`` and ``valid_at(T)`` queries, graphs with text and valid-time bounds, and
transactions with ``invalidate`` give the same answers, states and reports on the engine and
on the reference model (hgm_engine.testing), whose search recomputes every word, stem and BM25
score from the graph on every query.

``HYPOTHESIS_PROFILE=long`` runs fifty times the examples (hgm_engine/testing/profiles.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from hgm_engine import HGMError, Memory
from hgm_engine.model import DEFAULT_SCHEMA
from hgm_engine.testing import ModelGraph, ModelMemory, ModelQueryError
from hgm_engine.testing import search as search_model
from hgm_engine.testing.ops import ModelError, Working
from hgm_engine.testing.differential import engine_answer, engine_apply, model_answer, model_apply
from hgm_engine.testing.profiles import examples
from hgm_engine.testing.strategies import INSTANTS, SEARCH_TEXTS, TEXT_AND_TIME, QueryCase, graphs, queries, schemas, transactions

QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


@settings(QUICK, max_examples=examples(100))
@given(st.data())
def test_search_rank_and_valid_at_queries_agree(data) -> None:
    schema = data.draw(st.one_of(st.just(DEFAULT_SCHEMA), schemas()), label="schema")
    doc = data.draw(graphs(schema, valid=data.draw(st.booleans(), label="valid"), attributes=TEXT_AND_TIME), label="graph")
    case = data.draw(queries(schema, text_and_time=True), label="query")
    note(f"query: {case}")
    assert engine_answer(case, doc, schema) == model_answer(case, doc, schema)


_DIRECT = (
    "search($q)", "search($q).limit(2)", "nodes.rank($q)", "nodes.where(type = 'fact').rank($q)",
    "search($q).where(valid_at($t))", "nodes.where(valid_at($t))", "nodes.where(not valid_at($t)).rank($q)",
    "(search($q)).in()", "nodes.where(valid_at($t)).count()", "search($q).paths()",
    # what an optimizer may run as a top-k: the first few of the whole ranking
    "search($q).first()", "search($q).last()", "search($q)[1]", "search($q)[-1]", "search($q)[1:3]",
    "search($q).limit(0)", "search($q).where(type = 'fact').limit(1)", "search($q).sort_by(priority).limit(2)",
    "search($q).rank('museum tickets').limit(2)", "nodes.rank($q).limit(2)", "search($q).limit(3).count()",
    "(search($q) | search('hotel')).limit(3)", "search($q).limit($k)", "search($q).where(valid_at($t)).limit(1)",
)


@settings(QUICK, max_examples=examples(70))
@given(st.data())
def test_whole_rankings_and_valid_sets_agree(data) -> None:
    """The queries whose answer is a whole ranking or a whole valid-time set, on larger
    graphs of text (more matches, more ties, more lengths), so that order is checked node
    by node."""
    doc = data.draw(graphs(DEFAULT_SCHEMA, valid=False, max_nodes=12, attributes=TEXT_AND_TIME), label="graph")
    text = data.draw(st.sampled_from(_DIRECT), label="query")
    params = {"q": data.draw(st.sampled_from(SEARCH_TEXTS), label="q"), "t": data.draw(st.sampled_from(INSTANTS), label="t"),
              "k": data.draw(st.integers(0, 4), label="k")}
    case = QueryCase(text, {name: value for name, value in params.items() if "$" + name in text})
    note(f"query: {case}")
    assert engine_answer(case, doc) == model_answer(case, doc)


@settings(QUICK, max_examples=examples(60))
@given(st.data())
def test_search_scores_agree_with_the_model(data) -> None:
    """``Memory.search`` gives each hit's BM25 score (to six places): the same numbers as the
    model's, node for node, so a wrong statistic shows even where it leaves the order alone."""
    doc = data.draw(graphs(DEFAULT_SCHEMA, max_nodes=10, attributes=TEXT_AND_TIME), label="graph")
    text = data.draw(st.sampled_from(SEARCH_TEXTS), label="text")
    hits = [(hit["id"], hit["score"]) for hit in Memory.from_document(doc).search(text, limit=None)]
    graph = ModelGraph.from_document(doc)
    found = search_model.scores(graph, text)
    assert [node for node, _ in hits] == search_model.ranked(graph, text)
    for node, score in hits:
        assert abs(score - found[node][1]) <= 1.5e-6, (node, score, found[node])


def _engine_query(memory: Memory, case, as_of: int | None) -> tuple:
    try:
        result = memory.query(case.text, focus=case.focus, params=case.params, as_of=as_of)
    except HGMError as err:
        return ("error", [problem.category for problem in err.problems])
    return (result.kind, result.value)


def _model_query(model: ModelMemory, case, as_of: int | None) -> tuple:
    try:
        answer = model.query(case.text, focus=case.focus, params=case.params, as_of=as_of)
    except ModelQueryError as err:
        return ("error", err.categories)
    return (answer.kind, answer.value)


@settings(QUICK, max_examples=examples(50))
@given(st.data())
def test_invalidate_and_the_index_commits_keep_agree_with_the_model(data) -> None:
    """Transactions with ``invalidate`` and valid-time bounds reach the same reports and states;
    after each, search and valid_at queries — now and as of an earlier ``t`` — read the index the
    engine's commits keep up to date, and the model's text recomputed from that state."""
    schema = DEFAULT_SCHEMA
    doc = data.draw(graphs(schema, attributes=TEXT_AND_TIME), label="graph")
    memory, model = Memory(schema), ModelMemory(schema)
    if doc["nodes"]:
        memory.load(doc)
        model.load(doc)
    for _ in range(data.draw(st.integers(1, 4), label="steps")):
        tx = data.draw(transactions(schema, ids=list(model.nodes), edges=list(model.edges), attributes=TEXT_AND_TIME, invalidate=True), label="transaction")
        assert engine_apply(memory, tx) == model_apply(model, tx)
        assert memory.export() == model.document()
        case = data.draw(queries(schema, ids=list(model.nodes) or ["n0"], text_and_time=True), label="query")
        as_of = data.draw(st.one_of(st.none(), st.integers(0, model.t)), label="as_of")
        note(f"query: {case}  as_of={as_of}")
        assert _engine_query(memory, case, as_of) == _model_query(model, case, as_of)


@settings(QUICK, max_examples=examples(40))
@given(st.data())
def test_a_transaction_searches_its_own_uncommitted_text(data) -> None:
    """Inside a transaction, op by op, search and valid_at read the transaction's own changes
    (docs/search.md, "Every state"): the engine's overlay and its index beside the model's
    working graph."""
    schema = DEFAULT_SCHEMA
    doc = data.draw(graphs(schema, attributes=TEXT_AND_TIME), label="graph")
    memory, model = Memory(schema), ModelMemory(schema)
    if doc["nodes"]:
        memory.load(doc)
        model.load(doc)
    memory.query("search('hotel')")  # the index exists before the transaction starts
    tx = memory.transaction()
    work = Working(model.graph, model.t + 1, schema)
    try:
        drawn = data.draw(transactions(schema, ids=list(model.nodes), edges=list(model.edges), attributes=TEXT_AND_TIME,
                                       invalidate=True), label="transaction")
        renamed: dict[str, str] = {}  # a builder's generated ids are its own: the engine's id -> the model's
        for op in drawn["ops"]:
            engine_error = model_error = None
            try:
                tx.op(op)
            except HGMError as err:
                engine_error = err.category
            try:
                work.apply(op)
            except ModelError as err:
                model_error = err.category
            assert engine_error == model_error
            if engine_error is not None:
                break
            # every node in creation order on both sides: a generated id (a plan's children too) pairs with the model's
            engine_nodes = tx.query("nodes").value
            assert len(engine_nodes) == len(work.graph.nodes)
            renamed.update((e, m) for e, m in zip(engine_nodes, work.graph.nodes) if e != m)
            named = [i for i in work.graph.nodes if i not in renamed.values()]  # a generated id differs
            case = data.draw(queries(schema, ids=named or ["n0"], text_and_time=True), label="query")
            note(f"query: {case}")
            assert _tx_query(tx, case, renamed) == model_answer(case, work.graph.document(), schema)
    finally:
        tx.rollback()


def _tx_query(tx, case, renamed: dict) -> tuple:
    try:
        result = tx.query(case.text, focus=case.focus, params=case.params)
    except HGMError as err:
        return ("error", [problem.category for problem in err.problems])
    if result.kind == "nodes":
        return (result.kind, [renamed.get(i, i) for i in result.value])
    if result.kind == "paths":
        return (result.kind, [[renamed.get(i, i) for i in walk] for walk in result.value])
    return (result.kind, result.value)
