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
    parse_rule_file,
    decode_string,
)
from hgm_engine.query.analyze import (
    analyze,
    analyze_constraint,
    analyze_rule_file,
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
from hgm_engine.query.limits import (
    limit_exceeded,
)
from hgm_engine.query.regexcheck import (
    regex_problem,
    regex_hazard,
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
    "parse_rule_file",
    "decode_string",
    "analyze",
    "analyze_constraint",
    "analyze_rule_file",
    "Analysis",
    "plan",
    "describe",
    "QueryPlan",
    "optimize",
    "limit_exceeded",
    "regex_problem",
    "regex_hazard",
]
