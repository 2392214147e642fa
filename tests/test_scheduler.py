"""Scheduler: concurrency limit, failure isolation, and the equivalence of the batched engine
with the sequential one on the real pipeline (scripted LLM)."""

from __future__ import annotations

import asyncio
import os
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from promem_fast.config import Config
from promem_fast.engine.scheduler import build_extractor, run_all, run_sessions
from promem_fast.engine.scripted_rules import scripted_services
from promem_fast.schema import MemoryGraph, Session, Turn

DATA = Path(os.environ.get("PROMEM_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))


def _session(k: int, n_turns: int = 8) -> Session:
    t0 = datetime(2023, 5, 1 + k, 10, 0)
    lines = [
        "I adopted a puppy named Max last week",
        "That's lovely! What breed is he?",
        "He is a beagle and he loves the park near my office in Lyon",
        "Do you take him there every day?",
        "Yes, every morning before work, and on Sunday we hike with my sister Ana",
        "Sounds fun.",
        f"I also started learning piano in {2020 + k} and I practice Chopin",
        "Impressive!",
    ]
    turns = [
        Turn(turn_id=f"D{k}:{i + 1}", role="user" if i % 2 == 0 else "assistant",
             speaker="Sam" if i % 2 == 0 else "Alex", content=lines[i % len(lines)] + f" ({k})",
             timestamp=t0 + timedelta(minutes=i))
        for i in range(n_turns)
    ]
    return Session(session_id=f"s{k}", user_name="Sam", turns=turns, start_time=t0)


def _fake_graph(s: Session) -> MemoryGraph:
    return MemoryGraph(session_id=s.session_id, user_name=s.user_name, variant="promem")


async def test_concurrency_limit_is_respected_and_all_sessions_finish():
    running = 0
    peak = 0

    async def extract(s):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return _fake_graph(s)

    sessions = [_session(k, 2) for k in range(10)]
    res = await run_all(sessions, extract, concurrency=3)
    assert [r.session_id for r in res] == [f"s{k}" for k in range(10)]
    assert [r.index for r in res] == list(range(10))
    assert all(r.ok and r.graph.session_id == r.session_id for r in res)
    assert peak == 3


async def test_results_are_yielded_as_completed():
    async def extract(s):
        await asyncio.sleep(0.05 if s.session_id == "s0" else 0.0)
        return _fake_graph(s)

    order = [r.session_id async for r in run_sessions([_session(0, 2), _session(1, 2)], extract, 2)]
    assert order == ["s1", "s0"]


async def test_one_failing_session_does_not_stop_the_others():
    async def extract(s):
        if s.session_id == "s2":
            raise ValueError("bad turn in s2")
        await asyncio.sleep(0.001)
        return _fake_graph(s)

    res = await run_all([_session(k, 2) for k in range(5)], extract, concurrency=2)
    assert [r.ok for r in res] == [True, True, False, True, True]
    assert res[2].graph is None and res[2].error == "ValueError: bad turn in s2"


async def test_extractor_object_with_aextract_is_accepted_and_lazy_iterables_work():
    class E:
        async def aextract(self, s):
            return _fake_graph(s)

    gen = (_session(k, 2) for k in range(4))
    res = await run_all(gen, E(), concurrency=8)
    assert [r.session_id for r in res] == ["s0", "s1", "s2", "s3"]


async def test_invalid_concurrency():
    with pytest.raises(ValueError, match="concurrency"):
        async for _ in run_sessions([], lambda s: s, 0):
            pass


# -- equivalence on the real pipeline ------------------------------------------------


def _zero_timing(g: MemoryGraph) -> str:
    """The graph as JSON with the wall-clock fields zeroed: stats.seconds and every
    stats.stages[*].seconds. They measure time, which differs between engines by design;
    everything else (events, details, relations, topics, discarded, token and call counts,
    models) must be byte-identical."""
    g = g.model_copy(deep=True)
    g.stats.seconds = 0.0
    for st in g.stats.stages.values():
        st.seconds = 0.0
    return g.to_json()


def _run_engine(sessions, engine: str, concurrency: int) -> tuple[list, dict]:
    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    raw = scripted_services()
    extractor, wrapped = build_extractor(cfg, raw, engine=engine, concurrency=concurrency)
    res = asyncio.run(run_all(sessions, extractor, concurrency))
    return res, {"generate_calls": raw.llm.generate_calls, "requests": len(raw.llm.calls)}


def _assert_equivalent(sessions, concurrency):
    seq, seq_calls = _run_engine(sessions, "sequential", 1)
    bat, bat_calls = _run_engine(sessions, "batched", concurrency)
    assert all(r.ok for r in seq), [r.error for r in seq if not r.ok]
    assert all(r.ok for r in bat), [r.error for r in bat if not r.ok]
    for a, b in zip(seq, bat):
        assert _zero_timing(a.graph) == _zero_timing(b.graph), a.session_id
    # same requests, far fewer service calls
    assert seq_calls["requests"] == bat_calls["requests"] == seq_calls["generate_calls"]
    assert bat_calls["generate_calls"] < seq_calls["generate_calls"] / 2
    return seq


def test_batched_engine_gives_byte_identical_graphs_synthetic():
    sessions = [_session(k, 6 + 2 * k) for k in range(4)]
    seq = _assert_equivalent(sessions, concurrency=4)
    # the run exercised the pipeline, not an empty graph
    assert all(len(r.graph.events) > 0 for r in seq)
    assert all(r.graph.stats.llm_calls > 0 and r.graph.stats.prompt_tokens > 0 for r in seq)
    # including the completeness check on details (a turn's last words are in no fact)
    assert any(e.origin == "detail" for r in seq for e in r.graph.events)


@pytest.mark.skipif(not (DATA / "locomo_dev.json").is_file(), reason=f"LoCoMo dev data not found in {DATA}")
def test_batched_engine_gives_byte_identical_graphs_locomo():
    from promem_fast.io import load_sessions

    sessions = load_sessions(DATA / "locomo_dev.json")
    picked = sessions[:3] + sessions[19:22]  # both conversations
    seq = _assert_equivalent(picked, concurrency=6)
    statuses = {e.status for r in seq for e in r.graph.events}
    assert {"kept", "recovered", "revised"} <= statuses  # every verification path ran
    assert sum(len(r.graph.relations) for r in seq) > 0


def test_failing_session_is_isolated_inside_shared_batches():
    """A session whose prompts make the LLM raise fails alone, even when its requests
    share a batch with the other sessions' requests."""
    from promem_fast.engine import scripted_rules

    good = [_session(k, 6) for k in range(3)]
    bad = _session(9, 6).model_copy(update={"session_id": "boom"})
    bad.turns[0] = bad.turns[0].model_copy(update={"content": "EXPLODE please"})

    def rule(req):
        if any("EXPLODE" in m["content"] for m in req.messages):
            raise RuntimeError("scripted backend failure")
        return scripted_rules.respond(req)

    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    raw = scripted_services()
    raw.llm.rules = rule
    extractor, wrapped = build_extractor(cfg, raw, engine="batched", concurrency=4)
    res = asyncio.run(run_all(good + [bad], extractor, 4))
    assert [r.ok for r in res] == [True, True, True, False]
    assert "scripted backend failure" in res[3].error
    assert wrapped.llm.batcher.stats.split_retries >= 1
    ref, _ = _run_engine(good, "sequential", 1)
    assert [_zero_timing(r.graph) for r in res[:3]] == [_zero_timing(r.graph) for r in ref]


def test_build_extractor_rejects_unknown_engine_and_scripted_services_from_config():
    from promem_fast.context import Services

    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    svc = Services.from_config(cfg, scripted_latency_s=0.0)
    assert svc.llm.name == "scripted" and svc.nli.llm is svc.llm and svc.embed.name == "hash"
    with pytest.raises(ValueError, match="engine must be"):
        build_extractor(cfg, svc, engine="turbo")
    g = build_extractor(cfg, svc, engine="sequential")[0].extract(_session(1, 6))
    assert g.session_id == "s1" and g.models["llm"] == "scripted" and len(g.events) > 0


def test_a_config_naming_the_scripted_backend_is_enough(tmp_path):
    # the Python API, the store and the server build services from the config alone
    import asyncio as aio

    from promem_fast.extractor import Extractor
    from promem_fast.qa import answer
    from promem_fast.store import Memory

    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    ex = Extractor(cfg)
    g = ex.extract(_session(1, 6))
    assert len(g.events) > 0 and g.models["llm"] == "scripted"
    res = aio.run(answer("What did the user say?", [g], ex.services))
    assert res.answer.startswith("Sam said") and any(u.text.startswith(res.answer) for u in res.retrieved)
    with Memory(cfg, path=str(tmp_path / "mem")) as m:
        added = m.add([{"role": "user", "content": "I adopted a cat named Milo last week."}],
                      user_id="alice", user_name="Alice")
        assert added["results"] and m.get_all(user_id="alice")["results"]
        # a second session goes through NLI-checked consolidation against the first
        second = m.add([{"role": "user", "content": "My cat Milo likes to sleep on the sofa."}],
                       user_id="alice", user_name="Alice")
        # the new event is added, nothing updated (its details ride in its metadata, not as entries)
        assert [r["event"] for r in second["results"]] == ["ADD"]
        kept = m.get_all(user_id="alice")["results"]
        assert [r["id"] for r in kept] == [r["id"] for r in added["results"] + second["results"]]
        assert {r["status"] for r in kept} == {"active"}
