"""Async micro-batcher: gathers requests from every session in flight into one dispatch.

Stage code awaits ``submit(items)`` with the requests of *one* session; the batcher
merges items from concurrent callers and calls the wrapped service once per batch
(DESIGN.md, "the one idea that makes it fast"). A batch is dispatched as soon as it

* reaches ``max_batch`` items (size), or
* would exceed ``max_tokens`` with its next item (token budget; ``cost(item)`` tokens each), or
* its oldest item has waited ``max_wait_ms`` (wait limit).

Sequential mode is the same code with ``max_batch=1, max_wait_ms=0, max_inflight=1``:
every item becomes its own dispatch, one at a time, in submission order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Generic, Optional, Sequence, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class _Slot:
    item: Any
    cost: int
    future: asyncio.Future
    caller: int  # id of the submit() call, for split_on_error
    t_enqueue: float


@dataclass
class BatcherStats:
    """Counters of one batcher (for the benchmark): dispatches, items, and why each batch left."""

    dispatches: int = 0
    items: int = 0
    largest_batch: int = 0
    by_reason: dict[str, int] = field(default_factory=lambda: {"size": 0, "tokens": 0, "wait": 0})
    split_retries: int = 0

    @property
    def mean_batch(self) -> float:
        return self.items / self.dispatches if self.dispatches else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "dispatches": self.dispatches,
            "items": self.items,
            "mean_batch": round(self.mean_batch, 3),
            "largest_batch": self.largest_batch,
            "by_reason": dict(self.by_reason),
            "split_retries": self.split_retries,
        }


class MicroBatcher(Generic[T, R]):
    """Batch items from concurrent ``submit`` calls into calls of ``fn``.

    Args:
        fn: ``async fn(items: list[T]) -> list[R]``, one result per item, in order. A slot
            holding an ``Exception`` instance is a per-item failure: only the caller that
            submitted that item sees it raised.
        max_batch: most items per dispatch (>= 1).
        max_tokens: token budget of one dispatch (sum of ``cost``), or None for no budget.
            An item costlier than the whole budget is dispatched alone.
        cost: ``cost(item) -> int`` tokens charged against ``max_tokens``.
        max_wait_ms: longest the oldest queued item waits for its batch to fill
            (milliseconds). 0 = dispatch at the next event-loop turn (items submitted in
            the same turn still merge).
        max_inflight: most dispatches running at once (None = unbounded). Sequential mode
            uses 1 so items run strictly one after another.
        split_on_error: if ``fn`` raises for a batch that holds items of several callers,
            re-dispatch each caller's items on their own, so one caller's bad item cannot fail
            its batch neighbours (the services use this for session isolation). When False
            (default) the exception reaches every caller in the batch.
        name: label for logs and stats.

    Raises:
        ValueError: ``max_batch < 1``, ``max_tokens < 1`` or ``max_wait_ms < 0``.
    """

    def __init__(
        self,
        fn: Callable[[list[T]], Awaitable[Sequence[R]]],
        *,
        max_batch: int,
        max_tokens: Optional[int] = None,
        cost: Callable[[T], int] = lambda item: 1,
        max_wait_ms: float = 0.0,
        max_inflight: Optional[int] = None,
        split_on_error: bool = False,
        name: str = "batcher",
    ):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 or None, got {max_tokens}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        if max_inflight is not None and max_inflight < 1:
            raise ValueError(f"max_inflight must be >= 1 or None, got {max_inflight}")
        self.fn = fn
        self.max_batch = max_batch
        self.max_tokens = max_tokens
        self.cost = cost
        self.max_wait_s = max_wait_ms / 1000.0
        self.max_inflight = max_inflight
        self.split_on_error = split_on_error
        self.name = name
        self.stats = BatcherStats()
        self._pending: list[_Slot] = []
        self._timer: Optional[asyncio.TimerHandle] = None
        self._sem: Optional[asyncio.Semaphore] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._tasks: set[asyncio.Task] = set()
        self._callers = 0

    # -- public -------------------------------------------------------------------

    async def submit(self, items: Sequence[T]) -> list[R]:
        """Queue ``items`` and return their results, in the order given.

        Raises the first exception among this call's items (a batch failure, or a
        per-item ``Exception`` returned by ``fn``) once all of them are settled.
        """
        items = list(items)
        if not items:
            return []
        loop = self._bind_loop()
        self._callers += 1
        caller = self._callers
        now = time.perf_counter()
        slots = [_Slot(it, int(self.cost(it)), loop.create_future(), caller, now) for it in items]
        self._pending.extend(slots)
        self._cut_full_batches()
        self._arm_timer()
        futures = [s.future for s in slots]
        try:
            await asyncio.wait(futures)
        except asyncio.CancelledError:
            for f in futures:  # not yet dispatched items are dropped, in-flight results ignored
                f.cancel()
            raise
        # Read every future (so none logs "exception never retrieved"), then raise the first.
        first: Optional[BaseException] = None
        out: list[R] = []
        for f in futures:
            exc = f.exception()
            if exc is not None:
                first = first or exc
                out.append(None)  # type: ignore[arg-type]
            else:
                out.append(f.result())
        if first is not None:
            raise first
        return out

    async def drain(self) -> None:
        """Dispatch everything queued now and wait for all dispatches to finish."""
        if self._pending:
            self._flush_all("wait")
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- batching -----------------------------------------------------------------

    def _bind_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # A batcher may be reused by a later asyncio.run(): loop-bound state starts fresh.
            self._loop = loop
            self._sem = asyncio.Semaphore(self.max_inflight) if self.max_inflight else None
            self._timer = None
            self._pending = [s for s in self._pending if not s.future.done()]
        return loop

    def _take(self) -> tuple[list[_Slot], Optional[str]]:
        """Cut one batch from the head of the queue; reason is None when it is not full yet."""
        batch: list[_Slot] = []
        tokens = 0
        for s in self._pending:
            if len(batch) >= self.max_batch:
                return batch, "size"
            if self.max_tokens is not None and batch and tokens + s.cost > self.max_tokens:
                return batch, "tokens"
            batch.append(s)
            tokens += s.cost
        if len(batch) >= self.max_batch:
            return batch, "size"
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return batch, "tokens"
        return batch, None

    def _cut_full_batches(self) -> None:
        while self._pending:
            batch, reason = self._take()
            if reason is None:
                return
            del self._pending[: len(batch)]
            self._launch(batch, reason)

    def _flush_all(self, reason: str) -> None:
        while self._pending:
            batch, full = self._take()
            del self._pending[: len(batch)]
            self._launch(batch, full or reason)

    def _arm_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        assert self._loop is not None
        oldest = min(s.t_enqueue for s in self._pending)
        delay = max(0.0, oldest + self.max_wait_s - time.perf_counter())
        if self.max_wait_s == 0:
            self._timer = self._loop.call_soon(self._on_timer)  # type: ignore[assignment]
        else:
            self._timer = self._loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._flush_all("wait")

    def _launch(self, batch: list[_Slot], reason: str) -> None:
        batch = [s for s in batch if not s.future.done()]  # callers cancelled meanwhile
        if not batch:
            return
        assert self._loop is not None
        task = self._loop.create_task(self._dispatch(batch, reason))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _dispatch(self, batch: list[_Slot], reason: str) -> None:
        if self._sem is not None:
            async with self._sem:
                await self._run(batch, reason, count=True)
        else:
            await self._run(batch, reason, count=True)

    async def _run(self, batch: list[_Slot], reason: str, count: bool) -> None:
        if count:
            st = self.stats
            st.dispatches += 1
            st.items += len(batch)
            st.largest_batch = max(st.largest_batch, len(batch))
            st.by_reason[reason] = st.by_reason.get(reason, 0) + 1
        try:
            results = list(await self.fn([s.item for s in batch]))
            if len(results) != len(batch):
                raise RuntimeError(
                    f"{self.name}: service returned {len(results)} results for {len(batch)} items"
                )
        except asyncio.CancelledError:
            for s in batch:
                if not s.future.done():
                    s.future.cancel()
            raise
        except (KeyboardInterrupt, SystemExit) as exc:
            for s in batch:
                if not s.future.done():
                    s.future.set_exception(exc)
            raise
        except Exception as exc:  # noqa: BLE001 - delivered to the callers, not swallowed
            callers = sorted({s.caller for s in batch})
            if self.split_on_error and len(callers) > 1:
                logger.warning(
                    "%s: batch of %d items from %d callers failed (%s: %s); retrying per caller",
                    self.name, len(batch), len(callers), type(exc).__name__, exc,
                )
                self.stats.split_retries += 1
                groups = [[s for s in batch if s.caller == c] for c in callers]
                await asyncio.gather(*(self._run(g, reason, count=False) for g in groups))
                return
            for s in batch:
                if not s.future.done():
                    s.future.set_exception(exc)
            return
        for s, r in zip(batch, results):
            if s.future.done():
                continue
            if isinstance(r, BaseException):
                s.future.set_exception(r)
            else:
                s.future.set_result(r)
