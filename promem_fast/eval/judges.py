"""Judges for the evaluation harness: an LLM judge (HaluMem's 0/1/2 rubric, our wording in
:mod:`.judge_prompts`) and an offline NLI + embedding *proxy* judge.

Both answer three questions, each item independently:

* ``integrity(points, memories)``: is each gold memory point captured by the extracted
  memories? -> 0/1/2 or None (judge output unusable);
* ``accuracy(entries, ...)``: is each extracted memory entry supported by the dialogue, and is
  its subject among the gold memories? -> (0/1/2 or None, included_in_gold flag);
* ``qa(items)``: is each answer ``Correct`` / ``Hallucination`` / ``Omission`` given the gold
  answer? -> label or None;
* ``update(items)``: HaluMem's memory-update task: do the memories the system retrieved for an
  updated memory point (``memories_from_system``) state the updated fact? -> ``Correct`` /
  ``Hallucination`` / ``Omission`` / ``Other`` or None.

The LLM judge retrieves, per gold point, the top-k extracted memories by embedding cosine
before prompting (keeps prompts short), asks for JSON against the schemas of
:mod:`.judge_prompts` (integrity and accuracy: a verbatim quote first, the score last; a
positive score whose quote is not copied from the shown memories / dialogue, see
:func:`grounded`: every sentence of it shares >= 80 % of its words and all its numbers and
names with one line, becomes 0 and is counted in ``JudgeStats.ungrounded``; this catches
quotes of the reference itself and copies that change a value), parses with the tolerant
:func:`~promem_fast.structured.parse_json`, retries an unusable output ``retries`` times and then records None (counted in
``JudgeStats.failed``). The proxy judge never calls an LLM for judging (the NLI backend may
itself be the LLM judge NLI); its numbers are labelled "proxy" wherever reported.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..backends.base import LLMRequest
from ..structured import StructuredOutputError, parse_json
from . import judge_prompts as jp
from .metrics import normalize_answer, proxy_match, token_f1

logger = logging.getLogger(__name__)

__all__ = [
    "CachedEmbed", "JudgeStats", "LLMJudge", "NLIJudge", "QAItem", "UpdateItem", "make_judge", "proxy_qa_label",
    "scripted_eval_respond", "declines",
]

# Phrases that mark an answer as declining (omission); LoCoMo's adversarial phrases included.
_DECLINE_RE = re.compile(
    r"\b(i don'?t know|do not know|not known|unknown|no information|not mentioned|cannot (?:be )?(?:answer|determin)"
    r"|can'?t (?:answer|tell|determin)|not (?:stated|specified|available|provided)|no (?:memory|memories|record))\b",
    re.I,
)


def declines(answer: str) -> bool:
    """True when ``answer`` is empty or declines ("I don't know", "not mentioned", ...)."""
    return not answer.strip() or bool(_DECLINE_RE.search(answer))


_NONE_WORDS = {"none", "nothing", "n", "a"}
_ARTICLES = {"a", "an", "the"}


def _quote_words(text: str) -> set[str]:
    # punctuation splits words ("[7 May 2023]Caroline:" -> 2023, caroline)
    return set(re.findall(r"\w+", text.lower())) - _ARTICLES


# A quote is checked sentence by sentence: one judge quote may copy several memories or
# dialogue lines, but each of its sentences comes from one of them.
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+|\n+")


@functools.lru_cache(maxsize=32)
def _source_lines(source: str) -> tuple[frozenset[str], ...]:
    # one session's dialogue is the source of every accuracy verdict: split it once
    return tuple(frozenset(_quote_words(line)) for line in source.splitlines() if line.strip())


def _key_words(sentence: str) -> set[str]:
    """Values a copy must not change: words with a digit, and capitalised words after the
    sentence's first word (names, places, months), lower-cased."""
    words = re.findall(r"\w+", sentence)
    keys = {w for w in words if any(c.isdigit() for c in w)}
    keys |= {w for w in words[1:] if w[0].isupper() and w != "I"}
    return {w.lower() for w in keys} - _ARTICLES


