"""Long paths (issue 12, item 2) and the trajectory format's field checks (item 8).

A path's shape checks (completeness, the order of its steps) are linear in its steps and
edges, the commit's acyclicity check walks each region once, and a path holds at most
``PathGuards.max_steps`` steps: a rewrite or an ingest of a long path holds the write lock for
a moment, not for minutes. The time bounds below are generous (about 20 times what the
machine this was written on needs), so a loaded machine does not make them fail; before the
fix each of these ran for minutes.
"""

from __future__ import annotations

import math
import random
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hgm_engine.errors import PathError
from hgm_engine.memory import Memory
from hgm_engine.paths import PathGuards
from hgm_engine.paths.localize import PathRecord, order_agreement
from hgm_engine.paths.localize import StepOrder
from hgm_engine.paths.versions import rewrite_builder


def _chain_doc(path_id: str, n: int, **extra) -> dict:
    return {"id": path_id, "goal": f"goal of {path_id}", "steps": [f"s{i}" for i in range(n)], **extra}


def _timed(call) -> tuple[object, float]:
    start = time.perf_counter()
    value = call()
    return value, time.perf_counter() - start


# -- the bound on steps per path -------------------------------------------------------------------


def test_the_default_bounds_are_far_above_any_real_trajectory_and_settable():
    # UltraTool's longest request has 6 steps and 4 links, TMDB's 5 and 3 (../shared/data/taskplan).
    assert (PathGuards().max_steps, PathGuards().max_edges) == (1000, 10_000)
    assert PathGuards(max_steps=20_000).max_steps == 20_000
    assert PathGuards().to_json()["max_steps"] == 1000 and PathGuards().to_json()["max_edges"] == 10_000


