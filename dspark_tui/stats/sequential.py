"""The nominal level of each look when verdicts are read more than once (adaptive rounds).

A cell that is still unsure gets more rounds and is judged again: without a correction, every
extra look is another chance for noise to cross the line. We use one nominal level for every
look (Pocock's idea), computed for this plan's own look schedule: looks after n_1 = rounds,
n_2 = rounds + 1, ... rounds of data, whose z statistics are those of one Brownian motion,
Z_k = W(n_k) / sqrt(n_k). The level is the one at which a true null crosses at SOME look with
probability alpha (two-sided), under the normal approximation; intervals then use Student's t
at that level with the fitted degrees of freedom. With one look it is alpha itself.

The crossing constant is the (1 - alpha) quantile of max_k |Z_k|, taken from 400,000 simulated
paths with a fixed seed: deterministic, a few tens of milliseconds, and within about 0.0003 of
the exact level (for 1, 2, 3 equally spaced looks it gives Pocock's 0.05, 0.0294, 0.0221).
"""

from __future__ import annotations

import functools
import math

import numpy as np

_PATHS = 400_000
_SEED = 20261201


@functools.lru_cache(maxsize=64)
def nominal_alpha(alpha: float, rounds: int, looks: int) -> float:
    """Per-look two-sided level so that the chance of crossing at any of `looks` looks is alpha."""
    if looks <= 1:
        return alpha
    n = np.arange(rounds, rounds + looks, dtype=float)
    rng = np.random.default_rng(_SEED)
    steps = rng.standard_normal((_PATHS, looks)) * np.sqrt(np.diff(n, prepend=0.0))
    z = np.abs(np.cumsum(steps, axis=1)) / np.sqrt(n)
    crossing = float(np.quantile(z.max(axis=1), 1.0 - alpha))
    return math.erfc(crossing / math.sqrt(2.0))
