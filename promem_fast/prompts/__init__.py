"""Prompt families of the ProMem pipeline, in our own words (paper Appendix, Figures 9-15).

Layout rule (prefix caching): every session prompt is ``[SYSTEM, user: dialogue block +
"### Task" + instruction]``. ``SYSTEM`` is one constant string and the dialogue block is
identical for every prompt of a session, so llama.cpp / vLLM reuse the shared prefix; only
the short instruction after ``### Task`` differs. Prompts that do not need the dialogue
(atomic decomposition, adjudication, relation probe, answerability) are short standalone
prompts that still start with ``SYSTEM``.

Modules: common (system message, dialogue block, message assembly), extract (details,
events, relations, draft), verify (decomposition, adjudication), relate (probe,
answerability, dialogue support), oneoff (single-call baseline), v1 (first-version
variant: extraction, supplement, self-questioning evidence check).
"""

from .common import SYSTEM, TASK_MARK, dialogue_block, session_messages, standalone_messages

__all__ = ["SYSTEM", "TASK_MARK", "dialogue_block", "session_messages", "standalone_messages"]
