"""LLM-judge prompts for HaluMem-style scoring (own wording) and their output schemas.

The JSON fields match what HaluMem's ``eval/evaluation.py`` reads from its judge
(IAAR-Shanghai/HaluMem, mirror MemTensor/HaluMem commit 6574e50): integrity ``score``
(0/1/2), accuracy ``accuracy_score`` (0/1/2) and ``is_included_in_golden_memories``
("true"/"false"), QA and update ``evaluation_result`` ("Correct" | "Hallucination" |
"Omission", update also "Other"). Scores arrive as strings or ints; :func:`read_score`
and :func:`read_label` normalise them, returning None (an invalid item, as HaluMem
counts it) when the judge's answer is unusable.

Each ``*_prompt`` function returns the user message; :data:`JUDGE_SYSTEM` is the
system message. Inputs are plain strings (memories joined by newlines, dialogue lines
``[timestamp]role: content`` as HaluMem formats them).
"""

from __future__ import annotations

from typing import Any, Optional

JUDGE_SYSTEM = (
    "You are a strict, careful evaluator of a memory system. Answer with one JSON object "
    "and nothing else."
)

# Integrity and accuracy ask for a verbatim quote first and the score last: small judges
# (the embedded 1.5B) otherwise emit the score before any reasoning and score almost
# everything 0; the quote is checked against the shown text (judges.grounded).
INTEGRITY_SCHEMA = {
    "type": "object",
    "required": ["evidence", "left_out", "score"],
    "properties": {
        "evidence": {"type": "string"},
        "left_out": {"type": "string"},
        "score": {"enum": [0, 1, 2, "0", "1", "2"]},
    },
}
ACCURACY_SCHEMA = {
    "type": "object",
    "required": ["evidence", "unsupported", "accuracy_score", "is_included_in_golden_memories"],
    "properties": {
        "evidence": {"type": "string"},
        "unsupported": {"type": "string"},
        "accuracy_score": {"enum": [0, 1, 2, "0", "1", "2"]},
        "is_included_in_golden_memories": {"enum": [True, False, "true", "false", "True", "False"]},
    },
}
QA_SCHEMA = {
    "type": "object",
    "required": ["evaluation_result"],
    "properties": {"evaluation_result": {"enum": ["Correct", "Hallucination", "Omission"]},
                   "reason": {"type": "string"}},
}
UPDATE_SCHEMA = {
    "type": "object",
    "required": ["evaluation_result"],
    "properties": {"evaluation_result": {"enum": ["Correct", "Hallucination", "Omission", "Other"]},
                   "reason": {"type": "string"}},
}


def integrity_prompt(extracted_memories: str, gold_memory: str) -> str:
    """Does the system's memory contain one reference memory point?
    -> ``{"evidence": quote, "left_out": str, "score": 0|1|2}``."""
    return (
        "Check whether a memory system remembered one reference memory.\n\n"
        f"REFERENCE MEMORY:\n{gold_memory}\n\n"
        f"SYSTEM MEMORIES:\n{extracted_memories}\n\n"
        "Steps:\n"
        "1. evidence: copy, word for word, the system memory or memories that state the reference "
        'memory; write "none" if no system memory is about it.\n'
        "2. left_out: compare the evidence with the REFERENCE MEMORY only: which of its details "
        '(who, what, when, where, numbers, preferences) does the evidence leave out? Write "nothing" '
        "if it leaves out none.\n"
        '3. score: 2 if left_out is "nothing" (other wording is fine); 1 if the evidence states part '
        'of the reference memory; 0 if evidence is "none" or contradicts the reference memory.\n\n'
        'Reply as JSON: {"evidence": "...", "left_out": "...", "score": 0|1|2}'
    )


