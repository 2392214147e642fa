"""Bulk extraction on Ray Data: the same job as :mod:`promem_fast.bulk`, spread over worker
actors on any number of GPUs and nodes.

    promem-fast bulk INPUT... --out DIR --engine ray [--address auto|ray://HOST:PORT] \\
        [--workers N] [--gpus-per-worker G] [--concurrency C]

Who does what:

* the driver (this process) loads the inputs, drops the sessions that ``DIR/bulk.sqlite``
  already holds (keyed by session id), and turns the rest into a Ray Dataset of sessions
  (:func:`sessions_dataset`; one row per session: ``ordinal``, ``session_json``);
* ``Dataset.map_batches(BulkWorker, ...)`` runs a fixed pool of ``workers`` actors
  (``ActorPoolStrategy(size=N)``, ``num_gpus=G`` each). A :class:`BulkWorker` holds one set
  of services built from the Config (in-process vLLM on its GPUs, or llamacpp / openai /
  scripted) and the batched scheduler of the local engine, on one event loop that every
  batch the actor receives shares: up to ``concurrency`` sessions in flight per worker,
  their model calls micro-batched together (continuous batching and prefix caching stay
  inside the worker's vLLM);
* the driver streams the result rows (``iter_rows``) and commits each one in its own
  transaction, as the local engine does; ``graphs.jsonl`` / ``failed.jsonl`` are exported
  from the database at the end, so the files do not depend on the engine.

Scheduling, retries of tasks lost with a dead worker (Ray Data actors restart,
``max_restarts=-1``), object transfer and placement are Ray's. A SIGKILL of the driver
loses only the sessions in flight; the next run with the same arguments skips every
committed session. A session delivered twice (a retried task) is committed once.

Test hook: env ``PROMEM_FAST_WORKER_KILL_AT="N:MARKER"`` (read by the driver, passed to
the workers): the worker that finishes its N-th batch first, while the file MARKER does
not exist, creates MARKER and SIGKILLs itself before returning the batch.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from .config import Config
from .schema import Session

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'promem-fast[distributed]'"
KILL_ENV = "PROMEM_FAST_WORKER_KILL_AT"
RESULT_COLUMNS = ("session_id", "ordinal", "graph_json", "error", "tokens", "llm_calls", "seconds", "node_id", "pid",
                  "ready_at")


def require_ray() -> Any:
    """Import Ray (with Ray Data); ImportError with the pip command when it is missing."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as e:
        raise ImportError(f"--engine ray needs Ray Data: {INSTALL_HINT} ({e})") from e
    return ray


