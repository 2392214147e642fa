"""Scripted LLM for tests and benchmarks: answers come from rules, not a model."""

from __future__ import annotations

import asyncio
from typing import Callable, Mapping, Optional, Sequence, Union

from ..base import LLMRequest, LLMResponse

Rule = Union[str, Callable[[LLMRequest], str]]


def count_tokens(text: str) -> int:
    """Whitespace token count: deterministic stand-in for a tokenizer."""
    return len(text.split())


class ScriptedLLM:
    """Deterministic LLM.

    Args:
        cfg: ignored (registry signature).
        rules: ``{stage: rule}`` or one callable for every request. A rule is a string
            (returned as is) or ``f(request) -> str``. A stage with no rule raises KeyError
            naming the stage, so a test never passes on a silent default.
        latency_s: sleep once per ``generate`` call (a batched call costs one latency),
            to model a server round trip in benchmarks.
    """

    name = "scripted"
    model_name = "scripted"

    def __init__(
        self,
        cfg=None,
        rules: Optional[Union[Mapping[str, Rule], Callable[[LLMRequest], str]]] = None,
        latency_s: float = 0.0,
        **_: object,
    ):
        self.rules = rules or {}
        self.latency_s = latency_s
        self.calls: list[LLMRequest] = []
        self.generate_calls = 0

    def _answer(self, req: LLMRequest) -> str:
        rule: Rule
        if callable(self.rules):
            rule = self.rules
        else:
            try:
                rule = self.rules[req.stage]
            except KeyError:
                raise KeyError(f"ScriptedLLM has no rule for stage {req.stage!r}") from None
        return rule(req) if callable(rule) else rule

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        self.generate_calls += 1
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        out = []
        for req in requests:
            self.calls.append(req)
            text = self._answer(req)
            prompt = " ".join(m["content"] for m in req.messages)
            out.append(LLMResponse(text, count_tokens(prompt), count_tokens(text), 0, "stop"))
        return out
