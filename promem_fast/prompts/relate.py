"""Relation-verification prompts (ProMem §3.5; Figure 15 intent).

probe: standalone (each edge's two entries + relation), one call for all of a session's
edges; answerable: standalone over the flat memory only (it must not see the dialogue), one
call for all of a session's probe questions; supported: session layout (dialogue prefix),
one call for all open edges. One call per step keeps the instructions, the memory block and
the dialogue to one copy each per session.
"""

from __future__ import annotations

from typing import Sequence

from ..backends.base import LLMRequest
from .common import QUESTION_CHARS, session_messages, standalone_messages, text_schema

PROBE_MAX_TOKENS = 80
ANSWERABLE_MAX_TOKENS = 12
SUPPORTED_MAX_TOKENS = 16

ANSWERABLE_SCHEMA = {
    "type": "object",
    "properties": {"answerable": {"type": "boolean"}},
    "required": ["answerable"],
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


def probe_request(links: Sequence[tuple[str, str, str]]) -> LLMRequest:
    """One question per claimed link, each asking about that link (Figure 15 intent), for all
    of a session's candidate edges in one request. ``links``: (A, relation type, B).

    Output JSON: ``["question", ...]``, exactly one per link, in order (the schema fixes the
    length). One request instead of one per edge: most of a per-edge prompt was the system
    prompt and the instruction, repeated for each edge (docs/pipeline.md).
    """
    lines = "\n".join(
        f"Pair {k + 1}: A: {a} | B: {b} | Claimed link: A {relation_phrase(t)} B ({t})."
        for k, (a, t, b) in enumerate(links))
    instr = (
        f"{lines}\nFor each pair, in order: write one short question whose answer is exactly its "
        'claimed link (e.g. why B happened, or what came first). JSON: ["...", ...]'
    )
    n = len(links)
    schema = {"type": "array", "minItems": n, "maxItems": n, "items": text_schema(QUESTION_CHARS)}
    return LLMRequest(standalone_messages(instr), schema, PROBE_MAX_TOKENS * n + 10, stage="relation_verify")


def memory_block(entries: Sequence[str]) -> str:
    """Flat memory as numbered lines (shared prefix of every answerability prompt)."""
    return "Memory entries:\n" + "\n".join(f"{i + 1}. {t}" for i, t in enumerate(entries))


def answerable_request(memory: str, questions: Sequence[str]) -> LLMRequest:
    """Can each of ``questions`` be answered from the flat memory alone?

    Output JSON: ``[{"answerable": bool}, ...]``, exactly one item per question, in order
    (the schema fixes the length). Only the verdict is asked for: the boolean comes first
    in the JSON, so an answer text written after it could not change it, and it cost
    about 30 completion tokens a question.
    """
    lines = "\n".join(f"Question {k + 1}: {q}" for k, q in enumerate(questions))
    instr = (
        f"{lines}\nFor each question, in order: using only the memory entries above, is the answer "
        'stated or directly implied? JSON: [{"answerable": true or false}, ...]'
    )
    n = len(questions)
    schema = {"type": "array", "minItems": n, "maxItems": n, "items": ANSWERABLE_SCHEMA}
    return LLMRequest(standalone_messages(instr, memory), schema, ANSWERABLE_MAX_TOKENS * n + 10,
                      stage="relation_verify")


def supported_request(block: str, links: Sequence[tuple[str, str, str, str]]) -> LLMRequest:
    """Does the dialogue support each link? ``links``: (A, relation type, B, probe question).

    Output JSON: ``[true | false, ...]``, exactly one per link, in order.
    """
    lines = "\n".join(
        f"Link {k + 1}: A: {a} | B: {b} | Claim: A {relation_phrase(t)} B. ({q})" for k, (a, t, b, q) in enumerate(links))
    instr = (
        f"{lines}\nFor each link, in order: does the dialogue support it? "
        "JSON: [true or false, ...]"
    )
    n = len(links)
    schema = {"type": "array", "minItems": n, "maxItems": n, "items": {"type": "boolean"}}
    return LLMRequest(session_messages(block, instr), schema, SUPPORTED_MAX_TOKENS * n + 10,
                      stage="relation_verify")
