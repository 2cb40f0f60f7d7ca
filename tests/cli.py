"""The command line as a user runs it, for the tests that drive it as a subprocess.

One copy of what many test files carried their own of: the argv, a run of it with the
developer's own config pointed nowhere, a poll for a condition, a started one reaped, and the
plan snippet of cells slow enough to act on while one is in flight.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

CLI = [sys.executable, "-m", "dspark_tui"]
# Where no config lives, so that a developer's own settings never change what a test sees.
NO_CONFIG = "/nonexistent-dspark-config"


def cli_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """os.environ with the config dir pointed nowhere, then `env` over both."""
    return {**os.environ, "DSPARK_CONFIG_DIR": NO_CONFIG, **(env or {})}


def run_cli(*args: str, timeout: float = 90, env: Mapping[str, str] | None = None,
            cwd: Path | None = None, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """`dspark-tui ARGS` to its end, output captured, stdin closed; `prefix` goes before the
    interpreter (e.g. to run it as another user)."""
    return subprocess.run([*prefix, *CLI, *args], capture_output=True, text=True,
                          timeout=timeout, env=cli_env(env), cwd=cwd,
                          stdin=subprocess.DEVNULL, check=False)


@contextlib.contextmanager
def reaped(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """The process killed and waited for if it still runs when the block ends (an assertion
    failed, a wait timed out): no test leaves a runner behind."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or predicate}")


def slow_cells(concurrencies: Sequence[int] = (1, 2, 3, 4), output_len: int = 512) -> str:
    """A `[[scenarios]]` "slow" of cells of about a second each at --speed 2 (at 512 tokens),
    so that a test can act while one is in flight."""
    return f"""[[scenarios]]
name = "slow"
input_len = 64
output_len = {output_len}
range_ratio = 1.0
concurrencies = [{", ".join(map(str, concurrencies))}]
num_prompts = 2
"""
