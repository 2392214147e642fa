"""Pipeline throughput benchmark: the sequential engine vs the batched engine.

    python -m promem_fast.bench --input locomo_dev.json --sessions 16 \\
        --engine sequential,batched --llm scripted --latency-ms 50 --concurrency 16

Both engines run the same sessions in one process over the same backends (the batched
engine only wraps them differently, engine/services.py). Output: one JSON line per
engine, then, when both engines ran, one line with the ratio batched / sequential of
sessions per second (and whether both engines produced the same graphs, timing fields aside).

Per-engine fields: sessions_per_s, wall_s, p50_session_s / p95_session_s (seconds from a
session's start to its graph; in the batched engine this includes waiting on shared
batches), llm_calls_per_session, prompt_tokens_per_session, completion_tokens_per_session,
cached_tokens_per_session (from each MemoryGraph's stats), stage_seconds (mean seconds
per session per stage), stage_cost_per_session (mean LLM calls, prompt / completion /
cached-prefix tokens and NLI pairs per session per stage), backend_llm_calls (generate() calls that reached the LLM backend:
the number the micro-batcher reduces), batcher counters, failed sessions, and for an in-process llama.cpp LLM ``llm_steps`` (its
decode-loop counters: sequences per generating step, prompt vs generated tokens, seconds in
``llama_decode``; see ``LlamaCppLLM.step_stats``).

Sequential engine: concurrency 1, every service at batch 1, no wait, one dispatch at a
time. Batched engine: ``--concurrency`` sessions in flight, EngineConfig batch sizes and
wait limit.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence

from .config import Config
from .schema import MemoryGraph, Session

logger = logging.getLogger(__name__)

ENGINES = ("sequential", "batched")
_COST_FIELDS = ("llm_calls", "prompt_tokens", "completion_tokens", "cached_tokens", "nli_pairs")


def machine_info() -> dict[str, Any]:
    """CPU model, core count, load average, Python / platform, GPU name if torch sees one."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info: dict[str, Any] = {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "sched_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "loadavg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    try:
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()
        info["mem_gib"] = round(int(mem[1]) / 2**20, 1)
    except (OSError, IndexError, ValueError):
        pass
    return info


def percentile(values: Sequence[float], q: float) -> float:
    """q-th percentile (0..100) by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def canonical(graph: MemoryGraph) -> str:
    """Graph JSON with wall-clock fields (stats.seconds, stage seconds) zeroed."""
    g = graph.model_copy(deep=True)
    g.stats.seconds = 0.0
    for st in g.stats.stages.values():
        st.seconds = 0.0
    return g.to_json(indent=None)


def summarize(engine: str, results: list, wall_s: float, concurrency: int, wrapped: Any) -> dict[str, Any]:
    """One engine's JSON record from its SessionResults (see the module docstring for fields)."""
    from .engine.services import batcher_stats

    ok = [r for r in results if r.ok]
    n = max(len(ok), 1)
    secs = [r.seconds for r in ok]
    stages: dict[str, float] = {}
    stage_cost: dict[str, dict[str, float]] = {}
    for r in ok:
        for name, st in r.graph.stats.stages.items():
            stages[name] = stages.get(name, 0.0) + st.seconds
            c = stage_cost.setdefault(name, dict.fromkeys(_COST_FIELDS, 0.0))
            for f in _COST_FIELDS:
                c[f] += getattr(st, f)
    bstats = batcher_stats(wrapped)
    return {
        "engine": engine,
        "sessions": len(results),
        "failed": len(results) - len(ok),
        "concurrency": concurrency,
        "wall_s": round(wall_s, 4),
        "sessions_per_s": round(len(ok) / wall_s, 4) if wall_s > 0 else 0.0,
        "p50_session_s": round(percentile(secs, 50), 4),
        "p95_session_s": round(percentile(secs, 95), 4),
        "llm_calls_per_session": round(sum(r.graph.stats.llm_calls for r in ok) / n, 2),
        "prompt_tokens_per_session": round(sum(r.graph.stats.prompt_tokens for r in ok) / n, 1),
        "completion_tokens_per_session": round(sum(r.graph.stats.completion_tokens for r in ok) / n, 1),
        "cached_tokens_per_session": round(sum(r.graph.stats.cached_tokens for r in ok) / n, 1),
        "stage_seconds": {k: round(v / n, 4) for k, v in stages.items()},
        "stage_cost_per_session": {
            k: {f: round(v / n, 2) for f, v in c.items()} for k, c in stage_cost.items() if any(c.values())
        },
        "backend_llm_calls": bstats.get("llm", {}).get("dispatches", 0),
        "batcher": bstats,
        "errors": sorted({r.error for r in results if not r.ok})[:5],
    }


