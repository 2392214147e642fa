"""Precision instrument on the dev slices: extract, then judge-free measures (and reviewed
precision from a labels file), one JSON line per slice and variant.

Slices (``../shared/data``): HaluMem user3 sessions 1-3; LoCoMo conv-26 sessions 1-3 and
conv-30 sessions 1-2, each session extracted once per speaker. No LLM judge is asked
anything: measures are in :mod:`promem_fast.eval.precision`.

    python benchmarks/bench_precision.py --out out/prec --variants promem,one-off \
        --append benchmarks/results/precision.jsonl
    # after labelling out/prec/review.jsonl (rubric: docs/evaluation.md), score without extracting:
    python benchmarks/bench_precision.py --out out/prec --from-graphs \
        --labels benchmarks/review/LABELS.jsonl --append benchmarks/results/precision.jsonl

Writes ``OUT/graphs/{slice}-{variant}.jsonl``, ``OUT/seconds.json`` (seconds per session),
``OUT/wall_s.json`` (each extraction's wall time, which ``--from-graphs`` reports again as
``wall_s``; ``null`` when the file is missing), ``OUT/config.json`` (per slice and variant, the
``--config`` fields that differ from the defaults, the API key left out; every line, a rescore's
too, reports its extraction's as ``config``), ``OUT/run.json`` (per slice and variant, the
commit the run started at and the date and machine of its extraction, which a rescore reports
again; a rescore of an OUT without it reports its own) and ``OUT/review.jsonl`` (the blind file
to label: every variant's memories once, shuffled, no variant named).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
# slice name -> (loader format, file, [(sample, sessions)])
SLICES = {
    "halumem": ("halumem", "halumem_dev_user3.jsonl", [(None, "1-3")]),
    "locomo": ("locomo", "locomo_dev.json", [("conv-26", "1-3"), ("conv-30", "1-2")]),
}


def parse_picks(spec: str) -> list:
    """``"conv-26:1-3,conv-30:1-2"`` -> [("conv-26", "1-3"), ("conv-30", "1-2")].

    Raises:
        ValueError: an item is not ``SAMPLE:SESSIONS``.
    """
    out = []
    for item in (x.strip() for x in spec.split(",") if x.strip()):
        sample, sep, sessions = item.partition(":")
        if not sep or not sample or not sessions:
            raise ValueError(f"--locomo: expected SAMPLE:SESSIONS items (conv-26:1-3), got {item!r}")
        out.append((sample, sessions))
    return out


def load_slice(name: str, data_dir: Path, picks=None) -> list:
    """Sessions of a dev slice (LoCoMo: each session once per speaker, ids ``...@<speaker>``);
    ``picks`` overrides the slice's [(sample, sessions)]."""
    from promem_fast.io import load_sessions

    fmt, fname, default = SLICES[name]
    picks = picks or default
    path = data_dir / fname
    if not path.is_file():
        raise FileNotFoundError(f"dev slice {name}: {path} not found (../shared/data beside the repo)")
    out = []
    for sample, sessions in picks:
        if fmt == "locomo":
            for sp in ("speaker_a", "speaker_b"):
                for s in load_sessions(path, fmt, sample=sample, sessions=sessions, user_speaker=sp):
                    out.append(s.model_copy(update={"session_id": f"{s.session_id}@{s.user_name}"}))
        else:
            out.extend(load_sessions(path, fmt, sample=sample, sessions=sessions))
    return out


def read_graphs(path: Path) -> dict:
    from promem_fast.schema import MemoryGraph

    if not path.is_file():
        raise FileNotFoundError(f"--from-graphs: {path} not found (run once without --from-graphs)")
    return {g.session_id: g for g in (MemoryGraph.model_validate_json(line)
                                      for line in path.read_text(encoding="utf-8").splitlines() if line.strip())}


def _read_json(path: Path) -> dict:
    """A JSON object file of this run directory; {} when it is not there yet."""
    return json.loads(path.read_text()) if path.is_file() else {}


