"""Model-based testing for hgm memories, reusable by anyone who builds on hgm.

``MemoryStateMachine`` is a hypothesis ``RuleBasedStateMachine`` that drives random
transactions (valid ones, refused ones, malformed ones), reverts, snapshots and ``as_of``
reads against a plain dict/list model of the default schema, and checks after every step
that the memory equals the model, that constraints hold, that every earlier ``as_of(t)``
answer is unchanged and that ids stay right while rustworkx reuses indices.

Subclass it and override ``make_memory`` (and ``reopen`` for durable stores)::

    class SQLiteMachine(MemoryStateMachine):
        def make_memory(self):
            self.path = tmp / "m.db"
            return Memory.open(self.path)

    TestSQLite = SQLiteMachine.TestCase

Requires hypothesis (a test dependency).
"""

from __future__ import annotations

from hgm_engine.testing.model import ModelMemory, ModelRefusal
from hgm_engine.testing.machine import MemoryStateMachine

__all__ = ["MemoryStateMachine", "ModelMemory", "ModelRefusal"]
