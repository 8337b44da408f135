"""The shortcuts a small first call takes (docs/performance.md, "First calls, sixth session")
answer, charge work and stop exactly as the general steps they stand for:

- a walk without predicates (``{m,n}`` after a one-type hop, ``ancestors``, ``descendants``)
  is built as :func:`operators.walk_step` rather than the general expansion
  (``generic_hop`` over ``expanders``); its traced form is made when ``.paths()`` first runs;
- the id lookup, a one-type hop read from the stored columns and the walks over them charge
  their work inline (``Context.ceiling``) instead of calling ``Context.charge`` each time;
- ``fastparse.scan_comparison`` skips runs of characters with ``str.lstrip`` over windows;
- ``condition_weight`` answers one comparison of an attribute with a constant at once.
"""

from __future__ import annotations

import itertools
import random
import re

import pytest

from hgm_engine.errors import QueryExecutionError
from hgm_engine.model import MemoryGraph
from hgm_engine.query.executor import context as context_module
from hgm_engine.query.executor import program as program_module
from hgm_engine.query.executor.conditions import condition_weight
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
from hgm_engine.query.executor.operators import STORED_WALKS
from hgm_engine.query.limits import Limits
from hgm_engine.query.pipeline import compile_uncached
from hgm_engine.query.plan import AllOf, Attr, Cmp, Const, Filter, Navigate, Param
from tests.test_stored_walks import _records, _stored

WALKS = [
    "#{s}.children{{1,3}}",
    "#{s}.children{{2,3}}",
    "#{s}.children{{0,2}}",
    "#{s}.children{{3,}}",
    "#{s}.children{{0,0}}",
    "#{s}.children{{2}}",
    "#{s}.subgoals{{1,}}",
    "#{s}.ancestors",
    "#{s}.descendants",
    "#{s}.descendants.count()",
    "#{s}.ancestors.exists()",
    "#{s}.descendants[1]",
    "#{s}.descendants.children",
    "#{s}.parent.descendants",
    "#{s}.related_facts",
    "#{s}.children",
    "nodes.where(type = 'goal').children{{1,2}}",
    "nodes.where(type = 'action').ancestors",
    "#{s}.descendants | #g0.ancestors",
    # walks with predicates per source: their levels without the general expansion
    "#{s}.descendants.where(priority >= 1)",
    "#{s}.children{{1,3}}.where(type = 'action', status = 'done')",
    "#{s}.ancestors[0]",
    "nodes.where(type = 'action').ancestors[-1]",
    "#{s}.parent.descendants.where(priority >= 2)[1:3]",
]


def _general(monkeypatch) -> None:
    """Build walks the general way from now on (the reference the shortcut must equal)."""
    monkeypatch.setattr(program_module, "walk_step", lambda op: None)
    monkeypatch.setattr(program_module, "walk_levels", lambda op: None)
    monkeypatch.setattr(program_module, "filtered_sources", lambda op: None)  # filters per source


def _answers(graph_of, text: str, calls: int) -> list:
    """(ids, work) of ``calls`` runs of one program on a fresh graph, then its paths() and explain."""
    graph = graph_of()
    compiled = compile_uncached(text)
    out = []
    for _ in range(calls):
        ctx = Context(graph, {}, None, DEFAULT_LIMITS)
        out.append((compiled.program.fast(ctx), ctx.work))
    plain_path = not text.endswith(")") and "|" not in text
    out.append(compile_uncached(text + ".paths()").program.run(graph) if plain_path else None)
    # (a generated function's name carries a process-wide count)
    out.append(re.sub(r"<hgm ([a-z ]+) \d+>", r"<hgm \1 N>", compiled.explain(physical=True)))
    return out


def _filters_only(query: str) -> bool:
    """Whether a navigation of ``query`` has predicates that are all filters."""
    ops = compile_uncached(query.format(s="g0")).optimized_plan.branches[0].ops
    return any(isinstance(op, Navigate) and op.predicates and all(isinstance(p, Filter) for p in op.predicates) for op in ops)


