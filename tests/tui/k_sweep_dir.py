"""A finished K sweep as a real run directory: run.json, one cell file a measurement and an
event log, built from the report tests' in-memory sweep (tests/report/k_sweep_builders.py).
Fixed times and seed, so snapshots of it never flicker.

Built once per process and arguments (its ~300 fsynced writes cost 0.2 s of CPU and, on a busy
disk, seconds of wall), then copied: the copy is the same bytes, its own path in RunStarted."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from dspark_tui.model.events import CellFinished, Event, RunFinished, RunStarted
from dspark_tui.results import RunStore
from tests.report.k_sweep_builders import k_sweep_run

T0 = 1_780_000_000.0
KS = list(range(8))
GRID = {"chat": [1, 4, 16, 64, 256], "rag": [1, 8, 32, 96]}


NAME = "k_sweep_20261201-050000"
_built: dict[str, Path] = {}


def write_k_sweep(root: Path, *, rounds: int = 2, ks: list[int] | None = None,
                  grid: dict[str, list[int]] | None = None) -> Path:
    """`root/k_sweep_20261201-050000`, completed, K = 0..7 over GRID in `rounds` rounds."""
    ks = KS if ks is None else ks
    grid = grid or GRID
    key = repr((rounds, ks, sorted(grid.items())))
    if key not in _built:
        cache = Path(tempfile.mkdtemp(prefix="k_sweep_cache_"))
        atexit.register(shutil.rmtree, cache, True)
        _built[key] = _build(cache / f"{len(_built)}", rounds, ks, grid)
    built = _built[key]
    folder = root / NAME
    shutil.copytree(built, folder, copy_function=shutil.copy)  # fresh times, as if just written
    events = folder / "events.jsonl"  # the one file that names the folder
    events.write_text(events.read_text().replace(str(built), str(folder)))
    old = T0 - 3600  # nobody writes it any more
    os.utime(events, (old, old))
    return folder


def _build(root: Path, rounds: int, ks: list[int], grid: dict[str, list[int]]) -> Path:
    folder = root / NAME
    run = k_sweep_run(folder, ks, grid, rounds=rounds,
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