@dataclass
class RayOptions:
    """Where and how wide the Ray job runs.

    address: cluster to join: "auto" (a ``ray start`` cluster on this node), "HOST:PORT" (its
        GCS), "ray://HOST:PORT" (Ray Client); None = ``$RAY_ADDRESS``, else a new local Ray
        started (and stopped) by the job. Ignored when Ray is already initialised in this
        process.
    workers: worker actors (>= 1), each with its own services (one model per worker).
    gpus_per_worker: GPUs per actor (>= 0); None = ``llm.vllm.tensor_parallel_size`` (1 if
        unset) for the vllm backend, else 0.
    cpus_per_worker: CPUs per actor (>= 0).
    batch_size: sessions per ``map_batches`` call (>= 1); None = max(1, ceil(concurrency / 2)).
        Smaller batches stream results back sooner (less work lost to a driver crash).
    calls_per_worker: batches one actor runs at once (>= 1): with batch_size, how many
        sessions are queued at a worker so that it never waits for the next batch.
    num_cpus: CPUs of a local Ray started by the job (None = all); ignored otherwise.
    start_timeout_s: how long the job waits for all ``workers`` actors to start (models
        loaded) before sending sessions, so that the work spreads over all of them (Ray
        Data's ``wait_for_min_actors_s``); Ray raises GetTimeoutError when the cluster
        cannot place them in time. <= 0: start at once, actors join as they come up.
    """

    address: Optional[str] = None
    workers: int = 1
    gpus_per_worker: Optional[float] = None
    cpus_per_worker: float = 1.0
    batch_size: Optional[int] = None
    calls_per_worker: int = 4
    num_cpus: Optional[int] = None
    start_timeout_s: float = 1800.0

    def validate(self, config: Config) -> None:
        """Raise ValueError naming the field when an option is out of range or inconsistent
        with ``config`` (fewer GPUs per worker than the vLLM tensor parallel size)."""
        if not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"RayOptions.workers (--workers) must be a whole number >= 1, got {self.workers!r}")
        if self.gpus_per_worker is not None and self.gpus_per_worker < 0:
            raise ValueError(f"RayOptions.gpus_per_worker (--gpus-per-worker) must be >= 0, got {self.gpus_per_worker!r}")
        if self.cpus_per_worker < 0:
            raise ValueError(f"RayOptions.cpus_per_worker (--cpus-per-worker) must be >= 0, got {self.cpus_per_worker!r}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"RayOptions.batch_size (--batch-size) must be >= 1, got {self.batch_size!r}")
        if self.calls_per_worker < 1:
            raise ValueError(f"RayOptions.calls_per_worker must be >= 1, got {self.calls_per_worker!r}")
        if self.address is not None and not (self.address == "auto" or "://" in self.address or ":" in self.address):
            raise ValueError(f"RayOptions.address (--address) must be auto, ray://HOST:PORT or HOST:PORT, "
                             f"got {self.address!r}")
        tp = config.llm.vllm.tensor_parallel_size or 1
        if config.llm.backend == "vllm" and self.gpus_per_worker is not None and self.gpus_per_worker < tp:
            raise ValueError(f"RayOptions.gpus_per_worker (--gpus-per-worker) is {self.gpus_per_worker:g}, less than "
                             f"llm.vllm.tensor_parallel_size {tp}: each worker holds one whole model")

    def gpus(self, config: Config) -> float:
        """GPUs each worker asks Ray for."""
        if self.gpus_per_worker is not None:
            return float(self.gpus_per_worker)
        if config.llm.backend == "vllm":
            return float(config.llm.vllm.tensor_parallel_size or 1)
        return 0.0

    def batch(self, concurrency: int) -> int:
        """Sessions per ``map_batches`` call."""
        return self.batch_size or max(1, math.ceil(concurrency / 2))


# -- worker -------------------------------------------------------------------------


def worker_config(config: Config) -> Config:
    """The Config a worker builds its services from: for vLLM with tensor parallelism,
    ``distributed_executor_backend`` defaults to "mp" (the ranks are processes on the GPUs
    Ray gave this actor, not new Ray actors that would wait for GPUs the actor holds)."""
    cfg = config.model_copy(deep=True)
    v = cfg.llm.vllm
    if cfg.llm.backend == "vllm" and (v.tensor_parallel_size or 1) > 1 and v.distributed_executor_backend is None:
        v.distributed_executor_backend = "mp"
    return cfg


class BulkWorker:
    """Ray Data callable class: extracts the sessions of each batch it is given.

    One instance per actor. It builds ``Services.from_config(config)`` once, wraps them for
    the batched engine (sequential when ``concurrency == 1``) and runs an event loop in a
    thread of its own; every batch (possibly several at once, one per actor thread) submits
    its sessions to that loop, where at most ``concurrency`` sessions run at a time and
    share the micro-batched services.

    Args:
        config_json: ``Config.model_dump_json()`` of the job.
        concurrency: sessions in flight in this worker (>= 1).
        scripted_latency_s: scripted LLM only: seconds per ``generate`` call.
        kill_at: test hook ``"N:MARKER"`` (see the module docstring).

    Call: ``batch`` is a dict of columns with ``ordinal`` (int) and ``session_json``
    (``Session`` JSON) of equal length; returns the columns of :data:`RESULT_COLUMNS`, one
    row per session: ``graph_json`` ("" when it failed), ``error`` ("" when it did not),
    prompt + completion ``tokens``, ``llm_calls``, ``seconds``, the Ray ``node_id`` and
    ``pid`` of the worker and ``ready_at`` (epoch seconds its services were built). A session that raises, or whose JSON does not parse, is a row
    with its error; the call itself raises only if the worker is broken.
    """

    def __init__(self, config_json: str, concurrency: int = 1, scripted_latency_s: float = 0.0,
                 kill_at: Optional[str] = None):
        from .context import Services
        from .engine.scheduler import build_extractor

        if concurrency < 1:
            raise ValueError(f"BulkWorker concurrency must be >= 1, got {concurrency}")
        cfg = worker_config(Config.model_validate_json(config_json))
        self.config = cfg
        self.concurrency = concurrency
        self.services = Services.from_config(cfg, scripted_latency_s=scripted_latency_s)
        self.extractor, self.wrapped = build_extractor(
            cfg, self.services, engine="sequential" if concurrency == 1 else "batched", concurrency=concurrency
        )
        self.kill_at = kill_at
        self.batches = 0
        self._count_lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="promem-worker-loop", daemon=True)
        self._thread.start()
        self._sem: Optional[asyncio.Semaphore] = None
        self.node_id = _node_id()
        self.pid = os.getpid()
        self.ready_at = time.time()  # epoch seconds when this worker could take sessions

    async def _extract(self, sessions: list[Session]) -> list[Any]:
        from .engine.scheduler import run_sessions

        if self._sem is None:  # created on the worker's loop
            self._sem = asyncio.Semaphore(self.concurrency)
        sem = self._sem
        extract = getattr(self.extractor, "aextract", self.extractor)

        async def gated(s: Session):
            async with sem:
                return await extract(s)

        out = [r async for r in run_sessions(sessions, gated, max(1, len(sessions)))]
        out.sort(key=lambda r: r.index)
        return out

    def __call__(self, batch: dict[str, Any]) -> dict[str, list]:
        from .engine.scheduler import format_error

        ordinals = [int(x) for x in batch["ordinal"]]
        texts = [str(x) for x in batch["session_json"]]
        rows: dict[int, dict[str, Any]] = {}
        sessions: list[Session] = []
        where: list[int] = []
        for k, text in enumerate(texts):
            try:
                sessions.append(Session.model_validate_json(text))
                where.append(k)
            except Exception as e:  # noqa: BLE001 - a bad row is that session's error
                rows[k] = self._row(f"#{ordinals[k]}", ordinals[k], None, format_error(e), 0, 0, 0.0)
        if sessions:
            results = asyncio.run_coroutine_threadsafe(self._extract(sessions), self.loop).result()
            for k, res in zip(where, results):
                g = res.graph
                if g is None:
                    rows[k] = self._row(res.session_id, ordinals[k], None, res.error, 0, 0, res.seconds)
                else:
                    rows[k] = self._row(res.session_id, ordinals[k], g.to_json(indent=None), None,
                                        g.stats.prompt_tokens + g.stats.completion_tokens, g.stats.llm_calls,
                                        res.seconds)
        self._maybe_kill()
        ordered = [rows[k] for k in range(len(texts))]
        return {c: [r[c] for r in ordered] for c in RESULT_COLUMNS}

    def _row(self, sid: str, ordinal: int, graph_json: Optional[str], error: Optional[str], tokens: int,
             calls: int, seconds: float) -> dict[str, Any]:
        return {"session_id": sid, "ordinal": ordinal, "graph_json": graph_json or "", "error": error or "",
                "tokens": int(tokens), "llm_calls": int(calls), "seconds": float(seconds),
                "node_id": self.node_id, "pid": self.pid, "ready_at": self.ready_at}

    def close(self) -> None:
        """Stop the worker's event loop and close an LLM backend that has ``close`` (vLLM)."""
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
        close = getattr(self.services.llm, "close", None)
        if callable(close):
            close()

    def _maybe_kill(self) -> None:
        if not self.kill_at:
            return
        with self._count_lock:
            self.batches += 1
            n = self.batches
        at, _, marker = self.kill_at.partition(":")
        if n == int(at) and marker and not os.path.exists(marker):
            Path(marker).write_text(f"{os.getpid()}\n")
            logger.error("kill hook: worker %d SIGKILLs itself after batch %d", os.getpid(), n)
            os.kill(os.getpid(), signal.SIGKILL)


