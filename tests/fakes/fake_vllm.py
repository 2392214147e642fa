"""A fake ``vllm`` package for testing the vLLM adapter without a GPU.

Modules provided (the adapter's imports, with the vLLM 0.32/0.33 names):
``vllm``, ``vllm.engine``, ``vllm.engine.arg_utils`` (AsyncEngineArgs),
``vllm.sampling_params`` (SamplingParams, StructuredOutputsParams, RequestOutputKind),
``vllm.outputs`` (RequestOutput, CompletionOutput), ``vllm.v1``, ``vllm.v1.engine``,
``vllm.v1.engine.async_llm`` (AsyncLLM).

:func:`install` puts them into ``sys.modules`` (through pytest's monkeypatch, so they are
removed after the test) and returns a :class:`FakeVLLMState` that records the exact
AsyncEngineArgs, SamplingParams and prompts received, the largest number of generate()
streams open at once, and aborted requests.

The fake engine's tokenizer turns each whitespace-separated word into one token id; its
"model" answers ``{"echo": <last user message>}`` when a JSON schema is requested and
``echo: <last user message>`` otherwise, cut at ``max_tokens`` words (finish_reason
"length"). Prefix caching is modelled per block of ``block_size`` tokens against the
prompts admitted before.
"""

from __future__ import annotations

