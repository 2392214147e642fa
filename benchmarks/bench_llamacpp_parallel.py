"""Sequential vs batched decoding of the embedded LLM (LlamaCppLLM).

Runs the same N short prompts (greedy) through a backend with parallel=1 (one sequence at a
time) and with parallel=P (continuous batching), and prints one JSON line:
wall seconds, completion tokens/s for both, the speed-up, and whether the texts agree.

    nice -n 10 python benchmarks/bench_llamacpp_parallel.py --n 8 --parallel 4 --max-tokens 48
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

from promem_fast.backends.base import LLMRequest
from promem_fast.backends.llm.llamacpp import LlamaCppLLM
from promem_fast.config import LLMConfig
from promem_fast.models import embedded_gguf_path

TOPICS = ["a cat", "the sea", "coffee", "a train", "winter", "a garden", "music", "the moon",
          "a library", "rain", "bread", "a bridge", "chess", "a lighthouse", "tea", "a forest"]


def requests(n: int, max_tokens: int) -> list[LLMRequest]:
    return [LLMRequest(messages=[{"role": "user", "content": f"Write two sentences about {TOPICS[i % len(TOPICS)]}."}],
                       max_tokens=max_tokens) for i in range(n)]


def run(parallel: int, reqs, n_threads, n_ctx) -> tuple[float, float, int, list[str]]:
    """Returns (wall s, process CPU s, completion tokens, texts) for one backend."""
    cfg = LLMConfig(model=str(embedded_gguf_path()), parallel=parallel, n_ctx=n_ctx, n_threads=n_threads)
    with LlamaCppLLM(cfg) as llm:
        asyncio.run(llm.generate([LLMRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=2)]))  # warm-up
        t, c = time.perf_counter(), time.process_time()
        out = asyncio.run(llm.generate(reqs))
        dt, dc = time.perf_counter() - t, time.process_time() - c
    return dt, dc, sum(r.completion_tokens for r in out), [r.text for r in out]


def run_reference(reqs, n_threads, n_ctx) -> tuple[float, int]:
    """llama-cpp-python's own high-level Llama.create_chat_completion, one prompt at a time."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(embedded_gguf_path()), n_ctx=n_ctx, n_threads=n_threads or os.cpu_count(),
                verbose=False, seed=0)
    llm.create_chat_completion(messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    t, tok = time.perf_counter(), 0
    for r in reqs:
        out = llm.create_chat_completion(messages=r.messages, max_tokens=r.max_tokens, temperature=0.0)
        tok += out["usage"]["completion_tokens"]
    dt = time.perf_counter() - t
    llm.close()
    return dt, tok


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--n-threads", type=int, default=None)
    ap.add_argument("--n-ctx", type=int, default=1024)
    ap.add_argument("--reference", action="store_true", help="also time llama_cpp.Llama one by one")
    a = ap.parse_args()
    reqs = requests(a.n, a.max_tokens)
    ref = run_reference(reqs, a.n_threads, a.n_ctx) if a.reference else None
    t1, c1, tok1, txt1 = run(1, reqs, a.n_threads, a.n_ctx)
    tp, cp, tokp, txtp = run(a.parallel, reqs, a.n_threads, a.n_ctx)
    print(json.dumps({
        "bench": "llamacpp_parallel", "n_prompts": a.n, "parallel": a.parallel, "max_tokens": a.max_tokens,
        "n_threads": a.n_threads or os.cpu_count(), "load_avg_1m": os.getloadavg()[0],
        "sequential_s": round(t1, 2), "parallel_s": round(tp, 2),
        "sequential_tok_s": round(tok1 / t1, 2), "parallel_tok_s": round(tokp / tp, 2),
        "speedup": round(t1 / tp, 3), "sequential_cpu_s": round(c1, 2), "parallel_cpu_s": round(cp, 2),
        "cpu_speedup": round(c1 / cp, 3), "completion_tokens": [tok1, tokp],
        "same_texts": txt1 == txtp,
        "reference_llama_s": round(ref[0], 2) if ref else None,
        "reference_llama_tok_s": round(ref[1] / ref[0], 2) if ref else None,
    }))


if __name__ == "__main__":
    main()