def _node_id() -> str:
    try:
        import ray

        if ray.is_initialized():
            return ray.get_runtime_context().get_node_id()
    except Exception:  # noqa: BLE001 - outside Ray (direct use, tests)
        pass
    return "local"


# -- datasets -----------------------------------------------------------------------


def sessions_dataset(sessions: Sequence[Session], ordinals: Optional[Sequence[int]] = None,
                     batch_size: int = 8) -> Any:
    """A Ray Dataset with one row per session: ``ordinal`` (int, input position; default
    0..n-1) and ``session_json`` (str). Split into blocks of ``batch_size`` rows, so that
    the workers' batches stream back one by one.

    Raises ValueError when ``ordinals`` and ``sessions`` differ in length; ImportError
    without Ray."""
    ray = require_ray()
    ords = list(range(len(sessions))) if ordinals is None else [int(i) for i in ordinals]
    if len(ords) != len(sessions):
        raise ValueError(f"ordinals has {len(ords)} entries for {len(sessions)} sessions")
    items = [{"ordinal": i, "session_json": s.model_dump_json()} for i, s in zip(ords, sessions)]
    return ray.data.from_items(items, override_num_blocks=max(1, math.ceil(len(items) / max(1, batch_size))))


def load_dataset(inputs: Sequence[Union[str, Path]], fmt: Optional[str] = None, batch_size: int = 8,
                 **loader_kwargs: Any) -> Any:
    """:func:`sessions_dataset` of every session in ``inputs`` (``bulk.load_inputs``: any
    format ``io.load_sessions`` reads, later duplicate ids dropped). Loader errors
    (FileNotFoundError, ValueError) propagate."""
    from .bulk import load_inputs

    return sessions_dataset(load_inputs(inputs, fmt, **loader_kwargs), batch_size=batch_size)


