"""Issue 22's error rates in CI, with fewer seeds than bench/noise_processes.py (the runner's
schedule with adaptive rounds, synthetic measurements from stated noise processes, the
report's own verdicts). Seeds are the bench's first ones (fixed, so each test is deterministic).

The margin rule, fixed before any result: a run's cells share its server sessions, so they win
or miss together, and the sampled unit is the RUN. A run's share of cells that err lies in
[0, 1] with mean p, so its variance is at most p(1 - p) (every cell of a run erring together);
a limit p checked over n runs gets three of those standard errors, 3 sqrt(p (1 - p) / n),
computed at the limit's own rate — never from the observed spread, which grows with a clustered
failure and would let the failure widen its own limit. With n runs a check therefore fails for
any rate above p + 3 sqrt(p (1 - p) / n): each test's docstring says what its run count can
detect, and the checks that matter are shown to fail under the method they replaced. What the
CI runs cannot resolve (the demo's session processes at 2.5 % against a 3 % limit) the bench
measures over 1000 runs (docs/statistics.md)."""

from __future__ import annotations

import math

import pytest

from tests.bench_module import load_bench

# Slow though it starts no process: about 30 s of CPU in thousands of synthetic runs (about a
# minute before 2026-12-03's faster analysis, the same runs and figures), half the whole fast
# loop's budget (README).
pytestmark = pytest.mark.slow

SEEDS = 200  # the seed grid (18 cells): about 2-3 s of CPU a process; fails above 6.6 % / 12.4 %
DEMO_SEEDS = 200  # the demo grid (5 cells): about 1.5 s a process; fails above 6.6 % false winners
RUN_SEEDS = 48  # run-level rates: binomial over runs
SEVEN_ARM_SEEDS = 100  # seven arms on the seed grid: about 8 s; fails above 11.5 %
FALSE_WINS, EXCLUSION, WRONG_SIGN, POWER_10 = 0.03, 0.07, 0.01, 0.75


def margin(p: float, n: int) -> float:
    """Three standard errors of a rate p over n runs, at the worst within-run clustering."""
    return 3.0 * math.sqrt(p * (1.0 - p) / n)


@pytest.fixture(scope="module")
def bench():
    return load_bench("noise_processes.py")


def a_vs_a(bench, process: str, grid: str, seeds: int = SEEDS):
    """Identical arms. On the seed's grid at two planned rounds — the default, and the harder
    case: its shipped plan plans three since 2026-12-03, where every rate is lower (the bench,
    docs/statistics.md) and the method before issue 22 reads 4.0 % false winners, which 200 runs
    cannot tell from the limit; at two it reads 7.5 %, so the check is shown to bite there."""
    bench.ROUNDS = 2 if grid == "seed18" else None
    try:
        return bench.cell_rates(bench.PROCESS_BY_NAME[process], grid, seeds, margins=(),
                                wrong_margins=())
    finally:
        bench.ROUNDS = None


@pytest.mark.parametrize("process", ["session5", "session8", "hetero", "group", "badcells", "drift"])
def test_identical_arms_rarely_win_on_the_seed_grid(bench, process):
    """200 runs: fails for false winners above 6.6 % or exclusion above 12.4 % (the 16 runs
    before allowed 15.5 % and 26 %)."""
    rates = a_vs_a(bench, process, "seed18")
    assert rates.false_win_rate <= FALSE_WINS + margin(FALSE_WINS, rates.seeds), rates
    assert rates.exclusion_rate <= EXCLUSION + margin(EXCLUSION, rates.seeds), rates


def test_the_seed_grid_check_fails_under_the_method_it_replaced(bench, monkeypatch):
    """The method before issue 22 — the session term from the pair's own round effects (one
    degree of freedom at two rounds), one noise level for every cell, the Satterthwaite df taken
    as known — read 10.4 % false winners on the seed's grid under 5 % session noise in the
    issue's seeds, 7.5 % in these 200 runs: the check above fails on it (by under a point: 200
    runs detect about twice the limit, not less)."""
    from dspark_tui.analysis import verdicts
    from dspark_tui.stats import paired

    monkeypatch.setattr(paired, "SESSION_METHOD", "paired")
    monkeypatch.setattr(paired, "DF_RULE", "satterthwaite")
    monkeypatch.setattr(verdicts, "GROUPS", "none")
    rates = a_vs_a(bench, "session5", "seed18")
    assert rates.false_win_rate > FALSE_WINS + margin(FALSE_WINS, rates.seeds), rates


