"""Memory rules: constraints, rule files (triggers, propagation) and the engine that runs them in a commit.
"""

from __future__ import annotations

from hgm_engine.rules.compile import (
    RuleSet,
    Trigger,
    Effect,
    Propagation,
    ConstraintRule,
    parse_rules,
    compile_rules,
)
from hgm_engine.rules.constraints import (
    UserConstraint,
    ConstraintChecker,
    check_full,
)
from hgm_engine.rules.engine import (
    RuleEngine,
)
from hgm_engine.rules.registry import (
    RuleRegistry,
)

__all__ = [
    "RuleSet",
    "Trigger",
    "Effect",
    "Propagation",
    "ConstraintRule",
    "parse_rules",
    "compile_rules",
    "UserConstraint",
    "ConstraintChecker",
    "check_full",
    "RuleEngine",
    "RuleRegistry",
]
