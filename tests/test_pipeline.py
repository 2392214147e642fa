"""The whole pipeline through Extractor with scripted models: exact graphs, ablations,
variants, error handling and cost accounting."""

from __future__ import annotations

import asyncio
import re
import unicodedata
from datetime import datetime

import pytest

from promem_fast.backends.base import LLMResponse
from promem_fast.backends.llm.scripted import ScriptedLLM, count_tokens
from promem_fast.extractor import EmptySessionError, Extractor
from promem_fast.schema import MemoryGraph, Session, Turn
from promem_fast.stages.relate import UNREADABLE_REASON
from promem_fast.structured import StructuredOutputError

from conftest import (DAY, DRAFT, FakeNLI, const, keyed, make_config, make_services, make_session, promem_rules,
                      relation_rule)


def run(session=None, services=None, **pipeline) -> tuple[MemoryGraph, object]:
    """Extract with scripted models; the detail re-read asks the scripted LLM (``recover_by``
    "llm") unless a test says otherwise, so every scripted stage is pinned."""
    services = services or make_services()
    pipeline.setdefault("recover_by", "llm")
    g = Extractor(make_config(**pipeline), services).extract(session or make_session())
    return g, services


def stages_called(services) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in services.llm.calls:
        out[c.stage] = out.get(c.stage, 0) + 1
    return out


def event_rows(g: MemoryGraph):
    return [(e.id, e.text, e.status, e.origin, e.source_turn_ids) for e in g.events]


FULL_EVENTS = [
    ("e1", "Alice adopted a puppy named Max yesterday.", "kept", "draft", ["t1"]),
    ("e2", "Alice takes Max to the park.", "recovered", "event", ["t3"]),
    ("e3", "Alice started a new job at Acme. Alice is a data engineer.", "revised", "draft", ["t6"]),
    ("e4", "Alice bought a bike.", "kept", "draft", ["t8"]),
]
FULL_DETAILS = [
    ("d1", "puppy named Max", "t1", ["e1"]), ("d2", "adopted yesterday", "t1", ["e1"]),
    ("d3", "park near house", "t3", ["e2"]), ("d4", "Acme", "t6", ["e3"]),
    ("d5", "data engineer", "t6", ["e3"]), ("d6", "bike", "t8", ["e4"]),
]


def detail_rows(g):
    return [(d.id, d.text, d.turn_id, d.event_ids) for d in g.details]


def test_full_promem_graph_exact():
    g, svc = run()
    MemoryGraph.model_validate_json(g.to_json())  # round-trips through the published schema
    assert g.variant == "promem" and g.session_id == "s1" and g.user_name == "Alice"
    assert event_rows(g) == FULL_EVENTS
    assert g.events[0].dates == ["2023-05-07"] and g.events[0].timestamp == DAY
    assert g.events[2].original_text == "Alice started a new job at Acme as a data scientist."
    assert detail_rows(g) == FULL_DETAILS and {d.anchored_by for d in g.details} == {"turn"}
    assert g.ablations == ["llm-reread"]
    assert [(r.source, r.type, r.target, r.probe_question) for r in g.relations] == [
        ("e3", "causal", "e4", "Why did Alice buy a bike?")]
    assert [(t.id, t.turn_ids) for t in g.topics] == [("t1", ["t1", "t2", "t3", "t4"]), ("t2", ["t5", "t6", "t7", "t8"])]
    assert [(d.stage, d.text) for d in g.discarded] == [
        ("verify", "Alice takes puppy training with Max."),
        ("verify", "Alice earns a high salary."),
        ("relation_verify", "Alice adopted a puppy named Max yesterday. -[temporal: happens before]-> "
                            "Alice takes Max to the park."),
    ]
    assert g.models == {"llm": "scripted", "nli": "fake-nli", "embed": "keyword"}


def test_default_re_read_restates_the_turn_by_rule_without_a_call():
    # recover_by "restate" (the default): t3's missing detail "park near house" becomes t3's own
    # sentence about Alice; the scripted event "Alice takes Max to the park" (the turn says
    # nothing of taking him) goes as its near-duplicate, and no recover request is made
    g, svc = run(recover_by="restate")
    assert event_rows(g)[1] == ("e2", "Max loves the park near Alice's house.", "recovered", "detail", ["t3"])
    assert [r for r in event_rows(g) if r[0] != "e2"] == [r for r in FULL_EVENTS if r[0] != "e2"]
    assert "recover" not in stages_called(svc)
    assert g.stats.stages["recover"].llm_calls == 0 and g.stats.stages["recover"].prompt_tokens == 0
    assert ("verify", "Alice takes Max to the park.") in [(d.stage, d.text) for d in g.discarded]


