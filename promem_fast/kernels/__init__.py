"""Cross-reference kernels. ``cross_reference`` dispatches by device and size."""

from .reference import XrefResult, cross_reference_numpy, normalize_rows


def cross_reference(a, b, tau: float) -> XrefResult:
    """Dispatching entry point; see :func:`cross_reference_numpy` for the contract."""
    return cross_reference_numpy(a, b, tau)


__all__ = ["XrefResult", "cross_reference", "cross_reference_numpy", "normalize_rows"]
