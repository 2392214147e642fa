"""``promem-fast eval {halumem,locomo,longmemeval} INPUT --out DIR``: the evaluation harness.

:func:`main` is what ``promem_fast.cli.cmd_eval`` calls; :func:`run_eval` does the work and
takes ready ``services`` (tests inject scripted ones). Outputs in ``DIR``:

* ``report.md``: the markdown table(s) (for HaluMem, ProMem Table 2's columns: Mem. Int.,
  Mem. Acc., QA Acc., QA Halu., QA Om., plus tokens and seconds per session), one row per
  variant, headed by the LLM, NLI, embedding model and judge;
* ``results.json``: every number, per-item records included;
* ``review.jsonl``: the blind labelling file (every variant's memories, shuffled, no
  variant named; :mod:`.precision`); with ``--labels FILE`` each variant also reports
  reviewed precision;
* HaluMem only: ``promem_fast-{variant}/promem_fast_eval_results.jsonl`` per variant, in
  HaluMem's output contract (:mod:`.halumem_output`).

Benchmark specifics: :mod:`.halumem_eval`, :mod:`.locomo_eval`, :mod:`.longmemeval_eval`;
judges: :mod:`.judges`; variants: :mod:`.ablation`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from pathlib import Path
from typing import Optional, Union

from ..config import Config
from ..context import Services
from .ablation import parse_variants
from .harness import EvalOptions, write_reports

logger = logging.getLogger(__name__)

BENCHMARKS = ("halumem", "locomo", "longmemeval")

__all__ = ["BENCHMARKS", "build_services", "main", "run_eval"]


def build_services(config: Config) -> Services:
    """Services from ``config``; with ``llm.backend == "scripted"`` the scripted LLM answers the
    harness's judges with :func:`.judges.scripted_eval_respond` and every other prompt with
    the engine's scripted rules (a smoke run without a model)."""
    from .judges import scripted_eval_respond

    return Services.from_config(config, scripted_rules=scripted_eval_respond)


def _split(spec: Optional[str]) -> Optional[list[str]]:
    if not spec:
        return None
    return [x.strip() for x in spec.split(",") if x.strip()] or None


async def arun_eval(
    benchmark: str,
    input_path: Union[str, Path],
    out_dir: Union[str, Path],
    config: Optional[Config] = None,
    *,
    services: Optional[Services] = None,
    options: Optional[EvalOptions] = None,
) -> dict:
    """Async :func:`run_eval`."""
    config = config or Config()
    opts = options or EvalOptions()
    out = Path(out_dir)
    input_path = Path(input_path)
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {benchmark!r}; expected one of {BENCHMARKS}")
    if opts.judge not in ("llm", "nli"):
        raise ValueError(f"unknown judge {opts.judge!r}; expected 'llm' or 'nli'")
    if not input_path.is_file():
        raise FileNotFoundError(f"input file not found: {input_path}")
    services = services or build_services(config)
    if opts.graphs_dir is None:
        opts = dataclasses.replace(opts, graphs_dir=out / "graphs")
    if benchmark == "halumem":
        from ..io import load_sessions
        from .halumem_eval import evaluate_halumem

        samples = opts.samples or [None]
        sessions = [s for smp in samples
                    for s in load_sessions(input_path, "halumem", sample=smp, sessions=opts.sessions)]
        if not sessions:
            raise ValueError(f"{input_path}: no HaluMem sessions selected")
        results, md = await evaluate_halumem(sessions, config, services, opts, out)
    elif benchmark == "locomo":
        from .locomo_eval import evaluate_locomo

        results, md = await evaluate_locomo(input_path, config, services, opts, out)
    else:
        from .longmemeval_eval import evaluate_longmemeval

        results, md = await evaluate_longmemeval(input_path, config, services, opts, out)
    results["input"] = str(input_path)
    results["variants_order"] = list(opts.variants)
    cfg_dump = config.model_dump(mode="json")
    if cfg_dump.get("llm", {}).get("api_key"):
        cfg_dump["llm"]["api_key"] = "***"  # never write a secret into the report
    results["config"] = cfg_dump
    md_path, js_path = write_reports(out, md, results)
    results["report_md"], results["results_json"] = str(md_path), str(js_path)
    return results


def run_eval(
    benchmark: str,
    input_path: Union[str, Path],
    out_dir: Union[str, Path],
    config: Optional[Config] = None,
    *,
    services: Optional[Services] = None,
    options: Optional[EvalOptions] = None,
) -> dict:
    """Run one benchmark for every variant of ``options.variants`` and write the reports.

    Args:
        benchmark: ``halumem`` | ``locomo`` | ``longmemeval``.
        input_path: the benchmark file (HaluMem JSONL, locomo10.json-style, LongMemEval JSON).
        out_dir: output directory (created).
        config: base Config; each variant is derived from it (:func:`.ablation.variant_config`).
        services: ready model services (default: :func:`build_services` from ``config``).
        options: :class:`~.harness.EvalOptions`.

    Returns:
        The results dict also written to ``out_dir/results.json`` (NaN shown as None there).

    Raises:
        FileNotFoundError: missing input. ValueError: unknown benchmark/judge/variant, or a
        bad selection (message names the field).
    """
    return asyncio.run(arun_eval(benchmark, input_path, out_dir, config, services=services, options=options))


def options_from_args(args: argparse.Namespace, config: Config) -> EvalOptions:
    """:class:`EvalOptions` from the ``eval`` subcommand's arguments (attributes the parser
    lacks take the defaults; ``update_top_k`` is read from ``--update-top-k`` when given)."""
    samples = _split(getattr(args, "samples", None))
    if getattr(args, "sample", None):
        samples = list(dict.fromkeys((samples or []) + [args.sample]))
    return EvalOptions(
        variants=parse_variants(getattr(args, "variants", None)),
        judge=getattr(args, "judge", None) or "llm",
        max_questions=getattr(args, "max_questions", None),
        adversarial=bool(getattr(args, "adversarial", False)),
        samples=samples,
        sessions=getattr(args, "sessions", None),
        user_speaker=getattr(args, "user_speaker", None),
        speakers=getattr(args, "speakers", None),
        concurrency=config.engine.concurrency,
        labels=getattr(args, "labels", None),
        **({"update_top_k": args.update_top_k} if getattr(args, "update_top_k", None) else {}),
    )


def main(args: argparse.Namespace, config: Config, *, services: Optional[Services] = None) -> int:
    """Entry point of ``promem-fast eval``: prints the report and where files went.

    Returns 0; 1 when every session of some variant failed to extract; 2 on bad input
    (the error is printed).
    """
    try:
        opts = options_from_args(args, config)
        results = run_eval(args.benchmark, args.input, args.out, config, services=services, options=opts)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(Path(results["report_md"]).read_text(encoding="utf-8"))
    print(f"wrote {results['report_md']} and {results['results_json']}", file=sys.stderr)
    if getattr(args, "append_results", None):
        from ..results_log import append_line, eval_summary

        append_line(args.append_results, eval_summary(results, args.out))
        print(f"appended one line to {args.append_results}", file=sys.stderr)
    bad = [v for v, a in results["variants"].items() if a.get("sessions") and a.get("sessions_failed") == a["sessions"]]
    if bad:
        print(f"error: every session failed for variant(s) {bad}", file=sys.stderr)
        return 1
    return 0