def test_emoji_only_turn_yields_no_detail_and_is_never_asked_about():
    g, svc = run()
    assert all(d.turn_id != "t4" for d in g.details)
    assert all("t4" not in c.json_schema["properties"] for c in svc.llm.calls if c.stage == "details")


def test_stats_count_calls_and_tokens_per_stage_exactly():
    g, svc = run()
    # verify: one decomposition, one adjudication ("high salary" fails the screen: no call);
    # relation_verify: one probe request for both edges, one answerability, one support request
    expected_calls = {"details": 2, "events": 2, "relations": 1, "draft": 1, "verify": 2, "relation_verify": 3,
                      "recover": 1}
    assert stages_called(svc) == expected_calls
    for stage, n in expected_calls.items():
        st = g.stats.stages[stage]
        calls = [c for c in svc.llm.calls if c.stage == stage]
        assert st.llm_calls == n
        assert st.prompt_tokens == sum(count_tokens(" ".join(m["content"] for m in c.messages)) for c in calls)
    # 3 entries (e1 and e4 copy their turns: lexical, no pair) + 1 atomic fact ("started a new
    # job at Acme" lexical, "high salary" screened)
    assert g.stats.stages["verify"].nli_pairs == 4
    assert g.stats.llm_calls == 12
    assert g.stats.prompt_tokens == sum(s.prompt_tokens for s in g.stats.stages.values())
    assert set(g.stats.stages) == {"segment", "details", "events", "relations", "draft", "completeness",
                                   "verify", "recover", "relation_verify", "anchor"}


def test_every_session_prompt_shares_the_system_message_and_dialogue_prefix():
    g, svc = run()
    # the draft and relation verification's dialogue-support request open with the whole dialogue
    session_calls = [c for c in svc.llm.calls if c.stage == "draft" or "does the dialogue support" in c.messages[-1]["content"]]
    assert len(session_calls) == 2
    prefix = session_calls[0].messages[-1]["content"].split("### Task")[0]
    assert prefix.startswith("Dialogue of user Alice")
    assert "## 2023-05-08 (Monday)" in prefix and "[t2] Assistant (assistant): Congrats!" in prefix
    for c in svc.llm.calls:
        assert c.messages[0] == svc.llm.calls[0].messages[0]
    for c in session_calls:
        assert c.messages[-1]["content"].startswith(prefix)
    # event abstraction and details see only their topic's turns (§3.2), each a line of the full dialogue
    event_calls = [c for c in svc.llm.calls if c.stage in ("events", "details")]
    assert len(event_calls) == 4
    for c in event_calls:
        shown = c.messages[-1]["content"].split("### Task")[0]
        assert shown.startswith("Dialogue of user Alice") and shown != prefix
        assert all(line in prefix.splitlines() for line in shown.splitlines() if line.startswith("["))
    # a topic's details and events prompts open with the same block (one shared prefix), and the
    # details task lists no turn again
    shown_by = {st: [c.messages[-1]["content"].split("### Task")[0] for c in event_calls if c.stage == st]
                for st in ("details", "events")}
    assert shown_by["details"] == shown_by["events"]
    assert not any("(user):" in task_of(c) for c in event_calls if c.stage == "details")


def test_relation_inference_sees_the_event_list_not_the_dialogue():
    # Figure 11: the edges are inferred from the events alone; §3.5 checks them against the dialogue
    g, svc = run()
    (call,) = [c for c in svc.llm.calls if c.stage == "relations"]
    body = call.messages[-1]["content"]
    assert "Dialogue of user" not in body and "(user):" not in body
    assert re.search(r"^E1: .+$", body, re.M) and re.search(r"^E2: .+$", body, re.M)
    # 12 edges asked for at least (remapping onto memory entries drops many), more when more are checked
    assert call.json_schema["maxItems"] == 12 and "at most 12" in body
    _, svc20 = run(max_relation_checks=20)
    (call20,) = [c for c in svc20.llm.calls if c.stage == "relations"]
    assert call20.json_schema["maxItems"] == 20 and "at most 20" in call20.messages[-1]["content"]
    assert call20.max_tokens > call.max_tokens