def accuracy_prompt(dialogue: str, gold_memories: str, candidate_memory: str) -> str:
    """Is one extracted memory supported by the dialogue, and is its topic among the gold
    memories? -> ``{"evidence": quote, "unsupported": str, "accuracy_score": 0|1|2,
    "is_included_in_golden_memories": "true"|"false"}``. The dialogue and reference memories
    come first, so a session's prompts share that prefix."""
    return (
        "Judge one memory that a memory system extracted from the DIALOGUE below.\n\n"
        f"DIALOGUE:\n{dialogue}\n\n"
        f"REFERENCE MEMORIES:\n{gold_memories}\n\n"
        f"CANDIDATE MEMORY:\n{candidate_memory}\n\n"
        "Steps:\n"
        "1. evidence: copy, word for word, the dialogue line or lines that state the candidate "
        'memory; write "none" if no line does.\n'
        "2. unsupported: the parts of the candidate memory that the evidence does not state or "
        'contradicts; write "nothing" if it states them all (dates worked out from the dialogue\'s '
        "timestamps count as stated).\n"
        '3. accuracy_score: 2 if unsupported is "nothing"; 1 if one detail is unsupported, '
        'over-generalised or slightly wrong; 0 if evidence is "none" or the main claim is '
        "unsupported or contradicted.\n"
        '4. is_included_in_golden_memories: "true" if the subjects the memory talks about (the kind '
        "of fact, e.g. a person's job, a date of an event, a preference) all appear among the "
        'REFERENCE MEMORIES, whatever the exact values; otherwise "false".\n\n'
        'Reply as JSON: {"evidence": "...", "unsupported": "...", "accuracy_score": 0|1|2, '
        '"is_included_in_golden_memories": "true"|"false"}'
    )


def qa_prompt(question: str, gold_answer: str, evidence: str, system_response: str) -> str:
    """Classify a system's answer -> ``{"evaluation_result": "Correct"|"Hallucination"|"Omission"}``."""
    return (
        "Compare a system's answer with the reference answer to a question about a user.\n\n"
        "Correct = the answer gives the reference information (other wording or extra harmless "
        "detail is fine);\n"
        "Hallucination = the answer states something false, contradicting or not supported by the "
        "reference and evidence;\n"
        "Omission = the answer declines, says it does not know, or leaves out the information asked "
        "for, without stating anything false.\n\n"
        f"QUESTION: {question}\n"
        f"REFERENCE ANSWER: {gold_answer}\n"
        f"EVIDENCE:\n{evidence}\n"
        f"SYSTEM ANSWER: {system_response}\n\n"
        'Reply as JSON: {"evaluation_result": "Correct"|"Hallucination"|"Omission", "reason": "<one sentence>"}'
    )


def update_prompt(memories_from_system: str, updated_memory: str, original_memories: str) -> str:
    """Did the system update an old memory? -> ``{"evaluation_result": "Correct"|"Hallucination"|"Omission"|"Other"}``."""
    return (
        "A fact about the user changed. OLD MEMORIES held the earlier version, UPDATED MEMORY is the "
        "new one. Judge the memories the system returned for it.\n\n"
        "Correct = the system memories state the updated fact (the old one may also remain if marked "
        "as earlier);\n"
        "Hallucination = they state a wrong new value;\n"
        "Omission = they still give only the old version, or nothing relevant;\n"
        "Other = none of the above.\n\n"
        f"OLD MEMORIES:\n{original_memories}\n\n"
        f"UPDATED MEMORY:\n{updated_memory}\n\n"
        f"SYSTEM MEMORIES:\n{memories_from_system}\n\n"
        'Reply as JSON: {"evaluation_result": "Correct"|"Hallucination"|"Omission"|"Other", '
        '"reason": "<one sentence>"}'
    )


def read_score(obj: Any, key: str) -> Optional[int]:
    """0/1/2 from ``obj[key]`` (int or numeric string); None if absent or out of range."""
    if not isinstance(obj, dict):
        return None
    v = obj.get(key)
    if isinstance(v, bool):
        return None
    try:
        n = int(str(v).strip())
    except (TypeError, ValueError):
        return None
    return n if n in (0, 1, 2) else None


def read_flag(obj: Any, key: str) -> bool:
    """Boolean from ``obj[key]`` given as bool or "true"/"false" (any case); False otherwise."""
    v = obj.get(key) if isinstance(obj, dict) else None
    return v is True or (isinstance(v, str) and v.strip().lower() == "true")


def read_label(obj: Any, allowed: tuple[str, ...] = ("Correct", "Hallucination", "Omission")) -> Optional[str]:
    """``evaluation_result`` matched case-insensitively to ``allowed``; None if not one of them."""
    v = obj.get("evaluation_result") if isinstance(obj, dict) else None
    if not isinstance(v, str):
        return None
    for a in allowed:
        if v.strip().lower() == a.lower():
            return a
    return None
