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
['completeness', 'freshness', 'reward', 'steps', 'structure', 'support', 'tags', 'text', 'version']
"""

from __future__ import annotations

import heapq
import math
import operator
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from hgm_engine.paths.localize.embedders import Embedder, HashedTfidfEmbedder, feature_id
from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.records import PathRecord
from hgm_engine.paths.localize.scoring import (
    ScoreConfig,
    combine,
    freshness,
    StepOrder,
    jaccard,
    reward_component,
    sequence_similarity,
    support,
)

__all__ = ["PathIndex", "Match", "LocateResult", "Expander", "INDEX_STATE_FORMAT"]

INDEX_STATE_FORMAT = "hgm-path-index/1"

# expand(entry path ids) -> more candidate path ids (e.g. a walk through the memory graph).
Expander = Callable[[Sequence[str]], Iterable[str]]

_PMI_SMOOTHING = 0.5
_MAX_DF_RATIO = 0.5      # words in more than half of the documents are ignored ...
_MIN_COMMON_DOCS = 20    # ... once there are enough documents to say so
_second = operator.itemgetter(1)


@attrs.frozen
class Match:
    """One located result: a structure, the path that represents it and why it scored so.

    ``supporting`` lists the recalled paths that share the structure, best first (the
    representative ``path`` is the first); ``paths_with_structure`` counts every indexed path
    with it. ``breakdown`` holds every component of ``score`` plus the ``version`` factor.
    """

    path: str
    score: float
    goal: str
    steps: tuple[str, ...]
    breakdown: Mapping[str, float]
    supporting: tuple[str, ...]
    paths_with_structure: int
    status: str
    version: int
    structure: str

    def to_json(self) -> dict[str, Any]:
        """The match as in formats.md (``path``, ``score``, ``goal``, ``steps``, ``breakdown``) and more."""
        return {
            "path": self.path,
            "score": round(self.score, 6),
            "goal": self.goal,
            "steps": list(self.steps),
            "breakdown": {k: round(v, 6) for k, v in self.breakdown.items()},
            "supporting": list(self.supporting),
            "paths_with_structure": self.paths_with_structure,
            "status": self.status,
            "version": self.version,
            "structure": self.structure,
        }


@attrs.frozen
class LocateResult:
    """Matches best first, and how many candidates each recall channel brought; ``coarse``,
    for a coarse-to-fine locate, what its summary step chose and what the fine step ranked."""

    matches: tuple[Match, ...]
    recalled: Mapping[str, int]
    coarse: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"matches": [...]}`` as ``hgm locate --json`` prints it, with ``recalled`` beside
        (and ``coarse`` after a coarse-to-fine locate)."""
        doc = {"matches": [m.to_json() for m in self.matches], "recalled": dict(self.recalled)}
        if self.coarse is not None:
            doc["coarse"] = dict(self.coarse)
        return doc

    @property
    def paths(self) -> list[str]:
        return [m.path for m in self.matches]


class _Signature(tuple):
    """A structural signature (``PathRecord.signature``) that hashes once: the index keys
    groups by it for every step name of a path, and a long path's tuple is long."""

    _hash: int

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            self._hash = tuple.__hash__(self)
            return self._hash


@attrs.frozen(slots=True)
class _Shape:
    """What scoring reads of a record, computed once when it is added."""

    names: tuple[str, ...]
    signature: tuple
    order: StepOrder
    is_template: bool
    completeness: float


@attrs.define(slots=True)
class _Scored:
    """A scored structure before it becomes a :class:`Match` (only the best k ever do)."""

    score: float
    path: str
    slots: list[int]
    components: dict[str, float]
    status: str
    version: float


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:  # everything works without numpy, only slower
        return None
    return numpy


