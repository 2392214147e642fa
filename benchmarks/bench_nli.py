"""NLI throughput on CPU: naive torch vs batched torch vs ONNX Runtime fp32 / int8.

A randomly initialised roberta-{large,base}-shaped sequence classifier (3 labels; random
weights time exactly like trained ones) is saved to a work directory with a byte-level BPE
tokenizer trained in memory (no hub), then exported through the same code path as
production (:class:`promem_fast.backends.nli.onnx.OnnxNLI`). Pairs have premises of 20-200
tokens and hypotheses of 5-15 tokens (ProMem §3.4: source turn vs memory entry).

Configurations (one JSON line each, pairs/s):
    torch_per_pair       naive: one forward per pair (the baseline)
    torch_bucketed       length-sorted batches (the engine's planner)
    ort_fp32_per_pair / ort_fp32_bucketed             plain optimum export
    ort_int8_per_pair / ort_int8_bucketed             + dynamic int8
    ort_fused_fp32_bucketed, ort_fused_int8_{per_pair,bucketed}   + ORT transformer fusion first
    engine_default       OnnxNLI with NLIConfig defaults for this device (the target: >= 4x
                         torch_per_pair)

Usage::

    python benchmarks/bench_nli.py                    # roberta-large shape, 512 pairs
    python benchmarks/bench_nli.py --size base --pairs 128 --out benchmarks/results/nli_cpu.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SIZES = {
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
}
ID2LABEL = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}  # roberta-large-mnli's order
WORDS = (
    "i we you she he they went saw bought painted adopted moved visited called told asked "
    "yesterday today tomorrow last week next month year friday saturday morning evening "
    "dog cat sister brother friend mother father kids team office house garden lake beach "
    "concert painting pottery book novel guitar class job interview trip camping birthday "
    "because and but so then really very happy tired excited about with for from into the a "
    "an of to in on at by".split()
)


def machine_info() -> dict:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import onnxruntime
    import torch

    return {
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "onnxruntime": onnxruntime.__version__,
        "platform": platform.platform(),
    }


def build_model(work: Path, size: str, seed: int = 0) -> Path:
    """Random roberta-<size>-shaped 3-label classifier + in-memory BPE tokenizer, saved once."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import (
        RobertaConfig,
        RobertaForSequenceClassification,
        RobertaTokenizerFast,
    )

    d = work / f"random-roberta-{size}-nli"
    if (d / "config.json").is_file() and (d / "tokenizer.json").is_file():
        return d
    d.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(20)) for _ in range(2000)]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus, vocab_size=1000, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(d))
    tok = RobertaTokenizerFast(str(d / "vocab.json"), str(d / "merges.txt"), model_max_length=512)
    tok.save_pretrained(str(d))
    cfg = RobertaConfig(
        vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()}, **SIZES[size],
    )
    torch.manual_seed(seed)
    RobertaForSequenceClassification(cfg).eval().save_pretrained(str(d))
    return d


def make_pairs(tok, n: int, seed: int = 1) -> list[tuple[str, str]]:
    """n pairs: premise 20-200 tokens, hypothesis 5-15 tokens (exact counts under ``tok``)."""
    rng = random.Random(seed)

    def text(n_tokens: int) -> str:
        words = " ".join(rng.choice(WORDS) for _ in range(n_tokens + 5))
        ids = tok(words, add_special_tokens=False)["input_ids"][:n_tokens]
        return tok.decode(ids).strip()

    return [(text(rng.randint(20, 200)), text(rng.randint(5, 15))) for _ in range(n)]


