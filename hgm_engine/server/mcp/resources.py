"""The MCP resources: documents a client reads by URI (``hgm://health``, ``hgm://nodes/{id}``,
the language reference ``hgm://language`` …), for the default memory and, under
``hgm://memories/NAME/``, for any memory (:func:`read_resource`).

>>> from hgm_engine import Memory
>>> from hgm_engine.server.service import MemoryService
>>> read_resource(MemoryService(Memory()), "hgm://snapshots")
({'snapshots': {}}, False)
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from hgm_engine.errors import HGMError, Problem, ServiceError
from hgm_engine.server.mcp.access import Access, memories_of
from hgm_engine.server.service import MemoryService, error_document
from hgm_engine.server.tokens import OPEN_ACCESS, Grant
from hgm_engine.store import DEFAULT_MEMORY, check_memory_name

__all__ = [
    "Resource",
    "RESOURCES",
    "RESOURCE_TEMPLATES",
    "GLOBAL_RESOURCES",
    "MEMORY_RESOURCE_TEMPLATES",
    "MEMORY_URI",
    "language_reference",
    "memory_language",
    "read_resource",
]

@attrs.frozen
class Resource:
    """One MCP resource: a URI (or a URI template with ``{id}``) the client reads as JSON
    (or as the text of ``mime_type``)."""

    uri: str
    name: str
    description: str
    read: Callable[..., Any]
    mime_type: str = "application/json"


RESOURCES: tuple[Resource, ...] = (
    Resource("hgm://health", "health", "The memory's current t and size.", lambda s: s.health()),
    Resource("hgm://schema", "schema", "Node types, edge types, relations and edge rules: the names queries use.", lambda s: s.schema()),
    Resource("hgm://stale", "stale", "Nodes rules marked needs_review or blocked, with each mark's cause.", lambda s: s.stale()),
    Resource("hgm://snapshots", "snapshots", "Named states (name -> t).", lambda s: s.snapshots()),
    Resource("hgm://constraints", "constraints", "User constraints in force, and broken ones.", lambda s: s.constraints()),
    Resource("hgm://rules", "rules", "Loaded rule sets, and broken ones.", lambda s: s.rules()),
    Resource("hgm://paths", "paths", "Every stored decision path (current versions).", lambda s: s.paths()),
    Resource("hgm://paths/metrics", "path metrics", "Rewrites, versions, failure streaks, guards.", lambda s: s.path_metrics()),
    Resource("hgm://export", "export", "The whole memory as a graph file (formats.md).", lambda s: s.export()),
)
RESOURCE_TEMPLATES: tuple[Resource, ...] = (
    Resource("hgm://nodes/{id}", "node", "One node with its attributes.", lambda s, i: s.node(i)),
    Resource("hgm://history/{id}", "node history", "Every commit that touched a node.", lambda s, i: s.history(i)),
    Resource("hgm://paths/{id}", "path", "One stored path with its versions and counters.", lambda s, i: s.path(i)),
)


MEMORY_URI = "hgm://memories/"
"""The per-memory resources: ``hgm://memories/NAME/schema`` and so on, ``NAME`` with each ``/``
written ``%2F`` (as RFC 6570 expands ``{memory}``), so that no name can be read as a path."""


def language_reference() -> str:
    """The path language's reference (docs/language.md), as shipped in the wheel
    (``hgm_engine/docs/language.md``) or read from the source tree.

    >>> language_reference().startswith("#")
    True
    """
    import importlib.resources
    import pathlib

    packaged = importlib.resources.files("hgm_engine").joinpath("docs/language.md")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source_tree = pathlib.Path(__file__).resolve().parents[3] / "docs" / "language.md"
    if source_tree.is_file():
        return source_tree.read_text(encoding="utf-8")
    raise ServiceError([Problem("missing-package", "docs/language.md is missing from this installation", where="hgm://language")])


def memory_language(service: MemoryService) -> str:
    """The language reference of one memory: :func:`language_reference`, then the names its
    schema gives the language (node types, edge types, relations: the steps a query may take).

    >>> from hgm_engine import Memory
    >>> text = memory_language(MemoryService(Memory()))
    >>> text.startswith(language_reference().rstrip()), "- relations (steps): actions, ancestors," in text
    (True, True)
    """
    schema = service.schema()
    names = [
        "## The names of this memory",
        "",
        "What its schema gives the language (get_schema has the rest):",
        "",
        "- node types: " + ", ".join(schema["node_types"]),
        "- edge types (for .out(TYPE) and .in(TYPE)): " + ", ".join(schema["edge_types"]),
        "- relations (steps): " + ", ".join(schema["relations"]),
    ]
    return language_reference().rstrip("\n") + "\n\n" + "\n".join(names) + "\n"


RESOURCES = RESOURCES + (
    Resource(
        "hgm://language",
        "language reference",
        "The path language of query, constraints and rule files (starts, steps, conditions, finals, "
        "search, limits, with examples: docs/language.md), ending with the names this memory's schema "
        "gives it: node types, edge types, relations.",
        memory_language,
        mime_type="text/markdown",
    ),
)
GLOBAL_RESOURCES: tuple[Resource, ...] = (
    Resource("hgm://memories", "memories", "The memories you may use, and the default one.", lambda access: access.list_memories("")),
)
MEMORY_RESOURCE_TEMPLATES: tuple[Resource, ...] = tuple(
    attrs.evolve(r, uri=MEMORY_URI + "{memory}/" + r.uri[len("hgm://"):], name=f"{r.name} of a memory",
                 description=f"{r.description} Of the memory named (its / written %2F: acme%2Falice).")
    for r in RESOURCES + RESOURCE_TEMPLATES
)


def _find_resource(uri: str) -> tuple[Callable[..., Any], tuple[str, ...]] | None:
    import urllib.parse

    for resource in RESOURCES:
        if resource.uri == uri:
            return resource.read, ()
    for template in RESOURCE_TEMPLATES:
        prefix = template.uri.split("{")[0]
        if uri.startswith(prefix) and len(uri) > len(prefix) and uri != "hgm://paths/metrics":
            return template.read, (urllib.parse.unquote(uri[len(prefix):]),)
    return None


def read_resource(
    target: Any,
    uri: str,
    *,
    grant: Grant = OPEN_ACCESS,
    default_memory: str = DEFAULT_MEMORY,
) -> tuple[Any, bool]:
    """The document at ``uri`` (one of :data:`RESOURCES` or a :data:`RESOURCE_TEMPLATES`
    match, of the default memory; the same under ``hgm://memories/NAME/`` for the memory
    ``NAME``; or one of :data:`GLOBAL_RESOURCES`; ``hgm://language`` is text);
    ``(document, is_error)`` as :func:`call_tool` answers, ``None`` document for a URI that
    names no resource. ``target`` and ``grant`` as for :func:`call_tool`.

    >>> from hgm_engine import Memory
    >>> service = MemoryService(Memory())
    >>> read_resource(service, "hgm://health")[0]["t"]
    0
    >>> read_resource(service, "hgm://nodes/nope")[0]["error"]["category"]
    'unknown-node'
    >>> read_resource(service, "hgm://memories/default/schema")[0]["node_types"][0]
    'goal'
    >>> read_resource(service, "hgm://memories/acme%2Falice/stale")[0]["error"]["category"]
    'unknown-memory'
    """
    import urllib.parse

    access = Access(memories_of(target), grant, default_memory)
    try:
        for resource in GLOBAL_RESOURCES:
            if resource.uri == uri:
                return resource.read(access), False
        name = default_memory
        inner = uri
        if uri.startswith(MEMORY_URI):
            encoded, slash, rest = uri[len(MEMORY_URI):].partition("/")
            if not slash or not rest:
                return None, True
            try:
                name = urllib.parse.unquote(encoded, errors="strict")
            except UnicodeDecodeError:
                name = encoded
            name = check_memory_name(name, where="memory")
            inner = "hgm://" + rest
        found = _find_resource(inner)
        if found is None:
            return None, True
        read, args = found
        grant.check(name)
        with access.memories.lease(name) as service:
            return read(service, *args), False
    except HGMError as err:
        return error_document(err), True
