"""The rule sets and user constraints of one memory, and how they are kept in its store.

They are not commits: a constraint is stored under its name (``store.set_constraint``), a rule
file's text under ``rules:NAME`` in the store's meta, and the names of the rule sets, in the
order they were loaded, under ``rule_sets``. Whatever is checked is checked — and compiled —
before anything is stored, and a change is stored in one store transaction
(``store.write()``), so a refused constraint or rule file, or a store that fails halfway,
leaves the store as it was. Other processes sharing the store see the change at their next
catch-up (:meth:`RuleRegistry.sync`).

What the store holds is compiled when the memory opens, and a stored object that does not
compile (written by another version of hgm or another program, or over the query compiler's
limits) never stops the memory from opening: it is left inactive and listed by
:meth:`RuleRegistry.broken` with its error, until it is removed or replaced.

>>> from hgm_engine import Memory
>>> m = Memory()
>>> _ = m.load_rules("constraint done_has_result: each action where status = 'done' must exists(results)")
>>> sorted(m.constraints()), m.store.get_meta("rule_sets")
(['done_has_result'], '["default"]')
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from hgm_engine.errors import HGMError, Problem, RequestError, RuleError, TransactionRefused
from hgm_engine.query import Limits, parse_rule_file
from hgm_engine.query import syntax as S
from hgm_engine.model import name_problem
from hgm_engine.rules.compile import CompiledRuleSet, RuleSet, compile_rule_file, stored_text_problem
from hgm_engine.rules.constraints import UNCOMPILABLE, ConstraintChecker, UserConstraint, uncompilable_problem
from hgm_engine.rules.engine import MAX_ROUNDS, RuleEngine
from hgm_engine.txn import TransactionReport, Violation

__all__ = ["RuleRegistry", "BrokenObject"]


def _fail(category: str, message: str) -> RequestError:
    return RequestError([Problem(category, message)])


def _refuse(problem: Problem | None) -> None:
    """Raise ``problem`` (a name no store can hold) as a request error, if there is one."""
    if problem is not None:
        raise RequestError([problem])


@attrs.frozen
class BrokenObject:
    """A stored object that does not compile, so it is inactive: a ``constraint``, a
    ``rule set``, or the ``rule-set list`` (the ``rule_sets`` key, when it is not a JSON list
    of names). ``error`` says why (its category, and line and column in ``text``);
    ``constraints`` are the constraint names a broken rule set declares, when its text
    parses that far (removing the set removes them too).

    >>> from hgm_engine import Memory
    >>> from hgm_engine.store import InMemoryStore
    >>> store = InMemoryStore()  # as another program might have left it
    >>> store.set_constraint("bad", "each fakt must has(content)")
    >>> m = Memory(store=store)
    >>> [broken] = m.broken()
    >>> broken.kind, broken.name, broken.error.category, broken.error.column
    ('constraint', 'bad', 'unknown-name', 6)
    >>> print(broken)
    constraint 'bad' is broken and inactive: unknown-name at line 1, column 6: unknown node type 'fakt'; did you mean 'fact'?
    """

    kind: str  # constraint | rule set | rule-set list
    name: str
    text: Any = attrs.field(repr=False)  # what the store holds (normally text)
    error: HGMError = attrs.field(eq=False)
    constraints: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind} {self.name!r} is broken and inactive: {self.error.render().splitlines()[0]}"

    def to_json(self) -> dict[str, Any]:
        """``{"kind", "name", "text", "error": {category, message, line, column, ...}}``."""
        return {
            "kind": self.kind,
            "name": self.name,
            "text": self.text if isinstance(self.text, str) else repr(self.text),
            "error": self.error.to_json()["error"],
        }


def _stored_error(exc: Exception, text: Any) -> HGMError:
    """Why a stored object does not compile, as an hgm error (whatever the compiler raised)."""
    if isinstance(exc, HGMError):
        return exc
    if isinstance(exc, UNCOMPILABLE):
        problem = uncompilable_problem(exc)
    else:
        problem = Problem("internal", f"cannot compile it: {type(exc).__name__}: {exc}")
    return RuleError([problem], text if isinstance(text, str) else None)


# Reading only the names a stored file declares: nesting does not matter for that (the parser
# walks its tree without recursion), so a file refused for its depth still names its constraints.
_NAMES_ONLY = Limits(max_depth=1_000_000)


def _declared_constraints(text: Any) -> tuple[str, ...]:
    """The constraint names a rule file declares, when it parses (else none)."""
    try:
        rule_file = parse_rule_file(text, _NAMES_ONLY)
    except Exception:  # noqa: BLE001 - a broken file: whatever the parser raises, it names nothing
        return ()
    return tuple(s.name for s in rule_file.statements if isinstance(s, S.ConstraintStatement))


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

    def __init__(self, memory: Any, *, max_rounds: int = MAX_ROUNDS) -> None:
        self.memory = memory
        self.schema = memory.schema
        self.store = memory.store
        self.checker = ConstraintChecker(self.schema)
        self.engine = RuleEngine(self.schema, max_rounds=max_rounds)
        # (kind, name) -> what is stored but does not compile
        self._broken: dict[tuple[str, str], BrokenObject] = {}

    # -- constraints --------------------------------------------------------------------------

    def add_constraint(self, name: str, text: str, *, check_existing: bool = True) -> None:
        """Add a user constraint ``each TYPE [where COND] must COND``; it must already hold
        (every violation is listed otherwise, and nothing is added). A constraint of that
        name, broken or not, is replaced.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> m.add_constraint("done_has_result", "each action where status = 'done' must exists(results)")
        >>> sorted(m.constraints())
        ['done_has_result']
        """
        if isinstance(name, str) and name:
            _refuse(name_problem(name, "name", "a constraint name"))
        if isinstance(text, str):
            found = stored_text_problem(text, "a constraint")
            if found is not None:
                raise RuleError([found], text)
        constraint = UserConstraint.compile(name, text, self.schema)
        if check_existing:
            violations = self._violations_now([constraint])
            if violations:
                raise TransactionRefused(
                    TransactionReport(False, None, None, None, f"add constraint {name}", violations=tuple(violations))
                )
        self.store.set_constraint(name, text)
        self.checker.add(constraint)
        self._broken.pop(("constraint", name), None)

    def remove_constraint(self, name: str) -> None:
        """Remove the user constraint ``name`` (one a rule file added goes with the file), or
        a broken one."""
        if name not in self.checker.user and ("constraint", name) not in self._broken:
            raise _fail("unknown-name", f"no constraint named {name!r}")
        self.store.set_constraint(name, None)
        if name in self.checker.user:
            self.checker.remove(name)
        self._broken.pop(("constraint", name), None)

    def constraints(self) -> dict[str, str]:
        """User constraints: name → text (the ones in force; :meth:`broken` lists the others)."""
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
        set of that name (a broken one too). Nothing changes unless the whole file is valid
        and compiles, its trigger graph has no cycle and its constraints already hold; the
        file, its constraints and the list of rule sets are then stored in one transaction.

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> rs = m.load_rules("propagate derived_from backward depth 2")
        >>> [p.edge_type for p in rs.propagations]
        ['derived_from']
        """
        if not isinstance(name, str) or not name:
            raise _fail("invalid-argument", "a rule set needs a non-empty name")
        _refuse(name_problem(name, "name", "a rule set name"))
        compiled = compile_rule_file(text, self.schema)
        rule_set = compiled.rule_set
        own = set(self._owned_constraints(name))
        in_use = set(self.checker.user) | {n for kind, n in self._broken if kind == "constraint"}
        taken = [c.name for c in rule_set.constraints if c.name in in_use and c.name not in own]
        if taken:
            raise _fail(
                "invalid-argument",
                f"constraint name(s) {', '.join(repr(n) for n in taken)} already in use; rename them in the rule file",
            )
        violations = self._violations_now(list(compiled.constraints))
        if violations:
            raise TransactionRefused(
                TransactionReport(False, None, None, None, f"load rules {name}", violations=tuple(violations))
            )
        dropped = [n for n in own if self._constraint_known(n)]
        with self.store.write():  # all of it or none of it
            names = self._stored_names()[0]
            if name not in names:
                names.append(name)
            self.store.set_meta(f"rules:{name}", text)
            self.store.set_meta("rule_sets", json.dumps(names))
            for constraint_name in dropped:
                self.store.set_constraint(constraint_name, None)
            for rule in rule_set.constraints:
                self.store.set_constraint(rule.name, rule.text)
        self._forget_constraints(dropped)
        self._activate(name, compiled)
        self._broken.pop(("rule-set list", "rule_sets"), None)
        return rule_set

    def remove_rules(self, name: str) -> None:
        """Unload the rule set ``name``, or a broken one; its constraints go with it."""
        if name not in self.engine.rule_sets and ("rule set", name) not in self._broken:
            raise _fail("unknown-name", f"no rule set named {name!r}")
        dropped = [n for n in self._owned_constraints(name) if self._constraint_known(n)]
        with self.store.write():  # all of it or none of it
            for constraint_name in dropped:
                self.store.set_constraint(constraint_name, None)
            names = [n for n in self._stored_names()[0] if n != name]
            self.store.set_meta(f"rules:{name}", None)
            self.store.set_meta("rule_sets", json.dumps(names))
        self._forget_constraints(dropped)
        self.engine.set(name, None)
        self._broken.pop(("rule set", name), None)
        self._broken.pop(("rule-set list", "rule_sets"), None)

    def rules(self) -> dict[str, str]:
        """Loaded rule sets: name → text (the active ones; :meth:`broken` lists the others)."""
        return {name: rule_set.text for name, rule_set in self.engine.rule_sets.items()}

    def broken(self) -> list["BrokenObject"]:
        """What the store holds that does not compile, and is therefore inactive: each with
        its kind, name, text and error. Remove it (``remove_constraint``, ``remove_rules``) or
        replace it (``add_constraint``, ``load_rules`` under its name). Empty normally.

        >>> from hgm_engine import Memory
        >>> Memory().broken()
        []
        """
        return list(self._broken.values())

    def _owned_constraints(self, name: str) -> tuple[str, ...]:
        loaded = self.engine.rule_sets.get(name)
        if loaded is not None:
            return tuple(c.name for c in loaded.constraints)
        broken = self._broken.get(("rule set", name))
        return broken.constraints if broken is not None else ()

    def _constraint_known(self, name: str) -> bool:
        return name in self.checker.user or ("constraint", name) in self._broken

    def _forget_constraints(self, names: list[str]) -> None:
        for constraint_name in names:
            if constraint_name in self.checker.user:
                self.checker.remove(constraint_name)
            self._broken.pop(("constraint", constraint_name), None)

    def _activate(self, name: str, compiled: CompiledRuleSet) -> None:
        for constraint in compiled.constraints:
            self.checker.add(constraint)
            self._broken.pop(("constraint", constraint.name), None)
        self.engine.set(name, compiled.rule_set, compiled.triggers)
        self._broken.pop(("rule set", name), None)

    # -- what the store holds -----------------------------------------------------------------

    def sync(self) -> None:
        """Constraints and rule sets other processes added or removed (they are not commits);
        on a new registry, everything the store holds. What does not compile is left inactive
        and listed by :meth:`broken` (and not compiled again until its text changes)."""
        broken: dict[tuple[str, str], BrokenObject] = {}
        stored = self.store.constraints()
        for name, text in stored.items():
            current = self.checker.user.get(name)
            if current is not None and current.text == text:
                continue
            known = self._broken.get(("constraint", name))
            if known is not None and known.text == text:
                broken[("constraint", name)] = known
                continue
            try:
                constraint = UserConstraint.compile(name, text, self.schema)
            except Exception as exc:  # noqa: BLE001 - nothing stored may stop a memory from opening
                if current is not None:
                    self.checker.remove(name)
                broken[("constraint", name)] = BrokenObject("constraint", name, text, _stored_error(exc, text))
                continue
            self.checker.add(constraint)
        for name in [n for n in self.checker.user if n not in stored]:
            self.checker.remove(name)
        names, problem = self._stored_names()
        if problem is not None:
            broken[("rule-set list", "rule_sets")] = problem
        texts = {name: self.store.get_meta(f"rules:{name}") or "" for name in names}
        for name in [n for n in self.engine.rule_sets if n not in texts]:
            self.engine.set(name, None)
        for name, text in texts.items():
            current = self.engine.rule_sets.get(name)
            if current is not None and current.text == text:
                continue
            known = self._broken.get(("rule set", name))
            if known is not None and known.text == text:
                broken[("rule set", name)] = known
                continue
            try:
                compiled = compile_rule_file(text, self.schema)
            except Exception as exc:  # noqa: BLE001 - nothing stored may stop a memory from opening
                self.engine.set(name, None)
                broken[("rule set", name)] = BrokenObject(
                    "rule set", name, text, _stored_error(exc, text), _declared_constraints(text)
                )
                continue
            self.engine.set(name, compiled.rule_set, compiled.triggers)
        self._broken = broken

    def _stored_names(self) -> tuple[list[str], BrokenObject | None]:
        """The stored rule-set names, and the broken object when ``rule_sets`` is not a JSON
        list of distinct names (the names that can be read are kept)."""
        raw = self.store.get_meta("rule_sets")
        if raw is None:
            return [], None
        try:
            value = json.loads(raw)
        except (TypeError, ValueError, RecursionError) as exc:
            detail = f"it is not JSON ({exc})"
            value = []
        else:
            detail = None if isinstance(value, list) else f"it is a JSON {type(value).__name__}, not a list of names"
            value = value if isinstance(value, list) else []
        names = list(dict.fromkeys(n for n in value if isinstance(n, str) and n))
        if detail is None and len(names) != len(value):
            detail = "it holds entries that are not names, or a name twice"
        if detail is None:
            return names, None
        error = RuleError(
            [Problem("store", f"the stored list of rule sets cannot be read: {detail}; load a rule set to rewrite it", where="rule_sets")]
        )
        return names, BrokenObject("rule-set list", "rule_sets", raw, error)
