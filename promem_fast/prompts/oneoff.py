"""One-off extraction: the paper's single-pass baseline (§3.1), one call per session."""

from __future__ import annotations

from ..backends.base import LLMRequest
from .common import session_messages
from .extract import _facts_schema, facts_max_tokens


def oneoff_request(block: str, user_name: str, max_facts: int) -> LLMRequest:
    """All memory of the session in one pass. Output ``[{"fact", "turns"}]``."""
    instr = (
        f"Extract the long-term memory about {user_name} from the dialogue: every fact, event, "
        f"plan and preference, one standalone sentence each with {user_name} as subject, with "
        f'the turn ids it comes from. At most {max_facts}. JSON: [{{"fact": "...", "turns": ["<turn id>"]}}]'
    )
    return LLMRequest(session_messages(block, instr), _facts_schema(max_facts), facts_max_tokens(max_facts), stage="oneoff")
