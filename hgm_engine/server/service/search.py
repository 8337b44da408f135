"""The service's verbs over the node index (hgm_engine.retrieval; docs/language.md §8):
``search`` by text, what the index holds, and setting the memory's embedder.

>>> from hgm_engine import Memory
>>> SearchVerbs(Memory()).search("museum")["hits"]
[]
"""

from __future__ import annotations

from typing import Any

from hgm_engine.server.service.checks import check_text, fail, t_or_name
from hgm_engine.server.service.core import ServiceCore

__all__ = ["SearchVerbs"]


class SearchVerbs(ServiceCore):
    """Search by text and the node index (see the module)."""

    def search(
        self, text: Any, node_type: Any = None, limit: Any = 10, as_of: int | str | None = None,
        coarse: Any = False, summaries: Any = 3,
    ) -> dict[str, Any]:
        """The nodes whose text matches ``text``, most relevant first, with their scores and
        the words that matched: ``{"query", "t", "hits": [{"id", "type", "score", "matched",
        "node"}, ...]}``; at most ``limit`` (0 to ``max_search_hits``), of ``node_type`` only
        when given, ``as_of`` an earlier state; with ``coarse``, the summaries first (the best
        ``summaries`` of them, 1 to 1000) and ``coarse`` in the answer says what each step did.

        >>> from hgm_engine import Memory

        >>> from hgm_engine.server.service import MemoryService
        >>> s = MemoryService(Memory())
        >>> _ = s.transact({"ops": [{"op": "add_node", "id": "f", "type": "fact", "content": "The museum opens at nine"}]})
        >>> [(hit["id"], hit["matched"]) for hit in s.search("museums")["hits"]]
        [('f', ['museums'])]
        >>> s.search("the")
        Traceback (most recent call last):
        ...
        hgm_engine.errors.SearchError: invalid-argument: search needs a text with a word to search for; 'the' has none (every word in it is a stop word)
        """
        check_text(text=text, type=node_type)
        if isinstance(text, str) and len(text) > self.limits.max_query_length:
            raise fail(
                "limit-exceeded",
                f"'text' is {len(text):,} characters long; this server takes at most {self.limits.max_query_length:,}",
                "text",
            )
        if node_type is not None and not isinstance(node_type, str):
            raise fail("invalid-argument", "'type' must be a node type name (a string)", "type")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= self.limits.max_search_hits:
            raise fail("invalid-argument", f"'limit' must be an integer from 0 to {self.limits.max_search_hits}", "limit")
        if not isinstance(coarse, bool):
            raise fail("invalid-argument", "'coarse' must be true or false", "coarse")
        if isinstance(summaries, bool) or not isinstance(summaries, int) or not 1 <= summaries <= 1000:
            raise fail("invalid-argument", "'summaries' must be an integer from 1 to 1000", "summaries")
        as_of = t_or_name(as_of, "as_of")
        self.fresh()
        t = self.memory.t if as_of is None else self.resolve(as_of, "as_of")
        options: dict[str, Any] = {"coarse": True, "summaries": summaries} if coarse else {}
        hits = self.memory.search(text, type=node_type, limit=limit, as_of=None if as_of is None else t, **options)
        answer: dict[str, Any] = {"query": text, "t": t, "hits": list(hits)}
        if coarse:  # summaries first, then the nodes they cover (docs/time.md)
            answer["coarse"] = hits.coarse
        return answer

    def search_status(self) -> dict[str, Any]:
        """What the node index holds (``Memory.search_status``)."""
        self.fresh()
        return self.memory.search_status()

    def configure_search(self, embedder: Any, base_url: Any = None, min_similarity: Any = None) -> dict[str, Any]:
        """Set the memory's embedder (a name, or None for words only): every node's text is
        embedded now, and nothing changes when the embedder fails (``embedder``, 503)."""
        if embedder is not None and not isinstance(embedder, str):
            raise fail("invalid-argument", "'embedder' must be minilm, openai, openai:MODEL or null", "embedder")
        if base_url is not None and not isinstance(base_url, str):
            raise fail("invalid-argument", "'base_url' must be a URL (a string)", "base_url")
        if min_similarity is not None and (isinstance(min_similarity, bool) or not isinstance(min_similarity, (int, float))):
            raise fail("invalid-argument", "'min_similarity' must be a number from -1 to 1", "min_similarity")
        check_text(embedder=embedder, base_url=base_url)
        self.fresh()
        return self.memory.configure_search(embedder=embedder, base_url=base_url, min_similarity=min_similarity)
