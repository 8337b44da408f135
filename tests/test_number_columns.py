"""Number columns in the stored image (format 5; docs/performance.md, "First calls, eighth
session"): a filter comparing an attribute with a number after a walk over the stored columns
(``#a.results.derived{1,}.where(confidence >= 0.5)``, benchmark ``lineage``) reads each reached
node's number from its type's column by position (``TieredFilter._numbers``) instead of
decoding the node's payload. These hold it to the filter's own test of the attributes — the
same graph read with its columns hidden, and the graph built from the same records — on ids,
order and work, for values of every kind (ints, floats, booleans, strings, lists, missing,
ints a float cannot hold, ±0), every operator, types with a column, with no number at all and
with too few numbers for one; and check that it decodes nothing, that the columns go at the
first change, and what the image keeps.
"""

from __future__ import annotations

import random
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hgm_engine import Memory
from hgm_engine.model import MemoryGraph, Node, freeze, stored_value_indexes
from hgm_engine.query.executor import operators
from hgm_engine.query.executor.context import DEFAULT_LIMITS, Context
from hgm_engine.query.executor.operators import STORED_WALKS
from hgm_engine.query.pipeline import compile_uncached
from hgm_engine.store import image as image_module
from hgm_engine.store.image import IMAGE_FORMAT, ImageMismatch, decode_image, encode_image
from hgm_engine.store.sqlite import SQLiteStore

# an action's score: numbers most of the time (a column is kept), every other kind too
_SCORES = [3, 4, 4.0, 2.5, -1, 0, -0.0, 0.0, 1e300, 2**53, -(2**53), 7, 1, 2, 5, 6,
           True, False, "4", None, [4], {"n": 4}, "missing"]


def _records(seed: int = 5):
    rng = random.Random(seed)
    nodes = [("g0", "goal", {"status": "active"})]
    edges = []
    goals = ["g0"]
    actions = []
    for i in range(1, 120):
        kind = rng.choice(("goal", "action", "action", "action", "fact", "result"))
        node_id = f"{kind[0]}{i}"
        if kind == "goal":
            attrs = {"status": "active", "big": 2**53 + 1 if i % 7 == 0 else i}  # one int no float holds: no column
        elif kind == "action":
            score = rng.choice(_SCORES)
            attrs = {"status": rng.choice(("done", "pending"))}
            if score != "missing":
                attrs["score"] = score
        elif kind == "fact":
            attrs = {"confidence": rng.choice((0.1, 0.5, 0.51, 0.9, 1.0, 1, 0)), "content": f"fact {i}"}
        else:  # a score on a few results: no column for them (their nodes are tested as they are)
            attrs = {"score": rng.randrange(6)} if rng.random() < 0.2 else {"ok": True}
        if kind == "result":
            if not actions:
                continue
            edges.append((rng.choice(actions), node_id, "produces", {}))
        else:
            edges.append((rng.choice(goals), node_id, "parent_of", {}))
        nodes.append((node_id, kind, attrs))
        if kind == "goal":
            goals.append(node_id)
        elif kind == "action":
            actions.append(node_id)
        if kind == "fact" and actions and rng.random() < 0.5:
            edges.append((rng.choice(actions), node_id, "produces", {}))  # a fact reached both ways
    return nodes, edges


def _built(nodes, edges) -> MemoryGraph:
    return MemoryGraph.from_records(nodes, edges)


def _read(nodes, edges) -> MemoryGraph:
    return decode_image(encode_image(_built(nodes, edges), 1, 0)).graph


QUERIES = [
    "#{s}.descendants.where(score {op} {n})",
    "#{s}.descendants.where(score {op} {n}, status = 'done')",  # a term the columns do not answer
    "#{s}.descendants.where(score {op} {n}, score < 5)",  # two terms from the columns
    "#{s}.children.descendants.where(score {op} {n})",  # several sources: a union of walks
    "#{s}.descendants.where(confidence {op} {n})",
    "#{s}.descendants.where(big {op} {n})",  # goals: no column (an int beyond 2**53)
    "#{s}.out(produces){{1,}}.where(score {op} {n})",  # results: too few numbers for a column
    "#{s}.descendants.out(produces){{1,}}.where(confidence {op} {n})",
    "#{s}.descendants.where(score {op} {n}).where(confidence {op} {n})",
    "#{s}.descendants.where(score {op} {n} or status = 'done')",  # not a conjunction: the nodes
]
OPS = ["<", "<=", ">", ">=", "=", "!=", "=="]
NUMBERS = ["4", "4.0", "2.5", "0", "-0.0", "1e300", "9007199254740992", "9007199254740993", "-1", "0.5", "0.51", "true", "'4'"]


