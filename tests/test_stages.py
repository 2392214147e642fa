"""Each ProMem stage on the hand-made 8-turn session (tests/conftest.py), exact contents."""

from __future__ import annotations

import math

import numpy as np
import pytest

from promem_fast.prompts.common import dialogue_block
from promem_fast.schema import NLIVerdict, Session, Turn
from promem_fast.stages.anchor import anchor_details
from promem_fast.stages.complete import completeness_check, uncovered_details
from promem_fast.stages.extract import FIRST_PERSON_REASON, abstract_events, extract_details, extract_draft, infer_relations, parse_edges
from promem_fast.stages.pipeline import build_graph
from promem_fast.stages.relate import UNREADABLE_REASON, verify_relations
from promem_fast.stages.segment import cap_length, cut_points, segment_topics
from promem_fast.stages.state import Candidate, Entry, PipelineState, has_text
from promem_fast.stages.verify import ASSISTANT_REASON, verify_entries

from conftest import (ADJUDICATE, DECOMPOSE, DETAILS, EVENTS, FakeNLI, KeywordEmbedder, const, keyed, make_ctx,
                      make_services, make_session, relation_rule)


# HV's NLI path alone: the screen and the lexical fast path have their own tests (test_screen.py)
NLI_ONLY = {"screen_entries": False, "lexical_entailment": False}


def new_state(ctx) -> PipelineState:
    return PipelineState.create(ctx.session, ctx.user_name, dialogue_block(ctx.session, ctx.user_name))


def fixed_embed(ctx, table: dict[str, np.ndarray]) -> None:
    """Replace ctx.embed with a lookup of hand-made vectors (KeyError for unknown texts)."""

    async def embed(texts):
        return np.stack([np.asarray(table[t], np.float32) for t in texts])

    ctx.embed = embed


def unit(angle_deg: float) -> np.ndarray:
    a = math.radians(angle_deg)
    return np.array([math.cos(a), math.sin(a)], np.float32)


# --- text filter -------------------------------------------------------------------------

def test_has_text_rejects_emoji_and_accepts_any_script():
    assert not has_text("🐶🎉")
    assert not has_text("  ... !!")
    assert has_text("去公园")
    assert has_text("42")


# --- segmentation ------------------------------------------------------------------------

def _angles_for(sims: list[float]) -> list[np.ndarray]:
    angles = [0.0]
    for s in sims:
        angles.append(angles[-1] + math.degrees(math.acos(s)))
    return [unit(a) for a in angles]


def test_cut_points_rising_threshold():
    # consecutive cosines 0.9, 0.32, 0.9, 0.27, 0.9: nothing below 0.2 or 0.25; at 0.3 only 0.27
    vecs = np.stack(_angles_for([0.9, 0.32, 0.9, 0.27, 0.9]))
    assert cut_points(vecs, 0.2, 0.05, 0.5) == [4]
    # a cosine below the start threshold cuts at once, higher ones are then not considered
    vecs = np.stack(_angles_for([0.1, 0.3, 0.9]))
    assert cut_points(vecs, 0.2, 0.05, 0.5) == [1]
    # nothing below the max threshold: one topic
    vecs = np.stack(_angles_for([0.6, 0.55, 0.9]))
    assert cut_points(vecs, 0.2, 0.05, 0.5) == []


def test_cap_length_splits_long_topics_evenly():
    seg = [f"t{i}" for i in range(1, 8)]
    assert cap_length([seg], 3) == [["t1", "t2", "t3"], ["t4", "t5", "t6"], ["t7"]]
    assert cap_length([seg], 4) == [["t1", "t2", "t3", "t4"], ["t5", "t6", "t7"]]


async def test_segment_topics_on_hand_made_vectors_skips_emoji_turn():
    ctx = make_ctx()
    state = new_state(ctx)
    # 7 text turns (t4 is emoji-only); cosines t1-t2 .9, t2-t3 .8, t3-t5 .35, t5-t6 .9, t6-t7 .28, t7-t8 .9
    vecs = _angles_for([0.9, 0.8, 0.35, 0.9, 0.28, 0.9])
    fixed_embed(ctx, {t.content: v for t, v in zip(state.text_turns, vecs)})
    topics = await segment_topics(ctx, state)
    # first cut found at threshold 0.3 (0.28); the emoji turn t4 stays with t3
    assert topics == [["t1", "t2", "t3", "t4", "t5", "t6"], ["t7", "t8"]]
    assert ctx.stats == {}  # no LLM call


async def test_segment_topics_keyword_embedder_two_topics():
    ctx = make_ctx()
    state = new_state(ctx)
    assert await segment_topics(ctx, state) == [["t1", "t2", "t3", "t4"], ["t5", "t6", "t7", "t8"]]


# --- stage 1 ---------------------------------------------------------------------------

async def test_details_per_topic_user_turns_only():
    ctx = make_ctx()
    state = new_state(ctx)
    state.topics = [["t1", "t2", "t3", "t4"], ["t5", "t6", "t7", "t8"]]
    details = await extract_details(ctx, state)
    assert details == [
        ("t1", "puppy named Max"), ("t1", "adopted yesterday"), ("t3", "park near house"),
        ("t6", "Acme"), ("t6", "data engineer"), ("t8", "bike"),
    ]
    calls = ctx.services.llm.calls
    assert [c.stage for c in calls] == ["details", "details"]
    # the schema asks for exactly the topic's user text turns (no t2 assistant, no t4 emoji)
    assert [sorted(c.json_schema["properties"]) for c in calls] == [["t1", "t3"], ["t6", "t8"]]


async def test_details_drop_the_users_own_name():
    sess = Session(session_id="s9", user_name="Sarah Garcia", turns=[
        Turn(turn_id="t1", role="user", content="I'm Sarah Garcia, Sarah to friends, and I live in Miami.")])
    ctx = make_ctx(session=sess)
    ctx.services.llm.rules["details"] = const({"t1": ["Sarah Garcia", "sarah", "Miami", "Garcia family"]})
    state = new_state(ctx)
    state.topics = [["t1"]]
    assert await extract_details(ctx, state) == [("t1", "Miami"), ("t1", "Garcia family")]
    assert [(d.text, d.reason) for d in state.discarded] == [
        ("Sarah Garcia", "the user's name, not a detail"), ("sarah", "the user's name, not a detail")]


async def test_details_drop_the_other_speakers_name():
    # "Caroline" as a detail sent CC to re-read the turn for what it says to Caroline
    sess = Session(session_id="s9", user_name="Mel", turns=[
        Turn(turn_id="t0", role="assistant", speaker="Caroline Reyes", content="I gave a talk at school."),
        Turn(turn_id="t1", role="user", content="Hey Caroline, proud of you! I ran a race on Sunday.")])
    ctx = make_ctx(session=sess)
    ctx.services.llm.rules["details"] = const(
        {"t1": ["Caroline", "Hey Caroline!", "race on Sunday", "Caroline's talk", "Reyes"]})
    state = new_state(ctx)
    state.topics = [["t0", "t1"]]
    assert await extract_details(ctx, state) == [("t1", "race on Sunday"), ("t1", "Caroline's talk")]
    assert [(d.text, d.reason) for d in state.discarded] == [
        ("Caroline", "the other speaker's name, not a detail"),
        ("Hey Caroline!", "the other speaker's name, not a detail"),
        ("Reyes", "the other speaker's name, not a detail")]


