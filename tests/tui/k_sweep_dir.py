"""A finished K sweep as a real run directory: run.json, one cell file a measurement and an
event log, built from the report tests' in-memory sweep (tests/report/k_sweep_builders.py).
Fixed times and seed, so snapshots of it never flicker."""

from __future__ import annotations

import os
from pathlib import Path

from dspark_tui.model.events import CellFinished, Event, RunFinished, RunStarted
from dspark_tui.results import RunStore
from tests.report.k_sweep_builders import k_sweep_run

T0 = 1_780_000_000.0
KS = list(range(8))
GRID = {"chat": [1, 4, 16, 64, 256], "rag": [1, 8, 32, 96]}


def write_k_sweep(root: Path, *, rounds: int = 2, ks: list[int] | None = None,
                  grid: dict[str, list[int]] | None = None) -> Path:
    """`root/k_sweep_20261201-050000`, completed, K = 0..7 over GRID in `rounds` rounds."""
    folder = root / "k_sweep_20261201-050000"
    ks = KS if ks is None else ks
    run = k_sweep_run(folder, ks, grid or GRID, rounds=rounds,
                      command_extra='"--max-num-seqs", "256",')
    store = RunStore(folder)
    manifest = run.manifest
    manifest.started_at = "2026-12-01T05:00:00+00:00"
    manifest.host = "testbox"
    arms = manifest.arm_names()
    events: list[Event] = [RunStarted(t=T0, run_dir=str(folder), name=manifest.name, arms=arms,
                                      total_cells=len(run.measurements))]
    for index, measurement in enumerate(run.measurements):
        store.save_cell(measurement)
        events.append(CellFinished(t=T0 + index + 1, result=measurement))
    done = len(run.measurements)
    events.append(RunFinished(t=T0 + done + 1, status="completed", done=done, failed=0, total=done))
    for event in events:
        store.append_event(event)
    manifest.status = "completed"
    manifest.cells_ok = len(run.cells)
    store.write_manifest(manifest)
    old = T0 - 3600  # nobody writes it any more
    os.utime(store.events_path, (old, old))
    return folder
