"""The run path's shortcuts keep what a run counts and answers: an id lookup counts its id as
work itself (no wrapper around it), and a program of one path runs it without the union."""

from __future__ import annotations

from hgm_engine.model import MemoryGraph
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
from hgm_engine.query.executor.sources import charged, source
from hgm_engine.query.pipeline import compile_uncached
from hgm_engine.query.plan import IdLookup


def _graph() -> MemoryGraph:
    return MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {})], [("g", "a", "parent_of", {})])


def test_an_id_lookup_counts_one_node_of_work_when_found_and_none_when_not() -> None:
    graph = _graph()
    for node_id, node_type, expected in (("a", None, (["a"], 1)), ("x", None, ([], 0)), ("a", "goal", ([], 0))):
        ctx = Context(graph, {}, None, DEFAULT_LIMITS)
        assert (charged(source(IdLookup(node_id, None, node_type)))(ctx), ctx.work) == expected


def test_a_query_of_one_path_runs_as_its_union_would() -> None:
    graph = _graph()
    for text, expected in (("#g.children", ["a"]), ("#a.parent", ["g"]), ("#x", []), ("#g.children | #g", ["a", "g"])):
        program = compile_uncached(text).program
        assert program.run(graph) == program.fast(Context(graph, {}, None, DEFAULT_LIMITS)) == expected
