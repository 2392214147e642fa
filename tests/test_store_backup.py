"""Backups and moves of a store: online SQLite backup, JSON Lines export / import round trip."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from promem_fast.cli import main
from promem_fast.store import AsyncMemory, Memory, SQLiteStore, StoreConfig
from promem_fast.store.backup import backup, export_store, import_store
from promem_fast.store.keys import APIKeys

from _store_helpers import ScriptedNLI, graph, services

QUERIES = ["Where does Alice live?", "violin", "What pet does Bob have?", "sister Lisbon", "peanuts"]


async def _rich_store(path) -> AsyncMemory:
    """Two users with every kind of row: supersession, merge, details, relations, update, archive, delete."""
    a, b = "Alice lives in Paris.", "Alice lives in Berlin."
    nli = ScriptedNLI()
    nli.set(a, b, "contradiction")
    nli.set("Alice plays the violin.", "Alice plays the violin in an orchestra.", "entailment")
    m = AsyncMemory(services=services(nli), path=str(path),
                    store_config=StoreConfig(match_threshold=0.2, include_details=True))
    await m.add_graph(graph("s1", [(a, "2023-01-01"), ("Alice plays the violin.", None)],
                            details=[("Alice's violin is from 1920.", "t1", ["e2"])],
                            relations=[("e1", "causal", "e2")]), user_id="alice", metadata={"src": "chat"})
    await m.add_graph(graph("s2", [(b, "2024-01-01"), ("Alice plays the violin in an orchestra.", None)]),
                      user_id="alice")
    r = await m.add_graph(graph("s3", [("Alice visited Lisbon with her sister.", None),
                                       ("Alice is allergic to peanuts.", None), ("Alice dislikes rain.", None)]),
                          user_id="alice")
    ids = [x["id"] for x in r["results"]]
    await m.update(ids[0], "Alice visited Lisbon with her younger sister.")
    await m.archive(ids[1])
    await m.delete(ids[2])
    await m.add_graph(graph("s1", [("Bob adopted a cat named Luna.", "2022-05-05")], user_name="Bob"), user_id="bob")
    return m


async def _answers(m: AsyncMemory) -> dict:
    """Everything the API answers for the store: searches, get_all, get and history of every id ever stored."""
    out: dict = {}
    con = m.store._conn
    ids = sorted({r[0] for r in con.execute("SELECT id FROM entries UNION SELECT memory_id FROM history")})
    for uid in ("alice", "bob"):
        for q in QUERIES:
            out[uid, q] = (await m.search(q, user_id=uid, top_k=10))["results"]
            out[uid, q, "all"] = (await m.search(q, user_id=uid, top_k=10, filters={"status": "all"}))["results"]
        out[uid, "get_all"] = (await m.get_all(user_id=uid, filters={"status": "all"}))["results"]
        out[uid, "relations"] = m.store.relations(uid)
    for i in ids:
        out["get", i] = await m.get(i)
        try:
            out["history", i] = await m.history(i)
        except KeyError:
            out["history", i] = None
    return out


async def test_export_import_round_trip_answers_exactly_like_the_original(tmp_path):
    m = await _rich_store(tmp_path / "src")
    APIKeys(m.store).create("acme", admin=True)
    before = await _answers(m)
    statuses = {e.status for e in m.store.list("alice", statuses=None)}
    assert statuses == {"active", "superseded", "archived"}
    assert any(h["event"] == "DELETE" for v in before.values() if isinstance(v, list) for h in v if "event" in h)
    n = export_store(tmp_path / "src", tmp_path / "out.jsonl")
    assert n["user"] == 2 and n["entry"] == len(before["alice", "get_all"]) + len(before["bob", "get_all"])
    assert n["provenance"] > n["entry"] - 1 and n["relation"] == 1 and n["session"] == 4 and n["history"] >= 10
    text = (tmp_path / "out.jsonl").read_text()
    assert "key_hash" not in text and "pmk_" not in text and "acme" not in text
    assert {json.loads(ln)["record"] for ln in text.splitlines()} == {
        "header", "user", "entry", "provenance", "relation", "session", "history"}
    counts = import_store(tmp_path / "out.jsonl", tmp_path / "dst")
    assert counts == n
    m2 = AsyncMemory(services=services(), path=str(tmp_path / "dst"))
    assert not APIKeys(m2.store).any_exist()
    # the FAISS indexes were rebuilt on import: files on disk, one vector per active entry
    import faiss

    for uid in ("alice", "bob"):
        active = [e.rowid for e in m2.store.list(uid)]
        ix = faiss.read_index(str(m2.store.index_path(uid)))
        assert sorted(faiss.vector_to_array(ix.id_map).tolist()) == sorted(active) and active
    after = await _answers(m2)
    assert after.keys() == before.keys()
    for k in before:
        assert after[k] == before[k], k
    # sessions came along: re-adding a session already stored changes nothing
    r = await m2.add_graph(graph("s1", [("Bob adopted a cat named Luna.", "2022-05-05")], user_name="Bob"),
                           user_id="bob")
    assert [x["event"] for x in r["results"]] == ["NONE"]
    await m.close()
    await m2.close()


async def test_import_refuses_a_used_store_and_bad_lines_leave_nothing(tmp_path):
    m = await _rich_store(tmp_path / "src")
    await m.close()
    export_store(tmp_path / "src", tmp_path / "out.jsonl")
    with pytest.raises(ValueError, match="already holds a store"):
        import_store(tmp_path / "out.jsonl", tmp_path / "src")
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    entry_line = next(i for i, ln in enumerate(lines) if json.loads(ln)["record"] == "entry")
    bad = dict(json.loads(lines[entry_line]))
    del bad["text"]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines[:entry_line] + [json.dumps(bad)] + lines[entry_line + 1:]))
    with pytest.raises(ValueError, match=rf"line {entry_line + 1}: text: missing in this entry record"):
        import_store(tmp_path / "bad.jsonl", tmp_path / "dst")
    assert not (tmp_path / "dst" / "memory.db").exists() and not (tmp_path / "dst" / "index").exists()
    (tmp_path / "junk.jsonl").write_text('{"record": "entry"}\n')
    with pytest.raises(ValueError, match="line 1 is not the header"):
        import_store(tmp_path / "junk.jsonl", tmp_path / "dst")
    with pytest.raises(FileNotFoundError, match="STORE: no store"):
        export_store(tmp_path / "nowhere", tmp_path / "x.jsonl")


def test_backup_is_consistent_while_writers_run(tmp_path):
    src = tmp_path / "src"
    m = Memory(services=services(), path=str(src))
    key, _ = APIKeys(m.store).create("acme", admin=True)
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(uid: str) -> None:
        try:
            for i in range(10_000):
                if stop.is_set():
                    return
                m.add_graph(graph(f"{uid}-{i}", [(f"{uid} fact {i} one.", None), (f"{uid} fact {i} two.", None),
                                                 (f"{uid} fact {i} three.", None)]), user_id=uid)
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(u,)) for u in ("alice", "bob")]
    for t in threads:
        t.start()
    try:
        sizes = []
        for k in range(3):
            while len(m.store.list("alice", statuses=None)) < 6 * (k + 1):
                stop.wait(0.01)
            out = tmp_path / f"copy{k}"
            n = backup(src, out)
            con = sqlite3.connect(out / "memory.db")
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            # every session in the copy has all three of its entries: no commit was copied halfway
            per = con.execute("SELECT s.session_id, COUNT(e.id) FROM sessions s LEFT JOIN entries e "
                              "ON e.session_id = s.session_id AND e.user_id = s.user_id GROUP BY s.user_id, s.session_id").fetchall()
            assert per and all(c == 3 for _, c in per), per
            assert con.execute("SELECT COUNT(*) FROM entries WHERE session_id NOT IN "
                               "(SELECT session_id FROM sessions)").fetchone()[0] == 0
            assert n["entries"] == 3 * len(per)
            sizes.append(n["entries"])
            con.close()
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not errors and sizes == sorted(sizes) and sizes[0] < sizes[-1]
    copy = SQLiteStore(tmp_path / "copy2")
    assert APIKeys(copy).verify(key).tenant == "acme"  # a backup keeps the (hashed) keys
    assert copy.index("alice").index.ntotal == len(copy.list("alice"))  # index rebuilt from SQLite
    copy.close()
    m.close()
    with pytest.raises(ValueError, match="already holds a store"):
        backup(src, tmp_path / "copy0")


def test_store_command_line(tmp_path, capsys):
    import asyncio

    m = asyncio.run(_rich_store(tmp_path / "src"))
    total = len(m.store.list("alice", statuses=None)) + len(m.store.list("bob", statuses=None))
    asyncio.run(m.close())
    assert total == 7  # 8 stated, one merged (entailment both ways)
    assert main(["store", "backup", str(tmp_path / "src"), str(tmp_path / "bk")]) == 0
    assert f"backed up {total} entries of 2 users" in capsys.readouterr().err
    assert main(["store", "export", str(tmp_path / "bk"), str(tmp_path / "x.jsonl")]) == 0
    assert f"exported {total} entries" in capsys.readouterr().err
    assert main(["store", "import", str(tmp_path / "x.jsonl"), str(tmp_path / "moved")]) == 0
    err = capsys.readouterr().err
    assert f"imported {total} entries" in err and "FAISS indexes rebuilt" in err
    moved = SQLiteStore(tmp_path / "moved")
    assert len(moved.list("alice", statuses=None)) + len(moved.list("bob", statuses=None)) == total
    moved.close()
    assert main(["store", "import", str(tmp_path / "x.jsonl"), str(tmp_path / "moved")]) == 2
    err = capsys.readouterr().err
    assert "STORE:" in err and "already holds a store" in err
    assert main(["store", "backup", str(tmp_path / "none"), str(tmp_path / "bk2")]) == 2
    assert "STORE: no store" in capsys.readouterr().err


async def test_tenant_option_moves_memory_into_and_out_of_a_tenant(tmp_path):
    import httpx

    from promem_fast.server import create_app

    m = await _rich_store(tmp_path / "open")  # written before the store had keys: plain user ids
    before = (await m.get_all(user_id="alice", filters={"status": "all"}))["results"]
    await m.close()
    export_store(tmp_path / "open", tmp_path / "all.jsonl")
    import_store(tmp_path / "all.jsonl", tmp_path / "acme", tenant="acme")
    m2 = AsyncMemory(services=services(), path=str(tmp_path / "acme"))
    assert sorted(m2.store.user_ids()) == ["acme\x1falice", "acme\x1fbob"]
    key, _ = APIKeys(m2.store).create("acme", users=["alice"])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(m2)), base_url="http://t",
                                 headers={"Authorization": f"Bearer {key}"}) as c:
        got = (await c.get("/memories", params={"user_id": "alice", "status": "all"})).json()["results"]
    # same records (the response model adds score: null), the tenant's key sees them under "alice"
    assert [{k: v for k, v in r.items() if k != "score"} for r in got] == before and len(before) == 6
    await m2.close()
    # and out again: only the tenant's users, under their plain ids
    n = export_store(tmp_path / "acme", tmp_path / "acme.jsonl", tenant="acme")
    assert n["user"] == 2 and "acme" not in (tmp_path / "acme.jsonl").read_text().split("\n", 1)[1]
    assert export_store(tmp_path / "acme", tmp_path / "none.jsonl", tenant="bravo")["entry"] == 0
    import_store(tmp_path / "acme.jsonl", tmp_path / "plain")
    m3 = AsyncMemory(services=services(), path=str(tmp_path / "plain"))
    assert (await m3.get_all(user_id="alice", filters={"status": "all"}))["results"] == before
    await m3.close()
    with pytest.raises(ValueError, match="^tenant:"):
        import_store(tmp_path / "acme.jsonl", tmp_path / "x", tenant="no spaces")
