"""Triton cross-reference kernel: one fused launch over a ragged batch of sessions.

Each program owns BLOCK_M rows of one session's A. It walks that session's B in BLOCK_N
column blocks; per block it accumulates raw dot products and the squared norms of its A
rows and B columns in the same BLOCK_K loop (normalisation is fused: sim = a.b / (|a||b|),
0 where a norm is 0), then folds the block into a running max/argmax (ties: lowest column,
because blocks are visited in order and each block picks its lowest maximal column).
The n x m similarity matrix is never written.

Runs on CUDA tensors, or on CPU tensors under the Triton interpreter (tests/CI). Triton
builds its standard library (tl.zeros, ...) in interpreter mode only when
``TRITON_INTERPRET=1`` is set before ``triton`` is first imported, so set it in the
environment of the process (``TRITON_INTERPRET=1 pytest ...``).
"""

from __future__ import annotations

import logging
import os
from contextlib import nullcontext as _nullcontext

import numpy as np

from .reference import XrefResult

logger = logging.getLogger(__name__)

try:
    import torch
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - optional dependency ("gpu"/"test" extras)
    torch = triton = None

    class tl:
        constexpr = object

_KERNELS: dict[bool, object] = {}


def available() -> bool:
    """True when triton and torch import and there is a device to run on (CUDA or interpreter)."""
    if triton is None or torch is None:
        return False
    return interpreting() or torch.cuda.is_available()


def interpreting() -> bool:
    """True when kernels run in the Triton interpreter (CPU tensors allowed).

    Needs TRITON_INTERPRET=1 now *and* at the time triton was imported (its standard
    library functions are then InterpretedFunction objects).
    """
    if triton is None or os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
        return False
    return type(tl.zeros).__name__ == "InterpretedFunction"


def _xref_kernel_src(
    A, B, a_off, b_off, blk_sess, blk_row, out_max, out_arg,
    d, stride_am, stride_ak, stride_bn, stride_bk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    IEEE: tl.constexpr,
):
    pid = tl.program_id(0)
    sess = tl.load(blk_sess + pid)
    row0 = tl.load(blk_row + pid)  # first row of this block, local to the session
    a_begin = tl.load(a_off + sess)
    n = tl.load(a_off + sess + 1) - a_begin
    b_begin = tl.load(b_off + sess)
    m = tl.load(b_off + sess + 1) - b_begin

    rows = row0 + tl.arange(0, BLOCK_M)
    rmask = rows < n
    a_rows = A + (a_begin + rows).to(tl.int64)[:, None] * stride_am
    ks0 = tl.arange(0, BLOCK_K)
    best = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    best_j = tl.full((BLOCK_M,), -1, tl.int32)
    for c0 in range(0, m, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N)
        cmask = cols < m
        b_rows = B + (b_begin + cols).to(tl.int64)[:, None] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        a_sq = tl.zeros((BLOCK_M,), tl.float32)
        b_sq = tl.zeros((BLOCK_N,), tl.float32)
        for k0 in range(0, d, BLOCK_K):
            ks = k0 + ks0
            kmask = ks < d
            at = tl.load(a_rows + ks[None, :] * stride_ak, mask=rmask[:, None] & kmask[None, :], other=0.0)
            bt = tl.load(b_rows + ks[None, :] * stride_bk, mask=cmask[:, None] & kmask[None, :], other=0.0)
            if IEEE:
                acc = tl.dot(at, tl.trans(bt), acc, input_precision="ieee")
            else:
                acc = tl.dot(at, tl.trans(bt), acc)
            af = at.to(tl.float32)
            bf = bt.to(tl.float32)
            a_sq += tl.sum(af * af, 1)
            b_sq += tl.sum(bf * bf, 1)
        # Clamp before the divide so zero rows never produce inf/NaN, then zero them.
        inv_a = tl.where(a_sq > 0, 1.0 / tl.sqrt(tl.maximum(a_sq, 1e-37)), 0.0)
        inv_b = tl.where(b_sq > 0, 1.0 / tl.sqrt(tl.maximum(b_sq, 1e-37)), 0.0)
        sim = acc * inv_a[:, None] * inv_b[None, :]
        sim = tl.where(cmask[None, :], sim, float("-inf"))
        bmax = tl.max(sim, 1)
        bidx = tl.min(tl.where(sim == bmax[:, None], cols[None, :], 2147483647), 1)
        upd = bmax > best
        best = tl.where(upd, bmax, best)
        best_j = tl.where(upd, bidx, best_j)
    # m = 0 leaves best_j = -1: contract says max_sim 0.0 there.
    best = tl.where(best_j >= 0, best, 0.0)
    tl.store(out_max + a_begin + rows, best, mask=rmask)
    tl.store(out_arg + a_begin + rows, best_j.to(tl.int64), mask=rmask)


def _kernel():
    mode = interpreting()
    if mode not in _KERNELS:
        _KERNELS[mode] = triton.jit(_xref_kernel_src)
    return _KERNELS[mode]


