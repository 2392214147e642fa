"""LLM backend for any OpenAI-compatible chat server (vLLM serve, llama.cpp server,
llama-cpp-python's server, SGLang, OpenAI itself), through the official ``openai`` client.

Retries: the client's own policy (``max_retries``) covers connection errors, timeouts,
408, 409, 429 and every 5xx, with exponential backoff from 0.5 s (doubling, capped at
8 s) and 0-25 % jitter, honouring ``Retry-After`` / ``retry-after-ms`` headers up to
120 s (openai-python ``_base_client.py``: ``_should_retry``, ``_calculate_retry_timeout``;
documented in the SDK's "Retries" section). So no second retry loop is layered on top.

Structured output: every request with a ``json_schema`` first asks for
``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``. A server
that rejects that (HTTP 400 / 422, or llama-cpp-python's 500, whose
``response_format.type`` only allows ``text | json_object``) gets
``{"type": "json_object", "schema": ...}`` (llama.cpp servers turn ``schema`` into a
grammar; others ignore the key), and if that is rejected too, plain ``json_object``.
The first structured request to a server goes out without client retries, because some
servers answer an unsupported ``response_format`` with a 5xx (llama-cpp-python 0.3.x
turns its request-validation error into a 500 whose message names ``response_format``);
a 5xx that does not name it is retried normally. The mode that worked is remembered per
server URL for the life of the process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from typing import Any, Optional, Sequence

from ...aio import gather_or_cancel
from ..base import LLMRequest, LLMResponse

log = logging.getLogger(__name__)

# Structured-output modes, strongest first.
JSON_SCHEMA = "json_schema"
JSON_OBJECT_SCHEMA = "json_object+schema"
JSON_OBJECT = "json_object"
_MODES = (JSON_SCHEMA, JSON_OBJECT_SCHEMA, JSON_OBJECT)

# server base URL -> weakest mode it needed. Shared by every instance: the server's
# capabilities do not depend on which backend object talks to it.
_SERVER_JSON_MODE: dict[str, str] = {}

_NAME_RE = re.compile(r"[^a-zA-Z0-9_-]")


def _schema_name(req: LLMRequest) -> str:
    """``json_schema.name`` must match ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI API)."""
    raw = str((req.json_schema or {}).get("title") or req.stage or "output")
    return _NAME_RE.sub("_", raw)[:64] or "output"


def response_format_for(req: LLMRequest, mode: str) -> Optional[dict[str, Any]]:
    """The ``response_format`` body field for ``req`` in structured-output ``mode``.

    Returns None for a free-text request (no ``json_schema``).
    Raises ValueError for an unknown mode.
    """
    if req.json_schema is None:
        return None
    if mode == JSON_SCHEMA:
        return {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(req), "schema": req.json_schema, "strict": True},
        }
    if mode == JSON_OBJECT_SCHEMA:
        return {"type": "json_object", "schema": req.json_schema}
    if mode == JSON_OBJECT:
        return {"type": "json_object"}
    raise ValueError(f"unknown structured-output mode {mode!r}; expected one of {_MODES}")


def _short(e: Exception, n: int = 300) -> str:
    msg = getattr(e, "message", None) or str(e)
    return msg if len(msg) <= n else msg[:n] + "..."


def _retryable(status: int) -> bool:
    """The statuses the openai client retries (408, 409, 429, 5xx)."""
    return status in (408, 409, 429) or status >= 500


def _rejects_format(e: Any) -> bool:
    """Whether an HTTP error means "this response_format is not supported".

    Any 400 / 422 counts (servers word it differently; a 400 for another reason walks the
    modes once and is then raised). A 5xx counts only if its message names
    ``response_format`` (llama-cpp-python reports request validation errors as 500).
    """
    status = getattr(e, "status_code", 0)
    if status in (400, 422):
        return True
    return status >= 500 and "response_format" in (getattr(e, "message", "") or str(e))


def _get(obj: Any, key: str) -> Any:
    """Attribute or mapping lookup (SDK models keep unknown fields as extras or dicts)."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(key)
    val = getattr(obj, key, None)
    if val is None:
        extra = getattr(obj, "model_extra", None) or {}
        val = extra.get(key)
    return val


