"""Feature-hashing bag-of-words embedder: deterministic, model-free; for tests only."""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

_WORD = re.compile(r"\w+", re.U)


class HashEmbedder:
    """Embeds lower-cased word unigrams into ``dim`` buckets (signed hashing), L2-normalised.

    Texts sharing words have positive cosine; a text with no words is a zero vector.
    """

    name = "hash"
    model_name = "hash-bow"

    def __init__(self, cfg=None, dim: int = 256, **_: object):
        self.dim = dim

    def encode_sync(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in _WORD.findall(t.lower()):
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, n, out=np.zeros_like(out), where=n > 0)

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_sync(texts)
