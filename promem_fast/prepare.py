"""Prepare the embedded models once: assemble + verify the GGUF, export MiniLM to ONNX.

``python -m promem_fast.prepare`` (run by .ci/setup) so the first extraction does not
pay for it. Both steps are cached and idempotent.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m promem_fast.prepare")
    p.add_argument("--cache-dir", help="cache root (default $PROMEM_FAST_CACHE or ~/.cache/promem_fast)")
    args = p.parse_args(argv)
    from .config import EmbedConfig
    from .models import embedded_gguf_path

    t = time.perf_counter()
    path = embedded_gguf_path(args.cache_dir)
    print(f"LLM: {path} (verified, {time.perf_counter() - t:.1f} s)", file=sys.stderr)
    t = time.perf_counter()
    from .backends.embed.onnx import OnnxEmbedder

    emb = OnnxEmbedder(EmbedConfig(), cache_dir=args.cache_dir)
    vec = asyncio.run(emb.encode(["warm-up sentence"]))
    print(f"embeddings: {emb.model_name}, dim {vec.shape[1]} ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
