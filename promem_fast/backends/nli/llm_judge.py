"""NLI by asking the configured LLM (the offline default while no MNLI checkpoint is reachable).

ProMem §3.4 checks each memory entry (hypothesis) against its source dialogue turn
(premise) with an NLI model. Without a roberta-large-mnli checkpoint the same question
goes to the pipeline's LLM as a three-way question with a JSON-schema-constrained answer
``{"label": "true" | "false" | "not mentioned"}``, read as entailment / contradiction /
neutral. Small models answer "is it true according to the turn" far better than they use
the NLI terms: on 8 hand-labelled LoCoMo-style pairs the 1.5B embedded model got 6 right
this way and 3 with the entailment/neutral/contradiction wording.

Unique pairs are sent as one ``llm.generate`` call (one request per unique pair) so the
backend can batch them. The prompt is kept short: the embedded default is a 1.5B model on
a few CPU cores.
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
        cfg: NLIConfig (only its identity matters here; the LLM's own config sets the model).
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
        self.model_name = f"llm-judge:{getattr(llm, 'model_name', getattr(llm, 'name', 'llm'))}"

    async def classify_with_usage(
        self, pairs: Sequence[tuple[str, str]]
    ) -> tuple[list[NLIResult], list[LLMResponse]]:
        """Classify (premise, hypothesis) pairs and return the LLM responses spent on them.

        Returns:
            (results in input order, one LLMResponse per *unique* pair) — the caller
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
        requests = [
            LLMRequest(
                messages=judge_messages(p, h),
                json_schema=JUDGE_SCHEMA,
                max_tokens=self.max_tokens,
                temperature=0.0,
                stage="nli",
            )
            for p, h in unique
        ]
        responses = await self.llm.generate(requests)
        if len(responses) != len(requests):
            raise RuntimeError(
                f"LLM backend returned {len(responses)} responses for {len(requests)} NLI requests"
            )
        verdicts = []
        for (p, h), resp in zip(unique, responses):
            label = None if resp.finish_reason == "length" else parse_label(resp.text)
            if label is None:
                logger.warning(
                    "NLI judge output unreadable (finish_reason=%s): %r; using 'neutral' for hypothesis %r",
                    resp.finish_reason, resp.text[:200], h[:80],
                )
                label = "neutral"
            verdicts.append(NLIResult(label, {k: float(k == label) for k in LABELS}))
        return [verdicts[i] for i in slot], list(responses)

    async def classify(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        """pairs: (premise, hypothesis). Results in input order; probs are one-hot."""
        results, _ = await self.classify_with_usage(pairs)
        return results