@pytest.mark.parametrize("query", WALKS)
def test_a_walk_without_predicates_answers_and_charges_as_the_general_step(query, monkeypatch) -> None:
    nodes, edges = _records()
    sources = ("g0", *[n[0] for n in nodes[1:12]])
    found = []
    for graph_of in (lambda: _stored(nodes, edges), lambda: MemoryGraph.from_records(nodes, edges)):
        lean = {s: _answers(graph_of, query.format(s=s), STORED_WALKS + 2) for s in sources}
        with monkeypatch.context() as patch:
            _general(patch)
            general = {s: _answers(graph_of, query.format(s=s), STORED_WALKS + 2) for s in sources}
        if _filters_only(query):  # its strategy is then_filters' (test_filters_once.py), not the general one's
            lean = {s: answers[:-1] for s, answers in lean.items()}
            general = {s: answers[:-1] for s, answers in general.items()}
        assert lean == general, query
        found.append(lean)
    # the walks over the stored columns (the first calls) answer as the memo's on a built graph
    assert found[0] == found[1], query


def test_a_walk_is_built_without_its_general_expansion() -> None:
    program = compile_uncached("#g0.descendants").program
    strategy = program.strategy(program.plan.branches[0].ops[0])
    assert (strategy.name, strategy.detail) == ("generic", "each source expanded on its own (breadth-first levels)")
    fast = program._paths[0].fast_ops[0]
    assert fast.__qualname__ == "_one_type_walk.<locals>.walk"  # walk_step's form: the sources walked in one call


def _charge_always(monkeypatch) -> None:
    """Make every inline charge call Context.charge(0) (the ceiling -1): what calling
    charge at each of them, as the general steps do, gives."""
    init = Context.__init__

    def always(self, *args):
        init(self, *args)
        self.ceiling = -1

    monkeypatch.setattr(Context, "__init__", always)


def _outcome(graph, text: str, limits: Limits):
    ctx = Context(graph, {}, None, limits)
    try:
        return compile_uncached(text).program.fast(ctx), ctx.work
    except QueryExecutionError as error:
        return type(error), str(error), ctx.work  # the work counted when it stopped