@pytest.mark.parametrize("refile", [True, False])
async def test_details_filed_under_the_wrong_turn_go_to_the_turn_that_states_them(refile):
    ctx = make_ctx(refile_details=refile)
    ctx.services.llm.rules["details"] = const(
        {"t1": ["park near house", "puppy named Max"], "t3": ["house", "the moon landing"]})
    state = new_state(ctx)
    state.topics = [["t1", "t2", "t3", "t4"]]
    details = await extract_details(ctx, state)
    discarded = [(d.text, d.reason) for d in state.discarded]
    if refile:  # "park near house" is stated in t3, not t1; nothing states "the moon landing"
        # t3's own detail first, then the one moved to it
        assert details == [("t1", "puppy named Max"), ("t3", "house"), ("t3", "park near house")]
        assert discarded == [("the moon landing", "not stated in any user turn of its topic")]
    else:
        assert details == [("t1", "puppy named Max"), ("t3", "house")]
        assert discarded == [("park near house", "not stated in turn t1"), ("the moon landing", "not stated in turn t3")]


def test_home_turn_prefers_most_shared_words_then_nearest():
    from promem_fast.stages.extract import home_turn

    text_of = {"t1": "I like herbal tea.", "t3": "Herbal tea and fresh smoothies.", "t5": "Smoothies daily."}
    ids = ["t1", "t3", "t5"]
    assert home_turn("herbal tea", "t1", ids, text_of) == "t1"            # its own turn states it
    assert home_turn("fresh smoothies", "t1", ids, text_of) == "t3"       # 2 shared words beat 1
    assert home_turn("smoothies", "t5", ids, text_of) == "t5"
    assert home_turn("smoothies", "t1", ids, text_of) == "t3"             # tie: nearest to t1
    assert home_turn("jazz", "t1", ids, text_of) is None
    # equally near on both sides: the later turn wins, by dialogue position, not by id string
    ids2, text2 = ["D1:9", "D1:10", "D1:11"], {"D1:9": "Jazz.", "D1:10": "I'd like to share something.", "D1:11": "Jazz."}
    assert home_turn("jazz", "D1:10", ids2, text2) == "D1:11"


async def test_a_turns_own_details_take_its_cap_before_refiled_ones():
    ctx = make_ctx(max_details_per_turn=2)
    # t1's "park near house" belongs to t3; t3's own two details come first and fill its cap
    ctx.services.llm.rules["details"] = const({"t1": ["park near house"], "t3": ["park", "house"]})
    state = new_state(ctx)
    state.topics = [["t1", "t2", "t3", "t4"]]
    assert await extract_details(ctx, state) == [("t3", "park"), ("t3", "house")]


async def test_events_invalid_ids_dropped_and_fallback_to_topic_user_turns():
    ctx = make_ctx()
    state = new_state(ctx)
    state.topics = [["t1", "t2", "t3", "t4"], ["t5", "t6", "t7", "t8"]]
    events = await abstract_events(ctx, state)
    assert [(e.text, e.turn_ids, e.topic) for e in events] == [
        ("Alice adopted a puppy named Max.", ["t1"], 0),
        ("Alice takes Max to the park.", ["t3"], 0),
        ("Alice started a job at Acme.", ["t6"], 1),
        ("Alice bought a bike because of the long commute.", ["t6", "t8"], 1),
    ]


async def test_topic_without_user_text_makes_no_call():
    ctx = make_ctx()
    state = new_state(ctx)
    state.topics = [["t1", "t2", "t3"], ["t4", "t5"], ["t6", "t7", "t8"]]  # t4 emoji, t5 assistant
    ctx.services.llm.rules["events"] = keyed({"Turns t1 to t3": EVENTS["Turns t1 to t4"],
                                              "Turns t6 to t8": EVENTS["Turns t5 to t8"]})
    await abstract_events(ctx, state)
    assert len(ctx.services.llm.calls) == 2


def test_parse_edges_drops_unknown_ids_bad_types_self_loops_and_repeats():
    state = new_state(make_ctx())
    raw = [["E1", "causal", "E2"], ["e2", "Temporal", "E3"], ["E1", "causal", "E2"], ["E1", "causal", "E1"],
           ["E9", "causal", "E1"], ["E1", "because", "E3"], ["X", "causal", "E2"]]
    assert parse_edges(state, raw, 3) == [(0, "causal", 1), (1, "temporal", 2)]


async def test_relations_need_two_events():
    ctx = make_ctx()
    state = new_state(ctx)
    state.events = [Candidate("Alice adopted a puppy named Max.", ["t1"], 0)]
    assert await infer_relations(ctx, state) == []
    assert ctx.services.llm.calls == []


async def test_draft_cleans_subject_drops_duplicates_and_bad_ids():
    ctx = make_ctx(services=make_services(rules={"draft": const([
        {"fact": "User likes  tea.", "turns": ["t1", "t42"]},
        {"fact": "Alice likes tea", "turns": ["t3"]},
        {"fact": "Alice adopted Max.", "turns": []},
        {"fact": "I adopted a puppy named Max yesterday.", "turns": ["t1"]},
        {"fact": "Alice dislikes energy drinks, they make me jittery.", "turns": ["t3"]},
        {"fact": "Alice went hiking and we had fun.", "turns": ["t3"]},
    ])}))
    state = new_state(ctx)
    entries = await extract_draft(ctx, state)
    assert [(e.text, e.source_turn_ids, e.origin, e.status) for e in entries] == [
        ("Alice likes tea.", ["t1"], "draft", "kept"), ("Alice adopted Max.", [], "draft", "kept"),
        ("Alice dislikes energy drinks, they make Alice jittery.", ["t3"], "draft", "kept"),
    ]
    assert [(d.text, d.stage, d.reason) for d in state.discarded] == [
        ("I adopted a puppy named Max yesterday.", "draft", FIRST_PERSON_REASON),
        ("Alice went hiking and we had fun.", "draft", FIRST_PERSON_REASON),
        ("Alice likes tea", "draft", "exact duplicate of another entry"),
    ]


# --- completeness check ------------------------------------------------------------------

async def _cc_state(recover: bool):
    ctx = make_ctx()
    state = new_state(ctx)
    state.events = [Candidate("ev-a", ["t1"], 0), Candidate("ev-b", ["t3"], 0), Candidate("ev-c", ["t6", "t8"], 1)]
    state.entries = [Entry("dr-x", "draft", "kept", ["t1"]), Entry("dr-y", "draft", "kept", ["t6"])]
    # cos(ev-a, dr-x) = .9, cos(ev-b, dr-y) = .7 (both above tau_comp = .6); ev-c: .58 to dr-x
    fixed_embed(ctx, {"dr-x": [1, 0, 0], "dr-y": [0, 1, 0], "ev-a": [0.9, math.sqrt(1 - 0.81), 0],
                      "ev-b": [0, 0.7, math.sqrt(1 - 0.49)], "ev-c": [0.58, 0, math.sqrt(1 - 0.58**2)]})
    rec = await completeness_check(ctx, state, recover=recover)
    return state, rec


async def test_completeness_recovers_exactly_the_unmatched_event():
    state, rec = await _cc_state(True)
    assert rec == [2]
    assert [(e.text, e.origin, e.status, e.source_turn_ids) for e in state.entries] == [
        ("dr-x", "draft", "kept", ["t1"]), ("dr-y", "draft", "kept", ["t6"]),
        ("ev-c", "event", "recovered", ["t6", "t8"]),
    ]
    assert state.event_to_entry == {0: 0, 1: 1, 2: 2}


