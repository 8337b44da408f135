"""Embedders: the default hashed TF-IDF and an OpenAI-compatible endpoint (a local stub server
on 127.0.0.1, never the internet). The sentence-transformers model: test_localize_minilm.py."""

from __future__ import annotations

import hashlib
import http.server
import json
import math
import threading

import pytest

from hgm_engine.paths.localize import (
    Embedder,
    HashedTfidfEmbedder,
    OpenAIEmbedder,
    PathIndex,
    PathRecord,
    embedder_from_name,
)
from hgm_engine.errors import LocalizationError
from hgm_engine.paths.localize.embedders import normalize_words, stem


def test_the_default_embedder_is_sparse_deterministic_and_needs_no_fitting():
    embedder = HashedTfidfEmbedder()
    assert isinstance(embedder, Embedder) and embedder.sparse
    first = embedder.embed_query("Book two flights to Paris")
    assert first == HashedTfidfEmbedder().embed_query("Book two flights to Paris")
    assert embedder.embed_documents(["Book two flights to Paris"]) == [first]


def test_normalisation_collapses_numbers_dates_times_months_and_splits_identifiers():
    words = normalize_words("On 2023-08-14 at 6:30 AM, March 3, call GetMovieCredit and flight_search")
    assert words.count("<date>") == 1 and words.count("<time>") == 1 and "<month>" in words
    assert {stem(w) for w in ("get", "movie", "credit", "flight", "search")} <= set(words)
    assert stem("bookings") == stem("booked") == "book"


def test_the_stemmer_is_snowball_english_so_every_inflection_of_a_word_meets():
    # The hand-written suffix rules made "queries" -> "quer" but left "query" alone.
    assert stem("queries") == stem("query") == "queri"
    assert stem("cancellation") == stem("cancelled") == stem("cancels") == "cancel"
    assert stem("flies") == stem("flying")


def test_a_request_in_another_inflection_finds_the_path():
    index = PathIndex.from_records([
        PathRecord.create("q", "run the database queries", ["db_lookup"]),
        PathRecord.create("o", "open the garage door", ["garage"]),
    ])
    assert index.locate("query", k=1).paths == ["q"]


def test_bigrams_are_extra_features_when_asked_for():
    plain = HashedTfidfEmbedder().embed_query("cancel the alarm")
    with_bigrams = HashedTfidfEmbedder(bigram_weight=0.5).embed_query("cancel alarm")
    assert len(plain) == 2 and len(with_bigrams) == 3


def test_the_index_learns_idf_so_a_rare_word_outweighs_a_common_one():
    index = PathIndex.from_records(
        [PathRecord.create(f"p{i}", f"please check the weather report {i}", ["weather"]) for i in range(20)]
        + [PathRecord.create("rare", "please check the tide table", ["tides"])]
    )
    assert index.locate("tide please check", k=1).paths == ["rare"]


def test_unknown_embedder_names_are_refused():
    with pytest.raises(LocalizationError) as err:
        embedder_from_name("word2vec")
    assert err.value.category == "embedder"


# -- OpenAI-compatible endpoint ------------------------------------------------------------------

DIMENSIONS = 64


def stub_vector(text: str) -> list[float]:
    """Bag of words hashed into 64 dimensions: similar texts get similar vectors."""
    vector = [0.0] * DIMENSIONS
    for word in text.lower().split():
        vector[int(hashlib.md5(word.strip(".,?!").encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class StubHandler(http.server.BaseHTTPRequestHandler):
    requests: list[dict] = []
    fail = False

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        StubHandler.requests.append({"path": self.path, "body": body,
                                     "auth": self.headers.get("Authorization")})
        if StubHandler.fail or self.path != "/v1/embeddings":
            self.send_response(500 if StubHandler.fail else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "stub says no"}}')
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        payload = {
            "object": "list",
            "model": body["model"],
            "data": [{"object": "embedding", "index": i, "embedding": stub_vector(t)}
                     for i, t in reversed(list(enumerate(texts)))],   # out of order on purpose
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def stub_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StubHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    StubHandler.requests = []
    StubHandler.fail = False
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_the_openai_embedder_locates_through_a_local_endpoint(stub_server, monkeypatch):
    pytest.importorskip("openai", reason="the openai package is not installed")
    monkeypatch.setenv("OPENAI_BASE_URL", stub_server)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    embedder = OpenAIEmbedder("stub-embed", batch_size=2)
    index = PathIndex.from_records([
        PathRecord.create("flight", "book a flight to paris", ["flight_search", "book_flight"]),
        PathRecord.create("hotel", "cancel my hotel room", ["hotel_query", "hotel_cancel"]),
        PathRecord.create("alarm", "set an alarm for seven", ["clock_alarm_set"]),
    ], embedder=embedder)
    assert index.locate("cancel the hotel room", k=1).paths == ["hotel"]
    posted = StubHandler.requests
    assert all(r["path"] == "/v1/embeddings" and r["body"]["model"] == "stub-embed" for r in posted)
    assert posted[0]["auth"] == "Bearer sk-test"
    assert [len(r["body"]["input"]) for r in posted[:2]] == [2, 1]   # batches of two
    restored = PathIndex.from_state(json.loads(json.dumps(index.to_state())), embedder=embedder)
    calls_before = len(StubHandler.requests)
    assert restored.ids() == index.ids()
    assert len(StubHandler.requests) == calls_before   # stored vectors reused, nothing re-embedded


def test_an_endpoint_failure_is_an_embedder_error(stub_server):
    pytest.importorskip("openai", reason="the openai package is not installed")
    StubHandler.fail = True
    embedder = OpenAIEmbedder("stub-embed", base_url=stub_server, api_key="k")
    with pytest.raises(LocalizationError) as err:
        embedder.embed_query("anything")
    assert err.value.category == "embedder"
