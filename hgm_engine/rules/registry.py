"""The rule sets and user constraints of one memory, and how they are kept in its store.

They are not commits: a constraint is stored under its name (``store.set_constraint``), a rule
file's text under ``rules:NAME`` in the store's meta, and the names of the rule sets, in the
order they were loaded, under ``rule_sets``. Whatever is checked is checked before anything
is stored, so a refused constraint or rule file leaves the store as it was. Other processes
sharing the store see the change at their next catch-up (:meth:`RuleRegistry.sync`).

>>> from hgm_engine import Memory
>>> m = Memory()
>>> _ = m.load_rules("constraint done_has_result: each action where status = 'done' must exists(results)")
>>> sorted(m.constraints()), m.store.get_meta("rule_sets")
(['done_has_result'], '["default"]')
"""

from __future__ import annotations

import json
from typing import Any

from hgm_engine.errors import Problem, RequestError, TransactionRefused
from hgm_engine.rules.compile import RuleSet, parse_rules
from hgm_engine.rules.constraints import ConstraintChecker, UserConstraint
from hgm_engine.rules.engine import RuleEngine
from hgm_engine.txn import TransactionReport, Violation

__all__ = ["RuleRegistry"]


def _fail(category: str, message: str) -> RequestError:
    return RequestError([Problem(category, message)])


class RuleRegistry:
    """The constraints (``checker``) and rule sets (``engine``) of ``memory``, loaded from
    its store by :meth:`sync`. ``memory`` gives the schema, the store and the current state
    (``memory.reading()``, ``memory.graph``) that a new constraint must already hold on.

    >>> from hgm_engine import Memory
    >>> registry = RuleRegistry(Memory())
    >>> registry.add_constraint("facts_have_content", "each fact must has(content)")
    >>> registry.constraints()
    {'facts_have_content': 'each fact must has(content)'}
    """

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.schema = memory.schema
        self.store = memory.store
        self.checker = ConstraintChecker(self.schema)
        self.engine = RuleEngine(self.schema)

    # -- constraints --------------------------------------------------------------------------

    def add_constraint(self, name: str, text: str, *, check_existing: bool = True) -> None:
        """Add a user constraint ``each TYPE [where COND] must COND``; it must already hold
        (every violation is listed otherwise, and nothing is added).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> m.add_constraint("done_has_result", "each action where status = 'done' must exists(results)")
        >>> sorted(m.constraints())
        ['done_has_result']
        """
        constraint = UserConstraint.compile(name, text, self.schema)
        if check_existing:
            violations = self._violations_now([constraint])
            if violations:
                raise TransactionRefused(
                    TransactionReport(False, None, None, None, f"add constraint {name}", violations=tuple(violations))
                )
        self.store.set_constraint(name, text)
        self.checker.add(constraint)

    def remove_constraint(self, name: str) -> None:
        """Remove the user constraint ``name`` (one a rule file added goes with the file)."""
        if name not in self.checker.user:
            raise _fail("unknown-name", f"no constraint named {name!r}")
        self.store.set_constraint(name, None)
        self.checker.remove(name)

    def constraints(self) -> dict[str, str]:
        """User constraints: name → text."""
        return {name: c.text for name, c in self.checker.user.items()}

    def violations(self) -> list[Violation]:
        """Every violation in the current state (normally none)."""
        memory = self.memory
        with memory.reading():
            return self.checker.check_all(memory.graph)

    def _violations_now(self, constraints: list[UserConstraint]) -> list[Violation]:
        memory = self.memory
        with memory.reading():
            return [v for c in constraints for v in c.violations(memory.graph, None)]

    # -- rule sets ----------------------------------------------------------------------------

    def load_rules(self, text: str, name: str = "default") -> RuleSet:
        """Load a rule file (constraints, triggers, propagation) under ``name``, replacing a
        set of that name. Nothing changes unless the whole file is valid, its trigger graph
        has no cycle and its constraints already hold.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> rs = m.load_rules("propagate derived_from backward depth 2")
        >>> [p.edge_type for p in rs.propagations]
        ['derived_from']
        """
        rule_set = parse_rules(text, self.schema)
        previous_set = self.engine.rule_sets.get(name)
        own = {c.name for c in previous_set.constraints} if previous_set else set()
        taken = [c.name for c in rule_set.constraints if c.name in self.checker.user and c.name not in own]
        if taken:
            raise _fail(
                "invalid-argument",
                f"constraint name(s) {', '.join(repr(n) for n in taken)} already in use; rename them in the rule file",
            )
        compiled = [UserConstraint.compile(c.name, c.text, self.schema) for c in rule_set.constraints]
        violations = self._violations_now(compiled)
        if violations:
            raise TransactionRefused(
                TransactionReport(False, None, None, None, f"load rules {name}", violations=tuple(violations))
            )
        previous = self.engine.rule_sets.get(name)
        names = list(self._stored_rule_texts())
        if name not in names:
            names.append(name)
        self.store.set_meta(f"rules:{name}", text)
        self.store.set_meta("rule_sets", json.dumps(names))
        for constraint in previous.constraints if previous else ():
            if constraint.name in self.checker.user:
                self.store.set_constraint(constraint.name, None)
                self.checker.remove(constraint.name)
        for constraint, rule in zip(compiled, rule_set.constraints):
            self.store.set_constraint(rule.name, rule.text)
            self.checker.add(constraint)
        self.engine.set(name, rule_set)
        return rule_set

    def remove_rules(self, name: str) -> None:
        """Unload the rule set ``name``; its constraints go with it."""
        rule_set = self.engine.rule_sets.get(name)
        if rule_set is None:
            raise _fail("unknown-name", f"no rule set named {name!r}")
        for constraint in rule_set.constraints:
            if constraint.name in self.checker.user:
                self.store.set_constraint(constraint.name, None)
                self.checker.remove(constraint.name)
        names = [n for n in self._stored_rule_texts() if n != name]
        self.store.set_meta(f"rules:{name}", None)
        self.store.set_meta("rule_sets", json.dumps(names))
        self.engine.set(name, None)

    def rules(self) -> dict[str, str]:
        """Loaded rule sets: name → text."""
        return {name: rule_set.text for name, rule_set in self.engine.rule_sets.items()}

    # -- what the store holds -----------------------------------------------------------------

    def sync(self) -> None:
        """Constraints and rule sets other processes added or removed (they are not commits);
        on a new registry, everything the store holds."""
        stored = self.store.constraints()
        for name, text in stored.items():
            current = self.checker.user.get(name)
            if current is None or current.text != text:
                self.checker.add(UserConstraint.compile(name, text, self.schema))
        for name in [n for n in self.checker.user if n not in stored]:
            self.checker.remove(name)
        self._load_stored_rules()

    def _load_stored_rules(self) -> None:
        stored = self._stored_rule_texts()
        for name in [n for n in self.engine.rule_sets if n not in stored]:
            self.engine.set(name, None)
        for name, text in stored.items():
            current = self.engine.rule_sets.get(name)
            if current is None or current.text != text:
                self.engine.set(name, parse_rules(text, self.schema))

    def _stored_rule_texts(self) -> dict[str, str]:
        names = json.loads(self.store.get_meta("rule_sets") or "[]")
        return {name: self.store.get_meta(f"rules:{name}") or "" for name in names}
