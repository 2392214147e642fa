"""Cross-session consolidation on scripted cases (issue 6 §2, §5)."""

from __future__ import annotations

import pytest

from promem_fast.backends.llm.scripted import ScriptedLLM
from promem_fast.store import AsyncMemory, StoreConfig
from promem_fast.store.consolidate import subject_of, subjects_compatible
from promem_fast.store.memory import InvalidInput

from _store_helpers import ScriptedNLI, graph, services


def make(tmp_path, nli: ScriptedNLI, llm=None, **cfg) -> AsyncMemory:
    return AsyncMemory(services=services(nli, llm), path=str(tmp_path / "mem"), store_config=StoreConfig(**cfg))


TEA = "Alice prefers green tea in the morning."
COFFEE = "Alice prefers black coffee in the morning."


async def test_changed_preference_supersedes_old_and_answer_uses_new(tmp_path):
    nli = ScriptedNLI()
    nli.set(TEA, COFFEE, "contradiction")
    seen_prompts = []

    def qa(req):
        prompt = req.messages[-1]["content"]
        seen_prompts.append(prompt)
        # answer with the drink of the first memory line that mentions a preference
        line = next(l for l in prompt.splitlines() if "prefers" in l)
        drink = line.split("prefers ", 1)[1].split(" in the", 1)[0]
        return '{"answer": "%s"}' % drink

    m = make(tmp_path, nli, ScriptedLLM(rules={"qa": qa}))
    r1 = await m.add_graph(graph("s1", [(TEA, "2023-05-01")]), user_id="alice")
    r2 = await m.add_graph(graph("s2", [(COFFEE, "2023-06-10")]), user_id="alice")
    old_id, new_id = r1["results"][0]["id"], r2["results"][0]["id"]
    assert r1["results"][0]["event"] == "ADD"
    assert r2["results"][0]["event"] == "UPDATE"
    assert r2["results"][0]["previous_memory"] == TEA

    old, new = await m.get(old_id), await m.get(new_id)
    assert old["status"] == "superseded" and old["superseded_by"] == new_id
    assert old["valid_to"] == "2023-06-10" and old["valid_from"] == "2023-05-01"
    assert new["status"] == "active" and new["supersedes"] == old_id and new["valid_to"] is None

    hist = await m.history(new_id)
    texts = {(h["old_memory"], h["new_memory"]) for h in hist}
    assert (TEA, COFFEE) in texts
    assert [h["event"] for h in hist] == ["ADD", "SUPERSEDED", "UPDATE"]
    assert await m.history(old_id) == hist  # the chain reads the same from either end

    active = (await m.search("What does Alice prefer in the morning?", user_id="alice"))["results"]
    assert [r["memory"] for r in active] == [COFFEE]
    everything = (await m.search("What does Alice prefer?", user_id="alice", filters={"status": "all"}))["results"]
    assert {r["memory"] for r in everything} == {TEA, COFFEE}

    ans = await m.answer("What does Alice drink in the morning?", user_id="alice")
    assert ans["answer"] == "black coffee"
    assert COFFEE in seen_prompts[-1] and TEA not in seen_prompts[-1]


async def test_changed_number_keeps_exact_values(tmp_path):
    a = "Alice's monthly rent is 1,234.56 dollars."
    b = "Alice's monthly rent is 1,310.40 dollars."
    nli = ScriptedNLI()
    nli.set(a, b, "contradiction")
    m = make(tmp_path, nli)
    r1 = await m.add_graph(graph("s1", [(a, "2023-01-01")], entail_score=0.8731), user_id="alice")
    r2 = await m.add_graph(graph("s2", [(b, "2024-01-01")], entail_score=0.9123), user_id="alice")
    old, new = await m.get(r1["results"][0]["id"]), await m.get(r2["results"][0]["id"])
    assert old["memory"] == a and new["memory"] == b
    assert old["status"] == "superseded" and new["status"] == "active"
    assert old["confidence"] == 0.8731 and new["confidence"] == 0.9123
    hist = await m.history(new["id"])
    upd = [h for h in hist if h["event"] == "UPDATE"][0]
    assert (upd["old_memory"], upd["new_memory"]) == (a, b)
    # evidence of the decision is kept on the new entry
    ev = [v for v in new["nli"] if v.get("stage") == "consolidation"]
    assert ev and ev[0]["against"] == old["id"] and "contradiction" in (ev[0]["forward"], ev[0]["backward"])


