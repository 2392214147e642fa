"""Throughput engine: micro-batched services and a concurrent session scheduler (DESIGN.md)."""

from .batcher import BatcherStats, MicroBatcher
from .scheduler import SessionResult, build_extractor, run_all, run_sessions
from .services import BatchedEmbed, BatchedLLM, BatchedNLI, BatchedXref, BatchPolicy, batched_services

__all__ = [
    "BatchPolicy", "BatchedEmbed", "BatchedLLM", "BatchedNLI", "BatchedXref", "BatcherStats",
    "MicroBatcher", "SessionResult", "batched_services", "build_extractor", "run_all", "run_sessions",
]