class _SparsePostings:
    """An inverted index of L2-normalised sparse vectors; the IDF comes from list lengths.

    With numpy, each word's postings are two growable arrays (doc ids, weights) and a query
    adds whole lists into one score array, so a common word costs one vector operation; a
    removal swaps the last posting into the hole. Without numpy they are Python lists and
    scores accumulate in a dict — the same results, slower.
    """

    def __init__(self, use_numpy: bool = True) -> None:
        self.np = _numpy() if use_numpy else None
        self.postings: dict[int, list[Any]] = {}    # word -> [ids, weights, length]
        self.vectors: dict[int, dict[int, float]] = {}
        self.free: list[int] = []
        self.size = 0                               # one past the largest doc id ever used

    def __len__(self) -> int:
        return len(self.vectors)

    def new_doc_id(self) -> int:
        if self.free:
            return self.free.pop()
        self.size += 1
        return self.size - 1

    def add(self, doc: int, raw: Mapping[int, float]) -> None:
        norm = math.sqrt(sum(w * w for w in raw.values()))
        vector = {f: w / norm for f, w in raw.items()} if norm > 0 else {}
        self.vectors[doc] = vector
        self.size = max(self.size, doc + 1)
        np = self.np
        for fid, weight in vector.items():
            entry = self.postings.get(fid)
            if np is None:
                if entry is None:
                    self.postings[fid] = [[doc], [weight], 1]
                else:
                    entry[0].append(doc)
                    entry[1].append(weight)
                    entry[2] += 1
                continue
            if entry is None:
                entry = self.postings[fid] = [np.empty(4, np.int32), np.empty(4, np.float32), 0]
            ids, weights, n = entry
            if n == ids.shape[0]:
                ids = entry[0] = np.concatenate([ids, np.empty(n, np.int32)])
                weights = entry[1] = np.concatenate([weights, np.empty(n, np.float32)])
            ids[n] = doc
            weights[n] = weight
            entry[2] = n + 1

    def remove(self, doc: int) -> None:
        np = self.np
        for fid in self.vectors.pop(doc, {}):
            entry = self.postings[fid]
            ids, weights, n = entry
            at = ids.index(doc) if np is None else int(np.flatnonzero(ids[:n] == doc)[0])
            ids[at], weights[at] = ids[n - 1], weights[n - 1]
            if np is None:
                ids.pop()
                weights.pop()
            entry[2] = n - 1
            if n == 1:
                del self.postings[fid]

    def recycle(self, doc: int) -> None:
        """Let :meth:`new_doc_id` hand out a removed doc's id again."""
        self.free.append(doc)

    def df(self, fid: int) -> int:
        entry = self.postings.get(fid)
        return 0 if entry is None else entry[2]

    def query_vector(self, raw: Mapping[int, float]) -> dict[int, float]:
        """The query's ``ltc`` weights: log tf × IDF, normalised; unknown words drop out."""
        n = len(self.vectors)
        common = max(_MIN_COMMON_DOCS, n * _MAX_DF_RATIO)
        weighted = {}
        for fid, tf in raw.items():
            df = self.df(fid)
            # A word in most documents tells them apart by almost nothing and costs the most.
            if 0 < df <= common:
                weighted[fid] = tf * math.log((n + 1) / (df + 0.5))
        norm = math.sqrt(sum(w * w for w in weighted.values()))
        return {f: w / norm for f, w in weighted.items()} if norm > 0 else {}

    def search(self, query: Mapping[int, float], limit: int,
               keep: Callable[[int], bool] | None = None
               ) -> tuple[list[tuple[int, float]], Callable[[int], float]]:
        """The ``limit`` docs with the highest cosine to the (weighted) query, best first,
        among those ``keep`` accepts; and a lookup of any doc's cosine from the same pass
        (every posting of every query word was visited, so the lookup is exact)."""
        if not query:
            return [], lambda doc: 0.0
        np = self.np
        if np is None:
            scores: dict[int, float] = {}
            get = scores.get
            for fid, qw in query.items():
                ids, weights, _ = self.postings[fid]
                for doc, weight in zip(ids, weights):
                    scores[doc] = get(doc, 0.0) + qw * weight
            items = [(d, v) for d, v in scores.items() if keep is None or keep(d)]
            return heapq.nlargest(limit, items, key=_second), lambda doc: max(0.0, get(doc, 0.0))
        dense = np.zeros(self.size, np.float32)
        for fid, qw in query.items():
            ids, weights, n = self.postings[fid]
            dense[ids[:n]] += np.float32(qw) * weights[:n]
        hit = np.flatnonzero(dense > 0)
        want = limit if keep is None else 4 * limit
        while True:
            if hit.shape[0] > want:
                top = hit[np.argpartition(-dense[hit], want - 1)[:want]]
            else:
                top = hit
            chosen = [(int(d), float(dense[d])) for d in top if keep is None or keep(int(d))]
            if len(chosen) >= limit or top.shape[0] == hit.shape[0]:
                break
            want *= 4
        chosen.sort(key=lambda kv: (-kv[1], kv[0]))
        return chosen[:limit], lambda doc: max(0.0, float(dense[doc])) if doc < dense.shape[0] else 0.0

    def similarity(self, query: Mapping[int, float], doc: int) -> float:
        vector = self.vectors.get(doc)
        if not vector:
            return 0.0
        small, large = (vector, query) if len(vector) < len(query) else (query, vector)
        get = large.get
        return sum(w * get(f, 0.0) for f, w in small.items() if f in large)


