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
"""

from __future__ import annotations

import bisect
import json
import math
import struct
import threading
import weakref
import zlib
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs
import numpy as np

from hgm_engine.model.graph import MemoryGraph, Node
from hgm_engine.model.text import ANALYZER, TAG_FIELD, TEXT_FIELDS, analyze, node_text, words

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
    "index_for",
    "searcher_for",
    "LexicalSearcher",
    "register",
    "unregister",
    "word_forms",
]

K1 = 1.2
B = 0.75
INDEX_FORMAT = "hgm-node-index/1"
_MAGIC = b"HGMIDX1\n"


@attrs.frozen
class TextFields:
    """Which attributes are a node's text: the strings of ``fields``, and the strings of the
    ``tags`` list (None: no list).

    >>> DEFAULT_FIELDS.text({"title": "Trip", "tags": ["travel"]})
    'Trip\\ntravel'
    """

    fields: tuple[str, ...] = TEXT_FIELDS
    tags: str | None = TAG_FIELD

    def text(self, attributes: Mapping[str, Any]) -> str:
        return node_text(attributes, self.fields, self.tags)

    def same_text(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
        """Whether two versions of a node's attributes have the same text: at once when none
        of the text attributes changed (a status update), else by their texts.

        >>> DEFAULT_FIELDS.same_text({"content": "Book", "status": "pending"}, {"content": "Book", "status": "done"})
        True
        >>> DEFAULT_FIELDS.same_text({"content": "Book", "name": 3}, {"content": "Book", "name": 4})
        True
        >>> DEFAULT_FIELDS.same_text({"content": "Book"}, {"content": "Book it"})
        False
        """
        names = self.fields if self.tags is None else (*self.fields, self.tags)
        for name in names:
            old, new = before.get(name), after.get(name)
            if old is not new and old != new:
                return self.text(before) == self.text(after)
        return True

    def key(self) -> str:
        """How these fields are named in a saved index (an index of other fields is not read)."""
        return json.dumps([list(self.fields), self.tags])


DEFAULT_FIELDS = TextFields()

# The terms of a text, remembered for the texts seen last (a node's text is analysed when it
# is indexed, again when a view hides it, and when a list is ranked).
_TERMS_CACHE: dict[str, tuple[dict[str, int], int]] = {}
# What json.dumps(terms, ensure_ascii=False, separators=(",", ":")) makes, without a new
# encoder per call (making one took most of the time of writing an entry).
_TERMS_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_TERMS_CACHE_SIZE = 50_000
_cache_lock = threading.Lock()


def _terms_of(text: str) -> tuple[dict[str, int], int]:
    found = _TERMS_CACHE.get(text)
    if found is None:
        terms = analyze(text)
        counts: dict[str, int] = {}  # as dict(Counter(terms)), in first-seen order, at half the cost
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        found = (counts, len(terms))
        with _cache_lock:
            if len(_TERMS_CACHE) >= _TERMS_CACHE_SIZE:
                _TERMS_CACHE.clear()
            _TERMS_CACHE[text] = found
    return found


def text_changes(changes: Iterable[Any], fields: "TextFields") -> dict[str, Node | None]:
    """The nodes of a commit's ``changes`` whose index entry may change: added, removed (None),
    or updated in their type or their text. An update of other attributes (a status) leaves
    the entry as it was, so it is not analysed again.

    >>> from hgm_engine.model import Change, Node
    >>> a, b = Node("a", "action", {"content": "Book", "status": "pending"}, 1), Node("a", "action", {"content": "Book", "status": "done"}, 1)
    >>> text_changes([Change("node_updated", a, b)], DEFAULT_FIELDS)
    {}
    """
    out: dict[str, Node | None] = {}
    for change in changes:
        kind = change.kind
        if kind == "node_added":
            out[change.after.id] = change.after
        elif kind == "node_updated":
            before, after = change.before, change.after
            if before is None or before.type != after.type or not fields.same_text(before.attrs, after.attrs):
                out[after.id] = after
        elif kind == "node_removed":
            out[change.before.id] = None
    return out


def query_terms(text: str) -> tuple[str, ...]:
    """The distinct terms of a query text, sorted (the order scores are summed in).

    >>> query_terms("Visit the Temple of Heaven, visit it")
    ('heaven', 'templ', 'visit')
    """
    return tuple(sorted(set(analyze(text))))


@attrs.frozen(slots=True)
class Doc:
    """One node's entry: its terms with their counts, its length in terms, its creation
    number and type."""

    terms: Mapping[str, int]
    length: int
    seq: int
    type: str

    def terms_json(self) -> str:
        """The entry's terms as a store keeps them (a JSON object of counts).

        >>> Doc({"hotel": 2}, 2, 1, "fact").terms_json()
        '{"hotel":2}'
        """
        return _TERMS_JSON.encode(self.terms)

    @classmethod
    def from_terms_json(cls, text: str, node: Node) -> "Doc":
        """The entry a store kept for ``node`` (its terms; its seq and type from the node);
        ``ValueError`` when the text is not an object of positive integer counts.

        >>> Doc.from_terms_json('{"hotel":2}', Node("a", "fact", {}, 7))
        Doc(terms={'hotel': 2}, length=2, seq=7, type='fact')
        """
        terms = json.loads(text)
        if not isinstance(terms, dict) or not terms or not all(
            isinstance(k, str) and type(v) is int and v > 0 for k, v in terms.items()
        ):
            raise ValueError(f"not a node index entry: {text[:80]!r}")
        return cls(terms, sum(terms.values()), node.seq, node.type)

    @classmethod
    def of(cls, node: Node, fields: TextFields = DEFAULT_FIELDS) -> "Doc | None":
        """The entry of ``node`` (None when its text has no term).

        >>> Doc.of(Node("a", "fact", {"content": "the hotel, the hotel"}, 3))
        Doc(terms={'hotel': 2}, length=2, seq=3, type='fact')
        """
        terms, length = _terms_of(fields.text(node.attrs))
        if not length:
            return None
        return cls(terms, length, node.seq, node.type)


@attrs.frozen(slots=True)
class SearchHit:
    """One node ``search`` found: its id, its score, the query terms it contains and whether
    it contains them all. With vectors, ``score`` is the fused score and ``similarity`` the
    cosine similarity of the node's text to the query (None: not among the nearest), and
    ``lexical`` the BM25 score (None: no term in common)."""

    id: str
    score: float
    terms: tuple[str, ...]
    all_terms: bool
    similarity: float | None = None
    lexical: float | None = None


def _idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def _norm(tf: float, length: float, avgdl: float) -> float:
    # The same operations, in the same order, as the numpy form in _score_segment.
    return tf * (K1 + 1.0) / (tf + K1 * ((1.0 - B) + B * length / avgdl))


# -- segments ------------------------------------------------------------------------------


class Segment:
    """Many nodes' entries in columns; immutable once built. Ordinals follow creation order.

    >>> seg = Segment.build([("a", Doc({"hotel": 1}, 1, 1, "fact")), ("b", Doc({"hotel": 2, "pay": 1}, 3, 2, "action"))])
    >>> seg.n_docs, seg.df("hotel"), seg.doc("b").terms
    (2, 2, {'hotel': 2, 'pay': 1})
    >>> Segment.from_bytes(seg.to_bytes()).doc("b") == seg.doc("b")
    True
    """

    __slots__ = (
        "ids", "_ord_of", "lengths", "seqs", "type_names", "type_codes", "terms", "term_of",
        "p_offsets", "p_ords", "p_tfs", "f_offsets", "f_tids", "f_tfs", "total_length", "_float_lengths",
    )

    def __init__(self, ids, lengths, seqs, type_names, type_codes, terms, p_offsets, p_ords, p_tfs, f_offsets, f_tids, f_tfs):
        self.ids: list[str] = ids
        self._ord_of: dict[str, int] | None = None  # made when first asked (a reopened memory may never)
        self.lengths = lengths
        self.seqs = seqs
        self.type_names: list[str] = type_names
        self.type_codes = type_codes
        self.terms: list[str] = terms
        self.term_of: dict[str, int] = {term: position for position, term in enumerate(terms)}
        self.p_offsets, self.p_ords, self.p_tfs = p_offsets, p_ords, p_tfs
        self.f_offsets, self.f_tids, self.f_tfs = f_offsets, f_tids, f_tfs
        self.total_length = int(lengths.sum()) if len(lengths) else 0
        self._float_lengths = None

    @property
    def ord_of(self) -> dict[str, int]:
        """Each node id's position in the segment."""
        if self._ord_of is None:
            self._ord_of = dict(zip(self.ids, range(len(self.ids))))
        return self._ord_of

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    @property
    def n_postings(self) -> int:
        return len(self.p_ords)

    def float_lengths(self) -> np.ndarray:
        if self._float_lengths is None:
            self._float_lengths = self.lengths.astype(np.float64)
        return self._float_lengths

    def df(self, term: str) -> int:
        tid = self.term_of.get(term)
        return 0 if tid is None else int(self.p_offsets[tid + 1] - self.p_offsets[tid])

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The ordinals of the nodes holding ``term`` (ascending) and the term's counts."""
        tid = self.term_of.get(term)
        if tid is None:
            return None
        low, high = int(self.p_offsets[tid]), int(self.p_offsets[tid + 1])
        return self.p_ords[low:high], self.p_tfs[low:high]

    def doc_at(self, position: int) -> Doc:
        low, high = int(self.f_offsets[position]), int(self.f_offsets[position + 1])
        terms = self.terms
        found = {terms[tid]: int(tf) for tid, tf in zip(self.f_tids[low:high].tolist(), self.f_tfs[low:high].tolist())}
        return Doc(found, int(self.lengths[position]), int(self.seqs[position]), self.type_names[int(self.type_codes[position])])

    def doc(self, node_id: str) -> Doc | None:
        position = self.ord_of.get(node_id)
        return None if position is None else self.doc_at(position)

    @classmethod
    def empty(cls) -> "Segment":
        return cls.build([])

    @classmethod
    def build(cls, docs: Iterable[tuple[str, Doc]]) -> "Segment":
        """A segment of ``(id, doc)`` entries (in any order: ordinals follow ``seq``)."""
        entries = sorted(docs, key=lambda item: item[1].seq)
        vocabulary: dict[str, int] = {}
        type_index: dict[str, int] = {}
        f_tids: list[int] = []
        f_tfs: list[int] = []
        f_offsets = [0]
        for _, doc in entries:
            for term, tf in doc.terms.items():
                f_tids.append(vocabulary.setdefault(term, len(vocabulary)))
                f_tfs.append(tf)
            f_offsets.append(len(f_tids))
        ids = [node_id for node_id, _ in entries]
        lengths = np.fromiter((doc.length for _, doc in entries), np.int32, len(entries))
        seqs = np.fromiter((doc.seq for _, doc in entries), np.int64, len(entries))
        codes = np.fromiter((type_index.setdefault(doc.type, len(type_index)) for _, doc in entries), np.int16, len(entries))
        return cls._from_forward(
            ids, lengths, seqs, list(type_index), codes, list(vocabulary),
            np.asarray(f_offsets, np.int64), np.asarray(f_tids, np.int32), np.asarray(f_tfs, np.int32),
        )

    @classmethod
    def _from_forward(cls, ids, lengths, seqs, type_names, codes, terms, f_offsets, f_tids, f_tfs) -> "Segment":
        """Invert a forward index (each node's term ids and counts, nodes in ordinal order)."""
        doc_of_entry = np.repeat(np.arange(len(ids), dtype=np.int32), np.diff(f_offsets))
        order = np.lexsort((doc_of_entry, f_tids))
        counts = np.bincount(f_tids, minlength=len(terms)) if len(terms) else np.zeros(0, np.int64)
        p_offsets = np.zeros(len(terms) + 1, np.int64)
        np.cumsum(counts, out=p_offsets[1:])
        return cls(
            ids, lengths, seqs, type_names, codes, terms, p_offsets,
            doc_of_entry[order].astype(np.int32), f_tfs[order].astype(np.int32), f_offsets, f_tids, f_tfs,
        )

    # -- bytes ---------------------------------------------------------------------------

    def to_bytes(self, **header: Any) -> bytes:
        """The segment as bytes a store keeps: a JSON header (``header`` added to it), the
        ids, types and terms as JSON, the columns as little-endian arrays, and a CRC-32 of all.

        >>> Segment.header_of(Segment.empty().to_bytes(t=3))["t"]
        3
        """
        head = dict(header, format=INDEX_FORMAT, analyzer=ANALYZER, docs=self.n_docs, terms=len(self.terms),
                    postings=self.n_postings)
        parts = [
            json.dumps(head).encode(),
            json.dumps(self.ids, ensure_ascii=False).encode("utf-8", "surrogatepass"),
            json.dumps(self.type_names, ensure_ascii=False).encode("utf-8", "surrogatepass"),
            json.dumps(self.terms, ensure_ascii=False).encode("utf-8", "surrogatepass"),
        ]
        arrays = [
            self.lengths.astype("<i4"), self.seqs.astype("<i8"), self.type_codes.astype("<i2"),
            self.p_offsets.astype("<i8"), self.p_ords.astype("<i4"), self.p_tfs.astype("<i4"),
            self.f_offsets.astype("<i8"), self.f_tids.astype("<i4"), self.f_tfs.astype("<i4"),
        ]
        parts.extend(a.tobytes() for a in arrays)
        body = b"".join(struct.pack("<Q", len(p)) + p for p in parts)
        return _MAGIC + struct.pack("<I", zlib.crc32(body)) + body

    @staticmethod
    def _parts(data: bytes) -> list[memoryview]:
        view = memoryview(data)
        if bytes(view[: len(_MAGIC)]) != _MAGIC or len(view) < len(_MAGIC) + 4:
            raise ValueError("not a saved node index")
        (crc,) = struct.unpack_from("<I", view, len(_MAGIC))
        body = view[len(_MAGIC) + 4 :]
        if zlib.crc32(body) != crc:
            raise ValueError("the saved node index does not match its checksum")
        parts, offset = [], 0
        while offset < len(body):
            (size,) = struct.unpack_from("<Q", body, offset)
            offset += 8
            if offset + size > len(body):
                raise ValueError("the saved node index is cut short")
            parts.append(body[offset : offset + size])
            offset += size
        if len(parts) != 13:
            raise ValueError(f"the saved node index has {len(parts)} parts, not 13")
        return parts

    @classmethod
    def header_of(cls, data: bytes) -> dict[str, Any]:
        """The header saved with a segment (format, analyzer, counts and what the saver added)."""
        return json.loads(bytes(cls._parts(data)[0]))

    @classmethod
    def from_bytes(cls, data: bytes) -> "Segment":
        """The segment :meth:`to_bytes` saved; ``ValueError`` when the bytes are not one
        (damaged, cut short, another format or analyzer)."""
        parts = cls._parts(data)
        head = json.loads(bytes(parts[0]))
        if head.get("format") != INDEX_FORMAT or head.get("analyzer") != ANALYZER:
            raise ValueError(f"the saved node index is {head.get('format')} / {head.get('analyzer')}")
        ids = json.loads(bytes(parts[1]).decode("utf-8", "surrogatepass"))
        type_names = json.loads(bytes(parts[2]).decode("utf-8", "surrogatepass"))
        terms = json.loads(bytes(parts[3]).decode("utf-8", "surrogatepass"))
        kinds = ("<i4", "<i8", "<i2", "<i8", "<i4", "<i4", "<i8", "<i4", "<i4")
        arrays = [np.frombuffer(part, dtype=kind) for part, kind in zip(parts[4:], kinds)]
        lengths, seqs, codes, p_offsets, p_ords, p_tfs, f_offsets, f_tids, f_tfs = arrays
        n, t = len(ids), len(terms)
        if not (len(lengths) == len(seqs) == len(codes) == n and len(p_offsets) == t + 1 and len(f_offsets) == n + 1
                and len(p_ords) == len(p_tfs) == len(f_tids) == len(f_tfs) == int(p_offsets[-1] if t else 0)):
            raise ValueError("the saved node index's columns do not agree")
        return cls(ids, lengths, seqs, type_names, codes, terms, p_offsets, p_ords, p_tfs, f_offsets, f_tids, f_tfs)


