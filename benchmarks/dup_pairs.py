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

With ``--list-judge COMMITS``, the configured LLM reads each session's labelled memories of
those runs as one numbered list and names, for each, an earlier one it restates: does the
model, seeing all of a session's memories at once, find the duplicates that cosine and NLI
miss?

    python benchmarks/dup_pairs.py --append benchmarks/results/dup_pairs.jsonl
    python benchmarks/dup_pairs.py --judge 0.4 --append benchmarks/results/dup_pairs.jsonl
    python benchmarks/dup_pairs.py --list-judge 72f6416,44f0575 --append benchmarks/results/dup_pairs.jsonl
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


def pair_kind(a: dict, b: dict) -> str:
    """"same_fact", "distinct" or "other" for two labelled memories ``{"label", "fact"}`` of one session."""
    same = bool(a.get("fact")) and a.get("fact") == b.get("fact")
    if a["label"] == b["label"] == "correct" and a.get("fact") and b.get("fact"):
        return "same_fact" if same else "distinct"
    if "duplicate" in (a["label"], b["label"]) and same:
        return "same_fact"
    return "other"


def all_labels() -> dict:
    """Label key -> ``{"label", "fact"}`` over every review file; a later file wins."""
    from promem_fast.eval.precision import load_labels

    labels: dict = {}
    for f in sorted(glob.glob(str(ROOT / "benchmarks/review/*/labels.jsonl"))):
        got = load_labels(Path(f))
        labels.update({k: {"label": lab, "fact": got.facts.get(k, "")} for k, lab in got.items()})
    return labels


