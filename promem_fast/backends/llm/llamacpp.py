"""In-process llama.cpp LLM backend with several sequences decoded at once.

One llama.cpp context holds ``cfg.parallel`` sequences (slots), each with its own KV cache
of ``cfg.n_ctx`` tokens. A worker thread runs continuous batching: every ``llama_decode``
carries one new token for each generating slot plus prompt chunks of slots still reading
their prompt, so requests from several ``generate`` calls share the batch. Decoding a
1.5B Q4 model on CPU is bound by memory bandwidth, so one forward pass over k sequences
costs little more than over one; that is the speed-up (README: numbers).

Per slot:
* prefix reuse: a new request goes to the free slot whose KV cache shares the longest
  token prefix with its prompt (the pipeline puts a session's dialogue first), only the
  rest is decoded; ``LLMResponse.cached_tokens`` reports the reused count. When another
  sequence, busy or idle, caches a longer prefix (a sibling stage of the same session),
  its KV stream is copied into the slot (``llama_memory_seq_cp``) instead of prefilling.
  Before a slot's shared prefix (one a request reused) is overwritten and no other
  sequence holds it, its KV stream is copied into one of ``cfg.prefix_cache`` KV-only
  sequences (least recently used first), so a session's later stages find their dialogue
  there after other sessions took every slot.
  A request whose prefix another slot is still prefilling waits for it (later requests in
  the queue go ahead), so sibling requests that arrive together prefill it once. A free
  slot whose KV stream a queued request opens with (a topic's turns, read by its details
  request, that its events request waits for behind other sessions' requests) is the last
  one overwritten, and is saved into a prefix-cache sequence first when it must be.
* sampling: its own llama.cpp sampler chain (greedy at temperature 0, else
  top-k/top-p/temperature/seeded draw) and, for a JSON Schema, a grammar sampler that
  checks the chosen token and filters all candidates only when it rejects it.
* stop on an end-of-generation token ("stop") or after ``max_tokens`` ("length").

The model is ``cfg.model`` (a .gguf path) or the embedded Qwen2.5-Coder-1.5B-Instruct
Q4_K_M (:func:`promem_fast.models.embedded_gguf_path`). The chat template comes from the
GGUF metadata (``tokenizer.chat_template``).
"""

from __future__ import annotations

import asyncio
import ctypes
import itertools
import json
import logging
import os
import queue
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from ..base import LLMRequest, LLMResponse

log = logging.getLogger(__name__)

_STOP = object()  # sentinel that ends the worker thread


def _import_llama_cpp():
    try:
        import llama_cpp  # noqa: F401
        from llama_cpp import _internals, llama_chat_format, llama_grammar
        from llama_cpp import _logger as llama_logger
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the llamacpp LLM backend needs llama-cpp-python; install it with "
            "pip install 'promem-fast[embedded]'"
        ) from e
    return llama_cpp, _internals, llama_chat_format, llama_grammar, llama_logger


# llama.cpp's system-info names -> Linux /proc/cpuinfo flags (SSE3 is "pni" there).
_CPU_FEATURE_FLAGS = {
    "SSE3": "pni", "SSSE3": "ssse3", "AVX": "avx", "AVX2": "avx2", "F16C": "f16c", "FMA": "fma",
    "BMI2": "bmi2", "AVX_VNNI": "avx_vnni", "AVX512": "avx512f", "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni", "AVX512_BF16": "avx512_bf16", "AMX_INT8": "amx_int8",
}


def missing_cpu_features(system_info: str, cpu_flags: Iterable[str]) -> list[str]:
    """x86 features llama.cpp was compiled for that this CPU lacks (empty when it can run).

    Args:
        system_info: ``llama_print_system_info()`` text, e.g. ``"CPU : AVX2 = 1 | AVX512 = 1 |"``.
        cpu_flags: the CPU's flags as in the ``flags`` line of ``/proc/cpuinfo``.
    Returns:
        llama.cpp feature names (``"AVX512_VNNI"``) in the order ``system_info`` lists them.
    """
    flags = set(cpu_flags)
    return [f for f in compiled_cpu_features(system_info)
            if f in _CPU_FEATURE_FLAGS and _CPU_FEATURE_FLAGS[f] not in flags]


def compiled_cpu_features(system_info: str) -> list[str]:
    """Names llama.cpp's ``llama_print_system_info()`` text reports as ``= 1`` (compiled-in
    instruction sets and options, e.g. ``["AVX2", "FMA", "LLAMAFILE", "REPACK"]``)."""
    return re.findall(r"([A-Z0-9_]+) = 1(?=\s*\||\s*$)", system_info)


