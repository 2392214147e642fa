"""Embedded-model regression set of the memory failure classes (not run by CI: minutes).

Each case of ``benchmarks/regression/precision_cases.json`` is an invented one- to
four-turn dialogue of one failure class (filler, assistant text, wrong person, world
knowledge, quoted text, duplicates, non-English) with the memories it should yield
(``expect``: some stored memory at MiniLM cosine >= 0.6), the ones it must not
(``forbid``: no stored memory at cosine >= 0.75; ``forbid_text``: words no memory may hold,
where cosine cannot tell a plan from a deed), and for non-English cases the names that
must appear exactly as written and the ISO dates the memory must resolve to.

    python benchmarks/bench_regression.py [--llm openai --llm-url http://127.0.0.1:8080/v1]

Prints one JSON line per case and a summary line (cases passed, tokens per case).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "benchmarks" / "regression" / "precision_cases.json"
EXPECT_TAU = 0.6
FORBID_TAU = 0.75


def sessions_of(cases: list) -> list:
    from promem_fast.schema import Session, Turn

    out = []
    for k, c in enumerate(cases):
        ts = datetime.fromisoformat(c["date"])
        turns = [Turn(turn_id=f"t{i + 1}", role=r, content=t, timestamp=ts, speaker=c["user"] if r == "user" else None)
                 for i, (r, t) in enumerate(c["turns"])]
        out.append(Session(session_id=f"case{k + 1}", user_name=c["user"], turns=turns, start_time=ts))
    return out


async def run(args: argparse.Namespace) -> int:
    import numpy as np

    from promem_fast.config import Config
    from promem_fast.context import Services
    from promem_fast.eval.harness import extract_sessions
    from promem_fast.eval.precision import duplicate_flags
    from promem_fast.results_log import append_line, run_fields

    cases = json.loads(Path(args.cases).read_text(encoding="utf-8"))
    cfg = Config()
    if args.llm:
        cfg.llm.backend = args.llm
    if args.llm_url:
        cfg.llm.base_url = args.llm_url
    svc = Services.from_config(cfg)
    ex = await extract_sessions(sessions_of(cases), cfg, svc, "promem", args.concurrency)
    passed = 0
    tokens = 0
    detail: list[dict] = []
    for c, e in zip(cases, ex):
        mems = [ev.text for ev in e.graph.events] if e.graph else []
        dates = sorted({d for ev in e.graph.events for d in ev.dates}) if e.graph else []
        tokens += e.tokens
        fails = []
        if mems:
            mv = np.asarray(await svc.embed.encode(mems), dtype=np.float32)
            for want in c["expect"]:
                w = np.asarray(await svc.embed.encode([want]), dtype=np.float32)[0]
                if float((mv @ w).max()) < EXPECT_TAU:
                    fails.append(f"missing: {want}")
            for bad in c["forbid"]:
                b = np.asarray(await svc.embed.encode([bad]), dtype=np.float32)[0]
                if float((mv @ b).max()) >= FORBID_TAU:
                    fails.append(f"stored: {bad}")
            # cosine does not tell "will ask" from "asked": words no memory may hold
            for words in c.get("forbid_text", []):
                if any(words.casefold() in m.casefold() for m in mems):
                    fails.append(f"stored text: {words}")
            if any(duplicate_flags(mv)):
                fails.append("near-duplicate memories")
        else:
            fails.append("no memory")
        for n in c.get("names", []):
            if not any(n in m for m in mems):
                fails.append(f"name not as written: {n}")
        for d in c.get("dates", []):
            if d not in dates:
                fails.append(f"date not resolved: {d}")
        ok = not fails and e.error is None
        passed += ok
        discarded = [f"{d.text} ({d.reason})" for d in e.graph.discarded] if e.graph else []
        row = {"case": c["class"], "ok": ok, "fails": fails, "memories": mems, "dates": dates,
               "discarded": discarded, "tokens": e.tokens, "error": e.error}
        detail.append({k: row[k] for k in ("case", "ok", "fails", "memories", "dates")})
        print(json.dumps(row, ensure_ascii=False), flush=True)
    line = {"benchmark": "regression_precision", "cases": len(cases), "passed": passed,
            "tokens_per_case": tokens / max(1, len(cases)), "llm": cfg.llm.backend, **run_fields(),
            "cases_detail": detail}
    print(json.dumps({k: v for k, v in line.items() if k != "cases_detail"}, ensure_ascii=False), flush=True)
    if args.append:
        append_line(args.append, line)
    return 0 if passed == len(cases) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=str(CASES))
    ap.add_argument("--llm")
    ap.add_argument("--llm-url")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--append", type=Path, help="append the summary line (with commit, date, machine) to this results file")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
