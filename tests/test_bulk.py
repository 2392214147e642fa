"""Bulk jobs: atomic per-session commits, resume after a crash at each commit point (no loss,
no duplicate, no partial record), failed sessions listed and retried, job identity check."""

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

from promem_fast.bulk import (
    DB_NAME, FAILED_NAME, GRAPHS_NAME, BulkJobMismatch, export_jsonl, list_failed, main, run_bulk,
)
from promem_fast.config import Config
from promem_fast.schema import MemoryGraph

REPO = Path(__file__).resolve().parents[1]
N_SESSIONS = 6
EMPTY_ID = "job/empty"


def _write_input(path: Path) -> Path:
    """JSONL, one session per line: N_SESSIONS dialogues plus one blank session that must fail."""
    lines = []
    for k in range(N_SESSIONS):
        turns = []
        for i in range(6):
            user = i % 2 == 0
            text = (
                f"I moved to city number {k} and adopted a cat called Tom{k} in spring"
                if user else "Nice, tell me more about it"
            )
            if i == 4:
                text = f"On weekends I climb with my friend Lee{k} near the river"
            turns.append({"role": "user" if user else "assistant", "content": text, "turn_id": f"t{i}",
                          "timestamp": f"2023-0{1 + k % 9}-10T10:0{i}:00"})
        lines.append({"session_id": f"job/s{k}", "user_name": "Kim", "turns": turns})
    lines.insert(3, {"session_id": EMPTY_ID, "turns": [{"role": "user", "content": "   "}]})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _cli(inp: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "promem_fast.bulk", str(inp), "--out", str(out), "--llm", "scripted",
            "--nli", "llm", "--embed", "hash", "--concurrency", "3", "--no-progress", *extra]