def test_no_relation_request_when_no_edge_could_be_checked():
    g, svc = run(max_relation_checks=0)
    assert "relations" not in stages_called(svc) and "relation_verify" not in stages_called(svc)
    assert g.relations == [] and g.events


def test_on_stage_callback_reports_start_and_end():
    seen = []
    ex = Extractor(make_config(), make_services(), on_stage=lambda s, st, ph: seen.append((s, st, ph)))
    ex.extract(make_session())
    assert seen[0] == ("s1", "segment", "start")
    for st in ("details", "events", "relations", "draft", "completeness", "verify", "recover", "relation_verify",
               "anchor"):
        assert seen.count(("s1", st, "start")) == 1 and seen.count(("s1", st, "end")) == 1
    assert seen[-1] == ("s1", "anchor", "end")


# --- ablations -----------------------------------------------------------------------

def test_no_completeness_check_recovers_nothing():
    g, svc = run(completeness_check=False)
    assert [e[1] for e in event_rows(g)] == [FULL_EVENTS[0][1], FULL_EVENTS[2][1], FULL_EVENTS[3][1]]
    assert all(e.status != "recovered" for e in g.events)
    # the temporal edge lost its recovered end; the causal one is verified as before
    assert [(r.source, r.type, r.target) for r in g.relations] == [("e2", "causal", "e3")]
    assert stages_called(svc)["relation_verify"] == 3


def test_no_hallucination_verification_keeps_entries_unverified():
    from conftest import RECOVER

    nli = FakeNLI()  # any NLI call would raise KeyError
    rules = promem_rules()
    # unverified, "data scientist" stays and t6's "data engineer" is read again (nothing new)
    rules["recover"] = keyed({"Turn: [t3]": RECOVER["Turn: [t3]"], "Turn: [t6]": []})
    g, svc = run(services=make_services(rules=rules, nli=nli), hallucination_verification=False)
    assert nli.pairs == [] and "verify" not in stages_called(svc)
    assert event_rows(g) == [
        ("e1", "Alice adopted a puppy named Max yesterday.", "kept", "draft", ["t1"]),
        ("e2", "Alice takes puppy training with Max.", "kept", "draft", ["t2"]),
        ("e3", "Alice takes Max to the park.", "recovered", "event", ["t3"]),
        ("e4", "Alice started a new job at Acme as a data scientist.", "kept", "draft", ["t6"]),
        ("e5", "Alice bought a bike.", "kept", "draft", ["t8"]),
    ]
    assert all(not e.nli and e.original_text is None for e in g.events)


def test_no_detail_anchoring_leaves_details_unanchored():
    g, _ = run(detail_anchoring=False)
    assert [(d.id, d.text, d.turn_id) for d in g.details] == [r[:3] for r in FULL_DETAILS]
    assert all(d.event_ids == [] and d.anchored_by is None for d in g.details)
    assert g.ablations == ["no-da", "llm-reread"]
    assert event_rows(g) == FULL_EVENTS and "anchor" not in g.stats.stages


def test_a_misfiled_detail_is_refiled_and_anchored_by_its_topic():
    from conftest import DETAILS, EVENTS

    rules = promem_rules()
    # the LLM files "park near house" under t1 (it is said in t3), and no event of t3 exists
    rules["details"] = keyed({"t1, t3": {"t1": ["puppy named Max", "adopted yesterday", "park near house"]},
                              "t6, t8": DETAILS["t6, t8"]})
    rules["events"] = keyed({**EVENTS, "Turns t1 to t4": EVENTS["Turns t1 to t4"][:1]})
    rules["recover"] = const([])  # t3, read again for its detail, yields nothing new
    g, _ = run(services=make_services(rules=rules))
    assert not any("t3" in e.source_turn_ids for e in g.events)
    rows = [(d.text, d.turn_id, d.event_ids, d.anchored_by) for d in g.details]
    assert rows[:3] == [("puppy named Max", "t1", ["e1"], "turn"), ("adopted yesterday", "t1", ["e1"], "turn"),
                        ("park near house", "t3", ["e1"], "topic")]
    g_off, _ = run(services=make_services(rules=rules), refile_details=False, anchor_within_topic=False)
    assert g.ablations == ["llm-reread"] and g_off.ablations == ["no-refile", "no-topic-anchor", "llm-reread"]
    assert "park near house" not in [d.text for d in g_off.details]
    assert ("details", "park near house", "not stated in turn t1") in [
        (d.stage, d.text, d.reason) for d in g_off.discarded]


