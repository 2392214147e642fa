"""promem_fast inside the real Mem0 (``mem0ai``): ``promem_fast.integrations.mem0.Memory``.

Runs against the installed mem0ai package with a local Qdrant (embedded, on-disk path mode),
the MiniLM ONNX embedder and the scripted LLM (exact assertions); no network: Mem0 telemetry
off, Mem0's own LLM pointed at an unused 127.0.0.1 port and never called.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# Mem0 reads both at import time.
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-dir-"))

pytest.importorskip("mem0", reason="mem0ai is not installed (pip install 'promem-fast[mem0]')")
pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (the embedded extra)")

from promem_fast import Config  # noqa: E402
from promem_fast.config import LLMConfig  # noqa: E402
from promem_fast.context import Services  # noqa: E402
from promem_fast.extractor import Extractor  # noqa: E402
from promem_fast.store.memory import InvalidInput, messages_to_session  # noqa: E402

MESSAGES = [
    {"role": "user", "name": "Caroline", "content": "I went to an LGBTQ support group yesterday and it was so powerful.",
     "timestamp": "2023-05-08T13:56:00"},
    {"role": "assistant", "name": "Melanie", "content": "That sounds amazing! What happened there?",
     "timestamp": "2023-05-08T13:57:00"},
    {"role": "user", "name": "Caroline", "content": "The transgender stories were inspiring and I felt accepted by everyone.",
     "timestamp": "2023-05-08T13:58:00"},
    {"role": "assistant", "name": "Melanie", "content": "I'm so happy for you, Caroline.",
     "timestamp": "2023-05-08T13:59:00"},
    {"role": "user", "name": "Caroline", "content": "Next I want to study counseling so I can help other people like me.",
     "timestamp": "2023-05-08T14:00:00"},
]


# What the scripted LLM (promem_fast.engine.scripted_rules) extracts from MESSAGES:
# (memory, kind, source_turn_ids, event_time). "yesterday" resolves to 7 May 2023. The
# rules' "... so Caroline can help other people like Caroline" is discarded: it is stated
# only inside the wish "I want to study counseling so I can help ..." (screen.wished_only);
# the detail re-read restates t4 itself, wish and all, and that replaces the rules' cut-off
# "Caroline said Next I want to study counseling so Caroline" as its near-duplicate.
EXPECTED = [
    ("Caroline said Caroline went to an LGBTQ support group yesterday", "event", ["t0"], "2023-05-07"),
    ("Caroline said The transgender stories were inspiring and Caroline felt", "event", ["t2"], "2023-05-08T13:58:00"),
    ("Next Caroline wants to study counseling so Caroline can help other people like Caroline.", "event", ["t4"],
     "2023-05-08T14:00:00"),
]
# The session's details ("I went to an", "was so powerful", ...: phrases cut from a turn) are
# not memories of their own by default: each rides in its anchored event's metadata["details"].
DETAILS = ["I went to an", "was so powerful", "The transgender stories were", "Next I want to", "people like me"]


@pytest.fixture(scope="module")
def embed():
    from promem_fast.backends.embed.onnx import OnnxEmbedder
    from promem_fast.config import EmbedConfig
    from promem_fast.models import ModelPackageMissing

    try:
        return OnnxEmbedder(EmbedConfig(), threads=1)
    except ModelPackageMissing as e:
        pytest.skip(str(e))


def scripted_extractor(embed) -> Extractor:
    """The promem pipeline with the rule-based scripted LLM (also the NLI judge) and MiniLM."""
    from promem_fast.backends.llm.scripted import ScriptedLLM
    from promem_fast.backends.registry import create_nli
    from promem_fast.engine.scripted_rules import respond

    cfg = Config(llm=LLMConfig(backend="scripted"))
    llm = ScriptedLLM(rules=respond)
    return Extractor(cfg, Services(llm=llm, nli=create_nli(cfg.nli, llm=llm), embed=embed))


def mem0_dict(tmp_path: Path) -> dict:
    return {
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "qdrant"), "collection_name": "t"}},
        "embedder": {"provider": "promem_fast"},
        # Mem0's LLM: never called by promem_fast's add; an unused local port.
        "llm": {"provider": "openai", "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1",
                                                 "model": "unused"}},
        "history_db_path": str(tmp_path / "history.db"),
    }


@pytest.fixture
def mem(tmp_path, embed):
    from promem_fast.integrations.mem0 import Memory

    m = Memory.from_config(mem0_dict(tmp_path), extractor=scripted_extractor(embed))
    yield m
    m.close()


def llm_of(m):
    return m.extractor.services.llm


def expected_graph(embed, messages=MESSAGES, **kw):
    session, _ = messages_to_session(messages, **kw)
    return session, scripted_extractor(embed).extract(session)


# ---------------------------------------------------------------------------- add
def test_add_stores_verified_entries_with_provenance(mem, embed):
    import mem0

    assert isinstance(mem, mem0.Memory)
    out = mem.add(MESSAGES, user_id="caroline", metadata={"app": "diary"}, session_id="s1")
    session, graph = expected_graph(embed, session_id="s1", user_name="Caroline")
    want = [e.text for e in graph.events]
    assert [r["memory"] for r in out["results"]] == want == [x[0] for x in EXPECTED]
    assert [d.text for d in graph.details] == DETAILS
    assert [r["metadata"]["details"] for r in out["results"]] == [
        [d.text for d in graph.details if e.id in d.event_ids] for e in graph.events]
    assert sum(map(len, (r["metadata"]["details"] for r in out["results"]))) >= 3  # anchoring placed some
    assert [(r["memory"], r["metadata"]["kind"], r["metadata"]["source_turn_ids"], r["metadata"]["event_time"])
            for r in out["results"]] == EXPECTED
    assert [r["metadata"]["confidence"] for r in out["results"]] == [1.0] * 3
    assert [r["event"] for r in out["results"]] == ["ADD"] * len(want)
    assert out["promem"]["extracted"] is True
    # the wish clause is screened out before NLI; the relation probes of all edges are one request
    assert out["promem"]["llm_calls"] == graph.stats.llm_calls == 11
    assert out["promem"]["prompt_tokens"] == graph.stats.prompt_tokens
    got = mem.get_all(filters={"user_id": "caroline"}, top_k=100)["results"]
    assert sorted(r["memory"] for r in got) == sorted(want)
    first = mem.get(out["results"][0]["id"])
    md = first["metadata"]
    ev = graph.events[0]
    assert first["memory"] == ev.text and first["user_id"] == "caroline"
    assert md["app"] == "diary" and md["source"] == "promem_fast" and md["kind"] == "event"
    assert md["session_id"] == "s1" and md["graph_node_id"] == ev.id
    assert md["source_turn_ids"] == ev.source_turn_ids
    assert md["event_time"] == "2023-05-07" and md["dates"] == ["2023-05-07"] and md["confidence"] == 1.0
    assert md["promem_id"] == out["results"][0]["metadata"]["promem_id"] and len(md["promem_input"]) == 32
    assert mem.history(out["results"][0]["id"])[0]["event"] == "ADD"


def test_search_is_mem0s_and_finds_the_facts(mem):
    mem.add(MESSAGES, user_id="caroline", session_id="s1")
    hits = mem.search("LGBTQ support group", filters={"user_id": "caroline"}, top_k=3)["results"]
    assert hits[0]["memory"] == EXPECTED[0][0] and hits[0]["metadata"]["source_turn_ids"] == ["t0"]
    hits = mem.search("What does Caroline want to study?", filters={"user_id": "caroline"}, top_k=3)["results"]
    assert hits[0]["memory"] == EXPECTED[2][0] and hits[0]["metadata"]["event_time"] == "2023-05-08T14:00:00"
    assert mem.search("support group", filters={"user_id": "someone-else"}, top_k=3)["results"] == []


def test_readd_changes_nothing(mem):
    first = mem.add(MESSAGES, user_id="caroline", session_id="s1")
    calls = len(llm_of(mem).calls)
    again = mem.add(MESSAGES, user_id="caroline", session_id="s1")
    assert again["promem"]["extracted"] is False and again["promem"]["llm_calls"] == 0
    assert len(llm_of(mem).calls) == calls  # no model call
    assert sorted((r["id"], r["memory"]) for r in again["results"]) == \
        sorted((r["id"], r["memory"]) for r in first["results"])
    assert {r["event"] for r in again["results"]} == {"NONE"}
    assert len(mem.get_all(filters={"user_id": "caroline"}, top_k=100)["results"]) == len(first["results"])


def test_stable_ids_skip_entries_already_stored(mem):
    """Same entries under another fingerprint (new metadata timestamp): extracted again, nothing added twice."""
    first = mem.add(MESSAGES, user_id="caroline", session_id="s1")
    for r in first["results"]:  # forget the fingerprint, keep the stable ids
        mem.update(r["id"], metadata={"promem_input": "older"})
    again = mem.add(MESSAGES, user_id="caroline", session_id="s1")
    assert again["promem"]["extracted"] is True
    assert {r["event"] for r in again["results"]} == {"NONE"}
    assert sorted(r["id"] for r in again["results"]) == sorted(r["id"] for r in first["results"])
    assert len(mem.get_all(filters={"user_id": "caroline"}, top_k=100)["results"]) == len(first["results"])


def test_other_sessions_and_users_are_apart(mem):
    a = mem.add(MESSAGES, user_id="caroline", session_id="s1")
    b = mem.add(MESSAGES, user_id="caroline", session_id="s2")  # same words, another session
    c = mem.add(MESSAGES, user_id="melanie", session_id="s1")  # same session id, another user
    for out in (b, c):
        assert out["promem"]["extracted"] is True and {r["event"] for r in out["results"]} == {"ADD"}
    ids = [r["id"] for out in (a, b, c) for r in out["results"]]
    assert len(set(ids)) == 3 * len(EXPECTED)
    assert len(mem.get_all(filters={"user_id": "caroline"}, top_k=100)["results"]) == 2 * len(EXPECTED)


def test_faiss_store(tmp_path, embed):
    from promem_fast.integrations.mem0 import Memory

    d = mem0_dict(tmp_path)
    d["vector_store"] = {"provider": "faiss", "config": {"path": str(tmp_path / "faiss"), "collection_name": "t",
                                                         "distance_strategy": "cosine"}}
    m = Memory.from_config(d, extractor=scripted_extractor(embed))
    first = m.add(MESSAGES, user_id="caroline", session_id="s1")
    again = m.add(MESSAGES, user_id="caroline", session_id="s1")
    assert [r["memory"] for r in first["results"]] == [x[0] for x in EXPECTED]
    assert {r["event"] for r in again["results"]} == {"NONE"} and again["promem"]["extracted"] is False
    hits = m.search("LGBTQ support group", filters={"user_id": "caroline"}, top_k=3)["results"]
    assert hits[0]["memory"] == EXPECTED[0][0]
    m.close()


def test_update_delete_history_stay_mem0s(mem):
    out = mem.add(MESSAGES, user_id="caroline", session_id="s1")
    mid = out["results"][0]["id"]
    mem.update(mid, text="Caroline went to an LGBTQ support group on 7 May 2023.")
    got = mem.get(mid)
    assert got["memory"] == "Caroline went to an LGBTQ support group on 7 May 2023."
    assert got["metadata"]["source_turn_ids"] == out["results"][0]["metadata"]["source_turn_ids"]
    assert [h["event"] for h in mem.history(mid)] == ["ADD", "UPDATE"]
    mem.delete(mid)
    assert mem.get(mid) is None
    assert [h["event"] for h in mem.history(mid)] == ["ADD", "UPDATE", "DELETE"]


def test_add_timestamp_dates_messages_without_one(mem):
    msgs = [{"role": m["role"], "content": m["content"]} for m in MESSAGES]
    out = mem.add(msgs, user_id="u2", timestamp="2023-05-08T13:56:00+00:00", user_name="Caroline")
    z = "2023-05-08T13:56:00+00:00"
    assert [(r["memory"], r["metadata"]["event_time"]) for r in out["results"]] == \
        [(x[0], "2023-05-07" if x[3] == "2023-05-07" else z) for x in EXPECTED]
    unix = mem.add(msgs[:1], user_id="u3", timestamp=1683554160)  # 2023-05-08T13:56:00Z
    assert [(r["metadata"]["kind"], r["metadata"]["event_time"]) for r in unix["results"]] == \
        [("event", "2023-05-07")]


def test_mem0_oss_rejects_timestamps_that_we_keep(tmp_path, mem):
    import mem0

    from promem_fast.integrations.mem0 import mem0_config

    plain = mem0.Memory(mem0_config(mem0_dict(tmp_path / "plain")))
    with pytest.raises(ValueError, match="timestamp"):
        plain.add("I went to a support group", user_id="u", timestamp=1683554160, infer=False)
    plain.close()


def test_infer_false_is_mem0s_verbatim_add(mem):
    out = mem.add("Likes tea", user_id="u1", infer=False)
    assert [r["memory"] for r in out["results"]] == ["Likes tea"] and "promem" not in out
    assert llm_of(mem).calls == []


def test_errors_name_the_field(mem):
    cases = [
        (dict(messages=[{"role": "user", "content": "hi"}, {"role": "user"}], user_id="u"), "messages[1].content"),
        (dict(messages=MESSAGES), "user_id"),
        (dict(messages=MESSAGES, user_id="two words"), "user_id"),
        (dict(messages=MESSAGES, user_id="u", metadata={"source": "x"}), "metadata.source"),
        (dict(messages=MESSAGES, user_id="u", metadata={"details": "x"}), "metadata.details"),
        (dict(messages=MESSAGES, user_id="u", metadata=["x"]), "metadata"),
        (dict(messages=MESSAGES, user_id="u", timestamp="not a date"), "timestamp"),
        (dict(messages=MESSAGES, user_id="u", timestamp=[1]), "timestamp"),
        (dict(messages=MESSAGES, user_id="u", prompt="extract"), "prompt"),
        (dict(messages=[{"role": "user", "content": "hi", "timestamp": "yesterday-ish"}], user_id="u"),
         "messages[0].timestamp"),
        (dict(messages=MESSAGES, user_id="u", session_id=""), "session_id"),
    ]
    for kw, field in cases:
        with pytest.raises(InvalidInput) as ei:
            mem.add(**kw)
        assert ei.value.field == field, (kw, ei.value)
    assert llm_of(mem).calls == []  # all raised before any model call


def test_config_errors_name_the_field(tmp_path, embed):
    from promem_fast.integrations.mem0 import Memory, mem0_config

    d = mem0_dict(tmp_path)
    d["embedder"] = {"provider": "promem_fast", "config": {"model_name": "x"}}
    with pytest.raises(InvalidInput) as ei:
        mem0_config(d)
    assert ei.value.field == "embedder.config.model_name"
    d["embedder"] = {"provider": "promem_fast", "config": {"embedding_dims": 0}}
    with pytest.raises(InvalidInput) as ei:
        mem0_config(d)
    assert ei.value.field == "embedder.config.embedding_dims"
    with pytest.raises(InvalidInput) as ei:
        Memory.from_config(mem0_dict(tmp_path), promem={"llm": "x"})
    assert ei.value.field == "promem"
    cfg = mem0_config(mem0_dict(tmp_path))
    assert cfg.vector_store.config.embedding_model_dims == 384 and cfg.embedder.provider == "promem_fast"


def test_wrong_embedding_dims_named(tmp_path, embed):
    from promem_fast.integrations.mem0 import Memory

    d = mem0_dict(tmp_path)
    d["embedder"] = {"provider": "promem_fast", "config": {"embedding_dims": 768}}
    m = Memory.from_config(d, extractor=scripted_extractor(embed))
    with pytest.raises(ValueError, match="embedder.config.embedding_dims"):
        m.add("I like tea", user_id="u", infer=False)
    m.close()


def test_import_promem_fast_without_mem0():
    code = (
        "import sys; sys.modules['mem0'] = None\n"
        "import promem_fast, promem_fast.integrations\n"
        "try:\n    import promem_fast.integrations.mem0\nexcept ImportError as e:\n"
        "    assert \"promem-fast[mem0]\" in str(e), e; print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(Path(__file__).resolve().parents[1]))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


# ---------------------------------------------------------------------------- §4.6 benchmark harness
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.slow
def test_bench_mem0_backend_smoke(tmp_path):
    """The benchmark end to end on the fake OpenAI server (scripted answers), cut sessions."""
    if not (DATA / "locomo_dev.json").is_file() or not (DATA / "halumem_dev_user3.jsonl").is_file():
        pytest.skip(f"development data not found in {DATA}")
    from _bench_loader import load_benchmark

    bench = load_benchmark("bench_mem0_backend")
    res = bench.main(["--smoke", "--data-dir", str(DATA), "--max-turns", "6", "--max-questions", "2",
                      "--out", str(tmp_path / "smoke.jsonl")])
    rows = res["sessions"]
    assert [(r["system"], r["dataset"]) for r in rows] == \
        [("mem0", "locomo")] * 2 + [("mem0", "halumem")] * 3 + [("promem_fast", "locomo")] * 2 + \
        [("promem_fast", "halumem")] * 3
    for r in rows:
        assert r["turns"] == 6 and r["llm_errors"] == 0 and r["memories"] > 0
        assert r["prompt_tokens"] > 0 and r["completion_tokens"] > 0
        # the proxy counts what each system sent: Mem0 one call per 2-message chunk,
        # promem_fast exactly the calls its graph reports
        assert r["llm_calls"] == (3 if r["system"] == "mem0" else r["engine_llm_calls"])
    s = res["summary"]
    assert s["mem0"]["llm_calls_per_session"] == 3.0  # 6 turns in chunks of 2
    for name in ("mem0", "promem_fast"):
        assert s[name]["qa"]["locomo"]["questions"] == 2 and s[name]["qa"]["halumem"]["questions"] == 2
        assert s[name]["recall"] is not None
    assert res["qa_phase_llm"]["mem0"]["calls"] == 4 == res["qa_phase_llm"]["promem_fast"]["calls"]
    lines = (tmp_path / "smoke.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["summary"] == s and json.loads(lines[0])["smoke"] is True
    assert "| LLM calls |" in bench.markdown(res)
    # one dataset per run: the same rows as in the run of both (each dataset is its own user)
    one = bench.main(["--smoke", "--data-dir", str(DATA), "--max-turns", "6", "--max-questions", "2",
                      "--datasets", "halumem", "--systems", "promem_fast", "--out", str(tmp_path / "smoke.jsonl")])
    keys = ("session_id", "llm_calls", "prompt_tokens", "completion_tokens", "memories", "recall", "precision")
    assert [tuple(r[k] for k in keys) for r in one["sessions"]] ==         [tuple(r[k] for k in keys) for r in rows if r["system"] == "promem_fast" and r["dataset"] == "halumem"]
    assert "3 sessions (HaluMem user3 s1-3)." in bench.markdown(one)
    qa = one["summary"]["promem_fast"]["qa"]
    assert qa["halumem"] == s["promem_fast"]["qa"]["halumem"] and qa["locomo"]["questions"] == 0
    with pytest.raises(SystemExit):
        bench.main(["--smoke", "--datasets", "locomo,msc", "--out", str(tmp_path / "x.jsonl")])


# ---------------------------------------------------------------------------- embedded model
@pytest.mark.embedded
@pytest.mark.slow
def test_embedded_locomo_session_found_by_search(tmp_path, embed):
    """LoCoMo conv-26 session 1 through the embedded LLM (``one-off``); Mem0's search finds its facts."""
    if not (DATA / "locomo_dev.json").is_file():
        pytest.skip(f"development data not found in {DATA}")
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the embedded extra)")
    import json

    from promem_fast.config import PipelineConfig
    from promem_fast.eval.locomo_eval import _observation_facts
    from promem_fast.integrations.mem0 import Memory
    from promem_fast.io.locomo import load_locomo
    from promem_fast.models import ModelPackageMissing

    session = load_locomo(DATA / "locomo_dev.json", sample="conv-26", select=[1])[0]
    raw = next(x for x in json.loads((DATA / "locomo_dev.json").read_text()) if x["sample_id"] == "conv-26")
    gold = [f for f, _ in _observation_facts(raw["observation"]["session_1_observation"], session.user_name)]
    cfg = Config(pipeline=PipelineConfig(variant="one-off"), llm=LLMConfig(n_threads=2, parallel=1))
    try:
        ex = Extractor(cfg)
        ex.services  # builds llama.cpp on the embedded GGUF
    except ModelPackageMissing as e:
        pytest.skip(str(e))
    m = Memory.from_config(mem0_dict(tmp_path), extractor=ex)
    out = m.add(session, user_id="caroline")
    assert out["promem"]["extracted"] and out["results"], out
    assert all(r["metadata"]["event_time"].startswith("2023-05-0") for r in out["results"])
    found = 0
    for fact in gold:
        hits = m.search(fact, filters={"user_id": "caroline"}, top_k=1)["results"]
        if hits:
            v = embed.encode_sync([fact, hits[0]["memory"]])
            found += float(v[0] @ v[1]) >= 0.6
    m.close()
    assert gold and found / len(gold) >= 0.5, (found, len(gold))