def _int(x: Any) -> int:
    try:
        return int(x or 0)
    except (TypeError, ValueError):
        return 0


def usage_from_completion(completion: Any) -> tuple[int, int, int]:
    """(prompt_tokens, completion_tokens, cached_tokens) from a chat completion.

    Reads ``usage.prompt_tokens``, ``usage.completion_tokens`` and
    ``usage.prompt_tokens_details.cached_tokens`` (OpenAI, vLLM). Where ``usage`` is
    missing, llama.cpp's server ``timings`` are used: ``prompt_n`` (prompt tokens
    evaluated), ``cache_n`` (prompt tokens reused from the KV cache), ``predicted_n``
    (generated tokens). Absent fields count as 0.
    """
    usage = _get(completion, "usage")
    timings = _get(completion, "timings")
    prompt = _int(_get(usage, "prompt_tokens"))
    completion_tokens = _int(_get(usage, "completion_tokens"))
    cached = _int(_get(_get(usage, "prompt_tokens_details"), "cached_tokens"))
    if timings is not None:
        cache_n = _int(_get(timings, "cache_n"))
        if usage is None:
            prompt = _int(_get(timings, "prompt_n")) + cache_n
            completion_tokens = _int(_get(timings, "predicted_n"))
        if not cached:
            cached = cache_n
    return prompt, completion_tokens, cached


