"""The embedded store: SQLite (WAL) rows, per-user FAISS index, rebuilds, isolation, concurrency."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import numpy as np
import pytest

from promem_fast.store import AsyncMemory, SQLiteStore, StoreConfig, VersionConflict
from promem_fast.store.sqlite_store import Entry, Plan

from _store_helpers import ScriptedNLI, graph, services

FACTS = [
    "Alice plays the violin in an orchestra.",
    "Alice adopted a cat named Luna.",
    "Alice runs five kilometres every morning.",
    "Alice is allergic to peanuts.",
    "Alice visited Lisbon with her sister.",
]


def make(path, nli=None, **cfg) -> AsyncMemory:
    return AsyncMemory(services=services(nli or ScriptedNLI()), path=str(path), store_config=StoreConfig(**cfg))


async def test_sqlite_is_wal_and_versioned(tmp_path):
    m = make(tmp_path / "mem")
    await m.add_graph(graph("s1", [(FACTS[0], None)]), user_id="alice")
    con = sqlite3.connect(tmp_path / "mem" / "memory.db")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert con.execute("SELECT version FROM schema_version").fetchone()[0] == 1
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"entries", "provenance", "relations", "sessions", "history", "users"} <= tables


async def test_entry_keeps_every_field(tmp_path):
    m = make(tmp_path / "mem")
    g = graph("sess-7", [(FACTS[1], "2023-05-08")], entail_score=0.91)
    g.events[0].source_turn_ids = ["D1:3", "D1:4"]
    res = await m.add_graph(g, user_id="alice", metadata={"source": "unit"})
    e = m.store.get(res["results"][0]["id"])
    assert (e.text, e.user_id, e.session_id) == (FACTS[1], "alice", "sess-7")
    assert e.source_turn_ids == ["D1:3", "D1:4"]
    assert e.event_time == "2023-05-08" and e.dates == ["2023-05-08"]
    assert e.created_at and e.updated_at and e.status == "active"
    assert e.supersedes is None and e.superseded_by is None
    assert e.nli[0]["label"] == "entailment" and e.nli[0]["score"] == 0.91 and e.confidence == 0.91
    assert e.metadata["source"] == "unit" and e.metadata["user_name"] == "Alice"
    assert e.embedding.dtype == np.float32 and abs(float(np.linalg.norm(e.embedding)) - 1.0) < 1e-5


async def test_faiss_index_rebuilt_after_file_deleted(tmp_path):
    path = tmp_path / "mem"
    m = make(path)
    for i, f in enumerate(FACTS):
        await m.add_graph(graph(f"s{i}", [(f, None)]), user_id="alice")
    before = (await m.search("Alice adopted which cat?", user_id="alice", top_k=5))["results"]
    fpath = m.store.index_path("alice")
    assert fpath.exists()
    await m.close()

    fpath.unlink()
    m2 = make(path)
    after = (await m2.search("Alice adopted which cat?", user_id="alice", top_k=5))["results"]
    assert [(r["id"], round(r["score"], 6)) for r in after] == [(r["id"], round(r["score"], 6)) for r in before]
    assert after[0]["memory"] == FACTS[1]
    assert fpath.exists()  # written back
    import faiss

    assert faiss.read_index(str(fpath)).ntotal == len(FACTS)


async def test_stale_or_corrupt_index_is_rebuilt(tmp_path):
    path = tmp_path / "mem"
    m = make(path)
    for i, f in enumerate(FACTS[:3]):
        await m.add_graph(graph(f"s{i}", [(f, None)]), user_id="alice")
    await m.close()
    meta_path = m.store.index_path("alice").with_suffix(".json")
    faiss_path = m.store.index_path("alice")

    # stale: an index file from before the last two writes (simulates a crash before the flush)
    old_meta = json.loads(meta_path.read_text())
    old_bytes = faiss_path.read_bytes()
    m = make(path)
    await m.add_graph(graph("s3", [(FACTS[3], None)]), user_id="alice")
    await m.add_graph(graph("s4", [(FACTS[4], None)]), user_id="alice")
    await m.close()
    faiss_path.write_bytes(old_bytes)
    meta_path.write_text(json.dumps(old_meta))
    m = make(path)
    got = (await m.search("Is Alice allergic to peanuts?", user_id="alice", top_k=5))["results"]
    assert len(got) == 5 and got[0]["memory"] == FACTS[3]
    assert json.loads(meta_path.read_text())["count"] == 5
    await m.close()

    # corrupt
    faiss_path.write_bytes(b"not a faiss index")
    m = make(path)
    got = (await m.search("Is Alice allergic to peanuts?", user_id="alice", top_k=5))["results"]
    assert len(got) == 5 and got[0]["memory"] == FACTS[3]


async def test_superseded_entries_leave_the_index_but_stay_in_sqlite(tmp_path):
    a, b = "Alice lives in Paris.", "Alice lives in Berlin."
    nli = ScriptedNLI()
    nli.set(a, b, "contradiction")
    m = make(tmp_path / "mem", nli, match_threshold=0.2)
    await m.add_graph(graph("s1", [(a, "2023-01-01")]), user_id="alice")
    await m.add_graph(graph("s2", [(b, "2024-01-01")]), user_id="alice")
    rowids, emb = m.store.active_matrix("alice")
    assert len(rowids) == 1 and emb.shape == (1, 256)
    assert len(m.store.list("alice", statuses=None)) == 2
    await m.close()
    import faiss

    assert faiss.read_index(str(m.store.index_path("alice"))).ntotal == 1


async def test_users_are_isolated(tmp_path):
    m = make(tmp_path / "mem")
    ra = await m.add_graph(graph("s1", [(FACTS[0], None)], user_name="Alice"), user_id="alice")
    rb = await m.add_graph(graph("s1", [(FACTS[0], None)], user_name="Alice"), user_id="bob")
    ida, idb = ra["results"][0]["id"], rb["results"][0]["id"]
    assert ida != idb and rb["results"][0]["event"] == "ADD"  # same text, separate users: no merge
    for uid, own in (("alice", ida), ("bob", idb)):
        hits = (await m.search("violin", user_id=uid))["results"]
        assert [h["id"] for h in hits] == [own] and hits[0]["user_id"] == uid
        assert [x["id"] for x in (await m.get_all(user_id=uid, filters={"status": "all"}))["results"]] == [own]
    assert (await m.search("violin", user_id="carol"))["results"] == []
    assert await m.get(ida, user_id="bob") is None
    with pytest.raises(KeyError):
        await m.delete(ida, user_id="bob")
    await m.delete_all(user_id="bob")
    assert (await m.get(ida))["memory"] == FACTS[0]
    assert await m.get(idb) is None


def test_commit_rejects_stale_version(tmp_path):
    st = SQLiteStore(tmp_path / "mem")
    e = Entry(id="x1", user_id="u", text="u likes tea", embedding=np.ones(4, np.float32) / 2)
    v = st.commit("u", 0, Plan(inserts=[e]))
    assert v == 1
    e2 = Entry(id="x2", user_id="u", text="u likes cake", embedding=np.ones(4, np.float32) / 2)
    with pytest.raises(VersionConflict):
        st.commit("u", 0, Plan(inserts=[e2]))
    assert st.get("x2") is None  # rolled back
    with pytest.raises(ValueError, match="dim"):
        st.commit("u", 1, Plan(inserts=[Entry(id="x3", user_id="u", text="t", embedding=np.ones(8, np.float32))]))


async def test_two_instances_on_one_directory_do_not_lose_or_duplicate(tmp_path, caplog):
    """Separate AsyncMemory objects (no shared lock) rely on the optimistic version check."""
    caplog.set_level("INFO", logger="promem_fast.store.memory")
    path = tmp_path / "mem"
    fact = "Alice has two brothers."
    released = asyncio.Event()

    class GatedNLI(ScriptedNLI):
        async def classify(self, pairs):  # a's NLI waits until b has committed
            await released.wait()
            return await super().classify(pairs)

    a, b = make(path, GatedNLI()), make(path)
    await a.add_graph(graph("s0", [("Alice has two sisters.", None)]), user_id="alice")  # a candidate for NLI
    released.clear()

    async def b_then_release():
        await asyncio.sleep(0.01)  # a has planned and is waiting in NLI
        r = await b.add_graph(graph("s2", [(fact, None)]), user_id="alice")
        released.set()
        return r

    ra, rb = await asyncio.gather(a.add_graph(graph("s1", [(fact, None)]), user_id="alice"), b_then_release())
    assert "re-planning" in caplog.text  # a's plan was stale and was redone
    assert rb["results"][0]["event"] == "ADD" and ra["results"][0]["event"] == "NONE"
    rows = a.store.list("alice", statuses=None)
    assert sorted(r.text for r in rows) == sorted(["Alice has two sisters.", fact])
    dup = next(r for r in rows if r.text == fact)
    assert sorted(p["session_id"] for p in a.store.provenance(dup.id)) == ["s1", "s2"]

    # many writers through two instances: nothing lost
    await asyncio.gather(*(
        (a if i % 2 else b).add_graph(graph(f"u{i}", [(f"Alice collects stamp series number {i}.", None)]),
                                      user_id="alice")
        for i in range(6)))
    assert len(b.store.list("alice", statuses=None)) == 8


async def test_delete_and_reset_remove_index_files(tmp_path):
    m = make(tmp_path / "mem")
    r = await m.add_graph(graph("s1", [(FACTS[0], None), (FACTS[1], None)]), user_id="alice")
    await m.delete(r["results"][0]["id"])
    assert [x["memory"] for x in (await m.get_all(user_id="alice"))["results"]] == [FACTS[1]]
    assert [h["event"] for h in await m.history(r["results"][0]["id"])] == ["ADD", "DELETE"]
    p = m.store.index_path("alice")
    assert p.exists()
    await m.reset()
    assert not p.exists()
    assert (await m.get_all(user_id="alice"))["results"] == []
