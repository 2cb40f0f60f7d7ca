"""`run PLAN --verify SWEEP_DIR`, without processes: the sweep's recommendation as read from its
directory, the two-arm plan built from it, and the one-line refusals (no run directory made)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dspark_tui.cli import main
from dspark_tui.engine.checks.preflight import PreflightFailed
from dspark_tui.engine.run.verify import (
    SCHEDULE_ARM,
    boundary_probes,
    neighbour_ks,
    plan_to_run,
    probe_scenario,
    probes_of,
    read_recommendation,
    verification_plan,
)
from dspark_tui.model import UserError, parse_plan
from dspark_tui.results import RunStore
from tests.conftest import SAMPLE_RUN
from tests.report.k_sweep_builders import finished_sweep, k_sweep_run, plan_text

KS = list(range(8))
GRID = {"chat": [1, 4, 16, 64, 128]}
TRAFFIC = "[traffic]\nconcurrency = { 1 = 0.3, 16 = 0.2, 128 = 0.5 }\n"


def sweep_dir(folder: Path) -> Path:
    return finished_sweep(k_sweep_run(folder, KS, GRID, traffic=TRAFFIC))


def test_the_plan_runs_the_schedule_against_the_best_fixed_k(tmp_path: Path):
    sweep = sweep_dir(tmp_path / "sweep")
    saved = json.loads((sweep / "schedule.json").read_text())
    recommendation = read_recommendation(sweep)
    # The builder's model (tests/report/k_sweep_builders.py) on this grid and traffic: K=6 at
    # small batches down to K=0 at the largest, K=3 the best single K.
    assert recommendation.fixed_k == saved["single_best_k"]["k"] == 3
    assert recommendation.ranges == saved["num_speculative_tokens_per_batch_size"] == [
        [1, 7, 6], [8, 31, 5], [32, 87, 2], [88, 256, 0]]
    plan = parse_plan(plan_text(KS, GRID, traffic=TRAFFIC))
    verifying = verification_plan(plan, recommendation)
    # The schedule, the best fixed K, then the K on each side of every boundary (the check at
    # the boundaries, below), written out: not derived from the code under test.
    assert [arm.name for arm in verifying.arms] == ["schedule", "K=3", "K=0", "K=2", "K=5", "K=6"]
    assert SCHEDULE_ARM == "schedule"
    # Same grid, rounds and traffic as the plan, with the boundary probes added to its scenario:
    # each boundary's last batch and the next (7|8, 31|32, 87|88) and the geometric midpoint
    # of each range between two boundaries (√(8·31) ≈ 16, √(32·87) ≈ 53).
    assert boundary_probes(recommendation.ranges) == [7, 8, 16, 31, 32, 53, 87, 88]
    (scenario,) = verifying.scenarios
    assert scenario.concurrencies == [1, 4, 7, 8, 16, 31, 32, 53, 64, 87, 88, 128]
    assert scenario.model_copy(update={"concurrencies": plan.scenarios[0].concurrencies}) \
        == plan.scenarios[0]
    assert verifying.bench == plan.bench and verifying.traffic == plan.traffic
    # Schedule and best fixed K run every cell; each boundary K only its boundaries' probes.
    assert {arm.name: arm.cells for arm in verifying.arms} == {
        "schedule": None, "K=3": None,
        "K=6": {"chat": [7, 8]},
        "K=5": {"chat": [7, 8, 16, 31, 32]},
        "K=2": {"chat": [16, 31, 32, 53, 87, 88]},
        "K=0": {"chat": [53, 87, 88]},
    }
    fixed = "K=3"
    schedule_argv = verifying.server_argv(verifying.arm(SCHEDULE_ARM))
    fixed_argv = verifying.server_argv(verifying.arm(fixed))
    for argv in (schedule_argv, fixed_argv):
        assert "--spec-tokens" not in argv and argv.count("--speculative-config") == 1
    schedule_config = json.loads(schedule_argv[schedule_argv.index("--speculative-config") + 1])
    assert schedule_config == saved["speculative_config"]
    fixed_config = json.loads(fixed_argv[fixed_argv.index("--speculative-config") + 1])
    assert fixed_config == {"method": schedule_config["method"], "num_speculative_tokens": 3}


def test_a_best_fixed_k_of_0_starts_without_any_speculative_flag(tmp_path: Path):
    """Upstream vLLM refuses K = 0 in every form (`--spec-tokens 0`, `"num_speculative_tokens":
    0`): the fixed arm of K = 0 has no flag at all, even when the plan sets K through a
    variable (it used to get `--speculative-config '{..."num_speculative_tokens":0}'`)."""
    grid = {"chat": [1, 16, 128]}

    def tokens_per_s(k: int, scenario: str, c: int) -> float:  # K = 1 pays at c = 1 only
        return 100.0 * c * (1.0 + (0.3 * k if c == 1 else -0.2 * k))

    finished_sweep(k_sweep_run(tmp_path / "sweep", KS[:4], grid, model=tokens_per_s,
                               traffic="[traffic]\nconcurrency = { 1 = 0.1, 128 = 0.9 }\n"))
    recommendation = read_recommendation(tmp_path / "sweep")
    assert recommendation.fixed_k == 0 and recommendation.ranges[0][2] > 0, recommendation
    plan = parse_plan(plan_text(KS[:4], grid))
    verifying = verification_plan(plan, recommendation)
    fixed = verifying.server_argv(verifying.arm("K=0"))
    assert not any("spec" in part for part in fixed), fixed
    schedule = verifying.server_argv(verifying.arm(SCHEDULE_ARM))
    assert schedule.count("--speculative-config") == 1 and "--spec-tokens" not in schedule


def test_without_schedule_json_the_recommendation_is_computed(tmp_path: Path):
    sweep = sweep_dir(tmp_path / "sweep")
    saved = json.loads((sweep / "schedule.json").read_text())
    (sweep / "schedule.json").unlink()
    # Measurements on disk this time: the in-memory builder's cells written as files.
    run = k_sweep_run(tmp_path / "mem", KS, GRID, traffic=TRAFFIC)
    store = RunStore(sweep)
    for measurement in run.measurements:
        store.save_cell(measurement)
    recommendation = read_recommendation(sweep)
    assert recommendation.ranges == saved["num_speculative_tokens_per_batch_size"]
    assert recommendation.fixed_k == saved["single_best_k"]["k"]


def test_a_run_that_is_no_finished_sweep_is_refused_in_one_line(tmp_path: Path):
    with pytest.raises(UserError, match="not a K sweep"):
        read_recommendation(SAMPLE_RUN)  # the seed: st=3 vs st=5, no K = 0
    unfinished = tmp_path / "unfinished"
    k_sweep_run(unfinished, KS, GRID, status="running")
    with pytest.raises(UserError, match="running, not completed"):
        read_recommendation(unfinished)
    with pytest.raises(UserError, match="missing"):
        read_recommendation(tmp_path / "nowhere")
    plan = parse_plan(plan_text(KS, GRID))
    with pytest.raises(UserError, match="--arms cannot be combined with --verify"):
        plan_to_run(plan, sweep_dir(tmp_path / "sweep"), ["K=1"], None)


def test_cli_refuses_a_non_sweep_without_making_a_run_directory(tmp_path: Path, capsys):
    results = tmp_path / "results"
    code = main(["run", "demo-k-sweep", "--verify", str(SAMPLE_RUN), "--headless",
                 "--results", str(results)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "not a K sweep" in err and str(SAMPLE_RUN) in err
    assert not results.exists() or not any(results.iterdir())


def test_the_app_checks_verify_before_its_screen_switches(tmp_path: Path):
    import argparse

    from dspark_tui.tui.launch import _start_of

    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(plan_text(KS, GRID, traffic=TRAFFIC))

    def args(verify: Path) -> argparse.Namespace:
        return argparse.Namespace(command="run", plan=str(plan_file), resume=None, arms=None,
                                  scenarios=None, detach=False, verify=verify)

    with pytest.raises(UserError, match="not a K sweep"):
        _start_of(args(SAMPLE_RUN), tmp_path / "plans", [tmp_path / "results"])
    sweep = sweep_dir(tmp_path / "sweep")
    # The sweep passes the verify check; what stops this (GPU-box) plan here is the machine,
    # and that too is said before any screen or run directory exists.
    with pytest.raises(PreflightFailed) as refused:
        _start_of(args(sweep), tmp_path / "plans", [tmp_path / "results"])
    assert "verify" not in str(refused.value) and "vllm" in str(refused.value)
    assert not (tmp_path / "results").exists()


def test_the_boundary_probes_are_each_boundarys_two_sides_and_inner_midpoints():
    """The rule of the check at the boundaries (docs/decision.md): for [[1,4,3],[5,16,2],
    [17,256,1]] the batches 4|5 and 16|17 and the middle range's geometric midpoint 9."""
    ranges = [[1, 4, 3], [5, 16, 2], [17, 256, 1]]
    assert boundary_probes(ranges) == [4, 5, 9, 16, 17]
    assert neighbour_ks(ranges) == [1, 2, 3]
    assert boundary_probes([[1, 8, 5], [9, 256, 3]]) == [8, 9]
    assert boundary_probes([[1, 256, 3]]) == [] and neighbour_ks([[1, 256, 3]]) == []
    # A range of two batches has no midpoint strictly inside.
    assert boundary_probes([[1, 4, 3], [5, 6, 2], [7, 256, 1]]) == [4, 5, 6, 7]
    # A boundary K runs the probes whose nearest boundary (log2) it borders: 9 is nearer 16|17.
    assert [probes_of(ranges, k) for k in (3, 2, 1)] == [[4, 5], [4, 5, 9, 16, 17], [9, 16, 17]]


def test_the_probes_go_to_the_scenario_the_traffic_weighs_most():
    two = {"chat": [1, 64], "rag": [1, 64]}
    assert probe_scenario(parse_plan(plan_text(KS, two))) == "chat"
    weighted = parse_plan(plan_text(KS, two, traffic="[traffic]\nscenarios = { chat = 1, rag = 3 }\n"))
    assert probe_scenario(weighted) == "rag"
