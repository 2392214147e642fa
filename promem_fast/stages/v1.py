"""The first ProMem version (variant "v1", see seeds/promem-notes-zh.md).

1. Initial extraction M_init = LLM(D, P_extract) (stage "draft").
2. Turn-coverage completion (stage "coverage"): a user turn is covered when its max cosine
   to the memory exceeds ``tau_match`` (0.6); the uncovered turns D_miss get one
   supplementary extraction, whose entries have origin "supplement", status "recovered".
3. Self-questioning evidence verification (stage "evidence"): per entry the LLM asks itself
   a checking question, names the supporting turn and says whether the dialogue supports
   the entry; unsupported -> discarded with the question as reason; supported -> the
   entry is restated as the evidence gives it (m_new; status "revised" when it changed).
4. Dedup/merge (stage "dedup", no LLM): an entry whose cosine to an earlier kept entry
   exceeds ``tau_sim`` (0.8) is merged into it (source turns unioned) and recorded.
"""

from __future__ import annotations

import logging

from ..context import SessionContext
from ..prompts.v1 import evidence_request, initial_request, supplement_request
from .extract import add_entries, clean_uncut, parse_facts
from .segment import turn_vectors
from .state import PipelineState, clean_text, has_text, norm_key
from .verify import ground_entries

logger = logging.getLogger(__name__)


async def initial_extraction(ctx: SessionContext, state: PipelineState) -> None:
    """Step 1 (stage "draft")."""
    all_ids = [t.turn_id for t in state.session.turns]
    (out,) = await ctx.llm_json([initial_request(state.block, state.user_name, ctx.config.pipeline.max_draft_facts)], "draft")
    add_entries(state, parse_facts(state, out, all_ids, "draft"), "draft", "kept", "draft")


async def coverage_completion(ctx: SessionContext, state: PipelineState) -> list[str]:
    """Step 2; returns the uncovered user turn ids (no LLM call when every turn is covered)."""
    user_k = [k for k, t in enumerate(state.text_turns) if t.role == "user"]
    if not user_k:
        return []
    tv = (await turn_vectors(ctx, state))[user_k]
    live = state.live_entries()
    mv = await ctx.embed([state.entries[i].text for i in live])
    x = await ctx.xref(tv, mv, ctx.config.pipeline.tau_match)
    missing = [state.text_turns[k].turn_id for k, m in zip(user_k, x.matched) if not m]
    if not missing:
        return []
    req = supplement_request(state.block, state.user_name, missing, ctx.config.pipeline.max_draft_facts)
    (out,) = await ctx.llm_json([req], "coverage")
    all_ids = [t.turn_id for t in state.session.turns]
    add_entries(state, parse_facts(state, out, all_ids, "coverage"), "supplement", "recovered", "coverage")
    return missing


async def evidence_verification(ctx: SessionContext, state: PipelineState) -> None:
    """Step 3 (stage "evidence"): one batched call, one request per live entry."""
    await ground_entries(ctx, state)
    live = state.live_entries()
    outs = await ctx.llm_json([evidence_request(state.block, state.entries[i].text) for i in live], "evidence")
    ids = {t.turn_id for t in state.text_turns}
    for i, out in zip(live, outs):
        e = state.entries[i]
        if not out["supported"]:
            e.discarded = True
            state.discard(e.text, "evidence", f"self-questioning found no evidence ({clean_text(out['question'])[:200]})")
            continue
        tid = str(out.get("evidence_turn") or "").strip()
        if tid in ids:
            e.ground_turn_id = tid
            if tid not in e.source_turn_ids:
                e.source_turn_ids.append(tid)
        elif tid:
            logger.warning("session %s: evidence: dropped turn id %r (not a turn)", state.session.session_id, tid)
        new = clean_uncut(out.get("fact") or "", state.user_name)  # cut off at the cap: the entry stays
        if has_text(new) and norm_key(new) != norm_key(e.text):
            e.original_text, e.text, e.status = e.text, new, "revised"


async def dedup_merge(ctx: SessionContext, state: PipelineState) -> None:
    """Step 4 (stage "dedup"): greedy merge in entry order at cosine > ``tau_sim``."""
    live = state.live_entries()
    if len(live) < 2:
        return
    vecs = await ctx.embed([state.entries[i].text for i in live])
    kept: list[int] = []  # rows of vecs
    for row, i in enumerate(live):
        if kept:
            x = await ctx.xref(vecs[row][None, :], vecs[kept], ctx.config.pipeline.tau_sim)
            if x.matched[0]:
                target = state.entries[live[kept[int(x.argmax[0])]]]
                e = state.entries[i]
                target.source_turn_ids += [t for t in e.source_turn_ids if t not in target.source_turn_ids]
                e.discarded = True
                state.discard(e.text, "dedup", f"duplicate of {target.text[:120]!r} (cosine {float(x.max_sim[0]):.3f})")
                continue
        kept.append(row)
