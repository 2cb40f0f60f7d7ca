"""The one outlier rule: a cell whose log ratio sits far from the line through its two
neighbours (the same scenario, one tested concurrency either side, in log2 concurrency) tells a
different story than they do. The report lists such cells (analysis/frames.outlier_frame) and the
runner measures them again (analysis/verdicts.outlier_cells); both ask `outliers`.

Neighbours are the measured concurrencies either side, never farther ones: the worst offender
is taken first, and the points next to it are not judged, so one outlier does not make its
neighbours look like outliers too (nor is a point judged against c=1 and c=128 for c=4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# In ln units (about 16 %): run-to-run noise of a cell is a few percent, so a gap this far from
# its neighbours' line is worth another look rather than a story.
OUTLIER_LOG_DEVIATION = 0.15


@dataclass(frozen=True)
class Outlier:
    index: int  # into the caller's points
    deviation: float  # |log ratio - the neighbours' line|, ln units
    neighbours: tuple[int, int]  # the points either side it was judged against


# How many of the run's own standard errors a deviation must exceed as well (about 0.3 % two-sided
# under normal noise): on a noisy run the neighbours' line itself moves that much.
OUTLIER_NOISE_Z = 3.0


def outliers(concurrencies: Sequence[float], log_ratios: Sequence[float],
             noise: float | None = None) -> list[Outlier]:
    """The outliers of one scenario's points, in concurrency order (ascending, distinct),
    worst first. A point is judged only against its true neighbours, the measured
    concurrencies either side of it; once a point is found, the points next to it are not
    judged (their line runs through the outlier). `noise`, the run's standard error of one
    point's log ratio, raises the threshold to OUTLIER_NOISE_Z of the deviation's own standard
    error where that is larger than OUTLIER_LOG_DEVIATION."""
    x = np.log2(np.asarray(concurrencies, dtype=float))
    y = np.asarray(log_ratios, dtype=float)
    candidates: list[tuple[float, int, float]] = []
    for mid in range(1, len(x) - 1):
        lo, hi = mid - 1, mid + 1
        weight = (x[mid] - x[lo]) / (x[hi] - x[lo])
        expected = y[lo] + (y[hi] - y[lo]) * weight
        deviation = float(abs(y[mid] - expected))
        threshold = OUTLIER_LOG_DEVIATION
        if noise is not None and noise > 0:
            spread = noise * float(np.sqrt(1.0 + (1.0 - weight) ** 2 + weight ** 2))
            threshold = max(threshold, OUTLIER_NOISE_Z * spread)
        if deviation >= threshold:
            candidates.append((deviation, mid, threshold))
    found: list[Outlier] = []
    taken: set[int] = set()
    for deviation, mid, _ in sorted(candidates, reverse=True):
        if {mid - 1, mid + 1} & taken:
            continue
        found.append(Outlier(mid, deviation, (mid - 1, mid + 1)))
        taken.add(mid)
    return found
