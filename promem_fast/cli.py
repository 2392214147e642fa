"""Command line: ``promem-fast extract | qa | view | bulk | eval | serve | keys | store | schema`` and ``--version``."""

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

from .argtypes import positive_int as _positive
from .config import Config

log = logging.getLogger("promem_fast")


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
    """Progress per pipeline stage: on a terminal one tqdm bar per stage, counting sessions
    through it; otherwise (CI, logs, ``nohup``) one line per stage and session on ``stream``,
    e.g. ``conv-26/session_1: details done in 51.2 s (1/1 sessions)``."""

    def __init__(self, total: int, stream=None, tty: Optional[bool] = None):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream) if tty is None else tty
        self.total = total
        self.bars: dict[str, object] = {}
        self._started: dict[tuple[str, str], float] = {}
        self._done: dict[str, int] = {}

    def __call__(self, session_id: str, stage: str, phase: str) -> None:
        if not self.tty:
            self._line(session_id, stage, phase)
            return
        bar = self.bars.get(stage)
        if bar is None:
            from tqdm import tqdm

            bar = self.bars[stage] = tqdm(
                total=self.total, desc=f"{stage:>16}", position=len(self.bars), unit="session", leave=True,
                file=self.stream,
            )
        if phase == "end":
            bar.update(1)

    def _line(self, session_id: str, stage: str, phase: str) -> None:
        import time

        if phase == "start":
            self._started[(session_id, stage)] = time.perf_counter()
            return
        t0 = self._started.pop((session_id, stage), None)
        took = f" in {time.perf_counter() - t0:.1f} s" if t0 is not None else ""
        n = self._done[stage] = self._done.get(stage, 0) + 1
        print(f"{session_id}: {stage} done{took} ({n}/{self.total} sessions)", file=self.stream, flush=True)

    def close(self) -> None:
        for b in self.bars.values():
            b.close()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real file
        return False


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("promem-fast")
    except PackageNotFoundError:  # run from a source tree without installing
        from . import __version__

        return __version__


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

    if not path.exists():  # a FIFO (`view <(jq ...)`, /dev/stdin) is no regular file but reads fine
        raise FileNotFoundError(f"memory graph file not found: {path}")
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


def cmd_view(args: argparse.Namespace) -> int:
    from .view import write_html

    graphs = _read_graphs(args.graph)
    out: Path = args.out or args.graph.with_suffix(".html")
    _check_writable(out, "--out")
    write_html(graphs, out, title=args.title or f"promem-fast memory graph: {args.graph.name}")
    print(f"wrote {out} ({len(graphs)} session{'s' if len(graphs) != 1 else ''})", file=sys.stderr)
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
          jobs_root=str(args.jobs_root) if args.jobs_root else None, insecure_no_auth=args.insecure_no_auth)
    return 0


def _open_store(path: Path, create: bool = False):
    from .store.sqlite_store import SQLiteStore

    if path.exists() and not path.is_dir():
        raise ValueError(f"--store: {path} exists and is not a directory")
    if not create and not (path / "memory.db").is_file():
        raise FileNotFoundError(f"--store: no store at {path} (no memory.db)")
    return SQLiteStore(path)


def cmd_keys(args: argparse.Namespace) -> int:
    from .store.keys import APIKeys, keyless_users, keyless_warning

    if args.keys_command == "create":
        users = None
        if args.users is not None:
            users = [u.strip() for u in args.users.split(",")]
            if not all(users):
                raise ValueError(f"--users: expected comma-separated user ids, got {args.users!r}")
        elif not args.all_users and not args.admin:
            raise ValueError("--users: give the user ids the key may act for, or --all-users (or --admin)")
        if args.admin and users is not None:
            raise ValueError("--users: an --admin key reaches every user of its tenant; drop --users")
        store = _open_store(args.store, create=True)
        try:
            key, info = APIKeys(store).create(args.tenant, users, args.admin)
            stranded = keyless_users(store)
        finally:
            store.close()
        if stranded:
            print(f"warning: {keyless_warning(stranded, str(args.store))}", file=sys.stderr)
        scope = "every user" if info.users is None else ", ".join(info.users)
        print(f"created key {info.key_id} for tenant {info.tenant!r} ({'admin, ' if info.admin else ''}{scope}); "
              "it is shown only now, store it safely:", file=sys.stderr)
        print(key)
        return 0
    store = _open_store(args.store)
    try:
        k = APIKeys(store)
        if args.keys_command == "list":
            for info in k.list(args.tenant):
                scope = "*" if info.users is None else ",".join(info.users)
                state = f"revoked {info.revoked_at}" if info.revoked_at else "active"
                print(f"{info.key_id}\t{info.tenant}\t{'admin' if info.admin else '-'}\t{scope}\t"
                      f"{info.created_at}\t{state}")
            return 0
        if not k.revoke(args.key_id):
            raise ValueError(f"KEY_ID: no active key {args.key_id!r} in {args.store}")
        print(f"revoked key {args.key_id}", file=sys.stderr)
        return 0
    finally:
        store.close()


