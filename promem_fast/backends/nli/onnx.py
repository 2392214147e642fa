"""ONNX Runtime NLI backend (hallucination verification, ProMem §3.4).

The paper verifies each memory entry (hypothesis) against its source turn (premise) with
roberta-large-mnli. Here a *local* sequence-classification checkpoint (``NLIConfig.model_dir``)
is exported to ONNX once with optimum (cached, see :mod:`promem_fast.onnx_export`) and run
with ONNX Runtime through :class:`~.batching.NLIBatchEngine` (dedup, premise windows,
length-sorted batches, OOM halving).

Per-device defaults: CPU runs the graph after ORT's transformer fusion with int8 dynamically
quantised weights, in length-sorted batches of up to 16 rows of similar length (<= 15%
padding per row, no pad rounding); CUDA runs an fp16 model with IO binding in token-budget batches padded to 8;
``provider="tensorrt"`` runs the fp32 graph through the TensorRT EP with fp16 enabled.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ...onnx_export import (
    check_model_dir,
    converted_fp16,
    export_onnx,
    fused_transformer,
    quantized_int8,
)
from ..base import NLIResult
from .batching import NLIBatchEngine, OrtRunner, device_policy, label_index_from_config

logger = logging.getLogger(__name__)

# int8 dynamic quantisation on CPU by default: benchmarks/results/nli_cpu.jsonl (roberta-base
# shape, 48 pairs, 2 shared cores): fused fp32 0.90 pairs/s, fused int8 1.53 (same batches),
# naive torch per pair 0.19. Dynamic int8 BERT-family models are commonly reported within
# about a point of fp32 accuracy; not measured here (no MNLI checkpoint offline). Set
# NLIConfig.quantize=False for exact fp32.
CPU_QUANTIZE_DEFAULT = True

_ROBERTA_LIKE = {"roberta", "xlm-roberta", "camembert", "longformer"}  # position ids start at pad+1


def resolve_provider(provider: str) -> str:
    """``auto`` -> ``cuda`` when onnxruntime has the CUDA EP, else ``cpu``; others unchanged.

    Raises:
        ValueError: not one of auto | cpu | cuda | tensorrt (names NLIConfig.provider).
    """
    if provider not in ("auto", "cpu", "cuda", "tensorrt"):
        raise ValueError(f"NLIConfig.provider={provider!r}; expected auto | cpu | cuda | tensorrt")
    if provider != "auto":
        return provider
    import onnxruntime as ort

    return "cuda" if "CUDAExecutionProvider" in ort.get_available_providers() else "cpu"


def _position_limit(model_dir: Path, tokenizer) -> int:
    cfg = json.loads((model_dir / "config.json").read_text())
    limit = int(cfg.get("max_position_embeddings", 512))
    if cfg.get("model_type") in _ROBERTA_LIKE:
        limit -= 2
    tml = getattr(tokenizer, "model_max_length", None)
    if isinstance(tml, int) and 0 < tml < limit:
        limit = tml
    return limit


class OnnxNLI:
    """NLI on ONNX Runtime (registry name ``"onnx"``).

    Args:
        cfg: NLIConfig. ``model_dir`` (required) is a local sequence-classification model
            directory whose ``config.id2label`` names entailment / neutral / contradiction
            (any case, any order). ``quantize`` None = int8 on CPU, off on CUDA.
        cache_dir: cache root for the export when ``cfg.cache_dir`` is unset.
        threads: ORT intra-op threads on CPU (default: ORT's choice, all physical cores).
        policy: override the per-device :class:`~.batching.BatchPolicy`.
        fuse: run ORT's offline transformer fusion before (optional) quantisation; None =
            on for CPU (fused Attention quantises to QAttention), off for CUDA/TensorRT.

    Raises:
        ValueError: no model_dir, or the model's head is not a 3-way NLI head.
        FileNotFoundError: model_dir is not a local model directory.
        RuntimeError: export failed, or the provider is not in this onnxruntime build.
    """

    name = "onnx"

    def __init__(
        self, cfg, cache_dir=None, threads: Optional[int] = None, policy=None, fuse: Optional[bool] = None, **_: object
    ):
        from transformers import AutoTokenizer

        if not cfg.model_dir:
            raise ValueError(
                "NLIConfig.model_dir is required for the onnx NLI backend (a local MNLI sequence-"
                "classification model directory, e.g. roberta-large-mnli); or use backend='llm'"
            )
        model_dir = check_model_dir(cfg.model_dir, "nli.model_dir")
        id2label = json.loads((model_dir / "config.json").read_text()).get("id2label", {})
        label_index = label_index_from_config(id2label, f"{model_dir}/config.json id2label")
        provider = resolve_provider(cfg.provider)
        device = "cpu" if provider == "cpu" else "cuda"
        quantize = cfg.quantize if cfg.quantize is not None else (device == "cpu" and CPU_QUANTIZE_DEFAULT)
        if quantize and device != "cpu":
            logger.warning("NLIConfig.quantize=True ignored on %s: dynamic int8 is a CPU path", provider)
            quantize = False
        onnx_path = export_onnx(model_dir, "text-classification", cache_dir=cfg.cache_dir or cache_dir)
        self.fp32_path = onnx_path
        fuse = (device == "cpu") if fuse is None else bool(fuse)
        if fuse:
            onnx_path = fused_transformer(onnx_path)
        if quantize:
            onnx_path = quantized_int8(onnx_path, "model_fused_int8.onnx" if fuse else "model_int8.onnx")
        elif provider == "cuda":
            onnx_path = converted_fp16(onnx_path)
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        self.runner = OrtRunner(
            onnx_path, provider, "logits", threads=threads, trt_cache_dir=onnx_path.parent / "trt"
        )
        max_length = min(int(cfg.max_length), _position_limit(model_dir, tokenizer))
        if max_length < cfg.max_length:
            logger.info("NLI max_length capped at %d by the model's positions", max_length)
        self.engine = NLIBatchEngine(
            tokenizer,
            self.runner,
            label_index,
            max_length=max_length,
            window_stride=cfg.window_stride,
            policy=policy or device_policy(device, cfg.batch_tokens),
            use_token_type_ids="token_type_ids" in self.runner.input_names,
        )
        self.cfg = cfg
        self.provider = provider
        self.quantized = bool(quantize)
        self.fused = fuse
        self.onnx_path = onnx_path
        self.model_name = f"onnx:{model_dir.name}" + ("-int8" if quantize else "-fp16" if provider == "cuda" else "")

    def classify_sync(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        """Blocking :meth:`classify`."""
        return self.engine.run(list(pairs))

    async def classify(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        """pairs: (premise = source turn, hypothesis = memory entry). Results in input order.

        Each result's ``probs`` maps entailment / neutral / contradiction to probabilities
        (of the best premise window when the premise was split). The ORT run is blocking,
        so it goes to a worker thread.
        """
        if not pairs:
            return []
        return await asyncio.to_thread(self.engine.run, list(pairs))

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Raw logits, float32 (windows, 3) in the model's label order, one row per window
        of each pair (pairs not deduplicated; windows in input order)."""
        return self.engine.score_windows(list(pairs))[1]
