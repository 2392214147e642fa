"""Can the embedded 1.5B model tell a memory worth keeping from filler? A probe over the
labelled memories, no pipeline.

Reads every ``benchmarks/review/*/labels.jsonl`` (the first label of a session's memory
text wins; rubric in ``docs/evaluation.md``) and asks the embedded model (the GGUF of
``Config().llm``), for each distinct labelled memory, whether to keep it: one prompt per
memory, instruction first (so llama.cpp reuses its KV cache across memories), then
"Person: NAME / Memory: TEXT". It reads the model's next-token distribution instead of a
generated label: ``p_yes`` = P("Yes") / (P("Yes") + P("No")), leading-space forms included.

Prints one JSON line per prompt: for each slice (LoCoMo, HaluMem, all) the ROC AUC of
``p_yes`` for correct against filler and correct against wrong memories (0.5 = chance),
and at thresholds 0.5 / 0.6 / 0.7 how many memories of each label a keep-rule
``p_yes >= t`` would keep.

    python benchmarks/probe_memorability.py --append benchmarks/results/probe_memorability.jsonl

About 0.5 s per memory on 2 cores (~500 memories per prompt).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The person is named in the session id of LoCoMo ("conv-26/session_1@Caroline"); the
# HaluMem dev user is Sarah Garcia.
HALUMEM_USER = "Sarah Garcia"

PROMPTS = {
    "plain": (
        "You keep a long-term memory of facts about a person, to answer questions about them weeks "
        "later. Keep a memory when it states something specific about the person's own life: what "
        "they did, have, plan, study or work at, who their family and friends are, where and when "
        "things happened, what they like. Do not keep reactions to the other speaker, thanks, praise, "
        "agreement, general opinions, mottos, or vague statements that name nothing specific.\n\n"
    ),
    "few-shot": (
        "Decide whether a memory about a person is worth storing: it must state a concrete fact of "
        "the person's own life (an event, a possession, a plan with a goal, a job, study, hobby, a "
        "named person, place, time or thing) that could answer a later question. Reactions to what "
        "the other speaker said, thanks, praise, agreement, wishes, general opinions, mottos and "
        "vague statements (\"some plans\", \"a place\", \"things\") are not worth storing.\n\n"
        "Person: Priya\nMemory: Priya adopted a beagle named Max last spring.\nWorth storing? Yes\n\n"
        "Person: Priya\nMemory: Priya is grateful for the chat.\nWorth storing? No\n\n"
        "Person: Priya\nMemory: Priya's sister lives in Lyon.\nWorth storing? Yes\n\n"
        "Person: Priya\nMemory: Priya thinks kindness matters most.\nWorth storing? No\n\n"
        "Person: Priya\nMemory: Priya is learning to play the cello.\nWorth storing? Yes\n\n"
        "Person: Priya\nMemory: Priya has some exciting plans in the works.\nWorth storing? No\n\n"
        "Person: Priya\nMemory: Priya loves the colours in the photo.\nWorth storing? No\n\n"
        "Person: Priya\nMemory: Priya runs every morning before work to clear her head.\nWorth storing? Yes\n\n"
    ),
}


def labelled_memories() -> list[dict]:
    """Distinct (session_id, memory, label) rows of every review batch, keyed as the scorer
    keys them (``eval.precision.label_key``); the first batch's label wins (the batches
    reuse one label per text, so they agree)."""
    from promem_fast.eval.precision import label_key

    rows: dict[tuple[str, str], dict] = {}
    for f in sorted(glob.glob(str(ROOT / "benchmarks/review/*/labels.jsonl"))):
        for line in open(f, encoding="utf-8"):
            if line.strip():
                r = json.loads(line)
                rows.setdefault(label_key(r["session_id"], r["memory"]),
                                {"session_id": r["session_id"], "memory": r["memory"], "label": r["label"].strip().lower()})
    return list(rows.values())


def person(session_id: str) -> str:
    return session_id.split("@", 1)[1] if "@" in session_id else HALUMEM_USER


def auc(pos: list[float], neg: list[float]) -> float | None:
    """ROC AUC (ties count half): P(a random positive scores above a random negative)."""
    if not pos or not neg:
        return None
    s = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return round(s / (len(pos) * len(neg)), 3)


class Prober:
    """P("Yes") of the embedded model after a chat prompt, reusing the shared prompt prefix."""

    def __init__(self, model_path: str, threads: int):
        from llama_cpp import Llama

        self.llm = Llama(model_path, n_ctx=1024, n_threads=threads, logits_all=True, verbose=False)
        tok = self._tok
        self.yes = sorted({tok(x)[0] for x in ("Yes", " Yes")})
        self.no = sorted({tok(x)[0] for x in ("No", " No")})

    def _tok(self, s: str) -> list[int]:
        return self.llm.tokenize(s.encode("utf-8"), add_bos=False, special=True)

    def p_yes(self, prompt: str) -> float:
        toks = self._tok(prompt)
        llm = self.llm
        n = 0  # tokens already in the KV cache (the instruction, shared by every memory)
        while n < min(len(toks) - 1, llm.n_tokens) and llm.input_ids[n] == toks[n]:
            n += 1
        llm.n_tokens = n
        llm.eval(toks[n:])
        logits = llm.scores[llm.n_tokens - 1]
        m = max(float(logits[j]) for j in self.yes + self.no)
        py = sum(math.exp(float(logits[j]) - m) for j in self.yes)
        pn = sum(math.exp(float(logits[j]) - m) for j in self.no)
        return py / (py + pn)


def chat(instruction: str, name: str, memory: str, few_shot: bool) -> str:
    """Qwen2.5 chat format (the embedded model's template), instruction first."""
    ask = "Worth storing?" if few_shot else "Worth storing? Answer Yes or No."
    return ("<|im_start|>system\nYou are a careful assistant.<|im_end|>\n<|im_start|>user\n" + instruction
            + f"Person: {name}\nMemory: {memory}\n{ask}<|im_end|>\n<|im_start|>assistant\n")


def summary(rows: list[dict]) -> dict:
    out = {}
    for sl, pick in (("locomo", lambda r: r["session_id"].startswith("conv-")),
                     ("halumem", lambda r: not r["session_id"].startswith("conv-")), ("all", lambda r: True)):
        by = {lab: [r["p_yes"] for r in rows if pick(r) and r["label"] == lab] for lab in ("correct", "filler", "wrong")}
        out[sl] = {
            "memories": {k: len(v) for k, v in by.items()},
            "auc_correct_vs_filler": auc(by["correct"], by["filler"]),
            "auc_correct_vs_wrong": auc(by["correct"], by["wrong"]),
            "kept_at": {str(t): {k: sum(p >= t for p in v) for k, v in by.items()} for t in (0.5, 0.6, 0.7)},
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", default="plain,few-shot", help="comma list of: " + ", ".join(PROMPTS))
    ap.add_argument("--limit", type=int, default=None, help="first N labelled memories only (a smoke run)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--append", type=Path, default=None, help="append the JSON lines to this results file")
    args = ap.parse_args()
    names = [p.strip() for p in args.prompts.split(",") if p.strip()]
    bad = [p for p in names if p not in PROMPTS]
    if bad:
        ap.error(f"--prompts: unknown {bad}; choose from {list(PROMPTS)}")
    from promem_fast.bench import machine_info
    from promem_fast.config import Config
    from promem_fast.models import embedded_gguf_path

    cfg = Config()
    model = cfg.llm.model or str(embedded_gguf_path(cfg.cache_dir))
    rows = labelled_memories()[: args.limit]
    prober = Prober(model, args.threads)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    for name in names:
        t = time.perf_counter()
        scored = [dict(r, p_yes=prober.p_yes(chat(PROMPTS[name], person(r["session_id"]), r["memory"],
                                                    name == "few-shot"))) for r in rows]
        line = {"bench": "probe_memorability", "commit": commit,
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine_info(),
                "model": Path(model).name, "prompt": name, "seconds": round(time.perf_counter() - t, 1),
                **summary(scored)}
        print(json.dumps(line), flush=True)
        if args.append:
            with open(args.append, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
