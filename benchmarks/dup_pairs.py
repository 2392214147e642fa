"""Can an embedding cosine tell duplicate memories from distinct ones? A replay over the
labelled runs, no LLM.

Reads every ``benchmarks/results/artifacts/precision_*/*-promem.jsonl`` graph and every
``benchmarks/review/*/labels.jsonl`` (the latest label of a session's memory text wins).
Each pair of labelled memories of one session is "same fact" when both are correct with the
same reviewer fact key, or one is a duplicate of the other's fact; "distinct" when both are
correct with different fact keys. Prints one JSON line: for each cosine threshold (MiniLM,
the configured embedder) and condition (any pair; both grounded on the same turn), how many
pairs of each kind reach it.

With ``--judge LO``, each pair of memories sharing a source turn at cosine in [LO, tau_dup_nli = 0.8)
(below dedup's NLI band), same polarity and every number of the shorter in the fuller, is
also put to the configured NLI (the embedded LLM judge by default) with the fuller memory as
premise, and the line counts the verdicts per kind: would a judge-checked merge of such
paraphrases remove duplicates without merging distinct facts?

    python benchmarks/dup_pairs.py --append benchmarks/results/dup_pairs.jsonl
    python benchmarks/dup_pairs.py --judge 0.4 --append benchmarks/results/dup_pairs.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import glob
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


async def pairs() -> list[dict]:
    from promem_fast.backends.registry import create_embed
    from promem_fast.config import Config
    from promem_fast.eval.precision import label_key as _key, load_labels

    labels: dict = {}  # key -> {"label", "fact"}; a later review file wins
    for f in sorted(glob.glob(str(ROOT / "benchmarks/review/*/labels.jsonl"))):
        got = load_labels(Path(f))
        labels.update({k: {"label": lab, "fact": got.facts.get(k, "")} for k, lab in got.items()})
    cfg = Config()
    emb = create_embed(cfg.embed, cache_dir=cfg.cache_dir)
    out: dict[tuple, dict] = {}
    for f in sorted(glob.glob(str(ROOT / "benchmarks/results/artifacts/precision_*/*-promem.jsonl"))):
        for line in open(f, encoding="utf-8"):
            g = json.loads(line)
            ev = [e for e in g["events"] if _key(g["session_id"], e["text"]) in labels]
            if len(ev) < 2:
                continue
            v = np.asarray(await emb.encode([e["text"] for e in ev]), dtype=np.float32)
            sim = v @ v.T
            for i in range(len(ev)):
                for j in range(i + 1, len(ev)):
                    a, b = (labels[_key(g["session_id"], e["text"])] for e in (ev[i], ev[j]))
                    turn = [(e.get("nli") or [{}])[0].get("premise_turn_id") for e in (ev[i], ev[j])]
                    same = bool(a.get("fact")) and a.get("fact") == b.get("fact")
                    if a["label"] == b["label"] == "correct" and a.get("fact") and b.get("fact"):
                        kind = "same_fact" if same else "distinct"
                    elif "duplicate" in (a["label"], b["label"]) and same:
                        kind = "same_fact"
                    else:
                        kind = "other"
                    k = (g["session_id"], *sorted((ev[i]["text"], ev[j]["text"])))
                    out[k] = {"cosine": float(sim[i, j]), "same_turn": turn[0] is not None and turn[0] == turn[1],
                              "kind": kind, "texts": (ev[i]["text"], ev[j]["text"]), "user": g["user_name"],
                              "shared_source": bool(set(ev[i]["source_turn_ids"]) & set(ev[j]["source_turn_ids"]))}
    return list(out.values())


async def judged(ps: list[dict], lo: float, hi: float) -> dict[str, dict[str, int]]:
    """NLI verdicts (fuller memory as premise) on the shared-source pairs at cosine [lo, hi)."""
    from promem_fast.backends.registry import create_llm, create_nli
    from promem_fast.config import Config
    from promem_fast.stages import screen
    from promem_fast.stages.verify import _clause_words, _numbers

    todo = []
    for p in ps:
        if not (p["shared_source"] and lo <= p["cosine"] < hi):
            continue
        a, b = p["texts"]
        full, short = (a, b) if len(set(screen.predicate_words(a, p["user"]))) >= len(
            set(screen.predicate_words(b, p["user"]))) else (b, a)
        if _clause_words(full, frozenset())[0] != _clause_words(short, frozenset())[0]:
            continue
        if not _numbers(short) <= _numbers(full):
            continue
        todo.append((p["kind"], (full, short)))
    cfg = Config()
    nli = create_nli(cfg.nli, llm=create_llm(cfg.llm) if cfg.nli.backend == "llm" else None)
    res = await nli.classify([pair for _, pair in todo])
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (kind, _), r in zip(todo, res):
        table[kind][r.label] += 1
    return {k: dict(v) for k, v in sorted(table.items())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--append", type=Path, help="append the JSON line to this results file")
    ap.add_argument("--judge", type=float, metavar="LO", help="also ask NLI about shared-source pairs at cosine [LO, tau_dup_nli)")
    args = ap.parse_args()
    from promem_fast.results_log import append_line, run_fields

    ps = asyncio.run(pairs())
    table = {}
    for t in (0.75, 0.8, 0.85, 0.9):
        for cond in ("any", "same_turn"):
            c = collections.Counter(p["kind"] for p in ps if p["cosine"] >= t and (cond == "any" or p["same_turn"]))
            table[f"{t}/{cond}"] = {"same_fact": c["same_fact"], "distinct": c["distinct"]}
    line = {"benchmark": "dup_pairs", **run_fields(), "pairs": len(ps), "by_threshold": table}
    if args.judge is not None:
        from promem_fast.config import Config

        # below the band that dedup already sends to NLI (tau_dup_nli)
        pipe = Config().pipeline
        hi = pipe.tau_dup_nli or pipe.tau_dup
        line["judge"] = {"cosine_from": args.judge, "cosine_below": hi, "premise": "fuller memory",
                         "verdicts_by_kind": asyncio.run(judged(ps, args.judge, hi))}
    print(json.dumps(line))
    if args.append:
        append_line(args.append, line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
