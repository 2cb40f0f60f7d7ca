"""The verification section of a `--verify` run's report: per cell the schedule against the best
fixed K (the verdicts' ratio, interval, verdict) and the realised gain on the plan's traffic."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.verification import schedule_k_at, verification_json, verification_of
from dspark_tui.engine.run.verify import Recommendation, verification_plan, verification_record
from dspark_tui.model import CellResult, ClientMetrics, ServerSummary, parse_plan
from dspark_tui.report.markdown import render_report
from dspark_tui.report.outputs import analysis_json
from dspark_tui.results import RunStore, load_run, manifest_for_plan
from dspark_tui.results.store import LoadedRun
from tests.report.k_sweep_builders import plan_text

GRID = {"chat": [1, 16, 128]}
TRAFFIC = "[traffic]\nconcurrency = { 1 = 0.3, 16 = 0.2, 128 = 0.5 }\n"
SCHEDULE = [[1, 8, 5], [9, 256, 2]]
CONFIG = {"method": "dspark", "num_speculative_tokens": 5,
          "num_speculative_tokens_per_batch_size": SCHEDULE}


def verification_run(folder: Path, truth: dict[int, float], *, rounds: int = 3,
                     noise: float = 0.002, fixed_k: int = 4,
                     grid: dict[str, list[int]] = GRID, traffic: str = TRAFFIC,
                     ramp: bool = False) -> LoadedRun:
    """A two-arm run as `--verify` makes it; `truth[c]` the schedule's true ratio to the best
    fixed K (`fixed_k`, 4 unless given). With `ramp` the server held c in each cell (its steady
    reading, 40 readings) while the mean of the readings, the window's ramp in it, is 0.4 c."""
    sweep_plan = parse_plan(plan_text([0, 2, 4, 5], grid, traffic=traffic, rounds=rounds))
    recommendation = Recommendation(folder / "sweep", "k_sweep", "spec_tokens", CONFIG, fixed_k,
                                    "running_batch")
    fixed = f"K={fixed_k}"
    # A rerun as it was before the boundary check: the two arms on the sweep's grid.
    plan = verification_plan(sweep_plan, recommendation)
    plan = plan.model_copy(update={"arms": plan.arms[:2], "scenarios": sweep_plan.scenarios})
    folder.mkdir(parents=True, exist_ok=True)
    RunStore(folder).write_manifest(manifest_for_plan(plan, "test", verification_record(recommendation)))
    run = load_run(folder)
    rng = np.random.default_rng(5)
    measured = []
    for rnd in range(1, rounds + 1):
        for arm in ("schedule", fixed):
            session = rng.normal(0, noise)
            for c in grid["chat"]:
                base = 1000.0 * c ** 0.8 * (truth[c] if arm == "schedule" else 1.0)
                measured.append(CellResult(
                    arm=arm, scenario="chat", concurrency=c, round=rnd, session=f"{arm}-r{rnd}",
                    metrics=ClientMetrics(total_throughput=base * math.exp(session + rng.normal(0, noise)),
                                          duration=20.0, completed=64),
                    server=ServerSummary(samples=40, running_mean=c * (0.4 if ramp else 0.97),
                                         running_peak=c, running_steady=float(c) if ramp else None,
                                         running_samples=40 if ramp else None)))
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


def test_the_rerun_reads_the_batch_its_schedule_arm_held_as_the_schedule_does(tmp_path: Path):
    """The schedule is keyed on the batch a cell held (its steady reading, docs/decision.md
    "Readings"), and a rerun's cells are placed on the same reading, for the K the schedule ran
    there and on a `running_batch` traffic mix. Here the server held c while the mean of the
    readings is 0.4 c: at c=16 the schedule ran K=2 (batch 16, range 9-256), and batch 32 of the
    traffic is nearest c=16 (16 against 128). Before, the rows read the mean (6.4: K=5, and the
    traffic went to c=128 at 51.2), unlike the boundary check of the same rerun."""
    traffic = "[traffic]\nrunning_batch = { 32 = 1.0 }\n"
    result = verification_of(analyse(verification_run(tmp_path, {1: 1.10, 16: 1.0, 128: 1.08},
                                                      traffic=traffic, ramp=True)))
    assert result is not None
    assert [(c.concurrency, c.batch, c.schedule_k) for c in result.cells] == [
        (1, 1.0, 5), (16, 16.0, 2), (128, 128.0, 2)]
    assert [c.weight for c in result.cells] == [0.0, 1.0, 0.0]


