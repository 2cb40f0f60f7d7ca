"""A session-noise prior is an upper bound checked against the run (issue 22): a prior that
understates the session spread the run itself shows is not used; one that covers it is."""

from __future__ import annotations

import numpy as np

from dspark_tui.stats.paired import SessionPrior, decide, fit_noise, prior_contradicted


def _run(session_sd: float, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sessions = rng.normal(0.0, session_sd, size=(1, 4))
    return rng.normal(0.0, 0.01, size=(12, 4)) + sessions


def test_a_prior_far_below_the_runs_own_session_spread_is_not_used():
    d = _run(0.10)
    fit = fit_noise(d, SessionPrior(sd=0.005, df=20))
    bare = fit_noise(d)
    assert fit is not None and bare is not None
    assert not fit.prior_used
    assert fit.tau2 == bare.tau2 and fit.df == bare.df
    narrow = decide(d, tie_band=0.02, alpha=0.05, prior=SessionPrior(sd=0.005, df=20))
    assert [v.log_low for v in narrow] == [v.log_low for v in decide(d, tie_band=0.02, alpha=0.05)]


def test_a_prior_that_covers_the_run_is_used():
    d = _run(0.02)
    fit = fit_noise(d, SessionPrior(sd=0.05, df=20))
    assert fit is not None and fit.prior_used
    assert fit.df > fit_noise(d).df


def test_the_check_is_one_sided_at_five_percent():
    assert not prior_contradicted(0.5, 3, 1.0, 20)  # quieter than the prior: never contradicted
    assert prior_contradicted(10.0, 3, 1.0, 20)
    assert not prior_contradicted(2.0, 3, 1.0, 20)  # F(3, 20) above 2.0 happens 15 % by chance
