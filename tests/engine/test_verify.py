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
    Recommendation,
    boundary_probes,
    neighbour_ks,
    plan_to_run,
    probe_scenario,
    probes_of,
    read_recommendation,
    verification_plan,
    verification_record,
)
from dspark_tui.model import UserError, parse_plan
from dspark_tui.results import RunStore
from dspark_tui.results.manifest import Verification
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
    # The builder's model (tests/report/k_sweep_builders.py) on this grid and traffic: K=7 and
    # K=6 at small batches (at c=1 K=6 is not shown within the band of K=7 at the family level,
    # so the top, K=7, is kept) down to K=0 at the largest, K=3 the best single K.
    assert recommendation.fixed_k == saved["single_best_k"]["k"] == 3
    assert recommendation.ranges == saved["num_speculative_tokens_per_batch_size"] == [
        [1, 1, 7], [2, 7, 6], [8, 31, 5], [32, 87, 2], [88, 256, 0]]
    plan = parse_plan(plan_text(KS, GRID, traffic=TRAFFIC))
    verifying = verification_plan(plan, recommendation)
    # The schedule, the best fixed K, then the K on each side of every boundary (the check at
    # the boundaries, below), written out: not derived from the code under test.
    assert [arm.name for arm in verifying.arms] == [
        "schedule", "K=3", "K=0", "K=2", "K=5", "K=6", "K=7"]
    assert SCHEDULE_ARM == "schedule"
    # Same grid, rounds and traffic as the plan, with the boundary probes added to its scenario:
    # each boundary's last batch and the next (1|2, 7|8, 31|32, 87|88) and the geometric
    # midpoint of each range between two boundaries (√(2·7) ≈ 4, √(8·31) ≈ 16, √(32·87) ≈ 53).
    assert boundary_probes(recommendation.ranges) == [1, 2, 4, 7, 8, 16, 31, 32, 53, 87, 88]
    scenario, prefill = verifying.scenarios
    assert scenario.concurrencies == [1, 2, 4, 7, 8, 16, 31, 32, 53, 64, 87, 88, 128]
    # The prefill probe: each boundary's two sides; prompts 16 x the scenario's (512 -> 8192,
    # the cap), answers of hi - 1 tokens for the smallest boundary (1 -> at least 2).
    assert (prefill.name, prefill.concurrencies, prefill.input_len, prefill.output_len) == (
        "chat_prefill", [1, 2, 7, 8, 31, 32, 87, 88], 8192, 2)
    assert scenario.model_copy(update={"concurrencies": plan.scenarios[0].concurrencies}) \
        == plan.scenarios[0]
    assert verifying.bench == plan.bench and verifying.traffic == plan.traffic
    # Schedule and best fixed K run every cell; each boundary K only its boundaries' probes.
    assert {arm.name: arm.cells for arm in verifying.arms} == {
        "schedule": None, "K=3": None,
        "K=7": {"chat": [1, 2], "chat_prefill": [1, 2]},
        "K=6": {"chat": [1, 2, 4, 7, 8], "chat_prefill": [1, 2, 7, 8]},
        "K=5": {"chat": [4, 7, 8, 16, 31, 32], "chat_prefill": [7, 8, 31, 32]},
        "K=2": {"chat": [16, 31, 32, 53, 87, 88], "chat_prefill": [31, 32, 87, 88]},
        "K=0": {"chat": [53, 87, 88], "chat_prefill": [87, 88]},
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


def _recommendation(ranges: list[list[int]], fixed_k: int) -> Recommendation:
    config = {"method": "mtp", "num_speculative_tokens": max(k for _, _, k in ranges),
              "num_speculative_tokens_per_batch_size": ranges}
    return Recommendation(Path("/sweep"), "k_sweep", "spec_tokens", config, fixed_k, "running_batch")


def test_the_prefill_probe_runs_long_prompts_at_each_boundarys_two_sides():
    """The rerun's plan for [[1,8,5],[9,256,3]] against K = 3 on a grid of chat c = 1..128
    (input 512, output 256): beside the plain probes c = 8, 9, a scenario chat_prefill at
    c = 8, 9 with prompts of 16 x 512 = 8192 tokens (the cap) and outputs of hi - 1 = 7, run by
    the schedule and both K of the boundary (docs/decision.md, "Where the batch includes
    prefills"). Expected values written out, not computed by the code under test."""
    plan = parse_plan(plan_text(KS, GRID, traffic=TRAFFIC))
    verifying = verification_plan(plan, _recommendation([[1, 8, 5], [9, 256, 3]], 3))
    assert [arm.name for arm in verifying.arms] == ["schedule", "K=3", "K=5"]
    chat, prefill = verifying.scenarios
    assert chat.name == "chat" and chat.concurrencies == [1, 4, 8, 9, 16, 64, 128]
    assert (prefill.name, prefill.input_len, prefill.output_len, prefill.concurrencies) == (
        "chat_prefill", 8192, 7, [8, 9])
    assert prefill.dataset == "random-ids" and prefill.num_prompts == 64 and prefill.range_ratio == 1.0
    assert verifying.arm("schedule").cells is None and verifying.arm("K=3").cells is None
    assert verifying.arm("K=5").cells == {"chat": [8, 9], "chat_prefill": [8, 9]}
    # The traffic still weighs the plan's own scenario only.
    assert verifying.traffic == plan.traffic
    record = verification_record(_recommendation([[1, 8, 5], [9, 256, 3]], 3), plan)
    assert (record.prefill_scenario, record.prefill_probes, record.prefill_input_len,
            record.prefill_output_len) == ("chat_prefill", [8, 9], 8192, 7)
    assert record.probes == [8, 9] and record.fixed_arms == {"K=3": 3, "K=5": 5}


def test_the_prefill_probe_respects_a_stated_max_length_and_each_boundary():
    """Three ranges: the probe at 4, 5, 16, 17, outputs of 4 - 1 = 3 tokens; with
    `--max-model-len 4096` prompts of 4096 - 3 = 4093 tokens; each boundary's K runs the prefill
    probes of its own boundary only."""
    plan = parse_plan(plan_text(KS, GRID, command_extra='"--max-model-len", "4096",'))
    verifying = verification_plan(plan, _recommendation([[1, 4, 3], [5, 16, 2], [17, 256, 1]], 2))
    prefill = verifying.scenarios[1]
    assert (prefill.name, prefill.input_len, prefill.output_len, prefill.concurrencies) == (
        "chat_prefill", 4093, 3, [4, 5, 16, 17])
    assert verifying.arm("K=3").cells == {"chat": [4, 5], "chat_prefill": [4, 5]}
    assert verifying.arm("K=1").cells == {"chat": [9, 16, 17], "chat_prefill": [16, 17]}
    # A schedule of one range has no boundary, so no prefill probe.
    one = verification_plan(plan, _recommendation([[1, 256, 3]], 2))
    assert [s.name for s in one.scenarios] == ["chat"]
    assert verification_record(_recommendation([[1, 256, 3]], 2), plan).prefill_scenario is None


def test_a_verification_record_from_before_the_prefill_probe_reads_as_before():
    old = Verification.model_validate({
        "sweep": "/sweep", "fixed_k": 3, "schedule_arm": "schedule", "fixed_arm": "K=3",
        "schedule": [[1, 8, 5], [9, 256, 3]], "probe_scenario": "chat", "probes": [8, 9],
        "fixed_arms": {"K=3": 3, "K=5": 5}})
    assert old.prefill_scenario is None and old.prefill_probes == []
    assert old.prefill_input_len is None and old.prefill_output_len is None


def test_the_prefill_scenario_name_fits_and_is_new():
    long = "c" * 100
    two = {long: [1, 64], "chat": [1, 64], "chat_prefill": [1, 64]}
    plan = parse_plan(plan_text(KS, two))
    verifying = verification_plan(plan, _recommendation([[1, 8, 5], [9, 256, 3]], 3))
    assert verifying.scenarios[-1].name == "c" * 92 + "_prefill"
    weighted = parse_plan(plan_text(KS, two, traffic="[traffic]\nscenarios = { chat = 1 }\n"))
    record = verification_record(_recommendation([[1, 8, 5], [9, 256, 3]], 3), weighted)
    assert record.prefill_scenario == "chat_prefill2"
    assert verification_plan(weighted, _recommendation([[1, 8, 5], [9, 256, 3]], 3)
                             ).scenarios[-1].name == "chat_prefill2"


def test_a_prompt_count_a_concurrency_gives_every_probe_the_largest():
    """A list of counts (one a concurrency) gets the largest for each added probe, plain or
    prefill; before, the plain probes made the list too short and the plan invalid."""
    text = plan_text(KS, {"chat": [1, 64]}).replace("num_prompts = 64", "num_prompts = [16, 256]")
    chat, prefill = verification_plan(parse_plan(text),
                                      _recommendation([[1, 8, 5], [9, 256, 3]], 3)).scenarios
    assert chat.concurrencies == [1, 8, 9, 64] and chat.num_prompts == [16, 256, 256, 256]
    assert prefill.name == "chat_prefill" and prefill.num_prompts == 256


def test_the_prefill_scenario_name_is_new_as_the_run_directory_spells_it():
    """`chat prefill` is stored as `chat_prefill` (safe_name): the probe must not take that
    name, or the plan refuses two scenarios sharing one folder (a traceback before: review)."""
    spaced = {"chat": [1, 64], "chat prefill": [1, 64]}
    plan = parse_plan(plan_text(KS, spaced))
    verifying = verification_plan(plan, _recommendation([[1, 8, 5], [9, 256, 3]], 3))
    assert [s.name for s in verifying.scenarios] == ["chat", "chat prefill", "chat_prefill2"]
