"""QueryCache's miss path (hgm_engine/query/pipeline.py): a new text goes last, the least
recently used goes first, characters are counted once per text, and a text compiled by
another thread while this one compiled it is kept once, moved last, counted once."""

from __future__ import annotations

from hgm_engine.model import DEFAULT_SCHEMA
from hgm_engine.query import pipeline
from hgm_engine.query.pipeline import QueryCache


def test_the_least_recently_used_text_goes_first():
    cache = QueryCache(DEFAULT_SCHEMA, size=2)
    a, b = cache.get("root"), cache.get("nodes")
    assert cache.get("root") is a  # a hit moves it last
    cache.get("root.children")  # over the size: "nodes" goes
    assert list(cache._entries) == ["root", "root.children"] and cache._chars == len("root") + len("root.children")
    assert (cache.hits, cache.misses) == (1, 3) and cache.get("nodes") is not b


def test_characters_bound_the_cache():
    cache = QueryCache(DEFAULT_SCHEMA, max_chars=10)
    cache.get("root"), cache.get("nodes")  # 9 characters
    cache.get("#a.children")  # 11: longer than the bound, compiled each time and never kept
    assert list(cache._entries) == ["root", "nodes"] and cache._chars == 9
    cache.get("#abcd")  # 14 together: the oldest go until 10 or fewer are left
    assert list(cache._entries) == ["nodes", "#abcd"] and cache._chars == 10


def test_a_text_compiled_meanwhile_by_another_thread_is_kept_once(monkeypatch):
    cache = QueryCache(DEFAULT_SCHEMA)
    cache.get("root")
    compile_uncached = pipeline.compile_uncached

    def racing(text, schema, limits):
        cache._entries[text] = compile_uncached(text, schema, limits)  # as another thread's insert would
        cache._chars += len(text)
        cache.get("nodes")  # and a later one
        return compile_uncached(text, schema, limits)

    monkeypatch.setattr(pipeline, "compile_uncached", racing)
    kept = cache.get("#a.children")
    assert list(cache._entries) == ["root", "nodes", "#a.children"] and cache._entries["#a.children"] is kept
    assert cache._chars == len("root") + len("nodes") + len("#a.children")
