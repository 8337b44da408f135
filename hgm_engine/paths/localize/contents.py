"""What a path index holds, kept one path at a time: :class:`IndexContents`.

Per path: its record and creation order, what scoring reads of it (:class:`Shape`), its text
vector, one lexical vector per step (for *entry-step* recall), its tags, its structure (paths
with equal structural signatures form one group) and the versions that replace it; per step
name, the word profile of the stored steps (:class:`~.profiles.StepProfiles`). Paths live in
*slots* (small integers, reused when a path goes), which the vector stores use as doc ids.

>>> from hgm_engine.paths.localize.records import PathRecord
>>> contents = IndexContents(sparse=True)
>>> record = PathRecord.create("p", "book a flight", ["search", "book"], tags=["travel"])
>>> contents.add_all([record], [{1: 1.0}])
>>> contents.slot_of, contents.tag_slots, contents.shape_at[0].names
({'p': 0}, {'travel': {0}}, ('search', 'book'))
>>> contents.remove("p").id, contents.slot_of, contents.tag_slots
('p', {}, {})
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import attrs

from hgm_engine.paths.localize.embedders import HashedTfidfEmbedder
from hgm_engine.paths.localize.lazy import LazyDict
from hgm_engine.paths.localize.postings import DenseRows, SparsePostings
from hgm_engine.paths.localize.profiles import StepProfiles
from hgm_engine.paths.localize.records import PathRecord
from hgm_engine.paths.localize.scoring import StepOrder

__all__ = ["IndexContents", "Shape", "Signature", "name_set"]


class Signature(tuple):
    """A structural signature (``PathRecord.signature``) that hashes once: the index keys
    groups by it for every step name of a path, and a long path's tuple is long.

    >>> hash(Signature(("a", "b"))) == hash(("a", "b"))
    True
    """

    _hash: int

    def __new__(cls, items: Iterable[Any] = ()) -> "Signature":
        made = tuple.__new__(cls, items)
        made._hash = tuple.__hash__(made)
        return made

    def __hash__(self) -> int:
        return self._hash


@attrs.frozen(slots=True)
class Shape:
    """What scoring reads of a record, computed once when it is added."""

    names: tuple[str, ...]
    signature: tuple
    order: StepOrder
    is_template: bool
    completeness: float

    @classmethod
    def of(cls, record: PathRecord) -> "Shape":
        """The shape of ``record``.

        >>> Shape.of(PathRecord.create("p", "g", ["a", "b"])).names
        ('a', 'b')
        """
        names = record.step_names
        return cls(names, Signature(record.signature), StepOrder.of(len(names), record.edges),
                   record.is_template, record.completeness())


def name_set(signature: tuple) -> tuple[str, ...]:
    """The sorted step names of a structural signature (names alone, or names and edges).

    >>> name_set(("b", "a")), name_set((("b", "a"), ((0, 1),)))
    (('a', 'b'), ('a', 'b'))
    """
    names = signature[0] if signature and isinstance(signature[0], tuple) else signature
    return tuple(sorted(names))


def _discard(mapping: dict, key: Any, value: Any) -> None:
    members = mapping.get(key)
    if members is not None:
        members.discard(value)
        if not members:
            del mapping[key]


class IndexContents:
    """Every structure a path index keeps of its paths (see the module); ``sparse`` says
    whether the text vectors are sparse (a lexical embedder) or dense (a model).

    Restored from saved bytes (:mod:`.persist`), records, shapes, step owners and profiles
    are :class:`LazyDict` s, made the first time they are read.
    """

    def __init__(self, sparse: bool) -> None:
        self.lexical = HashedTfidfEmbedder()
        self.slot_of: dict[str, int] = {}
        # Records and shapes by slot; restored from a saved state they are made when first read.
        self.record_at: LazyDict = LazyDict()
        self.free_slots: list[int] = []
        self.next_slot = 0
        self.seq_at: dict[int, int] = {}
        self.next_seq = 0
        self.shape_at: LazyDict = LazyDict(self.shape_of_slot)
        self.text: SparsePostings | DenseRows = SparsePostings() if sparse else DenseRows()
        self.steps = SparsePostings()            # one lexical vector per stored step
        self.step_owner: LazyDict = LazyDict()   # step doc -> (path slot, step name)
        self.step_docs_at: LazyDict = LazyDict() # path slot -> its step docs
        self.tag_slots: dict[str, set[int]] = {}
        self.group_slots: dict[tuple, set[int]] = {}
        self.name_groups: dict[str, dict[tuple, None]] = {}   # ordered sets, oldest first
        # sorted step names -> structures with them; made when the order component first needs it
        self.set_groups: dict[tuple, set[tuple]] | None = None
        self.replaced_by: dict[str, set[str]] = {}
        # Step-name profiles for placing steps in a request: word counts per name and overall.
        self.profiles = StepProfiles(self.lexical)
        self.raw_record: Callable[[int], str] | None = None   # a restored record's saved JSON

    def shape_of_slot(self, slot: int) -> Shape:
        """The :class:`Shape` of the record in ``slot`` (for shapes not made yet)."""
        return Shape.of(self.record_at[slot])

    def slots_in_order(self) -> list[int]:
        """The slots held, in creation order."""
        return sorted(self.seq_at, key=self.seq_at.__getitem__)

    def add_all(self, records: Sequence[PathRecord], vectors: Sequence[Any],
                seqs: Sequence[int] | None = None) -> None:
        """Hold ``records`` (ids not held yet) with their text ``vectors``; ``seqs`` gives
        their creation order (default: after every path held)."""
        for position, (record, vector) in enumerate(zip(records, vectors)):
            slot = self.free_slots.pop() if self.free_slots else self._take_slot()
            if seqs is None:
                seq = self.next_seq
                self.next_seq += 1
            else:
                seq = seqs[position]
            self.slot_of[record.id] = slot
            self.record_at[slot] = record
            self.seq_at[slot] = seq
            shape = self.shape_at[slot] = Shape.of(record)
            names, signature = shape.names, shape.signature
            if signature not in self.group_slots:
                if self.set_groups is not None:
                    self.set_groups.setdefault(name_set(signature), set()).add(signature)
            self.group_slots.setdefault(signature, set()).add(slot)
            self.text.add(slot, vector)
            docs = []
            for step in record.steps:
                doc = self.steps.new_doc_id()
                self.steps.add(doc, self.lexical.features(step.text + " " + step.name))
                self.step_owner[doc] = (slot, step.name)
                docs.append(doc)
            self.step_docs_at[slot] = docs
            for tag in record.tags:
                self.tag_slots.setdefault(tag, set()).add(slot)
            for name in set(names):
                self.name_groups.setdefault(name, {})[signature] = None
            if record.replaces is not None:
                self.replaced_by.setdefault(record.replaces, set()).add(record.id)
            self.profiles.count(record, +1)

    def _take_slot(self) -> int:
        slot = self.next_slot
        self.next_slot += 1
        return slot

    def remove(self, path_id: str) -> PathRecord:
        """Drop the held path ``path_id`` from every structure; returns its record."""
        slot = self.slot_of[path_id]
        shape = self.shape_at[slot]   # first: a restored shape is made from the record
        record = self.record_at.pop(slot)
        signature = shape.signature
        del self.slot_of[path_id]
        del self.seq_at[slot], self.shape_at[slot]
        self.text.remove(slot)
        for doc in self.step_docs_at.pop(slot):
            self.steps.remove(doc)
            self.steps.recycle(doc)
            del self.step_owner[doc]
        for tag in record.tags:
            _discard(self.tag_slots, tag, slot)
        group = self.group_slots[signature]
        group.discard(slot)
        if not group:
            del self.group_slots[signature]
            if self.set_groups is not None:
                _discard(self.set_groups, name_set(signature), signature)
            for name in set(shape.names):
                groups = self.name_groups[name]
                del groups[signature]
                if not groups:
                    del self.name_groups[name]
        if record.replaces is not None:
            _discard(self.replaced_by, record.replaces, record.id)
        self.profiles.count(record, -1)
        self.free_slots.append(slot)
        return record

    def replacements(self, path_id: str) -> set[str]:
        """Every held path that replaces ``path_id``, directly or through later versions."""
        found: set[str] = set()
        stack = list(self.replaced_by.get(path_id, ()))
        while stack:
            newer = stack.pop()
            if newer not in found:
                found.add(newer)
                stack.extend(self.replaced_by.get(newer, ()))
        return found

    def order_share(self, signature: tuple) -> float:
        """The share of the paths with this structure's multiset of step names that follow it."""
        if self.set_groups is None:
            self.set_groups = {}
            for group in self.group_slots:
                self.set_groups.setdefault(name_set(group), set()).add(group)
        same = self.set_groups.get(name_set(signature), ())
        total = sum(len(self.group_slots[g]) for g in same)
        return len(self.group_slots.get(signature, ())) / total if total else 0.0
