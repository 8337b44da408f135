"""Ask the engine and the reference model the same question and put the answers side by side.

An answer is a plain tuple: ``(kind, value)`` for a result (``nodes``, ``count``, ``exists``,
``paths``), ``("error", [categories])`` for an error raised before running (a missing focus, a
parameter of the wrong kind). Two answers agree when the tuples are equal.

>>> from hgm_engine.testing.strategies import QueryCase
>>> doc = {"format": "hgm-graph/1", "nodes": [{"id": "g", "type": "goal"}], "edges": []}
>>> case = QueryCase("root.count()")
>>> engine_answer(case, doc) == model_answer(case, doc) == ("count", 1)
True
>>> engine_answer(QueryCase("focus"), doc)
('error', ['missing-focus'])
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.errors import HGMError
from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.query import compile
from hgm_engine.store import graph_from_document
from hgm_engine.testing.graphmodel import ModelGraph
from hgm_engine.testing.interpreter import ModelQueryError, evaluate
from hgm_engine.testing.strategies import QueryCase

__all__ = ["engine_answer", "model_answer", "Answer"]

Answer = tuple  # (kind, value) or ("error", [categories])


def engine_answer(case: QueryCase, doc: Mapping[str, Any], schema: Schema = DEFAULT_SCHEMA) -> Answer:
    """The engine's answer on the graph document ``doc`` (built without constraint checks, so
    any shape the graph file allows can be asked about)."""
    try:
        compiled = compile(case.text, schema)
        result = compiled.run(graph_from_document(doc, schema), focus=case.focus, params=case.params)
    except HGMError as err:
        return ("error", [problem.category for problem in err.problems])
    return (result.kind, result.value)


def model_answer(case: QueryCase, doc: Mapping[str, Any], schema: Schema = DEFAULT_SCHEMA) -> Answer:
    """The reference model's answer on the same document."""
    try:
        answer = evaluate(case.text, ModelGraph.from_document(doc), schema, focus=case.focus, params=case.params)
    except ModelQueryError as err:
        return ("error", err.categories)
    return (answer.kind, answer.value)
