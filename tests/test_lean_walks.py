"""The run side of a small first call, eighth session (docs/performance.md, "First calls,
eighth session: the run side"): the shortcuts a walk over the stored columns takes answer,
charge work and stop exactly as the general loops they stand for.

- a closure over the stored columns whose work cannot pass ``Context.ceiling`` reads one list
  as a queue (``operators.stored_levels``), without a level's bookkeeping, and charges its
  work once; the level loop (which charges every level) is the reference;
- ``Context`` sets only what every run reads; the limits a regular expression or ``paths()``
  asks for are read from its ``limits`` when asked (``tests/test_query_limits.py`` holds
  those limits);
- ``memory.query`` reads the current graph itself (no ``view_at``) and holds the read lock
  through the one context manager the reads keep.
"""

from __future__ import annotations

import itertools

import pytest

from hgm_engine import Memory
from hgm_engine.errors import QueryExecutionError
from hgm_engine.model import MemoryGraph
from hgm_engine.query import CompiledQuery
from hgm_engine.query.executor import context as context_module
from hgm_engine.query.executor import operators
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
from hgm_engine.query.executor.operators import STORED_WALKS
from hgm_engine.query.limits import Limits
from hgm_engine.query.pipeline import compile_uncached
from tests.test_stored_walks import _records, _stored


def _chains():
    """``n0 -before-> n1 -> ... -> n11`` (a chain reaching every node from ``n0``) beside a tree
    (``parent_of``) over the same nodes, a second ``before`` into ``n5`` (reached twice) and
    edges of other types on the chain's nodes (scanned and skipped)."""
    nodes = [(f"n{i}", "action" if i % 3 else "goal", {}) for i in range(12)]
    edges = [(f"n{i}", f"n{i + 1}", "before", {}) for i in range(11)]
    edges += [("n2", "n5", "before", {}), ("n9", "n3", "before", {})]  # a repeat, and a cycle
    edges += [(f"n{i // 2}", f"n{i}", "parent_of", {}) for i in range(1, 12)]
    edges += [(f"n{i}", f"n{(i * 5) % 12}", "related_to", {}) for i in range(12) if (i * 5) % 12 != i]
    return nodes, edges


GRAPHS = {"records": _records, "chains": _chains}

CLOSURES = [
    ("parent_of", None, True),  # descendants
    ("parent_of", None, False),  # ancestors
    ("parent_of", "goal", True),  # subgoals{1,}: the node type tested
    ("parent_of", "action", False),
    ("before", None, True),  # following
    ("before", None, False),  # preceding
    ("before", "action", True),
    ("related_to", None, True),
]


def _walked(graph, source, relation, low, max_work, work=0):
    ctx = Context(graph, {}, None, Limits(max_work=max_work))
    ctx.work = work
    walked = operators.stored_levels(source, ctx, *relation, low, None)
    return None if walked is None else (list(walked), walked.positions, walked.ids is graph.stored_columns()[0].ids, ctx.work)


@pytest.mark.parametrize("graph_name", sorted(GRAPHS))
def test_a_closure_read_as_a_queue_gives_the_level_loops_ids_positions_and_work(graph_name) -> None:
    nodes, edges = GRAPHS[graph_name]()
    graph = _stored(nodes, edges)
    limit = len(nodes)
    taken = []
    for (source, *_), relation, low, work in itertools.product(nodes, CLOSURES, (0, 1), (0, 7)):
        # a ceiling the walk cannot pass (work + limit): the queue; one less: the level loop,
        # which still stops nowhere (a walk reaches at most limit - 1 nodes besides the source)
        queued = _walked(graph, source, relation, low, work + limit, work)
        levels = _walked(graph, source, relation, low, work + limit - 1, work)
        assert queued == levels, (source, relation, low, work)
        taken.append(len(queued[0]))
    assert max(taken) >= limit - 1 and min(taken) <= 1  # walks of every node and of none


