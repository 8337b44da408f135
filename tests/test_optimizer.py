"""Optimizer rules fire where they should and never change an answer."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgm_engine.query.executor import build
from hgm_engine.model.graph import MemoryGraph
from hgm_engine.query.plan import IdLookup, Navigate, TypeScan, ValueScan
from hgm_engine.query.pipeline import compile_uncached
from hgm_engine.model.schema import NODE_TYPES

TYPES = NODE_TYPES
STATUSES = ("pending", "done", "failed")


def test_id_start_becomes_a_direct_lookup():
    q = compile_uncached("action#a1.children")
    assert q.optimized_plan.branches[0].source == IdLookup("a1", None, "action")
    assert "id_lookup" in q.optimized_plan.rules


def test_type_filter_on_all_nodes_uses_the_type_index():
    q = compile_uncached("nodes.where(confidence > 0.5, type = 'fact')")
    branch = q.optimized_plan.branches[0]
    assert branch.source == TypeScan("fact")
    assert len(branch.ops) == 1  # the confidence filter stays


def test_a_string_equality_on_a_type_scan_uses_the_value_index():
    q = compile_uncached("nodes.where(type = 'action', status = 'failed', priority >= 4)")
    branch = q.optimized_plan.branches[0]
    assert branch.source == ValueScan("action", "status", "failed")
    assert len(branch.ops) == 1  # the priority filter stays
    assert compile_uncached("nodes.where(type = 'action', priority = 4)").optimized_plan.branches[0].source == TypeScan("action")


def test_type_filter_is_pushed_into_a_single_hop():
    q = compile_uncached("#g.children.where(type = 'action')[0]")
    nav = q.optimized_plan.branches[0].ops[0]
    assert isinstance(nav, Navigate) and nav.relation.node_type == "action"
    assert len(nav.predicates) == 1  # only the index is left


def test_type_filter_is_not_pushed_into_a_repetition():
    q = compile_uncached("#g.children{1,3}.where(type = 'action')")
    nav = q.optimized_plan.branches[0].ops[0]
    assert nav.relation.node_type is None  # pushing would stop the walk at non-actions


def test_rules_apply_inside_exists_and_subqueries():
    q = compile_uncached("(nodes.where(type = 'goal')).where(exists(children.where(type = 'action')))")
    assert set(q.optimized_plan.rules) >= {"type_index", "type_pushdown"}


@st.composite
def graphs(draw):
    g = MemoryGraph()
    count = draw(st.integers(2, 14))
    for i in range(count):
        g.add_node(f"n{i}", draw(st.sampled_from(TYPES)), {"status": draw(st.sampled_from(STATUSES))})
    for _ in range(draw(st.integers(0, 30))):
        a, b = draw(st.integers(0, count - 1)), draw(st.integers(0, count - 1))
        edge_type = draw(st.sampled_from(["parent_of", "before", "related_to", "replaces", "derived_from"]))
        if ("n%d" % a, "n%d" % b, edge_type) not in g._edge_index:
            attrs = {"order": draw(st.integers(0, 3))} if draw(st.booleans()) else {}
            g.add_edge(f"n{a}", f"n{b}", edge_type, attrs)
    return g


STARTS = ["root", "nodes", "#n0", "goal#n1", "action#n2", "(#n0 | #n3)",
          "nodes.where(type = 'action', status = 'pending')", "nodes.where(status = 'done', type = 'goal')"]
NAV = ["children", "parent", "subgoals", "actions", "descendants", "ancestors", "siblings", "next",
       "related", "related_facts", "latest", "versions", "out()", "in(parent_of)", "both(related_to)",
       "children{0,2}", "sources{1,}"]
PRED = ["", ".where(type = 'action')", ".where(type = 'goal', status = 'done')", "[0]", "[-1]",
        ".where(status != 'failed')[1:]", ".where(type = 'fact' or status = 'pending')"]
TAIL = ["", ".count()", ".exists()", ".paths()", ".first()", ".sort_by(status, 'desc')"]


@st.composite
def queries(draw):
    text = draw(st.sampled_from(STARTS)) + draw(st.sampled_from(["", ".where(type = 'goal')", ".where(type = 'action')"]))
    for _ in range(draw(st.integers(0, 3))):
        text += "." + draw(st.sampled_from(NAV)) + draw(st.sampled_from(PRED))
    return text + draw(st.sampled_from(TAIL))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), queries())
def test_optimized_and_literal_plans_give_the_same_answer(graph, text):
    compiled = compile_uncached(text)
    literal = build(compiled.logical_plan).run(graph)
    optimized = compiled.program.run(graph)
    assert optimized == literal, text


def test_both_on_one_edge_type_lists_outgoing_then_incoming_without_repeats():
    """``.both(t)`` per source: outgoing edges first, then incoming ones (spec §2.2), each
    node once; the same through every executor path (one source, many, per-source index,
    repetition, paths)."""
    from hgm_engine import Memory

    memory = Memory()
    memory.apply(
        {
            "ops": [
                {"op": "add_node", "id": "x", "type": "entity"},
                {"op": "add_node", "id": "y", "type": "entity"},
                *({"op": "add_node", "id": f, "type": "fact"} for f in ("a", "b", "c", "d")),
                {"op": "add_edge", "from": "x", "to": "a", "type": "related_to"},
                {"op": "add_edge", "from": "c", "to": "x", "type": "related_to"},
                {"op": "add_edge", "from": "x", "to": "b", "type": "related_to"},
                {"op": "add_edge", "from": "b", "to": "x", "type": "related_to"},
                {"op": "add_edge", "from": "y", "to": "d", "type": "related_to"},
                {"op": "add_edge", "from": "a", "to": "y", "type": "related_to"},
            ]
        }
    )
    assert memory.query("#x.related").ids == ["a", "b", "c"]
    assert memory.query("#x.both(related_to)").ids == ["a", "b", "c"]
    assert memory.query("nodes.where(type = 'entity').related").ids == ["a", "b", "c", "d"]
    assert memory.query("nodes.where(type = 'entity').related[-1]").ids == ["c", "a"]
    assert memory.query("#x.related{1,2}").ids == ["a", "b", "c", "y"]
    assert memory.query("#x.related_facts.paths()").value == [["x", "a"], ["x", "b"], ["x", "c"]]


def test_a_pick_after_a_per_source_filter_stops_early_and_still_picks_right():
    """``subgoals[0]`` and friends: the generated per-source step stops scanning a source's
    children once it has the matches the pick needs; the answers are the spec's."""
    from hgm_engine import Memory

    memory = Memory()
    ops = [{"op": "add_node", "id": "g1", "type": "goal"}, {"op": "add_node", "id": "g2", "type": "goal"}]
    for node_id, node_type, status in [("a1", "action", "pending"), ("s1", "goal", "done"), ("a2", "action", "done"),
                                       ("s2", "goal", "pending"), ("a3", "action", "pending")]:
        ops.append({"op": "add_node", "id": node_id, "type": node_type, "parent": "g1", "status": status})
    ops.append({"op": "add_node", "id": "s3", "type": "goal", "parent": "g2"})
    memory.apply({"ops": ops})
    expected = {
        "#g1.subgoals[0]": ["s1"],
        "#g1.subgoals[1]": ["s2"],
        "#g1.subgoals[2]": [],
        "#g1.subgoals[-1]": ["s2"],
        "#g1.subgoals[0:1]": ["s1"],
        "#g1.subgoals[1:5]": ["s2"],
        "#g1.subgoals[:2]": ["s1", "s2"],
        "#g1.actions.where(status = 'pending')[1]": ["a3"],
        "#g1.children.where(status = 'done')[0:2]": ["s1", "a2"],
        "nodes.where(type = 'goal').subgoals[0]": ["s1", "s3"],
        "root.subgoals[0].children": [],
    }
    for query, ids in expected.items():
        assert memory.query(query).ids == ids, query


