"""`promem-fast serve` killed with SIGKILL during concurrent writes restarts consistent.

Bounded: every wait has a deadline and the server processes are killed in ``finally``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import httpx
import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from promem_fast.store import SQLiteStore  # noqa: E402

from _live import free_port  # noqa: E402
from _store_helpers import graph  # noqa: E402

EVENTS_PER_SESSION = 3


def _start(store, port):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "promem_fast", "serve", "--store", str(store), "--port", str(port),
           "--llm", "scripted", "--embed", "hash"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start within 60 s")


def _texts(client: int, n: int) -> list[str]:
    # six made-up words per fact, none shared: the hashing embedder keeps facts apart (no NLI merges)
    def word(k: int, j: int) -> str:
        return "w" + hashlib.sha256(f"{client}-{n}-{k}-{j}".encode()).hexdigest()[:8]

    return [" ".join(word(k, j) for j in range(6)) + "." for k in range(EVENTS_PER_SESSION)]


def test_sigkill_during_concurrent_writes_restarts_consistent(tmp_path):
    store, port = tmp_path / "store", free_port()
    url = f"http://127.0.0.1:{port}"
    acked: list[tuple[str, str]] = []
    stop = threading.Event()

    def writer(ci: int) -> None:
        uid = f"user{ci % 2}"
        with httpx.Client(base_url=url, timeout=10) as c:
            for n in range(10_000):
                if stop.is_set():
                    return
                body = {"user_id": uid, "graph": json.loads(graph(f"c{ci}-s{n}", [(t, None) for t in _texts(ci, n)]).to_json())}
                try:
                    r = c.post("/graphs", json=body)
                except httpx.HTTPError:
                    return  # the server is gone
                if r.status_code == 200:
                    acked.append((uid, f"c{ci}-s{n}"))

    proc = _start(store, port)
    threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(4)]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(acked) < 24 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(acked) >= 24, "writers made too little progress"
        proc.send_signal(signal.SIGKILL)  # mid-write: four clients have requests in flight
        proc.wait(timeout=10)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        for t in threads:
            t.join(timeout=15)

    con = sqlite3.connect(store / "memory.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    sessions = {(u, s) for u, s in con.execute("SELECT user_id, session_id FROM sessions")}
    assert set(acked) <= sessions  # every acknowledged write survived
    per = dict(((u, s), n) for u, s, n in con.execute(
        "SELECT user_id, session_id, COUNT(*) FROM entries GROUP BY user_id, session_id"))
    assert set(per) == sessions and set(per.values()) == {EVENTS_PER_SESSION}  # no half-written session
    con.close()

    proc = _start(store, port)  # restart on the killed store
    try:
        with httpx.Client(base_url=url, timeout=10) as c:
            for uid in ("user0", "user1"):
                rows = c.get("/memories", params={"user_id": uid, "limit": 10_000}).json()["results"]
                assert len(rows) == EVENTS_PER_SESSION * sum(1 for u, _ in sessions if u == uid)
                for r in rows:  # every active entry is found by its own text
                    hit = c.post("/search", json={"query": r["memory"], "user_id": uid, "top_k": 1}).json()["results"]
                    assert [h["id"] for h in hit] == [r["id"]]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()

    # whatever index each user ends up with (file or rebuild) holds exactly the active rows
    s = SQLiteStore(store)
    import faiss

    for uid in ("user0", "user1"):
        u = s.index(uid)
        ids = faiss.vector_to_array(u.index.id_map)
        assert sorted(ids.tolist()) == sorted(e.rowid for e in s.list(uid))
        ids_, emb = s.active_matrix(uid)
        want = {e.rowid: e.embedding for e in s.list(uid)}
        assert all(np.array_equal(emb[i], want[int(r)]) for i, r in enumerate(ids_))
    s.close()
