"""A share of requests with an interval that respects how they were measured: in server
sessions, whose requests move together (docs/statistics.md, "Attainment").

Requests of one session share its speed (the session offset, the batch they ran in), so they
are no independent coin flips: a plain Wilson interval over the pooled requests is far too
narrow when sessions differ. The interval here is Wilson's, on an *effective* number of
requests: the pooled count divided by the design effect (Kish) that the sessions show —
the spread of the sessions' shares against what independent requests would give. The design
effect is never taken below 1, so the interval is never narrower than Wilson's on the requests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Share:
    """`hits` of `total` requests, pooled over `clusters` sessions, with its interval."""

    hits: int
    total: int
    clusters: int
    design_effect: float
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else float("nan")


def wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval for a share p of n (n may be an effective, fractional count)."""
    if n <= 0:
        return 0.0, 1.0
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def design_effect(hits: Sequence[int], totals: Sequence[int]) -> float:
    """The variance of the pooled share from the clusters' spread (the ratio estimator's
    between-cluster variance, k/(k−1) Σ (x_i − p m_i)² / M²) over the binomial variance
    p(1−p)/M; at least 1, and 1 when it cannot be estimated (one cluster, p of 0 or 1)."""
    k = len(totals)
    big_m = sum(totals)
    if k < 2 or big_m == 0:
        return 1.0
    p = sum(hits) / big_m
    binomial = p * (1 - p) / big_m
    if binomial <= 0:
        return 1.0
    between = k / (k - 1) * sum((x - p * m) ** 2 for x, m in zip(hits, totals, strict=True)) / big_m ** 2
    return max(1.0, between / binomial)


def clustered_share(hits: Sequence[int], totals: Sequence[int], alpha: float) -> Share:
    """The pooled share of hits over clusters (sessions) with a two-sided 1 − alpha interval:
    Wilson on the requests over the design effect."""
    total = sum(totals)
    hit = sum(hits)
    from scipy.special import ndtri  # norm.ppf itself; scipy.stats costs ~0.5 s more to import

    deff = design_effect(hits, totals)
    z = float(ndtri(1 - alpha / 2))
    low, high = wilson(hit / total, total / deff, z) if total else (0.0, 1.0)
    return Share(hits=hit, total=total, clusters=len(totals), design_effect=deff, low=low, high=high)
