"""`dspark-tui run PLAN --verify SWEEP_DIR` end to end: a K sweep's directory with a stated
answer, then its verification rerun against the simulator — real processes, real HTTP, the
files on disk."""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.results import load_run
from tests.engine.helpers import headless_run, stated_sweep, write_sim_plan

# K = 0, 1, 5 at c = 1 (large K pays) and c = 64 (small K pays): both sides of the crossover.
CELLS = """[[scenarios]]
name = "chat"
input_len = 64
output_len = 64
concurrencies = [1, 64]
num_prompts = { per_concurrency = 2, min = 4, max = 128 }
"""
# The sweep's Total tok/s, stated rather than measured: a live sweep at --speed 50 measures the
# box's client and CPU overhead as much as the model, and on a loaded box chose K = 0 at every
# batch, so that --verify refused before any of its code ran. This test is about --verify.
TRUTH = {"st=0": {1: 100.0, 64: 2000.0},
         "st=1": {1: 180.0, 64: 2600.0},
         "st=5": {1: 220.0, 64: 1800.0}}
# What the sweep recommends from it (docs/decision.md): K = 5 anchored at batch 1, K = 1 at 64,
# the cut between them at floor(sqrt(1 * 64)) = 8, K = 1's range up to vLLM's default
# max-num-seqs; K = 1 the best fixed K (0.82 and 1 of each cell's top, K = 5's 1 and 0.69).
SCHEDULE, FIXED_K = [[1, 8, 5], [9, 256, 1]], 1


def test_verify_reruns_the_schedule_against_the_best_fixed_k(tmp_path: Path):
    plan = write_sim_plan(tmp_path, 0, arms=(0, 1, 5), speed=50, warmup=1, cells=CELLS)
    sweep = stated_sweep(tmp_path / "sweep", plan, TRUTH, "chat")
    saved = json.loads((sweep / "schedule.json").read_text())
    assert (saved["num_speculative_tokens_per_batch_size"], saved["single_best_k"]["k"],
            saved["keyed_on"]) == (SCHEDULE, FIXED_K, "running_batch")

    run_dir = headless_run(plan, tmp_path / "verifications", "--verify", str(sweep), "--lang", "en",
                           timeout=150)
    run = load_run(run_dir)
    assert run.manifest.status == "completed" and not run.problems
    record = run.manifest.verification
    assert record is not None and record.sweep == str(sweep.resolve())
    assert (record.schedule, record.fixed_k, record.keyed_on) == (SCHEDULE, FIXED_K, "running_batch")
    # The schedule, the best fixed K, then the K on each side of a boundary; the grid plus the
    # boundary's probes (docs/decision.md, "At the schedule's boundaries"), written out, not
    # derived by engine/run/verify.py's functions: one boundary, between its last batch 8 and
    # 9, whose probes are 8 and 9 (no range lies between two boundaries: no midpoint).
    assert run.manifest.arm_names() == ["schedule", "K=1", "K=5"]
    assert record.probes == [8, 9] and record.probe_scenario == "chat"
    # The prefill probe (chat_prefill, long prompts and short answers) at the boundary's two
    # sides, for every arm: prompts of 16 x 64 tokens, outputs of 8 - 1.
    assert (record.prefill_scenario, record.prefill_probes, record.prefill_input_len,
            record.prefill_output_len) == ("chat_prefill", [8, 9], 1024, 7)
    # The schedule and the best fixed K on every cell, the boundary's other K on its probes.
    assert {(c.arm, c.scenario, c.concurrency) for c in run.ok_cells()} == {
        *((arm, "chat", c) for arm in ("schedule", "K=1") for c in (1, 8, 9, 64)),
        *(("K=5", "chat", c) for c in (8, 9)),
        *((arm, "chat_prefill", c) for arm in ("schedule", "K=1", "K=5") for c in (8, 9))}
    # The schedule arm's server took the sweep's schedule (the simulator logs it as vLLM does);
    # the fixed arm's ran one K.
    schedule_log = next((run_dir / "logs").glob("server-schedule-*.log")).read_text()
    assert f"num_speculative_tokens_per_batch_size={SCHEDULE}" in schedule_log
    fixed_log = next((run_dir / "logs").glob(f"server-K_{FIXED_K}-*.log")).read_text()
    assert "Dynamic speculative decoding" not in fixed_log
    assert "## Verification of the K schedule" in (run_dir / "report.en.md").read_text()
    assert "## K 调度验证" in (run_dir / "report.md").read_text()