async def pairs() -> list[dict]:
    from promem_fast.backends.registry import create_embed
    from promem_fast.config import Config
    from promem_fast.eval.precision import label_key as _key

    labels = all_labels()
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
                    kind = pair_kind(a, b)
                    k = (g["session_id"], *sorted((ev[i]["text"], ev[j]["text"])))
                    out[k] = {"cosine": float(sim[i, j]), "same_turn": turn[0] is not None and turn[0] == turn[1],
                              "kind": kind, "texts": (ev[i]["text"], ev[j]["text"]), "user": g["user_name"],
                              "labels": (a["label"], b["label"]),
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


def _list_request(user: str, texts: list[str]):
    """One session's memories, numbered; the LLM names, for each from the 2nd on, an
    earlier one it restates (0 = new). Per-entry answers: asked for a list of
    [repeat, earlier] pairs instead, the embedded model answered [] for every session."""
    from promem_fast.backends.base import LLMRequest
    from promem_fast.prompts.common import standalone_messages

    lines = "\n".join(f"{i + 1}. {t}" for i, t in enumerate(texts))
    schema = {"type": "object", "additionalProperties": False,
              "properties": {str(i + 1): {"type": "integer", "minimum": 0, "maximum": i} for i in range(1, len(texts))},
              "required": [str(i + 1) for i in range(1, len(texts))]}
    instr = (f"Memory entries about {user}:\n{lines}\n"
             "For each entry from 2 on, give the number of an earlier entry that states the same fact "
             '(a restatement in other words), or 0 if it states something new. JSON: {"2": 0, "3": 1, ...}')
    return LLMRequest(standalone_messages(instr), schema, 8 * len(texts) + 20, stage="dedup")


async def list_judged(commits: list[str]) -> dict:
    """Ask the configured LLM, one call per session of the given runs' promem graphs, which
    memory restates an earlier one; count the flagged pairs by kind (:func:`pair_kind`)
    beside all labelled pairs of those sessions."""
    from promem_fast.backends.registry import create_llm
    from promem_fast.config import Config
    from promem_fast.eval.precision import label_key as _key

    labels = all_labels()
    lists: dict[tuple, str] = {}  # (session id, memory texts) -> user name; a list met twice is asked once
    for c in commits:
        for f in sorted(glob.glob(str(ROOT / f"benchmarks/results/artifacts/precision_{c}/*-promem.jsonl"))):
            for line in open(f, encoding="utf-8"):
                g = json.loads(line)
                ev = tuple(e["text"] for e in g["events"] if _key(g["session_id"], e["text"]) in labels)
                if len(ev) >= 2:
                    lists[(g["session_id"], ev)] = g["user_name"]
    keys = list(lists)
    outs = await create_llm(Config().llm).generate([_list_request(lists[k], list(k[1])) for k in keys])
    allp: collections.Counter = collections.Counter()
    flagged: collections.Counter = collections.Counter()
    unreadable = 0
    for (sid, texts), out in zip(keys, outs):
        lab = [labels[_key(sid, t)] for t in texts]
        allp.update(pair_kind(lab[i], lab[j]) for i in range(len(texts)) for j in range(i + 1, len(texts)))
        try:
            answer = {int(k): int(v) for k, v in json.loads(out.text).items()}
        except (ValueError, TypeError, AttributeError):
            unreadable += 1
            continue
        flagged.update(pair_kind(lab[k - 1], lab[v - 1]) for k, v in answer.items() if 1 <= v < k <= len(texts))
    return {"runs": commits, "sessions": len(keys), "unreadable": unreadable,
            "pairs_by_kind": dict(sorted(allp.items())), "flagged_by_kind": dict(sorted(flagged.items()))}


def same_turn_rule(ps: list[dict], share: float | None = None) -> dict:
    """Pairs by kind that dedup's same-turn rule merges (``verify.stands_for`` on pairs that
    share a source turn; the pair's memory with fewer content words, the later one on a tie,
    is the one dedup would drop), at ``share`` (None: ``verify.SAME_TURN_SHARE``).
    ``kept_wrong_or_filler`` counts the merged pairs whose dropped memory is correct and whose
    kept one is wrong or filler. Pairs of the final graphs only: what dedup
    already merged is not among them."""
    from promem_fast.stages import screen
    from promem_fast.stages.verify import SAME_TURN_SHARE, stands_for

    share = SAME_TURN_SHARE if share is None else share
    c: collections.Counter = collections.Counter()
    worse = 0
    for p in ps:
        if not p["shared_source"]:
            continue
        (full, short), (lf, ls) = p["texts"], p.get("labels", ("", ""))  # in graph order
        if len(set(screen.predicate_words(short, p["user"]))) > len(set(screen.predicate_words(full, p["user"]))):
            full, short, lf, ls = short, full, ls, lf
        if stands_for(short, full, p["user"], share):
            c[p["kind"]] += 1
            worse += ls == "correct" and lf in ("wrong", "filler")
    return {"share": share, "merged_by_kind": dict(sorted(c.items())), "kept_wrong_or_filler": worse}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--append", type=Path, help="append the JSON line to this results file")
    ap.add_argument("--judge", type=float, metavar="LO", help="also ask NLI about shared-source pairs at cosine [LO, tau_dup_nli)")
    ap.add_argument("--list-judge", metavar="COMMITS",
                    help="also ask the LLM, per session of these runs (comma-separated commits of "
                         "benchmarks/results/artifacts/precision_*), which memory restates an earlier one")
    args = ap.parse_args()
    from promem_fast.results_log import append_line, run_fields

    ps = asyncio.run(pairs())
    table = {}
    for t in (0.75, 0.8, 0.85, 0.9):
        for cond in ("any", "same_turn"):
            c = collections.Counter(p["kind"] for p in ps if p["cosine"] >= t and (cond == "any" or p["same_turn"]))
            table[f"{t}/{cond}"] = {"same_fact": c["same_fact"], "distinct": c["distinct"]}
    line = {"benchmark": "dup_pairs", **run_fields(), "pairs": len(ps), "by_threshold": table,
            "same_turn_rule": same_turn_rule(ps),
            # the rule at other shares, on the same pairs
            "same_turn_rule_by_share": [same_turn_rule(ps, x) for x in (0.7, 0.75, 0.8)]}
    if args.judge is not None:
        from promem_fast.config import Config

        # below the band that dedup already sends to NLI (tau_dup_nli)
        pipe = Config().pipeline
        hi = pipe.tau_dup_nli or pipe.tau_dup
        line["judge"] = {"cosine_from": args.judge, "cosine_below": hi, "premise": "fuller memory",
                         "verdicts_by_kind": asyncio.run(judged(ps, args.judge, hi))}
    if args.list_judge:
        line["list_judge"] = asyncio.run(list_judged([c for c in args.list_judge.split(",") if c]))
    print(json.dumps(line))
    if args.append:
        append_line(args.append, line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
