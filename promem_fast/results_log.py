"""One JSON line per benchmark run: the format of ``benchmarks/results/*.jsonl``.

Every writer (``promem-fast eval --append-results``, ``python -m promem_fast.bench --out``,
``benchmarks/recall_cosine.py`` and ``benchmarks/judge_halumem_output.py`` with
``--append-results``) appends a line holding ``commit``, ``date`` and ``machine`` next to its
figures, so a new run adds a line to its benchmark's file instead of a new file.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Union

__all__ = ["git_commit", "run_fields", "append_line", "eval_summary"]

# per-item records that stay in the run's results.json, not in its summary line
_PER_ITEM = ("per_session", "per_question", "per_point")


def git_commit(cwd: Union[str, Path, None] = None) -> Optional[str]:
    """Short hash of HEAD (``str``, with ``+dirty`` when tracked files changed), or None
    outside a git checkout or without git."""
    where = str(cwd or Path(__file__).resolve().parent)
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def run_fields() -> dict[str, Any]:
    """``{"commit": str | None, "date": ISO 8601 UTC str, "machine": dict}`` for a result line."""
    from .bench import machine_info

    return {"commit": git_commit(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": machine_info()}


def append_line(path: Union[str, Path], record: dict[str, Any]) -> Path:
    """Append ``record`` as one JSON line to ``path`` (folders created); returns the path.
    Raises OSError when it cannot be written, TypeError when ``record`` is not JSON-serialisable."""
    path = Path(path)
    line = json.dumps(record, ensure_ascii=False, allow_nan=False, default=str)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
    return path


def _clean(x: Any) -> Any:
    if isinstance(x, float) and x != x:  # NaN -> null, as in results.json
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def eval_summary(results: dict[str, Any], out_dir: Union[str, Path]) -> dict[str, Any]:
    """The summary line of one ``promem-fast eval`` run: :func:`run_fields`, the benchmark,
    judge, models and judge stats, each variant's figures without its per-item records (those
    stay in ``results.json``, named under ``artifacts``)."""
    line: dict[str, Any] = {"benchmark": results.get("benchmark"), **run_fields(), "out_dir": str(out_dir)}
    for k, v in results.items():
        if k in ("variants", "config", "report_md", "results_json", "benchmark"):
            continue
        line[k] = v
    line["config_pipeline"] = (results.get("config") or {}).get("pipeline")
    line["variants"] = {v: {k: x for k, x in a.items() if k not in _PER_ITEM}
                        for v, a in (results.get("variants") or {}).items()}
    line["artifacts"] = {"results": results.get("results_json"), "report": results.get("report_md")}
    return _clean(line)
