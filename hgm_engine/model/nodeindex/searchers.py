"""Which index a query reads for a view: :class:`LexicalSearcher` (views of one graph's
lexical index), the registry of the searchers memories keep for their graphs
(:func:`register`, :func:`searcher_for`) and :func:`index_for`.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Sequence

from hgm_engine.model.graph import MemoryGraph
from hgm_engine.model.nodeindex.entries import Doc, SearchHit
from hgm_engine.model.nodeindex.lexical import IndexView, LexicalIndex

__all__ = ["LexicalSearcher", "register", "unregister", "searcher_for", "index_for"]


class LexicalSearcher:
    """What ``search`` and ``rank`` run on: views of one graph's lexical index.

    ``current()`` gives the index of the graph as it is now (a memory keeps it in step with
    every commit), or None to build one from the graph on first use (and again after the
    graph changed). A memory with an embedder answers through a searcher of its own that
    fuses these ranks with its vectors (``hgm_engine.search``); it offers the same methods.

    >>> g = MemoryGraph.from_records([("a", "fact", {"content": "hotel"})], [])
    >>> [hit.id for hit in LexicalSearcher().hits(g, "hotels", ("hotel",))]
    ['a']
    """

    def __init__(self, current: Callable[[], "LexicalIndex | None"] | None = None):
        self._current = current
        self._built: tuple[Any, int, LexicalIndex] | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        """One line for ``explain``: which index answers."""
        return "lexical node index (BM25 k1=1.2 b=0.75 over content, name, title, description and tags; Snowball English stems)"

    def index(self, graph: MemoryGraph) -> LexicalIndex:
        """The lexical index of ``graph`` as it is now."""
        if self._current is not None:
            found = self._current()
            if found is not None:
                return found
        with self._lock:
            built = self._built
            if built is None or built[0]() is not graph or built[1] != graph.version:
                built = (weakref.ref(graph), graph.version, LexicalIndex.build(graph))
                self._built = built
            return built[2]

    def view(self, view) -> IndexView:
        """The index as ``view`` sees it (see :func:`index_for`)."""
        if isinstance(view, MemoryGraph):
            return IndexView(self.index(view))
        base = getattr(view, "base", None)
        if not isinstance(base, MemoryGraph):
            return IndexView(LexicalIndex.build(view))  # any other view: what it holds
        return _overlay_view(self.index(base), base, view)

    def hits(self, view, text: str, terms: Sequence[str], *, top: int | None = None, node_type: str | None = None,
             charge: Callable[[int], None] | None = None) -> list[SearchHit]:
        """The nodes of ``view`` that match ``terms`` (``text`` is the query as written)."""
        return self.view(view).hits(terms, top=top, node_type=node_type, charge=charge)

    def rank(self, view, ids: Sequence[str], text: str, terms: Sequence[str]) -> list[str]:
        """``ids`` reordered by relevance to ``terms`` in ``view``."""
        return self.view(view).rank(ids, terms)


# overlay -> (its version, the index's identity and version, the view)
_VIEWS: "weakref.WeakKeyDictionary[Any, tuple[int, int, int, IndexView]]" = weakref.WeakKeyDictionary()
# graph -> the searcher a memory keeps for it, held weakly: the searcher (a memory's index
# keeper) refers to its graph, and a value of a weak-keyed dictionary that refers to its key
# keeps both alive for ever (a closed memory's graph was never freed).
_KEPT: "weakref.WeakKeyDictionary[MemoryGraph, weakref.ref]" = weakref.WeakKeyDictionary()
# graph -> a searcher that builds the index on first use (graphs nobody keeps an index for)
_BUILT: "weakref.WeakKeyDictionary[MemoryGraph, LexicalSearcher]" = weakref.WeakKeyDictionary()
_registry_lock = threading.RLock()


def _overlay_view(index: LexicalIndex, base: MemoryGraph, view) -> IndexView:
    version = getattr(view, "version", None)
    with _registry_lock:
        cached = _VIEWS.get(view)
        if cached is not None and cached[0] == version and cached[1] == id(index) and cached[2] == index.version:
            return cached[3]
    hidden: dict[str, Doc] = {}
    added: dict[str, Doc] = {}
    fields = index.fields
    for node_id, node in view.node_map().own_items():
        before = base.node(node_id)
        if node is before:
            continue
        if before is not None:
            doc = index.doc(node_id)
            if doc is not None:
                hidden[node_id] = doc
        if node is not None:
            doc = Doc.of(node, fields)
            if doc is not None:
                added[node_id] = doc
    result = IndexView(index, hidden, added)
    with _registry_lock:
        _VIEWS[view] = (version, id(index), index.version, result)
    return result


def register(graph: MemoryGraph, searcher: Any) -> None:
    """Say that ``searcher`` (a :class:`LexicalSearcher`, or one with the same methods)
    answers searches on ``graph`` and on every overlay over it. The registry holds it weakly:
    it answers for as long as its owner keeps it.

    >>> g = MemoryGraph(); kept = LexicalIndex.build(g)
    >>> searcher = LexicalSearcher(lambda: kept)
    >>> register(g, searcher); index_for(g).index is kept
    True
    >>> unregister(g)
    """
    with _registry_lock:
        _KEPT[graph] = weakref.ref(searcher)
        _BUILT.pop(graph, None)


def unregister(graph: MemoryGraph) -> None:
    with _registry_lock:
        _KEPT.pop(graph, None)


def searcher_for(view) -> Any:
    """The searcher that answers for ``view``: the one registered for its graph (an
    overlay's base graph), else one that builds a lexical index on first use."""
    graph = view if isinstance(view, MemoryGraph) else getattr(view, "base", None)
    if not isinstance(graph, MemoryGraph):
        return LexicalSearcher()
    with _registry_lock:
        kept = _KEPT.get(graph)
        found = kept() if kept is not None else None
        if found is None:
            found = _BUILT.get(graph)
            if found is None:
                found = _BUILT[graph] = LexicalSearcher()
        return found


def index_for(view) -> IndexView:
    """The lexical index a query on ``view`` reads: its graph's (kept by a memory, or built
    on first use), or for an overlay (a transaction, an earlier state) its base graph's index
    with the overlay's nodes hidden or replaced (remembered until either changes).

    >>> from hgm_engine.model.overlay import GraphOverlay
    >>> g = MemoryGraph.from_records([("a", "fact", {"content": "hotel"})], [])
    >>> o = GraphOverlay(g); _ = o.set_node_attrs("a", {"content": "museum"})
    >>> [h.id for h in index_for(o).hits(("museum",))], [h.id for h in index_for(g).hits(("museum",))]
    (['a'], [])
    """
    searcher = searcher_for(view)
    if isinstance(searcher, LexicalSearcher):
        return searcher.view(view)
    return searcher.lexical_view(view)
