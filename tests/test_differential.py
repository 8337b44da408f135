"""Differential tests: the engine and the reference model (hgm_engine.testing) give the same
answers to random queries on random graphs of random schemas, and reach the same states,
reports, marks and refusals under random transactions and rules.

``HYPOTHESIS_PROFILE=long`` runs fifty times the examples (hgm_engine/testing/profiles.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from hgm_engine import HGMError, Memory, TransactionRefused
from hgm_engine.model import DEFAULT_SCHEMA
from hgm_engine.testing import ModelMemory, ModelRefusal
from hgm_engine.testing.differential import engine_answer, engine_apply, engine_revert, model_answer, model_apply, model_revert
from hgm_engine.testing.profiles import examples
from hgm_engine.testing.strategies import graphs, queries, rule_files, schemas, transactions

def in_any_order(changes: list) -> list:
    """A diff's changes as a sorted list: the order of ``diff`` is not specified."""
    return sorted(json.dumps(c, sort_keys=True) for c in changes)


QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


@settings(QUICK, max_examples=examples(400))
@given(st.data())
def test_random_queries_on_random_graphs_agree(data) -> None:
    schema = data.draw(st.one_of(st.just(DEFAULT_SCHEMA), schemas()), label="schema")
    doc = data.draw(graphs(schema, valid=data.draw(st.booleans(), label="valid")), label="graph")
    case = data.draw(queries(schema), label="query")
    note(f"query: {case}")
    assert engine_answer(case, doc, schema) == model_answer(case, doc, schema)


def _fresh(schema, doc, rules):
    """An engine memory and a model with the same genesis graph and (when the engine loads
    them) the same rules; the rules text, or None when the engine refused it."""
    memory, model = Memory(schema), ModelMemory(schema)
    if doc["nodes"]:
        memory.load(doc)
        model.load(doc)
    try:
        memory.load_rules(rules)
    except TransactionRefused:
        with pytest.raises(ModelRefusal):
            model.load_rules(rules)
        return memory, model, None
    except HGMError:  # a trigger cycle: the model does not look for those
        return memory, model, None
    model.load_rules(rules)
    return memory, model, rules


@settings(QUICK, max_examples=examples(250))
@given(st.data())
def test_random_transactions_with_rules_reach_the_same_states(data) -> None:
    schema = data.draw(st.one_of(st.just(DEFAULT_SCHEMA), schemas()), label="schema")
    doc = data.draw(graphs(schema), label="graph")
    memory, model, rules = _fresh(schema, doc, data.draw(rule_files(schema), label="rules"))
    note(f"rules loaded: {rules!r}")
    for _ in range(data.draw(st.integers(1, 5), label="steps")):
        if model.t >= 1 and data.draw(st.integers(0, 5), label="revert?") == 0:
            t = data.draw(st.integers(1, model.t), label="revert t")
            assert engine_revert(memory, t) == model_revert(model, t)
        else:
            tx = data.draw(transactions(schema, ids=list(model.nodes), edges=list(model.edges)), label="transaction")
            dry_run = data.draw(st.booleans(), label="dry run")
            assert engine_apply(memory, tx, dry_run=dry_run) == model_apply(model, tx, dry_run=dry_run)
        assert memory.export() == model.document()
    t1 = data.draw(st.integers(0, model.t), label="diff from")
    t2 = data.draw(st.integers(t1, model.t), label="diff to")
    assert memory.export(as_of=t1) == model.document(as_of=t1)
    assert in_any_order(memory.diff(t1, t2)) == in_any_order(model.diff(t1, t2))
