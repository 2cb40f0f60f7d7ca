"""History stays quick with hundreds of runs: the list reads run.json only, cells on open."""

from __future__ import annotations

import json
import time
from pathlib import Path

from dspark_tui.tui.screens.history import HistoryScreen
from tests.tui.helpers import make_app, table_text

RUNS = 500


def make_runs(root: Path, count: int) -> None:
    for i in range(count):
        run = root / f"run{i:04d}_20261101-{i:06d}"
        (run / "cells" / "st_3").mkdir(parents=True)
        for c in range(3):
            (run / "cells" / "st_3" / f"chat__c{c}.json").write_text("{}")
        (run / "run.json").write_text(json.dumps({
            "name": f"run{i:04d}", "model": "/m/DeepSeek", "status": "completed",
            "started_at": f"2026-11-01T{i // 60 % 24:02d}:{i % 60:02d}:00+00:00",
            "arms": [{"name": "st=3"}, {"name": "st=5"}], "total_cells": 6,
        }))


async def _list_once(app, started: float) -> float:
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        while len(screen.runs) < RUNS and time.perf_counter() - started < 5:
            await pilot.pause(0.02)
        elapsed = time.perf_counter() - started
        rows = table_text(app, "#history-table")
        assert len([r for r in rows if r[1].startswith("run")]) == RUNS
        await pilot.press("slash", *"run0499", "enter")
        await pilot.pause(0.1)
        assert [r[1] for r in table_text(app, "#history-table")] == ["run0499"]
    return elapsed


async def test_five_hundred_runs_list_within_a_second(tmp_path: Path):
    root = tmp_path / "results"
    make_runs(root, RUNS)
    # The machine is shared: the best of two cold starts is what the target is about.
    times = []
    for _ in range(2):
        times.append(await _list_once(make_app(tmp_path, results_root=root), time.perf_counter()))
        if times[-1] < 1.0:
            break
    print(f"history of {RUNS} runs listed in " + ", ".join(f"{t:.2f} s" for t in times))
    assert min(times) < 1.0, f"history of {RUNS} runs took {min(times):.2f} s at best"
