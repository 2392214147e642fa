"""The precision instrument: judge-free measures of what a run stored, and reviewed precision.

Judge-free, per run and per variant (no LLM judge is asked anything):

* ``memories_per_session``: stored memory entries (graph events) per session;
* ``precision@tau``: share of memories whose MiniLM cosine to some gold point of *their*
  session is >= tau; ``recall@tau``: share of gold points with a memory of their session at
  >= tau (the measure of ``../shared/PEERS.md``). Gold points: HaluMem ``memory_points``
  without interference; LoCoMo the ``session_N_observation`` facts of the session's user
  speaker (with both speakers extracted, the two extractions together cover both
  speakers' observations);
* ``near_duplicates``: memories at cosine >= 0.9 with an earlier memory of the same session;
* ``assistant_copies``: memories whose word trigrams are >= 50 % contained in the session's
  assistant (other-speaker) turns and at least as much as in its user turns;
* ``tokens_per_session`` (prompt + completion) and ``seconds_per_session`` (extraction wall time).

Reviewed precision: a careful reader labels each memory ``correct`` | ``filler`` | ``wrong``
| ``duplicate`` (rubric in ``docs/evaluation.md``) in a JSON Lines file of
``{"session_id", "memory", "label"}``; :func:`score_labels` scores a variant's memories from
it. :func:`write_review_file` writes the blind file to label: the memories of all variants of
a run, each (session, memory) once, shuffled, with no variant named.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..schema import MemoryGraph, Session

LABELS = ("correct", "filler", "wrong", "duplicate")
TAUS = (0.5, 0.6)
DUP_TAU = 0.9
COPY_SHARE = 0.5

_WORD = re.compile(r"\w+", re.U)


@dataclass
class SessionMemories:
    """What one extraction stored, with what it is measured against.

    memories: stored entry texts (graph events), output order. gold: reference points.
    user_turns / assistant_turns: turn contents by role (LoCoMo: the other speaker is the
    assistant). tokens: prompt + completion tokens. seconds: extraction wall time.
    """

    session_id: str
    memories: list[str]
    gold: list[str] = field(default_factory=list)
    user_turns: list[str] = field(default_factory=list)
    assistant_turns: list[str] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0


def session_memories(graph: Optional[MemoryGraph], session: Session, gold: Sequence[str],
                     seconds: float = 0.0) -> SessionMemories:
    """:class:`SessionMemories` of one extracted session (``graph`` None = failed: no memories)."""
    mems = [e.text for e in graph.events] if graph is not None else []
    tokens = graph.stats.prompt_tokens + graph.stats.completion_tokens if graph is not None else 0
    return SessionMemories(
        session.session_id, mems, [str(g) for g in gold],
        [t.content for t in session.turns if t.role == "user"],
        [t.content for t in session.turns if t.role != "user"], tokens, seconds)


def halumem_gold(session: Session) -> list[str]:
    """HaluMem gold points of a session: ``memory_points[].memory_content`` whose
    ``memory_source`` is not ``interference``."""
    pts = session.metadata.get("memory_points") or []
    return [str(p.get("memory_content", "")) for p in pts
            if isinstance(p, dict) and p.get("memory_source") != "interference"]


def locomo_gold(session: Session) -> list[str]:
    """LoCoMo gold points of a session: its user speaker's ``observation`` facts."""
    obs = session.metadata.get("observation")
    speaker = (session.metadata.get("speakers") or {}).get("user")
    if not isinstance(obs, dict) or not speaker:
        return []
    return [str(item[0]) for item in obs.get(speaker) or []
            if isinstance(item, (list, tuple)) and item and isinstance(item[0], str)]


def _trigrams(text: str) -> set[tuple[str, ...]]:
    w = _WORD.findall(text.lower())
    return {tuple(w[i:i + 3]) for i in range(len(w) - 2)}


def containment(text: str, source_trigrams: set) -> float:
    """Share of the word trigrams of ``text`` found in ``source_trigrams`` (0 for < 3 words)."""
    t = _trigrams(text)
    return len(t & source_trigrams) / len(t) if t else 0.0


def assistant_copy_flags(memories: Sequence[str], user_turns: Sequence[str],
                         assistant_turns: Sequence[str], share: float = COPY_SHARE) -> list[bool]:
    """Per memory: trigram containment over the assistant turns >= ``share`` and >= the
    containment over the user turns (a copy of what the other side said)."""
    a = set().union(*(_trigrams(t) for t in assistant_turns)) if assistant_turns else set()
    u = set().union(*(_trigrams(t) for t in user_turns)) if user_turns else set()
    out = []
    for m in memories:
        ca = containment(m, a)
        out.append(ca >= share and ca >= containment(m, u))
    return out