async def test_completeness_without_recovery_only_maps():
    state, rec = await _cc_state(False)
    assert rec == [] and len(state.entries) == 2
    assert state.event_to_entry == {0: 0, 1: 1}


# --- hallucination verification ---------------------------------------------------------

async def test_entry_passes_only_when_its_main_clause_is_entailed_too():
    from promem_fast.stages.verify import head_claim

    assert head_claim("Alice dislikes burgers, because they are her favorite.") == "Alice dislikes burgers."
    assert head_claim("Alice has lived in Paris since 2020.") == "Alice has lived in Paris."
    assert head_claim("Alice cried because...") is None  # head under 3 words
    assert head_claim("Alice adopted a puppy.") is None
    flipped = "Alice adopted a kitten, because she loves dogs."
    nli = FakeNLI({
        flipped: "entailment", "Alice adopted a kitten.": "contradiction",
        "Alice adopted a puppy, because she loves dogs.": "entailment", "Alice adopted a puppy.": "entailment",
    })
    # the decomposer repeats the entry (as the 1.5B model does): judged once, main clause too
    rules = {"verify": keyed({f"Entry: {flipped}": [flipped, flipped.rstrip(".")],
                              "Fact: Alice adopted a kitten": {"action": "REVISE", "revised_fact": "Alice adopted a puppy."}})}
    ctx = make_ctx(services=make_services(rules=rules, nli=nli), **NLI_ONLY)
    state = new_state(ctx)
    state.entries = [Entry(flipped, "draft", "kept", ["t1"]),
                     Entry("Alice adopted a puppy, because she loves dogs.", "draft", "kept", ["t1"])]
    await verify_entries(ctx, state)
    e = state.entries
    # the whole entry read as entailed, its main clause not: decomposed and revised
    assert [(v.hypothesis, v.label) for v in e[0].nli] == [
        (flipped, "entailment"), ("Alice adopted a kitten.", "contradiction")] * 2
    assert [(a.text, a.action, a.revised_text, a.verdict.hypothesis) for a in e[0].atomic_facts] == [
        (flipped, "revised", "Alice adopted a puppy.", "Alice adopted a kitten.")]
    assert (e[0].text, e[0].status, e[0].original_text) == ("Alice adopted a puppy.", "revised", flipped)
    # the polarity rule found "adopted a puppy" said as is in t1: its main clause is not judged apart
    assert (e[1].text, e[1].status, [v.hypothesis for v in e[1].nli]) == (
        "Alice adopted a puppy, because she loves dogs.", "kept", ["Alice adopted a puppy, because she loves dogs."])
    # a swapped noun, a place or a second clause in the main clause: judged on its own
    for entry in ("Alice adopted a black kitten, because she loves dogs.",
                  "Alice adopted a puppy and sold her bike, because she loves dogs."):
        ctx = make_ctx(services=make_services(rules=rules, nli=FakeNLI(default="entailment")), **NLI_ONLY)
        state = new_state(ctx)
        state.entries = [Entry(entry, "draft", "kept", ["t1"])]
        await verify_entries(ctx, state)
        assert [v.hypothesis for v in state.entries[0].nli] == [entry, head_claim(entry)]
    # without the polarity rule the main clause is judged on its own, as for the flipped entry
    ctx = make_ctx(services=make_services(rules=rules, nli=FakeNLI(dict(nli.verdicts))),
                   check_polarity=False, **NLI_ONLY)
    state = new_state(ctx)
    state.entries = [Entry("Alice adopted a puppy, because she loves dogs.", "draft", "kept", ["t1"])]
    await verify_entries(ctx, state)
    assert [(v.hypothesis, v.label) for v in state.entries[0].nli] == [
        ("Alice adopted a puppy, because she loves dogs.", "entailment"), ("Alice adopted a puppy.", "entailment")]
    # switched off: one pair per entry, the flipped entry is kept as written
    ctx = make_ctx(services=make_services(rules=rules, nli=FakeNLI(dict(nli.verdicts))),
                   check_head_claim=False, **NLI_ONLY)
    state = new_state(ctx)
    state.entries = [Entry(flipped, "draft", "kept", ["t1"])]
    await verify_entries(ctx, state)
    assert (state.entries[0].text, state.entries[0].status, len(state.entries[0].nli)) == (flipped, "kept", 1)


@pytest.mark.parametrize("hyp, premise, clash", [
    ("Sarah likes to play first-person shooters, because they are intense.",
     "I don't like to play first-person shooters, because I find them too intense.", True),
    ("Sarah doesn’t like to play first-person shooters.", "I don't like to play first-person shooters.", False),
    ("Sarah dislikes strategy games.", "I don't like puzzle games. I like to play strategy games.", True),
    # the main clause wins the tie with the reason clause that names the same games
    ("Sarah likes puzzle games.", "I don't like puzzle games, because puzzle games frustrate me.", True),
    ("Sarah never skips breakfast.", "I always eat breakfast at 7.", False),  # one shared word: no decision
    ("Sarah has no chronic diseases.", "My health is normal, with no chronic diseases.", False),
    ("Sarah went hiking.", "I did not go hiking, I went hiking the week after.", False),  # two clauses, two polarities
    ("Sarah lives in Miami.", "I no longer live in Boston, I live in Miami now.", False),
    ("Sarah lives in Boston.", "I no longer live in Boston, I live in Miami now.", True),  # "lives" / "live"
])
def test_polarity_clash(hyp, premise, clash):
    from promem_fast.stages.verify import polarity_clash

    assert polarity_clash(hyp, premise, "Sarah Garcia") is clash


@pytest.mark.parametrize("hyp, premise, same", [
    ("Sarah doesn't like to wear cargo pants, because they feel too utilitarian.",
     "I don't like to wear cargo pants, because they feel too utilitarian.", True),
    ("Sarah likes to play first-person shooters, because they are intense.",
     "I don't like to play first-person shooters, because I find them too intense.", False),
    ("Sarah never skips breakfast.", "I always eat breakfast at 7.", None),  # one shared word
    ("Sarah went hiking.", "I did not go hiking, I went hiking the week after.", True),  # the clause with "went"
    ("Sarah plays chess online.", "I play chess online. I don't play chess online at work.", None),  # a tie
])
def test_same_polarity_decides_or_abstains(hyp, premise, same):
    from promem_fast.stages.verify import same_polarity

    assert same_polarity(hyp, premise, "Sarah Garcia") is same


