"""The pipeline benchmark: output lines, token accounting aggregated from the graphs, and the
sequential / batched comparison (equal work, fewer backend calls). Speed is not asserted."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from promem_fast.bench import main, percentile


def _input(path):
    lines = []
    for k in range(3):
        t0 = datetime(2023, 6, 1 + k, 9, 0)
        turns = [
            {"role": "user" if i % 2 == 0 else "assistant", "turn_id": f"t{i}",
             "timestamp": (t0 + timedelta(minutes=i)).isoformat(),
             "content": [f"I bought a red bike in Oslo for {k + 2} hundred euros",
                         "Nice! Where do you ride it?",
                         f"Along the fjord with my brother Per{k} every Saturday morning",
                         "Lovely."][i % 4]}
            for i in range(6)
        ]
        lines.append(json.dumps({"session_id": f"b{k}", "user_name": "Ola", "turns": turns}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_percentile():
    assert percentile([], 50) == 0.0
    assert percentile([3.0], 95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([0.0, 10.0], 95) == pytest.approx(9.5)


def test_bench_prints_one_line_per_engine_and_the_ratio(tmp_path, capsys):
    inp = _input(tmp_path / "in.jsonl")
    out = tmp_path / "res.jsonl"
    rc = main(["--input", str(inp), "--sessions", "3", "--concurrency", "3", "--latency-ms", "1",
               "--engine", "sequential,batched", "--out", str(out)])
    assert rc == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert [x.get("engine", x.get("metric")) for x in lines] == ["sequential", "batched", "ratio_batched_over_sequential"]
    seq, bat, final = lines
    for rec in (seq, bat):
        assert rec["sessions"] == 3 and rec["failed"] == 0
        for key in ("sessions_per_s", "p50_session_s", "p95_session_s", "llm_calls_per_session",
                    "prompt_tokens_per_session", "completion_tokens_per_session"):
            assert rec[key] > 0, key
        assert rec["p95_session_s"] >= rec["p50_session_s"]
        assert {"details", "events", "draft", "verify"} <= set(rec["stage_seconds"])
        assert rec["machine"]["cpu_count"] >= 1
        cost = rec["stage_cost_per_session"]
        assert sum(c["llm_calls"] for c in cost.values()) == pytest.approx(rec["llm_calls_per_session"], abs=0.05)
        assert sum(c["prompt_tokens"] for c in cost.values()) == pytest.approx(rec["prompt_tokens_per_session"], abs=0.5)
    # the same work in both engines: calls and tokens per session come from the graphs
    for key in ("llm_calls_per_session", "prompt_tokens_per_session", "completion_tokens_per_session"):
        assert seq[key] == bat[key], key
    # sequential: one backend call per request; batched: requests of 3 sessions merged
    assert seq["backend_llm_calls"] == round(seq["llm_calls_per_session"] * 3)
    assert seq["batcher"]["llm"]["largest_batch"] == 1
    assert bat["backend_llm_calls"] < seq["backend_llm_calls"]
    assert bat["batcher"]["llm"]["items"] == seq["batcher"]["llm"]["items"]
    assert final["identical_graphs"] is True
    # from the unrounded rates: same sessions, so the ratio of the wall times
    assert final["ratio"] == pytest.approx(seq["wall_s"] / bat["wall_s"], abs=2e-3)
    assert len(out.read_text().strip().splitlines()) == 3


def test_bench_rejects_unknown_engine(tmp_path):
    inp = _input(tmp_path / "in.jsonl")
    with pytest.raises(SystemExit):
        main(["--input", str(inp), "--engine", "fast"])


def test_bench_single_engine_prints_no_ratio_line(tmp_path, capsys):
    inp = _input(tmp_path / "in.jsonl")
    assert main(["--input", str(inp), "--sessions", "2", "--latency-ms", "0", "--engine", "sequential"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert [x.get("engine", x.get("metric")) for x in lines] == ["sequential"]


@pytest.mark.parametrize("extra, needle", [
    (["--input", "{d}/nope.json"], "nope.json"),
    (["--input", "{d}/bad.json"], "bad.json"),
    (["--input", "{d}/in.jsonl", "--llm", "foo"], "foo"),
    (["--input", "{d}/in.jsonl", "--out", "{d}"], "--out"),
])
def test_bench_bad_input_is_a_one_line_error(tmp_path, capsys, extra, needle):
    _input(tmp_path / "in.jsonl")
    (tmp_path / "bad.json").write_text('[{"role": "user", ')
    rc = main([x.format(d=tmp_path) for x in extra] + ["--sessions", "1", "--latency-ms", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and needle in err and "Traceback" not in err
