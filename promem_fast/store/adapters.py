"""Write a ProMem graph into other memory systems' record shapes (ProMem §4.6: their storage and
retrieval, our extraction).

Three targets, each a pure ``graph -> list[dict]`` function plus a thin writer:

* **Mem0** — records ``{"memory", "user_id", "metadata"}``; :func:`write_to_mem0` calls
  ``memory.add(text, user_id=..., metadata=..., infer=False)`` so Mem0 stores our verified
  entries verbatim instead of re-extracting them with its own LLM.
* **LightMem** — ``MemoryEntry``-shaped dicts (``id, time_stamp, float_time_stamp, weekday,
  category, subcategory, memory_class, memory, original_memory, compressed_memory, topic_id,
  topic_summary, speaker_id, speaker_name, hit_time, update_queue``); :func:`write_to_lightmem`
  embeds them and inserts them into a vector retriever with ``insert(vectors, payloads, ids)``.
* **MemOS** — ``TextualMemoryItem``-shaped dicts ``{"id", "memory", "metadata": {user_id,
  session_id, status, type, memory_time, source, confidence (0-100), entities, tags,
  visibility, updated_at, memory_type, key, sources, background}}``; :func:`write_to_memos`
  calls ``text_memory.add(items)``.

For a Mem0 ``Memory`` whose own ``add`` extracts with promem_fast (the drop-in switch), see
:mod:`promem_fast.integrations.mem0`; it stores these Mem0 records.

Every record carries our provenance in its metadata (session id, graph node id, source turn
ids, NLI-based confidence), so answers can be traced back to dialogue turns.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timezone
from typing import Any, Callable, Optional, Sequence

from ..schema import MemoryGraph, Session
from .consolidate import Candidate, graph_candidates

logger = logging.getLogger(__name__)

_NS = uuid.UUID("6f1c7a52-2b7e-4f0e-9d1e-5a0c3c1d2e10")


def _stable_id(user_id: str, session_id: str, node_id: Optional[str], text: str) -> str:
    """Deterministic UUID of a graph node for a user, so re-exports overwrite instead of duplicating."""
    return str(uuid.uuid5(_NS, f"{user_id}\x1f{session_id}\x1f{node_id}\x1f{text}"))


def _parse_time(t: Optional[str]) -> Optional[datetime]:
    if not t:
        return None
    from dateutil import parser as dp

    try:
        return dp.isoparse(t)
    except (ValueError, OverflowError):
        try:
            return dp.parse(t)
        except (ValueError, OverflowError):
            logger.info("unparseable event time %r; left empty in the exported record", t)
            return None


def _prov(c: Candidate) -> dict[str, Any]:
    return {
        "source": "promem_fast", "kind": c.kind, "session_id": c.session_id, "graph_node_id": c.graph_node_id,
        "source_turn_ids": c.source_turn_ids, "event_time": c.event_time, "dates": c.dates,
        "confidence": c.confidence, "subject": c.subject, "details": c.metadata.get("details", []),
    }


# ---------------------------------------------------------------------------- Mem0
def to_mem0_records(graph: MemoryGraph, user_id: str, session: Optional[Session] = None,
                    include_details: bool = False) -> list[dict[str, Any]]:
    """Mem0 records ``{"id", "memory", "user_id", "metadata"}`` for the graph's events (then, with
    ``include_details``, its details); each event's anchored details are in ``metadata["details"]``."""
    out = []
    for c in graph_candidates(graph, session, include_details):
        out.append({
            "id": _stable_id(user_id, graph.session_id, c.graph_node_id, c.text),
            "memory": c.text, "user_id": user_id, "metadata": _prov(c),
        })
    return out


def write_to_mem0(mem0_memory: Any, graph: MemoryGraph, user_id: str, session: Optional[Session] = None,
                  include_details: bool = False) -> list[Any]:
    """Store the graph's entries in a Mem0 ``Memory`` verbatim (``infer=False``); returns Mem0's add results."""
    results = []
    for r in to_mem0_records(graph, user_id, session, include_details):
        results.append(mem0_memory.add(r["memory"], user_id=user_id, metadata=r["metadata"], infer=False))
    return results


