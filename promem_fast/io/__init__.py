"""Input loaders: plain JSON/JSONL, LoCoMo, HaluMem, LongMemEval -> ``list[Session]``.

Entry point :func:`load_sessions`; format details live in the submodules' docstrings.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional, Union

from ..schema import Session
from ._common import SessionSelection, parse_session_selection, read_json
from .halumem import load_halumem, sniff_halumem, user_name_from_persona
from .locomo import is_locomo, load_locomo
from .longmemeval import LongMemEvalItem, is_longmemeval, load_longmemeval, load_longmemeval_sessions
from .plain import load_plain

logger = logging.getLogger(__name__)

FORMATS = ("json", "jsonl", "locomo", "halumem", "longmemeval")

__all__ = [
    "FORMATS", "LongMemEvalItem", "detect_format", "load_halumem", "load_locomo", "load_longmemeval",
    "load_longmemeval_sessions", "load_plain", "load_sessions", "parse_session_selection",
    "user_name_from_persona",
]


def detect_format(path: Union[str, Path]) -> str:
    """Guess the format of ``path`` from its extension and content.

    ``.jsonl``: HaluMem if the first line is a HaluMem user record, else plain ``jsonl``.
    Otherwise the file is read as JSON: LoCoMo (samples with ``conversation``),
    LongMemEval (records with ``haystack_sessions``), else plain ``json``.
    """
    path = Path(path)
    if path.suffix.lower() == ".jsonl":
        return "halumem" if sniff_halumem(path) else "jsonl"
    try:
        data = read_json(path)
    except ValueError:
        # a .json file holding JSON lines
        if sniff_halumem(path):
            return "halumem"
        return "jsonl"
    if is_locomo(data):
        return "locomo"
    if is_longmemeval(data):
        return "longmemeval"
    return "json"


def load_sessions(
    path: Union[str, Path],
    format: Optional[str] = None,
    *,
    sample: Optional[str] = None,
    sessions: SessionSelection = None,
    user_speaker: Optional[str] = None,
) -> list[Session]:
    """Load dialogue sessions from a file.

    Args:
        path: input file.
        format: one of :data:`FORMATS`; None = :func:`detect_format`.
        sample: LoCoMo ``sample_id``, HaluMem ``uuid`` or LongMemEval ``question_id``;
            not allowed for plain files.
        sessions: 1-based session numbers in the source: ``"1-2"``, ``"3"``, ``"1,3,5"``,
            an int or a list of ints; None = all.
        user_speaker: LoCoMo only: which speaker is the user (name or ``speaker_a``/``speaker_b``).

    Returns:
        list of Session. Raises FileNotFoundError, or ValueError for an unknown format,
        a bad selection, or malformed input (message names file, session and field).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input file not found: {path}")
    fmt = (format or detect_format(path)).lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown input format {format!r}; expected one of {FORMATS}")
    select = parse_session_selection(sessions)
    if user_speaker is not None and fmt != "locomo":
        raise ValueError(f"user_speaker applies to LoCoMo only, not format {fmt!r}")
    if fmt == "locomo":
        out = load_locomo(path, sample=sample, select=select, user_speaker=user_speaker)
    elif fmt == "halumem":
        out = load_halumem(path, sample=sample, select=select)
    elif fmt == "longmemeval":
        out = load_longmemeval_sessions(path, sample=sample, select=select)
    else:
        if sample is not None:
            raise ValueError(f"'sample' selects a LoCoMo/HaluMem/LongMemEval record; plain {fmt} files have none")
        out = load_plain(path, select=select, jsonl=(fmt == "jsonl"))
    logger.info("loaded %d session(s) from %s (format %s)", len(out), path, fmt)
    return out
