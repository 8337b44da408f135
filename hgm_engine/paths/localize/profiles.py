"""Step-name profiles: per step name, the words of the stored steps with that name, and the
words of all stored steps; from them, where a request mentions each step (the ``structure``
component of :mod:`.scoring` compares those places with the path's step order).

>>> from hgm_engine.paths.localize.embedders import HashedTfidfEmbedder, feature_id
>>> from hgm_engine.paths.localize.records import PathRecord
>>> lexical = HashedTfidfEmbedder()
>>> profiles = StepProfiles(lexical)
>>> profiles.count(PathRecord.create("p", "g", ["search_flight", "book_flight"]), +1)
>>> words = [feature_id(w) if w else None for w in lexical.tokens("book then search")]
>>> {name: place for name, place in profiles.positions(words, {}, ["book_flight", "search_flight"]).items()}
{'book_flight': 0.0, 'search_flight': 2.0}
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Sequence

from hgm_engine.paths.localize.embedders import feature_id
from hgm_engine.paths.localize.lazy import LazyDict
from hgm_engine.paths.localize.records import PathRecord

__all__ = ["StepProfiles", "PMI_SMOOTHING"]

PMI_SMOOTHING = 0.5


class StepProfiles:
    """The word counts of the stored steps, per step name (:attr:`name_word`, :attr:`name_total`)
    and overall (:attr:`word_total`, :attr:`grand_total`), kept as paths come and go
    (:meth:`count`); words are the ``lexical`` embedder's (a ``HashedTfidfEmbedder``)."""

    def __init__(self, lexical: Any) -> None:
        self.lexical = lexical
        self.name_word: LazyDict = LazyDict()    # step name -> Counter of word ids
        self.name_total: Counter = Counter()
        self.word_total: Counter = Counter()
        self.grand_total = 0

    def count(self, record: PathRecord, sign: int) -> None:
        """Add (``sign`` +1) or take away (-1) the words of ``record``'s steps."""
        for step in record.steps:
            words = [feature_id(w) for w in self.lexical.tokens(step.text + " " + step.name) if w]
            counts = self.name_word.setdefault(step.name, Counter())
            for word in words:
                counts[word] += sign
                self.word_total[word] += sign
                if counts[word] <= 0:
                    del counts[word]
                if self.word_total[word] <= 0:
                    del self.word_total[word]
            self.name_total[step.name] += sign * len(words)
            self.grand_total += sign * len(words)
            if self.name_total[step.name] <= 0:
                del self.name_total[step.name]
                self.name_word.pop(step.name, None)

    def positions(self, words: Sequence[int | None], background: dict[int, float],
                  names: Iterable[str]) -> dict[str, float | None]:
        """Where the request (its word ids, None for stop words) mentions each step name: the
        mean position of the words the name's profile favours (positive PMI), weighted by PMI
        squared. ``background`` caches each word's overall log-probability for this query."""
        vocabulary = max(1, len(self.word_total))
        if not background:
            grand = self.grand_total + PMI_SMOOTHING * vocabulary
            for w in set(words):
                if w is not None:
                    background[w] = math.log((self.word_total.get(w, 0) + PMI_SMOOTHING) / grand)
        positions: dict[str, float | None] = {}
        for name in names:
            counts = self.name_word.get(name)
            if not counts:
                positions[name] = None
                continue
            log_denominator = math.log(self.name_total[name] + PMI_SMOOTHING * vocabulary)
            weight_sum = position_sum = 0.0
            for at, word in enumerate(words):
                if word is None or word not in counts:
                    continue
                pmi = math.log(counts[word] + PMI_SMOOTHING) - log_denominator - background[word]
                if pmi > 0:
                    weight_sum += pmi * pmi
                    position_sum += at * pmi * pmi
            positions[name] = position_sum / weight_sum if weight_sum else None
        return positions
