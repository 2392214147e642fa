"""Score HaluMem output files with this project's LLM judge, without extracting again.

Reads one or more ``*_eval_results.jsonl`` files in HaluMem's output contract (written by
``promem-fast eval halumem`` or any other system: ``sessions[].memory_points``,
``sessions[].dialogue``, ``sessions[].extracted_memories``) and judges, per session, memory
integrity (every memory point against that session's extracted memories; interference
points excluded from recall by :func:`promem_fast.eval.metrics.memory_integrity`) and memory
accuracy (every extracted memory against the session's dialogue, lines
``[timestamp]role: content``). Update points and QA are not re-judged. Prints one JSON line
per file: integrity (recall of points scored 2), weighted recall, accuracy (target
precision), F1, item counts, the judge's ungrounded / unusable counts, seconds, and every
score per session (``per_session``). On the 2-core machine with the embedded judge one
variant of HaluMem user3 sessions 1-3 (88 points) takes about an hour.

The judge LLM is the configured one (default: the embedded Qwen2.5-Coder-1.5B, 4 sequences);
``--llm openai --llm-url URL --llm-model NAME`` points it at a server.

    python benchmarks/judge_halumem_output.py OUT/promem_fast-promem/promem_fast_eval_results.jsonl \
        OUT/promem_fast-one-off/promem_fast_eval_results.jsonl --verdicts verdicts.jsonl

``--verdicts FILE`` keeps every verdict (the judge's JSON and the text its quote must come
from), and ``--rescore FILE`` re-applies the quote check as it is now to those verdicts with
no LLM (seconds instead of an hour), so a change to the check is measured on the same verdicts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from pathlib import Path


def dialogue_lines(dialogue: list) -> str:
    """HaluMem's judge format, one ``[timestamp]role: content`` line per turn."""
    return "\n".join(f"[{t.get('timestamp', '')}]{t.get('role', '')}: {t.get('content', '')}"
                     for t in dialogue if isinstance(t, dict))


async def score_file(path: Path, judge, verdicts_out=None) -> dict:
    """Judge every session of one output file; with ``verdicts_out`` (a text file) also write
    one JSON line per session with the judge's verdicts (``LLMJudge(keep_verdicts=True)``)."""
    from promem_fast.eval.halumem_eval import _importance, judge_memories

    t0 = time.perf_counter()
    sessions = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        user = json.loads(line)
        for k, s in enumerate(user.get("sessions", [])):
            all_points = s.get("memory_points") or []
            if s.get("is_generated_qa_session") or not all_points:  # nothing to judge
                continue
            # update-judged points leave integrity only (as in halumem_eval); gold keeps them
            idx = [i for i, p in enumerate(all_points) if not p.get("memories_from_system")]
            points = [all_points[i] for i in idx]
            memories = [str(m) for m in s.get("extracted_memories") or []]
            first = len(judge.verdicts) if judge.verdicts is not None else 0
            integ, s_acc = await judge_memories(judge, all_points, idx, memories,
                                                dialogue_lines(s.get("dialogue") or []))
            s_int = [integ[i] for i in idx]
            sess = {"user": user.get("uuid"), "session_index": k, "integrity_scores": s_int,
                    "importance": [_importance(p) for p in points],
                    "interference": [p.get("memory_source") == "interference" for p in points],
                    "accuracy_scores": [sc for sc, _ in s_acc], "included": [inc for _, inc in s_acc]}
            sessions.append(sess)
            if verdicts_out is not None:
                verdicts_out.write(json.dumps({"file": str(path), **sess, "verdicts": judge.verdicts[first:]}) + "\n")
                verdicts_out.flush()
            logging.getLogger(__name__).info("%s: session %d judged (%d points, %d memories)",
                                             path.name, k, len(s_int), len(s_acc))
    return {"file": str(path), **aggregate(sessions), "seconds": round(time.perf_counter() - t0, 1)}


def aggregate(sessions: list[dict]) -> dict:
    """Integrity / accuracy / F1 over per-session score lists (``score_file``'s records)."""
    from promem_fast.eval.metrics import extraction_f1, memory_accuracy, memory_integrity

    scores = [x for s in sessions for x in s["integrity_scores"]]
    acc_scores = [x for s in sessions for x in s["accuracy_scores"]]
    integ = memory_integrity(scores, importance=[x for s in sessions for x in s["importance"]],
                             interference=[x for s in sessions for x in s["interference"]])
    acc = memory_accuracy(acc_scores, included_in_gold=[x for s in sessions for x in s["included"]])
    return {
        "sessions": len(sessions),
        "integrity": integ.recall, "weighted_recall": integ.weighted_recall,
        "accuracy": acc.target_accuracy, "f1": extraction_f1(integ.recall, acc.target_accuracy),
        "points": len(scores), "memories": len(acc_scores),
        "integrity_scores": {k: scores.count(k) for k in (0, 1, 2, None)},
        "accuracy_scores": {k: acc_scores.count(k) for k in (0, 1, 2, None)},
        "per_session": [{k: s[k] for k in ("user", "session_index", "integrity_scores", "accuracy_scores", "included")}
                        for s in sessions],
    }