def grounded(evidence: Any, source: str, *, min_overlap: float = 0.8) -> bool:
    """True when ``evidence`` (a judge's quote) is copied from ``source`` (memories or dialogue
    lines, one per line). Each sentence of the quote must match one source line: at least
    ``min_overlap`` of its distinct lower-cased words (articles left out) occur in that line,
    and so do all its numbers and capitalised words (so a copy that changes a date, an amount
    or a name fails even when most words match). Sentences of fewer than three words (list
    markers, "etc.") are not checked on their own. False for a non-string, an empty quote or
    "none"."""
    if not isinstance(evidence, str):
        return False
    words = _quote_words(evidence)
    if not words or words <= _NONE_WORDS:
        return False
    lines = _source_lines(source)
    sentences = [(sw, t) for t in _SENTENCE_END.split(evidence) if len(sw := _quote_words(t)) >= 3] \
        or [(words, evidence)]
    for sw, sent in sentences:
        keys = _key_words(sent)
        if not any(len(sw & lw) >= min_overlap * len(sw) and keys <= lw for lw in lines):
            return False
    return True


def checked_score(score: Optional[int], output: Any, source: str, min_overlap: float = 0.8) -> tuple[Optional[int], bool]:
    """(score, ungrounded): a positive integrity / accuracy ``score`` becomes 0 when the judge's
    ``output["evidence"]`` quote is not :func:`grounded` in ``source``."""
    if score and not grounded(output.get("evidence"), source, min_overlap=min_overlap):
        return 0, True
    return score, False


def proxy_qa_label(response: str, gold: Any, *, f1_threshold: float = 0.5) -> str:
    """Proxy QA label from string overlap (no LLM): ``Omission`` if the response declines;
    ``Correct`` if the normalised gold answer is contained in the normalised response or the
    token F1 (:func:`~.metrics.token_f1`) is >= ``f1_threshold``; else ``Hallucination``."""
    if declines(response):
        return "Omission"
    g, r = normalize_answer(str(gold)), normalize_answer(response)
    if g and f" {g} " in f" {r} ":
        return "Correct"
    return "Correct" if token_f1(response, str(gold)) >= f1_threshold else "Hallucination"


class CachedEmbed:
    """Embedding backend wrapper that memoises text -> vector, so the harness can call
    retrieval once per question without re-embedding the unchanged memory each time.

    ``encode`` returns float32 (len(texts), dim), the inner backend's rows.
    """

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.model_name = getattr(inner, "model_name", inner.name)
        self._cache: dict[str, np.ndarray] = {}
        self._lock = asyncio.Lock()

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        async with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if todo:
                vecs = np.asarray(await self.inner.encode(todo), dtype=np.float32)
                for t, v in zip(todo, vecs):
                    self._cache[t] = v
            return np.stack([self._cache[t] for t in texts]).astype(np.float32, copy=False)


