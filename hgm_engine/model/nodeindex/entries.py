"""What the node index holds for one node: which attributes are its text (:class:`TextFields`),
its entry (:class:`Doc`: terms with counts, length, creation number, type), the terms of a
query (:func:`query_terms`), which nodes of a commit need a new entry (:func:`text_changes`),
and what a search answers (:class:`SearchHit`).
"""

from __future__ import annotations

import json
import threading
from json.encoder import c_make_encoder, encode_basestring
from typing import Any, Iterable, Mapping

import attrs

from hgm_engine.model.payloads import Node, slot_setters
from hgm_engine.model.text import TAG_FIELD, TEXT_FIELDS, analyze, analyze_counts, node_text, words

__all__ = ["TextFields", "DEFAULT_FIELDS", "Doc", "SearchHit", "query_terms", "text_changes", "entries_of", "word_forms"]


@attrs.frozen
class TextFields:
    """Which attributes are a node's text: the strings of ``fields``, and the strings of the
    ``tags`` list (None: no list).

    >>> DEFAULT_FIELDS.text({"title": "Trip", "tags": ["travel"]})
    'Trip\\ntravel'
    """

    fields: tuple[str, ...] = TEXT_FIELDS
    tags: str | None = TAG_FIELD
    # every attribute the text is read from (the fields, then the tag list)
    names: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False)

    @names.default
    def _names(self) -> tuple[str, ...]:
        return self.fields if self.tags is None else (*self.fields, self.tags)

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
        for name in self.names:
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
# ... and, where the json module has its C encoder, that encoder called directly (the same
# text at two thirds of the cost: JSONEncoder.encode's own checks are skipped).
_TERMS_CHUNKS = None if c_make_encoder is None else c_make_encoder(
    None, _TERMS_JSON.default, encode_basestring, None, ":", ",", False, False, True
)
_TERMS_CACHE_SIZE = 50_000
_cache_lock = threading.Lock()


def _terms_of(text: str) -> tuple[dict[str, int], int]:
    found = _TERMS_CACHE.get(text)
    if found is None:
        found = analyze_counts(text)  # as dict(Counter(analyze(text))), len(analyze(text)), in one pass
        if len(_TERMS_CACHE) >= _TERMS_CACHE_SIZE:
            with _cache_lock:
                if len(_TERMS_CACHE) >= _TERMS_CACHE_SIZE:
                    _TERMS_CACHE.clear()
        _TERMS_CACHE[text] = found  # one store of a dict: atomic, no lock needed for it
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
    same_text = fields.same_text
    for change in changes:
        kind = change.kind
        if kind == "node_added":
            out[change.after.id] = change.after
        elif kind == "node_updated":
            before, after = change.before, change.after
            if before is None or before.type != after.type:
                out[after.id] = after
            elif before.attrs is not after.attrs and not same_text(before.attrs, after.attrs):
                out[after.id] = after
        elif kind == "node_removed":
            out[change.before.id] = None
    return out


def entries_of(nodes: Mapping[str, Node | None], fields: TextFields) -> dict[str, "Doc | None"]:
    """Each node's entry (:meth:`Doc.of`; None for a node that is None or has no term), for
    the nodes of a commit (:func:`text_changes`) in one call.

    >>> entries_of({"a": Node("a", "fact", {"content": "the hotel"}, 3), "b": None, "c": Node("c", "fact", {}, 4)}, DEFAULT_FIELDS)
    {'a': Doc(terms={'hotel': 1}, length=1, seq=3, type='fact'), 'b': None, 'c': None}
    """
    out: dict[str, Doc | None] = {}
    text_of = fields.text
    known = _TERMS_CACHE.get
    for node_id, node in nodes.items():
        if node is None:
            out[node_id] = None
            continue
        text = text_of(node.attrs)
        found = known(text)
        if found is None:
            found = _terms_of(text)
        out[node_id] = Doc(found[0], found[1], node.seq, node.type) if found[1] else None
    return out


def query_terms(text: str) -> tuple[str, ...]:
    """The distinct terms of a query text, sorted (the order scores are summed in).

    >>> query_terms("Visit the Temple of Heaven, visit it")
    ('heaven', 'templ', 'visit')
    """
    return tuple(sorted(set(analyze(text))))


@attrs.frozen(slots=True, init=False)
class Doc:
    """One node's entry: its terms with their counts (positive integers), its length in
    terms (the sum of the counts), its creation number and type."""

    terms: Mapping[str, int]
    length: int
    seq: int
    type: str

    def __init__(self, terms: Mapping[str, int], length: int, seq: int, type: str) -> None:
        # the slots' setters, not attrs' object.__setattr__ per field (as Node's __init__):
        # every commit makes one per node whose text it adds or changes
        set_terms, set_length, set_seq, set_type = _SET_DOC
        set_terms(self, terms)
        set_length(self, length)
        set_seq(self, seq)
        set_type(self, type)

    def terms_json(self) -> str:
        """The entry's terms as a store keeps them (a JSON object of counts).

        >>> Doc({"hotel": 2}, 2, 1, "fact").terms_json(), Doc({"book": 1, "26": 1}, 2, 1, "fact").terms_json()
        ('{"hotel":2}', '{"book":1,"26":1}')
        """
        terms = self.terms
        if self.length == len(terms):
            # Every count is 1 (the length is their sum): the usual entry of a short text,
            # written as the encoder writes it, by one join; a term that the encoder would
            # escape (a quote, a backslash, a control character: none that analysis makes)
            # takes the encoder.
            body = '":1,"'.join(terms)  # the separators' quotes are its only ones when no term has one
            if body.count('"') == 2 * len(terms) - 2 and "\\" not in body and body.isprintable():
                return f'{{"{body}":1}}' if terms else "{}"
        if _TERMS_CHUNKS is None:  # pragma: no cover - a Python without the json module's C accelerator
            return _TERMS_JSON.encode(self.terms)
        return "".join(_TERMS_CHUNKS(self.terms, 0))

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


_SET_DOC = slot_setters(Doc)  # terms, length, seq, type


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