def rescore(path: Path, min_overlap: float) -> list[dict]:
    """Re-apply the quote check (:func:`promem_fast.eval.judges.checked_score`, as it is now) to
    verdicts written by ``--verdicts``; no LLM. One record per judged output file."""
    from promem_fast.eval import judge_prompts as jp
    from promem_fast.eval.judges import checked_score

    by_file: dict[str, list[dict]] = {}
    ungrounded: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        integ, acc = [], []
        for v in rec["verdicts"]:
            out = v["output"]
            score, dropped = checked_score(jp.read_score(out, "score" if v["kind"] == "integrity" else "accuracy_score"),
                                           out, v["source"], min_overlap)
            if dropped:
                ungrounded.setdefault(rec["file"], {"integrity": 0, "accuracy": 0})[v["kind"]] += 1
            (integ if v["kind"] == "integrity" else acc).append(score)
        if len(integ) != len(rec["integrity_scores"]) or len(acc) != len(rec["accuracy_scores"]):
            raise ValueError(f"{path}: session {rec['session_index']} of {rec['file']}: verdict count "
                             "differs from the scores (file written without keep_verdicts?)")
        by_file.setdefault(rec["file"], []).append({**rec, "integrity_scores": integ, "accuracy_scores": acc})
    return [{"file": f, "rescored_from": str(path), **aggregate(sess),
             "ungrounded": ungrounded.get(f, {"integrity": 0, "accuracy": 0})} for f, sess in by_file.items()]


async def amain(args) -> None:
    if args.rescore:
        for rec in rescore(Path(args.rescore), args.min_overlap):
            print(json.dumps(rec), flush=True)
        return
    from promem_fast.config import Config
    from promem_fast.eval.judges import CachedEmbed, LLMJudge
    from promem_fast.eval.runner import build_services

    cfg = Config()
    upd = {"backend": args.llm, "parallel": args.parallel}
    if args.llm_url:
        upd["base_url"] = args.llm_url
    if args.llm_model:
        upd["model"] = args.llm_model
    cfg.llm = cfg.llm.model_copy(update=upd)
    cfg.embed = cfg.embed.model_copy(update={"backend": args.embed})
    svc = build_services(cfg)  # --llm scripted: the harness's scripted judge (smoke run)
    embed = CachedEmbed(svc.embed)
    vout = open(args.verdicts, "a") if args.verdicts else None
    for f in args.files:
        judge = LLMJudge(svc.llm, embed, top_k=args.top_k, min_evidence_overlap=args.min_overlap,
                         keep_verdicts=vout is not None)  # per file: its own judge stats
        rec = await score_file(Path(f), judge, vout)
        rec.update(judge=f"llm ({getattr(svc.llm, 'model_name', args.llm)})", top_k=args.top_k,
                   judge_stats=judge.stats.as_dict(), date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        print(json.dumps(rec), flush=True)
        if args.append_results:
            from promem_fast.results_log import append_line, run_fields

            append_line(args.append_results, {"benchmark": "judge_halumem", "run": args.run, **run_fields(),
                                              "artifacts": {"verdicts": args.verdicts} if args.verdicts else {}, **rec})
    if vout is not None:
        vout.close()
    close = getattr(svc.llm, "close", None)
    if close:
        close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--verdicts", help="append each session's judge verdicts (JSON lines) to this file")
    ap.add_argument("--rescore", metavar="VERDICTS",
                    help="no LLM: re-apply the current quote check to a --verdicts file and print the scores")
    ap.add_argument("--append-results", metavar="FILE",
                    help="also append each file's line (with commit, date, machine) to FILE, "
                         "e.g. benchmarks/results/judge_halumem.jsonl")
    ap.add_argument("--run", help="run name for those lines")
    ap.add_argument("--min-overlap", type=float, default=0.8, help="quote check threshold (judges.grounded)")
    ap.add_argument("--llm", default="llamacpp")
    ap.add_argument("--llm-url")
    ap.add_argument("--llm-model")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--embed", default="onnx")
    ap.add_argument("--top-k", type=int, default=10, help="memories shown per memory point")
    ap.add_argument("-v", "--verbose", action="store_true", help="log each judge quote not found in the shown text")
    args = ap.parse_args()
    if not args.files and not args.rescore:
        ap.error("give output files to judge, or --rescore VERDICTS")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.verbose:
        logging.getLogger("promem_fast.eval.judges").setLevel(logging.DEBUG)
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
