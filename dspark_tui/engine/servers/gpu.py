"""GPU readings for the series and the cell summary, and the per-device view preflight uses to
tell busy GPUs from idle ones: NVML when nvidia-ml-py is importable, else `nvidia-smi`, else
nothing (a laptop with the simulator has no GPU, and that is fine)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Protocol

_SMI_QUERY = "utilization.gpu,memory.used,power.draw"
_SMI_DEVICES = "index,uuid,name,memory.used,utilization.gpu"


@dataclass(frozen=True)
class GpuSample:
    """Summed over all visible GPUs, except utilization, which is their mean."""

    util_percent: float | None
    memory_used_mib: float | None
    power_w: float | None


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as preflight sees it: who computes on it and how much memory is taken."""

    index: int
    uuid: str
    name: str
    memory_used_mib: float | None
    util_percent: float | None
    pids: frozenset[int]


class GpuProbe(Protocol):
    source: str

    def sample(self) -> GpuSample | None: ...

    def compute_pids(self) -> set[int] | None: ...

    def devices(self) -> list[GpuDevice] | None: ...


class NvmlProbe:
    source = "nvml"

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml
        nvml.nvmlInit()
        self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]

    def sample(self) -> GpuSample | None:
        nvml = self._nvml
        utils: list[float] = []
        memory = 0.0
        power = 0.0
        try:
            for handle in self._handles:
                utils.append(float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu))
                memory += nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20
                with contextlib.suppress(Exception):
                    power += nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
        except Exception:
            return None
        if not utils:
            return None
        return GpuSample(sum(utils) / len(utils), memory, power or None)

    def compute_pids(self) -> set[int] | None:
        pids: set[int] = set()
        try:
            for handle in self._handles:
                for info in self._nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    pids.add(int(info.pid))
        except Exception:
            return None
        return pids

    def devices(self) -> list[GpuDevice] | None:
        nvml = self._nvml
        found: list[GpuDevice] = []
        try:
            for index, handle in enumerate(self._handles):
                pids = frozenset(int(p.pid) for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle))
                util: float | None = None
                with contextlib.suppress(Exception):  # some boards do not report utilization
                    util = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                found.append(GpuDevice(
                    index=index, uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
                    name=_text(nvml.nvmlDeviceGetName(handle)),
                    memory_used_mib=nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20,
                    util_percent=util, pids=pids))
        except Exception:
            return None
        return found


class SmiProbe:
    source = "nvidia-smi"

    def __init__(self, executable: str) -> None:
        self._exe = executable

    def _query(self, args: list[str]) -> list[list[str]] | None:
        try:
            out = subprocess.run(
                [self._exe, *args, "--format=csv,noheader,nounits"],
                capture_output=True, text=True, timeout=3, stdin=subprocess.DEVNULL, check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if out.returncode != 0:
            return None
        return [[c.strip() for c in line.split(",")] for line in out.stdout.splitlines() if line.strip()]

    def sample(self) -> GpuSample | None:
        rows = self._query([f"--query-gpu={_SMI_QUERY}"])
        if not rows:
            return None
        utils = [v for v in (_number(r[0]) for r in rows if r) if v is not None]
        memory = [v for v in (_number(r[1]) for r in rows if len(r) > 1) if v is not None]
        power = [v for v in (_number(r[2]) for r in rows if len(r) > 2) if v is not None]
        return GpuSample(
            sum(utils) / len(utils) if utils else None,
            sum(memory) if memory else None,
            sum(power) if power else None,
        )

    def compute_pids(self) -> set[int] | None:
        rows = self._query(["--query-compute-apps=pid"])
        if rows is None:
            return None
        return {int(v) for r in rows if r and (v := _number(r[0])) is not None}

    def devices(self) -> list[GpuDevice] | None:
        rows = self._query([f"--query-gpu={_SMI_DEVICES}"])
        apps = self._query(["--query-compute-apps=gpu_uuid,pid"])
        if not rows or apps is None:
            return None
        pids: dict[str, set[int]] = {}
        for app in apps:
            if len(app) > 1 and (pid := _number(app[1])) is not None:
                pids.setdefault(app[0], set()).add(int(pid))
        found: list[GpuDevice] = []
        for row in rows:
            index = _number(row[0]) if row else None
            if index is None or len(row) < 5:
                return None  # not the table asked for: no view rather than a wrong one
            found.append(GpuDevice(index=int(index), uuid=row[1], name=row[2],
                                   memory_used_mib=_number(row[3]), util_percent=_number(row[4]),
                                   pids=frozenset(pids.get(row[1], ()))))
        return found


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _text(value: str | bytes) -> str:
    """Older nvidia-ml-py returns bytes for names and UUIDs."""
    return value.decode() if isinstance(value, bytes) else value


def detect_gpu() -> GpuProbe | None:
    try:
        import pynvml  # nvidia-ml-py

        return NvmlProbe(pynvml)
    except Exception:
        pass
    exe = shutil.which("nvidia-smi")
    if exe is not None:
        probe = SmiProbe(exe)
        if probe.sample() is not None:
            return probe
    return None
