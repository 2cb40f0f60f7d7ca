"""Descriptive statistics of one sample, with numpy's definitions as sglang and vLLM use them.

sglang.bench_serving and `vllm bench serve` summarise latencies with `np.mean`, `np.median`,
`np.std` (population, ddof=0) and `np.percentile` (linear interpolation between closest ranks);
calling numpy here keeps our numbers comparable with theirs by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SUMMARY_STATS = ("mean", "median", "std", "p90", "p95", "p99")


def percentile(values: Sequence[float], q: float) -> float:
    """numpy's default ('linear') percentile; q in [0, 100]."""
    if len(values) == 0:
        raise ValueError("percentile of no values")
    return float(np.percentile(np.asarray(values, dtype=float), q))


@dataclass(frozen=True)
class Summary:
    mean: float
    median: float
    std: float
    p90: float
    p95: float
    p99: float

    def scaled(self, factor: float) -> dict[str, float]:
        """{stat: value * factor} for every statistic (seconds to milliseconds, say)."""
        return {stat: getattr(self, stat) * factor for stat in SUMMARY_STATS}


def summarize(values: Sequence[float] | np.ndarray) -> Summary | None:
    """mean/median/std(population)/p90/p95/p99, or None for no values (shown as missing)."""
    if len(values) == 0:
        return None
    array = np.asarray(values, dtype=float)
    median, p90, p95, p99 = np.percentile(array, [50, 90, 95, 99])
    return Summary(mean=float(array.mean()), median=float(median), std=float(array.std()),
                   p90=float(p90), p95=float(p95), p99=float(p99))
