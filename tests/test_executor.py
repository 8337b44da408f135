"""The executor's generated code and physical plan: a traceback through a generated function
shows its line, its linecache entry lives as long as the function, and
``explain(physical=True)`` names the strategy each navigation step runs."""

from __future__ import annotations

import gc
import linecache
import traceback

import attrs
import pytest

from hgm_engine import Memory, compile
from hgm_engine.model import MemoryGraph, compile_schema
from hgm_engine.query.pipeline import compile_uncached


class _Unreadable(dict):
    """Attributes that fail when read: a stand-in for a bug inside generated code."""

    def get(self, *args):
        raise RuntimeError("these attributes cannot be read")


class _UnreadableAttributes:
    """A view of ``graph`` in which every node's attributes fail when read."""

    def __init__(self, graph: MemoryGraph):
        self._graph = graph
        self._nodes = {i: attrs.evolve(n, attrs=_Unreadable()) for i, n in graph.node_map().items()}

    def node_map(self):
        return self._nodes

    def __getattr__(self, name):
        return getattr(self._graph, name)


def _trip() -> MemoryGraph:
    graph = MemoryGraph()
    graph.add_node("g", "goal", {})
    for child, node_type in (("s", "goal"), ("a", "action"), ("b", "action")):
        graph.add_node(child, node_type, {"status": "pending"})
        graph.add_edge("g", child, "parent_of")
    return graph


