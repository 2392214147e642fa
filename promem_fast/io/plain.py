"""Plain JSON / JSONL dialogues.

Accepted shapes (a *turn* is ``{"role", "content", "timestamp"?, "turn_id"?, "speaker"?}``;
``text`` is read when ``content`` is absent; role aliases human->user, ai/bot->assistant):

* JSON list of turns -> one session;
* JSON list of sessions, each ``{"session_id"?, "user_name"?, "start_time"?, "metadata"?,
  "turns": [...]}`` or a bare list of turns;
* JSON object with ``"turns"`` (one session) or ``"sessions"`` (a list as above);
* JSONL with one session object per line, or one turn per line (then one session).

Defaults: ``session_id = f"{file stem}/session_{n}"`` (n 1-based), ``user_name = "User"``,
``turn_id = f"t{i}"`` (i 0-based position), timestamp None. Timestamps go through
:func:`promem_fast.timeparse.parse_timestamp`. Empty content is accepted here (the
pipeline rejects empty sessions); missing ``role``/``content`` raises ValueError naming the
file, session and field.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Optional

from ..schema import Session, Turn
from ..timeparse import parse_timestamp
from ._common import check_selection, iter_jsonl, normalise_role, read_json, require

logger = logging.getLogger(__name__)


def _is_turn(obj: Any) -> bool:
    return isinstance(obj, dict) and "turns" not in obj and ("content" in obj or "text" in obj or "role" in obj)


def _build_turn(raw: Any, i: int, *, path: Path, sid: str) -> Turn:
    where = f"session {sid!r} turn {i}"
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: {where}: expected an object, got {type(raw).__name__}")
    turn_id = str(raw.get("turn_id", raw.get("id", f"t{i}")))
    where = f"session {sid!r} turn {turn_id!r}"
    role = normalise_role(require(raw, "role", path=path, where=where), path=path, where=where)
    content = raw.get("content", raw.get("text"))
    if content is None:
        raise ValueError(f"{path}: {where}: missing required field 'content'")
    if not isinstance(content, str):
        raise ValueError(f"{path}: {where}: field 'content' must be a string, got {type(content).__name__}")
    ts = raw.get("timestamp")
    timestamp = None
    if ts is not None:
        timestamp = parse_timestamp(ts, where=f"file {str(path)!r} {where} field 'timestamp'")
    speaker = raw.get("speaker")
    return Turn(turn_id=turn_id, role=role, content=content, speaker=speaker, timestamp=timestamp)


def _build_session(raw: Any, n: int, *, path: Path) -> Session:
    default_id = f"{path.stem}/session_{n}"
    if isinstance(raw, list):
        raw = {"turns": raw}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: session {n}: expected an object or a list of turns, got {type(raw).__name__}")
    sid = str(raw.get("session_id", default_id))
    turns_raw = require(raw, "turns", path=path, where=f"session {sid!r}")
    if not isinstance(turns_raw, list):
        raise ValueError(f"{path}: session {sid!r}: field 'turns' must be a list")
    turns = [_build_turn(t, i, path=path, sid=sid) for i, t in enumerate(turns_raw)]
    ids = [t.turn_id for t in turns]
    if len(set(ids)) != len(ids):
        dup = sorted({x for x in ids if ids.count(x) > 1})
        raise ValueError(f"{path}: session {sid!r}: duplicate turn_id(s) {dup}")
    start = raw.get("start_time")
    start_time = (
        parse_timestamp(start, where=f"file {str(path)!r} session {sid!r} field 'start_time'")
        if start is not None else None
    )
    if start_time is None and turns and turns[0].timestamp is not None:
        start_time = turns[0].timestamp
    metadata = dict(raw.get("metadata") or {})
    metadata.setdefault("session_number", n)
    return Session(
        session_id=sid,
        user_name=str(raw.get("user_name") or "User"),
        turns=turns,
        start_time=start_time,
        metadata=metadata,
    )


def load_plain(path: Path, *, select: Optional[list[int]] = None, jsonl: Optional[bool] = None) -> list[Session]:
    """Load plain JSON/JSONL dialogues (shapes in the module docstring).

    Args:
        path: file path.
        select: 1-based session numbers to keep (position in the file), None = all.
        jsonl: force JSONL (True) or JSON (False); None = by extension ``.jsonl``.

    Returns: list of Session in file order. Raises ValueError on malformed input.
    """
    path = Path(path)
    if jsonl is None:
        jsonl = path.suffix.lower() == ".jsonl"
    if jsonl:
        rows = [obj for _, obj in iter_jsonl(path)]
        if rows and all(_is_turn(r) for r in rows):
            raw_sessions: list[Any] = [rows]
        else:
            raw_sessions = rows
    else:
        data = read_json(path)
        if isinstance(data, dict):
            if "sessions" in data:
                raw_sessions = data["sessions"]
                if not isinstance(raw_sessions, list):
                    raise ValueError(f"{path}: field 'sessions' must be a list")
            elif "turns" in data:
                raw_sessions = [data]
            else:
                raise ValueError(f"{path}: JSON object needs a 'turns' or 'sessions' field")
        elif isinstance(data, list):
            if data and all(_is_turn(t) for t in data):
                raw_sessions = [data]
            else:
                raw_sessions = data
        else:
            raise ValueError(f"{path}: expected a JSON list or object, got {type(data).__name__}")
    check_selection(select, range(1, len(raw_sessions) + 1), path=path, what="file")
    wanted = set(select) if select is not None else None
    out = []
    for n, raw in enumerate(raw_sessions, 1):
        if wanted is not None and n not in wanted:
            continue
        out.append(_build_session(raw, n, path=path))
    return out