def _update_json(path: Path, entries: dict) -> None:
    """Merge ``entries`` into the JSON object file ``path`` (other slices and variants stay)."""
    got = _read_json(path)
    got.update(entries)
    path.write_text(json.dumps(got, indent=1))


def _stored_graphs(args: argparse.Namespace, slices: dict) -> tuple[dict, dict]:
    """--from-graphs: the stored graphs of each (slice, variant) and the recorded seconds per
    session (``seconds.json``), each file read once, after checking
    that every session asked for (``slices``: slice -> its sessions) was extracted into
    ``args.out``: it has a graph, or seconds without a graph (a failed extraction, scored as
    failed). A session with neither is a wrong --locomo / --halumem, not a failure.

    Raises:
        SystemExit: naming the sessions the run directory never extracted.
    """
    prev = _read_json(args.out / "seconds.json")
    graphs, never = {}, []
    for sl, sessions in slices.items():
        for v in args.variants:
            got = graphs[sl, v] = read_graphs(args.out / "graphs" / f"{sl}-{v}.jsonl")
            never += [f"{sl}-{v}/{s.session_id}" for s in sessions
                      if s.session_id not in got and f"{sl}-{v}/{s.session_id}" not in prev]
    if never:
        raise SystemExit(f"--from-graphs: {args.out} holds no graph and no seconds for {never}; "
                         "pass the --locomo / --halumem picks of the run")
    return graphs, prev


