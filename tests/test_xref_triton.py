"""Triton cross-reference kernel against the numpy reference.

CPU runs use the Triton interpreter. Triton only builds its library for the interpreter
when TRITON_INTERPRET=1 is set before triton is first imported, so this module sets it
(when there is no CUDA) before importing triton; if another module imported triton earlier
the interpreter tests skip with that reason (CI: ``TRITON_INTERPRET=1 pytest ...``).
Sizes stay small: the interpreter executes every program in Python. GPU tests are marked
``gpu`` and skip without CUDA.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

from promem_fast.kernels import xref_triton
from promem_fast.kernels.reference import (
    XrefResult,
    cross_reference_batched_numpy,
    cross_reference_numpy,
    normalize_rows,
)

ATOL = 1e-5


def assert_matches_reference(res, a, b, tau):
    """max_sim within ATOL; argmax equal where the reference max is unique (gap > 2 ATOL)."""
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    ref = cross_reference_numpy(a, b, tau)
    assert res.max_sim.dtype == np.float32 and res.argmax.dtype == np.int64
    assert not np.isnan(res.max_sim).any()
    np.testing.assert_allclose(res.max_sim, ref.max_sim, atol=ATOL, rtol=0)
    if a.shape[0] and b.shape[0] > 1:
        sims = normalize_rows(a) @ normalize_rows(b).T
        second = np.sort(sims, axis=1)[:, -2]
        unique = (ref.max_sim - second) > 2 * ATOL
        np.testing.assert_array_equal(res.argmax[unique], ref.argmax[unique])
    else:
        np.testing.assert_array_equal(res.argmax, ref.argmax)
    np.testing.assert_array_equal(res.matched, res.max_sim > tau)



@pytest.fixture
def interpret():
    if not xref_triton.interpreting():
        pytest.skip("Triton interpreter inactive: TRITON_INTERPRET=1 must be set before triton is imported")


def _np(res: XrefResult) -> XrefResult:
    return XrefResult(*(f.cpu().numpy() for f in res))


@pytest.mark.parametrize("n,m,d", [(1, 1, 1), (5, 7, 3), (17, 33, 40), (40, 20, 70)])
def test_interpreter_random_matches_reference(interpret, n, m, d):
    rng = np.random.default_rng(n + m + d)
    a = rng.standard_normal((n, d)).astype(np.float32)
    b = rng.standard_normal((m, d)).astype(np.float32)
    a[: n // 2] += b[: n // 2 % m + 1][0]
    res = _np(xref_triton.cross_reference_triton(torch.from_numpy(a), torch.from_numpy(b), 0.3))
    assert_matches_reference(res, a, b, 0.3)


def test_interpreter_ties_zero_rows_and_d1(interpret):
    a = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0], [0, 5, 0]], np.float32)
    b = np.array([[0, 1, 0], [1, 0, 0], [2, 0, 0], [0, 3, 0], [0, 0, 0]], np.float32)
    res = _np(xref_triton.cross_reference_triton(torch.from_numpy(a), torch.from_numpy(b), 0.5))
    np.testing.assert_array_equal(res.argmax, [1, 0, 0, 0, 0])
    np.testing.assert_allclose(res.max_sim, [1, 1, 0, 0, 1], atol=1e-6)
    assert not np.isnan(res.max_sim).any()
    a1 = torch.tensor([[2.0], [-0.5], [0.0]])
    b1 = torch.tensor([[-1.0], [3.0], [5.0], [0.0]])
    r1 = _np(xref_triton.cross_reference_triton(a1, b1, 0.0))
    np.testing.assert_array_equal(r1.argmax, [1, 0, 0])
    np.testing.assert_allclose(r1.max_sim, [1, 1, 0], atol=1e-6)


def test_interpreter_ties_across_column_blocks(interpret):
    # 40 columns with block_n=16: duplicates of row i sit at i and i + 20 (another block).
    rng = np.random.default_rng(2)
    r = rng.standard_normal((20, 24)).astype(np.float32)
    b = np.concatenate([r, r])
    res = _np(xref_triton.cross_reference_triton(torch.from_numpy(r[:6]), torch.from_numpy(b), 0.9))
    np.testing.assert_array_equal(res.argmax, np.arange(6))
    np.testing.assert_allclose(res.max_sim, 1.0, atol=1e-5)


@pytest.mark.parametrize("n,m", [(0, 0), (0, 4), (3, 0)])
def test_interpreter_empty_sides(interpret, n, m):
    a = torch.zeros((n, 8))
    b = torch.ones((m, 8))
    res = _np(xref_triton.cross_reference_triton(a, b, 0.1))
    np.testing.assert_array_equal(res.max_sim, np.zeros(n, np.float32))
    np.testing.assert_array_equal(res.argmax, np.full(n, -1))
    assert not res.matched.any()


def test_interpreter_float16_and_non_contiguous(interpret):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((20, 64)).astype(np.float16)
    b = rng.standard_normal((25, 64)).astype(np.float16)
    res = _np(xref_triton.cross_reference_triton(torch.from_numpy(a), torch.from_numpy(b), 0.2))
    assert_matches_reference(res, a, b, 0.2)
    big = rng.standard_normal((30, 80)).astype(np.float32)
    ta = torch.from_numpy(big)[::2, ::3]  # strided rows and columns
    tb = torch.from_numpy(big)[1:25, ::3]
    assert not ta.is_contiguous() and not tb.is_contiguous()
    r2 = _np(xref_triton.cross_reference_triton(ta, tb, 0.2))
    assert_matches_reference(r2, ta.numpy(), tb.numpy(), 0.2)


def test_interpreter_ragged_batch_one_launch(interpret):
    rng = np.random.default_rng(12)
    sizes = [(5, 7), (0, 4), (3, 0), (20, 18), (1, 1)]
    a = np.concatenate([rng.standard_normal((n, 32)) for n, _ in sizes]).astype(np.float32)
    b = np.concatenate([rng.standard_normal((m, 32)) for _, m in sizes]).astype(np.float32)
    ao = np.concatenate([[0], np.cumsum([n for n, _ in sizes])])
    bo = np.concatenate([[0], np.cumsum([m for _, m in sizes])])
    res = _np(xref_triton.cross_reference_batched_triton(torch.from_numpy(a), ao, torch.from_numpy(b), bo, 0.2))
    ref = cross_reference_batched_numpy(a, ao, b, bo, 0.2)
    np.testing.assert_allclose(res.max_sim, ref.max_sim, atol=1e-5)
    np.testing.assert_array_equal(res.argmax, ref.argmax)
    np.testing.assert_array_equal(res.argmax[ao[2]:ao[3]], [-1, -1, -1])
    with pytest.raises(ValueError, match="a_offsets"):
        xref_triton.cross_reference_batched_triton(torch.from_numpy(a), [0, 1], torch.from_numpy(b), [0, b.shape[0]], 0.2)


def test_cpu_tensor_without_interpreter_is_refused(monkeypatch):
    if HAS_CUDA:
        pytest.skip("CUDA present: CPU-tensor refusal only applies without a GPU")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not xref_triton.interpreting()
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET|CUDA"):
        xref_triton.cross_reference_triton(torch.ones((2, 4)), torch.ones((3, 4)), 0.5)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_gpu_matches_reference(dtype):
    rng = np.random.default_rng(0)
    sizes = [(300, 500), (0, 3), (7, 0), (1000, 64)]
    a = np.concatenate([rng.standard_normal((n, 384)) for n, _ in sizes]).astype(np.float32)
    b = np.concatenate([rng.standard_normal((m, 384)) for _, m in sizes]).astype(np.float32)
    a[:100] = b[:100] * 3
    ao = np.concatenate([[0], np.cumsum([n for n, _ in sizes])])
    bo = np.concatenate([[0], np.cumsum([m for _, m in sizes])])
    ta = torch.from_numpy(a).to("cuda", dtype)
    tb = torch.from_numpy(b).to("cuda", dtype)
    res = _np(xref_triton.cross_reference_batched_triton(ta, ao, tb, bo, 0.5))
    ref = cross_reference_batched_numpy(ta.float().cpu().numpy(), ao, tb.float().cpu().numpy(), bo, 0.5)
    np.testing.assert_allclose(res.max_sim, ref.max_sim, atol=1e-4)
    agree = (res.argmax == ref.argmax).mean()
    assert agree > 0.999
    np.testing.assert_array_equal(res.argmax[:100], np.arange(100))
    from promem_fast.kernels import choose

    assert choose(ta, tb) == "triton"
