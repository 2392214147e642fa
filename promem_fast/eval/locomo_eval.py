"""LoCoMo evaluation (snap-research/LoCoMo ``locomo10.json`` schema).

Per sample: its (selected) sessions are extracted through the engine; every question is
answered from the memory of those sessions (top-k retrieval, ProMem §4.1) and scored

* by LoCoMo's token-level F1 rule of its category (:func:`~.metrics.locomo_qa_score`:
  1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 adversarial only with
  ``--adversarial``, scored by the "no information available" / "not mentioned" rule);
* by the judge (``Correct`` counts as accurate; category 5 uses LoCoMo's own rule, since
  it has no gold answer).

Questions: the sample's ``qa`` list; with ``--sessions`` only those whose evidence dia_ids
all lie in the selected sessions. Memory: by default each session is extracted once per
speaker (each is the user once, as in Mem0's LoCoMo runs) and questions are answered from
both speakers' graphs; ``EvalOptions.speakers = "user"`` keeps one speaker. Integrity: per
extracted session, its user speaker's ``observation`` facts (``[[fact, dia_id]]``) judged 0/1/2 against that session's extracted
entries; ``evidence_hit_rate`` is the share of captured facts (score >= 1) whose most
similar entry (embedding cosine) cites the fact's dia_id among its source turns.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..config import Config
from ..context import Services
from ..io import load_sessions
from ..io._common import parse_session_selection, read_json
from ..schema import Session
from .ablation import VARIANT_LABELS, fmt_int, fmt_sec, format_table, pct
from .harness import (
    EvalOptions,
    answer_timed,
    gather_limited,
    graph_entries,
    mean,
    start_qa_run,
)
from .judges import QAItem
from .metrics import locomo_qa_score, memory_integrity
from .precision import locomo_gold, markdown_table

logger = logging.getLogger(__name__)

_DIA_RE = re.compile(r"D(\d+):(\d+)")


def _evidence_sessions(q: dict) -> set[int]:
    out: set[int] = set()
    for e in q.get("evidence") or []:
        if isinstance(e, str):
            out.update(int(m.group(1)) for m in _DIA_RE.finditer(e))
    return out


def select_questions(qa: Sequence[dict], *, selected: Optional[list[int]], adversarial: bool,
                     max_questions: Optional[int]) -> list[dict]:
    """The questions evaluated for one sample (rules in the module docstring), file order."""
    out = []
    for q in qa:
        try:
            cat = int(q.get("category"))
        except (TypeError, ValueError):
            logger.warning("LoCoMo question %r has no valid category; skipped", q.get("question"))
            continue
        if cat == 5 and not adversarial:
            continue
        if selected is not None:
            ev = _evidence_sessions(q)
            if not ev or not ev <= set(selected):
                continue
        out.append(q)
    return out[:max_questions] if max_questions is not None else out


def _observation_facts(obs: Any, speaker: str) -> list[tuple[str, list[str]]]:
    """(fact, dia_ids) of ``speaker`` in a ``session_N_observation`` dict."""
    if not isinstance(obs, dict):
        return []
    out = []
    for item in obs.get(speaker) or []:
        if isinstance(item, (list, tuple)) and item and isinstance(item[0], str):
            ev = item[1] if len(item) > 1 else []
            ids = [ev] if isinstance(ev, str) else [str(x) for x in ev] if isinstance(ev, list) else []
            ids = [m.group(0) for i in ids for m in _DIA_RE.finditer(i)]
            out.append((item[0], ids))
    return out


def _cat_key(c: int) -> str:
    return f"cat{c}"


async def evaluate_locomo(path: Path, config: Config, services: Services, opts: EvalOptions,
                          out_dir: Path) -> tuple[dict, str]:
    """LoCoMo QA per category and observation integrity for every variant; returns
    (results dict, markdown section)."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: LoCoMo file must be a JSON list of samples")
    ids = [str(s.get("sample_id")) for s in data if isinstance(s, dict)]
    wanted = opts.samples or ids
    missing = [x for x in wanted if x not in ids]
    if missing:
        raise ValueError(f"{path}: no LoCoMo sample(s) {missing}; available: {ids}")
    selected = parse_session_selection(opts.sessions)
    mode = opts.speakers or ("user" if opts.user_speaker else "both")
    if mode not in ("both", "user"):
        raise ValueError(f"speakers must be 'both' or 'user', not {opts.speakers!r}")
    if mode == "both" and opts.user_speaker:
        raise ValueError(f"speakers 'both' extracts every speaker; user_speaker {opts.user_speaker!r} needs speakers 'user'")
    both = mode == "both"
    users = ("speaker_a", "speaker_b") if both else (opts.user_speaker,)
    # with both speakers each is the user once; the ids say whose memory a graph is
    by_sample: dict[str, list[Session]] = {
        sid: [s.model_copy(update={"session_id": f"{s.session_id}@{s.user_name}"}) if both else s
              for sp in users
              for s in load_sessions(path, "locomo", sample=sid, sessions=opts.sessions, user_speaker=sp)]
        for sid in wanted
    }
    raw = {str(s.get("sample_id")): s for s in data if isinstance(s, dict)}
    questions = {sid: select_questions(raw[sid].get("qa") or [], selected=selected, adversarial=opts.adversarial,
                                       max_questions=opts.max_questions) for sid in wanted}
    all_sessions = [s for sid in wanted for s in by_sample[sid]]
    cats = [1, 2, 3, 4] + ([5] if opts.adversarial else [])
    run = start_qa_run("locomo", config, services, opts, samples=wanted, categories=cats,
                       speakers="both" if both else "user")
    svc, judge, top_k, results = run.svc, run.judge, run.top_k, run.results
    rows = []
    async for v, extracted, failed_before in run.extract_variants(all_sessions, config, services, opts):
        ex_by_sample: dict[str, list] = defaultdict(list)
        for e in extracted:
            ex_by_sample[e.session.metadata["sample_id"]].append(e)
        qrecs: list[dict] = []
        points: list[dict] = []
        for sid in wanted:
            exs = ex_by_sample[sid]
            graphs = [e.graph for e in exs if e.graph is not None]
            qs = questions[sid]
            answers = await gather_limited([answer_timed(q["question"], graphs, svc, top_k) for q in qs],
                                           opts.concurrency)
            normal = [i for i, q in enumerate(qs) if int(q["category"]) != 5]
            labels: list[Optional[str]] = [None] * len(qs)
            judged = await judge.qa([QAItem(qs[i]["question"], qs[i].get("answer", ""), "", answers[i].result.answer)
                                     for i in normal])
            for i, lab in zip(normal, judged):
                labels[i] = lab
            for q, a, lab in zip(qs, answers, labels):
                cat = int(q["category"])
                f1 = locomo_qa_score(a.result.answer, q.get("answer"), cat)
                if cat == 5:
                    lab = "Correct" if f1 == 1.0 else "Hallucination"
                qrecs.append({"sample_id": sid, "question": q["question"], "answer": q.get("answer"),
                              "category": cat, "system_response": a.result.answer, "f1": f1, "label": lab,
                              "search_duration_ms": a.search_duration_ms})
            for e in exs:
                speaker = e.session.metadata["speakers"]["user"]
                facts = _observation_facts(e.session.metadata.get("observation"), speaker)
                if not facts:
                    continue
                entries = graph_entries(e.graph, e.session)
                scores = await judge.integrity([f for f, _ in facts], [x.text for x in entries])
                if entries:
                    fv = await svc.embed.encode([f for f, _ in facts])
                    xv = await svc.embed.encode([x.text for x in entries])
                    best = np.argmax(np.asarray(fv) @ np.asarray(xv).T, axis=1)
                else:
                    best = [None] * len(facts)
                for (fact, dia), sc, b in zip(facts, scores, best):
                    hit = None if b is None else bool(set(dia) & set(entries[int(b)].turn_ids))
                    points.append({"session_id": e.session.session_id, "fact": fact, "dia_ids": dia,
                                   "score": sc, "evidence_hit": hit})
        integ = memory_integrity([p["score"] for p in points])
        captured = [p for p in points if p["score"] is not None and p["score"] >= 1 and p["evidence_hit"] is not None]
        agg: dict[str, Any] = {
            "integrity": integ.recall, "memory_integrity": integ.as_dict(),
            "evidence_hit_rate": mean([float(p["evidence_hit"]) for p in captured]),
            "f1": mean([q["f1"] for q in qrecs if q["category"] != 5]),
            "judge_accuracy": mean([float(q["label"] == "Correct") for q in qrecs if q["category"] != 5]),
            "questions": len(qrecs),
            "judge_failed": dict(judge.stats.failed - failed_before),
            "tokens_per_session": mean([e.tokens for e in extracted if e.graph is not None]),
            "seconds_per_session": mean([e.seconds for e in extracted]),
            "sessions": len(extracted), "sessions_failed": sum(e.graph is None for e in extracted),
        }
        for c in cats:
            cq = [q for q in qrecs if q["category"] == c]
            agg[f"f1_{_cat_key(c)}"] = mean([q["f1"] for q in cq])
            agg[f"judge_{_cat_key(c)}"] = mean([float(q["label"] == "Correct") for q in cq])
            agg[f"n_{_cat_key(c)}"] = len(cq)
        agg["judge_free"] = await run.precision(v, extracted, locomo_gold)
        agg["per_question"] = qrecs
        agg["per_point"] = points
        results["variants"][v] = agg
        rows.append({"label": f"{VARIANT_LABELS.get(v, v)} ({v})", **agg})
    f1_cols = [("Method", "label", str), ("Mem. Int.", "integrity", pct)]
    f1_cols += [(f"F1 cat {c}", f"f1_{_cat_key(c)}", pct) for c in cats]
    f1_cols += [("F1 (1-4)", "f1", pct), ("Tokens / session", "tokens_per_session", fmt_int),
                ("Seconds / session", "seconds_per_session", fmt_sec)]
    j_cols = [("Method", "label", str)] + [(f"Judge cat {c}", f"judge_{_cat_key(c)}", pct) for c in cats]
    j_cols += [("Judge (1-4)", "judge_accuracy", pct)]
    md = run.report_head("LoCoMo")
    md += ["Token-level F1 by question category (LoCoMo scorer):", "", format_table(rows, f1_cols), "",
           "Judge accuracy by category (category 5: LoCoMo's no-information rule):", "", format_table(rows, j_cols), "",
           "Judge-free measures (MiniLM cosine against the user speaker's observations; reviewed precision "
           "from the labels file when given):", "",
           markdown_table([(r["label"], r["judge_free"]) for r in rows]), ""]
    review = run.write_review(out_dir)
    results["review_file"] = str(review) if review else None
    for v in opts.variants:
        a = results["variants"][v]
        md.append(f"- {v}: {a['questions']} questions, evidence hit rate {pct(a['evidence_hit_rate'])}, "
                  f"{a['sessions']} sessions ({a['sessions_failed']} failed), "
                  f"judge outputs unusable: {a['judge_failed'] or 0}")
    return results, "\n".join(md) + "\n"