def _answers(graph: MemoryGraph, text: str) -> list:
    """(ids, work) of a few runs of one program on ``graph`` (the columns' calls, then the
    memo's), then its paths()."""
    program = compile_uncached(text).program
    out = []
    for _ in range(STORED_WALKS + 2):
        ctx = Context(graph, {}, None, DEFAULT_LIMITS)
        out.append((program.fast(ctx), ctx.work))
    out.append(compile_uncached(text + ".paths()").program.run(graph))
    return out


def _hidden(monkeypatch) -> None:
    """The graph's number columns hidden: every filter tests the attributes."""
    monkeypatch.setattr(MemoryGraph, "stored_number_columns", lambda self: None)


@pytest.mark.parametrize("query", QUERIES)
def test_filters_reading_number_columns_answer_and_charge_as_the_attribute_tests(query, monkeypatch):
    nodes, edges = _records()
    sources = ["g0"] + [n[0] for n in nodes if n[1] in ("goal", "action")][:6]
    texts = [query.format(s=s, op=op, n=n) for s in sources for op in (OPS if s == "g0" else OPS[::2]) for n in (NUMBERS if s == "g0" else NUMBERS[::5])]
    read = {text: _answers(_read(nodes, edges), text) for text in texts}
    built = {text: _answers(_built(nodes, edges), text) for text in texts}
    with monkeypatch.context() as patch:
        _hidden(patch)
        hidden = {text: _answers(_read(nodes, edges), text) for text in texts}
    assert read == hidden
    assert read == built
    assert any(answers[0][0] for answers in read.values()), query  # not all empty
    assert any(not answers[0][0] for answers in read.values()), query  # not all full


def _decoded(graph: MemoryGraph) -> set:
    return {node.id for node in graph.nodes() if node._raw is None and node.attrs}


def test_a_comparison_after_a_walk_decodes_no_payload_and_the_other_terms_only_the_kept_ones():
    nodes, edges = _records()
    built = _built(nodes, edges)
    graph = _read(nodes, edges)
    assert graph.stored_number_columns() is not None and not _decoded(graph)
    text = "#g0.descendants.where(score >= 4)"
    expected = compile_uncached(text).program.run(built)
    assert expected and compile_uncached(text).program.run(graph) == expected
    assert not _decoded(graph)  # every action's score read from its column
    types = {n[0]: n[1] for n in nodes}
    subgoals = {}
    for source, target, edge_type, _ in edges:
        if edge_type == "parent_of" and types[target] == "goal":
            subgoals.setdefault(source, []).append(target)
    parent = next(goal for goal, found in subgoals.items() if len(found) >= 2)
    # two sources, both walked over the columns (a walk's first STORED_WALKS sources): a union
    text = f"#{parent}.subgoals[0:2].descendants.where(score >= 2)"
    assert len(compile_uncached(text).program.run(built)) > 1
    assert compile_uncached(text).program.run(graph) == compile_uncached(text).program.run(built)
    assert not _decoded(graph)
    text = "#g0.descendants.where(score >= 4, confidence < 1, status = 'done')"
    kept = compile_uncached("#g0.descendants.where(score >= 4, confidence < 1)").program.run(graph)
    assert not _decoded(graph)
    assert compile_uncached(text).program.run(graph) == compile_uncached(text).program.run(built)
    assert _decoded(graph) == set(kept)  # status tested on the nodes the columns kept only


def test_a_type_with_too_few_numbers_has_its_nodes_tested():
    nodes, edges = _records()
    graph = _read(nodes, edges)
    by_kind = graph.stored_number_columns().by_kind
    assert "big" in by_kind and all(column is None or not any(x == x for x in column) for column in by_kind["big"])
    text = "#g0.descendants.out(produces){1,}.where(score >= 1)"  # results: their own scores
    assert compile_uncached(text).program.run(graph) == compile_uncached(text).program.run(_built(nodes, edges))
    assert any(node_id.startswith("r") for node_id in _decoded(graph))


def test_the_columns_go_at_the_first_change_to_a_node():
    nodes, edges = _records()
    graph = _read(nodes, edges)
    text = "#g0.descendants.where(score >= 4)"
    program = compile_uncached(text).program
    before = program.run(graph)
    action = next(n[0] for n in nodes if n[1] == "action" and n[0] not in before and "score" in n[2])
    graph.set_node_attrs(action, {"score": 9, "status": "done"})
    assert graph.stored_number_columns() is None
    assert action in program.run(graph)
    built = _built(nodes, edges)
    built.set_node_attrs(action, {"score": 9, "status": "done"})
    assert program.run(graph) == program.run(built)


def test_a_filter_reads_the_columns_on_the_walks_first_calls_only(monkeypatch):
    nodes, edges = _records()
    graph = _read(nodes, edges)
    calls = []
    real = operators.TieredFilter._numbers
    monkeypatch.setattr(operators.TieredFilter, "_numbers", lambda self, walked, ctx: calls.append(len(walked)) or real(self, walked, ctx))
    program = compile_uncached("#g0.descendants.where(score >= 4)").program
    answers = [program.run(graph) for _ in range(STORED_WALKS + 2)]
    assert answers == [answers[0]] * len(answers)
    assert len(calls) == STORED_WALKS and calls[0] > 10


