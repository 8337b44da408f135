"""Text analysis: how hgm reads words — one module for every index that searches text.

A text becomes *terms*: words cut at everything that is not a letter or a digit (``_`` and
``-`` too), each Chinese, Japanese or Korean character a word of its own, written in lower
case (``casefold``), the very common English words dropped (:data:`STOP_WORDS`), the others
reduced to their stem by the Snowball English stemmer (the ``snowballstemmer`` package:
"queries", "query" and "queried" are all ``queri``). A word written in camel case counts
as itself and as its parts (``GetMovieCredit`` is ``getmoviecredit``, ``get``, ``movi`` and
``credit``), so both spellings find it. Numbers stay as they are (``A1001`` is ``a1001``); a
"word" longer than :data:`MAX_WORD_LENGTH` characters (a hash, base64) is no word.

The node index (:mod:`hgm_engine.model.nodeindex`) and ``search`` read a node's text from
:data:`TEXT_FIELDS`. Whatever analyses text the same way must say so with
:data:`ANALYZER`, which names this analysis and changes whenever its output would.

>>> analyze("Queries about the hotels' prices, queried on Mondays")
['queri', 'hotel', 'price', 'queri', 'monday']
>>> analyze("Call GetMovieCredit for order A1001")
['call', 'getmoviecredit', 'get', 'movi', 'credit', 'order', 'a1001']
>>> analyze("北京 hotel")
['北', '京', 'hotel']
>>> node_text({"content": "Book a hotel", "tags": ["travel", 3], "status": "done"})
'Book a hotel\\ntravel'
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any, Iterable, Mapping

import snowballstemmer

__all__ = [
    "ANALYZER",
    "TEXT_FIELDS",
    "TAG_FIELD",
    "STOP_WORDS",
    "MAX_WORD_LENGTH",
    "words",
    "stem",
    "analyze",
    "analyze_counts",
    "term_counts",
    "node_text",
]

# Names this analysis; an index built with another one is rebuilt, not read.
ANALYZER = "hgm-text/1 (snowball english, stop words, camel case, cjk characters)"

# The attributes whose strings are a node's text (spec v1.1 §8.1), and the list of strings.
TEXT_FIELDS: tuple[str, ...] = ("content", "name", "title", "description")
TAG_FIELD = "tags"

MAX_WORD_LENGTH = 64

# The Snowball project's English stop words (snowballstem.org, english/stop.txt), with the
# pieces its contractions leave once apostrophes cut words ("hotel's" is hotel + s).
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom this
    that these those am is are was were be been being have has had having do does did doing would
    should could ought a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on off
    over under again further then once here there when where why how all any both each few more
    most other some such no nor not only own same so than too very s t d ll m re ve""".split()
)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_WORD = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# The same two tests for ASCII text, without look-arounds (whether _CAMEL matches anywhere:
# a lower-case letter before an upper-case one, or two upper-case ones before a lower-case
# one), and _WORD's words of lower-case ASCII text: a third of the cost each.
_CAMEL_ASCII = re.compile(r"[a-z][A-Z]|[A-Z][A-Z][a-z]")
_WORD_ASCII = re.compile(r"[a-z0-9]+")

# The same split for ASCII text, on its bytes: upper case made lower and every byte that is
# no ASCII letter or digit made a space in one translate, then split() (a third of the
# instructions of lower() and _WORD_ASCII.findall).
_ASCII_WORD_BYTES = bytes(
    byte + 32 if 65 <= byte <= 90 else byte if 97 <= byte <= 122 or 48 <= byte <= 57 else 32 for byte in range(256)
)

_stemmer = snowballstemmer.stemmer("english")
_stemmer_lock = threading.Lock()  # the pure-Python stemmer keeps state while it works
# Each word seen with its term: its stem, or "" for a stop word (no term). One lookup per
# word where a stop-word test and a call of stem() were two; bounded (emptied when full).
# Real vocabularies are small and skewed: every string of the UltraTool data has 9,198
# distinct words in 387,210 (the 1,000 most frequent are 94% of them), this repository's
# docs 4,979 in 131,659 (88%): 200,000 words hold them many times over
# (bench/results/search/word_cache.py, word-cache-s6.json).
_stems: dict[str, str] = {}
_byte_terms: dict[bytes, str] = {}  # the same, keyed by an ASCII word's bytes (analyze_counts)
_STEM_CACHE_SIZE = 200_000


def _term_of(word: str) -> str:
    """The term of a lower-case word ("" for none: a stop word, or longer than
    :data:`MAX_WORD_LENGTH`), remembered (a long word is not)."""
    found = _stems.get(word)
    if found is None:
        if len(word) > MAX_WORD_LENGTH:
            return ""
        found = "" if word in STOP_WORDS else _stem_of(word)
        if len(_stems) >= _STEM_CACHE_SIZE:
            _stems.clear()
        _stems[word] = found
    return found


