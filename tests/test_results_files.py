"""benchmarks/results: one JSON Lines file per benchmark, every run line names commit, date and
machine, and every artifact a line points to exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUN_FILES = ["eval_halumem.jsonl", "eval_locomo.jsonl", "recall_cosine.jsonl", "judge_halumem.jsonl", "main_job.jsonl"]


def _lines(name):
    return [json.loads(ln) for ln in (RESULTS / name).read_text().splitlines() if ln.strip()]


def test_only_jsonl_files_and_no_letter_suffixed_copies():
    top = sorted(p.name for p in RESULTS.iterdir() if p.is_file())
    assert all(n.endswith(".jsonl") for n in top), top
    everything = [p.name for p in RESULTS.rglob("*") if p.is_file()]
    assert not [n for n in everything if any(n.startswith(f) for f in ("eval_halumem_user3", "eval_locomo_conv"))]
    assert not [n for n in everything if "2026-12-01" in n and n[n.index("2026-12-01") + 10:][:1].isalpha()]


@pytest.mark.parametrize("name", RUN_FILES)
def test_each_run_line_names_commit_date_machine_and_existing_artifacts(name):
    lines = _lines(name)
    assert lines
    for x in lines:
        assert {"run", "date", "commit", "recorded_in", "machine"} <= set(x), x.get("run")
        assert x["date"].startswith("2026-1")
        for path in (x.get("artifacts") or {}).values():
            assert (ROOT / path).is_file(), path


def test_current_headline_figures_are_where_the_docs_say():
    halu = _lines("eval_halumem.jsonl")
    cur = halu[7]  # docs/evaluation.md: eval_halumem.jsonl line 8
    assert cur["commit"] == "e9b43a3"
    p = cur["variants"]["promem"]
    assert (round(p["integrity"] * 100, 1), round(p["accuracy"] * 100, 1), round(p["tokens_per_session"])) == (39.8, 7.3, 24439)
    one = halu[4]["variants"]["one-off"]  # line 5
    assert (halu[4]["commit"], round(one["integrity"] * 100, 1)) == ("4550be6", 26.1)
    loc = _lines("eval_locomo.jsonl")[2]  # line 3
    assert loc["commit"] == "2f0b914"
    assert round(loc["variants"]["promem"]["f1"] * 100, 1) == 29.0 and round(loc["variants"]["one-off"]["f1"] * 100, 1) == 39.5
    main = _lines("main_job.jsonl")[3]  # line 4
    assert (main["commit"], main["extract_s"], main["llm_calls"], main["prompt_tokens"] + main["completion_tokens"]) == (
        "2f0b914", 102, 37, 12028)
    assert sum(st["llm_calls"] for st in main["stages"].values()) == 37
    ratio = _lines("bench_embedded.jsonl")[12]  # line 13
    assert (ratio["metric"], ratio["commit"]) == ("ratio_batched_over_sequential", "ffe376a")
    shared = [x for x in _lines("bench_scripted.jsonl") if x.get("machine_shared")]
    assert len(shared) == 3 and shared[2]["metric"] == "ratio_batched_over_sequential"


def test_every_line_of_every_results_file_names_commit_date_and_machine():
    for f in sorted(RESULTS.glob("*.jsonl")):
        for n, x in enumerate(_lines(f.name), 1):
            assert {"commit", "date", "machine"} <= set(x), f"{f.name}:{n}"
            assert x["machine"], f"{f.name}:{n}"
