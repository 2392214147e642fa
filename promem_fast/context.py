"""Per-session context: the services a stage calls, plus cost accounting.

Stage code is written per session (the way the paper reads) and awaits lists of
requests; the services behind it may batch across sessions (engine/). Every call
is charged to a stage, so a MemoryGraph reports LLM calls, tokens and seconds per
stage.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from .backends.base import EmbedBackend, LLMBackend, LLMRequest, LLMResponse, NLIBackend, NLIResult
from .config import Config
from .prompts.common import json_fix_message
from .schema import GraphStats, Session, StageStats
from .structured import StructuredOutputError, parse_json


@dataclass
class Services:
    """The model services shared by every session in flight."""

    llm: LLMBackend
    nli: NLIBackend
    embed: EmbedBackend
    xref: Any = None  # kernels.dispatch callable; None = default dispatcher

    @classmethod
    def from_config(cls, cfg: Config, *, scripted_latency_s: float = 0.0,
                    scripted_rules: Optional[Callable[[Any], str]] = None) -> "Services":
        """Build the backends named in ``cfg`` (lazy imports via the registry).

        ``llm.backend == "scripted"`` gets a rule-based responder, not the registry's bare
        ScriptedLLM, which has no rules: ``scripted_rules`` (LLMRequest -> JSON text; default
        :func:`promem_fast.engine.scripted_rules.respond`, schema-valid answers for every
        pipeline, QA and store prompt), sleeping ``scripted_latency_s`` seconds per
        ``generate`` call (benchmarks, crash tests). Both are ignored for other backends."""
        from .backends.registry import create_embed, create_llm, create_nli

        if cfg.llm.backend == "scripted":
            from .backends.llm.scripted import ScriptedLLM
            from .engine.scripted_rules import respond

            llm = ScriptedLLM(rules=scripted_rules or respond, latency_s=scripted_latency_s)
        else:
            llm = create_llm(cfg.llm, cache_dir=cfg.cache_dir)
        nli = create_nli(cfg.nli, llm=llm, cache_dir=cfg.cache_dir)
        embed = create_embed(cfg.embed, cache_dir=cfg.cache_dir)
        return cls(llm=llm, nli=nli, embed=embed)

    def model_names(self) -> dict[str, str]:
        return {
            "llm": getattr(self.llm, "model_name", self.llm.name),
            "nli": getattr(self.nli, "model_name", self.nli.name),
            "embed": getattr(self.embed, "model_name", self.embed.name),
        }


@dataclass
class SessionContext:
    session: Session
    config: Config
    services: Services
    stats: dict[str, StageStats] = field(default_factory=dict)
    _t0: float = field(default_factory=time.perf_counter)

    @property
    def user_name(self) -> str:
        return self.config.pipeline.user_name or self.session.user_name

    def _stage(self, name: str) -> StageStats:
        return self.stats.setdefault(name, StageStats())

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Charge the wall time of the block to ``stage`` (seconds). The stage's stats entry is
        made when the block starts, so ``stats.stages`` lists stages in the order they started,
        not in the order their first model answer came back (which varies with the backend's
        timing between two runs of one session)."""
        st = self._stage(stage)
        t = time.perf_counter()
        try:
            yield
        finally:
            st.seconds += time.perf_counter() - t

    async def llm(self, requests: Sequence[LLMRequest], stage: str) -> list[LLMResponse]:
        """Run completions, charging calls and tokens to ``stage``."""
        if not requests:
            return []
        for r in requests:
            r.stage, r.session_id = stage, self.session.session_id
        out = await self.services.llm.generate(list(requests))
        self._charge(stage, out)
        return out

    def _charge(self, stage: str, responses: Sequence[LLMResponse]) -> None:
        st = self._stage(stage)
        for resp in responses:
            st.llm_calls += 1
            st.prompt_tokens += resp.prompt_tokens
            st.completion_tokens += resp.completion_tokens
            st.cached_tokens += resp.cached_tokens

    async def llm_json(
        self, requests: Sequence[LLMRequest], stage: str, *, retries: Optional[int] = None
    ) -> list[Any]:
        """Completions parsed as JSON against each request's ``json_schema``.

        Invalid or truncated outputs are retried (``LLMConfig.json_retries`` times): a
        truncated one with twice the token cap, an invalid one with the rejected answer and
        the validation error appended to the conversation. Then
        :class:`StructuredOutputError` is raised with the stage name, so no partial output
        becomes memory.
        """
        retries = self.config.llm.json_retries if retries is None else retries
        results: list[Any] = [None] * len(requests)
        pending = list(range(len(requests)))
        reqs = list(requests)
        last_err: dict[int, StructuredOutputError] = {}
        for attempt in range(retries + 1):
            if not pending:
                break
            resps = await self.llm([reqs[i] for i in pending], stage)
            still = []
            for i, resp in zip(pending, resps):
                try:
                    results[i] = parse_json(
                        resp.text, reqs[i].json_schema, truncated=resp.finish_reason == "length"
                    )
                except StructuredOutputError as e:
                    e.stage = stage
                    last_err[i] = e
                    still.append(i)
                    r = reqs[i]
                    if resp.finish_reason == "length":
                        reqs[i] = LLMRequest(r.messages, r.json_schema, r.max_tokens * 2, r.temperature, stage)
                    else:
                        # A greedy decoder repeats itself on the same prompt: show it the
                        # rejected answer and why (appended, so the prompt prefix stays cached).
                        reqs[i] = LLMRequest(
                            list(requests[i].messages) + [
                                {"role": "assistant", "content": resp.text},
                                {"role": "user", "content": json_fix_message(e)},
                            ],
                            r.json_schema, r.max_tokens, r.temperature, stage,
                        )
            pending = still
        if pending:
            e = last_err[pending[0]]
            raise StructuredOutputError(
                f"stage {stage!r}: {e} (after {retries + 1} attempts)", raw=e.raw, stage=stage
            )
        return results

    async def nli(self, pairs: Sequence[tuple[str, str]], stage: str) -> list[NLIResult]:
        """Classify (premise, hypothesis) pairs; counts pairs against ``stage``."""
        if not pairs:
            return []
        st = self._stage(stage)
        st.nli_pairs += len(pairs)
        nli = self.services.nli
        if hasattr(nli, "classify_with_usage"):  # LLM judge: its tokens count too
            results, resps = await nli.classify_with_usage(list(pairs))
            self._charge(stage, resps)
            return results
        return await nli.classify(list(pairs))

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim), L2-normalised; (0, dim) for no texts."""
        if not texts:
            return np.zeros((0, self.services.embed.dim), dtype=np.float32)
        return await self.services.embed.encode(list(texts))

    async def xref(self, a: np.ndarray, b: np.ndarray, tau: float):
        """Cosine cross-reference (§3.3): XrefResult(max_sim (n,), argmax (n,), matched (n,)).

        a: float32 (n, d), b: float32 (m, d). Goes through ``services.xref`` when it batches
        across sessions (engine.services.BatchedXref), else straight to the kernel dispatcher.
        """
        x = self.services.xref
        if x is not None and hasattr(x, "cross_reference"):
            return await x.cross_reference(a, b, tau)
        from .kernels import cross_reference

        return cross_reference(a, b, tau)

    def graph_stats(self) -> GraphStats:
        g = GraphStats(stages=dict(self.stats))
        for s in self.stats.values():
            g.llm_calls += s.llm_calls
            g.prompt_tokens += s.prompt_tokens
            g.completion_tokens += s.completion_tokens
            g.cached_tokens += s.cached_tokens
        g.seconds = time.perf_counter() - self._t0
        return g
