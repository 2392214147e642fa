"""NLI batching engine: dedup, premise windowing, length-sorted token-budget batches.

ProMem §3.4 runs NLI on many (premise = source turn, hypothesis = memory entry) pairs per
session; the engine turns one list of pairs into as few, as tightly padded forward passes
as the device likes:

1. identical pairs are scored once;
2. each pair is tokenised as ``premise, hypothesis``; when the two exceed ``max_length``
   tokens the premise is cut into overlapping windows (``window_stride`` tokens of overlap,
   the hypothesis repeated in each) and the pair counts as entailed if any window entails;
3. windows are sorted by token length and packed into batches whose *padded* size
   (rows x padded length) stays within ``batch_tokens`` and whose row count stays within
   ``max_batch``; the padded length is rounded up to ``pad_multiple`` (8 on CUDA for
   tensor cores; 1 on CPU, where every padded token costs time);
4. a batch that runs out of memory is halved and retried (and later batches are capped);
5. results are returned in input order.

Device policy (measured, see benchmarks/bench_nli.py and benchmarks/results/nli_cpu.jsonl):
on CPU every padded token costs time, so rows are length-sorted, padded only to the
longest row of the batch (no rounding), and a batch (<= 16 rows) takes only rows of similar
length (<= 15% padding each); that beat both one pair per run and uncapped batches. On
CUDA large token-budget batches padded to 8 win.

:class:`OrtRunner` wraps an ONNX Runtime session (CPU, CUDA with IO binding, TensorRT);
the engine only needs a *scorer* ``feed -> logits`` so tests can substitute one.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from ..base import NLIResult

logger = logging.getLogger(__name__)

LABELS = ("entailment", "neutral", "contradiction")

# feed: {"input_ids": int64 (b, L), "attention_mask": int64 (b, L)[, "token_type_ids"]} -> float32 (b, n_labels)
Scorer = Callable[[Mapping[str, np.ndarray]], np.ndarray]


@dataclass
class BatchPolicy:
    """How windows are packed into forward passes.

    batch_tokens: max rows x padded length of one batch (tokens).
    max_batch: max rows of one batch.
    pad_multiple: padded length is rounded up to a multiple of this.
    max_pad_fraction: a row joins a batch only if at most this fraction of its padded row
        would be padding (length bucketing); None = no limit.
    """

    batch_tokens: int = 8192
    max_batch: int = 64
    pad_multiple: int = 8
    max_pad_fraction: Optional[float] = None

    def __post_init__(self) -> None:
        for name in ("batch_tokens", "max_batch", "pad_multiple"):
            if getattr(self, name) < 1:
                raise ValueError(f"BatchPolicy.{name} must be >= 1, got {getattr(self, name)}")
        if self.max_pad_fraction is not None and not 0.0 <= self.max_pad_fraction < 1.0:
            raise ValueError(f"BatchPolicy.max_pad_fraction must be in [0, 1), got {self.max_pad_fraction}")


# Per-device defaults. CPU (bench_nli.py, roberta-base shape, fused int8 ORT, 2 shared
# cores; benchmarks/results/nli_cpu.jsonl run 6, policies interleaved): rows sorted by
# length, no pad rounding, at most 16 rows, and a row joins a batch only if <= 15% of it is
# padding: 1.34-1.57 pairs/s vs 1.13-1.31 for uncapped batches of 16 and 1.11-1.18 (one
# outlier 1.64) one pair per run. The machine was heavily shared (load 8 on 2 cores), so
# differences under ~15% are within noise. CUDA: big batches, padding to 8, fp16.
CPU_MAX_BATCH = 16
CPU_MAX_PAD_FRACTION = 0.15
CUDA_MAX_BATCH = 256


def device_policy(device: str, batch_tokens: int) -> BatchPolicy:
    """Default :class:`BatchPolicy` for ``device`` in {"cpu", "cuda"} (TensorRT counts as cuda)."""
    if device == "cpu":
        return BatchPolicy(
            batch_tokens=batch_tokens, max_batch=CPU_MAX_BATCH, pad_multiple=1, max_pad_fraction=CPU_MAX_PAD_FRACTION
        )
    return BatchPolicy(batch_tokens=batch_tokens, max_batch=CUDA_MAX_BATCH, pad_multiple=8)


def padded_length(n: int, multiple: int, cap: Optional[int] = None) -> int:
    """``n`` rounded up to ``multiple``, but never above ``cap`` (when n <= cap)."""
    p = -(-n // multiple) * multiple
    if cap is not None and n <= cap < p:
        return cap
    return p


def plan_batches(lengths: Sequence[int], policy: BatchPolicy, cap: Optional[int] = None) -> list[list[int]]:
    """Group indices of ``lengths`` (tokens per row) into batches.

    Rows are sorted by length, longest first (so an out-of-memory shows on the first
    batch), and a batch grows while rows x padded length <= ``policy.batch_tokens`` and
    rows <= ``policy.max_batch`` and (with ``policy.max_pad_fraction``) each row is long
    enough that padding it stays within that fraction. A single row longer than the budget
    gets its own batch.

    Returns:
        list of index lists; every index appears exactly once.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    cur: list[int] = []
    cur_pad = 0
    for i in order:
        if not cur:
            cur, cur_pad = [i], padded_length(lengths[i], policy.pad_multiple, cap)
            continue
        # sorted descending: the first row sets the padded length of the batch
        fits_bucket = policy.max_pad_fraction is None or lengths[i] >= cur_pad * (1.0 - policy.max_pad_fraction)
        if fits_bucket and len(cur) < policy.max_batch and (len(cur) + 1) * cur_pad <= policy.batch_tokens:
            cur.append(i)
        else:
            batches.append(cur)
            cur, cur_pad = [i], padded_length(lengths[i], policy.pad_multiple, cap)
    if cur:
        batches.append(cur)
    return batches


