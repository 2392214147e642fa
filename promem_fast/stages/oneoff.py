"""One-off extraction: the single-pass baseline of ProMem §3.1 (variant "one-off").

One LLM call over the whole session (stage "oneoff"); every fact becomes an entry with
status "kept" and the valid turn ids of the output; no completeness check, verification,
relations or details.
"""

from __future__ import annotations

from ..context import SessionContext
from ..prompts.oneoff import oneoff_request
from .extract import add_entries, parse_facts
from .state import Entry, PipelineState


async def oneoff_extract(ctx: SessionContext, state: PipelineState) -> list[Entry]:
    """Fill ``state.entries`` from one extraction call; the grounding turn is the first valid
    source turn in dialogue order (None when the output named none)."""
    all_ids = [t.turn_id for t in state.session.turns]
    req = oneoff_request(state.block, state.user_name, ctx.config.pipeline.max_draft_facts)
    (out,) = await ctx.llm_json([req], "oneoff")
    entries = add_entries(state, parse_facts(state, out, all_ids, "oneoff"), "draft", "kept", "oneoff")
    for e in entries:
        if e.source_turn_ids:
            e.ground_turn_id = min(e.source_turn_ids, key=state.turn_pos.__getitem__)
    return entries
