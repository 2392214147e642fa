"""Small asyncio helpers shared by the backends."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Iterable


async def gather_or_cancel(aws: Iterable[Awaitable[Any]]) -> list[Any]:
    """Run awaitables concurrently; results in input order.

    If one raises (or the caller is cancelled), the others are cancelled and awaited before
    the exception propagates, so no sibling keeps running on a failed batch.
    """
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
