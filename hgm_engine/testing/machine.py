"""The state machine: random transactions, reverts, snapshots, reads of the past and queries
against a memory and the reference model side by side, for any schema, rules and store.

Configure it with :meth:`MemoryStateMachine.configured` (or subclass it and set the class
attributes); every step is written with hypothesis' ``note()``, so a failing run reads as the
story of what was done::

    Machine = MemoryStateMachine.configured(schema=my_schema, rules=open("agent.hgmr").read(),
                                            store=lambda folder: open_store(f"{folder}/m.db"))
    TestMyMemory = Machine.TestCase

>>> from hypothesis import settings, HealthCheck
>>> from hypothesis.stateful import run_state_machine_as_test
>>> Machine = MemoryStateMachine.configured(rules="propagate derived_from backward")
>>> run_state_machine_as_test(Machine, settings=settings(max_examples=3, stateful_step_count=5,
...     deadline=None, suppress_health_check=list(HealthCheck)))
"""

from __future__ import annotations

import json
import shutil
import tempfile
from typing import Any, Callable

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from hgm_engine.memory import Memory
from hgm_engine.model import DEFAULT_SCHEMA, Schema
from hgm_engine.store import Store
from hgm_engine.testing.differential import engine_apply, engine_revert, model_apply, model_revert
from hgm_engine.testing.interpreter import ModelQueryError
from hgm_engine.testing.model import ModelMemory
from hgm_engine.testing.strategies import graphs, queries, transactions

__all__ = ["MemoryStateMachine"]

WATCHED_QUERIES = (
    "nodes.count()",
    "root.descendants",
    "nodes.where(type = 'action', status = 'pending')",
    "nodes.where(has(dirty))",
)


