"""HaluMem output contract: the per-user JSONL that HaluMem's judge script reads.

File: ``DIR/{frame}-{version}/{frame}_eval_results.jsonl``, one JSON line per user.

Field names were checked against IAAR-Shanghai/HaluMem (GitHub mirror MemTensor/HaluMem,
commit 6574e50): ``eval/evaluation.py`` (``process_user`` and ``main``) reads

* user: ``uuid``, ``user_name``, ``sessions``;
* session: ``is_generated_qa_session`` (optional; such sessions are skipped),
  ``memory_points``, ``extracted_memories`` (list of str, joined with newlines for the
  judge), ``dialogue[]`` with ``timestamp``, ``role``, ``content``, ``questions``
  (optional), ``add_dialogue_duration_ms`` (summed for timing);
* memory point: ``memory_content``, ``memory_source`` (``"interference"`` is excluded from
  recall), ``importance``, ``memory_type`` (aggregated per "Event Memory",
  "Persona Memory", "Relationship Memory"), ``is_update`` (the *string* "True"/"False"),
  ``original_memories``, and ``memories_from_system`` (list of str): an update point
  (``is_update == "True"``) goes to the memory-update judge only when
  ``memories_from_system`` is non-empty, else it is judged for integrity. The reference
  writer fills it after each session for every point with ``is_update == "True"`` and
  non-empty ``original_memories``: the top-10 memories retrieved with the point's
  ``memory_content`` as query; :mod:`.halumem_eval` does the same
  (:attr:`HaluMemSessionResult.memories_from_system`) and also records that retrieval's
  time as the point's ``search_duration_ms`` (an extra key; HaluMem ignores it);
* question: ``question``, ``answer``, ``evidence[].memory_content``,
  ``system_response`` and ``search_duration_ms`` (summed for timing).

``eval/eval_memos.py`` (the reference writer) also adds ``conv_id`` per session and
``context`` / ``response_duration_ms`` per question; they are optional here.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from ..schema import Session

logger = logging.getLogger(__name__)

__all__ = [
    "HALUMEM_LINE_SCHEMA", "HaluMemAnswer", "HaluMemSessionResult", "halumem_output_path",
    "build_user_line", "validate_halumem_output", "write_halumem_output",
]

HALUMEM_TIMESTAMP_FORMAT = "%b %d, %Y, %H:%M:%S"  # "Sep 04, 2025, 09:05:32"
MEMORY_TYPES = ["Event Memory", "Persona Memory", "Relationship Memory"]

_MEMORY_POINT = {
    "type": "object",
    "required": ["memory_content", "memory_type", "memory_source", "is_update", "importance", "original_memories"],
    "properties": {
        "memory_content": {"type": "string"},
        "memory_type": {"enum": MEMORY_TYPES},
        "memory_source": {"type": "string"},
        "is_update": {"enum": ["True", "False"]},
        "importance": {"type": "number", "minimum": 0},
        "original_memories": {"type": "array", "items": {"type": "string"}},
        "memories_from_system": {"type": "array", "items": {"type": "string"}},
        "search_duration_ms": {"type": "number", "minimum": 0},
    },
}
_TURN = {
    "type": "object",
    "required": ["role", "content", "timestamp"],
    "properties": {
        "role": {"enum": ["user", "assistant"]},
        "content": {"type": "string"},
        "timestamp": {"type": "string", "minLength": 1},
        "dialogue_turn": {"type": "integer", "minimum": 0},
    },
}
_QUESTION = {
    "type": "object",
    "required": ["question", "answer", "evidence", "system_response", "search_duration_ms"],
    "properties": {
        "question": {"type": "string"},
        "evidence": {
            "type": "array",
            "items": {"type": "object", "required": ["memory_content"],
                      "properties": {"memory_content": {"type": "string"}}},
        },
        "system_response": {"type": "string"},
        "search_duration_ms": {"type": "number", "minimum": 0},
        "response_duration_ms": {"type": "number", "minimum": 0},
        "context": {"type": "string"},
    },
}
_SESSION = {
    "type": "object",
    "required": ["add_dialogue_duration_ms"],
    "properties": {
        "memory_points": {"type": "array", "items": _MEMORY_POINT},
        "dialogue": {"type": "array", "items": _TURN},
        "extracted_memories": {"type": "array", "items": {"type": "string"}},
        "add_dialogue_duration_ms": {"type": "number", "minimum": 0},
        "questions": {"type": "array", "items": _QUESTION},
        "is_generated_qa_session": {"type": "boolean"},
        "conv_id": {"type": "string"},
    },
    # Filler sessions (HaluMem-Long) carry only timing; every other session needs the
    # fields evaluation.py indexes directly.
    "if": {"properties": {"is_generated_qa_session": {"const": True}}, "required": ["is_generated_qa_session"]},
    "else": {"required": ["memory_points", "dialogue", "extracted_memories"]},
}

HALUMEM_LINE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "HaluMem eval_results.jsonl line (one user)",
    "type": "object",
    "required": ["uuid", "user_name", "sessions"],
    "properties": {
        "uuid": {"type": "string", "minLength": 1},
        "user_name": {"type": "string", "minLength": 1},
        "sessions": {"type": "array", "items": _SESSION},
    },
}


@dataclass
class HaluMemAnswer:
    """The system's answer to one HaluMem question (aligned with ``metadata["questions"]``)."""

    system_response: str
    search_duration_ms: float
    context: Optional[str] = None
    response_duration_ms: Optional[float] = None


