"""`[server] cpus` on this machine: the server's process tree on the plan's CPUs, the runner and
its client on the rest (model/cpus.py has the arithmetic; docs/vllm-cpu.md, "Pinning").

Linux's affinity is per thread and inherited: a process (and each thread) starts with its
creator's mask, and exec keeps it. So
- the server: the thread that calls Popen takes the server's CPUs just for the spawn
  (`spawning_on`); the child inherits them, and so do everything it starts (vLLM's API server,
  EngineCore, workers). No wrapper in the command, no preexec_fn (unsafe with threads);
- the client: every thread of the runner process takes the client's CPUs (`ClientPinning`),
  and threads and processes started later (the peer drivers' clients) inherit them; the mask
  the process had is put back when the run ends.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from dspark_tui.model import Plan, UserError
from dspark_tui.model.cpus import KEY, CpuSplit, cpu_list, split_cpus

_TASKS = "/proc/self/task"

# The client's CPUs while a run pins (None: not pinned): what the native client records.
_client: frozenset[int] | None = None


def supported() -> bool:
    return hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


def allowed_cpus() -> frozenset[int]:
    """The CPUs this thread may use now (Linux: cgroups, taskset and the like narrow it)."""
    return frozenset(os.sched_getaffinity(0))


thread_cpus = allowed_cpus  # what a measurement records: where the calling thread may run


def plan_split(plan: Plan, source: str | None = None,
               allowed: frozenset[int] | None = None) -> CpuSplit | None:
    """The plan's split on this machine (None: the plan pins nothing); a UserError of one line
    naming the file (when known) and the key for a platform without affinity, a CPU not
    allowed here, or a set that leaves the client none."""
    cpus = plan.server.cpus
    if cpus is None or not plan.local_arms():
        return None
    where = f"{source}: " if source else ""
    said = f"{where}{KEY} = [{', '.join(map(str, cpus))}]"
    if not supported():
        raise UserError(f"{said}: pinning needs Linux's sched_setaffinity, which this platform "
                        f"({sys.platform}) lacks; remove the key")
    try:
        return split_cpus(cpus, allowed if allowed is not None else allowed_cpus())
    except ValueError as exc:
        raise UserError(f"{said}: {exc}") from None


def client_cpus() -> frozenset[int] | None:
    """The CPUs the run keeps its client on, while a run pins; None otherwise."""
    return _client


def _set_all_threads(cpus: frozenset[int]) -> None:
    try:
        tids = [int(name) for name in os.listdir(_TASKS)]
    except OSError:
        tids = [0]
    for tid in tids:
        with contextlib.suppress(ProcessLookupError):  # a thread that ended meanwhile
            os.sched_setaffinity(tid, cpus)


class ClientPinning:
    """The runner process on the client's CPUs for a run's duration; `restore` puts back the
    mask it had (each thread the one the main thread had: a thread pool's are alike)."""

    def __init__(self, split: CpuSplit) -> None:
        self.split = split
        self._before = allowed_cpus()

    def apply(self) -> None:
        global _client
        _set_all_threads(self.split.client)
        _client = self.split.client

    def restore(self) -> None:
        global _client
        _client = None
        _set_all_threads(self._before)


class PinError(OSError):
    """The server's CPUs could not be taken for its spawn; str() is one line."""


@contextlib.contextmanager
def spawning_on(cpus: list[int] | None) -> Iterator[None]:
    """The calling thread on `cpus` for the block (a process it spawns inherits them), then back
    on the mask it had. None: nothing changes."""
    if cpus is None:
        yield
        return
    before = allowed_cpus()
    try:
        os.sched_setaffinity(0, set(cpus))
    except OSError as exc:  # a CPU this process may not use (the run's preflight says so first)
        raise PinError(f"{KEY} = [{', '.join(map(str, cpus))}]: cannot pin the server there: "
                       f"{exc.strerror or exc} (this thread may use {cpu_list(before)})") from None
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def said(cpus: list[int] | None) -> str:
    """`CPU 1` for a state line; empty when not pinned."""
    return "" if cpus is None else f"CPU {cpu_list(cpus)}"
