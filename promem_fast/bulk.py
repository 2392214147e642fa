"""Bulk extraction over thousands of sessions, resumable after a crash at any moment.

``promem-fast bulk INPUT... --out DIR [--format F] [--concurrency N] [--retry-failed]
[--engine local|ray ...]``; ``--engine ray`` runs the sessions on Ray Data workers
(:mod:`promem_fast.distributed`, docs/distributed.md) with the same storage and resume rules.

Storage: SQLite in WAL mode, ``DIR/bulk.sqlite``, one transaction per finished session,
then an export ``DIR/graphs.jsonl`` (ok sessions, input order) and ``DIR/failed.jsonl``.

Why SQLite rather than an fsync'ed JSONL log:

* atomicity per session comes from the transaction: after ``kill -9`` a half-written record
  is rolled back on the next open (WAL recovery), where a JSONL log leaves a torn last line
  that every reader would have to detect and truncate;
* ``session_id PRIMARY KEY`` makes a duplicate impossible, even if a session is redone
  after a crash between "graph computed" and "committed";
* ``--retry-failed`` updates a failed row in place; with JSONL it would append a second
  record for the same session and every reader would need "last one wins" logic;
* resume reads one indexed column instead of re-parsing every graph written so far.

The JSONL export is written to a temporary file, fsync'ed and renamed, so ``graphs.jsonl``
is always either the previous complete export or the new one.

Resume rule: a session whose id is already ``ok`` in the database is skipped; a ``failed``
one is skipped too unless ``retry_failed``. The job's input key (a hash of the input
paths, format, selection and the memory-relevant config) is stored in the database; a
different job in the same directory is refused (:class:`BulkJobMismatch`).

Test hook: env ``PROMEM_FAST_CRASH_AT="before:N" | "during:N" | "after:N"`` makes the
process ``os._exit(70)`` just before the N-th commit of this run (graph computed, nothing
written), inside it (row inserted, transaction not committed), or right after it.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from .argtypes import nonneg_float as _nonneg_float
from .argtypes import positive_int as _pos_int
from .config import Config
from .engine.scheduler import SessionResult, run_sessions
from .schema import Session

logger = logging.getLogger(__name__)

DB_NAME = "bulk.sqlite"
GRAPHS_NAME = "graphs.jsonl"
FAILED_NAME = "failed.jsonl"
CRASH_ENV = "PROMEM_FAST_CRASH_AT"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id  TEXT PRIMARY KEY,
    input_key   TEXT NOT NULL,
    ordinal     INTEGER NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    graph_json  TEXT,
    error       TEXT,
    tokens      INTEGER NOT NULL DEFAULT 0,
    llm_calls   INTEGER NOT NULL DEFAULT 0,
    seconds     REAL NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 1,
    finished_at TEXT NOT NULL
);
"""


class BulkJobMismatch(ValueError):
    """The output directory holds a different bulk job (other inputs or config)."""


@dataclass
class BulkReport:
    """What one ``run_bulk`` call did.

    total: sessions in the input (after de-duplication of ids); skipped: already done (or
    failed and not retried) before this run; ok / failed: finished in this run;
    tokens: prompt + completion tokens spent in this run; seconds: wall time of this run.
    ray: ``--engine ray`` only, of this run: ``{"workers": N, "sessions_per_node": {node_id: n},
    "workers_ready_s": seconds until the workers' services were built}``.
    failures: ``{session_id: error}`` of every session failed in the database now, from this
    run or an earlier one (``failed_total`` in :meth:`as_dict`).
    """

    out_dir: str
    total: int = 0
    skipped: int = 0
    ok: int = 0
    failed: int = 0
    tokens: int = 0
    seconds: float = 0.0
    failures: dict[str, str] = field(default_factory=dict)
    ray: Optional[dict[str, Any]] = None  # --engine ray only: workers and sessions per node

    def as_dict(self) -> dict[str, Any]:
        d = {
            "out_dir": self.out_dir, "total": self.total, "skipped": self.skipped, "ok": self.ok,
            "failed": self.failed, "tokens": self.tokens, "seconds": round(self.seconds, 3),
            "failed_total": len(self.failures), "failures": self.failures,
        }
        if self.ray is not None:
            d["ray"] = self.ray
        return d


# -- storage ------------------------------------------------------------------------


