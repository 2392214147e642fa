"""Stage-1 and draft prompts (ProMem §3.2-§3.3; Appendix Figures 9-12 intent).

Each builder returns an :class:`LLMRequest` with a JSON Schema for constrained decoding.
"""

from __future__ import annotations

from typing import Sequence

from ..backends.base import LLMRequest
from .common import PHRASE_CHARS, id_list, session_messages, standalone_messages, str_list_schema, text_schema

# Completion caps (tokens): the most a full, schema-bounded answer can need (~80 tokens per
# fact of <= 240 characters with its turn ids, ~18 per detail phrase), so a complete answer is never cut off.
FACT_TOKENS = 80
DETAIL_TOKENS = 18


def facts_max_tokens(max_items: int) -> int:
    """Completion cap (tokens) of a ``[{"fact", "turns"}]`` answer with ``max_items`` items."""
    return FACT_TOKENS * max_items + 40


def _facts_schema(max_items: int) -> dict:
    return {
        "type": "array",
        "maxItems": max_items,
        "items": {
            "type": "object",
            "properties": {
                "fact": text_schema(),
                "turns": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
            },
            "required": ["fact", "turns"],
            "additionalProperties": False,
        },
    }


def details_request(block: str, user_turn_ids: Sequence[str], max_per_turn: int) -> LLMRequest:
    """Fine-grained details of the user turns of one topic (Figure 9 intent, one call per topic).

    ``block`` holds only the topic's turns, so they are not repeated before the task (that
    cost ~400 prompt tokens per LoCoMo session); a detail filed under the wrong turn id is
    moved to the turn that states it in code (``refile_details``).
    Output JSON: ``{turn_id: ["short detail", ...]}`` restricted to ``user_turn_ids``.
    """
    schema = {
        "type": "object",
        "properties": {
            tid: str_list_schema(max_per_turn, PHRASE_CHARS) for tid in user_turn_ids
        },
        # strict keys: under constrained decoding the 1.5B model otherwise writes "1" for
        # "t1" (seen on the embedded model); code still drops unknown ids defensively
        "additionalProperties": False,
    }
    instr = (
        f"For each turn {id_list(user_turn_ids)}, list the specific details the user states in that turn: "
        "names, places, times, numbers, objects, preferences, as short phrases (2-6 words), "
        f"at most {max_per_turn} per turn; [] if none. Do not summarise. "
        'JSON: {"<turn id>": ["detail", ...]}'
    )
    return LLMRequest(session_messages(block, instr), schema,
                      (DETAIL_TOKENS * max_per_turn + 8) * len(user_turn_ids) + 20, stage="details")


def events_request(block: str, user_name: str, topic_turn_ids: Sequence[str], max_events: int) -> LLMRequest:
    """Macro events of one topic segment (Figure 10 intent). The sentence shape is shown as a
    template, not an example: the 1.5B model copied an example fact ("User joined a hiking
    club.") into 145 of the 539 topics of the labelled dev runs (greetings, small talk).

    Output JSON: ``[{"fact": sentence, "turns": [turn ids]}]``.
    """
    ids = list(topic_turn_ids)
    instr = (
        f"Turns {ids[0]} to {ids[-1]} share one topic. Write the main events of {user_name} in "
        "them: actions, states, plans, stories (big picture, not small details), each one "
        f"standalone third-person sentence about {user_name} in your own words (\"{user_name} "
        "<did what> ...\"; never copy a line), with the turn ids it comes from; at most "
        f'{max_events}; [] if these turns hold none. JSON: [{{"fact": "...", "turns": ["<turn id>"]}}]'
    )
    return LLMRequest(session_messages(block, instr), _facts_schema(max_events), facts_max_tokens(max_events), stage="events")


# [source, type, target]; the type is checked in code (causal|temporal) so that tuple
# schemas (prefixItems), which not every grammar converter supports, are not needed.
EDGE_TOKENS = 16  # one ["E12", "temporal", "E13"] item with its separator is 15 tokens for Qwen2.5
EDGE_CANDIDATES = 12  # edges asked for at least: remapping onto memory entries (§3.5) drops many


