"""Public entry point: :class:`Extractor` turns a :class:`Session` into a :class:`MemoryGraph`.

    from promem_fast import Extractor, Config
    graph = Extractor(Config()).extract(session)

``extract`` is synchronous and works whether or not an event loop is running (inside a
running loop it runs the extraction in a fresh thread). Every ``extract`` call of one
Extractor runs on the same private event loop, so clients bound to a loop (the OpenAI
backend's HTTP pool) live across calls instead of being closed after their loop; ``aextract``
is the coroutine. Model services are built lazily from the config on first use.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Callable, Optional

from .config import Config
from .context import Services, SessionContext
from .schema import MemoryGraph, Session

logger = logging.getLogger(__name__)

OnStage = Callable[[str, str, str], None]


class EmptySessionError(ValueError):
    """The session has no turns, or every turn is empty/whitespace. Raised before any model call."""


class Extractor:
    """ProMem memory extraction for one session at a time (sessions may run concurrently).

    Args:
        config: pipeline, model and engine settings (default ``Config()``: the paper's
            defaults with the embedded CPU models).
        services: ready model services; default: built from ``config`` on first use
            (:meth:`Services.from_config`).
        on_stage: optional ``on_stage(session_id, stage, "start"|"end")`` progress callback.
    """

    def __init__(self, config: Optional[Config] = None, services: Optional[Services] = None, *,
                 on_stage: Optional[OnStage] = None):
        self.config = config or Config()
        self._services = services
        self.on_stage = on_stage
        self._lock = threading.Lock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._loop_lock = threading.Lock()  # one extract at a time on the private loop

    @property
    def services(self) -> Services:
        """The model services (built from the config at first access)."""
        with self._lock:
            if self._services is None:
                self._services = Services.from_config(self.config)
            return self._services

    @staticmethod
    def check_session(session: Session) -> None:
        """Raise :class:`EmptySessionError` naming ``session.session_id`` when it holds no text."""
        if not session.turns or all(not t.content.strip() for t in session.turns):
            raise EmptySessionError(
                f"session {session.session_id!r} is empty: it has no turns or every turn's content is blank"
            )

    async def aextract(self, session: Session) -> MemoryGraph:
        """Extract the verified memory graph of ``session``.

        Raises:
            EmptySessionError: empty session (before any model call).
            StructuredOutputError: an LLM output stayed invalid/truncated after the retry
                (not raised for relation verification: its edges are discarded instead).
        """
        from .stages.pipeline import run_pipeline

        self.check_session(session)
        ctx = SessionContext(session=session, config=self.config, services=self.services)
        return await run_pipeline(ctx, self.on_stage)

    def _run_sync(self, session: Session) -> MemoryGraph:
        with self._loop_lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(self.aextract(session))

    def extract(self, session: Session) -> MemoryGraph:
        """Synchronous :meth:`aextract`; safe to call from inside a running event loop. Calls
        from several threads run one after another on the Extractor's loop (for sessions at
        once, await :meth:`aextract` concurrently or use ``promem-fast bulk``)."""
        self.check_session(session)
        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False
        if not running:
            return self._run_sync(session)
        box: dict = {}

        def worker() -> None:
            try:
                box["graph"] = self._run_sync(session)
            except BaseException as e:  # re-raised in the caller's thread
                box["error"] = e

        th = threading.Thread(target=worker, name=f"promem-extract-{session.session_id}")
        th.start()
        th.join()
        if "error" in box:
            raise box["error"]
        return box["graph"]