def test_a_held_batch_below_one_is_read_as_one_as_the_schedule_reads_it(tmp_path: Path):
    """A server idle part of a c=1 window holds a steady batch below 1; the schedule places such a
    cell at 1 (schedule.batch_points), and so does the rerun's row (review: it said 0.6)."""
    run = verification_run(tmp_path, {1: 1.10, 16: 1.0, 128: 1.08}, ramp=True)
    for m in run.measurements:
        if m.concurrency == 1 and m.server is not None:
            m.server = m.server.model_copy(update={"running_steady": 0.6})
    result = verification_of(analyse(run))
    assert result is not None
    assert [(c.concurrency, c.batch, c.schedule_k) for c in result.cells] == [
        (1, 1.0, 5), (16, 16.0, 2), (128, 128.0, 2)]


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


def boundary_run(folder: Path, schedule_at: dict[int, float], k5_over_k2: dict[int, float],
                 rounds: int = 3, noise: float = 0.002,
                 prefill_at: dict[int, float] | None = None,
                 prefill_k5_over_k2: dict[int, float] | None = None,
                 prefill_batch: float | None = None) -> LoadedRun:
    """A `--verify` run with the boundary check: arms schedule, K=4 (best fixed), K=2 and K=5
    (the two sides of the boundary 8|9), the probes 8 and 9 added to the grid, and the prefill
    probe chat_prefill at 8 and 9. `schedule_at[c]` (`prefill_at[c]` in the prefill probe) is
    the schedule's true ratio to the better of K=2 and K=5 at c; `prefill_k5_over_k2` K=5's
    ratio to K=2 in the prefill probe (default: `k5_over_k2`'s), `prefill_batch` the running
    batch its cells read (default: their concurrency)."""
    sweep_plan = parse_plan(plan_text([0, 2, 4, 5], GRID, traffic=TRAFFIC, rounds=rounds))
    recommendation = Recommendation(folder / "sweep", "k_sweep", "spec_tokens", CONFIG, 4,
                                    "running_batch")
    plan = verification_plan(sweep_plan, recommendation)
    assert [a.name for a in plan.arms] == ["schedule", "K=4", "K=2", "K=5"]
    assert plan.scenarios[0].concurrencies == [1, 8, 9, 16, 128]
    assert plan.arm("K=2").cells == plan.arm("K=5").cells == {"chat": [8, 9],
                                                              "chat_prefill": [8, 9]}
    assert [(s.name, s.concurrencies) for s in plan.scenarios] == [
        ("chat", [1, 8, 9, 16, 128]), ("chat_prefill", [8, 9])]
    assert plan.arm("K=4").cells is None and plan.arm("schedule").cells is None
    folder.mkdir(parents=True, exist_ok=True)
    record = verification_record(recommendation, sweep_plan)
    assert record.probes == [8, 9] and record.fixed_arms == {"K=2": 2, "K=4": 4, "K=5": 5}
    RunStore(folder).write_manifest(manifest_for_plan(plan, "test", record))
    run = load_run(folder)
    rng = np.random.default_rng(7)
    measured = []
    for rnd in range(1, rounds + 1):
        for arm in ("schedule", "K=4", "K=2", "K=5"):
            session = rng.normal(0, noise)
            for scenario, c in [(s.name, c) for s in plan.scenarios for c in s.concurrencies]:
                if not plan.arm(arm).plans(scenario, c):
                    continue  # K=2 and K=5 measure the probes only
                plain = scenario == "chat"
                k2 = 1000.0 * c ** 0.8
                k5 = k2 * (k5_over_k2 if plain or prefill_k5_over_k2 is None
                           else prefill_k5_over_k2).get(c, 1.0)
                at = schedule_at if plain else prefill_at or {}
                held = float(c) if plain or prefill_batch is None else prefill_batch
                value = {"K=2": k2, "K=5": k5, "K=4": 0.5 * (k2 + k5),
                         "schedule": max(k2, k5) * at.get(c, 1.0)}[arm]
                measured.append(CellResult(
                    arm=arm, scenario=scenario, concurrency=c, round=rnd, session=f"{arm}-r{rnd}",
                    metrics=ClientMetrics(total_throughput=value * math.exp(session + rng.normal(0, noise)),
                                          duration=20.0, completed=64),
                    server=ServerSummary(samples=40, running_mean=held * 0.97, running_peak=c,
                                         running_steady=held, running_samples=40,
                                         drafts=100.0, draft_tokens=500.0 if c <= 8 else 300.0)))
    run.measurements = measured
    run.cells = {m.key: m for m in measured if m.round == rounds}
    return run


