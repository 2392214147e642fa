"""Detail anchoring (ProMem §3.5): a detail attaches to every memory entry that shares its
turn id (the entry's source turns, including the turn it was grounded to in §3.4). No LLM."""

from __future__ import annotations

from typing import Hashable, Sequence

from .state import Entry


def entry_turns(entry: Entry) -> set[str]:
    """Turn ids an entry is tied to: its source turns plus its grounding turn."""
    s = set(entry.source_turn_ids)
    if entry.ground_turn_id:
        s.add(entry.ground_turn_id)
    return s


def anchor_details(details: Sequence[tuple[str, str]], entries: Sequence[tuple[Hashable, Entry]]) -> list[list[Hashable]]:
    """For each (turn_id, text) detail, the ids of the entries sharing its turn.

    Args:
        details: (turn_id, detail text) pairs.
        entries: (key, entry) pairs in output order (key: event id or entry index).

    Returns:
        One list of keys per detail, in ``entries`` order.
    """
    turns = [(eid, entry_turns(e)) for eid, e in entries]
    return [[eid for eid, ts in turns if tid in ts] for tid, _ in details]
