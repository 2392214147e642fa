"""NLI by asking the configured LLM (the offline default while no MNLI checkpoint is reachable).

ProMem §3.4 checks each memory entry (hypothesis) against its source dialogue turn
(premise) with an NLI model. Without a roberta-large-mnli checkpoint the same question
goes to the pipeline's LLM as a three-way question with a JSON-schema-constrained answer
``{"label": "true" | "false" | "not mentioned"}``, read as entailment / contradiction /
neutral. Small models answer "is it true according to the turn" far better than they use
the NLI terms: on 8 hand-labelled LoCoMo-style pairs the 1.5B embedded model got 6 right
this way and 3 with the entailment/neutral/contradiction wording.

Unique pairs are sent as one ``llm.generate`` call so the backend can batch them. Pairs
that share a premise go in one request of up to ``NLIConfig.judge_group`` hypotheses
(``Entry 1: ...``, answered ``{"labels": [...]}``, one label per entry): HV checks several
entries, and every atomic fact of an entry, against the same turn, and one premise per
request instead of one per pair cuts the judge's prompt tokens. A premise with a single
hypothesis keeps the one-entry prompt. The default is 1 (no grouping): judged together, the
1.5B model rejected true preference facts of a long like/dislike turn (docs/pipeline.md).
The prompts are kept short: the embedded default is a 1.5B model on a few CPU cores.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

from ...structured import StructuredOutputError, parse_json
from ..base import LLMBackend, LLMRequest, LLMResponse, NLIResult

logger = logging.getLogger(__name__)

LABELS = ("entailment", "neutral", "contradiction")
# what the judge is asked to answer -> NLI label
ANSWERS = {"true": "entailment", "not mentioned": "neutral", "false": "contradiction"}

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": list(ANSWERS)}},
    "required": ["label"],
    "additionalProperties": False,
}

_SYSTEM = (
    "You check a memory entry against one chat turn. According to the turn, is the entry "
    "true, false, or not mentioned? Dates in brackets tell when the turn was said. "
    'Answer with JSON {"label": "true" | "false" | "not mentioned"}.'
)


_GROUP_SYSTEM = (
    "You check memory entries against one chat turn. According to the turn, is each entry "
    "true, false, or not mentioned? Dates in brackets tell when the turn was said. "
    'Answer with JSON {"labels": [...]}, one of "true", "false", "not mentioned" per entry, in order.'
)


def group_schema(n: int) -> dict[str, Any]:
    """JSON schema of a grouped judgement: exactly ``n`` labels."""
    return {
        "type": "object",
        "properties": {"labels": {"type": "array", "minItems": n, "maxItems": n,
                                  "items": {"type": "string", "enum": list(ANSWERS)}}},
        "required": ["labels"],
        "additionalProperties": False,
    }


def group_messages(premise: str, hypotheses: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking for the NLI label of each hypothesis (memory entry) against one
    premise (dialogue turn); entries numbered from 1."""
    lines = "\n".join(f"Entry {k + 1}: {h}" for k, h in enumerate(hypotheses))
    return [
        {"role": "system", "content": _GROUP_SYSTEM},
        {"role": "user", "content": f"Turn: {premise}\n{lines}"},
    ]


def parse_labels(text: str, n: int) -> Optional[list[str]]:
    """The ``n`` labels of a grouped judgement, or None when the completion does not hold
    exactly ``n`` readable labels (``{"labels": [...]}`` or a bare list)."""
    try:
        value = parse_json(text)
    except StructuredOutputError:
        return None
    if isinstance(value, dict):
        value = value.get("labels")
    if not isinstance(value, list) or len(value) != n:
        return None
    labels = [_to_label(v) if isinstance(v, str) else None for v in value]
    return None if any(x is None for x in labels) else labels  # type: ignore[return-value]


def judge_messages(premise: str, hypothesis: str) -> list[dict[str, str]]:
    """Chat messages asking for the NLI label of (premise = dialogue turn, hypothesis = memory entry)."""
    return [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"Turn: {premise}\nEntry: {hypothesis}"},
    ]


def parse_label(text: str) -> Optional[str]:
    """The label in a judge completion, or None when it cannot be read.

    Accepts ``{"label": ...}`` JSON (after the tolerant cleanup of :func:`parse_json`;
    the label compared case-insensitively); a bare label word such as ``entailment`` is accepted too, since small models sometimes drop
    the braces when decoding is not constrained.
    """
    try:
        value = parse_json(text)  # schema checked below, case-insensitively
    except StructuredOutputError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("label"), str):
        return _to_label(value["label"])
    return _to_label(text.strip().strip('."\'`'))


def _to_label(word: str) -> Optional[str]:
    word = word.strip().lower()
    if word in LABELS:  # NLI terms are accepted too
        return word
    return ANSWERS.get(word)


