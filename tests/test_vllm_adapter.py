"""vLLM adapter against a fake ``vllm`` package (tests/fakes/fake_vllm.py): the exact engine
and sampling arguments built, concurrency of submission, order, usage and finish_reason."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakes import fake_vllm  # noqa: E402

from promem_fast.backends.base import LLMRequest  # noqa: E402
from promem_fast.backends.registry import create_llm  # noqa: E402
from promem_fast.config import LLMConfig  # noqa: E402

SCHEMA = {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]}
DIALOGUE = "t1 user: I adopted a puppy named Max . t2 assistant: Congrats ! t3 user: Max loves the park ."


@pytest.fixture
def fake(monkeypatch):
    return fake_vllm.install(monkeypatch)


def cfg(**kw) -> LLMConfig:
    base = dict(backend="vllm", model="meta-llama/Llama-3.1-8B-Instruct", seed=11)
    base.update(kw)
    return LLMConfig(**base)


def session_request(task: str, **kw) -> LLMRequest:
    """Dialogue first, task last: prompts of one session share a prefix."""
    return LLMRequest(
        [{"role": "system", "content": "You extract memory ."},
         {"role": "user", "content": f"{DIALOGUE} ### Task {task}"}],
        **kw,
    )


def test_missing_vllm_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    from promem_fast.backends.llm.vllm import VLLMLLM

    with pytest.raises(ImportError, match=r"pip install 'promem-fast\[gpu\]'"):
        VLLMLLM(cfg())


def test_package_imports_without_vllm(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    import importlib

    import promem_fast.backends.llm.vllm as mod

    importlib.reload(mod)  # module import itself never touches vllm
    assert mod.VLLMLLM.name == "vllm"


def test_model_required(fake):
    from promem_fast.backends.llm.vllm import VLLMLLM

    with pytest.raises(ValueError, match="LLMConfig.model"):
        VLLMLLM(cfg(model=None))
    assert fake.engine_args == []


def test_engine_args(fake):
    llm = create_llm(cfg(), engine_args={"max_model_len": 16384, "gpu_memory_utilization": 0.85,
                                         "enable_prefix_caching": False})
    assert llm.name == "vllm" and llm.model_name == "meta-llama/Llama-3.1-8B-Instruct"
    [args] = fake.engine_args
    assert args.kwargs == {
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "seed": 11,
        "enable_prefix_caching": True,  # forced on: the pipeline relies on shared prefixes
        "max_model_len": 16384,
        "gpu_memory_utilization": 0.85,
    }
    llm.close()
    assert fake.shutdowns == 1


async def test_sampling_params_exact(fake):
    llm = create_llm(cfg())
    await llm.generate([
        session_request("extract details", json_schema=SCHEMA, max_tokens=300, temperature=0.0),
        session_request("free text", max_tokens=40, temperature=0.7),
    ])
    sp_json, sp_free = fake.sampling_params
    SP = sys.modules["vllm.sampling_params"]
    assert sp_json.kwargs == {
        "temperature": 0.0, "max_tokens": 300, "seed": 11,
        "structured_outputs": SP.StructuredOutputsParams(json=SCHEMA),
        "output_kind": SP.RequestOutputKind.FINAL_ONLY,
    }
    assert sp_json.structured_outputs.json is SCHEMA
    assert sp_free.kwargs == {
        "temperature": 0.7, "max_tokens": 40, "seed": 11, "structured_outputs": None,
        "output_kind": SP.RequestOutputKind.FINAL_ONLY,
    }


async def test_prompt_rendered_with_chat_template_no_double_bos(fake):
    llm = create_llm(cfg())
    req = session_request("extract details")
    await llm.generate([req])
    tok = llm._tokenizer
    assert tok.template_calls == [{"tokenize": False, "add_generation_prompt": True}]
    expected_text = ("<bos> <|system|> You extract memory . <|user|> " + DIALOGUE
                     + " ### Task extract details <|assistant|>")
    [ids] = fake.prompts
    assert tok.decode(ids) == expected_text
    assert ids.count(1) == 1  # exactly one BOS


async def test_concurrent_submission_order_and_usage(fake):
    fake.latency_s = 0.05
    llm = create_llm(cfg())
    reqs = [session_request(f"topic {i}", json_schema=SCHEMA, max_tokens=200) for i in range(8)]
    out = await llm.generate(reqs)
    # All 8 streams were open at once: vLLM gets them together to batch continuously.
    assert fake.max_in_flight == 8
    assert len(set(fake.request_ids)) == 8
    tok = llm._tokenizer
    for i, (resp, ids) in enumerate(zip(out, fake.prompts)):
        assert json.loads(resp.text) == {"echo": f"{DIALOGUE} ### Task topic {i}"}
        assert resp.prompt_tokens == len(ids) == len(tok.apply_chat_template(reqs[i].messages,
                                                                             add_generation_prompt=True).split())
        assert resp.completion_tokens == len(resp.text.split(" "))
        assert resp.finish_reason == "stop"
    # Request 0 saw an empty cache; later ones share the dialogue prefix (full 4-token blocks).
    prefix = len(tok.encode(f"<bos> <|system|> You extract memory . <|user|> {DIALOGUE} ### Task topic",
                            add_special_tokens=False))
    assert out[0].cached_tokens == 0
    assert all(r.cached_tokens == prefix // 4 * 4 for r in out[1:])
    assert prefix // 4 * 4 > 0


async def test_concurrent_generate_calls_share_engine(fake):
    fake.latency_s = 0.05
    llm = create_llm(cfg())
    batches = [[session_request(f"s{s} r{i}") for i in range(3)] for s in range(4)]
    outs = await asyncio.gather(*(llm.generate(b) for b in batches))
    assert fake.max_in_flight == 12
    assert len(fake.engine_args) == 1
    assert [[r.text.rsplit("Task ", 1)[1] for r in o] for o in outs] == [
        [f"s{s} r{i}" for i in range(3)] for s in range(4)
    ]


async def test_finish_reason_length(fake):
    llm = create_llm(cfg())
    [cut, full] = await llm.generate([
        session_request("a b c", json_schema=SCHEMA, max_tokens=3),
        session_request("a b c", json_schema=SCHEMA, max_tokens=500),
    ])
    assert cut.finish_reason == "length" and cut.completion_tokens == 3
    assert cut.text == " ".join(full.text.split(" ")[:3])
    assert full.finish_reason == "stop"


async def test_async_get_tokenizer_of_older_vllm(fake):
    fake.async_get_tokenizer = True
    llm = create_llm(cfg())
    [r] = await llm.generate([session_request("x")])
    assert r.text.endswith("### Task x")


async def test_failure_cancels_siblings(fake):
    fake.latency_s = 0.5
    fake.fail_on = "BOOM"
    llm = create_llm(cfg())
    reqs = [session_request("ok 1"), session_request("BOOM"), session_request("ok 2")]
    # The failing stream raises at once; its siblings are aborted, not left running.
    with pytest.raises(RuntimeError, match="fake engine failure"):
        await llm.generate(reqs)
    assert fake.in_flight == 0
    assert sorted(fake.aborted) == sorted(fake.request_ids)  # the failed one never finished either
    assert len(fake.request_ids) == 3


async def test_bad_message_names_field(fake):
    llm = create_llm(cfg())
    with pytest.raises(ValueError, match=r"messages\[1\]"):
        await llm.generate([LLMRequest([{"role": "system", "content": "x"}, {"content": "no role"}])])


async def test_empty_batch(fake):
    llm = create_llm(cfg())
    assert await llm.generate([]) == []
    assert fake.sampling_params == []
