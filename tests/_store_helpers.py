"""Fakes for the lifelong-memory tests: an NLI backend with scripted verdicts and graph builders."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Optional, Sequence

from promem_fast.backends.base import NLIResult
from promem_fast.backends.embed.hashing import HashEmbedder
from promem_fast.backends.llm.scripted import ScriptedLLM
from promem_fast.context import Services
from promem_fast.schema import Detail, Event, MemoryGraph, NLIVerdict, Relation


class ScriptedNLI:
    """NLI with verdicts set per (premise, hypothesis); every other pair gets ``default``.

    ``calls`` records every pair asked, so a test can check which pairs reached NLI.
    """

    name = "scripted-nli"
    model_name = "scripted-nli"

    def __init__(self, default: str = "neutral", score: float = 0.9, latency_s: float = 0.001):
        self.latency_s = latency_s
        self.verdicts: dict[tuple[str, str], str] = {}
        self.default = default
        self.score = score
        self.calls: list[tuple[str, str]] = []

    def set(self, a: str, b: str, label: str, both_ways: bool = True) -> None:
        self.verdicts[(a, b)] = label
        if both_ways:
            self.verdicts[(b, a)] = label

    async def classify(self, pairs):
        await asyncio.sleep(self.latency_s)  # a model call: other writers run meanwhile
        out = []
        for p in pairs:
            self.calls.append(tuple(p))
            label = self.verdicts.get(tuple(p), self.default)
            out.append(NLIResult(label, {label: self.score}))
        return out


class YieldingEmbedder(HashEmbedder):
    """HashEmbedder that yields to the event loop on every call, like a real (remote/batched) model,
    so concurrent writers interleave between planning and committing."""

    async def encode(self, texts):
        await asyncio.sleep(0.002)
        return self.encode_sync(texts)


def services(nli: Optional[ScriptedNLI] = None, llm: Optional[ScriptedLLM] = None) -> Services:
    return Services(llm=llm or ScriptedLLM(rules={}), nli=nli or ScriptedNLI(), embed=YieldingEmbedder(dim=256))


def graph(
    session_id: str,
    events: Sequence[tuple[str, Optional[str]]],
    user_name: str = "Alice",
    details: Sequence[tuple[str, str, list[str]]] = (),
    relations: Sequence[tuple[str, str, str]] = (),
    entail_score: float = 0.97,
) -> MemoryGraph:
    """A verified graph: events (text, ISO date or None) grounded in turns t0, t1, ...;
    details (text, turn_id, event_ids); relations (source, type, target)."""
    evs = []
    for i, (text, date) in enumerate(events):
        evs.append(Event(
            id=f"e{i + 1}", text=text, origin="draft", status="kept", source_turn_ids=[f"t{i}"],
            dates=[date] if date else [],
            timestamp=datetime.fromisoformat(date) if date else None,
            nli=[NLIVerdict(premise_turn_id=f"t{i}", hypothesis=text, label="entailment", score=entail_score)],
        ))
    dets = [Detail(id=f"d{i + 1}", text=t, turn_id=tid, event_ids=list(eids)) for i, (t, tid, eids) in enumerate(details)]
    rels = [Relation(source=s, type=ty, target=t) for s, ty, t in relations]
    return MemoryGraph(session_id=session_id, user_name=user_name, variant="promem", events=evs, details=dets,
                       relations=rels)
