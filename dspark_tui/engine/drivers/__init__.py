"""Benchmark drivers: one cell in, one CellResult out (contract in base.py).

`native` is our own aiohttp client; `sglang` and `vllm` run those projects' CLIs and import their
result files. `make_driver` picks one from the plan's `[bench] driver`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dspark_tui.engine.drivers.base import BenchDriver, CellError, DriverContext, ProgressCallback
from dspark_tui.model import BenchConfig

if TYPE_CHECKING:
    from dspark_tui.engine.drivers.native import NativeDriver, warmup
    from dspark_tui.engine.drivers.sglang import SglangDriver
    from dspark_tui.engine.drivers.vllm import VllmDriver

# The drivers are loaded when first asked for (PEP 562): the native client's aiohttp is ~0.5 s
# of CPU, which a process that only reads the contract in base.py (a command that stops at a
# pre-run check) need not pay.
_HOME_OF = {"NativeDriver": "native", "warmup": "native", "SglangDriver": "sglang",
            "VllmDriver": "vllm"}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once
    return value


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
    "NativeDriver",
    "ProgressCallback",
    "SglangDriver",
    "VllmDriver",
    "make_driver",
    "warmup",
]
