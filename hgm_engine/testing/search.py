"""The reference model of ``search(TEXT)`` and ``.rank(TEXT)`` (spec ``dsl.md`` §8.1,
``docs/search.md`` "What matches", ``docs/language.md`` §8 and decision 11): which nodes
match a text and in what order, computed from the graph itself every time — no index, no
postings, no cache.

A text is cut into *words*: runs of letters and digits (``str.isalnum``; ``_``, ``-`` and
every other character cut), each Chinese, Japanese or Korean character a word of its own.
A word written in camel case (ASCII letters) counts as itself and as its parts. Each word is
compared in lower case (``casefold``), the very common English words are left out
(:data:`STOP_WORDS`), and the others are reduced to their Snowball English stem — except a
word that holds a digit, which stays as it is ("numbers stay as they are": ``rooms2``); a word
longer than :data:`MAX_WORD_LENGTH` characters is no word. A node's text is its ``content``, ``name``,
``title`` and ``description`` strings and the strings of its ``tags`` list.

A node *matches* when it holds at least one term of TEXT. The order: the nodes holding every
term first, then the others; within each group by BM25 (k1 = 1.2, b = 0.75; idf = ln(1 + (N - n + 0.5) / (n + 0.5)),
N the nodes that have terms, n those holding the term), highest first; then creation order.

>>> terms("Queries about the hotels' prices, on Mondays")
['queri', 'hotel', 'price', 'monday']
>>> terms("Call GetMovieCredit")
['call', 'getmoviecredit', 'get', 'movi', 'credit']
>>> from hgm_engine.testing.graphmodel import ModelGraph
>>> g = ModelGraph.from_document({"nodes": [
...     {"id": "a", "type": "fact", "content": "The hotel is closed"},
...     {"id": "b", "type": "fact", "content": "Hotel", "tags": ["closed", "hotel"]},
...     {"id": "c", "type": "fact", "content": "A hotel museum"}], "edges": []})
>>> ranked(g, "closed hotels")  # both words first (a, shorter, before b), then c
['a', 'b', 'c']
>>> rank_ids(g, ["c", "a"], "closed")
['a', 'c']
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Mapping

import snowballstemmer

from hgm_engine.testing.graphmodel import ModelGraph

__all__ = [
    "STOP_WORDS", "TEXT_FIELDS", "MAX_WORD_LENGTH", "K1", "B",
    "words", "terms", "query_terms", "node_terms", "scores", "ranked", "rank_ids",
]

K1 = 1.2
B = 0.75
MAX_WORD_LENGTH = 64
TEXT_FIELDS = ("content", "name", "title", "description")

# The Snowball project's English stop-word list (snowballstem.org, algorithms/english/
# stop.txt), plus the pieces its contractions leave once the apostrophe cuts a word
# ("hotel's" is "hotel" and "s", "don't" is "don" and "t").
STOP_WORDS = frozenset("""
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom
    this that these those am is are was were be been being have has had having do does did
    doing would should could ought a an the and but if or because as until while of at by for
    with about against between into through during before after above below to from up down in
    out on off over under again further then once here there when where why how all any both
    each few more most other some such no nor not only own same so than too very
    s t d ll m re ve
