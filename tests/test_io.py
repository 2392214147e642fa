"""Input loaders: plain JSON/JSONL, LoCoMo, HaluMem, LongMemEval (real dev data + hand-made files)."""

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from promem_fast.io import (
    detect_format,
    load_longmemeval,
    load_sessions,
    parse_session_selection,
    user_name_from_persona,
)
from promem_fast.timeparse import TimestampError

DATA = Path(os.environ.get("PROMEM_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
LOCOMO = DATA / "locomo_dev.json"
HALUMEM = DATA / "halumem_dev_user3.jsonl"
needs_locomo = pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo dev data not found at {LOCOMO}")
needs_halumem = pytest.mark.skipif(not HALUMEM.is_file(), reason=f"HaluMem dev data not found at {HALUMEM}")


def _write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _write_lines(path: Path, objs) -> Path:
    path.write_text("\n".join(json.dumps(o) for o in objs) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------ session selection


@pytest.mark.parametrize(
    "spec, expected",
    [("1-2", [1, 2]), ("3", [3]), ("1,3,5", [1, 3, 5]), ("1-3,7", [1, 2, 3, 7]), ([4, 2], [2, 4]),
     (2, [2]), (None, None)],
)
def test_parse_session_selection(spec, expected):
    assert parse_session_selection(spec) == expected


@pytest.mark.parametrize("spec", ["0", "3-1", "a", "1,,2", [1.5], "", True])
def test_parse_session_selection_rejects(spec):
    with pytest.raises(ValueError):
        parse_session_selection(spec)


# ------------------------------------------------------------------ LoCoMo, real data


@needs_locomo
def test_locomo_conv26_session1():
    assert detect_format(LOCOMO) == "locomo"
    ss = load_sessions(LOCOMO, sample="conv-26", sessions="1")
    assert len(ss) == 1
    s = ss[0]
    assert s.session_id == "conv-26/session_1"
    assert len(s.turns) == 18
    t0 = s.turns[0]
    assert (t0.turn_id, t0.speaker, t0.role) == ("D1:1", "Caroline", "user")
    assert t0.timestamp == datetime(2023, 5, 8, 13, 56)
    assert s.start_time == datetime(2023, 5, 8, 13, 56)
    assert s.user_name == "Caroline"
    assert s.turns[1].role == "assistant" and s.turns[1].speaker == "Melanie"
    qs = [q["question"] for q in s.metadata["qa"]]
    assert "When did Caroline go to the LGBTQ support group?" in qs
    assert all(all(e.startswith("D1:") for e in q["evidence"]) for q in s.metadata["qa"])
    assert s.metadata["image_captions"]["D1:5"].startswith("a photo of a dog")
    assert s.turns[4].content.startswith("The transgender stories were so inspiring")
    assert s.metadata["session_summary"].startswith("Caroline and Melanie had a conversation on 8 May 2023")
    assert "Caroline" in s.metadata["observation"]
    assert s.metadata["event_summary"]["date"] == "8 May, 2023"


@needs_locomo
def test_locomo_selection_and_user_speaker():
    ss = load_sessions(LOCOMO, sample="conv-26", sessions="1-2", user_speaker="Melanie")
    assert [s.session_id for s in ss] == ["conv-26/session_1", "conv-26/session_2"]
    assert ss[0].user_name == "Melanie"
    assert ss[0].turns[0].role == "assistant" and ss[0].turns[1].role == "user"
    assert ss[1].start_time == datetime(2023, 5, 25, 13, 14)
    every = load_sessions(LOCOMO)
    assert len(every) == 38  # 2 samples x 19 sessions
    with pytest.raises(ValueError, match="no session"):
        load_sessions(LOCOMO, sample="conv-26", sessions="20")
    with pytest.raises(ValueError, match="conv-99"):
        load_sessions(LOCOMO, sample="conv-99")


# ------------------------------------------------------------------ LoCoMo, hand-made


def _locomo_sample(**over):
    conv = {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "10:00 am on 2 March, 2024",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat yesterday."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "", "img_url": ["x"], "blip_caption": "a photo of a cat"},
        ],
        "session_2_date_time": "9:30 pm on 10 March, 2024",
        "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "How is the cat?"}],
    }
    conv.update(over)
    return {
        "sample_id": "s1", "conversation": conv,
        "qa": [
            {"question": "When did Ann adopt a cat?", "answer": "1 March 2024", "evidence": ["D1:1"], "category": 2},
            {"question": "Cat?", "answer": "yes", "evidence": ["D1:1; D2:1"], "category": 1},
        ],
        "observation": {"session_1_observation": {"Ann": [["Ann adopted a cat.", "D1:1"]]}},
        "session_summary": {"session_1_summary": "Ann adopted a cat."},
        "event_summary": {"events_session_1": {"Ann": ["adopts a cat"], "Bob": [], "date": "2 March, 2024"}},
    }


def test_locomo_handmade(tmp_path):
    p = _write(tmp_path / "loc.json", [_locomo_sample()])
    assert detect_format(p) == "locomo"
    s1, s2 = load_sessions(p)
    assert s1.session_id == "s1/session_1" and s1.user_name == "Ann"
    assert s1.turns[1].content == ""  # empty allowed at load time
    assert s1.metadata["image_captions"] == {"D1:2": "a photo of a cat"}
    assert [q["question"] for q in s1.metadata["qa"]] == ["When did Ann adopt a cat?"]
    assert [q["question"] for q in s1.metadata["qa_partial"]] == ["Cat?"]
    assert [q["question"] for q in s2.metadata["qa_partial"]] == ["Cat?"]
    assert s2.metadata["qa"] == [] and s2.metadata["observation"] is None
    assert s2.turns[0].timestamp == datetime(2024, 3, 10, 21, 30)


def test_locomo_missing_field_names_file_session_field(tmp_path):
    bad = _locomo_sample()
    del bad["conversation"]["session_2"][0]["text"]
    p = _write(tmp_path / "bad.json", [bad])
    with pytest.raises(ValueError) as ei:
        load_sessions(p, format="locomo")
    msg = str(ei.value)
    assert "bad.json" in msg and "s1/session_2" in msg and "'text'" in msg and "D2:1" in msg


def test_locomo_bad_date_names_session(tmp_path):
    p = _write(tmp_path / "d.json", [_locomo_sample(session_2_date_time="sometime in spring")])
    with pytest.raises(TimestampError, match=r"s1/session_2.*session_2_date_time"):
        load_sessions(p)


# ------------------------------------------------------------------ HaluMem


@needs_halumem
def test_halumem_real():
    assert detect_format(HALUMEM) == "halumem"
    ss = load_sessions(HALUMEM)
    assert len(ss) == 25
    assert sum(len(s.turns) for s in ss) == 1020
    assert sum(len(s.metadata["memory_points"]) for s in ss) == 314
    assert sum(len(s.metadata["questions"]) for s in ss) == 55
    s = ss[0]
    uuid = "5c005ed8-0d18-99f8-a20e-6a776a7ea30a"
    assert s.session_id == f"{uuid}/session_1"
    assert s.user_name == "Sarah Garcia"
    assert s.start_time == datetime(2025, 9, 4, 9, 5, 32)
    assert [t.turn_id for t in s.turns[:4]] == ["t0", "t0_1", "t1", "t1_1"]
    assert [t.role for t in s.turns[:2]] == ["user", "assistant"]
    assert s.turns[2].timestamp == datetime(2025, 9, 4, 9, 16, 4)
    assert s.metadata["end_time"] == "Sep 04, 2025, 11:35:32"
    assert s.metadata["uuid"] == uuid
    picked = load_sessions(HALUMEM, sample=uuid, sessions="2,3")
    assert [x.session_id for x in picked] == [f"{uuid}/session_2", f"{uuid}/session_3"]
    with pytest.raises(ValueError, match="no HaluMem user"):
        load_sessions(HALUMEM, sample="nope")


def _halumem_user(**turn_over):
    turn = {"role": "user", "content": "I moved to Oslo.", "timestamp": "Jan 15, 2029, 15:12:20", "dialogue_turn": 0}
    turn.update(turn_over)
    return {
        "uuid": "u-1", "persona_info": "Gender: Male; Location: Oslo",
        "sessions": [{
            "start_time": "Jan 15, 2029, 15:00:00", "end_time": "Jan 15, 2029, 16:00:00",
            "memory_points": [{"memory_content": "User moved to Oslo"}],
            "dialogue": [turn, {"role": "assistant", "content": "Nice!", "timestamp": "Jan 15, 2029, 15:12:20",
                                "dialogue_turn": 0}],
        }],
    }


def test_halumem_handmade(tmp_path):
    p = _write_lines(tmp_path / "h.jsonl", [_halumem_user()])
    (s,) = load_sessions(p)
    assert s.user_name == "User"  # persona has no Name
    assert [t.turn_id for t in s.turns] == ["t0", "t0_1"]
    assert s.start_time == datetime(2029, 1, 15, 15, 0)
    assert s.metadata["questions"] == []
    assert s.metadata["memory_points"] == [{"memory_content": "User moved to Oslo"}]


def test_halumem_missing_timestamp_and_bad_timestamp(tmp_path):
    user = _halumem_user()
    del user["sessions"][0]["dialogue"][0]["timestamp"]
    p = _write_lines(tmp_path / "h.jsonl", [user])
    with pytest.raises(ValueError) as ei:
        load_sessions(p, format="halumem")
    assert "h.jsonl" in str(ei.value) and "u-1/session_1" in str(ei.value) and "'timestamp'" in str(ei.value)
    p2 = _write_lines(tmp_path / "h2.jsonl", [_halumem_user(timestamp="yesterday-ish")])
    with pytest.raises(TimestampError, match=r"u-1/session_1.*turn 't0'"):
        load_sessions(p2)


def test_user_name_from_persona():
    assert user_name_from_persona("[Recorded on Oct 04, 2025] Name: Sarah Garcia; Gender: Female") == "Sarah Garcia"
    assert user_name_from_persona(None) == "User"


# ------------------------------------------------------------------ plain JSON / JSONL


def test_plain_list_of_turns_with_aliases(tmp_path):
    p = _write(tmp_path / "chat.json", [
        {"role": "human", "content": "Hi, I'm Lee.", "timestamp": "2024-01-02T10:00:00"},
        {"role": "bot", "content": "Hello Lee!", "timestamp": 1704189660},
        {"role": "User", "content": "", "timestamp": "2024/01/02 (Tue) 10:02"},
    ])
    assert detect_format(p) == "json"
    (s,) = load_sessions(p)
    assert s.session_id == "chat/session_1" and s.user_name == "User"
    assert [t.role for t in s.turns] == ["user", "assistant", "user"]
    assert [t.turn_id for t in s.turns] == ["t0", "t1", "t2"]
    assert s.turns[1].timestamp.year == 2024 and s.turns[1].timestamp.tzinfo is not None
    assert s.turns[2].timestamp == datetime(2024, 1, 2, 10, 2)
    assert s.start_time == datetime(2024, 1, 2, 10, 0)


def test_plain_list_of_sessions_and_lists(tmp_path):
    p = _write(tmp_path / "many.json", [
        {"session_id": "a", "user_name": "Zoë", "turns": [{"role": "user", "content": "Cafe\u0301"}]},
        [{"role": "ai", "content": "x"}],
        {"turns": [{"role": "assistant", "content": "y", "turn_id": "z9"}]},
    ])
    ss = load_sessions(p, sessions="1,3")
    assert [s.session_id for s in ss] == ["a", "many/session_3"]
    assert ss[0].user_name == "Zoë" and ss[0].turns[0].content == "Café"  # NFC
    assert ss[1].turns[0].turn_id == "z9"
    with pytest.raises(ValueError, match="no session"):
        load_sessions(p, sessions="4")
    with pytest.raises(ValueError, match="sample"):
        load_sessions(p, sample="a")


def test_plain_jsonl_sessions_and_turns(tmp_path):
    p = _write_lines(tmp_path / "s.jsonl", [
        {"session_id": "x", "turns": [{"role": "user", "content": "a"}]},
        {"session_id": "y", "turns": [{"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}]},
    ])
    assert detect_format(p) == "jsonl"
    assert [len(s.turns) for s in load_sessions(p)] == [1, 2]
    q = _write_lines(tmp_path / "t.jsonl", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    (s,) = load_sessions(q)
    assert [t.content for t in s.turns] == ["a", "b"]


@pytest.mark.parametrize(
    "turn, field",
    [({"content": "hi"}, "'role'"), ({"role": "user"}, "'content'"), ({"role": "wizard", "content": "x"}, "role")],
)
def test_plain_bad_turn_names_file_session_field(tmp_path, turn, field):
    p = _write(tmp_path / "bad.json", {"session_id": "sess-7", "turns": [turn]})
    with pytest.raises(ValueError) as ei:
        load_sessions(p)
    msg = str(ei.value)
    assert "bad.json" in msg and "sess-7" in msg and field in msg


def test_plain_bad_timestamp_names_turn(tmp_path):
    p = _write(tmp_path / "ts.json", {"session_id": "s", "turns": [{"role": "user", "content": "x",
                                                                    "turn_id": "q1", "timestamp": "soon"}]})
    with pytest.raises(TimestampError, match=r"session 's' turn 'q1'"):
        load_sessions(p)


def test_unknown_format_and_missing_file(tmp_path):
    p = _write(tmp_path / "x.json", [{"role": "user", "content": "a"}])
    with pytest.raises(ValueError, match="unknown input format"):
        load_sessions(p, format="csv")
    with pytest.raises(FileNotFoundError):
        load_sessions(tmp_path / "missing.json")


# ------------------------------------------------------------------ LongMemEval


def _lme_records():
    s_shared = [{"role": "user", "content": "I bought a red bike.", "has_answer": True},
                {"role": "assistant", "content": "Great choice!"}]
    s_other = [{"role": "user", "content": "What's a good pasta recipe?"}, {"role": "assistant", "content": "Try..."}]
    s_third = [{"role": "user", "content": "My sister is visiting."}, {"role": "assistant", "content": "Fun!"}]
    return [
        {"question_id": "q1", "question_type": "single-session-user", "question": "What color is my bike?",
         "answer": "red", "question_date": "2023/05/30 (Tue) 10:00",
         "haystack_session_ids": ["sess_a", "sess_b"], "haystack_dates": ["2023/05/20 (Sat) 00:44", "2023/05/21 (Sun) 09:15"],
         "haystack_sessions": [s_shared, s_other], "answer_session_ids": ["sess_a"]},
        {"question_id": "q2_abs", "question_type": "single-session-user", "question": "What color is my car?",
         "answer": "You did not mention a car.", "question_date": "2023/06/01 (Thu) 08:00",
         "haystack_session_ids": ["sess_b", "sess_c"], "haystack_dates": ["2023/05/21 (Sun) 09:15", "2023/05/25 (Thu) 18:30"],
         "haystack_sessions": [s_other, s_third], "answer_session_ids": []},
    ]


def test_longmemeval_items(tmp_path):
    p = _write(tmp_path / "lme_s.json", _lme_records())
    items = load_longmemeval(p)
    assert [i.question_id for i in items] == ["q1", "q2_abs"]
    q1, q2 = items
    assert q1.abstention is False and q2.abstention is True
    assert q1.question_date == datetime(2023, 5, 30, 10, 0)
    assert q1.haystack_dates == [datetime(2023, 5, 20, 0, 44), datetime(2023, 5, 21, 9, 15)]
    assert [s.session_id for s in q1.haystack] == ["sess_a", "sess_b"]
    assert q1.haystack[0].metadata["has_answer_turn_ids"] == ["t0"]
    assert q1.haystack[0].turns[0].timestamp == datetime(2023, 5, 20, 0, 44)
    assert q1.answer_session_ids == ["sess_a"] and q1.answer == "red"


def test_longmemeval_sessions_dedup(tmp_path):
    p = _write(tmp_path / "lme_s.json", _lme_records())
    assert detect_format(p) == "longmemeval"
    ss = load_sessions(p)
    assert [s.session_id for s in ss] == ["sess_a", "sess_b", "sess_c"]
    assert [s.session_id for s in load_sessions(p, sessions="2-3")] == ["sess_b", "sess_c"]
    assert [s.session_id for s in load_sessions(p, sample="q2_abs")] == ["sess_b", "sess_c"]


def test_longmemeval_length_mismatch(tmp_path):
    recs = _lme_records()
    recs[0]["haystack_dates"] = recs[0]["haystack_dates"][:1]
    p = _write(tmp_path / "bad_lme.json", recs)
    with pytest.raises(ValueError, match=r"bad_lme.json.*q1.*lengths differ"):
        load_longmemeval(p)