def test_a_turn_whose_details_no_entry_states_is_read_again_and_its_new_fact_verified():
    from conftest import ADJUDICATE, DECOMPOSE, NLI_VERDICTS, RECOVER

    rules = promem_rules()
    new = "Alice walks Max in the park near her house."
    invented = "Alice owns a red sports car."
    wrong = "Alice jogs past the park near her house."  # states the detail; HV discards it
    copied = "Alice (user): Max loves the park near Alice's house."  # the turn line, speaker label and all
    rules["recover"] = keyed({"Turn: [t3]": RECOVER["Turn: [t3]"] + [new, "I love that park so much.", invented, wrong,
                                                                    copied]})
    rules["verify"] = keyed({**DECOMPOSE, **ADJUDICATE, f"Entry: {wrong}": [wrong],
                             f"Fact: {wrong}": {"action": "DISCARD", "revised_fact": None}})
    nli = FakeNLI({**NLI_VERDICTS, new: "entailment", wrong: "neutral"})
    # dedup off: under the keyword embedder "new" and e2 are one vector (test_dedup_* covers it)
    # six facts for t3's one missing detail: no per-detail cap, so that every filter is met
    g, svc = run(services=make_services(rules=rules, nli=nli), dedup=False, recovered_facts_per_detail=0)
    (call,) = [c for c in svc.llm.calls if c.stage == "recover"]
    assert task_of(call).startswith("Turn: [t3] Alice (user): Max loves the park near my house.\n"
                                    'Memory so far does not say what this turn says about: "park near house".')
    # the repeat of e2 is dropped, the first-person copy and the invented fact discarded, the
    # new fact verified against t3
    assert event_rows(g) == FULL_EVENTS[:2] + [("e3", new, "recovered", "detail", ["t3"])] + [
        (f"e{int(r[0][1:]) + 1}",) + r[1:] for r in FULL_EVENTS[2:]]
    assert g.events[2].nli[0].premise_turn_id == "t3" and g.events[2].nli[0].label == "entailment"
    assert [(d.stage, d.text, d.reason) for d in g.discarded if d.stage == "recover"] == [
        ("recover", "I love that park so much.", "first-person copy of a dialogue line, not a third-person fact"),
        ("recover", copied, "copy of a dialogue line (holds its speaker label), not a fact"),
        ("recover", invented, "states none of the missing details and is not read from turn t3")]
    assert [d.event_ids for d in g.details if d.text == "park near house"] == [["e2", "e3"]]
    assert ("verify", wrong, "no atomic fact survived verification") in [(d.stage, d.text, d.reason) for d in g.discarded]
    # the second HV pass checks only the recovered entries: 3 more NLI pairs than without recovery
    assert g.stats.stages["verify"].nli_pairs == 4 + 3
    # the re-read is charged to "recover"; its entries' HV (calls and time) to "verify"
    rec, ver = g.stats.stages["recover"], g.stats.stages["verify"]
    assert (rec.llm_calls, rec.nli_pairs) == (1, 0)
    assert ver.llm_calls == stages_called(svc)["verify"] and rec.llm_calls == stages_called(svc)["recover"]

    g_off, svc_off = run(services=make_services(rules=rules, nli=nli), recover_details=False)
    assert g_off.ablations == ["no-detail-recovery"] and "recover" not in stages_called(svc_off)
    assert event_rows(g_off) == FULL_EVENTS and g_off.stats.stages["verify"].nli_pairs == 4
    assert [len(e.nli) for e in g.events if e.origin != "detail"] == [len(e.nli) for e in g_off.events]
    _, svc_zero = run(services=make_services(rules=rules, nli=nli), max_detail_recoveries=0)
    assert "recover" not in stages_called(svc_zero)


def test_detail_recovery_reads_the_turns_with_most_missing_details_first():
    from conftest import DETAILS

    rules = promem_rules()
    # t8 gets two details no entry states ("commute" is in none), t3 one ("park near house")
    rules["details"] = keyed({**DETAILS, "t6, t8": {**DETAILS["t6, t8"], "t8": ["bike", "long commute", "commute to my job"]}})
    rules["recover"] = keyed({"Turn: [t8]": [], "Turn: [t3]": []})
    _, svc = run(services=make_services(rules=rules), max_detail_recoveries=1)
    (call,) = [c for c in svc.llm.calls if c.stage == "recover"]
    assert task_of(call).startswith("Turn: [t8]") and '"long commute"; "commute to my job"' in task_of(call)
    _, svc2 = run(services=make_services(rules=rules))
    assert [task_of(c)[:10] for c in svc2.llm.calls if c.stage == "recover"] == ["Turn: [t3]", "Turn: [t8]"]


