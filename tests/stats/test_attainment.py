"""The attainment interval (stats/attainment.py): Wilson's interval on the requests over the
design effect of the sessions. Checked against Wilson's formula by hand and, by simulation,
for what it claims: near its level when sessions differ a little, never narrower than Wilson
on the requests, and closer to its level than Wilson when sessions differ a lot."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dspark_tui.stats.attainment import clustered_share, design_effect, wilson


def test_wilson_matches_the_textbook_formula():
    # 45 of 50 at 95 %: the score interval written out (Agresti & Coull 1998's example form).
    p, n, z = 0.9, 50, norm.ppf(0.975)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert wilson(p, n, z) == pytest.approx((centre - half, centre + half))
    low, high = wilson(1.0, 80, z)  # every request met: the lower end is n / (n + z²)
    assert low == pytest.approx(80 / (80 + z * z)) and high == pytest.approx(1.0)


def test_design_effect_is_one_for_sessions_that_agree_and_grows_when_they_differ():
    assert design_effect([90, 90], [100, 100]) == 1.0
    assert design_effect([90], [100]) == 1.0  # one session: nothing to estimate it from
    # 99 % and 81 %: far more spread than 200 coin flips at 90 % give.
    deff = design_effect([99, 81], [100, 100])
    assert deff == pytest.approx(2 / 1 * (9 ** 2 + 9 ** 2) / 200 ** 2 / (0.9 * 0.1 / 200))
    share = clustered_share([99, 81], [100, 100], 0.05)
    plain = wilson(0.9, 200, norm.ppf(0.975))
    assert share.low < plain[0] and share.high > plain[1]


def _coverage(rng: np.random.Generator, sessions: int, per_session: int, session_cv: float,
              runs: int) -> tuple[float, float]:
    """Requests' log latency ~ N(session offset, 0.3²), the offset ~ N(0, ln(1 + cv²)); the
    threshold puts 95 % of all requests (over sessions) under it. Coverage of that 95 % by the
    clustered interval and by Wilson on the pooled requests."""
    sd_session = math.sqrt(math.log(1 + session_cv ** 2))
    threshold = norm.ppf(0.95) * math.sqrt(sd_session ** 2 + 0.3 ** 2)
    ours = plain = 0
    for _ in range(runs):
        offsets = rng.normal(0.0, sd_session, sessions)
        hits = [int((rng.normal(o, 0.3, per_session) <= threshold).sum()) for o in offsets]
        share = clustered_share(hits, [per_session] * sessions, 0.05)
        ours += share.low <= 0.95 <= share.high
        low, high = wilson(sum(hits) / (sessions * per_session), sessions * per_session, norm.ppf(0.975))
        plain += low <= 0.95 <= high
    return ours / runs, plain / runs


def test_coverage_near_its_level_with_little_session_noise_and_better_than_wilson_with_much():
    """Limits fixed before the numbers (docs/statistics.md, Attainment, has the table): at 5 %
    session noise the 95 % interval covers at least 92 % with 2 and 4 sessions; at 15 % it
    under-covers (a stated limit of the method) but beats pooled Wilson by 5 points or more."""
    rng = np.random.default_rng(20261203)
    for sessions in (2, 4):
        ours, _ = _coverage(rng, sessions, 64, 0.05, 600)
        assert ours >= 0.92, (sessions, ours)
    ours, plain = _coverage(rng, 4, 64, 0.15, 600)
    assert ours >= plain + 0.05, (ours, plain)
