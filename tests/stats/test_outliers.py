"""One outlier rule (stats/outliers.py) for the report's list and the runner's re-measuring."""

from __future__ import annotations

import math

import pandas as pd

from dspark_tui.analysis import frames as fr
from dspark_tui.analysis.verdicts import PairResult, RunVerdicts, Settings, outlier_cells
from dspark_tui.stats.outliers import OUTLIER_LOG_DEVIATION, outliers

CONCURRENCIES = [1, 2, 4, 8, 16, 32]
# A flat gap with one cell far off at c=8: the old runner rule (every triple on its own) also
# flagged c=4 and c=16, whose lines run through the outlier.
RATIOS = [1.05, 1.05, 1.05, 1.50, 1.05, 1.05]


def test_one_cell_off_the_line_is_the_only_outlier():
    found = outliers(CONCURRENCIES, [math.log(r) for r in RATIOS])
    assert [(o.index, o.neighbours) for o in found] == [(3, (2, 4))]
    assert math.isclose(found[0].deviation, math.log(1.50 / 1.05))


def test_the_threshold_is_inclusive_and_a_line_is_never_an_outlier():
    assert outliers(CONCURRENCIES, [0.01 * i for i in range(6)]) == []
    edge = [0.0, OUTLIER_LOG_DEVIATION, 0.0]
    assert [o.index for o in outliers([1, 2, 4], edge)] == [1]
    assert outliers([1, 2, 4], [0.0, OUTLIER_LOG_DEVIATION * 0.999, 0.0]) == []


def test_report_and_runner_name_the_same_cells():
    gaps = pd.DataFrame({
        "scenario_pos": 0, "scenario": "chat", "concurrency": CONCURRENCIES,
        "log_gap": [math.log(r) for r in RATIOS], "base": "a", "other": "b",
        "leader": "a", "lead_margin": [r - 1 for r in RATIOS]})
    report = {(row.scenario, row.concurrency) for row in fr.outlier_frame(gaps).itertuples()}
    verdicts = RunVerdicts(Settings(), ["a", "b"], pairs=[
        PairResult("chat", c, "a", "b", 1, r, None, None, "single", "a")
        for c, r in zip(CONCURRENCIES, RATIOS, strict=True)])
    assert report == outlier_cells(verdicts) == {("chat", 8)}


def test_a_point_is_judged_only_against_its_true_neighbours():
    """Issue 22: c=4 was judged against c=1 and c=128 once c=16 had been taken out. Two
    spikes next to each other: the worst is found, its neighbour is not judged against a
    farther point."""
    concurrencies = [1, 4, 16, 64, 128]
    log_ratios = [math.log(r) for r in (1.0, 1.3, 1.9, 1.0, 1.0)]
    found = outliers(concurrencies, log_ratios)
    for outlier in found:
        low, high = outlier.neighbours
        assert (low, high) == (outlier.index - 1, outlier.index + 1)
    assert [o.index for o in found] == [2]


def test_the_runs_own_noise_raises_the_threshold():
    """A deviation of 0.25 is an outlier on a quiet run and not on one whose points each move
    by 0.1 (3 of the deviation's standard errors: 0.37)."""
    log_ratios = [0.0, 0.25, 0.0]
    assert [o.index for o in outliers([1, 2, 4], log_ratios)] == [1]
    assert [o.index for o in outliers([1, 2, 4], log_ratios, noise=0.01)] == [1]
    assert outliers([1, 2, 4], log_ratios, noise=0.1) == []
