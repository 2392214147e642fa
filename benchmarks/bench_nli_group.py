"""One NLI request per premise vs one per pair, for the LLM judge (``nli.judge_group``).

Pairs come from a reviewed run kept in the repository: the memories of
``benchmarks/results/artifacts/precision_89bdcdf/{halumem,locomo}-promem.jsonl`` with the
careful reader's labels of ``benchmarks/review/2026-12-02-*/labels.jsonl`` (hypothesis = the
memory, premise = its first user source turn cut as HV cuts it), in three sets:

- ``shared``: memories labelled correct or wrong whose premise holds 2 or more of them
  (only these are grouped differently);
- ``wrong_premises``: every memory of a premise that holds a wrong one;
- ``discarded``: atomic facts HV discarded as not entailed by their turn (real
  hallucinations: flipped likes and dislikes, invented items).

Each set is judged with ``judge_group`` = 1 and = 4 by the embedded LLM. One JSON line per
(set, group size): requests, prompt and completion tokens, seconds, and how many hypotheses
of each label the judge called entailed.

    python benchmarks/bench_nli_group.py [--append benchmarks/results/nli_group.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ART = ROOT / "benchmarks" / "results" / "artifacts" / "precision_89bdcdf"
REVIEW = ROOT / "benchmarks" / "review"
_TURN_LINE = re.compile(r"- \[([^\]]+)\] [^(]+ \((user|assistant)[^)]*\): (.*)")
_DISCARD = re.compile(r"atomic fact not entailed by turn (\S+?);")


def _turns(slice_: str) -> dict[tuple[str, str], tuple[str, str]]:
    out, sec = {}, None
    for line in (REVIEW / f"2026-12-02-{slice_}" / "dialogues.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            sec = line[3:].strip()
        m = _TURN_LINE.match(line)
        if m:
            out[(sec, m.group(1))] = (m.group(2), m.group(3))
    return out


def pair_sets(max_words: int = 90) -> dict[str, list[tuple[str, str, str]]]:
    """Set name -> [(premise, hypothesis, label)]."""
    from promem_fast.stages.screen import focus_premise

    labelled: list[tuple[str, str, str]] = []
    discarded: list[tuple[str, str, str]] = []
    for sl in ("halumem", "locomo"):
        labels = {}
        for line in (REVIEW / f"2026-12-02-{sl}" / "labels.jsonl").read_text(encoding="utf-8").splitlines():
            d = json.loads(line)
            labels[(d["session_id"], d["memory"])] = d["label"]
        turns = _turns(sl)
        for line in (ART / f"{sl}-promem.jsonl").read_text(encoding="utf-8").splitlines():
            g = json.loads(line)
            sid, name = g["session_id"], g["user_name"]
            for e in g["events"]:
                lab = labels.get((sid, e["text"]))
                src = [t for t in e["source_turn_ids"] if turns.get((sid, t), ("",))[0] == "user"]
                if src and lab in ("correct", "wrong"):
                    labelled.append((focus_premise(turns[(sid, src[0])][1], e["text"], name, max_words), e["text"], lab))
            for d in g["discarded"]:
                m = _DISCARD.match(d["reason"])
                if m and (sid, m.group(1)) in turns:
                    discarded.append((focus_premise(turns[(sid, m.group(1))][1], d["text"], name, max_words),
                                      d["text"], "hallucination"))
    per = collections.Counter(p for p, _, _ in labelled)
    bad = {p for p, _, lab in labelled if lab == "wrong"}
    return {"shared": [x for x in labelled if per[x[0]] >= 2],
            "wrong_premises": [x for x in labelled if x[0] in bad and per[x[0]] >= 2],
            "discarded": discarded}


async def run(args: argparse.Namespace) -> None:
    from promem_fast.backends.nli.llm_judge import LLMJudgeNLI
    from promem_fast.backends.registry import create_llm
    from promem_fast.config import Config, NLIConfig
    from promem_fast.results_log import append_line, run_fields

    cfg = Config()
    llm = create_llm(cfg.llm)
    for name, rows in pair_sets().items():
        pairs = [(p, h) for p, h, _ in rows]
        for group in (1, 4):
            nli = LLMJudgeNLI(NLIConfig(judge_group=group), llm=llm)
            t0 = time.perf_counter()
            res, resp = await nli.classify_with_usage(pairs)
            entailed: collections.Counter = collections.Counter()
            total: collections.Counter = collections.Counter()
            for r, (_, _, lab) in zip(res, rows):
                total[lab] += 1
                entailed[lab] += r.label == "entailment"
            line = {"benchmark": "nli_group", "set": name, "judge_group": group, "pairs": len(pairs),
                    "premises": len({p for p in pairs}), "requests": len(resp),
                    "prompt_tokens": sum(x.prompt_tokens for x in resp),
                    "completion_tokens": sum(x.completion_tokens for x in resp),
                    "seconds": round(time.perf_counter() - t0, 1),
                    "entailed": {k: f"{entailed[k]}/{total[k]}" for k in sorted(total)},
                    "llm": cfg.llm.backend, **run_fields()}
            print(json.dumps(line, ensure_ascii=False), flush=True)
            if args.append:
                append_line(args.append, line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--append", type=Path, help="append each JSON line to this results file")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