def relations_schema(max_edges: int) -> dict:
    """JSON Schema of a relations answer: at most ``max_edges`` ``[source, type, target]``
    triples of short strings ("E12", "temporal")."""
    return {
        "type": "array",
        "maxItems": max_edges,
        "items": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 3, "maxItems": 3},
    }


def relations_request(event_lines: Sequence[str], max_edges: int) -> LLMRequest:
    """Candidate causal / temporal edges between events (§3.2; Figure 11 intent: the model
    sees the event list only, not the dialogue; §3.5 then drops the edges the flat memory
    already answers and checks the rest against the dialogue).

    ``event_lines`` are ``"E1: text"`` lines; ``max_edges`` (>= 1) is the most edges asked
    for. Until 68fe352 the prompt opened with the session's dialogue: on the a625fc9 LoCoMo
    run, 1,230 prompt tokens per session, 524 of them uncached; the event list alone was 389
    (242 uncached) on the 68fe352 run.

    Output JSON: ``[["E1", "causal", "E2"], ...]``.

    Raises:
        ValueError: ``max_edges`` < 1.
    """
    if max_edges < 1:
        raise ValueError(f"relations_request: max_edges must be >= 1, got {max_edges}")
    instr = (
        "Events from one user's dialogue:\n" + "\n".join(event_lines) + "\n"
        'List clear links between these events: "causal" (A leads to B) or "temporal" '
        "(A happens before B). Only links the events themselves or common sense strongly support; "
        f'none if unrelated; at most {max_edges}. JSON: [["E1", "causal", "E2"]]'
    )
    return LLMRequest(standalone_messages(instr), relations_schema(max_edges), EDGE_TOKENS * max_edges + 10,
                      stage="relations")


def draft_request(block: str, user_name: str, max_facts: int) -> LLMRequest:
    """Initial memory draft over the whole session (Figure 12 intent).

    Output JSON: ``[{"fact": sentence, "turns": [turn ids]}]``.
    """
    instr = (
        f"List every fact about {user_name} in the dialogue: actions, states, plans, "
        f"preferences, people, dates. One standalone sentence each with {user_name} as "
        "subject, plus the turn ids it comes from. Skip greetings and filler. "
        f'At most {max_facts}. JSON: [{{"fact": "...", "turns": ["<turn id>"]}}]'
    )
    return LLMRequest(session_messages(block, instr), _facts_schema(max_facts), facts_max_tokens(max_facts), stage="draft")


def recover_request(turn: str, user_name: str, missing: Sequence[str], max_facts: int) -> LLMRequest:
    """Re-read one user turn whose details no memory entry states (completeness check on
    details; this engine's extension of §3.3). Short standalone prompt: only the turn. The
    turn comes first: with the instruction first and the turn line last (tried at 006b027 to
    share a cached prefix), the 1.5B model copied the line's "Name (user): ..." into facts.

    Args:
        turn: the turn's dialogue line (``turn_line``).
        user_name: subject of every fact.
        missing: the turn's details that no live entry states, shown as what to look for.
        max_facts: most facts in the answer (``PipelineConfig.recovered_facts_per_detail``
            per missing detail, at most ``max_recovered_facts``).

    Output JSON: ``["fact", ...]``, at most ``max_facts``.
    """
    quoted = "; ".join(f'"{m}"' for m in missing)
    instr = (
        f"Turn: {turn}\n"
        f"Memory so far does not say what this turn says about: {quoted}. Write each fact this turn "
        f"states about {user_name} (or about someone {user_name} tells about), one standalone sentence "
        f"each that names its subject ({user_name}, or that person and how they relate to {user_name}), "
        "with any negation and reason exactly as the turn states them, in the turn's language. "
        "Use only what the turn says; add nothing. Skip greetings, thanks, praise of the other person, "
        f'sayings and remarks about the chat. At most {max_facts}. JSON: ["...", "..."]'
    )
    return LLMRequest(standalone_messages(instr), str_list_schema(max_facts), facts_max_tokens(max_facts),
                      stage="recover")
