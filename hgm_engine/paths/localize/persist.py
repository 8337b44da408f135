"""Saving and restoring a path index's contents as bytes (:data:`INDEX_BYTES_FORMAT`).

:func:`contents_to_bytes` writes everything the index computed — the postings of the text and
step vectors, the step-name word profiles, tags, structures and versions as arrays, and the
records as compressed JSON; :func:`restore_contents` reads it back without embedding or
normalising any text again, and a record (and what scoring reads of it) is made only when a
path is first looked at. The JSON state of the records alone (:data:`INDEX_STATE_FORMAT`) is
:meth:`PathIndex.to_state <hgm_engine.paths.localize.PathIndex.to_state>`'s.

>>> from hgm_engine.paths.localize.embedders import HashedTfidfEmbedder
>>> from hgm_engine.paths.localize.records import PathRecord
>>> from hgm_engine.paths.localize.scoring import ScoreConfig
>>> contents = IndexContents(sparse=True)
>>> embedder = HashedTfidfEmbedder()
>>> contents.add_all([PathRecord.create("p", "g", ["a"])], embedder.embed_documents(["g a"]))
>>> header, arrays = read_saved(contents_to_bytes(contents, embedder, ScoreConfig()))
>>> again = IndexContents(sparse=True)
>>> restore_contents(again, header, arrays, embedder)
>>> again.slot_of, again.record_at[0].id
({'p': 0}, 'p')
"""

from __future__ import annotations

import importlib.metadata
import json
import zlib
from collections import Counter
from typing import Any, Mapping, Sequence

from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.contents import IndexContents, Signature
from hgm_engine.paths.localize.lazy import LazyDict
from hgm_engine.paths.localize.packing import pack, unpack
from hgm_engine.paths.localize.postings import DenseRows, SparsePostings, flatnonzero, numpy_module
from hgm_engine.paths.localize.records import PathRecord

__all__ = [
    "INDEX_STATE_FORMAT",
    "INDEX_BYTES_FORMAT",
    "contents_to_bytes",
    "read_saved",
    "restore_contents",
    "signature_json",
    "signature_from_json",
    "stemmer_version",
]

INDEX_STATE_FORMAT = "hgm-path-index/1"     # to_state: JSON, the records only
INDEX_BYTES_FORMAT = "hgm-path-index/2"     # to_bytes: everything, columnar, loaded lazily
_RECORDS_PER_CHUNK = 64                     # records compressed together in a saved state


def stemmer_version() -> str:
    """The installed snowballstemmer's version (a saved index is only as good as its stems).

    >>> stemmer_version() != ""
    True
    """
    try:
        return importlib.metadata.version("snowballstemmer")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - vendored copies
        return "unknown"


def signature_json(signature: tuple) -> list:
    """A structural signature as JSON: ``["chain", names]`` or ``["graph", names, edges]``.

    >>> signature_json(("a", "b")), signature_json((("a", "b"), ((0, 1),)))
    (['chain', ['a', 'b']], ['graph', ['a', 'b'], [[0, 1]]])
    """
    if signature and isinstance(signature[0], str):
        return ["chain", list(signature)]
    if not signature:
        return ["chain", []]
    names, edges = signature
    return ["graph", list(names), [list(e) for e in edges]]


def signature_from_json(doc: Sequence[Any]) -> tuple:
    """The signature :func:`signature_json` wrote.

    >>> signature_from_json(["graph", ["a", "b"], [[0, 1]]])
    (('a', 'b'), ((0, 1),))
    """
    if doc[0] == "chain":
        return tuple(doc[1])
    if doc[0] == "graph":
        return (tuple(doc[1]), tuple((int(i), int(j)) for i, j in doc[2]))
    raise ValueError(f"unknown signature kind {doc[0]!r}")