async def test_an_entry_the_turn_negates_is_a_contradiction_without_an_nli_call():
    sess = Session(session_id="s7", user_name="Alice", turns=[Turn(
        turn_id="t1", role="user",
        content="I don't like puzzle games, because they frustrate me. I like to play strategy games.")])
    flipped = "Alice likes puzzle games, because they are relaxing."
    nli = FakeNLI(default="entailment")  # as lenient as the 1.5B judge
    # no decomposition rule: the flipped one-clause claim is the atomic fact (a decompose call raises)
    rules = {"verify": keyed({"Fact: Alice likes puzzle games.": {"action": "REVISE",
                                                                  "revised_fact": "Alice doesn't like puzzle games."}})}
    ctx = make_ctx(session=sess, services=make_services(rules=rules, nli=nli), lexical_entailment=False)
    state = new_state(ctx)
    state.entries = [Entry(flipped, "draft", "kept", ["t1"]), Entry("Alice likes to play strategy games.", "draft", "kept", ["t1"])]
    await verify_entries(ctx, state)
    e = state.entries
    assert [(v.hypothesis, v.label, v.by) for v in e[0].nli] == [
        (flipped, "contradiction", "polarity"), ("Alice likes puzzle games.", "contradiction", "polarity"),
        ("Alice likes puzzle games.", "contradiction", "polarity")]
    assert [(a.text, a.action) for a in e[0].atomic_facts] == [("Alice likes puzzle games.", "revised")]
    assert (e[0].text, e[0].status) == ("Alice doesn't like puzzle games.", "revised")
    assert (e[1].status, [(v.label, v.by) for v in e[1].nli]) == ("kept", [("entailment", "nli")])
    # only the pairs the rule could not decide went to the NLI service
    assert [h for _, h in nli.pairs] == ["Alice likes to play strategy games."]
    # switched off: the lenient judge keeps the flipped entry as written
    ctx = make_ctx(session=sess, services=make_services(rules=rules, nli=FakeNLI(default="entailment")),
                   check_polarity=False)
    state = new_state(ctx)
    state.entries = [Entry(flipped, "draft", "kept", ["t1"])]
    await verify_entries(ctx, state)
    assert (state.entries[0].text, state.entries[0].status) == (flipped, "kept")


async def test_a_flipped_compound_is_still_decomposed():
    """Only a one-clause main claim skips decomposition: "likes X, but plays Y" may hold a true part."""
    from promem_fast.stages.verify import flipped_claim

    sess = Session(session_id="s8", user_name="Alice", turns=[Turn(
        turn_id="t1", role="user", content="I don't like puzzle games. I play chess on Sundays.")])
    compound = "Alice likes puzzle games, but she plays chess on Sundays."
    rules = {"verify": keyed({f"Entry: {compound}": ["Alice likes puzzle games.", "Alice plays chess on Sundays."],
                              "Fact: Alice likes puzzle games.": {"action": "DISCARD", "revised_fact": None}})}
    ctx = make_ctx(session=sess, services=make_services(rules=rules, nli=FakeNLI(default="entailment")),
                   lexical_entailment=False, screen_entries=False)
    state = new_state(ctx)
    state.entries = [Entry(compound, "draft", "kept", ["t1"])]
    await verify_entries(ctx, state)
    e = state.entries[0]
    assert [(a.text, a.action) for a in e.atomic_facts] == [
        ("Alice likes puzzle games.", "discarded"), ("Alice plays chess on Sundays.", "kept")]
    assert (e.text, e.status) == ("Alice plays chess on Sundays.", "revised")
    contra = [NLIVerdict(premise_turn_id="t1", hypothesis="x", label="contradiction", score=1.0, by="polarity")]
    assert flipped_claim("Alice likes sodas, because they are too sweet.", contra) == "Alice likes sodas."
    assert flipped_claim("Alice likes sodas.", contra) == "Alice likes sodas."
    assert flipped_claim(compound, contra) is None
    # "and" joins two claims; "since" may date the claim: both are decomposed as before
    assert flipped_claim("Alice likes puzzle games and plays chess.", contra) is None
    assert flipped_claim("Alice hasn't played tennis since May.", contra) is None
    judged = [NLIVerdict(premise_turn_id="t1", hypothesis="x", label="contradiction", score=0.9, by="nli")]
    assert flipped_claim("Alice likes sodas.", judged) is None  # only the rule's verdict, not a judge's


async def test_hallucination_verification():
    nli = FakeNLI({
        "Alice adopted a puppy named Max yesterday.": "entailment",
        "Alice started a new job at Acme as a data scientist.": "contradiction",
        "Alice started a new job at Acme.": "entailment",
        "Alice is a data scientist.": "contradiction",
        "Alice earns a high salary.": "neutral",
        "Alice takes puppy training with Max.": "neutral",
        "Alice has a puppy named Max.": "entailment",
        "Alice owns a cat.": "neutral",
    })
    rules = {"verify": keyed({**DECOMPOSE, "Entry: Alice owns a cat.": ["Alice owns a cat."], **ADJUDICATE,
                              "Fact: Alice owns a cat.": {"action": "DISCARD", "revised_fact": None}})}
    ctx = make_ctx(services=make_services(rules=rules, nli=nli), **NLI_ONLY)
    state = new_state(ctx)
    state.entries = [
        Entry("Alice adopted a puppy named Max yesterday.", "draft", "kept", ["t1"]),
        Entry("Alice started a new job at Acme as a data scientist.", "draft", "kept", ["t6"]),
        Entry("Alice takes puppy training with Max.", "draft", "kept", ["t2"]),
        Entry("Alice has a puppy named Max.", "event", "recovered", ["t2"]),
        Entry("Alice owns a cat.", "draft", "kept", []),
    ]
    await verify_entries(ctx, state)
    e = state.entries
    # entailed: kept as is
    assert (e[0].text, e[0].status, e[0].discarded, e[0].ground_turn_id) == (
        "Alice adopted a puppy named Max yesterday.", "kept", False, "t1")
    assert [(v.premise_turn_id, v.label) for v in e[0].nli] == [("t1", "entailment")]
    # not entailed: decomposed, one atomic fact kept, one revised, one discarded
    assert (e[1].text, e[1].status, e[1].original_text, e[1].discarded) == (
        "Alice started a new job at Acme. Alice is a data engineer.", "revised",
        "Alice started a new job at Acme as a data scientist.", False)
    assert [(a.text, a.action, a.revised_text) for a in e[1].atomic_facts] == [
        ("Alice started a new job at Acme.", "kept", None),
        ("Alice is a data scientist.", "revised", "Alice is a data engineer."),
        ("Alice earns a high salary.", "discarded", None),
    ]
    assert [v.label for v in e[1].nli] == ["contradiction", "entailment", "contradiction", "neutral"]
    # grounded to the assistant turn t2 and not entailed by a user turn: discarded
    assert e[2].discarded and e[2].nli[0].premise_turn_id == "t1"
    # grounded to t2 but entailed by the user turn t1: kept, re-grounded
    assert (e[3].discarded, e[3].status, e[3].ground_turn_id) == (False, "recovered", "t1")
    # nothing survives: discarded
    assert e[4].discarded and e[4].atomic_facts[0].action == "discarded"
    assert [(d.text, d.stage, d.reason) for d in state.discarded] == [
        ("Alice takes puppy training with Max.", "verify", ASSISTANT_REASON),
        ("Alice earns a high salary.", "verify", "atomic fact not entailed by turn t6; adjudicator: DISCARD"),
        ("Alice owns a cat.", "verify", "atomic fact not entailed by turn t1; adjudicator: DISCARD"),
        ("Alice owns a cat.", "verify", "no atomic fact survived verification"),
    ]
    # premise = the grounding turn with date, speaker and role
    assert nli.pairs[0] == ("[2023-05-08] Alice (user): I adopted a puppy named Max yesterday.",
                            "Alice adopted a puppy named Max yesterday.")
    # batched: one decomposition call and one adjudication call for all entries
    assert ctx.services.llm.generate_calls == 2
    assert ctx.stats["verify"].llm_calls == 5 and ctx.stats["verify"].nli_pairs == 5 + 4