def is_out_of_memory(err: BaseException) -> bool:
    """True when ``err`` is an allocation failure (host MemoryError or an ORT/CUDA OOM)."""
    if isinstance(err, MemoryError):
        return True
    msg = str(err).lower()
    return any(
        s in msg
        for s in ("out of memory", "failed to allocate", "cuda_error_out_of_memory", "bad_alloc", "cudamalloc")
    )


def label_index_from_config(id2label: Mapping, source: str = "config.id2label") -> dict[str, int]:
    """Map the model's label names (case-insensitive) to logit columns.

    Args:
        id2label: ``{index: name}`` from the model's config (keys may be str or int).

    Returns:
        ``{"entailment": i, "neutral": j, "contradiction": k}``.

    Raises:
        ValueError: the head does not have exactly these three NLI labels (e.g. LABEL_0..2
            of an untrained head, or a 2-way head); the message shows ``id2label``.
    """
    aliases = {
        "entailment": "entailment", "entail": "entailment", "entailed": "entailment",
        "neutral": "neutral",
        "contradiction": "contradiction", "contradict": "contradiction", "contradictory": "contradiction",
    }
    out: dict[str, int] = {}
    for k, name in id2label.items():
        canon = aliases.get(str(name).strip().lower())
        if canon is None or canon in out:
            out = {}
            break
        out[canon] = int(k)
    if set(out) != set(LABELS) or len(id2label) != 3:
        raise ValueError(
            f"{source}={dict(id2label)!r} is not a 3-way NLI head (need entailment, neutral and "
            "contradiction labels, case-insensitive); use an MNLI-trained sequence-classification model"
        )
    return out


def softmax(x: np.ndarray) -> np.ndarray:
    """Row softmax of float array (n, k), computed in float64; returns float64 (n, k)."""
    z = x.astype(np.float64) - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@dataclass
class Windows:
    """Tokenised windows of unique pairs.

    input_ids / token_type_ids: per window, a list of token ids (no padding).
    owner: per window, the index of the unique pair it belongs to.
    """

    input_ids: list[list[int]]
    token_type_ids: Optional[list[list[int]]]
    owner: list[int]


