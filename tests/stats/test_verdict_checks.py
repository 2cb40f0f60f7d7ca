"""Issue 11's statistical checks, in modelled time (bench/verdict_checks.py): the runner's
schedule, the simulator's noise model on the demo grid, the report's own verdicts."""

from __future__ import annotations

import pytest

from tests.bench_module import load_bench


@pytest.fixture(scope="module")
def checks():
    return load_bench("verdict_checks.py")


def test_identical_arms_rarely_exclude_one_and_almost_never_win(checks):
    result = checks.a_vs_a(seeds=60)
    assert result["verdicts"] >= 40 * 5
    assert result["interval_excludes_1"] <= 0.07, result
    assert result["wins"] <= 0.03, result


def test_k3_vs_k5_wins_have_the_true_sign_and_big_margins_get_decided(checks):
    result = checks.k3_vs_k5(seeds=60)
    assert result["wrong_sign_wins"] <= 0.01, result
    assert result["big_margin_cells"] >= 1  # the demo grid has cells with a true margin >= 15 %
    assert result["big_margin_decided"] >= 0.90, result


def test_adaptive_agrees_with_the_full_design_at_less_cost(checks):
    result = checks.cost_of_certainty(seeds=24)
    assert result["contradictions"] == 0, result
    assert result["decided_share_of_full"] >= 0.90, result
    assert result["cell_runs_adaptive"] < result["cell_runs_full"], result


def test_the_check_can_fail(checks, monkeypatch):
    """Without the per-look correction and with a lying variance (tau shrunk tenfold) the same
    A-vs-A check must catch the over-confident intervals. The lie goes to both names of the
    fit: the analysis's (its last look's fit) and the one `decide` calls for earlier looks."""
    from dspark_tui.analysis import verdicts
    from dspark_tui.stats import paired

    original = paired.fit_noise

    def overconfident(d, prior=None, arms=None, groups=None):
        fit = original(d, prior, arms, groups)
        # the per-group variances go too, so every cell gets the lying pooled one
        return None if fit is None else fit.__class__(
            **{**fit.__dict__, "tau2": fit.tau2 / 100, "group_tau2": None})

    monkeypatch.setattr(paired, "fit_noise", overconfident)
    monkeypatch.setattr(verdicts, "fit_noise", overconfident)
    result = checks.a_vs_a(seeds=20)
    monkeypatch.undo()
    assert result["interval_excludes_1"] > 0.07
