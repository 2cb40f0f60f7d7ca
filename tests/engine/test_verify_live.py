"""`dspark-tui run PLAN --verify SWEEP_DIR` end to end: a tiny K sweep against the simulator,
then its verification rerun — real processes, real HTTP, the files on disk."""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.results import load_run
from tests.engine.helpers import headless_run, write_sim_plan

# K = 0, 1, 5 at c = 1 (large K pays) and c = 64 (small K pays): both sides of the crossover.
CELLS = """[[scenarios]]
name = "chat"
input_len = 64
output_len = 64
concurrencies = [1, 64]
num_prompts = { per_concurrency = 2, min = 4, max = 128 }
"""


def test_verify_reruns_the_schedule_against_the_best_fixed_k(tmp_path: Path):
    plan = write_sim_plan(tmp_path, 0, arms=(0, 1, 5), speed=50, warmup=1, cells=CELLS)
    sweeps, verifications = tmp_path / "sweeps", tmp_path / "verifications"
    sweep = headless_run(plan, sweeps, timeout=150)
    saved = json.loads((sweep / "schedule.json").read_text())
    fixed_k = saved["single_best_k"]["k"]

    run_dir = headless_run(plan, verifications, "--verify", str(sweep), "--lang", "en", timeout=150)
    run = load_run(run_dir)
    assert run.manifest.status == "completed" and not run.problems
    record = run.manifest.verification
    assert record is not None and record.sweep == str(sweep.resolve())
    assert record.schedule == saved["num_speculative_tokens_per_batch_size"]
    # The schedule, the best fixed K, then the K on each side of a boundary; the grid plus the
    # boundaries' probes (docs/decision.md, "At the schedule's boundaries"). Expected by the
    # rule as the docs state it, not by engine/run/verify.py's functions: two concurrencies
    # make at most two ranges, so at most one boundary, between its last batch h and h + 1,
    # whose probes are h and h + 1 (no range lies between two boundaries: no midpoint).
    assert len(record.schedule) in (1, 2), record.schedule
    if len(record.schedule) == 1:
        arms, probes = ["schedule", f"K={fixed_k}"], []
    else:
        (_, h, k_low), (_, _, k_high) = sorted(record.schedule)
        probes = [h, h + 1]
        arms = ["schedule", f"K={fixed_k}",
                *(f"K={k}" for k in sorted({k_low, k_high}) if k != fixed_k)]
    assert run.manifest.arm_names() == arms
    assert record.probes == [c for c in probes if c not in (1, 64)]
    # The prefill probe (chat_prefill, long prompts and short answers) at the boundary's two
    # sides, h and h + 1, for every arm.
    assert record.prefill_probes == probes
    # The schedule and the best fixed K on every cell, each other K on the boundary's probes.
    assert {(c.arm, c.scenario, c.concurrency) for c in run.ok_cells()} == {
        *((arm, "chat", c) for arm in arms[:2] for c in {1, 64, *probes}),
        *((arm, "chat", c) for arm in arms[2:] for c in probes),
        *((arm, "chat_prefill", c) for arm in arms for c in probes)}
    # The schedule arm's server took the sweep's schedule (the simulator logs it as vLLM does);
    # the fixed arm's ran one K.
    schedule_log = next((run_dir / "logs").glob("server-schedule-*.log")).read_text()
    assert f"num_speculative_tokens_per_batch_size={record.schedule}" in schedule_log
    fixed_log = next((run_dir / "logs").glob(f"server-K_{fixed_k}-*.log")).read_text()
    assert "Dynamic speculative decoding" not in fixed_log
    assert "## Verification of the K schedule" in (run_dir / "report.en.md").read_text()
    assert "## K 调度验证" in (run_dir / "report.md").read_text()
