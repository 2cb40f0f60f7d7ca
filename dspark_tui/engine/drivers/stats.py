"""Client metrics from per-request timings, defined exactly as sglang.bench_serving defines them.

The summaries (mean, median, population std, linear percentiles) come from
`dspark_tui.stats.descriptive`, numpy's definitions, as sglang computes them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from dspark_tui.model import ClientMetrics
from dspark_tui.stats.descriptive import summarize


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

    def as_json(self) -> dict[str, object]:
        """The line saved in raw/: enough to recompute every metric later."""
        line: dict[str, object] = {
            "i": self.index,
            "input_tokens": self.input_tokens,
            "requested_output_tokens": self.requested_output_tokens,
            "output_tokens": self.output_tokens,
            "start_s": round(self.start, 6),
            "ttft_s": round(self.ttft, 6),
            "e2e_s": round(self.e2e, 6),
            "usage_reported": self.usage_reported,
            "itl_s": [round(gap, 6) for gap in self.itl],
        }
        if self.error:
            line["error"] = self.error
        return line


def _fill(metrics: dict[str, float | int | None], name: str, values: Sequence[float]) -> None:
    summary = summarize(values)
    if summary is None:
        return
    for stat, value in summary.scaled(1000.0).items():
        metrics[f"{stat}_{name}_ms"] = value


def client_metrics(records: Sequence[RequestRecord], duration_s: float) -> ClientMetrics:
    """Aggregate as sglang's calculate_metrics does: successful requests only, per-chunk ITL."""
    ok = [r for r in records if r.ok]
    total_input = sum(r.input_tokens for r in ok)
    total_output = sum(r.output_tokens for r in ok)
    e2es = [r.e2e for r in ok]

    def rate(amount: float) -> float | None:
        return amount / duration_s if duration_s > 0 else None  # no time: no rate, never NaN

    values: dict[str, float | int | None] = {
        "duration": duration_s,
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": rate(len(ok)),
        "input_throughput": rate(total_input),
        "output_throughput": rate(total_output),
        "total_throughput": rate(total_input + total_output),
        "concurrency": rate(math.fsum(e2es)) if e2es else None,
    }
    _fill(values, "e2e_latency", e2es)
    _fill(values, "ttft", [r.ttft for r in ok])
    _fill(values, "tpot", [t for r in ok if (t := r.tpot) is not None])
    _fill(values, "itl", [gap for r in ok for gap in r.itl])
    return ClientMetrics.model_validate(values)
