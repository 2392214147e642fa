"""Retrieval units built from memory graphs (qa.memory_units)."""

from __future__ import annotations

from datetime import datetime

from promem_fast.qa import memory_units
from promem_fast.schema import Detail, Event, MemoryGraph, Relation


def _graph() -> MemoryGraph:
    ts = datetime(2025, 9, 6, 10, 0)
    return MemoryGraph(
        session_id="s3", user_name="Sarah", variant="promem",
        events=[
            Event(id="e1", text="Sarah likes uplifting pop music.", origin="draft", status="kept",
                  source_turn_ids=["t3", "t5"], timestamp=ts),
            Event(id="e2", text="Sarah dislikes heavy metal.", origin="event", status="recovered",
                  source_turn_ids=["t5"], dates=["2025-09-01"], timestamp=ts),
        ],
        details=[
            Detail(id="d1", text="uplifting pop music", turn_id="t3", event_ids=["e1"]),
            Detail(id="d2", text="Uplifting pop music", turn_id="t5", event_ids=["e1", "e2"]),
            Detail(id="d3", text="heavy metal", turn_id="t5", event_ids=["e1", "e2"]),
        ],
        relations=[Relation(source="e1", type="temporal", target="e2")],
    )


def test_units_carry_details_once_relations_and_dates():
    u1, u2 = memory_units([_graph()])
    # the same phrase from two turns (any case) is listed once, first spelling kept
    assert u1.text == (
        "Sarah likes uplifting pop music. Details: uplifting pop music; heavy metal."
        " Related: temporal: 'Sarah likes uplifting pop music.' -> 'Sarah dislikes heavy metal.'."
    )
    assert u1.when == "2025-09-06" and u1.render().startswith("[2025-09-06] Sarah likes")
    assert u2.text.startswith("Sarah dislikes heavy metal. Details: Uplifting pop music; heavy metal.")
    assert u2.when == "2025-09-01"  # a resolved date wins over the turn timestamp
    assert (u1.session_id, u1.event_id, u2.event_id) == ("s3", "e1", "e2")


def test_graph_without_events_gives_no_units():
    g = _graph().model_copy(update={"events": [], "relations": []})
    assert memory_units([g]) == []


def test_unit_text_ends_the_event_sentence_before_its_details():
    g = _graph()
    g.events[0].text = "Sarah Garcia is a Female "
    g.events[1].text = "莎拉不喜欢重金属。"
    u1, u2 = memory_units([g])
    assert u1.text.startswith("Sarah Garcia is a Female. Details: uplifting pop music;")
    assert u2.text.startswith("莎拉不喜欢重金属。 Details:")  # a full stop of any script ends it
    bare = g.model_copy(update={"details": [], "relations": []})
    assert [u.text for u in memory_units([bare])] == ["Sarah Garcia is a Female", "莎拉不喜欢重金属。"]  # nothing follows: text as stored
