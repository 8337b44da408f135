"""The vector stores of the path index: :class:`SparsePostings`, an inverted index of sparse
unit vectors (the text of paths with a lexical embedder, and every stored step), and
:class:`DenseRows`, unit vectors in the rows of a matrix (the text of paths with a model).

Both are numpy arrays when numpy is installed and Python lists otherwise (the same results,
slower); both export themselves as arrays and are restored from them without recomputing
anything (:mod:`.persist`).

>>> postings = SparsePostings()
>>> postings.add(postings.new_doc_id(), {1: 1.0, 2: 1.0})
>>> postings.add(postings.new_doc_id(), {2: 1.0, 3: 1.0})
>>> best, cosine = postings.search(postings.query_vector({1: 1.0}), 1)
>>> [doc for doc, _ in best], round(cosine(1), 3)
([0], 0.0)
"""

from __future__ import annotations

import heapq
import math
import operator
from typing import Any, Callable, Iterable, Mapping, Sequence

from hgm_engine.errors import LocalizationError

__all__ = ["SparsePostings", "DenseRows", "numpy_module", "flatnonzero", "MAX_DF_RATIO", "MIN_COMMON_DOCS"]

MAX_DF_RATIO = 0.5      # words in more than half of the documents are ignored ...
MIN_COMMON_DOCS = 20    # ... once there are enough documents to say so
_second = operator.itemgetter(1)


def numpy_module() -> Any:
    """numpy, or None when it is not installed (everything works without it, only slower).

    >>> numpy_module() is None or numpy_module().__name__ == "numpy"
    True
    """
    try:
        import numpy
    except ImportError:  # everything works without numpy, only slower
        return None
    return numpy


def flatnonzero(mask: Any) -> list[int]:
    """The positions where a numpy ``mask`` is true, as a list.

    >>> flatnonzero(numpy_module().array([False, True, True]))
    [1, 2]
    """
    return numpy_module().flatnonzero(mask).tolist()


class SparsePostings:
    """An inverted index of L2-normalised sparse vectors; the IDF comes from list lengths.

    With numpy, each word's postings are two growable arrays (doc ids, weights) and a query
    adds whole lists into one score array, so a common word costs one vector operation; a
    removal swaps the last posting into the hole. Without numpy they are Python lists and
    scores accumulate in a dict — the same results, slower.
    """

    def __init__(self, use_numpy: bool = True) -> None:
        self.np = numpy_module() if use_numpy else None
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
        common = max(MIN_COMMON_DOCS, n * MAX_DF_RATIO)
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
    def restore(cls, prefix: str, scalars: Mapping[str, Any], arrays: Mapping[str, Any]) -> "SparsePostings":
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


class DenseRows:
    """Unit vectors in rows of a growing matrix (numpy when present, lists otherwise)."""

    def __init__(self) -> None:
        self.np = numpy_module()
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
    def restore(cls, prefix: str, scalars: Mapping[str, Any], arrays: Mapping[str, Any]) -> "DenseRows":
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
