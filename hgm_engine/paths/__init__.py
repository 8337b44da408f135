"""Paths: trajectories stored as versioned paths, their localization and their rewrite.

:class:`PathMemory` (``memory.path_memory``) is the facade ``Memory`` delegates to; the jobs
behind it have a module each: ``records`` (paths as the graph holds them), ``edits`` (edit
ops: :func:`resolve_steps`), ``ingest``, ``versions`` (rewrite, rollback, outcome, reset,
:class:`PathGuards`), ``documents``, ``expand`` and ``keeper`` (the path index's upkeep);
``localize`` is the path index itself.
"""

from __future__ import annotations

from hgm_engine.paths.edits import resolve_steps
from hgm_engine.paths.ingest import IngestProblem, IngestReport, InvalidLine, read_jsonl
from hgm_engine.paths.keeper import INDEX_META_KEY
from hgm_engine.paths.pathmemory import PathMemory
from hgm_engine.paths.records import PATH_KIND, SCENARIO_KIND, record_from_graph
from hgm_engine.paths.versions import REFUSALS, PathGuards

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
