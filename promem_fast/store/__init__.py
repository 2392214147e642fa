"""Lifelong memory across sessions: embedded store (SQLite + FAISS), consolidation, Mem0-shaped API.

    from promem_fast.store import Memory, AsyncMemory, StoreConfig
"""

from .memory import AsyncMemory, InvalidInput, Memory, StoreConfig, messages_to_session
from .sqlite_store import Entry, SQLiteStore, VersionConflict

__all__ = [
    "AsyncMemory", "Entry", "InvalidInput", "Memory", "SQLiteStore", "StoreConfig", "VersionConflict",
    "messages_to_session",
]
