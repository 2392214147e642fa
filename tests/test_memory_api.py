"""Mem0-shaped Memory / AsyncMemory API and the Mem0 / LightMem / MemOS adapters."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from promem_fast.schema import Session, Turn
from promem_fast.store import AsyncMemory, InvalidInput, Memory, messages_to_session
from promem_fast.store.adapters import (
    to_lightmem_entries, to_mem0_records, to_memos_items, write_to_lightmem, write_to_mem0, write_to_memos,
)

from _store_helpers import graph, services

MSGS = [
    {"role": "user", "content": "I adopted a puppy named Max yesterday", "timestamp": "2023-05-08T10:00:00"},
    {"role": "assistant", "content": "Congratulations! What breed is he?"},
    {"role": "user", "content": "He is a golden retriever and loves the park", "timestamp": "2023-05-08T10:01:00"},
]

RECORD_KEYS = {"id", "memory", "score", "metadata", "created_at", "updated_at", "user_id"}


def test_sync_memory_mem0_shapes(tmp_path):
    with Memory(services=services(), path=str(tmp_path / "mem")) as m:
        add = m.add_graph(graph("s1", [("Alice adopted a puppy named Max.", "2023-05-08"),
                                       ("Alice's puppy loves the park.", "2023-05-08")]), user_id="alice")
        assert set(add) == {"results", "session_id"}
        assert [(r["memory"], r["event"]) for r in add["results"]] == [
            ("Alice adopted a puppy named Max.", "ADD"), ("Alice's puppy loves the park.", "ADD")]
        pid = add["results"][0]["id"]

        hits = m.search("puppy named Max", user_id="alice", top_k=1)["results"]
        assert len(hits) == 1 and RECORD_KEYS <= set(hits[0]) and hits[0]["id"] == pid
        assert 0.0 < hits[0]["score"] <= 1.0 + 1e-6

        got = m.get(pid)
        assert got["memory"] == "Alice adopted a puppy named Max." and got["provenance"][0]["session_id"] == "s1"
        assert [r["id"] for r in m.get_all(user_id="alice")["results"]] == [r["id"] for r in add["results"]]

        assert m.update(pid, "Alice adopted a beagle named Max.")["message"].startswith("Memory updated")
        assert m.get(pid)["memory"] == "Alice adopted a beagle named Max."
        assert m.search("beagle", user_id="alice", top_k=1)["results"][0]["id"] == pid  # re-embedded
        h = m.history(pid)
        assert [(x["event"], x["old_memory"], x["new_memory"]) for x in h] == [
            ("ADD", None, "Alice adopted a puppy named Max."),
            ("UPDATE", "Alice adopted a puppy named Max.", "Alice adopted a beagle named Max.")]
        assert {"id", "memory_id", "old_memory", "new_memory", "event", "created_at", "updated_at", "is_deleted"} <= set(h[0])

        m.delete(pid)
        assert m.get(pid) is None
        assert m.history(pid)[-1]["event"] == "DELETE" and m.history(pid)[-1]["is_deleted"] is True
        with pytest.raises(KeyError):
            m.update(pid, "x")
        m.reset()
        assert m.get_all(user_id="alice")["results"] == []


def test_add_messages_runs_the_pipeline_and_is_idempotent(tmp_path):
    from promem_fast.engine.scripted_rules import scripted_services

    svc = scripted_services()
    with Memory(services=svc, path=str(tmp_path / "mem")) as m:
        res = m.add(MSGS, user_id="u1", user_name="Alice", metadata={"app": "test"})
        assert res["results"] and all(r["event"] == "ADD" for r in res["results"])
        calls = svc.llm.generate_calls
        assert calls > 0
        stored = m.get_all(user_id="u1")["results"]
        assert {r["id"] for r in stored} == {r["id"] for r in res["results"]}
        assert all(r["metadata"]["app"] == "test" for r in stored)
        assert all(set(r["source_turn_ids"]) <= {"t0", "t1", "t2"} for r in stored)
        ev = [r for r in stored if r["kind"] == "event"]
        assert ev and all(r["memory"].startswith("Alice") for r in ev)
        assert all(r["event_time"] and r["event_time"].startswith("2023-05-0") for r in ev)

        again = m.add(MSGS, user_id="u1", user_name="Alice")
        assert svc.llm.generate_calls == calls  # no extraction for a session already stored
        assert sorted((r["id"], r["event"]) for r in again["results"]) == sorted((r["id"], "NONE") for r in stored)


async def test_async_twin_and_filters(tmp_path):
    m = AsyncMemory(services=services(), path=str(tmp_path / "mem"))
    await m.add_graph(graph("s1", [("Alice plays chess.", "2023-01-05")]), user_id="alice", metadata={"topic": "games"})
    await m.add_graph(graph("s2", [("Alice bakes bread.", "2023-03-09")]), user_id="alice", metadata={"topic": "food"})
    got = await m.get_all(user_id="alice", filters={"topic": "food"})
    assert [r["memory"] for r in got["results"]] == ["Alice bakes bread."]
    got = await m.get_all(user_id="alice", filters={"event_time": {"gte": "2023-02-01"}})
    assert [r["memory"] for r in got["results"]] == ["Alice bakes bread."]
    got = await m.search("Alice plays", user_id="alice", filters={"session_id": "s1"})
    assert [r["memory"] for r in got["results"]] == ["Alice plays chess."]
    arch = await m.archive(got["results"][0]["id"])
    assert arch["status"] == "archived"
    assert [r["memory"] for r in (await m.search("Alice plays", user_id="alice"))["results"]] == ["Alice bakes bread."]
    assert [r["memory"] for r in (await m.get_all(user_id="alice", filters={"status": "archived"}))["results"]] == [
        "Alice plays chess."]


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda m: m.add([], user_id="a"), "messages"),
        (lambda m: m.add([{"role": "user", "content": ""}], user_id="a"), "messages[0].content"),
        (lambda m: m.add([{"role": "user", "content": "hi", "timestamp": "not a date"}], user_id="a"),
         "messages[0].timestamp"),
        (lambda m: m.add("hello", user_id=None), "user_id"),
        (lambda m: m.search("q", user_id="a", top_k=0), "top_k"),
        (lambda m: m.search("q", user_id="a", filters={"status": "gone"}), "filters.status"),
        (lambda m: m.search("q", user_id="a", filters={"event_time": {"after": "x"}}), "filters.event_time"),
        (lambda m: m.search("bad \ud800 text", user_id="a"), "query"),
        (lambda m: m.get_all(user_id="a", limit=0), "limit"),
    ],
)
async def test_bad_input_names_the_field(tmp_path, call, field):
    m = AsyncMemory(services=services(), path=str(tmp_path / "mem"), extractor=object())
    with pytest.raises(InvalidInput) as ei:
        await call(m)
    assert ei.value.field == field


def test_messages_to_session():
    s, h = messages_to_session(MSGS, user_name="Alice")
    assert [t.turn_id for t in s.turns] == ["t0", "t1", "t2"]
    assert s.turns[0].timestamp == datetime(2023, 5, 8, 10, 0) and s.turns[1].timestamp is None
    assert s.user_name == "Alice" and s.session_id == f"s-{h[:16]}"
    s2, h2 = messages_to_session(MSGS[:2], user_name="Alice")
    assert h2 != h
    s3, _ = messages_to_session("just one line")
    assert [(t.role, t.content) for t in s3.turns] == [("user", "just one line")]


# ---------------------------------------------------------------------------- adapters
def _g():
    sess = Session(session_id="s9", user_name="Alice", turns=[
        Turn(turn_id="t0", role="user", content="I adopted Max", timestamp=datetime(2023, 5, 8, 10)),
        Turn(turn_id="t1", role="user", content="Bob got a job", timestamp=datetime(2023, 5, 8, 11)),
    ])
    g = graph("s9", [("Alice adopted a puppy named Max.", "2023-05-08"), ("Bob, Alice's friend, got a new job.", None)],
              details=[("Max is a golden retriever.", "t0", ["e1"])], entail_score=0.9)
    return g, sess


def test_mem0_records_and_writer():
    g, sess = _g()
    assert [r["memory"] for r in to_mem0_records(g, "u1", sess, include_details=True)] == \
        [e.text for e in g.events] + [d.text for d in g.details]
    recs = to_mem0_records(g, "u1", sess)  # by default a detail rides in its event's metadata
    assert [(r["memory"], r["metadata"]["details"]) for r in recs] == [
        ("Alice adopted a puppy named Max.", ["Max is a golden retriever."]), ("Bob, Alice's friend, got a new job.", [])]
    assert recs[0]["user_id"] == "u1" and recs[0]["metadata"]["source_turn_ids"] == ["t0"]
    assert recs[0]["metadata"]["confidence"] == 0.9 and recs[0]["metadata"]["event_time"] == "2023-05-08"
    assert recs == to_mem0_records(g, "u1", sess)  # stable ids: re-export overwrites
    assert len({r["id"] for r in recs}) == 2

    class FakeMem0:
        def __init__(self):
            self.calls = []

        def add(self, messages, *, user_id, metadata, infer):
            self.calls.append((messages, user_id, metadata, infer))
            return {"results": [{"id": str(len(self.calls)), "memory": messages, "event": "ADD"}]}

    fm = FakeMem0()
    out = write_to_mem0(fm, g, "u1", sess, include_details=True)
    assert len(out) == 3 and all(c[3] is False and c[1] == "u1" for c in fm.calls)
    assert fm.calls[2][0] == "Max is a golden retriever."


def test_lightmem_entries_and_writer():
    g, sess = _g()
    g.topics = [__import__("promem_fast.schema", fromlist=["Topic"]).Topic(id="T1", turn_ids=["t0"], events=["Adoption"])]
    ents = to_lightmem_entries(g, "u1", sess, include_details=True)
    e0 = ents[0]
    assert e0["memory"] == "Alice adopted a puppy named Max." and e0["time_stamp"] == "2023-05-08T00:00:00"
    assert e0["weekday"] == "Mon" and e0["topic_id"] == "T1" and e0["topic_summary"] == "Adoption"
    assert e0["speaker_name"] == "Alice" and e0["category"] == "event"
    assert ents[1]["time_stamp"] == "2023-05-08T11:00:00"  # no resolved date: the grounding turn's time
    assert ents[2]["category"] == "detail"

    class FakeRetriever:
        def insert(self, vectors, payloads, ids):
            self.args = (vectors, payloads, ids)

    fr = FakeRetriever()
    ids = write_to_lightmem(fr, lambda texts: np.ones((len(texts), 4), np.float32), g, "u1", sess,
                           include_details=True)
    assert ids == [e["id"] for e in ents] and len(fr.args[0]) == 3 and fr.args[1][0]["memory"] == e0["memory"]


def test_memos_items_and_writer():
    g, sess = _g()
    items = to_memos_items(g, "u1", sess)
    md = items[0]["metadata"]
    assert items[0]["memory"] == "Alice adopted a puppy named Max."
    assert md["user_id"] == "u1" and md["session_id"] == "s9" and md["status"] == "activated"
    assert md["memory_time"] == "2023-05-08" and md["confidence"] == 90.0
    assert md["memory_type"] == "UserMemory" and items[1]["metadata"]["memory_type"] == "LongTermMemory"
    assert md["sources"] == [{"type": "chat", "role": "user", "chat_time": "2023-05-08T10:00:00",
                              "message_id": "t0", "content": "I adopted Max"}]

    class FakeTextMemory:
        def add(self, memories):
            self.got = memories

    tm = FakeTextMemory()
    write_to_memos(tm, g, "u1", sess)
    assert [x["memory"] for x in tm.got] == [x["memory"] for x in items]
