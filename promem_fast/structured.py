"""Tolerant parsing of structured LLM output.

Small models wrap JSON in code fences, lead with prose or emit ``<think>`` blocks; we
strip those, then parse. Truncated output (``finish_reason == "length"``) or output
that does not validate against the request's JSON Schema is *never* repaired into
memory: the caller retries once and then raises :class:`StructuredOutputError`.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Optional

import json_repair
import jsonschema

_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)(```|$)", re.S)


class StructuredOutputError(ValueError):
    """The LLM's output could not be read as the requested JSON (after retries)."""

    def __init__(self, message: str, raw: str = "", stage: str = ""):
        super().__init__(message)
        self.raw = raw
        self.stage = stage


def _candidate(text: str) -> str:
    text = _THINK.sub("", text).strip()
    m = _FENCE.search(text)
    if m:
        return m.group(1).strip()
    # leading prose: start at the first bracket or brace
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    return text[min(starts):].strip() if starts else text


def parse_json(text: str, schema: Optional[dict[str, Any]] = None, *, truncated: bool = False) -> Any:
    """Parse ``text`` as JSON, tolerating fences, prose and ``<think>`` blocks.

    Args:
        text: raw completion text.
        schema: JSON Schema the value must satisfy (checked with ``jsonschema``).
        truncated: True when the backend stopped at max_tokens; always an error.

    Raises:
        StructuredOutputError: truncated, unparseable, or schema-invalid output.
    """
    if truncated:
        raise StructuredOutputError("output truncated at max_tokens", raw=text)
    body = _candidate(text)
    if not body:
        raise StructuredOutputError("empty output", raw=text)
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        # Syntax slips (single quotes, trailing commas) are repaired; a value that
        # only parses by inventing a closing bracket is treated as truncated.
        if _unbalanced(body):
            raise StructuredOutputError("output is cut off (unbalanced brackets)", raw=text) from None
        value = json_repair.loads(body)
        if value in ("", None):
            raise StructuredOutputError("output is not JSON", raw=text) from None
    if schema is not None:
        try:
            _validator(json.dumps(schema, sort_keys=True)).validate(value)
        except jsonschema.ValidationError as e:
            raise StructuredOutputError(f"output does not match schema: {e.message}", raw=text) from None
    return value


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str):
    # One validator per schema. The schema itself is not checked against the meta-schema
    # here: request schemas are built by this package (each session's enums make them
    # distinct, so a check here cost ~1.5 ms per LLM request); tests check them instead.
    schema = json.loads(schema_json)
    return jsonschema.validators.validator_for(schema)(schema)


def _unbalanced(body: str) -> bool:
    depth = 0
    in_str = False
    esc = False
    quote = ""
    for ch in body:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                in_str = False
        elif ch == '"':
            in_str, quote = True, ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return depth > 0 or in_str
