"""Evaluation metrics (pure functions).

LoCoMo QA (snap-research/LoCoMo ``task_eval/evaluation.py``):

* :func:`normalize_answer`: drop commas, lower-case, strip punctuation, remove
  ``a|an|the|and``, collapse whitespace (the SQuAD normaliser plus LoCoMo's comma and
  "and" removal);
* :func:`token_f1`: token-level F1 over Porter-stemmed normalised tokens;
* :func:`multi_answer_f1`: category 1 (multi-hop): answers split on ``,``, each gold
  sub-answer scored by its best predicted sub-answer, averaged;
* :func:`exact_match`: normalised strings equal (SQuAD EM);
* :func:`locomo_qa_score`: the per-category rule of LoCoMo's scorer.

HaluMem (IAAR-Shanghai/HaluMem ``eval/evaluation.py``, ``aggregate_eval_results``):

* :func:`memory_integrity`: recall over gold memory points scored 0/1/2 by a judge
  (2 = fully captured, 1 = partially, 0 = missing); interference points are excluded
  from recall and reported as ``interference_accuracy`` (share scored 0, i.e. the
  distractor was *not* stored);
* :func:`memory_accuracy`: precision over extracted memory entries scored 0/1/2;
* :func:`extraction_f1`: harmonic mean of recall and precision;
* :func:`qa_rates`: accuracy, hallucination rate and omission rate from per-question
  labels ``correct`` | ``hallucination`` | ``omission``;
* :func:`update_rates`: the memory-update task's correct (update accuracy),
  hallucination, omission and other rates from per-update-point labels
  ``correct`` | ``hallucination`` | ``omission`` | ``other`` (HaluMem's
  ``memory_update`` block: ``correct_update_memory_ratio(all|valid)``, ...).

Offline proxy judge: :func:`proxy_match` scores gold memory points 0/1/2 from cosine
similarity of embeddings (a stand-in for the LLM judge when none is available).

A score of ``None`` means the judge failed for that item; HaluMem reports two views,
"(all)" (failures count as misses, denominator = every item) and "(valid)" (failures
left out); both are returned.
"""

from __future__ import annotations

import logging
import math
import re
import string
from collections import Counter
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from ..kernels.reference import cross_reference_numpy

logger = logging.getLogger(__name__)

__all__ = [
    "AccuracyScores", "IntegrityScores", "QAScores", "UpdateScores", "exact_match", "extraction_f1",
    "locomo_qa_score", "memory_accuracy", "memory_integrity", "multi_answer_f1",
    "normalize_answer", "proxy_match", "qa_rates", "token_f1", "update_rates",
]

# ----------------------------------------------------------------------------- LoCoMo QA

_ARTICLES_RE = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """LoCoMo answer normalisation (see module docstring). ``str(text)`` is taken first,
    since some LoCoMo gold answers are ints (e.g. ``2022``)."""
    s = str(text).replace(",", "").lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES_RE.sub(" ", s)
    return " ".join(s.split())


@lru_cache(maxsize=1)
def _stemmer():
    try:
        from nltk.stem import PorterStemmer
    except ImportError as exc:  # declared in the 'eval' extra
        raise ImportError("LoCoMo F1 with stemming needs nltk (pip install nltk), or pass stem=False") from exc
    return PorterStemmer()


def _tokens(text: str, stem: bool) -> list[str]:
    toks = normalize_answer(text).split()
    if stem:
        ps = _stemmer()
        toks = [ps.stem(t) for t in toks]
    return toks


def token_f1(prediction: str, gold: str, *, stem: bool = True) -> float:
    """Token-level F1 in [0, 1] between normalised (and Porter-stemmed) token bags.

    0.0 when there is no overlap, including when either side is empty.
    """
    p, g = _tokens(prediction, stem), _tokens(gold, stem)
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str, *, stem: bool = True) -> float:
    """LoCoMo category-1 F1: mean over comma-separated gold sub-answers of the best
    :func:`token_f1` against any comma-separated predicted sub-answer."""
    preds = [x.strip() for x in str(prediction).split(",")]
    golds = [x.strip() for x in str(gold).split(",")]
    return float(np.mean([max(token_f1(p, g, stem=stem) for p in preds) for g in golds]))


