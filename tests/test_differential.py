"""Differential tests: the engine and the reference model (hgm_engine.testing) give the same
answers to random queries on random graphs of random schemas, and reach the same states,
reports, marks and refusals under random transactions and rules.

``HYPOTHESIS_PROFILE=long`` runs fifty times the examples (hgm_engine/testing/profiles.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from hgm_engine.model import DEFAULT_SCHEMA
from hgm_engine.testing.differential import engine_answer, model_answer
from hgm_engine.testing.profiles import examples
from hgm_engine.testing.strategies import graphs, queries, schemas

QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


@settings(QUICK, max_examples=examples(400))
@given(st.data())
def test_random_queries_on_random_graphs_agree(data) -> None:
    schema = data.draw(st.one_of(st.just(DEFAULT_SCHEMA), schemas()), label="schema")
    doc = data.draw(graphs(schema, valid=data.draw(st.booleans(), label="valid")), label="graph")
    case = data.draw(queries(schema), label="query")
    note(f"query: {case}")
    assert engine_answer(case, doc, schema) == model_answer(case, doc, schema)