def duplicate_flags(vecs: np.ndarray, tau: float = DUP_TAU) -> list[bool]:
    """Per row of L2-normalised ``vecs`` (float32, (n, d)): cosine >= ``tau`` with an earlier row."""
    if len(vecs) < 2:
        return [False] * len(vecs)
    sim = vecs @ vecs.T
    return [bool(i and (sim[i, :i] >= tau).any()) for i in range(len(vecs))]


async def judge_free(sessions: Sequence[SessionMemories], embed: Any,
                     taus: Sequence[float] = TAUS) -> dict[str, Any]:
    """Judge-free measures of one variant over ``sessions`` (module docstring).

    Args:
        sessions: one :class:`SessionMemories` per extracted session.
        embed: an embedder with ``async encode(list[str]) -> np.ndarray`` (L2-normalised
            float32 rows, e.g. the pipeline's MiniLM).
        taus: cosine thresholds for precision / recall.

    Returns:
        ``{"sessions", "memories", "memories_per_session", "gold_points",
        "precision@T", "recall@T" (T as "0.5"...), "near_duplicates", "assistant_copies",
        "tokens_per_session", "seconds_per_session", "per_memory": [{session_id, memory,
        max_gold_cos, near_duplicate, assistant_copy}], "per_gold": [{session_id, gold,
        max_memory_cos, best_memory}]}``; ratios are None without a denominator. ``per_gold``
        names the gold points a variant missed (``max_memory_cos`` below tau; None with no
        memories in the session), which recall alone does not.
    """
    n_mem = n_gold = dups = copies = 0
    prec_hits = {t: 0 for t in taus}
    rec_hits = {t: 0 for t in taus}
    per_memory: list[dict[str, Any]] = []
    per_gold: list[dict[str, Any]] = []
    for s in sessions:
        n_mem += len(s.memories)
        n_gold += len(s.gold)
        if not s.memories:
            per_gold += [{"session_id": s.session_id, "gold": g, "max_memory_cos": None, "best_memory": None}
                         for g in s.gold]
            continue
        mv = np.asarray(await embed.encode(list(s.memories)), dtype=np.float32)
        dflags = duplicate_flags(mv)
        cflags = assistant_copy_flags(s.memories, s.user_turns, s.assistant_turns)
        dups += sum(dflags)
        copies += sum(cflags)
        best = np.full(len(s.memories), -1.0, dtype=np.float32)
        if s.gold:
            gv = np.asarray(await embed.encode(list(s.gold)), dtype=np.float32)
            sim = mv @ gv.T
            best = sim.max(axis=1)
            for t in taus:
                prec_hits[t] += int((best >= t).sum())
                rec_hits[t] += int((sim.max(axis=0) >= t).sum())
            for j, g in enumerate(s.gold):
                i = int(sim[:, j].argmax())
                per_gold.append({"session_id": s.session_id, "gold": g,
                                 "max_memory_cos": round(float(sim[i, j]), 4), "best_memory": s.memories[i]})
        for m, b, d, c in zip(s.memories, best, dflags, cflags):
            per_memory.append({"session_id": s.session_id, "memory": m, "max_gold_cos": round(float(b), 4),
                               "near_duplicate": d, "assistant_copy": c})
    k = len(sessions)
    out: dict[str, Any] = {"sessions": k, "memories": n_mem,
                           "memories_per_session": n_mem / k if k else None, "gold_points": n_gold}
    for t in taus:
        out[f"precision@{t:g}"] = prec_hits[t] / n_mem if n_mem else None
        out[f"recall@{t:g}"] = rec_hits[t] / n_gold if n_gold else None
    out.update(near_duplicates=dups, assistant_copies=copies,
               tokens_per_session=sum(s.tokens for s in sessions) / k if k else None,
               seconds_per_session=sum(s.seconds for s in sessions) / k if k else None,
               per_memory=per_memory, per_gold=per_gold)
    return out


def label_key(session_id: str, memory: str) -> tuple[str, str]:
    """The key of a labelled memory: (session id, memory text with its whitespace collapsed,
    case-folded), so that a label holds across runs that wrote the same text."""
    return str(session_id), " ".join(str(memory).split()).casefold()


class Labels(dict):
    """(session id, normalised memory) -> label, with ``facts``: the same keys -> the
    reviewer's name of the fact a correct memory states (optional ``"fact"`` field), so that
    one variant's second memory of a fact counts as a duplicate (:func:`score_labels`)
    while the reviewer stays blind to which variant wrote which memory."""

    def __init__(self, *args: Any, **kw: Any):
        super().__init__(*args, **kw)
        self.facts: dict[tuple[str, str], str] = {}