@dataclass
class HaluMemSessionResult:
    """What the system produced for one loaded HaluMem session.

    ``session`` must come from :func:`promem_fast.io.load_halumem` (its metadata holds
    ``uuid``, ``memory_points``, ``questions``). ``memories_from_system`` maps the index of
    an update memory point (in ``metadata["memory_points"]``) to the memory texts the
    system retrieved for it (top-k, best first); ``update_search_duration_ms`` maps the
    same index to that retrieval's wall time in ms (written as the point's
    ``search_duration_ms``). An index outside ``memory_points`` raises ValueError on write.
    """

    session: Session
    extracted_memories: list[str]
    add_dialogue_duration_ms: float
    answers: list[HaluMemAnswer] = field(default_factory=list)
    memories_from_system: dict[int, list[str]] = field(default_factory=dict)
    update_search_duration_ms: dict[int, float] = field(default_factory=dict)


_TURN_NO_RE = re.compile(r"^t(\d+)(?:_\d+)?$")


def _dialogue(session: Session) -> list[dict]:
    out = []
    for t in session.turns:
        if t.timestamp is None:
            raise ValueError(f"session {session.session_id!r} turn {t.turn_id!r}: HaluMem output needs a timestamp")
        row: dict[str, Any] = {
            "role": t.role,
            "content": t.content,
            "timestamp": t.timestamp.strftime(HALUMEM_TIMESTAMP_FORMAT),
        }
        m = _TURN_NO_RE.match(t.turn_id)
        if m:
            row["dialogue_turn"] = int(m.group(1))
        out.append(row)
    return out


def _session_record(r: HaluMemSessionResult) -> dict:
    s = r.session
    md = s.metadata
    if md.get("is_generated_qa_session"):
        return {"is_generated_qa_session": True, "add_dialogue_duration_ms": float(r.add_dialogue_duration_ms)}
    points = copy.deepcopy(md.get("memory_points") or [])
    for idx, mems in r.memories_from_system.items():
        if not 0 <= idx < len(points):
            raise ValueError(f"session {s.session_id!r}: memories_from_system index {idx} outside memory_points")
        points[idx]["memories_from_system"] = [str(x) for x in mems]
    for idx, ms in r.update_search_duration_ms.items():
        if not 0 <= idx < len(points):
            raise ValueError(f"session {s.session_id!r}: update_search_duration_ms index {idx} outside memory_points")
        points[idx]["search_duration_ms"] = float(ms)
    questions = md.get("questions") or []
    if len(r.answers) != len(questions):
        raise ValueError(
            f"session {s.session_id!r}: {len(r.answers)} answers for {len(questions)} questions"
        )
    qs = []
    for q, a in zip(questions, r.answers):
        row = copy.deepcopy(q)
        row["system_response"] = a.system_response
        row["search_duration_ms"] = float(a.search_duration_ms)
        if a.context is not None:
            row["context"] = a.context
        if a.response_duration_ms is not None:
            row["response_duration_ms"] = float(a.response_duration_ms)
        qs.append(row)
    return {
        "memory_points": points,
        "dialogue": _dialogue(s),
        "extracted_memories": [str(x) for x in r.extracted_memories],
        "add_dialogue_duration_ms": float(r.add_dialogue_duration_ms),
        "questions": qs,
    }


