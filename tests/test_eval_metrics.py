"""Evaluation metrics on hand-made cases with known values, and the HaluMem output writer."""

import json
import math
import os
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from promem_fast.eval.halumem_output import (
    HALUMEM_LINE_SCHEMA,
    HaluMemAnswer,
    HaluMemSessionResult,
    halumem_output_path,
    validate_halumem_output,
    write_halumem_output,
)
from promem_fast.eval.metrics import (
    exact_match,
    extraction_f1,
    locomo_qa_score,
    memory_accuracy,
    memory_integrity,
    multi_answer_f1,
    normalize_answer,
    proxy_match,
    qa_rates,
    token_f1,
    update_rates,
)
from promem_fast.schema import Session, Turn

DATA = Path(os.environ.get("PROMEM_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")
HALUMEM = DATA / "halumem_dev_user3.jsonl"

# ------------------------------------------------------------------ LoCoMo QA


def test_normalize_answer():
    assert normalize_answer("The Cat, and the Hat!") == "cat hat"
    assert normalize_answer(2022) == "2022"


def test_token_f1_known_values():
    # pred -> [paint, of, sunset], gold -> [sunset, paint]: P = 2/3, R = 1
    assert token_f1("a painting of a sunset", "sunset painting") == pytest.approx(0.8)
    assert token_f1("In 2022", 2022) == pytest.approx(2 / 3)
    assert token_f1("dog", "cat") == 0.0
    assert token_f1("", "cat") == 0.0
    # stemming makes "paints" match "painting"; without it they differ
    assert token_f1("paints", "painting") == 1.0
    assert token_f1("paints", "painting", stem=False) == 0.0


def test_exact_match():
    assert exact_match("The Sunset.", "sunset")
    assert not exact_match("sunset lake", "sunset")


def test_multi_answer_f1():
    # gold parts: "Psychology" -> 1.0, "counseling certification" vs "counseling" -> 2/3
    assert multi_answer_f1("psychology, counseling", "Psychology, counseling certification") == pytest.approx(
        (1 + 2 / 3) / 2
    )


def test_locomo_qa_score_categories():
    assert locomo_qa_score("No information available.", None, 5) == 1.0
    assert locomo_qa_score("She went hiking.", "hiking", 5) == 0.0
    assert locomo_qa_score("7 May 2023", "7 May 2023", 2) == 1.0
    assert locomo_qa_score("likely yes", "Likely yes; she likes it", 3) == 1.0
    assert locomo_qa_score("psychology", "psychology, counseling", 1) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        locomo_qa_score("x", "y", 6)


# ------------------------------------------------------------------ HaluMem


def test_memory_integrity_known_values():
    r = memory_integrity(
        [2, 1, 0, None, 0, 2],
        importance=[1.0, 1.0, 0.5, 1.0, 1.0, 1.0],
        interference=[False, False, False, False, True, True],
    )
    assert (r.n, r.n_valid, r.n_interference) == (4, 3, 2)
    assert r.recall == pytest.approx(1 / 4)
    assert r.recall_valid == pytest.approx(1 / 3)
    assert r.mean_score == pytest.approx(1.5 / 4)
    assert r.mean_score_valid == pytest.approx(0.5)
    assert r.weighted_recall == pytest.approx(1.5 / 3.5)
    assert r.weighted_recall_valid == pytest.approx(1.5 / 2.5)
    assert r.interference_accuracy == pytest.approx(0.5)


def test_memory_integrity_validation():
    with pytest.raises(ValueError, match="judge scores"):
        memory_integrity([3])
    with pytest.raises(ValueError, match="lengths"):
        memory_integrity([1, 2], importance=[1.0])
    assert math.isnan(memory_integrity([]).recall)


def test_memory_accuracy_and_f1():
    a = memory_accuracy([2, 1, 0, None], included_in_gold=[True, False, True, True])
    assert a.accuracy == pytest.approx(0.375)
    assert a.accuracy_valid == pytest.approx(0.5)
    assert a.target_accuracy == pytest.approx(1 / 3)
    assert a.target_accuracy_valid == pytest.approx(0.5)
    assert a.n_target == 3
    assert extraction_f1(0.5, 1.0) == pytest.approx(2 / 3)
    assert extraction_f1(0.0, 0.0) == 0.0
    assert math.isnan(extraction_f1(float("nan"), 1.0))


def test_qa_rates():
    q = qa_rates(["Correct", "hallucination", "Omission", "correct", None])
    assert (q.n, q.n_valid) == (5, 4)
    assert q.accuracy == pytest.approx(0.4)
    assert q.hallucination_rate == pytest.approx(0.2)
    assert q.omission_rate == pytest.approx(0.2)
    assert q.accuracy_valid == pytest.approx(0.5)
    assert q.accuracy_valid + q.hallucination_rate_valid + q.omission_rate_valid == pytest.approx(1.0)


def test_update_rates():
    u = update_rates(["Correct", "other", "Omission", " hallucination", None, "Partly"])
    assert (u.n, u.n_valid) == (6, 4)
    assert (u.n_correct, u.n_hallucination, u.n_omission, u.n_other) == (1, 1, 1, 1)
    assert u.accuracy == pytest.approx(1 / 6) and u.other_rate == pytest.approx(1 / 6)
    assert u.accuracy_valid == pytest.approx(0.25)
    assert (u.accuracy_valid + u.hallucination_rate_valid + u.omission_rate_valid + u.other_rate_valid
            == pytest.approx(1.0))
    assert math.isnan(update_rates([]).accuracy)
    assert update_rates(["Correct", "Correct"]).as_dict()["accuracy"] == 1.0


def test_proxy_match():
    e1, e2 = np.eye(2, dtype=np.float32)
    gold = np.stack([e1 * 3, (e1 + e2) / np.sqrt(2), e2]).astype(np.float32)  # cos to e1: 1, .707, 0
    extracted = np.stack([e1]).astype(np.float32)
    got = proxy_match(extracted, gold, lo=0.5, hi=0.9)
    assert got.dtype == np.int8
    assert got.tolist() == [2, 1, 0]
    assert proxy_match(np.zeros((0, 2), np.float32), gold, lo=0.5, hi=0.9).tolist() == [0, 0, 0]
    with pytest.raises(ValueError):
        proxy_match(extracted, gold, lo=0.9, hi=0.5)


# ------------------------------------------------------------------ HaluMem writer


def _handmade_session(n=1, uuid="u-1"):
    ts = datetime(2025, 9, 4, 9, 5, 32)
    return Session(
        session_id=f"{uuid}/session_{n}", user_name="Sarah Garcia",
        turns=[Turn(turn_id="t0", role="user", content="I live in Miami.", timestamp=ts),
               Turn(turn_id="t0_1", role="assistant", content="Noted.", timestamp=ts)],
        start_time=ts,
        metadata={
            "uuid": uuid, "session_number": n,
            "memory_points": [
                {"memory_content": "Sarah lives in Miami", "memory_type": "Persona Memory", "memory_source": "system",
                 "is_update": "False", "importance": 0.75, "original_memories": []},
                {"memory_content": "Sarah now lives in Miami", "memory_type": "Persona Memory",
                 "memory_source": "secondary", "is_update": "True", "importance": 1.0,
                 "original_memories": ["Sarah lives in Boston"]},
            ],
            "questions": [{"question": "Where does Sarah live?", "answer": "Miami",
                           "evidence": [{"memory_content": "Sarah lives in Miami", "memory_type": "Persona Memory"}],
                           "difficulty": "easy", "question_type": "Basic Fact Recall"}],
        },
    )


def test_writer_handmade_roundtrip(tmp_path):
    res = [
        HaluMemSessionResult(_handmade_session(2), ["Sarah moved."], 12.5,
                             [HaluMemAnswer("Miami", 3.0)]),
        HaluMemSessionResult(_handmade_session(1), ["Sarah lives in Miami."], 40.0,
                             [HaluMemAnswer("Miami", 4.5, context="ctx")], {1: ["Sarah lives in Miami"]}),
    ]
    path = write_halumem_output(res, tmp_path, frame="promem", version="v1")
    assert path == tmp_path / "promem-v1" / "promem_eval_results.jsonl" == halumem_output_path(tmp_path, "promem", "v1")
    assert validate_halumem_output(path) == 1
    (line,) = [json.loads(x) for x in path.read_text().splitlines()]
    assert line["uuid"] == "u-1" and line["user_name"] == "Sarah Garcia"
    s1, s2 = line["sessions"]  # ordered by session number
    assert s1["extracted_memories"] == ["Sarah lives in Miami."]
    assert s1["add_dialogue_duration_ms"] == 40.0
    assert s1["dialogue"][0] == {"role": "user", "content": "I live in Miami.",
                                 "timestamp": "Sep 04, 2025, 09:05:32", "dialogue_turn": 0}
    assert s1["memory_points"][1]["memories_from_system"] == ["Sarah lives in Miami"]
    assert "memories_from_system" not in s2["memory_points"][1]
    q = s1["questions"][0]
    assert (q["system_response"], q["search_duration_ms"], q["context"]) == ("Miami", 4.5, "ctx")
    assert q["difficulty"] == "easy" and q["answer"] == "Miami"


def test_writer_rejects_mismatched_answers(tmp_path):
    with pytest.raises(ValueError, match="0 answers for 1 questions"):
        write_halumem_output([HaluMemSessionResult(_handmade_session(), [], 1.0)], tmp_path)
    with pytest.raises(ValueError, match="memories_from_system index 2 outside memory_points"):
        write_halumem_output([HaluMemSessionResult(_handmade_session(), [], 1.0, [HaluMemAnswer("x", 1.0)],
                                                   {2: ["m"]})], tmp_path)


def test_writer_update_search_duration(tmp_path):
    r = HaluMemSessionResult(_handmade_session(), ["m"], 1.0, [HaluMemAnswer("Miami", 1.0)],
                             {1: ["Sarah lives in Miami"]}, {1: 2.5})
    path = write_halumem_output([r], tmp_path)
    assert validate_halumem_output(path) == 1
    p0, p1 = json.loads(path.read_text())["sessions"][0]["memory_points"]
    assert p1["search_duration_ms"] == 2.5 and p1["memories_from_system"] == ["Sarah lives in Miami"]
    assert "search_duration_ms" not in p0
    r.update_search_duration_ms = {5: 1.0}
    with pytest.raises(ValueError, match="update_search_duration_ms index 5"):
        write_halumem_output([r], tmp_path)


def test_validator_names_line_and_field(tmp_path):
    good = {"uuid": "u", "user_name": "A", "sessions": [{
        "memory_points": [], "dialogue": [], "extracted_memories": [], "add_dialogue_duration_ms": 1.0,
        "questions": [{"question": "q", "answer": "a", "evidence": [], "system_response": "r",
                       "search_duration_ms": 2}]}]}
    bad = json.loads(json.dumps(good))
    del bad["sessions"][0]["questions"][0]["system_response"]
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"line 2: at sessions/0/questions/0: 'system_response'"):
        validate_halumem_output(p)
    filler = {"uuid": "u", "user_name": "A", "sessions": [{"is_generated_qa_session": True,
                                                            "add_dialogue_duration_ms": 3.0}]}
    no_dialogue = {"uuid": "u", "user_name": "A", "sessions": [{"add_dialogue_duration_ms": 3.0}]}
    p.write_text(json.dumps(filler) + "\n")
    assert validate_halumem_output(p) == 1
    p.write_text(json.dumps(no_dialogue) + "\n")
    with pytest.raises(ValueError, match="memory_points"):
        validate_halumem_output(p)
    assert HALUMEM_LINE_SCHEMA["required"] == ["uuid", "user_name", "sessions"]


