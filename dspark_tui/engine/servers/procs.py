"""Finding and ending process trees: a server's workers may leave its process group or be
reparented when their parent dies, so a tree is tracked three ways — process group, remembered
pids (checked against their start time, so a reused pid is never killed) and an environment
token every descendant inherits."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import psutil

TOKEN_VAR = "DSPARK_SERVER_TOKEN"


@dataclass(frozen=True)
class ProcRef:
    """A pid plus its start time: enough to tell the same process from a later one with its pid."""

    pid: int
    create_time: float

    @classmethod
    def of(cls, pid: int) -> ProcRef | None:
        try:
            return cls(pid, psutil.Process(pid).create_time())
        except psutil.Error:
            return None

    def process(self) -> psutil.Process | None:
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > 0.05:
                return None
            return proc if _alive(proc) else None
        except psutil.Error:
            return None


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def descendants(pid: int) -> list[ProcRef]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    refs: list[ProcRef] = []
    for child in children:
        with contextlib.suppress(psutil.Error):
            refs.append(ProcRef(child.pid, child.create_time()))
    return refs


def live_processes() -> Iterator[psutil.Process]:
    """Every process there is now, each read afresh. Not `psutil.process_iter()`: it keeps one
    Process per pid between calls, and a pid the kernel has since given to a new process keeps
    the old one's start time there, so psutil refuses to signal it (it checks that start time
    first) and a start-time cutoff skips it. With pid_max 32768 a box reuses pids within hours
    of runs (the suite's leak guard found no child at all after a few thousand processes)."""
    for pid in psutil.pids():
        try:
            yield psutil.Process(pid)
        except psutil.Error:
            continue


def processes_with_token(token: str) -> list[psutil.Process]:
    """Every live process of this user whose environment carries the server token."""
    found: list[psutil.Process] = []
    me = os.getpid()
    uid = os.getuid()
    for proc in live_processes():
        if proc.pid == me:
            continue
        try:
            if proc.uids().real != uid:
                continue
            if proc.environ().get(TOKEN_VAR) == token and _alive(proc):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Signal a process group; False if it no longer exists."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def live_in_group(pgid: int) -> bool:
    """A process of the group still runs. Not `group_alive`: a zombie answers killpg(pgid, 0)
    until its parent reaps it, and vLLM's EngineCore, orphaned when its API server exits, was
    one for the whole stop_timeout_s: every stop of real vLLM waited it out (15 s) and then
    reported nothing killed (docs/vllm-cpu.md)."""
    if not group_alive(pgid):
        return False
    for proc in live_processes():
        try:
            if os.getpgid(proc.pid) == pgid and _alive(proc):
                return True
        except (OSError, psutil.Error):
            continue
    return False


def kill_all(procs: Iterable[psutil.Process], sig: signal.Signals = signal.SIGKILL) -> int:
    count = 0
    for proc in procs:
        try:
            proc.send_signal(sig)
            count += 1
        except psutil.Error:
            continue
    return count


def wait_gone(procs: Iterable[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Wait for processes to exit (reaping our own children); the ones still alive."""
    procs = list(procs)
    if not procs:
        return []
    _, alive = psutil.wait_procs(procs, timeout=max(timeout, 0.0))
    return [p for p in alive if _alive(p)]


def terminate_tree(
    *,
    pgid: int | None,
    refs: Iterable[ProcRef],
    token: str | None,
    grace_s: float,
) -> list[int]:
    """TERM the group, wait, KILL the group, then KILL any tracked process still alive.

    Blocking (call it in a thread). Returns the pids that had to be killed with SIGKILL.
    """
    tracked = _tracked(pgid, refs, token)
    if pgid is not None:
        signal_group(pgid, signal.SIGTERM)
    kill_all(tracked, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        tracked = [p for p in tracked if _alive(p)]
        if not tracked and (pgid is None or not live_in_group(pgid)):
            return []
        step = min(0.2, max(0.0, deadline - time.monotonic()))
        if tracked:
            wait_gone(tracked, step)
        else:
            time.sleep(step)
    leftovers = {p.pid: p for p in _tracked(pgid, refs, token) if _alive(p)}
    leftovers.update({p.pid: p for p in tracked if _alive(p)})
    if pgid is not None and group_alive(pgid):
        signal_group(pgid, signal.SIGKILL)
    kill_all(leftovers.values())
    wait_gone(leftovers.values(), 3.0)
    return sorted(leftovers)


def _tracked(pgid: int | None, refs: Iterable[ProcRef], token: str | None) -> list[psutil.Process]:
    procs: dict[int, psutil.Process] = {}
    for ref in refs:
        proc = ref.process()
        if proc is not None:
            procs[proc.pid] = proc
    if token:
        for proc in processes_with_token(token):
            procs.setdefault(proc.pid, proc)
    if pgid is not None:
        for proc in live_processes():
            try:
                if os.getpgid(proc.pid) == pgid and _alive(proc):
                    procs.setdefault(proc.pid, proc)
            except (OSError, psutil.Error):
                continue
    return list(procs.values())