# ---------------------------------------------------------------------------- LightMem
def to_lightmem_entries(graph: MemoryGraph, user_id: str, session: Optional[Session] = None,
                        include_details: bool = False) -> list[dict[str, Any]]:
    """LightMem ``MemoryEntry``-shaped dicts.

    ``topic_id``/``topic_summary`` come from the graph's topic whose turns ground the entry
    (§3.2 topic segmentation); ``time_stamp`` is the entry's event time, ``float_time_stamp``
    its POSIX seconds, ``weekday`` e.g. ``"Mon"``; ``speaker_name`` is the user's name.
    """
    topic_of: dict[str, tuple[str, str]] = {}
    for t in graph.topics:
        for tid in t.turn_ids:
            topic_of.setdefault(tid, (t.id, " ".join(t.events)))
    out = []
    for c in graph_candidates(graph, session, include_details):
        dt = _parse_time(c.event_time)
        topic = next((topic_of[x] for x in c.source_turn_ids if x in topic_of), (None, ""))
        out.append({
            "id": _stable_id(user_id, graph.session_id, c.graph_node_id, c.text),
            "time_stamp": dt.isoformat() if dt else None,
            "float_time_stamp": (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).timestamp() if dt else None,
            "weekday": dt.strftime("%a") if dt else None,
            "category": c.kind,
            "subcategory": c.metadata.get("origin", ""),
            "memory_class": "promem_fast",
            "memory": c.text,
            "original_memory": c.text,
            "compressed_memory": "",
            "topic_id": topic[0],
            "topic_summary": topic[1],
            "speaker_id": user_id,
            "speaker_name": graph.user_name,
            "hit_time": 0,
            "update_queue": [],
            "metadata": _prov(c),
        })
    return out


def write_to_lightmem(retriever: Any, embed: Callable[[Sequence[str]], Any], graph: MemoryGraph, user_id: str,
                      session: Optional[Session] = None, include_details: bool = False) -> list[str]:
    """Insert LightMem entries into a LightMem vector retriever (``retriever.insert(vectors, payloads, ids)``).

    embed: texts -> float32 (n, dim) with the same embedder LightMem retrieves with.
    Returns the inserted ids.
    """
    entries = to_lightmem_entries(graph, user_id, session, include_details)
    if not entries:
        return []
    vecs = embed([e["memory"] for e in entries])
    ids = [e["id"] for e in entries]
    retriever.insert(vectors=[list(map(float, v)) for v in vecs], payloads=entries, ids=ids)
    return ids


# ---------------------------------------------------------------------------- MemOS
def to_memos_items(graph: MemoryGraph, user_id: str, session: Optional[Session] = None,
                   include_details: bool = False) -> list[dict[str, Any]]:
    """MemOS ``TextualMemoryItem``-shaped dicts (tree-node metadata).

    ``confidence`` is on MemOS's 0-100 scale (ours x 100); ``memory_type`` is ``UserMemory``
    for entries about the user and ``LongTermMemory`` otherwise; ``sources`` are the
    grounding turns as chat messages when ``session`` is given.
    """
    turns = {t.turn_id: t for t in session.turns} if session is not None else {}
    now = datetime.now(timezone.utc).isoformat()
    out = []
    for c in graph_candidates(graph, session, include_details):
        dt = _parse_time(c.event_time)
        sources = []
        for tid in c.source_turn_ids:
            t = turns.get(tid)
            if t is not None:
                sources.append({"type": "chat", "role": t.role if t.role in ("user", "assistant", "system") else "user",
                                "chat_time": t.timestamp.isoformat() if t.timestamp else None,
                                "message_id": tid, "content": t.content})
        out.append({
            "id": _stable_id(user_id, graph.session_id, c.graph_node_id, c.text),
            "memory": c.text,
            "metadata": {
                "user_id": user_id, "session_id": graph.session_id, "status": "activated",
                "type": "event" if c.kind == "event" else "fact",
                "memory_time": dt.date().isoformat() if dt else None,
                "source": "conversation",
                "confidence": None if c.confidence is None else round(100.0 * c.confidence, 2),
                "entities": [graph.user_name] if c.subject == "@user" else [],
                "tags": ["promem_fast", c.kind],
                "visibility": "private", "updated_at": now,
                "memory_type": "UserMemory" if c.subject == "@user" else "LongTermMemory",
                "key": c.text[:64], "sources": sources, "background": "",
                "promem": _prov(c),
            },
        })
    return out


def write_to_memos(text_memory: Any, graph: MemoryGraph, user_id: str, session: Optional[Session] = None,
                   include_details: bool = False) -> list[dict[str, Any]]:
    """Add the graph's entries to a MemOS textual memory (``text_memory.add(items)``); returns the items."""
    items = to_memos_items(graph, user_id, session, include_details)
    if items:
        text_memory.add(items)
    return items
