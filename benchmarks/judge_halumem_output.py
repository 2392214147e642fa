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
        OUT/promem_fast-one-off/promem_fast_eval_results.jsonl
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


async def score_file(path: Path, judge) -> dict:
    from promem_fast.eval.halumem_eval import _importance
    from promem_fast.eval.metrics import extraction_f1, memory_accuracy, memory_integrity

    t0 = time.perf_counter()
    scores, importance, interference, acc_scores, included = [], [], [], [], []
    n_sessions = 0
    per_session = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        user = json.loads(line)
        for k, s in enumerate(user.get("sessions", [])):
            all_points = s.get("memory_points") or []
            if s.get("is_generated_qa_session") or not all_points:  # nothing to judge
                continue
            # update-judged points leave integrity only (as in halumem_eval); gold keeps them
            points = [p for p in all_points if not p.get("memories_from_system")]
            n_sessions += 1
            memories = [str(m) for m in s.get("extracted_memories") or []]
            texts = [str(p.get("memory_content", "")) for p in points]
            s_int = await judge.integrity(texts, memories)
            scores += s_int
            importance += [_importance(p) for p in points]
            interference += [p.get("memory_source") == "interference" for p in points]
            gold = [str(p.get("memory_content", "")) for p in all_points if p.get("memory_source") != "interference"]
            s_acc = await judge.accuracy(memories, dialogue=dialogue_lines(s.get("dialogue") or []),
                                         gold_points=gold)
            for sc, inc in s_acc:
                acc_scores.append(sc)
                included.append(inc)
            per_session.append({"user": user.get("uuid"), "session_index": k, "integrity_scores": s_int,
                                "accuracy_scores": [sc for sc, _ in s_acc], "included": [inc for _, inc in s_acc]})
            logging.getLogger(__name__).info("%s: session %d judged (%d points, %d memories)",
                                             path.name, k, len(s_int), len(s_acc))
    integ = memory_integrity(scores, importance=importance, interference=interference)
    acc = memory_accuracy(acc_scores, included_in_gold=included)
    return {
        "file": str(path), "sessions": n_sessions,
        "integrity": integ.recall, "weighted_recall": integ.weighted_recall,
        "accuracy": acc.target_accuracy, "f1": extraction_f1(integ.recall, acc.target_accuracy),
        "points": len(scores), "memories": len(acc_scores),
        "integrity_scores": {k: scores.count(k) for k in (0, 1, 2, None)},
        "accuracy_scores": {k: acc_scores.count(k) for k in (0, 1, 2, None)},
        "seconds": round(time.perf_counter() - t0, 1),
        "per_session": per_session,
    }


async def amain(args) -> None:
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
    for f in args.files:
        judge = LLMJudge(svc.llm, embed, top_k=args.top_k)  # per file: its own judge stats
        rec = await score_file(Path(f), judge)
        rec.update(judge=f"llm ({getattr(svc.llm, 'model_name', args.llm)})", top_k=args.top_k,
                   judge_stats=judge.stats.as_dict(), date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        print(json.dumps(rec), flush=True)
    close = getattr(svc.llm, "close", None)
    if close:
        close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--llm", default="llamacpp")
    ap.add_argument("--llm-url")
    ap.add_argument("--llm-model")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--embed", default="onnx")
    ap.add_argument("--top-k", type=int, default=10, help="memories shown per memory point")
    ap.add_argument("-v", "--verbose", action="store_true", help="log each judge quote not found in the shown text")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.verbose:
        logging.getLogger("promem_fast.eval.judges").setLevel(logging.DEBUG)
    asyncio.run(amain(args))


if __name__ == "__main__":
    main()
