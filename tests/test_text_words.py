"""The words of a text: the fast path for plain ASCII text gives what the word-by-word path
gives (a commit analyses every changed node's text with it)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hgm_engine.model import text

_ALPHABET = st.sampled_from(list("abcXYZ019 _-.,'\t\n") + ["ß", "Ä", "é", "İ", "東", "京", "Σ"])
_TEXTS = st.one_of(
    st.text(_ALPHABET, max_size=40),
    st.builds(lambda n, tail: "q" * n + " " + tail, st.integers(60, 70), st.text(_ALPHABET, max_size=10)),
    st.text(max_size=30),
)


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_words_of_any_text_are_those_of_the_word_by_word_path(sample):
    assert text.words(sample) == text._split_words(sample)


def test_camel_case_and_long_words_in_ascii_text_are_handled_as_before():
    sample = "HTTPServer says iPhone " + "w" * 65 + " x" * 2
    assert text.words(sample) == text._split_words(sample) == ["httpserver", "http", "server", "says", "iphone", "i", "phone", "x", "x"]


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_the_counts_of_a_text_are_those_of_its_terms_in_first_seen_order(sample):
    """analyze_counts (what a commit's entries are made of, in one pass, by the ASCII
    bytes path or word by word) gives dict(Counter(analyze(text))) and len(analyze(text)),
    the first time and from the word cache."""
    terms = text.analyze(sample)
    counts: dict[str, int] = {}
    for term in terms:
        counts[term] = counts.get(term, 0) + 1
    expected = (counts, len(terms))
    for _ in range(2):
        got = text.analyze_counts(sample)
        assert got == expected
        assert list(got[0]) == list(counts)


def test_a_stop_word_or_a_long_word_stemmed_alone_is_still_no_term_of_a_text():
    """stem() of a stop word or of a word past MAX_WORD_LENGTH gives its stem, and that does
    not make it a term of a text (the word cache keeps "" for a stop word, nothing for a long word)."""
    long_word = "abcdefgh" * 9
    assert text.stem("having") == "have"
    assert text.stem(long_word) == long_word
    for sample in (f"having {long_word} hotels", f"Having {long_word.upper()} hotels"):
        assert text.analyze_counts(sample) == ({"hotel": 1}, 1)
        assert text.analyze(sample) == ["hotel"]


def test_a_known_word_is_not_stemmed_again(monkeypatch):
    text.analyze_counts("Reviewing the museums")
    calls = []
    original = text._stemmer.stemWord
    monkeypatch.setattr(text._stemmer, "stemWord", lambda word: calls.append(word) or original(word))
    assert text.analyze_counts("reviewing museums, Reviewing") == ({"review": 2, "museum": 1}, 3)
    assert calls == []


_VALUES = st.one_of(st.text(max_size=5), st.integers(0, 3), st.none(), st.lists(st.one_of(st.text(max_size=3), st.integers(0, 2)), max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["content", "name", "title", "description", "tags", "status"]), _VALUES))
def test_a_nodes_text_is_its_strings_one_per_line(attributes):
    """node_text (no list made for a node with one string): the strings of the text fields
    in their order, then the strings of a tag list, joined by new lines."""
    parts = [attributes[f] for f in text.TEXT_FIELDS if type(attributes.get(f)) is str]
    tags = attributes.get("tags")
    if isinstance(tags, list):
        parts += [tag for tag in tags if type(tag) is str]
    assert text.node_text(attributes) == "\n".join(parts)
