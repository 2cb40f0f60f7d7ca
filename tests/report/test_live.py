"""The live A/B table the TUI redraws whenever a cell finishes."""

from __future__ import annotations

import time

import pytest

from dspark_tui.model import ClientMetrics
from dspark_tui.report import comparison_rows
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


@pytest.mark.timing
def test_cheap_enough_to_run_after_every_cell():
    cells = [model_cell(arm, v, f"s{i}", c) for arm, v in (("st=3", 3), ("st=5", 5))
             for i in range(300) for c in (1, 4, 16, 64, 96, 128)]
    start = time.perf_counter()
    rows = comparison_rows(cells, ["st=3", "st=5"])
    elapsed = time.perf_counter() - start
    assert len(rows) == 1800
    assert elapsed < 0.5, f"{len(cells)} cells took {elapsed:.3f} s"
