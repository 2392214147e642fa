"""Cost of one ``llama_decode`` step of the embedded LLM against the tokens it carries.

The engine's speed-up from decoding several sequences together is bounded by this curve: a
step with k generated tokens (k sequences, one token each) costs ``step_ms(k)``, a prompt
chunk of k tokens of one sequence costs about the same, so ``per_token_ms(k)`` falls from
k = 1 (one sequence decoding alone) to the prefill rate (k >= 16). Prints one JSON line:
``{"metric": "llamacpp_step_cost", "decode": {k: per_token_ms}, "prefill": {k: per_token_ms}, ...}``
with the best of ``--reps`` runs per point (fresh KV cache each run, logits only where the
engine asks for them: every generated token, the last prompt token).

    python benchmarks/bench_llamacpp_steps.py --decode 1,2,4,6,8,16 --prefill 16,64,256
    python benchmarks/bench_llamacpp_steps.py --decode 1,4 --context 1000 --n-ctx 8192  # as the engine runs

``--context`` fills each sequence's KV cache first (real prompts hold 1-3k tokens), ``--n-ctx``
sizes each sequence's KV buffer as ``LLMConfig.n_ctx`` does, ``--unified`` shares one buffer.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decode", default="1,2,4,6,8,16", help="generated tokens per step (one per sequence)")
    ap.add_argument("--prefill", default="16,64,256", help="prompt tokens per step (one sequence)")
    ap.add_argument("--context", type=int, default=0, help="tokens already in each sequence's KV cache")
    ap.add_argument("--n-ctx", type=int, default=0,
                    help="KV cells per sequence (0: just enough; the engine's default is LLMConfig.n_ctx = 8192)")
    ap.add_argument("--unified", action="store_true", help="one KV buffer shared by all sequences (kv_unified)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()

    import llama_cpp as lc
    from llama_cpp import _internals

    from promem_fast.backends.llm.llamacpp import compiled_cpu_features
    from promem_fast.models import embedded_gguf_path

    decode = [int(x) for x in args.decode.split(",") if x]
    prefill = [int(x) for x in args.prefill.split(",") if x]
    n_seq = max(decode + [1])
    per_seq = max(args.n_ctx, args.context + max(prefill + [1]) + 8)
    model = _internals.LlamaModel(path_model=str(embedded_gguf_path()),
                                  params=_internals.LlamaModel.default_params(), verbose=False)
    cp = _internals.LlamaContext.default_params()
    cp.n_ctx, cp.n_seq_max, cp.kv_unified = per_seq * n_seq, n_seq, args.unified
    cp.n_batch = cp.n_ubatch = max(prefill + decode + [args.context, 1])
    cp.n_threads = cp.n_threads_batch = args.threads
    ctx = _internals.LlamaContext(model=model, params=cp, verbose=False)
    mem = lc.llama_get_memory(ctx.ctx)
    batch = lc.llama_batch_init(cp.n_batch, 0, 1)

    def step(tokens: list[tuple[int, int, int, bool]]) -> float:
        for i, (tok, pos, seq, logits) in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, logits
        batch.n_tokens = len(tokens)
        t = time.perf_counter()
        if lc.llama_decode(ctx.ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        return time.perf_counter() - t

    def fill_context(seqs: int) -> None:
        lc.llama_memory_clear(mem, True)
        for s in range(seqs):
            if args.context:
                step([(1000 + j % 5000, j, s, False) for j in range(args.context)])

    def best(make) -> float:
        times = []
        for _ in range(args.reps):
            times.append(make())
        return min(times)

    def decode_run(k: int) -> float:
        fill_context(k)
        return step([(2000 + s, args.context, s, True) for s in range(k)])

    def prefill_run(k: int) -> float:
        fill_context(1)
        return step([(1000 + (j * 7) % 5000, args.context + j, 0, j == k - 1) for j in range(k)])

    step([(1, 0, 0, True)])  # warm-up
    out = {
        "metric": "llamacpp_step_cost",
        "model": embedded_gguf_path().name,
        "threads": args.threads,
        "context": args.context,
        "n_ctx_per_seq": per_seq,
        "kv_unified": args.unified,
        "decode": {k: round(best(lambda: decode_run(k)) * 1000 / k, 1) for k in decode},
        "prefill": {k: round(best(lambda: prefill_run(k)) * 1000 / k, 1) for k in prefill},
        "unit": "ms per token (best of reps)",
        "llama_cpp_build": compiled_cpu_features(lc.llama_print_system_info().decode()),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_1m": round(os.getloadavg()[0], 2)},
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    lc.llama_batch_free(batch)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
