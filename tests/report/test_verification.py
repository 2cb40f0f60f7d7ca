"""The verification section of a `--verify` run's report: per cell the schedule against the best
fixed K (the verdicts' ratio, interval, verdict) and the realised gain on the plan's traffic."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.verification import schedule_k_at, verification_of
from dspark_tui.engine.run.verify import Recommendation, verification_plan, verification_record
from dspark_tui.model import CellResult, ClientMetrics, ServerSummary, parse_plan
from dspark_tui.report.markdown import render_report
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.results.store import LoadedRun
from tests.report.k_sweep_builders import plan_text

GRID = {"chat": [1, 16, 128]}
TRAFFIC = "[traffic]\nconcurrency = { 1 = 0.3, 16 = 0.2, 128 = 0.5 }\n"
SCHEDULE = [[1, 8, 5], [9, 256, 2]]
CONFIG = {"method": "dspark", "num_speculative_tokens": 5,
          "num_speculative_tokens_per_batch_size": SCHEDULE}


def verification_run(folder: Path, truth: dict[int, float], *, rounds: int = 3,
                     noise: float = 0.002) -> LoadedRun:
    """A two-arm run as `--verify` makes it; `truth[c]` the schedule's true ratio to K = 4."""
    sweep_plan = parse_plan(plan_text([0, 2, 4, 5], GRID, traffic=TRAFFIC, rounds=rounds))
    recommendation = Recommendation(folder / "sweep", "k_sweep", "spec_tokens", CONFIG, 4,
                                    "running_batch")
    plan = verification_plan(sweep_plan, recommendation)
    folder.mkdir(parents=True, exist_ok=True)
    RunStore(folder).write_manifest(manifest_for_plan(plan, "test", verification_record(recommendation)))
    run = load_run(folder)
    rng = np.random.default_rng(5)
    measured = []
    for rnd in range(1, rounds + 1):
        for arm in ("schedule", "K=4"):
            session = rng.normal(0, noise)
            for c in GRID["chat"]:
                base = 1000.0 * c ** 0.8 * (truth[c] if arm == "schedule" else 1.0)
                measured.append(CellResult(
                    arm=arm, scenario="chat", concurrency=c, round=rnd, session=f"{arm}-r{rnd}",
                    metrics=ClientMetrics(total_throughput=base * math.exp(session + rng.normal(0, noise)),
                                          duration=20.0, completed=64),
                    server=ServerSummary(samples=40, running_mean=c * 0.97, running_peak=c)))
    run.measurements = measured
    run.cells = {m.key: m for m in measured if m.round == rounds}
    return run


def test_the_schedule_beats_the_fixed_k_on_the_traffic_with_an_interval(tmp_path: Path):
    truth = {1: 1.10, 16: 1.0, 128: 1.08}
    result = verification_of(analyse(verification_run(tmp_path, truth)))
    assert result is not None and result.traffic_source == "plan"
    assert [(c.concurrency, c.schedule_k) for c in result.cells] == [(1, 5), (16, 2), (128, 2)]
    assert [round(c.weight, 2) for c in result.cells] == [0.3, 0.2, 0.5]
    expected = math.exp(0.3 * math.log(1.10) + 0.5 * math.log(1.08))
    gain = result.gain
    assert gain is not None and gain.low is not None and gain.high is not None
    assert gain.low < expected < gain.high and abs(gain.ratio / expected - 1) < 0.01
    assert gain.low > 1.0 and result.gain_verdict == "wins"
    # The interval is the weighted mean of the cells' interval ends (log scale).
    ends = [(c.weight, c.ratio) for c in result.cells]
    assert math.isclose(math.log(gain.low), sum(w * math.log(r.low) for w, r in ends), rel_tol=1e-9)
    assert not result.fixed_wins
    assert [c.ratio.verdict for c in result.cells] == ["wins", "tie", "wins"]


def test_the_report_names_the_cells_the_fixed_k_wins(tmp_path: Path):
    run = verification_run(tmp_path, {1: 1.10, 16: 0.90, 128: 1.0})
    result = verification_of(analyse(run))
    assert [c.concurrency for c in result.fixed_wins] == [16]
    en = render_report(run, "en")
    assert "## Verification of the K schedule" in en
    assert "Cells where K=4 beats the schedule: chat c=16." in en
    assert "Realised gain of the schedule over K=4, weighted by the plan's `[traffic]`" in en
    zh = render_report(run, "zh")
    assert "## K 调度验证" in zh and "K=4 胜过调度的单元：chat c=16。" in zh
    # The verification run is no K sweep: it has no schedule of its own.
    assert "## What to deploy" not in en and not (tmp_path / "schedule.json").exists()


def test_single_measurements_give_a_point_estimate_and_say_so(tmp_path: Path):
    run = verification_run(tmp_path, {1: 1.10, 16: 1.0, 128: 1.05}, rounds=1)
    result = verification_of(analyse(run))
    assert result.gain is not None and result.gain.low is None and result.gain_verdict == "single"
    assert "the gain has no interval, it is a point estimate" in render_report(run, "en")


def test_other_runs_have_no_verification_section(tmp_path: Path):
    from tests.conftest import SAMPLE_RUN

    assert verification_of(analyse(load_run(SAMPLE_RUN))) is None


def test_the_schedules_k_is_looked_up_as_vllm_does():
    ranges = [[1, 8, 5], [12, 64, 3], [65, 256, 1]]
    assert [schedule_k_at(ranges, b) for b in (0.4, 8, 8.4, 10, 12, 300)] == [5, 5, 5, 5, 3, 1]