# -- the index of one state ----------------------------------------------------------------


class LexicalIndex:
    """A segment and the nodes changed since it was built: the index of one graph state.

    ``update(node_id, node)`` says what a node is now (None: gone, or no text); statistics
    (``n_docs``, ``total_length``, ``df``) follow every update.

    >>> index = LexicalIndex.build(MemoryGraph.from_records([("a", "fact", {"content": "hotel"})], []))
    >>> index.update("b", Node("b", "fact", {"content": "hotel deposit"}, 2))
    >>> index.n_docs, index.df("hotel"), index.df("deposit")
    (2, 2, 1)
    >>> index.update("a", None); index.n_docs, index.df("hotel")
    (1, 1)
    >>> index.compact().segment.ids
    ['b']
    """

    def __init__(self, segment: Segment, fields: TextFields = DEFAULT_FIELDS):
        self.segment = segment
        self.fields = fields
        self.dead: set[int] = set()  # segment ordinals whose node changed or went
        self.dead_df: Counter = Counter()
        self.dead_length = 0
        self.docs: dict[str, Doc] = {}  # nodes changed since the segment, as they are now
        self.postings: dict[str, set[str]] = {}  # term -> ids among ``docs``
        self.changed_length = 0
        self.n_added = 0  # entries among ``docs`` of nodes the segment does not hold
        self.version = 0

    @classmethod
    def build(cls, view, fields: TextFields = DEFAULT_FIELDS) -> "LexicalIndex":
        """The index of every node of ``view`` (analysing each node's text once)."""
        docs = []
        for node in view.nodes():
            doc = Doc.of(node, fields)
            if doc is not None:
                docs.append((node.id, doc))
        return cls(Segment.build(docs), fields)

    # -- statistics ------------------------------------------------------------------------

    @property
    def n_docs(self) -> int:
        return self.segment.n_docs - len(self.dead) + len(self.docs)

    @property
    def total_length(self) -> int:
        return self.segment.total_length - self.dead_length + self.changed_length

    @property
    def n_changed(self) -> int:
        """How many entries differ from the segment (changed, added or gone)."""
        return len(self.dead) + self.n_added

    def df(self, term: str) -> int:
        return self.segment.df(term) - self.dead_df.get(term, 0) + len(self.postings.get(term, ()))

    def doc(self, node_id: str) -> Doc | None:
        """The entry of ``node_id`` in this state (None: no such node, or no text)."""
        found = self.docs.get(node_id)
        if found is not None:
            return found
        position = self.segment.ord_of.get(node_id)
        if position is None or position in self.dead:
            return None
        return self.segment.doc_at(position)

    # -- changing --------------------------------------------------------------------------

    def update(self, node_id: str, node: Node | None) -> None:
        """``node_id`` is now ``node`` (None: removed)."""
        self.replace(node_id, None if node is None else Doc.of(node, self.fields))

    def replace(self, node_id: str, doc: Doc | None) -> None:
        """``node_id``'s entry is now ``doc`` (None: no entry)."""
        self.version += 1
        old = self.docs.pop(node_id, None)
        if old is not None:
            self.changed_length -= old.length
            if node_id not in self.segment.ord_of:
                self.n_added -= 1
            for term in old.terms:
                holders = self.postings.get(term)
                if holders is not None:
                    holders.discard(node_id)
                    if not holders:
                        del self.postings[term]
        else:
            position = self.segment.ord_of.get(node_id)
            if position is not None and position not in self.dead:
                self.dead.add(position)
                gone = self.segment.doc_at(position)
                self.dead_df.update(gone.terms.keys())
                self.dead_length += gone.length
        if doc is not None:
            self.set_doc(node_id, doc)

    def copy(self) -> "LexicalIndex":
        """Another index of the same state, sharing the segment (cost: the changed entries)."""
        other = LexicalIndex(self.segment, self.fields)
        other.dead = set(self.dead)
        other.dead_df = Counter(self.dead_df)
        other.dead_length = self.dead_length
        other.docs = dict(self.docs)
        other.postings = {term: set(ids) for term, ids in self.postings.items()}
        other.changed_length = self.changed_length
        other.n_added = self.n_added
        return other

    def set_doc(self, node_id: str, doc: Doc) -> None:
        """Put an entry for ``node_id`` among the changed ones (its old entry must be gone)."""
        self.docs[node_id] = doc
        self.changed_length += doc.length
        if node_id not in self.segment.ord_of:
            self.n_added += 1
        for term in doc.terms:
            self.postings.setdefault(term, set()).add(node_id)

    def apply(self, changes: Iterable[Any]) -> None:
        """Follow a commit's changes (``hgm_engine.model.Change``)."""
        for node_id, node in text_changes(changes, self.fields).items():
            self.update(node_id, node)

    def compact(self) -> "LexicalIndex":
        """This state as one new segment (the changed entries folded in), in columns."""
        seg = self.segment
        alive = np.ones(seg.n_docs, bool)
        if self.dead:
            alive[np.fromiter(self.dead, np.int64, len(self.dead))] = False
        old_positions = np.flatnonzero(alive)
        changed = sorted(self.docs.items(), key=lambda item: item[1].seq)
        # Vocabulary: the segment's, then new terms; types likewise.
        vocabulary = dict(seg.term_of)
        terms = list(seg.terms)
        type_index = {name: code for code, name in enumerate(seg.type_names)}
        type_names = list(seg.type_names)
        new_tids: list[int] = []
        new_tfs: list[int] = []
        new_counts: list[int] = []
        for _, doc in changed:
            for term, tf in doc.terms.items():
                tid = vocabulary.get(term)
                if tid is None:
                    tid = vocabulary[term] = len(terms)
                    terms.append(term)
                new_tids.append(tid)
                new_tfs.append(tf)
            new_counts.append(len(doc.terms))
            if doc.type not in type_index:
                type_index[doc.type] = len(type_names)
                type_names.append(doc.type)
        # Forward entries of the surviving segment nodes, then of the changed ones.
        f_counts = np.diff(seg.f_offsets)
        entry_alive = np.repeat(alive, f_counts)
        old_tids = seg.f_tids[entry_alive]
        old_tfs = seg.f_tfs[entry_alive]
        counts = np.concatenate([f_counts[old_positions], np.asarray(new_counts, np.int64)])
        tids = np.concatenate([old_tids, np.asarray(new_tids, np.int32)])
        tfs = np.concatenate([old_tfs, np.asarray(new_tfs, np.int32)])
        ids = [seg.ids[p] for p in old_positions.tolist()] + [node_id for node_id, _ in changed]
        lengths = np.concatenate([seg.lengths[old_positions], np.fromiter((d.length for _, d in changed), np.int32, len(changed))])
        seqs = np.concatenate([seg.seqs[old_positions], np.fromiter((d.seq for _, d in changed), np.int64, len(changed))])
        codes = np.concatenate([seg.type_codes[old_positions],
                                np.fromiter((type_index[d.type] for _, d in changed), np.int16, len(changed))])
        # Creation order: a changed node may be older than segment nodes (an update keeps seq).
        order = np.argsort(seqs, kind="stable")
        starts = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        entry_order = _gather_ranges(starts, order, counts)
        counts = counts[order]
        offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        tids, tfs = tids[entry_order], tfs[entry_order]
        # Drop the terms no node holds any more, renumbering the others.
        used = np.bincount(tids, minlength=len(terms)) > 0 if len(terms) else np.zeros(0, bool)
        remap = np.cumsum(used) - 1
        kept_terms = [term for term, keep in zip(terms, used.tolist()) if keep]
        tids = remap[tids].astype(np.int32) if len(tids) else tids.astype(np.int32)
        segment = Segment._from_forward(
            [ids[p] for p in order.tolist()], lengths[order], seqs[order], type_names, codes[order],
            kept_terms, offsets, tids, tfs.astype(np.int32),
        )
        return LexicalIndex(segment, self.fields)


