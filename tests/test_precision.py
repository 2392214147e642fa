"""The precision instrument (promem_fast.eval.precision): judge-free measures and labels."""

from __future__ import annotations

import json

import numpy as np
import pytest

from promem_fast.eval.precision import (
    SessionMemories,
    assistant_copy_flags,
    containment,
    duplicate_flags,
    judge_free,
    load_labels,
    markdown_table,
    score_labels,
    write_review_file,
)

from conftest import KeywordEmbedder


def test_containment_counts_shared_word_trigrams():
    src = {("i", "painted", "a"), ("painted", "a", "lake"), ("a", "lake", "sunrise")}
    # "Mel painted a lake sunrise": trigrams (mel painted a) (painted a lake) (a lake sunrise): 2 of 3
    assert containment("Mel painted a lake sunrise", src) == pytest.approx(2 / 3)
    assert containment("two words", src) == 0.0


def test_assistant_copy_needs_half_the_trigrams_and_more_than_the_user_turns():
    user = ["I went to the support group yesterday."]
    asst = ["You should try the breathing exercise before bed, it helps a lot."]
    flags = assistant_copy_flags(
        ["Alice should try the breathing exercise before bed.",   # 5 of its 6 trigrams in the assistant turn
         "Alice went to the support group yesterday.",            # the user's words
         "Alice tried something."],                               # in neither
        user, asst)
    assert flags == [True, False, False]


def test_duplicate_flags_mark_later_rows_at_cosine_09():
    v = np.array([[1, 0], [0.95, np.sqrt(1 - 0.95 ** 2)], [0, 1]], dtype=np.float32)
    assert duplicate_flags(v) == [False, True, False]
    assert duplicate_flags(v[:1]) == [False]


async def test_judge_free_precision_recall_duplicates_and_costs():
    emb = KeywordEmbedder(["puppy", "job", "bike", "park"])
    s1 = SessionMemories("s1", ["Alice has a puppy.", "Alice has a puppy named Max.", "Alice likes the park."],
                         gold=["Alice adopted a puppy.", "Alice got a bike."],
                         user_turns=["I adopted a puppy."], assistant_turns=["Nice!"], tokens=1000, seconds=10.0)
    s2 = SessionMemories("s2", ["Alice has a job."], gold=["Alice started a job."], tokens=500, seconds=4.0)
    r = await judge_free([s1, s2], emb)
    # cosines are 1 (same keyword) or 0: 3 of 4 memories match a gold point; gold: puppy, job hit, bike missed
    assert r["memories"] == 4 and r["memories_per_session"] == 2.0 and r["gold_points"] == 3
    assert r["precision@0.6"] == pytest.approx(0.75) and r["recall@0.6"] == pytest.approx(2 / 3)
    assert r["near_duplicates"] == 1  # "has a puppy named Max" repeats "has a puppy"
    assert r["tokens_per_session"] == 750 and r["seconds_per_session"] == 7.0
    assert [m["near_duplicate"] for m in r["per_memory"]] == [False, True, False, False]
    # each gold point with its closest memory: the bike is the one missed
    assert [(g["gold"], g["max_memory_cos"], g["best_memory"]) for g in r["per_gold"]] == [
        ("Alice adopted a puppy.", 1.0, "Alice has a puppy."), ("Alice got a bike.", 0.0, "Alice has a puppy."),
        ("Alice started a job.", 1.0, "Alice has a job.")]


async def test_gold_points_of_a_session_without_memories_are_missed():
    s = SessionMemories("s9", [], gold=["Alice got a bike."], tokens=100, seconds=1.0)
    r = await judge_free([s], KeywordEmbedder(["bike"]))
    assert r["recall@0.6"] == 0.0
    assert r["per_gold"] == [{"session_id": "s9", "gold": "Alice got a bike.", "max_memory_cos": None,
                              "best_memory": None}]