class NLIBatchEngine:
    """Scores (premise, hypothesis) pairs with a sequence-classification scorer.

    Args:
        tokenizer: a Hugging Face *fast* tokenizer of the model (premise/hypothesis pair
            encoding with its own special tokens).
        scorer: ``feed -> logits``, float32 (rows, n_labels); see :data:`Scorer`.
        label_index: ``{"entailment": col, "neutral": col, "contradiction": col}``.
        max_length: max tokens of premise + hypothesis + special tokens per window.
        window_stride: tokens of overlap between consecutive premise windows.
        policy: batch packing (:class:`BatchPolicy`).
        use_token_type_ids: feed ``token_type_ids`` (BERT-style models).

    Raises:
        ValueError: a slow tokenizer, or max_length too small to hold a window.
    """

    def __init__(
        self,
        tokenizer,
        scorer: Scorer,
        label_index: Mapping[str, int],
        *,
        max_length: int = 512,
        window_stride: int = 128,
        policy: Optional[BatchPolicy] = None,
        use_token_type_ids: bool = False,
    ):
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError("NLIBatchEngine needs a fast (Rust) tokenizer for premise windowing")
        self.tokenizer = tokenizer
        self.scorer = scorer
        self.label_index = dict(label_index)
        self.max_length = int(max_length)
        self.window_stride = int(window_stride)
        self.policy = policy or BatchPolicy()
        self.use_token_type_ids = use_token_type_ids
        self.n_specials = tokenizer.num_special_tokens_to_add(pair=True)
        # the hypothesis may take at most half the window; the rest is premise
        self.max_hyp_tokens = max(1, (self.max_length - self.n_specials) // 2)
        premise_room = self.max_length - self.n_specials - self.max_hyp_tokens
        if premise_room < 2:
            raise ValueError(f"max_length={max_length} leaves no room for a premise window")
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._lock = threading.Lock()
        self.stats = {"pairs": 0, "unique": 0, "windows": 0, "batches": 0, "oom_splits": 0}

    # -- tokenisation ------------------------------------------------------------------
    def encode(self, pairs: Sequence[tuple[str, str]]) -> Windows:
        """Tokenise unique pairs into windows (premise split only when the pair is too long)."""
        tok = self.tokenizer
        premises = [p for p, _ in pairs]
        hyps = [h for _, h in pairs]
        hyp_ids = tok(hyps, add_special_tokens=False)["input_ids"]
        long_h = [i for i, ids in enumerate(hyp_ids) if len(ids) > self.max_hyp_tokens]
        if long_h:
            logger.warning(
                "%d hypotheses longer than %d tokens were truncated for NLI", len(long_h), self.max_hyp_tokens
            )
            hyps = list(hyps)
            for i in long_h:
                hyps[i] = tok.decode(hyp_ids[i][: self.max_hyp_tokens])
        longest_h = min(max((len(x) for x in hyp_ids), default=0), self.max_hyp_tokens)
        # overlap must be shorter than the smallest premise room any window can have
        room = self.max_length - self.n_specials - longest_h
        stride = max(0, min(self.window_stride, room - 1))
        enc = tok(
            premises,
            hyps,
            truncation="only_first",
            max_length=self.max_length,
            stride=stride,
            return_overflowing_tokens=True,
            return_token_type_ids=self.use_token_type_ids,
            return_attention_mask=False,
        )
        owner = list(enc["overflow_to_sample_mapping"])
        types = enc["token_type_ids"] if self.use_token_type_ids else None
        return Windows(list(enc["input_ids"]), types, owner)

    # -- running -----------------------------------------------------------------------
    def _feed(self, win: Windows, rows: Sequence[int]) -> dict[str, np.ndarray]:
        longest = max(len(win.input_ids[r]) for r in rows)
        width = padded_length(longest, self.policy.pad_multiple, cap=max(self.max_length, longest))
        ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        types = np.zeros((len(rows), width), dtype=np.int64) if win.token_type_ids is not None else None
        for j, r in enumerate(rows):
            seq = win.input_ids[r]
            ids[j, : len(seq)] = seq
            mask[j, : len(seq)] = 1
            if types is not None:
                types[j, : len(seq)] = win.token_type_ids[r]
        feed = {"input_ids": ids, "attention_mask": mask}
        if types is not None:
            feed["token_type_ids"] = types
        return feed

    def _score_rows(self, win: Windows, rows: list[int]) -> np.ndarray:
        """Logits for ``rows``; on out-of-memory halve the batch, retry, and cap later batches."""
        try:
            out = np.asarray(self.scorer(self._feed(win, rows)), dtype=np.float32)
        except Exception as e:
            if not is_out_of_memory(e) or len(rows) == 1:
                raise
            half = len(rows) // 2
            self.stats["oom_splits"] += 1
            if self.policy.max_batch > half:
                logger.warning("NLI batch of %d rows ran out of memory; halving (max_batch -> %d)", len(rows), half)
                self.policy.max_batch = half
            return np.concatenate([self._score_rows(win, rows[:half]), self._score_rows(win, rows[half:])])
        if out.shape[0] != len(rows):
            raise RuntimeError(f"NLI scorer returned {out.shape[0]} rows for a batch of {len(rows)}")
        self.stats["batches"] += 1
        return out

    def score_windows(self, pairs: Sequence[tuple[str, str]]) -> tuple[Windows, np.ndarray]:
        """Tokenise ``pairs`` into windows and score them in planned batches.

        Returns:
            (windows, logits float32 (n_windows, n_labels) in the model's label order,
            rows in window order).
        """
        with self._lock:
            win = self.encode(pairs)
            lengths = [len(x) for x in win.input_ids]
            logits = np.zeros((len(lengths), len(self.label_index)), dtype=np.float32)
            for rows in plan_batches(lengths, self.policy, cap=self.max_length):
                logits[rows] = self._score_rows(win, rows)
            self.stats["windows"] += len(lengths)
        return win, logits

    def run(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        """Classify (premise, hypothesis) pairs; blocking. Results in input order.

        A pair's result is the window with the highest entailment probability: it is
        ``entailment`` when any window's argmax is entailment; ``probs`` are that window's.

        Raises:
            TypeError: a pair is not two strings (message gives its index).
        """
        for i, pair in enumerate(pairs):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
                raise TypeError(f"NLI pair {i} must be (premise: str, hypothesis: str), got {pair!r:.100}")
        if not pairs:
            return []
        index: dict[tuple[str, str], int] = {}
        slot = [index.setdefault((p, h), len(index)) for p, h in pairs]
        unique = list(index)
        win, logits = self.score_windows(unique)
        self.stats["pairs"] += len(pairs)
        self.stats["unique"] += len(unique)
        probs = softmax(logits)
        ent = self.label_index["entailment"]
        best = np.full(len(unique), -1, dtype=np.int64)
        for w, u in enumerate(win.owner):
            if best[u] < 0 or probs[w, ent] > probs[best[u], ent]:
                best[u] = w
        results = []
        for u in range(len(unique)):
            p = probs[best[u]]
            d = {lab: float(p[col]) for lab, col in self.label_index.items()}
            results.append(NLIResult(max(d, key=d.get), d))
        return [results[i] for i in slot]


class OrtRunner:
    """An ONNX Runtime session as a :data:`Scorer`-style callable.

    Args:
        model_path: ONNX file.
        provider: "cpu" | "cuda" | "tensorrt" (TensorRT falls back to CUDA, then CPU, per node).
        output_name: the output to return (``logits`` or ``last_hidden_state``).
        threads: intra-op threads on CPU (None = ORT default: physical cores).
        trt_cache_dir: TensorRT engine cache directory.

    On CUDA/TensorRT the run goes through IO binding: inputs copied once to the device,
    output allocated by ORT on the device and copied back, no per-run host staging.

    Raises:
        RuntimeError: the requested provider is not available in this onnxruntime build.
    """

    def __init__(
        self,
        model_path: Path | str,
        provider: str = "cpu",
        output_name: str = "logits",
        threads: Optional[int] = None,
        trt_cache_dir: Optional[Path | str] = None,
        trt_fp16: bool = True,
    ):
        import onnxruntime as ort

        avail = ort.get_available_providers()
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            opts.intra_op_num_threads = int(threads)
        # Idle ORT threads would spin on the cores the in-process LLM decodes on; sleeping
        # costs a little latency per call and keeps llama.cpp's threads running.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if provider == "cpu":
            providers: list = ["CPUExecutionProvider"]
        elif provider == "cuda":
            providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
        elif provider == "tensorrt":
            trt_opts = {"trt_fp16_enable": bool(trt_fp16), "trt_engine_cache_enable": trt_cache_dir is not None}
            if trt_cache_dir is not None:
                Path(trt_cache_dir).mkdir(parents=True, exist_ok=True)
                trt_opts["trt_engine_cache_path"] = str(trt_cache_dir)
            providers = [("TensorrtExecutionProvider", trt_opts), "CUDAExecutionProvider", "CPUExecutionProvider"]
        else:
            raise ValueError(f"provider={provider!r}; expected cpu | cuda | tensorrt")
        first = providers[0][0] if isinstance(providers[0], tuple) else providers[0]
        if first not in avail:
            raise RuntimeError(
                f"ONNX Runtime provider {first} is not available (available: {avail}); "
                "install onnxruntime-gpu for cuda/tensorrt or set provider='cpu'"
            )
        self.provider = provider
        self.session = ort.InferenceSession(str(model_path), sess_options=opts, providers=providers)
        self.input_names = [i.name for i in self.session.get_inputs()]
        outs = [o.name for o in self.session.get_outputs()]
        if output_name not in outs:
            raise RuntimeError(f"{model_path} has no output {output_name!r} (outputs: {outs})")
        self.output_name = output_name
        self.device = "cpu" if provider == "cpu" else "cuda"

    def __call__(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        """Run one batch: ``feed`` int64 arrays (b, L) by input name -> float32 output array."""
        inputs = {k: np.ascontiguousarray(feed[k]) for k in self.input_names if k in feed}
        missing = [k for k in self.input_names if k not in inputs]
        if missing:
            if missing == ["token_type_ids"]:
                inputs["token_type_ids"] = np.zeros_like(inputs["input_ids"])
            else:
                raise KeyError(f"ONNX model needs inputs {missing} that the feed lacks")
        if self.device == "cpu":
            return self.session.run([self.output_name], inputs)[0]
        binding = self.session.io_binding()
        for k, v in inputs.items():
            binding.bind_cpu_input(k, v)
        binding.bind_output(self.output_name, "cuda")
        self.session.run_with_iobinding(binding)
        return binding.copy_outputs_to_cpu()[0]
