"""The node index with vectors: an embedder set per memory (an OpenAI-compatible endpoint —
the local stub of tests/openai_stub.py — or an object given in Python), fused with the
words' ranks, kept with the memory, and every way it can fail leaving memory unchanged.
Nothing leaves 127.0.0.1."""

from __future__ import annotations

import os
import sqlite3
import sys

import pytest

pytest.importorskip("openai")

sys.path.insert(0, os.path.dirname(__file__))
from openai_stub import OpenAIStub, openai_stub, stub_vector  # noqa: E402,F401 (openai_stub: the fixture)

from hgm_engine import Memory  # noqa: E402
from hgm_engine.errors import SearchError  # noqa: E402
from hgm_engine.retrieval import RRF_K  # noqa: E402


class Concepts:
    """A deterministic embedder that knows synonyms: each concept is one axis."""

    name = "concepts/1"
    sparse = False
    AXES = {"hotel": 0, "lodging": 0, "inn": 0, "museum": 1, "gallery": 1, "price": 2, "cost": 2, "fee": 2}

    def __init__(self, dimensions: int = 4):
        self.dimensions = dimensions
        self.calls: list[list[str]] = []

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in text.lower().replace(",", " ").split():
            axis = self.AXES.get(word.rstrip("s"))
            if axis is not None:
                vector[axis] += 1.0
        vector[-1] += 0.05  # never zero
        return vector

    def embed_documents(self, texts):
        self.calls.append(list(texts))
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self._vector(text)


def small(path=None) -> Memory:
    memory = Memory() if path is None else Memory.open(path)
    memory.apply({"ops": [
        {"op": "add_node", "id": "inn", "type": "entity", "name": "The Old Inn by the river"},
        {"op": "add_node", "id": "gallery", "type": "entity", "name": "City Gallery"},
        {"op": "add_node", "id": "fee", "type": "fact", "content": "Entry fee is 60 CNY"},
        {"op": "add_node", "id": "hotel_word", "type": "fact", "content": "hotel"},
    ]})
    return memory


def test_without_an_embedder_search_matches_words_only():
    memory = small()
    assert memory.query("search('lodging')").ids == []
    assert memory.search_status()["embedder"] is None


def test_an_embedder_object_finds_nodes_by_meaning_and_fuses_ranks():
    memory = small()
    status = memory.configure_search(embedder=Concepts(), min_similarity=0.9)
    assert status["embedder"]["name"] == "python:concepts/1" and status["embedder"]["vectors"] == 4
    # "lodging" is no word of any node; its meaning is the inn's and the word "hotel"'s.
    assert memory.query("search('lodging')").ids == ["inn", "hotel_word"]
    hits = memory.search("hotel", limit=None)
    assert [hit["id"] for hit in hits] == ["hotel_word", "inn"]
    assert hits[0]["lexical"] is not None and hits[1]["lexical"] is None and hits[1]["similarity"] > 0.9
    # First by words; second by meaning (the inn's vector is the same, and it is older).
    assert hits[0]["score"] == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + 2), abs=1e-6)
    assert hits[1]["score"] == pytest.approx(1 / (RRF_K + 1), abs=1e-6)
    assert memory.query("search('gallery').where(type = 'fact')").ids == []
    assert memory.query("search('cost').where(type = 'fact')").ids == ["fee"]
    assert memory.query("(#gallery | #fee | #inn).rank('price')").ids == ["fee", "gallery", "inn"]
    assert "fused with the vectors of concepts/1" in memory.explain("search('x')")


def test_commits_embed_new_texts_once_and_as_of_finds_old_texts(tmp_path):
    embedder = Concepts()
    memory = small(tmp_path / "m.db")
    memory.configure_search(embedder=embedder, min_similarity=0.9)
    sent = sum(len(call) for call in embedder.calls)
    memory.apply({"ops": [{"op": "add_node", "id": "lodge", "type": "entity", "name": "Mountain lodging"},
                          {"op": "add_node", "id": "same", "type": "entity", "name": "City Gallery"}]})
    assert sum(len(call) for call in embedder.calls) == sent + 1  # "City Gallery" had its vector already
    assert memory.query("search('inn')").ids == ["inn", "hotel_word", "lodge"]
    memory.apply({"ops": [{"op": "update_node", "id": "lodge", "set": {"name": "Mountain museum"}}]})
    assert memory.query("search('inn')").ids == ["inn", "hotel_word"]
    assert memory.query("search('inn')", as_of=2).ids == ["inn", "hotel_word", "lodge"]
    with memory.transaction() as tx:
        tx.update_node("gallery", set={"name": "hotel"})
        assert "gallery" in tx.query("search('lodging')").ids  # its new text was embedded before
    memory.close()


