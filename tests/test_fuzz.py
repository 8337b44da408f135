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