# --- relation verification ----------------------------------------------------------------

async def test_relation_verification_implicit_supported_unsupported():
    rules = {"relation_verify": relation_rule(
        {"A: alpha": {"question": "Q-implicit"}, "A: beta": {"question": "Q-open"},
         "A: gamma": {"question": "Q-unsupported"}},
        {"Q-implicit": {"answerable": True}, "Q-open": {"answerable": False},
         "Q-unsupported": {"answerable": False}},
        {"Claim: A leads to B.": True, "Claim: A happens before B.": False},
    )}
    ctx = make_ctx(services=make_services(rules=rules))
    state = new_state(ctx)
    state.entries = [Entry(t, "draft", "kept", []) for t in ("alpha", "beta", "gamma", "delta", "omega")]
    state.entries[4].discarded = True
    state.event_edges = [(0, "causal", 1), (1, "causal", 2), (2, "temporal", 3), (3, "causal", 4),
                         (5, "causal", 0), (6, "causal", 3)]
    state.event_to_entry = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 6: 3}  # event 5 unmapped; 6 merges into 3
    edges = await verify_relations(ctx, state)
    assert [(r.source, r.type, r.target, r.question) for r in edges] == [(1, "causal", 2, "Q-open")]
    assert [(d.stage, d.reason) for d in state.discarded] == [
        ("relation_verify", "implicit: answerable from memory"),
        ("relation_verify", "not supported by the dialogue"),
    ]
    # one probe request for the 3 edges, one answerability request for their 3 questions,
    # one dialogue-support request for the 2 open edges
    assert ctx.services.llm.generate_calls == 3 and ctx.stats["relation_verify"].llm_calls == 3
    probe = [c for c in ctx.services.llm.calls if "Pair 3: A: gamma" in c.messages[-1]["content"]][0]
    assert "Pair 1: A: alpha | B: beta | Claimed link: A leads to B (causal)." in probe.messages[-1]["content"]
    assert (probe.json_schema["minItems"], probe.json_schema["maxItems"]) == (3, 3)
    # answerability sees the flat memory (live entries only), not the dialogue
    ans = [c for c in ctx.services.llm.calls if "Question 2: Q-open" in c.messages[-1]["content"]][0]
    assert "Memory entries:\n1. alpha\n2. beta\n3. gamma\n4. delta" in ans.messages[-1]["content"]
    assert "[t1]" not in ans.messages[-1]["content"]


async def test_unreadable_support_answer_gives_each_edge_one_verdict():
    rule = relation_rule({"A: alpha": {"question": "Q-implicit"}, "A: beta": {"question": "Q-open"}},
                         {"Q-implicit": {"answerable": True}, "Q-open": {"answerable": False}}, {})

    def answer(req):  # the support request ("Link k: ...") gets an unreadable answer every time
        return "[tru" if "Link 1:" in req.messages[1]["content"] else rule(req)

    ctx = make_ctx(services=make_services(rules={"relation_verify": answer}))
    state = new_state(ctx)
    state.entries = [Entry(t, "draft", "kept", []) for t in ("alpha", "beta", "gamma")]
    state.event_edges = [(0, "causal", 1), (1, "causal", 2)]
    state.event_to_entry = {0: 0, 1: 1, 2: 2}
    assert await verify_relations(ctx, state) == []
    reasons = [d.reason for d in state.discarded]
    assert len(reasons) == 2 and all(r.startswith(UNREADABLE_REASON) for r in reasons)
    # probe, answerability, then the support request and its retry
    assert ctx.stats["relation_verify"].llm_calls == 4


async def test_probe_answer_of_the_wrong_length_is_retried():
    answers = iter(['["only one question"]', '["Q1", "Q2"]'])

    def answer(req):
        if "Pair 1:" in req.messages[1]["content"]:  # the request as first sent, retries too
            return next(answers)
        return relation_rule({}, {"Q": {"answerable": False}}, {"Claim:": True})(req)

    ctx = make_ctx(services=make_services(rules={"relation_verify": answer}))
    state = new_state(ctx)
    state.entries = [Entry(t, "draft", "kept", []) for t in ("alpha", "beta", "gamma")]
    state.event_edges = [(0, "causal", 1), (1, "temporal", 2)]
    state.event_to_entry = {0: 0, 1: 1, 2: 2}
    edges = await verify_relations(ctx, state)
    assert [(r.source, r.type, r.target, r.question) for r in edges] == [(0, "causal", 1, "Q1"), (1, "temporal", 2, "Q2")]
    probes = [c for c in ctx.services.llm.calls if "Pair 1:" in c.messages[1]["content"]]
    # the retry shows the rejected answer and why it was rejected
    assert len(probes) == 2 and probes[1].messages[2] == {"role": "assistant", "content": '["only one question"]'}


async def test_relation_checks_capped():
    rules = {"relation_verify": relation_rule({"A:": {"question": "q"}}, {"q": {"answerable": False}},
                                              {"Claim:": True})}
    ctx = make_ctx(services=make_services(rules=rules), max_relation_checks=1)
    state = new_state(ctx)
    state.entries = [Entry(t, "draft", "kept", []) for t in ("a", "b", "c")]
    state.event_edges = [(0, "causal", 1), (1, "causal", 2)]
    state.event_to_entry = {0: 0, 1: 1, 2: 2}
    assert [(r.source, r.target) for r in await verify_relations(ctx, state)] == [(0, 1)]


# --- anchoring and dates ---------------------------------------------------------------

def test_anchor_details_by_turn_id_including_grounding_turn():
    a = Entry("A", "draft", "kept", ["t1", "t3"])
    b = Entry("B", "event", "recovered", ["t6"], ground_turn_id="t8")
    c = Entry("C", "draft", "kept", ["t3"])
    details = [("t3", "x"), ("t8", "y"), ("t7", "z")]
    assert anchor_details(details, [("e1", a), ("e2", b), ("e3", c)]) == [
        (["e1", "e3"], "turn"), (["e2"], "turn"), ([], None)]


def test_anchor_details_falls_back_to_nearest_entries_of_the_topic():
    # HaluMem-style: t8 announces the topic, t9 carries the content; the only entry is
    # grounded to t8, so t9's details share no turn id with any entry
    pos = {f"t{k}": k for k in range(14)}
    topics = [["t6", "t7"], ["t8", "t9"], ["t10", "t11", "t12", "t13"]]
    drinks = Entry("likes herbal tea", "draft", "kept", ["t7"])
    reading = Entry("shared her reading preference", "event", "recovered", ["t8"], ground_turn_id="t8")
    food1 = Entry("likes Thai food", "draft", "kept", ["t10"])
    food2 = Entry("likes sushi", "draft", "kept", ["t11"])
    food3 = Entry("dislikes canned soup", "draft", "kept", ["t11", "t13"])
    entries = [("e1", drinks), ("e2", reading), ("e3", food1), ("e4", food2), ("e5", food3)]
    details = [("t9", "adventure novels"), ("t12", "canned soup"), ("t7", "herbal tea"), ("t3", "blazers")]
    got = anchor_details(details, entries, topics=topics, turn_pos=pos)
    assert got == [
        (["e2"], "topic"),          # e2 is one turn away; e3 (t10) too but in the next topic
        (["e4", "e5"], "topic"),    # t11 and t13 are both one turn from t12; t10 is two
        (["e1"], "turn"),
        ([], None),                 # t3 is in no topic segment
    ]
    # without topics the paper's rule leaves both unanchored
    assert [a for a, _ in anchor_details(details, entries)] == [[], [], ["e1"], []]
    with pytest.raises(ValueError, match="turn_pos"):
        anchor_details(details, entries, topics=topics)