def load_labels(path: Path) -> Labels:
    """Read a labels file: JSON Lines of ``{"session_id", "memory", "label"[, "fact"]}``.

    Returns :class:`Labels`: (session id, whitespace-normalised case-folded memory) -> label,
    and ``.facts`` for the lines with a non-empty ``fact``.

    Raises:
        ValueError: a line is not a JSON object, lacks a field, has a label outside
            :data:`LABELS`, or labels one memory twice differently; the message names the
            file, line and field.
    """
    from ..io._common import iter_jsonl

    out = Labels()
    for n, row in iter_jsonl(Path(path)):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: line {n}: expected a JSON object")
        for f in ("session_id", "memory", "label"):
            if not isinstance(row.get(f), str) or not row[f].strip():
                raise ValueError(f"{path}: line {n}: field {f!r} missing or empty")
        label = row["label"].strip().lower()
        if label not in LABELS:
            raise ValueError(f"{path}: line {n}: field 'label' is {row['label']!r}; expected one of {', '.join(LABELS)}")
        k = label_key(row["session_id"], row["memory"])
        if out.get(k, label) != label:
            raise ValueError(f"{path}: line {n}: memory labelled {out[k]!r} before and {label!r} here")
        out[k] = label
        fact = row.get("fact")
        if isinstance(fact, str) and fact.strip():
            out.facts[k] = " ".join(fact.split()).casefold()
    return out


def score_labels(sessions: Sequence[SessionMemories], labels: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """Reviewed precision of one variant from ``labels`` (:func:`load_labels`).

    Returns ``{"labelled", "unlabelled", "correct", "filler", "wrong", "duplicate",
    "reviewed_precision" (correct / labelled), "correct_per_session"}``. A memory text that
    occurs twice in one session is one memory labelled once: its second occurrence counts
    as ``duplicate`` whatever its label; so does a correct memory whose reviewer's fact
    (``labels.facts``) an earlier memory of the same session and variant already stated.
    """
    facts = getattr(labels, "facts", {})
    counts = {lab: 0 for lab in LABELS}
    unlabelled = 0
    for s in sessions:
        seen: set[tuple[str, str]] = set()
        stated: set[str] = set()
        for m in s.memories:
            k = label_key(s.session_id, m)
            if k in seen:
                counts["duplicate"] += 1
                continue
            seen.add(k)
            lab = labels.get(k)
            if lab is None:
                unlabelled += 1
                continue
            fact = facts.get(k)
            if lab == "correct" and fact is not None:
                if fact in stated:
                    lab = "duplicate"
                stated.add(fact)
            counts[lab] += 1
    n = sum(counts.values())
    return {"labelled": n, "unlabelled": unlabelled, **counts,
            "reviewed_precision": counts["correct"] / n if n else None,
            "correct_per_session": counts["correct"] / len(sessions) if sessions else None}


def write_review_file(by_variant: Mapping[str, Sequence[SessionMemories]], path: Path,
                      seed: int = 0, existing: Optional[Mapping[tuple[str, str], str]] = None) -> int:
    """Write the blind labelling file: every (session, memory) of every variant once,
    shuffled (``seed``), as ``{"session_id", "memory", "label": ""}`` lines; memories already
    in ``existing`` labels are left out. Returns the number of lines written."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for sessions in by_variant.values():
        for s in sessions:
            for m in s.memories:
                k = label_key(s.session_id, m)
                if k not in rows and not (existing and k in existing):
                    rows[k] = {"session_id": s.session_id, "memory": m, "label": ""}
    items = sorted(rows.values(), key=lambda r: (r["session_id"], r["memory"]))
    random.Random(seed).shuffle(items)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), encoding="utf-8")
    return len(items)


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def markdown_table(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """A markdown table of (variant label, :func:`judge_free` result with optional
    ``"reviewed"``) rows: the judge-free measures and, where labelled, reviewed precision."""
    head = ("| Method | memories / session | P@0.5 | P@0.6 | R@0.5 | R@0.6 | near-dup. | assistant copies "
            "| reviewed P | correct / session | tokens / session | s / session |")
    lines = [head, "|" + "---|" * 12]
    for label, r in rows:
        rv = r.get("reviewed") or {}
        mps = r.get("memories_per_session")
        tps = r.get("tokens_per_session")
        sps = r.get("seconds_per_session")
        cps = rv.get("correct_per_session")
        lines.append(
            f"| {label} | {'-' if mps is None else f'{mps:.1f}'} | {_pct(r.get('precision@0.5'))} "
            f"| {_pct(r.get('precision@0.6'))} | {_pct(r.get('recall@0.5'))} | {_pct(r.get('recall@0.6'))} "
            f"| {r.get('near_duplicates', 0)} | {r.get('assistant_copies', 0)} "
            f"| {_pct(rv.get('reviewed_precision')) if rv else '-'} "
            f"| {'-' if cps is None else f'{cps:.1f}'} "
            f"| {'-' if tps is None else f'{tps:,.0f}'} | {'-' if sps is None else f'{sps:.0f}'} |")
    return "\n".join(lines)