def test_the_openai_endpoint_embeds_and_a_reopened_memory_reads_its_vectors(tmp_path, openai_stub):
    memory = small(tmp_path / "m.db")
    status = memory.configure_search(embedder="openai:stub-embed", base_url=openai_stub.base_url, min_similarity=0.99)
    assert status["embedder"] == {"name": "openai:stub-embed", "model": "openai/stub-embed", "base_url": openai_stub.base_url,
                                  "dimensions": 16, "min_similarity": 0.99, "vectors": 4}
    # The stub's vectors are hashes of the text: only the very same text is near.
    assert memory.query("search($q)", params={"q": "Entry fee is 60 CNY"}).ids[0] == "fee"
    memory.apply({"ops": [{"op": "add_node", "id": "new", "type": "fact", "content": "A new fact"}]})
    memory.close()
    before = len(openai_stub.embedding_requests)
    reopened = Memory.open(tmp_path / "m.db")
    assert reopened.query("search($q)", params={"q": "A new fact"}).ids == ["new"]
    assert reopened.search_status()["embedder"]["vectors"] == 5
    # Reopening embedded the query only: the nodes' vectors were read from the store.
    assert [r["input"] for r in openai_stub.embedding_requests[before:]] == [["A new fact"]]
    reopened.close()


def test_a_failing_endpoint_fails_the_commit_whole(tmp_path):
    with OpenAIStub() as stub:
        first = small(tmp_path / "m.db")
        first.configure_search(embedder="openai:stub-embed", base_url=stub.base_url)
        first.close()
    # The endpoint is gone now (a memory opened again makes a new connection to it).
    memory = Memory.open(tmp_path / "m.db")
    with pytest.raises(SearchError) as caught:
        memory.apply({"ops": [{"op": "add_node", "id": "x", "type": "fact", "content": "a museum"}]})
    assert caught.value.category == "embedder" and "embedder openai/stub-embed failed" in caught.value.message
    assert memory.t == 1 and memory.node("x") is None
    # Text that does not change, or nodes without text, need no endpoint.
    assert memory.apply({"ops": [{"op": "update_node", "id": "fee", "set": {"confidence": 0.5}}]}).committed
    memory.close()
    db = sqlite3.connect(tmp_path / "m.db")
    assert db.execute("SELECT MAX(t) FROM journal").fetchone()[0] == 2
    assert db.execute("SELECT t FROM node_index WHERE name = 't'").fetchone()[0] == 2
    db.close()


def test_a_model_whose_vector_size_changes_is_refused(tmp_path, openai_stub):
    memory = small(tmp_path / "m.db")
    memory.configure_search(embedder="openai:stub-embed", base_url=openai_stub.base_url)
    openai_stub.dimensions = 8
    with pytest.raises(SearchError) as caught:
        memory.apply({"ops": [{"op": "add_node", "id": "x", "type": "fact", "content": "a museum"}]})
    assert caught.value.category == "embedder" and "vectors of 8 numbers; this memory's have 16" in caught.value.message
    assert memory.t == 1
    with pytest.raises(SearchError):
        memory.query("search('museum')")  # the query's vector has the wrong size too
    # Setting the embedder again embeds every node anew, at the new size.
    assert memory.configure_search(embedder="openai:other", base_url=openai_stub.base_url)["embedder"]["dimensions"] == 8
    assert memory.apply({"ops": [{"op": "add_node", "id": "x", "type": "fact", "content": "a museum"}]}).committed


@pytest.mark.parametrize(
    "kwargs, category, words",
    [
        ({"embedder": "bert"}, "unknown-embedder", "unknown embedder 'bert'"),
        ({"embedder": ""}, "invalid-argument", "needs a name"),
        ({"embedder": "openai", "base_url": "ftp://x"}, "invalid-argument", "base_url must be"),
        ({"embedder": "minilm", "base_url": "http://127.0.0.1:9/v1"}, "invalid-argument", "base_url is for openai"),
        ({"embedder": Concepts(), "min_similarity": 2}, "invalid-argument", "min_similarity is a number"),
        ({"embedder": object()}, "invalid-argument", "an embedder is a name"),
    ],
)
def test_bad_embedder_settings_change_nothing(tmp_path, kwargs, category, words):
    memory = small(tmp_path / "m.db")
    with pytest.raises(SearchError) as caught:
        memory.configure_search(**kwargs)
    assert caught.value.category == category and words in caught.value.message
    assert memory.search_status()["embedder"] is None
    assert memory.store.get_meta("node_index.embedder") is None


def test_a_failing_embedder_while_setting_changes_nothing(tmp_path):
    class Broken(Concepts):
        name = "broken/1"

        def embed_documents(self, texts):
            raise RuntimeError("out of memory")

    memory = small(tmp_path / "m.db")
    memory.configure_search(embedder=Concepts(), min_similarity=0.9)
    with pytest.raises(SearchError) as caught:
        memory.configure_search(embedder=Broken())
    assert "out of memory" in caught.value.message
    assert memory.search_status()["embedder"]["name"] == "python:concepts/1"
    assert memory.query("search('lodging')").ids == ["inn", "hotel_word"]


def test_an_embedder_object_must_be_given_again_after_reopening(tmp_path):
    memory = small(tmp_path / "m.db")
    first = Concepts()
    memory.configure_search(embedder=first, min_similarity=0.9)
    memory.close()
    reopened = Memory.open(tmp_path / "m.db")
    with pytest.raises(SearchError) as caught:
        reopened.query("search('lodging')")
    assert caught.value.category == "embedder" and "give it again" in caught.value.message
    again = Concepts()
    reopened.configure_search(embedder=again, min_similarity=0.9)
    assert again.calls == []  # every vector was kept
    assert reopened.query("search('lodging')").ids == ["inn", "hotel_word"]