def _check_cpu_features(llama_cpp, cpuinfo: str = "/proc/cpuinfo") -> None:
    """Raise before the model loads when llama.cpp was built for a CPU with more features
    (pip builds llama-cpp-python with GGML_NATIVE unless CMAKE_ARGS says otherwise, and its
    wheel cache does not key on the CPU); skipped where /proc/cpuinfo is absent. A build whose
    library start-up code already uses a missing instruction still dies on SIGILL at import.

    Raises:
        RuntimeError: names the compiled features this CPU lacks.
    """
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as fh:
            line = next((ln for ln in fh if ln.startswith("flags")), "")
    except OSError:
        return
    if not line:
        return
    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    missing = missing_cpu_features(info, line.split(":", 1)[-1].split())
    if missing:
        raise RuntimeError(
            f"llama-cpp-python here was compiled for {', '.join(missing)}, which this CPU lacks; "
            "reinstall it on this machine (`CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir "
            "--force-reinstall llama-cpp-python` builds it for any AVX2 CPU, as .ci/setup does)"
        )


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists (numpy: prompts run to
    thousands of tokens and this runs for every waiting request at every step)."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    x = np.asarray(a[:n], dtype=np.int64)
    y = np.asarray(b[:n], dtype=np.int64)
    diff = np.flatnonzero(x != y)
    return int(diff[0]) if diff.size else n


@dataclass
class _Job:
    """One request inside the worker thread."""

    index: int
    request: LLMRequest
    prompt: list[int]
    grammar: Optional[str]
    seed: int
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    error: Optional[BaseException] = None


@dataclass
class _Slot:
    """One sequence of the llama.cpp context (``seq_id``) and its KV cache contents."""

    seq_id: int
    kv_tokens: list[int] = field(default_factory=list)  # tokens whose K/V are cached, in order
    job: Optional[_Job] = None
    pending: list[int] = field(default_factory=list)  # prompt tokens not yet decoded
    sampler: Any = None  # llama_sampler_p of the active job (chain without the grammar)
    grammar: Any = None  # llama_sampler_p of the job's grammar, checked lazily (see _sample)
    out: list[int] = field(default_factory=list)
    max_tokens: int = 0
    cached_tokens: int = 0
    last_token: Optional[int] = None  # sampled, not yet in KV
    logits_idx: int = -1  # index of this slot's logits in the last batch, -1 = none
    last_used: float = 0.0
    shared_len: int = 0  # longest prefix of kv_tokens a request reused (a session's dialogue)


