"""Composition of the stages into the three variants, with the ablation switches.

Variant "promem" (ProMem §3; Figure 4), each step switchable by :class:`PipelineConfig`:

    segment -> [details ‖ events -> relations] ‖ draft      (§3.2, §3.3; run concurrently)
    -> completeness (CC, §3.3) -> verify (HV, §3.4) -> recover (CC on details, then HV)
    -> dedup (v1's merge at tau_dup, counted under verify)
    -> relation_verify (Rel, §3.5) -> anchor (DA, §3.5) -> dates

Variant "one-off": one extraction call (§3.1 baseline). Variant "v1": initial extraction,
turn-coverage completion, self-questioning evidence check, dedup (stages/v1.py).

Every stage runs inside :func:`stage_scope`, which charges its wall time to the stage's
stats and reports start/end to the ``on_stage`` callback.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator, Callable, Optional

from ..aio import gather_or_cancel
from ..context import SessionContext
from ..prompts.common import dialogue_block, turn_date
from ..schema import Detail, Event, MemoryGraph, Relation, Topic
from .anchor import anchor_details
from .complete import completeness_check, recover_from_details
from .extract import abstract_events, extract_details, extract_draft, infer_relations
from .oneoff import oneoff_extract
from .relate import verify_relations
from .segment import segment_topics
from .state import PipelineState
from .v1 import coverage_completion, dedup_merge, evidence_verification, initial_extraction
from .verify import dedup_entries, ground_entries, restore_language, verify_entries

logger = logging.getLogger(__name__)

OnStage = Optional[Callable[[str, str, str], None]]


@asynccontextmanager
async def stage_scope(ctx: SessionContext, stage: str, on_stage: OnStage) -> AsyncIterator[None]:
    """Time ``stage`` and report ``on_stage(session_id, stage, "start"|"end")``."""
    sid = ctx.session.session_id
    if on_stage:
        on_stage(sid, stage, "start")
    with ctx.timed(stage):
        yield
    if on_stage:
        on_stage(sid, stage, "end")


def _resolve_dates():
    from ..timeparse import resolve_dates

    return resolve_dates


def entry_order(state: PipelineState) -> list[int]:
    """Live entry indices in output order: dialogue position of the grounding turn (else the
    first source turn; neither = last), ties in creation order."""
    far = len(state.session.turns)

    def pos(i: int) -> int:
        e = state.entries[i]
        if e.ground_turn_id in state.turn_pos:
            return state.turn_pos[e.ground_turn_id]
        return min((state.turn_pos[t] for t in e.source_turn_ids), default=far)

    return sorted(state.live_entries(), key=lambda i: (pos(i), i))


def build_graph(ctx: SessionContext, state: PipelineState, variant: str) -> MemoryGraph:
    """Turn the final state into a :class:`MemoryGraph`.

    Events: live entries ordered by the dialogue position of their grounding turn (else first
    source turn; entries with neither last), ties in creation order; ids e1, e2, ...
    Details d1, d2, ... in dialogue order. Dates: ``resolve_dates(text, grounding turn date)``.
    """
    p = ctx.config.pipeline
    sess = state.session
    order = entry_order(state)
    eid = {i: f"e{n + 1}" for n, i in enumerate(order)}
    resolve = _resolve_dates() if p.resolve_dates else None
    events = []
    for i in order:
        e = state.entries[i]
        gt = e.ground_turn_id or (min(e.source_turn_ids, key=state.turn_pos.__getitem__) if e.source_turn_ids else None)
        ts = turn_date(sess.turn(gt), sess) if gt else sess.start_time
        events.append(Event(
            id=eid[i], text=e.text, origin=e.origin, status=e.status,
            source_turn_ids=sorted(set(e.source_turn_ids) | ({gt} if gt else set()), key=state.turn_pos.__getitem__),
            dates=resolve(e.text, ts) if resolve else [], timestamp=ts, nli=list(e.nli),
            atomic_facts=list(e.atomic_facts), original_text=e.original_text,
        ))
    anchors = state.detail_anchors or [([], None) for _ in state.details]
    details = [
        Detail(id=f"d{n + 1}", text=text, turn_id=tid, event_ids=[eid[i] for i in a], anchored_by=how)
        for n, ((tid, text), (a, how)) in enumerate(zip(state.details, anchors))
    ]
    relations = [
        Relation(source=eid[r.source], type=r.type, target=eid[r.target], probe_question=r.question)
        for r in state.edges if r.source in eid and r.target in eid
    ]
    topics = [
        Topic(id=f"t{k + 1}", turn_ids=ids, events=[ev.text for ev in state.events if ev.topic == k])
        for k, ids in enumerate(state.topics)
    ]
    return MemoryGraph(
        session_id=sess.session_id, user_name=state.user_name, variant=variant,
        ablations=ablations(p) if variant == "promem" else [], events=events,
        details=details, relations=relations, topics=topics, discarded=list(state.discarded),
        stats=ctx.graph_stats(), models=ctx.services.model_names(),
    )


ABLATION_SWITCHES = (("details", "no-details"), ("completeness_check", "no-cc"),
                     ("hallucination_verification", "no-hv"), ("detail_anchoring", "no-da"), ("relations", "no-rel"))


# This engine's own checks (not in the paper), each with the paper stage it refines.
EXTENSION_SWITCHES = (("refile_details", "details", "no-refile"),
                      ("anchor_within_topic", "detail_anchoring", "no-topic-anchor"),
                      ("check_head_claim", "hallucination_verification", "no-head-claim"),
                      ("check_polarity", "hallucination_verification", "no-polarity"),
                      ("screen_entries", "hallucination_verification", "no-screen"),
                      ("lexical_entailment", "hallucination_verification", "no-lexical-nli"),
                      ("dedup", "hallucination_verification", "no-dedup"),
                      ("recover_details", "completeness_check", "no-detail-recovery"))


def ablations(p) -> list[str]:
    """Names of the switches turned off in pipeline config ``p``: the ProMem ones (Table 2
    order), then this engine's own checks whose stage ran (``no-refile``,
    ``no-topic-anchor``, ``no-head-claim``, ``no-polarity``, ``no-screen``, ``no-lexical-nli``,
    ``no-dedup``, ``no-detail-recovery``), and ``llm-reread`` when the detail re-read asked the LLM
    (``recover_by`` "llm")."""
    # detail recovery needs the details stage as well as the completeness check
    ran = {"completeness_check": p.completeness_check and p.details}
    off = [name for field, stage, name in EXTENSION_SWITCHES
           if ran.get(stage, getattr(p, stage)) and not getattr(p, field)]
    # the re-read by the LLM is a choice, not an off switch, but a graph must say it ran
    if ran["completeness_check"] and p.recover_details and p.recover_by == "llm":
        off.append("llm-reread")
    return [name for field, name in ABLATION_SWITCHES if not getattr(p, field)] + off


async def run_promem(ctx: SessionContext, state: PipelineState, on_stage: OnStage = None) -> None:
    """The ProMem pipeline (§3) on ``state``; switches from ``ctx.config.pipeline``."""
    p = ctx.config.pipeline
    async with stage_scope(ctx, "segment", on_stage):
        await segment_topics(ctx, state)

    async def details() -> None:
        if p.details:
            async with stage_scope(ctx, "details", on_stage):
                await extract_details(ctx, state)

    async def events_and_relations() -> None:
        async with stage_scope(ctx, "events", on_stage):
            await abstract_events(ctx, state)
        if p.relations:
            async with stage_scope(ctx, "relations", on_stage):
                await infer_relations(ctx, state)

    async def draft() -> None:
        async with stage_scope(ctx, "draft", on_stage):
            await extract_draft(ctx, state)

    # §3.2 "parallel execution": one await carries all of stage 1 and the draft; a failed
    # branch cancels the others so no LLM work continues for a session that has failed.
    await gather_or_cancel([details(), events_and_relations(), draft()])

    async with stage_scope(ctx, "completeness", on_stage):
        await completeness_check(ctx, state, recover=p.completeness_check)
    async with stage_scope(ctx, "verify", on_stage):
        if p.hallucination_verification:
            await verify_entries(ctx, state)
        else:
            await ground_entries(ctx, state)  # grounding (no NLI) still serves anchoring and dates
    if p.completeness_check and p.recover_details and p.details:
        async with stage_scope(ctx, "recover", on_stage):
            new = await recover_from_details(ctx, state)
        if new:
            # HV of the re-read entries: its calls and its time both count as "verify" (no second
            # progress event: the session has passed that stage once)
            with ctx.timed("verify"):
                if p.hallucination_verification:
                    await verify_entries(ctx, state, only=new)
                else:
                    await ground_entries(ctx, state, only=new)
    if p.hallucination_verification and p.dedup:
        with ctx.timed("verify"):
            await dedup_entries(ctx, state)
    if p.hallucination_verification and p.keep_turn_language:
        with ctx.timed("verify"):
            await restore_language(ctx, state)
    if p.relations:
        async with stage_scope(ctx, "relation_verify", on_stage):
            await verify_relations(ctx, state)
    if p.detail_anchoring and p.details:
        async with stage_scope(ctx, "anchor", on_stage):
            order = entry_order(state)
            state.detail_anchors = anchor_details(
                state.details, [(i, state.entries[i]) for i in order],
                topics=state.topics if p.anchor_within_topic else None, turn_pos=state.turn_pos,
            )


async def run_v1(ctx: SessionContext, state: PipelineState, on_stage: OnStage = None) -> None:
    """The first-version pipeline (promem-notes-zh.md)."""
    for name, fn in (("draft", initial_extraction), ("coverage", coverage_completion),
                     ("evidence", evidence_verification), ("dedup", dedup_merge)):
        async with stage_scope(ctx, name, on_stage):
            await fn(ctx, state)


async def run_oneoff(ctx: SessionContext, state: PipelineState, on_stage: OnStage = None) -> None:
    async with stage_scope(ctx, "oneoff", on_stage):
        await oneoff_extract(ctx, state)


RUNNERS = {"promem": run_promem, "v1": run_v1, "one-off": run_oneoff}


async def run_pipeline(ctx: SessionContext, on_stage: OnStage = None) -> MemoryGraph:
    """Extract the memory graph of ``ctx.session`` with the configured variant.

    A session whose turns hold no letters or digits (e.g. emoji only) yields an empty graph
    without any model call (logged). Raises :class:`StructuredOutputError` when an LLM output
    stays invalid after the retry (no partial graph is returned), except in relation
    verification and the language rewrite, whose failure leaves the verified entries as they
    are (the session's candidate edges are then discarded with the reason).
    """
    variant = ctx.config.pipeline.variant
    block = dialogue_block(ctx.session, ctx.user_name)
    state = PipelineState.create(ctx.session, ctx.user_name, block)
    if not state.text_turns:
        logger.warning("session %s: no turn holds text (letters/digits); empty memory", ctx.session.session_id)
    else:
        await RUNNERS[variant](ctx, state, on_stage)
    return build_graph(ctx, state, variant)
