"""hgm: hierarchical graph memory for LLM agents.

>>> import hgm_engine
>>> m = hgm_engine.Memory.from_document({"format": "hgm-graph/1",
...     "nodes": [{"id": "g", "type": "goal"}], "edges": []})
>>> m.query("root").ids
['g']
>>> hgm_engine.search("nodes.count()", m).value
1
"""

from __future__ import annotations

from typing import Any, Mapping

from hgm_engine.errors import (
    ConflictError,
    GraphFileError,
    HGMError,
    LocalizationError,
    PathError,
    Problem,
    QueryAnalysisError,
    QueryExecutionError,
    QuerySyntaxError,
    RequestError,
    RewriteProposalError,
    RuleError,
    SchemaError,
    SearchError,
    ServiceError,
    StoreError,
    TransactionError,
    TransactionRefused,
)
from hgm_engine.query import Limits
from hgm_engine.memory import Memory
from hgm_engine.memories import MemoryStore, open_store
from hgm_engine.query import CompiledQuery, QueryResult, compile
from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.rules import parse_rules
from hgm_engine.model import Change, Closure, EdgeRule, Hop
from hgm_engine.rules import UserConstraint
from hgm_engine.model import Commit
from hgm_engine.txn import HistoricalMemory, Transaction, TransactionReport, Violation

__all__ = [
    "Memory",
    "connect",
    "MemoryStore",
    "open_store",
    "compile",
    "search",
    "CompiledQuery",
    "QueryResult",
    "Schema",
    "DEFAULT_SCHEMA",
    "Limits",
    "HGMError",
    "Problem",
    "QuerySyntaxError",
    "QueryAnalysisError",
    "QueryExecutionError",
    "GraphFileError",
    "SchemaError",
    "TransactionError",
    "ConflictError",
    "TransactionRefused",
    "RuleError",
    "RequestError",
    "StoreError",
    "PathError",
    "LocalizationError",
    "SearchError",
    "RewriteProposalError",
    "ServiceError",
    "parse_rules",
    # paths and the LLM rewrite (loaded on first use, see __getattr__)
    "PathGuards",
    "read_jsonl",
    "propose_rewrite",
    "rewrite_with_llm",
    "build_prompt",
    "parse_answer",
    "retry_message",
    "ScriptedClient",
    "Transaction",
    "TransactionReport",
    "Violation",
    "Change",
    "Commit",
    "HistoricalMemory",
    "Hop",
    "Closure",
    "EdgeRule",
    "UserConstraint",
]

__version__ = "0.1.0"

# Names whose packages cost start-up time that a memory never using paths or a model should
# not pay (the path index, the LLM loop): each is imported on first use, as Memory.path_memory is.
_ON_FIRST_USE = {
    "PathGuards": "hgm_engine.paths",
    "read_jsonl": "hgm_engine.paths",
    "propose_rewrite": "hgm_engine.llm",
    "rewrite_with_llm": "hgm_engine.llm",
    "build_prompt": "hgm_engine.llm",
    "parse_answer": "hgm_engine.llm",
    "retry_message": "hgm_engine.llm",
    "ScriptedClient": "hgm_engine.llm",
    "connect": "hgm_engine.client",
}


def __getattr__(name: str) -> Any:
    """``hgm_engine.PathGuards`` and the other names of ``_ON_FIRST_USE``, imported when first
    asked for (PEP 562).

    >>> from hgm_engine import PathGuards
    >>> PathGuards().max_versions
    10
    """
    package = _ON_FIRST_USE.get(name)
    if package is None:
        raise AttributeError(f"module 'hgm_engine' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(package), name)
    globals()[name] = value
    return value


def search(
    expr: str,
    memory: "Memory | Mapping[str, Any]",
    *,
    focus: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> QueryResult:
    """Evaluate ``expr`` on a :class:`Memory` or a graph document (a dict), like ``jmespath.search``.

    >>> doc = {"format": "hgm-graph/1", "nodes": [{"id": "a", "type": "fact", "ok": True}], "edges": []}
    >>> search("nodes.where(ok)", doc).ids
    ['a']
    """
    if not isinstance(memory, Memory):
        memory = Memory.from_document(memory)
    return memory.query(expr, focus=focus, params=params)
