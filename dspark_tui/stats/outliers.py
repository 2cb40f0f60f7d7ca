"""The one outlier rule: a cell whose log ratio sits far from the line through its two
neighbours (the same scenario, one tested concurrency either side, in log2 concurrency) tells a
different story than they do. The report lists such cells (analysis/frames.outlier_frame) and the
runner measures them again (analysis/verdicts.outlier_cells); both ask `outliers`.

The worst offender is taken out before the next is looked for, so one outlier does not make
its neighbours look like outliers too.
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


def outliers(concurrencies: Sequence[float], log_ratios: Sequence[float]) -> list[Outlier]:
    """The outliers of one scenario's points, in concurrency order (ascending, distinct),
    worst first."""
    x = np.log2(np.asarray(concurrencies, dtype=float))
    y = np.asarray(log_ratios, dtype=float)
    remaining = list(range(len(x)))
    found: list[Outlier] = []
    while len(remaining) >= 3:
        worst, worst_dev = -1, 0.0
        for j in range(1, len(remaining) - 1):
            lo, mid, hi = remaining[j - 1], remaining[j], remaining[j + 1]
            expected = y[lo] + (y[hi] - y[lo]) * (x[mid] - x[lo]) / (x[hi] - x[lo])
            deviation = abs(y[mid] - expected)
            if deviation > worst_dev:
                worst, worst_dev = j, float(deviation)
        if worst < 0 or worst_dev < OUTLIER_LOG_DEVIATION:
            break
        found.append(Outlier(remaining[worst], worst_dev,
                             (remaining[worst - 1], remaining[worst + 1])))
        del remaining[worst]
    return found
