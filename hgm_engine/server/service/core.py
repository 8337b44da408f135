"""What every verb of the service stands on (:class:`ServiceCore`): the memory, the limits
and the model endpoint of a :class:`~hgm_engine.server.service.MemoryService`, reading the
``t`` a request names (:meth:`ServiceCore.resolve`) and catching up with other processes'
commits before a read (:meth:`ServiceCore.fresh`).

>>> from hgm_engine import Memory
>>> ServiceCore(Memory()).health()["t"]
0
"""

from __future__ import annotations

import os
from typing import Any

from hgm_engine.memory import Memory
from hgm_engine.model import parse_instant
from hgm_engine.server.service.checks import fail, shown_int, t_or_name
from hgm_engine.server.service.endpoint import LLMEndpoint
from hgm_engine.server.service.limits import BudgetedLimits, ServerLimits

__all__ = ["ServiceCore"]


class ServiceCore:
    """The state every verb group of the service shares: ``memory``, ``limits``
    (:class:`~hgm_engine.server.service.limits.ServerLimits`) and ``llm`` (the
    :class:`~hgm_engine.server.service.endpoint.LLMEndpoint`). Setting it up sets
    ``memory.limits`` (the service's limits, or the budget of the current call). The verb
    groups (:mod:`~hgm_engine.server.service.queries`, ``reads``, ``writes``, ``rules``,
    ``paths``, ``search``, ``llm``) subclass it, and
    :class:`~hgm_engine.server.service.MemoryService` is all of them.

    >>> from hgm_engine import Memory
    >>> ServiceCore(Memory()).limits.max_ops
    10000
    """

    def __init__(self, memory: Memory, limits: ServerLimits | None = None, *, llm: LLMEndpoint | None = None):
        self.memory = memory
        self.limits = limits or ServerLimits()
        self.llm = llm or LLMEndpoint()
        memory.limits = BudgetedLimits(self.limits.executor_limits())

    def resolve(self, value: Any, what: str = "as_of") -> int | None:
        """The ``t`` that a request's ``value`` names (None: none given): a ``t`` of the
        history (an integer, or ASCII digits) or a snapshot name. Anything else is a 400
        ``invalid-argument`` (an unknown snapshot a 404 ``unknown-snapshot``) whose ``where``
        is the parameter ``what``.

        >>> from hgm_engine import Memory
        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]})
        >>> s.resolve("1"), s.resolve(0, "from"), s.resolve(None)
        (1, 0, None)
        >>> s.resolve("9" * 5000, "since")
        Traceback (most recent call last):
        ...
        hgm_engine.errors.ServiceError: invalid-argument at since: since: 99999999999999999999... (5000 characters) is not a t of this memory
        """
        named = t_or_name(value, what)
        if named is None:
            return None
        if isinstance(named, str):
            snapshots = self.memory.snapshots()
            if named not in snapshots and parse_instant(named) is not None:
                return self.memory.resolve_t(named)  # an ISO 8601 time: the last commit at or before it
            if named not in snapshots:
                known = ", ".join(sorted(snapshots)[:20]) or "none"
                shown = repr(named[:80]) + ("..." if len(named) > 80 else "")
                raise fail("unknown-snapshot", f"{what}: no snapshot named {shown} (known: {known})", what)
            return snapshots[named]
        if not 0 <= named <= self.memory.t:
            raise fail("invalid-argument", f"{what}: t={shown_int(named)} is outside the history (0..{self.memory.t})", what)
        return named

    def fresh(self) -> int:
        """Apply what other processes committed to the store (other server workers, the CLI)
        before a read, so a client sees every commit that was acknowledged before it asked;
        returns ``t``. One cheap check when there is nothing new.

        >>> from hgm_engine import Memory
        >>> from hgm_engine.server.service import MemoryService
        >>> MemoryService(Memory()).fresh()
        0
        """
        if self.memory.behind_store():
            return self.memory.refresh()
        return self.memory.t

    def health(self) -> dict[str, Any]:
        """``{"status": "ok", "t": T, "nodes": N, "pid": P}`` (``pid``: the server process
        that answered, one of several with ``hgm serve --workers``)."""
        self.fresh()
        return {"status": "ok", "t": self.memory.t, "nodes": len(self.memory), "pid": os.getpid()}
