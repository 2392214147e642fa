"""Dialogues no rule was fitted on: extract, then reviewed precision from a labels file.

The dev slices (``../shared/data``) have all been read while the screen rules were written,
so they overstate precision on new input. ``benchmarks/unseen/`` holds dialogues written
for this benchmark and read only after a run: ``*.locomo.json`` in the LoCoMo schema (each
session extracted once per speaker, ids ``<sample>/session_<n>@<speaker>``) and ``*.json``
plain sessions (``[{"session_id", "user_name", "turns": [{"role", "content",
"timestamp"}]}]``). A file a screen rule was then written from is dev data from that commit
on; docs/evaluation.md says which files are still unseen. There are no gold points, so the only quality figure is the reviewer's
(rubric: docs/evaluation.md); tokens and seconds come from the graphs.

    python benchmarks/bench_unseen.py --out OUT                    # extract, write OUT/review.jsonl
    python benchmarks/bench_unseen.py --out OUT --from-graphs \
        --labels benchmarks/review/NAME/labels.jsonl --append benchmarks/results/unseen.jsonl

Writes ``OUT/graphs-{variant}.jsonl``, ``OUT/seconds.json``, ``OUT/run.json`` (the extraction's
commit, date and machine, which ``--from-graphs`` reports) and ``OUT/review.jsonl`` (blind:
every variant's memories once, shuffled). Prints one JSON line per variant: sessions,
memories, tokens per session, seconds per session and, with ``--labels``, the counts per
label and reviewed precision.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
UNSEEN = ROOT / "benchmarks" / "unseen"


def load_unseen(folder: Path = UNSEEN, files: str = "") -> list:
    """Every session of ``folder``: LoCoMo files once per speaker, plain JSON files as they are.
    ``files``: comma-separated name patterns ("amara.json,oskar_*") to load only those files
    (the ones still unseen); empty = every ``*.json``.

    Raises:
        FileNotFoundError: no ``*.json`` dialogue matches.
    """
    from fnmatch import fnmatch

    from promem_fast.io import load_sessions

    pats = [p.strip() for p in files.split(",") if p.strip()]
    paths = sorted(f for f in folder.glob("*.json") if not pats or any(fnmatch(f.name, p) for p in pats))
    if not paths:
        raise FileNotFoundError(f"{folder}: no *.json dialogue" + (f" matches {pats}" if pats else ""))
    out = []
    for f in paths:
        if f.name.endswith(".locomo.json"):
            for sp in ("speaker_a", "speaker_b"):
                for s in load_sessions(f, "locomo", user_speaker=sp):
                    s.session_id = f"{s.session_id}@{s.user_name}"
                    out.append(s)
        else:
            out.extend(load_sessions(f, "json"))
    return out


async def _extract(sessions: list, variant: str, concurrency: int, base) -> tuple[list, dict]:
    from promem_fast import Extractor
    from promem_fast.eval.ablation import variant_config

    ex = Extractor(variant_config(base, variant))
    gate = asyncio.Semaphore(concurrency)
    seconds: dict[str, float] = {}

    async def one(s):
        async with gate:
            t = time.perf_counter()
            g = await ex.aextract(s)
            seconds[s.session_id] = round(time.perf_counter() - t, 1)
            return g

    return await asyncio.gather(*(one(s) for s in sessions)), seconds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--variants", default="promem")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--from-graphs", action="store_true", help="score OUT/graphs-*.jsonl without extracting")
    ap.add_argument("--labels", type=Path, help="reviewer labels (JSONL of session_id, memory, label)")
    ap.add_argument("--append", type=Path, help="append each JSON line to this results file")
    ap.add_argument("--llm", help="LLM backend (default: the config's, the embedded model)")
    ap.add_argument("--embed", help="embedding backend (default: the config's)")
    ap.add_argument("--files", default="", help="comma-separated file name patterns of benchmarks/unseen to run "
                    "(default: every file)")
    ap.add_argument("--commit", help="with --from-graphs and no OUT/run.json: the commit that extracted the graphs")
    args = ap.parse_args()
    from promem_fast.eval.precision import load_labels, score_labels, session_memories, write_review_file
    from promem_fast.results_log import append_line, run_fields
    from promem_fast.schema import MemoryGraph

    run_file = args.out / "run.json"  # the extraction's commit, date and machine
    if args.from_graphs:
        if run_file.is_file():
            run = json.loads(run_file.read_text())
        elif args.commit:
            run = {"commit": args.commit, "date": None, "machine": None}
        else:
            ap.error(f"--from-graphs: {run_file} is missing; name the extraction's commit with --commit")
    else:
        run = run_fields()
    from promem_fast import Config

    base = Config()
    if args.llm:
        base.llm.backend = args.llm
    if args.embed:
        base.embed.backend = args.embed
    sessions = load_unseen(files=args.files)
    by_id = {s.session_id: s for s in sessions}
    args.out.mkdir(parents=True, exist_ok=True)
    seconds_file = args.out / "seconds.json"
    seconds = json.loads(seconds_file.read_text()) if seconds_file.is_file() else {}
    by_variant = {}
    for variant in [v.strip() for v in args.variants.split(",") if v.strip()]:
        path = args.out / f"graphs-{variant}.jsonl"
        if args.from_graphs:
            graphs = [MemoryGraph.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]
        else:
            graphs, secs = asyncio.run(_extract(sessions, variant, args.concurrency, base))
            path.write_text("".join(g.model_dump_json() + "\n" for g in graphs))
            seconds[variant] = secs
            seconds_file.write_text(json.dumps(seconds, indent=1))
            run_file.write_text(json.dumps(run, indent=1))
        by_variant[variant] = [session_memories(g, by_id[g.session_id], [], seconds.get(variant, {}).get(g.session_id, 0.0))
                               for g in graphs]
    if not args.from_graphs:
        write_review_file(by_variant, args.out / "review.jsonl")
    labels = load_labels(args.labels) if args.labels else None
    for variant, sm in by_variant.items():
        n = len(sm)
        line = {"benchmark": "unseen", **run, "variant": variant, "sessions": n,
                "session_ids": sorted(s.session_id for s in sm),
                "memories": sum(len(s.memories) for s in sm),
                "tokens_per_session": round(sum(s.tokens for s in sm) / n) if n else None,
                # None when OUT/seconds.json has none for this variant (graphs made elsewhere)
                "seconds_per_session": round(sum(s.seconds for s in sm) / n, 1) if n and variant in seconds else None}
        if labels is not None:
            line["labels"] = str(args.labels.relative_to(ROOT)) if args.labels.is_absolute() and ROOT in args.labels.parents else str(args.labels)
            line["reviewed"] = score_labels(sm, labels)
        print(json.dumps(line))
        if args.append:
            append_line(args.append, line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
