"""Memory rules: constraints, rule files (triggers, propagation) and the engine that runs them in a commit.
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
]
