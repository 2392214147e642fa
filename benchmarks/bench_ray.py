"""Bulk throughput, ``--engine local`` vs ``--engine ray`` with 1 and 2 workers.

    python benchmarks/bench_ray.py --sessions 64 --latency-ms 50 --concurrency 16 \\
        --out benchmarks/results/bench_ray.jsonl

The scripted LLM (``--latency-ms`` per generate() call) with the LLM-judge NLI and the
hashing embedder, so the figures measure the engines, not a model. Sessions: LoCoMo
(``../shared/data/locomo_dev.json`` beside the repository), each session once with
speaker_a as the user, then again with speaker_b (ids suffixed ``@speaker_b``) until
``--sessions`` are taken: the file holds 38 sessions per speaker.

Each configuration runs ``run_bulk`` into a fresh directory (the whole job: database,
commits, export). ``--concurrency`` is sessions in flight in the local process and in each
Ray worker. Ray is started once, as ``promem-fast bulk --engine ray`` starts it
(``promem_fast.distributed.init_ray``; its time reported as ``ray_init_s``), before the
Ray configurations. Every configuration first runs the same job once on 2 sessions, untimed
(``warmup_s``; ``--no-warmup`` skips it): the imports of the driver (Ray Data's included) and Ray Data's actors that
live as long as the cluster (stats, autoscaling coordinator, actor locations) are then in
place for every configuration alike, as a running process's or cluster's are; before, the
first Ray configuration paid for them and the second did not. What a job itself costs stays
inside ``wall_s``: the local engine's services, the Ray workers' start (process, imports,
services), the dataset, the executor, the result stream.

``machine_cpu_s``: CPU seconds the whole machine spent busy during ``wall_s`` (``/proc/stat``;
Ray's own processes included), ``machine_cores_busy`` the same per second of wall time.

Prints (and appends to ``--out``) one JSON line per configuration, then one line of
ratios: ray 2 workers / ray 1 worker and ray 1 worker / local, of sessions per second over
the whole job (``sessions_per_s``) and once every worker is up
(``sessions_per_s_after_start``: wall time minus ``workers_ready_s``, the seconds until the
last worker's services were built; 0 for local).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from promem_fast.bench import machine_info  # noqa: E402
from promem_fast.bulk import GRAPHS_NAME, run_bulk  # noqa: E402
from promem_fast.config import Config  # noqa: E402
from promem_fast.io import load_sessions  # noqa: E402

try:  # the driver's imports stay outside wall_s, as the local engine's do
    import ray  # noqa: F401
    import ray.data  # noqa: F401
except ImportError:  # local configurations only
    ray = None

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo_dev.json"
CONFIGS = {"local": ("local", 0), "ray1": ("ray", 1), "ray2": ("ray", 2)}


def bench_sessions(path: Path, n: int) -> list:
    """``n`` LoCoMo sessions: every session as speaker_a, then as speaker_b (ids suffixed)."""
    out = list(load_sessions(path, "locomo", user_speaker="speaker_a"))
    for s in load_sessions(path, "locomo", user_speaker="speaker_b"):
        out.append(s.model_copy(update={"session_id": f"{s.session_id}@speaker_b"}))
    if len(out) < n:
        raise ValueError(f"--sessions {n}: {path} gives only {len(out)} sessions (both speakers)")
    return out[:n]


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _busy_cpu_s() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (``/proc/stat``: user, nice,
    system, irq, softirq, steal; guest time is already inside user and nice), None where
    there is no ``/proc/stat``. The difference over a job counts Ray's own processes
    (raylet, GCS, worker start) beside the job's, and anything else running on the machine."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    except (OSError, ValueError, IndexError):
        return None
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _canon_lines(out: Path) -> list[str]:
    from promem_fast.bench import canonical
    from promem_fast.schema import MemoryGraph

    return [canonical(MemoryGraph.from_json(x)) for x in (out / GRAPHS_NAME).read_text().splitlines()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo JSON (default ../shared/data/locomo_dev.json)")
    p.add_argument("--sessions", type=int, default=64)
    p.add_argument("--latency-ms", type=float, default=50.0, help="scripted LLM latency per call (ms)")
    p.add_argument("--concurrency", type=int, default=16, help="sessions in flight per process / per worker")
    p.add_argument("--configs", default="local,ray1,ray2", help="comma list of: " + ", ".join(CONFIGS))
    p.add_argument("--batch-size", type=int, default=None, help="ray: sessions per map_batches call (default: half of --concurrency)")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed 2-session run before each configuration")
    p.add_argument("--out", type=Path, default=None, help="append the JSON lines to this file")
    args = p.parse_args(argv)
    names = [c.strip() for c in args.configs.split(",") if c.strip()]
    bad = [c for c in names if c not in CONFIGS]
    if bad:
        p.error(f"--configs: unknown {bad}; choose from {list(CONFIGS)}")
    if ray is None and any(CONFIGS[c][0] == "ray" for c in names):
        p.error("the ray configurations need Ray: pip install 'promem-fast[distributed]'")
    sessions = bench_sessions(args.data, args.sessions)
    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    common = {
        "bench": "bench_ray", "commit": _commit(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(), "sessions": len(sessions), "input": args.data.name,
        "llm": f"scripted@{args.latency_ms:g}ms", "concurrency_per_worker": args.concurrency,
        "batch_size": args.batch_size, "warmup": not args.no_warmup,
    }
    records, canon = [], {}
    ray_init_s = None
    for name in names:
        engine, workers = CONFIGS[name]
        kw = {}
        if engine == "ray":
            from promem_fast.distributed import RayOptions, init_ray

            if not ray.is_initialized():
                t = time.perf_counter()
                init_ray(RayOptions(num_cpus=os.cpu_count()), log_to_driver=False)
                ray_init_s = round(time.perf_counter() - t, 3)
            kw = {"engine": "ray", "ray": RayOptions(workers=workers, cpus_per_worker=1, batch_size=args.batch_size)}
        with tempfile.TemporaryDirectory(prefix=f"bench_ray_{name}_") as tmp:
            warmup_s = None
            if not args.no_warmup:  # untimed: the same job on 2 sessions
                t = time.perf_counter()
                run_bulk([args.data], Path(tmp) / "warmup", "locomo", args.concurrency, cfg, sessions_list=sessions[:2],
                         progress=False, scripted_latency_s=args.latency_ms / 1000.0, **kw)
                warmup_s = round(time.perf_counter() - t, 3)
            out = Path(tmp) / "out"
            cpu0 = _busy_cpu_s()
            t = time.perf_counter()
            rep = run_bulk([args.data], out, "locomo", args.concurrency, cfg, sessions_list=sessions,
                           progress=False, scripted_latency_s=args.latency_ms / 1000.0, **kw)
            wall = time.perf_counter() - t
            cpu1 = _busy_cpu_s()
            canon[name] = _canon_lines(out)
        rec = dict(common, config=name, engine=engine, workers=workers or None, wall_s=round(wall, 3),
                   sessions_per_s=round(rep.ok / wall, 4), tokens_per_s=round(rep.tokens / wall, 1),
                   ok=rep.ok, failed=rep.failed, tokens=rep.tokens, warmup_s=warmup_s,
                   machine_load_after=round(os.getloadavg()[0], 2))
        if cpu0 is not None and cpu1 is not None:
            # cores kept busy on average: near the core count, the job is CPU-bound on this machine
            rec["machine_cpu_s"] = round(cpu1 - cpu0, 2)
            rec["machine_cores_busy"] = round((cpu1 - cpu0) / wall, 2)
        start = 0.0
        if engine == "ray":
            rec["ray_init_s"] = ray_init_s
            rec["sessions_per_node"] = (rep.ray or {}).get("sessions_per_node")
            start = (rep.ray or {}).get("workers_ready_s") or 0.0
            rec["workers_ready_s"] = start
        # throughput once every worker is up (actor start-up is a fixed cost per job)
        rec["sessions_per_s_after_start"] = round(rep.ok / max(wall - start, 1e-9), 4)
        records.append(rec)
        print(json.dumps(rec), flush=True)
    ratio = {"bench": "bench_ray", "commit": common["commit"], "date": common["date"], "machine": common["machine"], "ratios": {},
             "targets_met": {}}
    for basis in ("sessions_per_s", "sessions_per_s_after_start"):
        rate = {r["config"]: r[basis] for r in records}
        tag = "" if basis == "sessions_per_s" else "_after_start"
        if "ray1" in rate and "ray2" in rate:
            ratio["ratios"]["ray2_over_ray1" + tag] = round(rate["ray2"] / rate["ray1"], 3)
            ratio["targets_met"]["ray2_over_ray1>=1.7" + tag] = rate["ray2"] / rate["ray1"] >= 1.7
        if "ray1" in rate and "local" in rate:
            ratio["ratios"]["ray1_over_local" + tag] = round(rate["ray1"] / rate["local"], 3)
            ratio["targets_met"]["ray1_over_local>=0.85" + tag] = rate["ray1"] / rate["local"] >= 0.85
    ratio["same_graphs_all_configs"] = len({tuple(v) for v in canon.values()}) == 1
    records.append(ratio)
    print(json.dumps(ratio), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
