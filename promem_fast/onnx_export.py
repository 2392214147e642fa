"""Export a local Hugging Face model directory to ONNX once, and cache the result.

Used by the ONNX NLI backend (roberta-large-mnli, ProMem §3.4) and the ONNX sentence
embedder (all-MiniLM-L6-v2). The cache key is a hash of the model directory's
``config.json`` plus the names, sizes and mtimes of its weight files, the export task
and the opset, so a changed checkpoint is re-exported and an unchanged one never is.

Layout under the cache root (``$PROMEM_FAST_CACHE`` or ``~/.cache/promem_fast``)::

    onnx/<model-dir-name>-<task>-<hash16>/model.onnx          fp32 export (optimum)
                                         /model_int8.onnx     dynamic int8 (on demand)
                                         /model_fp16.onnx     fp16 for CUDA (on demand)
                                         /model_fused.onnx    ORT transformer fusion (on demand)
                                         /model_fused_int8.onnx  int8 of the fused graph

Exports are written to a temporary directory and renamed into place under a file lock,
so concurrent processes neither race nor read half-written files. No model hub is ever
contacted: only local directories are accepted.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Optional, Union

from .models import cache_root

logger = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx")
DEFAULT_OPSET = 18  # optimum's recommended minimum for transformer encoders


def check_model_dir(model_dir: PathLike, field: str = "model_dir") -> Path:
    """Return ``model_dir`` as a Path after checking it holds a Hugging Face ``config.json``.

    Raises:
        FileNotFoundError: the directory or its config.json is missing (the message names
            ``field`` and says that hub ids are not accepted).
    """
    path = Path(model_dir).expanduser()
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"{field}={str(model_dir)!r} is not a local model directory with a config.json "
            "(hub ids are not fetched: download the model and point the config at its folder)"
        )
    return path.resolve()


def model_fingerprint(model_dir: PathLike, *extra: str) -> str:
    """Hex sha256 of config.json's bytes, each weight file's (name, size, mtime_ns) and ``extra``.

    Weight files are those ending in one of ``WEIGHT_SUFFIXES`` at the top level of the
    directory. Raises FileNotFoundError as :func:`check_model_dir`.
    """
    path = check_model_dir(model_dir)
    h = hashlib.sha256()
    h.update((path / "config.json").read_bytes())
    for f in sorted(path.iterdir()):
        if f.is_file() and f.name.endswith(WEIGHT_SUFFIXES):
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    for e in extra:
        h.update(e.encode())
    return h.hexdigest()


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _export_optimum(model_dir: Path, out: Path, task: str, opset: int) -> None:
    from optimum.exporters.onnx import main_export

    main_export(
        model_name_or_path=str(model_dir),
        output=str(out),
        task=task,
        opset=opset,
        device="cpu",
        local_files_only=True,
        library_name="transformers",  # plain encoder outputs; pooling is ours (not sentence-transformers')
        do_validation=False,  # validated by our own tests against torch
    )


def _export_torch(model_dir: Path, out: Path, task: str, opset: int) -> None:
    """Fallback when optimum is not installed: torch.onnx with dynamic batch/sequence axes."""
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification

    cls = AutoModelForSequenceClassification if task == "text-classification" else AutoModel
    model = cls.from_pretrained(str(model_dir), local_files_only=True).eval()
    ids = torch.ones((2, 8), dtype=torch.long)
    mask = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask"]
    args: tuple = (ids, mask)
    if getattr(model.config, "type_vocab_size", 1) > 1:
        names.append("token_type_ids")
        args = (ids, mask, torch.zeros_like(ids))
    output = "logits" if task == "text-classification" else "last_hidden_state"
    axes = {n: {0: "batch_size", 1: "sequence_length"} for n in names}
    axes[output] = {0: "batch_size"} if output == "logits" else {0: "batch_size", 1: "sequence_length"}
    with torch.no_grad():
        torch.onnx.export(
            model, args, str(out / "model.onnx"), input_names=names, output_names=[output],
            dynamic_axes=axes, opset_version=opset, dynamo=False,
        )


def export_onnx(
    model_dir: PathLike,
    task: str,
    cache_dir: Optional[PathLike] = None,
    opset: int = DEFAULT_OPSET,
) -> Path:
    """Export ``model_dir`` to ONNX for ``task`` (once) and return the cached ``model.onnx`` path.

    Args:
        model_dir: local Hugging Face model directory (config.json + weights).
        task: optimum task name: ``"text-classification"`` (NLI head, output ``logits``)
            or ``"feature-extraction"`` (encoder, output ``last_hidden_state``).
        cache_dir: cache root (see :func:`cache_root`).
        opset: ONNX opset version.

    Returns:
        Path to ``model.onnx`` (float32; inputs ``input_ids``, ``attention_mask`` [,
        ``token_type_ids``], int64, shape (batch, seq)).

    Raises:
        FileNotFoundError: ``model_dir`` is not a local model directory.
        RuntimeError: the exporter failed (message includes the model directory).
    """
    path = check_model_dir(model_dir)
    key = model_fingerprint(path, task, str(opset))[:16]
    root = cache_root(cache_dir) / "onnx"
    label = path.name if path.name != "model" else f"{path.parent.name}-model"  # packaged models
    target = root / f"{label}-{task}-{key}"
    onnx_path = target / "model.onnx"
    if onnx_path.is_file():
        return onnx_path
    with _locked(root / f".{target.name}.lock"):
        if onnx_path.is_file():  # another process finished while we waited
            return onnx_path
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
        try:
            try:
                _export_optimum(path, tmp, task, opset)
                how = "optimum"
            except ImportError:
                logger.warning("optimum not installed; exporting %s with torch.onnx instead", path)
                _export_torch(path, tmp, task, opset)
                how = "torch.onnx"
            if not (tmp / "model.onnx").is_file():
                raise RuntimeError(f"ONNX export of {path} produced no model.onnx in {tmp}")
            (tmp / "source.json").write_text(
                json.dumps({"model_dir": str(path), "task": task, "opset": opset, "exporter": how})
            )
            os.chmod(tmp, 0o755)  # mkdtemp makes 0700; others sharing the cache read it
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        except Exception as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(e, (FileNotFoundError, RuntimeError)):
                raise
            raise RuntimeError(f"ONNX export of {path} (task {task}) failed: {e}") from e
    logger.info("exported %s to %s", path, onnx_path)
    return onnx_path


def _derived(src: Path, name: str, build) -> Path:
    dst = src.with_name(name)
    if dst.is_file():
        return dst
    with _locked(src.parent / f".{name}.lock"):
        if dst.is_file():
            return dst
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".onnx", dir=src.parent)
        os.close(fd)
        try:
            build(src, Path(tmp))
            os.chmod(tmp, 0o644)  # mkstemp makes 0600
            os.replace(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return dst


def quantized_int8(onnx_path: PathLike, name: str = "model_int8.onnx") -> Path:
    """Dynamic int8 quantisation of an fp32 ONNX model (weights int8, activations quantised
    at run time), cached as ``name`` beside it. Returns the new path.

    Uses ``onnxruntime.quantization.quantize_dynamic`` (MatMul/Gemm/Attention weights).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def build(src: Path, dst: Path) -> None:
        import onnx

        # fused graphs hold com.microsoft ops that shape inference cannot type; they are fp32
        quantize_dynamic(
            str(src), str(dst), weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )

    return _derived(Path(onnx_path), name, build)