def test_an_ingest_over_the_edge_bound_is_refused_with_its_line():
    memory = Memory()
    memory.path_guards = PathGuards(max_edges=5)
    doc = _chain_doc("dense", 4, edges=[[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])
    with pytest.raises(PathError) as caught:
        memory.ingest([doc])
    [problem] = caught.value.report.problems
    assert (problem.line, problem.category) == (1, "limit-exceeded") and "max_edges=5" in problem.message
    assert memory.t == 0


def test_a_rewrite_over_the_edge_bound_is_refused_before_the_commit():
    memory = Memory()
    memory.ingest([_chain_doc("p", 3)])
    memory.path_guards = PathGuards(max_edges=2)
    spec = {"steps": ["a", "b", "c"], "edges": [[0, 1], [0, 2], [1, 2]]}
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("p", spec, "denser")
    assert caught.value.category == "limit-exceeded" and memory.t == 1


def test_an_ingest_over_the_step_bound_is_refused_with_its_line_and_stores_nothing():
    memory = Memory()
    memory.path_guards = PathGuards(max_steps=50)
    with pytest.raises(PathError) as caught:
        memory.ingest([_chain_doc("ok", 50), _chain_doc("long", 51)])
    [problem] = caught.value.report.problems
    assert (problem.line, problem.id, problem.category) == (2, "long", "limit-exceeded")
    assert "51 steps" in problem.message and "max_steps=50" in problem.message
    assert memory.t == 0 and len(memory) == 0


def test_a_rewrite_over_the_step_bound_is_refused_and_changes_nothing():
    memory = Memory()
    memory.ingest([_chain_doc("p", 3)])
    memory.path_guards = PathGuards(max_steps=10)
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("p", [f"x{i}" for i in range(11)], "longer")
    assert caught.value.category == "limit-exceeded" and "max_steps=10" in str(caught.value)
    assert memory.t == 1 and memory.node("p@v2") is None
    assert memory.path_metrics()["refusals"] == {"limit-exceeded": 1}


def test_edit_ops_that_add_steps_past_the_bound_are_refused():
    memory = Memory()
    memory.ingest([_chain_doc("p", 10)])
    memory.path_guards = PathGuards(max_steps=10)
    with pytest.raises(PathError) as caught:
        memory.rewrite_path("p", [{"add": "one more", "after": 9}], "one more step")
    assert caught.value.category == "limit-exceeded"
    assert memory.rewrite_path("p", [{"remove": 0}, {"add": "instead", "after": 9}], "same length").committed


# -- long paths are cheap -----------------------------------------------------------------------------


def test_a_1000_step_rewrite_commits_in_seconds_with_the_index_kept():
    memory = Memory()
    memory.ingest([_chain_doc("p", 1)])
    memory.locate("goal of p")  # the index now follows every commit
    report, seconds = _timed(lambda: memory.rewrite_path("p", [f"s{i}" for i in range(1000)], "long"))
    assert report.committed and seconds < 10, f"{seconds:.1f} s"
    assert memory.path_memory.index.get("p@v2").completeness() == pytest.approx(2 / 3)  # result pending


def test_a_transaction_waiting_behind_a_1000_step_rewrite_is_not_held_up_for_long():
    memory = Memory()
    memory.ingest([_chain_doc("p", 1)])
    memory.locate("goal of p")
    started = threading.Event()
    inner = rewrite_builder("p", [f"s{i}" for i in range(1000)], "long", PathGuards())

    def build(overlay, ctx):
        started.set()  # the rewrite holds the write lock from here to its index upkeep
        return inner(overlay, ctx)

    rewrite = threading.Thread(target=lambda: memory.commit_built(build, kind="path-rewrite"))
    rewrite.start()
    assert started.wait(timeout=60)
    report, waited = _timed(lambda: memory.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact"}]}))
    rewrite.join(timeout=60)
    assert not rewrite.is_alive() and report.committed
    assert waited < 10, f"waited {waited:.1f} s"


def test_a_20000_step_ingest_finishes_in_seconds():
    memory = Memory()
    memory.path_guards = PathGuards(max_steps=20_000)
    report, seconds = _timed(lambda: memory.ingest([_chain_doc("big", 20_000)]))
    assert report.ingested == ["big"] and seconds < 40, f"{seconds:.1f} s"
    assert len(memory.query('#big.actions').ids) == 20_000


def test_an_ingest_whose_edges_close_a_cycle_is_still_refused_at_the_commit():
    memory = Memory()
    doc = _chain_doc("loop", 1000, edges=[[i, i + 1] for i in range(999)] + [[999, 0]])
    with pytest.raises(PathError) as caught:
        memory.ingest([doc])
    [problem] = caught.value.report.problems
    assert (problem.line, problem.category) == (1, "constraint-violation") and "closes a cycle" in problem.message
    assert memory.t == 0


def test_locating_among_long_paths_takes_well_under_a_second_per_path():
    memory = Memory()
    memory.ingest([_chain_doc(f"p{k}", 300) for k in range(3)])
    result, seconds = _timed(lambda: memory.locate("goal of p1 s3 s200", k=3))
    assert result.matches and seconds < 10, f"{seconds:.1f} s"


def test_the_shape_checks_of_a_20000_step_record_are_linear():
    record, seconds = _timed(lambda: PathRecord.create("p", "g", [f"s{i}" for i in range(20_000)], result="success"))
    value, more = _timed(record.completeness)
    assert value == 1.0 and seconds + more < 10
    order = StepOrder.of(20_000, record.edges)
    positions = [float(i) if i % 3 else None for i in range(20_000)]
    agreement, seconds = _timed(lambda: order.agreement(positions))
    assert agreement == 1.0 and seconds < 10, f"{seconds:.1f} s"


# -- the linear forms agree with the definitions ------------------------------------------------------


def _reference_single_flow(record: PathRecord) -> bool:
    """The definition: one entry, one exit, acyclic, every step reachable from the entry."""
    n = len(record.steps)
    if n == 1:
        return True
    indegree, outdegree = [0] * n, [0] * n
    for i, j in record.edges:
        outdegree[i] += 1
        indegree[j] += 1
    if indegree.count(0) != 1 or outdegree.count(0) != 1:
        return False
    pairs = set(record.ordered_pairs())
    if any((j, i) in pairs for i, j in pairs):
        return False
    entry = indegree.index(0)
    return len({j for i, j in pairs if i == entry}) == n - 1


@st.composite
def _graphs(draw):
    n = draw(st.integers(1, 7))
    possible = [(i, j) for i in range(n) for j in range(n) if i != j]
    edges = draw(st.lists(st.sampled_from(possible), unique=True, max_size=12)) if possible else []
    positions = draw(st.lists(st.one_of(st.none(), st.integers(0, 4).map(float)), min_size=n, max_size=n))
    return n, edges, positions


@settings(max_examples=100, deadline=None)
@given(_graphs())
def test_completeness_agrees_with_its_definition_on_any_small_graph(graph):
    n, edges, _ = graph
    record = PathRecord.create("p", "g", [f"s{i}" for i in range(n)], edges=edges)
    assert record.completeness() == pytest.approx((1 + _reference_single_flow(record)) / 3)


@settings(max_examples=100, deadline=None)
@given(_graphs())
def test_order_agreement_over_a_step_order_equals_it_over_every_ordered_pair(graph):
    n, edges, positions = graph
    record = PathRecord.create("p", "g", [f"s{i}" for i in range(n)], edges=edges)
    expected = order_agreement(positions, record.ordered_pairs())
    assert StepOrder.of(n, record.edges).agreement(positions) == pytest.approx(expected)


def test_order_agreement_over_a_long_chain_equals_it_over_every_ordered_pair():
    rng = random.Random(12)
    n = 120
    positions = [rng.choice([None, float(rng.randrange(30))]) for _ in range(n)]
    record = PathRecord.create("p", "g", [f"s{i}" for i in range(n)])
    expected = order_agreement(positions, record.ordered_pairs())
    assert StepOrder.of(n, record.edges).agreement(positions) == pytest.approx(expected)


# -- the trajectory format's fields --------------------------------------------------------------------


BAD_TRAJECTORIES = [
    ({"id": 5, "steps": ["a"]}, "'id'"),
    ({"id": True, "steps": ["a"]}, "'id'"),
    ({"id": "", "steps": ["a"]}, "'id'"),
    ({"id": "p", "steps": "abc"}, "'steps'"),
    ({"id": "p", "steps": [""]}, "steps[0]"),
    ({"id": "p", "steps": ["a", {"name": ""}]}, "steps[1]"),
    ({"id": "p", "steps": ["a", {"name": 5}]}, "steps[1]"),
    ({"id": "p", "steps": ["a", 7]}, "steps[1]"),
    ({"id": "p", "steps": ["a", {"content": "no name"}]}, "steps[1]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [[False, True]]}, "edges[0]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [False, True]}, "edges[0]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [[0, 1.0]]}, "edges[0]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [[0]]}, "edges[0]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [[0, 1, 1]]}, "edges[0]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [[0, 1], [1, 2]]}, "edges[1]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [[-1, 1]]}, "edges[0]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [[0, 1], [1, 1]]}, "edges[1]"),
    ({"id": "p", "steps": ["a", "b"], "edges": [[0, 1], [0, 1]]}, "edges[1]"),
    ({"id": "p", "steps": ["a", "b"], "edges": "0>1"}, "'edges'"),
    ({"id": "p", "steps": ["a", "b"], "edges": {"0": 1}}, "'edges'"),
    ({"id": "p", "steps": ["a"], "goal": 5}, "'goal'"),
    ({"id": "p", "steps": ["a"], "tags": "order"}, "'tags'"),
    ({"id": "p", "steps": ["a"], "tags": ["order", ""]}, "'tags'"),
    ({"id": "p", "steps": ["a"], "tags": ["order", 3]}, "'tags'"),
    ({"id": "p", "steps": ["a"], "result": "ok"}, "result"),
    ({"id": "p", "steps": ["a"], "result": 1}, "result"),
    ({"id": "p", "steps": ["a"], "status": ["active"]}, "status"),
    ({"id": "p", "steps": ["a"], "reward": "1"}, "'reward'"),
    ({"id": "p", "steps": ["a"], "reward": True}, "'reward'"),
    ({"id": "p", "steps": ["a"], "version": 0}, "'version'"),
    ({"id": "p", "steps": ["a"], "version": True}, "'version'"),
    ({"id": "p", "steps": ["a"], "scenario": ""}, "'scenario'"),
    ({"id": "p", "steps": ["a"], "replaces": ""}, "'replaces'"),
    ({"id": "p", "steps": ["a"], "lineage": ["p", ""]}, "'lineage'"),
    ({"id": "p", "steps": ["a"], "lineage": "p"}, "'lineage'"),
    ({"id": "p", "steps": ["a"], "template": "yes"}, "'template'"),
]


