"""The path index saved in binary form (PathIndex.to_bytes / from_bytes) and reopened by a memory:
it locates exactly as the index it was saved from, keeps changing like it, and reopening never
embeds or normalises a text again."""

from __future__ import annotations

import json
import random

import pytest

from hgm_engine import Memory
from hgm_engine.errors import LocalizationError
from hgm_engine.paths.keeper import INDEX_META_KEY, STATE_FORMAT
from hgm_engine.paths.localize import HashedTfidfEmbedder, PathIndex, PathRecord, ScoreConfig, Step

TOOLS = ["flight_search", "book_flight", "hotel_search", "book_hotel", "alarm_set", "alarm_cancel",
         "order_query", "notify_user", "refund_apply", "weather_query"]
WORDS = ["flight", "hotel", "alarm", "order", "refund", "weather", "book", "cancel", "check", "status",
         "Paris", "Beijing", "tomorrow", "morning", "room", "ticket", "price", "queries", "booked"]
QUERIES = ["book a flight to Paris and a hotel room", "cancel my alarm tomorrow morning",
           "what is the status of my order", "refund the ticket price", "weather in Beijing queries"]


def generated(n: int, seed: int = 3, prefix: str = "p") -> list[PathRecord]:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        steps = [Step(rng.choice(TOOLS), " ".join(rng.choices(WORDS, k=4))) for _ in range(rng.randint(1, 4))]
        edges = [(j, j + 1) for j in range(len(steps) - 1)]
        if len(steps) == 3 and rng.random() < 0.3:
            edges = [(0, 2), (1, 2)]
        records.append(PathRecord.create(
            f"{prefix}{i}", " ".join(rng.choices(WORDS, k=6)), steps, edges=edges,
            tags=rng.sample(["travel", "home", "shop"], rng.randint(0, 2)),
            result=rng.choice(["success", "failure", None]), reward=rng.choice([None, 0.5, 1.0]),
            status=rng.choice(["active"] * 8 + ["superseded", "template"]),
            replaces=f"{prefix}{i - 1}" if i and rng.random() < 0.1 else None))
    return records


# Every component and graph expansion on, so each structure a restored index rebuilds is read.
EVERYTHING = ScoreConfig(w_vote=1.0, w_order=0.5, vote_pairs=True, expand_limit=200)


def answers(index: PathIndex) -> list:
    found = []
    for text in QUERIES:
        for config in (None, EVERYTHING):
            result = index.locate(text, tags=["travel"], k=5, expand=index.shared_step_expander(), config=config)
            found.append(result.to_json())
    return found


def test_a_restored_index_locates_exactly_like_the_one_it_was_saved_from():
    index = PathIndex.from_records(generated(300))
    restored = PathIndex.from_bytes(index.to_bytes())
    assert restored.ids() == index.ids()
    assert answers(restored) == answers(index)
    assert restored.records() == index.records()


def test_a_restored_index_changes_exactly_like_the_original():
    original = PathIndex.from_records(generated(200))
    restored = PathIndex.from_bytes(original.to_bytes())
    rng = random.Random(5)
    fresh = iter(generated(60, seed=9, prefix="n"))
    for _ in range(60):
        ids = original.ids()
        action = rng.choice(["remove", "update", "add"])
        if action == "remove" and ids:
            victim = rng.choice(ids)
            assert original.remove(victim) == restored.remove(victim)
        elif action == "update" and ids:
            target = rng.choice(ids)
            new = PathRecord.create(target, "cancel the booked flight", [Step("alarm_cancel", "cancel it")])
            original.update(new)
            restored.update(new)
        else:
            record = next(fresh)
            original.add(record)
            restored.add(record)
    assert restored.ids() == original.ids()
    assert answers(restored) == answers(original)
    again = PathIndex.from_bytes(restored.to_bytes())   # saved again after the changes
    assert answers(again) == answers(original)
    assert again.records() == original.records()


class FixedDense:
    """A dense embedder of a few made-up dimensions (word presence), deterministic."""

    name = "fixed-dense/1"
    sparse = False

    def embed_documents(self, texts):
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text):
        words = text.lower().split()
        return [1.0 + sum(w.startswith(k) for w in words) for k in ("flight", "hotel", "alarm", "order")]


def test_a_dense_index_restores_its_vectors_without_embedding_again():
    records = generated(80)
    index = PathIndex.from_records(records, embedder=FixedDense())
    embedder = FixedDense()
    restored = PathIndex.from_bytes(index.to_bytes(), embedder=embedder)
    embedder.embed_documents = None   # a restored index must not embed the stored paths again
    assert answers(restored) == answers(index)
    restored.remove(records[0].id)
    index.remove(records[0].id)
    assert answers(restored) == answers(index)


def test_a_state_made_with_another_embedder_or_foreign_bytes_is_refused_as_bad_state():
    data = PathIndex.from_records(generated(10)).to_bytes()
    with pytest.raises(LocalizationError) as err:
        PathIndex.from_bytes(data, embedder=HashedTfidfEmbedder(bigram_weight=0.5))
    assert err.value.category == "bad-state" and "made with" in err.value.message
    for broken in (b"", b"not a state", data[: len(data) // 2], data[:40]):
        with pytest.raises(LocalizationError) as err:
            PathIndex.from_bytes(broken)
        assert err.value.category == "bad-state"


def test_reopening_a_memory_reads_its_saved_index_without_normalising_any_text(tmp_path, monkeypatch):
    db = tmp_path / "m.db"
    trajectories = [r.to_json() for r in generated(120) if r.status == "active" and r.replaces is None]
    with Memory.open(db) as memory:
        memory.ingest(trajectories)
        before = memory.locate(QUERIES[0]).to_json()
        memory.save_index()
        assert json.loads(memory.store.get_meta(INDEX_META_KEY))["format"] == STATE_FORMAT
    calls = []
    original = HashedTfidfEmbedder.features
    monkeypatch.setattr(HashedTfidfEmbedder, "features", lambda self, text: calls.append(text) or original(self, text))
    with Memory.open(db) as memory:
        after = memory.locate(QUERIES[0]).to_json()
        metrics = memory.path_metrics()["index"]
    assert metrics["source"] == "state" and metrics["rebuilds"] == 0
    assert after == before
    assert calls == [QUERIES[0], QUERIES[0]]   # the query (text and entry steps), never a stored path


def test_a_memory_saved_with_the_json_index_of_older_versions_still_opens(tmp_path):
    db = tmp_path / "m.db"
    with Memory.open(db) as memory:
        memory.ingest([{"id": "a", "goal": "book a flight", "steps": ["flight_search", "book_flight"]}])
        memory.locate("flight")
        state = {"format": "hgm-path-memory/1", "t": memory.t, "index": memory.path_memory.index.to_state()}
        memory.store.set_meta(INDEX_META_KEY, json.dumps(state))
    with Memory.open(db) as memory:
        assert memory.locate("book me a flight").paths == ["a"]
        assert memory.path_metrics()["index"]["source"] == "state"