def task_of(req) -> str:
    return req.messages[-1]["content"].split("### Task\n", 1)[1]


@pytest.mark.parametrize("switches, names", [
    (dict(details=False, refile_details=False), ["no-details"]),  # no stage, no check to name
    (dict(details=False, refile_details=False, recover_details=False), ["no-details"]),
    (dict(completeness_check=False, relations=False), ["no-cc", "no-rel"]),
    (dict(hallucination_verification=False, check_head_claim=False, check_polarity=False), ["no-hv"]),
    (dict(check_polarity=False), ["no-polarity"]),
    (dict(screen_entries=False, lexical_entailment=False, dedup=False), ["no-screen", "no-lexical-nli", "no-dedup"]),
    (dict(hallucination_verification=False, screen_entries=False, dedup=False), ["no-hv"]),
    (dict(recover_details=False), ["no-detail-recovery"]),
    (dict(recover_by="llm"), ["llm-reread"]),
    (dict(recover_by="llm", recover_details=False), ["no-detail-recovery"]),
    (dict(completeness_check=False, recover_details=False), ["no-cc"]),
    (dict(check_head_claim=False, detail_anchoring=False, anchor_within_topic=False), ["no-da", "no-head-claim"]),
])
def test_ablations_name_the_switches_that_were_off(switches, names):
    from promem_fast.config import PipelineConfig
    from promem_fast.stages.pipeline import ablations

    assert ablations(PipelineConfig(**switches)) == names


def test_no_relations_skips_inference_and_verification():
    g, svc = run(relations=False)
    assert g.relations == [] and "relations" not in stages_called(svc) and "relation_verify" not in stages_called(svc)
    assert g.ablations == ["no-rel", "llm-reread"]
    assert event_rows(g) == FULL_EVENTS and detail_rows(g) == FULL_DETAILS


def test_no_details_skips_detail_extraction():
    g, svc = run(details=False)
    assert g.details == [] and "details" not in stages_called(svc)
    assert event_rows(g) == FULL_EVENTS


# --- variants ---------------------------------------------------------------------------

def test_one_off_variant_single_call():
    rules = {"oneoff": const([
        {"fact": "Alice adopted a puppy named Max yesterday.", "turns": ["t1"]},
        {"fact": "Alice works at Acme.", "turns": ["t8", "t6", "zz"]},
        {"fact": "Alice likes parks.", "turns": []},
    ])}
    g, svc = run(services=make_services(rules=rules, nli=FakeNLI()), variant="one-off")
    assert stages_called(svc) == {"oneoff": 1}
    assert event_rows(g) == [
        ("e1", "Alice adopted a puppy named Max yesterday.", "kept", "draft", ["t1"]),
        ("e2", "Alice works at Acme.", "kept", "draft", ["t6", "t8"]),
        ("e3", "Alice likes parks.", "kept", "draft", []),
    ]
    assert g.events[0].dates == ["2023-05-07"] and g.details == [] and g.relations == [] and g.topics == []
    assert g.variant == "one-off"


def test_v1_variant():
    rules = {
        "draft": const([
            {"fact": "Alice adopted a puppy named Max yesterday.", "turns": ["t1"]},
            {"fact": "Alice started a new job at Acme.", "turns": ["t6"]},
            {"fact": "Alice started a new job at Acme as an engineer.", "turns": ["t6"]},
            {"fact": "Alice lives in Paris.", "turns": []},
        ]),
        "coverage": keyed({"missed turns t3.": [{"fact": "Alice takes Max to the park.", "turns": ["t3"]}]}),
        "evidence": keyed({
            "Memory entry: Alice adopted": {"question": "What did Alice adopt?", "evidence_turn": "t1",
                                            "supported": True, "fact": "Alice adopted a puppy named Max yesterday."},
            "Memory entry: Alice started a new job at Acme.": {
                "question": "Where does Alice work?", "evidence_turn": "t6", "supported": True, "fact": None},
            "Memory entry: Alice started a new job at Acme as an engineer.": {
                "question": "What is Alice's role?", "evidence_turn": "t6", "supported": True,
                "fact": "Alice started a new job at Acme as a data engineer."},
            "Memory entry: Alice lives in Paris.": {"question": "Where does Alice live?", "evidence_turn": None,
                                                    "supported": False, "fact": None},
            "Memory entry: Alice takes Max": {"question": "Where does Max go?", "evidence_turn": "t3",
                                              "supported": True, "fact": "Alice takes Max to the park."},
        }),
    }
    g, svc = run(services=make_services(rules=rules, nli=FakeNLI()), variant="v1")
    assert stages_called(svc) == {"draft": 1, "coverage": 1, "evidence": 5}
    assert event_rows(g) == [
        ("e1", "Alice adopted a puppy named Max yesterday.", "kept", "draft", ["t1"]),
        ("e2", "Alice takes Max to the park.", "recovered", "supplement", ["t3"]),
        ("e3", "Alice started a new job at Acme.", "kept", "draft", ["t6"]),
    ]
    assert [(d.stage, d.text) for d in g.discarded] == [
        ("evidence", "Alice lives in Paris."),
        ("dedup", "Alice started a new job at Acme as a data engineer."),
    ]
    assert g.discarded[0].reason == "self-questioning found no evidence (Where does Alice live?)"
    assert set(g.stats.stages) >= {"draft", "coverage", "evidence", "dedup"}


