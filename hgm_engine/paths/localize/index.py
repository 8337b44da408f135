"""PathIndex: stored paths, indexed for path-level localization, and ``locate``.

Per path the index keeps its tags (an inverted index), a text vector of goal and steps (from
the embedder), one lexical vector per step (for *entry-step* recall), its structural signature
(step names and edges; paths with equal signatures form one group) and, per step name, a
lexical profile learned from the stored step texts (to see where a request mentions a step).
Every one of these is updated incrementally by :meth:`PathIndex.add`, :meth:`PathIndex.remove`
and :meth:`PathIndex.update`; nothing is rebuilt when paths come and go.

``locate`` recalls candidates (text, entry steps, tags and an optional ``expand`` callback
that walks the memory graph from the entry paths), merges them by structure, scores every
structure with the components of :mod:`hgm_engine.paths.localize.scoring`, keeps templates back
unless nothing else matched, and places superseded and failed versions below their
replacements. It never touches the network unless the embedder does (the default does not).

``PathIndex`` is the facade of the modules that do each job: what it holds, kept one path at a
time (:mod:`.contents`, with its vector stores in :mod:`.postings`, the step-name profiles in
:mod:`.profiles`), saving and restoring it (:mod:`.persist`), recall (:mod:`.recall`), the
expansion walk (:mod:`.expansion`) and scoring, the vote and the order of versions
(:mod:`.ranking`); the answers are :mod:`.results`.

>>> index = PathIndex()
>>> index.add(PathRecord.create("o1", "Check the status of order A1001",
...     ["query_order", "notify_user"], tags=["order"], result="success", reward=1.0))
>>> index.add(PathRecord.create("o2", "Where is my order B7? tell me",
...     ["query_order", "notify_user"], tags=["order"], result="success", reward=1.0))
>>> index.add(PathRecord.create("r1", "Refund order A1001",
...     ["check_refund_policy", "apply_refund"], tags=["refund"], result="success"))
>>> best = index.locate("what is the status of order C3", tags=["order"], k=2).matches[0]
>>> best.steps, best.supporting
(('query_order', 'notify_user'), ('o1', 'o2'))
>>> sorted(best.breakdown)
['completeness', 'freshness', 'order', 'reward', 'steps', 'structure', 'support', 'tags', 'text', 'version', 'vote']
"""

from __future__ import annotations

import zlib
from typing import Any, Iterable, Mapping, Sequence

from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.contents import IndexContents
from hgm_engine.paths.localize.embedders import Embedder, HashedTfidfEmbedder
from hgm_engine.paths.localize.expansion import shared_step_expander
from hgm_engine.paths.localize.persist import (
    INDEX_BYTES_FORMAT,
    INDEX_STATE_FORMAT,
    contents_to_bytes,
    read_saved,
    restore_contents,
)
from hgm_engine.paths.localize.ranking import rank
from hgm_engine.paths.localize.recall import recall
from hgm_engine.paths.localize.records import PathRecord
from hgm_engine.paths.localize.results import Expander, LocateResult, Match
from hgm_engine.paths.localize.scoring import ScoreConfig

__all__ = ["PathIndex", "Match", "LocateResult", "Expander", "INDEX_STATE_FORMAT", "INDEX_BYTES_FORMAT"]