def _outcome(graph, text: str, limits: Limits):
    ctx = Context(graph, {}, None, limits)
    try:
        return compile_uncached(text).program.fast(ctx), ctx.work
    except QueryExecutionError as error:
        return type(error), str(error), ctx.work  # the work counted when it stopped


@pytest.mark.parametrize("text", ["#n0.following", "#n11.preceding", "#n0.descendants", "#n0.children{0,}",
                                  "#n0.subgoals{1,}", "#n11.ancestors", "#n0.following | #n4.following",
                                  "#n0.next{2,}", "#n0.next{0,}", "#n0.children{2,}"])
def test_a_closure_stops_at_every_max_work_where_the_memo_walk_does(text) -> None:
    nodes, edges = _chains()
    most = _outcome(MemoryGraph.from_records(nodes, edges), text, DEFAULT_LIMITS)[1]
    stopped = []
    for max_work in range(0, most + 3):
        limits = Limits(max_work=max_work)
        outcomes = []
        for _ in range(STORED_WALKS + 1):  # the columns' calls, then the memo's, on one program
            outcomes.append(_outcome(_stored(nodes, edges), text, limits))
        outcomes.append(_outcome(MemoryGraph.from_records(nodes, edges), text, limits))
        assert len(set(map(repr, outcomes))) == 1, (text, max_work, outcomes)
        stopped.append(outcomes[0][0] is QueryExecutionError)
    assert stopped[0] and not stopped[-1]


@pytest.mark.parametrize("text", ["#n0.following", "#n0.descendants", "#n11.ancestors"])
def test_a_closure_under_a_deadline_looks_at_the_clock_at_every_level(text, monkeypatch) -> None:
    nodes, edges = _chains()
    outcomes = []
    for passes_at in range(1, 16):  # the clock passes the deadline at its nth reading after the start
        seen = []
        for graph in (_stored(nodes, edges), MemoryGraph.from_records(nodes, edges)):
            readings = itertools.count()
            monkeypatch.setattr(context_module.time, "monotonic", lambda: 0.0 if next(readings) < passes_at else 100.0)
            seen.append(_outcome(graph, text, Limits(timeout=5.0)))
        assert seen[0] == seen[1], (text, passes_at)
        outcomes.append(seen[0][0] is QueryExecutionError)
    assert outcomes[0] and outcomes[4] and not outcomes[-1], outcomes


def test_a_query_reads_the_current_graph_or_the_state_at_as_of_under_the_read_lock(monkeypatch) -> None:
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
    memory.apply({"ops": [{"op": "add_node", "id": "h", "type": "goal"}]})
    state = memory.state
    seen = []
    real = CompiledQuery.run

    def run(self, view, **kwargs):
        with state.lock.writing(blocking=False) as acquired:
            seen.append((view, acquired))  # a writer cannot get in while the query runs
        return real(self, view, **kwargs)

    monkeypatch.setattr(CompiledQuery, "run", run)
    assert memory.query("root").ids == ["g", "h"]
    assert memory.query("root", as_of=1).ids == ["g"]
    assert memory.query("root", as_of=2).ids == ["g", "h"]
    memory.load({"format": "hgm-graph/1", "nodes": [{"id": "k", "type": "goal"}], "edges": []})
    assert memory.query("root").ids == ["g", "h", "k"]  # the graph the state holds now
    assert memory.query("root", as_of=1).ids == ["g"]
    current, earlier, latest, loaded, before = [view for view, _ in seen]
    assert current is not earlier and latest is current and loaded is state.graph
    assert before is not loaded and not any(acquired for _, acquired in seen)
    with state.lock.writing(blocking=False) as acquired:
        assert acquired  # and nothing is left held
    result = memory.query("root", as_of=1)  # payloads read under the lock, at the query's t
    assert [node.id for node in result.payloads()] == ["g"]
    assert [node.id for node in memory.query("root").payloads()] == ["g", "h", "k"]