class LlamaCppLLM:
    """LLM backend on llama-cpp-python, in process, with ``cfg.parallel`` sequences at once.

    Args:
        cfg: LLMConfig. Uses model (gguf path; None = embedded), n_ctx (tokens per
            sequence), n_threads (None = all cores), parallel (sequences decoded at once,
            >= 1; the KV cache holds (parallel + prefix_cache) x n_ctx tokens, ~28 KiB each
            for this model),
            seed (base of the per-request sampling seeds at temperature > 0),
            prefix_cache (extra sequences that only keep the shared prompt prefix of
            sessions whose slots were taken by other sessions; 0 = none).
        cache_dir: where the embedded GGUF is assembled (see promem_fast.models).
        n_batch: most tokens per ``llama_decode`` (prompt chunks + one per generating slot).
        min_copy_tokens: copy another sequence's KV stream into the new request's slot when
            that sequence caches at least this many more prompt tokens than the slot itself.
        lazy_grammar: check a JSON Schema's grammar on the chosen token only and filter all
            candidates when it is rejected (default); False filters all candidates at every
            token, as llama-cpp-python does (same greedy output, ~40 ms/token slower here).
        verbose: let llama.cpp print its logs to stderr.

    Raises:
        ImportError: llama-cpp-python is missing (names the pip command).
        ModelPackageMissing: the embedded model packages are missing and cfg.model is None.
        ValueError: parallel < 1, or the model/context cannot be loaded.
    """

    name = "llamacpp"

    def __init__(self, cfg, cache_dir=None, n_batch: int = 512, verbose: bool = False,
                 min_copy_tokens: int = 64, lazy_grammar: bool = True, **_: object):
        llama_cpp, internals, chat_format, grammar_mod, llama_logger = _import_llama_cpp()
        _check_cpu_features(llama_cpp)
        self._lc = llama_cpp
        self._grammar_mod = grammar_mod
        self.cfg = cfg
        self.parallel = int(cfg.parallel)
        if self.parallel < 1:
            raise ValueError(f"LLMConfig.parallel must be >= 1, got {cfg.parallel}")
        if cfg.model:
            model_path = Path(cfg.model).expanduser()
            if not model_path.is_file():
                raise ValueError(f"LLMConfig.model: GGUF file not found: {model_path}")
        else:
            from ...models import embedded_gguf_path

            model_path = embedded_gguf_path(cache_dir)
        self.model_path = model_path
        self.model_name = model_path.name
        llama_logger.set_verbose(verbose)

        mparams = internals.LlamaModel.default_params()
        self._model = internals.LlamaModel(path_model=str(model_path), params=mparams, verbose=verbose)
        self.n_ctx_seq = int(cfg.n_ctx)
        n_threads = int(cfg.n_threads or os.cpu_count() or 1)
        cparams = internals.LlamaContext.default_params()
        n_cache = int(getattr(cfg, "prefix_cache", 0) or 0)
        if n_cache < 0:
            raise ValueError(f"LLMConfig.prefix_cache must be >= 0, got {n_cache}")
        cparams.n_ctx = self.n_ctx_seq * (self.parallel + n_cache)  # split evenly: n_ctx per sequence
        cparams.n_seq_max = self.parallel + n_cache
        cparams.kv_unified = False
        cparams.n_batch = n_batch
        cparams.n_ubatch = n_batch
        cparams.n_threads = n_threads
        cparams.n_threads_batch = n_threads
        cparams.no_perf = True
        self._ctx = internals.LlamaContext(model=self._model, params=cparams, verbose=verbose)
        self._mem = llama_cpp.llama_get_memory(self._ctx.ctx)
        self.n_batch = n_batch
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._vocab = self._model.vocab
        self._n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        # One candidates buffer (llama_token_data[n_vocab]) for grammar fallbacks (worker only).
        self._cand_buf = (llama_cpp.llama_token_data * self._n_vocab)()
        self._candidates = np.frombuffer(self._cand_buf, dtype=np.dtype(
            [("id", np.int32), ("logit", np.float32), ("p", np.float32)]))
        self._vocab_ids = np.arange(self._n_vocab, dtype=np.int32)

        meta = self._model.metadata()
        template = meta.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{model_path} has no tokenizer.chat_template in its GGUF metadata")
        eos_id, bos_id = self._model.token_eos(), self._model.token_bos()
        self._formatter = chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=self._model.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=self._model.token_get_text(bos_id) if bos_id != -1 else "",
        )
        self._add_bos = self._model.add_bos_token()

        self._pieces: dict[int, bytes] = {}
        self._grammar_cache: dict[str, Optional[str]] = {}
        self._grammar_lock = threading.Lock()
        self._slots = [_Slot(seq_id=i) for i in range(self.parallel)]
        # KV-only sequences: never decode, hold prefixes saved from slots (see _save_prefix)
        self._cache = [_Slot(seq_id=self.parallel + i) for i in range(n_cache)]
        self.prefix_saves = 0  # prefixes copied into the cache (for tests and benchmarks)
        self.min_copy_tokens = int(min_copy_tokens)
        self.kv_copies = 0  # shared-prefix copies between sequences (for tests and benchmarks)
        self.lazy_grammar = bool(lazy_grammar)
        self._steps = self._new_step_counts()
        self.grammar_fallbacks = 0  # tokens for which the grammar filtered all candidates
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._seed_counter = itertools.count()
        self._backlog: list[_Job] = []  # accepted by the worker, waiting for a free slot
        self._pending_resets: list[threading.Event] = []
        self._aborted_resets: set[threading.Event] = set()  # released by close / worker death
        self._closed = False
        self._worker = threading.Thread(target=self._run, name="llamacpp-decode", daemon=True)
        self._worker.start()
        log.info(
            "llamacpp: %s, %d sequences x %d ctx, %d threads", self.model_name, self.parallel,
            self.n_ctx_seq, n_threads,
        )

    # ------------------------------------------------------------------ public API
    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """Complete every request (continuous batching across calls); results in input order.

        Raises:
            ValueError: a request's prompt does not fit ``cfg.n_ctx`` (names its index/stage).
            RuntimeError: the backend is closed or llama_decode failed.
        """
        if self._closed or not self._worker.is_alive():
            raise RuntimeError("LlamaCppLLM is closed")
        if not requests:
            return []
        loop = asyncio.get_running_loop()
        # Templating, tokenising and schema->grammar conversion are CPU work: off the loop.
        jobs = await asyncio.to_thread(self._prepare, list(requests), loop)
        self._queue.put(jobs)  # one item: the worker starts a call's requests in the same step
        if self._closed:  # close() or a worker death raced this call: the worker may be gone
            await asyncio.to_thread(self._worker.join)
            self._drain_queue(RuntimeError("LlamaCppLLM closed while the request was pending"))
        return list(await asyncio.gather(*(j.future for j in jobs)))

    def reset_cache(self, timeout: float = 60.0) -> None:
        """Forget every cached prefix (all sequences' KV caches), e.g. between benchmark
        runs so the second run does not reuse the first one's prompts. Waits until no
        request is decoding; requests queued meanwhile start after the reset.

        Raises:
            RuntimeError: the backend is closed (also when it closes or its worker dies
            before the reset). TimeoutError: not done within ``timeout`` s.
        """
        if self._closed or not self._worker.is_alive():
            raise RuntimeError("LlamaCppLLM is closed")
        done = threading.Event()
        self._queue.put(done)
        if self._closed:  # raced close(): nobody may read the queue any more
            self._worker.join()
            self._drain_queue(RuntimeError("LlamaCppLLM closed"))
        if not done.wait(timeout):
            raise TimeoutError(f"reset_cache: requests still decoding after {timeout} s")
        if self._closed and done in self._aborted_resets:
            raise RuntimeError("LlamaCppLLM closed before the cache was reset")

    @staticmethod
    def _new_step_counts() -> dict[str, Any]:
        return {"steps": 0, "gen_steps": 0, "mixed_steps": 0, "gen_tokens": 0, "prefill_tokens": 0,
                "decode_s": 0.0, "sample_s": 0.0, "gen_batch_hist": {}}

    def step_stats(self) -> dict[str, Any]:
        """Counters of the decode loop since the last :meth:`reset_stats`, for benchmarks.

        steps: ``llama_decode`` calls; gen_steps: those carrying >= 1 generated token;
        mixed_steps: those carrying generated and prompt tokens; gen_tokens / prefill_tokens:
        tokens decoded of each kind; mean_gen_batch: generated tokens per gen_step (how many
        sequences decode together; ``parallel`` at most); gen_batch_hist: gen_steps by that
        count; decode_s / sample_s: seconds in ``llama_decode`` / in sampling and finishing
        requests. Read it while no request is decoding (the counters are not locked)."""
        st = dict(self._steps)
        st["gen_batch_hist"] = dict(sorted(st["gen_batch_hist"].items()))
        st["decode_s"] = round(st["decode_s"], 3)
        st["sample_s"] = round(st["sample_s"], 3)
        st["mean_gen_batch"] = round(st["gen_tokens"] / st["gen_steps"], 3) if st["gen_steps"] else 0.0
        return st

    def reset_stats(self) -> None:
        """Zero the :meth:`step_stats` counters."""
        self._steps = self._new_step_counts()

    def close(self) -> None:
        """Stop the worker thread and free the llama.cpp context and model. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._worker.join()
        for s in self._slots:
            self._free_sampler(s)
        self._lc.llama_batch_free(self._batch)
        self._ctx.close()
        self._model.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ------------------------------------------------------------------ preparation
    def format_prompt(self, messages: list[dict[str, str]]) -> list[int]:
        """Chat messages -> prompt token ids through the GGUF chat template (with the
        assistant generation prompt)."""
        res = self._formatter(messages=messages)
        add_bos = self._add_bos and not res.added_special
        return self._model.tokenize(res.prompt.encode("utf-8"), add_bos=add_bos, special=True)

    def _grammar_for(self, schema: dict) -> Optional[str]:
        """GBNF text for a JSON Schema (cached), or None when conversion fails."""
        key = json.dumps(schema, sort_keys=True)
        with self._grammar_lock:
            if key in self._grammar_cache:
                return self._grammar_cache[key]
        try:
            gbnf = self._grammar_mod.json_schema_to_gbnf(json.dumps(schema))
        except Exception as e:  # the converter raises on unsupported schema features
            log.warning("JSON Schema -> grammar failed (%s); decoding unconstrained", e)
            gbnf = None
        with self._grammar_lock:
            self._grammar_cache[key] = gbnf
        return gbnf

    def _prepare(self, requests: list[LLMRequest], loop) -> list[_Job]:
        jobs = []
        for i, req in enumerate(requests):
            if not req.messages:
                raise ValueError(f"request {i} (stage {req.stage!r}): messages is empty")
            prompt = self.format_prompt(req.messages)
            if len(prompt) >= self.n_ctx_seq:
                raise ValueError(
                    f"request {i} (stage {req.stage!r}): prompt has {len(prompt)} tokens, "
                    f"LLMConfig.n_ctx is {self.n_ctx_seq}"
                )
            grammar = self._grammar_for(req.json_schema) if req.json_schema else None
            jobs.append(
                _Job(
                    index=i, request=req, prompt=prompt, grammar=grammar,
                    seed=(int(self.cfg.seed) + next(self._seed_counter)) & 0xFFFFFFFF,
                    future=loop.create_future(), loop=loop,
                )
            )
        return jobs

    # ------------------------------------------------------------------ worker thread
    def _make_sampler(self, job: _Job):
        """(chain, grammar): the sampling chain and the job's grammar sampler (or None).

        The grammar stays out of the chain: applying it to all ~150k candidates costs
        ~40 ms per token on 2 cores, more than a batch-4 decode step's share; ``_sample``
        checks only the chosen token and falls back to the full grammar when it is
        rejected (llama.cpp's own common_sampler does the same)."""
        lc = self._lc
        grammar = None
        if job.grammar is not None:
            grammar = lc.llama_sampler_init_grammar(self._vocab, job.grammar.encode("utf-8"), b"root")
            if not grammar:
                grammar = None
                log.warning("llama.cpp rejected the grammar for stage %r; decoding unconstrained",
                            job.request.stage)
        chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
        temp = float(job.request.temperature)
        if temp <= 0.0:
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_greedy())
        else:
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_top_k(40))
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_top_p(0.95, 1))
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_temp(temp))
            lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_dist(job.seed))
        return chain, grammar

    def _sample(self, slot: _Slot) -> int:
        """Next token of ``slot`` from the logits at ``slot.logits_idx``.

        With a grammar: draw from the unconstrained chain, then apply the grammar to that
        one token; only when the grammar rejects it are all candidates filtered by the
        grammar and the chain applied again. Greedy output is the same as grammar-first
        (the argmax, when valid, is also the argmax of the valid tokens)."""
        lc = self._lc
        ctx = self._ctx.ctx
        if slot.grammar is None:
            return int(lc.llama_sampler_sample(slot.sampler, ctx, slot.logits_idx))
        logits = np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx, slot.logits_idx),
                                       shape=(self._n_vocab,))
        greedy = float(slot.job.request.temperature) <= 0.0  # as in _make_sampler
        tok = -1
        if self.lazy_grammar:
            if greedy:
                tok = int(logits.argmax())
            else:
                tok = int(lc.llama_sampler_sample(slot.sampler, ctx, slot.logits_idx))
            one = lc.llama_token_data(tok, 1.0, 0.0)
            one_arr = lc.llama_token_data_array(ctypes.pointer(one), 1, -1, False)
            lc.llama_sampler_apply(slot.grammar, ctypes.byref(one_arr))
            if not np.isfinite(one.logit):
                tok = -1
        if tok < 0:  # rejected (or lazy checking off): filter every candidate, choose again
            self.grammar_fallbacks += 1
            cand = self._candidates
            cand["id"] = self._vocab_ids
            cand["logit"] = logits
            cand["p"] = 0.0
            arr = lc.llama_token_data_array(self._cand_buf, self._n_vocab, -1, False)
            lc.llama_sampler_apply(slot.grammar, ctypes.byref(arr))
            if not np.isfinite(cand["logit"]).any():
                # llama_sampler_accept would abort the process on a token the grammar rejects
                raise RuntimeError(f"the JSON-Schema grammar allows no token after {len(slot.out)} "
                                   "generated tokens")
            if greedy:
                tok = int(cand["logit"].argmax())
            else:
                lc.llama_sampler_apply(slot.sampler, ctypes.byref(arr))
                tok = int(arr.data[arr.selected].id)
        lc.llama_sampler_accept(slot.grammar, tok)
        return tok

    def _piece(self, tok: int) -> bytes:
        """Bytes of one token (control tokens render empty), cached per token id."""
        piece = self._pieces.get(tok)
        if piece is None:
            buf = ctypes.create_string_buffer(64)
            n = self._lc.llama_token_to_piece(self._vocab, tok, buf, len(buf), 0, False)
            if n < 0:  # buffer too small: -n is the size needed
                buf = ctypes.create_string_buffer(-n)
                n = self._lc.llama_token_to_piece(self._vocab, tok, buf, len(buf), 0, False)
            piece = buf.raw[:n]
            self._pieces[tok] = piece
        return piece

    def _free_sampler(self, slot: _Slot) -> None:
        if slot.sampler is not None:
            self._lc.llama_sampler_free(slot.sampler)
            slot.sampler = None
        if slot.grammar is not None:
            self._lc.llama_sampler_free(slot.grammar)
            slot.grammar = None

    def _wait_for_prefix(self, job: _Job) -> bool:
        """True while a sequence is still prefilling a prompt that shares at least
        ``min_copy_tokens`` more tokens with ``job``'s prompt than any KV cache holds now:
        sibling requests that arrive together (one session's stages) then prefill their
        shared dialogue once and copy it, instead of each prefilling it in its own slot."""
        best_future = 0
        for s in self._slots:
            if s.job is not None and s.pending:
                best_future = max(best_future, _common_prefix(s.job.prompt, job.prompt))
        if best_future < self.min_copy_tokens:
            return False
        have = max(_common_prefix(s.kv_tokens, job.prompt) for s in self._slots + self._cache)
        return best_future - have >= self.min_copy_tokens

    def _wanted(self, slot: _Slot) -> int:
        """Tokens of ``slot``'s KV stream that a request still waiting in the backlog would
        reuse and no other sequence holds (0 below ``min_copy_tokens``): e.g. a topic's
        turns, prefilled by its details request, which its events request (queued behind
        other sessions' requests) opens with."""
        if not slot.kv_tokens or not self._backlog:
            return 0
        want = max(_common_prefix(slot.kv_tokens, j.prompt) for j in self._backlog)
        if want < self.min_copy_tokens:
            return 0
        held = max((_common_prefix(s.kv_tokens, slot.kv_tokens[:want]) for s in self._slots + self._cache
                    if s is not slot), default=0)
        return want if want - held >= self.min_copy_tokens else 0

    def _assign(self, job: _Job, free: list[_Slot]) -> _Slot:
        """Put ``job`` on the free slot with the longest cached prefix of its prompt, less
        what a waiting request would lose if that slot were overwritten (:meth:`_wanted`)."""
        sampler, grammar = self._make_sampler(job)  # first: a failure leaves the slot untouched
        # without a prefix cache a lone free slot is taken whatever it holds: skip the scan
        wanted = {id(s): self._wanted(s) if (self._cache or len(free) > 1) else 0 for s in free}

        def gain(s: _Slot) -> tuple[int, float]:
            k = _common_prefix(s.kv_tokens, job.prompt)
            return k - max(0, wanted[id(s)] - k), -s.last_used

        best = max(free, key=gain)
        reuse = _common_prefix(best.kv_tokens, job.prompt)
        # Another sequence (busy or idle) may hold a longer prefix of this prompt, e.g. the
        # same session's dialogue while a sibling stage decodes: copy its KV stream instead
        # of prefilling again (a memcpy of n_ctx cells vs seconds of prefill on CPU).
        donor, donor_len = None, reuse
        for s in self._slots + self._cache:
            if s is not best:
                k = _common_prefix(s.kv_tokens, job.prompt)
                if k > donor_len:
                    donor, donor_len = s, k
        if donor_len - reuse < self.min_copy_tokens:
            donor = None
        keep_len = max(best.shared_len, wanted[id(best)])
        if reuse < keep_len:
            # queued before the donor's copy: llama.cpp runs stream copies in order
            self._save_prefix(best, keep=donor, length=keep_len)
        if donor is not None:
            # Separate KV streams (kv_unified=False) only copy whole streams (p0=p1=-1);
            # the tail past the shared prefix is removed just below.
            self._lc.llama_memory_seq_cp(self._mem, donor.seq_id, best.seq_id, -1, -1)
            best.kv_tokens = list(donor.kv_tokens)
            reuse = donor_len
            self.kv_copies += 1
            donor.shared_len = max(donor.shared_len, donor_len)
            donor.last_used = time.monotonic()
        best.shared_len = reuse  # a prefix this request reuses is one its session shares
        if reuse >= len(job.prompt):  # need logits of the last prompt token: decode it again
            reuse = len(job.prompt) - 1
        if not self._lc.llama_memory_seq_rm(self._mem, best.seq_id, reuse, -1):
            # partial removal unsupported by this memory type: start the sequence afresh
            self._lc.llama_memory_seq_rm(self._mem, best.seq_id, -1, -1)
            reuse = 0
        best.kv_tokens = best.kv_tokens[:reuse]
        best.job = job
        best.pending = job.prompt[reuse:]
        best.cached_tokens = reuse
        best.out = []
        best.last_token = None
        best.max_tokens = max(1, min(int(job.request.max_tokens), self.n_ctx_seq - len(job.prompt)))
        best.sampler = sampler
        best.grammar = grammar
        return best

    def _save_prefix(self, slot: _Slot, keep: Optional[_Slot] = None, length: Optional[int] = None) -> None:
        """Copy ``slot``'s KV stream into the least recently used cache sequence before a
        request of another prompt overwrites it, when its shared prefix (``length`` tokens,
        default ``shared_len``: a session's system prompt and dialogue, which that session's
        later stages ask for again, or what a waiting request opens with) is held by no
        other sequence. Without it a session whose slots were all taken by other sessions
        prefills its dialogue again for each later stage (relations, draft): ~900 tokens,
        ~15 s on 2 cores, per LoCoMo session. ``keep``: a cache sequence the slot's new
        request copies from, never the one overwritten."""
        if not self._cache:
            return
        n = slot.shared_len if length is None else length
        want = slot.kv_tokens[:n]
        held = max((_common_prefix(s.kv_tokens, want) for s in self._slots + self._cache if s is not slot), default=0)
        if len(want) - held < self.min_copy_tokens:
            return
        spare = [s for s in self._cache if s is not keep]
        if not spare:
            return
        target = min(spare, key=lambda s: (bool(s.kv_tokens), s.last_used))
        self._lc.llama_memory_seq_cp(self._mem, slot.seq_id, target.seq_id, -1, -1)
        target.kv_tokens = list(slot.kv_tokens)
        target.shared_len = n
        target.last_used = time.monotonic()
        self.prefix_saves += 1

    def _finish(self, slot: _Slot, finish_reason: str) -> None:
        job = slot.job
        text = b"".join(self._piece(t) for t in slot.out).decode("utf-8", errors="replace")
        resp = LLMResponse(
            text=text,
            prompt_tokens=len(job.prompt),
            completion_tokens=len(slot.out),
            cached_tokens=slot.cached_tokens,
            finish_reason=finish_reason,
        )
        self._resolve(job, resp)
        self._release(slot)

    def _release(self, slot: _Slot) -> None:
        self._free_sampler(slot)
        slot.job = None
        slot.pending = []
        slot.last_token = None
        slot.logits_idx = -1
        slot.last_used = time.monotonic()

    @staticmethod
    def _resolve(job: _Job, result: Any, error: Optional[BaseException] = None) -> None:
        def setter():
            if job.future.done():
                return
            if error is not None:
                job.future.set_exception(error)
            else:
                job.future.set_result(result)

        try:
            job.loop.call_soon_threadsafe(setter)
        except RuntimeError:  # event loop already closed: nobody is waiting
            pass

    def _fail_active(self, err: BaseException) -> None:
        for s in self._slots:
            if s.job is not None:
                self._fail_slot(s, err)

    def _fail_slot(self, slot: _Slot, err: BaseException) -> None:
        """Fail the slot's request and drop its KV (it may hold a half-decoded step)."""
        self._resolve(slot.job, None, err)
        self._lc.llama_memory_seq_rm(self._mem, slot.seq_id, -1, -1)
        slot.kv_tokens = []
        slot.shared_len = 0
        self._release(slot)

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as e:  # never leave callers waiting on a dead thread
            log.exception("llamacpp worker thread died")
            self._closed = True
            err = RuntimeError(f"llamacpp worker thread died: {e!r}")
            self._fail_active(err)
            self._drain_queue(err)
            raise

    def _drain_queue(self, err: BaseException) -> None:
        """After the worker has stopped: fail every job still waiting (backlog or queue) and
        release every waiting reset_cache() (it then raises)."""
        for job in self._backlog:
            self._resolve(job, None, err)
        self._backlog.clear()
        waiting = list(self._pending_resets)
        self._pending_resets.clear()
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, list):
                for job in item:
                    self._resolve(job, None, err)
            elif isinstance(item, threading.Event):
                waiting.append(item)
        for ev in waiting:
            self._aborted_resets.add(ev)
            ev.set()

    def _loop(self) -> None:
        backlog = self._backlog
        stopping = False
        while True:
            active = [s for s in self._slots if s.job is not None]
            # Block only when idle; otherwise take whatever has arrived.
            try:
                if not active and not backlog:
                    item = self._queue.get()
                    items = [item]
                else:
                    items = []
                while True:
                    items.append(self._queue.get_nowait())
            except queue.Empty:
                pass
            for item in items:
                if item is _STOP:
                    stopping = True
                elif isinstance(item, threading.Event):  # reset_cache(): runs between requests
                    self._pending_resets.append(item)
                else:  # the jobs of one generate() call
                    backlog.extend(item)
            if self._pending_resets and not any(s.job is not None for s in self._slots):
                self._lc.llama_memory_clear(self._mem, True)
                for s in self._slots + self._cache:
                    s.kv_tokens = []
                    s.shared_len = 0
                for ev in self._pending_resets:
                    ev.set()
                self._pending_resets.clear()
            if stopping:
                err = RuntimeError("LlamaCppLLM closed while the request was pending")
                self._fail_active(err)
                self._drain_queue(err)
                return
            # Drop requests whose caller went away.
            for s in active:
                if s.job.future.cancelled():
                    self._release(s)
            backlog[:] = [j for j in backlog if not j.future.cancelled()]
            free = [s for s in self._slots if s.job is None]
            i = 0
            while i < len(backlog) and free and not self._pending_resets:
                job = backlog[i]
                if self._wait_for_prefix(job):  # later requests may still start
                    i += 1
                    continue
                backlog.pop(i)
                try:
                    slot = self._assign(job, free)
                except Exception as e:  # e.g. sampler creation failed: fail this request only
                    log.exception("could not start request (stage %r)", job.request.stage)
                    self._resolve(job, None, e)
                    continue
                free.remove(slot)
            try:
                self._step()
            except Exception as e:  # a failed decode fails its requests, not the thread
                log.exception("llama_decode failed")
                self._fail_active(e)

    def _step(self) -> None:
        """One llama_decode: a token per generating slot, then prompt chunks; sample."""
        lc = self._lc
        b = self._batch
        n = 0
        budget = self.n_batch

        def add(slot: _Slot, tok: int, logits: bool) -> None:
            nonlocal n
            b.token[n] = tok
            b.pos[n] = len(slot.kv_tokens)
            b.n_seq_id[n] = 1
            b.seq_id[n][0] = slot.seq_id
            b.logits[n] = logits
            if logits:
                slot.logits_idx = n
            slot.kv_tokens.append(tok)
            n += 1

        for s in self._slots:
            s.logits_idx = -1
        for s in self._slots:  # generating slots first: one token each keeps latency low
            if s.job is not None and s.last_token is not None and budget > 0:
                add(s, s.last_token, True)
                s.last_token = None
                budget -= 1
        n_gen = n
        for s in self._slots:
            if s.job is not None and s.pending and budget > 0:
                chunk, s.pending = s.pending[:budget], s.pending[budget:]
                for k, tok in enumerate(chunk):
                    add(s, tok, k == len(chunk) - 1 and not s.pending)
                budget -= len(chunk)
        if n == 0:
            return
        b.n_tokens = n
        t0 = time.perf_counter()
        rc = lc.llama_decode(self._ctx.ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        t1 = time.perf_counter()
        st = self._steps
        st["steps"] += 1
        st["gen_tokens"] += n_gen
        st["prefill_tokens"] += n - n_gen
        st["decode_s"] += t1 - t0
        if n_gen:
            st["gen_steps"] += 1
            st["gen_batch_hist"][n_gen] = st["gen_batch_hist"].get(n_gen, 0) + 1
            if n > n_gen:
                st["mixed_steps"] += 1
        for s in self._slots:
            if s.job is None or s.logits_idx < 0:
                continue
            try:
                tok = self._sample(s)
            except RuntimeError as e:  # fails this request only; the others keep decoding
                log.warning("request failed while sampling (stage %r): %s", s.job.request.stage, e)
                self._fail_slot(s, e)
                continue
            if lc.llama_vocab_is_eog(self._vocab, tok):
                self._finish(s, "stop")
                continue
            s.out.append(tok)
            if len(s.out) >= s.max_tokens:
                self._finish(s, "length")
            else:
                s.last_token = tok
        st["sample_s"] += time.perf_counter() - t1