def test_a_collapse_at_the_boundary_is_flagged_and_the_boundary_moved(tmp_path: Path):
    # At c = 9 the schedule is 15 % below the better fixed K (and so below both); K=5 is 10 %
    # faster than K=2 there, so the boundary moves up, putting c = 9 in K=5's range.
    run = boundary_run(tmp_path, {9: 0.85 / 1.10}, {1: 1.2, 8: 1.1, 9: 1.1, 16: 0.9, 128: 0.8})
    result = verification_of(analyse(run))
    assert result is not None
    # The gain rests on the sweep's own cells only; the probes are checked, not weighed.
    assert [c.concurrency for c in result.cells] == [1, 16, 128]
    # The check compares the schedule with both neighbours where both were planned: the probes.
    assert [(c.scenario, c.concurrency) for c in result.boundary_cells] == [
        ("chat", 8), ("chat", 9), ("chat_prefill", 8), ("chat_prefill", 9)]
    assert [(c.scenario, c.concurrency) for c in result.collapses] == [("chat", 9)]
    (cell,) = result.collapses
    assert cell.probe and cell.side == "high" and cell.schedule_k == 2 and cell.drafted_k == 3.0
    (boundary,) = result.boundaries
    assert (boundary.boundary, boundary.k_low, boundary.k_high, boundary.move) == (8, 5, 2, "up")
    assert boundary.target == 9
    en = render_report(run, "en")
    assert "### At the schedule's boundaries" in en and "**Collapse at boundary 8|9**" in en
    assert "**move it up**, the lower range ending at 9 at least" in en
    assert "⚠ Collapse at the schedule's boundaries" in en
    assert "### 调度边界处" in render_report(run, "zh")
    # K=2 and K=5 ran the probes only: "—" elsewhere, and compared only where they ran.
    winners = [line for line in en.splitlines() if line.startswith("| chat | 1 | schedule |")]
    with_k4 = [line for line in winners if "K=4 |" in line]
    assert with_k4 and all("| — | — | K=4 |" in line for line in with_k4), winners
    assert "— … —" not in en  # no group interval over cells an arm did not plan
    # 14 cells of chat (5 + 5 + 2 + 2) and 4 arms x 2 of the prefill probe.
    assert "22 of 22 cells" in en or "22 ok, 0 failed, 0 not run (of 22)" in en


def test_a_collapse_only_under_prefills_is_flagged_by_the_prefill_probe(tmp_path: Path):
    """The plain probes hold (the schedule equals the better K), the prefill probe at c = 8 has
    the schedule 12 % below the better K: flagged by the same rule, named in the prefill row,
    and kept out of the gain."""
    run = boundary_run(tmp_path, {}, {1: 1.2, 8: 1.1, 9: 1.1, 16: 0.9, 128: 0.8},
                       prefill_at={8: 0.88})
    result = verification_of(analyse(run))
    assert result is not None
    assert [c.concurrency for c in result.cells] == [1, 16, 128]
    assert [(c.scenario, c.concurrency, c.prefill) for c in result.collapses] == [
        ("chat_prefill", 8, True)]
    check = json.loads(json.dumps(verification_json(result, False, None)))["boundary_check"]
    assert check["prefill_probe"] == {"scenario": "chat_prefill", "concurrencies": [8, 9],
                                      "input_len": 8192, "output_len": 7, "collapses_at": [8]}
    en = render_report(run, "en")
    assert "The prefill probe: `chat_prefill` at c=8, c=9" in en
    assert "prompts of 8192 tokens and outputs of 7" in en
    assert "**Collapse at boundary 8|9**" in en and "chat_prefill c=8" in en
    zh = render_report(run, "zh")
    assert "预填充探测：`chat_prefill` 在 c=8, c=9" in zh


def test_without_a_collapse_a_misplaced_boundary_is_still_moved(tmp_path: Path):
    # The schedule runs K=2 at c = 9 and K=5 is shown 10 % faster there: move the boundary up;
    # the schedule equals K=2 there (not below both), so no collapse.
    run = boundary_run(tmp_path, {9: 1.0 / 1.10}, {1: 1.2, 8: 1.1, 9: 1.1, 16: 0.9, 128: 0.8})
    result = verification_of(analyse(run))
    assert result is not None and not result.collapses
    (boundary,) = result.boundaries
    assert boundary.move == "up" and boundary.target == 9
    assert "Collapse at" not in render_report(run, "en")


