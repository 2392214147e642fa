"""OpenAI-compatible backend: retries, usage, structured-output fallback, concurrency bound.

(a) Against a fake OpenAI-compatible server on 127.0.0.1 (tests/fakes/openai_server.py).
(b) ``embedded``: end to end against ``python -m llama_cpp.server`` serving the embedded
    GGUF (Qwen2.5-Coder-1.5B Q4_K_M), one JSON-schema request.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import openai
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fakes.openai_server import FakeOpenAIServer, words  # noqa: E402

from promem_fast.backends.base import LLMRequest  # noqa: E402
from promem_fast.backends.llm.openai_compat import (  # noqa: E402
    JSON_OBJECT,
    JSON_OBJECT_SCHEMA,
    JSON_SCHEMA,
    OpenAILLM,
    usage_from_completion,
)
from promem_fast.backends.registry import create_llm  # noqa: E402
from promem_fast.config import LLMConfig  # noqa: E402

SCHEMA = {
    "title": "Echo",
    "type": "object",
    "properties": {"echo": {"type": "string"}},
    "required": ["echo"],
    "additionalProperties": False,
}


def msgs(text: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You extract memory from dialogues."},
        {"role": "user", "content": text},
    ]


def cfg_for(server: FakeOpenAIServer, **kw) -> LLMConfig:
    base = dict(backend="openai", base_url=server.base_url, model="fake-model", api_key="k-test",
                max_retries=4, timeout_s=10.0, parallel=4, seed=7)
    base.update(kw)
    return LLMConfig(**base)


@pytest.fixture
def server():
    srv = FakeOpenAIServer().start()
    yield srv
    srv.stop()


# -- (a) fake server --------------------------------------------------------------------


async def test_registry_builds_openai_backend(server):
    llm = create_llm(cfg_for(server))
    assert isinstance(llm, OpenAILLM)
    assert llm.name == "openai"


async def test_retries_429_and_5xx_then_reads_usage():
    with FakeOpenAIServer(fail_plan=[429, 500, 503], cached_tokens=3) as srv:
        llm = OpenAILLM(cfg_for(srv, max_retries=4))
        text = "Alice adopted a puppy named Max yesterday"
        [resp] = await llm.generate([LLMRequest(msgs(text), SCHEMA, max_tokens=64, temperature=0.3)])
    assert srv.statuses == [429, 500, 503, 200]
    assert json.loads(resp.text) == {"echo": text}
    assert resp.prompt_tokens == words("You extract memory from dialogues.") + words(text)
    assert resp.completion_tokens == words(json.dumps({"echo": text}))
    assert resp.cached_tokens == 3
    assert resp.finish_reason == "stop"
    # The same body was replayed on every retry.
    assert all(b == srv.bodies[0] for b in srv.bodies)
    body = srv.bodies[0]
    assert body["model"] == "fake-model"
    assert body["max_tokens"] == 64
    assert body["temperature"] == 0.3
    assert body["seed"] == 7
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Echo", "schema": SCHEMA, "strict": True},
    }
    assert srv.headers[0]["authorization"] == "Bearer k-test"


async def test_retries_exhausted_raises_server_error():
    with FakeOpenAIServer(fail_plan=[500, 500, 500, 500]) as srv:
        llm = OpenAILLM(cfg_for(srv, max_retries=1))
        with pytest.raises(openai.InternalServerError):
            await llm.generate([LLMRequest(msgs("hi"))])
    assert srv.statuses == [500, 500]  # first try + 1 retry


async def test_connection_error_is_retried_then_raised():
    # A port nobody listens on: every attempt is refused.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = OpenAILLM(LLMConfig(backend="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m",
                              max_retries=1, timeout_s=2.0))
    with pytest.raises(openai.APIConnectionError):
        await llm.generate([LLMRequest(msgs("hi"))])


async def test_json_schema_rejected_falls_back_and_is_remembered():
    with FakeOpenAIServer(reject={"json_schema": 400}) as srv:
        llm = OpenAILLM(cfg_for(srv))
        [r1] = await llm.generate([LLMRequest(msgs("first"), SCHEMA)])
        modes_after_first = [srv.mode_of(b) for b in srv.bodies]
        [r2] = await llm.generate([LLMRequest(msgs("second"), SCHEMA)])
        # A second backend object on the same server also starts from the fallback.
        [r3] = await OpenAILLM(cfg_for(srv)).generate([LLMRequest(msgs("third"), SCHEMA)])
        [free] = await llm.generate([LLMRequest(msgs("free text"))])
    assert modes_after_first == ["json_schema", "json_object+schema"]
    assert [srv.mode_of(b) for b in srv.bodies[2:]] == ["json_object+schema", "json_object+schema", None]
    assert srv.statuses == [400, 200, 200, 200, 200]
    assert srv.bodies[1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert [json.loads(r.text)["echo"] for r in (r1, r2, r3)] == ["first", "second", "third"]
    assert json.loads(free.text) == {"echo": "free text"}
    assert llm.json_mode == JSON_OBJECT_SCHEMA


async def test_422_then_plain_json_object():
    # llama-cpp-python's FastAPI server answers 422 to an unknown response_format type.
    with FakeOpenAIServer(reject={"json_schema": 422, "json_object+schema": 400}) as srv:
        llm = OpenAILLM(cfg_for(srv))
        [r] = await llm.generate([LLMRequest(msgs("x y"), SCHEMA)])
    assert [srv.mode_of(b) for b in srv.bodies] == ["json_schema", "json_object+schema", "json_object"]
    assert srv.statuses == [422, 400, 200]
    assert srv.bodies[2]["response_format"] == {"type": "json_object"}
    assert json.loads(r.text) == {"echo": "x y"}
    assert llm.json_mode == JSON_OBJECT


async def test_format_rejected_with_500_falls_back_without_retry_wait():
    # llama-cpp-python reports its response_format validation error as HTTP 500.
    with FakeOpenAIServer(reject={"json_schema": 500}) as srv:
        llm = OpenAILLM(cfg_for(srv, max_retries=4))
        t0 = time.perf_counter()
        [r] = await llm.generate([LLMRequest(msgs("p q"), SCHEMA)])
        wall = time.perf_counter() - t0
    assert srv.statuses == [500, 200]  # no retries of the rejected format
    assert [srv.mode_of(b) for b in srv.bodies] == ["json_schema", "json_object+schema"]
    assert json.loads(r.text) == {"echo": "p q"}
    assert wall < 0.4  # the client's backoff (0.5 s first step) was not waited
    assert llm.json_mode == JSON_OBJECT_SCHEMA


async def test_transient_error_on_first_structured_request_is_retried():
    with FakeOpenAIServer(fail_plan=[503]) as srv:
        llm = OpenAILLM(cfg_for(srv, max_retries=2))
        [r] = await llm.generate([LLMRequest(msgs("z"), SCHEMA)])
    assert srv.statuses == [503, 200]
    assert [srv.mode_of(b) for b in srv.bodies] == ["json_schema", "json_schema"]
    assert llm.json_mode == JSON_SCHEMA
    assert json.loads(r.text) == {"echo": "z"}


async def test_unrelated_400_raises_and_does_not_downgrade():
    with FakeOpenAIServer(reject={"any": 400}) as srv:
        llm = OpenAILLM(cfg_for(srv))
        with pytest.raises(openai.BadRequestError):
            await llm.generate([LLMRequest(msgs("too long"), SCHEMA)])
        with pytest.raises(openai.BadRequestError):
            await llm.generate([LLMRequest(msgs("free"))])
    # schema request walked all three modes once; free-text request was tried once; no retries on 400
    assert [srv.mode_of(b) for b in srv.bodies] == ["json_schema", "json_object+schema", "json_object", None]
    assert llm.json_mode == JSON_SCHEMA


async def test_concurrency_bound_and_order():
    n, parallel = 12, 3
    with FakeOpenAIServer(delay_s=0.15) as srv:
        llm = OpenAILLM(cfg_for(srv, parallel=parallel))
        t0 = time.perf_counter()
        out = await llm.generate([LLMRequest(msgs(f"request {i}")) for i in range(n)])
        wall = time.perf_counter() - t0
    assert [json.loads(r.text)["echo"] for r in out] == [f"request {i}" for i in range(n)]
    assert srv.max_in_flight == parallel
    assert len(srv.bodies) == n
    # 12 requests of 0.15 s with 3 in flight take at least 4 rounds.
    assert wall >= (n / parallel) * 0.15 * 0.9


async def test_concurrency_bound_shared_across_generate_calls():
    with FakeOpenAIServer(delay_s=0.1) as srv:
        llm = OpenAILLM(cfg_for(srv, parallel=2))
        batches = [[LLMRequest(msgs(f"s{s} r{i}")) for i in range(3)] for s in range(3)]
        outs = await asyncio.gather(*(llm.generate(b) for b in batches))
    assert srv.max_in_flight == 2
    assert [[json.loads(r.text)["echo"] for r in o] for o in outs] == [
        [f"s{s} r{i}" for i in range(3)] for s in range(3)
    ]


async def test_failure_cancels_siblings():
    fail = lambda body: 400 if "BOOM" in body["messages"][-1]["content"] else None  # noqa: E731
    with FakeOpenAIServer(delay_s=5.0, fail_if=fail) as srv:
        llm = OpenAILLM(cfg_for(srv, parallel=4))
        t0 = time.perf_counter()
        with pytest.raises(openai.BadRequestError):
            await llm.generate([LLMRequest(msgs(t)) for t in ("ok 1", "BOOM", "ok 2", "ok 3")])
        wall = time.perf_counter() - t0
        await llm.aclose()
    sent = [b["messages"][-1]["content"] for b in srv.bodies]
    assert "BOOM" in sent and len(sent) <= 4  # a loaded machine may cancel "ok 3" before it is sent
    assert wall < 4.0  # raised without waiting for the 5 s siblings


async def test_model_resolved_from_models_endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k-env")
    with FakeOpenAIServer(models=["served-a", "served-b"]) as srv:
        llm = OpenAILLM(LLMConfig(backend="openai", base_url=srv.base_url, max_retries=0))
        assert llm.model_name == "unresolved"
        out = await llm.generate([LLMRequest(msgs("a")), LLMRequest(msgs("b"))])
    assert [b["model"] for b in srv.bodies] == ["served-a", "served-a"]
    assert llm.model_name == "served-a"
    assert srv.headers[0]["authorization"] == "Bearer k-env"
    assert len(out) == 2


async def test_empty_api_key_for_local_servers(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer() as srv:
        await OpenAILLM(cfg_for(srv, api_key=None)).generate([LLMRequest(msgs("a"))])
    assert srv.headers[0]["authorization"] == "Bearer EMPTY"


async def test_finish_reason_length_passes_through():
    with FakeOpenAIServer(finish_reason="length", reply=lambda b: '{"echo": "trunc') as srv:
        [r] = await OpenAILLM(cfg_for(srv)).generate([LLMRequest(msgs("a"), SCHEMA, max_tokens=3)])
    assert r.finish_reason == "length"
    assert r.text == '{"echo": "trunc'


async def test_llamacpp_timings_usage():
    with FakeOpenAIServer(usage_style="timings", cached_tokens=4) as srv:
        [r] = await OpenAILLM(cfg_for(srv)).generate([LLMRequest(msgs("one two three"))])
    prompt = words("You extract memory from dialogues.") + 3
    assert (r.prompt_tokens, r.cached_tokens) == (prompt, 4)
    assert r.completion_tokens == words(json.dumps({"echo": "one two three"}))


async def test_missing_usage_counts_zero():
    with FakeOpenAIServer(usage_style="none") as srv:
        [r] = await OpenAILLM(cfg_for(srv)).generate([LLMRequest(msgs("a"))])
    assert (r.prompt_tokens, r.completion_tokens, r.cached_tokens) == (0, 0, 0)


def test_usage_from_plain_dict():
    assert usage_from_completion({"usage": {"prompt_tokens": 5, "completion_tokens": 2}}) == (5, 2, 0)
    assert usage_from_completion({}) == (0, 0, 0)


def test_backend_usable_across_event_loops():
    # Built outside a loop, then used from two asyncio.run calls (CLI style).
    with FakeOpenAIServer() as srv:
        llm = OpenAILLM(cfg_for(srv, parallel=2))
        a = asyncio.run(llm.generate([LLMRequest(msgs("a"))]))
        b = asyncio.run(llm.generate([LLMRequest(msgs("b"))]))
    assert [json.loads(a[0].text)["echo"], json.loads(b[0].text)["echo"]] == ["a", "b"]


def test_bad_parallel_rejected():
    with pytest.raises(ValueError, match="parallel"):
        OpenAILLM(LLMConfig(backend="openai", parallel=0))


# -- (b) embedded: llama_cpp.server on the embedded GGUF -----------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (extra 'embedded')")
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] extras not installed")
    try:
        from promem_fast import models
    except ImportError as e:
        pytest.skip(f"promem_fast.models not available yet: {e}")
    try:
        gguf = models.embedded_gguf_path()
    except models.ModelPackageMissing as e:
        pytest.skip(f"embedded GGUF packages not installed: {e}")
    port = _free_port()
    threads = str(min(2, os.cpu_count() or 1))
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "2048", "--n_threads", threads, "--n_threads_batch", threads,
           "--model_alias", "qwen-embedded", "--verbose", "False"]
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"llama_server_{port}.log"
    with open(log_path, "wb") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 240
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(base + "/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready within 240 s: {log_path.read_text()[-2000:]}")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log_path.unlink(missing_ok=True)


@pytest.mark.embedded
@pytest.mark.slow
async def test_llama_cpp_server_json_schema_end_to_end(llama_server):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "pet": {"type": "string"},
            "age": {"type": "integer"},
        },
        "required": ["name", "pet", "age"],
        "additionalProperties": False,
    }
    llm = OpenAILLM(LLMConfig(backend="openai", base_url=llama_server, parallel=1, max_retries=1,
                              timeout_s=300, seed=0))
    req = LLMRequest(
        [
            {"role": "system", "content": "Answer with one JSON object only."},
            {"role": "user", "content": "Alice is 31 and adopted a puppy named Max. "
                                        "Give her name, her pet's name and her age."},
        ],
        json_schema=schema, max_tokens=96, temperature=0.0, stage="details",
    )
    [resp] = await llm.generate([req])
    assert llm.model_name == "qwen-embedded"
    # llama-cpp-python 0.3.x only takes json_object (+ "schema", compiled to a grammar).
    assert llm.json_mode == JSON_OBJECT_SCHEMA
    data = json.loads(resp.text)
    jsonschema.validate(data, schema)
    assert data["age"] == 31
    assert resp.prompt_tokens > 20 and resp.completion_tokens > 5
    assert resp.finish_reason == "stop"
