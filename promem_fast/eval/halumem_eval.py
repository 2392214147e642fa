"""HaluMem evaluation: extract, answer, write HaluMem's output file, and score.

Protocol (HaluMem ``eval/eval_memos.py`` + ``eval/evaluation.py``, our implementation):

1. every session of a user is extracted through the engine (``add_dialogue_duration_ms`` =
   the session's extraction wall time);
2. each question of session *n* is answered from the memory of sessions 1..n of that user
   (top-k retrieval, ProMem §4.1; ``search_duration_ms`` = the retrieval step);
3. memory update (HaluMem ``eval_memos.py``): for every memory point of session *n* with
   ``is_update == "True"`` and non-empty ``original_memories``, the top-``update_top_k``
   (default 10) memory units of sessions 1..n are retrieved with the point's
   ``memory_content`` as query (the same retrieval as QA; ``search_duration_ms`` per point)
   and kept as its ``memories_from_system`` (rendered unit texts, best first);
4. ``DIR/promem_fast-{variant}/promem_fast_eval_results.jsonl`` is written in HaluMem's
   contract (:mod:`.halumem_output`) so its official scorer can read it, update points
   carrying their ``memories_from_system``;
5. scores, split as HaluMem ``evaluation.py`` splits them: an update point with a non-empty
   ``memories_from_system`` is judged by the update judge (``Correct`` | ``Hallucination``
   | ``Omission`` | ``Other``) and left out of integrity; every other point (an update
   point whose retrieval found nothing included) is judged for integrity. Reported:
   memory integrity over the session's integrity points against that session's extracted
   entries (interference points excluded from recall, importance-weighted recall
   alongside), memory accuracy of each extracted entry (HaluMem's "target precision" is
   Mem. Acc.), F1 of the two, update accuracy / hallucination / omission rates
   (:func:`~.metrics.update_rates`, over update points), QA accuracy / hallucination /
   omission rates.

Extracted entries are the retrieval units of :func:`promem_fast.qa.memory_units`: an event
with its date, anchored details and relations, i.e. exactly what QA retrieves.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional, Sequence

from ..config import Config
from ..context import Services
from ..qa import memory_units, retrieve
from ..schema import Session
from .ablation import VARIANT_LABELS, fmt_int, fmt_sec, format_table, pct
from .halumem_output import (
    HaluMemAnswer,
    HaluMemSessionResult,
    write_halumem_output,
)
from .harness import (
    EvalOptions,
    ExtractedSession,
    answer_timed,
    dialogue_text,
    gather_limited,
    graph_entries,
    mean,
    start_qa_run,
)
from .judges import QAItem, UpdateItem
from .precision import halumem_gold, markdown_table
from .metrics import (
    extraction_f1,
    memory_accuracy,
    memory_integrity,
    qa_rates,
    update_rates,
)

logger = logging.getLogger(__name__)

FRAME = "promem_fast"

TABLE_COLUMNS = [
    ("Method", "label", str),
    ("Mem. Int.", "integrity", pct),
    ("Mem. Acc.", "accuracy", pct),
    ("QA Acc.", "qa_accuracy", pct),
    ("QA Halu.", "qa_hallucination", pct),
    ("QA Om.", "qa_omission", pct),
    ("Upd. Acc.", "update_accuracy", pct),
    ("Upd. Halu.", "update_hallucination", pct),
    ("Upd. Om.", "update_omission", pct),
    ("Tokens / session", "tokens_per_session", fmt_int),
    ("Seconds / session", "seconds_per_session", fmt_sec),
]


def _cap_questions(sessions: Sequence[Session], max_questions: Optional[int]) -> list[Session]:
    if max_questions is None:
        return list(sessions)
    out = []
    for s in sessions:
        qs = s.metadata.get("questions") or []
        if len(qs) > max_questions:
            s = s.model_copy(update={"metadata": {**s.metadata, "questions": qs[:max_questions]}})
        out.append(s)
    return out


def _importance(p: dict) -> float:
    try:
        return float(p.get("importance", 1.0))
    except (TypeError, ValueError):
        return 1.0


def _is_update_point(p: dict) -> bool:
    """HaluMem's memory-update selection (``eval_memos.py``): ``is_update == "True"`` (a
    string in the data set) and non-empty ``original_memories``."""
    return str(p.get("is_update")) == "True" and bool(p.get("original_memories"))


async def _update_retrieval(points: list, graphs: list, svc: Services, update_top_k: int) -> dict[int, tuple[list[str], float]]:
    """For each update point (:func:`_is_update_point`), by index in ``points``: (rendered
    texts of the top-``update_top_k`` memory units of ``graphs``, best first, with the
    point's ``memory_content`` as query; retrieval wall time in ms)."""
    idxs = [i for i, p in enumerate(points) if _is_update_point(p)]
    if not idxs:
        return {}
    units = memory_units(graphs)
    out = {}
    for i in idxs:
        t0 = time.perf_counter()
        hits, _ = await retrieve(str(points[i].get("memory_content", "")), units, svc, update_top_k)
        out[i] = ([u.render() for u in hits], (time.perf_counter() - t0) * 1000.0)
    return out


def gold_texts(points: Sequence[dict]) -> list[str]:
    """``memory_content`` of the points that are not interference (HaluMem ``memory_source``):
    the reference list of the accuracy judge."""
    return [str(p.get("memory_content", "")) for p in points if p.get("memory_source") != "interference"]


async def judge_memories(judge: Any, points: Sequence[dict], integrity_idx: Sequence[int],
                         memories: Sequence[str], dialogue: str, *,
                         sources: Optional[Sequence[str]] = None,
                         hypotheses: Optional[Sequence[str]] = None) -> tuple[dict[int, Any], list[tuple]]:
    """Integrity of ``points[i]`` for ``i`` in ``integrity_idx`` against ``memories``, and the
    accuracy of each memory against ``dialogue`` (``[timestamp]role: content`` lines) with
    :func:`gold_texts` as reference. Returns ({point index: 0/1/2 or None},
    [(0/1/2 or None, included_in_gold) per memory]). Used by :func:`evaluate_halumem` and by
    ``benchmarks/judge_halumem_output.py`` so both judge one way."""
    texts = [str(points[i].get("memory_content", "")) for i in integrity_idx]
    integ = dict(zip(integrity_idx, await judge.integrity(texts, list(memories))))
    acc = await judge.accuracy(list(memories), dialogue=dialogue, gold_points=gold_texts(points),
                               sources=sources, hypotheses=hypotheses)
    return integ, acc


async def _session_eval(ex: ExtractedSession, history: list, svc: Services, judge: Any,
                        top_k: int, concurrency: int, update_top_k: int = 10) -> dict:
    """Answer and judge one session; returns its per-item record.

    ``rec["memories_from_system"]`` / ``rec["update_search_ms"]`` (index in
    ``memory_points`` -> retrieved texts / ms) feed the HaluMem output file;
    ``rec["update_points"]`` holds the update-judged points, ``rec["points"]`` the
    integrity-judged ones.
    """
    s = ex.session
    md = s.metadata
    entries = graph_entries(ex.graph, s)
    graphs = [g for g in history if g is not None]
    questions = md.get("questions") or []
    answers = await gather_limited([answer_timed(q["question"], graphs, svc, top_k) for q in questions], concurrency)
    rec: dict[str, Any] = {
        "session_id": s.session_id, "uuid": md.get("uuid"), "session_number": md.get("session_number"),
        "error": ex.error, "seconds": ex.seconds, "tokens": ex.tokens,
        "entries": [e.text for e in entries], "answers": answers,
        "memories_from_system": {}, "update_search_ms": {},
    }
    if md.get("is_generated_qa_session"):
        rec.update(points=[], update_points=[], entry_scores=[], questions=[])
        return rec
    points = md.get("memory_points") or []
    texts = [str(p.get("memory_content", "")) for p in points]
    retrieved = await _update_retrieval(points, graphs, svc, update_top_k)
    rec["memories_from_system"] = {i: m for i, (m, _) in retrieved.items() if m}
    rec["update_search_ms"] = {i: ms for i, (m, ms) in retrieved.items() if m}
    # HaluMem evaluation.py: update judge only when memories_from_system is non-empty
    upd_idx = sorted(rec["memories_from_system"])
    int_idx = [i for i in range(len(points)) if i not in rec["memories_from_system"]]
    upd_labels = await judge.update([
        UpdateItem(texts[i], [str(o) for o in points[i].get("original_memories") or []],
                   rec["memories_from_system"][i]) for i in upd_idx])
    rec["update_points"] = [
        {"index": i, "memory_content": texts[i], "memory_type": points[i].get("memory_type"),
         "original_memories": points[i].get("original_memories"),
         "memories_from_system": rec["memories_from_system"][i], "label": lab,
         "search_duration_ms": rec["update_search_ms"][i]}
        for i, lab in zip(upd_idx, upd_labels)
    ]
    integ, acc = await judge_memories(judge, points, int_idx, [e.text for e in entries], dialogue_text(s),
                                      sources=[e.source for e in entries], hypotheses=[e.plain for e in entries])
    items = [QAItem(q["question"], q.get("answer", ""),
                    "\n".join(str(ev.get("memory_content", "")) for ev in q.get("evidence") or [] if isinstance(ev, dict)),
                    a.result.answer) for q, a in zip(questions, answers)]
    labels = await judge.qa(items)
    rec["points"] = [
        {"memory_content": texts[i], "memory_type": points[i].get("memory_type"),
         "memory_source": points[i].get("memory_source"), "importance": _importance(points[i]),
         "interference": points[i].get("memory_source") == "interference", "score": integ[i]}
        for i in int_idx
    ]
    rec["entry_scores"] = [{"entry": e.text, "score": sc, "included_in_gold": inc} for e, (sc, inc) in zip(entries, acc)]
    rec["questions"] = [
        {"question": q["question"], "answer": q.get("answer"), "question_type": q.get("question_type"),
         "system_response": a.result.answer, "label": lab, "search_duration_ms": a.search_duration_ms,
         "response_duration_ms": a.response_duration_ms}
        for q, a, lab in zip(questions, answers, labels)
    ]
    return rec


def _aggregate(records: list[dict], extracted: list[ExtractedSession]) -> dict:
    pts = [p for r in records for p in r["points"]]
    integ = memory_integrity([p["score"] for p in pts], importance=[p["importance"] for p in pts],
                             interference=[p["interference"] for p in pts])
    ents = [e for r in records for e in r["entry_scores"]]
    acc = memory_accuracy([e["score"] for e in ents], included_in_gold=[e["included_in_gold"] for e in ents])
    qs = [q for r in records for q in r["questions"]]
    qa = qa_rates([q["label"] for q in qs])
    ups = [u for r in records for u in r["update_points"]]
    upd = update_rates([u["label"] for u in ups])
    by_type: dict[str, list] = defaultdict(list)
    for p in pts:
        by_type[str(p["memory_type"])].append(p)
    integ_by_type = {
        t: memory_integrity([p["score"] for p in ps], importance=[p["importance"] for p in ps],
                            interference=[p["interference"] for p in ps]).as_dict()
        for t, ps in sorted(by_type.items())
    }
    qa_by_type: dict[str, list] = defaultdict(list)
    for q in qs:
        qa_by_type[str(q["question_type"])].append(q["label"])
    ok = [e for e in extracted if e.graph is not None]
    return {
        "integrity": integ.recall, "accuracy": acc.target_accuracy,
        "f1": extraction_f1(integ.recall, acc.target_accuracy),
        "qa_accuracy": qa.accuracy, "qa_hallucination": qa.hallucination_rate, "qa_omission": qa.omission_rate,
        "update_accuracy": upd.accuracy, "update_hallucination": upd.hallucination_rate,
        "update_omission": upd.omission_rate,
        "tokens_per_session": mean([e.tokens for e in ok]),
        "seconds_per_session": mean([e.seconds for e in extracted]),
        "memory_integrity": integ.as_dict(), "memory_accuracy": acc.as_dict(), "qa": qa.as_dict(),
        "memory_update": upd.as_dict(),
        "memory_integrity_by_type": integ_by_type,
        "qa_by_question_type": {t: qa_rates(ls).as_dict() for t, ls in sorted(qa_by_type.items())},
        "sessions": len(extracted), "sessions_failed": len(extracted) - len(ok),
        "search_duration_ms_mean": mean([q["search_duration_ms"] for q in qs]),
        "update_search_duration_ms_mean": mean([u["search_duration_ms"] for u in ups]),
    }


async def evaluate_halumem(sessions: Sequence[Session], config: Config, services: Services,
                           opts: EvalOptions, out_dir: Path) -> tuple[dict, str]:
    """Run the HaluMem protocol (module docstring) for every variant in ``opts.variants``.

    Returns (results dict, markdown section). Writes one HaluMem output file per variant.
    """
    sessions = _cap_questions(sessions, opts.max_questions)
    run = start_qa_run("halumem", config, services, opts)
    svc, judge, top_k, results = run.svc, run.judge, run.top_k, run.results
    if opts.update_top_k < 1:
        raise ValueError(f"update_top_k must be >= 1, got {opts.update_top_k}")
    results["update_top_k"] = opts.update_top_k
    rows = []
    async for v, extracted, failed_before in run.extract_variants(sessions, config, services, opts):
        by_user: dict[str, list[int]] = defaultdict(list)
        for i, e in enumerate(extracted):
            by_user[str(e.session.metadata.get("uuid"))].append(i)
        history: dict[int, list] = {}
        for idxs in by_user.values():
            idxs.sort(key=lambda i: extracted[i].session.metadata.get("session_number", 0))
            for k, i in enumerate(idxs):
                history[i] = [extracted[j].graph for j in idxs[: k + 1]]
        records = await gather_limited(
            [_session_eval(e, history[i], svc, judge, top_k, opts.concurrency, opts.update_top_k)
             for i, e in enumerate(extracted)],
            opts.concurrency,
        )
        out_file = write_halumem_output(
            [HaluMemSessionResult(
                session=e.session, extracted_memories=r["entries"], add_dialogue_duration_ms=e.seconds * 1000.0,
                answers=[HaluMemAnswer(a.result.answer, a.search_duration_ms, context=a.context,
                                       response_duration_ms=a.response_duration_ms) for a in r["answers"]],
                memories_from_system=r["memories_from_system"], update_search_duration_ms=r["update_search_ms"])
             for e, r in zip(extracted, records)],
            out_dir, frame=FRAME, version=v,
        )
        agg = _aggregate(records, extracted)
        agg["judge_free"] = await run.precision(v, extracted, halumem_gold)
        for r in records:
            for k in ("answers", "memories_from_system", "update_search_ms"):  # in the output file / update_points
                r.pop(k)
        agg["halumem_output"] = str(out_file)
        agg["judge_failed"] = dict(judge.stats.failed - failed_before)
        agg["per_session"] = records
        results["variants"][v] = agg
        rows.append({"label": f"{VARIANT_LABELS.get(v, v)} ({v})", **agg})
    md = run.report_head("HaluMem")
    md.append(format_table(rows, TABLE_COLUMNS))
    md.append("")
    md += ["Judge-free measures (MiniLM cosine against the gold memory points; reviewed precision "
           "from the labels file when given):", "",
           markdown_table([(r["label"], r["judge_free"]) for r in rows]), ""]
    review = run.write_review(out_dir)
    results["review_file"] = str(review) if review else None
    md.append("Mem. Int. = recall of gold memory points scored 2 (interference points and update-judged "
              "points excluded); Mem. Acc. = target precision of extracted entries; Upd. rates over update "
              f"memory points (top-{opts.update_top_k} memories retrieved per point, HaluMem's update judge); "
              "QA rates over all questions. "
              "Every number, including weighted recall and the judge-failure counts, is in results.json.")
    for v in opts.variants:
        a = results["variants"][v]
        md.append(f"- {v}: Mem. F1 {pct(a['f1'])}, weighted recall {pct(a['memory_integrity']['weighted_recall'])}, "
                  f"update points judged {a['memory_update']['n']} "
                  f"(other {pct(a['memory_update']['other_rate'])}), "
                  f"{a['sessions']} sessions ({a['sessions_failed']} failed), "
                  f"judge outputs unusable (recorded as None, excluded from *_valid): {a['judge_failed'] or 0}, "
                  f"HaluMem output {a['halumem_output']}")
    return results, "\n".join(md) + "\n"
