"""MicroBatcher: size, token budget and wait-limit flushes, result order, exception isolation;
and the batched service wrappers (same results as the inner backends, fewer calls)."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from promem_fast.backends.base import LLMRequest
from promem_fast.backends.embed.hashing import HashEmbedder
from promem_fast.backends.llm.scripted import ScriptedLLM
from promem_fast.backends.nli.llm_judge import LLMJudgeNLI
from promem_fast.config import EngineConfig
from promem_fast.context import Services
from promem_fast.engine.batcher import MicroBatcher
from promem_fast.engine.services import batched_services, batcher_stats
from promem_fast.kernels.reference import cross_reference_numpy


class Recorder:
    """Service that records each dispatched batch and echoes item * 10."""

    def __init__(self, delay: float = 0.0):
        self.batches: list[list] = []
        self.delay = delay

    async def __call__(self, items):
        self.batches.append(list(items))
        if self.delay:
            await asyncio.sleep(self.delay)
        return [x * 10 for x in items]


async def test_concurrent_callers_merge_and_get_their_own_results_in_order():
    rec = Recorder()
    b = MicroBatcher(rec, max_batch=100, max_wait_ms=20)
    r1, r2, r3 = await asyncio.gather(b.submit([1, 2, 3]), b.submit([4]), b.submit([5, 6]))
    assert (r1, r2, r3) == ([10, 20, 30], [40], [50, 60])
    assert rec.batches == [[1, 2, 3, 4, 5, 6]]  # one dispatch for all callers
    assert b.stats.by_reason["wait"] == 1 and b.stats.dispatches == 1


async def test_size_flush_cuts_batches_of_max_batch_without_waiting():
    rec = Recorder()
    b = MicroBatcher(rec, max_batch=3, max_wait_ms=10_000)  # a wait this long would hang the test
    t = time.perf_counter()
    out = await asyncio.gather(b.submit([1, 2]), b.submit([3, 4]), b.submit([5, 6]))
    assert time.perf_counter() - t < 5.0
    assert out == [[10, 20], [30, 40], [50, 60]]
    assert rec.batches == [[1, 2, 3], [4, 5, 6]]
    assert b.stats.by_reason == {"size": 2, "tokens": 0, "wait": 0}


async def test_token_budget_flush():
    rec = Recorder()
    # cost = the item value; budget 10 -> [4, 5] (9; +3 would be 12), [3, 6] (9), [7] (alone)
    b = MicroBatcher(rec, max_batch=100, max_tokens=10, cost=lambda x: x, max_wait_ms=30)
    out = await asyncio.gather(b.submit([4, 5, 3]), b.submit([6, 7]))
    assert out == [[40, 50, 30], [60, 70]]
    assert rec.batches == [[4, 5], [3, 6], [7]]
    assert b.stats.by_reason["tokens"] == 2 and b.stats.by_reason["wait"] == 1
    assert all(sum(batch) <= 10 for batch in rec.batches)


async def test_item_over_budget_goes_alone():
    rec = Recorder()
    b = MicroBatcher(rec, max_batch=100, max_tokens=5, cost=lambda x: x, max_wait_ms=5)
    assert await b.submit([1, 50, 2]) == [10, 500, 20]
    assert rec.batches == [[1], [50], [2]]


async def test_wait_limit_dispatches_a_partial_batch_after_about_max_wait():
    rec = Recorder()
    b = MicroBatcher(rec, max_batch=100, max_wait_ms=50)
    t = time.perf_counter()
    assert await b.submit([7]) == [70]
    waited = time.perf_counter() - t
    assert waited >= 0.045  # held for the wait limit, since the batch never filled
    assert rec.batches == [[7]]
    # a late caller (after the first dispatch left) gets a batch of its own
    assert await b.submit([8]) == [80]
    assert rec.batches == [[7], [8]]


async def test_zero_wait_still_merges_same_turn_submissions():
    rec = Recorder()
    b = MicroBatcher(rec, max_batch=100, max_wait_ms=0)
    out = await asyncio.gather(*(b.submit([i]) for i in range(5)))
    assert out == [[0], [10], [20], [30], [40]]
    assert rec.batches == [[0, 1, 2, 3, 4]]


async def test_sequential_mode_runs_one_item_at_a_time_in_order():
    running = 0
    peak = 0
    order = []

    async def fn(items):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        order.extend(items)
        await asyncio.sleep(0.005)
        running -= 1
        return [x + 1 for x in items]

    b = MicroBatcher(fn, max_batch=1, max_wait_ms=0, max_inflight=1)
    out = await asyncio.gather(b.submit([1, 2, 3]), b.submit([4]))
    assert out == [[2, 3, 4], [5]]
    assert peak == 1
    assert order == [1, 2, 3, 4]
    assert b.stats.dispatches == 4 and b.stats.largest_batch == 1


async def test_batch_exception_reaches_every_caller_in_that_batch_only():
    calls = []

    async def fn(items):
        calls.append(list(items))
        if "bad" in items:
            raise ValueError("boom")
        return [s.upper() for s in items]

    b = MicroBatcher(fn, max_batch=2, max_wait_ms=20)
    res = await asyncio.gather(
        b.submit(["a"]), b.submit(["bad"]), b.submit(["c"]), b.submit(["d"]), return_exceptions=True
    )
    # batches: [a, bad] fails for both callers; [c, d] is unaffected
    assert isinstance(res[0], ValueError) and isinstance(res[1], ValueError)
    assert res[2] == ["C"] and res[3] == ["D"]


async def test_split_on_error_isolates_the_failing_caller():
    async def fn(items):
        if "bad" in items:
            raise ValueError("boom")
        return [s.upper() for s in items]

    b = MicroBatcher(fn, max_batch=10, max_wait_ms=20, split_on_error=True)
    res = await asyncio.gather(b.submit(["a", "b"]), b.submit(["bad"]), b.submit(["c"]), return_exceptions=True)
    assert res[0] == ["A", "B"] and res[2] == ["C"]
    assert isinstance(res[1], ValueError) and str(res[1]) == "boom"
    assert b.stats.split_retries == 1


async def test_per_item_exception_only_reaches_its_caller():
    async def fn(items):
        return [KeyError(x) if x < 0 else x * 2 for x in items]

    b = MicroBatcher(fn, max_batch=10, max_wait_ms=10)
    res = await asyncio.gather(b.submit([1, 2]), b.submit([3, -1]), return_exceptions=True)
    assert res[0] == [2, 4]
    assert isinstance(res[1], KeyError)


async def test_wrong_result_count_is_an_error_for_the_batch():
    async def fn(items):
        return items[:-1]

    b = MicroBatcher(fn, max_batch=10, max_wait_ms=0)
    with pytest.raises(RuntimeError, match="returned 1 results for 2 items"):
        await b.submit([1, 2])


def test_invalid_limits_raise():
    with pytest.raises(ValueError, match="max_batch"):
        MicroBatcher(Recorder(), max_batch=0)
    with pytest.raises(ValueError, match="max_wait_ms"):
        MicroBatcher(Recorder(), max_batch=1, max_wait_ms=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        MicroBatcher(Recorder(), max_batch=1, max_tokens=0)


def test_batcher_survives_a_new_event_loop():
    rec = Recorder()
    b = MicroBatcher(rec, max_batch=4, max_wait_ms=1)
    assert asyncio.run(b.submit([1])) == [10]
    assert asyncio.run(b.submit([2, 3])) == [20, 30]


# -- service wrappers ----------------------------------------------------------------


def _echo(req: LLMRequest) -> str:
    return '{"echo": "%s"}' % req.messages[-1]["content"]


def _judge(req: LLMRequest) -> str:
    text = req.messages[-1]["content"]
    return '{"label": "entailment"}' if "yes" in text else '{"label": "neutral"}'


def _services(latency=0.0):
    llm = ScriptedLLM(rules={"s": _echo, "nli": _judge}, latency_s=latency)
    return Services(llm=llm, nli=LLMJudgeNLI(None, llm=llm), embed=HashEmbedder(dim=64))


async def test_batched_llm_merges_sessions_into_one_generate_call():
    raw = _services()
    svc = batched_services(raw, EngineConfig(llm_batch=16, max_wait_ms=20))
    assert svc.llm.name == "scripted" and svc.llm.model_name == "scripted"

    async def session(k):
        reqs = [LLMRequest([{"role": "user", "content": f"s{k}-r{j}"}], stage="s") for j in range(3)]
        return [r.text for r in await svc.llm.generate(reqs)]

    out = await asyncio.gather(*(session(k) for k in range(4)))
    assert out == [[f'{{"echo": "s{k}-r{j}"}}' for j in range(3)] for k in range(4)]
    assert raw.llm.generate_calls == 1  # 12 requests of 4 sessions, one dispatch
    assert batcher_stats(svc)["llm"]["largest_batch"] == 12


async def test_sequential_services_make_one_call_per_request():
    raw = _services()
    svc = batched_services(raw, EngineConfig(), sequential=True)
    reqs = [LLMRequest([{"role": "user", "content": f"r{j}"}], stage="s") for j in range(5)]
    await svc.llm.generate(reqs)
    assert raw.llm.generate_calls == 5


async def test_llm_judge_is_rebound_to_the_batched_llm_and_keeps_usage():
    raw = _services()
    svc = batched_services(raw, EngineConfig(llm_batch=64, max_wait_ms=20))
    assert svc.nli.name == "llm" and hasattr(svc.nli, "classify_with_usage")
    assert raw.nli.llm is raw.llm  # the caller's judge is untouched

    async def sess(k):
        return await svc.nli.classify_with_usage([(f"turn yes {k}", "h"), (f"turn no {k}", "h")])

    (r1, u1), (r2, u2) = await asyncio.gather(sess(1), sess(2))
    assert [r.label for r in r1] == ["entailment", "neutral"] == [r.label for r in r2]
    assert len(u1) == 2 and len(u2) == 2 and all(u.prompt_tokens > 0 for u in u1)
    assert raw.llm.generate_calls == 1  # both sessions' judgements in one LLM dispatch


async def test_batched_embed_rows_equal_unbatched_rows():
    raw = _services()
    svc = batched_services(raw, EngineConfig(embed_batch=3, max_wait_ms=5))
    assert svc.embed.dim == 64
    texts_a = ["alpha beta", "gamma", "delta epsilon zeta", "eta"]
    texts_b = ["beta gamma", "theta"]
    ea, eb = await asyncio.gather(svc.embed.encode(texts_a), svc.embed.encode(texts_b))
    np.testing.assert_array_equal(ea, raw.embed.encode_sync(texts_a))
    np.testing.assert_array_equal(eb, raw.embed.encode_sync(texts_b))
    assert ea.dtype == np.float32 and ea.shape == (4, 64)
    assert (await svc.embed.encode([])).shape == (0, 64)


async def test_batched_xref_matches_reference():
    raw = _services()
    svc = batched_services(raw, EngineConfig(concurrency=4, max_wait_ms=5))
    rng = np.random.default_rng(0)
    probs = [(rng.normal(size=(5, 8)).astype(np.float32), rng.normal(size=(3, 8)).astype(np.float32)) for _ in range(4)]
    outs = await asyncio.gather(*(svc.xref.cross_reference(a, b, 0.2) for a, b in probs))
    for (a, b), got in zip(probs, outs):
        want = cross_reference_numpy(a, b, 0.2)
        np.testing.assert_allclose(got.max_sim, want.max_sim, rtol=1e-5)
        np.testing.assert_array_equal(got.argmax, want.argmax)
    assert svc.xref.batcher.stats.dispatches == 1
    bad = asyncio.gather(svc.xref.cross_reference(np.zeros((2, 3)), np.zeros((2, 4)), 0.5), return_exceptions=True)
    (err,) = await bad
    assert isinstance(err, ValueError) and "dimension mismatch" in str(err)


async def test_cancelled_caller_items_are_not_dispatched_and_others_proceed():
    rec = Recorder()
    b = MicroBatcher(rec, max_batch=100, max_wait_ms=30)
    t1 = asyncio.ensure_future(b.submit([1, 2]))
    t2 = asyncio.ensure_future(b.submit([3]))
    await asyncio.sleep(0)  # both queued, the wait limit not reached
    t1.cancel()
    assert await t2 == [30]
    with pytest.raises(asyncio.CancelledError):
        await t1
    assert rec.batches == [[3]]
