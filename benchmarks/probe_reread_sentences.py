"""Does the re-read of a user turn (completeness check on details) write truer facts when it
is shown only the sentences that hold its missing details? A probe over the re-reads of
stored runs, no pipeline.

For each (session, turn) that a stored ``promem`` run re-read (a recovered entry of origin
"detail" cites it), the missing details are approximated from the graph: the turn's details
that no entry other than a recovered one states (every content word), kept as the pipeline
keeps them (said in what the turn says of its speaker, :func:`screen.own_statements`, and not
filler). Two requests per turn go to the embedded model in one batch, greedy decoding:
``own``, the speaker's own sentences (the re-read of a turn with a detail that is no name,
since d8f1f58), and ``detail_sentences``, only those of them that hold a missing detail. Turns whose missing details sit in every own sentence
are skipped (both requests would be the same). Prints one JSON line with both answers per
turn, for a reader to label; the answers are not scored here.

    python benchmarks/probe_reread_sentences.py --commits 6dff6ef,5001b75 \
        --append benchmarks/results/probe_reread_sentences.jsonl

About 1 minute per 10 turns on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from promem_fast.prompts.common import turn_line  # noqa: E402
from promem_fast.prompts.extract import recover_request  # noqa: E402
from promem_fast.stages import screen  # noqa: E402
from promem_fast.stages.extract import content_words, word_in  # noqa: E402


def _states_all(words: list[str], text: str) -> bool:
    return bool(words) and all(word_in(w, text.lower(), pair_share=0.5) for w in words)


def cases(graphs_path: Path, sessions: dict) -> list[dict]:
    """The re-read turns of one graphs file, with their approximate missing details."""
    out = []
    for line in graphs_path.read_text(encoding="utf-8").splitlines():
        g = json.loads(line)
        s = sessions.get(g["session_id"])
        if s is None:
            continue
        live = [e for e in g["events"] if e["status"] != "discarded"]
        stated = [e["text"] for e in live if e["status"] != "recovered"]
        others = sorted({t.speaker for t in s.turns if t.speaker and t.speaker != s.user_name})
        for tid in dict.fromkeys(t for e in live if e["status"] == "recovered" and e["origin"] == "detail"
                                 for t in e["source_turn_ids"]):
            turn = next((t for t in s.turns if t.turn_id == tid), None)
            if turn is None:
                continue
            own = screen.own_statements(turn.content)
            missing = list(dict.fromkeys(
                d["text"] for d in g["details"] if d["turn_id"] == tid
                and not any(_states_all(content_words(d["text"]), x) for x in stated)
                and own and screen.support(d["text"], s.user_name, own) == 1.0
                and not screen.is_filler(d["text"], s.user_name, others)))
            if not missing:
                continue
            sents = [x.strip() for x in screen._SENTENCE_END.split(own) if x.strip()]
            holding = [x for x in sents if any(_states_all(content_words(d), x) for d in missing)]
            if not holding or len(holding) == len(sents):
                continue
            out.append({"session_id": g["session_id"], "turn_id": tid, "user_name": s.user_name,
                        "missing": missing, "own": own, "detail_sentences": " ".join(holding),
                        "stored": [e["text"] for e in live if e["status"] == "recovered"
                                   and e["origin"] == "detail" and tid in e["source_turn_ids"]],
                        "turn": turn})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--commits", required=True,
                    help="comma-separated commits of benchmarks/results/artifacts/precision_*")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/data")
    ap.add_argument("--append", type=Path, default=None, help="results file to append the JSON line to")
    args = ap.parse_args(argv)

    from bench_precision import load_slice

    from promem_fast.backends.registry import create_llm
    from promem_fast.config import Config
    from promem_fast.results_log import append_line, run_fields

    sessions = {s.session_id: s for sl in ("locomo", "halumem") for s in load_slice(sl, args.data)}
    todo: dict[tuple[str, str, tuple[str, ...]], dict] = {}
    for c in args.commits.split(","):
        for sl in ("locomo", "halumem"):
            path = ROOT / f"benchmarks/results/artifacts/precision_{c}/{sl}-promem.jsonl"
            for case in cases(path, sessions):
                todo.setdefault((case["session_id"], case["turn_id"], tuple(case["missing"])), case)
    cfg = Config()
    p = cfg.pipeline
    reqs, meta = [], []
    for case in todo.values():
        per = p.recovered_facts_per_detail
        n = min(p.max_recovered_facts, per * len(case["missing"])) if per else p.max_recovered_facts
        turn = case.pop("turn")
        for key in ("own", "detail_sentences"):
            line = turn_line(turn.model_copy(update={"content": case[key]}), case["user_name"])
            reqs.append(recover_request(line, case["user_name"], case["missing"], n))
        meta.append(case)
    llm = create_llm(cfg.llm, cache_dir=cfg.cache_dir)  # only the LLM: the probe needs no NLI or embeddings
    outs = asyncio.run(llm.generate(reqs))
    for k, m in enumerate(meta):
        m["answer_own"] = outs[2 * k].text.strip()
        m["answer_detail_sentences"] = outs[2 * k + 1].text.strip()
    rec = {"bench": "probe_reread_sentences", **run_fields(), "commits": args.commits,
           "llm": getattr(llm, "model_name", llm.name), "cases": meta}
    print(json.dumps(rec, ensure_ascii=False))
    if args.append:
        append_line(args.append, rec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
