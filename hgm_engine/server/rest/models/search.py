"""The models of the search routes (the node index: hgm_engine.retrieval; docs/search.md).

>>> SearchRequest.model_validate({"text": "hotel price"}).limit
10
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from hgm_engine.server.rest.models.common import AsOf, NonBlank, OPEN, STRICT, int_in
from hgm_engine.server.rest.models.reads import NodeModel

__all__ = ["SearchRequest", "SearchHitModel", "SearchModel", "EmbedderModel", "IndexStatusModel", "IndexConfigRequest"]


class SearchRequest(BaseModel):
    """Nodes whose text matches, most relevant first (search(TEXT), docs/search.md)."""

    model_config = STRICT
    text: NonBlank = Field(description="What to look for, in words: 'hotel price', 'closed on Monday'.")
    type: str | None = Field(None, description="Only nodes of this type (goal, action, entity, fact, result).")
    limit: int_in(0, None) = Field(10, description="How many nodes at most (up to the server's max_search_hits, 1,000 by default).")
    as_of: AsOf | None = Field(None, description="Search the state at this t, or at a snapshot name.")
    coarse: bool = Field(False, description="Summaries first: read the summaries, then rank only the nodes the best of them cover (and those no summary covers).")
    summaries: int_in(1, 1000) = Field(3, description="With coarse: how many summaries to keep.")


class SearchHitModel(BaseModel):
    """One node found: its score (the fused one with an embedder), the words of the text it
    contains, and with an embedder its cosine ``similarity`` and BM25 ``lexical`` score (None
    when it did not match that way)."""

    model_config = OPEN
    id: str
    type: str
    score: float
    matched: list[str] = Field(description="The words of the text the node contains (by stem), in the text's order.")
    similarity: float | None = None
    lexical: float | None = None
    via: str | None = Field(None, description="With coarse: the chosen summary that covers the node (None: no summary does).")
    node: NodeModel


class SearchModel(BaseModel):
    """The hits of a search, most relevant first, and the state read; with ``coarse``, what
    the summaries-first steps did (``summaries`` read, ``chosen`` with their scores, ``fine``:
    nodes ranked and left out, and ``fallback`` when no summary matched)."""

    query: str
    t: int
    hits: list[SearchHitModel]
    coarse: dict[str, Any] | None = None


class EmbedderModel(BaseModel):
    """The memory's embedder: its name and model, the size of its vectors, the similarity a
    text needs, how many vectors are kept (None: not read yet)."""

    model_config = OPEN
    name: str
    model: str
    dimensions: int | None
    min_similarity: float
    vectors: int | None
    base_url: str | None = None


class IndexStatusModel(BaseModel):
    """What the node index holds: the t it is at, nodes with text, terms, how it was read
    (``stored``: from the store, ``built``: from the state), the fields it reads, the embedder."""

    model_config = OPEN
    t: int
    nodes: int
    terms: int
    changed_entries: int
    kept_in_store: bool
    source: str
    open_seconds: float | None
    fields: list[str]
    embedder: EmbedderModel | None
    score: str
    last_problem: str | None


class IndexConfigRequest(BaseModel):
    """The memory's embedder for the node index: every node's text is embedded at once, in one
    transaction with the setting (an embedder that fails changes nothing)."""

    model_config = STRICT
    embedder: str | None = Field(description="minilm, openai, openai:MODEL, or null for words only.")
    base_url: str | None = Field(None, description="An OpenAI-compatible endpoint (default: the server's OPENAI_BASE_URL).")
    min_similarity: float | None = Field(None, ge=-1, le=1, description="Cosine a text needs to match by meaning (default 0.35).")