def test_words_only_again_drops_the_vectors(tmp_path):
    memory = small(tmp_path / "m.db")
    memory.configure_search(embedder=Concepts(), min_similarity=0.9)
    memory.configure_search(embedder=None)
    assert memory.query("search('lodging')").ids == []
    db = sqlite3.connect(tmp_path / "m.db")
    assert db.execute("SELECT COUNT(*) FROM node_vectors").fetchone()[0] == 0
    db.close()


def test_a_load_embeds_every_text_with_the_genesis(tmp_path):
    memory = Memory.open(tmp_path / "m.db")
    embedder = Concepts()
    memory.configure_search(embedder=embedder, min_similarity=0.9)
    memory.load({"format": "hgm-graph/1", "nodes": [
        {"id": "a", "type": "entity", "name": "Old inn"}, {"id": "b", "type": "entity", "name": "Gallery"}], "edges": []})
    assert memory.query("search('lodging')").ids == ["a"]
    memory.close()
    reopened = Memory.open(tmp_path / "m.db")
    reopened.configure_search(embedder=Concepts(), min_similarity=0.9)
    assert reopened.query("search('lodging')").ids == ["a"]


def test_stub_vectors_are_what_the_memory_keeps(tmp_path, openai_stub):
    memory = small(tmp_path / "m.db")
    memory.configure_search(embedder="openai:stub-embed", base_url=openai_stub.base_url)
    memory.close()
    import numpy as np

    from hgm_engine.retrieval import text_key

    db = sqlite3.connect(tmp_path / "m.db")
    (data,) = db.execute("SELECT vector FROM node_vectors WHERE key = ?", (text_key("City Gallery"),)).fetchone()
    db.close()
    assert np.allclose(np.frombuffer(data, np.float32), stub_vector("City Gallery"), atol=1e-6)


class Words:
    """A deterministic embedder whose nearest texts are often far down the lexical ranking:
    a text's vector counts its letters."""

    name = "letters/1"
    sparse = False

    def _vector(self, text):
        vector = [0.0] * 27
        for char in text.lower():
            vector[ord(char) - 97 if "a" <= char <= "z" else 26] += 1.0
        return vector

    def embed_documents(self, texts):
        return [self._vector(t) for t in texts]

    def embed_query(self, text):
        return self._vector(text)


def test_a_limited_search_with_vectors_is_the_first_of_the_whole_fused_ranking():
    import random

    rng = random.Random(7)
    words = ["hotel", "museum", "price", "river", "garden", "ticket", "night", "old", "city", "tower"]
    memory = Memory()
    ops = [{"op": "add_node", "id": f"n{i}", "type": rng.choice(["fact", "entity"]),
            "content": " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))} for i in range(400)]
    memory.apply({"ops": ops})
    memory.configure_search(embedder=Words(), min_similarity=0.0)
    memory.apply({"ops": [{"op": "update_node", "id": f"n{i}", "set": {"content": "old garden tower"}} for i in range(0, 400, 9)]})

    def ids(hits):
        return [(hit["id"], hit["score"], hit["matched"], hit["lexical"]) for hit in hits]

    for text in ("hotel", "old tower", "museum price night", "river city"):
        for node_type in (None, "fact"):
            whole = memory.search(text, type=node_type, limit=None)
            for limit in (1, 5, 10, 60, 120):
                assert ids(memory.search(text, type=node_type, limit=limit)) == ids(whole[:limit]), (text, node_type, limit)
            assert memory.query("search($q).limit(7)", params={"q": text}).ids == [h["id"] for h in memory.search(text, limit=None)][:7]
    with memory.transaction() as tx:  # a view with its own entries
        for i in range(1, 400, 7):
            tx.update_node(f"n{i}", set={"content": "hotel river"})
        whole = tx.query("search('hotel river')").ids
        assert tx.query("search('hotel river').limit(12)").ids == whole[:12]
        tx.rollback()


def test_the_vector_scan_ranks_as_an_exact_float64_scan_does():
    import numpy as np

    from hgm_engine.retrieval import VectorIndex

    rng = np.random.default_rng(7)
    index = VectorIndex(16)
    rows = rng.standard_normal((500, 16))
    for i, row in enumerate(rows):
        index.put(f"n{i}", "fact" if i % 2 else "goal", row)
    index.remove("n3")
    query = rng.standard_normal(16)
    query /= np.linalg.norm(query)
    units = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    exact = sorted(((-float(units[i] @ query), i) for i in range(500) if i != 3 and i % 2 == 0 and units[i] @ query >= 0.1))
    got = index.nearest(query.astype(np.float32), 20, seq_of=lambda node_id: int(node_id[1:]), node_type="goal",
                        min_similarity=0.1)
    assert [node_id for node_id, _ in got] == [f"n{i}" for _, i in exact[:20]]
    assert all(abs(sim + score) < 1e-5 for (_, sim), (score, _) in zip(got, exact))
