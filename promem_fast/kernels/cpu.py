"""C++ cross-reference kernel (``promem_fast._C``) with a numpy fallback.

The extension is optional: when it was not built (or fails to import) every function here
falls back to :mod:`promem_fast.kernels.reference` and logs that once.
"""

from __future__ import annotations

import logging

import numpy as np

from .reference import (
    XrefResult,
    _check_offsets,
    cross_reference_batched_numpy,
    cross_reference_numpy,
)

logger = logging.getLogger(__name__)

try:  # built by setup.py from csrc/
    from .. import _C  # type: ignore[attr-defined]
except ImportError as exc:  # pragma: no cover - exercised through monkeypatch in tests
    _C = None
    _IMPORT_ERROR: str | None = str(exc)
else:
    _IMPORT_ERROR = None

_warned = False


def have_native() -> bool:
    """True when the C++ extension is importable."""
    return _C is not None


def native_isa() -> str | None:
    """Inner kernel the extension picked at runtime ('avx2_fma' / 'generic'), None without it."""
    return _C.kernel_isa() if _C is not None else None


def _fallback_note() -> None:
    global _warned
    if not _warned:
        logger.info("promem_fast._C not available (%s); using the numpy cross-reference", _IMPORT_ERROR)
        _warned = True


def _as_kernel_input(x, name: str) -> np.ndarray:
    """float32/float16 numpy view of x (any strides kept); other dtypes become float32."""
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, d), got shape {x.shape}")
    if x.dtype not in (np.float32, np.float16):
        x = x.astype(np.float32)
    return x


def cross_reference_cpu(a, b, tau: float, *, n_threads: int = 0) -> XrefResult:
    """Cross-reference on the CPU with the C++ kernel (contract: :func:`cross_reference_numpy`).

    Args:
        a: float32/float16 array (n, d), any strides, unnormalised.
        b: float32/float16 array (m, d).
        tau: match threshold; matched = max_sim > tau.
        n_threads: worker threads, <= 0 for all cores (small problems use one).

    Returns:
        XrefResult(max_sim float32 (n,), argmax int64 (n,), matched bool (n,)).

    Raises:
        ValueError: a or b not 2-D, or d differs.
    """
    a = _as_kernel_input(a, "a")
    b = _as_kernel_input(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"dimension mismatch: a has d={a.shape[1]}, b has d={b.shape[1]}")
    if _C is None:
        _fallback_note()
        return cross_reference_numpy(a, b, tau)
    mx, arg = _C.cross_reference(a, b, int(n_threads))
    return XrefResult(mx, arg, mx > tau)


def cross_reference_batched_cpu(a, a_offsets, b, b_offsets, tau: float, *, n_threads: int = 0) -> XrefResult:
    """Ragged batch over sessions in one native call (contract: :func:`cross_reference_batched_numpy`).

    Args:
        a: float32/float16 (sum n_s, d); a_offsets: int64 (S + 1,) session boundaries in a.
        b: float32/float16 (sum m_s, d); b_offsets: int64 (S + 1,).
        tau: match threshold.

    Returns:
        XrefResult over all rows of a; argmax local to each session's b rows (-1 if none).

    Raises:
        ValueError: bad shapes or offsets.
    """
    a = _as_kernel_input(a, "a")
    b = _as_kernel_input(b, "b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"dimension mismatch: a has d={a.shape[1]}, b has d={b.shape[1]}")
    ao = _check_offsets(a_offsets, a.shape[0], "a_offsets")
    bo = _check_offsets(b_offsets, b.shape[0], "b_offsets")
    if ao.size != bo.size:
        raise ValueError(f"a_offsets and b_offsets differ in session count: {ao.size - 1} vs {bo.size - 1}")
    if _C is None:
        _fallback_note()
        return cross_reference_batched_numpy(a, ao, b, bo, tau)
    mx, arg = _C.cross_reference_batched(a, b, ao, bo, int(n_threads))
    return XrefResult(mx, arg, mx > tau)
