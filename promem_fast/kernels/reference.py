"""NumPy reference of the cross-reference kernel: the test oracle and benchmark baseline."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class XrefResult(NamedTuple):
    """max_sim: float32 (n,); argmax: int64 (n,); matched: bool (n,) = max_sim > tau."""

    max_sim: np.ndarray
    argmax: np.ndarray
    matched: np.ndarray


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """float32 copy of x (n, d) with unit-L2 rows; zero rows stay zero (never NaN)."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def cross_reference_numpy(a: np.ndarray, b: np.ndarray, tau: float) -> XrefResult:
    """Cosine cross-reference matrix reduced per row (ProMem §3.3).

    Args:
        a: float32/float16 array, shape (n, d), unnormalised (e.g. events).
        b: float32/float16 array, shape (m, d), unnormalised (e.g. draft entries).
        tau: match threshold (tau_comp = 0.6 in the paper).

    Returns:
        XrefResult; for m = 0: max_sim 0.0, argmax -1, matched False. Ties break to
        the lowest column index (np.argmax).

    Raises:
        ValueError: if a or b is not 2-D or their d differ.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"a and b must be 2-D, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"dimension mismatch: a has d={a.shape[1]}, b has d={b.shape[1]}")
    n, m = a.shape[0], b.shape[0]
    if m == 0 or n == 0:
        return XrefResult(
            np.zeros(n, np.float32), np.full(n, -1, np.int64), np.zeros(n, bool)
        )
    s = normalize_rows(a) @ normalize_rows(b).T
    arg = np.argmax(s, axis=1).astype(np.int64)
    mx = s[np.arange(n), arg].astype(np.float32)
    return XrefResult(mx, arg, mx > tau)
