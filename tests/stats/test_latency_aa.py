"""A-vs-A for the latency verdicts (analysis/slo.latency_verdicts): two identical arms, so every
"wins" is a false winner. Each measurement's p90 TPOT is drawn from the simulator's own model
(`sim.scheduler` in modelled time, demo-slo's workload with K=3: a fifth of the requests chat
that accepts almost no draft, so the p90 sits in the chat requests' tail, 64 requests a
measurement, a fresh acceptance seed each) and stretched by the noise of a box as the throughput
checks draw it (docs/statistics.md, textbook process: 2 % per server start, 3 % within a
session). The limits are the throughput verdicts' own, fixed there before any latency number:
false winners at most 3 % of pair-cells, intervals excluding the truth at most 7 %."""

from __future__ import annotations

import math

import numpy as np

from dspark_tui.analysis.slo import latency_verdicts
from dspark_tui.analysis.verdicts import Settings
from dspark_tui.model import CellResult, ClientMetrics
from tests.closed_loop import closed_loop

CONCURRENCIES = (2, 4, 8, 16)
POOL = 24  # model measurements per cell (acceptance seeds)
RUNS = 300


def p90_tpot(c: int, seed: int, n: int = 64) -> float:
    # The prompts' order differs by seed.
    requests, _ = closed_loop(3, c, n, seed, first_profile=seed)
    tpots = [(r.last_token_time - r.first_token_time) / (r.generated - 1) * 1000 for r in requests]
    return float(np.percentile(tpots, 90))


def test_identical_arms_rarely_differ_in_p90_tpot():
    pools = {c: [p90_tpot(c, seed) for seed in range(POOL)] for c in CONCURRENCIES}
    rng = np.random.default_rng(20261203)
    session_sd, within_sd = math.sqrt(math.log(1 + 0.02 ** 2)), math.sqrt(math.log(1 + 0.03 ** 2))
    settings = Settings(tie_band=0.02, alpha=0.05, rounds=2, adaptive_rounds=0)
    wins = excluded = pairs = 0
    for _ in range(RUNS):
        measured = []
        for arm in ("A", "A'"):
            for rnd in (1, 2):
                offset = rng.normal(0.0, session_sd)
                for c in CONCURRENCIES:
                    value = pools[c][rng.integers(POOL)] * math.exp(offset + rng.normal(0.0, within_sd))
                    measured.append(CellResult(arm=arm, scenario="mixed", concurrency=c, round=rnd,
                                               session=f"{arm}-{rnd}",
                                               metrics=ClientMetrics(p90_tpot_ms=value)))
        for verdict in latency_verdicts(measured, ["A", "A'"], settings, ["p90_tpot_ms"]):
            pairs += 1
            wins += verdict.verdict == "wins"
            excluded += verdict.low is not None and verdict.high is not None and not (
                verdict.low <= 1.0 <= verdict.high)
    assert pairs == RUNS * len(CONCURRENCIES)
    assert wins / pairs <= 0.03, (wins, pairs)
    assert excluded / pairs <= 0.07, (excluded, pairs)