def extract_dataset(ds: Any, config: Config, concurrency: int = 1, options: Optional[RayOptions] = None,
                    scripted_latency_s: float = 0.0) -> Any:
    """``ds.map_batches(BulkWorker, ...)``: a lazy Dataset of result rows (:data:`RESULT_COLUMNS`).

    Args:
        ds: a Dataset of :func:`sessions_dataset` rows.
        config: the job's Config (services of every worker are built from it).
        concurrency: sessions in flight per worker (>= 1).
        options: RayOptions (workers, GPUs / CPUs per worker, batch size).
        scripted_latency_s: scripted LLM: seconds per call.

    Raises ValueError (the field named) for bad options.
    """
    require_ray()
    from ray.data import ActorPoolStrategy

    options = options or RayOptions()
    options.validate(config)
    if concurrency < 1:
        raise ValueError(f"concurrency (--concurrency) must be >= 1, got {concurrency}")
    # Each actor runs several batches at once (threads) on one shared event loop.
    compute = ActorPoolStrategy(size=options.workers, max_concurrent_calls_per_actor=options.calls_per_worker,
                                enable_true_multi_threading=True)
    kw: dict[str, Any] = {}
    gpus = options.gpus(config)
    if gpus:
        kw["num_gpus"] = gpus
    return ds.map_batches(
        BulkWorker,
        fn_constructor_kwargs={"config_json": config.model_dump_json(), "concurrency": concurrency,
                               "scripted_latency_s": scripted_latency_s, "kill_at": os.environ.get(KILL_ENV)},
        batch_size=options.batch(concurrency),
        batch_format="numpy",
        compute=compute,
        num_cpus=options.cpus_per_worker,
        **kw,
    )


# -- the bulk job -------------------------------------------------------------------


class _RowPump:
    """Runs a result Dataset on the cluster and hands its rows out in chunks: the driver's
    stream under Ray Client (``ray://``), which runs neither Ray Data's executor nor
    streaming generators on the client side (Ray 2.60)."""

    def __init__(self, ds: Any, settings: dict[str, Any]):
        import queue

        from ray.data import DataContext

        ctx = DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.wait_for_min_actors_s = settings["wait_for_min_actors_s"]
        ctx.execution_options.actor_locality_enabled = False
        self._q: "queue.Queue" = queue.Queue()
        self._done = False
        self._err: Optional[str] = None
        threading.Thread(target=self._run, args=(ds,), daemon=True).start()

    def _run(self, ds: Any) -> None:
        try:
            for r in ds.iter_rows():
                self._q.put({c: (r[c].item() if hasattr(r[c], "item") else r[c]) for c in RESULT_COLUMNS})
        except BaseException as e:  # noqa: BLE001 - reported to the driver
            self._err = f"{type(e).__name__}: {e}"
        finally:
            self._done = True

    def take(self, n: int, wait_s: float) -> tuple[list[dict], bool, Optional[str]]:
        """Up to ``n`` rows (waiting up to ``wait_s`` for the first), whether all rows are out, the error."""
        import queue

        done = self._done  # read first: rows queued before it was set are in the queue
        rows = []
        try:
            rows.append(self._q.get(timeout=wait_s))
            while len(rows) < n:
                rows.append(self._q.get_nowait())
        except queue.Empty:
            pass
        return rows, done and self._q.empty(), self._err


