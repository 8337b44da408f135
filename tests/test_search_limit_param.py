"""``search(TEXT).limit($k)`` has the index select the best ``$k`` as ``.limit(3)`` does (found
by the tool-retrieval benchmark: with a parameter the search ordered every match, 2-3 times
the time of the same query with a literal limit)."""

from __future__ import annotations

import pytest

from hgm_engine import Memory
from hgm_engine.errors import HGMError


@pytest.fixture(scope="module")
def memory() -> Memory:
    m = Memory()
    words = ["hotel", "price", "museum", "ticket", "train", "monday"]
    ops = [{"op": "add_node", "id": f"n{i}", "type": "fact" if i % 3 else "goal",
            "content": " ".join(words[j] for j in range(len(words)) if (i >> j) & 1) or "nothing"} for i in range(64)]
    m.apply({"ops": ops})
    return m


def test_a_limit_parameter_after_search_is_pushed_into_the_index(memory):
    text = memory.explain("search($q).where(type = 'fact').limit($k).parent")
    assert "of type 'fact', most relevant first, the first $k only" in text
    assert "search_top" in text


@pytest.mark.parametrize("k", [0, 1, 2, 5, 30, 100])
def test_a_limit_parameter_gives_what_the_literal_limit_gives(memory, k):
    for query in ("hotel price", "train monday museum", "ticket"):
        params = {"q": query, "k": k}
        assert memory.query("search($q).limit($k)", params=params).ids == \
            memory.query(f"search($q).limit({k})", params=params).ids
        assert memory.query("search($q).where(type = 'goal').limit($k)", params=params).ids == \
            memory.query(f"search($q).where(type = 'goal').limit({k})", params=params).ids


@pytest.mark.parametrize("k", [-1, "3", 1.5, None])
def test_a_bad_limit_parameter_is_still_an_invalid_argument(memory, k):
    with pytest.raises(HGMError) as caught:
        memory.query("search($q).limit($k)", params={"q": "hotel", "k": k})
    assert caught.value.problems[0].category == "invalid-argument"
