"""Detail anchoring (ProMem §3.5): a detail attaches to every memory entry that shares its
turn id (the entry's source turns, including the turn it was grounded to in §3.4). No LLM.

The paper leaves a detail whose turn no verified entry shares unanchored. On templated
dialogues the content often comes one turn after the turn an entry is grounded to ("I'd like
to share my reading preference" / "I like adventure novels ..."), so such details would drop
out of retrieval. With ``topics`` given (the §3.2 topic segments), such a detail attaches to
the entries of its own topic segment nearest to it in turn position (not in the paper;
``PipelineConfig.anchor_within_topic``).
"""

from __future__ import annotations

from typing import Hashable, Mapping, Optional, Sequence

from .state import Entry

TURN, TOPIC = "turn", "topic"


def entry_turns(entry: Entry) -> set[str]:
    """Turn ids an entry is tied to: its source turns plus its grounding turn."""
    s = set(entry.source_turn_ids)
    if entry.ground_turn_id:
        s.add(entry.ground_turn_id)
    return s


def anchor_details(
    details: Sequence[tuple[str, str]],
    entries: Sequence[tuple[Hashable, Entry]],
    topics: Optional[Sequence[Sequence[str]]] = None,
    turn_pos: Optional[Mapping[str, int]] = None,
) -> list[tuple[list[Hashable], Optional[str]]]:
    """For each (turn_id, text) detail, the keys of the entries it is anchored to and how.

    Args:
        details: (turn_id, detail text) pairs.
        entries: (key, entry) pairs in output order (key: event id or entry index).
        topics: topic segments, each a list of turn ids (``PipelineState.topics``); None: the
            paper's turn-id rule only.
        turn_pos: turn id -> position in the session (``PipelineState.turn_pos``); required
            with ``topics``.

    Returns:
        One (keys, how) pair per detail: keys in ``entries`` order; how is ``"turn"`` (shared
        turn id, §3.5), ``"topic"`` (nearest entries of the detail's topic segment) or None
        (unanchored).

    Raises:
        ValueError: ``topics`` given without ``turn_pos``.
    """
    if topics is not None and turn_pos is None:
        raise ValueError("anchor_details: turn_pos is required with topics")
    turns = [(eid, entry_turns(e)) for eid, e in entries]
    topic_of = {tid: k for k, seg in enumerate(topics or []) for tid in seg}
    out: list[tuple[list[Hashable], Optional[str]]] = []
    for tid, _ in details:
        keys = [eid for eid, ts in turns if tid in ts]
        if keys:
            out.append((keys, TURN))
            continue
        k = topic_of.get(tid)
        if k is None or tid not in turn_pos:
            out.append(([], None))
            continue
        seg = set(topics[k])
        # distance of each entry to the detail: its nearest turn inside the segment
        dist = {
            eid: min(abs(turn_pos[t] - turn_pos[tid]) for t in ts & seg if t in turn_pos)
            for eid, ts in turns if any(t in turn_pos for t in ts & seg)
        }
        if not dist:
            out.append(([], None))
            continue
        best = min(dist.values())
        out.append(([eid for eid, _ in turns if dist.get(eid) == best], TOPIC))
    return out
