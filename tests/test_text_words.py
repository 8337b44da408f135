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
