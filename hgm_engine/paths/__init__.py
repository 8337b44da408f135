"""Paths: trajectories stored as versioned paths, their localization and their rewrite.
"""

from __future__ import annotations

from hgm_engine.paths.pathmemory import (
    PathMemory,
    PathGuards,
    IngestReport,
    IngestProblem,
    InvalidLine,
    read_jsonl,
    record_from_graph,
    PATH_KIND,
    SCENARIO_KIND,
    INDEX_META_KEY,
    REFUSALS,
    resolve_steps,
)

__all__ = [
    "PathMemory",
    "PathGuards",
    "IngestReport",
    "IngestProblem",
    "InvalidLine",
    "read_jsonl",
    "record_from_graph",
    "PATH_KIND",
    "SCENARIO_KIND",
    "INDEX_META_KEY",
    "REFUSALS",
    "resolve_steps",
]
