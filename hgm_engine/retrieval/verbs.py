"""The search verbs of a memory — ``search``, ``configure_search``, ``search_status`` — over
its node index (:class:`~hgm_engine.retrieval.NodeSearch`), which :class:`SearchVerbs` owns.

``Memory`` forwards these verbs here (``hgm_engine/facade.py``); the query executor's
``search(TEXT)`` and ``.rank(TEXT)`` read the same index through the model layer.

>>> from hgm_engine import Memory
>>> m = Memory()
>>> _ = m.apply({"ops": [{"op": "add_node", "id": "f", "type": "fact", "content": "The hotel costs 800 CNY"}]})
>>> [hit["id"] for hit in m.search("hotels")], m.search_status()["nodes"]
(['f'], 1)
"""

from __future__ import annotations

import builtins
from typing import Any

from hgm_engine.errors import Problem, QueryExecutionError, SearchError
from hgm_engine.model import closest
from hgm_engine.model.nodeindex import query_terms, searcher_for, word_forms
from hgm_engine.query.analyze import search_text_problem
from hgm_engine.retrieval.keeper import NodeSearch

__all__ = ["SearchVerbs"]


class SearchVerbs:
    """The search verbs of ``memory`` (a :class:`~hgm_engine.Memory`: its ``state``,
    ``schema``, ``limits`` and ``resolve_t`` are read at each call, so a schema change is
    seen) and the node index they read (:attr:`index`), which every commit keeps through
    :meth:`store_hook`."""

    def __init__(self, memory: Any):
        self.memory = memory
        self.index = NodeSearch(memory.state)

    def store_hook(self, commit: Any, view: Any) -> None:
        """Keep the node index in ``commit``'s store transaction (the memory's store hook)."""
        self.index.store_hook(commit, view)

    def reset(self) -> None:
        """Index the state anew (after a purge: the index held the purged nodes' terms)."""
        self.index = NodeSearch(self.memory.state)

    def search(
        self,
        text: str,
        *,
        type: str | None = None,
        limit: int | None = 10,
        as_of: int | str | None = None,
    ) -> list[dict[str, Any]]:
        """The nodes whose text matches ``text``, most relevant first: ``search(TEXT)``
        (docs/language.md §8) with each node's score and the words of ``text`` it contains.

        Each hit is ``{"id", "type", "score", "matched", "node"}``; with an embedder set, also
        ``similarity`` (cosine, None when not among the nearest texts) and ``lexical`` (the
        BM25 score, None when no word matched), ``score`` being the fused one. ``type`` keeps
        nodes of that type only, ``limit`` the first ``limit`` (None: all); ``as_of`` searches
        an earlier state. Bad input is a :class:`SearchError` (``invalid-argument``).

        >>> from hgm_engine import Memory
        >>> m = Memory()
        >>> _ = m.apply({"ops": [{"op": "add_node", "id": "h", "type": "entity", "name": "Beijing Hotel"},
        ...     {"op": "add_node", "id": "f", "type": "fact", "content": "The hotel costs 800 CNY per night"}]})
        >>> [(hit["id"], hit["matched"]) for hit in m.search("hotels in Beijing")]
        [('h', ['hotels', 'beijing']), ('f', ['hotels'])]
        >>> m.search("hotel", type="fact", limit=1)[0]["node"]["content"]
        'The hotel costs 800 CNY per night'
        """
        memory = self.memory
        limits, schema = memory.limits, memory.schema
        problem = search_text_problem(text, limits)
        if problem is not None:
            raise SearchError.single("limit-exceeded" if "Limits.max_search_length" in problem else "invalid-argument", problem)
        if limit is not None and (builtins.type(limit) is not int or limit < 0):
            raise SearchError.single("invalid-argument", f"limit must be an integer >= 0 or None, not {limit!r}")
        if type is not None and type not in schema.node_types:
            near = closest(type, schema.node_types) if isinstance(type, str) else None
            hint = f"; did you mean {near!r}?" if near else f" (known: {', '.join(schema.node_types)})"
            raise SearchError.single("invalid-argument", f"unknown node type {type!r}{hint}")
        terms = query_terms(text)
        forms = word_forms(text)
        budget = [limits.max_work]

        def charge(amount: int) -> None:
            if budget[0] is not None:
                budget[0] -= amount
                if budget[0] < 0:
                    raise QueryExecutionError(
                        [Problem("limit-exceeded", f"the search read more than {limits.max_work} postings (Limits.max_work)")]
                    )

        state = memory.state
        with state.lock.reading():
            self.index.ensure()
            t = state.t if as_of is None else memory.resolve_t(as_of)
            view = state.view_at(t)
            hits = searcher_for(view).hits(view, text, terms, top=limit, node_type=type, charge=charge)
            nodes = view.node_map()
            out = []
            for hit in hits:
                node = nodes[hit.id]
                entry: dict[str, Any] = {
                    "id": hit.id,
                    "type": node.type,
                    "score": round(hit.score, 6),
                    "matched": [word for term, words in forms.items() if term in hit.terms for word in words],
                }
                if hit.similarity is not None or hit.lexical is not None:
                    entry["similarity"] = None if hit.similarity is None else round(hit.similarity, 6)
                    entry["lexical"] = None if hit.lexical is None else round(hit.lexical, 6)
                entry["node"] = node.to_json()
                out.append(entry)
            return out

    def configure_search(
        self, *, embedder: Any, base_url: str | None = None, min_similarity: float | None = None
    ) -> dict[str, Any]:
        """Set this memory's embedder — ``"minilm"``, ``"openai"`` or ``"openai:MODEL"`` (at
        ``base_url``, else ``OPENAI_BASE_URL``; the key from ``OPENAI_API_KEY``, never stored),
        an embedder object of your own (``name``, ``embed_documents(texts)``,
        ``embed_query(text)``; give it again after reopening) — or None for words only.
        ``min_similarity`` is the cosine similarity a node's text needs to the query to match
        by meaning (default 0.35). Every node's text without a vector of that model is
        embedded now, in one store transaction with the setting: an embedder that is unknown,
        cannot be loaded or fails is a :class:`SearchError` (``embedder``) and changes
        nothing. The setting is kept with the memory; from then on every commit embeds the
        texts it adds, and fails whole when the embedder does. Returns :meth:`search_status`.

        >>> from hgm_engine import Memory
        >>> Memory().configure_search(embedder="bert")
        Traceback (most recent call last):
          ...
        hgm_engine.errors.SearchError: unknown-embedder: unknown embedder 'bert': use minilm, openai or openai:MODEL (or none for words only)
        """
        with self.memory.state.write_lock:  # no commit of this process meanwhile
            return self.index.configure(embedder, base_url=base_url, min_similarity=min_similarity)

    def search_status(self) -> dict[str, Any]:
        """What the node index holds: ``t``, ``nodes`` with text, ``terms``, where it came from
        (``source``: ``stored`` read from the store, ``built`` indexed from the state), the
        embedder and its vectors.

        >>> from hgm_engine import Memory
        >>> Memory().search_status()["nodes"]
        0
        """
        with self.memory.state.lock.reading():
            self.index.ensure()
            return self.index.status()