def _iter_rows(results: Any, client: bool, wait_for_min_actors_s: int) -> Any:
    """Result rows as they arrive: ``iter_rows`` here, or through a :class:`_RowPump` actor under Ray Client."""
    if not client:
        yield from results.iter_rows()
        return
    ray = require_ray()
    pump = ray.remote(num_cpus=0)(_RowPump).remote(results, {"wait_for_min_actors_s": wait_for_min_actors_s})
    try:
        while True:
            rows, done, err = ray.get(pump.take.remote(256, 1.0))
            yield from rows
            if err:
                raise RuntimeError(f"Ray Data job failed on the cluster: {err}")
            if done:
                return
    finally:
        ray.kill(pump)


def _is_ray_client() -> bool:
    """Whether this process talks to Ray through Ray Client (``ray://``)."""
    try:
        from ray.util.client import ray as client_ray

        return bool(client_ray.is_connected())
    except Exception:  # noqa: BLE001 - no client support installed
        return False


def init_ray(options: Optional[RayOptions] = None, *, log_to_driver: bool = True) -> bool:
    """Connect to the Ray of ``options.address`` (or ``$RAY_ADDRESS``), or start a local
    one without the dashboard and with ``options.num_cpus`` CPUs (None = all), unless this
    process is connected already. ``benchmarks/bench_ray.py`` starts its Ray with it too.

    Returns True when this call connected (the caller calls ``ray.shutdown()``).
    Raises ImportError without Ray; Ray's ConnectionError when the address is unreachable.
    """
    ray = require_ray()
    if ray.is_initialized():
        return False
    options = options or RayOptions()
    address = options.address
    kw: dict[str, Any] = {"log_to_driver": log_to_driver}
    if address is None and not os.environ.get("RAY_ADDRESS"):
        # "local": a new Ray for this job, never a stale `ray start` cluster found on the node
        address = "local"
        kw["include_dashboard"] = False
        if options.num_cpus is not None:
            kw["num_cpus"] = options.num_cpus
    ray.init(address=address, **kw)
    return True


