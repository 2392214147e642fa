"""benchmarks/bench_precision.py end to end on the dev slice with the scripted LLM: rescoring
stored graphs (--from-graphs) reports the extraction's wall time, not its own, and the
--config the extraction ran with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PROMEM_DATA_DIR") or ROOT.parent / "shared" / "data")


@pytest.mark.skipif(not (DATA / "locomo_dev.json").is_file(), reason=f"LoCoMo dev data not found in {DATA}")
def test_from_graphs_keeps_the_extraction_wall_time(tmp_path):
    out = tmp_path / "prec"
    base = [sys.executable, str(ROOT / "benchmarks" / "bench_precision.py"), "--out", str(out), "--slices", "locomo",
            "--locomo", "conv-26:1", "--variants", "one-off", "--llm", "scripted", "--embed", "hash",
            "--data", str(DATA)]

    def lines(extra):
        res = subprocess.run(base + extra, capture_output=True, text=True, timeout=600, check=True)
        return [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]

    (first,) = lines([])
    walls = json.loads((out / "wall_s.json").read_text())
    assert walls == {"locomo-one-off": first["wall_s"]} and first["wall_s"] is not None
    # the rescoring of stored graphs reports that wall time again, and the same memories,
    # and the extraction's commit, date and machine, not its own
    run = json.loads((out / "run.json").read_text())["locomo-one-off"]
    assert run["commit"] == first["commit"] and run["date"] == first["date"]
    (again,) = lines(["--from-graphs"])
    assert again["wall_s"] == first["wall_s"]
    (out / "run.json").write_text(json.dumps({"locomo-one-off": {**run, "commit": "abc1234", "date": "2026-12-01T00:00:00+00:00"}}))
    (again,) = lines(["--from-graphs"])
    assert (again["commit"], again["date"], again["machine"]) == ("abc1234", "2026-12-01T00:00:00+00:00", first["machine"])
    assert again["memories"] == first["memories"] > 0
    # without the file there is no wall time to report: null, never the rescoring's seconds
    (out / "wall_s.json").unlink()
    (bare,) = lines(["--from-graphs"])
    assert bare["wall_s"] is None
    # picks the run never extracted are an error that names them, not sessions scored as failed
    res = subprocess.run([x if x != "conv-26:1" else "conv-26:2" for x in base] + ["--from-graphs"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode != 0 and "conv-26/session_2@Caroline" in res.stderr and not res.stdout.strip()


@pytest.mark.skipif(not (DATA / "locomo_dev.json").is_file(), reason=f"LoCoMo dev data not found in {DATA}")
def test_a_run_with_a_config_records_it_and_its_rescore_does_too(tmp_path):
    out, cfg = tmp_path / "prec", tmp_path / "cfg.json"
    base = [sys.executable, str(ROOT / "benchmarks" / "bench_precision.py"), "--out", str(out), "--slices", "locomo",
            "--locomo", "conv-26:1", "--variants", "one-off", "--llm", "scripted", "--embed", "hash",
            "--data", str(DATA)]

    def line(extra):
        res = subprocess.run(base + extra, capture_output=True, text=True, timeout=600, check=True)
        (got,) = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
        return got

    # a field restated at its default is no override; the API key is never written out
    cfg.write_text(json.dumps({"pipeline": {"max_events_per_topic": 2, "dedup": True}, "llm": {"api_key": "sk-x"}}))
    assert line(["--config", str(cfg)])["config"] == {"pipeline": {"max_events_per_topic": 2}}
    assert "sk-x" not in (out / "config.json").read_text()
    assert line(["--from-graphs"])["config"] == {"pipeline": {"max_events_per_topic": 2}}
    # a new extraction at the defaults is not reported with the previous run's overrides
    assert "config" not in line([])
    assert "config" not in line(["--from-graphs"])

