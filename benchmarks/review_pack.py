"""Pack the memories of several runs into one blind labelling file, with the dialogues.

Reads ``OUT/graphs/*.jsonl`` of each run directory written by ``bench_precision.py``,
writes ``PACK/to_label.jsonl`` (every distinct (session, memory) once, shuffled, no run or
variant named; ``label`` empty) and ``PACK/dialogues.md`` (each session's turns, the user
named), so a reader can label every memory with the rubric of ``docs/evaluation.md`` without
knowing which variant or commit wrote it.

    python benchmarks/review_pack.py out/base out/new --pack benchmarks/review/2026-12-01
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="bench_precision.py --out directories")
    ap.add_argument("--pack", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--locomo", default="conv-26:1-3,conv-30:1-2")
    ap.add_argument("--halumem", default="1-3", help="HaluMem user3 sessions, e.g. 6,10")
    ap.add_argument("--exclude", type=Path, action="append", default=[],
                    help="a labels file whose memories are not packed again (label in batches)")
    args = ap.parse_args()
    from bench_precision import load_slice, parse_picks
    from promem_fast.schema import MemoryGraph

    from promem_fast.eval.precision import load_labels

    done: set = set()
    for f in args.exclude:
        done |= set(load_labels(f))
    rows: dict[tuple[str, str], dict] = {}
    sids: set[str] = set()
    for run in args.runs:
        for f in sorted((run / "graphs").glob("*.jsonl")):
            for line in f.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                g = MemoryGraph.model_validate_json(line)
                sids.add(g.session_id)
                for e in g.events:
                    key = (g.session_id, " ".join(e.text.split()).casefold())
                    if key in done:
                        continue
                    rows.setdefault(key, {"session_id": g.session_id, "memory": e.text, "label": ""})
    items = sorted(rows.values(), key=lambda r: (r["session_id"], r["memory"]))
    random.Random(args.seed).shuffle(items)
    args.pack.mkdir(parents=True, exist_ok=True)
    (args.pack / "to_label.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items),
                                              encoding="utf-8")
    sessions = load_slice("halumem", args.data, [(None, args.halumem)]) + load_slice("locomo", args.data, parse_picks(args.locomo))
    md = []
    packed = {r["session_id"] for r in items}
    for s in sessions:
        if s.session_id not in packed:
            continue
        md.append(f"## {s.session_id}\n\nThe user is **{s.user_name}**; every other speaker is not the user.\n")
        for t in s.turns:
            who = t.speaker or ("assistant" if t.role != "user" else s.user_name)
            md.append(f"- [{t.turn_id}] {who} ({t.role}, {t.timestamp:%Y-%m-%d} ): {t.content}" if t.timestamp
                      else f"- [{t.turn_id}] {who} ({t.role}): {t.content}")
        md.append("")
    (args.pack / "dialogues.md").write_text("\n".join(md), encoding="utf-8")
    print(f"{len(items)} memories of {len(sids)} sessions -> {args.pack / 'to_label.jsonl'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