@pytest.mark.parametrize("process", ["session5", "session8", "hetero"])
def test_identical_arms_rarely_win_on_the_demo_grid(bench, process):
    """The demo's 5 cells under 5-8 % session noise and noisy c = 1 cells, the processes
    nearest the limit. 200 runs fail only above 6.6 %: a guard against gross failure (the
    method before the calibrated level read 3.9-4.2 % over 1000 runs, which this cannot tell
    from 3 %); the bench's 1000 runs are the measure (2.5-2.8 %)."""
    rates = a_vs_a(bench, process, "demo", DEMO_SEEDS)
    assert rates.false_win_rate <= FALSE_WINS + margin(FALSE_WINS, rates.seeds), rates
    assert rates.exclusion_rate <= EXCLUSION + margin(EXCLUSION, rates.seeds), rates


def test_wrong_sign_wins_are_rare_under_strong_session_noise(bench):
    """The demo under 8 % session noise, the second arm 2 % faster: wins for the first arm
    are at most 1 % (200 runs: fails above 3.1 %; the bench's 1000 runs read 0.9 %)."""
    rates = bench.cell_rates(bench.PROCESS_BY_NAME["session8"], "demo", DEMO_SEEDS, margins=(),
                             wrong_margins=(0.02,))
    assert rates.wrong_sign[0.02] <= WRONG_SIGN + margin(WRONG_SIGN, rates.seeds), rates


def test_textbook_noise_keeps_its_power_on_the_demo(bench):
    """Right-sign wins at a true 10 % margin on textbook noise, the demo grid (the issue's
    "today 78 %" is this grid's, under the method before issue 22): at least 75 % less three
    standard errors over 200 runs (fails below 65.8 %)."""
    rates = bench.cell_rates(bench.PROCESS_BY_NAME["textbook"], "demo", DEMO_SEEDS, margins=(0.10,),
                             wrong_margins=(0.02,))
    runs = rates.seeds
    assert rates.power[0.10] >= POWER_10 - margin(POWER_10, runs), rates
    assert rates.wrong_sign[0.02] <= WRONG_SIGN + margin(WRONG_SIGN, runs), rates


def test_textbook_noise_power_on_the_seed_grid(bench):
    """The seed's plan at its own rounds (3 planned + 2 adaptive since 2026-12-03: at 2 planned
    rounds the grid read 70 % over 200 runs, and no method measured reached 75 %;
    docs/statistics.md; the bench reads 84 % at 3). These 100 fixed runs are held to the limit
    itself, with no sampling margin: their standard error (about 4 points) is too wide to prove
    75 %, which the bench's 200 runs measure; this is the tripwire for the method and the plan's
    rounds — at 2 rounds the same runs read near 70 % and fail."""
    assert bench.grid_of("seed18").plan.bench.rounds == 3
    rates = bench.cell_rates(bench.PROCESS_BY_NAME["textbook"], "seed18", 100, margins=(0.10,),
                             wrong_margins=())
    assert rates.power[0.10] >= POWER_10, rates


def test_the_summary_names_an_arm_for_a_band_in_few_a_vs_a_runs(bench):
    """Run level (issue 22): two identical arms, the seed grid with bad session-cells. The
    summary's band rule (a majority of ALL the band's cells, confirmed by the band's own
    interval) names an arm in at most 3 % of runs; the rule before it (a majority of the band's
    DECIDED cells) does in about a fifth of them, beyond the margin: the check can fail. Runs
    are independent, so the margin is binomial over runs (48 runs: fails above 10.4 %)."""
    rates = a_vs_a(bench, "badcells", "seed18", RUN_SEEDS)
    runs = rates.seeds
    assert rates.band_rules["summary"] / runs <= 0.03 + margin(0.03, runs), rates.band_rules
    assert rates.band_rules["decided-majority"] / runs > 0.03 + margin(0.03, runs), rates.band_rules


def test_the_best_of_seven_equal_arms_is_rarely_shown_better(bench):
    """Seven identical arms under 8 % session noise: the gain of the top K over some other K
    excludes 1 in at most 5 % of runs at the family level (decision.family_alpha); at one
    comparison's level it did in 14-16 %. 100 runs: fails above 11.5 %, which the
    per-comparison rule's rate clears."""
    result = bench.fixed_k_exclusion("seed18", bench.PROCESS_BY_NAME["session8"], SEVEN_ARM_SEEDS)
    runs = result["runs"]
    assert result["top_gain_excludes_1"] <= 0.05 + margin(0.05, runs), result
    assert result["top_gain_excludes_1_per_comparison"] > 0.05 + margin(0.05, runs), result
