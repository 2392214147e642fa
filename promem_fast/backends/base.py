"""Backend interfaces. Every service method is async and takes a *list*, so one await
can carry many requests and the engine can batch across sessions (DESIGN.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, Sequence, runtime_checkable

import numpy as np


@dataclass
class LLMRequest:
    """One chat completion request.

    messages: OpenAI-style chat messages ``[{"role": ..., "content": ...}]``. Put the
    session's dialogue first so prompts of one session share a prefix (prefix caching).
    json_schema: JSON Schema the output must follow (constrained decoding where the
    backend supports it), or None for free text.
    stage: pipeline stage name, for token accounting.
    """

    messages: list[dict[str, str]]
    json_schema: Optional[dict[str, Any]] = None
    max_tokens: int = 1024
    temperature: float = 0.0
    stage: str = "other"
    session_id: Optional[str] = None


@dataclass
class LLMResponse:
    """One completion. Token counts are the backend's own (``usage``)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    finish_reason: str = "stop"  # "stop" | "length"


@runtime_checkable
class LLMBackend(Protocol):
    name: str

    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """Complete every request; results in input order."""
        ...


@dataclass
class NLIResult:
    """NLI verdict for one (premise, hypothesis) pair."""

    label: str  # "entailment" | "neutral" | "contradiction"
    probs: dict[str, float] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return float(self.probs.get(self.label, 1.0))


@runtime_checkable
class NLIBackend(Protocol):
    name: str

    async def classify(self, pairs: Sequence[tuple[str, str]]) -> list[NLIResult]:
        """pairs: (premise, hypothesis). Results in input order."""
        ...


@runtime_checkable
class EmbedBackend(Protocol):
    name: str
    dim: int

    async def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return float32 array of shape (len(texts), dim), L2-normalised rows."""
        ...
