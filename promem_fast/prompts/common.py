"""Shared prompt parts: the constant system message and the session's dialogue block.

The dialogue block lists every turn as ``[turn_id] Speaker (role): text`` under a date
header (``## 2023-05-08 (Monday)``) printed whenever the turn date changes, so the LLM can
turn "yesterday" into an absolute date while each date costs tokens only once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Iterable, Optional, Sequence

from ..schema import Session, Turn

TASK_MARK = "### Task"

SYSTEM = (
    "You build long-term memory about one user from a dialogue. Rules: write facts in the "
    "third person with the user's name as subject (never \"User\" or \"I\"), or, when the user "
    "tells about someone else, with that person as subject, named as the user relates to them; "
    "write each fact in the language of its turn and copy names exactly as written; record only "
    "what the user states, never the assistant's suggestions, praise or opinions, nor a line the "
    "user quotes; skip thanks, greetings and talk about the conversation; turn relative dates "
    "(yesterday, next month) into absolute dates using the turn's date; do not guess. "
    "Answer with JSON only."
)


def speaker_label(turn: Turn, user_name: str) -> str:
    """Display name of a turn's speaker: the data set's speaker, else the user's name / role."""
    if turn.speaker:
        name = turn.speaker
    elif turn.role == "user":
        name = user_name
    else:
        name = turn.role.capitalize()
    return f"{name} ({turn.role})"


def turn_date(turn: Turn, session: Session) -> Optional[datetime]:
    """The turn's timestamp, else the session's start time, else None."""
    return turn.timestamp or session.start_time


def _date_header(d: datetime) -> str:
    return f"## {d.strftime('%Y-%m-%d')} ({d.strftime('%A')})"


def turn_line(turn: Turn, user_name: str) -> str:
    """One dialogue line: ``[turn_id] Speaker (role): text`` (newlines folded to spaces)."""
    text = " ".join(turn.content.split())
    return f"[{turn.turn_id}] {speaker_label(turn, user_name)}: {text}"


def dialogue_block(
    session: Session, user_name: str, turn_ids: Optional[Iterable[str]] = None
) -> str:
    """The dialogue as the LLM sees it.

    Args:
        session: the session.
        user_name: the name used for the user (subject of memory entries).
        turn_ids: restrict to these turns (used when a session is too long for one prompt);
            None = every turn, which keeps the block identical across a session's prompts.
    """
    keep = None if turn_ids is None else set(turn_ids)
    lines = [f"Dialogue of user {user_name} (turn id, speaker, text):"]
    last_day = None
    for t in session.turns:
        if keep is not None and t.turn_id not in keep:
            continue
        d = turn_date(t, session)
        if d is not None and d.date() != last_day:
            lines.append(_date_header(d))
            last_day = d.date()
        lines.append(turn_line(t, user_name))
    return "\n".join(lines)


def premise_text(turn: Turn, session: Session, user_name: str) -> str:
    """NLI premise for a turn (§3.4): ``[date] Speaker (role): text``."""
    d = turn_date(turn, session)
    head = f"[{d.strftime('%Y-%m-%d')}] " if d is not None else ""
    return head + f"{speaker_label(turn, user_name)}: {' '.join(turn.content.split())}"


def session_messages(block: str, instruction: str) -> list[dict[str, str]]:
    """``[SYSTEM, user: block + TASK_MARK + instruction]`` (shared-prefix layout)."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{block}\n\n{TASK_MARK}\n{instruction}"},
    ]


def standalone_messages(instruction: str, context: str = "") -> list[dict[str, str]]:
    """Short prompt without the dialogue: ``[SYSTEM, user: context + TASK_MARK + instruction]``."""
    body = f"{context}\n\n{TASK_MARK}\n{instruction}" if context else f"{TASK_MARK}\n{instruction}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]


def json_fix_message(error: Exception) -> str:
    """Follow-up user turn after an answer that failed JSON parsing or schema validation."""
    reason = " ".join(str(error).split())[:300]
    return (f"That answer could not be used: {reason}\n"
            "Reply again with only the corrected JSON, following the requested format exactly.")


def id_list(ids: Sequence[str]) -> str:
    """Turn ids as the prompts print them: ``D1:3, D1:5``."""
    return ", ".join(ids)


# Longest free-text values (characters). Bounded strings keep a rambling small model from
# running into max_tokens, which would fail the stage (StructuredOutputError).
FACT_CHARS = 240
PHRASE_CHARS = 60
QUESTION_CHARS = 200


def text_schema(max_chars: int = FACT_CHARS) -> dict:
    """JSON Schema of one bounded string."""
    return {"type": "string", "maxLength": max_chars}


def str_list_schema(max_items: int, max_chars: int = FACT_CHARS) -> dict:
    """JSON Schema: a list of at most ``max_items`` strings of at most ``max_chars`` each."""
    return {"type": "array", "items": text_schema(max_chars), "maxItems": max_items}
