"""Client metrics from per-request timings, defined exactly as sglang.bench_serving defines them.

sglang computes its summaries with numpy: `np.std` is the population standard deviation and
`np.percentile` interpolates linearly between the closest ranks. The same definitions are
written here in plain Python so our numbers and the seed's stay comparable without numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from dspark_tui.model import ClientMetrics


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """numpy's default ('linear') percentile of already sorted values; q in [0, 100]."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of no values")
    if n == 1:
        return float(sorted_values[0])
    rank = (n - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, n - 1)
    fraction = rank - low
    low_value = sorted_values[low]
    return float(low_value + (sorted_values[high] - low_value) * fraction)


@dataclass(frozen=True)
class Summary:
    mean: float
    median: float
    std: float
    p90: float
    p95: float
    p99: float


def summarize(values: Sequence[float]) -> Summary | None:
    """mean/median/std(population)/p90/p95/p99, or None for no values (shown as missing)."""
    if not values:
        return None
    ordered = sorted(values)
    n = len(ordered)
    mean = math.fsum(ordered) / n
    variance = math.fsum((v - mean) ** 2 for v in ordered) / n
    return Summary(
        mean=mean,
        median=percentile(ordered, 50),
        std=math.sqrt(variance),
        p90=percentile(ordered, 90),
        p95=percentile(ordered, 95),
        p99=percentile(ordered, 99),
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
    for stat in ("mean", "median", "std", "p90", "p95", "p99"):
        metrics[f"{stat}_{name}_ms"] = getattr(summary, stat) * 1000.0


def client_metrics(records: Sequence[RequestRecord], duration_s: float) -> ClientMetrics:
    """Aggregate as sglang's calculate_metrics does: successful requests only, per-chunk ITL."""
    ok = [r for r in records if r.ok]
    total_input = sum(r.input_tokens for r in ok)
    total_output = sum(r.output_tokens for r in ok)
    duration = duration_s if duration_s > 0 else float("nan")
    e2es = [r.e2e for r in ok]
    values: dict[str, float | int | None] = {
        "duration": duration_s,
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": len(ok) / duration,
        "input_throughput": total_input / duration,
        "output_throughput": total_output / duration,
        "total_throughput": (total_input + total_output) / duration,
        "concurrency": math.fsum(e2es) / duration if e2es else None,
    }
    _fill(values, "e2e_latency", e2es)
    _fill(values, "ttft", [r.ttft for r in ok])
    _fill(values, "tpot", [t for r in ok if (t := r.tpot) is not None])
    _fill(values, "itl", [gap for r in ok for gap in r.itl])
    return ClientMetrics.model_validate(values)