@dataclass
class JudgeStats:
    """Judge bookkeeping: items asked, unusable outputs (recorded as None), LLM tokens."""

    asked: Counter = field(default_factory=Counter)
    failed: Counter = field(default_factory=Counter)
    ungrounded: Counter = field(default_factory=Counter)  # positive scores with an invented quote
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict:
        return {"asked": dict(self.asked), "failed": dict(self.failed), "ungrounded": dict(self.ungrounded),
                "llm_calls": self.llm_calls,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


@dataclass
class QAItem:
    """One answer to judge: question, gold answer, evidence text (may be ""), system response."""

    question: str
    gold: Any
    evidence: str
    response: str


@dataclass
class UpdateItem:
    """One HaluMem update memory point to judge (``is_update == "True"``).

    memory: the point's ``memory_content`` (the updated fact); original_memories: its
    ``original_memories`` (the earlier versions); memories_from_system: the memory texts
    the system retrieved with ``memory`` as query (top-k, best first).
    """

    memory: str
    original_memories: list[str]
    memories_from_system: list[str]


UPDATE_LABELS = ("Correct", "Hallucination", "Omission", "Other")


async def _top_k(embed: Any, queries: Sequence[str], corpus: Sequence[str], k: int) -> list[list[int]]:
    """Indices of the top-k corpus rows by cosine for each query (best first)."""
    if not corpus:
        return [[] for _ in queries]
    if not queries:
        return []
    q = await embed.encode(list(queries))
    c = await embed.encode(list(corpus))
    sims = np.asarray(q, np.float32) @ np.asarray(c, np.float32).T
    k = min(k, len(corpus))
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return [list(map(int, row)) for row in order]


class LLMJudge:
    """HaluMem-style judge on any configured LLM backend.

    Args:
        llm: LLMBackend (``generate(list[LLMRequest])``).
        embed: EmbedBackend used to pick the top-k memories per gold point.
        top_k: memories shown per gold point (default 10).
        retries: extra attempts for an unusable output before recording None.
        max_tokens: completion cap per judgement.
        min_evidence_overlap: share of a quote's words that must occur in the shown text
            for a positive integrity / accuracy score to stand (:func:`grounded`).
        keep_verdicts: keep every integrity / accuracy verdict in :attr:`verdicts` (dicts
            ``kind``, ``item`` (the point or entry judged), ``output`` (the judge's parsed JSON
            or None), ``source`` (the text its quote must come from), ``score`` (after the quote
            check)), so the quote check can be re-applied later without the LLM.
    """

    name = "llm"
    proxy = False

    def __init__(self, llm: Any, embed: Any, *, top_k: int = 10, retries: int = 1, max_tokens: int = 400,
                 min_evidence_overlap: float = 0.8, keep_verdicts: bool = False):
        self.llm = llm
        self.verdicts: Optional[list[dict]] = [] if keep_verdicts else None
        self.min_evidence_overlap = min_evidence_overlap
        self.embed = embed
        self.top_k = top_k
        self.retries = retries
        self.max_tokens = max_tokens
        self.stats = JudgeStats()

    @property
    def model_name(self) -> str:
        return getattr(self.llm, "model_name", self.llm.name)

    async def _ask(self, kind: str, prompts: list[str], schema: dict) -> list[Any]:
        """One JSON object per prompt (None where unusable after the retries)."""
        out: list[Any] = [None] * len(prompts)
        pending = list(range(len(prompts)))
        self.stats.asked[kind] += len(prompts)
        for _ in range(self.retries + 1):
            if not pending:
                break
            reqs = [LLMRequest(messages=[{"role": "system", "content": jp.JUDGE_SYSTEM},
                                         {"role": "user", "content": prompts[i]}],
                               json_schema=schema, max_tokens=self.max_tokens, stage=f"judge_{kind}")
                    for i in pending]
            resps = await self.llm.generate(reqs)
            still = []
            for i, resp in zip(pending, resps):
                self.stats.llm_calls += 1
                self.stats.prompt_tokens += resp.prompt_tokens
                self.stats.completion_tokens += resp.completion_tokens
                try:
                    out[i] = parse_json(resp.text, schema, truncated=resp.finish_reason == "length")
                except StructuredOutputError as e:
                    logger.debug("judge_%s: unusable output %r: %s", kind, resp.text[:200], e)
                    still.append(i)
            pending = still
        self.stats.failed[kind] += len(pending)
        if pending:
            logger.warning("judge_%s: %d of %d outputs unusable; recorded as None", kind, len(pending), len(prompts))
        return out

    async def integrity(self, points: Sequence[str], memories: Sequence[str]) -> list[Optional[int]]:
        """0/1/2 (or None) per gold point; empty memory -> every point 0 without a call."""
        if not points:
            return []
        if not memories:
            self.stats.asked["integrity"] += len(points)
            return [0] * len(points)
        top = await _top_k(self.embed, points, memories, self.top_k)
        shown = ["\n".join(f"- {memories[j]}" for j in idx) for idx in top]
        prompts = [jp.integrity_prompt(m, p) for m, p in zip(shown, points)]
        objs = await self._ask("integrity", prompts, jp.INTEGRITY_SCHEMA)
        return [self._check_quote("integrity", jp.read_score(o, "score"), o, m, p)
                for o, m, p in zip(objs, shown, points)]

    def _check_quote(self, kind: str, score: Optional[int], obj: Any, source: str, item: str) -> Optional[int]:
        """``score``, or 0 when it is positive but the judge's ``evidence`` quote is not in ``source``."""
        checked, ungrounded = checked_score(score, obj, source, self.min_evidence_overlap)
        if ungrounded:
            self.stats.ungrounded[kind] += 1
            logger.debug("judge_%s: quote not in the shown text, score %s -> 0: %r", kind, score,
                         str(obj.get("evidence"))[:300])
        score = checked
        if self.verdicts is not None:
            self.verdicts.append({"kind": kind, "item": item, "output": obj, "source": source, "score": score})
        return score

    async def accuracy(
        self, entries: Sequence[str], *, dialogue: str, gold_points: Sequence[str],
        sources: Optional[Sequence[str]] = None, hypotheses: Optional[Sequence[str]] = None,
    ) -> list[tuple[Optional[int], bool]]:
        """(0/1/2 or None, included_in_gold) per extracted entry. ``sources`` and
        ``hypotheses`` are unused here (the LLM judge reads the whole dialogue and the
        entry as stored, as HaluMem's does)."""
        if not entries:
            return []
        gold = "\n".join(f"- {g}" for g in gold_points) or "- (none)"
        prompts = [jp.accuracy_prompt(dialogue, gold, e) for e in entries]
        objs = await self._ask("accuracy", prompts, jp.ACCURACY_SCHEMA)
        return [(self._check_quote("accuracy", jp.read_score(o, "accuracy_score"), o, dialogue, e),
                 jp.read_flag(o, "is_included_in_golden_memories")) for o, e in zip(objs, entries)]

    async def qa(self, items: Sequence[QAItem]) -> list[Optional[str]]:
        """``Correct`` / ``Hallucination`` / ``Omission`` (or None) per answer."""
        if not items:
            return []
        prompts = [jp.qa_prompt(it.question, str(it.gold), it.evidence or "(none)", it.response) for it in items]
        objs = await self._ask("qa", prompts, jp.QA_SCHEMA)
        return [jp.read_label(o) for o in objs]

    async def update(self, items: Sequence[UpdateItem]) -> list[Optional[str]]:
        """``Correct`` / ``Hallucination`` / ``Omission`` / ``Other`` (or None) per update
        point, from :func:`~.judge_prompts.update_prompt` (memories joined by newlines, as
        HaluMem's ``evaluation_for_update_memory`` receives them)."""
        if not items:
            return []
        prompts = [jp.update_prompt("\n".join(it.memories_from_system) or "(none)", it.memory,
                                    "\n".join(it.original_memories) or "(none)") for it in items]
        objs = await self._ask("update", prompts, jp.UPDATE_SCHEMA)
        return [jp.read_label(o, UPDATE_LABELS) for o in objs]


class NLIJudge:
    """Offline proxy judge from the NLI and embedding services (no judging LLM prompt).

    * integrity: ``s = proxy_match(extracted, gold, lo, hi)`` (best cosine >= hi -> 2,
      >= lo -> 1, else 0), then NLI with premise = the ``premise_k`` most similar extracted
      memories joined, hypothesis = the gold point: entailment -> 2, contradiction -> 0,
      neutral -> s;
    * accuracy: NLI with premise = the entry's source turns (the whole dialogue when it has
      none), hypothesis = the entry (``hypotheses[i]`` when given: the harness passes the
      entry without its date prefix): entailment -> 2, neutral -> 1, contradiction -> 0;
      included_in_gold = best cosine to a gold point >= lo;
    * QA: :func:`proxy_qa_label` (token F1 / containment against the gold answer);
    * update: NLI with premise = each retrieved memory alone, hypothesis = the updated
      memory. ``Correct`` if some retrieved memory entails it; else ``Hallucination`` if some
      retrieved memory contradicts it *and* entails none of the point's original memories
      (it states a third value); else ``Omission`` (only the old version, or nothing
      relevant, was retrieved). Mirrors the LLM rubric of
      :func:`~.judge_prompts.update_prompt`; never ``Other``. A retrieved memory that
      contradicts the update but restates the old value is the omission case, not a
      hallucination, as in HaluMem's rubric.

    Thresholds: defaults lo = 0.6 (the MiniLM cosine PEERS.md counts as "recalled"),
    hi = 0.8 (near-paraphrase); both are heuristics of this proxy, not HaluMem's.
    """

    name = "nli"
    proxy = True

    def __init__(self, nli: Any, embed: Any, *, lo: float = 0.6, hi: float = 0.8, premise_k: int = 3,
                 qa_f1: float = 0.5):
        if lo > hi:
            raise ValueError(f"NLIJudge needs lo <= hi, got lo={lo}, hi={hi}")
        self.nli = nli
        self.embed = embed
        self.lo, self.hi, self.premise_k, self.qa_f1 = lo, hi, premise_k, qa_f1
        self.stats = JudgeStats()

    @property
    def model_name(self) -> str:
        return getattr(self.nli, "model_name", self.nli.name)

    async def integrity(self, points: Sequence[str], memories: Sequence[str]) -> list[Optional[int]]:
        if not points:
            return []
        self.stats.asked["integrity"] += len(points)
        if not memories:
            return [0] * len(points)
        g = await self.embed.encode(list(points))
        m = await self.embed.encode(list(memories))
        s = proxy_match(m, g, lo=self.lo, hi=self.hi)
        top = await _top_k(self.embed, points, memories, self.premise_k)
        pairs = [(" ".join(memories[j] for j in idx), p) for p, idx in zip(points, top)]
        res = await self.nli.classify(pairs)
        out: list[Optional[int]] = []
        for si, r in zip(s.tolist(), res):
            out.append(2 if r.label == "entailment" else 0 if r.label == "contradiction" else int(si))
        return out

    async def accuracy(
        self, entries: Sequence[str], *, dialogue: str, gold_points: Sequence[str],
        sources: Optional[Sequence[str]] = None, hypotheses: Optional[Sequence[str]] = None,
    ) -> list[tuple[Optional[int], bool]]:
        if not entries:
            return []
        self.stats.asked["accuracy"] += len(entries)
        srcs = list(sources) if sources is not None else [""] * len(entries)
        hyps = list(hypotheses) if hypotheses is not None else list(entries)
        pairs = [(src or dialogue, h or e) for e, h, src in zip(entries, hyps, srcs)]
        res = await self.nli.classify(pairs)
        scores = [2 if r.label == "entailment" else 0 if r.label == "contradiction" else 1 for r in res]
        if gold_points:
            e = await self.embed.encode(list(entries))
            g = await self.embed.encode(list(gold_points))
            best = (np.asarray(e, np.float32) @ np.asarray(g, np.float32).T).max(axis=1)
            inc = [bool(b >= self.lo) for b in best]
        else:
            inc = [False] * len(entries)
        return list(zip(scores, inc))

    async def qa(self, items: Sequence[QAItem]) -> list[Optional[str]]:
        self.stats.asked["qa"] += len(items)
        return [proxy_qa_label(it.response, it.gold, f1_threshold=self.qa_f1) for it in items]

    async def update(self, items: Sequence[UpdateItem]) -> list[Optional[str]]:
        """Proxy update label per item (rule in the class docstring); two batched NLI calls:
        (memory, updated memory) for every retrieved memory, then (memory, original memory)
        for the contradicting ones only."""
        items = list(items)
        if not items:
            return []
        self.stats.asked["update"] += len(items)
        pairs = [(i, m) for i, it in enumerate(items) for m in it.memories_from_system]
        res = await self.nli.classify([(m, items[i].memory) for i, m in pairs])
        entailed: set[int] = set()
        contra: list[tuple[int, str]] = []
        for (i, m), r in zip(pairs, res):
            if r.label == "entailment":
                entailed.add(i)
            elif r.label == "contradiction":
                contra.append((i, m))
        contra = [(i, m) for i, m in contra if i not in entailed]
        # which contradicting memories are the old version (they entail an original memory)
        old_pairs = [(i, m, o) for i, m in contra for o in items[i].original_memories]
        old_res = await self.nli.classify([(m, o) for _, m, o in old_pairs]) if old_pairs else []
        restates_old = {(i, m) for (i, m, _), r in zip(old_pairs, old_res) if r.label == "entailment"}
        halluc = {i for i, m in contra if (i, m) not in restates_old}
        return ["Correct" if i in entailed else "Hallucination" if i in halluc else "Omission"
                for i in range(len(items))]


def make_judge(kind: str, services: Any, **kw: Any) -> Any:
    """``"llm"`` -> :class:`LLMJudge` on ``services.llm``; ``"nli"`` -> :class:`NLIJudge` on
    ``services.nli``. Both use ``services.embed``. Raises ValueError for another name."""
    if kind == "llm":
        return LLMJudge(services.llm, services.embed, **kw)
    if kind == "nli":
        return NLIJudge(services.nli, services.embed, **kw)
    raise ValueError(f"unknown judge {kind!r}; expected 'llm' or 'nli'")


# ----------------------------------------------------------------------------- scripted

_W = re.compile(r"\w+", re.U)
_STOP = {"a", "an", "the", "and", "of", "to", "in", "on", "at", "as", "is", "was", "user", "s"}


def _words(text: str) -> set[str]:
    return {w.lower() for w in _W.findall(text)} - _STOP


def _section(text: str, start: str, end: Optional[str]) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i) if end else -1
    return text[i:j] if j >= 0 else text[i:]