async def run_engine(
    engine: str, sessions: Sequence[Session], config: Config, raw_services: Any, concurrency: int
) -> tuple[dict[str, Any], list]:
    """Run ``sessions`` through one engine; returns (summary record, SessionResults in input order)."""
    from .engine.scheduler import build_extractor, run_sessions

    conc = 1 if engine == "sequential" else concurrency
    reset = getattr(raw_services.llm, "reset_cache", None)
    if reset is not None:  # no engine may reuse prompts that the previous run left cached
        await asyncio.to_thread(reset)
    step_stats = getattr(raw_services.llm, "step_stats", None)
    reset_stats = getattr(raw_services.llm, "reset_stats", None)
    if reset_stats is not None:
        reset_stats()
    extractor, wrapped = build_extractor(config, raw_services, engine=engine, concurrency=conc)
    t0 = time.perf_counter()
    results = []
    async for r in run_sessions(sessions, extractor, conc):
        results.append(r)
        logger.info("%s: %d/%d sessions done (%s, %.2fs%s)", engine, len(results), len(sessions), r.session_id,
                    r.seconds, "" if r.ok else f", failed: {r.error}")
    results.sort(key=lambda r: r.index)
    wall = time.perf_counter() - t0
    record = summarize(engine, results, wall, conc, wrapped)
    if step_stats is not None:  # in-process backend: how full its decode batches were
        record["llm_steps"] = step_stats()
    return record, results


def build_config(args: argparse.Namespace) -> Config:
    """Config for the run: ``--config`` file, then command-line backend overrides."""
    cfg = Config.model_validate_json(Path(args.config).read_text()) if args.config else Config()
    upd: dict[str, Any] = {"backend": args.llm}
    if args.model:
        upd["model"] = args.model
    if args.base_url:
        upd["base_url"] = args.base_url
    if args.parallel:
        upd["parallel"] = args.parallel
    cfg.llm = cfg.llm.model_copy(update=upd)
    embed = args.embed or ("hash" if args.llm == "scripted" else None)
    if embed:
        cfg.embed = cfg.embed.model_copy(update={"backend": embed})
    if args.nli:
        cfg.nli = cfg.nli.model_copy(update={"backend": args.nli})
    eng = {"concurrency": args.concurrency}
    if args.llm_batch:
        eng["llm_batch"] = args.llm_batch
    if args.max_wait_ms is not None:
        eng["max_wait_ms"] = args.max_wait_ms
    cfg.engine = cfg.engine.model_copy(update=eng)
    return cfg


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m promem_fast.bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--input", required=True, help="input file (LoCoMo, HaluMem, plain JSON/JSONL, ...)")
    p.add_argument("--format", default=None, help="input format; default: detect")
    p.add_argument("--sample", default=None, help="only this LoCoMo sample_id / HaluMem uuid")
    p.add_argument("--sessions", type=int, default=16, help="number of sessions to run (the first N)")
    p.add_argument("--select", default=None, help="loader selection of 1-based session numbers, e.g. 3,9,10")
    p.add_argument("--engine", default="sequential,batched", help="comma list of: sequential, batched")
    p.add_argument("--concurrency", type=int, default=16, help="batched engine: sessions in flight")
    p.add_argument("--llm", default="scripted", help="LLM backend: scripted | llamacpp | openai | vllm")
    p.add_argument("--llm-model", "--model", dest="model", default=None, help="LLM model path or served name")
    p.add_argument("--llm-url", "--base-url", dest="base_url", default=None, help="openai backend: server URL")
    p.add_argument("--parallel", type=int, default=None, help="LLM parallel sequences (llamacpp slots / openai concurrency)")
    p.add_argument("--latency-ms", type=float, default=50.0, help="scripted LLM: latency per generate() call (ms)")
    p.add_argument("--nli", default=None, help="NLI backend: llm | onnx (default: config's)")
    p.add_argument("--embed", default=None, help="embedding backend: onnx | hash (default: hash for scripted)")
    p.add_argument("--llm-batch", type=int, default=None, help="batched engine: max LLM requests per dispatch")
    p.add_argument("--max-wait-ms", type=float, default=None, help="batched engine: batch wait limit (ms)")
    p.add_argument("--warmup", type=int, default=None, help="sessions run once before timing (default: 0 scripted, 1 otherwise)")
    p.add_argument("--config", default=None, help="Config JSON file")
    p.add_argument("--out", default=None, help="also append the JSON lines to this file")
    p.add_argument("-v", "--verbose", action="store_true", help="log each finished session to stderr")
    args = p.parse_args(argv)
    engines = [e.strip() for e in args.engine.split(",") if e.strip()]
    bad = [e for e in engines if e not in ENGINES]
    if bad or not engines:
        p.error(f"--engine: unknown {bad}; choose from {ENGINES}")
    if args.sessions < 1 or args.concurrency < 1:
        p.error("--sessions and --concurrency must be >= 1")
    args.engines = engines
    return args


