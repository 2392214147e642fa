"""benchmarks/bench_unseen.py: the unseen dialogues load (LoCoMo files once per speaker),
and a run with the scripted LLM writes graphs a labelled rescore reads back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _bench_loader import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


def test_every_unseen_dialogue_loads_with_its_user():
    sessions = load_benchmark("bench_unseen").load_unseen()
    ids = {s.session_id: s.user_name for s in sessions}
    # two-speaker chats give one session per speaker; plain files keep their user_name
    assert ids["fresh-1/session_2@Priya"] == "Priya" and ids["fresh-1/session_2@Tom"] == "Tom"
    assert ids["lena-marco/session_1@Marco"] == "Marco"
    assert ids["daniel/session_1"] == "Daniel" and ids["miriam/session_1"] == "Miriam"
    assert ids["li-na/session_1"] == "李娜" and ids["oskar-ines/session_1@Ines"] == "Ines"
    assert ids["yuki/session_2"] == "Yuki" and ids["tariq-sofie/session_1@Sofie"] == "Sofie"
    assert ids["chen-wei/session_1"] == "陈伟" and ids["nikhil-ana/session_1@Ana"] == "Ana"
    assert ids["joao/session_1"] == "João" and ids["noor-petra/session_1@Petra"] == "Petra"
    assert len(ids) == len(sessions) == 72
    assert all(s.turns and all(t.timestamp for t in s.turns) for s in sessions)


def test_a_run_can_take_only_some_files():
    load = load_benchmark("bench_unseen").load_unseen
    ids = sorted(s.session_id for s in load(files="amara.json, oskar_*"))
    assert ids == ["amara/session_1", "oskar-ines/session_1@Ines", "oskar-ines/session_1@Oskar"]
    import pytest

    with pytest.raises(FileNotFoundError, match="no_such"):
        load(files="no_such.json")


def test_a_scripted_run_is_rescored_from_its_graphs_with_labels(tmp_path):
    out = tmp_path / "u"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_unseen.py"), "--out", str(out), "--variants", "one-off",
           "--llm", "scripted", "--embed", "hash"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    (first,) = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    n_sessions = len(load_benchmark("bench_unseen").load_unseen())
    assert n_sessions >= 28 and first["sessions"] == n_sessions and first["seconds_per_session"] is not None
    graphs = [json.loads(x) for x in (out / "graphs-one-off.jsonl").read_text().splitlines()]
    mems = [(g["session_id"], e["text"]) for g in graphs for e in g["events"]]
    assert len(mems) == first["memories"] > 0
    # label every memory correct but the first wrong: the rescore counts exactly that
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"session_id": sid, "memory": m, "label": "wrong" if i == 0 else "correct"}) + "\n"
                              for i, (sid, m) in enumerate(dict.fromkeys(mems))))
    res = subprocess.run(cmd[:6] + ["--from-graphs", "--labels", str(labels)], capture_output=True, text=True,
                         timeout=600, check=True)
    (again,) = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert again["commit"] == first["commit"] and again["date"] == first["date"]  # the extraction's, from run.json
    rev = again["reviewed"]
    assert rev["wrong"] == 1 and rev["unlabelled"] == 0
    assert rev["correct"] + rev["duplicate"] == len(dict.fromkeys(mems)) - 1


def test_the_hv_screen_replays_over_the_labelled_unseen_memories():
    # screen_replay --unseen: the stored new-file memories against today's whole HV screen
    replay = load_benchmark("screen_replay")
    load = load_benchmark("bench_unseen").load_unseen
    sessions = {s.session_id: s for s in load(files="priyanka_leo.locomo.json")}
    mems = {m["text"]: m for m in replay.memories(sessions, replay.UNSEEN_GRAPHS)}
    fell = mems["Leo fell off his own bike going down Shaw Hill."]  # Dara fell (turn D1:6)
    assert fell["label"] == "wrong" and fell["premise_id"] == "D1:6"
    assert "not the user" in replay.hv_screen(fell)
    # a correct one stays: the user's own test pass
    kept = [m for m in mems.values() if m["label"] == "correct" and m["session_id"].endswith("@Priyanka")]
    assert kept and not any(replay.hv_screen(m) for m in kept)