def _as_tensor(x, name: str, device):
    if not isinstance(x, torch.Tensor):
        x = torch.from_numpy(np.asarray(x))
    if x.dim() != 2:
        raise ValueError(f"{name} must be 2-D (rows, d), got shape {tuple(x.shape)}")
    if x.dtype not in (torch.float32, torch.float16):
        x = x.to(torch.float32)
    return x.to(device) if device is not None else x


def cross_reference_batched_triton(
    a, a_offsets, b, b_offsets, tau: float, *,
    block_m: int | None = None, block_n: int | None = None, block_k: int | None = None,
    ieee: bool = True,
) -> XrefResult:
    """Ragged batch of cross-references in one Triton launch.

    Args:
        a: torch tensor or array, float32/float16, shape (sum n_s, d), any strides.
        a_offsets: int (S + 1,) session boundaries in a (start 0, end sum n_s).
        b: float32/float16, shape (sum m_s, d) on a's device; b_offsets likewise.
        tau: match threshold.
        block_m/n/k: tile sizes (>= 16, powers of two); defaults 64/64/64 on CUDA, 16/16/32
            in the interpreter.
        ieee: exact float32 products (no TF32) so results match the numpy reference.

    Returns:
        XrefResult of torch tensors on a's device: max_sim float32 (sum n_s,), argmax int64
        (local to the session's b rows, -1 if none), matched bool.

    Raises:
        RuntimeError: triton/torch missing, or no CUDA device and not interpreting.
        ValueError: bad shapes or offsets.
    """
    if not available():
        raise RuntimeError("Triton cross-reference needs triton+torch and CUDA (or TRITON_INTERPRET=1)")
    device = a.device if isinstance(a, torch.Tensor) else None
    a = _as_tensor(a, "a", device)
    b = _as_tensor(b, "b", a.device)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"dimension mismatch: a has d={a.shape[1]}, b has d={b.shape[1]}")
    if a.device.type != "cuda" and not interpreting():
        raise RuntimeError(
            "Triton cross-reference on CPU tensors needs the interpreter: set TRITON_INTERPRET=1 "
            "before triton is imported"
        )
    if a.dtype != b.dtype:  # tl.dot needs one input dtype
        a, b = a.to(torch.float32), b.to(torch.float32)
    ao = np.asarray(a_offsets.cpu() if isinstance(a_offsets, torch.Tensor) else a_offsets, np.int64)
    bo = np.asarray(b_offsets.cpu() if isinstance(b_offsets, torch.Tensor) else b_offsets, np.int64)
    from .reference import _check_offsets

    ao = _check_offsets(ao, a.shape[0], "a_offsets")
    bo = _check_offsets(bo, b.shape[0], "b_offsets")
    if ao.size != bo.size:
        raise ValueError(f"a_offsets and b_offsets differ in session count: {ao.size - 1} vs {bo.size - 1}")
    interp = a.device.type != "cuda"
    bm = block_m or (16 if interp else 64)
    bn = block_n or (16 if interp else 64)
    bk = block_k or (32 if interp else 64)
    total = a.shape[0]
    out_max = torch.zeros(total, dtype=torch.float32, device=a.device)
    out_arg = torch.full((total,), -1, dtype=torch.int64, device=a.device)
    # Flattened (session, row-block) table: grid size is exact, no idle programs.
    n_s = np.diff(ao)
    counts = -(-n_s // bm)  # row blocks per session
    n_blocks = int(counts.sum())
    d = a.shape[1]
    if n_blocks and d > 0:
        first = np.repeat(np.cumsum(counts) - counts, counts)
        sess = torch.from_numpy(np.repeat(np.arange(n_s.size), counts).astype(np.int32)).to(a.device)
        row = torch.from_numpy(((np.arange(n_blocks) - first) * bm).astype(np.int32)).to(a.device)
        a_off_t = torch.from_numpy(ao).to(a.device)
        b_off_t = torch.from_numpy(bo).to(a.device)
        with torch.cuda.device(a.device) if a.device.type == "cuda" else _nullcontext():
            _kernel()[(n_blocks,)](
                a, b, a_off_t, b_off_t, sess, row, out_max, out_arg,
                d, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                # The precision flag only matters for float32 operands (TF32 vs exact).
                BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, IEEE=bool(ieee and a.dtype == torch.float32),
            )
    elif d == 0:  # every similarity is 0: argmax 0 where the session has b rows
        m_s = np.diff(bo)
        fill = np.repeat(np.where(m_s > 0, 0, -1), n_s)
        out_arg = torch.from_numpy(fill.astype(np.int64)).to(a.device)
    return XrefResult(out_max, out_arg, out_max > tau)


def cross_reference_triton(a, b, tau: float, **kw) -> XrefResult:
    """Single-session form of :func:`cross_reference_batched_triton` (same arguments, no offsets)."""
    n = a.shape[0]
    m = b.shape[0]
    return cross_reference_batched_triton(a, [0, n], b, [0, m], tau, **kw)
