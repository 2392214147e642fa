"""Cross-reference kernels. ``cross_reference`` dispatches by device and size.

Implementations: numpy reference (:mod:`.reference`), C++ via pybind11 (:mod:`.cpu`,
``promem_fast._C``), Triton (:mod:`.xref_triton`), FAISS top-k (:mod:`.knn`); the
dispatcher (:mod:`.dispatch`) picks one.
"""

from .dispatch import (
    choose,
    cross_reference,
    cross_reference_batched,
    cross_reference_many,
)
from .reference import (
    XrefResult,
    cross_reference_batched_numpy,
    cross_reference_numpy,
    knn_numpy,
    normalize_rows,
)

# FAISS top-k lives in promem_fast.kernels.knn (imported on demand: faiss is heavy).


__all__ = [
    "XrefResult",
    "choose",
    "cross_reference",
    "cross_reference_batched",
    "cross_reference_batched_numpy",
    "cross_reference_many",
    "cross_reference_numpy",
    "knn_numpy",
    "normalize_rows",
]