async def run(args: argparse.Namespace) -> list[dict]:
    from promem_fast.config import Config
    from promem_fast.context import Services
    from promem_fast.eval.harness import extract_sessions
    from promem_fast.results_log import append_line, git_commit, run_fields
    from promem_fast.eval.precision import (halumem_gold, judge_free, load_labels, locomo_gold, score_labels,
                                            session_memories, write_review_file)

    cfg = Config.model_validate_json(Path(args.config).read_text()) if args.config else Config()
    # what this extraction sets over the defaults (before the flags below), the API key left
    # out; a section left with only the key is dropped
    dump = cfg.model_dump(exclude_defaults=True, exclude={"llm": {"api_key"}})
    own = {k: v for k, v in dump.items() if v != {}} or None
    if args.llm:
        cfg.llm.backend = args.llm
    if args.llm_url:
        cfg.llm.base_url = args.llm_url
    if args.embed:
        cfg.embed.backend = args.embed
    labels = load_labels(args.labels) if args.labels else None
    services = Services.from_config(cfg)
    gold_fn = {"halumem": halumem_gold, "locomo": locomo_gold}
    graphs_dir = args.out / "graphs"
    graphs_dir.mkdir(parents=True, exist_ok=True)
    memories: dict[str, list] = {}
    lines = []
    slices = {sl: load_slice(sl, args.data, args.locomo if sl == "locomo" else args.halumem) for sl in args.slices}
    # checked before any line is printed
    stored, prev = _stored_graphs(args, slices) if args.from_graphs else ({}, {})
    walls = _read_json(args.out / "wall_s.json") if args.from_graphs else {}
    # a rescore reports what each extraction set over the defaults
    configs = _read_json(args.out / "config.json") if args.from_graphs else {}
    # the commit the extraction started at (HEAD may move while it runs), and per slice the
    # date and machine of its extraction: a rescore reports those, not its own
    origins = _read_json(args.out / "run.json") if args.from_graphs else {}
    start_commit = git_commit()
    for sl, sessions in slices.items():
        for v in args.variants:
            gpath = graphs_dir / f"{sl}-{v}.jsonl"
            t0 = time.perf_counter()
            if args.from_graphs:
                got = stored[sl, v]
                pairs = [(got.get(s.session_id), s, prev.get(f"{sl}-{v}/{s.session_id}", 0.0)) for s in sessions]
                # rescoring takes seconds: report the extraction's wall time, as recorded
                wall = walls.get(f"{sl}-{v}")
            else:
                reset = getattr(services.llm, "reset_cache", None)
                if reset is not None:  # each variant starts cold: none reuses the previous one's prompts
                    await asyncio.to_thread(reset)
                ex = await extract_sessions(sessions, cfg, services, v, args.concurrency)
                gpath.write_text("".join(e.graph.to_json(indent=None) + "\n" for e in ex if e.graph is not None),
                                 encoding="utf-8")
                pairs = [(e.graph, e.session, e.seconds) for e in ex]
                wall = round(time.perf_counter() - t0, 1)
                _update_json(args.out / "config.json", {f"{sl}-{v}": own})
                _update_json(args.out / "wall_s.json", {f"{sl}-{v}": wall})
                _update_json(args.out / "seconds.json", {f"{sl}-{v}/{e.session.session_id}": e.seconds for e in ex})
                origins[f"{sl}-{v}"] = {**run_fields(), "commit": start_commit}
                _update_json(args.out / "run.json", {f"{sl}-{v}": origins[f"{sl}-{v}"]})
            mems = [session_memories(g, s, gold_fn[sl](s), sec) for g, s, sec in pairs]
            memories[f"{sl}-{v}"] = mems
            jf = await judge_free(mems, services.embed)
            origin = origins.get(f"{sl}-{v}")  # the line says what run.json says
            line = {"benchmark": "precision", "slice": sl, "variant": v, **(origin or run_fields()), "llm": cfg.llm.backend,
                    "failed": sum(g is None for g, _, _ in pairs),
                    "wall_s": wall, "concurrency": args.concurrency,
                    **{k: (round(x, 4) if isinstance(x, float) else x) for k, x in jf.items() if k not in ("per_memory", "per_gold")}}
            if labels is not None:
                line["reviewed"] = {k: (round(x, 4) if isinstance(x, float) else x)
                                    for k, x in score_labels(mems, labels).items()}
                line["labels"] = str(args.labels)
            overrides = own if not args.from_graphs else configs.get(f"{sl}-{v}")
            if overrides:  # precision_table.py shows them beside the commit
                line["config"] = overrides
            line["sessions_measured"] = [s.session_id for s in sessions]
            (args.out / f"per_memory-{sl}-{v}.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in jf["per_memory"]), encoding="utf-8")
            # the gold points behind recall@tau, each with the memory closest to it: what was missed
            (args.out / f"per_gold-{sl}-{v}.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in jf["per_gold"]), encoding="utf-8")
            print(json.dumps(line), flush=True)
            lines.append(line)
            if args.append:
                append_line(args.append, line)
    n = write_review_file(memories, args.out / "review.jsonl", existing=labels)
    print(f"wrote {args.out / 'review.jsonl'} ({n} memories to label)", file=sys.stderr)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--slices", default="halumem,locomo")
    ap.add_argument("--variants", default="promem,one-off")
    ap.add_argument("--locomo", type=parse_picks, default=None,
                    help="LoCoMo samples and sessions, e.g. conv-26:1-2 (default: conv-26:1-3,conv-30:1-2)")
    ap.add_argument("--halumem", type=lambda x: [(None, x)], default=None, metavar="SESSIONS",
                    help="HaluMem user3 sessions, e.g. 6,10 or 4-6 (default: 1-3)")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--labels", type=Path, help="reviewer labels (JSONL of session_id, memory, label)")
    ap.add_argument("--from-graphs", action="store_true", help="score OUT/graphs/*.jsonl without extracting")
    ap.add_argument("--append", type=Path, help="append each JSON line to this results file")
    ap.add_argument("--config", type=Path, help="Config JSON for the extraction; with --from-graphs it only sets the "
                    "scoring's embedder, and the lines report the extraction's config (OUT/config.json)")
    ap.add_argument("--llm")
    ap.add_argument("--llm-url")
    ap.add_argument("--embed")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    args.slices = [s.strip() for s in args.slices.split(",") if s.strip()]
    args.variants = [s.strip() for s in args.variants.split(",") if s.strip()]
    bad = [s for s in args.slices if s not in SLICES]
    if bad:
        ap.error(f"--slices: unknown {bad}; expected some of {list(SLICES)}")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.path.insert(0, str(ROOT))
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
