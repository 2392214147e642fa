"""Cross-session consolidation of verified memory (beyond the paper; ProMem §3.5 stops at one session).

When a session's verified graph ``G_final`` is added to a user's lifelong memory, each new
entry (event or detail) is compared with the user's *active* entries:

1. exact duplicate (same normalised text, same subject) -> **merge** (no model call);
2. candidates: top-k active entries by cosine (the cross-reference kernel gates entries
   with no candidate above ``match_threshold``), restricted to the same *subject*;
3. NLI both ways, premise = old entry, hypothesis = new entry and the reverse:
   both entail -> **same fact** (merge: one entry, both sources kept in provenance);
   contradiction either way -> **supersede** (the older entry, by event time, becomes
   ``superseded`` with a validity end time; the newer one is active);
   otherwise -> **add** as unrelated.

Nothing is deleted. Re-adding an identical session (same session id and graph hash) is a
no-op, decided before any model call.

Subject-aware matching keeps third-party facts attributed: "Bob, Alice's friend, works at
Initech" has subject ``bob`` and is never compared with "Alice works at Acme" (subject
``alice``), so it cannot supersede it whatever the NLI says. Entries whose subject cannot be
read (pronoun openings) fall back to NLI on the full texts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional, Sequence

import numpy as np

from ..backends.base import EmbedBackend, NLIBackend, NLIResult
from ..kernels import cross_reference
from ..schema import MemoryGraph, Session
from .sqlite_store import Entry, Plan, SQLiteStore, text_key

logger = logging.getLogger(__name__)

# Relation nouns that extend a possessive subject ("Alice's friend Bob" is Bob, not Alice).
_RELATION_NOUNS = {
    "friend", "friends", "sister", "brother", "mother", "mom", "mum", "father", "dad", "wife", "husband",
    "partner", "son", "daughter", "kid", "kids", "child", "children", "cousin", "aunt", "uncle", "niece",
    "nephew", "grandmother", "grandma", "grandfather", "grandpa", "colleague", "coworker", "co-worker",
    "boss", "manager", "neighbor", "neighbour", "roommate", "girlfriend", "boyfriend", "fiance", "fiancee",
    "team", "dog", "cat", "pet", "parents", "family", "classmate", "mentor", "teacher", "doctor", "therapist",
}
_FIRST_PERSON = {"i", "me", "my", "we", "user", "the user", "user's", "the user's"}
_PRONOUNS = {"he", "she", "they", "it", "his", "her", "their", "its", "this", "that", "there"}
LARGE_KNN_WORK = 1 << 30  # n * m * d multiply-adds from which top-k goes to FAISS (kernels.knn)
_TOKEN = re.compile(r"[\w'’\-]+|[,;:()]", re.U)
_ARTICLES = {"a", "an", "the"}
_LEADING_ADVERBIAL = {
    "in", "on", "at", "after", "before", "during", "since", "until", "yesterday", "today", "tomorrow", "last",
    "recently", "when", "while", "then", "later", "earlier", "now", "currently", "as", "by", "from", "over",
}


def subject_of(text: str, user_name: Optional[str] = None) -> Optional[str]:
    """Normalised subject of a memory entry, read from its opening noun phrase.

    Rules (English, third-person entries as ProMem writes them, "Caroline attended ..."):
    the leading run of capitalised tokens, possessives and relation nouns after a
    possessive ("Alice's friend Bob" -> ``"alice's friend bob"``); a bare possessive
    attribute ("Alice's favourite colour ...") is the possessor (``"alice"``); a comma ends
    the subject ("Bob, Alice's friend, ..." -> ``"bob"``). ``user_name``, "I", "User" and
    "the user" map to ``"@user"``.

    Returns:
        The subject key, or None when the text opens with a pronoun or lowercase word.
    """
    toks = _TOKEN.findall(text.strip())
    if not toks:
        return None
    uname = (user_name or "").casefold().strip()
    first = toks[0].casefold().replace("’", "'")
    if first in _ARTICLES and len(toks) > 1 and toks[1].casefold() in ("user", "user's"):
        return "@user"
    if first in _FIRST_PERSON:
        return "@user"
    if first in _LEADING_ADVERBIAL:
        # "On 8 May 2023, Caroline went ..." -> read the subject after the first comma
        rest = text.split(",", 1)
        return subject_of(rest[1], user_name) if len(rest) == 2 else None
    if first in _PRONOUNS or not toks[0][:1].isupper():
        return None
    parts: list[str] = []
    prev_possessive = False
    for t in toks:
        tn = t.replace("’", "'")
        low = tn.casefold()
        if t in {",", ";", ":", "(", ")"}:
            break
        possessive = low.endswith("'s") or low.endswith("s'")
        if tn[:1].isupper() and not (parts and low in _ARTICLES):
            parts.append(low)
        elif prev_possessive and low in _RELATION_NOUNS:
            parts.append(low)
        else:
            break
        prev_possessive = possessive
    if not parts:
        return None
    # "Alice's" alone (attribute of Alice) -> Alice
    if len(parts) == 1 and (parts[0].endswith("'s") or parts[0].endswith("s'")):
        parts[0] = parts[0][:-2] if parts[0].endswith("'s") else parts[0][:-1]
    subj = " ".join(parts)
    if uname and (subj == uname or (parts[0] == uname and not any(x.endswith(("'s", "s'")) for x in parts))):
        return "@user"  # "Alice" or "Alice Smith" for user Alice
    return subj


def subjects_compatible(a: Optional[str], b: Optional[str]) -> bool:
    """Two entries may describe the same attribute only if their subjects agree (unknown = may)."""
    return a is None or b is None or a == b


def graph_hash(graph: MemoryGraph) -> str:
    """sha256 of the graph's content (events, details, relations; not its timing stats)."""
    payload = {
        "session_id": graph.session_id,
        "user_name": graph.user_name,
        "events": [[e.id, e.text, e.source_turn_ids, e.dates] for e in graph.events],
        "details": [[d.id, d.text, d.turn_id, d.event_ids] for d in graph.details],
        "relations": [[r.source, r.type, r.target] for r in graph.relations],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def _iso(x: Any) -> Optional[str]:
    if x is None:
        return None
    if isinstance(x, datetime):
        return x.isoformat()
    return str(x)


def _confidence(nli: Sequence[dict[str, Any]]) -> Optional[float]:
    """Highest entailment score among the entry's verification verdicts (§3.4), None if unverified."""
    scores = [float(v.get("score", 1.0)) for v in nli if v.get("label") == "entailment"]
    if scores:
        return max(scores)
    return 0.0 if nli else None


@dataclass
class Candidate:
    """A new entry to consolidate (before it has an id in the store)."""

    text: str
    kind: str
    session_id: Optional[str]
    graph_node_id: Optional[str]
    source_turn_ids: list[str]
    event_time: Optional[str]
    dates: list[str]
    nli: list[dict[str, Any]]
    confidence: Optional[float]
    metadata: dict[str, Any]
    subject: Optional[str]
    embedding: Optional[np.ndarray] = None


def graph_candidates(
    graph: MemoryGraph,
    session: Optional[Session] = None,
    include_details: bool = False,
    metadata: Optional[dict[str, Any]] = None,
) -> list[Candidate]:
    """Flatten a verified graph into entry candidates: its events, each with the texts of the
    details anchored to it (§3.5 detail anchoring; a detail anchored to none goes with the
    events whose source turns hold its turn) in ``metadata["details"]``; with
    ``include_details`` also each detail as an entry of its own (kind "detail", after the events).

    Details alone are phrases cut from a turn ("went", "support group", "sugary sodas" of
    "I don't like sugary sodas"): stored as memories they read as facts they are not, so by
    default they travel only with their events.

    Event time (absolute): the first resolved date of the event (``Event.dates``), else the
    grounding turn's ``timestamp``; a detail takes its turn's timestamp (from ``session``)
    or its first anchored event's time.
    """
    meta = {**(metadata or {}), "user_name": graph.user_name}
    turn_time: dict[str, Optional[str]] = {}
    if session is not None:
        turn_time = {t.turn_id: _iso(t.timestamp) for t in session.turns}
    out: list[Candidate] = []
    ev_time: dict[str, Optional[str]] = {}
    anchored: dict[str, list[str]] = {}
    for d in graph.details:
        if not d.text.strip():
            continue
        # a detail DA left unanchored goes with the events that cite its turn, if any
        for x in d.event_ids or [e.id for e in graph.events if d.turn_id in e.source_turn_ids]:
            anchored.setdefault(x, []).append(d.text)
    for e in graph.events:
        if not e.text.strip():
            logger.info("session %r: event %s has no text; skipped", graph.session_id, e.id)
            continue
        t = e.dates[0] if e.dates else _iso(e.timestamp)
        if t is None:
            t = next((turn_time[x] for x in e.source_turn_ids if turn_time.get(x)), None)
        ev_time[e.id] = t
        nli = [v.model_dump() for v in e.nli]
        out.append(Candidate(
            text=e.text, kind="event", session_id=graph.session_id, graph_node_id=e.id,
            source_turn_ids=list(e.source_turn_ids), event_time=t, dates=list(e.dates), nli=nli,
            confidence=_confidence(nli),
            metadata={**meta, "origin": e.origin, "verification": e.status, "details": anchored.get(e.id, [])},
            subject=subject_of(e.text, graph.user_name),
        ))
    if include_details:
        for d in graph.details:
            if not d.text.strip():
                logger.info("session %r: detail %s has no text; skipped", graph.session_id, d.id)
                continue
            t = turn_time.get(d.turn_id) or next((ev_time[x] for x in d.event_ids if ev_time.get(x)), None)
            out.append(Candidate(
                text=d.text, kind="detail", session_id=graph.session_id, graph_node_id=d.id,
                source_turn_ids=[d.turn_id], event_time=t, dates=[], nli=[], confidence=None,
                metadata={**meta, "event_ids": list(d.event_ids)}, subject=subject_of(d.text, graph.user_name),
            ))
    return out


def topk_cosine(queries: np.ndarray, keys: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` keys per query by inner product (= cosine: rows are L2-normalised).

    NumPy GEMM + partial sort; from ``LARGE_KNN_WORK`` multiply-adds on,
    :func:`promem_fast.kernels.knn.knn` (FAISS, GPU when present).

    Args:
        queries: float32 (n, d). keys: float32 (m, d), both with unit-norm rows. k: >= 1.
    Returns:
        (scores float32 (n, k'), indices int64 (n, k')) with k' = min(k, m), best first.
    """
    n, m = queries.shape[0], keys.shape[0]
    kk = min(k, m)
    if n == 0 or kk == 0:
        return np.zeros((n, 0), np.float32), np.zeros((n, 0), np.int64)
    if n * m * keys.shape[1] >= LARGE_KNN_WORK:
        from ..kernels.knn import knn  # FAISS (GPU when present) for large problems

        scores, idx = knn(queries, keys, kk)
    else:  # rows are unit-norm already: one GEMM and a partial sort
        s = queries.astype(np.float32, copy=False) @ keys.astype(np.float32, copy=False).T
        idx = np.argpartition(-s, kk - 1, axis=1)[:, :kk] if kk < m else np.tile(np.arange(m), (n, 1))
        part = np.take_along_axis(s, idx, axis=1)
        order = np.argsort(-part, axis=1, kind="stable")
        scores, idx = np.take_along_axis(part, order, axis=1), np.take_along_axis(idx, order, axis=1)
    return np.asarray(scores, np.float32), np.asarray(idx, np.int64)


@dataclass
class Outcome:
    """Consolidation result of one candidate (Mem0-shaped in :meth:`to_result`)."""

    event: str  # ADD | NONE (merged into an existing entry) | UPDATE (supersedes an old entry)
    entry_id: str
    text: str
    status: str
    previous_memory: Optional[str] = None
    related_ids: list[str] = field(default_factory=list)
    kind: str = "event"

    def to_result(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.entry_id, "memory": self.text, "event": self.event, "status": self.status}
        if self.previous_memory is not None:
            d["previous_memory"] = self.previous_memory
        if self.related_ids:
            d["related_ids"] = self.related_ids
        return d


def _label(res: NLIResult) -> str:
    return str(res.label).lower()


def _earlier(a: Optional[str], b: Optional[str]) -> bool:
    """True if event time ``a`` is strictly before ``b`` (unknown times: the new entry is newer)."""
    if a is None or b is None:
        return False
    try:
        from dateutil import parser as dp

        da, db = dp.isoparse(a), dp.isoparse(b)
        if (da.tzinfo is None) != (db.tzinfo is None):
            da, db = da.replace(tzinfo=None), db.replace(tzinfo=None)
        return da < db
    except (ValueError, OverflowError):
        return a < b


class Consolidator:
    """Plans how a session's entries join a user's memory (see module docstring).

    Args:
        store: the SQLiteStore.
        nli: NLIBackend (``classify([(premise, hypothesis)]) -> [NLIResult]``).
        embed: EmbedBackend (``encode(texts) -> float32 (n, dim)`` L2-normalised).
        top_k: candidates per new entry (default 5).
        match_threshold: minimum cosine for a candidate to reach NLI (default 0.5).
    """

    def __init__(self, store: SQLiteStore, nli: NLIBackend, embed: EmbedBackend,
                 top_k: int = 5, match_threshold: float = 0.5):
        self.store = store
        self.nli = nli
        self.embed = embed
        self.top_k = top_k
        self.match_threshold = match_threshold

    async def plan(
        self,
        user_id: str,
        cands: list[Candidate],
        relations: Sequence[tuple[str, str, str, Optional[str]]] = (),
        session_row: Optional[dict[str, Any]] = None,
    ) -> tuple[int, Plan, list[Outcome]]:
        """Compute the writes for ``cands`` against the user's current active entries.

        Returns (user version planned against, Plan, one Outcome per candidate).
        ``relations`` use graph node ids; they are mapped to entry ids here.
        """
        version = self.store.user_version(user_id)
        plan = Plan(session=session_row)
        outcomes: list[Outcome] = []
        if cands:
            missing = [c for c in cands if c.embedding is None]
            if missing:
                emb = await self.embed.encode([c.text for c in missing])
                for c, v in zip(missing, np.asarray(emb, dtype=np.float32)):
                    c.embedding = v
        rowids, active = self.store.active_matrix(user_id)
        key_index: dict[tuple[str, Optional[str]], Entry] = {}
        for e in self.store.active_by_keys(user_id, [text_key(c.text) for c in cands]):
            key_index.setdefault((text_key(e.text), e.subject), e)

        # 1. exact duplicates, 2. candidates by cosine (top-k above the threshold)
        pending: list[tuple[int, list[Entry]]] = []
        decided: dict[int, tuple[str, list[Entry]]] = {}
        want: dict[int, list[tuple[float, int]]] = {}
        if cands and len(rowids):
            q = np.stack([c.embedding for c in cands]).astype(np.float32)
            gate = cross_reference(q, active, self.match_threshold)
            scores, idx = topk_cosine(q, active, self.top_k)
        for i, c in enumerate(cands):
            dup = key_index.get((text_key(c.text), c.subject))
            if dup is not None:
                decided[i] = ("merge", [dup])
            elif len(rowids) and bool(gate.matched[i]):
                want[i] = [(float(s), int(rowids[j])) for s, j in zip(scores[i], idx[i])
                           if j >= 0 and s >= self.match_threshold]
        by_row = self.store.by_rowids(user_id, sorted({r for v in want.values() for _, r in v}))
        for i, hits in want.items():
            olds = [by_row[r] for _, r in hits
                    if r in by_row and subjects_compatible(by_row[r].subject, cands[i].subject)]
            if olds:
                pending.append((i, olds))

        # 3. NLI both ways, one batched call
        pairs: list[tuple[str, str]] = []
        for i, olds in pending:
            for e in olds:
                pairs += [(e.text, cands[i].text), (cands[i].text, e.text)]
        verdicts = await self.nli.classify(pairs) if pairs else []
        p = 0
        evidence: dict[int, list[dict[str, Any]]] = {}
        for i, olds in pending:
            same, conflict = [], []
            for e in olds:
                fwd, bwd = verdicts[p], verdicts[p + 1]
                p += 2
                lf, lb = _label(fwd), _label(bwd)
                evidence.setdefault(i, []).append(
                    {"stage": "consolidation", "against": e.id, "forward": lf, "backward": lb,
                     "forward_score": fwd.score, "backward_score": bwd.score}
                )
                if lf == "entailment" and lb == "entailment":
                    same.append(e)
                elif "contradiction" in (lf, lb):
                    conflict.append(e)
            if same:
                decided[i] = ("merge", same[:1])
            elif conflict:
                decided[i] = ("conflict", conflict)

        node_to_entry: dict[str, str] = {}
        superseded_now: dict[str, str] = {}
        in_plan: dict[tuple[str, Optional[str]], Entry] = {}  # entries this plan inserts, by text key
        for i, c in enumerate(cands):
            action, olds = decided.get(i, ("add", []))
            twin = in_plan.get((text_key(c.text), c.subject))
            if twin is not None and action != "merge":  # the same text twice in one graph (event + detail)
                action, olds = "merge", [twin]
            ev = evidence.get(i, [])
            hist_common = {"session_id": c.session_id}
            if action == "merge":
                target = olds[0]
                prov = {"session_id": c.session_id, "graph_node_id": c.graph_node_id, "text": c.text,
                        "source_turn_ids": c.source_turn_ids, "nli": c.nli,
                        "details": list(c.metadata.get("details") or [])}
                plan.merges.append((target.id, prov, ev, c.confidence))
                plan.history.append({"memory_id": target.id, "event": "MERGE", "old_memory": target.text,
                                     "new_memory": c.text, **hist_common,
                                     "detail": {"graph_node_id": c.graph_node_id, "evidence": ev}})
                if c.graph_node_id:
                    node_to_entry[c.graph_node_id] = target.id
                status = "superseded" if target.id in superseded_now else target.status
                outcomes.append(Outcome("NONE", target.id, target.text, status, kind=c.kind))
                continue
            new = Entry(
                id=uuid.uuid4().hex, user_id=user_id, text=c.text, kind=c.kind, session_id=c.session_id,
                graph_node_id=c.graph_node_id, subject=c.subject, source_turn_ids=c.source_turn_ids,
                event_time=c.event_time, dates=c.dates, status="active", valid_from=c.event_time,
                nli=c.nli + ev, confidence=c.confidence, metadata=c.metadata, embedding=c.embedding,
            )
            if c.graph_node_id:
                node_to_entry[c.graph_node_id] = new.id
            in_plan.setdefault((text_key(c.text), c.subject), new)
            if action == "add":
                plan.inserts.append(new)
                plan.history.append({"memory_id": new.id, "event": "ADD", "old_memory": None, "new_memory": c.text,
                                     **hist_common, "detail": {"graph_node_id": c.graph_node_id}})
                outcomes.append(Outcome("ADD", new.id, c.text, "active", kind=c.kind))
                continue
            # conflict: the later fact (by event time) wins; ties and unknown times -> the new one
            newer_olds = [o for o in olds if _earlier(c.event_time, o.event_time)]
            if newer_olds:  # back-filled older session: the new entry is already outdated
                winner = newer_olds[0]
                new.status, new.superseded_by = "superseded", winner.id
                new.valid_to = winner.valid_from or winner.event_time or winner.created_at
                plan.inserts.append(new)
                plan.history.append({"memory_id": new.id, "event": "ADD", "old_memory": None, "new_memory": c.text,
                                     **hist_common, "detail": {"superseded_by": winner.id, "evidence": ev}})
                plan.history.append({"memory_id": new.id, "event": "SUPERSEDED", "old_memory": c.text,
                                     "new_memory": winner.text, "related_id": winner.id, **hist_common})
                outcomes.append(Outcome("ADD", new.id, c.text, "superseded", related_ids=[winner.id], kind=c.kind))
                continue
            new.supersedes = olds[0].id
            plan.inserts.append(new)
            valid_to = c.event_time
            for o in olds:
                if o.id in superseded_now:
                    continue
                superseded_now[o.id] = new.id
                plan.supersede.append((o.id, new.id, valid_to))
                plan.history.append({"memory_id": o.id, "event": "SUPERSEDED", "old_memory": o.text,
                                     "new_memory": c.text, "related_id": new.id, **hist_common,
                                     "detail": {"valid_to": valid_to, "evidence": ev}})
            plan.history.append({"memory_id": new.id, "event": "UPDATE", "old_memory": olds[0].text,
                                 "new_memory": c.text, "related_id": olds[0].id, **hist_common,
                                 "detail": {"supersedes": [o.id for o in olds], "evidence": ev}})
            outcomes.append(Outcome("UPDATE", new.id, c.text, "active", previous_memory=olds[0].text,
                                    related_ids=[o.id for o in olds], kind=c.kind))

        for src, typ, tgt, probe in relations:
            if src in node_to_entry and tgt in node_to_entry:
                plan.relations.append((node_to_entry[src], typ, node_to_entry[tgt], probe))
        return version, plan, outcomes

