"""The query strategy of the testing kit draws queries for memories whose ids all need
quoting (it sampled ``#ID`` starts from an empty list: the state machine of docs/api.md failed
with "Cannot sample from a length-zero sequence" on a memory holding only ``'a b'``)."""

from __future__ import annotations

from hypothesis import given, settings

from hgm_engine.testing.strategies import queries


@settings(max_examples=150, deadline=None)
@given(queries(ids=["a b", "c d"]))
def test_queries_are_drawn_when_no_id_can_be_written_bare(case):
    assert isinstance(case.text, str) and case.text
