"""The runner's background loops: heartbeat, control requests from other processes, and the
watch on the process that started it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from dspark_tui.engine.rundir.control import ControlReader
from dspark_tui.engine.rundir.liveness import HEARTBEAT_EVERY_S, pid_alive, touch_heartbeat


async def heartbeat_loop(run_dir: Path) -> None:
    while True:
        await asyncio.to_thread(touch_heartbeat, run_dir)
        await asyncio.sleep(HEARTBEAT_EVERY_S)


async def control_loop(reader: ControlReader, handlers: Mapping[str, Callable[[], None]]) -> None:
    while True:
        await asyncio.sleep(0.5)
        for action in reader.poll():
            handlers[action]()


async def parent_watch_loop(parent_pid: int, on_gone: Callable[[str], None]) -> None:
    while True:
        await asyncio.sleep(1.0)
        if os.getppid() != parent_pid or not pid_alive(parent_pid):
            on_gone("the process that started this runner is gone")
            return