async def test_identical_fact_readded_gives_one_active_entry(tmp_path):
    fact = "Alice has a dog named Rex."
    nli = ScriptedNLI()
    m = make(tmp_path, nli)
    r1 = await m.add_graph(graph("s1", [(fact, "2023-03-01")]), user_id="alice")
    r2 = await m.add_graph(graph("s2", [(fact, "2023-04-01")]), user_id="alice")
    assert r2["results"][0]["event"] == "NONE" and r2["results"][0]["id"] == r1["results"][0]["id"]
    assert nli.calls == []  # exact duplicates never reach NLI
    allm = (await m.get_all(user_id="alice", filters={"status": "all"}))["results"]
    assert [x["memory"] for x in allm] == [fact]
    rec = await m.get(r1["results"][0]["id"])
    assert [p["session_id"] for p in rec["provenance"]] == ["s1", "s2"]  # both sources kept

    # re-adding the identical session is a no-op: same ids, no new provenance or history
    hist_before = await m.history(rec["id"])
    version = m.store.user_version("alice")
    r3 = await m.add_graph(graph("s2", [(fact, "2023-04-01")]), user_id="alice")
    assert [(x["id"], x["event"]) for x in r3["results"]] == [(rec["id"], "NONE")]
    assert m.store.user_version("alice") == version
    assert await m.history(rec["id"]) == hist_before
    assert len((await m.get(rec["id"]))["provenance"]) == 2


async def test_paraphrase_both_ways_entailed_is_merged(tmp_path):
    a, b = "Alice has a dog named Rex.", "Alice owns a dog called Rex."
    nli = ScriptedNLI()
    nli.set(a, b, "entailment")
    m = make(tmp_path, nli, match_threshold=0.2)
    r1 = await m.add_graph(graph("s1", [(a, None)]), user_id="alice")
    r2 = await m.add_graph(graph("s2", [(b, None)]), user_id="alice")
    assert r2["results"][0] == {"id": r1["results"][0]["id"], "memory": a, "event": "NONE", "status": "active"}
    assert (a, b) in nli.calls and (b, a) in nli.calls
    assert len((await m.get_all(user_id="alice"))["results"]) == 1
    hist = await m.history(r1["results"][0]["id"])
    assert [(h["event"], h["new_memory"]) for h in hist] == [("ADD", a), ("MERGE", b)]


async def test_one_way_entailment_is_not_a_merge(tmp_path):
    a, b = "Alice has a dog.", "Alice has a dog named Rex."
    nli = ScriptedNLI()
    nli.set(b, a, "entailment", both_ways=False)  # b implies a, not the reverse
    m = make(tmp_path, nli, match_threshold=0.2)
    await m.add_graph(graph("s1", [(a, None)]), user_id="alice")
    r2 = await m.add_graph(graph("s2", [(b, None)]), user_id="alice")
    assert r2["results"][0]["event"] == "ADD"
    assert sorted(x["memory"] for x in (await m.get_all(user_id="alice"))["results"]) == sorted([a, b])


async def test_unrelated_facts_both_stay_active(tmp_path):
    a, b = "Alice plays tennis on Sundays.", "Alice is learning Japanese."
    nli = ScriptedNLI()  # neutral for everything
    m = make(tmp_path, nli, match_threshold=-1.0)  # force the NLI check
    r1 = await m.add_graph(graph("s1", [(a, "2023-01-01")]), user_id="alice")
    r2 = await m.add_graph(graph("s2", [(b, "2023-02-01")]), user_id="alice")
    assert (r1["results"][0]["event"], r2["results"][0]["event"]) == ("ADD", "ADD")
    assert (a, b) in nli.calls and (b, a) in nli.calls
    got = (await m.get_all(user_id="alice"))["results"]
    assert sorted(x["memory"] for x in got) == sorted([a, b])
    assert all(x["status"] == "active" for x in got)