class _DenseRows:
    """Unit vectors in rows of a growing matrix (numpy when present, lists otherwise)."""

    def __init__(self) -> None:
        self.np = _numpy()
        self.rows: dict[int, Any] = {}
        self.matrix: Any = None
        self.live: Any = None

    def __len__(self) -> int:
        return len(self.rows)

    def _unit(self, vector: Sequence[float]) -> list[float]:
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm > 0 else list(vector)

    def add(self, doc: int, vector: Sequence[float]) -> None:
        unit = self._unit(vector)
        self.rows[doc] = unit
        if self.np is None:
            return
        np = self.np
        if self.matrix is None:
            self.matrix = np.zeros((max(64, doc + 1), len(unit)), dtype=np.float32)
            self.live = np.zeros(self.matrix.shape[0], dtype=bool)
        if self.matrix.shape[1] != len(unit):
            raise LocalizationError.single(
                "embedder", f"vector of {len(unit)} dimensions in an index of {self.matrix.shape[1]}"
            )
        if doc >= self.matrix.shape[0]:
            grow = max(doc + 1, 2 * self.matrix.shape[0])
            matrix = np.zeros((grow, self.matrix.shape[1]), dtype=np.float32)
            matrix[: self.matrix.shape[0]] = self.matrix
            live = np.zeros(grow, dtype=bool)
            live[: self.live.shape[0]] = self.live
            self.matrix, self.live = matrix, live
        self.matrix[doc] = unit
        self.live[doc] = True

    def remove(self, doc: int) -> None:
        self.rows.pop(doc, None)
        if self.np is not None and self.live is not None and doc < self.live.shape[0]:
            self.live[doc] = False

    def query_vector(self, vector: Sequence[float]) -> list[float]:
        return self._unit(vector)

    def top(self, query: Sequence[float], n: int) -> dict[int, float]:
        if not self.rows:
            return {}
        if self.np is None:
            sims = {d: sum(a * b for a, b in zip(query, row)) for d, row in self.rows.items()}
            return dict(heapq.nlargest(n, sims.items(), key=lambda kv: kv[1]))
        np = self.np
        sims = self.matrix @ np.asarray(query, dtype=np.float32)
        sims[~self.live] = -np.inf
        n = min(n, int(self.live.sum()))
        best = np.argpartition(-sims, n - 1)[:n] if n < sims.shape[0] else np.arange(sims.shape[0])
        return {int(d): float(sims[d]) for d in best if np.isfinite(sims[d])}

    def similarity(self, query: Sequence[float], doc: int) -> float:
        row = self.rows.get(doc)
        return 0.0 if row is None else sum(a * b for a, b in zip(query, row))

    def vector(self, doc: int) -> list[float]:
        return list(self.rows[doc])


