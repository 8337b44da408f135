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
from hgm_engine.testing.model import ModelError, ModelMemory
from hgm_engine.testing.strategies import QueryCase

__all__ = [
    "engine_answer", "model_answer", "Answer", "report_summary",
    "engine_apply", "model_apply", "engine_revert", "model_revert",
]

Answer = tuple  # (kind, value) or ("error", [categories])


def engine_answer(case: QueryCase, doc: Mapping[str, Any], schema: Schema = DEFAULT_SCHEMA) -> Answer:
    """The engine's answer on the graph document ``doc`` (built without constraint checks, so
    any shape the graph file allows can be asked about). The query runs twice: a filter's
    first call runs its closures, later ones its generated loop (``TieredFilter``); when the
    two answers differ, the answer says so."""
    try:
        compiled = compile(case.text, schema)
        graph = graph_from_document(doc, schema)
    except HGMError as err:
        return ("error", [problem.category for problem in err.problems])
    answers = []
    for _ in range(2):
        try:
            result = compiled.run(graph, focus=case.focus, params=case.params)
            answers.append((result.kind, result.value))
        except HGMError as err:
            answers.append(("error", [problem.category for problem in err.problems]))
    if answers[0] != answers[1]:
        return ("first and second runs differ", answers)
    return answers[0]


def model_answer(case: QueryCase, doc: Mapping[str, Any], schema: Schema = DEFAULT_SCHEMA) -> Answer:
    """The reference model's answer on the same document."""
    try:
        answer = evaluate(case.text, ModelGraph.from_document(doc), schema, focus=case.focus, params=case.params)
    except ModelQueryError as err:
        return ("error", err.categories)
    return (answer.kind, answer.value)


def report_summary(report: Any) -> dict[str, Any]:
    """The parts of an engine :class:`~hgm_engine.TransactionReport` a differential test
    compares, in the shape of :meth:`ModelReport.summary`."""
    doc = report.to_json()
    return {
        "committed": doc["committed"], "t": doc["t"], "changes": doc["changes"],
        "fired_rules": doc["fired_rules"], "dirtied": doc["dirtied"], "cleared": doc.get("cleared", []),
        "violations": sorted({(v["constraint"], v["node"]) for v in doc["violations"]}),
        "created": doc.get("created", []),
    }


def engine_apply(memory: Any, doc: Mapping[str, Any], *, dry_run: bool = False) -> Any:
    """``memory.apply(doc)`` as a comparable value: the report summary, or
    ``("error", category)`` when the transaction cannot apply."""
    try:
        return report_summary(memory.apply(doc, dry_run=dry_run))
    except HGMError as err:
        return ("error", err.category)


def model_apply(model: ModelMemory, doc: Mapping[str, Any], *, dry_run: bool = False) -> Any:
    """The same for the reference model (which changes only when the engine would commit)."""
    try:
        return model.apply(doc, dry_run=dry_run).summary()
    except ModelError as err:
        return ("error", err.category)


def engine_revert(memory: Any, t: int) -> Any:
    try:
        return report_summary(memory.revert(t))
    except HGMError as err:
        return ("error", err.category)


def model_revert(model: ModelMemory, t: int) -> Any:
    try:
        return model.revert(t).summary()
    except ModelError as err:
        return ("error", err.category)