def _stem_of(word: str) -> str:
    if any(ch.isdigit() for ch in word):
        return word  # a code or a number: no English suffix to take off
    with _stemmer_lock:
        return _stemmer.stemWord(word)


def stem(word: str) -> str:
    """The Snowball English stem of a lower-case ``word`` (remembered: a stem is computed once).

    >>> [stem(w) for w in ["queries", "booking", "booked", "cancellation", "hotels", "bus"]]
    ['queri', 'book', 'book', 'cancel', 'hotel', 'bus']
    """
    return _term_of(word) or _stem_of(word)  # a stop word or a long one: its stem, though it is no term


def words(text: str) -> list[str]:
    """The words of ``text`` in lower case, stop words included, not stemmed (camel-case
    words followed by their parts).

    >>> words("Hike the Great-Wall at Mutianyu_2")
    ['hike', 'the', 'great', 'wall', 'at', 'mutianyu', '2']
    >>> words("iPhone")
    ['iphone', 'i', 'phone']
    """
    if text.isascii() and (text[1:].islower() or _CAMEL_ASCII.search(text) is None):
        # the usual text: no camel-case word to split (none can be when no letter after the
        # first is upper case: the test without the regex), and lower() keeps every word and
        # its length (a commit analyses the text of every node it changes)
        return [word for word in _WORD_ASCII.findall(text.lower()) if len(word) <= MAX_WORD_LENGTH]
    return _split_words(text)


def _split_words(text: str) -> list[str]:
    """:func:`words` for any text, word by word (camel case, case folding of any script)."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        raw = match.group(0)
        if len(raw) > MAX_WORD_LENGTH:
            continue
        out.append(raw.casefold())
        if not raw.islower() and not raw.isupper() and _CAMEL.search(raw):
            out.extend(part.casefold() for part in _CAMEL.split(raw) if part and part.casefold() != out[-1])
    return out


def analyze(text: str) -> list[str]:
    """The terms of ``text``: its words without stop words, stemmed, in text order.

    >>> analyze("The Forbidden City is closed on Mondays")
    ['forbidden', 'citi', 'close', 'monday']
    >>> analyze("what is it?")
    []
    """
    return [term for term in map(_term_of, words(text)) if term]


def analyze_counts(text: str) -> tuple[dict[str, int], int]:
    """The terms of ``text`` with their counts, in the order :func:`analyze` first gives
    them, and how many terms it has (``len(analyze(text))``): what a node's index entry
    holds, in one pass.

    >>> analyze_counts("Book the hotel, book it")
    ({'book': 2, 'hotel': 1}, 3)
    """
    counts: dict[str, int] = {}
    length = 0
    if text.isascii():
        data = text.encode("ascii")
        if data[1:].islower() or _CAMEL_ASCII.search(text) is None:  # as in words(): no camel case
            known = _byte_terms.get
            for word in data.translate(_ASCII_WORD_BYTES).split():
                term = known(word)
                if term is None:
                    term = _term_of(word.decode("ascii"))
                    if len(word) <= MAX_WORD_LENGTH:
                        if len(_byte_terms) >= _STEM_CACHE_SIZE:
                            _byte_terms.clear()
                        _byte_terms[word] = term
                if term:
                    counts[term] = counts.get(term, 0) + 1
                    length += 1
            return counts, length
    for term in map(_term_of, _split_words(text)):
        if term:
            counts[term] = counts.get(term, 0) + 1
            length += 1
    return counts, length


def term_counts(text: str) -> Counter:
    """Each term of ``text`` with how often it occurs.

    >>> sorted(term_counts("book a hotel, book it").items())
    [('book', 2), ('hotel', 1)]
    """
    return Counter(analyze(text))


def node_text(attributes: Mapping[str, Any], fields: Iterable[str] = TEXT_FIELDS, tag_field: str | None = TAG_FIELD) -> str:
    """A node's text: the string values of ``fields`` and the strings of its ``tag_field``
    list, one per line (other values are not text).

    >>> node_text({"name": "Beijing Hotel", "content": "Booked", "tags": "not a list"})
    'Booked\\nBeijing Hotel'
    """
    get = attributes.get
    first = None  # the only string, while there is one (the usual node: no list made)
    parts = None
    for field in fields:
        value = get(field)
        if type(value) is str:
            if first is None:
                first = value
            else:
                if parts is None:
                    parts = [first]
                parts.append(value)
    if tag_field is not None:
        tags = get(tag_field)
        if tags is not None and isinstance(tags, (list, tuple)):
            if parts is None:
                parts = [] if first is None else [first]
            parts.extend(tag for tag in tags if type(tag) is str)
    if parts is not None:
        return "\n".join(parts)
    return "" if first is None else first
