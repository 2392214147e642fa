"""LoCoMo (``locomo10.json`` schema, snap-research/LoCoMo).

The file is a list of samples ``{sample_id, conversation, qa, observation,
session_summary, event_summary}``. ``conversation`` holds ``speaker_a``, ``speaker_b``,
``session_N`` (list of ``{speaker, dia_id, text, img_url?, blip_caption?, query?}``) and
``session_N_date_time`` (e.g. ``"1:56 pm on 8 May, 2023"``).

Mapping to :class:`~promem_fast.schema.Session` (one per ``session_N``):

* ``session_id = f"{sample_id}/session_{N}"``; ``start_time`` and every turn's
  ``timestamp`` = ``session_N_date_time`` (LoCoMo dates sessions, not turns);
* ``turn_id = dia_id``, ``speaker`` = the speaker's name, ``role = "user"`` for the chosen
  user speaker (``user_speaker``: a name, or ``"speaker_a"``/``"speaker_b"``; default
  speaker_a), ``"assistant"`` for the other; ``user_name`` = the user speaker's name;
* turns that share an image keep their text unchanged; the caption goes to
  ``metadata["image_captions"][dia_id]``.

Gold annotations in ``Session.metadata``:

* ``"qa"``: the sample's questions whose evidence dia_ids all lie in this session
  (answerable from this session alone); ``"qa_partial"``: questions with some, not all,
  evidence here. A question with no parseable evidence is in neither. The full list stays
  in the file; ``"sample_qa_count"`` records its size. Evidence strings like
  ``"D8:6; D9:17"`` are split.
* ``"observation"`` (``observation["session_N_observation"]``, {speaker: [[fact, dia_id]]}),
  ``"session_summary"`` (``session_summary["session_N_summary"]``), ``"event_summary"``
  (``event_summary["events_session_N"]``), plus ``"sample_id"``, ``"session_number"``,
  ``"speakers"`` ({"user": name, "assistant": name}).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Optional

from ..schema import Session, Turn
from ..timeparse import parse_timestamp
from ._common import check_selection, read_json, require, require_str

logger = logging.getLogger(__name__)

_SESSION_KEY_RE = re.compile(r"session_(\d+)")
_DIA_ID_RE = re.compile(r"D(\d+):(\d+)")


def is_locomo(data: Any) -> bool:
    """True if ``data`` (parsed JSON) looks like a LoCoMo file."""
    return (
        isinstance(data, list) and bool(data) and isinstance(data[0], dict)
        and "conversation" in data[0] and "sample_id" in data[0]
    )


def _evidence_sessions(q: dict) -> set[int]:
    out: set[int] = set()
    for e in q.get("evidence") or []:
        if isinstance(e, str):
            out.update(int(m.group(1)) for m in _DIA_ID_RE.finditer(e))
    return out


def _speakers(conv: dict, user_speaker: Optional[str], *, path: Path, sample_id: str) -> tuple[str, str]:
    where = f"sample {sample_id!r} conversation"
    a = require_str(conv, "speaker_a", path=path, where=where)
    b = require_str(conv, "speaker_b", path=path, where=where)
    if user_speaker in (None, "speaker_a", "a"):
        return a, b
    if user_speaker in ("speaker_b", "b"):
        return b, a
    if user_speaker == a:
        return a, b
    if user_speaker == b:
        return b, a
    raise ValueError(
        f"{path}: sample {sample_id!r}: user_speaker {user_speaker!r} is neither speaker "
        f"({a!r}, {b!r}) nor 'speaker_a'/'speaker_b'"
    )


def _sample_sessions(sample: dict, *, path: Path, select: Optional[list[int]],
                     user_speaker: Optional[str]) -> list[Session]:
    sample_id = str(require(sample, "sample_id", path=path, where="sample"))
    conv = require(sample, "conversation", path=path, where=f"sample {sample_id!r}")
    user, other = _speakers(conv, user_speaker, path=path, sample_id=sample_id)
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY_RE.fullmatch(k)))
    check_selection(select, numbers, path=path, what=f"sample {sample_id!r}")
    qa = sample.get("qa") or []
    qa_sessions = [_evidence_sessions(q) for q in qa]
    observation = sample.get("observation") or {}
    summaries = sample.get("session_summary") or {}
    events = sample.get("event_summary") or {}
    out: list[Session] = []
    for n in numbers:
        if select is not None and n not in select:
            continue
        sid = f"{sample_id}/session_{n}"
        dt_key = f"session_{n}_date_time"
        start = parse_timestamp(
            require(conv, dt_key, path=path, where=f"session {sid!r}"),
            where=f"file {str(path)!r} session {sid!r} field {dt_key!r}",
        )
        raw_turns = conv[f"session_{n}"]
        if not isinstance(raw_turns, list):
            raise ValueError(f"{path}: session {sid!r}: field 'session_{n}' must be a list")
        turns: list[Turn] = []
        captions: dict[str, str] = {}
        for i, rt in enumerate(raw_turns):
            where = f"session {sid!r} turn {i}"
            dia_id = require_str(rt, "dia_id", path=path, where=where)
            where = f"session {sid!r} turn {dia_id!r}"
            speaker = require_str(rt, "speaker", path=path, where=where)
            text = require_str(rt, "text", path=path, where=where)
            if speaker == user:
                role = "user"
            elif speaker == other:
                role = "assistant"
            else:
                raise ValueError(f"{path}: {where}: speaker {speaker!r} is neither {user!r} nor {other!r}")
            if rt.get("blip_caption"):
                captions[dia_id] = str(rt["blip_caption"])
            turns.append(Turn(turn_id=dia_id, role=role, content=text, speaker=speaker, timestamp=start))
        metadata: dict[str, Any] = {
            "source": "locomo",
            "sample_id": sample_id,
            "session_number": n,
            "speakers": {"user": user, "assistant": other},
            "qa": [q for q, s in zip(qa, qa_sessions) if s and s == {n}],
            "qa_partial": [q for q, s in zip(qa, qa_sessions) if n in s and s != {n}],
            "sample_qa_count": len(qa),
            "observation": observation.get(f"session_{n}_observation"),
            "session_summary": summaries.get(f"session_{n}_summary"),
            "event_summary": events.get(f"events_session_{n}"),
        }
        if captions:
            metadata["image_captions"] = captions
        out.append(Session(session_id=sid, user_name=user, turns=turns, start_time=start, metadata=metadata))
    return out


def load_locomo(path: Path, *, sample: Optional[str] = None, select: Optional[list[int]] = None,
                user_speaker: Optional[str] = None) -> list[Session]:
    """Load LoCoMo sessions (mapping in the module docstring).

    Args:
        path: a locomo10.json-style file.
        sample: ``sample_id`` to load (e.g. ``"conv-26"``); None = every sample.
        select: 1-based session numbers N (``session_N``) to keep; None = all.
        user_speaker: speaker name or ``"speaker_a"``/``"speaker_b"``; default speaker_a.

    Returns: sessions ordered by sample, then N. Raises ValueError for an unknown sample,
    missing session numbers, or missing fields (message names file, session, field).
    """
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: LoCoMo file must be a JSON list of samples")
    samples = data
    if sample is not None:
        samples = [s for s in data if isinstance(s, dict) and str(s.get("sample_id")) == str(sample)]
        if not samples:
            ids = [s.get("sample_id") for s in data if isinstance(s, dict)]
            raise ValueError(f"{path}: no LoCoMo sample {sample!r}; available: {ids}")
    out: list[Session] = []
    for s in samples:
        out.extend(_sample_sessions(s, path=path, select=select, user_speaker=user_speaker))
    return out
