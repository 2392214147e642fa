"""Working state of one session while it moves through the pipeline stages.

Internal (not part of the public API): stages read and write a :class:`PipelineState`;
``pipeline.build_graph`` turns it into the public :class:`MemoryGraph`.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

import numpy as np

from ..schema import AtomicFact, Discarded, NLIVerdict, Session, Turn, nfc

logger = logging.getLogger(__name__)

_WORDLIKE = re.compile(r"[^\W_]", re.U)  # a letter or digit in any script
_USER_SUBJECT = re.compile(r"^(the user|user)(?=\W|$)", re.I)


def has_text(text: str) -> bool:
    """True when ``text`` holds at least one letter or digit (any script); emoji-only is False."""
    return bool(_WORDLIKE.search(text or ""))


def clean_text(text: str, user_name: Optional[str] = None) -> str:
    """NFC, collapsed whitespace; a leading "User"/"The user" subject becomes ``user_name``."""
    t = " ".join(nfc(str(text)).split())
    if user_name and user_name.lower() != "user":
        t = _USER_SUBJECT.sub(lambda _: user_name, t)  # a name is text, not a template ("\G")
    return t


def norm_key(text: str) -> str:
    """Case/space-insensitive key for exact-duplicate detection."""
    return " ".join(text.lower().split()).rstrip(".。!！")


@dataclass
class Candidate:
    """An event abstracted from a topic (§3.2): text and the turns it comes from."""

    text: str
    turn_ids: list[str]
    topic: int


@dataclass
class Entry:
    """A memory entry in flight (draft entry, recovered event or v1 supplement)."""

    text: str
    origin: str  # "draft" | "event" | "detail" | "supplement"
    status: str  # "kept" | "recovered" | "revised"
    source_turn_ids: list[str]
    ground_turn_id: Optional[str] = None
    nli: list[NLIVerdict] = field(default_factory=list)
    atomic_facts: list[AtomicFact] = field(default_factory=list)
    original_text: Optional[str] = None
    discarded: bool = False


@dataclass
class EdgeOut:
    """A verified relation between two entries (indices into ``PipelineState.entries``)."""

    source: int
    type: str
    target: int
    question: Optional[str] = None


@dataclass
class PipelineState:
    """Everything the stages produce for one session."""

    session: Session
    user_name: str
    block: str  # the session's dialogue block (shared prompt prefix)
    text_turns: list[Turn]  # turns with letters/digits, in dialogue order
    turn_pos: dict[str, int]  # turn id -> position in session.turns
    topics: list[list[str]] = field(default_factory=list)
    details: list[tuple[str, str]] = field(default_factory=list)  # (turn_id, text)
    events: list[Candidate] = field(default_factory=list)
    event_edges: list[tuple[int, str, int]] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    event_to_entry: dict[int, int] = field(default_factory=dict)
    edges: list[EdgeOut] = field(default_factory=list)
    detail_anchors: Optional[list[tuple[list[int], Optional[str]]]] = None  # per detail: (entry indices, "turn" | "topic" | None) (§3.5 DA)
    discarded: list[Discarded] = field(default_factory=list)
    turn_vecs: Optional[np.ndarray] = None  # float32 (len(text_turns), d), rows of text_turns

    @classmethod
    def create(cls, session: Session, user_name: str, block: str) -> "PipelineState":
        return cls(
            session=session,
            user_name=user_name,
            block=block,
            text_turns=[t for t in session.turns if has_text(t.content)],
            turn_pos={t.turn_id: i for i, t in enumerate(session.turns)},
        )

    @property
    def user_text_turns(self) -> list[Turn]:
        return [t for t in self.text_turns if t.role == "user"]

    @functools.cached_property
    def user_turn_texts(self) -> tuple[str, ...]:
        """Contents of :attr:`user_text_turns`, built once: the HV screen reads them for every
        entry (``text_turns`` is set at :meth:`create` and never changed)."""
        return tuple(t.content for t in self.user_text_turns)

    @property
    def other_speakers(self) -> list[str]:
        """Sorted names of the speakers of non-user turns, the user's own name left out."""
        return sorted({t.speaker for t in self.session.turns if t.role != "user" and t.speaker
                       and t.speaker.casefold() != self.user_name.casefold()})

    def live_entries(self) -> list[int]:
        """Indices of entries not discarded."""
        return [i for i, e in enumerate(self.entries) if not e.discarded]

    def discard(self, text: str, stage: str, reason: str) -> None:
        """Record ``text`` as not memory; the same (text, stage, reason) is recorded once."""
        key = (norm_key(text), stage, reason)
        if any((norm_key(d.text), d.stage, d.reason) == key for d in self.discarded):
            return
        logger.info("session %s: discarded at %s (%s): %r", self.session.session_id, stage, reason, text[:120])
        self.discarded.append(Discarded(text=text, stage=stage, reason=reason))

    def valid_ids(self, ids: Iterable, allowed: Iterable[str], where: str) -> list[str]:
        """Keep ids present in ``allowed`` (deduplicated, in order); an id not in ``allowed`` as
        written is tried again without the brackets, angle brackets, parentheses, quotes and
        backticks at its ends ("<t7>" -> "t7"); log each dropped id."""
        ok = set(allowed)
        out: list[str] = []
        for raw in ids:
            # the model wraps ids as the block shows them or as markup ("[t7]", "<t7>", "'t7'");
            # an id that is itself written so ("(1)") is taken as it is
            tid = str(raw).strip()
            if tid not in ok:
                tid = tid.strip("[]<>()\"'` ")
            if tid in ok:
                if tid not in out:
                    out.append(tid)
            else:
                logger.warning(
                    "session %s: %s: dropped turn id %r (not one of the allowed turns)",
                    self.session.session_id, where, raw,
                )
        return out
