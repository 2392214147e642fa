"""Mem0-shaped lifelong memory API over ProMem extraction: :class:`Memory` and :class:`AsyncMemory`.

    from promem_fast.store import Memory
    m = Memory(config, path="~/.promem/memory")          # or services=..., extractor=...
    m.add([{"role": "user", "content": "I moved to Berlin"}], user_id="alice")
    m.search("Where does Alice live?", user_id="alice")  # {"results": [{"id", "memory", "score", ...}]}

``add`` runs the ProMem pipeline (``Extractor(config, services).aextract(session)``), then
consolidates the verified graph into the user's memory (see :mod:`.consolidate`). Return
shapes follow Mem0: ``add`` -> ``{"results": [{"id", "memory", "event"}]}`` with event
ADD | UPDATE | NONE; ``search``/``get_all`` -> ``{"results": [record]}``; ``history`` -> a
list of changes (``old_memory``, ``new_memory``, ``event``, ``created_at``).

Every read is scoped by ``user_id``: one user's entries are never returned for another.
Writes to one user are serialised (a per-user asyncio lock in this process, plus an
optimistic version check in SQLite across instances and processes).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
from concurrent.futures import Future
from datetime import datetime
from typing import Any, Awaitable, Optional, Sequence, TypeVar, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..config import Config
from ..schema import MemoryGraph, Session, Turn
from .consolidate import Consolidator, graph_candidates, graph_hash, subject_of
from .sqlite_store import ENTRY_KINDS, ENTRY_STATUSES, Entry, SQLiteStore, VersionConflict

logger = logging.getLogger(__name__)
T = TypeVar("T")

MessagesLike = Union[str, dict[str, Any], Sequence[dict[str, Any]], Session]


class InvalidInput(ValueError):
    """Bad input to the memory API; ``field`` names the offending field (dotted path)."""

    def __init__(self, field: str, msg: str):
        super().__init__(f"{field}: {msg}")
        self.field = field
        self.msg = msg


class StoreConfig(BaseModel):
    """Lifelong memory store settings (kept apart from :class:`~promem_fast.config.Config`)."""

    model_config = ConfigDict(extra="forbid")

    path: Optional[str] = Field(default=None, description="Store directory (SQLite + FAISS files); None = in memory.")
    match_top_k: int = Field(default=5, ge=1, description="Active entries compared with each new entry (top-k by cosine).")
    match_threshold: float = Field(default=0.5, description="Minimum cosine for a candidate to be checked with NLI.")
    include_details: bool = Field(
        default=False, description="Store the graph's details as entries too (kind='detail'); by default each "
        "event carries its anchored details in metadata['details'] and no detail is an entry of its own.")
    index_flush_every: int = Field(default=8, ge=1, description="Write a user's FAISS file every N commits "
                                   "(close() flushes; a stale file is rebuilt from SQLite).")
    max_retries: int = Field(default=5, ge=0, description="Re-plans after a concurrent writer changed the user's memory.")


# A character that is not whitespace in Python's sense (str.isspace), spelled out so the HTTP
# schema's pattern means the same in every regex engine (Rust's and Python's \S differ on \x1c-\x1f).
NONBLANK_PATTERN = "[^\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_NONBLANK = re.compile(NONBLANK_PATTERN)


def _check_text(field: str, value: Any, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(field, f"expected a string, got {type(value).__name__}")
    if not allow_empty and not _NONBLANK.search(value):
        raise InvalidInput(field, "must not be empty")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInput(field, f"not valid UTF-8 text ({e.reason} at {e.start})") from None
    return value


def _check_user(user_id: Any) -> str:
    if user_id is None:
        raise InvalidInput("user_id", "required")
    return _check_text("user_id", user_id)


def _json_safe(field: str, value: Any) -> Any:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as e:
        raise InvalidInput(field, f"must be JSON-serialisable UTF-8 ({e})") from None
    return value


def messages_to_session(
    messages: MessagesLike,
    session_id: Optional[str] = None,
    user_name: Optional[str] = None,
) -> tuple[Session, str]:
    """Turn Mem0-style messages into a :class:`Session`; returns (session, input hash).

    Accepts a string (one user message), one ``{"role", "content"}`` dict, a list of them
    (optional ``timestamp``: ISO 8601 string or datetime; optional ``name``), or a Session.
    Roles other than user/assistant/system become ``other``. Turn ids are ``t0, t1, ...``.
    The session id defaults to a hash of the messages, so re-adding the same messages is
    recognised.

    Raises:
        InvalidInput: naming the bad field, e.g. ``messages[2].content``.
    """
    if isinstance(messages, Session):
        for i, t in enumerate(messages.turns):
            _check_text(f"session.turns[{i}].content", t.content, allow_empty=True)
            if t.speaker is not None:
                _check_text(f"session.turns[{i}].speaker", t.speaker, allow_empty=True)
        _check_text("session.session_id", messages.session_id, allow_empty=True)
        _check_text("session.user_name", messages.user_name, allow_empty=True)
        s = messages if user_name is None else messages.model_copy(update={"user_name": user_name})
        h = hashlib.sha256(s.model_dump_json(exclude={"metadata"}).encode("utf-8")).hexdigest()
        return s, h
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, (list, tuple)) or not messages:
        raise InvalidInput("messages", "expected a non-empty list of {role, content} messages, a string or a Session")
    turns = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise InvalidInput(f"messages[{i}]", f"expected an object, got {type(m).__name__}")
        content = _check_text(f"messages[{i}].content", m.get("content"))
        role = m.get("role", "user")
        if not isinstance(role, str):
            raise InvalidInput(f"messages[{i}].role", "expected a string")
        role = role if role in ("user", "assistant", "system") else "other"
        ts = m.get("timestamp")
        if isinstance(ts, str):
            from dateutil import parser as dp

            try:
                ts = dp.parse(ts)
            except (ValueError, OverflowError):
                raise InvalidInput(f"messages[{i}].timestamp", f"cannot parse date-time {ts!r}") from None
        elif ts is not None and not isinstance(ts, datetime):
            raise InvalidInput(f"messages[{i}].timestamp", "expected an ISO 8601 string")
        name = m.get("name")
        turns.append(Turn(turn_id=f"t{i}", role=role, content=content,
                          speaker=name if isinstance(name, str) else None, timestamp=ts))
    h = hashlib.sha256(json.dumps(
        [[t.role, t.content, t.speaker, t.timestamp.isoformat() if t.timestamp else None] for t in turns]
    ).encode("utf-8")).hexdigest()
    sid = session_id or f"s-{h[:16]}"
    start = next((t.timestamp for t in turns if t.timestamp), None)
    return Session(session_id=sid, user_name=user_name or "User", turns=turns, start_time=start), h


def _record(e: Entry, score: Optional[float] = None) -> dict[str, Any]:
    """Mem0-shaped record of an entry, plus ProMem provenance fields."""
    d: dict[str, Any] = {
        "id": e.id, "memory": e.text, "user_id": e.user_id, "metadata": e.metadata,
        "created_at": e.created_at, "updated_at": e.updated_at, "status": e.status, "kind": e.kind,
        "session_id": e.session_id, "source_turn_ids": e.source_turn_ids, "event_time": e.event_time,
        "valid_from": e.valid_from, "valid_to": e.valid_to, "supersedes": e.supersedes,
        "superseded_by": e.superseded_by, "confidence": e.confidence, "subject": e.subject,
        "hash": hashlib.md5(e.text.encode("utf-8")).hexdigest(),
    }
    if score is not None:
        d["score"] = float(score)
    return d


_FILTER_KEYS = {"status", "session_id", "kind", "event_time", "metadata"}


def _parse_filters(filters: Optional[dict[str, Any]]) -> dict[str, Any]:
    """Validate ``filters``: status (str | list | "all"), session_id, kind, event_time {gte, lte},
    metadata {key: value} (any other key is read as a metadata equality)."""
    out: dict[str, Any] = {"statuses": ["active"], "session_id": None, "kinds": None,
                           "gte": None, "lte": None, "metadata": {}}
    if filters is None:
        return out
    if not isinstance(filters, dict):
        raise InvalidInput("filters", "expected an object")
    for k, v in filters.items():
        if k == "status":
            vals = [v] if isinstance(v, str) else v
            if vals == ["all"]:
                out["statuses"] = None
                continue
            if not isinstance(vals, list) or not vals or any(x not in ENTRY_STATUSES for x in vals):
                raise InvalidInput("filters.status", f"expected 'all' or one or more of {list(ENTRY_STATUSES)}")
            out["statuses"] = vals
        elif k == "session_id":
            out["session_id"] = _check_text("filters.session_id", v, allow_empty=True)
        elif k == "kind":
            vals = [v] if isinstance(v, str) else v
            if not isinstance(vals, list) or not vals or any(x not in ENTRY_KINDS for x in vals):
                raise InvalidInput("filters.kind", f"expected one or more of {list(ENTRY_KINDS)}")
            out["kinds"] = vals
        elif k == "event_time":
            if not isinstance(v, dict) or not set(v) <= {"gte", "lte"}:
                raise InvalidInput("filters.event_time", "expected {'gte': ISO date, 'lte': ISO date}")
            for op, x in v.items():
                if x is not None:
                    out[op] = _check_text(f"filters.event_time.{op}", x, allow_empty=True)
        elif k == "metadata":
            if not isinstance(v, dict):
                raise InvalidInput("filters.metadata", "expected an object")
            out["metadata"].update(_json_safe("filters.metadata", v))
        else:
            _check_text("filters", k)
            out["metadata"][k] = _json_safe(f"filters.{k}", v)
    return out


def _meta_match(e: Entry, want: dict[str, Any]) -> bool:
    return all(e.metadata.get(k) == v for k, v in want.items())


class AsyncMemory:
    """Lifelong memory over the embedded store, async API (Mem0's ``AsyncMemory`` shape).

    Args:
        config: pipeline Config (used to build services and the Extractor when not given).
        services: :class:`~promem_fast.context.Services` (llm, nli, embed); built from
            ``config`` on first use when None.
        path: store directory (overrides ``store_config.path``); None = in-memory.
        store_config: :class:`StoreConfig`.
        extractor: anything with ``async aextract(session) -> MemoryGraph``; default
            ``promem_fast.extractor.Extractor(config, services)``.
        store: an existing :class:`SQLiteStore` to share (e.g. between instances in tests).
    """

    def __init__(
        self,
        config: Optional[Config] = None,
        services: Any = None,
        *,
        path: Optional[str] = None,
        store_config: Optional[StoreConfig] = None,
        extractor: Any = None,
        store: Optional[SQLiteStore] = None,
    ):
        self.config = config or Config()
        self.store_config = store_config or StoreConfig()
        if path is not None:
            self.store_config = self.store_config.model_copy(update={"path": str(path)})
        self._services = services
        self._extractor = extractor
        self.store = store or SQLiteStore(self.store_config.path, self.store_config.index_flush_every)
        self._locks: dict[str, asyncio.Lock] = {}
        self._locks_guard = threading.Lock()

    # ------------------------------------------------------------------ plumbing
    @property
    def services(self):
        if self._services is None:
            from ..context import Services

            self._services = Services.from_config(self.config)
        return self._services

    @property
    def extractor(self):
        if self._extractor is None:
            from ..extractor import Extractor

            self._extractor = Extractor(self.config, self.services)
        return self._extractor

    def _consolidator(self) -> Consolidator:
        sc = self.store_config
        return Consolidator(self.store, self.services.nli, self.services.embed, sc.match_top_k, sc.match_threshold)

    def _lock(self, user_id: str) -> asyncio.Lock:
        with self._locks_guard:
            lk = self._locks.get(user_id)
            if lk is None:
                lk = self._locks[user_id] = asyncio.Lock()
            return lk

    async def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(await self.services.embed.encode(list(texts)), dtype=np.float32)

    # ------------------------------------------------------------------ writes
    async def add(
        self,
        messages: MessagesLike,
        user_id: Optional[str] = None,
        metadata: Optional[dict[str, Any]] = None,
        *,
        session_id: Optional[str] = None,
        user_name: Optional[str] = None,
    ) -> dict[str, Any]:
        """Extract memory from a dialogue and consolidate it into ``user_id``'s memory.

        Args:
            messages: see :func:`messages_to_session`.
            user_id: owner of the memory (required).
            metadata: stored on every new entry (JSON object; the key "details" is reserved for
                each event's anchored details).
            session_id: overrides the session id (default: the Session's, or a content hash).
            user_name: the name entries use for the user (default: the Session's, else "User").

        Returns:
            ``{"results": [{"id", "memory", "event", "status", ...}], "session_id"}``; an
            identical session re-added returns every stored entry with event NONE and changes
            nothing (no extraction either).

        Raises:
            InvalidInput: a bad field (named).
        """
        user_id = _check_user(user_id)
        metadata = _json_safe("metadata", metadata or {})
        if not isinstance(metadata, dict):
            raise InvalidInput("metadata", "expected an object")
        session, input_hash = messages_to_session(messages, session_id, user_name)
        if session_id is not None and isinstance(messages, Session):
            session = session.model_copy(update={"session_id": session_id})
        if self.store.session_seen(user_id, session.session_id, input_hash=input_hash):
            return self._replay(user_id, session.session_id)
        if not any(t.content.strip() for t in session.turns):
            logger.info("session %r has no text; nothing to extract or store", session.session_id)
            return {"results": [], "session_id": session.session_id}
        graph = await self.extractor.aextract(session)
        return await self.add_graph(graph, user_id, metadata, session=session, _input_hash=input_hash)

    async def add_graph(
        self,
        graph: MemoryGraph,
        user_id: Optional[str] = None,
        metadata: Optional[dict[str, Any]] = None,
        *,
        session: Optional[Session] = None,
        _input_hash: Optional[str] = None,
    ) -> dict[str, Any]:
        """Consolidate an already extracted, verified graph into ``user_id``'s memory.

        ``session`` (optional) supplies turn timestamps for details' event times.
        Returns the same shape as :meth:`add`.
        """
        user_id = _check_user(user_id)
        if not isinstance(graph, MemoryGraph):
            graph = MemoryGraph.model_validate(graph)
        metadata = _json_safe("metadata", dict(metadata or {}))
        if "details" in metadata:
            raise InvalidInput("metadata.details", "reserved: each event entry's anchored details are stored there")
        for i, e in enumerate(graph.events):
            _check_text(f"graph.events[{i}].text", e.text, allow_empty=True)
        for i, d in enumerate(graph.details):
            _check_text(f"graph.details[{i}].text", d.text, allow_empty=True)
        ghash = graph_hash(graph)
        async with self._lock(user_id):
            if self.store.session_seen(user_id, graph.session_id, graph_hash=ghash):
                return self._replay(user_id, graph.session_id)
            session_row = {"session_id": graph.session_id, "input_hash": _input_hash, "graph_hash": ghash,
                           "graph_json": graph.to_json(indent=None), "metadata": metadata}
            relations = [(r.source, r.type, r.target, r.probe_question) for r in graph.relations]
            cands = graph_candidates(graph, session, self.store_config.include_details, metadata)
            if cands:
                emb = await self._embed([c.text for c in cands])
                for c, v in zip(cands, emb):
                    c.embedding = v
            cons = self._consolidator()
            for attempt in range(self.store_config.max_retries + 1):
                version, plan, outcomes = await cons.plan(user_id, cands, relations, session_row)
                try:
                    self.store.commit(user_id, version, plan)
                    break
                except VersionConflict:
                    logger.info("user %r changed during consolidation (attempt %d); re-planning", user_id, attempt + 1)
            else:
                raise RuntimeError(f"could not consolidate session {graph.session_id!r}: "
                                   f"{self.store_config.max_retries + 1} concurrent-write conflicts")
        return {"results": [o.to_result() for o in outcomes], "session_id": graph.session_id}

    def _replay(self, user_id: str, session_id: str) -> dict[str, Any]:
        entries = self.store.session_entries(user_id, session_id)
        return {"results": [{"id": e.id, "memory": e.text, "event": "NONE", "status": e.status} for e in entries],
                "session_id": session_id}

    async def update(self, memory_id: str, data: str, user_id: Optional[str] = None) -> dict[str, Any]:
        """Replace an entry's text (explicit edit; history keeps the old text).

        Raises:
            KeyError: unknown ``memory_id`` (or owned by another ``user_id``).
        """
        memory_id = _check_text("memory_id", memory_id, allow_empty=True)
        data = _check_text("data", data)
        e = self._owned(memory_id, user_id)
        async with self._lock(e.user_id):
            emb = (await self._embed([data]))[0]
            self.store.update_text(memory_id, data, emb, subject_of(data, e.metadata.get("user_name")))
        return {"message": "Memory updated successfully!", "id": memory_id}

    async def delete(self, memory_id: str, user_id: Optional[str] = None) -> dict[str, Any]:
        """Delete one entry (explicit; a DELETE row stays in history). Raises KeyError if unknown."""
        memory_id = _check_text("memory_id", memory_id, allow_empty=True)
        e = self._owned(memory_id, user_id)
        async with self._lock(e.user_id):
            self.store.delete(memory_id)
        return {"message": "Memory deleted successfully!", "id": memory_id}

    async def delete_all(self, user_id: Optional[str] = None) -> dict[str, Any]:
        """Delete every entry of ``user_id`` (and its history and index)."""
        user_id = _check_user(user_id)
        async with self._lock(user_id):
            n = self.store.delete_user(user_id)
        return {"message": "Memories deleted successfully!", "deleted": n}

    async def archive(self, memory_id: str, user_id: Optional[str] = None) -> dict[str, Any]:
        """Mark an entry ``archived`` (kept, not searched by default). Raises KeyError if unknown."""
        e = self._owned(_check_text("memory_id", memory_id, allow_empty=True), user_id)
        async with self._lock(e.user_id):
            got = self.store.set_status(memory_id, "archived")
        return _record(got)

    async def reset(self) -> None:
        """Remove every user's memory."""
        self.store.reset()

    # ------------------------------------------------------------------ reads
    def _owned(self, memory_id: str, user_id: Optional[str]) -> Entry:
        e = self.store.get(memory_id)
        if e is None or (user_id is not None and e.user_id != user_id):
            raise KeyError(f"memory {memory_id!r} not found")
        return e

    async def get(self, memory_id: str, user_id: Optional[str] = None) -> Optional[dict[str, Any]]:
        """The record of ``memory_id`` with its provenance, or None (also when owned by another ``user_id``)."""
        memory_id = _check_text("memory_id", memory_id, allow_empty=True)
        try:
            e = self._owned(memory_id, user_id)
        except KeyError:
            return None
        d = _record(e)
        d["provenance"] = self.store.provenance(e.id)
        d["nli"] = e.nli
        return d

    async def get_all(self, user_id: Optional[str] = None, filters: Optional[dict[str, Any]] = None,
                      limit: int = 100) -> dict[str, Any]:
        """``user_id``'s entries matching ``filters`` (default: active), oldest first, at most ``limit``."""
        user_id = _check_user(user_id)
        if not isinstance(limit, int) or limit < 1:
            raise InvalidInput("limit", "expected a positive integer")
        f = _parse_filters(filters)
        rows = self.store.list(user_id, f["statuses"], f["session_id"], f["kinds"], f["gte"], f["lte"],
                               limit=None if f["metadata"] else limit)
        rows = [e for e in rows if _meta_match(e, f["metadata"])][:limit]
        return {"results": [_record(e) for e in rows]}

    async def search(self, query: str, user_id: Optional[str] = None, top_k: int = 20,
                     filters: Optional[dict[str, Any]] = None, threshold: Optional[float] = None) -> dict[str, Any]:
        """Top-``top_k`` entries of ``user_id`` by cosine to ``query`` (default: active entries only).

        Active-only searches use the user's FAISS index; other filters scan the user's matching
        rows (exact cosine). ``threshold`` drops results with a lower score.

        Returns:
            ``{"results": [{"id", "memory", "score", "metadata", "created_at", "updated_at", "user_id", ...}]}``,
            best first.
        """
        query = _check_text("query", query)
        user_id = _check_user(user_id)
        if not isinstance(top_k, int) or top_k < 1:
            raise InvalidInput("top_k", "expected a positive integer")
        f = _parse_filters(filters)
        q = (await self._embed([query]))[0]
        plain = f["statuses"] == ["active"] and f["session_id"] is None and f["kinds"] is None \
            and f["gte"] is None and f["lte"] is None and not f["metadata"]
        if plain:
            hits = self.store.search_active(user_id, q, top_k)
        else:
            rows = self.store.list(user_id, f["statuses"], f["session_id"], f["kinds"], f["gte"], f["lte"])
            rows = [e for e in rows if _meta_match(e, f["metadata"])]
            if rows:
                m = np.stack([e.embedding for e in rows])
                s = m @ q
                order = np.argsort(-s, kind="stable")[:top_k]
                hits = [(rows[i], float(s[i])) for i in order]
            else:
                hits = []
        if threshold is not None:
            hits = [(e, s) for e, s in hits if s >= threshold]
        return {"results": [_record(e, s) for e, s in hits]}

    async def answer(self, question: str, user_id: Optional[str] = None, top_k: int = 20) -> dict[str, Any]:
        """Answer ``question`` from ``user_id``'s top-k *active* entries (the QA prompt of :mod:`promem_fast.qa`).

        Superseded values are not retrieved, so the answer uses the current one.

        Returns:
            ``{"answer": str, "memories": [search records used]}``.
        """
        from ..backends.base import LLMRequest
        from ..qa import _QA_SYSTEM, ANSWER_SCHEMA
        from ..structured import StructuredOutputError, parse_json

        hits = (await self.search(question, user_id, top_k))["results"]
        order = sorted(range(len(hits)), key=lambda i: (hits[i].get("event_time") or "", i))
        lines = []
        for i in order:
            h = hits[i]
            when = f"[{h['event_time']}] " if h.get("event_time") else ""
            lines.append(f"- {when}{h['memory']}")
        context = "\n".join(lines) or "- (no memories)"
        req = LLMRequest(
            messages=[{"role": "system", "content": _QA_SYSTEM},
                      {"role": "user", "content": f"Memories:\n{context}\n\nQuestion: {question}"}],
            json_schema=ANSWER_SCHEMA, max_tokens=128, stage="qa",
        )
        resp = (await self.services.llm.generate([req]))[0]
        try:
            text = parse_json(resp.text, ANSWER_SCHEMA, truncated=resp.finish_reason == "length")["answer"]
        except StructuredOutputError:
            text = resp.text.strip()
        return {"answer": str(text).strip(), "memories": hits}

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Change log of ``memory_id`` and the entries it superseded / was superseded by (oldest first).

        Raises:
            KeyError: no entry and no history for ``memory_id``.
        """
        memory_id = _check_text("memory_id", memory_id, allow_empty=True)
        h = self.store.history(memory_id)
        if not h:
            raise KeyError(f"memory {memory_id!r} not found")
        return h

    async def close(self) -> None:
        self.store.close()


class Memory:
    """Synchronous twin of :class:`AsyncMemory` (same arguments, same methods, blocking).

    Calls run on a private event loop in a daemon thread, so it works inside scripts,
    notebooks and threads alike; one instance may be shared by many threads.
    """

    def __init__(self, config: Optional[Config] = None, services: Any = None, **kw: Any):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="promem-memory", daemon=True)
        self._thread.start()
        self.amemory = AsyncMemory(config, services, **kw)

    def _run(self, coro: Awaitable[T]) -> T:
        fut: Future = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        return fut.result()

    @property
    def store(self) -> SQLiteStore:
        return self.amemory.store

    def add(self, messages: MessagesLike, user_id: Optional[str] = None, metadata: Optional[dict] = None, **kw):
        return self._run(self.amemory.add(messages, user_id, metadata, **kw))

    def add_graph(self, graph: MemoryGraph, user_id: Optional[str] = None, metadata: Optional[dict] = None, **kw):
        return self._run(self.amemory.add_graph(graph, user_id, metadata, **kw))

    def search(self, query: str, user_id: Optional[str] = None, top_k: int = 20,
               filters: Optional[dict] = None, threshold: Optional[float] = None):
        return self._run(self.amemory.search(query, user_id, top_k, filters, threshold))

    def get(self, memory_id: str, user_id: Optional[str] = None):
        return self._run(self.amemory.get(memory_id, user_id))

    def get_all(self, user_id: Optional[str] = None, filters: Optional[dict] = None, limit: int = 100):
        return self._run(self.amemory.get_all(user_id, filters, limit))

    def update(self, memory_id: str, data: str, user_id: Optional[str] = None):
        return self._run(self.amemory.update(memory_id, data, user_id))

    def delete(self, memory_id: str, user_id: Optional[str] = None):
        return self._run(self.amemory.delete(memory_id, user_id))

    def delete_all(self, user_id: Optional[str] = None):
        return self._run(self.amemory.delete_all(user_id))

    def archive(self, memory_id: str, user_id: Optional[str] = None):
        return self._run(self.amemory.archive(memory_id, user_id))

    def answer(self, question: str, user_id: Optional[str] = None, top_k: int = 20):
        return self._run(self.amemory.answer(question, user_id, top_k))

    def history(self, memory_id: str):
        return self._run(self.amemory.history(memory_id))

    def reset(self) -> None:
        self._run(self.amemory.reset())

    def close(self) -> None:
        """Flush index files, close the store and stop the loop thread."""
        if self._loop.is_closed():
            return
        self._run(self.amemory.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