# --- input handling and failures ---------------------------------------------------------

@pytest.mark.parametrize("contents", [[], ["", "   \n\t"]])
def test_empty_session_raises_before_any_model_call(contents):
    svc = make_services()
    s = Session(session_id="empty-7", turns=[Turn(turn_id=f"t{i}", role="user", content=c) for i, c in enumerate(contents)])
    with pytest.raises(EmptySessionError, match="empty-7"):
        Extractor(make_config(), svc).extract(s)
    with pytest.raises(EmptySessionError, match="empty-7"):
        asyncio.run(Extractor(make_config(), svc).aextract(s))
    assert svc.llm.calls == []


def test_emoji_only_session_gives_empty_graph_without_calls():
    svc = make_services()
    s = Session(session_id="emo", turns=[Turn(turn_id="t1", role="user", content="🎉🎉"),
                                         Turn(turn_id="t2", role="assistant", content="🙂")])
    g = Extractor(make_config(), svc).extract(s)
    assert g.events == [] and g.details == [] and svc.llm.calls == []


def test_session_opening_with_assistant_and_consecutive_same_role_turns():
    s = Session(session_id="s2", user_name="Bo", turns=[
        Turn(turn_id="a1", role="assistant", content="Hi! How was your weekend with the puppy?"),
        Turn(turn_id="a2", role="assistant", content="Did your puppy Max like the park?"),
        Turn(turn_id="u3", role="user", content="Yes, Max loved the park."),
        Turn(turn_id="u4", role="user", content="Then my puppy Max slept all day in the park."),
    ])
    rules = {
        "details": const({"u3": ["the park"], "u4": ["slept all day"]}),
        "events": const([{"fact": "Bo took Max to the park.", "turns": ["u3"]},
                         {"fact": "Bo's dog slept all day.", "turns": ["u4"]}]),
        "relations": const([["E1", "temporal", "E2"]]),
        "draft": const([{"fact": "Bo took his puppy Max to the park.", "turns": ["u3"]}]),
        "relation_verify": relation_rule({"A:": {"question": "What happened after the park?"}},
                                         {"": {"answerable": False}}, {"Claim:": True}),
    }
    g, svc = run(session=s, services=make_services(rules=rules, nli=FakeNLI(default="entailment")))
    assert [(t.turn_ids) for t in g.topics] == [["a1", "a2", "u3", "u4"]]
    assert event_rows(g) == [
        # grounded to u4 (cosine 1.0) over its cited u3 (0.82 < 90% of 1.0); both kept as sources
        ("e1", "Bo took his puppy Max to the park.", "kept", "draft", ["u3", "u4"]),
        ("e2", "Bo's dog slept all day.", "recovered", "event", ["u4"]),
    ]
    assert [(r.source, r.type, r.target) for r in g.relations] == [("e1", "temporal", "e2")]
    assert detail_rows(g) == [("d1", "the park", "u3", ["e1"]), ("d2", "slept all day", "u4", ["e1", "e2"])]


