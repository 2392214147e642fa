import pytest

from promem_fast.structured import StructuredOutputError, parse_json

SCHEMA = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
}


def test_plain_json():
    assert parse_json('{"facts": ["a", "b"]}', SCHEMA) == {"facts": ["a", "b"]}


def test_code_fence():
    text = 'Here you go:\n```json\n{"facts": ["Caroline went to a support group."]}\n```\nDone.'
    assert parse_json(text, SCHEMA) == {"facts": ["Caroline went to a support group."]}


def test_leading_prose():
    assert parse_json('Sure! The facts are: {"facts": ["x"]}', SCHEMA) == {"facts": ["x"]}


def test_think_block_removed():
    text = '<think>the user said {"facts": ["wrong"]} maybe</think>\n{"facts": ["right"]}'
    assert parse_json(text, SCHEMA) == {"facts": ["right"]}


def test_unclosed_think_block_is_empty_output():
    with pytest.raises(StructuredOutputError, match="empty"):
        parse_json("<think>still thinking about it", SCHEMA)


def test_trailing_comma_repaired():
    assert parse_json('{"facts": ["a", "b",]}', SCHEMA) == {"facts": ["a", "b"]}


def test_truncated_flag_is_error_even_if_parseable():
    with pytest.raises(StructuredOutputError, match="truncated"):
        parse_json('{"facts": ["a"]}', SCHEMA, truncated=True)


def test_cut_off_output_is_not_repaired_into_partial_value():
    with pytest.raises(StructuredOutputError, match="cut off"):
        parse_json('{"facts": ["Caroline likes hiking", "Caroline adopt', SCHEMA)


def test_schema_violation():
    with pytest.raises(StructuredOutputError, match="schema"):
        parse_json('{"facts": [1, 2]}', SCHEMA)


def test_apostrophes_inside_strings_are_fine():
    assert parse_json('{"facts": ["Melanie\'s kids"]}', SCHEMA) == {"facts": ["Melanie's kids"]}


def test_every_request_schema_of_a_run_is_a_valid_json_schema(monkeypatch):
    # parse_json does not check schemas against the meta-schema (a cost per LLM request);
    # this test checks every schema one whole scripted run asks for, over all stages.
    import json

    import jsonschema

    from conftest import make_session
    from promem_fast import Extractor
    from promem_fast.config import Config
    from promem_fast.context import Services
    from promem_fast import structured

    seen: set[str] = set()
    build = structured._validator

    def spy(schema_json: str):
        seen.add(schema_json)
        return build(schema_json)

    monkeypatch.setattr(structured, "_validator", spy)
    cfg = Config()
    cfg.llm.backend, cfg.nli.backend, cfg.embed.backend = "scripted", "llm", "hash"
    graph = Extractor(cfg, Services.from_config(cfg)).extract(make_session())
    assert graph.events and len(seen) >= 5  # extraction, CC, verification, relations all asked
    for schema_json in seen:
        schema = json.loads(schema_json)
        jsonschema.validators.validator_for(schema).check_schema(schema)


@pytest.mark.parametrize("module, name", [
    ("promem_fast.prompts.verify", "ADJUDICATE_SCHEMA"),
    ("promem_fast.prompts.v1", "EVIDENCE_SCHEMA"), ("promem_fast.prompts.relate", "ANSWERABLE_SCHEMA"),
    ("promem_fast.prompts.relate", "SUPPORTED_SCHEMA"), ("promem_fast.eval.judge_prompts", "INTEGRITY_SCHEMA"),
    ("promem_fast.eval.judge_prompts", "ACCURACY_SCHEMA"), ("promem_fast.eval.judge_prompts", "QA_SCHEMA"),
    ("promem_fast.eval.judge_prompts", "UPDATE_SCHEMA"), ("promem_fast.backends.nli.llm_judge", "JUDGE_SCHEMA"),
    ("promem_fast.qa", "ANSWER_SCHEMA"), ("promem_fast.eval.halumem_output", "HALUMEM_LINE_SCHEMA"),
])
def test_fixed_request_schemas_are_valid_json_schemas(module, name):
    # the schemas not built per session (the run above covers those): checked here, not per request
    import importlib

    import jsonschema

    schema = getattr(importlib.import_module(module), name)
    assert isinstance(schema, dict) and schema.get("type")
    jsonschema.validators.validator_for(schema).check_schema(schema)
