"""``IndexView.ranks_of`` — the lexical rank a fused search gives the nearest texts beyond
its window — is each node's position in the whole ranking of ``hits``, counted for all the
nodes at once: equal scores (frequent with a small vocabulary) ordered by creation, the
entries changed since the segment and a view's own entries included."""

from __future__ import annotations

import random

from hgm_engine.model.nodeindex import Doc, IndexView, LexicalIndex, Segment

WORDS = ["hotel", "museum", "price", "river", "night", "ticket"]


def _doc(rng: random.Random, seq: int) -> Doc:
    terms = {word: rng.randint(1, 2) for word in rng.sample(WORDS, rng.randint(1, 3))}
    return Doc(terms, sum(terms.values()) + rng.choice([0, 0, 1]), seq, rng.choice(["fact", "goal"]))


def _view(seed: int) -> IndexView:
    rng = random.Random(seed)
    docs = [(f"n{i}", _doc(rng, i + 1)) for i in range(600)]
    index = LexicalIndex(Segment.build(docs))
    for i in rng.sample(range(600), 60):  # changed since the segment, or gone
        index.replace(f"n{i}", None if i % 3 == 0 else _doc(rng, i + 1))
    for i in range(600, 640):  # added since
        index.replace(f"n{i}", _doc(rng, i + 1))
    hidden = {f"n{i}": index.doc(f"n{i}") for i in rng.sample(range(640), 30) if index.doc(f"n{i}") is not None}
    added = {f"v{i}": _doc(rng, 1000 + i) for i in range(20)}
    return IndexView(index, hidden, added)


def test_ranks_of_are_the_positions_in_the_whole_ranking():
    for seed in range(2):
        view = _view(seed)
        ids = [f"n{i}" for i in range(640)] + [f"v{i}" for i in range(20)] + ["nowhere"]
        for terms in (("hotel",), ("museum", "price"), ("hotel", "night", "river"), tuple(sorted(WORDS))):
            for node_type in (None, "goal"):
                ranking = view.hits(terms, node_type=node_type)
                assert len({(hit.score, hit.all_terms) for hit in ranking}) < len(ranking)  # ties there are
                expected = {hit.id: (rank, hit) for rank, hit in enumerate(ranking, start=1)}
                assert view.ranks_of(terms, ids, node_type=node_type) == expected, (seed, terms, node_type)
                some = random.Random(seed).sample(ids, 50)
                assert view.ranks_of(terms, some, node_type=node_type) == {i: expected[i] for i in some if i in expected}


def test_ranks_of_after_hits_charges_the_postings_as_a_fresh_view_does():
    # hits() and ranks_of() of the same terms share one scoring of the postings; the work
    # budget is charged at each call as if it read them again (as before they shared it)
    for seed in range(2):
        terms, ids = ("hotel", "night", "river"), [f"n{i}" for i in range(0, 640, 3)]
        fresh: list[int] = []
        _view(seed).ranks_of(terms, ids, charge=fresh.append)
        view, after_hits = _view(seed), []
        view.hits(terms, top=10)
        view.ranks_of(terms, ids, charge=after_hits.append)
        assert after_hits == fresh and sum(fresh) > 0
        other, other_fresh = [], []
        assert view.ranks_of(("museum",), ids, charge=other.append) == _view(seed).ranks_of(
            ("museum",), ids, charge=other_fresh.append)  # other terms: scored anew, the same
        assert other == other_fresh
