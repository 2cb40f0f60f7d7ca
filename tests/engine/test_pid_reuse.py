"""A pid the kernel hands to a new process is that process's, for the server stop and for the
suite's leak guard alike (engine/servers/procs.live_processes).

psutil.process_iter() keeps one Process per pid between calls; after the kernel reused a pid it
still held the earlier owner's start time, so psutil refused to signal the new process and the
leak guard's start-time cutoff skipped it. The test makes the reuse happen on purpose: it kills
a process seen by an earlier look, then sets the kernel's last pid so that the next process
started gets the same one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import psutil
import pytest

from dspark_tui.engine.servers.procs import TOKEN_VAR, kill_all, processes_with_token
from tests import processes

LAST_PID = Path("/proc/sys/kernel/ns_last_pid")


def _start_on(pid: int, env: dict[str, str]) -> subprocess.Popen[bytes] | None:
    """`sleep` started on that pid, or None when the kernel's last pid cannot be set (another
    worker's process may take the pid in between: a few tries)."""
    for _ in range(20):
        try:
            LAST_PID.write_text(str(pid - 1))
        except OSError:
            return None
        proc = subprocess.Popen(["sleep", "30"], env=env)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


def test_a_process_on_a_reused_pid_is_found_by_its_token_marked_and_stopped():
    first = subprocess.Popen(["sleep", "30"])
    pid = first.pid
    list(psutil.process_iter())  # an earlier look, as a runner that has run for hours made
    processes_with_token("none")
    first.kill()
    first.wait()
    time.sleep(0.1)  # start times are counted in 10 ms ticks: the second must not share the first's
    token = uuid.uuid4().hex
    second = _start_on(pid, {**os.environ, TOKEN_VAR: token})
    if second is None:
        pytest.skip(f"the kernel's next pid cannot be set here ({LAST_PID})")
    try:
        assert pid in processes.marked_processes()
        found = processes_with_token(token)
        assert [proc.pid for proc in found] == [pid]
        assert kill_all(found) == 1
        assert second.wait(5) == -signal.SIGKILL
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()