def prepare(args: argparse.Namespace) -> tuple[Any, list[Any], Any]:
    """Config, the selected sessions and the model services for ``args``.

    Raises FileNotFoundError / ValueError / pydantic.ValidationError on a missing or malformed
    input, an empty selection, an unknown backend or an unwritable ``--out``."""
    from .context import Services
    from .io import load_sessions

    cfg = build_config(args)
    if args.out:
        out = Path(args.out)
        if out.is_dir():
            raise ValueError(f"--out: {out} is a directory, expected a file path")
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a", encoding="utf-8"):
            pass
    sessions = load_sessions(args.input, args.format, sample=args.sample, sessions=args.select)
    if not sessions:
        raise ValueError(f"--input: no sessions selected in {args.input}")
    if len(sessions) < args.sessions:
        logger.warning("only %d sessions in %s (asked for %d)", len(sessions), args.input, args.sessions)
    sessions = sessions[: args.sessions]
    raw = Services.from_config(cfg, scripted_latency_s=args.latency_ms / 1000.0)
    return cfg, sessions, raw


async def amain(args: argparse.Namespace, prepared: Optional[tuple[Any, list[Any], Any]] = None) -> list[dict[str, Any]]:
    """Run the engines of ``args`` and print their JSON lines; ``prepared`` is :func:`prepare`'s
    result (computed here when None)."""
    cfg, sessions, raw = prepared or prepare(args)
    warmup = args.warmup if args.warmup is not None else (0 if args.llm == "scripted" else 1)
    if warmup:
        await run_engine("sequential", sessions[:warmup], cfg, raw, 1)
    common = {
        "input": Path(args.input).name,
        "session_ids": [s.session_id for s in sessions],
        "llm": args.llm if args.llm != "scripted" else f"scripted@{args.latency_ms:g}ms",
        "models": raw.model_names(),
        "llm_batch": cfg.engine.llm_batch,
        "max_wait_ms": cfg.engine.max_wait_ms,
        "machine": machine_info(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    from .results_log import git_commit

    common["commit"] = git_commit()
    if args.llm == "llamacpp":  # which kernels ran: the portable AVX2 build or a native one
        import llama_cpp

        from .backends.llm.llamacpp import compiled_cpu_features

        common["llama_cpp_build"] = compiled_cpu_features(llama_cpp.llama_print_system_info().decode())
    records: list[dict[str, Any]] = []
    graphs: dict[str, list[Optional[str]]] = {}
    for eng in args.engines:
        rec, results = await run_engine(eng, sessions, cfg, raw, args.concurrency)
        rec.update(common)
        records.append(rec)
        graphs[eng] = [canonical(r.graph) if r.ok else None for r in results]
        print(json.dumps(rec, ensure_ascii=False), flush=True)
    by = {r["engine"]: r for r in records}
    if "sequential" in by and "batched" in by:  # the ratio line needs both engines
        s, b = by["sequential"]["sessions_per_s"], by["batched"]["sessions_per_s"]

        def rate(r: dict[str, Any]) -> float:  # unrounded: slow engines print 0.0057-style rates
            return (r["sessions"] - r["failed"]) / r["wall_s"] if r["wall_s"] > 0 else 0.0

        rs, rb = rate(by["sequential"]), rate(by["batched"])
        final: dict[str, Any] = dict(
            metric="ratio_batched_over_sequential",
            ratio=round(rb / rs, 3) if rs else None,
            sequential_sessions_per_s=s,
            batched_sessions_per_s=b,
            identical_graphs=graphs["sequential"] == graphs["batched"],
            sessions=len(sessions),
            concurrency=args.concurrency,
            llm=common["llm"],
        )
        print(json.dumps(final), flush=True)
        records.append(final)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return records


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``python -m promem_fast.bench``; exit 1 when a session failed, 2 on bad
    input (missing or malformed file, unknown backend, empty selection) with a one-line error."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if args.verbose:
        logger.setLevel(logging.INFO)
    from pydantic import ValidationError

    try:  # only the set-up: a ValueError raised while the engines run keeps its traceback
        prepared = prepare(args)
    except (FileNotFoundError, ValueError, ValidationError, OSError) as e:  # bad input or option
        logger.debug("bench set-up failed", exc_info=True)
        print(f"error: {e}", file=sys.stderr)
        return 2
    records = asyncio.run(amain(args, prepared))
    return 1 if any(r.get("failed") for r in records) else 0


if __name__ == "__main__":
    raise SystemExit(main())
