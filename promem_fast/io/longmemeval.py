"""LongMemEval (xiaowu0162/LongMemEval; ``longmemeval_s`` / ``_m`` / ``_oracle`` JSON).

The file is a list of question records: ``question_id`` (suffix ``_abs`` = abstention
question), ``question_type``, ``question``, ``answer``, ``question_date``,
``haystack_session_ids``, ``haystack_dates`` ("2023/05/20 (Sat) 00:44"),
``haystack_sessions`` (list of sessions, each a list of ``{role, content, has_answer?}``),
``answer_session_ids``.

Each haystack session becomes a :class:`~promem_fast.schema.Session` with
``session_id`` = its haystack session id, ``start_time`` and every turn's ``timestamp`` =
its haystack date, ``turn_id = f"t{j}"`` (0-based), ``user_name = "User"``, and
``metadata = {"source": "longmemeval", "has_answer_turn_ids": [...], "session_number": n}``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from ..schema import Session, Turn
from ..timeparse import parse_timestamp
from ._common import check_selection, normalise_role, read_json, require, require_str

logger = logging.getLogger(__name__)


@dataclass
class LongMemEvalItem:
    """One LongMemEval question with its haystack.

    ``haystack`` sessions are in the record's order; ``abstention`` is True when
    ``question_id`` ends in ``_abs`` (the correct answer is "not answerable").
    """

    question_id: str
    question_type: str
    question: str
    answer: Any
    question_date: Optional[datetime]
    haystack_session_ids: list[str]
    haystack_dates: list[datetime]
    haystack: list[Session]
    answer_session_ids: list[str] = field(default_factory=list)
    abstention: bool = False


def is_longmemeval(data: Any) -> bool:
    """True if ``data`` (parsed JSON) looks like a LongMemEval file."""
    return (
        isinstance(data, list) and bool(data) and isinstance(data[0], dict)
        and "haystack_sessions" in data[0] and "question_id" in data[0]
    )


def _item(rec: Any, idx: int, *, path: Path) -> LongMemEvalItem:
    where = f"record {idx}"
    qid = str(require(rec, "question_id", path=path, where=where))
    where = f"question {qid!r}"
    ids = require(rec, "haystack_session_ids", path=path, where=where)
    dates_raw = require(rec, "haystack_dates", path=path, where=where)
    sessions_raw = require(rec, "haystack_sessions", path=path, where=where)
    if not (isinstance(ids, list) and isinstance(dates_raw, list) and isinstance(sessions_raw, list)):
        raise ValueError(f"{path}: {where}: haystack_session_ids/dates/sessions must be lists")
    if not (len(ids) == len(dates_raw) == len(sessions_raw)):
        raise ValueError(
            f"{path}: {where}: haystack lengths differ (ids {len(ids)}, dates {len(dates_raw)}, "
            f"sessions {len(sessions_raw)})"
        )
    haystack: list[Session] = []
    dates: list[datetime] = []
    for n, (sid, d, turns_raw) in enumerate(zip(ids, dates_raw, sessions_raw), 1):
        sid = str(sid)
        ts = parse_timestamp(d, where=f"file {str(path)!r} question {qid!r} session {sid!r} field 'haystack_dates'")
        dates.append(ts)
        if not isinstance(turns_raw, list):
            raise ValueError(f"{path}: {where} session {sid!r}: haystack session must be a list of turns")
        turns, answer_ids = [], []
        for j, rt in enumerate(turns_raw):
            tw = f"session {sid!r} turn 't{j}'"
            role = normalise_role(require(rt, "role", path=path, where=tw), path=path, where=tw)
            content = require_str(rt, "content", path=path, where=tw)
            if rt.get("has_answer"):
                answer_ids.append(f"t{j}")
            turns.append(Turn(turn_id=f"t{j}", role=role, content=content, timestamp=ts))
        haystack.append(Session(
            session_id=sid, user_name="User", turns=turns, start_time=ts,
            metadata={"source": "longmemeval", "has_answer_turn_ids": answer_ids, "session_number": n},
        ))
    qd = rec.get("question_date")
    return LongMemEvalItem(
        question_id=qid,
        question_type=str(require(rec, "question_type", path=path, where=where)),
        question=require_str(rec, "question", path=path, where=where),
        answer=require(rec, "answer", path=path, where=where),
        question_date=(parse_timestamp(qd, where=f"file {str(path)!r} question {qid!r} field 'question_date'")
                       if qd is not None else None),
        haystack_session_ids=[str(x) for x in ids],
        haystack_dates=dates,
        haystack=haystack,
        answer_session_ids=[str(x) for x in (rec.get("answer_session_ids") or [])],
        abstention=qid.endswith("_abs"),
    )


def load_longmemeval(path: Path) -> list[LongMemEvalItem]:
    """Load every LongMemEval question record (fields in the module docstring).

    Raises ValueError on missing fields or mismatched haystack lengths; TimestampError
    (a ValueError) on unparseable dates.
    """
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: LongMemEval file must be a JSON list of question records")
    return [_item(rec, i, path=path) for i, rec in enumerate(data)]


def load_longmemeval_sessions(path: Path, *, sample: Optional[str] = None,
                              select: Optional[list[int]] = None) -> list[Session]:
    """Deduplicated haystack sessions, in first-seen order.

    ``sample`` restricts to one ``question_id``'s haystack; ``select`` keeps 1-based
    positions in the deduplicated list. A session id that appears with different turns
    in two records keeps its first version (a warning is logged).
    """
    items = load_longmemeval(path)
    if sample is not None:
        items = [it for it in items if it.question_id == str(sample)]
        if not items:
            raise ValueError(f"{path}: no LongMemEval question_id {sample!r}")
    seen: dict[str, Session] = {}
    for it in items:
        for s in it.haystack:
            prev = seen.get(s.session_id)
            if prev is None:
                seen[s.session_id] = s
            elif [t.content for t in prev.turns] != [t.content for t in s.turns]:
                logger.warning("%s: haystack session %r differs between records; keeping the first",
                               path, s.session_id)
    sessions = list(seen.values())
    check_selection(select, range(1, len(sessions) + 1), path=path, what="deduplicated haystack")
    out = []
    for n, s in enumerate(sessions, 1):
        if select is None or n in select:
            s.metadata["session_number"] = n
            out.append(s)
    return out