@pytest.mark.skipif(not HALUMEM.is_file(), reason=f"HaluMem dev data not found at {HALUMEM}")
def test_writer_on_real_halumem(tmp_path):
    from promem_fast.io import load_sessions

    sessions = load_sessions(HALUMEM, sessions="1-3")
    res = [HaluMemSessionResult(s, [t.content for t in s.turns if t.role == "user"][:2], 10.0,
                                [HaluMemAnswer("unknown", 1.0) for _ in s.metadata["questions"]])
           for s in sessions]
    path = write_halumem_output(res, tmp_path)
    assert validate_halumem_output(path) == 1
    line = json.loads(path.read_text())
    raw = json.loads(HALUMEM.read_text().splitlines()[0])
    assert line["user_name"] == "Sarah Garcia"
    assert len(line["sessions"]) == 3
    for out_s, raw_s in zip(line["sessions"], raw["sessions"]):
        # timestamps and dialogue_turn round-trip to the source strings
        assert [(t["role"], t["content"], t["timestamp"], t["dialogue_turn"]) for t in out_s["dialogue"]] == [
            (t["role"], t["content"], t["timestamp"], t["dialogue_turn"]) for t in raw_s["dialogue"]]
        assert out_s["memory_points"] == raw_s["memory_points"]
        assert len(out_s["questions"]) == len(raw_s.get("questions", []))


