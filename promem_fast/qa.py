"""Retrieval + QA over verified memory (ProMem §4.1: top-20 entries, timestamps appended).

Retrieval units are the graph's events; each carries its date, its anchored details and
the verified relations it takes part in, so one retrieved unit answers "when", "what
exactly" and "why" questions.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .backends.base import LLMRequest
from .context import Services
from .schema import MemoryGraph

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
}

_QA_SYSTEM = (
    "You answer questions about a person using only the memory entries given. "
    "Dates in brackets tell when each entry happened. If the memories do not contain the "
    "answer, say \"I don't know\". Answer briefly, in the question's language."
)


_SENTENCE_END = re.compile(r"[.!?。！？…][\"'”’)\]]*$")


@dataclass
class MemoryUnit:
    """One retrievable unit: an event with its date, details and relations."""

    session_id: str
    event_id: str
    text: str
    when: Optional[str] = None

    def render(self) -> str:
        return f"[{self.when}] {self.text}" if self.when else self.text


@dataclass
class QAResult:
    question: str
    answer: str
    retrieved: list[MemoryUnit] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0


def memory_units(graphs: Sequence[MemoryGraph]) -> list[MemoryUnit]:
    """Flatten graphs into retrieval units (events + anchored details + relation notes)."""
    units: list[MemoryUnit] = []
    for g in graphs:
        text_of = {e.id: e.text for e in g.events}
        details: dict[str, list[str]] = {}
        for d in g.details:
            for eid in d.event_ids:
                got = details.setdefault(eid, [])
                # the same phrase from two turns of one event is said once
                if d.text.casefold() not in (x.casefold() for x in got):
                    got.append(d.text)
        rels: dict[str, list[str]] = {}
        for r in g.relations:
            if r.source in text_of and r.target in text_of:
                note = f"{r.type}: '{text_of[r.source]}' -> '{text_of[r.target]}'"
                rels.setdefault(r.source, []).append(note)
                rels.setdefault(r.target, []).append(note)
        for e in g.events:
            text = e.text.rstrip()
            if (details.get(e.id) or rels.get(e.id)) and not _SENTENCE_END.search(text):
                text += "."  # so "Details:" does not read as part of the event's last clause
            if details.get(e.id):
                text += " Details: " + "; ".join(details[e.id]) + "."
            if rels.get(e.id):
                text += " Related: " + " | ".join(rels[e.id]) + "."
            when = e.dates[0] if e.dates else (e.timestamp.date().isoformat() if e.timestamp else None)
            units.append(MemoryUnit(g.session_id, e.id, text, when))
    return units


async def retrieve(
    question: str, units: Sequence[MemoryUnit], services: Services, top_k: int = 20
) -> tuple[list[MemoryUnit], list[float]]:
    """Top-k units by cosine of embeddings (FAISS inner product on L2-normalised vectors).

    Returns (units, scores) best first; fewer than top_k when memory is smaller.
    """
    if not units:
        return [], []
    from .kernels.knn import knn

    vecs = await services.embed.encode([u.render() for u in units] + [question])
    base, q = vecs[:-1], vecs[-1:]
    scores, ids = knn(q, base, top_k)
    out = [(units[int(i)], float(s)) for s, i in zip(scores[0], ids[0]) if i >= 0]
    return [u for u, _ in out], [s for _, s in out]


async def answer(
    question: str, graphs: Sequence[MemoryGraph], services: Services, top_k: int = 20
) -> QAResult:
    """Answer ``question`` from the top-k memory units (§4.1). Raises ValueError on an empty question."""
    if not question or not question.strip():
        raise ValueError("question is empty")
    units = memory_units(graphs)
    hits, scores = await retrieve(question, units, services, top_k)
    # chronological order reads better for "when/before/after" questions
    order = sorted(range(len(hits)), key=lambda i: (hits[i].when or "", i))
    context = "\n".join(f"- {hits[i].render()}" for i in order) or "- (no memories)"
    req = LLMRequest(
        messages=[
            {"role": "system", "content": _QA_SYSTEM},
            {"role": "user", "content": f"Memories:\n{context}\n\nQuestion: {question}"},
        ],
        json_schema=ANSWER_SCHEMA,
        max_tokens=128,
        stage="qa",
    )
    from .structured import StructuredOutputError, parse_json

    resp = (await services.llm.generate([req]))[0]
    try:
        text = parse_json(resp.text, ANSWER_SCHEMA, truncated=resp.finish_reason == "length")["answer"]
    except StructuredOutputError as e:  # never show the user a JSON fragment
        logging.getLogger(__name__).warning("QA answer unreadable (%s): %r", e, resp.text[:200])
        text = "I don't know"
    return QAResult(question, text.strip(), hits, scores, resp.prompt_tokens, resp.completion_tokens)

