"""Explicit completeness check (ProMem §3.3).

Cross-reference matrix ``S(e_i, m_j)`` = cosine of event and draft-entry embeddings;
``Match(e_i) = max_j S > tau_comp`` (0.6). Unmatched events E_miss are recovered:
``M_comp = M_draft ∪ E_miss``. Matched events map to their argmax draft entry, which is how
relation edges between events become edges between memory entries (§3.5).
"""

from __future__ import annotations

import logging

from ..context import SessionContext
from .state import Entry, PipelineState

logger = logging.getLogger(__name__)


async def completeness_check(ctx: SessionContext, state: PipelineState, *, recover: bool = True) -> list[int]:
    """Map events to draft entries and (when ``recover``) add the unmatched ones.

    Args:
        recover: False for the no-CC ablation: the mapping is still computed (it costs no
            LLM call and relation remapping needs it) but nothing is added.

    Returns:
        Indices (into ``state.events``) of the recovered events. Updates
        ``state.event_to_entry`` and ``state.entries``.
    """
    if not state.events:
        return []
    draft_idx = state.live_entries()
    ev = await ctx.embed([e.text for e in state.events])
    dr = await ctx.embed([state.entries[i].text for i in draft_idx])
    x = await ctx.xref(ev, dr, ctx.config.pipeline.tau_comp)
    recovered = []
    for i, event in enumerate(state.events):
        if x.matched[i]:
            state.event_to_entry[i] = draft_idx[int(x.argmax[i])]
        elif recover:
            state.entries.append(
                Entry(text=event.text, origin="event", status="recovered", source_turn_ids=list(event.turn_ids))
            )
            state.event_to_entry[i] = len(state.entries) - 1
            recovered.append(i)
            logger.info("session %s: recovered event (max cosine %.3f): %r",
                        state.session.session_id, float(x.max_sim[i]), event.text[:120])
    return recovered
