"""Prompts of the first ProMem version (promem-notes-zh.md): initial extraction, supplementary
extraction for uncovered turns, and self-questioning evidence verification."""

from __future__ import annotations

from typing import Sequence

from ..backends.base import LLMRequest
from .common import FACT_CHARS, id_list, session_messages
from .extract import _facts_schema, draft_request, facts_max_tokens

EVIDENCE_MAX_TOKENS = 200

EVIDENCE_SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "maxLength": 200},
        "evidence_turn": {"anyOf": [{"type": "string", "maxLength": 40}, {"type": "null"}]},
        "supported": {"type": "boolean"},
        "fact": {"anyOf": [{"type": "string", "maxLength": FACT_CHARS}, {"type": "null"}]},
    },
    "required": ["question", "evidence_turn", "supported", "fact"],
    "additionalProperties": False,
}


def initial_request(block: str, user_name: str, max_facts: int) -> LLMRequest:
    """M_init = LLM(D, P_extract): the same personal-fact extraction as the v2 draft."""
    return draft_request(block, user_name, max_facts)


def supplement_request(block: str, user_name: str, turn_ids: Sequence[str], max_facts: int) -> LLMRequest:
    """M_supp = LLM(D_miss, P_supp): facts from the turns no memory entry covers."""
    instr = (
        f"The memory missed turns {id_list(turn_ids)}. List the facts about {user_name} in "
        f"those turns only, one standalone sentence each with {user_name} as subject, with "
        f'turn ids. At most {max_facts}. JSON: [{{"fact": "...", "turns": ["<turn id>"]}}]'
    )
    return LLMRequest(session_messages(block, instr), _facts_schema(max_facts), facts_max_tokens(max_facts), stage="coverage")


def evidence_request(block: str, entry: str) -> LLMRequest:
    """Self-questioning: ask which turn supports the entry, then answer from the dialogue.

    Output ``{"question", "evidence_turn", "supported", "fact"}``; ``fact`` restates the entry
    as the evidence supports it (m_new).
    """
    instr = (
        f"Memory entry: {entry}\nAsk yourself a question that checks this entry, find the turn "
        "that answers it, and say whether the dialogue supports the entry. If supported, give "
        "the fact as that turn states it. JSON: {\"question\": \"...\", \"evidence_turn\": "
        '"<turn id>" or null, "supported": true or false, "fact": "..." or null}'
    )
    return LLMRequest(session_messages(block, instr), EVIDENCE_SCHEMA, EVIDENCE_MAX_TOKENS, stage="evidence")
