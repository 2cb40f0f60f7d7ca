"""Fault switches: the ways real servers have failed a benchmark run, on demand."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable

from dspark_tui.sim.config import FaultConfig
from dspark_tui.sim.logs import log

# Spawned workers give up on their own after this long, so a forgotten one cannot live forever.
WORKER_MAX_LIFETIME_S = 900


class RequestFaults:
    """Counts finished requests and fires the crash or stall switch at its threshold."""

    def __init__(self, faults: FaultConfig, stall: Callable[[], None],
                 before_crash: Callable[[], None]) -> None:
        self.faults = faults
        self.stall = stall
        self.before_crash = before_crash
        self.completed = 0

    def request_done(self) -> None:
        self.completed += 1
        crash_at = self.faults.crash_after_requests
        if crash_at is not None and self.completed >= crash_at:
            code = self.faults.crash_exit_code
            log("ERROR", "core.py", f"EngineCore encountered a fatal error after {self.completed} "
                "requests (simulated crash).")
            log("ERROR", "async_llm.py", "AsyncLLM output_handler failed. EngineDeadError: "
                "EngineCore encountered an issue. See stack trace (above) for the root cause.")
            sys.stdout.flush()
            asyncio.get_running_loop().call_later(0.05, self._crash, code)
        stall_at = self.faults.stall_after_requests
        if stall_at is not None and self.completed >= stall_at:
            self.stall()

    def _crash(self, code: int) -> None:
        """Die at once, as a crashed engine does; its workers notice and go too."""
        self.before_crash()
        os._exit(code)


def spawn_workers(count: int) -> list[subprocess.Popen[bytes]]:
    """Start `count` worker children in our process group, as tensor-parallel workers are.

    They do not watch their parent, so a SIGKILL of the server leaves them running; only a
    signal to the whole process group (or their own timeout) ends them.
    """
    workers = []
    for rank in range(count):
        workers.append(subprocess.Popen(
            [sys.executable, "-m", "dspark_tui.sim", "worker", "--rank", str(rank)],
            stdin=subprocess.DEVNULL,
        ))
        log("INFO", "multiproc_executor.py", f"Worker_TP{rank} pid={workers[-1].pid} started")
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.terminate()
    deadline = time.monotonic() + 2
    for worker in workers:
        try:
            worker.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def run_worker(rank: int) -> int:
    """A stand-in TP worker: sleeps until terminated (or its lifetime ends)."""
    deadline = time.monotonic() + WORKER_MAX_LIFETIME_S
    while time.monotonic() < deadline:
        time.sleep(1.0)
    return 0


async def flood_log(bytes_per_second: int) -> None:
    """Write DEBUG lines at the given rate; blocks like real logging when nobody drains stdout."""
    line = ("DEBUG " + time.strftime("%m-%d %H:%M:%S")
            + " [scheduler.py:412] simulated log flood " + "x" * 80 + "\n")
    interval = 0.05
    per_tick = max(1, int(bytes_per_second * interval / len(line)))
    block = line * per_tick
    while True:
        sys.stdout.write(block)
        sys.stdout.flush()
        await asyncio.sleep(interval)