def build_user_line(results: list[HaluMemSessionResult]) -> dict:
    """One output line for one user; sessions in session-number order.

    Raises ValueError if the sessions belong to different users or lack HaluMem metadata.
    """
    if not results:
        raise ValueError("no session results for the user")
    uuids = {r.session.metadata.get("uuid") for r in results}
    if len(uuids) != 1 or None in uuids:
        raise ValueError(f"session results must share one HaluMem uuid, got {sorted(map(str, uuids))}")
    ordered = sorted(results, key=lambda r: r.session.metadata.get("session_number", 0))
    return {
        "uuid": str(next(iter(uuids))),
        "user_name": ordered[0].session.user_name,
        "sessions": [_session_record(r) for r in ordered],
    }


def halumem_output_path(out_dir: Union[str, Path], frame: str = "promem", version: str = "default") -> Path:
    """``out_dir/{frame}-{version}/{frame}_eval_results.jsonl``."""
    return Path(out_dir) / f"{frame}-{version}" / f"{frame}_eval_results.jsonl"


def write_halumem_output(
    results: Iterable[HaluMemSessionResult],
    out_dir: Union[str, Path],
    *,
    frame: str = "promem",
    version: str = "default",
    validate: bool = True,
) -> Path:
    """Write the HaluMem results file (overwrites), grouping session results by user uuid
    in first-seen order. Update memory points (``is_update == "True"``, non-empty
    ``original_memories``) left without ``memories_from_system`` (e.g. nothing was
    retrieved: the memory was empty) are judged for integrity by HaluMem (their count is
    logged at INFO). Returns the file path.
    """
    groups: dict[str, list[HaluMemSessionResult]] = {}
    for r in results:
        groups.setdefault(str(r.session.metadata.get("uuid")), []).append(r)
    path = halumem_output_path(out_dir, frame, version)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [build_user_line(g) for g in groups.values()]
    for line in lines:
        missing = sum(
            1 for s in line["sessions"] for p in s.get("memory_points", [])
            if p.get("is_update") == "True" and p.get("original_memories") and not p.get("memories_from_system")
        )
        if missing:
            logger.info("user %s: %d update memory point(s) without memories_from_system "
                        "(HaluMem scores them as integrity, not update)", line["uuid"], missing)
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    tmp.replace(path)
    if validate:
        validate_halumem_output(path)
    return path


def validate_halumem_output(path: Union[str, Path]) -> int:
    """Validate every line of a HaluMem results file against :data:`HALUMEM_LINE_SCHEMA`.

    Returns the number of user lines. Raises ValueError naming the line and the JSON
    path of the first error (or invalid JSON); ValueError too if the file has no line.
    """
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(HALUMEM_LINE_SCHEMA)
    path = Path(path)
    n = 0
    with open(path, "r", encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {lineno}: invalid JSON: {exc}") from exc
            err = next(iter(sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))), None)
            if err is not None:
                loc = "/".join(str(p) for p in err.absolute_path) or "(root)"
                raise ValueError(f"{path}: line {lineno}: at {loc}: {err.message}")
            n += 1
    if n == 0:
        raise ValueError(f"{path}: no result lines")
    return n
