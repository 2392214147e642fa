"""Does the re-read of a user turn (completeness check on details) attribute better when the
prompt also shows the line before it? A probe on chosen LoCoMo turns, no pipeline.

For each (session, turn) of ``CASES`` it builds two requests for the embedded model
(``Config().llm``): today's :func:`~promem_fast.prompts.extract.recover_request` (the turn
alone) and the same instruction with the line before the turn (its last 40 words) shown first,
marked as context whose speaker is not the user. The missing details are the graph's details
of that turn (``--graphs``, a LoCoMo ``promem`` graphs file). Both requests go in one batch;
greedy decoding. Prints one JSON line with both answers per turn, for a reader to compare
(the answers are not scored here).

    python benchmarks/probe_reread_context.py --append benchmarks/results/probe_reread_context.jsonl

About 2 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from promem_fast.backends.base import LLMRequest  # noqa: E402
from promem_fast.prompts.common import turn_line  # noqa: E402
from promem_fast.prompts.extract import recover_request  # noqa: E402

# turns whose re-read was wrong or filler in labelled runs (the first six), and three whose
# re-read was correct, as a check that the context does not cost those
CASES = [("conv-26/session_3@Melanie", "D3:16"), ("conv-30/session_1@Jon", "D1:18"),
         ("conv-30/session_2@Gina", "D2:9"), ("conv-30/session_2@Jon", "D2:4"),
         ("conv-26/session_3@Caroline", "D3:11"), ("conv-30/session_2@Jon", "D2:6"),
         ("conv-30/session_1@Jon", "D1:6"), ("conv-30/session_2@Gina", "D2:5"),
         ("conv-26/session_1@Caroline", "D1:5")]
CONTEXT_WORDS = 40


def with_line_before(before: str, turn: str, user_name: str, missing: list[str], max_facts: int) -> LLMRequest:
    """recover_request's request with the line before the turn shown first, and one sentence
    that says what that line is for."""
    req = recover_request(turn, user_name, missing, max_facts)
    body = req.messages[-1]["content"]
    assert body.count("Turn: ") == 1 and body.count("Use only what the turn says") == 1, "recover_request changed"
    body = body.replace("Turn: ", f"Line before: {before}\nTurn: ").replace(
        "Use only what the turn says",
        "The line before is only there to show what the turn answers or refers to; what it says of its own "
        f"speaker is not about {user_name}. Use only what the turn says")
    return dataclasses.replace(req, messages=[*req.messages[:-1], {**req.messages[-1], "content": body}])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", type=Path,
                    default=ROOT / "benchmarks/results/artifacts/precision_9693a0b/locomo-promem.jsonl")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/data")
    ap.add_argument("--append", type=Path, default=None, help="results file to append the JSON line to")
    args = ap.parse_args(argv)

    from bench_precision import load_slice

    from promem_fast.backends.registry import create_llm
    from promem_fast.config import Config
    from promem_fast.results_log import append_line, run_fields

    sessions = {s.session_id: s for s in load_slice("locomo", args.data)}
    graphs = {g["session_id"]: g for g in map(json.loads, args.graphs.read_text().splitlines())}
    reqs, meta = [], []
    for sid, tid in CASES:
        s = sessions[sid]
        k = next(i for i, t in enumerate(s.turns) if t.turn_id == tid)
        speaker, text = turn_line(s.turns[k - 1], s.user_name).split(": ", 1)
        words = text.split()
        before = speaker + ": " + (text if len(words) <= CONTEXT_WORDS else "... " + " ".join(words[-CONTEXT_WORDS:]))
        missing = [d["text"] for d in graphs[sid]["details"] if d["turn_id"] == tid]
        n = min(4, 2 * max(len(missing), 1))
        line = turn_line(s.turns[k], s.user_name)
        reqs += [recover_request(line, s.user_name, missing, n), with_line_before(before, line, s.user_name, missing, n)]
        meta.append({"session_id": sid, "turn_id": tid, "missing": missing, "line_before": before})
    cfg = Config()
    llm = create_llm(cfg.llm, cache_dir=cfg.cache_dir)  # only the LLM: the probe needs no NLI or embeddings
    outs = asyncio.run(llm.generate(reqs))
    for k, m in enumerate(meta):
        m["turn_only"] = outs[2 * k].text.strip()
        m["with_line_before"] = outs[2 * k + 1].text.strip()
    rec = {"bench": "probe_reread_context", **run_fields(), "graphs": str(args.graphs.relative_to(ROOT))
           if args.graphs.is_relative_to(ROOT) else str(args.graphs), "llm": getattr(llm, "model_name", llm.name),
           "cases": meta}
    print(json.dumps(rec, ensure_ascii=False))
    if args.append:
        append_line(args.append, rec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