def test_build_graph_resolves_dates_from_grounding_turn():
    ctx = make_ctx()
    state = new_state(ctx)
    state.entries = [Entry("Alice went to a support group yesterday.", "draft", "kept", ["t3"], ground_turn_id="t3")]
    g = build_graph(ctx, state, "promem")
    assert g.events[0].dates == ["2023-05-07"]
    assert g.events[0].timestamp == make_session().turns[2].timestamp
    assert g.events[0].id == "e1" and g.events[0].source_turn_ids == ["t3"]


def test_first_person_copies_are_detected_anywhere_but_not_the_country():
    from promem_fast.stages.extract import _FIRST_PERSON

    assert _FIRST_PERSON.search("The transgender stories were so inspiring! I was so happy.")
    assert _FIRST_PERSON.search("The support group has made me feel accepted.")
    assert _FIRST_PERSON.search("I'm off to go do some research.")
    assert not _FIRST_PERSON.search("Caroline moved to the US in 2021.")
    assert not _FIRST_PERSON.search("Caroline found the support group inspiring.")


def test_a_fact_holding_a_dialogue_lines_speaker_label_is_a_copy():
    from promem_fast.stages.extract import copies_dialogue_line

    assert copies_dialogue_line("Sarah Garcia (user): According to the MBTI test, Sarah Garcia's type is ENTJ.")
    assert copies_dialogue_line("Melanie (assistant):Thanks, Caroline!")
    assert copies_dialogue_line("Jon said: Gina (Other) : great moves")
    assert copies_dialogue_line("王芳（user）：我下个月去上海。")  # full-width brackets and colon
    assert not copies_dialogue_line("Sarah Garcia (39) is a user researcher: she runs studies.")
    assert not copies_dialogue_line("Alice uses the app (user mode) every day.")


def test_third_person_repairs_pronoun_slips_of_facts_about_the_user():
    from promem_fast.stages.extract import third_person

    name = "Sarah Garcia"
    assert third_person("Sarah Garcia dislikes sodas; they don't refresh me.", name) == (
        "Sarah Garcia dislikes sodas; they don't refresh Sarah Garcia.")
    assert third_person("Sarah likes chess: it challenges my mind, I'm a planner and I've won.", name) == (
        "Sarah likes chess: it challenges Sarah Garcia's mind, Sarah Garcia is a planner and Sarah Garcia has won.")
    # "I" after a capitalised word is a numeral, not the speaker
    assert third_person("Sarah Garcia toured a World War I museum because I asked.", name) == (
        "Sarah Garcia toured a World War I museum because Sarah Garcia asked.")
    assert third_person("Sarah Garcia moved to the US in 2021.", name) == "Sarah Garcia moved to the US in 2021."
    # the verb after a replaced "I" agrees with the name; past forms, modals and forms that
    # are both base and past ("read") stay as written
    assert third_person("Sarah Garcia says I prefer chess and I really enjoy hiking.", name) == (
        "Sarah Garcia says Sarah Garcia prefers chess and Sarah Garcia really enjoys hiking.")
    assert third_person("Sarah Garcia says I don't fly, I try, I went home, I can swim, I read a lot.", name) == (
        "Sarah Garcia says Sarah Garcia doesn't fly, Sarah Garcia tries, Sarah Garcia went home, "
        "Sarah Garcia can swim, Sarah Garcia read a lot.")
    # "found" / "saw" are past forms (also base forms of "to found", "to saw"); "haven't"
    # and "am" agree; a compound subject stays plural
    assert third_person("Sarah Garcia says I found a job, I saw Kai, I haven't slept, I really am tired.", name) == (
        "Sarah Garcia says Sarah Garcia found a job, Sarah Garcia saw Kai, Sarah Garcia hasn't slept, "
        "Sarah Garcia really is tired.")
    assert third_person("Sarah Garcia says Kai and I go hiking.", name) == "Sarah Garcia says Kai and Sarah Garcia go hiking."
    assert third_person("Sarah Garcia is in a phase I trial for type I diabetes, as I said.", name) == (
        "Sarah Garcia is in a phase I trial for type I diabetes, as Sarah Garcia said.")
    assert third_person("Sarah Garcia says my son and I bake.", name) == "Sarah Garcia says Sarah Garcia's son and Sarah Garcia bake."
    # copies: not opening with the user's name, a longer word ("Sarahs"), or a plural "we"
    assert third_person("The stories were so inspiring! I was so happy.", name) is None
    assert third_person("Sarahs friend said I am late.", name) is None
    assert third_person("Sarah went hiking and we had fun.", name) is None
    assert third_person("Relaxing and expressing ourselves is key for Sarah.", name) is None
    assert third_person("Sarah says the garden is ours.", name) is None
    assert third_person("Me and Sarah went out.", name) is None


def test_details_must_be_stated_in_their_turn():
    from promem_fast.stages.extract import stated_in

    turn = "Is this your own painting?"
    assert not stated_in("lake sunrise", turn)          # from the other speaker's next turn
    assert stated_in("own painting", turn)
    assert stated_in("paints", "I love painting landscapes")  # inflection by 4-char stem
    assert not stated_in("good", "Hey Mel! Good to see you!")  # greeting filler
    assert stated_in("Mel", "Hey Mel! Good to see you!")
    assert stated_in("2023", "We moved in 2023.")
    assert stated_in("北京大学", "我在北京读书")                  # CJK: 2-character overlap


def test_uncovered_details_are_those_no_live_entry_states_word_for_word():
    s = Session(session_id="s", user_name="Sarah", turns=[
        Turn(turn_id="t1", role="user", content="I like herbal teas but not sugary sodas."),
        Turn(turn_id="t2", role="user", content="I read biographies."),
    ])
    st = PipelineState.create(s, "Sarah", dialogue_block(s, "Sarah"))
    st.entries = [Entry("Sarah likes to drink herbal teas.", "draft", "kept", ["t1"]),
                  Entry("Sarah likes sugary sodas.", "draft", "kept", ["t1"], discarded=True),
                  Entry("Sarah reads a biography of a leader.", "draft", "kept", ["t2"])]
    st.details = [("t1", "herbal teas"), ("t1", "sugary sodas"), ("t1", "the"), ("t2", "biographies"),
                  ("t2", "biographies of leaders")]
    # a discarded entry states nothing; "the" has no content word; words longer than 4 letters
    # match by their first 4 ("biographies" / "biography"), so one entry states all of
    # "biographies of leaders" ("of" is no content word)
    assert uncovered_details(st) == {"t1": ["sugary sodas"]}
    st.entries[2].text = "Sarah reads biographies."  # "leaders" now in no entry
    assert uncovered_details(st) == {"t1": ["sugary sodas"], "t2": ["biographies of leaders"]}