class PathIndex:
    """The path index. ``PathIndex()`` uses the model-free default embedder.

    Paths are held by id; :meth:`add` refuses an id it already has (use :meth:`update`),
    :meth:`remove` and :meth:`update` refuse one it does not (category ``unknown-path``).
    :attr:`contents` is what the index holds of its paths (:class:`~.contents.IndexContents`).
    """

    def __init__(self, embedder: Embedder | None = None, config: ScoreConfig | None = None):
        self.embedder: Embedder = embedder if embedder is not None else HashedTfidfEmbedder()
        self.config = config if config is not None else ScoreConfig()
        self.contents = IndexContents(sparse=self.embedder.sparse)

    # -- construction and persistence ----------------------------------------------------------

    @classmethod
    def from_records(cls, records: Iterable[PathRecord], embedder: Embedder | None = None,
                     config: ScoreConfig | None = None) -> "PathIndex":
        """An index holding ``records`` (added in order, embedded in one batch).

        >>> PathIndex.from_records([PathRecord.create("p", "g", ["a"])]).ids()
        ['p']
        """
        index = cls(embedder, config)
        index.add_many(records)
        return index

    def to_state(self) -> dict[str, Any]:
        """JSON-able state: the records in creation order, and dense vectors when the embedder
        is a model (sparse vectors are recomputed from the records, which is cheap).

        >>> index = PathIndex.from_records([PathRecord.create("p", "g", ["a"])])
        >>> PathIndex.from_state(index.to_state()).ids()
        ['p']
        """
        contents = self.contents
        slots = contents.slots_in_order()
        state: dict[str, Any] = {
            "format": INDEX_STATE_FORMAT,
            "embedder": self.embedder.name,
            "config": self.config.to_json(),
            "paths": [contents.record_at[s].to_json() for s in slots],
        }
        if not self.embedder.sparse:
            state["vectors"] = [contents.text.vector(s) for s in slots]  # type: ignore[union-attr]
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, Any], embedder: Embedder | None = None,
                   config: ScoreConfig | None = None) -> "PathIndex":
        """The index :meth:`to_state` described. Stored dense vectors are reused only when the
        embedder has the same name; otherwise every path is embedded again."""
        if not isinstance(state, Mapping) or state.get("format") != INDEX_STATE_FORMAT:
            raise LocalizationError.single("bad-state", f"not a {INDEX_STATE_FORMAT} state")
        try:
            records = [PathRecord.from_json(doc) for doc in state["paths"]]
            if config is None and "config" in state:
                config = ScoreConfig.from_json(state["config"])
        except (KeyError, TypeError) as exc:
            raise LocalizationError.single("bad-state", f"malformed index state: {exc}") from exc
        index = cls(embedder, config)
        vectors = state.get("vectors")
        if (not index.embedder.sparse and vectors is not None
                and state.get("embedder") == index.embedder.name and len(vectors) == len(records)):
            index.contents.add_all(records, vectors)
        else:
            index.add_many(records)
        return index

    def to_bytes(self) -> bytes:
        """Everything the index computed, as one ``bytes`` (:data:`INDEX_BYTES_FORMAT`) that
        :meth:`from_bytes` restores without embedding or normalising any text again: the
        postings of the text and step vectors, the step-name word profiles, tags, structures
        and versions as arrays, and the records as compressed JSON read only when a path is
        first looked at. Needs numpy (``bad-state`` without it).

        >>> index = PathIndex.from_records([PathRecord.create("p", "book a flight", ["search", "book"])])
        >>> again = PathIndex.from_bytes(index.to_bytes())
        >>> again.ids(), again.locate("flight booking").paths
        (['p'], ['p'])
        """
        return contents_to_bytes(self.contents, self.embedder, self.config)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, embedder: Embedder | None = None,
                   config: ScoreConfig | None = None) -> "PathIndex":
        """The index :meth:`to_bytes` saved, ready at once: arrays become the postings as they
        are, and a path's record (and what scoring reads of it) is made the first time it is
        looked at. Refused (``bad-state``) when the bytes are not such a state, or when they
        were made with another embedder, word normaliser or stemmer version than this index
        would use — the caller then builds the index from its records instead."""
        header, arrays = read_saved(data)
        try:
            if config is None:
                config = ScoreConfig.from_json(header["config"])
            index = cls(embedder, config)
            restore_contents(index.contents, header, arrays, index.embedder)
        except (KeyError, TypeError, ValueError, IndexError, zlib.error) as exc:
            raise LocalizationError.single("bad-state", f"malformed saved path index: {exc!r}") from None
        return index

    # -- incremental updates -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.contents.slot_of)

    def __contains__(self, path_id: object) -> bool:
        return path_id in self.contents.slot_of

    def get(self, path_id: str) -> PathRecord | None:
        """The record with this id, or None."""
        slot = self.contents.slot_of.get(path_id)
        return None if slot is None else self.contents.record_at[slot]

    def ids(self) -> list[str]:
        """Path ids in creation order."""
        record_at = self.contents.record_at
        return [record_at[s].id for s in self.contents.slots_in_order()]

    def records(self) -> list[PathRecord]:
        """Records in creation order."""
        record_at = self.contents.record_at
        return [record_at[s] for s in self.contents.slots_in_order()]

    def add(self, record: PathRecord) -> None:
        """Index one path (refuses an id the index already holds: category ``duplicate-path``)."""
        self.add_many([record])

    def add_many(self, records: Iterable[PathRecord]) -> None:
        """Index several paths, embedding their texts in one batch (nothing is added if one is refused)."""
        batch = list(records)
        seen: set[str] = set()
        for record in batch:
            if not isinstance(record, PathRecord):
                raise LocalizationError.single("bad-path", f"not a PathRecord: {type(record).__name__}")
            if record.id in self.contents.slot_of or record.id in seen:
                raise LocalizationError.single(
                    "duplicate-path", f"path {record.id!r} is already indexed (use update)", where=record.id
                )
            seen.add(record.id)
        if not batch:
            return
        vectors = self.embedder.embed_documents([self._embed_text(r) for r in batch])
        self.contents.add_all(batch, vectors)

    def remove(self, path_id: str) -> PathRecord:
        """Drop one path from every index; returns its record."""
        if path_id not in self.contents.slot_of:
            raise LocalizationError.single("unknown-path", f"no path {path_id!r} in the index", where=path_id)
        return self.contents.remove(path_id)

    def update(self, record: PathRecord) -> None:
        """Replace the stored path with the same id (its creation order is kept)."""
        contents = self.contents
        if record.id not in contents.slot_of:
            raise LocalizationError.single("unknown-path", f"no path {record.id!r} in the index", where=record.id)
        vector = self.embedder.embed_documents([self._embed_text(record)])[0]
        seq = contents.seq_at[contents.slot_of[record.id]]
        self.remove(record.id)
        contents.add_all([record], [vector], seqs=[seq])

    def _embed_text(self, record: PathRecord) -> str:
        if self.embedder.sparse:
            return record.text()
        # Models read sentences: goal and step texts, names only where a step has no text.
        return " ".join([record.goal] + [s.text or s.name for s in record.steps])

    # -- versions ------------------------------------------------------------------------------

    def effective_status(self, path_id: str) -> str:
        """The record's status, except that an active path another indexed path ``replaces``
        counts as superseded (a rewrite that forgot to mark the old version still wins)."""
        record = self.get(path_id)
        if record is None:
            raise LocalizationError.single("unknown-path", f"no path {path_id!r} in the index", where=path_id)
        if record.status == "active" and self.contents.replaced_by.get(path_id):
            return "superseded"
        return record.status

    def replacements(self, path_id: str) -> set[str]:
        """Every indexed path that replaces ``path_id``, directly or through later versions."""
        return self.contents.replacements(path_id)

    # -- graph expansion -----------------------------------------------------------------------

    def shared_step_expander(self, hops: int = 2, *, entries: int = 10, per_step: int = 50) -> Expander:
        """An :data:`Expander` over the index's own path–step graph: from the ``entries`` best
        entry paths to their step names (one hop) and on to paths with *other* structures that
        use them (two hops); ``hops=4`` walks once more from those.

        It adds one path per structure (the newest), at most ``per_step`` structures per step
        name (the oldest first, so the walk is deterministic). The memory graph's own walk
        (``parent_of``/``before``/``replaces`` edges) plugs into ``locate`` the same way once
        paths are stored there.
        """
        return shared_step_expander(self.contents, hops, entries=entries, per_step=per_step)

    # -- locate --------------------------------------------------------------------------------

    def locate(
        self,
        text: str,
        tags: Iterable[str] = (),
        k: int = 5,
        *,
        steps: Sequence[str] | None = None,
        scenario: str | None = None,
        cross_scenario: bool = False,
        exclude: Iterable[str] = (),
        expand: Expander | None = None,
        config: ScoreConfig | None = None,
    ) -> LocateResult:
        """The ``k`` best structures for a request, best first (see :mod:`.scoring`).

        ``tags`` are the query's tags; ``steps`` the step names the caller expects, if any (it
        then decides the ``structure`` component); ``scenario`` keeps to paths of that scenario
        and paths without one unless ``cross_scenario``; ``exclude`` drops paths by id;
        ``expand`` brings more candidates from the entry paths (see :meth:`shared_step_expander`).

        >>> index = PathIndex()
        >>> index.add(PathRecord.template("t", "when a call times out", ["retry", "fallback"]))
        >>> [m.path for m in index.locate("the payment API timed out").matches]
        ['t']
        >>> index.add(PathRecord.create("p", "payment API timed out twice", ["retry", "alert"]))
        >>> [m.path for m in index.locate("the payment API timed out").matches]
        ['p']
        """
        cfg = config if config is not None else self.config
        if k <= 0:
            raise LocalizationError.single("bad-query", f"k must be positive, not {k}")
        query_tags = set(tags) if cfg.use_tags else set()
        text = text or ""
        found = recall(self.contents, self.embedder, text, query_tags, cfg, scenario=scenario,
                       cross_scenario=cross_scenario, excluded=exclude, expand=expand)
        return rank(self.contents, text, found, steps, cfg, k)