""".split())

# Characters that are a word each (Hiragana, Katakana, CJK ideographs, Hangul syllables).
_CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xAC00, 0xD7AF))

_STEMMER = snowballstemmer.stemmer("english")


def _is_cjk(char: str) -> bool:
    return any(low <= ord(char) <= high for low, high in _CJK_RANGES)


def words(text: str) -> list[str]:
    """The words of a text as written (case kept): letter-and-digit runs, a CJK character alone.

    >>> words("snake_case, camelCase-x 北京")
    ['snake', 'case', 'camelCase', 'x', '北', '京']
    """
    out, current = [], ""
    for char in text:
        if _is_cjk(char):
            if current:
                out.append(current)
                current = ""
            out.append(char)
        elif char.isalnum():
            current += char
        else:
            if current:
                out.append(current)
            current = ""
    if current:
        out.append(current)
    return out


_LOWER, _UPPER = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _camel_parts(word: str) -> list[str]:
    """A word cut where an ASCII lower-case letter meets an upper-case one, and before the
    last capital of a run of capitals followed by a lower-case letter (``HTTPServer``: HTTP,
    Server); a word with no such place is one part. (Only ASCII letters: ``caféBar`` is one
    word, as the engine reads it; docs/testing.md.)

    >>> _camel_parts("GetMovieCredit"), _camel_parts("HTTPServer"), _camel_parts("A1001"), _camel_parts("caféBar")
    (['Get', 'Movie', 'Credit'], ['HTTP', 'Server'], ['A1001'], ['caféBar'])
    """
    parts, start = [], 0
    for i in range(1, len(word)):
        before, here = word[i - 1], word[i]
        after = word[i + 1] if i + 1 < len(word) else ""
        if (before in _LOWER and here in _UPPER) or (before in _UPPER and here in _UPPER and after and after in _LOWER):
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return parts


def terms(text: str) -> list[str]:
    """The terms of a text, in text order: each word (and, for a camel-case word, each of its
    parts after it), lower case, without stop words, stemmed.

    >>> terms("The Forbidden City is closed on Mondays")
    ['forbidden', 'citi', 'close', 'monday']
    >>> terms("2rooms rooms")
    ['2rooms', 'room']
    """
    out = []
    for word in words(text):
        if len(word) > MAX_WORD_LENGTH:
            continue
        parts = _camel_parts(word)
        for piece in [word] + (parts if len(parts) > 1 else []):
            lowered = piece.casefold()
            if lowered not in STOP_WORDS:
                out.append(lowered if any(c.isdigit() for c in lowered) else _STEMMER.stemWord(lowered))
    return out


def query_terms(text: str) -> list[str]:
    """The distinct terms of a search text, first occurrence first (empty: nothing to search).

    >>> query_terms("hotel Hotels the"), query_terms("the of")
    (['hotel'], [])
    """
    return list(dict.fromkeys(terms(text)))


def node_terms(attributes: Mapping[str, Any]) -> list[str]:
    """A node's terms: its text fields' strings, then the strings of its ``tags`` list.

    >>> node_terms({"content": "Book a hotel", "tags": ["travel", 3], "status": "done"})
    ['book', 'hotel', 'travel']
    """
    texts = [attributes[f] for f in TEXT_FIELDS if isinstance(attributes.get(f), str)]
    tags = attributes.get("tags")
    if isinstance(tags, list):
        texts += [t for t in tags if isinstance(t, str)]
    return [term for text in texts for term in terms(text)]


def scores(graph: ModelGraph, text: str) -> dict[str, tuple[int, float]]:
    """For every node holding a term of ``text``: (how many of its distinct terms the node
    holds, BM25 score). The collection is the graph's nodes that hold a term at all: N counts
    them and the average length is theirs (a node without text is not a document; the docs
    leave this open, the model reads it as the engine does: docs/testing.md)."""
    wanted = query_terms(text)
    held = {node: Counter(node_terms(attributes)) for node, (_, attributes) in graph.nodes.items()}
    held = {node: counts for node, counts in held.items() if counts}
    total = len(held)
    if not total:
        return {}
    average = sum(sum(c.values()) for c in held.values()) / total
    documents = {term: sum(1 for c in held.values() if term in c) for term in wanted}
    out = {}
    for node, counts in held.items():
        present = [term for term in wanted if term in counts]
        if not present:
            continue
        length = sum(counts.values())
        score = 0.0
        for term in present:
            n = documents[term]
            idf = math.log(1 + (total - n + 0.5) / (n + 0.5))
            tf = counts[term]
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        out[node] = (len(present), score)
    return out


def _order(graph: ModelGraph, found: Mapping[str, tuple[int, float]], text: str) -> list[str]:
    every = len(query_terms(text))
    position = {node: i for i, node in enumerate(graph.nodes)}
    return sorted(found, key=lambda n: (found[n][0] < every, -found[n][1], position[n]))


def ranked(graph: ModelGraph, text: str) -> list[str]:
    """``search(text)``: the matching nodes, most relevant first (see the module docstring)."""
    return _order(graph, scores(graph, text), text)


def rank_ids(graph: ModelGraph, ids: Iterable[str], text: str) -> list[str]:
    """``.rank(text)`` of a list: its matching nodes in search order, then the others in
    their order."""
    ids = list(ids)
    found = scores(graph, text)
    matching = {node: found[node] for node in ids if node in found}
    return _order(graph, matching, text) + [node for node in ids if node not in found]
