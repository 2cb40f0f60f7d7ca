"""History stays quick with hundreds of runs: the list reads run.json only, cells on open.

The timing runs in a fresh interpreter, as a user's `dspark-tui` does: measured inside the test
process, it carries the garbage collector's cost of everything the suite built before it
(0.7 s alone, 1.5 s at the end of the suite on the same machine).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timing  # runs alone: its 1 s limit is wall time
RUNS = 500

TIMING = """
import asyncio, json, sys, time
from pathlib import Path
from dspark_tui.tui.screens.history import HistoryScreen
from tests.tui.helpers import make_app, table_text, wait_until
started = time.perf_counter()  # imports are the first-paint budget's (bench/tui_overhead.py)

async def main():
    tmp, root = Path(sys.argv[1]), Path(sys.argv[2])
    app = make_app(tmp, results_root=root)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        while len(screen.runs) < int(sys.argv[3]) and time.perf_counter() - started < 10:
            await asyncio.sleep(0.02)  # polled here: wait_until's settling would be timed too
        elapsed = time.perf_counter() - started
        names = [r[6] for r in table_text(app, "#history-table")]
        await pilot.press("slash", *"run0499", "enter")
        await wait_until(pilot, lambda: len(table_text(app, "#history-table")) == 1, timeout=10)
        filtered = [r[6] for r in table_text(app, "#history-table")]
    print(json.dumps({"elapsed": elapsed, "names": names, "filtered": filtered}))

asyncio.run(main())
"""


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


def _list_once(tmp_path: Path, root: Path) -> dict:
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", TIMING, str(tmp_path), str(root), str(RUNS)],
                          capture_output=True, text=True, timeout=60, cwd=repo, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_five_hundred_runs_list_within_a_second(tmp_path: Path):
    root = tmp_path / "results"
    make_runs(root, RUNS)
    # From the app's start to the filled list; best of two on a shared box.
    results = [_list_once(tmp_path, root)]
    if results[0]["elapsed"] >= 1.0:
        results.append(_list_once(tmp_path, root))
    best = min(results, key=lambda r: r["elapsed"])
    print(f"history of {RUNS} runs listed in " + ", ".join(f"{r['elapsed']:.2f} s" for r in results))
    assert len([n for n in best["names"] if n.startswith("run")]) == RUNS
    assert best["filtered"] == ["run0499"]
    assert best["elapsed"] < 1.0, f"history of {RUNS} runs took {best['elapsed']:.2f} s at best"
