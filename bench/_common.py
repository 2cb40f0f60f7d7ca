"""Small helpers the benchmarks share: timing, medians, a simulator subprocess, table printing."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def simulator(*args: str, spec_tokens: int = 3, speed: float = 1.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """The simulator on a free loopback port; the whole process group is stopped on exit."""
    port = free_port()
    with tempfile.NamedTemporaryFile(prefix="bench-sim-", suffix=".log") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dspark_tui.sim", "serve", "bench-model", "--host", "127.0.0.1",
             "--port", str(port), "--spec-tokens", str(spec_tokens), "--speed", str(speed), *args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(url, proc, log.name)
            yield url, proc
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _wait_ready(url: str, proc: subprocess.Popen, log_name: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"simulator exited {proc.returncode}; log: {log_name}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"simulator not ready in 60 s; log: {log_name}")
        time.sleep(0.1)


def print_table(headers: list[str], rows: list[list[object]]) -> None:
    cells = [[str(h) for h in headers]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(v.rjust(w) if n else v.ljust(w) for v, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)
