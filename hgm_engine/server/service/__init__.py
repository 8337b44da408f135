"""The operations the REST and MCP servers expose, in one place, as JSON in and JSON out.

:class:`MemoryService` wraps a :class:`~hgm_engine.Memory` with the limits a shared service
needs (query length, explicit repetition bounds, regular expressions that cannot backtrack
without bound, work and time per query) and returns the JSON documents of ``formats.md``.
Every refusal is an :class:`~hgm_engine.errors.HGMError` with a category; :func:`http_status`
maps a category to the HTTP status the REST server answers with and :func:`error_document`
builds the body (the ``{"error": ...}`` document, or a refused transaction's report).

The modules, one job each:

- :mod:`~hgm_engine.server.service.facade`: :class:`MemoryService`, made of the verb groups
  :mod:`~hgm_engine.server.service.queries` (check, run, explain a query),
  :mod:`~hgm_engine.server.service.reads` (the state and the history),
  :mod:`~hgm_engine.server.service.writes` (transactions, loads, purges),
  :mod:`~hgm_engine.server.service.rules` (constraints, rule sets, the schema),
  :mod:`~hgm_engine.server.service.paths` (decision paths),
  :mod:`~hgm_engine.server.service.search` (the node index) and
  :mod:`~hgm_engine.server.service.llm` (the server's model), each over
  :mod:`~hgm_engine.server.service.core` (the memory, ``resolve``, ``fresh``);
- :mod:`~hgm_engine.server.service.checks`: the checks of a request's values;
- :mod:`~hgm_engine.server.service.documents`: answers and errors as documents, the HTTP
  status of each error category;
- :mod:`~hgm_engine.server.service.limits`: :class:`ServerLimits` and the inline budget;
- :mod:`~hgm_engine.server.service.endpoint`: the model endpoint (:class:`LLMEndpoint`) and
  the LLM planner's entry point group.

>>> from hgm_engine import HGMError, Memory
>>> service = MemoryService(Memory())
>>> service.transact({"author": "doc", "ops": [{"op": "add_node", "id": "g", "type": "goal"}]})["t"]
1
>>> service.query("root")["ids"], service.query("root")["t"]
(['g'], 1)
>>> try:
...     service.query("nodes.where(content =~ '(a+)+$')")
... except HGMError as err:
...     print(err.category, http_status(err.category))
limit-exceeded 400
"""

from __future__ import annotations

from hgm_engine.server.service.checks import regex_hazard
from hgm_engine.server.service.documents import STATUS_BY_CATEGORY, error_document, http_status, node_document
from hgm_engine.server.service.endpoint import PLANNER_GROUP, LLMEndpoint, add_llm_arguments, llm_endpoint
from hgm_engine.server.service.facade import MemoryService
from hgm_engine.server.service.limits import BudgetExceeded, ServerLimits

__all__ = [
    "ServerLimits",
    "MemoryService",
    "BudgetExceeded",
    "http_status",
    "error_document",
    "regex_hazard",
    "STATUS_BY_CATEGORY",
    "node_document",
    "LLMEndpoint",
    "PLANNER_GROUP",
    "add_llm_arguments",
    "llm_endpoint",
]
