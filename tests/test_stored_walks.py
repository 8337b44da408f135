"""A repeated one-type hop on a graph read from its stored image walks the edge columns by
position on its first calls (``operators.stored_levels``), and a filter after it tests the
positions against the image's value indexes; from ``STORED_WALKS`` calls on it walks the hop's
memo. Every way gives the same ids, in the same order, and charges the same work."""

from __future__ import annotations

import random

import pytest

from hgm_engine.model import EdgeColumns, MemoryGraph, lazy_edges, lazy_nodes
from hgm_engine.query.executor import operators
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
from hgm_engine.query.executor.operators import STORED_WALKS, Walked
from hgm_engine.query.pipeline import compile_uncached

STATUSES = ("pending", "done", "failed")


def _records(seed: int = 3):
    rng = random.Random(seed)
    nodes = [("g0", "goal", {})]
    edges = []
    for i in range(1, 80):
        kind = rng.choice(("goal", "action", "action", "fact"))
        node_id = f"{kind[0]}{i}"
        attrs = {"status": rng.choice(STATUSES), "priority": rng.randrange(4)} if kind == "action" else {}
        parent = rng.choice([n for n, t, _ in nodes if t == "goal"])
        nodes.append((node_id, kind, attrs))
        edges.append((parent, node_id, "parent_of", {}))
        other = rng.choice([n for n, t, _ in nodes if t == "goal"])
        if other != parent and rng.random() < 0.2:  # a second parent: reached twice
            edges.append((other, node_id, "parent_of", {}))
        if rng.random() < 0.3:  # edges of another type between the same nodes
            other = rng.choice(nodes[:-1])[0]
            edges.append((other, node_id, "related_to", {}) if rng.random() < 0.5 else (node_id, other, "related_to", {}))
    edges = list({(e[0], e[1], e[2]): e for e in edges if e[0] != e[1]}.values())
    return nodes, edges


def _stored(nodes, edges) -> MemoryGraph:
    """The graph as one read from a stored image: edge columns, node types, the value index of
    action status."""
    payloads = lazy_nodes([n[0] for n in nodes], [n[1] for n in nodes], [None] * len(nodes), list(range(1, len(nodes) + 1)))
    payloads = [p.__class__(p.id, p.type, _frozen(n[2]), p.seq) for p, n in zip(payloads, nodes)]
    columns = EdgeColumns.of_edges(payloads, lazy_edges(
        [e[0] for e in edges], [e[1] for e in edges], [e[2] for e in edges], [None] * len(edges), list(range(1, len(edges) + 1))))
    groups: dict = {}
    for position, (_, kind, _) in enumerate(nodes):
        groups.setdefault(kind, []).append(position)
    values = {("action", "status"): {s: [p for p, n in enumerate(nodes) if n[2].get("status") == s] for s in STATUSES}}
    return MemoryGraph.from_columns(payloads, groups, columns, values, seqs=list(range(1, len(nodes) + 1)))


def _frozen(attrs):
    from hgm_engine.model import freeze

    return freeze(attrs)


QUERIES = [
    "#{s}.descendants.where(type = 'action', status = 'pending')",
    "#{s}.descendants.where(type = 'action', status = $s)",
    "#{s}.descendants.where(type = 'action', status = 'done', priority >= 2)",
    "#{s}.descendants.where(type = 'action', status = 'nothing')",
    "#{s}.descendants.where(priority >= 2)",
    "#{s}.descendants",
    "#{s}.ancestors",
    "#{s}.children{{0,2}}.where(type = 'action', status = 'failed')",
    "#{s}.subgoals{{1,}}",
    "#{s}.children",
    "#{s}.actions.where(status = 'pending')",
    "#{s}.actions.where(status = 'pending', priority >= 1)",
    "#{s}.subgoals.actions.where(status = $s)",
    "#{s}.subgoals.children.where(type = 'action', status = 'done')",
    "#{s}.parent.children",
    "nodes.where(type = 'goal').children.where(type = 'action', status = 'failed')",
    "#{s}.related_facts",
    "nodes.where(type = 'goal').related_facts",
]


def _run(graph, text):
    program = compile_uncached(text).program
    ctx = Context(graph, {"s": "done"}, None, DEFAULT_LIMITS)
    return program.fast(ctx), ctx.work


