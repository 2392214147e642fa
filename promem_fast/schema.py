"""Data model: dialogue input (Turn, Session) and verified memory output (MemoryGraph).

Input follows the data sets' fields (LoCoMo ``speaker/dia_id/text``, HaluMem
``role/content/timestamp/dialogue_turn``); output follows ProMem §3.5:
``G_final = (V, E_edge, A_attr)`` with ``V`` the purified memory entries (``events``),
``E_edge`` the verified relations and ``A_attr`` the anchored details.

All models are pydantic v2 models, so ``MemoryGraph.model_json_schema()`` is the
published JSON Schema (``promem_fast/schemas/memory_graph.schema.json``).
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator

Role = Literal["user", "assistant", "system", "other"]
EntryStatus = Literal["kept", "revised", "recovered"]
EntryOrigin = Literal["draft", "event", "detail", "supplement"]
NLILabel = Literal["entailment", "neutral", "contradiction"]
RelationType = Literal["causal", "temporal"]


def nfc(text: str) -> str:
    """Return ``text`` in Unicode NFC so names compare and print exactly."""
    return unicodedata.normalize("NFC", text)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class Turn(_Model):
    """One dialogue turn.

    Fields map to LoCoMo (``dia_id``, ``speaker``, ``text``) and HaluMem
    (``dialogue_turn``, ``role``, ``content``, ``timestamp``).
    """

    turn_id: str = Field(description="Stable id within the session, e.g. LoCoMo 'D1:3' or 't0'.")
    role: Role = Field(description="'user' is the person whose memory is extracted.")
    content: str = Field(description="Turn text, NFC-normalised.")
    speaker: Optional[str] = Field(default=None, description="Speaker name where the data set gives one.")
    timestamp: Optional[datetime] = Field(
        default=None, description="When the turn was said (timezone-aware if the source gave a zone)."
    )

    @field_validator("content", "speaker")
    @classmethod
    def _nfc(cls, v: Optional[str]) -> Optional[str]:
        return nfc(v) if isinstance(v, str) else v


class Session(_Model):
    """A dialogue session: the unit of extraction."""

    session_id: str
    user_name: str = Field(default="User", description="Name used as the subject of memory entries.")
    turns: list[Turn]
    start_time: Optional[datetime] = Field(default=None, description="Session date-time, if known.")
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("user_name")
    @classmethod
    def _nfc(cls, v: str) -> str:
        return nfc(v)

    def turn(self, turn_id: str) -> Turn:
        """Return the turn with ``turn_id``; raises KeyError naming the id."""
        for t in self.turns:
            if t.turn_id == turn_id:
                return t
        raise KeyError(f"session {self.session_id!r} has no turn {turn_id!r}")


class NLIVerdict(_Model):
    """One NLI check (§3.4): premise = a dialogue turn, hypothesis = an entry or atomic fact."""

    premise_turn_id: str
    hypothesis: str
    label: NLILabel
    score: float = Field(description="Probability of ``label`` (1.0 for an LLM judge without scores).")
    by: Literal["nli", "polarity", "lexical"] = Field(
        default="nli",
        description='Who gave the label: "nli" (the NLI service), "polarity" (the turn\'s best-matching '
        "clause says the opposite: one is negated, the other not; no NLI call) or \"lexical\" (every content "
        "word of the hypothesis is in the user's turn outside quotes: entailment without an NLI call).",
    )


class AtomicFact(_Model):
    """An atomic fact of a non-entailed entry (§3.4, atomic decomposition)."""

    text: str
    verdict: Optional[NLIVerdict] = None
    action: Literal["kept", "revised", "discarded"] = "kept"
    revised_text: Optional[str] = None


class Event(_Model):
    """A verified memory entry: a node of the memory graph (§3.5, ``V = M_purified``)."""

    id: str = Field(description="Node id, 'e1', 'e2', ... in output order.")
    text: str
    origin: EntryOrigin = Field(description="draft = initial draft; event = recovered topic event; detail = recovered from a turn whose details no entry stated; supplement = v1 coverage pass.")
    status: EntryStatus
    source_turn_ids: list[str] = Field(default_factory=list, description="Turns that ground the entry.")
    dates: list[str] = Field(default_factory=list, description="Absolute dates (ISO 8601) of the entry's time expressions.")
    timestamp: Optional[datetime] = Field(default=None, description="Timestamp of the grounding turn.")
    nli: list[NLIVerdict] = Field(default_factory=list)
    atomic_facts: list[AtomicFact] = Field(default_factory=list)
    original_text: Optional[str] = Field(default=None, description="Text before revision, when status='revised'.")


class Detail(_Model):
    """A fine-grained detail extracted from one turn (§3.2), anchored to events (§3.5)."""

    id: str
    text: str
    turn_id: str
    event_ids: list[str] = Field(default_factory=list)
    anchored_by: Optional[Literal["turn", "topic"]] = Field(
        default=None,
        description='How event_ids were found: "turn" (an event shares the detail\'s turn id, §3.5), '
        '"topic" (nearest events of its topic segment), null (unanchored).',
    )


class Topic(_Model):
    """A topic segment of consecutive turns and the events abstracted from it (§3.2)."""

    id: str
    turn_ids: list[str]
    events: list[str] = Field(default_factory=list, description="Abstracted event sentences, E.")


class Relation(_Model):
    """A verified edge between two events (§3.5)."""

    source: str
    type: RelationType
    target: str
    probe_question: Optional[str] = None


class Discarded(_Model):
    """Something that did not become memory, and why."""

    text: str
    stage: str
    reason: str


class StageStats(_Model):
    """Cost of one stage for one session."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    nli_pairs: int = 0
    seconds: float = 0.0


class GraphStats(_Model):
    stages: dict[str, StageStats] = Field(default_factory=dict)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    seconds: float = 0.0


class MemoryGraph(_Model):
    """Verified graph-structured memory of one session (§3.5, ``G_final``)."""

    schema_version: Literal["1"] = "1"
    session_id: str
    user_name: str
    variant: str
    ablations: list[str] = Field(
        default_factory=list,
        description='Pipeline switches that were off (Table 2): "no-details", "no-cc", "no-hv", "no-da", "no-rel"; '
        'then this engine\'s own checks that were off while their stage ran: "no-refile" (details), '
        '"no-topic-anchor" (detail anchoring), "no-head-claim", "no-polarity", "no-screen", "no-lexical-nli" and '
        '"no-dedup" (hallucination verification), '
        '"no-detail-recovery" (completeness check); "llm-reread" when the detail re-read asked the LLM; '
        "empty for the full pipeline and for variants without those stages.",
    )
    events: list[Event] = Field(default_factory=list)
    details: list[Detail] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    topics: list[Topic] = Field(default_factory=list)
    discarded: list[Discarded] = Field(default_factory=list)
    stats: GraphStats = Field(default_factory=GraphStats)
    models: dict[str, str] = Field(default_factory=dict, description="Backend/model names used per role.")

    def to_json(self, indent: Optional[int] = 2) -> str:
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str) -> "MemoryGraph":
        return cls.model_validate_json(text)

    def memory_texts(self) -> list[str]:
        """Flat memory: event texts then detail texts (what QA retrieves over)."""
        return [e.text for e in self.events] + [d.text for d in self.details]


def json_schema() -> dict[str, Any]:
    """The published JSON Schema of ``MemoryGraph``."""
    return MemoryGraph.model_json_schema()