def run_bulk_ray(
    inputs: Sequence[Union[str, Path]],
    out_dir: Union[str, Path],
    fmt: Optional[str] = None,
    concurrency: int = 1,
    config: Optional[Config] = None,
    retry_failed: bool = False,
    *,
    options: Optional[RayOptions] = None,
    sessions_list: Optional[Sequence[Session]] = None,
    progress: bool = True,
    export: bool = True,
    scripted_latency_s: float = 0.0,
    **loader_kwargs: Any,
) -> Any:
    """:func:`promem_fast.bulk.run_bulk` on Ray Data workers (same arguments, same files,
    same resume rules).

    Args:
        inputs, out_dir, fmt, concurrency, config, retry_failed, sessions_list, progress,
            export, scripted_latency_s, loader_kwargs: as in ``run_bulk``; ``concurrency``
            is per worker.
        options: RayOptions (None = RayOptions(): a local Ray, one worker).

    Returns:
        BulkReport (``ray``: workers and sessions committed per node in this run).

    Raises:
        BulkJobMismatch: ``out_dir`` holds another job. ValueError: bad options or input.
        ImportError: Ray is not installed. A broken worker (services that cannot be built)
        raises Ray's error; sessions committed until then stay.
    """
    from tqdm.auto import tqdm

    from .bulk import BulkReport, _check_job, _Committer, export_jsonl, input_key, load_inputs, open_db, pending_sessions

    config = config or Config()
    options = options or RayOptions()
    options.validate(config)
    if concurrency < 1:
        raise ValueError(f"concurrency (--concurrency) must be >= 1, got {concurrency}")
    require_ray()
    out = Path(out_dir)
    key, desc = input_key(inputs, fmt, config, loader_kwargs)
    conn = open_db(out)
    report = BulkReport(out_dir=str(out))
    started = False
    try:
        _check_job(conn, key, desc, out)
        sessions = list(sessions_list) if sessions_list is not None else load_inputs(inputs, fmt, **loader_kwargs)
        report.total = len(sessions)
        todo = pending_sessions(conn, sessions, retry_failed)
        report.skipped = report.total - len(todo)
        logger.info("bulk %s (ray): %d sessions, %d to do, %d skipped", out, report.total, len(todo), report.skipped)
        if todo:
            started = init_ray(options)
            from ray.data import DataContext

            ctx = DataContext.get_current()
            saved = (ctx.enable_progress_bars, ctx.wait_for_min_actors_s, ctx.execution_options.actor_locality_enabled)
            if not progress:
                ctx.enable_progress_bars = False
            if options.start_timeout_s > 0:
                ctx.wait_for_min_actors_s = max(1, int(options.start_timeout_s))
            # Session rows are small: spread them over every worker rather than to the
            # actors on the node that holds the input blocks (the driver's).
            ctx.execution_options.actor_locality_enabled = False
            batch = options.batch(concurrency)
            ds = sessions_dataset([s for _, s in todo], [i for i, _ in todo], batch_size=batch)
            results = extract_dataset(ds, config, concurrency, options, scripted_latency_s)
            by_ordinal = {i: s.session_id for i, s in todo}
            wanted = set(by_ordinal.values())
            done: set[str] = set()
            nodes: Counter = Counter()
            ready: dict[int, float] = {}
            committer = _Committer(conn, key)
            t0, t0_epoch = time.perf_counter(), time.time()
            bar = tqdm(total=len(todo), unit="session", disable=not progress, dynamic_ncols=True)
            try:
                client = _is_ray_client()
                for row in _iter_rows(results, client, ctx.wait_for_min_actors_s):
                    sid = by_ordinal.get(int(row["ordinal"]), str(row["session_id"]))
                    if sid in done or sid not in wanted:  # a retried task delivered it again
                        logger.warning("ignoring a second result for session %r", sid)
                        continue
                    graph = str(row["graph_json"]) or None
                    err = None if graph is not None else (str(row["error"]) or "unknown error")
                    report.tokens += committer.commit_row(sid, int(row["ordinal"]), graph, err, int(row["tokens"]),
                                                          int(row["llm_calls"]), float(row["seconds"]))
                    done.add(sid)
                    nodes[str(row["node_id"])] += 1
                    ready.setdefault(int(row["pid"]), float(row["ready_at"]))
                    if graph is not None:
                        report.ok += 1
                    else:
                        report.failed += 1
                    dt = max(time.perf_counter() - t0, 1e-9)
                    bar.update(1)
                    bar.set_postfix(
                        {"sessions/s": f"{len(done) / dt:.2f}", "tokens/s": f"{report.tokens / dt:.0f}",
                         "failed": report.failed, "nodes": len(nodes)},
                        refresh=False,
                    )
            finally:
                bar.close()
                ctx.enable_progress_bars, ctx.wait_for_min_actors_s = saved[0], saved[1]
                ctx.execution_options.actor_locality_enabled = saved[2]
            report.seconds = time.perf_counter() - t0
            missing = wanted - done
            if missing:  # Ray finished without them: never silently lost
                raise RuntimeError(f"Ray returned no result for {len(missing)} session(s), e.g. {sorted(missing)[:3]}; "
                                   "run the same command again to resume")
            starts = sorted(ready.values())[: options.workers]
            report.ray = {"workers": options.workers, "sessions_per_node": dict(sorted(nodes.items())),
                          "workers_ready_s": round(max(starts) - t0_epoch, 3) if starts else None}
        report.failures = dict(
            conn.execute("SELECT session_id, error FROM sessions WHERE status='failed' ORDER BY ordinal")
        )
    finally:
        conn.close()
        if started:
            import ray

            ray.shutdown()
    if export:
        export_jsonl(out)
    return report


__all__ = [
    "BulkWorker", "RayOptions", "RESULT_COLUMNS", "extract_dataset", "init_ray", "load_dataset", "require_ray",
    "run_bulk_ray", "sessions_dataset", "worker_config",
]