class PathIndex:
    """The path index. ``PathIndex()`` uses the dependency-free default embedder.

    Paths are held by id; :meth:`add` refuses an id it already has (use :meth:`update`),
    :meth:`remove` and :meth:`update` refuse one it does not (category ``unknown-path``).
    """

    def __init__(self, embedder: Embedder | None = None, config: ScoreConfig | None = None):
        self.embedder: Embedder = embedder if embedder is not None else HashedTfidfEmbedder()
        self.config = config if config is not None else ScoreConfig()
        self._lexical = HashedTfidfEmbedder()
        self._records: dict[str, PathRecord] = {}
        self._slot_of: dict[str, int] = {}
        self._record_at: dict[int, PathRecord] = {}
        self._free_slots: list[int] = []
        self._next_slot = 0
        self._seq_at: dict[int, int] = {}
        self._next_seq = 0
        self._shape_at: dict[int, _Shape] = {}
        self._text: _SparsePostings | _DenseRows = (
            _SparsePostings() if self.embedder.sparse else _DenseRows()
        )
        self._steps = _SparsePostings()            # one lexical vector per stored step
        self._step_owner: dict[int, tuple[int, str]] = {}   # step doc -> (path slot, step name)
        self._step_docs_at: dict[int, list[int]] = {}
        self._tag_slots: dict[str, set[int]] = {}
        self._group_slots: dict[tuple, set[int]] = {}
        self._name_groups: dict[str, dict[tuple, None]] = {}   # ordered sets, oldest first
        self._replaced_by: dict[str, set[str]] = {}
        # Step-name profiles for placing steps in a request: word counts per name and overall.
        self._name_word: dict[str, Counter] = {}
        self._name_total: Counter = Counter()
        self._word_total: Counter = Counter()
        self._grand_total = 0

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
        slots = sorted(self._record_at, key=lambda s: self._seq_at[s])
        state: dict[str, Any] = {
            "format": INDEX_STATE_FORMAT,
            "embedder": self.embedder.name,
            "config": self.config.to_json(),
            "paths": [self._record_at[s].to_json() for s in slots],
        }
        if not self.embedder.sparse:
            state["vectors"] = [self._text.vector(s) for s in slots]  # type: ignore[union-attr]
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
            index._add_all(records, vectors)
        else:
            index.add_many(records)
        return index

    # -- incremental updates -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, path_id: object) -> bool:
        return path_id in self._records

    def get(self, path_id: str) -> PathRecord | None:
        """The record with this id, or None."""
        return self._records.get(path_id)

    def ids(self) -> list[str]:
        """Path ids in creation order."""
        return [self._record_at[s].id for s in sorted(self._record_at, key=lambda s: self._seq_at[s])]

    def records(self) -> list[PathRecord]:
        """Records in creation order."""
        return [self._records[i] for i in self.ids()]

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
            if record.id in self._records or record.id in seen:
                raise LocalizationError.single(
                    "duplicate-path", f"path {record.id!r} is already indexed (use update)", where=record.id
                )
            seen.add(record.id)
        if not batch:
            return
        vectors = self.embedder.embed_documents([self._embed_text(r) for r in batch])
        self._add_all(batch, vectors)

    def remove(self, path_id: str) -> PathRecord:
        """Drop one path from every index; returns its record."""
        slot = self._slot_of.get(path_id)
        if slot is None:
            raise LocalizationError.single("unknown-path", f"no path {path_id!r} in the index", where=path_id)
        record = self._record_at.pop(slot)
        shape = self._shape_at[slot]
        signature = shape.signature
        del self._records[path_id], self._slot_of[path_id]
        del self._seq_at[slot], self._shape_at[slot]
        self._text.remove(slot)
        for doc in self._step_docs_at.pop(slot):
            self._steps.remove(doc)
            self._steps.recycle(doc)
            del self._step_owner[doc]
        for tag in record.tags:
            self._discard(self._tag_slots, tag, slot)
        group = self._group_slots[signature]
        group.discard(slot)
        if not group:
            del self._group_slots[signature]
            for name in set(shape.names):
                groups = self._name_groups[name]
                del groups[signature]
                if not groups:
                    del self._name_groups[name]
        if record.replaces is not None:
            self._discard(self._replaced_by, record.replaces, record.id)
        self._count_step_words(record, -1)
        self._free_slots.append(slot)
        return record

    def update(self, record: PathRecord) -> None:
        """Replace the stored path with the same id (its creation order is kept)."""
        if record.id not in self._records:
            raise LocalizationError.single("unknown-path", f"no path {record.id!r} in the index", where=record.id)
        vector = self.embedder.embed_documents([self._embed_text(record)])[0]
        seq = self._seq_at[self._slot_of[record.id]]
        self.remove(record.id)
        self._add_all([record], [vector], seqs=[seq])

    def _embed_text(self, record: PathRecord) -> str:
        if self.embedder.sparse:
            return record.text()
        # Models read sentences: goal and step texts, names only where a step has no text.
        return " ".join([record.goal] + [s.text or s.name for s in record.steps])

    def _add_all(self, records: Sequence[PathRecord], vectors: Sequence[Any],
                 seqs: Sequence[int] | None = None) -> None:
        for position, (record, vector) in enumerate(zip(records, vectors)):
            slot = self._free_slots.pop() if self._free_slots else self._take_slot()
            if seqs is None:
                seq = self._next_seq
                self._next_seq += 1
            else:
                seq = seqs[position]
            self._records[record.id] = record
            self._slot_of[record.id] = slot
            self._record_at[slot] = record
            self._seq_at[slot] = seq
            names = record.step_names
            signature = _Signature(record.signature)
            self._shape_at[slot] = _Shape(names, signature, StepOrder.of(len(names), record.edges),
                                          record.is_template, record.completeness())
            self._text.add(slot, vector)
            docs = []
            for step in record.steps:
                doc = self._steps.new_doc_id()
                self._steps.add(doc, self._lexical.features(step.text + " " + step.name))
                self._step_owner[doc] = (slot, step.name)
                docs.append(doc)
            self._step_docs_at[slot] = docs
            for tag in record.tags:
                self._tag_slots.setdefault(tag, set()).add(slot)
            self._group_slots.setdefault(signature, set()).add(slot)
            for name in set(names):
                self._name_groups.setdefault(name, {})[signature] = None
            if record.replaces is not None:
                self._replaced_by.setdefault(record.replaces, set()).add(record.id)
            self._count_step_words(record, +1)

    def _take_slot(self) -> int:
        slot = self._next_slot
        self._next_slot += 1
        return slot

    @staticmethod
    def _discard(mapping: dict, key: Any, value: Any) -> None:
        members = mapping.get(key)
        if members is not None:
            members.discard(value)
            if not members:
                del mapping[key]

    def _count_step_words(self, record: PathRecord, sign: int) -> None:
        for step in record.steps:
            words = [feature_id(w) for w in self._lexical.tokens(step.text + " " + step.name) if w]
            counts = self._name_word.setdefault(step.name, Counter())
            for word in words:
                counts[word] += sign
                self._word_total[word] += sign
                if counts[word] <= 0:
                    del counts[word]
                if self._word_total[word] <= 0:
                    del self._word_total[word]
            self._name_total[step.name] += sign * len(words)
            self._grand_total += sign * len(words)
            if self._name_total[step.name] <= 0:
                del self._name_total[step.name]
                self._name_word.pop(step.name, None)

    # -- versions ------------------------------------------------------------------------------

    def effective_status(self, path_id: str) -> str:
        """The record's status, except that an active path another indexed path ``replaces``
        counts as superseded (a rewrite that forgot to mark the old version still wins)."""
        record = self._records[path_id]
        if record.status == "active" and self._replaced_by.get(path_id):
            return "superseded"
        return record.status

    def replacements(self, path_id: str) -> set[str]:
        """Every indexed path that replaces ``path_id``, directly or through later versions."""
        found: set[str] = set()
        stack = list(self._replaced_by.get(path_id, ()))
        while stack:
            newer = stack.pop()
            if newer not in found:
                found.add(newer)
                stack.extend(self._replaced_by.get(newer, ()))
        return found

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

        def expand(entry_ids: Sequence[str]) -> list[str]:
            frontier = [i for i in entry_ids[:entries] if i in self._records]
            seen_groups = {self._shape_at[self._slot_of[i]].signature for i in frontier}
            found: list[str] = []
            for _ in range(max(0, hops) // 2):
                names: dict[str, None] = {}
                for path_id in frontier:
                    names.update(dict.fromkeys(self._shape_at[self._slot_of[path_id]].names))
                next_frontier = []
                for name in names:
                    for count, group in enumerate(self._name_groups.get(name, ())):
                        if count >= per_step:
                            break
                        if group in seen_groups:
                            continue
                        seen_groups.add(group)
                        newest = max(self._group_slots[group], key=self._seq_at.__getitem__)
                        next_frontier.append(self._record_at[newest].id)
                found.extend(next_frontier)
                frontier = next_frontier
            return found

        return expand

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
        excluded = set(exclude)

        def eligible(slot: int) -> bool:
            record = self._record_at[slot]
            if record.id in excluded:
                return False
            if scenario is not None and not cross_scenario:
                return record.scenario is None or record.scenario == scenario
            return True

        text = text or ""
        recalled = Counter()
        similarity: dict[int, float] = {}
        query_vector: Any = None
        # Candidates that other channels bring still need their text similarity.
        exact: Callable[[int], float] = lambda slot: self._exact_similarity(query_vector, slot)
        keep = eligible if (excluded or (scenario is not None and not cross_scenario)) else None
        if text.strip() and len(self._text):
            raw = self.embedder.embed_query(text)
            query_vector = self._text.query_vector(raw)
            if isinstance(self._text, _SparsePostings):
                best, exact = self._text.search(query_vector, cfg.recall_paths, keep)
            else:
                hits = self._text.top(query_vector, cfg.recall_paths + len(excluded))
                best = heapq.nlargest(cfg.recall_paths,
                                      ((s, v) for s, v in hits.items() if keep is None or keep(s)),
                                      key=_second)
            similarity.update((s, v) for s, v in best if v > 0)
            recalled["text"] = len(similarity)

        # Entry steps: stored steps that resemble the request. They bring their paths in and
        # tell, per step name, how strongly the request asks for such a step.
        step_evidence: dict[str, float] = {}
        if text.strip() and len(self._steps) and (cfg.use_steps or cfg.recall_steps):
            step_query = self._steps.query_vector(self._lexical.features(text))
            owner = self._step_owner
            step_keep = None if keep is None else (lambda d: keep(owner[d][0]))
            best_steps, _ = self._steps.search(step_query, cfg.recall_steps, step_keep)
            added = 0
            for doc, value in best_steps:
                if value <= 0:
                    continue
                slot, name = owner[doc]
                if value > step_evidence.get(name, 0.0):
                    step_evidence[name] = value
                if slot not in similarity:
                    similarity[slot] = exact(slot)
                    added += 1
            recalled["entry_steps"] = len(best_steps)
            recalled["from_steps"] = added

        tag_score: dict[int, float] = {}
        if query_tags:
            tagged: set[int] = set()
            for tag in query_tags:
                tagged |= self._tag_slots.get(tag, set())
            if keep is not None:
                tagged = {s for s in tagged if keep(s)}
            # A tag shared by half the memory recalls nothing useful: then tags only re-rank.
            if len(tagged) <= cfg.recall_paths or not similarity:
                newest = sorted(tagged, key=lambda s: -self._seq_at[s])[: max(cfg.recall_paths, 1)]
                for slot in newest:
                    if slot not in similarity:
                        similarity[slot] = exact(slot)
                        recalled["from_tags"] += 1

        if expand is not None and similarity:
            entry_ids = [self._record_at[s].id for s in sorted(similarity, key=lambda s: -similarity[s])]
            added = 0
            for path_id in expand(entry_ids):
                slot = self._slot_of.get(path_id)
                if slot is None or slot in similarity or (keep is not None and not keep(slot)):
                    continue
                similarity[slot] = exact(slot)
                added += 1
                if added >= cfg.expand_limit:
                    break
            recalled["expanded"] = added

        for slot in similarity:
            record = self._record_at[slot]
            tag_score[slot] = jaccard(query_tags, record.tags) if query_tags else 0.0
        recalled["candidates"] = len(similarity)

        matches = self._score_groups(text, similarity, tag_score, step_evidence, steps, cfg, False, k)
        if not matches:
            matches = self._score_groups(text, similarity, tag_score, step_evidence, steps, cfg, True, k)
        matches = self._versions_below_replacements(matches)
        recalled["structures"] = len(matches)
        return LocateResult(tuple(self._match(m) for m in matches[:k]), dict(recalled))

    def _exact_similarity(self, query_vector: Any, slot: int) -> float:
        if query_vector is None:
            return 0.0
        return max(0.0, self._text.similarity(query_vector, slot))

    def _score_groups(self, text: str, similarity: Mapping[int, float], tag_score: Mapping[int, float],
                      step_evidence: Mapping[str, float], expected_steps: Sequence[str] | None,
                      cfg: ScoreConfig, templates: bool, k: int) -> list["_Scored"]:
        """Score each candidate structure; enough of them to be sure of the best ``k``.

        ``text``, ``support`` and ``steps`` are computed for every group first; groups are then
        scored fully in that order until no remaining group could reach the current k-th
        score even with every other component at 1 (so pruning never changes the result).
        """
        shape_at = self._shape_at
        record_at = self._record_at
        groups: dict[Any, list[int]] = {}
        for slot in similarity:
            shape = shape_at[slot]
            if shape.is_template != templates:
                continue
            key = shape.signature if cfg.merge else slot
            groups.setdefault(key, []).append(slot)
        if not groups:
            return []
        weights = cfg.weights()
        total_weight = sum(weights.values()) or 1.0
        rest_weight = total_weight - weights["text"] - weights["support"] - weights["steps"]
        replaced = self._replaced_by
        status_of: dict[int, str] = {}
        version_of: dict[int, float] = {}
        first_pass = []
        for slots in groups.values():
            for slot in slots:
                status = record_at[slot].status
                if status == "active" and record_at[slot].id in replaced:
                    status = "superseded"
                status_of[slot] = status
                version_of[slot] = cfg.version_factor(status)
            # Each supporter counts as much as its own version allows.
            if len(slots) > 1:
                slots.sort(key=lambda s: (-similarity[s] * version_of[s], -self._seq_at[s]))
            head = slots[0]
            text_value = similarity[head]
            support_value = support([similarity[s] * version_of[s] for s in slots],
                                    cfg.support_top, cfg.support_power)
            steps_value = min(step_evidence.get(n, 0.0) for n in shape_at[head].names)
            partial = (weights["text"] * text_value + weights["support"] * support_value
                       + weights["steps"] * steps_value)
            first_pass.append((partial, head, slots, text_value, support_value, steps_value))
        first_pass.sort(key=lambda item: (-item[0], record_at[item[1]].id))

        newest_seq = self._next_seq - 1
        positions: dict[str, float | None] = {}
        query_words: list[int | None] | None = None
        background: dict[int, float] = {}
        scored: list[_Scored] = []
        best_scores: list[float] = []   # min-heap of the best full scores so far
        demoted = 0
        for partial, head, slots, text_value, support_value, steps_value in first_pass:
            if (len(best_scores) >= k + demoted
                    and (partial + rest_weight) / total_weight < best_scores[0]):
                break
            shape = shape_at[head]
            record = record_at[head]
            names = shape.names
            if expected_steps is not None:
                structure = sequence_similarity(list(expected_steps), names)
            elif cfg.use_structure:
                missing = [n for n in names if n not in positions]
                if missing:
                    if query_words is None:
                        query_words = [feature_id(w) if w else None for w in self._lexical.tokens(text)]
                    positions.update(self._step_positions(query_words, background, missing))
                structure = shape.order.agreement([positions[n] for n in names])
            else:
                structure = 0.5
            components = {
                "text": text_value,
                "support": support_value,
                "steps": steps_value,
                "structure": structure,
                "tags": max(tag_score.get(s, 0.0) for s in slots),
                "completeness": shape.completeness,
                "reward": reward_component(record.reward, record.result),
                "freshness": freshness(newest_seq - max(self._seq_at[s] for s in slots),
                                       cfg.freshness_half_life),
            }
            if not (text_value > 0 or components["tags"] > 0 or steps_value > 0):
                continue
            status = status_of[head]
            score = combine(components, status, cfg)
            if score <= cfg.min_score:
                continue
            scored.append(_Scored(score, record.id, slots, components, status, version_of[head]))
            if status in ("superseded", "failed"):
                demoted += 1
            heapq.heappush(best_scores, score)
            if len(best_scores) > k + demoted:
                heapq.heappop(best_scores)
        scored.sort(key=lambda m: (-m.score, m.path))
        return scored

    def _match(self, scored: "_Scored") -> Match:
        head = scored.slots[0]
        record = self._record_at[head]
        breakdown = dict(scored.components)
        breakdown["version"] = scored.version
        return Match(
            path=record.id,
            score=scored.score,
            goal=record.goal,
            steps=record.step_names,
            breakdown=breakdown,
            supporting=tuple(self._record_at[s].id for s in scored.slots),
            paths_with_structure=len(self._group_slots[self._shape_at[head].signature]),
            status=scored.status,
            version=record.version,
            structure=record.structure_key,
        )

    def _versions_below_replacements(self, matches: list["_Scored"]) -> list["_Scored"]:
        """Move each superseded or failed match just below the lowest-ranked match that holds
        one of its replacements, when that one ranks lower (a guarantee, not just a weight)."""
        ordered = list(matches)
        for match in [m for m in ordered if m.status in ("superseded", "failed")]:
            supporters = {self._record_at[s].id for s in match.slots}
            replacements: set[str] = set()
            for path_id in supporters:
                replacements |= self.replacements(path_id)
            replacement_slots = {self._slot_of[i] for i in replacements - supporters}
            if not replacement_slots:
                continue
            rank = ordered.index(match)
            lowest = max((r for r, m in enumerate(ordered) if replacement_slots.intersection(m.slots)),
                         default=-1)
            if lowest > rank:
                ordered.pop(rank)
                ordered.insert(lowest, match)
        return ordered

    def _step_positions(self, words: Sequence[int | None], background: dict[int, float],
                        names: Iterable[str]) -> dict[str, float | None]:
        """Where the request (its word ids, None for stop words) mentions each step name: the
        mean position of the words the name's profile favours (positive PMI), weighted by PMI
        squared. ``background`` caches each word's overall log-probability for this query."""
        vocabulary = max(1, len(self._word_total))
        if not background:
            grand = self._grand_total + _PMI_SMOOTHING * vocabulary
            for w in set(words):
                if w is not None:
                    background[w] = math.log((self._word_total.get(w, 0) + _PMI_SMOOTHING) / grand)
        positions: dict[str, float | None] = {}
        for name in names:
            counts = self._name_word.get(name)
            if not counts:
                positions[name] = None
                continue
            log_denominator = math.log(self._name_total[name] + _PMI_SMOOTHING * vocabulary)
            weight_sum = position_sum = 0.0
            for at, word in enumerate(words):
                if word is None or word not in counts:
                    continue
                pmi = math.log(counts[word] + _PMI_SMOOTHING) - log_denominator - background[word]
                if pmi > 0:
                    weight_sum += pmi * pmi
                    position_sum += at * pmi * pmi
            positions[name] = position_sum / weight_sum if weight_sum else None
        return positions
