"""Lifelong memory store throughput: consolidating graphs into one user's memory, then search.

Prints one JSON line: sessions/s and entries/s for add_graph (hash embedder, NLI that answers
"neutral" instantly, so this times the store + consolidation, not the models), and search
p50/p95 latency (ms) over the resulting FAISS index.

    python benchmarks/bench_store.py --sessions 200 --events 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time

import numpy as np

from promem_fast.backends.base import NLIResult
from promem_fast.backends.embed.hashing import HashEmbedder
from promem_fast.backends.llm.scripted import ScriptedLLM
from promem_fast.context import Services
from promem_fast.schema import Event, MemoryGraph
from promem_fast.store import AsyncMemory, StoreConfig


class NeutralNLI:
    name = "neutral"

    async def classify(self, pairs):
        return [NLIResult("neutral", {"neutral": 1.0}) for _ in pairs]


WORDS = ("tea coffee paris berlin violin chess tennis dog cat garden piano job nurse teacher sister "
         "brother bike train book film museum lake mountain beach song recipe bread market friend").split()


def make_graph(i: int, n_events: int, rng: np.random.Generator) -> MemoryGraph:
    evs = []
    for j in range(n_events):
        ws = " ".join(rng.choice(WORDS, size=5))
        evs.append(Event(id=f"e{j + 1}", text=f"Alice {ws} {i}-{j}.", origin="draft", status="kept",
                         source_turn_ids=[f"t{j}"], dates=[f"2023-01-{1 + (i % 28):02d}"]))
    return MemoryGraph(session_id=f"s{i}", user_name="Alice", variant="promem", events=evs)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--events", type=int, default=10)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    svc = Services(llm=ScriptedLLM(rules={}), nli=NeutralNLI(), embed=HashEmbedder(dim=384))
    with tempfile.TemporaryDirectory() as d:
        m = AsyncMemory(services=svc, path=d, store_config=StoreConfig(match_threshold=0.6))
        graphs = [make_graph(i, args.events, rng) for i in range(args.sessions)]
        t0 = time.perf_counter()
        for g in graphs:
            await m.add_graph(g, user_id="alice")
        add_s = time.perf_counter() - t0
        lat = []
        for q in range(args.queries):
            t = time.perf_counter()
            await m.search(" ".join(rng.choice(WORDS, size=3)), user_id="alice", top_k=20)
            lat.append((time.perf_counter() - t) * 1e3)
        n = len(m.store.list("alice", statuses=None))
        await m.close()
    print(json.dumps({
        "bench": "store", "sessions": args.sessions, "entries": n,
        "sessions_per_s": round(args.sessions / add_s, 2), "entries_per_s": round(n / add_s, 1),
        "search_p50_ms": round(float(np.percentile(lat, 50)), 3),
        "search_p95_ms": round(float(np.percentile(lat, 95)), 3),
    }))


if __name__ == "__main__":
    asyncio.run(main())
