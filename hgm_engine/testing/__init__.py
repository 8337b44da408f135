"""Property-based testing for hgm memories, for anyone who builds on hgm (``pip install
hgm-engine[testing]``; needs hypothesis).

- **The reference model** — a small, slow, obviously correct interpreter of the whole
  semantics, written from the language reference and the spec: :func:`evaluate` answers
  queries on a :class:`ModelGraph`; :class:`ModelMemory` applies transactions (ops, rules,
  constraints, refusals), keeps every state, and answers ``as_of``, ``diff`` and ``revert``.
- **Strategies** — :func:`schemas`, :func:`graphs`, :func:`queries`, :func:`transactions`,
  :func:`ops` and :func:`rule_files`, for any schema.
- **Differential helpers** — :func:`engine_answer`/:func:`model_answer` and
  :func:`engine_apply`/:func:`model_apply` put the engine's answer beside the model's.
- **:class:`MemoryStateMachine`** — a hypothesis state machine for a schema, rules and a
  store, that writes every step with ``note()``.
- **:class:`StoreTests`** and **:class:`DurableStoreTests`** — the conformance suites a store
  implementation subclasses (the second for a store that keeps its contents when closed).
- **Profiles** — ``HYPOTHESIS_PROFILE=ci|long`` (:func:`load_profile`, :func:`examples`).

docs/testing.md shows how to test an agent's own rules with them; ``hgm check`` runs the same
search from the command line.

>>> model = ModelMemory()
>>> _ = model.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
>>> model.query("root.count()").value
1
"""

from __future__ import annotations

from hgm_engine.testing.graphmodel import ModelGraph
from hgm_engine.testing.interpreter import ModelAnswer, ModelQueryError, evaluate
from hgm_engine.testing.model import ModelError, ModelMemory, ModelRefusal, ModelReport
from hgm_engine.testing.strategies import QueryCase, graphs, ops, queries, rule_files, schemas, transactions
from hgm_engine.testing.differential import engine_answer, engine_apply, engine_revert, model_answer, model_apply, model_revert
from hgm_engine.testing.machine import MemoryStateMachine
from hgm_engine.testing.stores import DurableStoreTests, StoreTests
from hgm_engine.testing.profiles import examples, load_profile, register_profiles

__all__ = [
    "ModelGraph",
    "ModelAnswer",
    "ModelQueryError",
    "evaluate",
    "ModelError",
    "ModelMemory",
    "ModelRefusal",
    "ModelReport",
    "QueryCase",
    "graphs",
    "ops",
    "queries",
    "rule_files",
    "schemas",
    "transactions",
    "engine_answer",
    "engine_apply",
    "engine_revert",
    "model_answer",
    "model_apply",
    "model_revert",
    "MemoryStateMachine",
    "StoreTests",
    "DurableStoreTests",
    "examples",
    "load_profile",
    "register_profiles",
]
