"""The service: :class:`MemoryService`, every verb group of the package over one memory.

>>> from hgm_engine import Memory
>>> MemoryService(Memory()).health()["status"]
'ok'
"""

from __future__ import annotations

from hgm_engine.memory import Memory
from hgm_engine.server.service.endpoint import LLMEndpoint
from hgm_engine.server.service.limits import ServerLimits
from hgm_engine.server.service.llm import LLMVerbs
from hgm_engine.server.service.paths import PathVerbs
from hgm_engine.server.service.queries import QueryVerbs
from hgm_engine.server.service.reads import ReadVerbs
from hgm_engine.server.service.rules import RuleVerbs
from hgm_engine.server.service.search import SearchVerbs
from hgm_engine.server.service.writes import WriteVerbs

__all__ = ["MemoryService"]


class MemoryService(QueryVerbs, ReadVerbs, WriteVerbs, RuleVerbs, PathVerbs, SearchVerbs, LLMVerbs):
    """JSON-in, JSON-out operations on one memory, with the limits of :class:`ServerLimits`.

    The memory is shared by every request: queries run concurrently under its read lock and
    commits are serialized by its write lock. Setting up the service sets ``memory.limits``.

    Its verbs come in groups, one module each: queries (:mod:`~hgm_engine.server.service.queries`),
    reads of the state and the history (``reads``), changes (``writes``), constraints, rules
    and the schema (``rules``), decision paths (``paths``), search (``search``) and the
    server's model (``llm``); REST and MCP call these and nothing else.

    >>> from hgm_engine import Memory
    >>> s = MemoryService(Memory())
    >>> s.health()["status"]
    'ok'
    """

    def __init__(self, memory: Memory, limits: ServerLimits | None = None, *, llm: LLMEndpoint | None = None):
        super().__init__(memory, limits, llm=llm)