def test_the_optimizer_calls_only_the_rules_that_can_apply_to_a_path(monkeypatch):
    from hgm_engine.query import optimizer

    called = []
    monkeypatch.setattr(optimizer, "RULES", tuple(
        (name, lambda path, name=name, rule=rule: called.append(name) or rule(path)) for name, rule in optimizer.RULES
    ))
    # through the stages: compile_uncached reads this shape by the direct path (no optimizer)
    from hgm_engine.query.analyze import analyze
    from hgm_engine.query.parser import parse
    from hgm_engine.query.plan import plan
    from hgm_engine.model.schema import DEFAULT_SCHEMA

    assert optimizer.optimize(plan(analyze(parse("#a.children"), DEFAULT_SCHEMA), DEFAULT_SCHEMA)).rules == ("id_lookup",)
    assert called == ["id_lookup"]  # the lookup's path has no source or predicate another rule reads
    called.clear()
    assert compile_uncached("nodes.where(type = 'action', status = 'done')").optimized_plan.rules == ("type_index", "value_index")
    assert called == ["id_lookup", "type_index", "value_index"]
    called.clear()
    assert compile_uncached("root.children.where(type = 'goal')").optimized_plan.rules == ("type_pushdown",)
    assert called == ["type_pushdown"]


def test_a_plan_no_rule_changes_is_kept_as_it_is():
    compiled = compile_uncached("root.children.where(status = 'done')")
    assert compiled.optimized_plan is compiled.logical_plan
