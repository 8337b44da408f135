"""Optimizer: rewrite a logical plan with rules that keep its meaning and make it cheaper.

Each rule is a function from a path plan to a new path plan, or None when it does not apply
(as in sqlglot's optimizer). ``optimize`` applies them to every path, including subqueries
and the relative paths inside ``exists``/``count``, and records which rules fired.

>>> from hgm_engine.parser import parse
>>> from hgm_engine.analyze import analyze
>>> from hgm_engine.plan import plan, describe
>>> from hgm_engine.schema import DEFAULT_SCHEMA
>>> p = optimize(plan(analyze(parse("nodes.where(type = 'fact', confidence > 0.5)"), DEFAULT_SCHEMA), DEFAULT_SCHEMA))
>>> p.rules
('type_index',)
>>> print("\\n".join(describe(p)))
scan type index 'fact'
  filter confidence > 0.5
"""

from __future__ import annotations

from .rules import RULES, optimize

__all__ = ["optimize", "RULES"]