def scripted_eval_respond(req: LLMRequest) -> str:
    """Deterministic answers for the harness's own stages (``qa``, ``judge_*``), used with
    ``--llm scripted`` (smoke runs without a model); other stages go to
    :func:`promem_fast.engine.scripted_rules.respond`.

    QA answers come from the engine's rules (the first 12 words of the first retrieved
    memory, "I don't know" when there is none). Integrity: share
    of the reference's words found in the system memories (all -> 2, >= half -> 1, else 0),
    quoting all of them. Accuracy: 2 quoting the whole dialogue, included when a word is shared with the reference memories. QA: Correct when
    every gold-answer word is in the answer, Omission when it declines, else Hallucination.
    Update: Correct when every word of the updated memory is in the system memories, else
    Omission.
    """
    import json

    text = "\n".join(m.get("content", "") for m in req.messages)
    if req.stage == "judge_integrity":
        ref = _words(_section(text, "REFERENCE MEMORY:\n", "\n\nSYSTEM MEMORIES"))
        shown = _section(text, "SYSTEM MEMORIES:\n", "\n\nSteps")
        frac = len(ref & _words(shown)) / len(ref) if ref else 0.0
        return json.dumps({"evidence": shown if frac else "none", "left_out": "scripted",
                           "score": 2 if frac == 1 else 1 if frac >= 0.5 else 0})
    if req.stage == "judge_accuracy":
        cand_text = _section(text, "CANDIDATE MEMORY:\n", "\n\nSteps")
        cand = _words(cand_text)
        gold = _words(_section(text, "REFERENCE MEMORIES:\n", "\n\nCANDIDATE"))
        dialogue = _section(text, "DIALOGUE:\n", "\n\nREFERENCE MEMORIES")
        return json.dumps({"evidence": dialogue, "unsupported": "nothing", "accuracy_score": 2,
                           "is_included_in_golden_memories": "true" if cand & gold else "false"})
    if req.stage == "judge_update":
        upd = _words(_section(text, "UPDATED MEMORY:\n", "\n\nSYSTEM MEMORIES"))
        have = _words(_section(text, "SYSTEM MEMORIES:\n", "\n\nReply"))
        return json.dumps({"evaluation_result": "Correct" if upd and upd <= have else "Omission"})
    if req.stage == "judge_qa":
        gold = _words(_section(text, "REFERENCE ANSWER: ", "\n"))
        ans = _section(text, "SYSTEM ANSWER: ", "\n\nReply")
        label = "Omission" if declines(ans) else "Correct" if gold <= _words(ans) else "Hallucination"
        return json.dumps({"evaluation_result": label})
    from ..engine.scripted_rules import respond

    return respond(req)