def _run(inp, out, env_extra=None, *extra, timeout=240):
    env = dict(os.environ)
    env.pop("PROMEM_FAST_CRASH_AT", None)
    env.update(env_extra or {})
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(_cli(inp, out, *extra), env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def _rows(out: Path) -> list[tuple]:
    conn = sqlite3.connect(out / DB_NAME)
    try:
        return conn.execute("SELECT session_id, status, graph_json, error FROM sessions").fetchall()
    finally:
        conn.close()


def _canon(graph_json: str) -> str:
    g = MemoryGraph.from_json(graph_json)
    g.stats.seconds = 0.0
    for st in g.stats.stages.values():
        st.seconds = 0.0
    return g.to_json()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A clean, uninterrupted run: the expected graphs by session id."""
    tmp = tmp_path_factory.mktemp("ref")
    inp = _write_input(tmp / "in.jsonl")
    p = _run(inp, tmp / "out")
    assert p.returncode == 1, p.stderr  # 1 = finished with a failed session (the blank one)
    rows = _rows(tmp / "out")
    assert len(rows) == N_SESSIONS + 1
    ok = {sid: _canon(g) for sid, st, g, _ in rows if st == "ok"}
    assert len(ok) == N_SESSIONS
    return ok


def _check_complete(out: Path, reference: dict) -> None:
    rows = _rows(out)
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) == N_SESSIONS + 1  # none lost, none duplicated
    ok = {sid: g for sid, st, g, _ in rows if st == "ok"}
    assert {sid: _canon(g) for sid, g in ok.items()} == reference  # no partial / wrong record
    failed = [(sid, err) for sid, st, _, err in rows if st == "failed"]
    assert failed == [(EMPTY_ID, failed[0][1])] and "EmptySessionError" in failed[0][1]
    lines = (out / GRAPHS_NAME).read_text().splitlines()
    assert [MemoryGraph.from_json(x).session_id for x in lines] == [f"job/s{k}" for k in range(N_SESSIONS)]
    assert [json.loads(x)["session_id"] for x in (out / FAILED_NAME).read_text().splitlines()] == [EMPTY_ID]


@pytest.mark.slow
@pytest.mark.parametrize("point", ["before:1", "before:3", "during:3", "after:3", "after:7"])
def test_resume_after_crash_at_commit_point(tmp_path, reference, point):
    inp = _write_input(tmp_path / "in.jsonl")
    out = tmp_path / "out"
    p = _run(inp, out, {"PROMEM_FAST_CRASH_AT": point})
    assert p.returncode == 70, (p.returncode, p.stderr[-2000:])
    where, n = point.split(":")
    committed = int(n) if where == "after" else int(n) - 1
    rows = _rows(out)  # opening the db recovers the WAL: the uncommitted row is gone
    assert len(rows) == committed
    assert all(st in ("ok", "failed") for _, st, _, _ in rows)
    assert all(_canon(g) == reference[sid] for sid, st, g, _ in rows if st == "ok")
    p2 = _run(inp, out)
    assert p2.returncode == 1, p2.stderr[-2000:]
    report = json.loads(p2.stdout.strip().splitlines()[-1])
    assert report["skipped"] == committed and report["ok"] + report["failed"] == N_SESSIONS + 1 - committed
    _check_complete(out, reference)


@pytest.mark.slow
def test_resume_after_kill_9_mid_run(tmp_path, reference):
    inp = _write_input(tmp_path / "in.jsonl")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PROMEM_FAST_CRASH_AT", None)
    proc = subprocess.Popen(_cli(inp, out, "--latency-ms", "40"), env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if (out / DB_NAME).exists():
                try:
                    if len(_rows(out)) >= 2:
                        break
                except sqlite3.Error:
                    pass
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    before = len(_rows(out))
    assert 2 <= before <= N_SESSIONS + 1
    p2 = _run(inp, out)
    assert p2.returncode == 1, p2.stderr[-2000:]
    _check_complete(out, reference)


# -- in-process behaviour ------------------------------------------------------------


def _cfg() -> Config:
    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    return cfg


def test_failed_sessions_are_listed_and_retry_failed_redoes_them(tmp_path):
    inp = _write_input(tmp_path / "in.jsonl")
    out = tmp_path / "out"
    flaky = {"job/s1": 1}
    seen = []

    async def extract(session):
        seen.append(session.session_id)
        if flaky.get(session.session_id, 0) > 0:
            flaky[session.session_id] -= 1
            raise TimeoutError("server timed out")
        if not any(t.content.strip() for t in session.turns):
            raise ValueError("blank session")
        return MemoryGraph(session_id=session.session_id, user_name=session.user_name, variant="promem")

    rep = run_bulk([inp], out, "jsonl", 2, _cfg(), extractor=extract, progress=False)
    assert (rep.total, rep.ok, rep.failed, rep.skipped) == (N_SESSIONS + 1, N_SESSIONS - 1, 2, 0)
    assert rep.failures == {"job/s1": "TimeoutError: server timed out", EMPTY_ID: "ValueError: blank session"}
    assert list_failed(out) == rep.failures

    seen.clear()
    rep2 = run_bulk([inp], out, "jsonl", 2, _cfg(), extractor=extract, progress=False)
    assert seen == [] and rep2.skipped == N_SESSIONS + 1  # plain resume does not redo failures
    assert rep2.as_dict()["failed"] == 0 and rep2.as_dict()["failed_total"] == 2  # none new, two on record

    rep3 = run_bulk([inp], out, "jsonl", 2, _cfg(), retry_failed=True, extractor=extract, progress=False)
    assert sorted(seen) == sorted(["job/s1", EMPTY_ID])
    assert (rep3.ok, rep3.failed, rep3.skipped) == (1, 1, N_SESSIONS - 1)
    assert rep3.failures == {EMPTY_ID: "ValueError: blank session"}
    conn = sqlite3.connect(out / DB_NAME)
    attempts = dict(conn.execute("SELECT session_id, attempts FROM sessions"))
    conn.close()
    assert attempts["job/s1"] == 2 and attempts[EMPTY_ID] == 2 and attempts["job/s0"] == 1
    ids = [json.loads(x)["session_id"] for x in (out / GRAPHS_NAME).read_text().splitlines()]
    assert ids == [f"job/s{k}" for k in range(N_SESSIONS)]  # input order, s1 included now


def test_a_different_job_in_the_same_dir_is_refused(tmp_path, capsys):
    inp = _write_input(tmp_path / "in.jsonl")
    other = _write_input(tmp_path / "other.jsonl")
    out = tmp_path / "out"

    async def extract(session):
        return MemoryGraph(session_id=session.session_id, user_name="Kim", variant="promem")

    run_bulk([inp], out, "jsonl", 1, _cfg(), extractor=extract, progress=False)
    with pytest.raises(BulkJobMismatch, match="different bulk job"):
        run_bulk([other], out, "jsonl", 1, _cfg(), extractor=extract, progress=False)
    cfg = _cfg()
    cfg.pipeline.tau_comp = 0.7
    with pytest.raises(BulkJobMismatch):
        run_bulk([inp], out, "jsonl", 1, cfg, extractor=extract, progress=False)
    # concurrency is not part of the job: resuming with another value is fine
    rep = run_bulk([inp], out, "jsonl", 4, _cfg(), extractor=extract, progress=False)
    assert rep.skipped == N_SESSIONS + 1
    # the command line reports the mismatch with exit status 2
    assert main([str(other), "--out", str(out), "--llm", "scripted", "--embed", "hash", "--no-progress"]) == 2
    assert "different bulk job" in capsys.readouterr().err


def test_export_is_idempotent_and_atomic(tmp_path):
    inp = _write_input(tmp_path / "in.jsonl")
    out = tmp_path / "out"

    async def extract(session):
        return MemoryGraph(session_id=session.session_id, user_name="Kim", variant="promem")

    run_bulk([inp], out, "jsonl", 3, _cfg(), extractor=extract, progress=False, export=False)
    assert not (out / GRAPHS_NAME).exists()
    assert export_jsonl(out) == (N_SESSIONS + 1, 0)
    first = (out / GRAPHS_NAME).read_bytes()
    assert export_jsonl(out) == (N_SESSIONS + 1, 0)
    assert (out / GRAPHS_NAME).read_bytes() == first
    assert not list(out.glob("*.tmp"))
    assert len(first.splitlines()) == N_SESSIONS + 1


def test_progress_off_a_terminal_is_one_line_per_session(tmp_path, capsys):
    """stderr is not a terminal under pytest: no bar redraws, one line per finished session."""
    inp = _write_input(tmp_path / "in.jsonl")

    async def extract(session):
        if not any(t.content.strip() for t in session.turns):
            raise ValueError("blank session")
        return MemoryGraph(session_id=session.session_id, user_name=session.user_name, variant="promem")

    rep = run_bulk([inp], tmp_path / "out", "jsonl", 2, _cfg(), extractor=extract, progress=True)
    assert (rep.ok, rep.failed) == (N_SESSIONS, 1)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("bulk: ")]
    assert len(lines) == N_SESSIONS + 1 and "\r" not in err
    assert sorted(ln.split()[1] for ln in lines) == sorted([f"job/s{k}" for k in range(N_SESSIONS)] + [EMPTY_ID])
    assert any(ln.startswith(f"bulk: {EMPTY_ID} FAILED in ") for ln in lines)
    assert lines[-1].split("(")[1].startswith(f"{N_SESSIONS + 1}/{N_SESSIONS + 1};")
