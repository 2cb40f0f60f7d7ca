"""What the suite knows about the processes its tests start.

Two facts per test: which marked processes outlive it (the leak guard), and how many Python
processes it started (an audit hook: `subprocess.Popen`, asyncio's subprocesses, spawns and
forks all raise an audit event), which is what makes a test slow.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from typing import Any

import psutil

from dspark_tui.engine.servers.procs import live_processes

# Every process started under this pytest process inherits this marker, even after it is
# reparented (daemonized workers, orphans of a killed parent), so leaks cannot hide. Each
# xdist worker imports this module itself and so marks its own children with its own token.
SESSION_MARK = "DSPARK_TEST_SESSION"
os.environ[SESSION_MARK] = uuid.uuid4().hex
# A process older than the marker cannot carry it, so the guard reads the environment only of
# newer ones (reading every process's environment twice per test cost ~6 ms a test on a busy
# machine). The cutoff is this process's own start time as psutil reads it, not time.time():
# psutil's start times rest on the kernel's boot time, which in a container can disagree with
# the wall clock by more than any margin. Every process a test starts is younger than the
# pytest process that starts it. The processes are read afresh at each look (live_processes):
# psutil.process_iter() kept the start time of a pid's earlier owner once the kernel reused the
# pid, so after a few thousand processes (pid_max 32768) the guard missed new ones, its own
# test's child included ('assert 20118 in {}'; tests/engine/test_pid_reuse.py).


def _marked_since() -> float:
    return psutil.Process().create_time() - 1.0  # a new Process: its start time read now

_python_starts = 0


def _program(event: str, args: tuple[Any, ...]) -> str | None:
    if event == "subprocess.Popen":  # (executable, args, cwd, env)
        executable, argv = args[0], args[1]
        if executable is None:
            executable = argv if isinstance(argv, str | bytes) else argv[0]
        return os.fsdecode(executable)
    if event in ("os.posix_spawn", "os.exec"):  # (path, argv, env)
        return os.fsdecode(args[0])
    return None


def _runs_python(program: str) -> bool:
    """A Python interpreter, or a script run by one (the fake CLIs); not sh, not tmux."""
    path = shutil.which(program) or program
    if "python" in os.path.basename(path):
        return True
    try:
        with open(path, "rb") as handle:
            first_line = handle.readline(200)
    except OSError:
        return False
    return first_line.startswith(b"#!") and b"python" in first_line


def _count_python_starts(event: str, args: tuple[Any, ...]) -> None:
    global _python_starts
    if event in ("os.fork", "os.forkpty"):
        _python_starts += 1
        return
    program = _program(event, args)
    if program is not None and _runs_python(program):
        _python_starts += 1


sys.addaudithook(_count_python_starts)


def python_processes_started() -> int:
    """How many Python processes this pytest process has started so far (~1 s of imports each)."""
    return _python_starts


def marked_processes() -> dict[int, psutil.Process]:
    token = os.environ[SESSION_MARK]
    me = os.getpid()
    found: dict[int, psutil.Process] = {}
    since = _marked_since()
    for proc in live_processes():
        if proc.pid == me:
            continue
        try:
            if proc.create_time() < since:
                continue
            if proc.environ().get(SESSION_MARK) == token and alive(proc):
                found[proc.pid] = proc
        except psutil.Error:
            continue
    return found


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def describe(proc: psutil.Process) -> str:
    try:
        return f"{proc.pid} {' '.join(proc.cmdline())[:120]}"
    except psutil.Error:
        return str(proc.pid)