# ------------------------------------------------------------------ judge prompt helpers


def test_judge_readers_and_prompts():
    import jsonschema

    from promem_fast.eval import judge_prompts as jp

    assert jp.read_score({"score": "2"}, "score") == 2
    assert jp.read_score({"score": 1}, "score") == 1
    assert jp.read_score({"score": "3"}, "score") is None
    assert jp.read_score({"score": True}, "score") is None
    assert jp.read_score("oops", "score") is None
    assert jp.read_flag({"is_included_in_golden_memories": "True"}, "is_included_in_golden_memories") is True
    assert jp.read_flag({"is_included_in_golden_memories": "no"}, "is_included_in_golden_memories") is False
    assert jp.read_label({"evaluation_result": " hallucination "}) == "Hallucination"
    assert jp.read_label({"evaluation_result": "Other"}) is None
    assert jp.read_label({"evaluation_result": "Other"}, ("Correct", "Other")) == "Other"
    p = jp.qa_prompt("Where?", "Miami", "Sarah lives in Miami", "Boston")
    assert "Where?" in p and "Miami" in p and "Boston" in p and "evaluation_result" in p
    jsonschema.validate({"evidence": "x", "unsupported": "nothing", "accuracy_score": "2",
                         "is_included_in_golden_memories": "false"}, jp.ACCURACY_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"evidence": "x", "left_out": "nothing", "score": 5}, jp.INTEGRITY_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):  # the quote is required, before the score
        jsonschema.validate({"score": 2}, jp.INTEGRITY_SCHEMA)
    assert list(jp.INTEGRITY_SCHEMA["properties"])[-1] == "score"
    assert list(jp.ACCURACY_SCHEMA["properties"])[0] == "evidence"


