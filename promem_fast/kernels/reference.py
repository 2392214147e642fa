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


def _check_offsets(offsets, rows: int, name: str) -> np.ndarray:
    off = np.asarray(offsets, dtype=np.int64)
    if off.ndim != 1 or off.size < 1:
        raise ValueError(f"{name} must be 1-D with S + 1 >= 1 entries, got shape {off.shape}")
    if off[0] != 0 or off[-1] != rows:
        raise ValueError(f"{name} must start at 0 and end at {rows}, got {off[0]}..{off[-1]}")
    if np.any(np.diff(off) < 0):
        raise ValueError(f"{name} must be non-decreasing")
    return off


def cross_reference_batched_numpy(
    a: np.ndarray, a_offsets, b: np.ndarray, b_offsets, tau: float
) -> XrefResult:
    """Ragged batch of cross-references, one per session (reference for the batched kernels).

    Args:
        a: float32/float16, shape (sum n_s, d): the sessions' A rows concatenated.
        a_offsets: int64 (S + 1,), a_offsets[0] = 0, a_offsets[S] = sum n_s.
        b: float32/float16, shape (sum m_s, d); b_offsets likewise.
        tau: match threshold.

    Returns:
        XrefResult over all A rows; argmax is local to the session's B rows (-1 if none).

    Raises:
        ValueError: bad shapes or offsets (not 1-D, not starting at 0 / ending at the row
            count, decreasing, or different session counts).
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"a and b must be 2-D, got shapes {a.shape} and {b.shape}")
    ao = _check_offsets(a_offsets, a.shape[0], "a_offsets")
    bo = _check_offsets(b_offsets, b.shape[0], "b_offsets")
    if ao.size != bo.size:
        raise ValueError(f"a_offsets and b_offsets differ in session count: {ao.size - 1} vs {bo.size - 1}")
    parts = [
        cross_reference_numpy(a[ao[s] : ao[s + 1]], b[bo[s] : bo[s + 1]], tau)
        for s in range(ao.size - 1)
    ]
    if not parts:
        return XrefResult(np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, bool))
    return XrefResult(*(np.concatenate(f) for f in zip(*parts)))


def knn_numpy(query: np.ndarray, base: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-k (reference for :func:`promem_fast.kernels.knn.knn`).

    Args:
        query: float array (q, d); base: float array (m, d); both unnormalised.
        k: number of neighbours, >= 0.

    Returns:
        (scores float32 (q, k), ids int64 (q, k)), best first, ties to the lowest id;
        columns beyond m are padded with score -inf and id -1.

    Raises:
        ValueError: bad shapes or negative k.
    """
    query = np.asarray(query)
    base = np.asarray(base)
    if query.ndim != 2 or base.ndim != 2 or query.shape[1] != base.shape[1]:
        raise ValueError(f"query (q, d) and base (m, d) must share d, got {query.shape} and {base.shape}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    q, m = query.shape[0], base.shape[0]
    scores = np.full((q, k), -np.inf, np.float32)
    ids = np.full((q, k), -1, np.int64)
    kk = min(k, m)
    if kk and q:
        s = normalize_rows(query) @ normalize_rows(base).T
        order = np.argsort(-s, axis=1, kind="stable")[:, :kk]
        ids[:, :kk] = order
        scores[:, :kk] = np.take_along_axis(s, order, axis=1)
    return scores, ids
