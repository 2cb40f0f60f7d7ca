"""`[server] cpus`: the CPUs a started server's whole process tree may use, and the rest for the
benchmark client (docs/vllm-cpu.md, "Pinning").

On a box with few cores the server's processes (vLLM's API server, EngineCore, workers) and the
tool's own client share CPUs, and a starved client reads late (docs/client.md). The plan names
CPU ids for the server; the runner gives the server's process tree exactly those and keeps
itself — the native client, and the peer drivers' processes it starts — on the CPUs this process
may use minus those. Here only the arithmetic and its one-line refusals (plain data: the engine
asks the operating system, engine/servers/cpus.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

KEY = "server.cpus"


def cpu_list(cpus: Iterable[int]) -> str:
    """`0-3,6`: the form of Linux's Cpus_allowed_list and taskset -c."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    parts = [str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs]
    return ",".join(parts)


@dataclass(frozen=True)
class CpuSplit:
    """Where the server's tree runs and where the client runs, both within `allowed`."""

    server: frozenset[int]
    client: frozenset[int]
    allowed: frozenset[int]

    def said(self) -> str:
        return f"server on CPU {cpu_list(self.server)}, client on CPU {cpu_list(self.client)}"


def split_cpus(cpus: Iterable[int], allowed: Iterable[int]) -> CpuSplit:
    """The server's CPUs and the client's (the allowed ones minus the server's); ValueError in
    one line (without the key: the caller names it and the file) for a CPU this process may not
    use or a set that leaves the client none."""
    wanted, free = frozenset(cpus), frozenset(allowed)
    outside = sorted(wanted - free)
    if outside:
        return _refuse(f"CPU {cpu_list(outside)} is not among the CPUs this process may use here "
                       f"({cpu_list(free)}); name CPUs from that set")
    client = free - wanted
    if not client:
        return _refuse(f"leaves the benchmark client no CPU (this process may use "
                       f"{cpu_list(free)}); leave at least one of them to the client, or remove "
                       "the key on a box with one CPU")
    return CpuSplit(server=wanted, client=client, allowed=free)


def _refuse(message: str) -> CpuSplit:
    raise ValueError(message)


# vLLM's CPU build binds its worker's OMP threads from this variable ("1", "0-3", "0-3|4-7" a
# rank each, or "auto" / "nobind"); a process may widen its own affinity, so ids outside
# server.cpus move the worker out of them.
OMP_BIND_VAR = "VLLM_CPU_OMP_THREADS_BIND"
OMP_BIND_WORDS = ("auto", "nobind")  # values that name no CPU id
_IDS = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def omp_bind_cpus(value: str) -> set[int] | None:
    """The CPU ids VLLM_CPU_OMP_THREADS_BIND names; None for a value without ids (auto, nobind)
    or one this does not read."""
    ids: set[int] = set()
    for rank in value.strip().split("|"):
        if not _IDS.match(rank.strip()):
            return None
        for part in rank.strip().split(","):
            low, _, high = part.partition("-")
            ids.update(range(int(low), int(high or low) + 1))
    return ids
