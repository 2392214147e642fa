"""``--engine ray`` as a cluster on this machine: two Ray nodes (``ray.cluster_utils.Cluster``,
one CPU each) both doing work, and the command-line driver SIGKILLed mid-run, then resumed
with the same arguments: no session lost, none duplicated, no partial record."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bulk import EMPTY_ID, N_SESSIONS, _canon, _write_input  # noqa: E402

from promem_fast.bulk import DB_NAME, FAILED_NAME, GRAPHS_NAME, run_bulk  # noqa: E402
from promem_fast.config import Config  # noqa: E402
from promem_fast.distributed import RayOptions  # noqa: E402

ray = pytest.importorskip("ray", reason="needs Ray: pip install 'promem-fast[distributed]'")
pytestmark = [pytest.mark.ray, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]


def _cfg() -> Config:
    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    return cfg


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, str]:
    """Graphs of the local engine by session id (wall-clock fields zeroed)."""
    tmp = tmp_path_factory.mktemp("ref")
    inp = _write_input(tmp / "in.jsonl")
    run_bulk([inp], tmp / "out", "jsonl", 3, _cfg(), progress=False)
    lines = (tmp / "out" / GRAPHS_NAME).read_text().splitlines()
    return {json.loads(x)["session_id"]: _canon(x) for x in lines}


def _rows(out: Path) -> list[tuple]:
    conn = sqlite3.connect(out / DB_NAME)
    try:
        return conn.execute("SELECT session_id, status, graph_json, attempts FROM sessions").fetchall()
    finally:
        conn.close()


def _check_complete(out: Path, reference: dict[str, str]) -> None:
    rows = _rows(out)
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) == N_SESSIONS + 1  # none lost, none duplicated
    assert {sid: _canon(g) for sid, st, g, _ in rows if st == "ok"} == reference  # no partial record
    assert [sid for sid, st, _, _ in rows if st == "failed"] == [EMPTY_ID]
    lines = (out / GRAPHS_NAME).read_text().splitlines()
    assert [json.loads(x)["session_id"] for x in lines] == [f"job/s{k}" for k in range(N_SESSIONS)]
    assert [json.loads(x)["session_id"] for x in (out / FAILED_NAME).read_text().splitlines()] == [EMPTY_ID]


def test_two_node_cluster_both_nodes_work(tmp_path, reference):
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False)
        cluster.wait_for_nodes()
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert len(nodes) == 2
        inp = _write_input(tmp_path / "in.jsonl")
        out = tmp_path / "out"
        # one CPU per worker and per node: the pool of two must put one actor on each node
        rep = run_bulk([inp], out, "jsonl", 2, _cfg(), engine="ray",
                       ray=RayOptions(workers=2, cpus_per_worker=1, batch_size=1), progress=False)
        per_node = rep.ray["sessions_per_node"]
        assert set(per_node) == nodes and all(n >= 1 for n in per_node.values())
        assert sum(per_node.values()) == N_SESSIONS + 1
        assert (rep.ok, rep.failed) == (N_SESSIONS, 1)
        _check_complete(out, reference)
    finally:
        ray.shutdown()
        cluster.shutdown()


def _cli(inp: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "promem_fast.bulk", str(inp), "--out", str(out), "--llm", "scripted",
            "--nli", "llm", "--embed", "hash", "--concurrency", "2", "--no-progress",
            "--engine", "ray", "--workers", "1", "--batch-size", "1", *extra]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("PROMEM_FAST_CRASH_AT", "PROMEM_FAST_WORKER_KILL_AT", "RAY_ADDRESS"):
        env.pop(k, None)
    return env


def test_driver_sigkill_mid_run_then_resume(tmp_path, reference):
    if ray.is_initialized():
        ray.shutdown()
    inp = _write_input(tmp_path / "in.jsonl")
    out = tmp_path / "out"
    # its own session: the local Ray the driver starts is in its process group, cleaned up below
    proc = subprocess.Popen(_cli(inp, out, "--latency-ms", "60"), env=_env(), cwd=REPO, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            try:
                if (out / DB_NAME).exists() and len(_rows(out)) >= 2:
                    break
            except sqlite3.Error:
                pass
            time.sleep(0.05)
        assert proc.poll() is None, "the driver finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        time.sleep(1.0)
        try:  # what is left of the Ray it started (fate-shared processes die on their own)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert proc.returncode == -signal.SIGKILL
    before = _rows(out)
    assert 2 <= len(before) < N_SESSIONS + 1  # killed mid-run
    p2 = subprocess.run(_cli(inp, out), env=_env(), cwd=REPO, capture_output=True, text=True, timeout=180,
                        start_new_session=True)
    assert p2.returncode == 1, p2.stderr[-3000:]  # 1 = finished, the blank session failed
    report = json.loads(p2.stdout.strip().splitlines()[-1])
    assert report["skipped"] == len(before)  # finished sessions not sent to the LLM again
    assert report["ok"] + report["failed"] == N_SESSIONS + 1 - len(before)
    assert report["ray"]["workers"] == 1
    _check_complete(out, reference)
    assert all(att == 1 for _, _, _, att in _rows(out))