async def test_third_party_fact_never_supersedes_the_users(tmp_path):
    mine = "Alice works as a nurse at Mercy Hospital."
    friends = "Bob, Alice's friend, works as a teacher at Lincoln School."
    friends2 = "Alice's friend Bob works as a teacher at Lincoln School."
    nli = ScriptedNLI()
    # a careless judge calls these contradictions; the subject gate must keep them apart
    nli.set(mine, friends, "contradiction")
    nli.set(mine, friends2, "contradiction")
    m = make(tmp_path, nli, match_threshold=-1.0)
    r1 = await m.add_graph(graph("s1", [(mine, "2023-01-01")]), user_id="alice")
    r2 = await m.add_graph(graph("s2", [(friends, "2023-05-01"), (friends2, "2023-05-01")]), user_id="alice")
    assert [x["event"] for x in r2["results"]] == ["ADD", "ADD"]
    assert (mine, friends) not in nli.calls and (mine, friends2) not in nli.calls
    me = await m.get(r1["results"][0]["id"])
    assert me["status"] == "active" and me["subject"] == "@user"
    others = [await m.get(x["id"]) for x in r2["results"]]
    assert [o["subject"] for o in others] == ["bob", "alice's friend bob"]
    assert all(o["memory"] in (friends, friends2) for o in others)  # the graph's text, still attributed
    assert len((await m.get_all(user_id="alice"))["results"]) == 3


async def test_backfilled_older_session_does_not_override_newer_value(tmp_path):
    old_city, new_city = "Alice lives in Paris.", "Alice lives in Berlin."
    nli = ScriptedNLI()
    nli.set(old_city, new_city, "contradiction")
    m = make(tmp_path, nli, match_threshold=0.2)
    rb = await m.add_graph(graph("s-new", [(new_city, "2024-02-01")]), user_id="alice")
    rp = await m.add_graph(graph("s-old", [(old_city, "2022-07-01")]), user_id="alice")
    assert rp["results"][0]["status"] == "superseded"
    paris, berlin = await m.get(rp["results"][0]["id"]), await m.get(rb["results"][0]["id"])
    assert paris["superseded_by"] == berlin["id"] and paris["valid_to"] == "2024-02-01"
    assert berlin["status"] == "active"
    assert [r["memory"] for r in (await m.search("Where does Alice live?", user_id="alice"))["results"]] == [new_city]


async def test_consolidation_never_deletes(tmp_path):
    facts = ["Alice lives in Paris.", "Alice lives in Berlin.", "Alice lives in Rome."]
    nli = ScriptedNLI(default="contradiction")
    m = make(tmp_path, nli, match_threshold=0.2)
    for i, f in enumerate(facts):
        await m.add_graph(graph(f"s{i}", [(f, f"2023-0{i + 1}-01")]), user_id="alice")
    rows = (await m.get_all(user_id="alice", filters={"status": "all"}))["results"]
    assert [r["memory"] for r in rows] == facts
    assert [r["status"] for r in rows] == ["superseded", "superseded", "active"]
    assert rows[1]["supersedes"] == rows[0]["id"] and rows[2]["supersedes"] == rows[1]["id"]
    # the whole chain is one history
    assert {h["memory_id"] for h in await m.history(rows[2]["id"])} == {r["id"] for r in rows}


