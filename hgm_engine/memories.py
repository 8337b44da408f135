"""A store of many memories: ``hgm_engine.open_store(url)`` (docs/memories.md).

One SQLite file or PostgreSQL database holds any number of named memories, each with its own
``t``, journal, schema, constraints, rule sets, snapshots and indexes. ``default`` is the
memory a store has always held, so a store made before names existed opens as ``default``.

>>> import tempfile, os
>>> store = open_store(os.path.join(tempfile.mkdtemp(), "memories.db"))
>>> with store.create("acme/alice") as alice:
...     alice.apply({"ops": [{"op": "add_node", "id": "g", "type": "goal"}]}).t
1
>>> store.create("acme/bob").close()
>>> store.list(), store.list(prefix="acme/b")
(['acme/alice', 'acme/bob'], ['acme/bob'])
>>> store.open("acme/alice").query("root").ids
['g']
>>> store.open("acme/alcie")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
hgm_engine.errors.RequestError: unknown-memory at acme/alcie: no memory 'acme/alcie' in ...; did you mean 'acme/alice'? ...
>>> store.drop("acme/bob"); store.list()
['acme/alice']
"""

from __future__ import annotations

import json
import os
from typing import Any

from hgm_engine.memory import Memory
from hgm_engine.rules import SCHEMA_META
from hgm_engine.model import Schema
from hgm_engine.store import (
    DEFAULT_MEMORY,
    MemoryCatalog,
    check_memory_name,
    check_memory_prefix,
    open_catalog,
)

__all__ = ["MemoryStore", "open_store"]


class MemoryStore:
    """The memories of one SQLite file or PostgreSQL database (see the module).

    ``create(name, schema=...)`` makes a memory (its schema stored with it), ``open(name)``
    gives its :class:`Memory`, ``list(prefix)`` the names, ``drop(name)`` removes a memory and
    its whole history. Names: segments of ``[A-Za-z0-9._-]`` joined by ``/``, at most 200
    characters; bad ones are a ``RequestError`` ``invalid-memory-name``.
    """

    def __init__(self, catalog: MemoryCatalog):
        self.catalog = catalog
        self.location = catalog.location

    def __repr__(self) -> str:
        return f"MemoryStore({self.location!r})"

    def create(self, name: str, *, schema: Schema | None = None, **kwargs: Any) -> Memory:
        """Make the memory ``name`` (``memory-exists`` when it is there) with ``schema`` (the
        default schema when None) and open it; ``kwargs`` go to :class:`Memory`.

        >>> import tempfile, os
        >>> store = open_store(os.path.join(tempfile.mkdtemp(), "m.db"))
        >>> store.create("a").close()
        >>> store.create("a")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hgm_engine.errors.RequestError: memory-exists at a: a memory 'a' is already in ...
        """
        check_memory_name(name)
        if schema is not None and not isinstance(schema, Schema):
            from hgm_engine.errors import Problem, SchemaError

            raise SchemaError([Problem("invalid-argument", f"a schema is a Schema, not {type(schema).__name__}", where="schema")])
        document = (schema or Schema()).to_document()
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        self.catalog.create(name, {SCHEMA_META: text})
        return self.open(name, **kwargs)

    def open(self, name: str = DEFAULT_MEMORY, **kwargs: Any) -> Memory:
        """The memory ``name``, with its stored schema (``unknown-memory``, with the closest
        names, when it is not there; ``default`` is made on its first commit, as ever).

        >>> import tempfile, os
        >>> open_store(os.path.join(tempfile.mkdtemp(), "m.db")).open().t
        0
        """
        check_memory_name(name)
        store = self.catalog.open(name, create=name == DEFAULT_MEMORY)
        try:
            return Memory(store=store, **kwargs)
        except BaseException:
            store.close()
            raise

    def list(self, prefix: str = "") -> list[str]:
        """The memories' names that start with ``prefix``, sorted (``default`` once it holds
        something).

        >>> import tempfile, os
        >>> open_store(os.path.join(tempfile.mkdtemp(), "m.db")).list()
        []
        """
        return self.catalog.names(check_memory_prefix(prefix))

    def exists(self, name: str) -> bool:
        """Whether the memory ``name`` is in the store.

        >>> import tempfile, os
        >>> open_store(os.path.join(tempfile.mkdtemp(), "m.db")).exists("x")
        False
        """
        return name in self.catalog.names(check_memory_name(name))

    def drop(self, name: str) -> None:
        """Remove the memory ``name`` and its whole history (``unknown-memory`` when it is not
        there). A process that has it open keeps what it read until it closes it.

        >>> import tempfile, os
        >>> store = open_store(os.path.join(tempfile.mkdtemp(), "m.db"))
        >>> store.create("tmp").close(); store.drop("tmp"); store.exists("tmp")
        False
        """
        self.catalog.drop(check_memory_name(name))

    def close(self) -> None:
        """Release the catalog's connection (memories opened from it stay open)."""
        self.catalog.close()

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_store(location: str | os.PathLike) -> MemoryStore:
    """The store of memories at ``location``: a SQLite file path or a ``postgresql://`` URL
    (nothing is created until a memory is).

    >>> open_store("memories.db")
    MemoryStore('memories.db')
    """
    return MemoryStore(open_catalog(location))