def exact_match(prediction: str, gold: str) -> bool:
    """True if the normalised strings are equal (SQuAD exact match)."""
    return normalize_answer(prediction) == normalize_answer(gold)


_ADVERSARIAL_PHRASES = ("no information available", "not mentioned")


def locomo_qa_score(prediction: str, gold: Optional[str], category: int, *, stem: bool = True) -> float:
    """Score one LoCoMo answer with the rule of its question ``category``.

    * 1 (multi-hop): :func:`multi_answer_f1`;
    * 2 (temporal), 3 (open-domain; gold cut at the first ``;``), 4 (single-hop): :func:`token_f1`;
    * 5 (adversarial): 1.0 if the prediction says "no information available" or
      "not mentioned", else 0.0 (``gold`` is ignored).

    Raises ValueError for another category, or a missing gold for categories 1-4.
    """
    if category == 5:
        low = str(prediction).lower()
        return 1.0 if any(p in low for p in _ADVERSARIAL_PHRASES) else 0.0
    if category not in (1, 2, 3, 4):
        raise ValueError(f"unknown LoCoMo question category {category!r}; expected 1-5")
    if gold is None:
        raise ValueError(f"LoCoMo category {category} question needs a gold answer")
    gold = str(gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return multi_answer_f1(prediction, gold, stem=stem)
    return token_f1(prediction, gold, stem=stem)


# ----------------------------------------------------------------------------- HaluMem


def _check_score(s: Optional[int], what: str, i: int) -> None:
    if s is not None and s not in (0, 1, 2):
        raise ValueError(f"{what}[{i}] = {s!r}; judge scores must be 0, 1, 2 or None")


def _div(a: float, b: float) -> float:
    return a / b if b else float("nan")


@dataclass(frozen=True)
class IntegrityScores:
    """Memory integrity (recall) over gold memory points.

    recall: share of non-interference points scored 2 (HaluMem ``recall``).
    mean_score: mean of score/2 over non-interference points (partial credit for 1).
    weighted_recall: sum(score/2 * importance) / sum(importance) (HaluMem ``weighted_recall``).
    interference_accuracy: share of interference points scored 0 (not stored).
    ``*_valid`` variants leave out items whose score is None; "all" counts them as 0
    (and, for interference, as not-0). Ratios with an empty denominator are NaN.
    """

    recall: float
    recall_valid: float
    mean_score: float
    mean_score_valid: float
    weighted_recall: float
    weighted_recall_valid: float
    interference_accuracy: float
    interference_accuracy_valid: float
    n: int
    n_valid: int
    n_interference: int
    n_interference_valid: int

    def as_dict(self) -> dict:
        return asdict(self)


def memory_integrity(
    scores: Sequence[Optional[int]],
    *,
    importance: Optional[Sequence[float]] = None,
    interference: Optional[Sequence[bool]] = None,
) -> IntegrityScores:
    """Memory integrity from per-gold-point judge scores.

    Args:
        scores: one per gold memory point: 0/1/2, or None (judge failed).
        importance: HaluMem ``importance`` per point (default 1.0 each).
        interference: True where HaluMem ``memory_source == "interference"``.

    Raises ValueError on length mismatch or a score outside {0, 1, 2, None}.
    """
    n_all = len(scores)
    imp = list(importance) if importance is not None else [1.0] * n_all
    intf = list(interference) if interference is not None else [False] * n_all
    if len(imp) != n_all or len(intf) != n_all:
        raise ValueError(f"lengths differ: scores {n_all}, importance {len(imp)}, interference {len(intf)}")
    full = partial = w_score = w_all = w_valid = 0.0
    n = n_valid = n_i = n_i_valid = 0
    i_zero = 0
    for i, (s, w, is_i) in enumerate(zip(scores, imp, intf)):
        _check_score(s, "scores", i)
        if is_i:
            n_i += 1
            if s is not None:
                n_i_valid += 1
                i_zero += s == 0
            continue
        n += 1
        w_all += w
        if s is None:
            continue
        n_valid += 1
        w_valid += w
        full += s == 2
        partial += s / 2
        w_score += s / 2 * w
    return IntegrityScores(
        recall=_div(full, n), recall_valid=_div(full, n_valid),
        mean_score=_div(partial, n), mean_score_valid=_div(partial, n_valid),
        weighted_recall=_div(w_score, w_all), weighted_recall_valid=_div(w_score, w_valid),
        interference_accuracy=_div(i_zero, n_i), interference_accuracy_valid=_div(i_zero, n_i_valid),
        n=n, n_valid=n_valid, n_interference=n_i, n_interference_valid=n_i_valid,
    )


@dataclass(frozen=True)
class AccuracyScores:
    """Memory accuracy (precision) over extracted memory entries.

    accuracy: mean of score/2 over entries (HaluMem ``weighted_accuracy``).
    target_accuracy: the same over entries the judge found in the gold memories
    (HaluMem ``target_accuracy``); NaN when no entry is flagged or flags are not given.
    """

    accuracy: float
    accuracy_valid: float
    target_accuracy: float
    target_accuracy_valid: float
    n: int
    n_valid: int
    n_target: int

    def as_dict(self) -> dict:
        return asdict(self)


def memory_accuracy(
    scores: Sequence[Optional[int]], *, included_in_gold: Optional[Sequence[bool]] = None
) -> AccuracyScores:
    """Memory accuracy from per-entry judge scores (0/1/2 or None = judge failed).

    ``included_in_gold``: HaluMem's ``is_included_in_golden_memories`` per entry.
    Raises ValueError on length mismatch or an invalid score.
    """
    n = len(scores)
    inc = list(included_in_gold) if included_in_gold is not None else [False] * n
    if len(inc) != n:
        raise ValueError(f"lengths differ: scores {n}, included_in_gold {len(inc)}")
    tot = t_tot = 0.0
    n_valid = n_t = n_t_valid = 0
    for i, (s, t) in enumerate(zip(scores, inc)):
        _check_score(s, "scores", i)
        n_t += bool(t)
        if s is None:
            continue
        n_valid += 1
        tot += s / 2
        if t:
            n_t_valid += 1
            t_tot += s / 2
    return AccuracyScores(
        accuracy=_div(tot, n), accuracy_valid=_div(tot, n_valid),
        target_accuracy=_div(t_tot, n_t), target_accuracy_valid=_div(t_tot, n_t_valid),
        n=n, n_valid=n_valid, n_target=n_t,
    )


def extraction_f1(recall: float, precision: float) -> float:
    """Harmonic mean of recall and precision; 0.0 when both are 0, NaN if either is NaN.

    For HaluMem's memory-extraction F1 pass ``IntegrityScores.recall`` and
    ``AccuracyScores.target_accuracy`` (the "(all)" views). That pairing is what a
    third-party reading of a later ``eval/evaluation.py`` reports (``compute_f1(
    precision=target_accuracy(all), recall=recall(all))``); the commit checked here
    (6574e50) has no F1 line, so treat the pairing as unverified.
    """
    if math.isnan(recall) or math.isnan(precision):
        return float("nan")
    if recall + precision == 0:
        return 0.0
    return 2 * recall * precision / (recall + precision)


@dataclass(frozen=True)
class QAScores:
    """QA outcome shares. ``accuracy + hallucination_rate + omission_rate`` is 1 over the
    valid labels; the "(all)" fields divide by every question (invalid labels count in
    the denominator only)."""

    accuracy: float
    hallucination_rate: float
    omission_rate: float
    accuracy_valid: float
    hallucination_rate_valid: float
    omission_rate_valid: float
    n: int
    n_valid: int

    def as_dict(self) -> dict:
        return asdict(self)


_QA_LABELS = ("correct", "hallucination", "omission")


def _label_counts(labels: Sequence[Optional[str]], allowed: Sequence[str]) -> tuple[Counter, int, int]:
    """(counts of each allowed label, matched case-insensitively; total; valid total).
    Anything not in ``allowed`` (or None) counts as ``"invalid"``."""
    counts: Counter = Counter()
    for lab in labels:
        key = lab.strip().lower() if isinstance(lab, str) else None
        counts[key if key in allowed else "invalid"] += 1
    return counts, len(labels), len(labels) - counts["invalid"]


def qa_rates(labels: Sequence[Optional[str]]) -> QAScores:
    """QA accuracy / hallucination / omission rates from per-question judge labels.

    Labels are matched case-insensitively against ``correct``, ``hallucination``,
    ``omission`` (HaluMem writes "Correct", ...); anything else (or None) is invalid.
    """
    counts, n, v = _label_counts(labels, _QA_LABELS)
    return QAScores(
        accuracy=_div(counts["correct"], n),
        hallucination_rate=_div(counts["hallucination"], n),
        omission_rate=_div(counts["omission"], n),
        accuracy_valid=_div(counts["correct"], v),
        hallucination_rate_valid=_div(counts["hallucination"], v),
        omission_rate_valid=_div(counts["omission"], v),
        n=n, n_valid=v,
    )


@dataclass(frozen=True)
class UpdateScores:
    """Memory-update outcome shares over update memory points (HaluMem ``memory_update``).

    accuracy: share judged ``Correct`` (HaluMem ``correct_update_memory_ratio``), i.e.
    the retrieved memories state the updated fact; hallucination_rate / omission_rate /
    other_rate: shares judged ``Hallucination`` / ``Omission`` / ``Other``. The plain
    fields divide by every update point (invalid labels count in the denominator only,
    HaluMem "(all)"); ``*_valid`` by the valid labels. ``n_correct`` ... ``n_other`` are
    the label counts. Ratios with an empty denominator are NaN.
    """

    accuracy: float
    hallucination_rate: float
    omission_rate: float
    other_rate: float
    accuracy_valid: float
    hallucination_rate_valid: float
    omission_rate_valid: float
    other_rate_valid: float
    n: int
    n_valid: int
    n_correct: int
    n_hallucination: int
    n_omission: int
    n_other: int

    def as_dict(self) -> dict:
        return asdict(self)


_UPDATE_LABELS = ("correct", "hallucination", "omission", "other")


def update_rates(labels: Sequence[Optional[str]]) -> UpdateScores:
    """Memory-update rates from per-update-point judge labels.

    Labels are matched case-insensitively against ``correct``, ``hallucination``,
    ``omission``, ``other`` (HaluMem's update judge writes "Correct", ...); anything else
    (or None: judge output unusable) is invalid, as in HaluMem ``aggregate_eval_results``.
    """
    counts, n, v = _label_counts(labels, _UPDATE_LABELS)
    c, h, o, x = (counts[k] for k in _UPDATE_LABELS)
    return UpdateScores(
        accuracy=_div(c, n), hallucination_rate=_div(h, n), omission_rate=_div(o, n), other_rate=_div(x, n),
        accuracy_valid=_div(c, v), hallucination_rate_valid=_div(h, v), omission_rate_valid=_div(o, v),
        other_rate_valid=_div(x, v),
        n=n, n_valid=v, n_correct=c, n_hallucination=h, n_omission=o, n_other=x,
    )


# ----------------------------------------------------------------------------- proxy judge


def proxy_match(extracted: np.ndarray, gold: np.ndarray, *, lo: float, hi: float) -> np.ndarray:
    """Proxy integrity scores for gold memory points from embedding similarity.

    Args:
        extracted: float32 (m, d) embeddings of extracted memory entries (m may be 0).
        gold: float32 (g, d) embeddings of gold memory points.
        lo, hi: cosine thresholds, ``lo <= hi``; best cosine >= hi -> 2, >= lo -> 1, else 0.

    Returns:
        int8 array (g,) of 0/1/2. Zero vectors have cosine 0 with everything.

    Raises:
        ValueError: ``lo > hi``, non-2-D input, or mismatched d.
    """
    if lo > hi:
        raise ValueError(f"proxy_match needs lo <= hi, got lo={lo}, hi={hi}")
    extracted = np.asarray(extracted, dtype=np.float32)
    gold = np.asarray(gold, dtype=np.float32)
    if extracted.ndim == 2 and extracted.shape[0] == 0 and gold.ndim == 2:
        return np.zeros(gold.shape[0], dtype=np.int8)
    res = cross_reference_numpy(gold, extracted, tau=hi)
    best = res.max_sim
    out = np.zeros(best.shape[0], dtype=np.int8)
    out[best >= lo] = 1
    out[best >= hi] = 2
    return out
