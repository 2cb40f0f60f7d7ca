"""Benchmark drivers: one cell in, one CellResult out (contract in base.py).

`native` is our own aiohttp client; `sglang` and `vllm` run those projects' CLIs and import their
result files. `make_driver` picks one from the plan's `[bench] driver`.
"""

from __future__ import annotations

from dspark_tui.engine.drivers.base import BenchDriver, CellError, DriverContext, ProgressCallback
from dspark_tui.model import BenchConfig

# The drivers themselves are imported from their modules (drivers.native, .sglang, .vllm), here
# only when one is made: the native client's aiohttp is ~0.5 s of CPU, which a process that only
# needs the contract in base.py (a command that stops at a pre-run check) need not pay.


def make_driver(bench: BenchConfig) -> BenchDriver:
    """The driver the plan names; warmup always uses the native client (see native.warmup)."""
    if bench.driver == "sglang":
        from dspark_tui.engine.drivers.sglang import SglangDriver

        return SglangDriver()
    if bench.driver == "vllm":
        from dspark_tui.engine.drivers.vllm import VllmDriver

        return VllmDriver()
    from dspark_tui.engine.drivers.native import NativeDriver

    return NativeDriver()


__all__ = [
    "BenchDriver",
    "CellError",
    "DriverContext",
    "ProgressCallback",
    "make_driver",
]