@pytest.mark.parametrize("doc, names", BAD_TRAJECTORIES, ids=[repr(d) for d, _ in BAD_TRAJECTORIES])
def test_a_malformed_field_is_a_bad_trajectory_with_its_line_and_nothing_is_stored(doc, names):
    memory = Memory()
    with pytest.raises(PathError) as caught:
        memory.ingest([{"id": "fine", "steps": ["a"]}, doc])
    [problem] = caught.value.report.problems
    assert (problem.line, problem.category) == (2, "bad-trajectory"), problem
    assert names in problem.message, problem.message
    assert caught.value.problems[0].where == "line 2"
    assert memory.t == 0 and len(memory) == 0


@pytest.mark.parametrize("reward", [math.nan, math.inf])
def test_a_non_finite_reward_is_an_invalid_value_with_its_line(reward):
    # Non-finite numbers break the value rules every entry point shares (docs/transactions.md).
    memory = Memory()
    with pytest.raises(PathError) as caught:
        memory.ingest([{"id": "fine", "steps": ["a"]}, {"id": "p", "steps": ["a"], "reward": reward}])
    [problem] = caught.value.report.problems
    assert (problem.line, problem.category) == (2, "invalid-value") and "reward" in problem.message
    assert memory.t == 0 and len(memory) == 0