class MemoryStateMachine(RuleBasedStateMachine):
    """Random transactions, refusals, reverts, snapshots, ``as_of`` reads and queries against
    :class:`~hgm_engine.testing.ModelMemory`; after every step the memory equals the model,
    its constraints hold, every earlier ``as_of(t)`` answer is unchanged and every id names
    its own node.

    Class attributes (or :meth:`configured`): ``schema``; ``rule_text``, a rule file loaded at
    the start (None: no rules); ``store_factory``, a function of a folder made for the run that
    opens the store kept in it — called again with the same folder to reopen it (None: in
    memory, never reopened). Subclasses may instead override :meth:`make_memory` and :meth:`reopen`.
    """

    schema: Schema = DEFAULT_SCHEMA
    rule_text: str | None = None  # (``rules`` is hypothesis' own name)
    store_factory: Callable[[str], Store] | None = None

    @classmethod
    def configured(cls, *, schema: Schema = DEFAULT_SCHEMA, rules: str | None = None,
                   store: Callable[[str], Store] | None = None, name: str | None = None) -> type:
        """A subclass for ``schema``, ``rules`` and ``store`` (see the class docstring).

        >>> MemoryStateMachine.configured(rules="propagate before forward").rule_text
        'propagate before forward'
        """
        return type(name or f"{cls.__name__}Configured", (cls,), {
            "schema": schema, "rule_text": rules, "store_factory": staticmethod(store) if store else None,
        })

    # -- the memory under test ---------------------------------------------------------------

    def make_memory(self) -> Memory:
        """A new, empty memory of :attr:`schema` (on :attr:`store` when one is set)."""
        if self.store_factory is None:
            return Memory(self.schema)
        self.folder = tempfile.mkdtemp(prefix="hgm-machine-")
        return Memory(self.schema, store=self.store_factory(self.folder))

    def reopen(self, memory: Memory) -> Memory:
        """The same memory closed and opened again (unchanged without a durable store)."""
        if self.store_factory is None:
            return memory
        memory.close()
        return Memory(self.schema, store=self.store_factory(self.folder))

    def teardown(self) -> None:
        memory = getattr(self, "memory", None)
        if memory is not None and self.store_factory is not None:
            memory.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    # -- start -------------------------------------------------------------------------------

    @initialize(data=st.data())
    def start(self, data) -> None:
        self.memory = self.make_memory()
        self.model = ModelMemory(self.schema)
        doc = data.draw(graphs(self.schema), label="genesis graph")
        if doc["nodes"]:
            note(f"load {json.dumps(doc)}")
            self.memory.load(doc)
            self.model.load(doc)
        if self.rule_text is not None:
            note(f"load rules {self.rule_text!r}")
            self.memory.load_rules(self.rule_text)
            self.model.load_rules(self.rule_text)
        self.answers = [self._answers(t) for t in range(self.model.t + 1)]

    def _answers(self, as_of: int | None) -> dict[str, Any]:
        return {q: self.memory.query(q, as_of=as_of).value for q in WATCHED_QUERIES}

    # -- steps -------------------------------------------------------------------------------

    @rule(data=st.data(), dry_run=st.booleans())
    def transaction(self, data, dry_run) -> None:
        doc = data.draw(transactions(self.schema, ids=list(self.model.nodes), edges=list(self.model.edges)), label="transaction")
        t = self.model.t
        expected = model_apply(self.model, doc, dry_run=dry_run)
        note(f"t={t}: apply{' (dry run)' if dry_run else ''} {json.dumps(doc['ops'])}")
        got = engine_apply(self.memory, doc, dry_run=dry_run)
        note(f"  -> {_outcome(got)}")
        assert got == expected, (got, expected)
        if self.model.t > t:
            self.answers.append(self._answers(None))

    @precondition(lambda self: self.model.t > 0)
    @rule(data=st.data())
    def revert(self, data) -> None:
        t = data.draw(st.integers(1, self.model.t), label="revert t")
        before = self.model.t
        expected = model_revert(self.model, t)
        note(f"t={before}: revert {t}")
        got = engine_revert(self.memory, t)
        note(f"  -> {_outcome(got)}")
        assert got == expected, (got, expected)
        if self.model.t > before:
            self.answers.append(self._answers(None))

    @rule(data=st.data())
    def query(self, data) -> None:
        case = data.draw(queries(self.schema, ids=list(self.model.nodes)[:6] or ["n0"]), label="query")
        try:
            expected: Any = self.model.query(case.text, focus=case.focus, params=case.params)
            expected = (expected.kind, expected.value)
        except ModelQueryError as err:
            expected = ("error", err.categories)
        try:
            answer = self.memory.query(case.text, focus=case.focus, params=case.params)
            got: Any = (answer.kind, answer.value)
        except Exception as err:  # noqa: BLE001 - an HGMError's categories, anything else fails below
            got = ("error", [p.category for p in getattr(err, "problems", ())] or [repr(err)])
        note(f"query {case} -> {got}")
        assert got == expected, (got, expected)

    @rule(name=st.sampled_from(["before-plan", "checkpoint"]))
    def snapshot(self, name) -> None:
        note(f"snapshot {name!r} at t={self.model.t}")
        assert self.memory.snapshot(name) == self.model.t
        assert self.memory.query("nodes.count()", as_of=name).value == len(self.model.nodes)

    @rule(data=st.data())
    def read_the_past(self, data) -> None:
        t = data.draw(st.integers(0, self.model.t), label="as_of t")
        note(f"read as of t={t}")
        assert self.memory.export(as_of=t) == self.model.document(as_of=t)

    @rule(data=st.data())
    def diff(self, data) -> None:
        t1 = data.draw(st.integers(0, self.model.t), label="diff from")
        t2 = data.draw(st.integers(t1, self.model.t), label="diff to")
        note(f"diff {t1}..{t2}")
        assert _in_any_order(self.memory.diff(t1, t2)) == _in_any_order(self.model.diff(t1, t2))

    @rule()
    def reopen_store(self) -> None:
        note("close and reopen the store")
        self.memory = self.reopen(self.memory)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def memory_equals_model(self) -> None:
        if hasattr(self, "model"):
            assert self.memory.t == self.model.t
            assert self.memory.export() == self.model.document()

    @invariant()
    def constraints_hold(self) -> None:
        if hasattr(self, "model"):
            assert self.memory.violations() == []

    @invariant()
    def the_past_never_changes(self) -> None:
        if hasattr(self, "model"):
            for t, answers in enumerate(self.answers):
                assert self._answers(t) == answers, t

    @invariant()
    def ids_resolve_to_their_own_nodes(self) -> None:
        if hasattr(self, "model"):
            for node_id, (node_type, _) in self.model.nodes.items():
                assert self.memory.query("#$i", params={"i": node_id}).nodes[0]["type"] == node_type
            assert self.memory.query("#gone").ids == []


def _in_any_order(changes: list) -> list:
    """A diff's changes as a sorted list: the order of ``diff`` is not specified."""
    return sorted(json.dumps(c, sort_keys=True) for c in changes)


def _outcome(result: Any) -> str:
    if isinstance(result, tuple):
        return f"error {result[1]}"
    if result["committed"]:
        return f"committed t={result['t']}" + (f", fired {result['fired_rules']}" if result["fired_rules"] else "")
    return "refused " + ", ".join(f"{c}@{n}" for c, n in result["violations"]) if result["violations"] else "not committed (dry run)"

