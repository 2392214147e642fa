import json
from datetime import datetime
from pathlib import Path

import promem_fast
from promem_fast.schema import Event, MemoryGraph, Session, Turn, json_schema

SCHEMA_FILE = Path(promem_fast.__file__).parent / "schemas" / "memory_graph.schema.json"


def test_published_schema_is_current():
    # regenerate with: python -m promem_fast schema > promem_fast/schemas/memory_graph.schema.json
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


def test_graph_round_trip_and_validates_against_schema():
    import jsonschema

    g = MemoryGraph(
        session_id="s1", user_name="Zoë", variant="promem",
        events=[Event(id="e1", text="Zoë moved to Lyon.", origin="draft", status="kept",
                      source_turn_ids=["t0"], dates=["2023-05-07"], timestamp=datetime(2023, 5, 8, 13, 56))],
    )
    data = json.loads(g.to_json())
    jsonschema.validate(data, json_schema())
    assert MemoryGraph.from_json(g.to_json()) == g


def test_nfc_normalisation_of_names_and_text():
    decomposed = "Zoe\u0301"  # e + combining acute
    t = Turn(turn_id="t0", role="user", content=f"I am {decomposed}", speaker=decomposed)
    s = Session(session_id="s", user_name=decomposed, turns=[t])
    assert s.user_name == "Zo\u00e9" and t.speaker == "Zo\u00e9" and t.content == "I am Zo\u00e9"