def cmd_store(args: argparse.Namespace) -> int:
    from .store import backup as bk

    if args.store_command == "backup":
        n = bk.backup(args.store, args.out)
        print(f"backed up {n['entries']} entries of {n['users']} users to {args.out}", file=sys.stderr)
    elif args.store_command == "export":
        _check_writable(args.out, "OUT")
        n = bk.export_store(args.store, args.out, tenant=args.tenant)
        print(f"exported {n['entry']} entries, {n['history']} history rows of {n['user']} users to {args.out}",
              file=sys.stderr)
    else:
        n = bk.import_store(args.input, args.store, tenant=args.tenant)
        print(f"imported {n['entry']} entries, {n['history']} history rows of {n['user']} users into "
              f"{args.store} (FAISS indexes rebuilt)", file=sys.stderr)
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
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
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

    w = sub.add_parser("view", help="draw memory graphs as one self-contained HTML page")
    w.add_argument("graph", type=Path, help="graph JSON written by extract (one or a list), or bulk's graphs.jsonl")
    w.add_argument("--out", type=Path, help="HTML file to write (default: GRAPH with .html)")
    w.add_argument("--title", help="page title (default names GRAPH)")
    w.set_defaults(func=cmd_view)

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
    s.add_argument("--insecure-no-auth", action="store_true",
                   help="allow a non-loopback --host while the store has no API key (anyone reaching it "
                        "can read and delete every user's memory)")
    _add_model_args(s)
    s.set_defaults(func=cmd_serve)

    k = sub.add_parser("keys", help="API keys of the memory service (stored hashed in the store)")
    ksub = k.add_subparsers(dest="keys_command", required=True)
    kc = ksub.add_parser("create", help="create a key; printed once on stdout")
    kc.add_argument("--tenant", required=True, help="tenant name: the key reaches only this tenant's users")
    ku = kc.add_mutually_exclusive_group()
    ku.add_argument("--users", help="comma-separated user ids the key may act for")
    ku.add_argument("--all-users", action="store_true", help="the key may act for every user of the tenant")
    kc.add_argument("--admin", action="store_true",
                    help="also /reset (of the tenant), /jobs and key management; implies --all-users")
    kl = ksub.add_parser("list", help="list keys (ids, scopes, never the keys)")
    kl.add_argument("--tenant", help="only this tenant's keys")
    kr = ksub.add_parser("revoke", help="revoke a key by its id (from `keys list`)")
    kr.add_argument("key_id", metavar="KEY_ID")
    for kp in (kc, kl, kr):
        kp.add_argument("--store", type=Path, default=Path("promem_data"),
                        help="store directory (default ./promem_data, as for serve)")
    k.set_defaults(func=cmd_keys)

    st = sub.add_parser("store", help="back up, export and import a store")
    stsub = st.add_subparsers(dest="store_command", required=True)
    sb = stsub.add_parser("backup", help="consistent copy of the store's SQLite (safe while serving)")
    sb.add_argument("store", type=Path, metavar="STORE", help="store directory")
    sb.add_argument("out", type=Path, metavar="OUT", help="new store directory for the copy")
    se = stsub.add_parser("export", help="entries, history, provenance, sessions, relations as JSON Lines (no keys)")
    se.add_argument("store", type=Path, metavar="STORE", help="store directory")
    se.add_argument("out", type=Path, metavar="OUT.jsonl")
    se.add_argument("--tenant", help="only this tenant's users, written under their plain user ids")
    si = stsub.add_parser("import", help="load an export into a new store; FAISS indexes rebuilt")
    si.add_argument("input", type=Path, metavar="IN.jsonl")
    si.add_argument("store", type=Path, metavar="STORE", help="new store directory")
    si.add_argument("--tenant", help="put every user into this tenant (e.g. memory written before the store had keys)")
    st.set_defaults(func=cmd_store)

    ev = sub.add_parser("eval", help="evaluate on HaluMem / LoCoMo / LongMemEval")
    ev.add_argument("benchmark", choices=["halumem", "locomo", "longmemeval"])
    ev.add_argument("input", type=Path)
    ev.add_argument("--out", type=Path, default=Path("eval_out"))
    ev.add_argument("--variants", default="promem", help="comma list: promem,one-off,v1,no-cc,no-hv,no-da,no-rel,no-detail-recovery,no-screen,no-lexical-nli,no-dedup,llm-reread")
    ev.add_argument("--judge", choices=["llm", "nli"], default="llm")
    ev.add_argument("--samples", help="LoCoMo sample ids, comma separated")
    ev.add_argument("--adversarial", action="store_true", help="LoCoMo: include category 5")
    ev.add_argument("--speakers", choices=["both", "user"], default=None,
                    help="LoCoMo: extract each session's memory once per speaker and retrieve over both "
                         "(default), or for the --user-speaker only (default when it is given)")
    ev.add_argument("--max-questions", type=_positive, help="cap questions per session/sample")
    ev.add_argument("--labels", type=Path, default=None,
                    help="JSON Lines of {session_id, memory, label} by a reviewer (docs/evaluation.md): "
                         "adds reviewed precision per variant")
    ev.add_argument("--update-top-k", type=_positive, default=None,
                    help="HaluMem: memories retrieved per update memory point (default 10)")
    ev.add_argument("--append-results", type=Path, metavar="FILE",
                    help="also append one summary line (commit, date, machine, figures) to FILE, "
                         "e.g. benchmarks/results/eval_halumem.jsonl")
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
        rc = int(args.func(args) or 0)
        sys.stdout.flush()  # a short output into a closed pipe fails here, not at exit
        return rc
    except (FileNotFoundError, ValueError, ValidationError) as e:  # bad input: no traceback
        log.debug("command failed", exc_info=True)
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `promem-fast schema | head`: the reader left, as any Unix filter allows
        log.debug("output pipe closed", exc_info=True)
        try:  # stdout goes to /dev/null so the interpreter's final flush does not raise again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is no file (replaced in-process)
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
