"""Cosine top-k retrieval with FAISS (``IndexFlatIP`` on L2-normalised rows).

Used for top-k memory retrieval in QA and for detail matching. Exact search: rows are
normalised (zero rows stay zero, so their scores are 0), then inner product = cosine.
GPU resources are used when the faiss build has them and the problem is large; FAISS's
own guidance is that small searches are faster on the CPU unless data already lives on
the GPU. Without faiss the numpy reference (:func:`knn_numpy`) answers.
"""

from __future__ import annotations

import logging

import numpy as np

from .reference import knn_numpy, normalize_rows

logger = logging.getLogger(__name__)

try:
    import faiss  # faiss-cpu (embedded extra) or faiss-gpu-cu12 (gpu extra)
except ImportError:  # pragma: no cover - optional dependency
    faiss = None

# q * m * d multiply-adds above which a GPU search pays for the host->device copies.
GPU_MIN_WORK = 1 << 30

_gpu_res = None


def faiss_gpus() -> int:
    """Number of GPUs faiss can use (0 for faiss-cpu or no faiss)."""
    if faiss is None or not hasattr(faiss, "get_num_gpus"):
        return 0
    try:
        return int(faiss.get_num_gpus())
    except RuntimeError:  # pragma: no cover - broken CUDA setup counts as no GPU
        logger.warning("faiss.get_num_gpus() failed; searching on the CPU")
        return 0


def _gpu_resources():
    global _gpu_res
    if _gpu_res is None:
        _gpu_res = faiss.StandardGpuResources()
    return _gpu_res


def _check(query, base, k):
    query = np.asarray(query)
    base = np.asarray(base)
    if query.ndim != 2 or base.ndim != 2:
        raise ValueError(f"query and base must be 2-D, got shapes {query.shape} and {base.shape}")
    if query.shape[1] != base.shape[1]:
        raise ValueError(f"dimension mismatch: query has d={query.shape[1]}, base has d={base.shape[1]}")
    if int(k) < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    return query, base, int(k)


class CosineIndex:
    """Exact cosine index over a fixed base, for many top-k queries against it.

    Args:
        base: float array (m, d), unnormalised (e.g. memory entry embeddings).
        use_gpu: None = decide per search by size and GPU presence; True/False to force.

    Raises:
        ValueError: base not 2-D.
    """

    def __init__(self, base, use_gpu: bool | None = None):
        base = np.asarray(base)
        if base.ndim != 2:
            raise ValueError(f"base must be 2-D (m, d), got shape {base.shape}")
        self.m, self.d = base.shape
        self._base = np.ascontiguousarray(normalize_rows(base))
        self._use_gpu = use_gpu
        self._cpu_index = None
        self._gpu_index = None

    def _index(self, gpu: bool):
        if gpu:
            if self._gpu_index is None:
                self._gpu_index = faiss.GpuIndexFlatIP(_gpu_resources(), self.d)
                self._gpu_index.add(self._base)
            return self._gpu_index
        if self._cpu_index is None:
            self._cpu_index = faiss.IndexFlatIP(self.d)
            self._cpu_index.add(self._base)
        return self._cpu_index

    def search(self, query, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k by cosine similarity.

        Args:
            query: float array (q, d), unnormalised.
            k: neighbours per query; searches min(k, m), pads the rest.

        Returns:
            (scores float32 (q, k), ids int64 (q, k)), best first; padding has score -inf
            and id -1.

        Raises:
            ValueError: query not 2-D, d differs, or k < 0.
        """
        query, _, k = _check(query, np.empty((0, self.d), np.float32), k)
        q = query.shape[0]
        scores = np.full((q, k), -np.inf, np.float32)
        ids = np.full((q, k), -1, np.int64)
        kk = min(k, self.m)
        if kk == 0 or q == 0:
            return scores, ids
        if faiss is None or self.d == 0:
            return knn_numpy(query, self._base, k)
        gpu = self._use_gpu
        if gpu is None:
            gpu = faiss_gpus() > 0 and q * self.m * self.d >= GPU_MIN_WORK
        qn = np.ascontiguousarray(normalize_rows(query))
        D, I = self._index(bool(gpu)).search(qn, kk)
        scores[:, :kk] = D
        ids[:, :kk] = I
        # FAISS marks missing results with id -1 (not expected for flat search): keep -inf there.
        scores[ids < 0] = -np.inf
        return scores, ids


def knn(query, base, k: int, *, use_gpu: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-k of each query row among the base rows (FAISS ``IndexFlatIP``).

    Args:
        query: float32/float16 array (q, d), unnormalised.
        base: float32/float16 array (m, d), unnormalised.
        k: neighbours per query (k > m is clipped to m and padded).
        use_gpu: None = GPU only when faiss has one and q * m * d >= GPU_MIN_WORK.

    Returns:
        (scores float32 (q, k), ids int64 (q, k)), best first; columns beyond m have
        score -inf and id -1. Ties may come in any order among equal scores (FAISS).

    Raises:
        ValueError: not 2-D, d differs, or k < 0.
    """
    query, base, k = _check(query, base, k)
    return CosineIndex(base, use_gpu=use_gpu).search(query, k)