def contents_to_bytes(contents: IndexContents, embedder: Any, config: Any) -> bytes:
    """``contents`` as one ``bytes`` (:data:`INDEX_BYTES_FORMAT`), with the names of
    ``embedder`` and the lexical embedder, the stemmer's version and ``config``. Needs numpy
    (``bad-state`` without it)."""
    np = numpy_module()
    if np is None:
        raise LocalizationError.single("bad-state", "saving the path index in binary form needs numpy")
    slots = contents.slots_in_order()
    # Records: JSON lines, compressed in chunks; a record never read since a load keeps its line.
    raw = contents.raw_record
    pending = contents.record_at.pending
    lines = [raw(pending[s]) if s in pending and raw is not None
             else json.dumps(dict.__getitem__(contents.record_at, s).to_json(), ensure_ascii=False,
                             separators=(",", ":"))
             for s in slots]
    chunks = [zlib.compress("\n".join(lines[at:at + _RECORDS_PER_CHUNK]).encode("utf-8"), 1)
              for at in range(0, len(lines), _RECORDS_PER_CHUNK)]
    chunk_offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chunks], out=chunk_offsets[1:])
    # Step docs per path (by row) and the owner of every step doc.
    step_docs = [contents.step_docs_at[s] for s in slots]
    step_offsets = np.zeros(len(slots) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in step_docs], out=step_offsets[1:])
    names = sorted(set(contents.profiles.name_total) | set(contents.profiles.name_word) | {
        name for s in slots for name in contents.shape_at[s].names})
    name_index = {name: i for i, name in enumerate(names)}
    owner_slot = np.full(contents.steps.size, -1, dtype=np.int32)
    owner_name = np.full(contents.steps.size, -1, dtype=np.int32)
    for s, docs in zip(slots, step_docs):
        for doc in docs:
            slot, name = contents.step_owner[doc]
            owner_slot[doc] = slot
            owner_name[doc] = name_index[name]
    # Structures: groups in their order, which slots hold each, each name's groups in order.
    groups = list(contents.group_slots)
    group_index = {g: i for i, g in enumerate(groups)}
    group_members = [sorted(contents.group_slots[g]) for g in groups]
    group_offsets = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum([len(m) for m in group_members], out=group_offsets[1:])
    tags = sorted(contents.tag_slots)
    tag_members = [sorted(contents.tag_slots[t]) for t in tags]
    tag_offsets = np.zeros(len(tags) + 1, dtype=np.int64)
    np.cumsum([len(m) for m in tag_members], out=tag_offsets[1:])
    # Step-name profiles.
    profile_names = [n for n in names if n in contents.profiles.name_word]
    profiles = [contents.profiles.name_word[n] for n in profile_names]
    profile_offsets = np.zeros(len(profiles) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in profiles], out=profile_offsets[1:])
    text_scalars, text_arrays = contents.text.export("text")
    step_scalars, step_arrays = contents.steps.export("steps")
    ints = lambda values, dtype=np.int32: np.array(values, dtype=dtype)  # noqa: E731
    header = {
        "format": INDEX_BYTES_FORMAT,
        "embedder": embedder.name,
        "lexical": contents.lexical.name,
        "stemmer": stemmer_version(),
        "text_kind": "sparse" if embedder.sparse else "dense",
        "config": config.to_json(),
        "names": names,
        "tags": tags,
        "groups": [signature_json(g) for g in groups],
        "name_groups": {n: [group_index[g] for g in gs] for n, gs in contents.name_groups.items()},
        "profile_names": [name_index[n] for n in profile_names],
        "name_totals": {n: int(v) for n, v in contents.profiles.name_total.items()},
        "replaced_by": sorted([old, sorted(new)] for old, new in contents.replaced_by.items()),
        "grand_total": int(contents.profiles.grand_total),
        "free_slots": list(contents.free_slots),
        "next_slot": contents.next_slot,
        "next_seq": contents.next_seq,
        "text": text_scalars,
        "steps": step_scalars,
    }
    id_of = {slot: path_id for path_id, slot in contents.slot_of.items()}
    header["ids"] = [id_of[s] for s in slots]
    arrays = {
        "slots": ints(slots), "seqs": ints([contents.seq_at[s] for s in slots], np.int64),
        "records": np.frombuffer(b"".join(chunks), dtype=np.uint8), "record_chunks": chunk_offsets,
        "step_offsets": step_offsets,
        "step_docs": ints([d for docs in step_docs for d in docs]),
        "owner_slot": owner_slot, "owner_name": owner_name,
        "group_offsets": group_offsets, "group_slots": ints([s for m in group_members for s in m]),
        "tag_offsets": tag_offsets, "tag_slots": ints([s for m in tag_members for s in m]),
        "profile_offsets": profile_offsets,
        "profile_words": ints([w for c in profiles for w in c]),
        "profile_counts": ints([v for c in profiles for v in c.values()], np.int64),
        "word_ids": ints(list(contents.profiles.word_total)),
        "word_counts": ints(list(contents.profiles.word_total.values()), np.int64),
        **text_arrays, **step_arrays,
    }
    return pack(header, arrays)


