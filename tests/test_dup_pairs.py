"""benchmarks/dup_pairs.py: how two labelled memories of one session are classed, and the
list judge's request (one numbered list per session, one answer per entry)."""

from __future__ import annotations

import json

import jsonschema
from _bench_loader import load_benchmark

dup_pairs = load_benchmark("dup_pairs")


def test_pair_kind():
    c = lambda fact: {"label": "correct", "fact": fact}  # noqa: E731
    assert dup_pairs.pair_kind(c("agency"), c("agency")) == "same_fact"
    assert dup_pairs.pair_kind(c("agency"), c("family")) == "distinct"
    assert dup_pairs.pair_kind({"label": "duplicate", "fact": "agency"}, c("agency")) == "same_fact"
    # a correct memory without a fact key, or a filler, says nothing about duplication
    assert dup_pairs.pair_kind(c(""), c("agency")) == "other"
    assert dup_pairs.pair_kind({"label": "filler", "fact": "agency"}, c("agency")) == "other"


def test_list_request_asks_one_answer_per_later_entry():
    req = dup_pairs._list_request("Jon", ["Jon lost his job.", "Jon was laid off.", "Jon dances."])
    body = req.messages[-1]["content"]
    assert "1. Jon lost his job.\n2. Jon was laid off.\n3. Jon dances." in body
    schema = req.json_schema
    assert schema["required"] == ["2", "3"]
    jsonschema.validate({"2": 1, "3": 0}, schema)
    for bad in ({"2": 2, "3": 0}, {"2": 1}, {"2": 1, "3": 0, "4": 1}):  # itself, missing, unknown entry
        try:
            jsonschema.validate(bad, schema)
        except jsonschema.ValidationError:
            continue
        raise AssertionError(f"schema accepted {json.dumps(bad)}")


def test_same_turn_rule_counts_merges_at_each_share():
    """3 of the shorter memory's 4 content words in the fuller one of a shared source turn:
    merged at 75 %, not at 80 %; a merge that keeps a wrong memory and drops a correct one is
    counted apart. The module's share (what dedup uses) is left as it is."""
    from promem_fast.stages import verify

    pair = {"shared_source": True, "user": "Nora", "kind": "other", "labels": ("wrong", "correct"),
            "texts": ("Nora has been rehearsing a folk song that she will sing at a local fair in June.",
                      "Nora is planning to sing at a local fair.")}
    before = verify.SAME_TURN_SHARE
    at75, at80 = dup_pairs.same_turn_rule([pair], 0.75), dup_pairs.same_turn_rule([pair], 0.8)
    assert at75 == {"share": 0.75, "merged_by_kind": {"other": 1}, "kept_wrong_or_filler": 1}
    assert at80 == {"share": 0.8, "merged_by_kind": {}, "kept_wrong_or_filler": 0}
    assert verify.SAME_TURN_SHARE == before
