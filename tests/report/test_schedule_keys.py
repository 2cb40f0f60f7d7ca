"""The K schedule's key (issue 21): how many readings each anchor rests on, the fallback to the
client's concurrency when a cell's running batch was read too few times, merges of cells far
apart in concurrency said, and schedule.json deployable (`deploy`) only when every choice is decided."""

from __future__ import annotations

import json

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.deploy import SCHEDULE_FILE, deploy_answer
from dspark_tui.analysis.schedule import MIN_RUNNING_SAMPLES
from dspark_tui.report.markdown import render_report
from dspark_tui.report.outputs import write_outputs
from tests.report.k_sweep_builders import k_sweep_run

KS = [0, 1, 3, 5]


def test_a_cell_read_twice_keys_the_schedule_on_concurrency_and_says_why(tmp_path):
    """The real run's case: the c=8 cell's batch read as 1 from 2 readings (its peak 7)."""
    run = k_sweep_run(tmp_path, KS, {"chat": [1, 8]}, running=lambda k, s, c: 1.0,
                      readings=lambda k, s, c: 2 if c == 8 else 40)
    answer = deploy_answer(analyse(run))
    schedule = answer.schedule
    assert schedule.keyed_on == "client_concurrency"
    assert {(t.scenario, t.concurrency, t.samples) for t in schedule.thin} == {("chat", 8, 2)}
    report = render_report(run, lang="en")
    assert f"was read fewer than {MIN_RUNNING_SAMPLES} times (chat c=8 K=" in report
    assert "This run has no `/metrics`" not in report


def test_enough_readings_key_on_the_batch_and_each_anchor_says_its_readings(tmp_path):
    run = k_sweep_run(tmp_path / "run", KS, {"chat": [1, 16, 128]}, readings=lambda k, s, c: 40)
    answer = deploy_answer(analyse(run))
    schedule = answer.schedule
    assert schedule.keyed_on == "running_batch" and not schedule.thin
    assert [a.samples for a in schedule.anchors] == [120, 120, 120]  # 3 rounds x 40
    write_outputs(run, langs=("en",), charts=False)  # it reads no chart
    data = json.loads((tmp_path / "run" / SCHEDULE_FILE).read_text())
    assert data["key_rule"] == {"min_running_samples": 4, "merge_concurrency_span": 2.0}
    assert [a["samples"] for a in data["anchors"]] == [120, 120, 120]
    assert "(120 readings)" in (tmp_path / "run" / "report.en.md").read_text()


def test_a_merge_across_more_than_twice_the_concurrency_is_said(tmp_path):
    """c=1 and c=8 ran at overlapping batches (requests queued at c=8): one K serves both, and
    the report and schedule.json say so instead of merging them silently."""
    run = k_sweep_run(tmp_path / "run", KS, {"chat": [1, 8]}, readings=lambda k, s, c: 40,
                      running=lambda k, s, c: 1.0 if c == 1 else 1.02)
    answer = deploy_answer(analyse(run))
    (anchor,) = answer.schedule.anchors
    assert anchor.wide and anchor.concurrency_span == 8
    report = render_report(run, lang="en")
    assert "joins cells whose concurrencies differ by more than 2x (chat c=1, chat c=8)" in report
    write_outputs(run, langs=("en",), charts=False)  # it reads no chart
    data = json.loads((tmp_path / "run" / SCHEDULE_FILE).read_text())
    assert data["anchors"][0]["wide"] is True


def test_neighbouring_concurrencies_merge_without_a_word(tmp_path):
    run = k_sweep_run(tmp_path, KS, {"chat": [4, 8]}, readings=lambda k, s, c: 40,
                      running=lambda k, s, c: 5.0 if c == 4 else 5.1)
    answer = deploy_answer(analyse(run))
    (anchor,) = answer.schedule.anchors
    assert not anchor.wide
    assert "joins cells whose concurrencies" not in render_report(run, lang="en")


def test_not_deployable_when_every_comparison_is_unsure(tmp_path):
    """Two rounds of noise far wider than the arms' differences: every comparison has an
    interval, none decides; schedule.json said `"verified": true` (schema 2: its status is
    unsure, deploy false, has_intervals true)."""
    run = k_sweep_run(tmp_path / "run", KS, {"chat": [1, 8]}, rounds=2, noise=0.6,
                      model=lambda k, s, c: 1000.0 * c)
    answer = deploy_answer(analyse(run))
    decision = answer.decision
    assert decision.verified and decision.unsure_choices  # intervals, and undecided
    write_outputs(run, langs=("en",), charts=False)  # it reads no chart
    data = json.loads((tmp_path / "run" / SCHEDULE_FILE).read_text())
    assert "verified" not in data and data["has_intervals"] is True
    assert data["status"] == "unsure" and data["deploy"] is False
    assert data["unsure_cells"]
    assert "choices are unsure" in (tmp_path / "run" / "report.en.md").read_text()