async def test_details_travel_with_their_event_unless_asked_for_as_entries(tmp_path):
    # d2 is anchored to no event: it goes with the event of its turn (t1); d3's turn grounds no event
    g = graph("s1", [("Alice adopted a puppy.", "2023-05-08"), ("Alice started puppy training.", "2023-05-20")],
              details=[("called Max", "t0", ["e1", "e2"]), ("clicker", "t1", []), ("went", "t7", [])])
    m = make(tmp_path, ScriptedNLI())
    res = await m.add_graph(g, user_id="alice")
    recs = [await m.get(r["id"]) for r in res["results"]]
    assert [(r["memory"], r["kind"], r["metadata"]["details"]) for r in recs] == [
        ("Alice adopted a puppy.", "event", ["called Max"]),
        ("Alice started puppy training.", "event", ["called Max", "clicker"])]
    with pytest.raises(InvalidInput, match="metadata.details"):
        await m.add_graph(g, user_id="alice", metadata={"details": "mine"})
    m2 = make(tmp_path / "with", ScriptedNLI(), include_details=True)
    res = await m2.add_graph(g, user_id="alice")
    assert [(await m2.get(r["id"]))["kind"] for r in res["results"]] == ["event", "event"] + ["detail"] * 3


async def test_a_merged_event_adds_its_details_to_the_kept_entry(tmp_path):
    m = make(tmp_path, ScriptedNLI())
    first = await m.add_graph(graph("s1", [("Alice adopted a puppy.", "2023-05-08")]), user_id="alice")
    again = await m.add_graph(graph("s2", [("Alice adopted a puppy.", "2023-05-08")],
                                    details=[("called Max", "t0", ["e1"])]), user_id="alice")
    assert [r["event"] for r in again["results"]] == ["NONE"]
    assert again["results"][0]["id"] == first["results"][0]["id"]
    assert (await m.get(first["results"][0]["id"]))["metadata"]["details"] == ["called Max"]


async def test_relations_and_details_are_stored_with_entry_ids(tmp_path):
    m = make(tmp_path, ScriptedNLI(), include_details=True)
    g = graph("s1", [("Alice adopted a puppy.", "2023-05-08"), ("Alice started puppy training.", "2023-05-20")],
              details=[("The puppy is called Max.", "t0", ["e1"])], relations=[("e1", "causal", "e2")])
    res = await m.add_graph(g, user_id="alice")
    ids = [r["id"] for r in res["results"]]
    assert len(ids) == 3
    rels = m.store.relations("alice")
    assert [(r["source"], r["type"], r["target"]) for r in rels] == [(ids[0], "causal", ids[1])]
    det = await m.get(ids[2])
    assert det["kind"] == "detail" and det["event_time"] == "2023-05-08" and det["source_turn_ids"] == ["t0"]


async def test_same_text_twice_in_one_graph_is_one_entry(tmp_path):
    m = make(tmp_path, ScriptedNLI(), include_details=True)
    g = graph("s1", [("Alice adopted a puppy.", "2023-05-08")], details=[("Alice adopted a puppy", "t0", ["e1"])])
    res = await m.add_graph(g, user_id="alice")
    assert [r["event"] for r in res["results"]] == ["ADD", "NONE"]
    assert res["results"][0]["id"] == res["results"][1]["id"]
    rec = await m.get(res["results"][0]["id"])
    assert [(p["graph_node_id"], p["text"]) for p in rec["provenance"]] == [
        ("e1", "Alice adopted a puppy."), ("d1", "Alice adopted a puppy")]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Alice works at Acme.", "@user"),
        ("Alice's favourite colour is blue.", "@user"),
        ("On 8 May 2023, Alice moved to Berlin.", "@user"),
        ("The user likes tea.", "@user"),
        ("Alice's friend Bob started working at Initech.", "alice's friend bob"),
        ("Bob, Alice's friend, works at Initech.", "bob"),
        ("Melanie painted a lake.", "melanie"),
        ("She likes tea.", None),
    ],
)
def test_subject_of(text, expected):
    assert subject_of(text, "Alice") == expected


def test_subjects_compatible():
    assert subjects_compatible("@user", "@user")
    assert not subjects_compatible("@user", "bob")
    assert subjects_compatible(None, "bob")