def _frames(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


@pytest.mark.parametrize(
    ("query", "kind", "line"),
    [
        # a string equality reads the value index where the view has one, else the attributes
        ("nodes.where(status = 'done')", "scan", "return [n.id for n in payloads if (n.id in _m1[_v1] if (_v1 := n.type) in _m1 else n.attrs.get(_k1) == _k2)]"),
        # after a hop to one type, by id in the index's bucket where there is one (none here)
        ("root.actions.where(status = 'done')", "step", "out = [i for i in out if ((i in _b1) if _b1 is not None else (a := (n := nodes[i]).attrs) is not None and (a.get("),
        ("root.actions.where(status = 'done')[0]", "step", "if ((t in _b1) if _b1 is not None else (a := (n := nodes[t]).attrs) is not None and (a.get("),
        # with a type term, other types are skipped before the attributes are read
        ("root.descendants.where(type = 'action', status = 'done')", "filter", "kept = [i for i in ids if ((i in _b1) if _b1 is not None else ((n := nodes[i]) is not None) and (n.type == _k"),
        ("root.actions.where(priority >= 2)", "step", "out = [i for i in out if (a := (n := nodes[i]).attrs)"),
        ("root.descendants.where(priority >= 2)", "filter", "return [i for i in ids if (a := (n := nodes[i]).attrs)"),
    ],
)
def test_a_traceback_through_a_generated_query_function_shows_the_generated_line(query, kind, line):
    compiled = compile_uncached(query)
    # A filter runs its closures until it is hot (TieredFilter); the physical plan names, and
    # so writes, the generated loop that runs from then on.
    physical = compiled.explain(physical=True)
    with pytest.raises(RuntimeError) as caught:
        compiled.program.run(_UnreadableAttributes(_trip()))
    shown = _frames(caught.value)
    (filename,) = {name for name in linecache.cache if name.startswith(f"<hgm {kind} ") and name in shown}
    assert f'File "{filename}", line' in shown
    assert line in shown
    assert filename in physical  # explain names the function that failed


def test_a_traceback_through_a_generated_schema_check_shows_the_generated_line():
    check = compile_schema({"type": "object", "properties": {"status": {"type": "string"}}})
    with pytest.raises(RuntimeError) as caught:
        check(_Unreadable())
    shown = _frames(caught.value)
    assert f'File "{check.__code__.co_filename}", line 5, in check' in shown
    assert "x1 = v.get('status', _MISSING)" in shown


def test_a_generated_functions_source_is_forgotten_with_the_function():
    compiled = compile_uncached("root.subgoals[0].actions.where(status = 'done')")
    program = compiled.program
    (filename,) = program.strategy(program.plan.branches[0].ops[0]).generated
    assert linecache.getline(filename, 1) == "def _step(ids, ctx):\n"
    check = compile_schema({"type": "string"})
    check_file = check.__code__.co_filename
    assert check_file in linecache.cache
    del compiled, program, check
    gc.collect()  # a program with relative paths holds itself through its closures
    assert filename not in linecache.cache
    assert check_file not in linecache.cache


def test_the_linecache_holds_no_more_than_the_live_programs_while_many_queries_compile():
    before = sum(1 for name in linecache.cache if name.startswith("<hgm "))
    for number in range(300):
        compile_uncached(f"root.actions.where(priority = {number})[0]")
    gc.collect()
    assert sum(1 for name in linecache.cache if name.startswith("<hgm ")) <= before


# -- the physical plan -------------------------------------------------------------------------

STRATEGIES = [
    ("root.subgoals", "one-type hop"),
    ("#g.related", "one-type hop"),  # both directions, one edge type
    ("root.actions.where(status = 'done')", "one-type hop, then filters over the whole list"),
    ("root.subgoals[0]", "generated per source"),
    ("root.actions.where(status = 'done')[1:3]", "generated per source"),
    ("root.subgoals[0].where(status = 'done')", "per-source loop"),
    ("root.subgoals[1:][0]", "per-source loop"),
    ("root.children{1,2}", "generic"),
    ("root.descendants", "generic"),
    ("root.out()", "generic"),
    ("#g.siblings[0]", "generic per source"),
    ("#g.related.where(status = 'done')[0]", "generic per source"),
    ("root.subgoals.paths()", "traced"),
]


def _physical_lines(compiled) -> list[str]:
    return [line.strip() for line in compiled.explain(physical=True).splitlines() if line.strip().startswith("physical:")]


@pytest.mark.parametrize(("query", "strategy"), STRATEGIES)
def test_explain_physical_names_the_strategy_of_each_navigation_step(query, strategy):
    (line,) = _physical_lines(compile(query))
    assert line.startswith(f"physical: {strategy}:") or line.startswith(f"physical: {strategy} <hgm ")


def test_each_strategy_runs_and_gives_the_answer_of_the_literal_plan():
    from hgm_engine.query.executor import build

    graph = _trip()
    graph.add_node("f", "fact", {"status": "done"})
    graph.add_edge("a", "f", "related_to")
    graph.add_edge("f", "g", "related_to")
    for query, _ in STRATEGIES:
        compiled = compile_uncached(query)
        assert compiled.program.run(graph) == build(compiled.logical_plan).run(graph), query


def test_explain_physical_shows_what_was_generated_for_a_step():
    compiled = compile("root.actions.where(status = 'done')[0]")
    (line,) = _physical_lines(compiled)
    assert "1 filter inline" in line and "pick [0:1]" in line and "stops after 1 match" in line
    filename = line.split("<", 1)[1].split(">", 1)[0]
    assert linecache.getline(f"<{filename}>", 1) == "def _step(ids, ctx):\n"


def test_explain_physical_shows_a_fused_scan_and_an_index_count():
    assert _physical_lines(compile("nodes.where(type = 'action', status = 'failed', priority >= 4)"))[0].startswith(
        "physical: generated payload scan <hgm scan "
    )
    assert _physical_lines(compile("nodes.where(type = 'fact').count()")) == [
        "physical: index size: count() reads the size of the index, no list is built"
    ]


def test_explain_physical_covers_subqueries_and_paths_run_traced():
    union = compile("(#a | #b).children.where(status = 'done')[0]")
    assert [line.split(":")[1].split("<")[0].strip() for line in _physical_lines(union)] == ["generated per source"]
    traced = compile("(root.subgoals | root.actions).children.where(status = 'done').paths()")
    assert [line.split(":")[1].strip() for line in _physical_lines(traced)] == ["traced"] * 3


def test_explain_physical_only_adds_lines_to_the_plain_explain():
    for query, _ in STRATEGIES:
        compiled = compile(query)
        plain = compiled.explain()
        assert "physical:" not in plain
        kept = [line for line in compiled.explain(physical=True).splitlines() if not line.strip().startswith("physical:")]
        assert kept == plain.splitlines()


def test_memory_explain_is_unchanged():
    assert Memory().explain("root.subgoals") == compile("root.subgoals").explain()


def test_inline_adjacency_lookups_see_a_transactions_own_edges():
    # A graph hands the executor its remembered hop answers (hop_memo); a transaction's
    # view keeps none of its own, so the hops, the per-source step and the repetition ask it
    # for every node, and see the edges it added, not the graph's remembered ones.
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}, {"op": "add_node", "id": "s", "type": "goal"},
                          {"op": "add_edge", "from": "g", "to": "s", "type": "parent_of"}]})
    queries = ("#g.descendants", "#g.children{1,2}", "root.subgoals[0].subgoals", "root.subgoals.subgoals", "#s.children",
               "nodes.where(type = 'goal').children.where(type = 'goal')")
    before = {q: memory.query(q).ids for q in queries}  # fills the graph's adjacency memos
    assert before == dict(zip(queries, (["s"], ["s"], [], [], [], ["s"])))
    with memory.transaction() as tx:
        tx.add_node("goal", id="t", parent="s")
        inside = {q: tx.query(q).ids for q in queries}
        assert tx.query("#t.ancestors").ids == ["s", "g"]
    assert inside == dict(zip(queries, (["s", "t"], ["s", "t"], ["t"], ["t"], ["t"], ["s", "t"])))
    assert {q: memory.query(q).ids for q in queries} == inside


def test_a_filter_that_starts_with_a_type_test_reads_no_attributes_of_the_nodes_it_rejects():
    # type = 'action' comes first: a goal is rejected on its type and its attributes are never
    # read (for a node read from an image: never decoded). Here a goal's stored attributes
    # cannot be decoded, so reading them fails the query.
    from hgm_engine.model import lazy_nodes

    graph = _trip()
    view = _UnreadableAttributes(graph)
    view._nodes = {
        i: (n if n.type != "goal" else lazy_nodes([n.id], [n.type], ["{not json"], [n.seq])[0]) for i, n in graph.node_map().items()
    }
    for query in ("#g.children.where(type = 'action', status = 'pending')",  # filter after a hop
                  "#g.descendants.where(type = 'action' and status = 'pending')",  # per source
                  "#g.children.where(type = 'action', status = 'pending')[0]",  # generated per source
                  "nodes.where(type = 'action' or id = 'x', status = 'pending')"):  # payload scan
        assert compile_uncached(query).program.run(view) in (["a", "b"], ["a"]), query
