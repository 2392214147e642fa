"""Picks a cross-reference implementation by where the data lives and how big it is.

Rules (thresholds measured with benchmarks/bench_xref.py on the 2-core dev CPU; numbers in
benchmarks/results/xref_cpu.jsonl, the line with kind "crossover"):

* CUDA torch tensors -> Triton (one fused launch); torch matmul + max when triton is
  missing. Data already on the GPU stays there; CPU data is never shipped to the GPU for
  this kernel (FAISS's guidance: small problems belong on the CPU unless the data is
  already on the GPU; a session's cross-reference is a few hundred rows).
* Everything else runs on the CPU: the C++ kernel when the extension is built, else the
  numpy reference. The numpy-for-tiny-problems cut-off (NUMPY_MAX_WORK, in n * m * d) is 0
  by default because the bench's crossover sweep found the native call faster at every
  size down to 1 x 1 x 384 on the dev CPU (about 6 us vs 30 us per call at 1 x 1, 65 us
  vs 210 us at 64 x 64; numpy pays for its normalise/GEMM/argmax temporaries); raise it with PROMEM_XREF_NUMPY_MAX_WORK where
  a machine measures otherwise. The C++ kernel itself runs single-threaded below ~1M
  multiply-adds per thread (thread start-up costs more than it saves).

Output type follows input type: numpy in -> numpy XrefResult, torch in -> torch tensors on
the input's device.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from . import cpu
from .reference import XrefResult, cross_reference_batched_numpy, cross_reference_numpy

logger = logging.getLogger(__name__)

# Below this many multiply-adds (n * m * d) use the numpy reference; 0 = never (measured,
# see the module docstring). Override with PROMEM_XREF_NUMPY_MAX_WORK.
NUMPY_MAX_WORK = int(os.environ.get("PROMEM_XREF_NUMPY_MAX_WORK", "0"))

IMPLS = ("numpy", "cpp", "triton", "torch")


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "device")


def choose(a, b) -> str:
    """Name of the implementation :func:`cross_reference` would use for (a, b)."""
    if _is_torch(a) and a.device.type == "cuda":
        from . import xref_triton

        return "triton" if xref_triton.available() else "torch"
    d = a.shape[1] if len(a.shape) == 2 else 0
    work = a.shape[0] * (b.shape[0] if len(b.shape) else 0) * d
    if not cpu.have_native() or work < NUMPY_MAX_WORK:
        return "numpy"
    return "cpp"


def _torch_xref(a, b, tau, a_offsets=None, b_offsets=None) -> XrefResult:
    """torch matmul + max (fallback on CUDA without triton; benchmark baseline)."""
    import torch

    def one(x, y):
        n, m = x.shape[0], y.shape[0]
        if m == 0 or n == 0:
            return (torch.zeros(n, dtype=torch.float32, device=x.device),
                    torch.full((n,), -1, dtype=torch.int64, device=x.device))
        xn = torch.nn.functional.normalize(x.float(), dim=1)  # zero rows stay zero (eps clamp)
        yn = torch.nn.functional.normalize(y.float(), dim=1)
        s = xn @ yn.T
        mx = s.max(dim=1).values
        idx = torch.arange(m, device=x.device).expand(n, m)
        arg = torch.where(s == mx[:, None], idx, m).min(dim=1).values  # ties -> lowest index
        return mx, arg

    if a_offsets is None:
        mx, arg = one(a, b)
    else:
        parts = [one(a[a_offsets[s]:a_offsets[s + 1]], b[b_offsets[s]:b_offsets[s + 1]])
                 for s in range(len(a_offsets) - 1)]
        if parts:
            mx = torch.cat([p[0] for p in parts])
            arg = torch.cat([p[1] for p in parts])
        else:
            mx = torch.zeros(0, dtype=torch.float32, device=a.device)
            arg = torch.zeros(0, dtype=torch.int64, device=a.device)
    return XrefResult(mx, arg, mx > tau)


def _to_numpy(x):
    """numpy view of a torch tensor (bfloat16 and other dtypes numpy lacks become float32)."""
    if _is_torch(x):
        import torch

        x = x.detach().cpu()
        if x.is_floating_point() and x.dtype not in (torch.float16, torch.float32):
            x = x.float()
        return x.numpy()
    return x


def _wrap_like(res: XrefResult, like) -> XrefResult:
    if _is_torch(like):
        import torch

        return XrefResult(*(torch.from_numpy(np.ascontiguousarray(f)) for f in res))
    return res


def _prepare(a, b, impl: str | None):
    """(a, b, impl) ready for dispatch: non-torch inputs as numpy arrays (torch tensors kept
    on their device), and ``impl`` or, when None, :func:`choose`'s pick for their size."""
    if not _is_torch(a):
        a = np.asarray(a)
    if not _is_torch(b):
        b = np.asarray(b)
    return a, b, impl or choose(a, b)


