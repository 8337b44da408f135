"""The vector scan (``VectorIndex.nearest``) answers exactly as the row-by-row scan it
replaced: the same ids, in the same order, with the same similarities to the last bit, on
random data, ties, near-ties below float32's resolution, thresholds and filters."""

from __future__ import annotations

import numpy as np
import pytest

from hgm_engine.retrieval import VectorIndex
from hgm_engine.retrieval.vectors import dot_error_bound, similarities


def row_by_row(index: VectorIndex, query, k, *, seq_of, node_type=None, hidden=(), extra=None, min_similarity=-1.0):
    """The scan as it was before the BLAS pass (every row by ``similarities``, then the k
    best): the reference the fast scan must equal."""
    if k <= 0:
        return []
    used = len(index.id_at)  # every row ever allocated; the unused ones are not alive
    sims = similarities(index.matrix[:used], query)
    mask = index.alive[:used].copy()
    if node_type is not None:
        code = index.type_names.index(node_type) if node_type in index.type_names else -1
        mask &= index.type_codes[:used] == code
    for node_id in hidden:
        row = index.row_of.get(node_id)
        if row is not None:
            mask[row] = False
    if min_similarity > -1.0:
        mask &= sims >= min_similarity
    rows = np.flatnonzero(mask)
    candidates = []
    if len(rows):
        values = sims[rows].astype(np.float64)
        if len(rows) > k:
            threshold = np.partition(values, len(values) - k)[len(values) - k]
            pick = values >= threshold
            rows, values = rows[pick], values[pick]
        candidates = [(index.id_at[row], value) for row, value in zip(rows.tolist(), values.tolist())]
    for node_id, (kind, vector) in (extra or {}).items():
        similarity = float(np.dot(vector, query))
        if (node_type is None or kind == node_type) and similarity >= min_similarity:
            candidates.append((node_id, similarity))
    candidates.sort(key=lambda item: (-item[1], seq_of(item[0])))
    return candidates[:k]


def seq(node_id: str) -> int:
    return int(node_id[1:]) % 97  # many equal seqs: ties left to the scan's own order


def filled(rows: np.ndarray, *, types=("fact", "goal", "entity"), removed=0, rng=None) -> VectorIndex:
    index = VectorIndex(rows.shape[1], capacity=16)  # grown as rows come
    for i, row in enumerate(rows):
        index.put(f"n{i}", types[i % len(types)], row)
    if removed:
        for i in rng.choice(len(rows), removed, replace=False):
            index.remove(f"n{i}")
        for i in range(removed // 2):  # freed rows reused
            index.put(f"r{i}", "fact", rng.standard_normal(rows.shape[1]))
    return index


def bits(answer):
    """An answer with each similarity as its exact bits (NaN equal to NaN)."""
    return [(node_id, float(sim).hex()) for node_id, sim in answer]


def assert_same(index, query, ks=(1, 10, 50, 10_000), **kwargs):
    for k in ks:
        expected = row_by_row(index, query, k, seq_of=seq, **kwargs)
        got = index.nearest(query, k, seq_of=seq, **kwargs)
        assert bits(got) == bits(expected), (k, kwargs)


@pytest.mark.parametrize("dimensions", [384, 27, 5])
def test_random_vectors_give_the_row_by_row_answer(dimensions):
    rng = np.random.default_rng(dimensions)
    index = filled(rng.standard_normal((3000, dimensions)), removed=300, rng=rng)
    hidden = [f"n{i}" for i in range(0, 3000, 17)]
    extra = {"x1": ("fact", index.vector_of("n5").copy()), "x2": ("goal", np.zeros(dimensions, np.float32))}
    for _ in range(2):
        query = rng.standard_normal(dimensions).astype(np.float32)
        query /= np.linalg.norm(query)
        for min_similarity in (-1.0, 0.05, 0.35):
            assert_same(index, query, min_similarity=min_similarity)
            assert_same(index, query, min_similarity=min_similarity, node_type="goal", hidden=hidden, extra=extra)
        assert_same(index, query, node_type="unknown")


def test_a_query_that_is_a_stored_row_gives_the_row_by_row_answer():
    rng = np.random.default_rng(1)
    index = filled(rng.standard_normal((2000, 64)))
    for i in (0, 7, 1999):
        assert_same(index, index.vector_of(f"n{i}").copy(), min_similarity=0.2)


def test_duplicate_and_zero_rows_tie_as_in_the_row_by_row_scan():
    rng = np.random.default_rng(2)
    base = rng.standard_normal((40, 32))
    rows = np.concatenate([base[rng.integers(0, 40, 1500)], np.zeros((100, 32))])
    index = filled(rows)
    query = rows[3].astype(np.float32) / np.linalg.norm(rows[3])
    for min_similarity in (-1.0, 0.0, 0.5):
        assert_same(index, query, min_similarity=min_similarity)


def test_near_ties_closer_than_float32_rounding_give_the_row_by_row_answer():
    """Rows a hair apart (1e-7: under float32's resolution), so that a BLAS product and the
    row-by-row loop round their similarities differently: the answer is still the loop's."""
    rng = np.random.default_rng(3)
    center = rng.standard_normal(384)
    rows = center + 1e-7 * rng.standard_normal((1500, 384)) * np.linalg.norm(center)
    far = rng.standard_normal((300, 384))
    index = filled(np.concatenate([rows, far]))
    query = (center / np.linalg.norm(center)).astype(np.float32)
    assert len({sim for _, sim in index.nearest(query, 1500, seq_of=seq)}) < 1500  # ties there are
    for min_similarity in (-1.0, 0.9, float(similarities(index.matrix[:1], query)[0])):
        assert_same(index, query, min_similarity=min_similarity)
        assert_same(index, query, min_similarity=min_similarity, node_type="fact")


def test_a_float64_or_odd_query_is_scanned_as_before():
    rng = np.random.default_rng(4)
    index = filled(rng.standard_normal((500, 16)))
    query = rng.standard_normal(16)
    query /= np.linalg.norm(query)
    assert_same(index, query, min_similarity=0.1)  # float64: numpy promotes the rows
    assert_same(index, np.array([np.nan] * 16, np.float32))


def test_a_row_that_is_not_finite_leaves_the_scan_as_before():
    rng = np.random.default_rng(5)
    index = filled(rng.standard_normal((300, 8)))
    with np.errstate(invalid="ignore"):
        index.put("n999", "fact", [np.inf] + [0.0] * 7)
    query = rng.standard_normal(8).astype(np.float32)
    query /= np.linalg.norm(query)
    for min_similarity in (-1.0, 0.2):
        assert_same(index, query, min_similarity=min_similarity)


def test_the_error_bound_covers_the_blas_product_on_random_rows():
    rng = np.random.default_rng(6)
    rows = rng.standard_normal((5_000, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    query = rows[0].copy()
    gap = np.abs(rows @ query - similarities(rows, query)).max()
    assert gap <= dot_error_bound(384, float(np.linalg.norm(query))) / 4
