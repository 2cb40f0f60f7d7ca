"""A server never restarted between rounds (an external one) keeps one session offset for the
whole run: rounds cannot average it away. With a stated prior it enters every interval whole;
without one the analysis says the intervals cover within-session noise only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dspark_tui.analysis.verdicts import Settings, analyse_measurements
from dspark_tui.model.statistics import StatisticsSettings
from dspark_tui.stats.paired import FixedSessionTerm, decide, fit_noise, t_quantile
from tests.report.test_verdicts import ARMS, measurements

D = np.array([[0.10, 0.04, 0.07, 0.12], [0.02, 0.05, 0.01, 0.04], [0.08, 0.03, 0.09, 0.06]])


def test_a_fixed_term_widens_the_interval_by_satterthwaite():
    plain = decide(D, tie_band=0.02, alpha=0.05)
    fixed = FixedSessionTerm(var=0.03**2, df=6.0)
    widened = decide(D, tie_band=0.02, alpha=0.05, fixed=fixed)
    for p, w in zip(plain, widened, strict=True):
        assert w.log_ratio == p.log_ratio
        assert (w.log_high - w.log_low) > (p.log_high - p.log_low)
    # The half width is t(df) * sqrt(var_fixed + tau2 / n), df by Satterthwaite.
    fit = fit_noise(D)
    assert fit is not None
    n = 4
    var = fixed.var + fit.tau2 / n
    df = var**2 / (fixed.var**2 / fixed.df + (fit.tau2 / n) ** 2 / fit.df)
    half = t_quantile(0.975, df) * math.sqrt(var)
    assert widened[0].log_high - widened[0].log_ratio == pytest.approx(half, rel=1e-12)


def test_more_rounds_cannot_shrink_the_fixed_term():
    rng = np.random.default_rng(3)
    fixed = FixedSessionTerm(var=0.02**2, df=10.0)
    d = 0.05 + rng.normal(0, 0.001, size=(3, 200))
    (v, *_) = decide(d, tie_band=0.02, alpha=0.05, fixed=fixed)
    assert (v.log_high - v.log_low) / 2 >= 1.96 * 0.02


def _settings(keys: dict[str, object]) -> Settings:
    """The analysis's settings of these statistics keys (an old run's defaults for the rest)."""
    return Settings.of(StatisticsSettings.model_validate(keys))


def test_settings_split_the_prior_by_the_arms_never_restarted():
    bench = {"session_noise_prior": {"sd": 0.02, "df": 8}, "external_arms": ["st=5"]}
    settings = _settings(bench)
    one = settings.fixed_session("st=3", "st=5")
    assert one is not None and one.var == pytest.approx(0.02**2 / 2)
    both = _settings({**bench, "external_arms": ["st=3", "st=5"]})
    assert both.fixed_session("st=3", "st=5").var == pytest.approx(0.02**2)  # type: ignore[union-attr]
    assert _settings({"external_arms": ["st=5"]}).fixed_session("st=3", "st=5") is None


def test_analysis_marks_unreplicated_pairs_and_says_what_the_intervals_cover():
    arms = list(ARMS)
    data = measurements(rounds=3)
    restarted = analyse_measurements(data, arms, Settings(rounds=3))
    external = analyse_measurements(data, arms, Settings(rounds=3, external_arms=tuple(arms)))
    assert restarted.to_json()["session_replication"] is True
    assert restarted.to_json()["session_noise"] == "rounds"
    as_json = external.to_json()
    assert as_json["session_replication"] is False
    assert as_json["session_noise"] == "within-session only"
    assert as_json["noise"][0]["session_replication"] is False

    prior = _settings({"rounds": 3, "session_noise_prior": {"sd": 0.03, "df": 10},
                                 "external_arms": arms})
    with_prior = analyse_measurements(data, arms, prior)
    assert with_prior.to_json()["session_noise"] == "prior"
    assert with_prior.noise[0].prior is not None
    for p, w in zip(external.pairs, with_prior.pairs, strict=True):
        assert (w.ci_high - w.ci_low) > (p.ci_high - p.ci_low)  # type: ignore[operator]


def test_a_run_without_session_replication_lends_no_prior(tmp_path):
    from dspark_tui.analysis.noise_prior import pooled_session_noise
    from dspark_tui.model import UserError
    from tests.report.test_verdicts import loaded

    restarted = loaded(tmp_path / "a", rounds=3)
    external = loaded(tmp_path / "b", rounds=3)
    for arm in external.manifest.plan["arms"]:
        arm["url"] = f"http://10.0.0.{len(arm['name'])}:8000"
    assert pooled_session_noise([restarted, external]).df == 2  # only the run with restarts
    with pytest.raises(UserError, match="none of these runs"):
        pooled_session_noise([external])
