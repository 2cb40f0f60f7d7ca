"""The headless printer folds every event through RunState and prints only what the state says:
positions, ETA and the final tally agree with what the TUI shows for the same events."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from dspark_tui.engine.start.headless import _seed_from_run
from dspark_tui.engine.start.printer import HeadlessPrinter, summary_lines
from dspark_tui.model import CellKey, CellResult, ClientMetrics
from dspark_tui.model.events import (
    CellFailed,
    CellFinished,
    CellSkipped,
    CellStarted,
    Event,
    RoundPlanned,
    RunControl,
    RunFinished,
    RunStarted,
)
from dspark_tui.model.run_state import RunState
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore
from tests.tui.eventlog import T0, write_run

RECORDED = Path(__file__).resolve().parent.parent / "tui" / "data" / "demo_run"
A = CellKey(arm="st=3", scenario="chat", concurrency=1)
B = CellKey(arm="st=3", scenario="chat", concurrency=8)


def _printer() -> tuple[HeadlessPrinter, io.StringIO]:
    out = io.StringIO()
    return HeadlessPrinter(Console(file=out, width=200, highlight=False)), out


def _ok(key: CellKey, tok_s: float, round_: int = 1, repeat: int = 1) -> CellResult:
    return CellResult(arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
                      round=round_, repeat=repeat,
                      metrics=ClientMetrics(total_throughput=tok_s, completed=8))


def failed_retried_finished() -> list[Event]:
    """A ok; B fails; the user retries; B runs again and finishes: 2 of 2 done, none failed."""
    return [
        RunStarted(t=T0, run_dir="/runs/x", name="x", arms=["st=3"], total_cells=2),
        CellStarted(t=T0, key=A, num_prompts=8, index=1, total=2),
        CellFinished(t=T0 + 10, result=_ok(A, 1000.0)),
        CellStarted(t=T0 + 10, key=B, num_prompts=8, index=2, total=2),
        CellFailed(t=T0 + 20, key=B, reason="bench client exited 1"),
        RunControl(t=T0 + 21, action="retry", message="1 failed cell(s) queued again"),
        CellStarted(t=T0 + 21, key=B, num_prompts=8, index=2, total=2),
        CellFinished(t=T0 + 31, result=_ok(B, 2000.0)),
        RunFinished(t=T0 + 31, status="completed", done=2, failed=0, total=2),
    ]


def test_a_failed_cell_retried_and_finished_counts_once():
    printer, out = _printer()
    for event in failed_retried_finished():
        printer(event)
    text = out.getvalue()
    assert "[3/2]" not in text
    oks = [line for line in text.splitlines() if line.startswith("ok")]
    assert [line.split()[1] for line in oks] == ["[1/2]", "[2/2]"]
    assert "FAIL [2/2] st=3/chat/c8" in text
    assert "ETA 0m10s" in oks[0]  # one cell left at the ten seconds the first one took
    assert "run completed: 2/2 cells ok, 0 failed" in text
    state = printer.state
    assert (state.done, state.failed, state.total) == (2, 0, 2)
    assert summary_lines(Path("/runs/x"), state, "completed") == ["run directory: /runs/x"]
    # The screen folds the same events through the same reducer: the same numbers.
    screen = RunState()
    screen.apply_all(failed_retried_finished())
    assert (screen.done, screen.failed, screen.total) == (2, 0, 2)


def test_the_printer_and_a_screen_show_one_eta():
    events = failed_retried_finished()[:5]  # B has just failed: A took 10 s, B 10 s
    printer, out = _printer()
    screen = RunState()
    for event in events[:3]:
        printer(event)
        screen.apply(event)
    assert printer.state.eta(T0 + 10) == screen.eta(T0 + 10) == 10.0
    assert out.getvalue().count("ETA 0m10s") == 1


def test_a_failure_still_standing_is_in_the_summary():
    printer, _ = _printer()
    for event in failed_retried_finished()[:5]:
        printer(event)
    printer(RunFinished(t=T0 + 30, status="failed", done=1, failed=1, total=2))
    lines = summary_lines(Path("/runs/x"), printer.state, "failed")
    assert "failed: st=3/chat/c8: bench client exited 1" in lines
    assert printer.state.failed == 1


def test_rounds_and_repeats_are_named_and_counted_as_cell_runs():
    printer, out = _printer()
    arms = ["st=3", "st=5"]
    printer(RunStarted(t=T0, run_dir="/runs/y", name="y", arms=arms, total_cells=2))
    printer(RoundPlanned(t=T0, round=1, arms=arms, cells=[("chat", 1)], repeats=2))
    assert printer.state.total == 4
    t = T0
    for arm in arms:
        key = CellKey(arm=arm, scenario="chat", concurrency=1)
        for repeat in (1, 2):
            printer(CellStarted(t=t, key=key, num_prompts=8, index=1, total=4, repeat=repeat))
            t += 5
            printer(CellFinished(t=t, result=_ok(key, 1000.0 + repeat, repeat=repeat)))
    printer(RunFinished(t=t, status="completed", done=2, failed=0, total=2))
    text = out.getvalue()
    assert "round 1 (planned): 1 cells x 2 arms x 2 repeats" in text
    assert "ok   [4/4] st=5/chat/c1 r1 p2" in text
    assert "run completed: 4/4 cell runs ok (2/2 cells complete), 0 failed" in text
    assert "Total tok/s by arm" in text


def test_a_resumed_printer_counts_on_from_the_saved_run(tmp_path: Path):
    run_dir = write_run(tmp_path, stop_after=4, finish=False)  # 4 of the demo's 10 cells
    store = RunStore(run_dir)
    printer, out = _printer()
    _seed_from_run(printer, store)
    assert out.getvalue() == ""  # the past is folded, not printed again
    assert (printer.state.done, printer.state.total) == (4, 10)
    fifth = resolve_plan("demo")[0].cells()[4].key
    assert fifth not in printer.state.cells
    t = T0 + 1000
    printer(RunStarted(t=t, run_dir=str(run_dir), name="demo", arms=["st=3", "st=5"],
                       total_cells=10, resumed_cells=4))
    printer(CellStarted(t=t, key=fifth, num_prompts=8, index=5, total=10))
    printer(CellFinished(t=t + 4, result=_ok(fifth, 5000.0)))
    assert "4 already done" in out.getvalue()
    assert f"ok   [ 5/10] {fifth.id}" in out.getvalue()


def _attach(run_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DSPARK_CONFIG_DIR": str(run_dir.parent / "no-config")}
    return subprocess.run([sys.executable, "-m", "dspark_tui", "attach", str(run_dir), "--headless"],
                          capture_output=True, text=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL, check=False)


def test_attach_replays_a_finished_run_with_the_reducers_numbers(tmp_path: Path):
    run_dir = tmp_path / "demo_run"
    shutil.copytree(RECORDED, run_dir)
    done = _attach(run_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   [10/10]" in done.stdout
    assert "run completed: 10/10 cells ok, 0 failed" in done.stdout
    assert " r1 p1" not in done.stdout  # a run of single measurements reads as it always did


def test_attach_to_a_run_whose_runner_died_says_so_and_exits_1(tmp_path: Path):
    run_dir = write_run(tmp_path, stop_after=3, finish=False)
    done = _attach(run_dir)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ok   [ 3/10]" in done.stdout
    assert f"the runner of {run_dir} is not alive; resume with" in done.stdout


def _sweep_printer(tmp_path: Path, ks: list[int], grid: dict[str, list[int]],
                   width: int) -> tuple[HeadlessPrinter, io.StringIO]:
    """A printer seeded with a K sweep's measurements (two rounds), writing `width` columns."""
    from tests.report.k_sweep_builders import k_sweep_run

    run = k_sweep_run(tmp_path, ks, grid, rounds=2)
    out = io.StringIO()
    printer = HeadlessPrinter(Console(file=out, width=width, highlight=False), baseline="K=0")
    printer.seed([RunStarted(t=T0, run_dir=str(tmp_path), name="k_sweep",
                             arms=run.manifest.arm_names(), total_cells=len(run.measurements))],
                 run.measurements)
    return printer, out