def _write(tmp_path, rows):
    p = tmp_path / "labels.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_labels_score_reviewed_precision(tmp_path):
    p = _write(tmp_path, [
        {"session_id": "s1", "memory": "Alice has a puppy.", "label": "correct"},
        {"session_id": "s1", "memory": "alice  likes the park.", "label": "Filler"},
        {"session_id": "s2", "memory": "Alice has a job.", "label": "wrong"},
    ])
    labels = load_labels(p)
    s1 = SessionMemories("s1", ["Alice has a puppy.", "Alice likes the park.", "Alice has a puppy.", "New one."])
    s2 = SessionMemories("s2", ["Alice has a job."])
    r = score_labels([s1, s2], labels)
    assert r == {"labelled": 4, "unlabelled": 1, "correct": 1, "filler": 1, "wrong": 1, "duplicate": 1,
                 "reviewed_precision": 0.25, "correct_per_session": 0.5}


def test_a_variants_second_memory_of_a_reviewed_fact_is_a_duplicate(tmp_path):
    labels = load_labels(_write(tmp_path, [
        {"session_id": "s1", "memory": "Alice owns a dog named Max.", "label": "correct", "fact": "dog Max"},
        {"session_id": "s1", "memory": "Alice has a dog, Max.", "label": "correct", "fact": "Dog  max"},
        {"session_id": "s1", "memory": "Alice works at Acme.", "label": "correct", "fact": "job"},
    ]))
    a = SessionMemories("s1", ["Alice owns a dog named Max.", "Alice works at Acme.", "Alice has a dog, Max."])
    b = SessionMemories("s1", ["Alice has a dog, Max."])  # another variant: its only statement of the fact
    assert (score_labels([a], labels)["correct"], score_labels([a], labels)["duplicate"]) == (2, 1)
    assert (score_labels([b], labels)["correct"], score_labels([b], labels)["duplicate"]) == (1, 0)


@pytest.mark.parametrize("row,field", [
    ({"memory": "m", "label": "correct"}, "session_id"),
    ({"session_id": "s", "memory": "m", "label": "great"}, "label"),
    ({"session_id": "s", "memory": "", "label": "correct"}, "memory"),
])
def test_labels_errors_name_the_field(tmp_path, row, field):
    with pytest.raises(ValueError, match=f"labels.jsonl: line 1: field '{field}'"):
        load_labels(_write(tmp_path, [row]))


def test_labels_conflict_is_an_error(tmp_path):
    p = _write(tmp_path, [{"session_id": "s", "memory": "m", "label": "correct"},
                          {"session_id": "s", "memory": "M", "label": "wrong"}])
    with pytest.raises(ValueError, match="line 2: memory labelled 'correct' before"):
        load_labels(p)


def test_review_file_is_blind_unique_and_skips_labelled(tmp_path):
    a = [SessionMemories("s1", ["x one", "x two"])]
    b = [SessionMemories("s1", ["x two", "x three"])]
    out = tmp_path / "review.jsonl"
    n = write_review_file({"promem": a, "one-off": b}, out, existing={("s1", "x one"): "correct"})
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert n == 2 and sorted(r["memory"] for r in rows) == ["x three", "x two"]
    assert all(set(r) == {"session_id", "memory", "label"} and r["label"] == "" for r in rows)


def test_markdown_table_shows_reviewed_columns():
    row = {"memories_per_session": 2.0, "precision@0.5": 0.75, "precision@0.6": 0.5, "recall@0.5": 1.0,
           "recall@0.6": 0.5, "near_duplicates": 1, "assistant_copies": 0, "tokens_per_session": 1234.0,
           "seconds_per_session": 7.0, "reviewed": {"reviewed_precision": 0.9, "correct_per_session": 3.0}}
    md = markdown_table([("promem", row)])
    assert md.splitlines()[2] == "| promem | 2.0 | 75.0 | 50.0 | 100.0 | 50.0 | 1 | 0 | 90.0 | 3.0 | 1,234 | 7 |"
