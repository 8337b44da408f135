"""A memory in another process: ``hgm_engine.connect(url, token=..., memory=...)`` returns a
:class:`RemoteMemory` that speaks to ``hgm serve`` over REST with the methods, results and
errors of a local :class:`~hgm_engine.Memory` (docs/integrations.md).

- :mod:`hgm_engine.client.http`: the requests (standard library only): a deadline for each,
  retries of reads with backoff, one keep-alive connection per thread;
- :mod:`hgm_engine.client.documents`: the server's documents as the engine's objects (errors,
  query results, reports, localization results);
- :mod:`hgm_engine.client.remote`: :class:`RemoteMemory`, :class:`RemoteTransaction`.

>>> from hgm_engine.client import connect
>>> connect("http://127.0.0.1:8765").url
'http://127.0.0.1:8765'
"""

from __future__ import annotations

from hgm_engine.client.documents import error_from_document
from hgm_engine.client.http import DEFAULT_TIMEOUT, RetryPolicy, Transport
from hgm_engine.client.remote import RemoteMemory, RemoteTransaction, connect

__all__ = [
    "connect",
    "RemoteMemory",
    "RemoteTransaction",
    "RetryPolicy",
    "Transport",
    "DEFAULT_TIMEOUT",
    "error_from_document",
]