def cross_reference(a, b, tau: float, *, impl: str | None = None) -> XrefResult:
    """Row-wise max cosine similarity of a against b, by the best implementation here.

    Args:
        a: float32/float16 numpy array or torch tensor, shape (n, d), unnormalised
           (e.g. extracted events; ProMem §3.3 completeness check).
        b: same type and device, shape (m, d) (e.g. draft memory entries).
        tau: match threshold (tau_comp = 0.6 in the paper).
        impl: force one of "numpy", "cpp", "triton", "torch"; None = :func:`choose`.

    Returns:
        XrefResult(max_sim float32 (n,), argmax int64 (n,), matched bool (n,) = max_sim > tau);
        zero rows score 0; m = 0 gives 0.0 / -1 / False; ties break to the lowest index.

    Raises:
        ValueError: not 2-D, d differs, or unknown impl.
    """
    a, b, impl = _prepare(a, b, impl)
    if impl == "triton":
        from .xref_triton import cross_reference_triton

        return cross_reference_triton(a, b, tau)
    if impl == "torch":
        import torch

        return _torch_xref(torch.as_tensor(a), torch.as_tensor(b), tau)
    if impl == "cpp":
        return _wrap_like(cpu.cross_reference_cpu(_to_numpy(a), _to_numpy(b), tau), a)
    if impl == "numpy":
        return _wrap_like(cross_reference_numpy(_to_numpy(a), _to_numpy(b), tau), a)
    raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")


def cross_reference_batched(a, a_offsets, b, b_offsets, tau: float, *, impl: str | None = None) -> XrefResult:
    """Ragged batch over sessions: session s pairs a[a_offsets[s]:a_offsets[s+1]] with
    b[b_offsets[s]:b_offsets[s+1]], all in one kernel call.

    Args:
        a: (sum n_s, d) float32/float16 array or tensor; a_offsets: int (S + 1,), 0 .. sum n_s.
        b: (sum m_s, d); b_offsets: int (S + 1,), 0 .. sum m_s.
        tau: match threshold.
        impl: as in :func:`cross_reference` (the choice uses the whole batch's size).

    Returns:
        XrefResult over all rows of a; argmax is local to the session's b rows (-1 if none).

    Raises:
        ValueError: bad shapes or offsets, or unknown impl.
    """
    a, b, impl = _prepare(a, b, impl)
    if impl == "triton":
        from .xref_triton import cross_reference_batched_triton

        return cross_reference_batched_triton(a, a_offsets, b, b_offsets, tau)
    if impl == "torch":
        import torch

        ao = [int(x) for x in a_offsets]
        bo = [int(x) for x in b_offsets]
        return _torch_xref(torch.as_tensor(a), torch.as_tensor(b), tau, ao, bo)
    if impl == "cpp":
        res = cpu.cross_reference_batched_cpu(_to_numpy(a), _to_numpy(a_offsets), _to_numpy(b),
                                              _to_numpy(b_offsets), tau)
        return _wrap_like(res, a)
    if impl == "numpy":
        res = cross_reference_batched_numpy(_to_numpy(a), _to_numpy(a_offsets), _to_numpy(b),
                                            _to_numpy(b_offsets), tau)
        return _wrap_like(res, a)
    raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")


def cross_reference_many(pairs, tau: float, *, impl: str | None = None) -> list[XrefResult]:
    """Cross-references for many sessions at once: [(a_s, b_s), ...] -> [XrefResult_s, ...].

    Concatenates the sessions and makes one batched call (one native call / one launch),
    which is what the engine uses when it batches sessions.

    Args:
        pairs: sequence of (a_s (n_s, d), b_s (m_s, d)) numpy arrays, one d for all.
        tau: match threshold.
        impl: as in :func:`cross_reference`.

    Returns:
        One XrefResult per session, argmax local to that session's b.

    Raises:
        ValueError: sessions disagree on d, or arrays are not 2-D.
    """
    pairs = list(pairs)
    if not pairs:
        return []
    a_list = [np.asarray(_to_numpy(p[0])) for p in pairs]
    b_list = [np.asarray(_to_numpy(p[1])) for p in pairs]
    for s, (x, y) in enumerate(zip(a_list, b_list)):
        if x.ndim != 2 or y.ndim != 2:
            raise ValueError(f"session {s}: a and b must be 2-D, got {x.shape} and {y.shape}")
    ds = {x.shape[1] for x in a_list} | {y.shape[1] for y in b_list}
    if len(ds) != 1:
        raise ValueError(f"all sessions must share one d, got {sorted(ds)}")
    dtype = np.float16 if all(x.dtype == np.float16 for x in a_list + b_list) else np.float32
    a = np.concatenate([x.astype(dtype, copy=False) for x in a_list])
    b = np.concatenate([y.astype(dtype, copy=False) for y in b_list])
    ao = np.concatenate([[0], np.cumsum([x.shape[0] for x in a_list])]).astype(np.int64)
    bo = np.concatenate([[0], np.cumsum([y.shape[0] for y in b_list])]).astype(np.int64)
    res = cross_reference_batched(a, ao, b, bo, tau, impl=impl)
    return [XrefResult(*(f[ao[s]:ao[s + 1]] for f in res)) for s in range(len(pairs))]
