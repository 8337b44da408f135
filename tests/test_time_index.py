"""The valid-time index (hgm_engine/query/executor/validity.py): ``valid_at(T)`` on a type
scan reads the nodes that hold from arrays of their bounds, kept up to date by every commit,
and gives exactly the answers of testing each node (``holds_at``) — now, in a transaction
and as of an earlier state."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hgm_engine import Memory, QueryExecutionError
from hgm_engine.model import holds_at, parse_instant
from hgm_engine.query.executor.validity import interval_index

BOUNDS = st.one_of(
    st.none(),
    st.sampled_from(["2026-01-01", "2026-03-01", "2026-06-01", "2026-03-01T08:00:00+08:00", "2026-02-28T23:59:59Z"]),
    st.sampled_from(["soon", "2026-02-30", "", "20260301"]),  # not times: never hold
    st.integers(-5, 5),
    st.lists(st.integers(0, 2), max_size=2),
)
INSTANTS = st.sampled_from(["2025-12-31", "2026-01-01", "2026-03-01", "2026-03-01T00:00:00+00:00", "2026-05-31T23:00:00Z", "2026-06-01", "2027-01-01"])


def _node(i: int, start, end, confidence: float) -> dict:
    node = {"id": f"f{i}", "type": "fact", "content": f"fact {i}", "confidence": confidence}
    if start is not None:
        node["valid_from"] = start
    if end is not None:
        node["valid_to"] = end
    return node


FACTS = st.lists(st.tuples(BOUNDS, BOUNDS, st.sampled_from([0.2, 0.5, 0.9])), max_size=12)


def _memory(facts) -> Memory:
    nodes = [_node(i, s, e, c) for i, (s, e, c) in enumerate(facts)]
    nodes.append({"id": "g", "type": "goal", "content": "a goal", "valid_to": "2026-03-01"})
    return Memory.from_document({"format": "hgm-graph/1", "nodes": nodes, "edges": []})


def _expected(memory: Memory, at: str, node_type: str | None = "fact", min_confidence: float | None = None) -> list[str]:
    instant = parse_instant(at)
    out = []
    for node in memory.graph.nodes():  # the frozen attributes (lists are tuples)
        if node_type is not None and node.type != node_type:
            continue
        confidence = node.attrs.get("confidence")
        if min_confidence is not None and not (type(confidence) is float and confidence >= min_confidence):
            continue
        if holds_at(node.attrs, instant):
            out.append(node.id)
    return out


def _answers(memory: Memory, at: str) -> tuple[list, list, list]:
    return (
        memory.query("nodes.where(type = 'fact', valid_at($t))", params={"t": at}).ids,
        memory.query(f"nodes.where(type = 'fact', confidence >= 0.5, valid_at('{at}'))").ids,
        memory.query("nodes.where(valid_at($t))", params={"t": at}).ids,
    )


def _reference(memory: Memory, at: str) -> tuple[list, list, list]:
    return _expected(memory, at), _expected(memory, at, min_confidence=0.5), _expected(memory, at, node_type=None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(facts=FACTS, at=INSTANTS)
def test_valid_at_from_the_index_is_holds_at_of_each_node(facts, at):
    memory = _memory(facts)
    assert _answers(memory, at) == _reference(memory, at)


CHANGES = st.lists(
    st.one_of(
        st.tuples(st.just("add"), BOUNDS.filter(lambda b: b is None or parse_instant(b) is not None), st.none()),
        st.tuples(st.just("update"), st.integers(0, 20), st.sampled_from(["2026-01-01", "2026-04-01", None])),
        st.tuples(st.just("delete"), st.integers(0, 20), st.none()),
    ),
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(facts=FACTS, changes=CHANGES, at=INSTANTS)
def test_the_index_follows_every_commit_and_as_of_reads_the_earlier_state(facts, changes, at):
    memory = _memory(facts)
    states = [(memory.t, _reference(memory, at))]
    assert _answers(memory, at) == states[0][1]
    added = len(facts)
    for kind, value, bound in changes:
        ids = [n["id"] for n in memory.export()["nodes"] if n["type"] == "fact"]
        if kind == "add":
            node = _node(added, value, None, 0.9)
            added += 1
            doc = {"ops": [{"op": "add_node", **node}]}
        elif not ids:
            continue
        elif kind == "update":
            # the bound set is in order with the one kept, or the update is refused (nothing changes)
            doc = {"ops": [{"op": "update_node", "id": ids[value % len(ids)], "set": {"valid_from": bound}}]}
        else:
            doc = {"ops": [{"op": "delete_node", "id": ids[value % len(ids)]}]}
        try:
            memory.apply(doc)
        except Exception:  # a refused update (valid_to not after the new valid_from): nothing changed
            pass
        assert _answers(memory, at) == _reference(memory, at)
        states.append((memory.t, _reference(memory, at)))
    for t, expected in states:
        assert memory.query("nodes.where(type = 'fact', valid_at($t))", params={"t": at}, as_of=t).ids == expected[0]


def test_a_transaction_sees_its_own_bounds():
    memory = _memory([("2026-01-01", None, 0.9)])
    with memory.transaction() as tx:
        tx.update_node("f0", set={"valid_to": "2026-02-01"})
        assert tx.query("nodes.where(type = 'fact', valid_at('2026-03-01'))").ids == []
        tx.rollback()
    assert memory.query("nodes.where(type = 'fact', valid_at('2026-03-01'))").ids == ["f0"]


def test_explain_physical_names_the_valid_time_index():
    text = Memory().explain("nodes.where(type = 'fact', confidence >= 0.5, valid_at('2026-03-01'))", physical=True)
    assert "valid-time index" in text


def test_a_commit_that_adds_or_updates_a_few_facts_updates_the_index_without_rebuilding_it():
    memory = _memory([("2026-01-01", None, 0.9)] * 50)
    memory.query("nodes.where(type = 'fact', valid_at('2026-03-01'))")
    index = interval_index(memory.graph, "fact")
    assert index.rebuilds == 1
    memory.apply({"ops": [{"op": "add_node", "id": "new", "type": "fact", "valid_from": "2026-04-01"},
                          {"op": "update_node", "id": "f3", "set": {"valid_to": "2026-02-01"}}]})
    assert "f3" not in memory.query("nodes.where(type = 'fact', valid_at('2026-03-01'))").ids
    assert "new" in memory.query("nodes.where(type = 'fact', valid_at('2026-05-01'))").ids
    assert (index.rebuilds, index.updates) == (1, 1)
    memory.apply({"ops": [{"op": "delete_node", "id": "f7"}]})
    assert "f7" not in memory.query("nodes.where(type = 'fact', valid_at('2026-03-01'))").ids
    assert index.rebuilds == 2


def test_a_filter_with_valid_at_charges_the_same_work_as_testing_every_node():
    from hgm_engine.query.limits import Limits
    from hgm_engine.query.pipeline import compile

    memory = _memory([("2026-01-01", None, 0.9)] * 30)
    for query in ("nodes.where(type = 'fact', valid_at('2025-01-01'))", "nodes.where(type = 'fact', confidence > 2)"):
        program = compile(query).program
        assert program.run(memory.graph, limits=Limits(max_work=30)) == []
        with pytest.raises(QueryExecutionError, match="more than 29 nodes"):  # 30 facts read
            program.run(memory.graph, limits=Limits(max_work=29))


def test_the_valid_at_bench_runs_and_its_answers_agree(tmp_path):
    from bench.time_bench import main as bench_main

    out = tmp_path / "time.json"
    assert bench_main(["--facts", "400", "--repeat", "1", "--skip-rollup", "--out", str(out)]) == 0
    import json

    rows = json.loads(out.read_text())["valid_at"]["distinct timestamps"]
    assert rows["with a comparison"]["matched"] == rows["parameter"]["matched"] > 0
