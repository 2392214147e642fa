"""String name -> backend class, imported only when used (vLLM's registry pattern)."""

from __future__ import annotations

import importlib
from typing import Any

_REGISTRY: dict[str, dict[str, str]] = {
    "llm": {
        "llamacpp": "promem_fast.backends.llm.llamacpp:LlamaCppLLM",
        "openai": "promem_fast.backends.llm.openai_compat:OpenAILLM",
        "vllm": "promem_fast.backends.llm.vllm:VLLMLLM",
        "scripted": "promem_fast.backends.llm.scripted:ScriptedLLM",
    },
    "nli": {
        "onnx": "promem_fast.backends.nli.onnx:OnnxNLI",
        "llm": "promem_fast.backends.nli.llm_judge:LLMJudgeNLI",
    },
    "embed": {
        "onnx": "promem_fast.backends.embed.onnx:OnnxEmbedder",
        "hash": "promem_fast.backends.embed.hashing:HashEmbedder",
    },
}


def register(kind: str, name: str, path: str) -> None:
    """Register ``"module:Class"`` under ``name`` for ``kind`` in {llm, nli, embed}."""
    if kind not in _REGISTRY:
        raise ValueError(f"unknown backend kind {kind!r}; expected one of {sorted(_REGISTRY)}")
    _REGISTRY[kind][name] = path


def resolve(kind: str, name: str) -> Any:
    """Import and return the class registered as ``name``; ValueError lists the choices."""
    try:
        path = _REGISTRY[kind][name]
    except KeyError:
        raise ValueError(
            f"unknown {kind} backend {name!r}; choose one of {sorted(_REGISTRY.get(kind, {}))}"
        ) from None
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def create_llm(cfg, **kw):
    """Build the LLM backend named by ``cfg.backend`` (an LLMConfig)."""
    return resolve("llm", cfg.backend)(cfg, **kw)


def create_nli(cfg, **kw):
    """Build the NLI backend named by ``cfg.backend`` (an NLIConfig). ``llm=`` for the judge."""
    return resolve("nli", cfg.backend)(cfg, **kw)


def create_embed(cfg, **kw):
    """Build the embedding backend named by ``cfg.backend`` (an EmbedConfig)."""
    return resolve("embed", cfg.backend)(cfg, **kw)
