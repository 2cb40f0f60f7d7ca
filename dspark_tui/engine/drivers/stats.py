"""The native client's per-request record, and the measurement the raw file keeps of them.

The metrics are defined once, in `results/native_raw.py` (`native_metrics`, as
sglang.bench_serving defines them, with numpy's summaries), so a raw file read back gives the
numbers the driver saved.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dspark_tui.results.native_raw import (
    NativeRaw,
    RequestTiming,
    from_measurement,
    to_microseconds,
)


@dataclass
class RequestRecord:
    """One request as the client saw it. Times in seconds from the request's own start."""

    index: int
    input_tokens: int
    requested_output_tokens: int
    start: float = 0.0  # seconds after the cell's start
    output_tokens: int = 0
    ttft: float = 0.0
    e2e: float = 0.0
    itl: list[float] = field(default_factory=list)
    usage_reported: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def tpot(self) -> float | None:
        if self.output_tokens > 1:
            return (self.e2e - self.ttft) / (self.output_tokens - 1)
        return None

    def timing(self) -> RequestTiming:
        """The saved form: times to the microsecond, the ITLs by count (they go in bulk)."""
        return RequestTiming(
            index=self.index, input_tokens=self.input_tokens,
            requested_output_tokens=self.requested_output_tokens, output_tokens=self.output_tokens,
            start_s=to_microseconds(self.start), ttft_s=to_microseconds(self.ttft),
            e2e_s=to_microseconds(self.e2e), usage_reported=self.usage_reported,
            itl_count=len(self.itl), error=self.error,
        )  # fmt: skip


def measured_raw(records: Sequence[RequestRecord], duration_s: float) -> NativeRaw:
    """The measurement as the raw file keeps it, its ITL summary taken from every gap."""
    count = sum(len(r.itl) for r in records)
    gaps = np.fromiter(itertools.chain.from_iterable(r.itl for r in records), dtype=float, count=count)
    itl_us = np.rint(gaps * 1_000_000).astype(np.int64)
    return from_measurement([r.timing() for r in records], duration_s, itl_us)

