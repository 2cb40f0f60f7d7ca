"""What the user asked of a running run, as one small state: running, paused or stopping, and
whether the measurements in flight should be cut short (skip, abort).

With rounds in parallel (`bench.parallel`) several measurements are in flight at once, one a
node; a skip cuts short every one in flight when it was asked, none started after it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Literal

Mode = Literal["running", "paused", "stopping"]


class Steering:
    def __init__(self) -> None:
        self.mode: Mode = "running"
        self.stop_reason: str | None = None
        self.storage_failed = False  # stopping because the disk refused a save
        self.in_flight = 0  # measurements under way
        self._skips = 0  # skip requests so far; a measurement is skipped by those after its start
        self._wake = asyncio.Event()

    @property
    def stopping(self) -> bool:
        return self.mode == "stopping"

    def pause(self) -> None:
        if self.mode == "running":
            self._set("paused")

    def resume(self) -> None:
        if self.mode == "paused":
            self._set("running")

    def stop(self, reason: str, *, storage: bool = False) -> None:
        """The first reason stays: it is the one the run ends with."""
        if self.stop_reason is None:
            self.stop_reason = reason
            self.storage_failed = storage
        self._set("stopping")

    def request_skip(self) -> int:
        """How many measurements in flight the skip cuts short (0: nothing to skip)."""
        if not self.in_flight:
            return 0
        self._skips += 1
        self._set(self.mode)
        return self.in_flight

    def begin_measurement(self) -> int:
        """A measurement starts; the mark to hand to until_interrupted."""
        self.in_flight += 1
        return self._skips

    def end_measurement(self) -> None:
        self.in_flight -= 1

    async def until_interrupted(self, mark: int) -> None:
        """Returns when the measurement begun at `mark` should stop (a later skip, or stop)."""
        await self._until(lambda: self._skips > mark or self.stopping)

    async def until_stopping(self) -> None:
        await self._until(lambda: self.stopping)

    async def until_not_paused(self) -> None:
        await self._until(lambda: self.mode != "paused")

    def _set(self, mode: Mode) -> None:
        self.mode = mode
        self._wake.set()
        self._wake = asyncio.Event()

    async def _until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self._wake.wait()