def test_grounded_quote_check():
    from promem_fast.eval.judges import grounded

    shown = "- Sarah Garcia currently lives in Miami.\n- Sarah likes jazz."
    assert grounded("Sarah Garcia currently lives in Miami.", shown)
    assert grounded("sarah garcia lives in miami", shown)  # case, punctuation, a dropped word
    assert not grounded("Sarah Garcia lives in Boston", "- Sarah likes jazz.\n- Sarah works as a nurse.")
    assert not grounded("none", shown) and not grounded("", shown) and not grounded(None, shown)
    # 4 of 5 words present passes at 0.8, fails at 0.9
    assert grounded("Sarah likes jazz music a lot", "Sarah likes jazz a lot", min_overlap=0.8)
    assert not grounded("Sarah likes jazz music a lot", "Sarah likes jazz a lot", min_overlap=0.9)
    # a long sentence copied with one value changed: 11 of 12 words match, but the name,
    # the city or the number differs from the line
    line = "[8 May 2023]Sarah: I moved to Boston in 2021 to work as a nurse at the children's hospital."
    dialogue = f"[8 May 2023]Tom: How are you?\n{line}\n[8 May 2023]Tom: Nice."
    assert grounded(line, dialogue)
    assert grounded("Sarah: I moved to Boston in 2021 to work as a nurse", dialogue)  # part of one line
    assert not grounded(line.replace("Boston", "Denver"), dialogue)
    assert not grounded(line.replace("2021", "2019"), dialogue)
    assert not grounded(line.replace("Sarah", "Emily"), dialogue)
    # every sentence must come from one line: two memories copied together pass, words
    # scattered over several lines do not
    shown2 = "- Sarah likes jazz.\n- Sarah works as a nurse in Boston."
    assert grounded("Sarah likes jazz. Sarah works as a nurse in Boston.", shown2)
    assert not grounded("Sarah likes jazz and works as a nurse.", shown2)  # 6 of 7 words over both lines
    assert not grounded("Sarah likes jazz. Sarah works as a nurse in Denver.", shown2)
