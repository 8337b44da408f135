"""Memory rules: constraints, rule files (triggers, propagation) and the engine that runs them in a commit;
the schema stored with a memory and the checks of a schema change (schemas); the planner's views (views).
"""

from __future__ import annotations

from hgm_engine.rules.compile import (
    CompiledRuleSet,
    RuleSet,
    Trigger,
    Effect,
    Propagation,
    ConstraintRule,
    parse_rules,
    compile_rules,
    compile_rule_file,
)
from hgm_engine.rules.constraints import (
    UserConstraint,
    ConstraintChecker,
    check_full,
)
from hgm_engine.rules.engine import (
    MAX_ROUNDS,
    RuleEngine,
)
from hgm_engine.rules.registry import (
    BrokenObject,
    RuleRegistry,
)
from hgm_engine.rules.schemas import (
    SCHEMA_META,
    MAX_SCHEMA_PROBLEMS,
    stored_schema,
    schema_problems,
    schema_text,
    SchemaKeeper,
)
from hgm_engine.rules.views import (
    FRONTIER_QUERY,
    PlannerViews,
)

__all__ = [
    "CompiledRuleSet",
    "RuleSet",
    "Trigger",
    "Effect",
    "Propagation",
    "ConstraintRule",
    "parse_rules",
    "compile_rules",
    "compile_rule_file",
    "UserConstraint",
    "ConstraintChecker",
    "check_full",
    "MAX_ROUNDS",
    "RuleEngine",
    "BrokenObject",
    "RuleRegistry",
    "SCHEMA_META",
    "MAX_SCHEMA_PROBLEMS",
    "stored_schema",
    "schema_problems",
    "schema_text",
    "SchemaKeeper",
    "FRONTIER_QUERY",
    "PlannerViews",
]
