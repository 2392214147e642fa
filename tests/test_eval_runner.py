"""The evaluation harness end to end with scripted models: `promem-fast eval` on tiny hand-made
HaluMem / LoCoMo / LongMemEval files, exact metric values for the scripted outcomes, the
HaluMem output file validated against the documented schema, and the report table."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
from conftest import (
    NLI_VERDICTS,
    FakeNLI,
    KEYWORDS,
    KeywordEmbedder,
    const,
    make_config,
    promem_rules,
)

from promem_fast import cli
from promem_fast.backends.llm.scripted import ScriptedLLM
from promem_fast.context import Services
from promem_fast.eval import runner
from promem_fast.eval.ablation import parse_variants, variant_config
from promem_fast.eval.halumem_output import validate_halumem_output
from promem_fast.eval.harness import EvalOptions
from promem_fast.eval.judges import proxy_qa_label
from promem_fast.extractor import Extractor
from promem_fast.io import load_sessions
from promem_fast.schema import MemoryGraph

# ------------------------------------------------------------------ scripted judge / QA rules

_STOP = {"alice", "a", "an", "the", "at", "as", "in", "named", "to", "and", "of"}


def _section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower())} - _STOP


def integrity_rule(req) -> str:
    text = req.messages[-1]["content"]
    ref = _section(text, "REFERENCE MEMORY:\n", "\n\nSYSTEM MEMORIES")
    if "Paris" in ref:
        return "I cannot tell."  # unusable: recorded as None
    want = _words(ref)
    shown = _section(text, "SYSTEM MEMORIES:\n", "\n\nSteps")
    frac = len(want & _words(shown)) / len(want)
    return json.dumps({"evidence": shown, "left_out": "scripted", "score": 2 if frac == 1 else 1 if frac >= 0.5 else 0})


def accuracy_rule(req) -> str:
    text = req.messages[-1]["content"]
    cand = _section(text, "CANDIDATE MEMORY:\n", "\n\nSteps")
    score = 0 if "horse" in cand else 1 if "park" in cand else 2
    return json.dumps({"evidence": _section(text, "DIALOGUE:\n", "\n\nREFERENCE"), "unsupported": "scripted",
                       "accuracy_score": str(score), "is_included_in_golden_memories": "false" if "park" in cand else "true"})


def qa_judge_rule(req) -> str:
    text = req.messages[-1]["content"]
    gold = _words(_section(text, "REFERENCE ANSWER: ", "\n"))
    ans = _section(text, "SYSTEM ANSWER: ", "\n\nReply")
    if "don't know" in ans:
        label = "Omission"
    else:
        label = "Correct" if gold <= _words(ans) else "Hallucination"
    return json.dumps({"evaluation_result": label})


def qa_rule(answers: dict):
    """Answer keyed by a question substring; the value is (needle, answer if needle in memories, else)."""

    def rule(req) -> str:
        text = req.messages[-1]["content"]
        q = text.split("Question: ", 1)[1]
        mems = _section(text, "Memories:\n", "\n\nQuestion:")
        for key, (needle, yes, no) in answers.items():
            if key in q:
                return json.dumps({"answer": yes if needle in mems else no})
        raise KeyError(f"no scripted answer for question {q!r}")

    return rule


# ------------------------------------------------------------------ HaluMem fixture

TS = "May 08, 2023, 10:00:00"
# The 8 turns of conftest.make_session(), numbered so the loader's turn ids are t1..t8 and the
# conftest's promem rules (keyed on those ids) drive the full pipeline.
DIALOGUE = [
    ("user", "I adopted a puppy named Max yesterday."),
    ("assistant", "Congrats! You should take Max to puppy training."),
    ("user", "Max loves the park near my house."),
    ("user", "🐶🎉"),
    ("assistant", "Nice. How is the job?"),
    ("user", "I started a new job at Acme as a data engineer."),
    ("assistant", "How is the job going?"),
    ("user", "The commute to my job at Acme is long, so I bought a bike."),
]


def _point(text, importance, source="secondary", mtype="Persona Memory"):
    return {"memory_content": text, "memory_type": mtype, "memory_source": source, "is_update": "False",
            "importance": importance, "original_memories": [], "timestamp": TS}


def write_halumem(path: Path) -> Path:
    dialogue = [{"role": r, "content": c, "timestamp": TS, "dialogue_turn": i} for i, (r, c) in enumerate(DIALOGUE, 1)]
    s1 = {"start_time": TS, "end_time": TS, "dialogue": dialogue, "memory_points": [
        _point("Alice adopted a puppy named Max", 1.0, "system", "Event Memory"),
        _point("Alice works at Acme as a data engineer", 0.5),
        _point("Alice lives in Paris", 1.0),
        _point("Alice owns a horse", 0.5, "interference"),
    ], "questions": [{"question": "What is the name of Alice's puppy?", "answer": "Max",
                      "evidence": [{"memory_content": "Alice adopted a puppy named Max", "memory_type": "Event Memory"}],
                      "difficulty": "easy", "question_type": "Basic Fact Recall"}]}
    s2 = {"start_time": TS, "end_time": TS, "dialogue": dialogue, "memory_points": [
        _point("Alice bought a bike", 1.0, "system", "Event Memory"),
    ], "questions": [{"question": "What did Alice buy?", "answer": "A bike",
                      "evidence": [{"memory_content": "Alice bought a bike", "memory_type": "Event Memory"}],
                      "difficulty": "easy", "question_type": "Basic Fact Recall"}]}
    rec = {"uuid": "u-1", "persona_info": "Name: Alice; Age: 30;", "sessions": [s1, s2]}
    path.write_text(json.dumps(rec, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


ONEOFF_FACTS = [
    {"fact": "Alice has a puppy named Max.", "turns": ["t1"]},
    {"fact": "Alice works at Acme.", "turns": ["t6"]},
    {"fact": "Alice owns a horse.", "turns": ["t3"]},
]
HALUMEM_QA = {"puppy": ("Max", "Max", "I don't know"), "buy": ("bike", "a bike", "a car")}


def halumem_services(nli=None) -> Services:
    rules = {**promem_rules(), "oneoff": const(ONEOFF_FACTS), "qa": qa_rule(HALUMEM_QA),
             "judge_integrity": integrity_rule, "judge_accuracy": accuracy_rule, "judge_qa": qa_judge_rule}
    return Services(llm=ScriptedLLM(rules=rules), nli=nli or FakeNLI(NLI_VERDICTS), embed=KeywordEmbedder())


def independent_tokens(path: Path, variant: str) -> int:
    """Tokens of one session extracted by a plain Extractor (not the harness)."""
    s = load_sessions(path, "halumem", sessions="1")[0]
    g = Extractor(make_config(variant=variant), halumem_services()).extract(s)
    return g.stats.prompt_tokens + g.stats.completion_tokens


def test_halumem_eval_through_cli_exact(tmp_path, monkeypatch, capsys):
    data = write_halumem(tmp_path / "halumem_tiny.jsonl")
    svc = halumem_services()
    monkeypatch.setattr(runner, "build_services", lambda cfg: svc)
    out = tmp_path / "out"
    rc = cli.main(["eval", "halumem", str(data), "--out", str(out), "--llm", "scripted",
                   "--variants", "promem,one-off", "--judge", "llm", "--sessions", "1-2"])
    assert rc == 0
    res = json.loads((out / "results.json").read_text())
    pro, one = res["variants"]["promem"], res["variants"]["one-off"]

    # promem: P1 2, P2 1 (no "works"), P3 judge unusable -> None, P4 2; interference stored? no (0)
    mi = pro["memory_integrity"]
    assert (mi["n"], mi["n_valid"], mi["n_interference"]) == (4, 3, 1)
    assert pro["integrity"] == pytest.approx(0.5)
    assert mi["recall_valid"] == pytest.approx(2 / 3)
    assert mi["weighted_recall"] == pytest.approx(2.25 / 3.5)
    assert mi["interference_accuracy"] == 1.0
    assert pro["judge_failed"] == {"integrity": 1}
    # 4 entries per session: e1 2, e2 (park) 1 and not in gold, e3 2, e4 2
    ma = pro["memory_accuracy"]
    assert (ma["n"], ma["n_target"]) == (8, 6)
    assert ma["accuracy"] == pytest.approx(0.875)
    assert pro["accuracy"] == pytest.approx(1.0)
    assert pro["f1"] == pytest.approx(2 / 3)
    assert (pro["qa_accuracy"], pro["qa_hallucination"], pro["qa_omission"]) == (1.0, 0.0, 0.0)

    # one-off: P1 1, P2 1, P3 None, P4 0; the interference point was stored (2)
    assert one["integrity"] == 0.0
    assert one["memory_integrity"]["weighted_recall"] == pytest.approx(0.75 / 3.5)
    assert one["memory_integrity"]["interference_accuracy"] == 0.0
    assert one["accuracy"] == pytest.approx(2 / 3)
    assert one["f1"] == 0.0
    assert (one["qa_accuracy"], one["qa_hallucination"], one["qa_omission"]) == (0.5, 0.5, 0.0)
    assert [q["system_response"] for r in one["per_session"] for q in r["questions"]] == ["Max", "a car"]

    # tokens per session equal a plain Extractor's count on the same session
    tok_pro, tok_one = independent_tokens(data, "promem"), independent_tokens(data, "one-off")
    assert pro["tokens_per_session"] == tok_pro and one["tokens_per_session"] == tok_one
    assert pro["seconds_per_session"] > 0

    # HaluMem output file per variant, valid against the documented schema
    f = out / "promem_fast-one-off" / "promem_fast_eval_results.jsonl"
    assert one["halumem_output"] == str(f)
    assert validate_halumem_output(f) == 1
    assert validate_halumem_output(out / "promem_fast-promem" / "promem_fast_eval_results.jsonl") == 1
    # the extracted graphs of each variant, one per line, in session order
    for v, per in (("promem", pro), ("one-off", one)):
        lines = (out / "graphs" / f"{v}.jsonl").read_text().splitlines()
        graphs = [MemoryGraph.from_json(x) for x in lines]
        assert [g.session_id for g in graphs] == [r["session_id"] for r in per["per_session"]]
        assert {g.variant for g in graphs} == {"one-off" if v == "one-off" else "promem"}
    line = json.loads(f.read_text())
    assert line["uuid"] == "u-1" and line["user_name"] == "Alice" and len(line["sessions"]) == 2
    s1 = line["sessions"][0]
    assert s1["extracted_memories"] == ["[2023-05-08] Alice has a puppy named Max.",
                                        "[2023-05-08] Alice owns a horse.", "[2023-05-08] Alice works at Acme."]
    assert s1["questions"][0]["system_response"] == "Max"
    assert s1["questions"][0]["search_duration_ms"] >= 0 and s1["add_dialogue_duration_ms"] > 0
    assert len(s1["memory_points"]) == 4 and s1["dialogue"][0]["timestamp"] == TS

    # the markdown table: one row per variant with the exact numbers
    md = (out / "report.md").read_text()
    table2, judge_free_table = md.split("Judge-free measures", 1)
    rows = [ln for ln in table2.splitlines() if ln.startswith("| ") and not ln.startswith("| Method") and "---" not in ln]
    assert len(rows) == 2
    # the judge-free table: one row per variant, its figures from results.json
    jf_rows = [ln for ln in judge_free_table.splitlines() if ln.startswith("| ") and not ln.startswith("| Method")
               and "---" not in ln]
    jf = res["variants"]["one-off"]["judge_free"]
    assert len(jf_rows) == 2 and jf_rows[1].startswith(
        f"| One-off Extract (one-off) | {jf['memories_per_session']:.1f} | {100 * jf['precision@0.5']:.1f} |")
    assert (out / "review.jsonl").is_file()
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    # no update memory point in this input: the update columns are empty ("-")
    assert cells[0][:10] == ["ProMem (Full) (promem)", "50.00", "100.00", "100.00", "0.00", "0.00",
                             "-", "-", "-", str(tok_pro)]
    assert cells[1][:10] == ["One-off Extract (one-off)", "0.00", "66.67", "50.00", "50.00", "0.00",
                             "-", "-", "-", str(tok_one)]
    assert re.fullmatch(r"\d+\.\d\d", cells[0][10])
    assert "Mem. Int. | Mem. Acc. | QA Acc. | QA Halu. | QA Om. | Upd. Acc. | Upd. Halu. | Upd. Om." in md
    assert pro["memory_update"]["n"] == 0 and pro["update_accuracy"] is None  # NaN -> null in results.json
    assert "LLM: scripted | NLI: fake-nli | Embedding: keyword | Judge: llm (scripted)" in md


# ------------------------------------------------------------------ HaluMem memory update

TS2 = "May 15, 2023, 10:00:00"
DIALOGUE2 = [
    ("user", "I left Acme; I am an engineer at Initech now."),
    ("assistant", "Great news!"),
    ("user", "I sold my bike."),
    ("user", "Max started puppy training."),
]
# one-off facts per session (keyed on a word of the session's dialogue); keyword cosines to the
# update queries below are distinct at the top-2 boundary, so the retrieved lists are exact
UPD_FACTS_S1 = [{"fact": "Alice has a puppy named Max.", "turns": ["t1"]},
                {"fact": "Alice works at Acme as a data engineer.", "turns": ["t6"]},
                {"fact": "Alice bought a bike for the commute.", "turns": ["t8"]}]
UPD_FACTS_S2 = [{"fact": "Alice is now an engineer at Initech.", "turns": ["t1"]},
                {"fact": "Alice sold her bike.", "turns": ["t3"]},
                {"fact": "Max started puppy training.", "turns": ["t4"]}]


def _update_point(text, originals):
    return {**_point(text, 1.0), "is_update": "True", "original_memories": originals}


def write_halumem_update(path: Path) -> Path:
    d1 = [{"role": r, "content": c, "timestamp": TS, "dialogue_turn": i} for i, (r, c) in enumerate(DIALOGUE, 1)]
    d2 = [{"role": r, "content": c, "timestamp": TS2, "dialogue_turn": i} for i, (r, c) in enumerate(DIALOGUE2, 1)]
    s1 = {"start_time": TS, "end_time": TS, "dialogue": d1, "memory_points": [
        _point("Alice adopted a puppy named Max", 1.0, "system", "Event Memory"),
        _point("Alice works at Acme as a data engineer", 0.5)]}
    s2 = {"start_time": TS2, "end_time": TS2, "dialogue": d2, "memory_points": [
        _update_point("Alice is an engineer at Initech", ["Alice works at Acme as a data engineer"]),  # 0
        _point("Max started puppy training", 1.0),  # 1: not an update
        _update_point("Max now goes to puppy training", ["Max goes to the park"]),  # 2
        _update_point("Alice sold her bike", []),  # 3: update without original memories -> integrity
        _update_point("Alice bought a new bike for the commute", ["Alice bought a bike"]),  # 4
    ]}
    rec = {"uuid": "u-2", "persona_info": "Name: Alice; Age: 30;", "sessions": [s1, s2]}
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return path


UPDATE_LABELS = {"Alice is an engineer at Initech": "Correct", "Max now goes to puppy training": "Omission",
                 "Alice bought a new bike for the commute": "not sure"}  # the last one unusable -> None


def update_judge_rule(req) -> str:
    text = req.messages[-1]["content"]
    lab = UPDATE_LABELS[_section(text, "UPDATED MEMORY:\n", "\n\nSYSTEM MEMORIES")]
    return json.dumps({"evaluation_result": lab}) if lab != "not sure" else lab


def test_halumem_memory_update_exact(tmp_path):
    data = write_halumem_update(tmp_path / "upd.jsonl")
    llm = ScriptedLLM(rules={
        "oneoff": lambda req: json.dumps(UPD_FACTS_S2 if "Initech" in req.messages[-1]["content"] else UPD_FACTS_S1),
        "judge_integrity": integrity_rule, "judge_accuracy": accuracy_rule, "judge_update": update_judge_rule})
    svc = Services(llm=llm, nli=FakeNLI(default="neutral"), embed=KeywordEmbedder())
    res = runner.run_eval("halumem", data, tmp_path / "o", make_config(), services=svc,
                          options=EvalOptions(variants=["one-off"], update_top_k=2))
    assert res["update_top_k"] == 2
    a = res["variants"]["one-off"]
    initech, acme = "[2023-05-15] Alice is now an engineer at Initech.", "[2023-05-08] Alice works at Acme as a data engineer."
    training, puppy = "[2023-05-15] Max started puppy training.", "[2023-05-08] Alice has a puppy named Max."
    commute, sold = "[2023-05-08] Alice bought a bike for the commute.", "[2023-05-15] Alice sold her bike."

    # the output file: memories_from_system (top-2 of sessions 1..2, best first) on the three
    # update points with original memories only
    f = tmp_path / "o" / "promem_fast-one-off" / "promem_fast_eval_results.jsonl"
    assert validate_halumem_output(f) == 1
    s1, s2 = json.loads(f.read_text())["sessions"]
    assert all("memories_from_system" not in p for p in s1["memory_points"])
    got = {i: p.get("memories_from_system") for i, p in enumerate(s2["memory_points"])}
    assert got == {0: [initech, acme], 1: None, 2: [training, puppy], 3: None, 4: [commute, sold]}
    assert [("search_duration_ms" in p) for p in s2["memory_points"]] == [True, False, True, False, True]
    assert all(p["search_duration_ms"] >= 0 for p in s2["memory_points"] if "search_duration_ms" in p)
    assert s2["extracted_memories"] == [initech, sold, training]

    # update-judged points are out of integrity; the update point without originals stays in
    (r1, r2) = a["per_session"]
    assert [p["memory_content"] for p in r2["points"]] == ["Max started puppy training", "Alice sold her bike"]
    assert [p["score"] for p in r1["points"] + r2["points"]] == [1, 2, 2, 2]  # "adopted" not in s1's memories
    assert a["memory_integrity"]["n"] == 4 and a["integrity"] == pytest.approx(0.75)
    assert [(u["index"], u["memories_from_system"], u["label"]) for u in r2["update_points"]] == [
        (0, [initech, acme], "Correct"), (2, [training, puppy], "Omission"), (4, [commute, sold], None)]
    assert r1["update_points"] == []

    # the update judge saw the retrieved memories and the original memories
    prompts = [c.messages[-1]["content"] for c in llm.calls if c.stage == "judge_update"]
    assert len(prompts) == 4  # 3 points + 1 retry of the unusable output
    assert f"OLD MEMORIES:\nAlice works at Acme as a data engineer\n\nUPDATED MEMORY:\nAlice is an engineer at Initech" \
           f"\n\nSYSTEM MEMORIES:\n{initech}\n{acme}\n\n" in prompts[0]

    # rates over the 3 update points: 1 Correct, 1 Omission, 1 unusable
    mu = a["memory_update"]
    assert (mu["n"], mu["n_valid"], mu["n_correct"], mu["n_omission"], mu["n_hallucination"]) == (3, 2, 1, 1, 0)
    assert a["update_accuracy"] == pytest.approx(1 / 3) and a["update_omission"] == pytest.approx(1 / 3)
    assert a["update_hallucination"] == 0.0
    assert mu["accuracy_valid"] == pytest.approx(0.5)
    assert a["judge_failed"] == {"update": 1}
    row = next(ln for ln in (tmp_path / "o" / "report.md").read_text().splitlines() if ln.startswith("| One-off"))
    assert [c.strip() for c in row.strip("|").split("|")][6:9] == ["33.33", "0.00", "33.33"]

    # a larger top-k returns every memory unit (6) and no more
    res2 = runner.run_eval("halumem", data, tmp_path / "o2", make_config(), services=svc,
                           options=EvalOptions(variants=["one-off"]))
    ups = res2["variants"]["one-off"]["per_session"][1]["update_points"]
    assert res2["update_top_k"] == 10
    assert [len(u["memories_from_system"]) for u in ups] == [6, 6, 6]
    assert [u["memories_from_system"][:2] for u in ups] == [[initech, acme], [training, puppy], [commute, sold]]


def test_update_top_k_option_and_nli_update_rule():
    import argparse
    import asyncio

    from promem_fast.eval.judges import NLIJudge, UpdateItem, scripted_eval_respond

    cfg = make_config()
    assert runner.options_from_args(argparse.Namespace(update_top_k=3), cfg).update_top_k == 3
    assert runner.options_from_args(argparse.Namespace(), cfg).update_top_k == 10

    upd, acme = "Alice works at Globex", "Alice works at Acme as a data engineer"
    nli = FakeNLI({("Initech", "Alice is an engineer at Initech"): "entailment",
                   ("Acme", upd): "contradiction", ("Umbrella", upd): "contradiction",
                   ("Acme", acme): "entailment"}, default="neutral")
    judge = NLIJudge(nli, KeywordEmbedder())
    items = [
        UpdateItem("Alice is an engineer at Initech", [acme], ["Alice works at Acme.", "Alice is at Initech."]),
        UpdateItem(upd, [acme], ["Alice works at Acme."]),  # only the old value: omission
        UpdateItem(upd, [acme], ["Alice works at Umbrella."]),  # a third value: hallucination
        UpdateItem(upd, [acme], ["Alice has a puppy."]),  # nothing relevant: omission
    ]
    assert asyncio.run(judge.update(items)) == ["Correct", "Omission", "Hallucination", "Omission"]
    # second NLI pass only for the contradicting memories of items not already Correct
    assert nli.pairs[-2:] == [("Alice works at Acme.", acme), ("Alice works at Umbrella.", acme)]
    assert judge.stats.asked["update"] == 4

    from promem_fast.backends.base import LLMRequest
    from promem_fast.eval import judge_prompts as jp

    def ask(mems):
        req = LLMRequest(messages=[{"role": "user", "content": jp.update_prompt(mems, "Alice bought a bike", "x")}],
                         stage="judge_update")
        return json.loads(scripted_eval_respond(req))["evaluation_result"]

    assert ask("Alice bought a red bike.") == "Correct"
    assert ask("Alice owns a car.") == "Omission"


def test_halumem_nli_proxy_judge_exact(tmp_path):
    data = write_halumem(tmp_path / "h.jsonl")
    nli = FakeNLI({"Alice works at Acme as a data engineer": "contradiction", "Alice owns a horse": "entailment",
                   "Alice has a puppy named Max.": "entailment", "Alice owns a horse.": "contradiction"},
                  default="neutral")
    res = runner.run_eval("halumem", data, tmp_path / "o", make_config(), services=halumem_services(nli),
                          options=EvalOptions(variants=["one-off"], judge="nli"))
    one = res["variants"]["one-off"]
    scores = [(p["memory_content"], p["score"]) for r in one["per_session"] for p in r["points"]]
    # embeddings: P1 cos 1 -> 2 (NLI neutral keeps it); P2 cos .71 -> 1 but NLI contradiction -> 0;
    # Paris / horse / bike share no keyword with any entry -> 0, the horse point entailed -> 2
    assert scores == [("Alice adopted a puppy named Max", 2), ("Alice works at Acme as a data engineer", 0),
                      ("Alice lives in Paris", 0), ("Alice owns a horse", 2), ("Alice bought a bike", 0)]
    assert one["integrity"] == pytest.approx(0.25)
    ents = [(e["score"], e["included_in_gold"]) for e in one["per_session"][0]["entry_scores"]]
    assert ents == [(2, True), (0, False), (1, True)]  # puppy entailed, horse contradicted, Acme neutral
    assert one["accuracy"] == pytest.approx(0.75)
    assert (one["qa_accuracy"], one["qa_hallucination"]) == (0.5, 0.5)
    # the NLI hypothesis is the entry without its date prefix; the premise its source turn
    assert ("Max loves the park near my house.", "Alice owns a horse.") in nli.pairs
    md = (tmp_path / "o" / "report.md").read_text()
    assert "proxy" in md and res["judge_is_proxy"] is True
    assert "Judge: nli (proxy" in md


def test_cli_scripted_smoke_without_injection(tmp_path):
    """`--llm scripted --embed hash` builds its own services (scripted QA and judge answers)."""
    data = write_halumem(tmp_path / "h.jsonl")
    out = tmp_path / "o"
    rc = cli.main(["eval", "halumem", str(data), "--out", str(out), "--llm", "scripted", "--embed", "hash",
                   "--variants", "one-off,no-rel", "--max-questions", "1"])
    assert rc == 0
    res = json.loads((out / "results.json").read_text())
    assert list(res["variants"]) == ["one-off", "no-rel"]
    assert res["config"]["llm"]["backend"] == "scripted"
    for v in ("one-off", "no-rel"):
        assert validate_halumem_output(out / f"promem_fast-{v}" / "promem_fast_eval_results.jsonl") == 1
        a = res["variants"][v]
        assert a["sessions"] == 2 and a["sessions_failed"] == 0 and a["qa"]["n"] == 2
        assert 0.0 <= a["integrity"] <= 1.0 and a["judge_failed"] == {}


def test_variants_and_bad_input(tmp_path):
    assert parse_variants("promem,no-cc,promem") == ["promem", "no-cc"]
    with pytest.raises(ValueError, match="unknown variant"):
        parse_variants("promem,no-xx")
    cfg = variant_config(make_config(), "no-hv")
    assert cfg.pipeline.variant == "promem" and cfg.pipeline.hallucination_verification is False
    assert variant_config(make_config(), "v1").pipeline.variant == "v1"
    nd = variant_config(make_config(), "no-detail-recovery").pipeline
    assert (nd.variant, nd.recover_details, nd.completeness_check) == ("promem", False, True)
    ns = variant_config(make_config(), "no-screen").pipeline
    assert (ns.variant, ns.screen_entries, ns.lexical_entailment, ns.dedup) == ("promem", False, True, True)
    assert cli.main(["eval", "halumem", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)]) == 2
    assert proxy_qa_label("I don't know.", "Max") == "Omission"
    assert proxy_qa_label("His name is Max", "Max") == "Correct"
    assert proxy_qa_label("Rex", "Max") == "Hallucination"


# ------------------------------------------------------------------ LoCoMo


def write_locomo(path: Path) -> Path:
    conv = {
        "speaker_a": "Alice", "speaker_b": "Bob",
        "session_1_date_time": "10:00 am on 8 May, 2023",
        "session_1": [
            {"speaker": "Alice", "dia_id": "D1:1", "text": "I adopted a puppy named Max yesterday."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Cute! I love puppies."},
            {"speaker": "Alice", "dia_id": "D1:3", "text": "I work at Acme as a data engineer."},
        ],
        "session_2_date_time": "10:00 am on 15 May, 2023",
        "session_2": [
            {"speaker": "Alice", "dia_id": "D2:1", "text": "I bought a bike last week."},
            {"speaker": "Bob", "dia_id": "D2:2", "text": "Nice!"},
        ],
    }
    qa = [
        {"question": "What is the name of Alice's puppy?", "answer": "Max", "evidence": ["D1:1"], "category": 4},
        {"question": "When did Alice adopt the puppy?", "answer": "7 May 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "Where does Alice work and what did she buy?", "answer": "Acme, bike",
         "evidence": ["D1:3", "D2:1"], "category": 1},
        {"question": "What is the name of Alice's cat?", "adversarial_answer": "Tom", "evidence": ["D1:1"],
         "category": 5},
        {"question": "Would Alice enjoy cycling?", "answer": "Likely yes; she bought a bike", "evidence": ["D2:1"],
         "category": 3},
    ]
    obs = {
        "session_1_observation": {"Alice": [["Alice adopted a puppy named Max.", "D1:1"],
                                            ["Alice works at Acme as a data engineer.", "D1:3"]],
                                  "Bob": [["Bob loves puppies.", "D1:2"]]},
        "session_2_observation": {"Alice": [["Alice bought a bike.", "D2:1"]]},
    }
    sample = {"sample_id": "s-1", "conversation": conv, "qa": qa, "observation": obs,
              "session_summary": {}, "event_summary": {}}
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


def oneoff_by_content(req) -> str:
    text = req.messages[-1]["content"]
    if "bike" in text:
        return json.dumps([{"fact": "Alice bought a bike.", "turns": ["D2:1"]}])
    return json.dumps([{"fact": "Alice adopted a puppy named Max on 7 May 2023.", "turns": ["D1:1"]},
                       {"fact": "Alice works at Acme.", "turns": ["D1:2"]}])  # cites the wrong turn


LOCOMO_QA = {
    "name of Alice's puppy": ("Max", "Max", "I don't know"),
    "When did Alice adopt": ("Max", "7 May 2023", "I don't know"),
    "Where does Alice work": ("Acme", "Acme, a car", "I don't know"),
    "name of Alice's cat": ("Max", "Not mentioned in the memories.", "I don't know"),
    "enjoy cycling": ("bike", "likely yes", "I don't know"),
}


def test_locomo_eval_exact(tmp_path):
    data = write_locomo(tmp_path / "locomo_tiny.json")
    llm = ScriptedLLM(rules={"oneoff": oneoff_by_content, "qa": qa_rule(LOCOMO_QA),
                             "judge_integrity": integrity_rule, "judge_qa": qa_judge_rule})
    svc = Services(llm=llm, nli=FakeNLI(default="neutral"), embed=KeywordEmbedder())
    res = runner.run_eval("locomo", data, tmp_path / "o", make_config(), services=svc,
                          options=EvalOptions(variants=["one-off"], samples=["s-1"], sessions="1-2", adversarial=True,
                                              speakers="user"))
    a = res["variants"]["one-off"]
    assert res["speakers"] == "user" and a["sessions"] == 2
    assert a["questions"] == 5
    # F1: cat4 Max 1, cat2 date 1, cat1 (Acme 1 + bike 0)/2, cat3 "likely yes" vs "Likely yes" 1, cat5 rule 1
    assert (a["f1_cat1"], a["f1_cat2"], a["f1_cat3"], a["f1_cat4"], a["f1_cat5"]) == (0.5, 1.0, 1.0, 1.0, 1.0)
    assert a["f1"] == pytest.approx(0.875)
    # judge: cat1 "Acme, a car" and cat3 "likely yes" (missing "she bought a bike") are not Correct
    assert (a["judge_cat1"], a["judge_cat2"], a["judge_cat3"], a["judge_cat4"], a["judge_cat5"]) == (0.0, 1.0, 0.0, 1.0, 1.0)
    assert a["judge_accuracy"] == 0.5
    # integrity over Alice's observations: puppy 2, Acme 1 (no "data engineer"), bike 2; Bob's facts not used
    assert [(p["fact"], p["score"], p["evidence_hit"]) for p in a["per_point"]] == [
        ("Alice adopted a puppy named Max.", 2, True),
        ("Alice works at Acme as a data engineer.", 1, False),  # best entry cites D1:2, not D1:3
        ("Alice bought a bike.", 2, True),
    ]
    assert a["integrity"] == pytest.approx(2 / 3)
    assert a["evidence_hit_rate"] == pytest.approx(2 / 3)
    md = (tmp_path / "o" / "report.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| One-off") and "66.67" in ln)
    assert [c.strip() for c in row.strip("|").split("|")][:8] == [
        "One-off Extract (one-off)", "66.67", "50.00", "100.00", "100.00", "100.00", "100.00", "87.50"]

    # without --adversarial category 5 is left out; a session selection drops cross-session questions
    res2 = runner.run_eval("locomo", data, tmp_path / "o2", make_config(), services=svc,
                           options=EvalOptions(variants=["one-off"], sessions="1", user_speaker="Alice"))
    b = res2["variants"]["one-off"]
    assert res2["speakers"] == "user"  # a named user speaker means one speaker
    assert [q["category"] for q in b["per_question"]] == [4, 2]
    assert "f1_cat5" not in b


def test_locomo_eval_both_speakers_extracts_each_session_once_per_speaker(tmp_path):
    data = write_locomo(tmp_path / "locomo_tiny.json")

    def oneoff(req):  # the memory of whoever the prompt names as the user
        text = req.messages[-1]["content"]
        if "Dialogue of user Bob" in text:
            return json.dumps([{"fact": "Bob loves puppies.", "turns": ["D1:2"]}] if "D1:2" in text else [])
        return oneoff_by_content(req)

    qa = {**LOCOMO_QA, "What does Bob love": ("puppies", "puppies", "I don't know")}
    llm = ScriptedLLM(rules={"oneoff": oneoff, "qa": qa_rule(qa), "judge_integrity": integrity_rule,
                             "judge_qa": qa_judge_rule})
    svc = Services(llm=llm, nli=FakeNLI(default="neutral"), embed=KeywordEmbedder(KEYWORDS + ["puppies"]))
    raw = json.loads(data.read_text())
    raw[0]["qa"].append({"question": "What does Bob love?", "answer": "puppies", "evidence": ["D1:2"], "category": 4})
    data.write_text(json.dumps(raw))
    res = runner.run_eval("locomo", data, tmp_path / "o", make_config(), services=svc,
                          options=EvalOptions(variants=["one-off"], sessions="1-2"))
    a = res["variants"]["one-off"]
    assert res["speakers"] == "both" and a["sessions"] == 4
    graphs = [json.loads(ln) for ln in (tmp_path / "o" / "graphs" / "one-off.jsonl").read_text().splitlines()]
    assert [(g["session_id"], g["user_name"]) for g in graphs] == [
        ("s-1/session_1@Alice", "Alice"), ("s-1/session_2@Alice", "Alice"),
        ("s-1/session_1@Bob", "Bob"), ("s-1/session_2@Bob", "Bob")]
    # each speaker's observations are judged against that speaker's memory
    assert [(p["session_id"], p["fact"], p["score"]) for p in a["per_point"]] == [
        ("s-1/session_1@Alice", "Alice adopted a puppy named Max.", 2),
        ("s-1/session_1@Alice", "Alice works at Acme as a data engineer.", 1),
        ("s-1/session_2@Alice", "Alice bought a bike.", 2),
        ("s-1/session_1@Bob", "Bob loves puppies.", 2),
    ]
    # a question about the other speaker is answered from that speaker's memory
    bob = next(q for q in a["per_question"] if q["question"] == "What does Bob love?")
    assert (bob["system_response"], bob["label"]) == ("puppies", "Correct")
    for bad, match in ((dict(speakers="Both"), "speakers must be"), (dict(speakers="both", user_speaker="Bob"), "needs speakers")):
        with pytest.raises(ValueError, match=match):
            runner.run_eval("locomo", data, tmp_path / "bad", make_config(), services=svc,
                            options=EvalOptions(variants=["one-off"], sessions="1", **bad))


# ------------------------------------------------------------------ LongMemEval


def write_longmemeval(path: Path) -> Path:
    h1 = [{"role": "user", "content": "I adopted a puppy named Max.", "has_answer": True},
          {"role": "assistant", "content": "Cute!"}]
    h2 = [{"role": "user", "content": "I bought a bike today."}, {"role": "assistant", "content": "Nice."}]
    recs = [
        {"question_id": "q1", "question_type": "single-session-user", "question": "What is the name of my puppy?",
         "answer": "Max", "question_date": "2023/05/20 (Sat) 10:00", "haystack_session_ids": ["h1", "h2"],
         "haystack_dates": ["2023/05/08 (Mon) 10:00", "2023/05/15 (Mon) 10:00"], "haystack_sessions": [h1, h2],
         "answer_session_ids": ["h1"]},
        {"question_id": "q2_abs", "question_type": "single-session-user", "question": "What is the name of my cat?",
         "answer": "You did not mention a cat.", "question_date": "2023/05/20 (Sat) 10:00",
         "haystack_session_ids": ["h1"], "haystack_dates": ["2023/05/08 (Mon) 10:00"], "haystack_sessions": [h1],
         "answer_session_ids": []},
        {"question_id": "q3", "question_type": "temporal-reasoning", "question": "When did I buy a bike?",
         "answer": "May 15, 2023", "question_date": "2023/05/20 (Sat) 10:00", "haystack_session_ids": ["h2"],
         "haystack_dates": ["2023/05/15 (Mon) 10:00"], "haystack_sessions": [h2], "answer_session_ids": ["h2"]},
    ]
    path.write_text(json.dumps(recs), encoding="utf-8")
    return path


def test_longmemeval_eval_per_type(tmp_path):
    data = write_longmemeval(tmp_path / "lme.json")

    def oneoff(req):
        text = req.messages[-1]["content"]
        fact = "User bought a bike." if "bike" in text else "User adopted a puppy named Max."
        return json.dumps([{"fact": fact, "turns": ["t0"]}])

    llm = ScriptedLLM(rules={"oneoff": oneoff, "judge_qa": qa_judge_rule, "qa": qa_rule({
        "puppy": ("Max", "Max", "I don't know"), "cat": ("cat", "Tom", "I don't know"),
        "bike": ("bike", "last week", "I don't know")})})
    svc = Services(llm=llm, nli=FakeNLI(default="neutral"), embed=KeywordEmbedder())
    res = runner.run_eval("longmemeval", data, tmp_path / "o", make_config(), services=svc,
                          options=EvalOptions(variants=["one-off"]))
    a = res["variants"]["one-off"]
    assert [(r["question_id"], r["label"], r["correct"]) for r in a["per_question"]] == [
        ("q1", "Correct", True), ("q2_abs", "Omission", True), ("q3", "Hallucination", False)]
    assert a["accuracy_by_type"] == {"abstention": 1.0, "single-session-user": 1.0, "temporal-reasoning": 0.0}
    assert a["accuracy"] == pytest.approx(2 / 3)
    assert a["sessions"] == 2  # h1 is shared by q1 and q2_abs and extracted once
    assert len((tmp_path / "o" / "graphs" / "one-off.jsonl").read_text().splitlines()) == 2
    assert sum(c.stage == "oneoff" for c in llm.calls) == 2
    qa_prompts = [c.messages[-1]["content"] for c in llm.calls if c.stage == "qa"]
    assert all("[Current date: 2023-05-20]" in p for p in qa_prompts)
    md = (tmp_path / "o" / "report.md").read_text()
    assert "| single-session-user | temporal-reasoning | abstention | Overall |" in md.replace("Method | ", "")
    row = next(ln for ln in md.splitlines() if ln.startswith("| One-off"))
    assert [c.strip() for c in row.strip("|").split("|")][1:5] == ["100.00", "0.00", "100.00", "66.67"]
    # --max-questions caps the records
    res2 = runner.run_eval("longmemeval", data, tmp_path / "o2", make_config(), services=svc,
                           options=EvalOptions(variants=["one-off"], max_questions=1))
    assert [r["question_id"] for r in res2["variants"]["one-off"]["per_question"]] == ["q1"]
    assert math.isclose(res2["variants"]["one-off"]["accuracy"], 1.0)


# ------------------------------------------------------------------ real dev slices (skip without data)

DATA = Path(os.environ.get("PROMEM_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")


@pytest.mark.skipif(not (DATA / "halumem_dev_user3.jsonl").is_file(), reason=f"HaluMem dev data not found in {DATA}")
def test_halumem_real_slice_scripted(tmp_path):
    src = DATA / "halumem_dev_user3.jsonl"
    out = tmp_path / "o"
    assert cli.main(["eval", "halumem", str(src), "--out", str(out), "--sessions", "1", "--max-questions", "1",
                     "--llm", "scripted", "--embed", "hash", "--variants", "one-off"]) == 0
    f = out / "promem_fast-one-off" / "promem_fast_eval_results.jsonl"
    assert validate_halumem_output(f) == 1
    raw = json.loads(src.read_text(encoding="utf-8").splitlines()[0])["sessions"][0]
    (s,) = json.loads(f.read_text())["sessions"]
    assert len(s["dialogue"]) == len(raw["dialogue"]) and s["memory_points"] == raw["memory_points"]
    assert len(s["questions"]) == 1 and s["questions"][0]["question"] == raw["questions"][0]["question"]
    res = json.loads((out / "results.json").read_text())["variants"]["one-off"]
    n_int = sum(p["memory_source"] == "interference" for p in raw["memory_points"])
    assert res["memory_integrity"]["n_interference"] == n_int
    assert res["memory_integrity"]["n"] == len(raw["memory_points"]) - n_int


@pytest.mark.skipif(not (DATA / "locomo_dev.json").is_file(), reason=f"LoCoMo dev data not found in {DATA}")
def test_locomo_real_slice_scripted(tmp_path):
    src = DATA / "locomo_dev.json"
    out = tmp_path / "o"
    assert cli.main(["eval", "locomo", str(src), "--out", str(out), "--samples", "conv-26", "--sessions", "1",
                     "--max-questions", "3", "--llm", "scripted", "--embed", "hash", "--variants", "one-off"]) == 0
    res = json.loads((out / "results.json").read_text())["variants"]["one-off"]
    raw = next(s for s in json.loads(src.read_text()) if s["sample_id"] == "conv-26")
    obs = raw["observation"]["session_1_observation"]
    facts = [f[0] for sp in ("speaker_a", "speaker_b") for f in obs[raw["conversation"][sp]]]
    assert [p["fact"] for p in res["per_point"]] == facts  # both speakers (the default)
    assert len(res["per_question"]) == 3
    assert all(q["category"] != 5 for q in res["per_question"])


def test_failed_session_counts_as_empty_memory(tmp_path):
    """A session whose extraction fails is recorded (error, no entries) and the run goes on."""
    data = write_halumem(tmp_path / "h.jsonl")
    calls = []

    def oneoff(req):
        calls.append(1)
        return json.dumps(ONEOFF_FACTS) if len(calls) == 1 else "not json at all {"

    svc = halumem_services()
    svc.llm.rules["oneoff"] = oneoff
    cfg = make_config()
    cfg.llm.api_key = "sk-secret"
    res = runner.run_eval("halumem", data, tmp_path / "o", cfg, services=svc,
                          options=EvalOptions(variants=["one-off"]))
    a = res["variants"]["one-off"]
    assert (a["sessions"], a["sessions_failed"]) == (2, 1)
    s2 = a["per_session"][1]
    assert s2["error"].startswith("StructuredOutputError") and s2["entries"] == []
    assert [p["score"] for p in s2["points"]] == [0]  # the bike point: nothing extracted
    assert validate_halumem_output(tmp_path / "o" / "promem_fast-one-off" / "promem_fast_eval_results.jsonl") == 1
    assert "sk-secret" not in (tmp_path / "o" / "results.json").read_text()


def test_llm_judge_zeroes_a_positive_score_with_an_invented_quote():
    """A judge that quotes text absent from the shown memories / dialogue gets 0, counted as
    ungrounded; a real quote keeps its score."""
    import asyncio

    from promem_fast.eval.judges import LLMJudge

    def rule(req):
        text = req.messages[-1]["content"]
        if req.stage == "judge_integrity":  # quotes the reference itself, as the 1.5B judge did
            quote = _section(text, "REFERENCE MEMORY:\n", "\n\nSYSTEM MEMORIES")
            return json.dumps({"evidence": quote, "left_out": "nothing", "score": 2})
        quote = "Sarah: I moved to Miami" if "Miami" in text.split("CANDIDATE MEMORY:")[1] else "Sarah: I sold my piano"
        return json.dumps({"evidence": quote, "unsupported": "nothing", "accuracy_score": 2,
                           "is_included_in_golden_memories": "true"})

    judge = LLMJudge(ScriptedLLM(rules=rule), KeywordEmbedder(), top_k=1)
    scores = asyncio.run(judge.integrity(["Sarah lives in Boston", "Sarah lives in Miami"],
                                         ["Sarah lives in Miami"]))
    assert scores == [0, 2]
    acc = asyncio.run(judge.accuracy(["Sarah moved to Miami", "Sarah sold a piano"],
                                     dialogue="Sarah: I moved to Miami last year.", gold_points=["Sarah lives in Miami"]))
    assert acc == [(2, True), (0, True)]
    assert judge.stats.ungrounded == {"integrity": 1, "accuracy": 1}


def test_judge_halumem_output_verdicts_rescore(tmp_path):
    """benchmarks/judge_halumem_output.py: the verdicts it keeps re-score to the same numbers
    with no LLM, and a stricter quote check applied offline zeroes the altered quote."""
    import asyncio

    from _bench_loader import load_benchmark

    from promem_fast.eval.judges import LLMJudge

    mod = load_benchmark("judge_halumem_output")

    out = tmp_path / "promem_fast_eval_results.jsonl"
    session = {
        "memory_points": [
            {"memory_content": "Sarah lives in Boston", "memory_source": "primary", "importance": 1.0},
            {"memory_content": "Sarah rides her bike to work at Acme", "memory_source": "primary", "importance": 0.5},
            {"memory_content": "Sarah owns a boat", "memory_source": "interference", "importance": 1.0},
        ],
        "dialogue": [{"role": "user", "content": "I live in Boston now.", "timestamp": "May 1, 2025"},
                     {"role": "user", "content": "My bike commute to Acme is ten minutes.", "timestamp": "May 1, 2025"}],
        "extracted_memories": ["Sarah lives in Boston", "Sarah rides her bike to work at Acme"],
    }
    out.write_text(json.dumps({"uuid": "u1", "user_name": "Sarah", "sessions": [session]}) + "\n")

    def rule(req):
        text = req.messages[-1]["content"]
        if req.stage == "judge_integrity":
            ref = _section(text, "REFERENCE MEMORY:\n", "\n\nSYSTEM MEMORIES")
            quote = {"Sarah lives in Boston": "Sarah lives in Boston",
                     # one word of eight changed: 7/8 of its words are shown
                     "Sarah rides her bike to work at Acme": "Sarah rides her bicycle to work at Acme"}.get(ref, "none")
            return json.dumps({"evidence": quote, "left_out": "nothing", "score": 0 if quote == "none" else 2})
        quote = ("[May 1, 2025]user: I live in Boston now." if "Boston" in text.split("CANDIDATE MEMORY:")[1]
                 else "[May 1, 2025]user: My bike commute to Acme is ten minutes.")
        return json.dumps({"evidence": quote, "unsupported": "nothing", "accuracy_score": 2,
                           "is_included_in_golden_memories": "true"})

    judge = LLMJudge(ScriptedLLM(rules=rule), KeywordEmbedder(), top_k=10, keep_verdicts=True)
    vpath = tmp_path / "verdicts.jsonl"
    with open(vpath, "w") as vout:
        rec = asyncio.run(mod.score_file(out, judge, vout))
    assert rec["per_session"][0]["integrity_scores"] == [2, 2, 0]
    assert rec["per_session"][0]["accuracy_scores"] == [2, 2]
    assert rec["integrity"] == 1.0 and rec["accuracy"] == 1.0 and rec["points"] == 3
    assert [v["kind"] for v in judge.verdicts] == ["integrity"] * 3 + ["accuracy"] * 2
    assert judge.verdicts[1]["item"] == "Sarah rides her bike to work at Acme"

    [again] = mod.rescore(vpath, 0.8)
    assert again["per_session"] == rec["per_session"] and again["integrity"] == 1.0
    assert again["ungrounded"] == {"integrity": 0, "accuracy": 0}
    [strict] = mod.rescore(vpath, 0.9)  # 7/8 < 0.9: the altered quote no longer stands
    assert strict["per_session"][0]["integrity_scores"] == [2, 0, 0]
    assert strict["integrity"] == 0.5 and strict["weighted_recall"] == pytest.approx(1.0 / 1.5)
    assert strict["ungrounded"] == {"integrity": 1, "accuracy": 0}


def test_eval_append_results_adds_one_summary_line_per_run(tmp_path, capsys):
    """`--append-results FILE`: each run appends one line (commit, date, machine, figures)."""
    from promem_fast.results_log import git_commit

    data = write_halumem(tmp_path / "h.jsonl")
    log = tmp_path / "results" / "eval_halumem.jsonl"
    for k in range(2):
        out = tmp_path / f"o{k}"
        assert cli.main(["eval", "halumem", str(data), "--out", str(out), "--llm", "scripted", "--embed", "hash",
                         "--variants", "one-off", "--max-questions", "1", "--append-results", str(log)]) == 0
        assert f"appended one line to {log}" in capsys.readouterr().err
    lines = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert len(lines) == 2
    full = json.loads((tmp_path / "o1" / "results.json").read_text())
    last = lines[1]
    assert last["benchmark"] == "halumem" and last["out_dir"] == str(tmp_path / "o1")
    assert last["commit"] == git_commit() and last["date"][:2] == "20" and last["machine"]["cpu_count"] >= 1
    fig = {k: v for k, v in full["variants"]["one-off"].items() if k != "per_session"}
    assert last["variants"]["one-off"] == fig and "per_session" not in last["variants"]["one-off"]
    assert last["artifacts"] == {"results": str(tmp_path / "o1" / "results.json"),
                                 "report": str(tmp_path / "o1" / "report.md")}