def read_saved(data: bytes | bytearray | memoryview) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and arrays of bytes :func:`contents_to_bytes` wrote (``bad-state`` when they
    are not such a state, or without numpy)."""
    if numpy_module() is None:
        raise LocalizationError.single("bad-state", "reading a binary path index needs numpy")
    header, arrays = unpack(data)
    if header.get("format") != INDEX_BYTES_FORMAT:
        raise LocalizationError.single("bad-state", f"not a {INDEX_BYTES_FORMAT} state")
    return header, arrays


def restore_contents(contents: IndexContents, header: Mapping[str, Any], arrays: Mapping[str, Any],
                     embedder: Any) -> None:
    """Fill the empty ``contents`` from a saved :func:`read_saved` state; refused
    (``bad-state``) when it was made with another embedder, word normaliser or stemmer version
    than ``embedder`` and ``contents`` use. Malformed arrays raise ``KeyError``, ``TypeError``,
    ``ValueError``, ``IndexError`` or ``zlib.error`` (the index says ``bad-state``)."""
    made_with = (header["embedder"], header["lexical"], header["stemmer"], header["text_kind"])
    wanted = (embedder.name, contents.lexical.name, stemmer_version(),
              "sparse" if embedder.sparse else "dense")
    if made_with != wanted:
        raise LocalizationError.single(
            "bad-state", f"saved path index was made with {made_with}, this index uses {wanted}")
    slots = arrays["slots"].tolist()
    ids = header["ids"]
    if len(ids) != len(slots) or len(set(ids)) != len(ids):
        raise ValueError("ids and slots disagree")
    rows = range(len(slots))
    contents.slot_of = dict(zip(ids, slots))
    contents.seq_at = dict(zip(slots, arrays["seqs"].tolist()))
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
    contents.raw_record = raw
    contents.record_at = LazyDict(record, dict(zip(slots, rows)))
    contents.shape_at = LazyDict(contents.shape_of_slot, dict(zip(slots, slots)))
    names = header["names"]
    owner_slot, owner_name = arrays["owner_slot"], arrays["owner_name"]
    contents.step_owner = LazyDict(lambda doc: (int(owner_slot[doc]), names[int(owner_name[doc])]),
                                   {doc: doc for doc in flatnonzero(owner_name >= 0)})
    step_offsets, step_docs = arrays["step_offsets"].tolist(), arrays["step_docs"]
    contents.step_docs_at = LazyDict(lambda row: step_docs[step_offsets[row]:step_offsets[row + 1]].tolist(),
                                     dict(zip(slots, rows)))
    tag_offsets, tag_slots = arrays["tag_offsets"].tolist(), arrays["tag_slots"]
    contents.tag_slots = {tag: set(tag_slots[tag_offsets[i]:tag_offsets[i + 1]].tolist())
                          for i, tag in enumerate(header["tags"])}
    group_offsets, group_slots = arrays["group_offsets"].tolist(), arrays["group_slots"]
    groups = [Signature(signature_from_json(doc)) for doc in header["groups"]]
    contents.group_slots = {g: set(group_slots[group_offsets[i]:group_offsets[i + 1]].tolist())
                            for i, g in enumerate(groups)}
    contents.name_groups = {name: dict.fromkeys(groups[i] for i in members)
                            for name, members in header["name_groups"].items()}
    contents.set_groups = None
    contents.replaced_by = {old: set(new) for old, new in header["replaced_by"]}
    profile_offsets = arrays["profile_offsets"].tolist()
    words, counts = arrays["profile_words"], arrays["profile_counts"]
    profile_names = [names[i] for i in header["profile_names"]]
    contents.profiles.name_word = LazyDict(
        lambda i: Counter(dict(zip(words[profile_offsets[i]:profile_offsets[i + 1]].tolist(),
                                   counts[profile_offsets[i]:profile_offsets[i + 1]].tolist()))),
        {name: i for i, name in enumerate(profile_names)})
    contents.profiles.name_total = Counter(header["name_totals"])
    contents.profiles.word_total = Counter(dict(zip(arrays["word_ids"].tolist(), arrays["word_counts"].tolist())))
    contents.profiles.grand_total = int(header["grand_total"])
    contents.free_slots = [int(s) for s in header["free_slots"]]
    contents.next_slot = int(header["next_slot"])
    contents.next_seq = int(header["next_seq"])
    kind = SparsePostings if embedder.sparse else DenseRows
    contents.text = kind.restore("text", header["text"], arrays)
    contents.steps = SparsePostings.restore("steps", header["steps"], arrays)
    if len(contents.text) != len(slots):
        raise ValueError("text vectors and paths disagree")
