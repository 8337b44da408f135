"""The lexical index of one state (:class:`LexicalIndex`: a segment and the entries changed
since) and an index as one view sees it (:class:`IndexView`), ranked by BM25 (the package's
docstring gives the score and the order).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from hgm_engine.model.graph import MemoryGraph  # noqa: F401 (the examples)
from hgm_engine.model.payloads import Node
from hgm_engine.model.nodeindex.entries import DEFAULT_FIELDS, Doc, SearchHit, TextFields, entries_of, text_changes
from hgm_engine.model.nodeindex.segment import Segment

__all__ = ["K1", "B", "LexicalIndex", "IndexView"]

K1 = 1.2
B = 0.75


def _idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def _norm(tf: float, length: float, avgdl: float) -> float:
    # The same operations, in the same order, as the numpy form in _score_segment.
    return tf * (K1 + 1.0) / (tf + K1 * ((1.0 - B) + B * length / avgdl))


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
        self.replace_all(((node_id, doc),))

    def replace_all(self, entries: Iterable[tuple[str, Doc | None]]) -> None:
        """:meth:`replace` for each ``(node_id, doc)`` of ``entries``, in order (one call for
        a commit's entries: the index's parts looked up once, not per entry).

        >>> index = LexicalIndex.build(MemoryGraph.from_records([("a", "fact", {"content": "hotel"})], []))
        >>> index.replace_all([("b", Doc({"hotel": 1, "pay": 1}, 2, 2, "fact")), ("a", None)])
        >>> index.n_docs, index.df("hotel"), index.df("pay"), index.n_changed
        (1, 1, 1, 2)
        """
        docs, postings, segment = self.docs, self.postings, self.segment
        ord_of, dead = segment.ord_of, self.dead
        for node_id, doc in entries:
            self.version += 1
            in_segment = node_id in ord_of
            old = docs.pop(node_id, None)
            if old is not None:
                self.changed_length -= old.length
                if not in_segment:
                    self.n_added -= 1
                for term in old.terms:
                    holders = postings.get(term)
                    if holders is not None:
                        holders.discard(node_id)
                        if not holders:
                            del postings[term]
            elif in_segment:
                position = ord_of[node_id]
                if position not in dead:
                    dead.add(position)
                    gone = segment.doc_at(position)
                    self.dead_df.update(gone.terms.keys())
                    self.dead_length += gone.length
            if doc is not None:
                docs[node_id] = doc
                self.changed_length += doc.length
                if not in_segment:
                    self.n_added += 1
                for term in doc.terms:
                    holders = postings.get(term)
                    if holders is None:
                        postings[term] = {node_id}
                    else:
                        holders.add(node_id)

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
        self.replace_all(entries_of(text_changes(changes, self.fields), self.fields).items())

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
        segment = Segment.from_forward(
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
