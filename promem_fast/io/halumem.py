"""HaluMem (IAAR-Shanghai/HaluMem Medium/Long JSONL; one user per line).

A line is ``{uuid, persona_info, sessions: [{start_time, end_time, memory_points,
dialogue: [{role, content, timestamp, dialogue_turn}], questions?,
is_generated_qa_session?}], ...}``.

Mapping to :class:`~promem_fast.schema.Session` (one per ``sessions[i]``, i 1-based):

* ``session_id = f"{uuid}/session_{i}"``; ``user_name`` from ``persona_info``
  ("Name: X;"), "User" when absent; ``start_time`` from ``start_time``;
* turns from ``dialogue``: role, content, timestamp ("Sep 04, 2025, 09:05:32");
  ``turn_id = f"t{dialogue_turn}"``. HaluMem numbers a user/assistant *pair*, so the
  id repeats; the second and later occurrences get a suffix: ``t0``, ``t0_1``, ``t0_2``
  (position-based when ``dialogue_turn`` is absent);
* ``metadata``: ``memory_points``, ``questions`` (``[]`` when absent), ``uuid``,
  ``persona_info``, ``end_time`` (string as given), ``session_number``,
  ``is_generated_qa_session`` (HaluMem-Long filler sessions).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Optional

from ..schema import Session, Turn
from ..timeparse import parse_timestamp
from ._common import check_selection, iter_jsonl, normalise_role, require, require_str

logger = logging.getLogger(__name__)

_NAME_RE = re.compile(r"Name:\s*([^;\n]+)")


def user_name_from_persona(persona_info: Any) -> str:
    """The ``Name: X;`` field of HaluMem's ``persona_info``; "User" when absent."""
    if isinstance(persona_info, str):
        m = _NAME_RE.search(persona_info)
        if m and m.group(1).strip():
            return m.group(1).strip()
    return "User"


def is_halumem_record(obj: Any) -> bool:
    """True if a parsed JSONL line looks like a HaluMem user record."""
    if not isinstance(obj, dict) or "sessions" not in obj:
        return False
    if "persona_info" in obj or "uuid" in obj:
        return True
    ss = obj.get("sessions")
    return isinstance(ss, list) and bool(ss) and isinstance(ss[0], dict) and "dialogue" in ss[0]


def sniff_halumem(path: Path) -> bool:
    """Check the first non-blank line of a JSONL file without reading the rest."""
    with open(path, "r", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                try:
                    return is_halumem_record(json.loads(line))
                except json.JSONDecodeError:
                    return False
    return False


def _user_sessions(rec: dict, *, path: Path, lineno: int, select: Optional[list[int]]) -> list[Session]:
    uuid = str(require(rec, "uuid", path=path, where=f"line {lineno}"))
    raw_sessions = require(rec, "sessions", path=path, where=f"user {uuid!r}")
    if not isinstance(raw_sessions, list):
        raise ValueError(f"{path}: user {uuid!r}: field 'sessions' must be a list")
    check_selection(select, range(1, len(raw_sessions) + 1), path=path, what=f"user {uuid!r}")
    persona = rec.get("persona_info")
    user_name = user_name_from_persona(persona)
    out = []
    for i, rs in enumerate(raw_sessions, 1):
        if select is not None and i not in select:
            continue
        sid = f"{uuid}/session_{i}"
        dialogue = require(rs, "dialogue", path=path, where=f"session {sid!r}")
        if not isinstance(dialogue, list):
            raise ValueError(f"{path}: session {sid!r}: field 'dialogue' must be a list")
        seen: dict[str, int] = {}
        turns = []
        for j, rt in enumerate(dialogue):
            base = f"t{rt['dialogue_turn']}" if isinstance(rt, dict) and rt.get("dialogue_turn") is not None else f"t{j}"
            k = seen.get(base, 0)
            seen[base] = k + 1
            turn_id = base if k == 0 else f"{base}_{k}"
            where = f"session {sid!r} turn {turn_id!r}"
            role = normalise_role(require(rt, "role", path=path, where=where), path=path, where=where)
            content = require_str(rt, "content", path=path, where=where)
            ts = parse_timestamp(
                require(rt, "timestamp", path=path, where=where),
                where=f"file {str(path)!r} {where} field 'timestamp'",
            )
            turns.append(Turn(turn_id=turn_id, role=role, content=content, timestamp=ts))
        start_raw = rs.get("start_time")
        start = (
            parse_timestamp(start_raw, where=f"file {str(path)!r} session {sid!r} field 'start_time'")
            if start_raw is not None else (turns[0].timestamp if turns else None)
        )
        metadata = {
            "source": "halumem",
            "uuid": uuid,
            "session_number": i,
            "persona_info": persona,
            "end_time": rs.get("end_time"),
            "memory_points": rs.get("memory_points") or [],
            "questions": rs.get("questions") or [],
            "is_generated_qa_session": bool(rs.get("is_generated_qa_session", False)),
        }
        out.append(Session(session_id=sid, user_name=user_name, turns=turns, start_time=start, metadata=metadata))
    return out


def load_halumem(path: Path, *, sample: Optional[str] = None, select: Optional[list[int]] = None) -> list[Session]:
    """Load HaluMem sessions (mapping in the module docstring).

    Args:
        path: HaluMem JSONL (one user per line).
        sample: a user ``uuid``; None = every user.
        select: 1-based session numbers (position in the user's ``sessions``).

    Returns: sessions ordered by user line, then session number. Raises ValueError for an
    unknown uuid or missing fields (message names file, session, field).
    """
    path = Path(path)
    out: list[Session] = []
    found = False
    seen_ids = []
    for lineno, rec in iter_jsonl(path):
        if sample is not None:
            uid = str(rec.get("uuid")) if isinstance(rec, dict) else None
            seen_ids.append(uid)
            if uid != str(sample):
                continue
        found = True
        out.extend(_user_sessions(rec, path=path, lineno=lineno, select=select))
    if sample is not None and not found:
        raise ValueError(f"{path}: no HaluMem user with uuid {sample!r}; available: {seen_ids[:10]}")
    return out
