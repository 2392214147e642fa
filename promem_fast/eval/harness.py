"""Pieces shared by the benchmark runners: options, extraction through the engine, memory
entries of a graph, timed QA, model labels and the report files.

Extraction runs every session of a variant through
:func:`promem_fast.engine.scheduler.run_all` (the engine's scheduler and batched services),
so evaluation measures the code path users run. QA uses :func:`promem_fast.qa.answer`
(top-k retrieval, ProMem §4.1) over an embedding cache, timing retrieval separately.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Optional, Sequence

import numpy as np

from ..config import Config
from ..context import Services
from ..qa import QAResult, answer, memory_units, retrieve
from ..schema import MemoryGraph, Session
from .ablation import variant_config
from .judges import CachedEmbed, make_judge

logger = logging.getLogger(__name__)


@dataclass
class EvalOptions:
    """What to evaluate and how (filled from the ``eval`` command line).

    variants: names of :data:`~.ablation.VARIANTS`. judge: ``llm`` | ``nli``.
    max_questions: cap per session (HaluMem), per sample (LoCoMo), on records (LongMemEval).
    samples: LoCoMo sample ids / LongMemEval question ids / HaluMem uuids (None = all).
    sessions: session selection (``"1-3"``); LongMemEval: positions in each haystack.
    top_k: memory units retrieved per question (None = ``config.pipeline.top_k``, 20).
    judge_top_k: extracted memories shown to the LLM judge per gold point.
    update_top_k: HaluMem memory update: memories retrieved per update memory point
    (HaluMem's reference writer uses 10).
    nli_lo / nli_hi: cosine thresholds of the proxy judge.
    speakers: LoCoMo: ``"both"`` extracts every session once per speaker (each speaker is
    the user once, as in Mem0's LoCoMo runs; session ids get ``@<speaker>``) and retrieves
    the top-k over both speakers' graphs pooled (Mem0 takes top-k per speaker); ``"user"``
    only for ``user_speaker``. None: ``"user"`` when ``user_speaker`` is given, else
    ``"both"``. Other values, or ``"both"`` with ``user_speaker``, raise ValueError.
    graphs_dir: where each variant's extracted graphs are written as ``{variant}.jsonl``
    (:func:`save_graphs`; set to ``OUT/graphs`` by the ``eval`` runner; None: not written).
    labels: a reviewer's labels file (:func:`~.precision.load_labels`); each variant then
    also reports reviewed precision (:func:`~.precision.score_labels`).
    """

    variants: list[str] = field(default_factory=lambda: ["promem"])
    judge: str = "llm"
    max_questions: Optional[int] = None
    adversarial: bool = False
    samples: Optional[list[str]] = None
    sessions: Optional[str] = None
    user_speaker: Optional[str] = None
    speakers: Optional[str] = None
    top_k: Optional[int] = None
    judge_top_k: int = 10
    update_top_k: int = 10
    nli_lo: float = 0.6
    nli_hi: float = 0.8
    concurrency: int = 1
    graphs_dir: Optional[Path] = None
    labels: Optional[Path] = None


@dataclass
class Entry:
    """One extracted memory entry as evaluated: the rendered retrieval unit (event with its
    date, anchored details and relations) and the text of its source turns."""

    text: str
    source: str
    turn_ids: list[str] = field(default_factory=list)
    plain: str = ""  # the unit text without its date prefix (NLI hypothesis)


def graph_entries(graph: Optional[MemoryGraph], session: Session) -> list[Entry]:
    """Memory entries of ``graph`` (one per event, :func:`promem_fast.qa.memory_units`
    order); ``source`` joins the contents of the event's source turns and its details' turns."""
    if graph is None:
        return []
    content = {t.turn_id: t.content for t in session.turns}
    turns_of: dict[str, list[str]] = {e.id: list(e.source_turn_ids) for e in graph.events}
    for d in graph.details:
        for eid in d.event_ids:
            if eid in turns_of and d.turn_id not in turns_of[eid]:
                turns_of[eid].append(d.turn_id)
    out = []
    for u in memory_units([graph]):
        src = " ".join(content[t] for t in turns_of.get(u.event_id, []) if t in content)
        out.append(Entry(u.render(), src, list(turns_of.get(u.event_id, [])), u.text))
    return out


def dialogue_text(session: Session) -> str:
    """``[timestamp]role: content`` lines, HaluMem's judge format."""
    lines = []
    for t in session.turns:
        ts = t.timestamp.strftime("%b %d, %Y, %H:%M:%S") if t.timestamp else ""
        lines.append(f"[{ts}]{t.role}: {t.content}")
    return "\n".join(lines)


@dataclass
class ExtractedSession:
    """Extraction outcome of one session: graph (None if failed), error, wall seconds, tokens."""

    session: Session
    graph: Optional[MemoryGraph]
    error: Optional[str]
    seconds: float

    @property
    def tokens(self) -> int:
        g = self.graph
        return 0 if g is None else g.stats.prompt_tokens + g.stats.completion_tokens


async def extract_sessions(sessions: Sequence[Session], config: Config, services: Services,
                           variant: str, concurrency: int = 1) -> list[ExtractedSession]:
    """Extract ``sessions`` with variant ``variant`` through the engine; results in input order.

    A failed session keeps ``graph=None`` and its error string (logged); the others go on.
    """
    from ..engine.scheduler import build_extractor, run_all

    cfg = variant_config(config, variant)
    extractor, _ = build_extractor(cfg, services, engine="sequential" if concurrency <= 1 else "batched",
                                   concurrency=max(1, concurrency))
    results = await run_all(list(sessions), extractor, max(1, concurrency))
    out = []
    for s, r in zip(sessions, results):
        if r.error:
            logger.warning("variant %s: session %s failed: %s", variant, s.session_id, r.error)
        out.append(ExtractedSession(s, r.graph, r.error, r.seconds))
    return out


def save_graphs(extracted: Sequence[ExtractedSession], graphs_dir: Optional[Path], variant: str) -> Optional[Path]:
    """Write the graphs of ``extracted`` to ``graphs_dir/{variant}.jsonl`` (one MemoryGraph
    JSON per line, input order, failed sessions left out; ``promem-fast qa`` reads it) so a
    run's scores can be traced to what was extracted. Returns the path, None without a dir."""
    if graphs_dir is None:
        return None
    graphs_dir.mkdir(parents=True, exist_ok=True)
    path = graphs_dir / f"{variant}.jsonl"
    path.write_text("".join(e.graph.to_json(indent=None) + "\n" for e in extracted if e.graph is not None),
                    encoding="utf-8")
    return path


def qa_services(services: Services) -> Services:
    """Services for QA and judging: same backends, embeddings memoised."""
    embed = services.embed if isinstance(services.embed, CachedEmbed) else CachedEmbed(services.embed)
    return Services(llm=services.llm, nli=services.nli, embed=embed, xref=services.xref)


@dataclass
class QARun:
    """What every benchmark runner sets up before its variants (see :func:`start_qa_run`).

    svc: :func:`qa_services` of the runner's services. judge: the ``opts.judge`` judge
    (:func:`~.judges.make_judge`). top_k: memory units retrieved per question.
    results: the results dict, head filled in, ``"variants"`` empty.
    models: report model labels (:func:`models_label`), set by the first extracted variant.
    """

    svc: Services
    judge: Any
    top_k: int
    results: dict[str, Any]
    models: dict[str, str] = field(default_factory=dict)
    memories: dict[str, list] = field(default_factory=dict)
    labels: Optional[dict] = None

    async def precision(self, variant: str, extracted: Sequence[ExtractedSession], gold_fn) -> dict[str, Any]:
        """Judge-free measures of ``variant`` (:func:`~.precision.judge_free`, gold points from
        ``gold_fn(session)``), plus ``"reviewed"`` (:func:`~.precision.score_labels`) when a
        labels file was loaded. The memories are kept for :meth:`write_review`."""
        from .precision import judge_free, score_labels, session_memories

        mems = [session_memories(e.graph, e.session, gold_fn(e.session), e.seconds) for e in extracted]
        self.memories[variant] = mems
        out = await judge_free(mems, self.svc.embed)
        if self.labels is not None:
            out["reviewed"] = score_labels(mems, self.labels)
        return out

    def write_review(self, out_dir: Path) -> Optional[Path]:
        """Write ``out_dir/review.jsonl``, the blind labelling file of every variant's memories
        (:func:`~.precision.write_review_file`; memories already labelled are left out)."""
        from .precision import write_review_file

        if not self.memories:
            return None
        path = Path(out_dir) / "review.jsonl"
        write_review_file(self.memories, path, existing=self.labels)
        return path

    async def extract_variants(self, sessions: Sequence[Session], config: Config, services: Services,
                               opts: EvalOptions) -> AsyncIterator[tuple[str, list[ExtractedSession], Counter]]:
        """For each variant of ``opts.variants``, in order: ``(variant, extracted sessions
        (:func:`extract_sessions`), the judge's failure counts before this variant)``, so the
        caller reports the variant's own judge failures as ``judge.stats.failed - before``."""
        for v in opts.variants:
            failed_before = self.judge.stats.failed.copy()
            t0 = time.perf_counter()
            logger.info("variant %s: extracting %d session(s)", v, len(sessions))
            extracted = await extract_sessions(sessions, config, services, v, opts.concurrency)
            logger.info("variant %s: extracted in %.1f s; answering and judging", v, time.perf_counter() - t0)
            save_graphs(extracted, opts.graphs_dir, v)
            self.models = self.models or models_label(extracted, services, config, self.judge)
            yield v, extracted, failed_before

    def report_head(self, title: str) -> list[str]:
        """Record the model labels and the judge's stats in ``results``; return the report
        heading lines (:func:`header_lines`)."""
        self.results["models"] = self.models
        self.results["judge_stats"] = self.judge.stats.as_dict()
        return header_lines(title, self.models, self.judge.proxy)


def start_qa_run(benchmark: str, config: Config, services: Services, opts: EvalOptions,
                 **extra: Any) -> QARun:
    """QA services, judge and top-k of one benchmark run, and its results head.

    The judge gets ``opts.judge_top_k`` (``llm``) or the cosine thresholds ``opts.nli_lo`` /
    ``opts.nli_hi`` (``nli``); top-k is ``opts.top_k``, else ``config.pipeline.top_k``.
    ``results`` is ``{"benchmark", "judge", "judge_is_proxy", "top_k", **extra, "variants": {}}``
    in that key order. Raises what :func:`~.judges.make_judge` raises for an unknown judge.
    """
    svc = qa_services(services)
    judge_kw = {"top_k": opts.judge_top_k} if opts.judge == "llm" else {"lo": opts.nli_lo, "hi": opts.nli_hi}
    judge = make_judge(opts.judge, svc, **judge_kw)
    top_k = opts.top_k or config.pipeline.top_k
    results: dict[str, Any] = {"benchmark": benchmark, "judge": opts.judge, "judge_is_proxy": judge.proxy,
                               "top_k": top_k, **extra, "variants": {}}
    labels = None
    if opts.labels is not None:
        from .precision import load_labels

        labels = load_labels(opts.labels)
        results["labels"] = str(opts.labels)
    return QARun(svc, judge, top_k, results, labels=labels)


@dataclass
class TimedAnswer:
    result: QAResult
    search_duration_ms: float
    response_duration_ms: float

    @property
    def context(self) -> str:
        return "\n".join(u.render() for u in self.result.retrieved)


async def answer_timed(question: str, graphs: Sequence[MemoryGraph], services: Services, top_k: int) -> TimedAnswer:
    """:func:`promem_fast.qa.answer` plus the time of its retrieval step alone (ms).

    ``services.embed`` should be a :class:`CachedEmbed`, so the second retrieval inside
    ``answer`` reuses the vectors of the first.
    """
    units = memory_units(graphs)
    t0 = time.perf_counter()
    await retrieve(question, units, services, top_k)
    t1 = time.perf_counter()
    res = await answer(question, graphs, services, top_k=top_k)
    t2 = time.perf_counter()
    return TimedAnswer(res, (t1 - t0) * 1000.0, (t2 - t1) * 1000.0)


async def gather_limited(coros: Sequence[Any], limit: int) -> list[Any]:
    """``asyncio.gather`` with at most ``limit`` coroutines running at once (order kept)."""
    sem = asyncio.Semaphore(max(1, limit))

    async def one(c):
        async with sem:
            return await c

    return await asyncio.gather(*(one(c) for c in coros))


def models_label(extracted: Sequence[ExtractedSession], services: Services, config: Config,
                 judge: Any) -> dict[str, str]:
    """Model names for the report: from the first graph's ``models`` (else the services),
    plus the judge's description."""
    models = next((e.graph.models for e in extracted if e.graph is not None and e.graph.models), None)
    models = dict(models or services.model_names())
    if judge.proxy:
        models["judge"] = (f"nli (proxy: NLI {judge.model_name} + embedding {models.get('embed')}, "
                           f"cos lo={judge.lo:g}, hi={judge.hi:g}, QA by token F1/containment)")
    else:
        models["judge"] = f"llm ({judge.model_name})"
    models["llm_backend"] = config.llm.backend
    return models


def mean(xs: Sequence[float]) -> float:
    """Arithmetic mean; NaN for no values."""
    return float(np.mean(xs)) if len(xs) else float("nan")


def _clean(obj: Any) -> Any:
    """NaN -> None recursively (JSON has no NaN)."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        return _clean(obj.item())
    return obj


def write_reports(out_dir: Path, markdown: str, results: dict) -> tuple[Path, Path]:
    """Write ``out_dir/report.md`` and ``out_dir/results.json`` (NaN written as null)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md = out_dir / "report.md"
    js = out_dir / "results.json"
    md.write_text(markdown, encoding="utf-8")
    js.write_text(json.dumps(_clean(results), indent=2, ensure_ascii=False), encoding="utf-8")
    return md, js


def header_lines(title: str, models: dict[str, str], judge_proxy: bool) -> list[str]:
    """Report heading: benchmark, models, judge (proxy flagged)."""
    lines = [f"## {title}", "",
             f"LLM: {models.get('llm')} | NLI: {models.get('nli')} | Embedding: {models.get('embed')} | "
             f"Judge: {models.get('judge')}", ""]
    if judge_proxy:
        lines += ["**Judge is an offline proxy (NLI + embeddings), not the LLM judge: numbers are not "
                  "comparable with published results.**", ""]
    return lines