def test_a_sweeps_comparison_leads_with_the_best_arm_and_its_margin_over_k0(tmp_path: Path):
    """More than two arms: the summary columns first (as in the TUI's table), then the arms."""
    printer, out = _sweep_printer(tmp_path, [0, 1, 3, 5], {"chat": [1, 256]}, width=200)
    printer.print_comparison()
    lines = out.getvalue().splitlines()

    def cells(line: str) -> list[str]:
        return [cell.strip() for cell in re.split("[│┃]", line)][1:-1]

    header = next(cells(line) for line in lines if "scenario" in line)
    assert header == ["scenario", "c", "best", "verdict", "margin", "interval", "vs K=0",
                      "K=0", "K=1", "K=3", "K=5"]
    rows = {tuple(cells(line)[:2]): cells(line) for line in lines if line.startswith("│")}
    assert rows[("chat", "1")][2] == "K=5" and rows[("chat", "1")][6].startswith("+")
    assert rows[("chat", "256")][2:4] == ["K=0", "wins"] and rows[("chat", "256")][6] == ""


def test_at_80_columns_a_sweeps_comparison_keeps_what_decides_whole(tmp_path: Path):
    """Eight arms do not fit 80 columns: rich cut every cell to "ch…", "un…", "+3…" (a headless
    run over SSH). The arms' figures go; the columns that decide stay whole, and say where the
    figures are."""
    printer, out = _sweep_printer(tmp_path, list(range(8)), {"chat_short": [1, 128]}, width=80)
    printer.print_comparison()
    text = out.getvalue()
    # No cell cut short (a cut one ends in "…"; an interval has "…" between its two ends).
    assert not re.search(r"…\s*[│┃]", text) and max(map(len, text.splitlines())) <= 80, text
    header = next(line for line in text.splitlines() if "scenario" in line)
    assert [cell.strip() for cell in re.split("[│┃]", header)][1:-1] == [
        "scenario", "c", "best", "verdict", "margin", "interval", "vs K=0"]
    assert "each arm's Total tok/s: results.csv, the report, a wider terminal" in text
    wide = io.StringIO()
    printer.console = Console(file=wide, width=200, highlight=False)
    printer.print_comparison()
    assert "K=7" in next(line for line in wide.getvalue().splitlines() if "scenario" in line)


def test_a_run_whose_only_gap_is_a_user_skip_ends_completed_with_the_skip():
    printer, out = _printer()
    for event in [
        RunStarted(t=T0, run_dir="/runs/x", name="x", arms=["st=3"], total_cells=2),
        CellStarted(t=T0, key=A, num_prompts=8, index=1, total=2),
        CellSkipped(t=T0 + 2, key=A, reason="skipped by user"),
        CellStarted(t=T0 + 2, key=B, num_prompts=8, index=2, total=2),
        CellFinished(t=T0 + 12, result=_ok(B, 2000.0)),
        RunFinished(t=T0 + 12, status="completed", done=1, failed=0, total=2,
                    message="cells: 1 skipped"),
    ]:
        printer(event)
    last = out.getvalue().splitlines()[-1]
    assert last == "run completed, 1 skipped: 1/2 cells ok, 0 failed"