class TruncatingLLM(ScriptedLLM):
    """Scripted LLM whose answers for ``stage`` stop at max_tokens (finish_reason "length")."""

    def __init__(self, stage: str, **kw):
        super().__init__(**kw)
        self.truncate_stage = stage

    async def generate(self, requests):
        out = await super().generate(requests)
        return [LLMResponse(r.text[: len(r.text) // 2], r.prompt_tokens, r.completion_tokens, 0, "length")
                if q.stage == self.truncate_stage else r for q, r in zip(requests, out)]


def test_truncated_output_twice_raises_and_returns_nothing():
    svc = make_services()
    svc.llm = TruncatingLLM("draft", rules=promem_rules())
    with pytest.raises(StructuredOutputError) as ei:
        Extractor(make_config(), svc).extract(make_session())
    assert ei.value.stage == "draft"
    draft_calls = [c for c in svc.llm.calls if c.stage == "draft"]
    assert len(draft_calls) == 2  # first try + one retry
    assert draft_calls[1].max_tokens == 2 * draft_calls[0].max_tokens


def test_unreadable_relation_answer_drops_the_edges_and_keeps_the_memory():
    svc = make_services()
    svc.llm = TruncatingLLM("relation_verify", rules=promem_rules())
    g = Extractor(make_config(recover_by="llm"), svc).extract(make_session())
    full, _ = run()
    # every verified entry is there, as without the failure; no edge is kept
    assert [e.text for e in g.events] == [e.text for e in full.events] and g.events
    assert full.relations and g.relations == []
    dropped = [d for d in g.discarded if d.stage == "relation_verify"]
    assert len(dropped) == 2 and all(d.reason.startswith(UNREADABLE_REASON) for d in dropped)
    assert "stage 'relation_verify'" in dropped[0].reason
    # the probe request was tried twice (the retry with twice the token cap), nothing after it
    assert [c.max_tokens for c in svc.llm.calls if c.stage == "relation_verify"] == [170, 340]


def test_extract_inside_running_event_loop():
    async def main():
        return Extractor(make_config(recover_by="llm"), make_services()).extract(make_session())

    g = asyncio.run(main())
    assert event_rows(g) == FULL_EVENTS


class LoopRecordingLLM(ScriptedLLM):
    """Records the event loop each batch of requests runs on."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.loops = []  # the loops themselves: kept alive, their ids cannot be reused

    async def generate(self, requests):
        self.loops.append(asyncio.get_running_loop())
        return await super().generate(requests)


def test_extract_calls_share_one_event_loop():
    # a loop-bound client (the OpenAI backend's HTTP pool) must outlive one extract call:
    # with asyncio.run per call it was closed with the first call's loop
    svc = make_services()
    svc.llm = LoopRecordingLLM(rules=promem_rules())
    ex = Extractor(make_config(recover_by="llm"), svc)
    first = ex.extract(make_session())

    async def inside_a_loop():
        return ex.extract(make_session())

    second = asyncio.run(inside_a_loop())  # the thread path runs on the same private loop
    assert event_rows(first) == event_rows(second) == FULL_EVENTS
    assert len({id(x) for x in svc.llm.loops}) == 1


def test_unicode_name_nfc_preserved():
    nfd = unicodedata.normalize("NFD", "José Ñúñez")
    s = make_session(user_name=nfd)
    rules = {"oneoff": const([{"fact": f"{nfd} adopted a puppy named Max.", "turns": ["t1"]}])}
    g, svc = run(session=s, services=make_services(rules=rules, nli=FakeNLI()), variant="one-off")
    assert g.user_name == "José Ñúñez" and unicodedata.is_normalized("NFC", g.user_name)
    assert g.events[0].text == "José Ñúñez adopted a puppy named Max."
    assert "Dialogue of user José Ñúñez" in svc.llm.calls[0].messages[-1]["content"]


def test_non_english_text_passes_through_unchanged():
    s = Session(session_id="zh", user_name="李雷", start_time=DAY, turns=[
        Turn(turn_id="u1", role="user", content="我昨天在杭州买了一辆自行车。", timestamp=DAY),
        Turn(turn_id="a2", role="assistant", content="太好了！", timestamp=DAY),
    ])
    rules = {
        "details": keyed({"u1": {"u1": ["杭州", "自行车"]}}),
        "events": keyed({"Turns u1": [{"fact": "李雷在杭州买了一辆自行车。", "turns": ["u1"]}]}),
        "draft": const([{"fact": "李雷于2023-05-07在杭州买了一辆自行车。", "turns": ["u1"]}]),
    }
    g, _ = run(session=s, services=make_services(rules=rules, nli=FakeNLI(default="entailment")))
    texts = [e.text for e in g.events]
    assert "李雷于2023-05-07在杭州买了一辆自行车。" in texts
    assert all(t in ("李雷于2023-05-07在杭州买了一辆自行车。", "李雷在杭州买了一辆自行车。") for t in texts)
    assert [d.text for d in g.details] == ["杭州", "自行车"]


class StageTimedLLM(ScriptedLLM):
    """Requests of ``stage`` take ``delay`` seconds and then raise when ``fail``; every other
    request takes ``others`` seconds. ``sent`` lists the stage of every request, in the order
    sent."""

    def __init__(self, stage, delay, *, fail=False, others=0.01, **kw):
        super().__init__(**kw)
        self.stage, self.delay, self.fail, self.others = stage, delay, fail, others
        self.sent: list[str] = []

    async def generate(self, requests):
        self.sent += [q.stage for q in requests]
        hit = any(q.stage == self.stage for q in requests)
        await asyncio.sleep(self.delay if hit else self.others)
        if hit and self.fail:
            raise RuntimeError(f"{self.stage} backend down")
        return await super().generate(requests)


def test_failed_first_stage_branch_cancels_its_siblings():
    svc = make_services()
    svc.llm = StageTimedLLM("draft", 0, fail=True, others=0.2, rules=promem_rules())

    async def main():
        with pytest.raises(RuntimeError, match="draft backend down"):
            await Extractor(make_config(), svc).aextract(make_session())
        await asyncio.sleep(1.0)  # a sibling left running would reach the relations stage here

    asyncio.run(main())
    stages = {c.stage for c in svc.llm.calls}
    assert "relations" not in stages and "draft" not in stages, stages


def test_failed_relations_call_fails_the_session_before_verification():
    # relations is part of stage 1: its failure fails the session (no partial graph) and no
    # later stage sends a request, then or after
    svc = make_services()
    svc.llm = StageTimedLLM("relations", 0.3, fail=True, rules=promem_rules())

    async def main():
        with pytest.raises(RuntimeError, match="relations backend down"):
            await Extractor(make_config(), svc).aextract(make_session())
        n = len(svc.llm.sent)
        await asyncio.sleep(0.5)  # a branch left running would send more requests here
        return n

    n = asyncio.run(main())
    assert len(svc.llm.sent) == n
    assert set(svc.llm.sent) == {"details", "events", "draft", "relations"}


def test_stage_stats_are_listed_in_start_order_whatever_finishes_first():
    # a slow draft ends after relations has run; the stats still list stages as they started,
    # so two runs of one session give the same graph JSON (bench's identical_graphs)
    svc, even = make_services(), make_services()
    svc.llm = StageTimedLLM("draft", 0.3, rules=promem_rules())
    even.llm = ScriptedLLM(rules=promem_rules(), latency_s=0.01)  # the draft answers before relations does
    g = Extractor(make_config(), svc).extract(make_session())
    ref = Extractor(make_config(), even).extract(make_session())
    assert list(g.stats.stages) == list(ref.stats.stages) == [
        "segment", "details", "events", "draft", "relations", "completeness", "verify", "recover",
        "relation_verify", "anchor"]


class OnceInvalidLLM(ScriptedLLM):
    """The first call of ``stage`` answers prose instead of JSON; later calls follow the rules."""

    def __init__(self, stage, **kw):
        super().__init__(**kw)
        self.bad_stage, self.spent = stage, False

    async def generate(self, requests):
        out = await super().generate(requests)
        fixed = []
        for q, r in zip(requests, out):
            if q.stage == self.bad_stage and not self.spent:
                self.spent = True
                r = LLMResponse("Sure! Here are the facts: none.", r.prompt_tokens, 7, 0, "stop")
            fixed.append(r)
        return fixed


def test_invalid_json_is_retried_with_the_rejected_answer_and_the_error():
    svc = make_services()
    svc.llm = OnceInvalidLLM("draft", rules=promem_rules())
    g = Extractor(make_config(recover_by="llm"), svc).extract(make_session())
    assert event_rows(g) == FULL_EVENTS  # the corrected answer is used, nothing else changes
    first, second = [c for c in svc.llm.calls if c.stage == "draft"]
    assert second.messages[: len(first.messages)] == first.messages  # prompt prefix unchanged
    assert second.messages[-2] == {"role": "assistant", "content": "Sure! Here are the facts: none."}
    assert second.messages[-1]["role"] == "user" and "could not be used" in second.messages[-1]["content"]
    assert second.max_tokens == first.max_tokens
