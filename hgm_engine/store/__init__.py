"""Where memory lives outside the process: graph files now; SQLite and PostgreSQL stores."""

from __future__ import annotations

import os

from hgm_engine.store.base import InMemoryStore, Store
from hgm_engine.errors import StoreError
from hgm_engine.store.catalog import (
    DEFAULT_MEMORY,
    MAX_NAME_LENGTH,
    MemoryCatalog,
    check_memory_name,
    check_memory_prefix,
    open_catalog,
    unknown_memory,
)
from hgm_engine.store.graphfile import (
    GRAPH_FORMAT,
    check_document,
    graph_document,
    graph_from_document,
    load_graph_file,
    marks_problem,
    parse_graph_text,
    read_graph_file,
    read_graph_text,
)

__all__ = [
    "GRAPH_FORMAT",
    "parse_graph_text",
    "check_document",
    "graph_from_document",
    "graph_document",
    "read_graph_file",
    "read_graph_text",
    "load_graph_file",
    "marks_problem",
    "open_store",
    "open_memory_store",
    "Store",
    "InMemoryStore",
    "DEFAULT_MEMORY",
    "MAX_NAME_LENGTH",
    "MemoryCatalog",
    "check_memory_name",
    "check_memory_prefix",
    "open_catalog",
    "unknown_memory",
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


def open_memory_store(location: str | os.PathLike, memory: str | None = None) -> Store:
    """The store of the memory named ``memory`` at ``location`` (a SQLite file or a
    ``postgresql://`` URL): the memory ``default`` when None, created on its first commit;
    another name must have been made (``unknown-memory`` otherwise, with the closest names).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "memory.db")
    >>> open_memory_store(path).latest_t()
    0
    >>> open_memory_store(path, "acme/alice")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hgm_engine.errors.RequestError: unknown-memory at acme/alice: no memory 'acme/alice' in ...
    """
    if memory is None or memory == DEFAULT_MEMORY:
        if memory is not None:
            check_memory_name(memory)
        return open_store(str(location))
    with open_catalog(str(location)) as catalog:
        return catalog.open(check_memory_name(memory))
