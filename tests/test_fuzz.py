"""Fuzzing the front end: any text gives a value or an hgm error, never another exception."""

from __future__ import annotations

import functools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hgm_engine import HGMError, Memory

from tests.conftest import OWN_COMPLIANCE

TOKENS = [
    "root", "nodes", "focus", "current_goal", "#trip", "#a1", 'goal#"x y"', "#$p", "$p", "$ids",
    ".", "..", "children", "subgoals", "actions", "descendants", "ancestors", "siblings", "latest",
    "versions", "related_facts", "parent", "next", "following", "out", "in", "both", "where",
    "count", "exists", "paths", "first", "last", "limit", "sort_by", "has", "frob",
    "(", ")", "[", "]", "{", "}", ",", ":", "|", "=", "==", "!=", "<", "<=", ">", ">=", "=~",
    "and", "or", "not", "contains", "true", "false", "null", "'done'", '"x"', "'('", "0", "1",
    "-1", "2.5", "{1,}", "{0,2}", "{3,1}", "status", "type", "'goal'", "parent_of", "related_to",
    " ", "\n", "\t", "'\\d+'", "#", "$",
]


@functools.lru_cache(maxsize=1)
def _memory() -> Memory:
    return Memory.from_file(OWN_COMPLIANCE / "research.graph.json")


def _run(text: str) -> None:
    try:
        result = _memory().query(text, focus="a1", params={"p": "g1", "ids": ["a1", "s1"]})
    except HGMError as err:
        assert err.category
        for problem in err.problems:
            if problem.line is not None:
                lines = text.split("\n")
                assert 1 <= problem.line <= len(lines), (text, problem)
                assert 1 <= problem.column <= len(lines[problem.line - 1]) + 1, (text, problem)
        return
    assert result.kind in ("nodes", "count", "exists", "paths")


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(max_size=60))
def test_arbitrary_text_gives_a_value_or_an_hgm_error(text):
    _run(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=14))
def test_token_soup_gives_a_value_or_an_hgm_error(tokens):
    _run("".join(tokens))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=14))
def test_spaced_token_soup_gives_a_value_or_an_hgm_error(tokens):
    _run(" ".join(tokens))


# -- deep and hostile shapes (issue 12): nesting, big numbers, regular expressions -------------

CONDITION_WRAPPERS = [
    ("not ", ""),
    ("(", ")"),
    ("exists(children.where(", "))"),
    ("count(children.where(", ")) > 0"),
    ("(x = 1 or ", ")"),
    ("(x = 1 and ", ")"),
    ("(", ") = true"),
    ("x in [", "]"),
]
QUERY_WRAPPERS = [("(", ")"), ("(", " | #a1)"), ("(", ").children"), ("(", ")[0]")]
LEAVES = ["ok", "status = 'done'", "x in [[1], [2, [3]]]", "content =~ 'a+b'", "99999999999999999999999 > x"]


def _wrapped(inner: str, wrappers) -> str:
    for prefix, suffix in wrappers:
        inner = prefix + inner + suffix
    return inner


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(QUERY_WRAPPERS), max_size=80),
    st.lists(st.sampled_from(CONDITION_WRAPPERS), max_size=150),
    st.sampled_from(LEAVES),
)
def test_deep_nesting_gives_a_value_or_an_hgm_error(query_wrappers, condition_wrappers, leaf):
    condition = _wrapped(leaf, condition_wrappers)
    if condition.startswith("x in [") or not condition_wrappers or condition_wrappers[-1][0] == "x in [":
        condition = f"({condition})"
    _run(_wrapped(f"nodes.where({condition})", query_wrappers))


@FUZZ
@given(st.integers(min_value=1, max_value=6000), st.sampled_from(["root[{}]", "root[:{}]", "root.children{{{}}}", "nodes.where(x = -{})", "root.limit({})"]))
def test_integers_of_any_length_give_a_value_or_an_hgm_error(digits, template):
    _run(template.format("9" * digits))


REGEX_ALPHABET = "a()[]{}|*+?\\^$.,:-=!<>#0123456789xPpgeid&RV "


@FUZZ
@given(st.text(alphabet=REGEX_ALPHABET, max_size=40))
def test_any_pattern_gives_a_value_or_an_hgm_error(pattern):
    from hgm_engine.query import regex_problem

    problem = regex_problem(pattern)
    assert problem is None or problem[0] in ("invalid-regex", "limit-exceeded")
    literal = pattern.replace("\\", "\\\\").replace("'", "\\'")
    _run(f"nodes.where(content =~ '{literal}')")
    _run_with_params("nodes.where(content =~ $p)", {"p": pattern})


def _run_with_params(text: str, params: dict) -> None:
    try:
        _memory().query(text, params=params)
    except HGMError as err:
        assert err.category
