"""Cross-reference kernels (numpy reference, C++ ``_C``, dispatcher) against the reference.

Comparison rule: max_sim within 1e-5; argmax identical unless the reference itself has a
near-tie (another column within 1e-5 of the max), in which case the chosen column must be
one of the near-maximal ones; matched identical away from tau. Exact ties (built from
one-hot / duplicated rows, where every implementation computes bit-identical scores) must
break to the lowest index exactly.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from promem_fast.kernels import (
    cpu,
    cross_reference,
    cross_reference_batched,
    cross_reference_many,
    dispatch,
)
from promem_fast.kernels.reference import (
    cross_reference_batched_numpy,
    cross_reference_numpy,
    normalize_rows,
)

ATOL = 1e-5
needs_native = pytest.mark.skipif(not cpu.have_native(), reason="promem_fast._C not built")


def _impls():
    out = [("numpy", cross_reference_numpy), ("dispatch", cross_reference)]
    if cpu.have_native():
        out += [
            ("cpp", cpu.cross_reference_cpu),
            ("cpp_1thread", lambda a, b, t: cpu.cross_reference_cpu(a, b, t, n_threads=1)),
            ("cpp_2threads", lambda a, b, t: cpu.cross_reference_cpu(a, b, t, n_threads=2)),
        ]
    return out


IMPLS = _impls()


def assert_matches_reference(res, a, b, tau):
    ref = cross_reference_numpy(a, b, tau)
    n = np.asarray(a).shape[0]
    assert res.max_sim.dtype == np.float32 and res.max_sim.shape == (n,)
    assert res.argmax.dtype == np.int64 and res.argmax.shape == (n,)
    assert res.matched.dtype == np.bool_ and res.matched.shape == (n,)
    assert not np.isnan(res.max_sim).any()
    np.testing.assert_allclose(res.max_sim, ref.max_sim, atol=ATOL, rtol=0)
    if n and np.asarray(b).shape[0]:
        sims = normalize_rows(a) @ normalize_rows(b).T
        chosen = sims[np.arange(n), res.argmax]
        # The chosen column must be (near-)maximal; where the max is unique it must agree.
        assert np.all(chosen >= ref.max_sim - ATOL)
        second = np.sort(sims, axis=1)[:, -2] if sims.shape[1] > 1 else np.full(n, -np.inf)
        unique = (ref.max_sim - second) > 2 * ATOL
        np.testing.assert_array_equal(res.argmax[unique], ref.argmax[unique])
    else:
        np.testing.assert_array_equal(res.argmax, ref.argmax)
    away = np.abs(ref.max_sim - tau) > 2 * ATOL
    np.testing.assert_array_equal(res.matched[away], ref.matched[away])
    np.testing.assert_array_equal(res.matched, res.max_sim > tau)


SHAPES = [
    (1, 1, 1), (5, 7, 3), (6, 16, 8), (7, 17, 31), (97, 300, 255), (40, 33, 256),
    (13, 50, 257), (200, 270, 600), (3, 1000, 384), (250, 2, 64),
]


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
@pytest.mark.parametrize("n,m,d", SHAPES)
def test_random_matches_reference(name, fn, n, m, d):
    rng = np.random.default_rng(n * 1000 + m * 10 + d)
    a = rng.standard_normal((n, d)).astype(np.float32)
    b = rng.standard_normal((m, d)).astype(np.float32)
    # Shift some rows so a few max_sim values sit well above tau and some below.
    a[: n // 2] += b[rng.integers(0, m, n // 2)] * 2
    tau = 0.3
    res = fn(a, b, tau)
    assert_matches_reference(res, a, b, tau)
    assert res.matched.any() == (res.max_sim > tau).any()


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
def test_exact_ties_break_to_lowest_index(name, fn):
    a = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0], [0, 5, 0]], np.float32)
    b = np.array([[0, 1, 0], [1, 0, 0], [2, 0, 0], [0, 3, 0], [0, 0, 0]], np.float32)
    res = fn(a, b, 0.5)
    # a0 ties b1/b2 (cos 1); a1 and a4 tie b0/b3; a2 is orthogonal to all but the zero
    # row -> every score 0 -> index 0; a3 is a zero row -> score 0 everywhere -> index 0.
    np.testing.assert_array_equal(res.argmax, [1, 0, 0, 0, 0])
    np.testing.assert_allclose(res.max_sim, [1, 1, 0, 0, 1], atol=1e-6)
    np.testing.assert_array_equal(res.matched, [True, True, False, False, True])


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
def test_duplicated_columns_across_blocks_pick_first_copy(name, fn):
    # b = [r; r]: every a_i = r_i ties with columns i and i + k; the first copy must win,
    # including across column blocks and (for the native kernel) column splits.
    rng = np.random.default_rng(7)
    k, d = 300, 520
    r = rng.standard_normal((k, d)).astype(np.float32)
    b = np.concatenate([r, r])
    res = fn(r[:40], b, 0.9)
    if name != "numpy" and name != "dispatch":
        np.testing.assert_array_equal(res.argmax, np.arange(40))
    else:  # BLAS may round the two copies differently; any copy of the right row is fine
        assert np.all(res.argmax % k == np.arange(40))
    np.testing.assert_allclose(res.max_sim, 1.0, atol=1e-5)
    assert res.matched.all()


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
def test_d1_signs_and_zero(name, fn):
    a = np.array([[2.0], [-0.5], [0.0]], np.float32)
    b = np.array([[-1.0], [3.0], [5.0], [0.0]], np.float32)
    res = fn(a, b, 0.0)
    np.testing.assert_array_equal(res.argmax, [1, 0, 0])
    np.testing.assert_array_equal(res.max_sim, np.array([1, 1, 0], np.float32))
    np.testing.assert_array_equal(res.matched, [True, True, False])


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
def test_d0_scores_zero(name, fn):
    res = fn(np.zeros((3, 0), np.float32), np.zeros((4, 0), np.float32), -0.1)
    np.testing.assert_array_equal(res.max_sim, np.zeros(3, np.float32))
    np.testing.assert_array_equal(res.argmax, np.zeros(3, np.int64))
    assert res.matched.all()


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
@pytest.mark.parametrize("n,m", [(0, 0), (0, 5), (4, 0)])
def test_empty_sides(name, fn, n, m):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, 8)).astype(np.float32)
    b = rng.standard_normal((m, 8)).astype(np.float32)
    res = fn(a, b, 0.1)
    assert res.max_sim.shape == (n,) and res.max_sim.dtype == np.float32
    assert res.argmax.dtype == np.int64
    np.testing.assert_array_equal(res.max_sim, np.zeros(n, np.float32))
    np.testing.assert_array_equal(res.argmax, np.full(n, -1))
    np.testing.assert_array_equal(res.matched, np.zeros(n, bool))


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
def test_all_zero_rows_never_nan(name, fn):
    a = np.zeros((9, 40), np.float32)
    a[3, 5] = 1.0
    b = np.zeros((20, 40), np.float32)
    b[11, 5] = -2.0
    res = fn(a, b, -0.5)
    assert not np.isnan(res.max_sim).any()
    expected = np.zeros(9, np.float32)
    np.testing.assert_array_equal(res.max_sim, expected)  # a3 vs b11 is -1, zero rows give 0
    np.testing.assert_array_equal(res.argmax, np.zeros(9, np.int64))
    assert res.matched.all()  # 0 > -0.5


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
def test_float16_inputs(name, fn):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((70, 384)).astype(np.float16)
    b = rng.standard_normal((90, 384)).astype(np.float16)
    a[:10] = b[:10] + np.float16(0.1)
    res = fn(a, b, 0.5)
    assert_matches_reference(res, a, b, 0.5)
    assert res.matched[:10].all() and not res.matched[10:].any()


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
@pytest.mark.parametrize("layout", ["col_slice", "row_slice", "fortran", "f16_slice", "float64"])
def test_non_contiguous_and_other_layouts(name, fn, layout):
    rng = np.random.default_rng(5)
    big_a = rng.standard_normal((60, 300)).astype(np.float32)
    big_b = rng.standard_normal((80, 300)).astype(np.float32)
    if layout == "col_slice":
        a, b = big_a[:, ::2], big_b[:, ::2]
    elif layout == "row_slice":
        a, b = big_a[::3], big_b[1::2]
    elif layout == "fortran":
        a, b = np.asfortranarray(big_a), np.asfortranarray(big_b)
    elif layout == "f16_slice":
        a, b = big_a.astype(np.float16)[::2, 1::3], big_b.astype(np.float16)[:, 1::3]
    else:
        a, b = big_a.astype(np.float64), big_b.astype(np.float64)
    assert layout == "float64" or not (a.flags.c_contiguous and b.flags.c_contiguous) or layout == "fortran"
    assert_matches_reference(fn(a, b, 0.2), a, b, 0.2)


@pytest.mark.parametrize("name,fn", IMPLS, ids=[n for n, _ in IMPLS])
def test_bad_shapes_raise(name, fn):
    with pytest.raises(ValueError, match="2-D"):
        fn(np.zeros(3, np.float32), np.zeros((2, 3), np.float32), 0.5)
    with pytest.raises(ValueError, match="d="):
        fn(np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32), 0.5)


@needs_native
def test_native_threads_are_bitwise_deterministic():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((300, 512)).astype(np.float32)
    b = rng.standard_normal((700, 512)).astype(np.float32)
    one = cpu.cross_reference_cpu(a, b, 0.1, n_threads=1)
    for t in (2, 3, 8):
        many = cpu.cross_reference_cpu(a, b, 0.1, n_threads=t)
        np.testing.assert_array_equal(many.max_sim, one.max_sim)
        np.testing.assert_array_equal(many.argmax, one.argmax)


def _random_batch(rng, sizes, d, dtype=np.float32):
    a = [rng.standard_normal((n, d)).astype(dtype) for n, _ in sizes]
    b = [rng.standard_normal((m, d)).astype(dtype) for _, m in sizes]
    ao = np.concatenate([[0], np.cumsum([n for n, _ in sizes])]).astype(np.int64)
    bo = np.concatenate([[0], np.cumsum([m for _, m in sizes])]).astype(np.int64)
    return a, b, np.concatenate(a), ao, np.concatenate(b), bo


BATCH_SIZES = [(5, 7), (0, 4), (3, 0), (0, 0), (120, 33), (1, 1), (17, 300)]


@pytest.mark.parametrize("impl", ["numpy", "cpp"])
def test_batched_matches_per_session(impl):
    if impl == "cpp" and not cpu.have_native():
        pytest.skip("promem_fast._C not built")
    rng = np.random.default_rng(21)
    a_list, b_list, a, ao, b, bo = _random_batch(rng, BATCH_SIZES, 96)
    res = cross_reference_batched(a, ao, b, bo, 0.2, impl=impl)
    assert res.max_sim.shape == (a.shape[0],)
    for s, (x, y) in enumerate(zip(a_list, b_list)):
        sl = slice(ao[s], ao[s + 1])
        from promem_fast.kernels.reference import XrefResult

        part = XrefResult(res.max_sim[sl], res.argmax[sl], res.matched[sl])
        assert_matches_reference(part, x, y, 0.2)
    ref = cross_reference_batched_numpy(a, ao, b, bo, 0.2)
    np.testing.assert_allclose(res.max_sim, ref.max_sim, atol=ATOL)
    # Session 2 has rows but no b rows: -1 there.
    np.testing.assert_array_equal(res.argmax[ao[2]:ao[3]], [-1, -1, -1])


@pytest.mark.parametrize("impl", ["numpy", "cpp"])
def test_batched_rejects_bad_offsets(impl):
    if impl == "cpp" and not cpu.have_native():
        pytest.skip("promem_fast._C not built")
    a = np.ones((4, 3), np.float32)
    b = np.ones((5, 3), np.float32)
    with pytest.raises(ValueError, match="a_offsets"):
        cross_reference_batched(a, [0, 2, 3], b, [0, 1, 5], 0.5, impl=impl)
    with pytest.raises(ValueError, match="non-decreasing"):
        cross_reference_batched(a, [0, 3, 2, 4], b, [0, 1, 2, 5], 0.5, impl=impl)
    with pytest.raises(ValueError, match="session count"):
        cross_reference_batched(a, [0, 4], b, [0, 2, 5], 0.5, impl=impl)


def test_cross_reference_many_equals_single_calls():
    rng = np.random.default_rng(4)
    pairs = [(rng.standard_normal((n, 32)).astype(np.float32), rng.standard_normal((m, 32)).astype(np.float32))
             for n, m in [(3, 4), (0, 2), (6, 0), (50, 70)]]
    out = cross_reference_many(pairs, 0.25)
    assert len(out) == 4
    for (x, y), r in zip(pairs, out):
        assert_matches_reference(r, x, y, 0.25)
    assert cross_reference_many([], 0.25) == []
    with pytest.raises(ValueError, match="one d"):
        cross_reference_many([(np.ones((1, 3)), np.ones((1, 3))), (np.ones((1, 4)), np.ones((1, 4)))], 0.5)


def test_dispatch_choice_by_size(monkeypatch):
    small = np.ones((2, 3), np.float32)
    big = np.ones((200, 384), np.float32)
    native = "cpp" if cpu.have_native() else "numpy"
    assert dispatch.choose(big, big) == native
    monkeypatch.setattr(dispatch, "NUMPY_MAX_WORK", 1000)
    assert dispatch.choose(small, small) == "numpy"  # 2 * 2 * 3 < 1000
    assert dispatch.choose(big, big) == native
    np.testing.assert_array_equal(cross_reference(small, small, 0.5).argmax, [0, 0])
    monkeypatch.setattr(cpu, "_C", None)
    assert dispatch.choose(big, big) == "numpy"
    with pytest.raises(ValueError, match="impl"):
        cross_reference(small, small, 0.5, impl="fortran")
    lists = cross_reference([[1.0, 0.0], [0.0, 2.0]], [[0.0, 1.0], [3.0, 0.0]], 0.5)
    np.testing.assert_array_equal(lists.argmax, [1, 0])


def test_torch_cpu_tensors_round_trip():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    a = rng.standard_normal((40, 64)).astype(np.float32)
    b = rng.standard_normal((30, 64)).astype(np.float32)
    res = cross_reference(torch.from_numpy(a), torch.from_numpy(b), 0.1)
    assert isinstance(res.max_sim, torch.Tensor) and res.argmax.dtype == torch.int64
    ref = cross_reference_numpy(a, b, 0.1)
    np.testing.assert_allclose(res.max_sim.numpy(), ref.max_sim, atol=ATOL)
    np.testing.assert_array_equal(res.argmax.numpy(), ref.argmax)
    # torch matmul + max path (the CUDA fallback) on CPU tensors, with exact ties.
    ta = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    tb = torch.tensor([[0.0, 1.0], [2.0, 0.0], [1.0, 0.0]])
    r2 = cross_reference(ta, tb, 0.5, impl="torch")
    assert r2.argmax.tolist() == [1, 0] and r2.max_sim.tolist() == [1.0, 0.0]
    r3 = cross_reference(ta, tb[:0], 0.5, impl="torch")
    assert r3.argmax.tolist() == [-1, -1] and r3.matched.tolist() == [False, False]


def test_fallback_without_native_extension(monkeypatch, caplog):
    monkeypatch.setattr(cpu, "_C", None)
    monkeypatch.setattr(cpu, "_warned", False)
    assert not cpu.have_native() and cpu.native_isa() is None
    rng = np.random.default_rng(9)
    a = rng.standard_normal((30, 50)).astype(np.float32)
    b = rng.standard_normal((20, 50)).astype(np.float32)
    with caplog.at_level("INFO", logger="promem_fast.kernels.cpu"):
        res = cpu.cross_reference_cpu(a, b, 0.2)
    assert "not available" in caplog.text
    assert_matches_reference(res, a, b, 0.2)
    _, _, aa, ao, bb, bo = _random_batch(rng, BATCH_SIZES, 16)
    got = cpu.cross_reference_batched_cpu(aa, ao, bb, bo, 0.2)
    ref = cross_reference_batched_numpy(aa, ao, bb, bo, 0.2)
    np.testing.assert_array_equal(got.argmax, ref.argmax)
    np.testing.assert_array_equal(got.max_sim, ref.max_sim)


@needs_native
def test_generic_kernel_path_matches_reference():
    # The portable (non-AVX2) micro-kernel, forced with PROMEM_XREF_GENERIC in a child process.
    code = (
        "import numpy as np\n"
        "from promem_fast import _C\n"
        "from promem_fast.kernels.reference import cross_reference_numpy as ref\n"
        "assert _C.kernel_isa() == 'generic', _C.kernel_isa()\n"
        "rng = np.random.default_rng(0)\n"
        "a = rng.standard_normal((50, 300)).astype(np.float32)\n"
        "b = rng.standard_normal((70, 300)).astype(np.float32)\n"
        "mx, arg = _C.cross_reference(a, b)\n"
        "r = ref(a, b, 0.0)\n"
        "assert np.abs(mx - r.max_sim).max() < 1e-5\n"
        "assert (arg == r.argmax).all()\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PROMEM_XREF_GENERIC="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@needs_native
@pytest.mark.parametrize("n_threads", [1, 2])
def test_batched_native_float16_strided_mixed_sessions(n_threads):
    # Small sessions are packed inside their work item, large ones up front: mix both,
    # with float16 strided input (the scratch-row path) and several threads.
    rng = np.random.default_rng(31)
    sizes = [(4, 9), (130, 40), (0, 3), (50, 700), (7, 0), (96, 16), (97, 17)]
    n_tot, m_tot = sum(n for n, _ in sizes), sum(m for _, m in sizes)
    a = rng.standard_normal((n_tot, 2 * 200)).astype(np.float16)[:, ::2]
    b = rng.standard_normal((m_tot, 2 * 200)).astype(np.float16)[:, ::2]
    ao = np.concatenate([[0], np.cumsum([n for n, _ in sizes])])
    bo = np.concatenate([[0], np.cumsum([m for _, m in sizes])])
    res = cpu.cross_reference_batched_cpu(a, ao, b, bo, 0.1, n_threads=n_threads)
    ref = cross_reference_batched_numpy(a, ao, b, bo, 0.1)
    np.testing.assert_allclose(res.max_sim, ref.max_sim, atol=ATOL)
    assert (res.argmax == ref.argmax).mean() > 0.99  # float16 data: rare near-ties allowed
    np.testing.assert_array_equal(res.argmax[ao[4]:ao[5]], np.full(7, -1))
    one = cpu.cross_reference_batched_cpu(a, ao, b, bo, 0.1, n_threads=1)
    np.testing.assert_array_equal(res.argmax, one.argmax)
    np.testing.assert_array_equal(res.max_sim, one.max_sim)
