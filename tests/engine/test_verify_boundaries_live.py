"""`run PLAN --verify SWEEP_DIR` at the schedule's boundaries, end to end against the simulator:
with its #49548 fault (`--k-flip-fault`: K keyed on a count that includes queued prefills, each
flip a graph switch, the schedule on the slower route) the rerun flags the collapse at the
boundary; without it, none. Real processes, real HTTP, the files on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dspark_tui.analysis.analysis import analyse
from dspark_tui.analysis.verification import verification_of
from dspark_tui.results import load_run
from tests.engine.helpers import headless_run, stated_sweep, write_sim_plan

# One cell inside the first range (c = 4); the rerun adds the boundary's two sides, c = 8 and 9.
CELLS = """[[scenarios]]
name = "chat"
input_len = 64
output_len = 256
concurrencies = [4]
num_prompts = { per_concurrency = 8, min = 32, max = 96 }
"""
# The schedule under test, written as the sweep's answer: K = 5 up to a batch of 8, K = 3 above.
# In model time (tests/sim/test_adaptive.py) the fault drops it below both fixed K past 8.
SCHEDULE = [[1, 8, 5], [9, 256, 3]]
ROUNDS = 3
SPEED = 4


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-arm sweep (K = 3, 5) whose schedule.json is the schedule under test:
    `--verify` reruns what schedule.json says. Its measurements are stated, not run: two K
    values make no K sweep of their own, so nothing the sweep measured reaches the rerun."""
    folder = tmp_path_factory.mktemp("sweep")
    plan = write_sim_plan(folder, 0, arms=(3, 5), speed=SPEED, warmup=1, cells=CELLS)
    return stated_sweep(folder / "k_sweep", plan, {"st=3": {4: 1000.0}, "st=5": {4: 1050.0}},
                        "chat", schedule={
                            "speculative_config": {
                                "method": "mtp", "num_speculative_tokens": 5,
                                "num_speculative_tokens_per_batch_size": SCHEDULE},
                            "single_best_k": {"k": 3}, "keyed_on": "running_batch"})


def _verify(tmp_path: Path, sweep: Path, *sim_flags: str) -> tuple[Path, Any]:
    plan = write_sim_plan(tmp_path, 0, *sim_flags, arms=(3, 5), speed=SPEED, warmup=1,
                          cells=CELLS, rounds=ROUNDS)
    run_dir = headless_run(plan, tmp_path / "verifications", "--verify", str(sweep), "--lang", "en",
                           timeout=300)
    run = load_run(run_dir)
    assert run.manifest.status == "completed" and not run.problems
    assert run.manifest.arm_names() == ["schedule", "K=3", "K=5"]
    record = run.manifest.verification
    assert record is not None and record.probes == [8, 9] and record.probe_scenario == "chat"
    # The prefill probe: prompts of 16 x 64 tokens, outputs of 8 - 1, at the boundary's sides.
    assert (record.prefill_scenario, record.prefill_probes, record.prefill_input_len,
            record.prefill_output_len) == ("chat_prefill", [8, 9], 1024, 7)
    # The boundary's other K runs the probes only; the rerun is whole without its c = 4.
    measured = {(m.arm, m.scenario, m.concurrency) for m in run.measurements}
    assert {(s, c) for arm, s, c in measured if arm == "K=5"} == {
        ("chat", 8), ("chat", 9), ("chat_prefill", 8), ("chat_prefill", 9)}
    assert {(s, c) for arm, s, c in measured if arm == "schedule"} == {
        (s, c) for arm, s, c in measured if arm == "K=3"} == {
        ("chat", 4), ("chat", 8), ("chat", 9), ("chat_prefill", 8), ("chat_prefill", 9)}
    assert len(run.measurements) == ROUNDS * (3 + 3 + 2 + 3 * 2)
    assert json.loads((run_dir / "schedule.json").read_text())["incomplete"] is None
    result = verification_of(analyse(run))
    assert result is not None
    # The gain is still the sweep's own cell's; the probes are checked, not weighed.
    assert [c.concurrency for c in result.cells] == [4]
    # Every probe, plain and prefill, is judged against both K of the boundary.
    assert [(c.scenario, c.concurrency, c.prefill) for c in result.boundary_cells] == [
        ("chat", 8, False), ("chat", 9, False), ("chat_prefill", 8, True),
        ("chat_prefill", 9, True)]
    assert "The prefill probe: `chat_prefill` at c=8, c=9" in (run_dir / "report.en.md").read_text()
    for cell in result.boundary_cells:  # shown with -s: the numbers the flag rests on
        print(cell.scenario, cell.concurrency, cell.batch, cell.schedule_k, cell.vs_low, cell.vs_high,
              cell.high_vs_low, cell.drafted_k, cell.collapse, cell.move)
    return run_dir, result


def test_the_k_flip_fault_is_flagged_as_a_collapse_at_the_boundary(tmp_path: Path, sweep: Path):
    run_dir, result = _verify(tmp_path, sweep, "--k-flip-fault")
    collapsed = {c.concurrency for c in result.collapses}
    assert collapsed & {8, 9}, result.boundary_cells
    (boundary,) = result.boundaries
    assert boundary.boundary == 8 and boundary.collapses
    # K = 5 is the faster fixed K at the boundary (model time: +8 % at c = 8, +11 % at c = 9),
    # so the boundary moves up, off the collapsed cells into K = 5's range.
    assert boundary.move == "up" and boundary.target is not None and boundary.target >= 9
    saved = json.loads((run_dir / "schedule.json").read_text())
    check = saved["boundary_check"]
    assert {c["concurrency"] for c in check["collapses_at"]} == collapsed
    assert not saved["deploy"] and "collapse_at_boundary" in saved["not_deployable_because"]
    report = (run_dir / "report.en.md").read_text()
    assert "**Collapse at boundary 8|9**" in report and "move boundary 8|9 up" in report
    assert "### 调度边界处" in (run_dir / "report.md").read_text()


def test_without_the_fault_no_collapse_is_flagged(tmp_path: Path, sweep: Path):
    run_dir, result = _verify(tmp_path, sweep)
    assert not result.collapses, result.boundary_cells
    assert json.loads((run_dir / "schedule.json").read_text())["boundary_check"]["collapses_at"] == []
    assert "Collapse at" not in (run_dir / "report.en.md").read_text()
    assert "### At the schedule's boundaries" in (run_dir / "report.en.md").read_text()
