"""The executor: turn an optimized plan into Python closures once, then run them on a graph.

A compiled :class:`Program` is independent of the graph and of parameter values, so the
query cache keeps it. Running it needs a *view* — anything with ``node_map()``,
``ids_of_type()``, ``roots()``, ``out_adjacency()`` and ``in_adjacency()``, such as
:class:`~hgm_engine.model.graph.MemoryGraph` or a historical view — plus the focus and parameters.

Node lists are lists of ids without duplicates. When the query ends in ``.paths()`` the same
operators run in *traced* mode over ``(id, walk)`` pairs.

The modules, bottom up:

- ``context``: :class:`Limits` and the state of one run;
- ``values``: the language's equality, order and sort order;
- ``codegen``: everything written as Python source and compiled (conditions, the generated
  per-source hop step), each function's source registered with :mod:`linecache`;
- ``conditions``: conditions as functions — generated, with closures for the parts the
  generator leaves out;
- ``operators``: the runtime operators (hops, repetition, siblings, versions, list
  operators) and the closure forms a navigation step can run as;
- ``sources``: where a path starts, and the shortcuts that read an index directly;
- ``program``: :class:`Program`, :func:`build`, and the choice of strategy for each step,
  which :meth:`Program.strategy` reports for ``explain(physical=True)``.

>>> from hgm_engine.model import MemoryGraph
>>> g = MemoryGraph()
>>> for i in ("g", "a", "b"): _ = g.add_node(i, "goal" if i == "g" else "action", {"n": len(i)})
>>> _ = g.add_edge("g", "a", "parent_of"); _ = g.add_edge("g", "b", "parent_of")
>>> from hgm_engine.query.pipeline import compile
>>> compile("root.actions.count()").program.run(g)
2
"""

from __future__ import annotations

from hgm_engine.query.executor.context import (
    DEFAULT_LIMITS,
    Limits,
)
from hgm_engine.query.executor.values import (
    sort_key,
    values_equal,
)
from hgm_engine.query.executor.operators import (
    Strategy,
)
from hgm_engine.query.executor.program import (
    Program,
    build,
)

__all__ = ["Program", "Limits", "build", "values_equal", "sort_key", "DEFAULT_LIMITS", "Strategy"]
