"""Batched service wrappers: the backend protocols of ``backends/base.py`` routed through
:class:`~promem_fast.engine.batcher.MicroBatcher` s, so the requests of every session in
flight leave as one dispatch per batch (DESIGN.md).

Each wrapper keeps the inner backend's ``name`` / ``model_name`` / ``dim``, so a
MemoryGraph's ``models`` field does not depend on the engine.

Session isolation: the wrappers use ``split_on_error=True``: when the inner backend raises
for a merged batch, each session's requests are retried on their own, so one session's bad
request fails only that session (the issue: "one failing session never stops the others").
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..backends.base import LLMRequest, LLMResponse, NLIResult
from ..config import EngineConfig
from ..context import Services
from .batcher import MicroBatcher

logger = logging.getLogger(__name__)


def approx_tokens(text: str) -> int:
    """Rough token count of ``text`` (4 characters per token, at least 1): budget only."""
    return max(1, len(text) // 4)


def request_tokens(req: LLMRequest) -> int:
    """Approximate prompt tokens of one LLM request (sum over its messages)."""
    return sum(approx_tokens(m.get("content", "")) for m in req.messages)


@dataclass(frozen=True)
class BatchPolicy:
    """How one service batches: see :class:`MicroBatcher` for each field."""

    max_batch: int
    max_wait_ms: float
    max_tokens: Optional[int] = None
    max_inflight: Optional[int] = None


def _policy_batcher(fn: Callable[[list[Any]], Any], policy: BatchPolicy, *, cost: Callable[[Any], int],
                    name: str) -> MicroBatcher:
    """A :class:`MicroBatcher` over ``fn`` with ``policy``'s limits, ``cost`` per item and
    ``split_on_error=True`` (a failing merged batch is retried per session: session isolation)."""
    return MicroBatcher(
        fn,
        max_batch=policy.max_batch,
        max_tokens=policy.max_tokens,
        cost=cost,
        max_wait_ms=policy.max_wait_ms,
        max_inflight=policy.max_inflight,
        split_on_error=True,
        name=name,
    )


class BatchedLLM:
    """LLMBackend whose ``generate`` merges requests of concurrent sessions.

    Args:
        inner: the real LLMBackend; ``inner.generate`` receives up to ``policy.max_batch``
            requests (of possibly many sessions) per call.
        policy: batching limits; ``max_tokens`` budgets approximate prompt tokens.
    """

    def __init__(self, inner: Any, policy: BatchPolicy):
        self.inner = inner
        self.name = inner.name
        self.model_name = getattr(inner, "model_name", inner.name)
        self.batcher: MicroBatcher[LLMRequest, LLMResponse] = _policy_batcher(
            inner.generate, policy, cost=request_tokens, name=f"llm:{self.name}"
        )

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """Complete every request; results in input order (LLMBackend protocol)."""
        return await self.batcher.submit(list(requests))


class BatchedNLI:
    """NLIBackend whose ``classify`` merges (premise, hypothesis) pairs of concurrent sessions.

    An LLM-judge NLI (one with ``classify_with_usage``) is not batched at the NLI level: its
    requests already go through the batched LLM (:func:`batched_services` rebinds the judge
    to it), and batching the judge itself would merge the pair de-duplication of different
    sessions, making per-session token counts depend on which sessions share a batch.
    """

    def __init__(self, inner: Any, policy: BatchPolicy):
        self.inner = inner
        self.name = inner.name
        self.model_name = getattr(inner, "model_name", inner.name)
        self.batcher: MicroBatcher[tuple[str, str], NLIResult] = _policy_batcher(
            inner.classify, policy,
            cost=lambda pair: approx_tokens(pair[0]) + approx_tokens(pair[1]),
            name=f"nli:{self.name}",
        )
        if hasattr(inner, "classify_with_usage"):
            self.classify_with_usage = inner.classify_with_usage  # type: ignore[attr-defined]

    async def classify(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        """pairs: (premise, hypothesis). Results in input order (NLIBackend protocol)."""
        if hasattr(self.inner, "classify_with_usage"):
            return await self.inner.classify(list(pairs))
        return await self.batcher.submit(list(pairs))


class BatchedEmbed:
    """EmbedBackend whose ``encode`` merges texts of concurrent sessions into one forward pass.

    ``encode`` returns float32 (len(texts), dim), the rows the inner backend gives for those
    texts (it must embed each text independently of its batch neighbours, as MiniLM with
    attention masks and the hashing embedder do).
    """

    def __init__(self, inner: Any, policy: BatchPolicy):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.model_name = getattr(inner, "model_name", inner.name)

        async def _encode_rows(texts: list[str]) -> list[np.ndarray]:
            mat = await inner.encode(texts)
            return list(np.asarray(mat, dtype=np.float32))

        self.batcher: MicroBatcher[str, np.ndarray] = _policy_batcher(
            _encode_rows, policy, cost=approx_tokens, name=f"embed:{self.name}"
        )

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim), L2-normalised rows; (0, dim) for no texts."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = await self.batcher.submit(texts)
        return np.stack(rows).astype(np.float32, copy=False)


class BatchedXref:
    """Cross-reference (cosine max over rows, ProMem §3.3) batched across sessions.

    ``await cross_reference(a, b, tau)`` queues one (a, b, tau) problem; a dispatch runs the
    queued problems together (``inner_batched(list)`` when the kernel offers a batched
    entry point, else the inner kernel once per problem). Calling the object directly
    (``xref(a, b, tau)``) is the synchronous, unbatched inner kernel, so stage code written
    against a plain callable keeps working.

    Args:
        inner: ``inner(a, b, tau) -> XrefResult``; a: float32 (n, d), b: float32 (m, d).
            None = ``kernels.reference.cross_reference_numpy``.
    """

    name = "xref"

    def __init__(self, inner: Optional[Callable] = None, policy: Optional[BatchPolicy] = None):
        if inner is None:
            inner = default_xref()
        self.inner = inner
        policy = policy or BatchPolicy(max_batch=1, max_wait_ms=0.0, max_inflight=1)
        batched = getattr(inner, "batched", None)

        async def _run(problems: list[tuple[np.ndarray, np.ndarray, float]]) -> list[Any]:
            if batched is not None:
                return list(batched(problems))
            out: list[Any] = []
            for a, b, tau in problems:
                try:
                    out.append(inner(a, b, tau))
                except Exception as e:  # noqa: BLE001 - per-problem failure goes to its caller
                    out.append(e)
            return out

        self.batcher: MicroBatcher = _policy_batcher(
            _run, policy,
            cost=lambda p: int(np.asarray(p[0]).shape[0]) * max(1, int(np.asarray(p[1]).shape[0])),
            name="xref",
        )

    def __call__(self, a: np.ndarray, b: np.ndarray, tau: float) -> Any:
        return self.inner(a, b, tau)

    async def cross_reference(self, a: np.ndarray, b: np.ndarray, tau: float) -> Any:
        """XrefResult(max_sim float32 (n,), argmax int64 (n,), matched bool (n,))."""
        (res,) = await self.batcher.submit([(a, b, float(tau))])
        return res


def default_xref() -> Callable:
    """The kernels' dispatcher ``kernels.cross_reference(a, b, tau)``, with a ``batched``
    entry point that runs queued problems sharing a tau as one ragged kernel call."""
    from ..kernels import cross_reference, cross_reference_many

    def xref(a, b, tau):
        return cross_reference(a, b, tau)

    def batched(problems):
        out: list[Any] = [None] * len(problems)
        by_tau: dict[float, list[int]] = {}
        for i, (_, _, tau) in enumerate(problems):
            by_tau.setdefault(tau, []).append(i)
        for tau, idx in by_tau.items():
            try:
                res = cross_reference_many([(problems[i][0], problems[i][1]) for i in idx], tau)
            except Exception:  # noqa: BLE001 - one bad problem: run each alone, errors to their callers
                res = []
                for i in idx:
                    try:
                        res.append(cross_reference(problems[i][0], problems[i][1], tau))
                    except Exception as e:  # noqa: BLE001
                        res.append(e)
            for i, r in zip(idx, res):
                out[i] = r
        return out

    xref.batched = batched  # type: ignore[attr-defined]
    return xref


def sequential_policy() -> BatchPolicy:
    """Batch of one, no wait, one dispatch at a time: the reference (baseline) engine."""
    return BatchPolicy(max_batch=1, max_wait_ms=0.0, max_tokens=None, max_inflight=1)


def batched_services(
    services: Services,
    engine_cfg: Optional[EngineConfig] = None,
    *,
    sequential: bool = False,
    llm_max_tokens: Optional[int] = None,
    nli_max_tokens: Optional[int] = None,
    embed_max_tokens: Optional[int] = None,
    max_inflight: Optional[int] = None,
) -> Services:
    """Wrap every service of ``services`` in a micro-batcher.

    Args:
        services: the real backends (shared: wrapping does not copy models).
        engine_cfg: batch sizes and wait limit (``EngineConfig``); default EngineConfig().
        sequential: the baseline engine: batch 1, no wait, one dispatch at a time.
        llm_max_tokens / nli_max_tokens / embed_max_tokens: token budget per dispatch
            (approximate tokens, 4 chars each); None = no budget (size and wait only).
        max_inflight: most concurrent dispatches per service in batched mode (None = any).

    Returns:
        A new Services; an LLM-judge NLI bound to ``services.llm`` is re-bound (shallow
        copy) to the batched LLM, so its judgements join the same LLM batches.
    """
    cfg = engine_cfg or EngineConfig()
    if sequential:
        pol = sequential_policy()
        llm_pol = nli_pol = emb_pol = xref_pol = pol
    else:
        llm_pol = BatchPolicy(cfg.llm_batch, cfg.max_wait_ms, llm_max_tokens, max_inflight)
        nli_pol = BatchPolicy(cfg.nli_batch, cfg.max_wait_ms, nli_max_tokens, max_inflight)
        emb_pol = BatchPolicy(cfg.embed_batch, cfg.max_wait_ms, embed_max_tokens, max_inflight)
        xref_pol = BatchPolicy(max(cfg.concurrency, 1), cfg.max_wait_ms, None, max_inflight)
    llm = BatchedLLM(services.llm, llm_pol)
    inner_nli = services.nli
    if hasattr(inner_nli, "classify_with_usage") and getattr(inner_nli, "llm", None) is services.llm:
        inner_nli = copy.copy(inner_nli)
        inner_nli.llm = llm
    nli = BatchedNLI(inner_nli, nli_pol)
    embed = BatchedEmbed(services.embed, emb_pol)
    inner_xref = services.xref.inner if isinstance(services.xref, BatchedXref) else services.xref
    xref = BatchedXref(inner_xref, xref_pol)
    return Services(llm=llm, nli=nli, embed=embed, xref=xref)


def batcher_stats(services: Services) -> dict[str, dict[str, Any]]:
    """Per-service batcher counters of a :func:`batched_services` result (for the benchmark)."""
    out = {}
    for key in ("llm", "nli", "embed", "xref"):
        svc = getattr(services, key)
        b = getattr(svc, "batcher", None)
        if b is not None:
            out[key] = b.stats.as_dict()
    return out
