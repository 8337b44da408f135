"""Transactions: ops and their application to an overlay (ops), reports (report), the
transaction builder (builder), the commit pipeline (commit), the state of a memory and its
locks (sync), history (history), valid time (validity), summaries and the level verbs
(summary, rollup), forgetting (forget).
"""

from __future__ import annotations

from hgm_engine.txn.ops import (
    OpContext,
    AddNode,
    UpdateNode,
    DeleteNode,
    AddEdge,
    UpdateEdge,
    DeleteEdge,
    ReplaceBranch,
    Confirm,
    Invalidate,
    INVALIDATED_REASON,
    PlanNode,
    TransactionDoc,
    parse_transaction,
    parse_op,
    apply_op,
    orphan_violations,
    MARK_ATTRS,
    NODE_KEYS,
    EDGE_KEYS,
    MAX_OPS,
    MAX_PLAN_DEPTH,
)
from hgm_engine.txn.report import (
    Violation,
    TransactionReport,
    change_to_json,
)
from hgm_engine.txn.history import (
    historical_view,
    net_changes,
    EmptyView,
    ViewCache,
    node_histories,
    MemoryHistory,
    HistoricalMemory,
)
from hgm_engine.txn.sync import (
    ReadWriteLock,
    MemoryState,
)
from hgm_engine.txn.commit import (
    CommitPipeline,
    Build,
    ops_builder,
)
from hgm_engine.txn.builder import (
    Transaction,
    OpMethods,
)

from hgm_engine.txn.validity import (
    facts_about,
    MAX_FACTS,
)

from hgm_engine.txn.summary import (
    SUMMARY_KIND,
    SUMMARIZES,
    LEVELS,
    MAX_SUMMARIZED,
    MAX_ITEMS,
    SummaryDraft,
    level_of,
    is_summary,
    subtree,
    extract,
    summary_id,
    write_summary,
)
from hgm_engine.txn.rollup import (
    LevelVerbs,
    MAX_PROMPT_EVENTS,
)
from hgm_engine.txn.forget import (
    purge_nodes,
    ForgetVerbs,
)

__all__ = [
    "OpContext",
    "Violation",
    "AddNode",
    "UpdateNode",
    "DeleteNode",
    "AddEdge",
    "UpdateEdge",
    "DeleteEdge",
    "ReplaceBranch",
    "Confirm",
    "Invalidate",
    "INVALIDATED_REASON",
    "PlanNode",
    "TransactionDoc",
    "parse_transaction",
    "parse_op",
    "apply_op",
    "orphan_violations",
    "MARK_ATTRS",
    "NODE_KEYS",
    "EDGE_KEYS",
    "MAX_OPS",
    "MAX_PLAN_DEPTH",
    "TransactionReport",
    "change_to_json",
    "historical_view",
    "net_changes",
    "EmptyView",
    "ViewCache",
    "node_histories",
    "MemoryHistory",
    "HistoricalMemory",
    "ReadWriteLock",
    "MemoryState",
    "CommitPipeline",
    "Build",
    "ops_builder",
    "Transaction",
    "facts_about",
    "MAX_FACTS",
    "SUMMARY_KIND",
    "SUMMARIZES",
    "LEVELS",
    "MAX_SUMMARIZED",
    "MAX_ITEMS",
    "SummaryDraft",
    "level_of",
    "is_summary",
    "subtree",
    "extract",
    "summary_id",
    "write_summary",
    "LevelVerbs",
    "MAX_PROMPT_EVENTS",
    "purge_nodes",
    "ForgetVerbs",
    "OpMethods",
]
