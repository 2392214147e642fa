"""Topic segmentation (ProMem §3.2 "topic clustering"), LightMem's similarity method.

Method (no LLM, numpy + ``ctx.embed``):

1. Embed every turn that holds text (letters/digits); turns without text (emoji-only,
   empty) do not vote and join the topic of the turn before them.
2. ``sims[i] = cos(v_i, v_{i+1})`` for consecutive text turns.
3. Threshold ``th = seg_threshold_start`` (0.2): cut before turn ``i+1`` wherever
   ``sims[i] < th``. If no cut is found, raise ``th`` by ``seg_threshold_step`` (0.05) and
   retry, up to ``seg_threshold_max`` (0.5); no cut even then = one topic.
4. A topic longer than ``max_topic_turns`` is split into equal consecutive chunks.
"""

from __future__ import annotations

import logging
import math
from typing import Sequence

import numpy as np

from ..context import SessionContext
from ..kernels import normalize_rows
from .state import PipelineState

logger = logging.getLogger(__name__)


def cut_points(vecs: np.ndarray, start: float, step: float, max_threshold: float) -> list[int]:
    """Positions ``j`` (1..n-1) where a new topic starts, by the rising-threshold rule.

    Args:
        vecs: float32 (n, d) turn embeddings (normalised here).
        start, step, max_threshold: the threshold schedule (cosine units).

    Returns:
        Sorted cut positions; [] when n < 2 or no consecutive cosine is below ``max_threshold``.
    """
    n = vecs.shape[0]
    if n < 2:
        return []
    v = normalize_rows(vecs)
    sims = np.einsum("ij,ij->i", v[:-1], v[1:])
    th = start
    while th <= max_threshold + 1e-9:
        cuts = [i + 1 for i in np.flatnonzero(sims < th).tolist()]
        if cuts:
            return cuts
        th = round(th + step, 9)  # no float drift: 0.2 + 2*0.05 must be 0.3
    return []


def cap_length(segments: list[list[str]], max_len: int) -> list[list[str]]:
    """Split each segment longer than ``max_len`` into ``ceil(len/max_len)`` equal chunks."""
    out: list[list[str]] = []
    for seg in segments:
        if len(seg) <= max_len:
            out.append(seg)
            continue
        parts = math.ceil(len(seg) / max_len)
        size = math.ceil(len(seg) / parts)
        out.extend(seg[i : i + size] for i in range(0, len(seg), size))
    return out


async def turn_vectors(ctx: SessionContext, state: PipelineState) -> np.ndarray:
    """float32 (len(state.text_turns), d) embeddings of the text turns (computed once per session)."""
    if state.turn_vecs is None:
        state.turn_vecs = await ctx.embed([t.content for t in state.text_turns])
    return state.turn_vecs


def assemble(all_turn_ids: Sequence[str], text_ids: Sequence[str], cuts: Sequence[int]) -> list[list[str]]:
    """Topics covering every turn: cuts index ``text_ids``; other turns follow the previous turn."""
    starts = {text_ids[c] for c in cuts}
    topics: list[list[str]] = []
    for tid in all_turn_ids:
        if not topics or tid in starts:
            topics.append([])
        topics[-1].append(tid)
    return topics


async def segment_topics(ctx: SessionContext, state: PipelineState) -> list[list[str]]:
    """Cut the session into topics (lists of consecutive turn ids); sets ``state.topics``."""
    p = ctx.config.pipeline
    vecs = await turn_vectors(ctx, state)
    cuts = cut_points(vecs, p.seg_threshold_start, p.seg_threshold_step, p.seg_threshold_max)
    topics = assemble(
        [t.turn_id for t in state.session.turns], [t.turn_id for t in state.text_turns], cuts
    )
    state.topics = cap_length(topics, p.max_topic_turns)
    logger.debug("session %s: %d topics %s", state.session.session_id, len(state.topics), state.topics)
    return state.topics