def test_stored_value_indexes_keep_a_column_where_most_nodes_hold_a_number_a_float_holds_exactly():
    def columns(*scores):
        nodes = [Node(f"a{i}", "action", freeze({} if s == "missing" else {"score": s}), i + 1) for i, s in enumerate(scores)]
        return stored_value_indexes(nodes)[3].get(("action", "score"), "absent")

    assert str(columns(1, 2.5, "x", "missing").tolist()) == "[1.0, 2.5, nan, nan]"  # NaN where no number
    assert columns(1, "x", "y", "missing") is None  # numbers on fewer than half of the nodes
    assert columns(2**53, -(2**53), 0.5).tolist() == [2.0**53, -(2.0**53), 0.5]
    assert columns(2**53 + 1, 1, 2) is None and columns(-(2**53) - 1, 1, 2) is None and columns(10**400, 1, 2) is None
    assert columns(True, False, "x") == "absent" and columns("missing", "missing") == "absent"  # no number at all
    nan = columns(float("nan"), 1, True)
    assert nan[0] != nan[0] and nan[1] == 1 and nan[2] != nan[2]
    assert str(columns(-0.0, 1)[0]) == "-0.0"


def test_an_image_whose_columns_do_not_fit_its_nodes_is_refused(monkeypatch):
    nodes, edges = _records()
    real = stored_value_indexes

    def short(found):
        packed, values, numbers, columns = real(found)
        return packed, values, numbers, {key: None if column is None else column[:-1] for key, column in columns.items()}

    monkeypatch.setattr(image_module, "stored_value_indexes", short)
    data = encode_image(_built(nodes, edges), 1, 0)
    with pytest.raises(ImageMismatch, match="number columns do not fit"):
        decode_image(data)


def test_an_image_of_format_4_is_refused_and_rewritten(tmp_path):
    import sqlite3

    nodes, edges = _records()
    path = tmp_path / "memory.db"
    doc = {"format": "hgm-graph/1", "nodes": [{"id": i, "type": t, **a} for i, t, a in nodes],
           "edges": [{"from": s, "to": d, "type": t} for s, d, t, _ in edges]}
    text = "#g0.descendants.where(score >= 4)"
    with Memory(store=SQLiteStore(path, image_min_nodes=0)) as memory:
        memory.load(doc, reason="number columns")
        expected = memory.query(text).ids
    with sqlite3.connect(path) as db:
        (data,) = db.execute("SELECT data FROM state_image").fetchone()
        assert int.from_bytes(data[10:12], "little") == IMAGE_FORMAT == 5
        db.execute("UPDATE state_image SET data = ?", (data[:10] + (4).to_bytes(2, "little") + data[12:],))
    db.close()
    with Memory(store=SQLiteStore(path, image_min_nodes=0)) as memory:
        assert memory._store.last_load == "rows" and memory.query(text).ids == expected
    with Memory(store=SQLiteStore(path, image_min_nodes=0)) as memory:
        assert memory._store.last_load == "image" and memory.graph.stored_number_columns() is not None
        assert memory.query(text).ids == expected


_SCORE = st.one_of(
    st.integers(-3, 6), st.sampled_from([0.0, -0.0, 2.5, 4.0, 1e20, -1e300, 2**53, 2**53 + 1]), st.booleans(), st.none(),
    st.sampled_from(["4", "x", "missing"]), st.just([4]),
)
_LITERAL = st.one_of(st.integers(-4, 7), st.sampled_from([0.0, -0.0, 2.5, 4.0, 3.999, 1e20, -1e301, 2**53, 2**53 + 1, 10**30]))
_PROGRAMS: dict = {}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["action", "fact"]), _SCORE), min_size=1, max_size=30), st.data())
def test_number_columns_answer_as_the_attributes_for_any_values(specs, data):
    nodes = [("g", "goal", {})]
    edges = []
    for i, (node_type, score) in enumerate(specs):
        nodes.append((f"n{i}", node_type, {} if score == "missing" else {"score": score}))
        edges.append(("g" if i % 3 == 0 else f"n{i - 1}", f"n{i}", "parent_of", {}))
    built, read = _built(nodes, edges), _read(nodes, edges)
    present = [score for _, score in specs if type(score) in (int, float)]
    literal = data.draw(st.sampled_from(present) | _LITERAL if present else _LITERAL)
    for op in ("<", "<=", ">", ">=", "=", "!="):
        for text in (f"#g.descendants.where(score {op} {literal!r})", f"#g.descendants.where(score {op} {literal!r}, type = 'fact')"):
            program = _PROGRAMS.get(text) or _PROGRAMS.setdefault(text, compile_uncached(text).program)
            assert program.run(read) == program.run(built), text
