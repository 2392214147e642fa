"""Necessity-driven relation verification (ProMem §3.5).

Candidate edges between events (§3.2) are remapped onto memory entries through the
completeness check's event -> entry map; edges whose ends were discarded, are unmapped, or
collapse onto one entry are dropped. For each remaining edge (at most
``max_relation_checks``):

1. probe: the LLM writes a question about the link (Figure 15 intent);
2. answerability over the flat purified memory only -> answerable means the relation is
   implicit: the edge is dropped (recorded with reason "implicit");
3. otherwise the dialogue is asked whether it supports the link -> kept if supported.

Probes, answerability and support are one request each for all of the session's edges
(three requests per session, plus JSON retries); all charged to stage "relation_verify".
"""

from __future__ import annotations

import logging
from typing import Optional

from ..context import SessionContext
from ..prompts.relate import answerable_request, memory_block, probe_request, relation_phrase, supported_request
from ..structured import StructuredOutputError
from .state import EdgeOut, PipelineState, clean_text

logger = logging.getLogger(__name__)

UNREADABLE_REASON = "relation verification answer unreadable"


def remap_edges(state: PipelineState) -> list[tuple[int, str, int]]:
    """Event edges -> unique entry edges (entry indices), dropping unmapped/discarded/merged ends."""
    out: list[tuple[int, str, int]] = []
    for a, typ, b in state.event_edges:
        ea, eb = state.event_to_entry.get(a), state.event_to_entry.get(b)
        if ea is None or eb is None:
            logger.info("session %s: edge E%d-%s-E%d dropped: an end is not in memory",
                        state.session.session_id, a + 1, typ, b + 1)
            continue
        if state.entries[ea].discarded or state.entries[eb].discarded:
            logger.info("session %s: edge E%d-%s-E%d dropped: an end was discarded",
                        state.session.session_id, a + 1, typ, b + 1)
            continue
        if ea == eb:
            logger.info("session %s: edge E%d-%s-E%d dropped: both ends are one entry",
                        state.session.session_id, a + 1, typ, b + 1)
            continue
        if (ea, typ, eb) not in out:
            out.append((ea, typ, eb))
    return out


def edge_text(state: PipelineState, a: int, typ: str, b: int) -> str:
    return f"{state.entries[a].text} -[{typ}: {relation_phrase(typ)}]-> {state.entries[b].text}"


async def verify_relations(ctx: SessionContext, state: PipelineState) -> list[EdgeOut]:
    """Verify candidate edges; sets and returns ``state.edges`` (the valid, explicit edges).

    An answer that stays unreadable after the JSON retries (:class:`StructuredOutputError`)
    drops every candidate edge of the session with :data:`UNREADABLE_REASON` and a logged
    warning; the verified entries are kept (the session does not fail)."""
    cand = remap_edges(state)
    cap = ctx.config.pipeline.max_relation_checks
    if len(cand) > cap:
        logger.info("session %s: verifying %d of %d candidate edges (max_relation_checks)",
                    state.session.session_id, cap, len(cand))
        cand = cand[:cap]
    state.edges = []
    if not cand:
        return state.edges
    try:
        verdicts = await _verdicts(ctx, state, cand)
    except StructuredOutputError as exc:
        # the verified entries stand without edges: an unreadable answer here must not fail
        # the session and lose its memory
        logger.warning("session %s: %d candidate edges dropped: %s", state.session.session_id, len(cand), exc)
        verdicts = [(None, f"{UNREADABLE_REASON}: {exc}")] * len(cand)
    # applied once every request has been answered, so an edge gets one verdict
    for (a, t, b), (question, why) in zip(cand, verdicts):
        if why is None:
            state.edges.append(EdgeOut(a, t, b, question))
        else:
            state.discard(edge_text(state, a, t, b), "relation_verify", why)
    return state.edges


async def _verdicts(ctx: SessionContext, state: PipelineState,
                    cand: list[tuple[int, str, int]]) -> list[tuple[Optional[str], Optional[str]]]:
    """Per candidate edge: (probe question, None) when it is kept, else (question, reason)."""
    E = state.entries
    (probes,) = await ctx.llm_json([probe_request([(E[a].text, t, E[b].text) for a, t, b in cand])],
                                   "relation_verify")
    questions = [clean_text(q) for q in probes]
    memory = memory_block([E[i].text for i in state.live_entries()])
    (answers,) = await ctx.llm_json([answerable_request(memory, questions)], "relation_verify")
    out: list[tuple[Optional[str], Optional[str]]] = [
        (q, "implicit: answerable from memory" if ans["answerable"] else None) for q, ans in zip(questions, answers)]
    open_k = [k for k, (_, why) in enumerate(out) if why is None]
    if not open_k:
        return out
    (checks,) = await ctx.llm_json(
        [supported_request(state.block, [(E[cand[k][0]].text, cand[k][1], E[cand[k][2]].text, out[k][0])
                                         for k in open_k])],
        "relation_verify",
    )
    for k, ok in zip(open_k, checks):
        if not ok:
            out[k] = (out[k][0], "not supported by the dialogue")
    return out
