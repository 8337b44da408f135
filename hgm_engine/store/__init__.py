"""Where memory lives outside the process: graph files now; SQLite and PostgreSQL stores."""

from __future__ import annotations

import os

from hgm_engine.store.base import InMemoryStore, Store
from hgm_engine.errors import StoreError
from hgm_engine.store.graphfile import (
    GRAPH_FORMAT,
    check_document,
    graph_from_document,
    marks_problem,
    parse_graph_text,
    read_graph_file,
)

__all__ = [
    "GRAPH_FORMAT",
    "parse_graph_text",
    "check_document",
    "graph_from_document",
    "read_graph_file",
    "marks_problem",
    "open_store",
    "Store",
    "InMemoryStore",
]


STORE_CHECK_ENV = "HGM_STORE_CHECK"


def open_store(location: str | os.PathLike, *, create: bool = True, check: str | None = None) -> Store:
    """The durable store at ``location``: a ``PostgresStore`` for a ``postgresql://`` or
    ``postgres://`` URL, a ``SQLiteStore`` (one file) otherwise.

    A missing store is created, unless ``create`` is false: then it is a ``StoreError``
    (category ``store``, "no memory at ..."), so a mistyped location does not quietly become
    a new, empty memory. ``store.location`` names the store without any password.

    ``check`` is what opening a SQLite file runs besides checking its tables: ``"quick"``
    (``PRAGMA quick_check``, the default), ``"full"`` (``integrity_check``) or ``"none"``;
    when None, the environment variable ``HGM_STORE_CHECK`` decides, else ``"quick"``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
    >>> try:
    ...     open_store(path, create=False)
    ... except StoreError as err:
    ...     print(err.category, err.message.replace(path, "PATH"))
    store no memory at PATH
    >>> store = open_store(path)
    >>> type(store).__name__, store.latest_t()
    ('SQLiteStore', 0)
    >>> store.close()
    >>> open_store(path, check="slow")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hgm_engine.errors.StoreError: store at ...: HGM_STORE_CHECK (or check) must be one of quick, full, none, not 'slow'
    
    >>> open_store("postgresql://hgm:secret@db.example/memory").location  # doctest: +SKIP
    'postgresql://hgm:***@db.example/memory'
    """
    from hgm_engine.store.postgres import is_postgres_url

    text = os.fspath(location)
    if is_postgres_url(text):
        from hgm_engine.store.postgres import PostgresStore

        return PostgresStore(text, create=create)
    from hgm_engine.store.sqlite import SQLiteStore

    if not create and not os.path.exists(text):
        from hgm_engine.errors import Problem

        raise StoreError([Problem("store", f"no memory at {text}", where=text)])
    if check is None:
        check = os.environ.get(STORE_CHECK_ENV) or "quick"
    from hgm_engine.store.sqlite import CHECKS

    if check not in CHECKS:
        from hgm_engine.errors import Problem

        raise StoreError(
            [Problem("store", f"{STORE_CHECK_ENV} (or check) must be one of {', '.join(CHECKS)}, not {check!r}", where=text)]
        )
    return SQLiteStore(text, create=create, check=check)