class LLMJudgeNLI:
    """NLI backend that asks an :class:`LLMBackend` (registry name ``"llm"``).

    Args:
        cfg: NLIConfig; its ``judge_group`` is the most hypotheses judged against one premise
            in one request (None: 1, one request per pair). The LLM's own config sets the model.
        llm: the LLM backend to ask; required.
        max_tokens: completion cap per judgement (tokens); the answer is ~8 tokens.

    Raises:
        ValueError: ``llm`` not given.
    """

    name = "llm"

    def __init__(self, cfg=None, llm: Optional[LLMBackend] = None, max_tokens: int = 16, **_: object):
        if llm is None:
            raise ValueError("LLMJudgeNLI needs llm=<LLMBackend> (the NLI judge asks the pipeline's LLM)")
        self.cfg = cfg
        self.llm = llm
        self.max_tokens = max_tokens
        self.group = max(1, int(getattr(cfg, "judge_group", 1) or 1))
        self.model_name = f"llm-judge:{getattr(llm, 'model_name', getattr(llm, 'name', 'llm'))}"

    async def classify_with_usage(
        self, pairs: Sequence[tuple[str, str]]
    ) -> tuple[list[NLIResult], list[LLMResponse]]:
        """Classify (premise, hypothesis) pairs and return the LLM responses spent on them.

        Returns:
            (results in input order, one LLMResponse per request: a unique pair, or up to
            ``judge_group`` unique pairs with one premise) — the caller
            charges the responses' tokens to its stage (context.SessionContext.nli).
            An unreadable answer becomes ``neutral`` (logged), so the entry goes on to
            atomic verification rather than being kept unverified.
        """
        pairs = [(str(p), str(h)) for p, h in pairs]
        if not pairs:
            return [], []
        index: dict[tuple[str, str], int] = {}
        slot = [index.setdefault(pair, len(index)) for pair in pairs]
        unique = list(index)
        by_premise: dict[str, list[int]] = {}
        for k, (p, _) in enumerate(unique):
            by_premise.setdefault(p, []).append(k)
        groups = [g for ks in by_premise.values() for g in self._groups(ks, unique)]
        requests = [self._request([unique[k] for k in g]) for g in groups]
        responses = await self.llm.generate(requests)
        if len(responses) != len(requests):
            raise RuntimeError(
                f"LLM backend returned {len(responses)} responses for {len(requests)} NLI requests"
            )
        verdicts: list[Optional[NLIResult]] = [None] * len(unique)
        for g, resp in zip(groups, responses):
            if resp.finish_reason == "length":
                labels = None
            elif len(g) == 1:
                one = parse_label(resp.text)
                labels = [one] if one is not None else None
            else:
                labels = parse_labels(resp.text, len(g))
            if labels is None:
                logger.warning(
                    "NLI judge output unreadable (finish_reason=%s): %r; using 'neutral' for %d hypotheses from %r",
                    resp.finish_reason, resp.text[:200], len(g), unique[g[0]][1][:80],
                )
                labels = ["neutral"] * len(g)
            for k, label in zip(g, labels):
                verdicts[k] = NLIResult(label, {x: float(x == label) for x in LABELS})
        return [verdicts[i] for i in slot], list(responses)  # type: ignore[misc]

    def _groups(self, ks: list[int], unique: list[tuple[str, str]]) -> list[list[int]]:
        """Pair indices ``ks`` (one premise, input order) in groups of at most ``self.group``.
        A hypothesis never shares a group with one that contains it or that it contains (an
        entry and its own main clause, checked apart because judged together a small model
        copies one label to both): it goes to the first group without such a relative."""
        groups: list[list[int]] = []
        for k in ks:
            h = unique[k][1].casefold()
            for g in groups:
                if len(g) < self.group and not any(h in unique[j][1].casefold() or unique[j][1].casefold() in h
                                                   for j in g):
                    g.append(k)
                    break
            else:
                groups.append([k])
        return groups

    def _request(self, pairs: Sequence[tuple[str, str]]) -> LLMRequest:
        if len(pairs) == 1:
            (p, h), = pairs
            return LLMRequest(messages=judge_messages(p, h), json_schema=JUDGE_SCHEMA,
                              max_tokens=self.max_tokens, temperature=0.0, stage="nli")
        n = len(pairs)
        return LLMRequest(messages=group_messages(pairs[0][0], [h for _, h in pairs]),
                          json_schema=group_schema(n), max_tokens=8 + self.max_tokens * n,
                          temperature=0.0, stage="nli")

    async def classify(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        """pairs: (premise, hypothesis). Results in input order; probs are one-hot."""
        results, _ = await self.classify_with_usage(pairs)
        return results