@pytest.mark.parametrize("stored", [True, False])
def test_the_inline_charges_stop_at_the_same_work_as_calling_charge(stored, monkeypatch) -> None:
    nodes, edges = _records()
    graph_of = (lambda: _stored(nodes, edges)) if stored else (lambda: MemoryGraph.from_records(nodes, edges))
    texts = ["#g0.descendants", "#g0.children{2,3}", "#a3.ancestors", "#g0.related_facts", "#g0.children.children",
             "nodes.where(type = 'goal').children{1,2}", "#g0", "#g0.descendants.where(priority >= 2)"]
    stopped = []
    for text in texts:
        most = _outcome(graph_of(), text, DEFAULT_LIMITS)[1]
        # every limit without a deadline; under one (every charge then looks at the clock) the
        # first few and the last few
        every = sorted({*range(0, 6), *range(max(0, most - 3), most + 2), *range(0, most, max(1, most // 12))})
        for max_work, timeout in [(w, None) for w in every] + [(w, 60.0) for w in {*every[:6], *every[-4:]}]:
            if True:
                limits = Limits(max_work=max_work, timeout=timeout)
                lean = _outcome(graph_of(), text, limits)
                with monkeypatch.context() as patch:  # every inline charge calling charge(0)
                    _charge_always(patch)
                    assert _outcome(graph_of(), text, limits) == lean, (text, max_work, timeout)
                # charge's rule: stopped exactly when the whole query's work is over max_work
                assert (lean[0] is QueryExecutionError) == (max_work < most), (text, max_work)
                if stored:  # the columns' first calls stop where the memo's do on a built graph
                    assert _outcome(MemoryGraph.from_records(nodes, edges), text, limits) == lean, (text, max_work, timeout)
                stopped.append(lean[0] is QueryExecutionError)
    assert True in stopped and False in stopped


def test_each_step_charges_the_work_the_language_says() -> None:
    # g -> s, a, b; s -> c: an id is 1, a hop its ids, a filter 1 per node it tests, a walk its levels
    graph = MemoryGraph.from_records(
        [("g", "goal", {}), ("s", "goal", {}), ("a", "action", {"priority": 2}), ("b", "action", {"priority": 0}),
         ("c", "action", {"priority": 3})],
        [("g", "s", "parent_of", {}), ("g", "a", "parent_of", {}), ("g", "b", "parent_of", {}), ("s", "c", "parent_of", {})])
    expected = {
        "#g": (["g"], 1),
        "#g.children": (["s", "a", "b"], 1 + 3),
        "#g.children.where(priority >= 1)": (["a"], 1 + 3 + 3),
        "#g.descendants": (["s", "a", "b", "c"], 1 + 3 + 1 + 4),  # its levels, then what it gives
        "#g.children{2}": (["c"], 1 + 3 + 1 + 1),
        "#g.descendants.where(priority >= 1)": (["a", "c"], 1 + 3 + 1 + 4 + 2),
        "#g.where(priority >= 1)": ([], 1 + 1),
    }
    nodes = [(i, t, a) for i, t, a in [("g", "goal", {}), ("s", "goal", {}), ("a", "action", {"priority": 2}),
                                      ("b", "action", {"priority": 0}), ("c", "action", {"priority": 3})]]
    edges = [("g", "s", "parent_of", {}), ("g", "a", "parent_of", {}), ("g", "b", "parent_of", {}), ("s", "c", "parent_of", {})]
    for text, answer in expected.items():
        for view in (graph, _stored(nodes, edges)):
            for _ in range(STORED_WALKS + 1):
                ctx = Context(view, {}, None, DEFAULT_LIMITS)
                assert (compile_uncached(text).program.fast(ctx), ctx.work) == answer, text


def test_an_id_lookup_charges_its_id_and_stops_past_max_work() -> None:
    graph = MemoryGraph.from_records([("a", "goal", {})], [])
    ctx = Context(graph, {}, None, Limits(max_work=1))
    assert compile_uncached("#a").program.fast(ctx) == ["a"] and ctx.work == 1
    ctx = Context(graph, {}, None, Limits(max_work=0))
    with pytest.raises(QueryExecutionError, match="more than 0 nodes"):
        compile_uncached("#a").program.fast(ctx)
    assert ctx.work == 1


@pytest.mark.parametrize("text", ["#a", "#a.children{1,3}", "#a.related_facts", "#a.descendants", "#a.children.children",
                                  "#a.children{2,3}.count()"])
def test_an_inline_charge_looks_at_the_clock_under_a_deadline_as_charge_does(text, monkeypatch) -> None:
    nodes, edges = _records()
    nodes = [("a", "goal", {}), *nodes]
    edges = [("a", "g0", "parent_of", {}), ("a", "f3", "related_to", {}), *edges]
    outcomes = []
    for passes_at in range(1, 40):  # the clock passes the deadline at its nth reading after the start
        seen = []
        for graph in (_stored(nodes, edges), MemoryGraph.from_records(nodes, edges)):
            readings = itertools.count()
            monkeypatch.setattr(context_module.time, "monotonic", lambda: 0.0 if next(readings) < passes_at else 100.0)
            seen.append(_outcome(graph, text, Limits(timeout=5.0)))
        assert seen[0] == seen[1], (text, passes_at)  # the columns read the clock where the memo does
        outcomes.append(seen[0][0] is QueryExecutionError and "time limit" in seen[0][1])
    assert outcomes[0] and not outcomes[-1], outcomes  # it stops early, and a late deadline is not reached


def test_a_long_name_is_read_by_the_one_function_comparison_reader() -> None:
    from hgm_engine.query.fastparse import scan_comparison

    for length in (1, 63, 64, 65, 128, 129, 300):
        name = "n" + "a_1" * (length // 3) + "b" * (length % 3)
        found = scan_comparison(f"{name} >= 12.5)", 0)
        assert found is not None and found[:2] == (0, len(name)) and found[6] == 12.5, length


def test_a_context_ceiling_is_max_work_or_minus_one_under_a_deadline() -> None:
    graph = MemoryGraph()
    assert Context(graph, {}, None, Limits(max_work=7)).ceiling == 7
    assert Context(graph, {}, None, Limits(max_work=None)).ceiling is None
    assert Context(graph, {}, None, Limits(max_work=7, timeout=1.0)).ceiling == -1


def _random_cmps(rng: random.Random, count: int) -> list:
    values = [1, 0.5, "x", True, None, (1, 2, 3), ("a", "b"), tuple(range(40)), ((1, 2), (3,)), ()]
    cmps = []
    for _ in range(count):
        right = Const(rng.choice(values)) if rng.random() < 0.8 else Param("p")
        left = Attr("n") if rng.random() < 0.8 else Const(rng.choice(values))
        cmps.append(Cmp(rng.choice(["=", "!=", "<", ">=", "in", "contains"]), left, right))
    return cmps


def test_the_weight_of_one_comparison_is_what_the_general_count_gives() -> None:
    for cond in _random_cmps(random.Random(4), 300):
        # AllOf of one item is counted by the loop alone, term for term
        assert condition_weight(cond) == condition_weight(AllOf((cond,))), cond


def _long_texts() -> list[str]:
    texts = []
    for length in (1, 20, 63, 64, 65, 127, 128, 129, 300):
        name = "n" + "_a1" * (length // 3) + "b" * (length % 3)
        texts.append(f"root.children.where({name} >= 1)")
        texts.append(f"#x.where({name}=true)")
    for digits in (1, 17, 18, 19, 20, 64, 65, 130):
        texts.append(f"nodes.where(n = {'7' * digits})")
        texts.append(f"nodes.where(n < -{'3' * digits}.5)")
        texts.append(f"nodes.where(n < 1.{'0' * digits})")
        texts.append(f"nodes.where(n < 1.{'0' * digits}e3)")
    for op in ("==", "!=", "<=", ">=", "<", ">", "=", "=~", "!", "<>", "=<", "=>", "==="):
        texts.append(f"root.where(a {op} 1)")
        texts.append(f"root.where(a{op}'x')")
    texts += ["root.where(a =", "root.where(a", "root.where(a <", "root.where(a >= 1", "root.where(abc)"]
    return texts


@pytest.mark.parametrize("text", _long_texts())
def test_a_comparison_with_long_runs_and_every_operator_reads_as_lark_reads_it(text) -> None:
    from tests.test_fastparse import _same

    _same(text)


def test_a_navigation_builds_its_traced_form_only_when_paths_runs(monkeypatch) -> None:
    real = program_module.expanders
    made = []
    monkeypatch.setattr(program_module, "expanders", lambda op: made.append(op.name) or real(op))
    graph = MemoryGraph.from_records([("g", "goal", {}), ("a", "action", {"status": "done"}), ("f", "fact", {})],
                                     [("g", "a", "parent_of", {}), ("a", "f", "related_to", {})])
    for text in ("#g.children", "#a.related_facts", "#g.actions.where(status = 'done')", "#g.children[0]", "#g.descendants"):
        assert compile_uncached(text).program.run(graph) and made == [], text
    assert compile_uncached("#g.children.related_facts.paths()").program.run(graph) == [["g", "a", "f"]]
    assert made == ["children", "related_facts"]  # each made once, when paths() ran
