"""Cross-reference kernel benchmark: every implementation available here vs a BLAS GEMM.

For n = m in {50, 500, 2000} and d in {384, 1024, 4096} it times (best of several runs,
after one warm-up call):

* gemm       the floor: float32 GEMM of the same shape on already-normalised, contiguous
             inputs (numpy -> its BLAS), no normalisation, no reduction; the faster of
             BLAS with its default threads and with one thread;
* numpy      promem_fast.kernels.reference.cross_reference_numpy (normalise + GEMM + argmax);
* cpp        promem_fast._C, all cores; cpp_1t: one thread;
* torch      torch CPU matmul + max (if torch is installed);
* faiss_k1   FAISS IndexFlatIP top-1 (same max/argmax; if faiss is installed);
* python     pure-Python loops, only at 500 x 500 x 384 (the speed-up target), timed on a
             subset of rows and scaled linearly to all rows (said so in the JSON line).

Each configuration prints one JSON line: seconds (best wall time; cpu_s is the best process
CPU time of the same runs), GFLOP/s (2 n m d / s) and time relative to the GEMM; also the
one-thread CPU-time ratio cpp_1t / gemm_1t, which other processes' load does not distort. Targets on the CPU: cpp <= 1.5x GEMM at n = 500 and 2000, and >= 20x faster
than the pure-Python loop at 500 x 500 x 384. A "batch" line times the engine's case (1000 sessions of
about 50 x 50 x 384 in one ragged call vs per-session calls vs the numpy loop), and a small
crossover sweep (numpy vs cpp at tiny sizes) sets promem_fast.kernels.dispatch.NUMPY_MAX_WORK. Lines go to
benchmarks/results/xref_cpu.jsonl, after one line of machine info (CPU model, cores, numpy
BLAS from threadpoolctl).

With a CUDA device and triton: Triton vs torch matmul + max in the same run (single and
ragged many-session batches), with the share of peak memory bandwidth the Triton kernel
reaches (bytes of A and B read once / time / peak), to benchmarks/results/xref_gpu.jsonl.

Usage: python benchmarks/bench_xref.py [--quick] [--no-write] [--peak-bw-gbs X]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from promem_fast.kernels import cpu
from promem_fast.kernels.reference import cross_reference_numpy, normalize_rows

RESULTS = Path(__file__).resolve().parent / "results"
NS = (50, 500, 2000)
DS = (384, 1024, 4096)


_LAST_CPU: list[float] = [math.nan]


def best_time(fn, budget_s: float = 1.0, min_reps: int = 3, max_reps: int = 50) -> float:
    """Best wall time of fn() over repeats (one warm-up call first).

    Also keeps the best process CPU time of the same runs in _LAST_CPU[0] (all threads
    summed): on a shared machine it is the contention-robust figure for one-thread runs.
    """
    fn()
    times, cpus = [], []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - start < budget_s):
        c = time.process_time()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    _LAST_CPU[0] = min(cpus)
    return min(times)


def machine_info() -> dict:
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    blas = None
    try:
        from threadpoolctl import threadpool_info

        blas = [
            {k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads", "threading_layer")}
            for i in threadpool_info() if i.get("user_api") == "blas"
        ]
    except ImportError:
        blas = "threadpoolctl not installed"
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "kind": "machine", "cpu_model": model, "cores": os.cpu_count(), "numpy": np.__version__,
        "numpy_blas": blas, "native_ext": cpu.have_native(), "native_isa": cpu.native_isa(),
        "python": sys.version.split()[0], "loadavg": load,
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def python_loop_xref(a: list[list[float]], b: list[list[float]]) -> tuple[list[float], list[int]]:
    """Pure-Python cross-reference (normalise, dot, max) over nested lists."""
    def unit(v):
        s = math.sqrt(sum(x * x for x in v))
        return [x / s for x in v] if s > 0 else [0.0] * len(v)

    an = [unit(r) for r in a]
    bn = [unit(r) for r in b]
    mx, arg = [], []
    for r in an:
        best, bj = -math.inf, -1
        for j, c in enumerate(bn):
            s = sum(x * y for x, y in zip(r, c))
            if s > best:
                best, bj = s, j
        mx.append(best)
        arg.append(bj)
    return mx, arg


def cpu_config(n: int, d: int, rng, budget: float, python_rows: int) -> dict:
    m = n
    a = rng.standard_normal((n, d)).astype(np.float32)
    b = rng.standard_normal((m, d)).astype(np.float32)
    flops = 2.0 * n * m * d
    an, bn = normalize_rows(a), normalize_rows(b)
    out: dict = {"kind": "config", "n": n, "m": m, "d": d, "impls": {}}
    # The floor is the faster of the BLAS GEMM with its default threads and with one thread:
    # on a shared machine the threaded BLAS can lose badly at small sizes, and a floor that
    # is too slow would flatter the other implementations.
    gemm_mt = best_time(lambda: an @ bn.T, budget)
    gemm_1t = None
    try:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1, user_api="blas"):
            gemm_1t = best_time(lambda: an @ bn.T, budget)
            gemm_1t_cpu = _LAST_CPU[0]
    except ImportError:
        gemm_1t_cpu = None
    gemm_s = min(gemm_mt, gemm_1t) if gemm_1t is not None else gemm_mt
    out["gemm_s"] = gemm_s
    out["gemm_threads_s"] = gemm_mt
    out["gemm_1t_s"] = gemm_1t
    out["gemm_1t_cpu_s"] = gemm_1t_cpu
    out["gemm_gflops"] = flops / gemm_s / 1e9

    def record(name, s, **extra):
        out["impls"][name] = {"s": s, "cpu_s": _LAST_CPU[0], "gflops": flops / s / 1e9,
                              "vs_gemm": s / gemm_s, **extra}

    record("numpy", best_time(lambda: cross_reference_numpy(a, b, 0.5), budget))
    if cpu.have_native():
        record("cpp", best_time(lambda: cpu.cross_reference_cpu(a, b, 0.5), budget))
        record("cpp_1t", best_time(lambda: cpu.cross_reference_cpu(a, b, 0.5, n_threads=1), budget))
    try:
        import torch

        ta, tb = torch.from_numpy(a), torch.from_numpy(b)

        def torch_xref():
            s = torch.nn.functional.normalize(ta, dim=1) @ torch.nn.functional.normalize(tb, dim=1).T
            return s.max(dim=1)

        record("torch", best_time(torch_xref, budget), threads=torch.get_num_threads())
    except ImportError:
        pass
    try:
        from promem_fast.kernels.knn import CosineIndex, faiss

        if faiss is not None:
            record("faiss_k1", best_time(lambda: CosineIndex(b, use_gpu=False).search(a, 1), budget))
    except ImportError:
        pass
    if n == 500 and d == 384 and python_rows > 0:
        rows = min(python_rows, n)
        al, bl = a[:rows].tolist(), b.tolist()
        t = time.perf_counter()
        python_loop_xref(al, bl)
        sub = time.perf_counter() - t
        _LAST_CPU[0] = math.nan
        record("python", sub * n / rows, rows_timed=rows, scaled_from_subset=True,
               note=f"timed on {rows} of {n} rows, scaled x{n / rows:g}")
    im = out["impls"]
    if "cpp" in im:
        if n in (500, 2000):
            out["target_cpp_within_1.5x_gemm"] = im["cpp"]["vs_gemm"] <= 1.5
        if gemm_1t_cpu and "cpp_1t" in im:
            # Same comparison on CPU time, one thread each: immune to other processes' load.
            out["cpp_1t_cpu_vs_gemm_1t_cpu"] = im["cpp_1t"]["cpu_s"] / gemm_1t_cpu
        if "python" in im:
            out["cpp_speedup_vs_python"] = im["python"]["s"] / im["cpp"]["s"]
            out["target_cpp_20x_python"] = out["cpp_speedup_vs_python"] >= 20
    return out


def crossover(rng, budget: float) -> dict:
    """numpy vs cpp at tiny sizes (d = 384): where does the native call start paying off?"""
    rows = []
    for n in (1, 2, 4, 8, 16, 32, 64):
        a = rng.standard_normal((n, 384)).astype(np.float32)
        b = rng.standard_normal((n, 384)).astype(np.float32)
        t_np = best_time(lambda a=a, b=b: cross_reference_numpy(a, b, 0.5), budget / 4)
        t_c = (best_time(lambda a=a, b=b: cpu.cross_reference_cpu(a, b, 0.5), budget / 4)
               if cpu.have_native() else None)
        rows.append({"n": n, "m": n, "d": 384, "work": n * n * 384, "numpy_s": t_np, "cpp_s": t_c})
    return {"kind": "crossover", "rows": rows}


def _torch_bmm_xref(a, b):
    """torch matmul + max over (S, n, d) x (S, m, d): normalise, bmm, max (ties: torch's)."""
    import torch

    s = torch.nn.functional.normalize(a.float(), dim=2) @ torch.nn.functional.normalize(b.float(), dim=2).transpose(1, 2)
    return s.max(dim=2)


def batch_config(rng, budget: float, sessions: int = 1000, n: int = 50, d: int = 384) -> dict:
    """The engine's case: many small sessions in one call (ragged batch by offsets)."""
    from promem_fast.kernels.reference import cross_reference_batched_numpy

    sizes = rng.integers(n // 2, n * 3 // 2 + 1, (sessions, 2))
    a = rng.standard_normal((int(sizes[:, 0].sum()), d)).astype(np.float32)
    b = rng.standard_normal((int(sizes[:, 1].sum()), d)).astype(np.float32)
    ao = np.concatenate([[0], np.cumsum(sizes[:, 0])])
    bo = np.concatenate([[0], np.cumsum(sizes[:, 1])])
    flops = 2.0 * float((sizes[:, 0] * sizes[:, 1]).sum()) * d
    out: dict = {"kind": "batch", "sessions": sessions, "mean_n": n, "mean_m": n, "d": d, "impls": {}}

    def record(name, s):
        out["impls"][name] = {"s": s, "cpu_s": _LAST_CPU[0], "gflops": flops / s / 1e9}

    record("numpy_loop", best_time(lambda: cross_reference_batched_numpy(a, ao, b, bo, 0.5), budget, min_reps=1))
    if cpu.have_native():
        record("cpp_batched", best_time(lambda: cpu.cross_reference_batched_cpu(a, ao, b, bo, 0.5), budget))
        record("cpp_per_session", best_time(
            lambda: [cpu.cross_reference_cpu(a[ao[s]:ao[s + 1]], b[bo[s]:bo[s + 1]], 0.5)
                     for s in range(sessions)], budget))
    return out


def gpu_runs(rng, budget: float, peak_bw_gbs: float | None) -> list[dict]:
    import torch

    from promem_fast.kernels.xref_triton import cross_reference_batched_triton

    name = torch.cuda.get_device_name(0)
    if peak_bw_gbs is None:  # HBM peak by product (GB/s)
        peak_bw_gbs = next((v for k, v in {"H200": 4800, "H100": 3350, "A100": 2039, "L4": 300,
                                            "A10": 600, "T4": 320}.items() if k in name), None)
    out = []

    def timed(fn):
        fn()
        torch.cuda.synchronize()
        best = math.inf
        start = time.perf_counter()
        reps = 0
        while reps < 3 or (time.perf_counter() - start < budget and reps < 100):
            t = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t)
            reps += 1
        return best

    cases = [(1, n, d) for n in NS for d in DS] + [(1000, 50, 384), (200, 200, 1024)]
    for sessions, n, d in cases:
        for dtype in (torch.float16, torch.float32):
            a = torch.randn(sessions * n, d, device="cuda", dtype=dtype)
            b = torch.randn(sessions * n, d, device="cuda", dtype=dtype)
            off = list(range(0, sessions * n + 1, n))
            t_tr = timed(lambda a=a, b=b, off=off: cross_reference_batched_triton(a, off, b, off, 0.5))
            # torch baseline: equal-size sessions let it use one batched matmul (its best case).
            t_th = timed(lambda a=a, b=b, s=sessions, n=n, d=d: _torch_bmm_xref(a.view(s, n, d), b.view(s, n, d)))
            flops = 2.0 * sessions * n * n * d
            bytes_read = (a.numel() + b.numel()) * a.element_size()
            rec = {"kind": "gpu", "device": name, "sessions": sessions, "n": n, "m": n, "d": d,
                   "dtype": str(dtype).replace("torch.", ""), "triton_s": t_tr, "torch_s": t_th,
                   "triton_vs_torch": t_tr / t_th, "triton_gflops": flops / t_tr / 1e9,
                   "triton_gbs": bytes_read / t_tr / 1e9}
            if peak_bw_gbs:
                rec["triton_pct_peak_bw"] = 100 * rec["triton_gbs"] / peak_bw_gbs
            print(json.dumps(rec), flush=True)
            out.append(rec)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="short budgets, skip the 4096 configurations")
    p.add_argument("--no-write", action="store_true", help="print only; do not write results/*.jsonl")
    p.add_argument("--python-rows", type=int, default=10, help="rows timed for the pure-Python loop")
    p.add_argument("--peak-bw-gbs", type=float, default=None, help="GPU peak memory bandwidth (GB/s)")
    args = p.parse_args(argv)
    budget = 0.3 if args.quick else 1.0
    rng = np.random.default_rng(0)
    from promem_fast.results_log import git_commit

    lines = [{**machine_info(), "commit": git_commit()}]
    print(json.dumps(lines[0]), flush=True)
    for n in NS:
        for d in DS:
            if args.quick and d == 4096:
                continue
            rec = cpu_config(n, d, rng, budget, args.python_rows)
            print(json.dumps(rec), flush=True)
            lines.append(rec)
    for rec in (batch_config(rng, budget), crossover(rng, budget)):
        print(json.dumps(rec), flush=True)
        lines.append(rec)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        with open(RESULTS / "xref_cpu.jsonl", "a") as f:  # a run appends its lines after the earlier runs
            f.write("".join(json.dumps(x) + "\n" for x in lines))
    try:
        import torch

        from promem_fast.kernels import xref_triton

        if torch.cuda.is_available() and xref_triton.available():
            gpu = gpu_runs(rng, budget, args.peak_bw_gbs)
            if not args.no_write:
                with open(RESULTS / "xref_gpu.jsonl", "a") as f:
                    f.write("".join(json.dumps(x) + "\n" for x in [lines[0], *gpu]))
    except ImportError:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