def test_the_prefill_probe_flags_a_collapse_but_never_moves_a_boundary(tmp_path: Path):
    """The prefill probe's cells are short and mostly prefill, so their /metrics running batch
    is a ramp (live: 1.0-3.5 at c = 8 and 9), which can place a cell on the wrong side of the
    boundary. Here they read 2.5 (K=5's side) where K=2 is shown 10 % faster under prefills,
    and the schedule collapses at prefill c = 8: the collapse is flagged, but the way to move
    the boundary comes from the plain probes, where K=2 and K=5 are even (keep it). Read from
    the prefill cells, the advice was "move it down" to 7."""
    run = boundary_run(tmp_path, {}, {1: 1.2, 16: 0.9, 128: 0.8}, prefill_at={8: 0.85},
                       prefill_k5_over_k2={8: 1 / 1.1, 9: 1 / 1.1}, prefill_batch=2.5)
    result = verification_of(analyse(run))
    assert result is not None
    prefill = [c for c in result.boundary_cells if c.prefill]
    assert [(c.concurrency, c.side, c.high_vs_low.verdict) for c in prefill] == [
        (8, "low", "wins"), (9, "low", "wins")]
    assert [(c.scenario, c.concurrency) for c in result.collapses] == [("chat_prefill", 8)]
    assert all(c.move is None for c in result.boundary_cells)
    (boundary,) = result.boundaries
    assert boundary.move is None and boundary.target is None and boundary.collapses
    saved = json.loads(json.dumps(verification_json(result, False, None)))["boundary_check"]
    assert saved["boundaries"][0]["move"] is None and saved["boundaries"][0]["collapses_at"] == [8]
    en = render_report(run, "en")
    assert "**Collapse at boundary 8|9**" in en and "move it down" not in en
    assert "no plain probe shows the other side's K faster" in en
    assert "keep it (no cell shows" not in en  # "no collapse" would be false here
    assert "boundary 8|9: no direction shown" in en


def test_a_cell_where_the_schedule_runs_the_fixed_k_is_an_a_vs_a_check(tmp_path: Path):
    """Against a best fixed K of 5, the schedule [[1, 8, 5], [9, 256, 2]] runs K=5 at every
    batch of c = 1 and c = 4: schedule / K=5 there compares one K with itself. The summary
    counts those cells apart (not "not decided, too close to call"); c = 16 runs K=5 up to a
    batch of 8 and K=2 above, so it is a real comparison."""
    run = verification_run(tmp_path, {1: 1.0, 4: 1.0, 16: 1.0, 128: 1.08}, fixed_k=5, noise=0.03,
                           grid={"chat": [1, 4, 16, 128]})
    result = verification_of(analyse(run))
    assert result is not None
    assert [(c.concurrency, c.same_k) for c in result.cells] == [
        (1, True), (4, True), (16, False), (128, False)]
    assert [c.ratio.verdict for c in result.cells if c.same_k] == ["unsure", "unsure"]
    en = render_report(run, "en")
    summary = en.split("## Summary", 1)[1].split("\n---\n", 1)[0]
    (single,) = [ln for ln in summary.splitlines() if ln.startswith("- **c=1**")]
    assert single.startswith("- **c=1**: same K as the fixed arm — the schedule runs K=5 at every "
                             "batch there, so schedule / K=5 is an A-vs-A check"), single
    assert "chat c=1 " in single and "(unsure)" in single and "not decided" not in single
    (low,) = [ln for ln in summary.splitlines() if ln.startswith("- **c=4~16**")]
    assert "counted apart, same K as the fixed arm (A-vs-A checks): chat c=4 " in low
    assert "chat c=16" not in low  # the band's own count is of c = 16 alone: "of 1 cells"
    assert "unsure (A-vs-A)" in en and "Same K as the fixed arm: at chat c=1, chat c=4" in en
    zh = render_report(run, "zh")
    assert "与固定臂同一个 K" in zh and "（A-vs-A）" in zh
    saved = json.loads(json.dumps(verification_json(result, False, None)))
    assert saved["same_k_as_fixed_at"] == [{"scenario": "chat", "concurrency": 1},
                                           {"scenario": "chat", "concurrency": 4}]
    document = json.loads(analysis_json(run))
    assert document["verification"]["same_k_cells"] == saved["same_k_as_fixed_at"]
    assert document["verification"]["fixed_arm"] == "K=5"