def converted_fp16(onnx_path: PathLike) -> Path:
    """fp16 copy of an fp32 ONNX model for CUDA, inputs/outputs kept in their original types
    (int64 ids in, fp32 logits out), cached as ``model_fp16.onnx`` beside it."""

    def build(src: Path, dst: Path) -> None:
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16

        model = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True)
        onnx.save(model, str(dst))

    return _derived(Path(onnx_path), "model_fp16.onnx", build)


def fused_transformer(onnx_path: PathLike, num_heads: int = 0, hidden_size: int = 0) -> Path:
    """Offline transformer fusion of an fp32 encoder export (ONNX Runtime's transformer
    optimizer: Attention, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization where the
    pattern matches), cached as ``model_fused.onnx`` beside it. Numerically equivalent in
    fp32; faster on CPU, and the fused Attention is what int8 quantisation then turns into
    QAttention. ``num_heads`` / ``hidden_size`` 0 = detect from the graph."""

    def build(src: Path, dst: Path) -> None:
        from onnxruntime.transformers.optimizer import optimize_model

        model = optimize_model(str(src), model_type="bert", num_heads=num_heads, hidden_size=hidden_size)
        logger.info("fused %s: %s", src, {k: v for k, v in model.get_fused_operator_statistics().items() if v})
        model.save_model_to_file(str(dst))

    return _derived(Path(onnx_path), "model_fused.onnx", build)
