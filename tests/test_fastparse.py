"""The hand-written query reader (hgm_engine/query/fastparse.py) against the grammar's parser:
on every text it reads it gives Lark's AST exactly (types, values, spans, texts), and on every
text Lark refuses it gives up (so the error is Lark's, with its "expected ..." list)."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgm_engine import HGMError
from hgm_engine.query.fastparse import parse_query
from hgm_engine.query.limits import Limits
from hgm_engine.query.parser import parse, parse_with_lark
from hgm_engine.testing.strategies import queries

from tests.conftest import compliance_suites
from tests.test_fuzz import TOKENS

from bench.baselines import QUERIES


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_DEPTH = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(text: str, max_depth: int = 64):
    """The fast reader's answer for ``text`` agrees with Lark's; returns it (None: gave up)."""
    fast = parse_query(text, max_depth)
    try:
        expected = parse_with_lark(text, Limits(max_depth=max_depth))
    except HGMError:
        assert fast is None, f"Lark refuses {text!r}; the fast reader read {fast!r}"
        return None
    if fast is not None:
        # repr: node types and values (1, 1.0 and True differ); asdict: the texts too
        assert repr(fast) == repr(expected), text
        assert attrs.asdict(fast) == attrs.asdict(expected), text
    return fast


def _compliance_texts() -> list[str]:
    texts = []
    for _name, _folder, doc in compliance_suites():
        texts += [case["expr"] for case in doc["cases"]]
    return texts


def test_every_compliance_query_reads_as_lark_reads_it():
    texts = _compliance_texts()
    read = [text for text in texts if _same(text) is not None]
    # the reader is for the common shapes: it must read most of them, not give up on all
    assert len(read) >= 0.8 * len(texts), (len(read), len(texts))


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_every_benchmark_query_is_read_without_lark(name):
    text = QUERIES[name][0].format(big_root="g1", hub_entity="e1", small_entity="e2", mid_root="g2",
                                   chain_result="r1", chain_action="a1", deep_action="a2", first_action="a3")
    assert _same(text) is not None


@pytest.mark.parametrize(
    "text",
    [
        "root.where(a = 1 andy = 2)",  # Lark's lexer reads 'and' 'y' here
        "root.where(a notin [1])",
        "root.where",
        "root.where(status = not)",
        "nodes.where((a = 1), b = 2)",
        "nodes.where(not (a = 1) or ((b)))",
        "(((root)))",
        "root.x[-1:]{2,}.y{3}",
        "goal #\"a\\\"b\".where(x =~ '\\\\d+', y == 1.e5, z in [true, null, -.5, [1]])",
        "search('x y').rank($t) | #$p | $ids",
        "root.where(exists(), count(children.where(a != 1)) >= 2, valid_at($now), f('x'))",
        "root // a comment\n .children",
        "root.children[1.5]",
        "root.where(a = 1e999)",
        "root[" + "9" * 5000 + "]",
        "root.where(a = '\\\n')",
        "nodes.where(type = 'fact').count()",
    ],
)
def test_tricky_texts_read_as_lark_reads_them_or_go_to_lark(text):
    _same(text)


def test_nesting_past_max_depth_goes_to_lark_and_gets_its_error():
    text = "root.where(" + "not " * 10 + "a = 1)"  # 12 levels: where, ten nots, the comparison
    assert _same(text, max_depth=12) is not None
    assert _same(text, max_depth=30) is not None
    assert parse_query(text, max_depth=5) is None
    with pytest.raises(HGMError) as err:
        parse(text, Limits(max_depth=5))
    assert err.value.category == "limit-exceeded"


@FUZZ_DEPTH
@given(st.one_of(queries(depth=4).map(lambda case: case.text), st.lists(st.sampled_from(TOKENS), max_size=14).map("".join)),
       st.integers(-2, 0))
def test_a_text_of_at_most_max_depth_characters_reads_as_lark_reads_it_at_that_depth(text, shorter):
    # the reader skips counting the nesting of such a text: each level is a token of its own
    _same(text, max_depth=max(0, len(text) + shorter))


def test_the_densest_nesting_is_read_as_lark_reads_it_at_the_texts_length():
    for text in ("root.where(not not not a)", "nodes.where(a=[[[[1]]]])", "(((#a)))", "#a.where(exists(b.where(c)))"):
        for depth in range(len(text) + 1):
            _same(text, max_depth=depth)


_SIMPLE_NAMES = ["a", "nota", "andy", "true_", "in", "not", "true", "or"]
_SIMPLE_OPS = ["=", "==", "!=", "<", "<=", ">", ">=", "=~", "in", "! =", "=<"]
_SIMPLE_LITERALS = [
    "1", "-3", "007", "1.", "1.5", "-0.25", ".5", "-.5", "1e5", "1.5E-3", "12345678901234567890123", "3.14159265358979323846",
    "'x'", "'it\\'s'", "\"a b\"", "'a\nb'", "''", "'unclosed", "true", "null", "truex", "name", "$p", "[1]", "(1)",
]
_SIMPLE_AROUND = [("", ")"), (" ", " )"), ("\n", ") .count()"), ("", "and b = 1)"), ("", ", b = 1)"), ("", "x)"),
                  (" // c\n", ")"), ("", "")]


def test_a_simple_comparison_reads_as_lark_reads_it():
    # the reader's one-function path for NAME OP LITERAL ")" and everything around its edges
    cases = [("a", op, literal, around) for op in _SIMPLE_OPS for literal in _SIMPLE_LITERALS for around in _SIMPLE_AROUND[:2]]
    cases += [(name, op, literal, around) for name in _SIMPLE_NAMES for around in _SIMPLE_AROUND
              for op, literal in (("=", "1"), ("==", "'x'"), ("<", "-0.25"))]
    for name, op, literal, (before, after) in cases:
        spaced = " " if before else ""
        _same(f"root.children.where({before}{name}{spaced}{op}{spaced}{literal}{after}")


def test_a_simple_comparison_is_read_without_the_general_condition_reader(monkeypatch):
    from hgm_engine.query import fastparse

    def refuse(self):
        raise AssertionError("the general condition reader ran")

    monkeypatch.setattr(fastparse._Reader, "condition", refuse)
    for text in ("#a.b.where(confidence >= 0.5)", "root.x.where( status = 'pending' )", "nodes.where(n != null)[0]"):
        assert _same(text) is not None


def test_parentheses_deeper_than_the_reader_recurses_go_to_lark():
    text = "nodes.where(" + "(" * 400 + "a" + ")" * 400 + ")"
    assert parse_query(text) is None
    assert parse(text) == parse_with_lark(text)




@FUZZ
@given(queries(depth=3))
def test_generated_queries_read_as_lark_reads_them(case):
    _same(case.text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=14))
def test_token_soup_reads_as_lark_reads_it(tokens):
    _same("".join(tokens))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=14))
def test_spaced_token_soup_reads_as_lark_reads_it(tokens):
    _same(" ".join(tokens))


@FUZZ
@given(st.text(alphabet="rot.childen()[]{}:,|=!<>~'\"#$-0159e_ \n/andornti", max_size=40))
def test_text_from_the_grammars_characters_reads_as_lark_reads_it(text):
    _same(text)


@FUZZ
@given(queries(depth=2), st.integers(0, 200), st.sampled_from(TOKENS + ["", " ", "(", ")"]))
def test_a_query_with_a_token_put_in_reads_as_lark_reads_it(case, at, token):
    text = case.text
    at %= len(text) + 1
    _same(text[:at] + token + text[at:])


def test_parse_reads_the_benchmark_queries_without_building_lark(monkeypatch):
    from hgm_engine.query import parser

    monkeypatch.setattr(parser, "_parser", lambda start="start": pytest.fail("Lark was built"))
    for template, _ in QUERIES.values():
        text = template.format(big_root="g1", hub_entity="e1", small_entity="e2", mid_root="g2",
                               chain_result="r1", chain_action="a1", deep_action="a2", first_action="a3")
        parse(text)


def test_the_compliance_texts_are_many():
    assert len(_compliance_texts()) > 50
    assert all(isinstance(t, str) for t in _compliance_texts())
    json.dumps(_compliance_texts())


def test_the_keywords_the_reader_knows_per_state_are_the_parsers():
    # fastparse takes a word for a name except where the LALR state has a keyword terminal
    # for it; the states that take a NAME have exactly these keyword sets (if the grammar
    # changes them, the reader must change with it)
    from hgm_engine.query import parser

    table = parser._parser("start").parser.parser.parser.parse_table  # noqa: SLF001 - Lark's own table
    words = {"WHERE", "OR", "AND", "NOT", "IN", "CONTAINS", "TRUE", "FALSE", "NULL", "EACH", "MUST", "CONSTRAINT",
             "RULE", "ON", "THEN", "PROPAGATE", "DEPTH", "FROM", "TO", "MARK", "AS", "BECAUSE", "SET", "WITH", "SELF",
             "EVENT", "DIRECTION", "DIRTY_STATE"}
    found = {frozenset(set(actions) & words) for actions in table.states.values() if "NAME" in actions}
    assert found == {frozenset(), frozenset({"WHERE"}), frozenset({"TRUE", "FALSE", "NULL"}),
                     frozenset({"NOT", "TRUE", "FALSE", "NULL"})}


def test_importing_the_engine_and_answering_a_query_loads_no_lark():
    import subprocess
    import sys

    code = (
        "import sys, hgm_engine\n"
        "assert 'lark' not in sys.modules, 'imported'\n"
        "hgm_engine.compile(\"root.subgoals[0].actions.where(status = 'pending')\")\n"
        "assert 'lark' not in sys.modules, 'compiled'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
