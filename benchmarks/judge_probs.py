"""How sure is the embedded HV judge of the memories a careful reader labelled? (#16)

For every labelled memory of stored LoCoMo ``promem`` graphs (correct, filler or wrong; a
duplicate is a correct memory stated twice and is left out), asks the embedded 1.5B model the
HV judge's question (``judge_messages``: the entry against its NLI premise turn, cut as HV
cuts it) and reads the next-token probabilities of the three answers ("true", "false", "not
mentioned") right after ``{"label": "``, instead of the generated label. Prints, per label,
how many memories fall below each p(true) threshold, i.e. what a judge that needs that much
probability would have removed.

    python benchmarks/judge_probs.py --graphs benchmarks/results/artifacts/precision_aa148e2/locomo-promem.jsonl \\
        --labels benchmarks/review/2026-12-03n/labels.jsonl --out /tmp/judge_probs.jsonl

One line per memory goes to ``--out``; the summary (one JSON line) to stdout and, with
``--append``, to a results file. Needs llama-cpp-python and the embedded model.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

THRESHOLDS = (0.6, 0.7, 0.8, 0.9)


def _norm(s: str) -> str:
    return " ".join(s.split()).casefold()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=Path, action="append", required=True, help="stored LoCoMo promem graphs (JSONL)")
    ap.add_argument("--labels", type=Path, action="append", required=True, help="labels JSONL (benchmarks/review/*)")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--append", type=Path)
    args = ap.parse_args()

    import llama_cpp
    import numpy as np

    from bench_precision import load_slice
    from promem_fast import models
    from promem_fast.backends.nli.llm_judge import judge_messages
    from promem_fast.bench import machine_info
    from promem_fast.config import Config
    from promem_fast.results_log import git_commit
    from promem_fast.stages.verify import _premise

    labels: dict[tuple[str, str], str] = {}
    for f in args.labels:
        for line in f.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            labels[(r["session_id"], _norm(r["memory"]))] = r["label"]
    sessions = {s.session_id: s for s in load_slice("locomo", args.data)}
    items: dict[tuple[str, str, str], str] = {}
    for f in args.graphs:
        for line in f.read_text(encoding="utf-8").splitlines():
            g = json.loads(line)
            for e in g["events"]:
                lab = labels.get((g["session_id"], _norm(e["text"])))
                judged = [v for v in e["nli"] if v.get("by") == "nli"]
                if lab and lab != "duplicate" and judged:
                    items[(g["session_id"], e["text"], judged[0]["premise_turn_id"])] = lab
    llm = llama_cpp.Llama(model_path=str(models.embedded_gguf_path()), n_ctx=2048, verbose=False)
    first = {a: llm.tokenize(a.encode(), add_bos=False, special=False)[0] for a in ("true", "false", "not")}
    max_words = Config().pipeline.premise_max_words
    rows = []
    with args.out.open("w", encoding="utf-8") as out:
        for (sid, text, tid), lab in items.items():
            s = sessions[sid]
            turn = next(t for t in s.turns if t.turn_id == tid)
            msgs = judge_messages(_premise(turn, s, s.user_name, text, max_words), text)
            prompt = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in msgs)
            prompt += '<|im_start|>assistant\n{"label": "'  # what constrained decoding writes first
            llm.reset()
            llm.eval(llm.tokenize(prompt.encode(), add_bos=False, special=True))
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
            z = np.array([logits[t] for t in first.values()], dtype=np.float64)
            p = np.exp(z - z.max())
            p /= p.sum()
            row = {"session_id": sid, "memory": text, "premise_turn_id": tid, "label": lab,
                   "p_true": round(float(p[0]), 4), "p_false": round(float(p[1]), 4), "p_not": round(float(p[2]), 4)}
            rows.append(row)
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    by: dict[str, list[float]] = {}
    for r in rows:
        by.setdefault(r["label"], []).append(r["p_true"])
    summary = {
        "benchmark": "judge_probs", "commit": git_commit(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(), "graphs": [str(f) for f in args.graphs], "memories": len(rows),
        "by_label": {k: {"n": len(v), "median_p_true": round(float(np.median(v)), 3)} for k, v in sorted(by.items())},
        "below": {str(t): {k: sum(x < t for x in v) for k, v in sorted(by.items())} for t in THRESHOLDS},
    }
    print(json.dumps(summary))
    if args.append:
        with args.append.open("a", encoding="utf-8") as f:
            f.write(json.dumps(summary) + "\n")


if __name__ == "__main__":
    main()
