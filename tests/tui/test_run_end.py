"""The end of a run on the run screen: its summary at the top, a user skip read as no failure,
and `t` offering the skipped cells again."""

from __future__ import annotations

import json
from pathlib import Path

from dspark_tui.model.events import CellSkipped, CellStarted, RunFinished
from dspark_tui.plans import resolve_plan
from dspark_tui.tui.screens.confirm import ConfirmScreen
from dspark_tui.tui.widgets.run_summary import RunSummary
from tests.tui.eventlog import T0, append_events, write_run
from tests.tui.helpers import make_app, replayed, run_screen_shown, until_shown, wait_until

LAST = resolve_plan("demo")[0].cells()[-1].key  # st=5 stress_standard c128


async def test_the_summary_heads_the_screen_once_the_run_has_ended(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", live=True, stop_after=9)
    async with replayed(tmp_path, run_dir, "cells 9/10", lang="en") as (pilot, app, screen):
        summary = screen.query_one(RunSummary)
        assert not summary.display or not summary.has_class("-shown")
        append_events(run_dir, [RunFinished(t=T0 + 500, status="completed", done=9, failed=0,
                                            total=10)])
        text = await until_shown(pilot, app, "How sure")
        # A simulated run: what the simulator favours, never "deploy" (report/headline.py).
        assert "the simulator favours" in text and "measured on the simulator" in text
        assert "run completed: 9/10 cells ok" in text
        assert not screen.query_one("#sparks").display  # the last cell's sparklines are gone


async def test_a_run_whose_only_gap_is_a_user_skip_reads_completed_with_the_skip(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", stop_after=9)
    append_events(run_dir, [
        CellStarted(t=T0 + 400, key=LAST, num_prompts=8, index=10, total=10),
        CellSkipped(t=T0 + 401, key=LAST, reason="skipped by user"),
        RunFinished(t=T0 + 401, status="completed", done=9, failed=0, total=10,
                    message="cells: 1 skipped"),
    ])
    async with replayed(tmp_path, run_dir, "[completed, 1 skipped]", lang="en") as (pilot, app, _):
        await until_shown(pilot, app, "run completed, 1 skipped: 9/10 cells ok")
        await pilot.press("t")  # ended: only a resume measures it again, and that asks first
        await until_shown(pilot, app, "Resume")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")


async def test_t_asks_before_it_runs_skipped_cells_again_in_a_running_run(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", live=True, stop_after=9)
    append_events(run_dir, [
        CellStarted(t=T0 + 400, key=LAST, num_prompts=8, index=10, total=10),
        CellSkipped(t=T0 + 401, key=LAST, reason="skipped by user"),
    ])
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_live(run_dir)
        screen = await run_screen_shown(pilot, "skipped 1")
        await pilot.press("t")
        await until_shown(pilot, app, "Run the 1 skipped cell(s) again in this run?")
        await pilot.press("y")
        control = run_dir / "control.jsonl"
        await wait_until(pilot, control.exists, what="the request written")
        assert [json.loads(line)["action"] for line in control.read_text().splitlines()] == ["retry"]
        assert app.screen is screen


async def test_a_finished_runs_header_drops_the_eta_and_keeps_its_counts_on_one_line(tmp_path: Path):
    """At 80 columns `ETA 0:00` of an ended run wrapped to a line of its own."""
    from dspark_tui.tui.widgets.run_header import RunHeader
    from tests.tui.helpers import widget_text

    run_dir = write_run(tmp_path / "results", fail_index=3)
    async with replayed(tmp_path, run_dir, "failed 1", lang="en") as (_, _, screen):
        header = widget_text(screen.query_one(RunHeader)).splitlines()
        assert "ETA" not in "\n".join(header)
        assert "cells 9/10  failed 1   elapsed" in header[0] and header[0].startswith(" demo  [")
