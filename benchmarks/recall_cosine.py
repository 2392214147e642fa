"""Gold memory points recalled by embedding similarity, from HaluMem output files.

The judge-free measure of ``../shared/PEERS.md``: a gold memory point (``memory_points[]``,
interference points excluded) counts as recalled when some extracted memory of the same
session has cosine >= ``--tau`` (default 0.6) with it under all-MiniLM-L6-v2. Reads one or
more ``*_eval_results.jsonl`` files written by ``promem-fast eval halumem`` (HaluMem's output
contract: ``sessions[].memory_points[].memory_content``, ``sessions[].extracted_memories``)
and prints one JSON line per file.

Extracted memories are compared as written in the file; with ``--plain`` the ``[date]``
prefix and the `` Details: ...`` suffix that promem_fast adds to each retrieval unit are cut
first, so only the event sentence is compared.

    python benchmarks/recall_cosine.py out/promem_fast-promem/promem_fast_eval_results.jsonl \
        out/promem_fast-one-off/promem_fast_eval_results.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

_DATE = re.compile(r"^\[[^\]]*\]\s*")
_DETAILS = re.compile(r"\s+Details:.*$", re.S)


def plain(memory: str) -> str:
    """The event sentence of a promem_fast retrieval unit (date prefix and details cut)."""
    return _DETAILS.sub("", _DATE.sub("", memory)).strip()


def recall(path: Path, embed, tau: float, strip: bool) -> dict:
    """Share of gold points with a same-session memory at cosine >= tau (see module doc).

    Raises:
        ValueError: a line is not a HaluMem user object (names the line number).
    """
    hits = total = memories = 0
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        user = json.loads(line)
        if not isinstance(user, dict) or "sessions" not in user:
            raise ValueError(f"{path}:{n}: not a HaluMem user object (no 'sessions')")
        for s in user["sessions"]:
            gold = [p["memory_content"] for p in s.get("memory_points") or []
                    if p.get("memory_source") != "interference"]
            mems = [plain(m) if strip else m for m in s.get("extracted_memories") or []]
            memories += len(mems)
            total += len(gold)
            if not gold or not mems:
                continue
            g = embed.encode_sync(gold)
            m = embed.encode_sync(mems)
            hits += int(((g @ m.T).max(axis=1) >= tau).sum())  # rows are L2-normalised
    return {"file": str(path), "tau": tau, "plain": strip, "gold_points": total, "recalled": hits,
            "recall": round(hits / total, 4) if total else None, "memories": memories,
            "embedding": getattr(embed, "model_name", type(embed).__name__)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--tau", type=float, default=0.6)
    ap.add_argument("--plain", action="store_true", help="compare only the event sentence")
    ap.add_argument("--append-results", type=Path, metavar="FILE",
                    help="also append one line for this run (commit, date, machine, rows) to FILE, "
                         "e.g. benchmarks/results/recall_cosine.jsonl")
    ap.add_argument("--run", help="run name for that line (e.g. halumem_user3_s1-3_promem_<commit>)")
    args = ap.parse_args()
    from promem_fast.backends.embed.onnx import OnnxEmbedder
    from promem_fast.config import EmbedConfig

    embed = OnnxEmbedder(EmbedConfig(), threads=1)
    rows = []
    for f in args.files:
        rows.append(recall(f, embed, args.tau, args.plain))
        print(json.dumps(rows[-1]), flush=True)
    if args.append_results:
        from promem_fast.results_log import append_line, run_fields

        append_line(args.append_results, {"benchmark": "recall_cosine", "run": args.run, **run_fields(),
                                          "command": " ".join(sys.argv), "rows": rows})


if __name__ == "__main__":
    main()
