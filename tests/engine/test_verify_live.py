"""`dspark-tui run PLAN --verify SWEEP_DIR` end to end: a tiny K sweep against the simulator,
then its verification rerun — real processes, real HTTP, the files on disk."""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.engine.run.verify import (
    boundary_probes,
    prefill_probes,
    prefill_probes_of,
    probes_of,
)
from dspark_tui.results import load_run
from tests.cli import run_cli
from tests.engine.helpers import write_sim_plan

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
    done = run_cli("run", str(plan), "--headless", "--results", str(sweeps), timeout=150)
    assert done.returncode == 0, done.stdout + done.stderr
    (sweep,) = list(sweeps.iterdir())
    saved = json.loads((sweep / "schedule.json").read_text())
    fixed_k = saved["single_best_k"]["k"]

    done = run_cli("run", str(plan), "--verify", str(sweep), "--headless", "--results",
                   str(verifications), "--lang", "en", timeout=150)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = list(verifications.iterdir())
    run = load_run(run_dir)
    assert run.manifest.status == "completed" and not run.problems
    record = run.manifest.verification
    assert record is not None and record.sweep == str(sweep.resolve())
    assert record.schedule == saved["num_speculative_tokens_per_batch_size"]
    # The schedule, the best fixed K, then the K on each side of a boundary; the grid plus the
    # boundaries' probes (docs/decision.md, "At the schedule's boundaries").
    sides = [f"K={k}" for k in sorted({k for _, _, k in record.schedule}) if k != fixed_k]
    arms = ["schedule", f"K={fixed_k}", *(sides if len(record.schedule) > 1 else [])]
    assert run.manifest.arm_names() == arms
    assert record.probes == [c for c in boundary_probes(record.schedule) if c not in (1, 64)]
    # The schedule and the best fixed K on every cell, each other K on its boundaries' probes.
    # The prefill probe (chat_prefill) likewise, at each boundary's two sides.
    assert {(c.arm, c.scenario, c.concurrency) for c in run.ok_cells()} == {
        *((arm, "chat", c) for arm in arms[:2] for c in (1, 64, *record.probes)),
        *((arm, "chat", c) for arm in arms[2:] for c in probes_of(record.schedule, int(arm[2:]))),
        *((arm, "chat_prefill", c) for arm in arms[:2] for c in record.prefill_probes),
        *((arm, "chat_prefill", c) for arm in arms[2:]
          for c in prefill_probes_of(record.schedule, int(arm[2:])))}
    assert record.prefill_probes == prefill_probes(record.schedule)
    # The schedule arm's server took the sweep's schedule (the simulator logs it as vLLM does);
    # the fixed arm's ran one K.
    schedule_log = next((run_dir / "logs").glob("server-schedule-*.log")).read_text()
    assert f"num_speculative_tokens_per_batch_size={record.schedule}" in schedule_log
    fixed_log = next((run_dir / "logs").glob(f"server-K_{fixed_k}-*.log")).read_text()
    assert "Dynamic speculative decoding" not in fixed_log
    assert "## Verification of the K schedule" in (run_dir / "report.en.md").read_text()
    assert "## K 调度验证" in (run_dir / "report.md").read_text()
