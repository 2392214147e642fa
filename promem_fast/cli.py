"""Command line: ``promem-fast extract | qa | bulk | eval | serve | schema``."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from .config import Config

log = logging.getLogger("promem_fast")


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def _add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("models")
    g.add_argument("--config", type=Path, help="JSON file with a Config (fields below override it)")
    g.add_argument("--llm", help="LLM backend: llamacpp (default) | openai | vllm | scripted")
    g.add_argument("--llm-model", help="GGUF path (llamacpp), served model name (openai), model dir/id (vllm)")
    g.add_argument("--llm-url", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    g.add_argument("--parallel", type=_positive, help="LLM sequences decoded at once")
    g.add_argument("--nli", help="NLI backend: llm (default, LLM judge) | onnx")
    g.add_argument("--nli-model-dir", help="local sequence-classification model dir for --nli onnx")
    g.add_argument("--embed", help="embedding backend: onnx (default, all-MiniLM-L6-v2)")
    g.add_argument("--embed-model-dir", help="local sentence-embedding model dir")
    g.add_argument("--cache-dir", help="cache for assembled/exported models")
    g.add_argument("-v", "--verbose", action="store_true")


def _add_input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["json", "jsonl", "locomo", "halumem", "longmemeval"], help="input format (default: detect)")
    p.add_argument("--sample", help="LoCoMo sample_id (e.g. conv-26) or HaluMem user uuid")
    p.add_argument("--sessions", help="session numbers, e.g. 1-2 or 1,3")
    p.add_argument("--user-speaker", help="LoCoMo: which speaker is the user (default speaker_a)")


def _add_pipeline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variant", choices=["promem", "v1", "one-off"], help="pipeline variant (default promem)")
    p.add_argument("--no-cc", action="store_true", help="ablation: no completeness check")
    p.add_argument("--no-hv", action="store_true", help="ablation: no hallucination verification")
    p.add_argument("--no-da", action="store_true", help="ablation: no detail anchoring")
    p.add_argument("--no-rel", action="store_true", help="ablation: no relations")
    p.add_argument("--concurrency", type=_positive, help="sessions in flight at once (default 1)")


def build_config(args: argparse.Namespace) -> Config:
    """Config from --config plus command-line overrides."""
    cfg = Config.model_validate_json(args.config.read_text()) if getattr(args, "config", None) else Config()
    pairs = [
        ("llm", cfg.llm, "backend"), ("llm_model", cfg.llm, "model"), ("llm_url", cfg.llm, "base_url"),
        ("parallel", cfg.llm, "parallel"), ("nli", cfg.nli, "backend"), ("nli_model_dir", cfg.nli, "model_dir"),
        ("embed", cfg.embed, "backend"), ("embed_model_dir", cfg.embed, "model_dir"),
        ("variant", cfg.pipeline, "variant"), ("concurrency", cfg.engine, "concurrency"),
    ]
    for arg, obj, attr in pairs:
        v = getattr(args, arg, None)
        if v is not None:
            setattr(obj, attr, v)
    if getattr(args, "cache_dir", None):
        cfg.cache_dir = args.cache_dir
    for flag, attr in [("no_cc", "completeness_check"), ("no_hv", "hallucination_verification"),
                       ("no_da", "detail_anchoring"), ("no_rel", "relations")]:
        if getattr(args, flag, False):
            setattr(cfg.pipeline, attr, False)
    if cfg.llm.backend == "openai" and not cfg.llm.base_url:
        raise SystemExit("error: --llm openai needs --llm-url (e.g. http://127.0.0.1:8080/v1)")
    return cfg


class StageBars:
    """One tqdm bar per pipeline stage, counting sessions through it."""

    def __init__(self, total: int):
        from tqdm import tqdm

        self._tqdm = tqdm
        self.total = total
        self.bars: dict[str, object] = {}

    def __call__(self, session_id: str, stage: str, phase: str) -> None:
        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = self._tqdm(
                total=self.total, desc=f"{stage:>16}", position=len(self.bars), unit="session", leave=True
            )
        if phase == "end":
            bar.update(1)

    def close(self) -> None:
        for b in self.bars.values():
            b.close()


def _load(args: argparse.Namespace):
    from .io import load_sessions

    sessions = load_sessions(
        args.input, args.format, sample=args.sample, sessions=args.sessions, user_speaker=args.user_speaker
    )
    if not sessions:
        raise SystemExit(f"error: no sessions selected from {args.input}")
    return sessions


def _check_writable(path: Path, option: str) -> None:
    """Raise ValueError naming ``option`` when ``path`` cannot be written (checked before any
    model work, so a long extraction is not thrown away at the end). Creates nothing: the
    nearest existing folder above ``path`` gets a temporary file, removed at once."""
    if path.is_dir():
        raise ValueError(f"{option}: {path} is a directory, expected a file path")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{option}: {path} exists and is not writable")
    base = path.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise ValueError(f"{option}: {base} is a file, so {path.parent} cannot be created")
    try:
        with tempfile.NamedTemporaryFile(dir=base, prefix=".promem-write-check-"):
            pass
    except OSError as e:
        raise ValueError(f"{option}: cannot write to {base}: {e.strerror or e}") from None


def cmd_extract(args: argparse.Namespace) -> int:
    from .engine.scheduler import run_sessions
    from .context import Services
    from .engine.services import batched_services
    from .extractor import Extractor

    cfg = build_config(args)
    _check_writable(args.out, "--out")
    sessions = _load(args)
    services = Services.from_config(cfg)
    if cfg.engine.concurrency > 1:  # batch model calls across the sessions in flight
        services = batched_services(services, cfg.engine)
    bars = StageBars(len(sessions))
    extractor = Extractor(cfg, services, on_stage=bars)

    async def go():
        results = {}
        async for r in run_sessions(sessions, extractor, cfg.engine.concurrency):
            results[r.index] = r
        return results

    try:
        results = asyncio.run(go())
    finally:
        bars.close()
    graphs, failed = [], []
    for i, s in enumerate(sessions):
        r = results[i]
        if r.graph is not None:
            graphs.append(r.graph)
        else:
            failed.append((s.session_id, r.error))
    out: Path = args.out
    if not graphs:  # never overwrite an earlier result with an empty file
        for sid, err in failed:
            print(f"{sid}: FAILED: {err}", file=sys.stderr)
        print(f"error: no session was extracted; {out} not written", file=sys.stderr)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    if len(sessions) == 1:
        out.write_text(graphs[0].to_json())
    else:
        out.write_text("[\n" + ",\n".join(g.to_json() for g in graphs) + "\n]\n")
    for g in graphs:
        st = g.stats
        print(
            f"{g.session_id}: {len(g.events)} events, {len(g.details)} details, {len(g.relations)} relations, "
            f"{len(g.discarded)} discarded | {st.llm_calls} LLM calls, {st.prompt_tokens} prompt + "
            f"{st.completion_tokens} completion tokens ({st.cached_tokens} cached), {st.seconds:.1f} s",
            file=sys.stderr,
        )
    for sid, err in failed:
        print(f"{sid}: FAILED: {err}", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    return 1 if failed else 0


def _read_graphs(path: Path):
    from .schema import MemoryGraph

    from pydantic import ValidationError

    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        items = data if isinstance(data, list) else [data]
    except json.JSONDecodeError as e:
        # JSON Lines, one graph per line (bulk's graphs.jsonl)
        lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
        if len(lines) < 2:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
        items = []
        for n, ln in lines:
            try:
                items.append(json.loads(ln))
            except json.JSONDecodeError as e2:
                raise ValueError(f"{path}: line {n} is not valid JSON ({e2}); expected a graph "
                                 "JSON or JSON Lines with one graph per line") from None
    graphs = []
    for k, x in enumerate(items):
        try:
            graphs.append(MemoryGraph.model_validate(x))
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            raise ValueError(
                f"{path}: item {k} is not a memory graph written by `promem-fast extract` "
                f"(field {where}: {err['msg']}; {e.error_count()} error(s))"
            ) from None
    return graphs


def cmd_qa(args: argparse.Namespace) -> int:
    from .context import Services
    from .qa import answer

    cfg = build_config(args)
    graphs = _read_graphs(args.memory)
    services = Services.from_config(cfg)
    res = asyncio.run(answer(args.question, graphs, services, top_k=args.top_k or cfg.pipeline.top_k))
    if args.show_context:
        for u, s in zip(res.retrieved, res.scores):
            print(f"  {s:.3f} {u.session_id}/{u.event_id} {u.render()}", file=sys.stderr)
    print(res.answer)
    return 0


def cmd_bulk(args: argparse.Namespace) -> int:
    from .bulk import bulk_command, ray_options_from_args

    cfg = build_config(args)
    return bulk_command(
        args.inputs, args.out, fmt=args.format, concurrency=cfg.engine.concurrency, config=cfg,
        retry_failed=args.retry_failed, sample=args.sample, sessions=args.sessions, user_speaker=args.user_speaker,
        engine=args.engine, ray=ray_options_from_args(args) if args.engine == "ray" else None,
    )


def cmd_serve(args: argparse.Namespace) -> int:
    from .server import serve

    if args.store.exists() and not args.store.is_dir():
        raise ValueError(f"--store: {args.store} exists and is not a directory")
    serve(args.host, args.port, build_config(args), path=str(args.store),
          jobs_root=str(args.jobs_root) if args.jobs_root else None)
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from .eval.runner import main as eval_main

    return eval_main(args, build_config(args))


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="promem-fast", description="Proactive, verified memory extraction (ProMem).")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("extract", help="extract a verified memory graph per session")
    e.add_argument("input", type=Path)
    e.add_argument("--out", type=Path, required=True, help="output JSON (a graph, or a list for several sessions)")
    _add_input_args(e)
    _add_pipeline_args(e)
    _add_model_args(e)
    e.set_defaults(func=cmd_extract)

    q = sub.add_parser("qa", help="answer a question from extracted memory (top-k retrieval + LLM)")
    q.add_argument("memory", type=Path, help="graph JSON written by extract, or bulk's graphs.jsonl")
    q.add_argument("question")
    q.add_argument("--top-k", type=_positive, help="entries retrieved (default 20)")
    q.add_argument("--show-context", action="store_true", help="print retrieved entries to stderr")
    _add_model_args(q)
    q.set_defaults(func=cmd_qa)

    b = sub.add_parser("bulk", help="resumable extraction over many sessions")
    b.add_argument("inputs", type=Path, nargs="+")
    b.add_argument("--out", type=Path, required=True, help="job directory")
    b.add_argument("--retry-failed", action="store_true", help="redo sessions that failed before")
    _add_input_args(b)
    _add_pipeline_args(b)
    _add_model_args(b)
    from .bulk import add_engine_arguments

    add_engine_arguments(b)
    b.set_defaults(func=cmd_bulk)

    s = sub.add_parser("serve", help="HTTP memory service (FastAPI)")
    s.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8420, help="TCP port (default 8420)")
    s.add_argument("--store", type=Path, default=Path("promem_data"),
                   help="store directory, SQLite + FAISS (default ./promem_data)")
    s.add_argument("--jobs-root", type=Path, help="directory that POST /jobs may read input files from")
    _add_model_args(s)
    s.set_defaults(func=cmd_serve)

    ev = sub.add_parser("eval", help="evaluate on HaluMem / LoCoMo / LongMemEval")
    ev.add_argument("benchmark", choices=["halumem", "locomo", "longmemeval"])
    ev.add_argument("input", type=Path)
    ev.add_argument("--out", type=Path, default=Path("eval_out"))
    ev.add_argument("--variants", default="promem", help="comma list: promem,one-off,v1,no-cc,no-hv,no-da,no-rel,no-detail-recovery")
    ev.add_argument("--judge", choices=["llm", "nli"], default="llm")
    ev.add_argument("--samples", help="LoCoMo sample ids, comma separated")
    ev.add_argument("--adversarial", action="store_true", help="LoCoMo: include category 5")
    ev.add_argument("--speakers", choices=["both", "user"], default=None,
                    help="LoCoMo: extract each session's memory once per speaker and retrieve over both "
                         "(default), or for the --user-speaker only (default when it is given)")
    ev.add_argument("--max-questions", type=_positive, help="cap questions per session/sample")
    ev.add_argument("--update-top-k", type=_positive, default=None,
                    help="HaluMem: memories retrieved per update memory point (default 10)")
    _add_input_args(ev)
    _add_pipeline_args(ev)
    _add_model_args(ev)
    ev.set_defaults(func=cmd_eval)

    sc = sub.add_parser("schema", help="print the MemoryGraph JSON Schema")
    sc.set_defaults(func=cmd_schema)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = make_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from pydantic import ValidationError

    try:
        return int(args.func(args) or 0)
    except (FileNotFoundError, ValueError, ValidationError) as e:  # bad input: no traceback
        log.debug("command failed", exc_info=True)
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
