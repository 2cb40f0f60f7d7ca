"""Watching a serving server while the tool waits on it — a measurement (measure.py), the warmup
and the greedy check (session.py): the server died, its /health failed several times in a row,
or it stalled (token counters frozen with requests in flight, while /health may still say 200:
`server.stall_timeout_s`). Each says why in words, so no wait on a stalled server lasts the
bench's `cell_timeout_s` or ends in a message without a reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from typing import Protocol, TypeVar

from dspark_tui.engine.servers.scraper import MetricsScraper
from dspark_tui.engine.servers.server import ServerError

HEALTH_EVERY_S = 2.0
HEALTH_FAILURES_FATAL = 3

_T = TypeVar("_T")


class Watched(Protocol):
    """What the watch asks of a server: ServerProcess and ExternalServer alike."""

    def death_reason(self) -> str | None: ...

    async def probe_health(self, timeout: float = 3.0) -> bool: ...

    def tail(self) -> list[str]: ...


async def watch_server(server: Watched, scraper: MetricsScraper, stall_s: float) -> str:
    """Returns why the server can no longer serve; runs until cancelled otherwise."""
    failures = 0
    last_health = time.monotonic()
    while True:
        await asyncio.sleep(0.25)
        death = server.death_reason()
        if death is not None:
            return death
        if time.monotonic() - last_health >= HEALTH_EVERY_S:
            last_health = time.monotonic()
            ok = await server.probe_health(timeout=3.0)
            failures = 0 if ok else failures + 1
            if failures >= HEALTH_FAILURES_FATAL:
                return server.death_reason() or f"server /health failed {failures} times in a row"
        idle = scraper.seconds_without_progress()
        if idle is not None and idle > stall_s:
            return (f"server stalled: no token counted for {idle:.0f}s with requests in "
                    f"flight (server.stall_timeout_s = {stall_s:g})")


async def watched(work: Awaitable[_T], server: Watched, scraper: MetricsScraper | None,
                  stall_s: float, during: str) -> _T:
    """`work`'s result, unless the server dies, stops answering or stalls first: then the work
    is cancelled and ServerError says why, "… during {during}"."""
    if scraper is None:
        return await work
    task = asyncio.ensure_future(work)
    watch = asyncio.create_task(watch_server(server, scraper, stall_s))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, watch):
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(BaseException):
                    await pending
    if task.done() and not task.cancelled():
        return task.result()
    if watch.done() and not watch.cancelled() and watch.exception() is None:
        raise ServerError(f"{watch.result()} during {during}", server.tail())
    return await task  # cancelled from outside: says so