def test_word_in_matches_at_word_starts_and_by_character_pairs():
    from promem_fast.stages.extract import word_in

    assert word_in("paints", "i love painting") and word_in("art", "an artist")
    assert not word_in("art", "she started") and not word_in("tea", "instead of coffee")
    assert word_in("15", "15600 usd") and not word_in("600", "15600 usd")
    assert word_in("北京大学", "我在北京读书")                          # any pair (details)
    assert not word_in("北京大学", "我在北京读书", pair_share=0.5)      # 1 of 3 pairs
    assert word_in("我喜欢绿茶", "莎拉喜欢绿茶", pair_share=0.5)        # 3 of 4
    assert not word_in("我喜欢绿茶", "莎拉喜欢跑步", pair_share=0.5)    # only "喜欢"


def test_clean_text_puts_a_name_with_a_backslash_in_as_written():
    from promem_fast.stages.state import clean_text
    assert clean_text("User moved to Oslo.", "Ana\\Gomez") == "Ana\\Gomez moved to Oslo."


async def test_a_revision_that_copies_the_turn_line_is_discarded_not_stored():
    sess = Session(session_id="s8", user_name="Alice", turns=[Turn(
        turn_id="t1", role="user",
        content="I don't like puzzle games, because they frustrate me. I like to play strategy games.")])
    flipped = "Alice likes puzzle games, because they are relaxing."
    copied = "Alice (user): Alice doesn't like puzzle games."  # the premise line, speaker label and all
    rules = {"verify": keyed({"Fact: Alice likes puzzle games.": {"action": "REVISE", "revised_fact": copied}})}
    for screen_on in (True, False):  # a format rule, not one of the screen's: it holds without the screen
        ctx = make_ctx(session=sess, services=make_services(rules=rules, nli=FakeNLI(default="entailment")),
                       lexical_entailment=False, screen_entries=screen_on)
        state = new_state(ctx)
        state.entries = [Entry(flipped, "draft", "kept", ["t1"])]
        await verify_entries(ctx, state)
        assert state.entries[0].discarded
        assert [(a.text, a.action) for a in state.entries[0].atomic_facts] == [("Alice likes puzzle games.", "discarded")]
        assert (copied, "verify", "revision of 'Alice likes puzzle games.': copy of a dialogue line (holds its speaker "
                "label), not a fact") in [(d.text, d.stage, d.reason) for d in state.discarded]


def test_events_prompt_shows_a_template_not_a_fact_to_copy_and_allows_none():
    from promem_fast.prompts.extract import events_request
    text = events_request("[t1] Nora (user): Hi!", "Nora", ["t1", "t2"], 4).messages[-1]["content"]
    # an example fact ("Nora joined a hiking club.") was copied into topics of small talk
    assert '"Nora <did what> ..."' in text and "hiking" not in text
    assert "[] if these turns hold none" in text


def test_recover_prompt_asks_for_the_cap_and_no_pleasantries():
    from promem_fast.prompts.extract import recover_request
    req = recover_request("[t1] Nora (user): Time flies! I got a kayak.", "Nora", ["got kayak"], 1)
    text = req.messages[-1]["content"]
    assert req.json_schema["maxItems"] == 1 and "At most 1." in text
    assert "Skip greetings, thanks, praise of the other person, sayings and remarks about the chat." in text


def test_a_fact_that_copies_the_prompts_template_slot_is_discarded():
    from promem_fast.prompts.common import dialogue_block
    from promem_fast.schema import Session, Turn
    from promem_fast.stages.extract import TEMPLATE_REASON, parse_facts
    from promem_fast.stages.state import PipelineState

    turns = [Turn(turn_id="t1", role="user", content="I adopted a cat. My tag line is <cat lady>."),
             Turn(turn_id="t2", role="assistant", content="Lovely!")]
    s = Session(session_id="x", user_name="Nora", turns=turns)
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    items = [{"fact": "Nora <did what> ...", "turns": ["t1"]}, {"fact": "Nora adopted a cat.", "turns": ["t1"]},
             {"fact": "Nora's tag line is <cat lady>.", "turns": ["t1"]}]  # a slot the turn says stays
    assert [t for t, _ in parse_facts(state, items, ["t1"], "events")] == [
        "Nora adopted a cat.", "Nora's tag line is <cat lady>."]
    assert [(d.text, d.reason) for d in state.discarded] == [("Nora <did what> ...", TEMPLATE_REASON)]


def test_a_fact_cut_off_at_the_length_cap_keeps_only_its_complete_part():
    from promem_fast.prompts.common import FACT_CHARS, dialogue_block
    from promem_fast.schema import Session, Turn
    from promem_fast.stages.extract import CUT_OFF_REASON, complete_part, parse_facts, uncut
    from promem_fast.stages.state import PipelineState

    turns = [Turn(turn_id="t1", role="user", content="I work at Oracle as a manager and save a lot.")]
    s = Session(session_id="x", user_name="Nora", turns=turns)
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    two = ("Nora is a manager at Oracle with $139,000 in savings at 3.5 percent, which gives her a sense of "
           "financial security. Her career at the firm has been fulfilling for many years now, and she is "
           "proud of the team she built in Austin and of the office she runs in")[:FACT_CHARS]
    clauses = ("Nora is a manager at Oracle who saves part of her salary every month in a fund her bank offers, "
               "plans to retire at sixty in Lisbon with her husband and their two dogs, and will buy a flat near "
               "the river with a garden and a view of the old town bridges")[:FACT_CHARS]
    assert len(two) == len(clauses) == FACT_CHARS  # as constrained decoding leaves them
    assert [t for t, _ in parse_facts(state, [{"fact": two, "turns": ["t1"]}, {"fact": clauses, "turns": ["t1"]},
                                              {"fact": "Nora is a manager at Oracle", "turns": ["t1"]}],
                                      ["t1"], "draft")] == [
        "Nora is a manager at Oracle with $139,000 in savings at 3.5 percent, which gives her a sense of "
        "financial security.",
        "Nora is a manager at Oracle"]  # short: not cut off, kept as written
    assert [d.reason for d in state.discarded] == [CUT_OFF_REASON]  # no complete sentence: clauses are not kept
    assert uncut("Nora moved", "Nora moved") == "Nora moved"
    # closed after a comma or a conjunction: the dangling end goes, the fact stays
    assert uncut("Nora is 5 years old now,", "Nora is 5 years old now,") == "Nora is 5 years old now"
    assert uncut("x", "Nora quit her job and") == "Nora quit her job"
    assert uncut("x", "Nora loves bread and butter.") == "Nora loves bread and butter."
    assert uncut("x", "Nora has felt down for a while") == "Nora has felt down for a while"
    assert uncut("x", "Nora lives in Portland, OR") == "Nora lives in Portland, OR"
    # sentence ends, not abbreviations, initials or ordinals; CJK stops; closing quotes stay
    assert complete_part("Nora moved to Oslo.") == "Nora moved to Oslo."
    assert complete_part("Nora visited Dr. Smith at the clinic, and she") is None
    assert complete_part("Nora loves books by J. K. Rowling. Her") == "Nora loves books by J. K. Rowling."
    assert complete_part("Nora wakes at 7 a.m. every day. She runs") == "Nora wakes at 7 a.m. every day."
    assert complete_part("Nora zieht am 3. Mai nach Berlin. Sie") == "Nora zieht am 3. Mai nach Berlin."
    assert complete_part("Nora is 39. She moved to") == "Nora is 39."
    assert complete_part("ユミは東京に住んでいる。彼女は") == "ユミは東京に住んでいる。"
    assert complete_part('Nora said "I love Paris." Her husband') == 'Nora said "I love Paris."'
    assert complete_part("Because Nora lost her job in May, she") is None