import asyncio
import enum
import json
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass
class FakeVLLMState:
    engine_args: list[Any] = field(default_factory=list)  # AsyncEngineArgs per engine built
    sampling_params: list[Any] = field(default_factory=list)  # per generate() call, in call order
    request_ids: list[str] = field(default_factory=list)
    prompts: list[list[int]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    aborted: list[str] = field(default_factory=list)
    shutdowns: int = 0
    latency_s: float = 0.01  # per stream; lets the streams overlap
    block_size: int = 4
    async_get_tokenizer: bool = False  # vLLM <= 0.11 had `async def get_tokenizer`
    fail_on: Optional[str] = None  # a prompt containing this word fails at once in generate()


class FakeTokenizer:
    """Chat template ``<|role|> content`` per message, then ``<|assistant|>``; one token per word."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {"<bos>": 1}
        self.inv: dict[int, str] = {1: "<bos>"}
        self.template_calls: list[dict[str, Any]] = []

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False, **kw):
        self.template_calls.append({"tokenize": tokenize, "add_generation_prompt": add_generation_prompt})
        assert tokenize is False, "adapter must render text, then encode"
        text = "<bos> " + " ".join(f"<|{m['role']}|> {m['content']}" for m in messages)
        if add_generation_prompt:
            text += " <|assistant|>"
        return text

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        ids = [1] if add_special_tokens else []  # a second BOS if the caller forgets
        for w in text.split():
            if w not in self.vocab:
                self.vocab[w] = len(self.vocab) + 1
                self.inv[self.vocab[w]] = w
            ids.append(self.vocab[w])
        return ids

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.inv[i] for i in ids)


def build_modules(state: FakeVLLMState) -> dict[str, types.ModuleType]:
    """Create the fake module tree bound to ``state``."""

    # -- vllm.sampling_params ---------------------------------------------------------
    class RequestOutputKind(enum.Enum):
        CUMULATIVE = 0
        DELTA = 1
        FINAL_ONLY = 2

    @dataclass
    class StructuredOutputsParams:
        json: Any = None
        regex: Optional[str] = None
        choice: Optional[list[str]] = None
        grammar: Optional[str] = None
        json_object: Optional[bool] = None

        def __post_init__(self):
            n = sum(v is not None for v in (self.json, self.regex, self.choice, self.grammar, self.json_object))
            if n != 1:
                raise ValueError("exactly one structured-outputs constraint must be set")

    class SamplingParams:
        # Only the 0.32/0.33 keywords: an old spelling (guided_decoding=...) fails loudly.
        _FIELDS = ("n", "temperature", "top_p", "top_k", "seed", "max_tokens", "stop",
                   "structured_outputs", "output_kind", "skip_special_tokens")

        def __init__(self, **kw):
            unknown = set(kw) - set(self._FIELDS)
            if unknown:
                raise TypeError(f"SamplingParams got unexpected keyword(s) {sorted(unknown)}")
            self.n = 1
            self.temperature = 1.0
            self.seed = None
            self.max_tokens = 16
            self.structured_outputs = None
            self.output_kind = RequestOutputKind.CUMULATIVE
            for k, v in kw.items():
                setattr(self, k, v)
            self.kwargs = dict(kw)

    sp_mod = types.ModuleType("vllm.sampling_params")
    sp_mod.RequestOutputKind = RequestOutputKind
    sp_mod.StructuredOutputsParams = StructuredOutputsParams
    sp_mod.SamplingParams = SamplingParams

    # -- vllm.outputs -----------------------------------------------------------------
    @dataclass
    class CompletionOutput:
        index: int
        text: str
        token_ids: list[int]
        cumulative_logprob: Optional[float] = None
        logprobs: Any = None
        finish_reason: Optional[str] = None
        stop_reason: Any = None

    @dataclass
    class RequestOutput:
        request_id: str
        prompt: Optional[str]
        prompt_token_ids: list[int]
        prompt_logprobs: Any
        outputs: list[CompletionOutput]
        finished: bool
        num_cached_tokens: Optional[int] = None

    out_mod = types.ModuleType("vllm.outputs")
    out_mod.CompletionOutput = CompletionOutput
    out_mod.RequestOutput = RequestOutput

    # -- vllm.engine.arg_utils --------------------------------------------------------
    class AsyncEngineArgs:
        def __init__(self, model: str, **kw):
            self.model = model
            self.kwargs = {"model": model, **kw}
            for k, v in kw.items():
                setattr(self, k, v)

    args_mod = types.ModuleType("vllm.engine.arg_utils")
    args_mod.AsyncEngineArgs = AsyncEngineArgs
    args_mod.EngineArgs = AsyncEngineArgs

    # -- vllm.v1.engine.async_llm -----------------------------------------------------
    class AsyncLLM:
        def __init__(self, engine_args: AsyncEngineArgs):
            self.engine_args = engine_args
            self._tokenizer = FakeTokenizer()
            self._admitted: list[list[int]] = []

        @classmethod
        def from_engine_args(cls, engine_args, start_engine_loop: bool = True, **kw):
            if not isinstance(engine_args, AsyncEngineArgs):
                raise TypeError("from_engine_args expects AsyncEngineArgs")
            state.engine_args.append(engine_args)
            return cls(engine_args)

        def get_tokenizer(self):
            if state.async_get_tokenizer:
                async def _get():
                    return self._tokenizer
                return _get()
            return self._tokenizer

        def _cached(self, ids: list[int]) -> int:
            best = 0
            for prev in self._admitted:
                n = 0
                for a, b in zip(prev, ids):
                    if a != b:
                        break
                    n += 1
                best = max(best, n)
            # Full blocks only, and never the whole prompt (the last token is recomputed).
            best = min(best, len(ids) - 1)
            return best // state.block_size * state.block_size

        def _answer(self, ids: list[int], params: SamplingParams) -> str:
            text = self._tokenizer.decode(ids)
            last_user = text.rsplit("<|user|>", 1)[-1].replace("<|assistant|>", "").strip()
            if params.structured_outputs is not None:
                return json.dumps({"echo": last_user})
            return f"echo: {last_user}"

        async def generate(self, prompt, sampling_params, request_id, **kw):
            if not isinstance(sampling_params, SamplingParams):
                raise TypeError("sampling_params must be SamplingParams")
            if not isinstance(prompt, dict) or "prompt_token_ids" not in prompt:
                raise TypeError(f"expected a TokensPrompt dict, got {type(prompt).__name__}")
            ids = list(prompt["prompt_token_ids"])
            state.sampling_params.append(sampling_params)
            state.request_ids.append(request_id)
            state.prompts.append(ids)
            cached = self._cached(ids)
            self._admitted.append(ids)
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            finished = False
            try:
                if state.fail_on and state.fail_on in self._tokenizer.decode(ids):
                    await asyncio.sleep(0)
                    raise RuntimeError(f"fake engine failure on request {request_id}")
                await asyncio.sleep(state.latency_s)
                answer = self._answer(ids, sampling_params).split(" ")
                limit = sampling_params.max_tokens
                out_words = answer[:limit] if limit is not None else answer
                finish = "length" if len(out_words) < len(answer) else "stop"
                token_ids = [1000 + i for i in range(len(out_words))]

                def make(k: int, done: bool):
                    return RequestOutput(
                        request_id=request_id, prompt=None, prompt_token_ids=ids, prompt_logprobs=None,
                        outputs=[CompletionOutput(0, " ".join(out_words[:k]), token_ids[:k],
                                                  finish_reason=finish if done else None)],
                        finished=done, num_cached_tokens=cached,
                    )

                if sampling_params.output_kind != RequestOutputKind.FINAL_ONLY:
                    for k in range(1, len(out_words)):  # cumulative partial outputs
                        yield make(k, False)
                        await asyncio.sleep(0)
                finished = True
                yield make(len(out_words), True)
            finally:
                state.in_flight -= 1
                if not finished:
                    state.aborted.append(request_id)

        def shutdown(self, timeout=None):
            state.shutdowns += 1

    al_mod = types.ModuleType("vllm.v1.engine.async_llm")
    al_mod.AsyncLLM = AsyncLLM

    # -- package tree -----------------------------------------------------------------
    root = types.ModuleType("vllm")
    root.__version__ = "0.32.0+fake"
    root.__path__ = []  # a package, so submodule imports resolve through sys.modules
    root.SamplingParams = SamplingParams
    root.RequestOutput = RequestOutput
    root.AsyncEngineArgs = AsyncEngineArgs
    engine_pkg = types.ModuleType("vllm.engine")
    engine_pkg.__path__ = []
    v1_pkg = types.ModuleType("vllm.v1")
    v1_pkg.__path__ = []
    v1_engine_pkg = types.ModuleType("vllm.v1.engine")
    v1_engine_pkg.__path__ = []
    root.sampling_params, root.outputs, root.engine, root.v1 = sp_mod, out_mod, engine_pkg, v1_pkg
    engine_pkg.arg_utils = args_mod
    v1_pkg.engine = v1_engine_pkg
    v1_engine_pkg.async_llm = al_mod
    return {
        "vllm": root,
        "vllm.sampling_params": sp_mod,
        "vllm.outputs": out_mod,
        "vllm.engine": engine_pkg,
        "vllm.engine.arg_utils": args_mod,
        "vllm.v1": v1_pkg,
        "vllm.v1.engine": v1_engine_pkg,
        "vllm.v1.engine.async_llm": al_mod,
    }


def install(monkeypatch, state: Optional[FakeVLLMState] = None) -> FakeVLLMState:
    """Put the fake vllm modules into ``sys.modules`` for one test; returns the state."""
    state = state or FakeVLLMState()
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    for name, mod in build_modules(state).items():
        monkeypatch.setitem(sys.modules, name, mod)
    return state
