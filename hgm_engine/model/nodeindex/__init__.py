"""The node index: every node's text (:mod:`hgm_engine.model.text`) in an inverted index that
``search(TEXT)`` and ``.rank(TEXT)`` read, ranked by BM25.

Three layers make one state's index, each cheap where it has to be:

- a :class:`Segment` — many nodes in columns (numpy): postings by term, each node's terms,
  lengths, creation numbers and types. It never changes once built; it is what a store
  saves (:meth:`Segment.to_bytes`) and reads back without analysing any text;
- a :class:`LexicalIndex` — a segment plus the nodes changed since it was built (a small
  dictionary), kept in step with the current graph by :meth:`LexicalIndex.update`, and
  folded into a new segment by :meth:`LexicalIndex.compact` when that grows;
- an :class:`IndexView` — an index as a transaction's overlay or an earlier state
  (``as_of``) sees it: the nodes that view changes hidden or replaced, the statistics with
  them (cost: the nodes the view changes).

**Score.** BM25 with ``k1 = 1.2``, ``b = 0.75`` and the non-negative IDF
``ln(1 + (N − df + 0.5) / (df + 0.5))``, over the view's own statistics (``N`` nodes with text,
their average length, each term's document frequency), summed over the distinct terms of the
query in sorted order, in float64 — so a node scores exactly the same wherever it sits
(segment, changed nodes, view), in every process. **Order**: nodes that contain every term
of the query first, then by score, then by creation order (``seq``); ``.rank`` keeps the
list's order among equals and puts the nodes that match nothing after the others.

:func:`index_for` gives the index a query reads for any view: the one a memory keeps for its
current graph (:func:`register`), or one built on first use for a graph nobody keeps one
for (and built again when that graph has changed).

>>> from hgm_engine.model.graph import MemoryGraph
>>> g = MemoryGraph()
>>> _ = g.add_node("a", "action", {"content": "Book a hotel near Wangfujing"})
>>> _ = g.add_node("b", "action", {"content": "Pay the hotel deposit"})
>>> _ = g.add_node("c", "fact", {"content": "The hotel is near the station", "tags": ["hotel"]})
>>> view = index_for(g)
>>> [hit.id for hit in view.hits(query_terms("hotel near"))]
['c', 'a', 'b']
>>> view.rank(["b", "a", "c"], query_terms("deposit"))
['b', 'a', 'c']

The package, by job: :mod:`~hgm_engine.model.nodeindex.entries` (a node's text and entry, a
query's terms, a search's hit), :mod:`~hgm_engine.model.nodeindex.segment` (the columns and
their bytes: what a store keeps), :mod:`~hgm_engine.model.nodeindex.lexical` (the index of a
state and of a view, BM25) and :mod:`~hgm_engine.model.nodeindex.searchers` (which index a
query reads). Dense vectors are :mod:`hgm_engine.retrieval.vectors`'.
"""

from __future__ import annotations

from hgm_engine.model.graph import MemoryGraph  # noqa: F401 (the examples above)
from hgm_engine.model.nodeindex.entries import (
    DEFAULT_FIELDS,
    Doc,
    SearchHit,
    TextFields,
    entries_of,
    query_terms,
    text_changes,
    word_forms,
)
from hgm_engine.model.nodeindex.lexical import B, K1, IndexView, LexicalIndex
from hgm_engine.model.nodeindex.searchers import LexicalSearcher, index_for, register, searcher_for, unregister
from hgm_engine.model.nodeindex.segment import INDEX_FORMAT, Segment

__all__ = [
    "K1",
    "B",
    "INDEX_FORMAT",
    "Doc",
    "Segment",
    "LexicalIndex",
    "IndexView",
    "SearchHit",
    "TextFields",
    "DEFAULT_FIELDS",
    "query_terms",
    "text_changes",
    "entries_of",
    "index_for",
    "searcher_for",
    "LexicalSearcher",
    "register",
    "unregister",
    "word_forms",
]
