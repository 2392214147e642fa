"""Which re-read facts would the same-turn restatement rule drop? A replay over the labelled
runs, no LLM.

For each memory of origin "detail" (a fact read again from its turn by the completeness check
on details) in the promem graphs of the given runs
(``benchmarks/results/artifacts/precision_<commit>/*-promem.jsonl``) and every
``benchmarks/review/*/labels.jsonl`` (a later file wins), the rule of
``promem_fast.stages.complete`` (``verify.restates_head`` at ``SAME_TURN_SHARE``) is asked
whether a draft or event entry of the same graph grounded on a shared turn restates it. The
graph holds the entries after verification, so this approximates what the rule saw. Prints
one JSON line: the dropped and kept re-read facts by label ("correct-same-fact": correct, but
another memory of the session carries the reviewer's same fact key).

    python benchmarks/recover_repeats.py --runs 72f6416,44f0575 --append benchmarks/results/recover_repeats.jsonl
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def replay(commits: list[str]) -> dict:
    from dup_pairs import all_labels
    from promem_fast.eval.precision import label_key
    from promem_fast.stages.complete import SAME_TURN_SHARE
    from promem_fast.stages.verify import restates_head

    labels = all_labels()
    table: collections.Counter = collections.Counter()
    dropped: list[dict] = []
    for c in commits:
        for f in sorted(glob.glob(str(ROOT / f"benchmarks/results/artifacts/precision_{c}/*-promem.jsonl"))):
            for line in open(f, encoding="utf-8"):
                g = json.loads(line)
                sid, ev = g["session_id"], g["events"]
                facts = [labels.get(label_key(sid, e["text"]), {}).get("fact") for e in ev]
                for n, e in enumerate(ev):
                    lab = labels.get(label_key(sid, e["text"]))
                    if e["origin"] != "detail" or lab is None:
                        continue
                    kind = lab["label"]
                    if kind == "correct" and facts[n] and facts.count(facts[n]) > 1:
                        kind = "correct-same-fact"
                    hit = next((o["text"] for o in ev if o["origin"] != "detail"
                                and set(o["source_turn_ids"]) & set(e["source_turn_ids"])
                                and restates_head(e["text"], o["text"], g["user_name"], SAME_TURN_SHARE)), None)
                    table[("dropped" if hit else "kept", kind)] += 1
                    if hit:
                        dropped.append({"run": c, "session_id": sid, "label": kind, "fact": e["text"], "entry": hit})
    return {"runs": commits, "share": SAME_TURN_SHARE,
            "dropped": {k: v for (d, k), v in sorted(table.items()) if d == "dropped"},
            "kept": {k: v for (d, k), v in sorted(table.items()) if d == "kept"},
            "dropped_facts": dropped}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", required=True, help="comma-separated commits of benchmarks/results/artifacts/precision_*")
    ap.add_argument("--append", type=Path, help="append the JSON line to this results file")
    args = ap.parse_args()
    from promem_fast.results_log import append_line, run_fields

    line = {"benchmark": "recover_repeats", **run_fields(), **replay([c for c in args.runs.split(",") if c])}
    print(json.dumps(line))
    if args.append:
        append_line(args.append, line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
