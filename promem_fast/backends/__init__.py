"""Model backends behind a registry of lazy imports (a CPU-only install imports cleanly)."""

from .base import EmbedBackend, LLMBackend, LLMRequest, LLMResponse, NLIBackend, NLIResult
from .registry import create_embed, create_llm, create_nli, register

__all__ = [
    "EmbedBackend", "LLMBackend", "LLMRequest", "LLMResponse", "NLIBackend", "NLIResult",
    "create_embed", "create_llm", "create_nli", "register",
]
