"""The query pipeline: text -> syntax -> analysis -> logical plan -> optimizer -> executor.

``pipeline`` strings the stages together (``compile``); each stage is one module with one verb.
"""

from __future__ import annotations

from hgm_engine.query.pipeline import (
    compile,
    CompiledQuery,
    QueryCache,
    QueryResult,
    run_query,
    Limits,
)
from hgm_engine.query.executor import (
    DEFAULT_LIMITS,
    Program,
    build,
)
from hgm_engine.query.parser import (
    parse,
    parse_constraint,
    decode_string,
)
from hgm_engine.query.analyze import (
    analyze,
    Analysis,
)
from hgm_engine.query.plan import (
    plan,
    describe,
    QueryPlan,
)
from hgm_engine.query.optimizer import (
    optimize,
)

__all__ = [
    "compile",
    "CompiledQuery",
    "QueryCache",
    "QueryResult",
    "run_query",
    "Limits",
    "DEFAULT_LIMITS",
    "Program",
    "build",
    "parse",
    "parse_constraint",
    "decode_string",
    "analyze",
    "Analysis",
    "plan",
    "describe",
    "QueryPlan",
    "optimize",
]
