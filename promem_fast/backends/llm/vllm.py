"""In-process vLLM backend: one ``AsyncLLM`` engine fed continuously.

Every request becomes its own ``AsyncLLM.generate`` stream, so vLLM's scheduler mixes
requests of all sessions in flight into the same decode steps (continuous batching), and
automatic prefix caching reuses the KV blocks of the dialogue that the pipeline puts at
the start of each session's prompts.

API targeted: vLLM 0.32.0 (the ``gpu`` extra's pin: it needs torch 2.13.0, as the
``embedded`` extra does; 0.33.0 moved to torch 2.14.0). Checked against the 0.11.0,
0.32.0 and 0.33.0 wheels (``vllm/sampling_params.py``, ``vllm/v1/engine/async_llm.py``,
``vllm/outputs.py``); the parts used here are the same in 0.32 and 0.33:

* ``AsyncLLM.from_engine_args(AsyncEngineArgs(...))`` and
  ``AsyncLLM.generate(prompt, sampling_params, request_id)`` -> async stream of
  ``RequestOutput``; ``get_tokenizer()`` is a coroutine in 0.11 and sync in 0.32+, both
  handled.
* Structured output: ``SamplingParams(structured_outputs=StructuredOutputsParams(json=schema))``.
  vLLM PR #22772 renamed guided decoding to structured outputs: in 0.11.0
  ``GuidedDecodingParams`` is a deprecated subclass and ``guided_decoding=`` is copied
  into ``structured_outputs`` with a warning; PR #29326 (late 2025) removed both, and the
  OpenAI-server fields ``guided_json`` etc. are deprecated since 0.12
  (docs.vllm.ai/en/v0.12.0/features/structured_outputs; downstream migrations:
  huggingface/trl#4797, unslothai/unsloth#3663, ai-dynamo/dynamo#4770). The 0.32/0.33
  ``SamplingParams`` has no ``guided_decoding`` field, so only the new spelling works.
* ``RequestOutput.prompt_token_ids``, ``.num_cached_tokens`` (prefix-cache hits),
  ``.outputs[0].token_ids``, ``.outputs[0].finish_reason`` ("stop" | "length" | "abort").
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import threading
import uuid
from typing import Any, Optional, Sequence

from ...aio import gather_or_cancel
from ..base import LLMRequest, LLMResponse

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'promem-fast[gpu]'"


class VLLMLLM:
    """Chat completions from an in-process vLLM ``AsyncLLM`` engine (GPU).

    Args:
        cfg: :class:`~promem_fast.config.LLMConfig`. Used fields: ``model`` (hub id or
            local directory; required), ``seed`` (engine seed and per-request sampling
            seed), ``vllm`` (:class:`~promem_fast.config.VLLMEngineConfig`: tensor parallel
            size, GPU memory fraction, prefix caching, max model length, ...; unset fields
            are not passed).
        cache_dir: unused (vLLM keeps its own caches).
        engine_args: extra ``AsyncEngineArgs`` keywords (``max_model_len``,
            ``gpu_memory_utilization``, ``max_num_seqs``, ``tensor_parallel_size``, ...);
            they override ``cfg.vllm``, except ``enable_prefix_caching``, which
            ``cfg.vllm.enable_prefix_caching`` decides (on by default).

    Raises:
        ImportError: vLLM is not installed (message gives the pip command).
        ValueError: ``cfg.model`` is unset.

    Prompts are rendered with the model's chat template (``add_generation_prompt=True``)
    and sent as token ids, so no second BOS is added. Use the backend from one event loop:
    the engine's output handler lives on the loop of the first request.
    """

    name = "vllm"

    def __init__(self, cfg, cache_dir=None, engine_args: Optional[dict[str, Any]] = None, **kw: Any):
        try:
            from vllm.engine.arg_utils import AsyncEngineArgs
            from vllm.sampling_params import RequestOutputKind, SamplingParams, StructuredOutputsParams
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as e:
            raise ImportError(
                f"the vllm backend needs vLLM with StructuredOutputsParams (>= 0.11): {INSTALL_HINT} ({e})"
            ) from e
        if not cfg.model:
            raise ValueError("LLMConfig.model must name a model (hub id or local directory) for the vllm backend")
        self.cfg = cfg
        self.model_name = str(cfg.model)
        self._SamplingParams = SamplingParams
        self._StructuredOutputsParams = StructuredOutputsParams
        self._final_only = RequestOutputKind.FINAL_ONLY
        vcfg = getattr(cfg, "vllm", None)
        prefix = vcfg.enable_prefix_caching if vcfg is not None else True
        args: dict[str, Any] = {"model": self.model_name, "seed": cfg.seed}
        if vcfg is not None:
            args.update({k: v for k, v in vcfg.engine_args().items() if k != "enable_prefix_caching"})
        args.update(engine_args or {})
        if args.get("enable_prefix_caching", prefix) != prefix:
            log.warning("vllm backend: engine_args enable_prefix_caching=%s overridden by LLMConfig.vllm (%s)",
                        args["enable_prefix_caching"], prefix)
        args["enable_prefix_caching"] = prefix
        self.engine_args = args
        self.engine = AsyncLLM.from_engine_args(AsyncEngineArgs(**args))
        self._tokenizer: Any = None
        # HF fast tokenizers raise "Already borrowed" if two threads change their state at
        # once; rendering of concurrent generate() calls is serialised.
        self._render_lock = threading.Lock()
        self._ids = itertools.count()
        self._run = uuid.uuid4().hex[:8]  # request ids stay unique across backends in one process

    # -- prompts ----------------------------------------------------------------------
    async def tokenizer(self) -> Any:
        """The engine's tokenizer (``get_tokenizer`` is async in old vLLM, sync in new)."""
        if self._tokenizer is None:
            tok = self.engine.get_tokenizer()
            if inspect.isawaitable(tok):
                tok = await tok
            self._tokenizer = tok
        return self._tokenizer

    @staticmethod
    def render(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
        """Token ids of ``messages`` under the chat template, ending with the assistant cue.

        Raises ValueError naming the field when a message lacks ``role`` or ``content``.
        """
        for i, m in enumerate(messages):
            if "role" not in m or "content" not in m:
                raise ValueError(f"LLMRequest.messages[{i}] needs 'role' and 'content', got keys {sorted(m)}")
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        # The template already holds any BOS; add_special_tokens=False avoids a second one.
        return list(tokenizer.encode(text, add_special_tokens=False))

    def sampling_params(self, req: LLMRequest) -> Any:
        """The ``SamplingParams`` for ``req``: temperature, max_tokens, seed, JSON schema."""
        structured = (
            self._StructuredOutputsParams(json=req.json_schema) if req.json_schema is not None else None
        )
        return self._SamplingParams(
            temperature=req.temperature,
            max_tokens=req.max_tokens,
            seed=self.cfg.seed,
            structured_outputs=structured,
            output_kind=self._final_only,  # one RequestOutput per request, no per-token streaming
        )

    # -- generation -------------------------------------------------------------------
    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """Submit every request as its own engine stream; results in input order.

        If one request fails, the others are cancelled (vLLM aborts them) and the error
        propagates.
        """
        if not requests:
            return []
        tok = await self.tokenizer()
        # Chat-template rendering + tokenisation is CPU work; keep it off the event loop.
        def render_all() -> list[list[int]]:
            with self._render_lock:
                return [self.render(tok, r.messages) for r in requests]

        prompts = await asyncio.to_thread(render_all)
        return await gather_or_cancel(
            self._one(ids, self.sampling_params(r)) for ids, r in zip(prompts, requests)
        )

    async def _one(self, prompt_ids: list[int], params: Any) -> LLMResponse:
        request_id = f"promem-{self._run}-{next(self._ids)}"
        final = None
        async for out in self.engine.generate({"prompt_token_ids": prompt_ids}, params, request_id):
            final = out
        if final is None or not final.outputs:
            raise RuntimeError(f"vLLM returned no output for request {request_id}")
        return response_from_output(final)

    def close(self) -> None:
        """Shut the engine down (frees the GPU and the engine-core process)."""
        shutdown = getattr(self.engine, "shutdown", None)
        if shutdown is not None:
            shutdown()


def response_from_output(out: Any) -> LLMResponse:
    """Map a final vLLM ``RequestOutput`` to :class:`LLMResponse`.

    prompt_tokens = len(prompt_token_ids); completion_tokens = len(outputs[0].token_ids);
    cached_tokens = num_cached_tokens (None -> 0); finish_reason = outputs[0].finish_reason
    (None -> "stop").
    """
    comp = out.outputs[0]
    return LLMResponse(
        text=comp.text,
        prompt_tokens=len(out.prompt_token_ids or ()),
        completion_tokens=len(comp.token_ids or ()),
        cached_tokens=int(getattr(out, "num_cached_tokens", 0) or 0),
        finish_reason=comp.finish_reason or "stop",
    )