def test_skip_invalid_ingests_the_valid_lines_around_malformed_fields():
    memory = Memory()
    docs = [{"id": "a", "steps": ["x"]}, {"id": 5, "steps": ["x"]}, {"id": "b", "steps": [""]},
            {"id": "c", "steps": ["x", "y"], "edges": [[False, True]]}, {"id": "d", "steps": ["x", "y"]}]
    report = memory.ingest(docs, skip_invalid=True)
    assert report.ingested == ["a", "d"] and report.skipped == [2, 3, 4]
    assert {p.category for p in report.problems} == {"bad-trajectory"}


def test_well_formed_fields_are_still_accepted():
    memory = Memory()
    docs = [
        {"id": "p", "goal": "", "steps": ["a", {"name": "b", "content": "c"}], "edges": [],
         "tags": [], "reward": 0, "result": "failure", "status": "failed", "version": 2,
         "lineage": ["p"], "template": False},
        {"id": "q", "steps": ["a", "b", "c"], "edges": [[0, 2], [0, 1], [1, 2]], "reward": 0.5},
        {"steps": ["no id"]},  # an id made from a hash of the content
    ]
    report = memory.ingest(docs)
    assert report.ingested[:2] == ["p", "q"] and report.ingested[2].startswith("path-")
    assert memory.path("q")["edges"] == [[0, 1], [0, 2], [1, 2]]


# -- the commit's acyclicity check on new edges ----------------------------------------------------


@st.composite
def _before_edges(draw):
    n = draw(st.integers(2, 7))
    old = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] < e[1]),
                        unique=True, max_size=8))
    new = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), unique=True, min_size=1,
                        max_size=6).filter(lambda edges: not set(edges) & set(old)))
    return n, old, new


def _reaches(edges, start, goal):
    seen, stack = set(), [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(j for i, j in edges if i == node)
    return False


@settings(max_examples=100, deadline=None)
@given(_before_edges())
def test_the_commit_refuses_exactly_the_new_before_edges_that_close_a_cycle(graph):
    """One walk per commit names the same edges as one reachability search per edge."""
    n, old, new = graph
    memory = Memory()
    ops = [{"op": "add_node", "id": "g", "type": "goal"}]
    ops += [{"op": "add_node", "id": f"a{i}", "type": "action", "parent": "g"} for i in range(n)]
    ops += [{"op": "add_edge", "from": f"a{i}", "to": f"a{j}", "type": "before"} for i, j in old]
    assert memory.apply({"ops": ops}).committed
    report = memory.apply({"ops": [{"op": "add_edge", "from": f"a{i}", "to": f"a{j}", "type": "before"} for i, j in new]})
    every = old + new
    closing = {(i, j) for i, j in new if _reaches(every, j, i)}
    found = {v.message for v in report.violations if v.constraint == "before_acyclic"}
    assert found == {f"before 'a{i}' -> 'a{j}' closes a cycle" for i, j in closing}
    assert report.committed == (not report.violations)
