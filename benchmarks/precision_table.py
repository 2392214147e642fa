"""Every reviewed run of ``benchmarks/results/precision.jsonl`` as one markdown table.

One row per run of ``promem`` on a slice whose memories all carry blind labels (``reviewed``
with no unlabelled memory), paired with the first fully labelled ``one-off`` line of the same
commit, slice, session picks and config among the next three lines (the same run; a ``one-off`` line
pairs with one ``promem`` line at most). Columns: the lines, commit (with the config fields the
run set over its defaults, :func:`_overrides`), date, host, slice, memories, reviewed precision,
correct memories per session and their ratio to ``one-off``'s, ``one-off``'s reviewed
precision, the seconds-per-session ratio and ``promem``'s tokens per session.

    python benchmarks/precision_table.py [--results benchmarks/results/precision.jsonl]

``docs/evaluation.md`` holds its output between the ``<!-- runs-table -->`` markers
(``tests/test_docs.py`` checks that they agree; ``--write`` rewrites that block).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from a checkout

from promem_fast.io._common import iter_jsonl  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "precision.jsonl"
DOC = ROOT / "docs" / "evaluation.md"
BEGIN, END = "<!-- runs-table -->", "<!-- /runs-table -->"


def _host(line: dict[str, Any]) -> str:
    m = line.get("machine")
    cpu = m.get("cpu", "") if isinstance(m, dict) else str(m or "")
    name = "AMD EPYC" if "AMD" in cpu else ("Intel Xeon" if "Xeon" in cpu else (cpu or "?"))
    return name.replace("|", "/")  # a table cell


def _reviewed(line: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The line's ``reviewed`` counts when every memory of it is labelled, else None."""
    rv = line.get("reviewed")
    return rv if isinstance(rv, dict) and rv.get("labelled") and not rv.get("unlabelled") else None


def rows(path: Path = RESULTS) -> list[dict[str, Any]]:
    """The reviewed ``promem`` runs of ``path``, each with its ``one-off`` pair (or None).

    Raises:
        ValueError: a line of ``path`` is not a JSON object (its line number is named).
    """
    lines = []
    for n, obj in iter_jsonl(path):
        if not isinstance(obj, dict):
            raise ValueError(f"{path}: line {n} is not a JSON object")
        lines.append((n, obj))
    out: list[dict[str, Any]] = []
    used: set[int] = set()
    for i, (n, r) in enumerate(lines):
        if r.get("variant") != "promem" or _reviewed(r) is None:
            continue
        key = (r.get("commit"), r.get("slice"), r.get("picks"), r.get("config"))
        pair = next(((m, o) for m, o in lines[i + 1:i + 4]
                     if m not in used and o.get("variant") == "one-off" and _reviewed(o) is not None
                     and (o.get("commit"), o.get("slice"), o.get("picks"), o.get("config")) == key), None)
        if pair:
            used.add(pair[0])
        out.append({"line": n, "promem": r, "one_off_line": pair[0] if pair else None,
                    "one_off": pair[1] if pair else None})
    return out


def _overrides(line: dict[str, Any]) -> str:
    """The commit cell's suffix: ``" + section.field=value"`` (value as JSON) per config field the
    run set over the commit's defaults (the line's ``config``, from ``bench_precision.py
    --config``); "" without one. A ``|`` is escaped, as the cell sits in a Markdown table."""
    flat = []
    for section, fields in (line.get("config") or {}).items():
        items = fields.items() if isinstance(fields, dict) else [(None, fields)]
        flat += [f"{section}.{k}={json.dumps(v)}" if k else f"{section}={json.dumps(v)}" for k, v in items]
    return "".join(f" + {x}" for x in flat).replace("|", "\\|")


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _precision(rv: dict[str, Any]) -> Optional[float]:
    """Correct / labelled, from the counts (the stored ratio is rounded to 4 digits)."""
    n = rv.get("labelled")
    return rv["correct"] / n if n and rv.get("correct") is not None else rv.get("reviewed_precision")


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "-"


def markdown(path: Path = RESULTS) -> str:
    """The table (no trailing newline)."""
    head = ("| lines | commit | date | host | slice | memories | correct | correct / session (x `one-off`) "
            "| `one-off` correct | s / session (x `one-off`) | tokens / session |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|")
    body = []
    for row in rows(path):
        p, o = row["promem"], row["one_off"]
        rp, ro = _reviewed(p), (_reviewed(o) if o else None)
        lines = f"{row['line']}" + (f"-{row['one_off_line']}" if row["one_off_line"] else "")
        sl = p.get("slice", "?") + (f" {p['picks']}" if p.get("picks") else "")
        cps = rp.get("correct_per_session")
        cps_o = ro.get("correct_per_session") if ro else None
        sec, sec_o = p.get("seconds_per_session"), (o.get("seconds_per_session") if o else None)
        tok = p.get("tokens_per_session")
        cells = (f"| {lines} | {p.get('commit', '?')}{_overrides(p)} | {str(p.get('date', ''))[:10]} | {_host(p)} | {sl} "
                 f"| {rp.get('labelled')} | {rp.get('correct')} ({_pct(_precision(rp))}) ")
        if cps is not None and sec is not None and tok is not None:
            cells += (f"| {cps:.1f} ({_ratio(cps, cps_o)}) | {_pct(_precision(ro)) if ro else '-'} "
                      f"| {sec:,.0f} ({_ratio(sec, sec_o)}) | {tok:,.0f} |")
        else:
            cells += "| - | - | - | - |"
        body.append(cells)
    return "\n".join([head, *body])


def doc_block(doc: Path = DOC) -> str:
    """What ``doc`` holds between the markers (stripped).

    Raises:
        ValueError: the markers are missing.
    """
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), doc.read_text(encoding="utf-8"), re.S)
    if m is None:
        raise ValueError(f"{doc}: no {BEGIN} ... {END} block")
    return m.group(1).strip()


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--write", action="store_true", help=f"rewrite the table block of {DOC.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    table = markdown(args.results)
    if not args.write:
        print(table)
        return 0
    text = DOC.read_text(encoding="utf-8")
    doc_block(DOC)  # raises when the markers are missing
    new = re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END), lambda _: f"{BEGIN}\n{table}\n{END}", text, flags=re.S)
    DOC.write_text(new, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}: {len(table.splitlines()) - 2} runs")  # less the head's 2 lines
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
