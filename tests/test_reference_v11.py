"""The reference model's reading of the language's version 1.1 where a differential test
found it wrong (docs/testing.md, "How hgm tests itself"): each test is one disagreement with
the engine, fixed in the model, with the reason the docs give or the reading they leave open."""

from __future__ import annotations

import pytest

from hgm_engine import Memory
from hgm_engine.testing import ModelGraph, ModelMemory
from hgm_engine.testing import search as search_model
from hgm_engine.testing.ops import ModelError

DOC = {"format": "hgm-graph/1", "nodes": [
    {"id": "a", "type": "fact", "content": "hotel closed"},
    {"id": "b", "type": "fact", "content": "hotel hotel museum tickets"},
    {"id": "c", "type": "fact", "content": "the of"},
    {"id": "d", "type": "fact"},
    {"id": "e", "type": "fact", "content": "closed museum", "tags": ["hotel"]}], "edges": []}


def test_a_node_without_words_is_no_document_for_bm25():
    """N and the average length count the nodes that have words: c (stop words only) and d
    (no text) leave the scores alone, and the order of b and e follows from that."""
    graph = ModelGraph.from_document(DOC)
    assert round(search_model.scores(graph, "tickets")["b"][1], 6) == 0.86313
    assert search_model.ranked(graph, "museum hotel hotel") == ["e", "b", "a"]
    hits = Memory.from_document(DOC).search("museum hotel hotel", limit=None)
    assert [(h["id"], h["score"]) for h in hits] == [
        (node, round(search_model.scores(graph, "museum hotel hotel")[node][1], 6)) for node in ("e", "b", "a")]


def test_a_word_holding_a_digit_is_not_stemmed():
    assert search_model.terms("2rooms rooms x²rooms") == ["2rooms", "room", "x²rooms"]


def test_camel_case_is_split_at_ascii_letters_only():
    assert search_model.terms("caféBar GetMovie") == ["cafébar", "getmovi", "get", "movi"]


def test_invalidate_refuses_a_by_whose_valid_to_comes_before_at():
    """time.md: a bound invalidate writes must be in order; by's new valid_from is one."""
    model = ModelMemory()
    model.load({"format": "hgm-graph/1", "nodes": [
        {"id": "old", "type": "fact"}, {"id": "new", "type": "fact", "valid_to": "2026-01-01"}], "edges": []})
    with pytest.raises(ModelError) as refused:
        model.apply({"ops": [{"op": "invalidate", "id": "old", "at": "2026-06-01", "by": "new"}]})
    assert refused.value.category == "invalid-value"
    assert "valid_from" not in model.nodes["new"][1]