def _gather_ranges(starts: np.ndarray, order: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions of ranges ``starts[i] .. starts[i] + counts[i]`` for ``i`` in ``order``."""
    picked = counts[order]
    total = int(picked.sum())
    if not total:
        return np.zeros(0, np.int64)
    run_starts = np.repeat(starts[:-1][order], picked)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(picked) - picked, picked)
    return run_starts + within


# -- what one view sees --------------------------------------------------------------------


class IndexView:
    """An index as one state sees it: ``index`` with the entries of ``hidden`` ids taken out
    and those of ``added`` put in (a transaction's overlay, an earlier state).

    >>> index = LexicalIndex.build(MemoryGraph.from_records([("a", "fact", {"content": "hotel"})], []))
    >>> view = IndexView(index, {"a": index.doc("a")}, {"b": Doc({"museum": 1}, 1, 2, "fact")})
    >>> view.n_docs, [hit.id for hit in view.hits(("museum",))], view.hits(("hotel",))
    (1, ['b'], [])
    """

    def __init__(self, index: LexicalIndex, hidden: Mapping[str, Doc] | None = None, added: Mapping[str, Doc] | None = None,
                 describe: str = "lexical"):
        self.index = index
        self.hidden = dict(hidden or {})
        self.added = dict(added or {})
        self.description = describe
        self._df: dict[str, int] = {}
        # The last query's scoring (see _scored): a fused search asks hits() and then ranks_of()
        # of the same terms, and reads the postings once.
        self._last_scored: tuple | None = None

    @property
    def n_docs(self) -> int:
        return self.index.n_docs - len(self.hidden) + len(self.added)

    @property
    def total_length(self) -> int:
        return (self.index.total_length - sum(d.length for d in self.hidden.values())
                + sum(d.length for d in self.added.values()))

    def df(self, term: str) -> int:
        found = self._df.get(term)
        if found is None:
            found = self.index.df(term)
            found -= sum(1 for d in self.hidden.values() if term in d.terms)
            found += sum(1 for d in self.added.values() if term in d.terms)
            self._df[term] = found
        return found

    def doc(self, node_id: str) -> Doc | None:
        if node_id in self.added:
            return self.added[node_id]
        if node_id in self.hidden:
            return None
        return self.index.doc(node_id)

    def weights(self, terms: Sequence[str]) -> tuple[dict[str, float], float]:
        """Each term's IDF in this state, and the average length."""
        n = self.n_docs
        if not n:
            return {}, 1.0
        return {term: _idf(n, self.df(term)) for term in terms}, self.total_length / n

    def score(self, doc: Doc, terms: Sequence[str], idf: Mapping[str, float], avgdl: float) -> tuple[float, tuple[str, ...]]:
        """A node's score for the query ``terms`` (sorted), and the terms it holds."""
        score = 0.0
        found = []
        length = float(doc.length)
        for term in terms:
            tf = doc.terms.get(term)
            if tf:
                score += idf[term] * _norm(float(tf), length, avgdl)
                found.append(term)
        return score, tuple(found)

    def hits(self, terms: Sequence[str], *, top: int | None = None, node_type: str | None = None,
             charge: Callable[[int], None] | None = None) -> list[SearchHit]:
        """The nodes holding any of ``terms`` (a :func:`query_terms` tuple), best first: every
        term before some, then score, then creation order; the first ``top`` only when given,
        of ``node_type`` only when given. ``charge(n)`` is told of the postings read."""
        terms = tuple(terms)
        if not terms or top == 0:
            return []
        idf, avgdl = self.weights(terms)
        if not idf:
            return []
        wanted = len(terms)
        seg = self.index.segment
        found, others = self._scored(terms, idf, avgdl, node_type, charge)
        segment_hits = _best(seg, found, terms, wanted, top)
        merged = _merge(segment_hits, others, lambda hit: self._seq(hit.id))
        return list(merged) if top is None else merged[:top]

    def _scored(self, terms: tuple[str, ...], idf: Mapping[str, float], avgdl: float, node_type: str | None,
                charge: Callable[[int], None] | None) -> tuple[Any, list[SearchHit]]:
        """The segment's scored matches (:func:`_score_segment`) and the other entries' hits
        (:meth:`_other_hits`) for ``terms``: computed once per view for the last terms and
        type asked, the postings charged at every call as if read again (so a budget is spent
        the same whether or not they were). Callers never change what is returned."""
        key = (terms, node_type, self.index.version)
        last = self._last_scored
        if last is not None and last[0] == key:
            if charge is not None:
                for amount in last[3]:
                    charge(amount)
            return last[1], last[2]
        charged: list[int] = []

        def record(amount: int) -> None:
            charged.append(amount)
            if charge is not None:
                charge(amount)

        found = _score_segment(self.index.segment, terms, idf, avgdl, self._excluded(), node_type, record)
        others = self._other_hits(terms, idf, avgdl, node_type, record)
        self._last_scored = (key, found, others, tuple(charged))
        return found, others

    def _seq(self, node_id: str) -> int:
        """The creation number of a node this view holds (a hit's): ``doc(node_id).seq``
        without making the entry."""
        doc = self.added.get(node_id) or self.index.docs.get(node_id)
        if doc is not None:
            return doc.seq
        seg = self.index.segment
        return int(seg.seqs[seg.ord_of[node_id]])

    def _excluded(self) -> set[int]:
        """The segment positions this view does not see (dead, or hidden by the view)."""
        index, seg = self.index, self.index.segment
        excluded = set(index.dead)
        for node_id in self.hidden:
            position = seg.ord_of.get(node_id)
            if position is not None:
                excluded.add(position)
        return excluded

    def _other_hits(self, terms, idf, avgdl, node_type, charge) -> list[SearchHit]:
        """The changed entries and the view's own that hold a term, scored one by one, in order."""
        index = self.index
        wanted = len(terms)
        others: list[SearchHit] = []
        candidates: set[str] = set()
        for term in terms:
            candidates.update(index.postings.get(term, ()))
        candidates.difference_update(self.hidden)
        for node_id, doc in self.added.items():
            if any(term in doc.terms for term in terms):
                candidates.add(node_id)
        for node_id in candidates:
            doc = self.added.get(node_id) or index.docs[node_id]
            if node_type is not None and doc.type != node_type:
                continue
            score, held = self.score(doc, terms, idf, avgdl)
            others.append(SearchHit(node_id, score, held, len(held) == wanted))
        if charge is not None:
            charge(len(candidates))
        others.sort(key=lambda hit: (not hit.all_terms, -hit.score, self.doc(hit.id).seq))
        return others

    def ranks_of(self, terms: Sequence[str], ids: Sequence[str], *, node_type: str | None = None,
                 charge: Callable[[int], None] | None = None) -> dict[str, tuple[int, SearchHit]]:
        """For each of ``ids`` that holds a term: its rank in :meth:`hits` (1 is first) and its
        hit, counted without listing the hits before it (what fusing a few nodes' ranks needs).

        >>> index = LexicalIndex.build(MemoryGraph.from_records(
        ...     [("a", "fact", {"content": "hotel"}), ("b", "fact", {"content": "hotel museum"})], []))
        >>> view = IndexView(index)
        >>> [hit.id for hit in view.hits(("hotel", "museum"))], view.ranks_of(("hotel", "museum"), ["a", "x"])["a"][0]
        (['b', 'a'], 2)
        """
        terms = tuple(terms)
        if not terms or not ids:
            return {}
        idf, avgdl = self.weights(terms)
        if not idf:
            return {}
        wanted = len(terms)
        seg = self.index.segment
        found, others = self._scored(terms, idf, avgdl, node_type, charge)
        if found is not None:
            positions, scores, counts = found
            partial, seqs = counts != wanted, seg.seqs[positions]
        other_index = {hit.id: i for i, hit in enumerate(others)}
        other_keys = [(not hit.all_terms, -hit.score, self._seq(hit.id)) for hit in others]
        sorted_other_keys = sorted(other_keys)
        # Each id's hit, in the order of ``ids``: a changed or added entry's from ``others``;
        # a segment node's looked up among the segment's matches (one search for all of them).
        slots: list[Any] = []
        lookups: list[tuple[int, str, int]] = []  # (slot, id, segment position)
        ord_of, added = seg.ord_of, self.added
        for node_id in ids:
            i = other_index.get(node_id)
            if i is not None:
                slots.append((node_id, others[i], other_keys[i]))
                continue
            position = ord_of.get(node_id)
            if found is None or position is None or node_id in added:
                continue
            lookups.append((len(slots), node_id, position))
            slots.append(None)
        if lookups:
            wanted_positions = np.fromiter((item[2] for item in lookups), np.int64, len(lookups))
            at = np.searchsorted(positions, wanted_positions)
            inside = at < len(positions)
            matches = inside.copy()
            matches[inside] = positions[at[inside]] == wanted_positions[inside]
            at_list, match_list = at.tolist(), matches.tolist()
            held_of: dict[int, tuple[str, ...]] = {}
            partial_rows = [row for row, (a, ok) in enumerate(zip(at_list, match_list)) if ok and partial[a]]
            if partial_rows:
                held = _held_terms_few(seg, terms, wanted_positions[partial_rows])
                held_of = dict(zip(partial_rows, held))
            score_list = scores[at[matches]].tolist()
            seq_list = seqs[at[matches]].tolist()
            k = 0
            for row, ((slot, node_id, _), ok) in enumerate(zip(lookups, match_list)):
                if not ok:
                    continue
                complete = row not in held_of
                hit = SearchHit(node_id, score_list[k], tuple(terms) if complete else held_of[row], complete)
                slots[slot] = (node_id, hit, (not complete, -hit.score, seq_list[k]))
                k += 1
        chosen: list[tuple[str, SearchHit, tuple[bool, float, int]]] = [item for item in slots if item is not None]
        # A hit's rank is 1 + the hits whose key (partial, -score, seq) is smaller: among the
        # changed entries by bisection, among the segment's counted for all the ids at once.
        ahead = _keys_ahead(partial, scores, seqs, [key for _, _, key in chosen]) if found is not None else None
        out: dict[str, tuple[int, SearchHit]] = {}
        for i, (node_id, hit, key) in enumerate(chosen):
            before = bisect.bisect_left(sorted_other_keys, key)
            if ahead is not None:
                before += ahead[i]
            out[node_id] = (before + 1, hit)
        return out

    def rank(self, ids: Sequence[str], terms: Sequence[str], node_text: Callable[[str], Doc | None] | None = None) -> list[str]:
        """``ids`` reordered: the nodes holding query terms first (every term before some,
        then by score), each group in list order among equals; the rest after, in order."""
        terms = tuple(terms)
        if not terms or not ids:
            return list(ids)
        idf, avgdl = self.weights(terms)
        wanted = len(terms)
        scored, rest = [], []
        for position, node_id in enumerate(ids):
            doc = self.doc(node_id) if node_text is None else node_text(node_id)
            score, held = (0.0, ()) if doc is None or not idf else self.score(doc, terms, idf, avgdl)
            if held:
                scored.append((len(held) != wanted, -score, position, node_id))
            else:
                rest.append(node_id)
        scored.sort()
        return [item[3] for item in scored] + rest


def _score_segment(seg: Segment, terms, idf, avgdl, excluded: set[int], node_type, charge):
    """(positions, scores, hit counts) of the segment's nodes holding any term."""
    if not seg.n_docs:
        return None
    lists = []
    read = 0
    for term in terms:
        found = seg.postings(term)
        if found is not None and len(found[0]):
            lists.append((term, found))
            read += len(found[0])
    if charge is not None:
        charge(read)
    if not lists:
        return None
    lengths = seg.float_lengths()
    if len(lists) == 1:
        term, (ords, tfs) = lists[0]
        tf = tfs.astype(np.float64)
        scores = idf[term] * (tf * (K1 + 1.0) / (tf + K1 * ((1.0 - B) + B * lengths[ords] / avgdl)))
        positions = ords.astype(np.int64)
        counts = np.ones(len(positions), np.int16)
    else:
        scores_all = np.zeros(seg.n_docs, np.float64)
        counts_all = np.zeros(seg.n_docs, np.int16)
        for term, (ords, tfs) in lists:
            tf = tfs.astype(np.float64)
            scores_all[ords] += idf[term] * (tf * (K1 + 1.0) / (tf + K1 * ((1.0 - B) + B * lengths[ords] / avgdl)))
            counts_all[ords] += 1
        positions = np.flatnonzero(counts_all)
        scores, counts = scores_all[positions], counts_all[positions]
    keep = None
    if excluded:
        keep = ~np.isin(positions, np.fromiter(excluded, np.int64, len(excluded)))
    if node_type is not None:
        code = seg.type_names.index(node_type) if node_type in seg.type_names else -1
        typed = seg.type_codes[positions] == code
        keep = typed if keep is None else keep & typed
    if keep is not None:
        positions, scores, counts = positions[keep], scores[keep], counts[keep]
    return positions, scores, counts


def _best(seg: Segment, found, terms, wanted: int, top: int | None) -> list[SearchHit]:
    """The segment's hits in order (every term first, then score, then seq), the first
    ``top`` only when given (ties at the cut resolved by seq, exactly)."""
    if found is None:
        return []
    positions, scores, counts = found
    full = counts == wanted
    chosen = []
    left = top
    for group in (full, ~full):
        group_positions, group_scores = positions[group], scores[group]
        if not len(group_positions):
            continue
        if left is not None and len(group_positions) > left:
            threshold = np.partition(group_scores, len(group_scores) - left)[len(group_scores) - left]
            pick = group_scores >= threshold
            group_positions, group_scores = group_positions[pick], group_scores[pick]
        order = np.lexsort((seg.seqs[group_positions], -group_scores))
        if left is not None:
            order = order[:left]
        chosen.append((group_positions[order], group_scores[order], group is full))
        if left is not None:
            left -= len(order)
            if left <= 0:
                break
    hits = []
    all_terms = tuple(terms)
    for group_positions, group_scores, complete in chosen:
        if complete:
            held_of = [all_terms] * len(group_positions)
        elif len(group_positions) <= _FEW_POSITIONS:
            held_of = _held_terms_few(seg, all_terms, group_positions)
        else:
            held_of = _held_terms(seg, all_terms, group_positions)
        for position, score, held in zip(group_positions.tolist(), group_scores.tolist(), held_of):
            hits.append(SearchHit(seg.ids[position], score, held, complete))
    return hits


def _keys_ahead(partial: np.ndarray, scores: np.ndarray, seqs: np.ndarray,
                keys: Sequence[tuple[bool, float, int]]) -> list[int]:
    """For each ``(partial, -score, seq)`` of ``keys``: how many of the segment's hits
    (``partial``, ``scores``, ``seqs``, one entry each) have a smaller key — the same count as
    comparing every hit with it, in a few passes over the hits for all the keys together.

    >>> _keys_ahead(np.array([False, False, True, False]), np.array([2.0, 1.0, 5.0, 1.0]),
    ...             np.array([1, 2, 3, 4]), [(False, -1.0, 4), (True, -5.0, 3), (False, -3.0, 0)])
    [2, 3, 0]
    >>> _keys_ahead(np.array([False, False, True, False]), np.array([2.0, 1.0, 5.0, 1.0]),
    ...             np.array([1, 2**62, 3, -2**62]), [(False, -1.0, 4), (True, -5.0, 3), (False, -1.0, 2**62)])
    [2, 3, 2]
    """
    out = [0] * len(keys)
    if not keys:
        return out
    n_full = len(partial) - int(np.count_nonzero(partial))
    for flag in (False, True):
        members = [i for i, key in enumerate(keys) if key[0] == flag]
        if not members:
            continue
        if not flag and n_full == len(partial):
            group_scores, group_seqs = scores, seqs  # every hit holds every term (one-word queries)
        else:
            group = partial if flag else ~partial
            group_scores, group_seqs = scores[group], seqs[group]
        wanted = np.array([-keys[i][1] for i in members], np.float64)
        thresholds = np.sort(wanted)  # ascending, each once (np.unique's own cost is most of this for a few keys)
        if len(thresholds) > 1:
            thresholds = thresholds[np.concatenate(([True], thresholds[1:] != thresholds[:-1]))]
        low = np.searchsorted(thresholds, group_scores, "left")  # thresholds below each hit's score
        high = np.searchsorted(thresholds, group_scores, "right")
        # Hits scoring more than thresholds[m]: those with more than m thresholds below them.
        above = np.cumsum(np.bincount(low, minlength=len(thresholds) + 1)[::-1])[::-1]
        tied = high != low  # a hit whose score is one of the thresholds: by seq among those
        tied_at, tied_seqs = low[tied], group_seqs[tied]
        ats = np.searchsorted(thresholds, wanted)
        member_seqs = np.array([keys[i][2] for i in members], np.int64)
        # Among the tied hits of each threshold: those of a smaller seq, for every key at once
        # by one search over (threshold, seq) made one number and sorted.
        low_seq = min(int(tied_seqs.min()) if len(tied_seqs) else 0, int(member_seqs.min()))
        span = max(int(tied_seqs.max()) if len(tied_seqs) else 0, int(member_seqs.max())) - low_seq + 1
        if span <= 2**62 // (len(thresholds) + 2):
            combined = np.sort(tied_at.astype(np.int64) * span + (tied_seqs - low_seq))
            starts = np.searchsorted(combined, ats.astype(np.int64) * span, "left")
            within = np.searchsorted(combined, ats.astype(np.int64) * span + (member_seqs - low_seq), "left") - starts
        else:  # seqs too far apart to be made one number with the threshold: one search per key
            order = np.lexsort((tied_seqs, tied_at))
            tied_at, tied_seqs = tied_at[order], tied_seqs[order]
            starts = np.searchsorted(tied_at, ats, "left")
            stops = np.searchsorted(tied_at, ats + 1, "left")
            within = np.array([np.searchsorted(tied_seqs[a:b], seq, "left") for a, b, seq in
                               zip(starts.tolist(), stops.tolist(), member_seqs.tolist())], np.int64)
        counts = above[ats + 1] + within + (n_full if flag else 0)
        for i, count in zip(members, counts.tolist()):
            out[i] = count
    return out


_FEW_POSITIONS = 256  # up to this many positions, _held_terms_few bisects; past it _held_terms sorts


def _held_terms_few(seg: Segment, terms: tuple[str, ...], positions: np.ndarray) -> list[tuple[str, ...]]:
    """For each of a few ``positions`` (segment ordinals), the ``terms`` its node holds: as
    :func:`_held_terms`, by bisecting each term's postings (cost: log of their length per
    position, where a membership test over all positions sorts them).

    >>> seg = Segment.build([("a", Doc({"hotel": 1}, 1, 1, "fact")), ("b", Doc({"hotel": 2, "pay": 1}, 3, 2, "fact"))])
    >>> _held_terms_few(seg, ("hotel", "pay", "zoo"), np.array([1, 0]))
    [('hotel', 'pay'), ('hotel',)]
    """
    columns = []
    for term in terms:
        posting = seg.postings(term)
        if posting is None or not len(posting[0]):
            columns.append([False] * len(positions))
            continue
        ords = posting[0]
        at = np.searchsorted(ords, positions)
        inside = at < len(ords)
        holds = inside.copy()
        holds[inside] = ords[at[inside]] == positions[inside]
        columns.append(holds.tolist())
    return [tuple(term for term, holds in zip(terms, row) if holds) for row in zip(*columns)] if columns else [()] * len(positions)


def _held_terms(seg: Segment, terms: tuple[str, ...], positions: np.ndarray) -> list[tuple[str, ...]]:
    """For each of ``positions`` (segment ordinals), the ``terms`` its node holds: one
    membership test per term over all positions in columns, and one tuple per distinct
    combination (a long query's partial hits share few)."""
    if not len(positions):
        return []
    mask = np.zeros((len(positions), len(terms)), bool)
    for column, term in enumerate(terms):
        posting = seg.postings(term)
        if posting is not None and len(posting[0]):
            mask[:, column] = np.isin(positions, posting[0], assume_unique=True)
    keys = np.packbits(mask, axis=1)
    combos: dict[bytes, tuple[str, ...]] = {}
    out = []
    for row, key in enumerate(map(bytes, keys)):
        held = combos.get(key)
        if held is None:
            held = combos[key] = tuple(term for term, holds in zip(terms, mask[row].tolist()) if holds)
        out.append(held)
    return out


def _merge(first: list[SearchHit], second: list[SearchHit], seq_of: Callable[[SearchHit], int]) -> list[SearchHit]:
    if not second:
        return first
    if not first:
        return second
    return sorted(first + second, key=lambda hit: (not hit.all_terms, -hit.score, seq_of(hit)))


# -- which index a view reads --------------------------------------------------------------


class LexicalSearcher:
    """What ``search`` and ``rank`` run on: views of one graph's lexical index.

    ``current()`` gives the index of the graph as it is now (a memory keeps it in step with
    every commit), or None to build one from the graph on first use (and again after the
    graph changed). A memory with an embedder answers through a searcher of its own that
    fuses these ranks with its vectors (``hgm_engine.search``); it offers the same methods.

    >>> g = MemoryGraph.from_records([("a", "fact", {"content": "hotel"})], [])
    >>> [hit.id for hit in LexicalSearcher().hits(g, "hotels", ("hotel",))]
    ['a']
    """

    def __init__(self, current: Callable[[], "LexicalIndex | None"] | None = None):
        self._current = current
        self._built: tuple[Any, int, LexicalIndex] | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        """One line for ``explain``: which index answers."""
        return "lexical node index (BM25 k1=1.2 b=0.75 over content, name, title, description and tags; Snowball English stems)"

    def index(self, graph: MemoryGraph) -> LexicalIndex:
        """The lexical index of ``graph`` as it is now."""
        if self._current is not None:
            found = self._current()
            if found is not None:
                return found
        with self._lock:
            built = self._built
            if built is None or built[0]() is not graph or built[1] != graph.version:
                built = (weakref.ref(graph), graph.version, LexicalIndex.build(graph))
                self._built = built
            return built[2]

    def view(self, view) -> IndexView:
        """The index as ``view`` sees it (see :func:`index_for`)."""
        if isinstance(view, MemoryGraph):
            return IndexView(self.index(view))
        base = getattr(view, "base", None)
        if not isinstance(base, MemoryGraph):
            return IndexView(LexicalIndex.build(view))  # any other view: what it holds
        return _overlay_view(self.index(base), base, view)

    def hits(self, view, text: str, terms: Sequence[str], *, top: int | None = None, node_type: str | None = None,
             charge: Callable[[int], None] | None = None) -> list[SearchHit]:
        """The nodes of ``view`` that match ``terms`` (``text`` is the query as written)."""
        return self.view(view).hits(terms, top=top, node_type=node_type, charge=charge)

    def rank(self, view, ids: Sequence[str], text: str, terms: Sequence[str]) -> list[str]:
        """``ids`` reordered by relevance to ``terms`` in ``view``."""
        return self.view(view).rank(ids, terms)


# overlay -> (its version, the index's identity and version, the view)
_VIEWS: "weakref.WeakKeyDictionary[Any, tuple[int, int, int, IndexView]]" = weakref.WeakKeyDictionary()
# graph -> the searcher a memory keeps for it, held weakly: the searcher (a memory's index
# keeper) refers to its graph, and a value of a weak-keyed dictionary that refers to its key
# keeps both alive for ever (a closed memory's graph was never freed).
_KEPT: "weakref.WeakKeyDictionary[MemoryGraph, weakref.ref]" = weakref.WeakKeyDictionary()
# graph -> a searcher that builds the index on first use (graphs nobody keeps an index for)
_BUILT: "weakref.WeakKeyDictionary[MemoryGraph, LexicalSearcher]" = weakref.WeakKeyDictionary()
_registry_lock = threading.RLock()


def _overlay_view(index: LexicalIndex, base: MemoryGraph, view) -> IndexView:
    version = getattr(view, "version", None)
    with _registry_lock:
        cached = _VIEWS.get(view)
        if cached is not None and cached[0] == version and cached[1] == id(index) and cached[2] == index.version:
            return cached[3]
    hidden: dict[str, Doc] = {}
    added: dict[str, Doc] = {}
    fields = index.fields
    for node_id, node in view.node_map().own_items():
        before = base.node(node_id)
        if node is before:
            continue
        if before is not None:
            doc = index.doc(node_id)
            if doc is not None:
                hidden[node_id] = doc
        if node is not None:
            doc = Doc.of(node, fields)
            if doc is not None:
                added[node_id] = doc
    result = IndexView(index, hidden, added)
    with _registry_lock:
        _VIEWS[view] = (version, id(index), index.version, result)
    return result


def register(graph: MemoryGraph, searcher: Any) -> None:
    """Say that ``searcher`` (a :class:`LexicalSearcher`, or one with the same methods)
    answers searches on ``graph`` and on every overlay over it. The registry holds it weakly:
    it answers for as long as its owner keeps it.

    >>> g = MemoryGraph(); kept = LexicalIndex.build(g)
    >>> searcher = LexicalSearcher(lambda: kept)
    >>> register(g, searcher); index_for(g).index is kept
    True
    >>> unregister(g)
    """
    with _registry_lock:
        _KEPT[graph] = weakref.ref(searcher)
        _BUILT.pop(graph, None)


def unregister(graph: MemoryGraph) -> None:
    with _registry_lock:
        _KEPT.pop(graph, None)


def searcher_for(view) -> Any:
    """The searcher that answers for ``view``: the one registered for its graph (an
    overlay's base graph), else one that builds a lexical index on first use."""
    graph = view if isinstance(view, MemoryGraph) else getattr(view, "base", None)
    if not isinstance(graph, MemoryGraph):
        return LexicalSearcher()
    with _registry_lock:
        kept = _KEPT.get(graph)
        found = kept() if kept is not None else None
        if found is None:
            found = _BUILT.get(graph)
            if found is None:
                found = _BUILT[graph] = LexicalSearcher()
        return found


def index_for(view) -> IndexView:
    """The lexical index a query on ``view`` reads: its graph's (kept by a memory, or built
    on first use), or for an overlay (a transaction, an earlier state) its base graph's index
    with the overlay's nodes hidden or replaced (remembered until either changes).

    >>> from hgm_engine.model.overlay import GraphOverlay
    >>> g = MemoryGraph.from_records([("a", "fact", {"content": "hotel"})], [])
    >>> o = GraphOverlay(g); _ = o.set_node_attrs("a", {"content": "museum"})
    >>> [h.id for h in index_for(o).hits(("museum",))], [h.id for h in index_for(g).hits(("museum",))]
    (['a'], [])
    """
    searcher = searcher_for(view)
    if isinstance(searcher, LexicalSearcher):
        return searcher.view(view)
    return searcher.lexical_view(view)


def word_forms(text: str) -> dict[str, list[str]]:
    """Each term of a query text with the words of the text that give it (for showing which
    words matched).

    >>> word_forms("Hotels near the hotel")
    {'hotel': ['hotels', 'hotel'], 'near': ['near']}
    """
    out: dict[str, list[str]] = {}
    for word in words(text):
        terms = analyze(word)
        if terms:
            forms = out.setdefault(terms[0], [])
            if word not in forms:
                forms.append(word)
    return out