class OpenAILLM:
    """Chat completions from an OpenAI-compatible HTTP server.

    Args:
        cfg: :class:`~promem_fast.config.LLMConfig`. Used fields: ``base_url`` (e.g.
            ``http://127.0.0.1:8080/v1``; None = the client's default / $OPENAI_BASE_URL),
            ``api_key`` (else $OPENAI_API_KEY, else ``"EMPTY"`` for local servers),
            ``model`` (None = first id from ``GET /models``), ``parallel`` (requests in
            flight at once), ``max_retries``, ``timeout_s`` (seconds per request),
            ``seed``.
        cache_dir: unused (registry signature).

    ``generate`` returns one :class:`LLMResponse` per request, in input order; token
    counts are the server's. Errors that survive the client's retries propagate as the
    SDK's exceptions (``openai.APIStatusError``, ``openai.APIConnectionError``, ...).
    """

    name = "openai"

    def __init__(self, cfg, cache_dir=None, **kw: Any):
        try:
            import openai  # noqa: F401  (core dependency; checked for a clear message)
        except ImportError as e:  # pragma: no cover - openai is a core dependency
            raise ImportError("the openai backend needs the 'openai' package: pip install openai") from e
        if cfg.parallel < 1:
            raise ValueError(f"LLMConfig.parallel must be >= 1, got {cfg.parallel}")
        self.cfg = cfg
        self.base_url = cfg.base_url
        self.api_key = cfg.api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self._model: Optional[str] = cfg.model
        # The httpx pool and the semaphore belong to one event loop; rebuild them when the
        # running loop changes (a backend built outside a loop, or reused by asyncio.run calls).
        self._loop: Any = None
        self._loop_state: Optional[tuple[Any, asyncio.Semaphore, asyncio.Lock]] = None

    # -- plumbing ---------------------------------------------------------------------
    def _server_key(self) -> str:
        return (self.base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")

    def _state(self) -> tuple[Any, asyncio.Semaphore, asyncio.Lock]:
        from openai import AsyncOpenAI

        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._loop_state is None:
            client = AsyncOpenAI(
                base_url=self.base_url,
                api_key=self.api_key,
                max_retries=self.cfg.max_retries,
                timeout=self.cfg.timeout_s,
            )
            self._loop = loop
            self._loop_state = (client, asyncio.Semaphore(self.cfg.parallel), asyncio.Lock())
        return self._loop_state

    @property
    def model_name(self) -> str:
        return self._model or "unresolved"

    @property
    def json_mode(self) -> str:
        """Structured-output mode currently used for this server."""
        return _SERVER_JSON_MODE.get(self._server_key(), JSON_SCHEMA)

    async def resolve_model(self) -> str:
        """``cfg.model``, or the first id listed by ``GET /models``.

        Raises RuntimeError when the server lists no model.
        """
        if self._model:
            return self._model
        client, _, lock = self._state()
        async with lock:
            if not self._model:
                page = await client.models.list()
                ids = [m.id for m in page.data]
                if not ids:
                    raise RuntimeError(
                        f"LLMConfig.model is unset and the server at {self._server_key()} lists no model"
                    )
                self._model = ids[0]
                log.info("openai backend: using model %r served at %s", self._model, self._server_key())
        return self._model

    # -- generation -------------------------------------------------------------------
    async def generate(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """Complete every request (at most ``cfg.parallel`` in flight); input order kept.

        If one request fails (after the client's retries), the others are cancelled and
        the error propagates.
        """
        if not requests:
            return []
        model = await self.resolve_model()
        # One failure fails the batch: the siblings are stopped, not left running.
        return await gather_or_cancel(self._one(model, r) for r in requests)

    async def _one(self, model: str, req: LLMRequest) -> LLMResponse:
        import openai

        client, sem, _ = self._state()
        body: dict[str, Any] = {
            "model": model,
            "messages": req.messages,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
            "seed": self.cfg.seed,
        }
        server = self._server_key()
        mode = _SERVER_JSON_MODE.get(server, JSON_SCHEMA)
        # Until a structured request has succeeded on this server, send it without the
        # client's retries: some servers answer an unsupported response_format with a 5xx
        # (llama-cpp-python wraps its validation error in a 500), which the client would
        # otherwise retry with backoff before we can fall back.
        probe = req.json_schema is not None and server not in _SERVER_JSON_MODE
        async with sem:
            while True:
                fmt = response_format_for(req, mode)
                kwargs = dict(body)
                if fmt is not None:
                    kwargs["response_format"] = fmt
                c = client.with_options(max_retries=0) if probe else client
                try:
                    completion = await c.chat.completions.create(**kwargs)
                    break
                except openai.APIStatusError as e:
                    if fmt is not None and _rejects_format(e):
                        nxt = _MODES.index(mode) + 1
                        if nxt >= len(_MODES):
                            raise
                        log.warning(
                            "server %s rejected response_format %s (HTTP %s: %s); trying %s",
                            server, mode, e.status_code, _short(e), _MODES[nxt],
                        )
                        mode = _MODES[nxt]
                    elif probe and _retryable(e.status_code):
                        probe = False  # a transient error: redo with the client's retries
                    else:
                        raise
                except openai.APIConnectionError:  # includes timeouts
                    if not probe:
                        raise
                    probe = False
        # Remember the mode once it has worked: a 400 for another reason (prompt too long)
        # must not downgrade the server for good.
        if fmt is not None and (
            server not in _SERVER_JSON_MODE or _MODES.index(mode) > _MODES.index(_SERVER_JSON_MODE[server])
        ):
            _SERVER_JSON_MODE[server] = mode
        choice = completion.choices[0] if completion.choices else None
        if choice is None:
            raise RuntimeError(f"server {server} returned no choices for a {req.stage!r} request")
        text = (choice.message.content if choice.message is not None else None) or ""
        prompt, completion_tokens, cached = usage_from_completion(completion)
        return LLMResponse(
            text=text,
            prompt_tokens=prompt,
            completion_tokens=completion_tokens,
            cached_tokens=cached,
            finish_reason=choice.finish_reason or "stop",
        )

    async def aclose(self) -> None:
        """Close the HTTP client (call from the loop that used it)."""
        st, self._loop_state, self._loop = self._loop_state, None, None
        if st is not None:
            await st[0].close()
