"""LLM-judge NLI (the offline default NLI backend) against the ScriptedLLM."""

from __future__ import annotations

import json
import logging
import re

import pytest

from promem_fast.backends.base import LLMRequest
from promem_fast.backends.llm.scripted import ScriptedLLM
from promem_fast.backends.nli.llm_judge import JUDGE_SCHEMA, LLMJudgeNLI, parse_label, parse_labels
from promem_fast.backends.registry import create_nli
from promem_fast.config import Config, NLIConfig
from promem_fast.context import Services, SessionContext
from promem_fast.schema import Session, Turn

_TURN = re.compile(r"Turn: (.*)\nEntry: (.*)", re.S)
_GROUP = re.compile(r"Turn: (.*?)\n(Entry 1: .*)", re.S)


def _word_label(premise: str, hyp: str) -> str:
    words = set(premise.lower().split())
    hw = hyp.lower().split()
    if "not" in hw:
        return "false"
    return "true" if all(w in words for w in hw) else "not mentioned"


def word_judge(req: LLMRequest) -> str:
    """Entailment when every word of the entry occurs in the turn; 'not' in the entry -> contradiction.
    A grouped request ("Entry 1: ...") is answered entry by entry with the same rule."""
    content = req.messages[-1]["content"]
    group = _GROUP.search(content)
    if group:
        hyps = re.findall(r"^Entry \d+: (.*)$", group.group(2), re.M)
        return json.dumps({"labels": [_word_label(group.group(1), h) for h in hyps]})
    premise, hyp = _TURN.search(content).groups()
    label = _word_label(premise, hyp)
    if label == "true":
        return '```json\n{"label": "entailment"}\n```'  # fenced, as small models do
    return json.dumps({"label": {"false": "contradiction", "not mentioned": "neutral"}[label]})


PAIRS = [
    ("Melanie painted a sunset at the lake", "melanie painted a sunset"),
    ("Caroline went to a support group", "caroline went hiking"),
    ("Melanie painted a sunset at the lake", "melanie did not paint"),
    ("Melanie painted a sunset at the lake", "melanie painted a sunset"),  # duplicate of 0
    ("Caroline went to a support group", "caroline went hiking"),  # duplicate of 1
]


async def test_labels_order_and_dedup():
    llm = ScriptedLLM(rules={"nli": word_judge})
    nli = create_nli(NLIConfig(backend="llm", judge_group=1), llm=llm)
    assert isinstance(nli, LLMJudgeNLI)
    res = await nli.classify(PAIRS)
    assert [r.label for r in res] == ["entailment", "neutral", "contradiction", "entailment", "neutral"]
    assert res[0].probs == {"entailment": 1.0, "neutral": 0.0, "contradiction": 0.0}
    assert llm.generate_calls == 1  # one batched call
    assert len(llm.calls) == 3  # one request per unique pair
    for req in llm.calls:
        assert req.stage == "nli" and req.json_schema == JUDGE_SCHEMA and req.temperature == 0.0
        assert req.max_tokens <= 32


async def test_pairs_sharing_a_premise_go_in_one_request():
    llm = ScriptedLLM(rules={"nli": word_judge})
    nli = create_nli(NLIConfig(backend="llm", judge_group=4), llm=llm)
    res = await nli.classify(PAIRS)
    assert [r.label for r in res] == ["entailment", "neutral", "contradiction", "entailment", "neutral"]
    assert llm.generate_calls == 1 and len(llm.calls) == 2
    grouped, single = llm.calls
    assert grouped.messages[-1]["content"] == (
        "Turn: Melanie painted a sunset at the lake\nEntry 1: melanie painted a sunset\nEntry 2: melanie did not paint")
    labels = grouped.json_schema["properties"]["labels"]
    assert (labels["minItems"], labels["maxItems"]) == (2, 2)
    assert single.json_schema == JUDGE_SCHEMA  # a premise with one hypothesis keeps the one-entry prompt


async def test_groups_are_capped_at_judge_group():
    llm = ScriptedLLM(rules={"nli": word_judge})
    nli = LLMJudgeNLI(NLIConfig(judge_group=2), llm=llm)
    pairs = [("a b c d e", h) for h in ("a", "b", "z", "not c", "e")]
    res = await nli.classify(pairs)
    assert [r.label for r in res] == ["entailment", "entailment", "neutral", "contradiction", "entailment"]
    sizes = [len(re.findall(r"^Entry", r.messages[-1]["content"], re.M)) for r in llm.calls]
    assert sizes == [2, 2, 1]


async def test_group_answer_of_wrong_length_is_neutral_with_warning(caplog):
    llm = ScriptedLLM(rules={"nli": '{"labels": ["true"]}'})
    nli = LLMJudgeNLI(NLIConfig(judge_group=4), llm=llm)
    with caplog.at_level(logging.WARNING, logger="promem_fast.backends.nli.llm_judge"):
        res = await nli.classify([("a b", "a"), ("a b", "b"), ("a b", "c")])
    assert [r.label for r in res] == ["neutral"] * 3
    assert sum("unreadable" in r.message and "3 hypotheses" in r.message for r in caplog.records) == 1


async def test_an_entry_and_its_own_main_clause_are_judged_apart():
    llm = ScriptedLLM(rules={"nli": word_judge})
    nli = LLMJudgeNLI(NLIConfig(judge_group=4), llm=llm)
    premise = "nora likes tea because it is warm and nora runs"
    entry, head = "nora likes tea because it is warm", "nora likes tea"
    res = await nli.classify([(premise, entry), (premise, head), (premise, "nora runs")])
    assert [r.label for r in res] == ["entailment"] * 3
    groups = [re.findall(r"^Entry \d+: (.*)$", r.messages[-1]["content"], re.M) or
              [_TURN.search(r.messages[-1]["content"]).group(2)] for r in llm.calls]
    assert groups == [[entry, "nora runs"], [head]]


def test_parse_labels():
    assert parse_labels('{"labels": ["true", "not mentioned", "False"]}', 3) == ["entailment", "neutral", "contradiction"]
    assert parse_labels('["true", "true"]', 2) == ["entailment", "entailment"]
    assert parse_labels('{"labels": ["true"]}', 2) is None
    assert parse_labels('{"labels": ["true", "maybe"]}', 2) is None
    assert parse_labels("yes", 1) is None


async def test_usage_is_returned_per_request():
    llm = ScriptedLLM(rules={"nli": word_judge})
    nli = LLMJudgeNLI(NLIConfig(judge_group=4), llm=llm)
    results, usage = await nli.classify_with_usage(PAIRS)
    assert len(results) == 5 and len(usage) == 2  # 3 unique pairs over 2 premises
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
    assert st.nli_pairs == 5 and st.llm_calls == 3  # one request per unique pair (judge_group 1)
    assert st.prompt_tokens == sum(len(" ".join(m["content"] for m in r.messages).split()) for r in llm.calls)


def test_judge_answers_map_to_nli_labels():
    # the judge is asked "true / false / not mentioned" (small models handle it better)
    assert parse_label('{"label": "true"}') == "entailment"
    assert parse_label('{"label": "not mentioned"}') == "neutral"
    assert parse_label('{"label": "False"}') == "contradiction"
    assert parse_label('{"label": "perhaps"}') is None
