"""The fused ranking of a search with vectors, pinned: on a small fixture (400 nodes over a
vocabulary of 12 words, so the lexical window of 50 fills and ties abound; a deterministic
letter-count embedder, so the nearest texts are often far down the lexical ranking), every
answer — ids in order, fused score, cosine similarity, BM25 score, the words that matched —
is the one recorded in ``tests/data/search_fused_pinned.json`` by the engine before the
search path was made faster (branch i14-vec). Searches with a limit and without, of one
type, the language's ``search(...)`` and ``.rank(...)``, an earlier state (``as_of``) and a
transaction's own texts.

The recording is the specification: a change that moves any of these answers is a change of
behaviour, not a speed-up. (It was written by ``_answers()`` below; do not write it again to
make a change pass.)
"""

from __future__ import annotations

import json
import pathlib
import random

from hgm_engine import Memory
from tests.test_search_vectors import Words as Letters  # the letter-count embedder

PINNED = pathlib.Path(__file__).parent / "data" / "search_fused_pinned.json"
TEXTS = ("hotel", "old tower", "museum price night", "ticket to the city garden", "inn")


def _memory() -> tuple[Memory, int]:
    rng = random.Random(11)
    words = ["hotel", "museum", "price", "river", "garden", "ticket", "night", "old", "city", "tower", "inn", "fee"]
    memory = Memory()
    memory.apply({"ops": [{"op": "add_node", "id": f"n{i:03d}", "type": rng.choice(["fact", "entity", "goal"]),
                           "content": " ".join(rng.choice(words) for _ in range(rng.randint(1, 5)))} for i in range(400)]})
    memory.configure_search(embedder=Letters(), min_similarity=0.3)
    before = memory.t
    memory.apply({"ops": [{"op": "update_node", "id": f"n{i:03d}", "set": {"content": "old tower by the river"}}
                          for i in range(0, 400, 11)]
                  + [{"op": "delete_node", "id": f"n{i:03d}"} for i in range(5, 400, 37)]})
    return memory, before


def _rows(hits) -> list:
    return [[hit["id"], round(hit["score"], 6), hit["matched"],
             None if hit.get("similarity") is None else round(hit["similarity"], 4),
             None if hit.get("lexical") is None else round(hit["lexical"], 4)] for hit in hits]


def _answers() -> dict[str, list]:
    memory, before = _memory()
    out: dict[str, list] = {}
    for text in TEXTS:
        for node_type in (None, "fact"):
            for limit in (3, 10, None):
                out[f"{text}|{node_type}|{limit}"] = _rows(memory.search(text, type=node_type, limit=limit))
        out[f"{text}|as_of"] = _rows(memory.search(text, limit=10, as_of=before))
        out[f"{text}|language"] = memory.query("search($q).limit(8)", params={"q": text}).ids
        out[f"{text}|rank"] = memory.query("nodes.where(type = 'goal').rank($q).limit(8)", params={"q": text}).ids
    with memory.transaction() as tx:
        for i in range(1, 400, 7):
            if (i - 5) % 37:
                tx.update_node(f"n{i:03d}", set={"content": "hotel river night"})
        out["tx|search"] = tx.query("search('hotel river').limit(12)").ids
        out["tx|whole"] = tx.query("search('hotel river')").ids
        tx.rollback()
    return out


def test_the_fused_ranking_is_the_pinned_one():
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    got = _answers()
    assert got.keys() == pinned.keys()
    for key, answer in pinned.items():
        assert got[key] == answer, key


if __name__ == "__main__":  # how the recording was made (see the module)
    lines = [f"{json.dumps(key)}: {json.dumps(answer)}" for key, answer in _answers().items()]
    PINNED.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
