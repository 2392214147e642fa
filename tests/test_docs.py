"""README and docs/: short front page, the two commands verbatim, links that resolve."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _bench_loader import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMANDS = [
    "bash .ci/setup && .venv/bin/promem-fast extract ../shared/data/locomo_dev.json --format locomo "
    "--sample conv-26 --sessions 1 --out out/conv-26_session_1.json",
    "bash .ci/setup && .venv/bin/python -m pytest -q",
]


def _anchor(heading: str) -> str:  # GitHub's heading ids
    h = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return h.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_anchor(m) for m in re.findall(r"^#+ (.+)$", page.read_text(), re.M)}


def test_readme_is_short_and_keeps_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    for c in COMMANDS:
        assert c in text
    assert "bash .ci/setup && .venv/bin/python -m pytest -q" in (ROOT / ".ci" / "run").read_text()
    assert {p.name for p in PAGES} >= {"README.md", "pipeline.md", "engine.md", "benchmarks.md", "evaluation.md", "models.md"}
    assert "## Review rubric" in (ROOT / "docs" / "evaluation.md").read_text()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"https?:", target):
            continue
        path, _, frag = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.name}: {target}"
        if frag and dest.suffix == ".md":
            assert frag in _anchors(dest), f"{page.name}: {target}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_results_files_named_in_docs_exist(page):
    res = ROOT / "benchmarks" / "results"
    text = page.read_text().split("| old file (before issue 17)")[0]  # the renames table names old files
    for name in set(re.findall(r"`([\w.-]+\.jsonl)`", text)):
        if name in ("graphs.jsonl", "failed.jsonl", "promem_fast_eval_results.jsonl", "xref_gpu.jsonl"):
            continue
        assert (res / name).is_file(), f"{page.name} names {name}"


def _precision_table():
    """benchmarks/precision_table.py as a module (benchmarks/ is no package)."""
    return load_benchmark("precision_table")


def test_the_runs_table_of_evaluation_md_is_the_one_precision_jsonl_gives():
    mod = _precision_table()
    table = mod.markdown()
    assert mod.doc_block() == table, "run: python benchmarks/precision_table.py --write"
    # the e445bab LoCoMo run as labelled (43 of 52), beside its one-off line; a run whose
    # one-off line is not reviewed (e9b43a3) has no ratio
    assert "| 128-129 | e445bab | 2026-12-05 | Intel Xeon | locomo | 52 | 43 (82.7 %) | 4.3 (1.48x) | 43.3 % | 371 (3.61x) | 8,140 |" in table


def test_the_runs_table_names_a_runs_config_beside_its_commit():
    overrides = _precision_table()._overrides
    assert overrides({"config": {"pipeline": {"max_events_per_topic": 3, "dedup": False}}}) == \
        " + pipeline.max_events_per_topic=3 + pipeline.dedup=false"
    # a field outside a section, and a "|" that would end the Markdown cell
    assert overrides({"config": {"cache_dir": "a|b"}}) == ' + cache_dir="a\\|b"'
    assert overrides({"commit": "abc1234"}) == ""


def test_the_runs_table_names_a_broken_results_line(tmp_path):
    mod = _precision_table()
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"variant": "promem"}\n{not json\n')
    with pytest.raises(ValueError, match="line 2"):
        mod.rows(bad)
    bad.write_text('{"variant": "promem"}\n[1, 2]\n')
    with pytest.raises(ValueError, match="line 2 is not a JSON object"):
        mod.rows(bad)
    # a partly labelled run is no row; a one-off line pairs with one promem line only
    rv = {"labelled": 4, "unlabelled": 0, "correct": 3, "correct_per_session": 1.5}
    ok = dict(commit="c1", slice="locomo", seconds_per_session=10.0, tokens_per_session=100.0, reviewed=rv)
    lines = [dict(ok, variant="promem"), dict(ok, variant="promem"), dict(ok, variant="one-off"),
             dict(ok, variant="promem", reviewed=dict(rv, unlabelled=1))]
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = mod.rows(bad)
    assert [(r["line"], r["one_off_line"]) for r in got] == [(1, 3), (2, None)]
    assert mod.markdown(bad).splitlines()[2].endswith("| 3 (75.0 %) | 1.5 (1.00x) | 75.0 % | 10 (1.00x) | 100 |")