def time_torch(model_dir: Path, pairs, max_batch: int, pad_fraction=None) -> float:
    """Seconds for all pairs; max_batch 1 = naive per pair, else the engine's length-sorted planner."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from promem_fast.backends.nli.batching import BatchPolicy, plan_batches

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    with torch.inference_mode():
        for p, h in pairs[:2]:  # warm-up
            model(**tok(p, h, return_tensors="pt"))
        t = time.perf_counter()
        if max_batch == 1:
            for p, h in pairs:
                model(**tok(p, h, return_tensors="pt", truncation="only_first", max_length=512)).logits.numpy()
        else:
            lengths = [len(x) for x in tok([p for p, _ in pairs], [h for _, h in pairs])["input_ids"]]
            pol = BatchPolicy(batch_tokens=8192, max_batch=max_batch, pad_multiple=1, max_pad_fraction=pad_fraction)
            for rows in plan_batches(lengths, pol):
                enc = tok([pairs[i][0] for i in rows], [pairs[i][1] for i in rows], return_tensors="pt",
                          padding=True, truncation="only_first", max_length=512)
                model(**enc).logits.numpy()
        return time.perf_counter() - t


def time_ort(nli, pairs) -> float:
    nli.classify_sync(pairs[:2])  # warm-up
    t = time.perf_counter()
    out = asyncio.run(nli.classify(pairs))
    assert len(out) == len(pairs)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="large")
    ap.add_argument("--pairs", type=int, default=512)
    ap.add_argument("--batch", type=int, default=None, help="rows per bucketed batch (default: engine's CPU default)")
    ap.add_argument("--work", default="/tmp/promem_bench_nli", help="model + ONNX cache directory")
    ap.add_argument("--only", default="", help="comma-separated configuration names to run")
    ap.add_argument("--baseline", type=float, default=None,
                    help="torch_per_pair pairs/s of an earlier run, for the speedup column when it is skipped")
    ap.add_argument("--out", default=None, help="append JSON lines here too (e.g. benchmarks/results/nli_cpu.jsonl)")
    args = ap.parse_args()

    from transformers import AutoTokenizer

    from promem_fast.backends.nli.batching import (
        CPU_MAX_BATCH,
        CPU_MAX_PAD_FRACTION,
        BatchPolicy,
    )
    from promem_fast.backends.nli.onnx import OnnxNLI
    from promem_fast.config import NLIConfig

    work = Path(args.work)
    model_dir = build_model(work, args.size)
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    pairs = make_pairs(tok, args.pairs)
    n_tokens = [len(x) for x in tok([p for p, _ in pairs], [h for _, h in pairs])["input_ids"]]
    bucket = args.batch or CPU_MAX_BATCH
    info = machine_info()
    only = set(filter(None, args.only.split(",")))
    cache = work / "cache"

    def ort(quantize, max_batch, fuse=False):
        cfg = NLIConfig(backend="onnx", model_dir=str(model_dir), quantize=quantize, provider="cpu")
        pol = None if max_batch is None else BatchPolicy(
            batch_tokens=cfg.batch_tokens, max_batch=max_batch, pad_multiple=1,
            max_pad_fraction=CPU_MAX_PAD_FRACTION if max_batch > 1 else None,
        )
        return OnnxNLI(cfg, cache_dir=str(cache), policy=pol, fuse=fuse)

    configs = [
        ("torch_per_pair", lambda: time_torch(model_dir, pairs, 1), 1),
        ("torch_bucketed", lambda: time_torch(model_dir, pairs, bucket, CPU_MAX_PAD_FRACTION), bucket),
        ("ort_fp32_per_pair", lambda: time_ort(ort(False, 1), pairs), 1),
        ("ort_fp32_bucketed", lambda: time_ort(ort(False, bucket), pairs), bucket),
        ("ort_int8_per_pair", lambda: time_ort(ort(True, 1), pairs), 1),
        ("ort_int8_bucketed", lambda: time_ort(ort(True, bucket), pairs), bucket),
        # offline transformer fusion (Attention/SkipLayerNorm/BiasGelu) before int8 -> QAttention
        ("ort_fused_fp32_bucketed", lambda: time_ort(ort(False, bucket, True), pairs), bucket),
        ("ort_fused_int8_per_pair", lambda: time_ort(ort(True, 1, True), pairs), 1),
        ("ort_fused_int8_bucketed", lambda: time_ort(ort(True, bucket, True), pairs), bucket),
        ("engine_default", lambda: time_ort(ort(None, None, None), pairs), CPU_MAX_BATCH),
    ]
    baseline = None
    out = open(args.out, "a") if args.out else None
    for name, fn, mb in configs:
        if only and name not in only:
            continue
        load = os.getloadavg()[0]
        secs = fn()
        rate = len(pairs) / secs
        if name == "torch_per_pair":
            baseline = rate
        elif baseline is None and args.baseline:
            baseline = args.baseline
        rec = {
            "bench": "nli_cpu", "config": name, "size": args.size, "pairs": len(pairs),
            "max_batch": mb, "max_pad_fraction": CPU_MAX_PAD_FRACTION if "bucketed" in name or name == "engine_default" else None,
            "mean_tokens": round(float(np.mean(n_tokens)), 1),
            "pairs_per_s": round(rate, 3), "seconds": round(secs, 2),
            "speedup_vs_torch_per_pair": round(rate / baseline, 2) if baseline else None,
            "loadavg_1m_before": round(load, 2), "machine": info,
            "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        line = json.dumps(rec)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()


if __name__ == "__main__":
    main()