@pytest.mark.parametrize("query", QUERIES)
def test_walks_over_the_columns_give_the_ids_and_work_of_the_memo_walks(query) -> None:
    nodes, edges = _records()
    plain = MemoryGraph.from_records(nodes, edges)
    for source in ("g0", *[n[0] for n in nodes[1:16]]):
        text = query.format(s=source)
        expected = _run(plain, text)
        stored = _stored(nodes, edges)
        program = compile_uncached(text).program
        for call in range(STORED_WALKS + 2):  # the columns' calls, then the memo's
            ctx = Context(stored, {"s": "done"}, None, DEFAULT_LIMITS)
            found = program.fast(ctx)
            assert (found, ctx.work) == expected, (text, call)
            assert found.__class__ is list  # what a caller gets is a plain list


def test_a_step_walks_the_columns_stored_walks_times_then_its_memo() -> None:
    nodes, edges = _records()
    stored = _stored(nodes, edges)
    plain, _ = operators.expanders(compile_uncached("#g0.descendants").optimized_plan.branches[0].ops[0])
    ctx = Context(stored, {}, None, DEFAULT_LIMITS)
    kinds = [plain("g0", ctx).__class__ for _ in range(STORED_WALKS + 1)]
    assert kinds == [Walked] * STORED_WALKS + [list]
    memo, _ = stored.hop_memo("parent_of", None, True)
    assert memo.get("g0") is not None  # the last walk filled the memo


@pytest.mark.parametrize("after", [0, 10**9])
def test_positions_tested_by_bisection_or_by_a_pass_give_the_same_ids(after, monkeypatch) -> None:
    nodes, edges = _records(5)
    plain = MemoryGraph.from_records(nodes, edges)
    monkeypatch.setattr(operators, "PROBE_SET_AFTER", after)
    for status in STATUSES:
        text = f"#g0.descendants.where(type = 'action', status = '{status}')"
        assert _run(_stored(nodes, edges), text) == _run(plain, text)


def test_after_a_node_changes_the_filter_tests_the_ids_and_answers_alike() -> None:
    nodes, edges = _records()
    plain, stored = MemoryGraph.from_records(nodes, edges), _stored(nodes, edges)
    changed = next(n[0] for n in nodes if n[1] == "action" and n[2]["status"] == "done")
    for graph in (plain, stored):
        graph.set_node_attrs(changed, {"status": "pending", "priority": 0})
    assert stored.stored_positions("action", "status", "pending") is None  # the image no longer says
    text = "#g0.descendants.where(type = 'action', status = 'pending')"
    found = _run(stored, text)
    assert found == _run(plain, text) and changed in found[0]


def test_a_node_added_since_the_image_is_walked_through_the_memo() -> None:
    nodes, edges = _records()
    plain, stored = MemoryGraph.from_records(nodes, edges), _stored(nodes, edges)
    for graph in (plain, stored):
        graph.add_node("new", "goal", {})
    assert stored.stored_columns() is not None  # a node alone keeps the edge columns
    ctx = Context(stored, {}, None, DEFAULT_LIMITS)
    assert operators.stored_levels("new", ctx, "parent_of", None, True, 0, 2) is None
    text = "#new.children{0,2}"
    found = _run(stored, text)
    assert found == _run(plain, text) and found[0] == ["new"]


def _outcome(graph, text, limits):
    ctx = Context(graph, {}, None, limits)
    try:
        return compile_uncached(text).program.fast(ctx)
    except Exception as error:  # noqa: BLE001  (the error is the outcome compared)
        return type(error), str(error), ctx.work  # the work counted when it stopped


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_a_walk_over_the_columns_stops_at_the_same_work_limit_as_the_memo_walk(timeout) -> None:
    from hgm_engine.query.limits import Limits

    nodes, edges = _records()
    plain = MemoryGraph.from_records(nodes, edges)
    text = "#g0.descendants.where(type = 'action', status = 'pending')"
    outcomes = []
    for max_work in range(0, _run(plain, text)[1] + 2):
        limits = Limits(max_work=max_work, timeout=timeout)
        expected = _outcome(plain, text, limits)
        assert _outcome(_stored(nodes, edges), text, limits) == expected, max_work
        outcomes.append(isinstance(expected, tuple))
    assert True in outcomes and False in outcomes  # some stopped, some did not


def test_a_step_on_a_graph_without_columns_stops_asking_for_them(monkeypatch) -> None:
    asked = []
    real = MemoryGraph.stored_columns
    monkeypatch.setattr(MemoryGraph, "stored_columns", lambda self: asked.append(1) or real(self))
    nodes, edges = _records()
    graph = MemoryGraph.from_records(nodes, edges)
    program = compile_uncached("#g0.descendants").program
    for _ in range(STORED_WALKS + 3):
        program.run(graph)
    assert len(asked) == STORED_WALKS
