"""LongMemEval QA (xiaowu0162/LongMemEval ``_s`` / ``_m`` / ``_oracle`` files).

Per question record: its haystack sessions are extracted through the engine (a session id
shared by several records is extracted once per variant), the question is answered from
the memory of that record's haystack (top-k retrieval, ProMem §4.1) with the question date
prefixed (``[Current date: YYYY-MM-DD] ...``, since temporal questions are relative to
it), and judged. Accuracy is reported per ``question_type``; abstention questions
(``question_id`` ending ``_abs``) also form their own bucket ``abstention`` and count as
correct when the system declines (judge label ``Omission``) or the judge finds the answer
``Correct`` against the gold "not answerable" explanation.

``--samples`` selects question ids, ``--max-questions`` caps the records, ``--sessions``
keeps 1-based positions inside each haystack (small slices; the oracle file holds only
the evidence sessions).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..config import Config
from ..context import Services
from ..io import load_longmemeval
from ..io._common import parse_session_selection
from .ablation import VARIANT_LABELS, fmt_int, fmt_sec, format_table, pct
from .harness import (
    EvalOptions,
    answer_timed,
    extract_sessions,
    gather_limited,
    header_lines,
    mean,
    models_label,
    qa_services,
    save_graphs,
)
from .judges import QAItem, make_judge

logger = logging.getLogger(__name__)


def is_correct(label: Any, abstention: bool) -> bool:
    """Judge label -> correct? (abstention: Omission or Correct; otherwise Correct only)."""
    return label == "Correct" or (abstention and label == "Omission")


async def evaluate_longmemeval(path: Path, config: Config, services: Services, opts: EvalOptions,
                               out_dir: Path) -> tuple[dict, str]:
    """Per-type QA accuracy for every variant; returns (results dict, markdown section)."""
    items = load_longmemeval(Path(path))
    if opts.samples:
        known = {it.question_id for it in items}
        missing = [q for q in opts.samples if q not in known]
        if missing:
            raise ValueError(f"{path}: no LongMemEval question_id(s) {missing}")
        items = [it for it in items if it.question_id in set(opts.samples)]
    if opts.max_questions is not None:
        items = items[: opts.max_questions]
    select = parse_session_selection(opts.sessions)
    haystacks = []
    for it in items:
        hs = [s for n, s in enumerate(it.haystack, 1) if select is None or n in select]
        haystacks.append(hs)
    unique: dict[str, Any] = {}
    for hs in haystacks:
        for s in hs:
            unique.setdefault(s.session_id, s)
    svc = qa_services(services)
    judge_kw = {"top_k": opts.judge_top_k} if opts.judge == "llm" else {"lo": opts.nli_lo, "hi": opts.nli_hi}
    judge = make_judge(opts.judge, svc, **judge_kw)
    top_k = opts.top_k or config.pipeline.top_k
    results: dict[str, Any] = {"benchmark": "longmemeval", "judge": opts.judge, "judge_is_proxy": judge.proxy,
                               "top_k": top_k, "questions": len(items), "variants": {}}
    rows, models = [], {}
    types = sorted({it.question_type for it in items})
    for v in opts.variants:
        failed_before = judge.stats.failed.copy()
        extracted = await extract_sessions(list(unique.values()), config, services, v, opts.concurrency)
        save_graphs(extracted, opts.graphs_dir, v)
        models = models or models_label(extracted, services, config, judge)
        graph_of = {e.session.session_id: e.graph for e in extracted}
        qtexts = []
        for it in items:
            d = it.question_date.date().isoformat() if it.question_date else None
            qtexts.append(f"[Current date: {d}] {it.question}" if d else it.question)
        answers = await gather_limited(
            [answer_timed(q, [graph_of[s.session_id] for s in hs if graph_of.get(s.session_id) is not None], svc, top_k)
             for q, hs in zip(qtexts, haystacks)],
            opts.concurrency,
        )
        labels = await judge.qa([QAItem(it.question, it.answer, "", a.result.answer) for it, a in zip(items, answers)])
        recs = [{"question_id": it.question_id, "question_type": it.question_type, "abstention": it.abstention,
                 "question": it.question, "answer": it.answer, "system_response": a.result.answer, "label": lab,
                 "correct": is_correct(lab, it.abstention), "search_duration_ms": a.search_duration_ms}
                for it, a, lab in zip(items, answers, labels)]
        by_type: dict[str, list[bool]] = defaultdict(list)
        for r in recs:
            by_type[r["question_type"]].append(r["correct"])
            if r["abstention"]:
                by_type["abstention"].append(r["correct"])
        agg = {
            "accuracy": mean([float(r["correct"]) for r in recs]),
            "accuracy_by_type": {t: mean([float(x) for x in xs]) for t, xs in sorted(by_type.items())},
            "n_by_type": {t: len(xs) for t, xs in sorted(by_type.items())},
            "judge_failed": dict(judge.stats.failed - failed_before),
            "tokens_per_session": mean([e.tokens for e in extracted if e.graph is not None]),
            "seconds_per_session": mean([e.seconds for e in extracted]),
            "sessions": len(extracted), "sessions_failed": sum(e.graph is None for e in extracted),
            "per_question": recs,
        }
        results["variants"][v] = agg
        rows.append({"label": f"{VARIANT_LABELS.get(v, v)} ({v})", "accuracy": agg["accuracy"],
                     **{f"t:{t}": x for t, x in agg["accuracy_by_type"].items()},
                     "tokens_per_session": agg["tokens_per_session"], "seconds_per_session": agg["seconds_per_session"]})
    results["models"] = models
    results["judge_stats"] = judge.stats.as_dict()
    bucket = types + (["abstention"] if any(it.abstention for it in items) else [])
    cols = [("Method", "label", str)] + [(t, f"t:{t}", pct) for t in bucket] + [
        ("Overall", "accuracy", pct),
        ("Tokens / session", "tokens_per_session", fmt_int),
        ("Seconds / session", "seconds_per_session", fmt_sec),
    ]
    md = header_lines("LongMemEval", models, judge.proxy)
    md += ["QA accuracy by question type:", "", format_table(rows, cols), ""]
    for v in opts.variants:
        a = results["variants"][v]
        md.append(f"- {v}: {len(items)} questions, {a['sessions']} sessions ({a['sessions_failed']} failed), "
                  f"judge outputs unusable: {a['judge_failed'] or 0}")
    return results, "\n".join(md) + "\n"
