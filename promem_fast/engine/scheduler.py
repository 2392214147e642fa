"""Run many sessions concurrently through the unchanged per-session stage code.

``run_sessions`` keeps up to ``concurrency`` sessions in flight (asyncio tasks); the
services they share are micro-batched (engine/services.py), so the requests of all
sessions in flight leave together. concurrency=1 with sequential services is the
reference engine: the same code path, one session and one request at a time.

A session that raises is recorded as a failed :class:`SessionResult` (its error string)
and the others go on.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from dataclasses import dataclass
from typing import Any, AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Optional, Union

from ..schema import MemoryGraph, Session

logger = logging.getLogger(__name__)

ExtractFn = Callable[[Session], Awaitable[MemoryGraph]]


@dataclass
class SessionResult:
    """Outcome of one session.

    graph: the MemoryGraph, or None when the session failed.
    error: ``"ExceptionType: message"`` when it failed, else None.
    seconds: wall time of this session's extraction (seconds; includes waiting on shared batches).
    index: position of the session in the input order.
    """

    session_id: str
    graph: Optional[MemoryGraph]
    error: Optional[str]
    seconds: float
    index: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


def _extract_fn(extractor: Any) -> ExtractFn:
    """``extractor.aextract`` when it has one, else the async callable itself."""
    fn = getattr(extractor, "aextract", None)
    if fn is None:
        fn = extractor
    if not callable(fn):
        raise TypeError(f"extractor must have aextract(session) or be an async callable, got {type(extractor)!r}")
    return fn


def format_error(exc: BaseException) -> str:
    """``"Type: message"`` (the stage name is in the message for StructuredOutputError)."""
    return f"{type(exc).__name__}: {exc}"


async def run_sessions(
    sessions: Union[Iterable[Session], AsyncIterable[Session]],
    extractor: Any,
    concurrency: int = 1,
) -> AsyncIterator[SessionResult]:
    """Extract every session with at most ``concurrency`` in flight; yield results as they finish.

    Args:
        sessions: Sessions (a list, any iterable, or an async iterable; read lazily, so a
            bulk job need not hold every session in memory at once).
        extractor: an ``Extractor`` (its ``aextract``) or ``async f(session) -> MemoryGraph``.
        concurrency: sessions in flight at once (>= 1).

    Yields:
        SessionResult per session, in completion order (``index`` gives the input order).
        An exception raised while extracting a session becomes that result's ``error``;
        it never stops the other sessions.

    Raises:
        ValueError: concurrency < 1.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    extract = _extract_fn(extractor)
    queue: asyncio.Queue = asyncio.Queue()
    done = object()

    if isinstance(sessions, AsyncIterable):
        source: AsyncIterator[Session] = sessions.__aiter__()
    else:
        it = iter(sessions)

        async def _gen() -> AsyncIterator[Session]:
            for s in it:
                yield s

        source = _gen()
    lock = asyncio.Lock()
    counter = [0]

    async def _next() -> Optional[tuple[int, Session]]:
        async with lock:  # one reader of the shared source at a time
            try:
                s = await source.__anext__()
            except StopAsyncIteration:
                return None
            i = counter[0]
            counter[0] += 1
            return i, s

    async def _one(i: int, s: Session) -> SessionResult:
        sid = getattr(s, "session_id", f"#{i}")
        t = time.perf_counter()
        try:
            out = extract(s)
            g = await out if inspect.isawaitable(out) else out
            return SessionResult(sid, g, None, time.perf_counter() - t, i)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - recorded per session by design
            logger.warning("session %s failed: %s", sid, format_error(e))
            return SessionResult(sid, None, format_error(e), time.perf_counter() - t, i)

    async def _worker() -> None:
        try:
            while True:
                nxt = await _next()
                if nxt is None:
                    return
                await queue.put(await _one(*nxt))
        finally:
            await queue.put(done)

    workers = [asyncio.create_task(_worker()) for _ in range(concurrency)]
    finished = 0
    try:
        while finished < len(workers):
            item = await queue.get()
            if item is done:
                finished += 1
                continue
            yield item
        for w in workers:  # surfaces an error of the session source itself
            await w
    finally:
        for w in workers:
            if not w.done():
                w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def run_all(
    sessions: Iterable[Session], extractor: Any, concurrency: int = 1
) -> list[SessionResult]:
    """Every result of :func:`run_sessions`, sorted back into input order."""
    out = [r async for r in run_sessions(sessions, extractor, concurrency)]
    out.sort(key=lambda r: r.index)
    return out


def build_extractor(
    config: Any = None,
    services: Any = None,
    *,
    engine: str = "batched",
    concurrency: Optional[int] = None,
    **batch_kw: Any,
) -> tuple[Any, Any]:
    """An ``Extractor`` whose services are wrapped for ``engine``.

    Args:
        config: promem_fast Config (default Config()).
        services: the real Services (default ``Services.from_config(config)``).
        engine: "sequential" (batch 1, no wait, one dispatch at a time) or "batched"
            (``config.engine`` sizes and wait limit).
        concurrency: overrides ``config.engine.concurrency`` for the batched policy.
        batch_kw: passed to :func:`~promem_fast.engine.services.batched_services`.

    Returns:
        (extractor, wrapped services); the services carry batcher stats.

    Raises:
        ValueError: unknown engine name.
    """
    from ..config import Config
    from ..context import Services
    from ..extractor import Extractor
    from .services import batched_services

    if engine not in ("sequential", "batched"):
        raise ValueError(f"engine must be 'sequential' or 'batched', got {engine!r}")
    config = config or Config()
    services = services or Services.from_config(config)
    eng = config.engine
    if concurrency is not None:
        eng = eng.model_copy(update={"concurrency": concurrency})
    wrapped = batched_services(services, eng, sequential=engine == "sequential", **batch_kw)
    return Extractor(config, wrapped), wrapped
