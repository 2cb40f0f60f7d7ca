"""The live A/B table the TUI redraws whenever a cell finishes."""

from __future__ import annotations

import pytest

from dspark_tui.analysis.live import comparison_rows
from dspark_tui.model import ClientMetrics
from dspark_tui.results import load_run
from tests.conftest import SAMPLE_RUN
from tests.report.builders import failed_cell, model_cell


@pytest.fixture(scope="module")
def sample():
    return load_run(SAMPLE_RUN)


def test_rows_follow_the_plan_and_pick_the_winner(sample):
    rows = comparison_rows(sample.cells.values(), ["st=3", "st=5"], sample.manifest.scenarios)
    assert [r.key for r in rows][:6] == [
        ("chat_short", 1), ("chat_short", 8), ("chat_short", 16), ("chat_short", 32),
        ("chat_short", 64), ("chat_standard", 64),
    ]
    assert len(rows) == 18
    last = rows[-1]
    assert last.key == ("stress_standard", 128)
    assert last.winner == "st=3" and last.runner_up == "st=5"
    assert f"{last.margin:.4f}" == "0.3140"
    figures = last.arms["st=5"]
    assert (figures.total_tok_s, figures.output_tok_s, figures.p99_ttft_ms, figures.mean_tpot_ms) == (
        22700.92, 4522.53, 1087.53, 25.74)
    assert figures.accept_length is None  # the seed measured none


def test_arrival_order_is_used_without_a_plan():
    cells = [model_cell("st=3", 3, "zeta", 8), model_cell("st=3", 3, "alpha", 1),
             model_cell("st=3", 3, "zeta", 1)]
    rows = comparison_rows(cells, ["st=3", "st=5"])
    assert [r.key for r in rows] == [("zeta", 1), ("zeta", 8), ("alpha", 1)]


def test_pending_and_failed_arms_have_no_winner():
    cells = [
        model_cell("st=3", 3, "chat", 1),
        model_cell("st=3", 3, "chat", 8),
        failed_cell("st=5", "chat", 8, "timed out after 120 s"),
    ]
    rows = comparison_rows(cells, ["st=3", "st=5"])
    pending, failed = rows
    assert pending.arms["st=5"].status is None and pending.arms["st=5"].total_tok_s is None
    assert pending.winner is None and pending.margin is None
    assert failed.arms["st=5"].status == "failed"
    assert failed.arms["st=5"].error == "timed out after 120 s"
    assert failed.winner is None


def test_acceptance_length_prefers_the_server_then_the_client():
    scraped = model_cell("st=5", 5, "chat", 1, server=True)
    scraped.metrics = ClientMetrics(total_throughput=100.0, accept_length=9.9)
    client_only = model_cell("st=3", 3, "chat", 1)
    client_only.metrics = ClientMetrics(total_throughput=90.0, accept_length=2.4)
    (row,) = comparison_rows([client_only, scraped], ["st=3", "st=5"])
    assert row.arms["st=5"].accept_length == pytest.approx(1 + 0.55 * 5)
    assert row.arms["st=3"].accept_length == 2.4
    assert row.winner == "st=5"
    assert row.margin == pytest.approx(100 / 90 - 1)


def test_a_sweep_row_names_the_leader_and_its_margin_over_k0(tmp_path):
    """N arms: the leader is named even in a tie; its margin over K = 0 is the verdict
    analysis' ratio, with its interval."""
    from dspark_tui.analysis.decision import ratio_between
    from dspark_tui.analysis.layout import baseline_arm
    from dspark_tui.analysis.live import baseline_text
    from dspark_tui.analysis.verdicts import Settings, analyse_measurements
    from tests.report.k_sweep_builders import k_sweep_run

    run = k_sweep_run(tmp_path, list(range(8)), {"chat": [1, 16, 256]}, rounds=3)
    arms = run.manifest.arm_names()
    assert baseline_arm(run.manifest) == "K=0"
    rows = {r.key: r for r in comparison_rows(run.measurements, arms, ["chat"], baseline="K=0")}
    verdicts = analyse_measurements(run.measurements, arms, Settings())

    low = rows[("chat", 1)]
    assert (low.leader, low.runner_up, low.winner) == ("K=7", "K=6", None)  # 1.1 % apart: a tie
    assert low.verdict == "tie"
    over_k0 = ratio_between(verdicts, "chat", 1, "K=7", "K=0")
    assert low.baseline_margin == pytest.approx(over_k0.value - 1)
    assert (low.baseline_low, low.baseline_high) == pytest.approx((over_k0.low - 1, over_k0.high - 1))
    assert low.baseline_margin > 1.0 and low.baseline_verdict == "wins"  # K=7 more than doubles K=0
    assert baseline_text(low) == f"{low.baseline_margin * 100:+.1f}%"

    high = rows[("chat", 256)]
    assert high.leader == high.winner == "K=0" and high.verdict == "wins"
    assert high.baseline_margin is None and baseline_text(high) == ""  # K=0 leads: nothing over it


def test_two_arms_keep_their_rows_and_know_no_k0(sample):
    from dspark_tui.analysis.layout import baseline_arm

    assert baseline_arm(sample.manifest) is None  # st=3 against st=5: no K = 0 arm
    rows = comparison_rows(sample.cells.values(), ["st=3", "st=5"], sample.manifest.scenarios)
    assert all(r.baseline is None and r.baseline_margin is None for r in rows)
    assert rows[-1].leader == rows[-1].winner == "st=3"
