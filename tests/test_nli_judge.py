"""LLM-judge NLI (the offline default NLI backend) against the ScriptedLLM."""

from __future__ import annotations

import logging
import re

import pytest

from promem_fast.backends.base import LLMRequest
from promem_fast.backends.llm.scripted import ScriptedLLM
from promem_fast.backends.nli.llm_judge import JUDGE_SCHEMA, LLMJudgeNLI, parse_label
from promem_fast.backends.registry import create_nli
from promem_fast.config import Config, NLIConfig
from promem_fast.context import Services, SessionContext
from promem_fast.schema import Session, Turn

_TURN = re.compile(r"Turn: (.*)\nEntry: (.*)", re.S)


def word_judge(req: LLMRequest) -> str:
    """Entailment when every word of the entry occurs in the turn; 'not' in the entry -> contradiction."""
    premise, hyp = _TURN.search(req.messages[-1]["content"]).groups()
    words = set(premise.lower().split())
    hw = hyp.lower().split()
    if "not" in hw:
        return '{"label": "contradiction"}'
    if all(w in words for w in hw):
        return '```json\n{"label": "entailment"}\n```'  # fenced, as small models do
    return '{"label": "neutral"}'


PAIRS = [
    ("Melanie painted a sunset at the lake", "melanie painted a sunset"),
    ("Caroline went to a support group", "caroline went hiking"),
    ("Melanie painted a sunset at the lake", "melanie did not paint"),
    ("Melanie painted a sunset at the lake", "melanie painted a sunset"),  # duplicate of 0
    ("Caroline went to a support group", "caroline went hiking"),  # duplicate of 1
]


async def test_labels_order_and_dedup():
    llm = ScriptedLLM(rules={"nli": word_judge})
    nli = create_nli(NLIConfig(backend="llm"), llm=llm)
    assert isinstance(nli, LLMJudgeNLI)
    res = await nli.classify(PAIRS)
    assert [r.label for r in res] == ["entailment", "neutral", "contradiction", "entailment", "neutral"]
    assert res[0].probs == {"entailment": 1.0, "neutral": 0.0, "contradiction": 0.0}
    assert llm.generate_calls == 1  # one batched call
    assert len(llm.calls) == 3  # one request per unique pair
    for req in llm.calls:
        assert req.stage == "nli" and req.json_schema == JUDGE_SCHEMA and req.temperature == 0.0
        assert req.max_tokens <= 32


async def test_usage_is_returned_per_unique_request():
    llm = ScriptedLLM(rules={"nli": word_judge})
    nli = LLMJudgeNLI(NLIConfig(), llm=llm)
    results, usage = await nli.classify_with_usage(PAIRS)
    assert len(results) == 5 and len(usage) == 3
    assert all(u.prompt_tokens > 10 and u.completion_tokens >= 2 for u in usage)
    assert await nli.classify_with_usage([]) == ([], [])
    assert llm.generate_calls == 1  # empty input does not call the LLM


async def test_unreadable_output_is_neutral_with_warning(caplog):
    outputs = iter(["I think it is probably true", '{"label": "maybe"}', '{"label": "Entailment"}', "contradiction"])
    llm = ScriptedLLM(rules={"nli": lambda req: next(outputs)})
    nli = LLMJudgeNLI(NLIConfig(), llm=llm)
    pairs = [("a b", "c"), ("d e", "f"), ("g h", "i"), ("j k", "l")]
    with caplog.at_level(logging.WARNING, logger="promem_fast.backends.nli.llm_judge"):
        res = await nli.classify(pairs)
    assert [r.label for r in res] == ["neutral", "neutral", "entailment", "contradiction"]
    assert sum("unreadable" in r.message for r in caplog.records) == 2


async def test_truncated_output_is_neutral():
    class Truncating(ScriptedLLM):
        async def generate(self, requests):
            out = await super().generate(requests)
            for r in out:
                r.finish_reason = "length"
            return out

    nli = LLMJudgeNLI(NLIConfig(), llm=Truncating(rules={"nli": '{"label": "entailment"}'}))
    assert [r.label for r in await nli.classify([("x y", "x")])] == ["neutral"]


def test_parse_label():
    assert parse_label('{"label": "contradiction"}') == "contradiction"
    assert parse_label('<think>hmm</think>{"label":"NEUTRAL"}') == "neutral"
    assert parse_label("Entailment.") == "entailment"
    assert parse_label('{"verdict": "entailment"}') is None
    assert parse_label("") is None


def test_requires_llm():
    with pytest.raises(ValueError, match="llm="):
        LLMJudgeNLI(NLIConfig())


async def test_session_context_charges_judge_tokens_to_stage():
    llm = ScriptedLLM(rules={"nli": word_judge})
    nli = LLMJudgeNLI(NLIConfig(), llm=llm)

    class NoEmbed:
        name, dim = "none", 4

    session = Session(session_id="s1", turns=[Turn(turn_id="t0", role="user", content="hello")])
    ctx = SessionContext(session, Config(), Services(llm=llm, nli=nli, embed=NoEmbed()))
    res = await ctx.nli(PAIRS, stage="verify")
    assert len(res) == 5
    st = ctx.stats["verify"]
    assert st.nli_pairs == 5 and st.llm_calls == 3
    assert st.prompt_tokens == sum(len(" ".join(m["content"] for m in r.messages).split()) for r in llm.calls)


def test_judge_answers_map_to_nli_labels():
    # the judge is asked "true / false / not mentioned" (small models handle it better)
    assert parse_label('{"label": "true"}') == "entailment"
    assert parse_label('{"label": "not mentioned"}') == "neutral"
    assert parse_label('{"label": "False"}') == "contradiction"
    assert parse_label('{"label": "perhaps"}') is None
