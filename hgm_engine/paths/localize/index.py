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
['completeness', 'freshness', 'order', 'reward', 'steps', 'structure', 'support', 'tags', 'text', 'version', 'vote']
"""

from __future__ import annotations

import heapq
import importlib.metadata
import json
import math
import operator
import zlib
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs

from hgm_engine.paths.localize.embedders import Embedder, HashedTfidfEmbedder, feature_id
from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.packing import pack, unpack
from hgm_engine.paths.localize.records import PathRecord
from hgm_engine.paths.localize.scoring import (
    ScoreConfig,
    combine,
    freshness,
    StepOrder,
    jaccard,
    name_votes,
    reward_component,
    sequence_similarity,
    support,
    vote_overlap,
)

__all__ = ["PathIndex", "Match", "LocateResult", "Expander", "INDEX_STATE_FORMAT", "INDEX_BYTES_FORMAT"]

INDEX_STATE_FORMAT = "hgm-path-index/1"     # to_state: JSON, the records only
INDEX_BYTES_FORMAT = "hgm-path-index/2"     # to_bytes: everything, columnar, loaded lazily
_RECORDS_PER_CHUNK = 64                     # records compressed together in a saved state

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

    def __new__(cls, items: Iterable[Any] = ()) -> "_Signature":
        made = tuple.__new__(cls, items)
        made._hash = tuple.__hash__(made)
        return made

    def __hash__(self) -> int:
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
        self.count = 0                              # docs held
        # Docs restored from a saved state keep their words in arrays, not in ``vectors``:
        # (offsets by doc id, word ids, alive by doc id).
        self.frozen: tuple[Any, Any, Any] | None = None

    def __len__(self) -> int:
        return self.count

    def _frozen_words(self, doc: int) -> Any:
        """The word ids of a restored doc still held (None for any other doc)."""
        if self.frozen is None:
            return None
        offsets, words, alive = self.frozen
        if doc >= alive.shape[0] or not alive[doc]:
            return None
        return words[offsets[doc]:offsets[doc + 1]]

    def vector(self, doc: int) -> dict[int, float]:
        """A doc's normalised vector ({} when it is not held)."""
        vector = self.vectors.get(doc)
        if vector is not None:
            return vector
        words = self._frozen_words(doc)
        if words is None:
            return {}
        np = self.np
        found = {}
        for fid in words.tolist():
            ids, weights, n = self.postings[fid]
            found[fid] = float(weights[int(np.flatnonzero(ids[:n] == doc)[0])])
        return found

    def new_doc_id(self) -> int:
        if self.free:
            return self.free.pop()
        self.size += 1
        return self.size - 1

    def add(self, doc: int, raw: Mapping[int, float]) -> None:
        norm = math.sqrt(sum(w * w for w in raw.values()))
        vector = {f: w / norm for f, w in raw.items()} if norm > 0 else {}
        self.vectors[doc] = vector
        self.count += 1
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
        vector = self.vectors.pop(doc, None)
        if vector is not None:
            words: Iterable[int] = vector
        else:
            frozen = self._frozen_words(doc)
            if frozen is None:
                return
            words = frozen.tolist()
            self.frozen[2][doc] = False  # type: ignore[index]
        self.count -= 1
        for fid in words:
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
        n = self.count
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
        vector = self.vector(doc)
        if not vector:
            return 0.0
        small, large = (vector, query) if len(vector) < len(query) else (query, vector)
        get = large.get
        return sum(w * get(f, 0.0) for f, w in small.items() if f in large)

    def export(self, prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Scalars and arrays that :meth:`restore` makes the same postings from (needs numpy)."""
        np = self.np
        fids = list(self.postings)
        lengths = np.array([self.postings[f][2] for f in fids], dtype=np.int64)
        offsets = np.zeros(len(fids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        docs = [self.postings[f][0][: self.postings[f][2]] for f in fids]
        weights = [self.postings[f][1][: self.postings[f][2]] for f in fids]
        by_doc = []
        counts = np.zeros(self.size, dtype=np.int64)
        for doc in range(self.size):
            vector = self.vectors.get(doc)
            words = np.fromiter(vector, dtype=np.int32, count=len(vector)) if vector is not None else (
                self._frozen_words(doc))
            if words is not None and words.shape[0]:
                by_doc.append(words)
                counts[doc] = words.shape[0]
        alive = np.zeros(self.size, dtype=bool)
        for doc in self.vectors:
            alive[doc] = True
        if self.frozen is not None:
            old = self.frozen[2]
            alive[: old.shape[0]] |= old
        doc_offsets = np.zeros(self.size + 1, dtype=np.int64)
        np.cumsum(counts, out=doc_offsets[1:])
        empty_i = np.zeros(0, dtype=np.int32)
        arrays = {
            f"{prefix}.fids": np.array(fids, dtype=np.int32),
            f"{prefix}.offsets": offsets,
            f"{prefix}.docs": np.concatenate(docs).astype(np.int32) if docs else empty_i,
            f"{prefix}.weights": np.concatenate(weights).astype(np.float32) if weights else np.zeros(0, np.float32),
            f"{prefix}.doc_offsets": doc_offsets,
            f"{prefix}.doc_words": np.concatenate(by_doc).astype(np.int32) if by_doc else empty_i,
            f"{prefix}.alive": alive,
        }
        return {"size": self.size, "count": self.count, "free": list(self.free)}, arrays

    @classmethod
    def restore(cls, prefix: str, scalars: Mapping[str, Any], arrays: Mapping[str, Any]) -> "_SparsePostings":
        """The postings :meth:`export` described; their arrays are views of ``arrays``."""
        postings = cls()
        offsets = arrays[f"{prefix}.offsets"].tolist()
        docs, weights = arrays[f"{prefix}.docs"], arrays[f"{prefix}.weights"]
        postings.postings = {
            fid: [docs[a:b], weights[a:b], b - a]
            for fid, a, b in zip(arrays[f"{prefix}.fids"].tolist(), offsets, offsets[1:])
        }
        postings.size = int(scalars["size"])
        postings.count = int(scalars["count"])
        postings.free = [int(d) for d in scalars["free"]]
        alive = arrays[f"{prefix}.alive"]
        doc_offsets = arrays[f"{prefix}.doc_offsets"]
        if alive.shape[0] != postings.size or doc_offsets.shape[0] != postings.size + 1:
            raise LocalizationError.single("bad-state", "saved path index: postings of the wrong size")
        postings.frozen = (doc_offsets, arrays[f"{prefix}.doc_words"], alive)
        return postings


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
            sims = {d: sum(a * b for a, b in zip(query, row)) for d, row in self.rows.items()}  # never restored
            return dict(heapq.nlargest(n, sims.items(), key=lambda kv: kv[1]))
        np = self.np
        sims = self.matrix @ np.asarray(query, dtype=np.float32)
        sims[~self.live] = -np.inf
        n = min(n, int(self.live.sum()))
        best = np.argpartition(-sims, n - 1)[:n] if n < sims.shape[0] else np.arange(sims.shape[0])
        return {int(d): float(sims[d]) for d in best if np.isfinite(sims[d])}

    def similarity(self, query: Sequence[float], doc: int) -> float:
        if doc not in self.rows:
            return 0.0
        return sum(a * b for a, b in zip(query, self.vector(doc)))

    def vector(self, doc: int) -> list[float]:
        row = self.rows[doc]   # None: restored, the row lives in the matrix only
        return list(row) if row is not None else [float(x) for x in self.matrix[doc]]

    def export(self, prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Scalars and arrays :meth:`restore` makes the same rows from (needs numpy)."""
        np = self.np
        docs = np.array(sorted(self.rows), dtype=np.int64)
        if self.matrix is None or not docs.shape[0]:
            return {"dims": 0}, {f"{prefix}.docs": docs, f"{prefix}.matrix": np.zeros(0, np.float32)}
        return ({"dims": int(self.matrix.shape[1])},
                {f"{prefix}.docs": docs, f"{prefix}.matrix": self.matrix[docs].reshape(-1)})

    @classmethod
    def restore(cls, prefix: str, scalars: Mapping[str, Any], arrays: Mapping[str, Any]) -> "_DenseRows":
        rows = cls()
        np = rows.np
        docs = arrays[f"{prefix}.docs"]
        dims = int(scalars["dims"])
        if not docs.shape[0]:
            return rows
        flat = arrays[f"{prefix}.matrix"]
        if dims <= 0 or flat.shape[0] != docs.shape[0] * dims:
            raise LocalizationError.single("bad-state", "saved path index: vectors of the wrong size")
        size = max(64, int(docs.max()) + 1)
        rows.matrix = np.zeros((size, dims), dtype=np.float32)
        rows.matrix[docs] = flat.reshape(-1, dims)
        rows.live = np.zeros(size, dtype=bool)
        rows.live[docs] = True
        rows.rows = dict.fromkeys(docs.tolist())
        return rows


def _stemmer_version() -> str:
    try:
        return importlib.metadata.version("snowballstemmer")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - vendored copies
        return "unknown"


def _name_set(signature: tuple) -> tuple[str, ...]:
    """The sorted step names of a structural signature (names alone, or names and edges)."""
    names = signature[0] if signature and isinstance(signature[0], tuple) else signature
    return tuple(sorted(names))


def _vote_items(names: Sequence[str], pairs: bool) -> list:
    """What a path votes for: its step names, and with ``pairs`` each step followed by the next."""
    return list(names) + list(zip(names, names[1:])) if pairs else list(names)


def _flatnonzero(mask: Any) -> list[int]:
    return _numpy().flatnonzero(mask).tolist()


def _signature_json(signature: tuple) -> list:
    """A structural signature as JSON: ``["chain", names]`` or ``["graph", names, edges]``."""
    if signature and isinstance(signature[0], str):
        return ["chain", list(signature)]
    if not signature:
        return ["chain", []]
    names, edges = signature
    return ["graph", list(names), [list(e) for e in edges]]


def _signature_from_json(doc: Sequence[Any]) -> tuple:
    if doc[0] == "chain":
        return tuple(doc[1])
    if doc[0] == "graph":
        return (tuple(doc[1]), tuple((int(i), int(j)) for i, j in doc[2]))
    raise ValueError(f"unknown signature kind {doc[0]!r}")


class _Lazy(dict):
    """A dict some of whose values are made only when first read: ``pending`` maps those keys
    to what ``make`` needs (a row of a saved state). Present values read at dict speed."""

    def __init__(self, make: Callable[[Any], Any] | None = None, pending: dict | None = None):
        super().__init__()
        self.make = make
        self.pending: dict = pending if pending is not None else {}

    def __missing__(self, key: Any) -> Any:
        row = self.pending.pop(key)   # a KeyError here: the key is not held at all
        value = self.make(row)        # type: ignore[misc]
        dict.__setitem__(self, key, value)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key) or key in self.pending:
            return self[key]
        return default

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self.pending:
            self[key]
        return dict.pop(self, key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self.pending:
            return self[key]
        return dict.setdefault(self, key, default)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.pending.pop(key, None)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        if key in self.pending:
            del self.pending[key]
        else:
            dict.__delitem__(self, key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.pending

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.pending)

    def __iter__(self):  # type: ignore[override]
        yield from dict.__iter__(self)
        yield from self.pending

    def items(self):  # type: ignore[override]
        return [(key, self[key]) for key in list(self)]


class PathIndex:
    """The path index. ``PathIndex()`` uses the model-free default embedder.

    Paths are held by id; :meth:`add` refuses an id it already has (use :meth:`update`),
    :meth:`remove` and :meth:`update` refuse one it does not (category ``unknown-path``).
    """

    def __init__(self, embedder: Embedder | None = None, config: ScoreConfig | None = None):
        self.embedder: Embedder = embedder if embedder is not None else HashedTfidfEmbedder()
        self.config = config if config is not None else ScoreConfig()
        self._lexical = HashedTfidfEmbedder()
        self._slot_of: dict[str, int] = {}
        # Records and shapes by slot; restored from a saved state they are made when first read.
        self._record_at: _Lazy = _Lazy()
        self._free_slots: list[int] = []
        self._next_slot = 0
        self._seq_at: dict[int, int] = {}
        self._next_seq = 0
        self._shape_at: _Lazy = _Lazy(self._shape_of_slot)
        self._text: _SparsePostings | _DenseRows = (
            _SparsePostings() if self.embedder.sparse else _DenseRows()
        )
        self._steps = _SparsePostings()            # one lexical vector per stored step
        self._step_owner: _Lazy = _Lazy()          # step doc -> (path slot, step name)
        self._step_docs_at: _Lazy = _Lazy()        # path slot -> its step docs
        self._tag_slots: dict[str, set[int]] = {}
        self._group_slots: dict[tuple, set[int]] = {}
        self._name_groups: dict[str, dict[tuple, None]] = {}   # ordered sets, oldest first
        # sorted step names -> structures with them; made when the order component first needs it
        self._set_groups: dict[tuple, set[tuple]] | None = None
        self._replaced_by: dict[str, set[str]] = {}
        # Step-name profiles for placing steps in a request: word counts per name and overall.
        self._name_word: _Lazy = _Lazy()           # step name -> Counter of word ids
        self._raw_record: Callable[[int], str] | None = None   # a restored record's saved JSON
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
        slots = self._slots_in_order()
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
        np = _numpy()
        if np is None:
            raise LocalizationError.single("bad-state", "saving the path index in binary form needs numpy")
        slots = self._slots_in_order()
        # Records: JSON lines, compressed in chunks; a record never read since a load keeps its line.
        raw = self._raw_record
        pending = self._record_at.pending
        lines = [raw(pending[s]) if s in pending and raw is not None
                 else json.dumps(dict.__getitem__(self._record_at, s).to_json(), ensure_ascii=False,
                                 separators=(",", ":"))
                 for s in slots]
        chunks = [zlib.compress("\n".join(lines[at:at + _RECORDS_PER_CHUNK]).encode("utf-8"), 1)
                  for at in range(0, len(lines), _RECORDS_PER_CHUNK)]
        chunk_offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in chunks], out=chunk_offsets[1:])
        # Step docs per path (by row) and the owner of every step doc.
        step_docs = [self._step_docs_at[s] for s in slots]
        step_offsets = np.zeros(len(slots) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in step_docs], out=step_offsets[1:])
        names = sorted(set(self._name_total) | set(self._name_word) | {
            name for s in slots for name in self._shape_at[s].names})
        name_index = {name: i for i, name in enumerate(names)}
        owner_slot = np.full(self._steps.size, -1, dtype=np.int32)
        owner_name = np.full(self._steps.size, -1, dtype=np.int32)
        for s, docs in zip(slots, step_docs):
            for doc in docs:
                slot, name = self._step_owner[doc]
                owner_slot[doc] = slot
                owner_name[doc] = name_index[name]
        # Structures: groups in their order, which slots hold each, each name's groups in order.
        groups = list(self._group_slots)
        group_index = {g: i for i, g in enumerate(groups)}
        group_members = [sorted(self._group_slots[g]) for g in groups]
        group_offsets = np.zeros(len(groups) + 1, dtype=np.int64)
        np.cumsum([len(m) for m in group_members], out=group_offsets[1:])
        tags = sorted(self._tag_slots)
        tag_members = [sorted(self._tag_slots[t]) for t in tags]
        tag_offsets = np.zeros(len(tags) + 1, dtype=np.int64)
        np.cumsum([len(m) for m in tag_members], out=tag_offsets[1:])
        # Step-name profiles.
        profile_names = [n for n in names if n in self._name_word]
        profiles = [self._name_word[n] for n in profile_names]
        profile_offsets = np.zeros(len(profiles) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in profiles], out=profile_offsets[1:])
        text_scalars, text_arrays = self._text.export("text")
        step_scalars, step_arrays = self._steps.export("steps")
        ints = lambda values, dtype=np.int32: np.array(values, dtype=dtype)  # noqa: E731
        header = {
            "format": INDEX_BYTES_FORMAT,
            "embedder": self.embedder.name,
            "lexical": self._lexical.name,
            "stemmer": _stemmer_version(),
            "text_kind": "sparse" if self.embedder.sparse else "dense",
            "config": self.config.to_json(),
            "names": names,
            "tags": tags,
            "groups": [_signature_json(g) for g in groups],
            "name_groups": {n: [group_index[g] for g in gs] for n, gs in self._name_groups.items()},
            "profile_names": [name_index[n] for n in profile_names],
            "name_totals": {n: int(v) for n, v in self._name_total.items()},
            "replaced_by": sorted([old, sorted(new)] for old, new in self._replaced_by.items()),
            "grand_total": int(self._grand_total),
            "free_slots": list(self._free_slots),
            "next_slot": self._next_slot,
            "next_seq": self._next_seq,
            "text": text_scalars,
            "steps": step_scalars,
        }
        id_of = {slot: path_id for path_id, slot in self._slot_of.items()}
        header["ids"] = [id_of[s] for s in slots]
        arrays = {
            "slots": ints(slots), "seqs": ints([self._seq_at[s] for s in slots], np.int64),
            "records": np.frombuffer(b"".join(chunks), dtype=np.uint8), "record_chunks": chunk_offsets,
            "step_offsets": step_offsets,
            "step_docs": ints([d for docs in step_docs for d in docs]),
            "owner_slot": owner_slot, "owner_name": owner_name,
            "group_offsets": group_offsets, "group_slots": ints([s for m in group_members for s in m]),
            "tag_offsets": tag_offsets, "tag_slots": ints([s for m in tag_members for s in m]),
            "profile_offsets": profile_offsets,
            "profile_words": ints([w for c in profiles for w in c]),
            "profile_counts": ints([v for c in profiles for v in c.values()], np.int64),
            "word_ids": ints(list(self._word_total)),
            "word_counts": ints(list(self._word_total.values()), np.int64),
            **text_arrays, **step_arrays,
        }
        return pack(header, arrays)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, embedder: Embedder | None = None,
                   config: ScoreConfig | None = None) -> "PathIndex":
        """The index :meth:`to_bytes` saved, ready at once: arrays become the postings as they
        are, and a path's record (and what scoring reads of it) is made the first time it is
        looked at. Refused (``bad-state``) when the bytes are not such a state, or when they
        were made with another embedder, word normaliser or stemmer version than this index
        would use — the caller then builds the index from its records instead."""
        np = _numpy()
        if np is None:
            raise LocalizationError.single("bad-state", "reading a binary path index needs numpy")
        header, arrays = unpack(data)
        if header.get("format") != INDEX_BYTES_FORMAT:
            raise LocalizationError.single("bad-state", f"not a {INDEX_BYTES_FORMAT} state")
        try:
            if config is None:
                config = ScoreConfig.from_json(header["config"])
            index = cls(embedder, config)
            made_with = (header["embedder"], header["lexical"], header["stemmer"], header["text_kind"])
            wanted = (index.embedder.name, index._lexical.name, _stemmer_version(),
                      "sparse" if index.embedder.sparse else "dense")
            if made_with != wanted:
                raise LocalizationError.single(
                    "bad-state", f"saved path index was made with {made_with}, this index uses {wanted}")
            index._restore(header, arrays)
        except (KeyError, TypeError, ValueError, IndexError, zlib.error) as exc:
            raise LocalizationError.single("bad-state", f"malformed saved path index: {exc!r}") from None
        return index

    def _restore(self, header: Mapping[str, Any], arrays: Mapping[str, Any]) -> None:
        slots = arrays["slots"].tolist()
        ids = header["ids"]
        if len(ids) != len(slots) or len(set(ids)) != len(ids):
            raise ValueError("ids and slots disagree")
        rows = range(len(slots))
        self._slot_of = dict(zip(ids, slots))
        self._seq_at = dict(zip(slots, arrays["seqs"].tolist()))
        blob, chunk_offsets = arrays["records"], arrays["record_chunks"].tolist()
        decoded: dict[int, list[str]] = {}

        def raw(row: int) -> str:
            chunk = row // _RECORDS_PER_CHUNK
            lines = decoded.get(chunk)
            if lines is None:
                text = zlib.decompress(blob[chunk_offsets[chunk]:chunk_offsets[chunk + 1]].tobytes())
                lines = decoded[chunk] = text.decode("utf-8").split("\n")
            return lines[row % _RECORDS_PER_CHUNK]

        def record(row: int) -> PathRecord:
            try:
                made = PathRecord.from_json(json.loads(raw(row)))
            except (ValueError, LocalizationError, zlib.error) as exc:
                raise LocalizationError.single("bad-state", f"saved path index: record {row}: {exc}") from None
            if made.id != ids[row]:
                raise LocalizationError.single("bad-state", f"saved path index: record {row} is not {ids[row]!r}")
            return made

        if slots:   # the first and the last record must read back: a truncated state fails here
            record(0), record(len(slots) - 1)
        self._raw_record = raw
        self._record_at = _Lazy(record, dict(zip(slots, rows)))
        self._shape_at = _Lazy(self._shape_of_slot, dict(zip(slots, slots)))
        names = header["names"]
        owner_slot, owner_name = arrays["owner_slot"], arrays["owner_name"]
        self._step_owner = _Lazy(lambda doc: (int(owner_slot[doc]), names[int(owner_name[doc])]),
                                 {doc: doc for doc in _flatnonzero(owner_name >= 0)})
        step_offsets, step_docs = arrays["step_offsets"].tolist(), arrays["step_docs"]
        self._step_docs_at = _Lazy(lambda row: step_docs[step_offsets[row]:step_offsets[row + 1]].tolist(),
                                   dict(zip(slots, rows)))
        tag_offsets, tag_slots = arrays["tag_offsets"].tolist(), arrays["tag_slots"]
        self._tag_slots = {tag: set(tag_slots[tag_offsets[i]:tag_offsets[i + 1]].tolist())
                           for i, tag in enumerate(header["tags"])}
        group_offsets, group_slots = arrays["group_offsets"].tolist(), arrays["group_slots"]
        groups = [_Signature(_signature_from_json(doc)) for doc in header["groups"]]
        self._group_slots = {g: set(group_slots[group_offsets[i]:group_offsets[i + 1]].tolist())
                             for i, g in enumerate(groups)}
        self._name_groups = {name: dict.fromkeys(groups[i] for i in members)
                             for name, members in header["name_groups"].items()}
        self._set_groups = None
        self._replaced_by = {old: set(new) for old, new in header["replaced_by"]}
        profile_offsets = arrays["profile_offsets"].tolist()
        words, counts = arrays["profile_words"], arrays["profile_counts"]
        profile_names = [names[i] for i in header["profile_names"]]
        self._name_word = _Lazy(
            lambda i: Counter(dict(zip(words[profile_offsets[i]:profile_offsets[i + 1]].tolist(),
                                       counts[profile_offsets[i]:profile_offsets[i + 1]].tolist()))),
            {name: i for i, name in enumerate(profile_names)})
        self._name_total = Counter(header["name_totals"])
        self._word_total = Counter(dict(zip(arrays["word_ids"].tolist(), arrays["word_counts"].tolist())))
        self._grand_total = int(header["grand_total"])
        self._free_slots = [int(s) for s in header["free_slots"]]
        self._next_slot = int(header["next_slot"])
        self._next_seq = int(header["next_seq"])
        kind = _SparsePostings if self.embedder.sparse else _DenseRows
        self._text = kind.restore("text", header["text"], arrays)
        self._steps = _SparsePostings.restore("steps", header["steps"], arrays)
        if len(self._text) != len(slots):
            raise ValueError("text vectors and paths disagree")

    def _shape_of_slot(self, slot: int) -> _Shape:
        record = self._record_at[slot]
        names = record.step_names
        return _Shape(names, _Signature(record.signature), StepOrder.of(len(names), record.edges),
                      record.is_template, record.completeness())

    # -- incremental updates -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, path_id: object) -> bool:
        return path_id in self._slot_of

    def get(self, path_id: str) -> PathRecord | None:
        """The record with this id, or None."""
        slot = self._slot_of.get(path_id)
        return None if slot is None else self._record_at[slot]

    def _slots_in_order(self) -> list[int]:
        return sorted(self._seq_at, key=self._seq_at.__getitem__)

    def ids(self) -> list[str]:
        """Path ids in creation order."""
        return [self._record_at[s].id for s in self._slots_in_order()]

    def records(self) -> list[PathRecord]:
        """Records in creation order."""
        return [self._record_at[s] for s in self._slots_in_order()]

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
            if record.id in self._slot_of or record.id in seen:
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
        shape = self._shape_at[slot]   # first: a restored shape is made from the record
        record = self._record_at.pop(slot)
        signature = shape.signature
        del self._slot_of[path_id]
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
            if self._set_groups is not None:
                self._discard(self._set_groups, _name_set(signature), signature)
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
        if record.id not in self._slot_of:
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
            self._slot_of[record.id] = slot
            self._record_at[slot] = record
            self._seq_at[slot] = seq
            names = record.step_names
            signature = _Signature(record.signature)
            self._shape_at[slot] = _Shape(names, signature, StepOrder.of(len(names), record.edges),
                                          record.is_template, record.completeness())
            if signature not in self._group_slots:
                if self._set_groups is not None:
                    self._set_groups.setdefault(_name_set(signature), set()).add(signature)
            self._group_slots.setdefault(signature, set()).add(slot)
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
        record = self.get(path_id)
        if record is None:
            raise LocalizationError.single("unknown-path", f"no path {path_id!r} in the index", where=path_id)
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
            frontier = [i for i in entry_ids[:entries] if i in self._slot_of]
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

        if expand is not None and similarity and cfg.expand_limit > 0:
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
        rest_weight = (total_weight - weights["text"] - weights["support"] - weights["steps"]
                       - weights["vote"])
        # The vote is cheap, so it joins the first pass (and the bound that prunes groups).
        votes: dict[str, float] = {}
        if weights["vote"] > 0:
            neighbours = heapq.nlargest(cfg.vote_top, ((v, s) for s, v in similarity.items()
                                                       if v > 0 and not shape_at[s].is_template))
            votes = name_votes(((v, _vote_items(shape_at[s].names, cfg.vote_pairs)) for v, s in neighbours),
                               cfg.vote_power)
        vote_total = sum(votes.values())
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
            vote_value = (vote_overlap(_vote_items(shape_at[head].names, cfg.vote_pairs), votes, vote_total)
                          if votes else 0.0)
            partial = (weights["text"] * text_value + weights["support"] * support_value
                       + weights["steps"] * steps_value + weights["vote"] * vote_value)
            first_pass.append((partial, head, slots, text_value, support_value, steps_value, vote_value))
        first_pass.sort(key=lambda item: (-item[0], record_at[item[1]].id))

        newest_seq = self._next_seq - 1
        positions: dict[str, float | None] = {}
        query_words: list[int | None] | None = None
        background: dict[int, float] = {}
        scored: list[_Scored] = []
        best_scores: list[float] = []   # min-heap of the best full scores so far
        demoted = 0
        for partial, head, slots, text_value, support_value, steps_value, vote_value in first_pass:
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
                "vote": vote_value,
                "order": self._order_share(shape.signature) if weights["order"] > 0 else 0.0,
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

    def _order_share(self, signature: tuple) -> float:
        """The share of the paths with this structure's multiset of step names that follow it."""
        if self._set_groups is None:
            self._set_groups = {}
            for group in self._group_slots:
                self._set_groups.setdefault(_name_set(group), set()).add(group)
        same = self._set_groups.get(_name_set(signature), ())
        total = sum(len(self._group_slots[g]) for g in same)
        return len(self._group_slots.get(signature, ())) / total if total else 0.0

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