def test_the_schedule_runs_the_fixed_k_only_where_every_batch_up_to_c_does():
    from dspark_tui.analysis.verification import runs_only

    ranges = [[1, 4, 5], [5, 16, 3], [17, 256, 1]]
    assert [c for c in (1, 2, 4, 5, 16, 64) if runs_only(ranges, 5, c)] == [1, 2, 4]
    # At c = 16 the batch ramps through 1..4 (K=5): not K=3 throughout, however it holds 16.
    assert not any(runs_only(ranges, 3, c) for c in (5, 16))
    assert not runs_only(ranges, 1, 256)


def test_a_vs_a_cells_are_counted_apart_in_how_sure_the_unsure_list_findings_and_advice(tmp_path: Path):
    """The schedule runs the fixed K=5 at every batch of c = 1 and 4 (A-vs-A checks, unsure as
    such checks are) and is 15-20 % faster at c = 16 and 128 (decided). Before, the how-sure
    line said "of 4 comparisons ... 2 unsure", the unsure list asked for more rounds at c = 1
    and 4, findings called chat "not decided" (2 of 4 concurrencies) and advice re-ran 2 unsure
    cells: an A-vs-A check read as missing data. Each now counts them apart, from the
    analysis' same_k cells (analysis.json verification.same_k_cells), in en and zh."""
    run = verification_run(tmp_path, {1: 1.0, 4: 1.0, 16: 1.15, 128: 1.20}, fixed_k=5,
                           noise=0.03, grid={"chat": [1, 4, 16, 128]})
    document = json.loads(analysis_json(run))
    assert document["verification"]["same_k_cells"] == [
        {"scenario": "chat", "concurrency": 1}, {"scenario": "chat", "concurrency": 4}]
    en = render_report(run, "en")
    summary = en.split("## Summary", 1)[1].split("\n---\n", 1)[0]
    (sure,) = [ln for ln in summary.splitlines() if ln.startswith("- How sure")]
    assert sure.startswith("- How sure: of 2 comparisons, 2 are wins and 0 ties"), sure
    assert "0 unsure;" in sure and "(listed below)" not in sure
    assert ("Counted apart: 2 A-vs-A check(s) of a verification run (the same K in both arms: "
            "chat c=1, chat c=4), 0 shown different, 0 tie(s), 2 unsure") in sure
    unsure = en.split("## Unsure cells", 1)[1].split("\n---\n", 1)[0]
    assert "- `chat` c=1" not in unsure and "- `chat` c=4" not in unsure and "rounds" not in unsure.split(
        "A-vs-A")[0], unsure
    assert ("- A-vs-A checks (the same K in both arms; schedule / fixed K), unsure as expected: "
            "chat c=1 -0.2% (unsure), chat c=4 +0.5% (unsure)") in unsure
    findings = en.split("## Key findings", 1)[1].split("\n---\n", 1)[0]
    assert "not decided" not in findings and "| chat (512 in / 256 out) | schedule |" in findings
    assert "Counted apart, same K as the fixed arm (A-vs-A checks): chat c=4 +0.5% (unsure)." in findings
    assert "`schedule` wins 1/1 cells" in findings and "2/1" not in findings, findings
    advice = en.split("## Recommendations", 1)[1]
    assert "still unsure" not in advice and "not decided" not in advice, advice
    zh = render_report(run, "zh")
    assert "另计：验证运行的 2 个 A-vs-A 检查" in zh and "未定在预期之中" in zh
    assert "另计，与固定臂同一个 K（A-vs-A 检查）：chat c=4" in zh and "仍未定" not in zh


def test_a_band_counts_its_decided_wins_not_an_unsure_cells_lean(tmp_path: Path):
    """c = 4 decided (+20 %), c = 16 unsure and leaning the same way (+3 % at 3 % noise), in one
    band: the band's line read "`schedule` wins 2/1 cells", counting the lean as a win over the
    one decided cell (a real `--verify` run of demo-k-sweep showed it, en and zh)."""
    run = verification_run(tmp_path, {1: 1.0, 4: 1.20, 16: 1.03, 128: 1.0}, fixed_k=4,
                           noise=0.03, grid={"chat": [1, 4, 16, 128]})
    findings = render_report(run, "en").split("## Key findings", 1)[1].split("\n---\n", 1)[0]
    (line,) = [ln for ln in findings.splitlines() if "c=4" in ln and "wins" in ln]
    assert "`schedule` wins 1/1 cells" in line, findings
