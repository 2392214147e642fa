"""FAISS cosine top-k (``promem_fast.kernels.knn``) against the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

from promem_fast.kernels import knn as knn_mod
from promem_fast.kernels.reference import knn_numpy, normalize_rows

needs_faiss = pytest.mark.skipif(knn_mod.faiss is None, reason="faiss not installed")


def _check_against_reference(scores, ids, query, base, k):
    ref_s, _ = knn_numpy(query, base, k)
    assert scores.shape == ids.shape == (query.shape[0], k)
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    np.testing.assert_allclose(scores, ref_s, atol=1e-5)
    kk = min(k, base.shape[0])
    assert (ids[:, kk:] == -1).all() and np.isneginf(scores[:, kk:]).all()
    # ids must carry the scores they claim (ties may come in any order).
    if kk:
        sims = normalize_rows(query) @ normalize_rows(base).T
        got = np.take_along_axis(sims, ids[:, :kk], axis=1)
        np.testing.assert_allclose(got, scores[:, :kk], atol=1e-5)
        assert all(len(set(row)) == kk for row in ids[:, :kk].tolist())  # no repeats


@needs_faiss
@pytest.mark.parametrize("q,m,d,k", [(1, 1, 1, 1), (10, 50, 16, 5), (33, 200, 384, 10), (4, 3, 8, 7), (5, 9, 12, 0)])
def test_knn_matches_reference(q, m, d, k):
    rng = np.random.default_rng(q * 7 + m + d + k)
    base = rng.standard_normal((m, d)).astype(np.float32) * 3  # unnormalised on purpose
    query = rng.standard_normal((q, d)).astype(np.float32)
    query[0] = base[m // 2] * 0.5  # the nearest neighbour of query 0 is known
    scores, ids = knn_mod.knn(query, base, k)
    _check_against_reference(scores, ids, query, base, k)
    if k:
        assert ids[0, 0] == m // 2 and abs(scores[0, 0] - 1.0) < 1e-5


@needs_faiss
def test_knn_zero_rows_and_float16():
    base = np.zeros((6, 4), np.float16)
    base[2] = [1, 0, 0, 0]
    base[4] = [-1, 0, 0, 0]
    query = np.array([[2, 0, 0, 0], [0, 0, 0, 0]], np.float16)
    scores, ids = knn_mod.knn(query, base, 3)
    assert not np.isnan(scores).any()
    assert ids[0, 0] == 2 and scores[0, 0] == pytest.approx(1.0)
    # zero-query row: every score is 0 (never NaN)
    np.testing.assert_array_equal(scores[1], np.zeros(3, np.float32))
    assert scores[0, 1] == 0.0 and scores[0, 2] == 0.0  # zero base rows score 0, b4 scores -1
    assert 4 not in ids[0].tolist()


@needs_faiss
def test_knn_empty_base_and_queries():
    s, i = knn_mod.knn(np.ones((3, 5), np.float32), np.zeros((0, 5), np.float32), 4)
    assert s.shape == (3, 4) and (i == -1).all() and np.isneginf(s).all()
    s, i = knn_mod.knn(np.zeros((0, 5), np.float32), np.ones((7, 5), np.float32), 2)
    assert s.shape == (0, 2) and i.shape == (0, 2)


@needs_faiss
def test_cosine_index_reuse_and_non_contiguous():
    rng = np.random.default_rng(3)
    base_big = rng.standard_normal((100, 64)).astype(np.float32)
    base = base_big[::2, ::2]  # non-contiguous view
    index = knn_mod.CosineIndex(base, use_gpu=False)
    for _ in range(2):
        query = rng.standard_normal((15, 32)).astype(np.float32)
        s, i = index.search(query, 6)
        _check_against_reference(s, i, query, np.ascontiguousarray(base), 6)


def test_knn_bad_input():
    with pytest.raises(ValueError, match="d="):
        knn_mod.knn(np.ones((2, 3), np.float32), np.ones((2, 4), np.float32), 1)
    with pytest.raises(ValueError, match="k must be"):
        knn_mod.knn(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), -1)
    with pytest.raises(ValueError, match="2-D"):
        knn_mod.knn(np.ones(3, np.float32), np.ones((2, 3), np.float32), 1)


def test_knn_without_faiss_uses_reference(monkeypatch):
    monkeypatch.setattr(knn_mod, "faiss", None)
    rng = np.random.default_rng(5)
    base = rng.standard_normal((20, 8)).astype(np.float32)
    query = rng.standard_normal((4, 8)).astype(np.float32)
    s, i = knn_mod.knn(query, base, 25)
    ref_s, ref_i = knn_numpy(query, base, 25)
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_allclose(s, ref_s, atol=1e-6)  # base is normalised twice on this path
    assert (i[:, 20:] == -1).all()
    assert knn_mod.faiss_gpus() == 0


def test_knn_numpy_ties_to_lowest_id():
    base = np.array([[1, 0], [0, 1], [2, 0], [1, 0]], np.float32)
    s, i = knn_numpy(np.array([[3, 0]], np.float32), base, 4)
    np.testing.assert_array_equal(i, [[0, 2, 3, 1]])
    np.testing.assert_allclose(s, [[1, 1, 1, 0]], atol=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(knn_mod.faiss_gpus() == 0, reason="faiss has no GPU")
def test_knn_gpu_matches_cpu():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((5000, 128)).astype(np.float32)
    query = rng.standard_normal((64, 128)).astype(np.float32)
    s, i = knn_mod.knn(query, base, 10, use_gpu=True)
    _check_against_reference(s, i, query, base, 10)