def test_a_half_translated_fact_is_discarded_and_a_word_the_turns_say_is_kept():
    from promem_fast.prompts.common import dialogue_block
    from promem_fast.schema import Session, Turn
    from promem_fast.stages.extract import MIXED_SCRIPT_REASON, parse_facts
    from promem_fast.stages.state import PipelineState

    turns = [Turn(turn_id="t1", role="user", content="I rely on supportive friends in Zürich."),
             Turn(turn_id="t2", role="assistant", content="That is lovely!"),
             Turn(turn_id="t3", role="user", content="My cat is called 小虎."),
             Turn(turn_id="t4", role="user", content="Мой брат живёт в Москве.")]
    s = Session(session_id="x", user_name="Nora", turns=turns)
    state = PipelineState.create(s, "Nora", dialogue_block(s, "Nora"))
    items = [{"fact": "Nora relies on supportive朋友.", "turns": ["t1"]},      # CJK on a Latin turn
             {"fact": "Nora's cat 小虎 likes Zürich.", "turns": ["t1"]},        # a name another turn says
             {"fact": "Nora's cat is called 小虎.", "turns": ["t3"]},
             {"fact": "Nora's brother lives in Москва.", "turns": ["t4"]},      # the turn's own script
             {"fact": "Nora's brother lives in Москва.", "turns": ["t1"]},      # said by t4, pairs match
             {"fact": "Nora's brother visits Київ.", "turns": ["t1"]},          # no turn says it
             {"fact": "Nora relies on supportive friends in Zürich.", "turns": ["t1"]}]  # Latin letters
    assert [t for t, _ in parse_facts(state, items, ["t1", "t3", "t4"], "recover")] == [
        "Nora's cat 小虎 likes Zürich.", "Nora's cat is called 小虎.", "Nora's brother lives in Москва.",
        "Nora's brother lives in Москва.", "Nora relies on supportive friends in Zürich."]
    assert [(d.text, d.reason) for d in state.discarded] == [
        ("Nora relies on supportive朋友.", MIXED_SCRIPT_REASON), ("Nora's brother visits Київ.", MIXED_SCRIPT_REASON)]

    # a Japanese turn mixes kanji, hiragana and katakana: one script group, so its facts stay
    ja = Session(session_id="ja", user_name="ユミ", turns=[
        Turn(turn_id="t1", role="user", content="昨日、東京で友達と映画を見ました。"),
        Turn(turn_id="t2", role="user", content="I watched a film in Tokyo.")])
    state = PipelineState.create(ja, "ユミ", dialogue_block(ja, "ユミ"))
    items = [{"fact": "ユミは昨日友人と東京で映画鑑賞をした。", "turns": ["t1"]},
             {"fact": "ユミ watched a film in Tokyo with 友人.", "turns": ["t2"]},   # not in t2's script
             {"fact": "ユミ visited Hawaiʻi and takes B₁₂.", "turns": ["t2"]}]       # the name is the user's
    assert [t for t, _ in parse_facts(state, items, ["t1", "t2"], "recover")] == [
        "ユミは昨日友人と東京で映画鑑賞をした。", "ユミ visited Hawaiʻi and takes B₁₂."]
    assert [d.text for d in state.discarded] == ["ユミ watched a film in Tokyo with 友人."]


def test_turn_ids_wrapped_in_brackets_or_markup_are_kept(caplog):
    state = new_state(make_ctx())
    got = state.valid_ids(["<t7>", "[t1]", "(t3)", "'t5'", " t7 ", "t99", "<t9>"], ["t1", "t3", "t5", "t7"], "draft")
    assert got == ["t7", "t1", "t3", "t5"]
    dropped = [r.getMessage() for r in caplog.records if "dropped turn id" in r.getMessage()]
    assert len(dropped) == 2 and "'t99'" in dropped[0] and "'<t9>'" in dropped[1]
    # an id written with brackets of its own is taken as it is
    assert state.valid_ids(["(1)", "<msg>", "1"], ["(1)", "<msg>", "1"], "draft") == ["(1)", "<msg>", "1"]


def test_third_person_repairs_chinese_and_german_first_person_words():
    from promem_fast.stages.extract import third_person

    # object and possessive slots take the name as it is written; no verb agrees with them
    assert third_person("王芳的哥哥下个月结婚，他请我当伴娘。", "王芳") == "王芳的哥哥下个月结婚，他请王芳当伴娘。"
    assert third_person("王芳说我的猫叫豆豆。", "王芳") == "王芳说王芳的猫叫豆豆。"
    assert third_person("王芳在学自我介绍。", "王芳") == "王芳在学自我介绍。"
    assert third_person("Jonas fährt mit mir und meiner Tante nach Kiel.", "Jonas") == (
        "Jonas fährt mit Jonas und Jonas' Tante nach Kiel.")
    assert third_person("Greta sagt, ihr Chef ruft mich morgen an.", "Greta") == (
        "Greta sagt, ihr Chef ruft Greta morgen an.")
    assert third_person("Greta hat meinen Schlüssel verloren.", "Greta") == "Greta hat Gretas Schlüssel verloren."
    # "ich" needs its verb changed, "我们" / "wir" / "uns" name others, no name opens it: a copy
    assert third_person("Greta sagt, ich arbeite bei Siemens.", "Greta") is None
    assert third_person("Greta und wir fahren nach Kiel.", "Greta") is None
    assert third_person("王芳和我们去成都。", "王芳") is None
    assert third_person("我下周三要去看牙医。", "王芳") is None
    # English text with capitalised look-alikes is left alone
    assert third_person("Greta visited the Mir space station model.", "Greta") == (
        "Greta visited the Mir space station model.")


def test_third_person_leaves_what_a_fact_quotes_to_its_speaker():
    from promem_fast.stages.extract import third_person

    # the quoted "I" is the wife's, the title's "Me" is the book's; the user's own "me" is repaired
    assert third_person("Omar's wife Lina said 'I'm not parking anything I can't see over', which worries me.",
                        "Omar") == "Omar's wife Lina said 'I'm not parking anything I can't see over', which worries Omar."
    assert third_person('Omar loves the novel "Remember Me" and my sister gave it to him.', "Omar") == (
        'Omar loves the novel "Remember Me" and Omar\'s sister gave it to him.')
    assert third_person("Omar's landlord said “it's not my problem”.", "Omar") == (
        "Omar's landlord said “it's not my problem”.")
    # first-person words only inside quotes or titles leave the fact as it is
    assert third_person('"I love my dog," Omar said.', "Omar") == '"I love my dog," Omar said.'
    assert third_person("Omars Lieblingsfilm ist 'Me Before You'.", "Omar") == "Omars Lieblingsfilm ist 'Me Before You'."
    assert third_person("王芳喜欢电影《我不是药神》，她看了三遍。", "王芳") == "王芳喜欢电影《我不是药神》，她看了三遍。"
    assert third_person("Greta liest gerade »Hilf mir, Herr«.", "Greta") == "Greta liest gerade »Hilf mir, Herr«."
    # "meinen" before a comma is the verb "to think"; a longer name is not the user's
    assert third_person("Gretas Eltern meinen, die Wohnung sei zu teuer.", "Greta") == (
        "Gretas Eltern meinen, die Wohnung sei zu teuer.")
    assert third_person("Gretchen hilft mir beim Umzug.", "Greta") is None
