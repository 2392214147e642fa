"""Relation-verification prompts (ProMem §3.5; Figure 15 intent).

probe: standalone (two entries + relation); answerable: standalone over the flat memory
only (it must not see the dialogue); supported: session layout (dialogue prefix).
"""

from __future__ import annotations

from typing import Sequence

from ..backends.base import LLMRequest
from .common import QUESTION_CHARS, session_messages, standalone_messages, text_schema

PROBE_MAX_TOKENS = 80
ANSWERABLE_MAX_TOKENS = 90
SUPPORTED_MAX_TOKENS = 16

PROBE_SCHEMA = {
    "type": "object",
    "properties": {"question": text_schema(QUESTION_CHARS)},
    "required": ["question"],
    "additionalProperties": False,
}
ANSWERABLE_SCHEMA = {
    "type": "object",
    "properties": {"answerable": {"type": "boolean"}, "answer": text_schema(QUESTION_CHARS)},
    "required": ["answerable", "answer"],
    "additionalProperties": False,
}
SUPPORTED_SCHEMA = {
    "type": "object",
    "properties": {"supported": {"type": "boolean"}},
    "required": ["supported"],
    "additionalProperties": False,
}

_PHRASE = {"causal": "leads to", "temporal": "happens before"}


def relation_phrase(rel_type: str) -> str:
    """``causal`` -> "leads to", ``temporal`` -> "happens before"."""
    return _PHRASE.get(rel_type, rel_type)


def probe_request(a: str, rel_type: str, b: str) -> LLMRequest:
    """One question that asks about the link between A and B. Output ``{"question": str}``."""
    instr = (
        f"A: {a}\nB: {b}\nClaimed link: A {relation_phrase(rel_type)} B ({rel_type}).\n"
        "Write one short question whose answer is exactly this link (e.g. why B happened, or "
        'what came first). JSON: {"question": "..."}'
    )
    return LLMRequest(standalone_messages(instr), PROBE_SCHEMA, PROBE_MAX_TOKENS, stage="relation_verify")


def memory_block(entries: Sequence[str]) -> str:
    """Flat memory as numbered lines (shared prefix of every answerability prompt)."""
    return "Memory entries:\n" + "\n".join(f"{i + 1}. {t}" for i, t in enumerate(entries))


def answerable_request(memory: str, question: str) -> LLMRequest:
    """Can ``question`` be answered from the flat memory alone? Output ``{"answerable", "answer"}``."""
    instr = (
        f"Question: {question}\nUsing only the memory entries above, is the answer stated or "
        'directly implied? JSON: {"answerable": true or false, "answer": "..."}'
    )
    return LLMRequest(standalone_messages(instr, memory), ANSWERABLE_SCHEMA, ANSWERABLE_MAX_TOKENS, stage="relation_verify")


def supported_request(block: str, a: str, rel_type: str, b: str, question: str) -> LLMRequest:
    """Does the dialogue support the link? Output ``{"supported": bool}``."""
    instr = (
        f"A: {a}\nB: {b}\nClaim: A {relation_phrase(rel_type)} B. ({question})\n"
        'Does the dialogue support this link? JSON: {"supported": true or false}'
    )
    return LLMRequest(session_messages(block, instr), SUPPORTED_SCHEMA, SUPPORTED_MAX_TOKENS, stage="relation_verify")
