"""argparse value types shared by the command lines (``promem-fast`` and ``python -m promem_fast.bulk``)."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A whole number >= 1. Raises argparse.ArgumentTypeError naming the bad value."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def nonneg_float(text: str) -> float:
    """A number >= 0. Raises argparse.ArgumentTypeError naming the bad value."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {v:g}")
    return v
