"""Benchmark drivers: one cell in, one CellResult out (contract in base.py).

`native` is our own aiohttp client; `sglang` and `vllm` run those projects' CLIs and import their
result files. `make_driver` picks one from the plan's `[bench] driver`.
"""

from __future__ import annotations

from dspark_tui.engine.drivers.base import BenchDriver, CellError, DriverContext, ProgressCallback
from dspark_tui.engine.drivers.native import NativeDriver, warmup
from dspark_tui.engine.drivers.sglang import SglangDriver
from dspark_tui.engine.drivers.vllm import VllmDriver
from dspark_tui.model import BenchConfig


def make_driver(bench: BenchConfig) -> BenchDriver:
    """The driver the plan names; warmup always uses the native client (see native.warmup)."""
    if bench.driver == "sglang":
        return SglangDriver()
    if bench.driver == "vllm":
        return VllmDriver()
    return NativeDriver()


__all__ = [
    "BenchDriver",
    "CellError",
    "DriverContext",
    "NativeDriver",
    "ProgressCallback",
    "SglangDriver",
    "VllmDriver",
    "make_driver",
    "warmup",
]
