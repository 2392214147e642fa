"""Hallucination-verification prompts (ProMem §3.4; Figures 13-14 intent).

Both are short standalone prompts: decomposition needs only the entry, adjudication only the
source turn (the premise) and the flagged atomic fact. Decomposition puts its fixed
instruction first and the entry last, so a session's calls share a cached prefix;
adjudication keeps the turn first (a labelled turn line last was copied into answers).
"""

from __future__ import annotations

from ..backends.base import LLMRequest
from .common import standalone_messages, str_list_schema, text_schema

DECOMPOSE_MAX_TOKENS_PER_FACT = 70
ADJUDICATE_MAX_TOKENS = 120

RESTATE_MAX_TOKENS = 90
LANGUAGE_NAMES = {"de": "German", "zh": "Chinese", "en": "English"}

ADJUDICATE_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["REVISE", "DISCARD"]},
        # anyOf keeps the length bound in the grammar (a type list would drop it)
        "revised_fact": {"anyOf": [text_schema(), {"type": "null"}]},
    },
    "required": ["action", "revised_fact"],
    "additionalProperties": False,
}


def decompose_request(entry: str, user_name: str, max_facts: int) -> LLMRequest:
    """Split a memory entry into atomic facts. Output JSON: ``["fact", ...]``."""
    instr = (
        "Split the entry below into atomic facts: one piece of information each (one action, time "
        f"or place), each a full sentence with subject {user_name}. Only split, add nothing. "
        f'At most {max_facts}. JSON: ["...", "..."]\n'
        f"Entry: {entry}"
    )
    return LLMRequest(standalone_messages(instr), str_list_schema(max_facts),
                      DECOMPOSE_MAX_TOKENS_PER_FACT * max_facts + 10, stage="verify")


def adjudicate_request(premise: str, fact: str) -> LLMRequest:
    """Revise or discard an atomic fact the NLI check did not entail.

    Output JSON: ``{"action": "REVISE"|"DISCARD", "revised_fact": str|null}``.
    """
    # the turn first: with the labelled turn line last, the 1.5B model copied the line into
    # its answer in the re-read prompt (cf91516), so this prompt keeps its original order
    instr = (
        f"Source turn: {premise}\nFact: {fact}\n"
        "The fact was not confirmed by the source turn. If it has a small error (date, name, "
        "detail) but its core is in the turn, REVISE it to match the turn exactly. If the turn "
        'does not say it, DISCARD. JSON: {"action": "REVISE" or "DISCARD", "revised_fact": "..." or null}'
    )
    return LLMRequest(standalone_messages(instr), ADJUDICATE_SCHEMA, ADJUDICATE_MAX_TOKENS, stage="verify")


def restate_request(premise: str, fact: str, language: str) -> LLMRequest:
    """Write ``fact`` again in the language of its source turn (``language``: "de", "zh",
    "en"), names exactly as the turn spells them. ``premise``: the turn's text alone (shown its
    date, the 1.5B model turned "nächsten Montag" into a wrong calendar date; shown its
    speaker line, it wrote "am Montag"; the graph's dates are resolved from the entry's words
    when the graph is built). Output JSON: a string."""
    lang = LANGUAGE_NAMES.get(language, language)
    instr = (
        f"Source turn: {premise}\nFact: {fact}\n"
        f"The turn is in {lang} but the fact is not. Write the same fact in {lang} as one "
        "sentence about the person, copying the turn's own words for names, places and times: "
        "a relative time stays as the turn says it, never a calendar date. Add nothing. "
        'JSON: "..."'
    )
    return LLMRequest(standalone_messages(instr), text_schema(), RESTATE_MAX_TOKENS, stage="verify")
