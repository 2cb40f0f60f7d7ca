"""What the user asked of a running run, as one small state: running, paused or stopping, and
whether the measurement in flight should be cut short (skip, abort)."""

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
        self.measuring = False
        self.skip_requested = False
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

    def request_skip(self) -> bool:
        """False when no measurement is in flight: there is nothing to skip."""
        if not self.measuring:
            return False
        self.skip_requested = True
        self._set(self.mode)
        return True

    def begin_measurement(self) -> None:
        self.measuring = True
        self.skip_requested = False

    def end_measurement(self) -> None:
        self.measuring = False

    async def until_interrupted(self) -> None:
        """Returns when the measurement in flight should stop (skip or stop)."""
        await self._until(lambda: self.skip_requested or self.stopping)

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
