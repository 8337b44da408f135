"""A :class:`Segment`: many nodes' entries in columns (numpy), immutable once built, and its
bytes as a store keeps them (:meth:`Segment.to_bytes`, :meth:`Segment.from_bytes`: read back
without analysing any text).
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any, Iterable

import numpy as np

from hgm_engine.model.nodeindex.entries import Doc
from hgm_engine.model.text import ANALYZER

__all__ = ["Segment", "INDEX_FORMAT"]

INDEX_FORMAT = "hgm-node-index/1"
_MAGIC = b"HGMIDX1\n"


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
        return cls.from_forward(
            ids, lengths, seqs, list(type_index), codes, list(vocabulary),
            np.asarray(f_offsets, np.int64), np.asarray(f_tids, np.int32), np.asarray(f_tfs, np.int32),
        )

    @classmethod
    def from_forward(cls, ids, lengths, seqs, type_names, codes, terms, f_offsets, f_tids, f_tfs) -> "Segment":
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