def open_db(out_dir: Union[str, Path]) -> sqlite3.Connection:
    """Open (creating) ``out_dir/bulk.sqlite`` in WAL mode with full fsync on commit."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(out / DB_NAME, isolation_level=None)  # explicit BEGIN/COMMIT
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")  # commit survives power loss, not only kill -9
    conn.executescript(_SCHEMA)
    return conn


def _crash_point() -> tuple[Optional[str], int]:
    spec = os.environ.get(CRASH_ENV)
    if not spec:
        return None, 0
    where, _, n = spec.partition(":")
    if where not in ("before", "during", "after") or not n.isdigit():
        raise ValueError(f"{CRASH_ENV} must be before:N, during:N or after:N, got {spec!r}")
    return where, int(n)


class _Committer:
    """Writes one finished session per transaction (and runs the crash test hook)."""

    def __init__(self, conn: sqlite3.Connection, input_key: str):
        self.conn = conn
        self.input_key = input_key
        self.commits = 0
        self.crash_where, self.crash_n = _crash_point()

    def _maybe_crash(self, where: str) -> None:
        if self.crash_where == where and self.commits + 1 == self.crash_n:
            logger.error("crash hook %s:%d: exiting", where, self.crash_n)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(70)

    def commit(self, res: SessionResult, ordinal: int) -> int:
        """Store ``res``; returns its prompt + completion tokens."""
        g = res.graph
        tokens = (g.stats.prompt_tokens + g.stats.completion_tokens) if g is not None else 0
        calls = g.stats.llm_calls if g is not None else 0
        return self.commit_row(res.session_id, ordinal, g.to_json(indent=None) if g is not None else None,
                               res.error, tokens, calls, res.seconds)

    def commit_row(self, session_id: str, ordinal: int, graph_json: Optional[str], error: Optional[str],
                   tokens: int, llm_calls: int, seconds: float) -> int:
        """Store one finished session (ok when ``graph_json`` is set, else failed with
        ``error``) in one transaction; returns ``tokens``."""
        row = (
            session_id, self.input_key, int(ordinal), "ok" if graph_json is not None else "failed",
            graph_json, error, int(tokens), int(llm_calls),
            float(seconds), datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        self._maybe_crash("before")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute(
                "INSERT INTO sessions (session_id, input_key, ordinal, status, graph_json, error, tokens,"
                " llm_calls, seconds, finished_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(session_id) DO UPDATE SET status=excluded.status, graph_json=excluded.graph_json,"
                " error=excluded.error, tokens=excluded.tokens, llm_calls=excluded.llm_calls,"
                " seconds=excluded.seconds, finished_at=excluded.finished_at, attempts=sessions.attempts+1",
                row,
            )
            self._maybe_crash("during")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self._maybe_crash("after")
        self.commits += 1
        return int(tokens)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write_lines(path: Path, lines: Iterable[str]) -> int:
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line)
            f.write("\n")
            n += 1
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)
    return n


def export_jsonl(out_dir: Union[str, Path]) -> tuple[int, int]:
    """Write ``graphs.jsonl`` (ok graphs, input order) and ``failed.jsonl`` from the database.

    Each file is replaced atomically. Returns (graphs written, failures written).
    """
    out = Path(out_dir)
    conn = open_db(out)
    try:
        n_ok = _atomic_write_lines(
            out / GRAPHS_NAME,
            (r[0] for r in conn.execute("SELECT graph_json FROM sessions WHERE status='ok' ORDER BY ordinal, session_id")),
        )
        n_bad = _atomic_write_lines(
            out / FAILED_NAME,
            (
                json.dumps({"session_id": sid, "error": err, "attempts": att}, ensure_ascii=False)
                for sid, err, att in conn.execute(
                    "SELECT session_id, error, attempts FROM sessions WHERE status='failed' ORDER BY ordinal, session_id"
                )
            ),
        )
    finally:
        conn.close()
    return n_ok, n_bad


def list_failed(out_dir: Union[str, Path]) -> dict[str, str]:
    """``{session_id: error}`` of the failed sessions recorded in ``out_dir``."""
    conn = open_db(out_dir)
    try:
        return dict(conn.execute("SELECT session_id, error FROM sessions WHERE status='failed' ORDER BY ordinal"))
    finally:
        conn.close()


# -- job identity -------------------------------------------------------------------


def input_key(
    inputs: Sequence[Union[str, Path]], fmt: Optional[str], config: Config, loader_kwargs: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """(sha256 hex prefix of 16 chars, the description hashed) of what determines the job's output.

    Covers the resolved input paths, format, session selection and the memory-relevant
    config (pipeline, and the LLM / NLI / embedding backend and model). Not covered:
    concurrency and batch sizes (output does not depend on them), progress, cache dirs.
    """
    desc = {
        "inputs": [str(Path(p).resolve()) for p in inputs],
        "format": fmt,
        "loader": {k: v for k, v in sorted(loader_kwargs.items()) if v is not None},
        "pipeline": config.pipeline.model_dump(mode="json"),
        "llm": {"backend": config.llm.backend, "model": config.llm.model, "temperature": config.llm.temperature},
        "nli": {"backend": config.nli.backend, "model_dir": config.nli.model_dir},
        "embed": {"backend": config.embed.backend, "model_dir": config.embed.model_dir},
    }
    blob = json.dumps(desc, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16], desc


def _check_job(conn: sqlite3.Connection, key: str, desc: dict, out_dir: Path) -> None:
    row = conn.execute("SELECT value FROM meta WHERE key='input_key'").fetchone()
    if row is None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO meta (key, value) VALUES ('input_key', ?)", (key,))
        conn.execute("INSERT INTO meta (key, value) VALUES ('job', ?)", (json.dumps(desc, sort_keys=True),))
        conn.execute("COMMIT")
        return
    if row[0] != key:
        prev = conn.execute("SELECT value FROM meta WHERE key='job'").fetchone()
        prev_inputs = json.loads(prev[0]).get("inputs") if prev else "?"
        raise BulkJobMismatch(
            f"{out_dir} holds a different bulk job (input key {row[0]} for inputs {prev_inputs}; this job's "
            f"key is {key} for inputs {desc['inputs']}): inputs, format, selection or model/pipeline config "
            f"differ. Use another --out directory, or delete {out_dir / DB_NAME} to start over."
        )


# -- running ------------------------------------------------------------------------


def load_inputs(
    inputs: Sequence[Union[str, Path]], fmt: Optional[str] = None, **loader_kwargs: Any
) -> list[Session]:
    """Sessions of every input file, in order; later duplicates of a session id are skipped (logged)."""
    from .io import load_sessions

    seen: set[str] = set()
    out: list[Session] = []
    for path in inputs:
        for s in load_sessions(path, fmt, **loader_kwargs):
            if s.session_id in seen:
                logger.warning("skipping duplicate session id %r from %s", s.session_id, path)
                continue
            seen.add(s.session_id)
            out.append(s)
    return out


def pending_sessions(
    conn: sqlite3.Connection, sessions: Sequence[Session], retry_failed: bool
) -> list[tuple[int, Session]]:
    """(input ordinal, session) of each session not yet recorded in ``conn`` (and of each
    recorded as failed when ``retry_failed``), in input order."""
    status = dict(conn.execute("SELECT session_id, status FROM sessions"))
    return [
        (i, s) for i, s in enumerate(sessions)
        if status.get(s.session_id) is None or (retry_failed and status[s.session_id] == "failed")
    ]


async def arun_bulk(
    inputs: Sequence[Union[str, Path]],
    out_dir: Union[str, Path],
    fmt: Optional[str] = None,
    concurrency: int = 1,
    config: Optional[Config] = None,
    retry_failed: bool = False,
    *,
    services: Any = None,
    extractor: Any = None,
    sessions_list: Optional[Sequence[Session]] = None,
    progress: bool = True,
    export: bool = True,
    scripted_latency_s: float = 0.0,
    **loader_kwargs: Any,
) -> BulkReport:
    """Async core of :func:`run_bulk` (same arguments)."""
    from tqdm.auto import tqdm

    config = config or Config()
    out = Path(out_dir)
    key, desc = input_key(inputs, fmt, config, loader_kwargs)
    conn = open_db(out)
    report = BulkReport(out_dir=str(out))
    try:
        _check_job(conn, key, desc, out)
        sessions = list(sessions_list) if sessions_list is not None else load_inputs(inputs, fmt, **loader_kwargs)
        report.total = len(sessions)
        todo = pending_sessions(conn, sessions, retry_failed)
        report.skipped = report.total - len(todo)
        logger.info("bulk %s: %d sessions, %d to do, %d skipped", out, report.total, len(todo), report.skipped)
        if todo:
            if extractor is None:
                from .engine.scheduler import build_extractor
                from .context import Services

                services = services or Services.from_config(config, scripted_latency_s=scripted_latency_s)
                extractor, _ = build_extractor(
                    config, services, engine="sequential" if concurrency == 1 else "batched", concurrency=concurrency
                )
            ordinals = [i for i, _ in todo]
            committer = _Committer(conn, key)
            t0 = time.perf_counter()
            # a bar on a terminal; one line per session where stderr is a log (CI, nohup)
            lines = progress and not _isatty(sys.stderr)
            bar = tqdm(total=len(todo), unit="session", disable=not progress or lines, dynamic_ncols=True)
            try:
                by_pos = [s for _, s in todo]
                async for res in run_sessions(by_pos, extractor, concurrency):
                    report.tokens += committer.commit(res, ordinals[res.index])
                    if res.ok:
                        report.ok += 1
                    else:
                        report.failed += 1
                    dt = max(time.perf_counter() - t0, 1e-9)
                    bar.update(1)
                    if lines:
                        print(f"bulk: {res.session_id} {'ok' if res.ok else 'FAILED'} in {res.seconds:.1f} s "
                              f"({report.ok + report.failed}/{len(todo)}; {(report.ok + report.failed) / dt:.2f} "
                              f"sessions/s, {report.tokens / dt:.0f} tokens/s, {report.failed} failed)",
                              file=sys.stderr, flush=True)
                    bar.set_postfix(
                        {"sessions/s": f"{(report.ok + report.failed) / dt:.2f}", "tokens/s": f"{report.tokens / dt:.0f}",
                         "failed": report.failed},
                        refresh=False,
                    )
            finally:
                bar.close()
            report.seconds = time.perf_counter() - t0
        report.failures = dict(
            conn.execute("SELECT session_id, error FROM sessions WHERE status='failed' ORDER BY ordinal")
        )
    finally:
        conn.close()
    if export:
        export_jsonl(out)
    return report


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def run_bulk(
    inputs: Sequence[Union[str, Path]],
    out_dir: Union[str, Path],
    fmt: Optional[str] = None,
    concurrency: int = 1,
    config: Optional[Config] = None,
    retry_failed: bool = False,
    *,
    engine: str = "local",
    ray: Any = None,
    **kwargs: Any,
) -> BulkReport:
    """Extract every session of ``inputs`` into ``out_dir``, resuming what is already there.

    Args:
        inputs: input files (any format ``io.load_sessions`` reads).
        out_dir: job directory (``bulk.sqlite``, ``graphs.jsonl``, ``failed.jsonl``).
        fmt: input format, None = detect per file.
        concurrency: sessions in flight; 1 = the sequential engine, > 1 = batched services.
        config: Config (default Config()).
        retry_failed: redo sessions recorded as failed.
        engine: "local" (this process) or "ray" (Ray Data workers, :mod:`promem_fast.distributed`;
            needs the ``distributed`` extra).
        ray: ``engine="ray"``: a :class:`promem_fast.distributed.RayOptions` (address, workers,
            GPUs per worker, ...); None = RayOptions().
        kwargs: ``services=`` / ``extractor=`` (an object with ``aextract`` or an async
            callable) to inject backends, ``progress=``, ``export=``, ``scripted_latency_s=``,
            ``sessions_list=`` (pre-loaded sessions; the key still comes from ``inputs``), and
            the loader's ``sample=``, ``sessions=``, ``user_speaker=``.

    Returns:
        BulkReport. Raises BulkJobMismatch when ``out_dir`` holds another job; input errors
        (FileNotFoundError, ValueError) propagate before any session runs; ValueError for an
        unknown ``engine``; ImportError (with the pip command) for ``engine="ray"`` without Ray.
    """
    if engine == "ray":
        from .distributed import run_bulk_ray

        return run_bulk_ray(inputs, out_dir, fmt, concurrency, config, retry_failed, options=ray, **kwargs)
    if engine != "local":
        raise ValueError(f"engine must be 'local' or 'ray', got {engine!r}")
    return asyncio.run(arun_bulk(inputs, out_dir, fmt, concurrency, config, retry_failed, **kwargs))


# -- command line -------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``promem-fast bulk`` (shared with ``python -m promem_fast.bulk``)."""
    p.add_argument("inputs", nargs="+", help="input files")
    p.add_argument("--out", required=True, help="job directory (created; resumed when it exists)")
    p.add_argument("--format", default=None, help="input format (json|jsonl|locomo|halumem|longmemeval); default: detect")
    p.add_argument("--concurrency", type=int, default=1, help="sessions in flight (1 = sequential engine)")
    p.add_argument("--retry-failed", action="store_true", help="redo sessions recorded as failed")
    p.add_argument("--sample", default=None, help="LoCoMo sample_id / HaluMem uuid / LongMemEval question_id")
    p.add_argument("--sessions", default=None, help="1-based session numbers, e.g. 1-3 or 1,4")
    p.add_argument("--user-speaker", default=None, help="LoCoMo: which speaker is the user")
    p.add_argument("--config", default=None, help="Config JSON file")
    p.add_argument("--llm", default=None, help="LLM backend (llamacpp|openai|vllm|scripted)")
    p.add_argument("--model", default=None, help="LLM model path or name")
    p.add_argument("--base-url", default=None, help="openai backend: server URL")
    p.add_argument("--nli", default=None, help="NLI backend (onnx|llm)")
    p.add_argument("--embed", default=None, help="embedding backend (onnx|hash)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="scripted LLM: latency per call (ms)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--export-only", action="store_true", help="only rewrite graphs.jsonl / failed.jsonl")
    add_engine_arguments(p)


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """``--engine local|ray`` and the Ray options (shared by ``promem-fast bulk`` and
    ``python -m promem_fast.bulk``)."""
    g = p.add_argument_group("engine")
    g.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local: this process (default); ray: Ray Data workers (pip install 'promem-fast[distributed]')")
    g.add_argument("--address", default=None,
                   help="ray: cluster to join (auto | ray://HOST:PORT); default: $RAY_ADDRESS, else a local Ray")
    g.add_argument("--workers", type=_pos_int, default=1, help="ray: worker actors, each with its own services")
    g.add_argument("--gpus-per-worker", type=_nonneg_float, default=None,
                   help="ray: GPUs per worker (default: llm.vllm.tensor_parallel_size for vllm, else 0)")
    g.add_argument("--cpus-per-worker", type=_nonneg_float, default=1.0, help="ray: CPUs per worker (default 1)")
    g.add_argument("--batch-size", type=_pos_int, default=None,
                   help="ray: sessions per map_batches call (default: half of --concurrency, at least 1)")


def ray_options_from_args(args: argparse.Namespace) -> Any:
    """:class:`promem_fast.distributed.RayOptions` from the parsed engine arguments."""
    from .distributed import RayOptions

    return RayOptions(address=args.address, workers=args.workers, gpus_per_worker=args.gpus_per_worker,
                      cpus_per_worker=args.cpus_per_worker, batch_size=args.batch_size)


def config_from_args(args: argparse.Namespace) -> Config:
    """Config from ``--config`` plus the backend overrides on the command line."""
    cfg = Config.model_validate_json(Path(args.config).read_text()) if args.config else Config()
    llm = {k: v for k, v in (("backend", args.llm), ("model", args.model), ("base_url", args.base_url)) if v}
    if llm:
        cfg.llm = cfg.llm.model_copy(update=llm)
    if args.nli:
        cfg.nli = cfg.nli.model_copy(update={"backend": args.nli})
    if args.embed:
        cfg.embed = cfg.embed.model_copy(update={"backend": args.embed})
    return cfg


def bulk_command(
    inputs: Sequence[Union[str, Path]],
    out_dir: Union[str, Path],
    fmt: Optional[str] = None,
    concurrency: int = 1,
    config: Optional[Config] = None,
    retry_failed: bool = False,
    **kwargs: Any,
) -> int:
    """:func:`run_bulk` for a command line: prints each failed session (stderr) and the report
    as one JSON line (stdout). Exit status: 0 all ok, 1 some session failed, 2 the directory
    holds another job."""
    try:
        rep = run_bulk(inputs, out_dir, fmt, concurrency, config, retry_failed, **kwargs)
    except BulkJobMismatch as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for sid, err in rep.failures.items():
        print(f"failed: {sid}: {err}", file=sys.stderr)
    if len(rep.failures) > rep.failed:
        print(f"{len(rep.failures) - rep.failed} session(s) failed in an earlier run and were not retried; "
              "--retry-failed redoes them", file=sys.stderr)
    print(json.dumps(rep.as_dict(), ensure_ascii=False))
    return 1 if rep.failures else 0


def run_from_args(args: argparse.Namespace) -> int:
    """Run a parsed ``bulk`` command (see :func:`bulk_command` for the exit status)."""
    if args.export_only:
        n_ok, n_bad = export_jsonl(args.out)
        print(json.dumps({"graphs": n_ok, "failed": n_bad, "out_dir": str(args.out)}))
        return 0
    return bulk_command(
        args.inputs, args.out, args.format, args.concurrency, config_from_args(args), args.retry_failed,
        progress=not args.no_progress, scripted_latency_s=args.latency_ms / 1000.0,
        sample=args.sample, sessions=args.sessions, user_speaker=args.user_speaker,
        engine=args.engine, ray=ray_options_from_args(args) if args.engine == "ray" else None,
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m promem_fast.bulk ...`` (the same as ``promem-fast bulk ...``)."""
    p = argparse.ArgumentParser(prog="promem-fast bulk", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return run_from_args(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
