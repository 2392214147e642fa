"""Shared helpers of the input loaders: session selection, roles, field checks."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

logger = logging.getLogger(__name__)

SessionSelection = Union[str, int, Sequence[int], None]

ROLE_ALIASES = {
    "user": "user", "human": "user", "me": "user", "customer": "user",
    "assistant": "assistant", "ai": "assistant", "bot": "assistant", "gpt": "assistant",
    "model": "assistant", "chatbot": "assistant", "agent": "assistant",
    "system": "system",
    "other": "other",
}


def parse_session_selection(sessions: SessionSelection) -> Optional[list[int]]:
    """Turn a session selection into sorted 1-based session numbers.

    Accepts ``None`` (all), an int, a list of ints, or a string: ``"3"``, ``"1-2"``,
    ``"1,3,5"``, ``"1-3,7"``. Raises ValueError on anything else or on numbers < 1.
    """
    if sessions is None:
        return None
    nums: set[int] = set()
    if isinstance(sessions, bool):
        raise ValueError(f"invalid session selection {sessions!r}")
    if isinstance(sessions, int):
        nums.add(sessions)
    elif isinstance(sessions, str):
        spec = sessions.replace(" ", "")
        if not spec:
            raise ValueError("empty session selection")
        for part in spec.split(","):
            m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
            if not m:
                raise ValueError(f"invalid session selection {sessions!r}: expected e.g. '3', '1-2', '1,3,5'")
            lo = int(m.group(1))
            hi = int(m.group(2)) if m.group(2) else lo
            if hi < lo:
                raise ValueError(f"invalid session range {part!r} in {sessions!r}: end before start")
            nums.update(range(lo, hi + 1))
    else:
        try:
            items = list(sessions)
        except TypeError:
            raise ValueError(f"invalid session selection {sessions!r}") from None
        for x in items:
            if isinstance(x, bool) or not isinstance(x, int):
                raise ValueError(f"invalid session number {x!r} in selection {sessions!r}")
            nums.add(x)
    if any(n < 1 for n in nums):
        raise ValueError(f"session numbers are 1-based; got {sorted(nums)} from {sessions!r}")
    return sorted(nums)


def check_selection(selected: Optional[list[int]], available: Iterable[int], *, path: Path, what: str) -> None:
    """Raise ValueError if a selected session number does not exist in ``what``."""
    if selected is None:
        return
    avail = sorted(set(available))
    missing = [n for n in selected if n not in avail]
    if missing:
        raise ValueError(
            f"{path}: {what} has no session(s) {missing}; available: "
            f"{_ranges(avail) if avail else 'none'}"
        )


def _ranges(nums: list[int]) -> str:
    out, start, prev = [], None, None
    for n in nums:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if start != prev else str(start))
    return ",".join(out)


def normalise_role(value: Any, *, path: Path, where: str) -> str:
    """Map a role name (case-insensitive, aliases human->user, ai/bot->assistant) to a schema Role."""
    if not isinstance(value, str) or value.strip().lower() not in ROLE_ALIASES:
        raise ValueError(
            f"{path}: {where}: unknown role {value!r}; expected one of {sorted(ROLE_ALIASES)}"
        )
    return ROLE_ALIASES[value.strip().lower()]


def require(obj: Any, field: str, *, path: Path, where: str) -> Any:
    """Return ``obj[field]``; ValueError naming file, place and field if absent or null."""
    if not isinstance(obj, dict):
        raise ValueError(f"{path}: {where}: expected an object, got {type(obj).__name__}")
    if field not in obj or obj[field] is None:
        raise ValueError(f"{path}: {where}: missing required field {field!r}")
    return obj[field]


def require_str(obj: Any, field: str, *, path: Path, where: str) -> str:
    v = require(obj, field, path=path, where=where)
    if not isinstance(v, str):
        raise ValueError(f"{path}: {where}: field {field!r} must be a string, got {type(v).__name__}")
    return v


def read_json(path: Path) -> Any:
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON: {exc}") from exc


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each non-blank line; ValueError names the bad line."""
    with open(path, "r", encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {lineno}: invalid JSON: {exc}") from exc
