"""A theme switch recolours what is already drawn: read back from the widgets, not the theme."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import DataTable

from dspark_tui.tui.app import AttachTarget, DsparkApp
from dspark_tui.tui.screens.history import HistoryScreen
from dspark_tui.tui.widgets.ab_table import ABTable
from dspark_tui.tui.widgets.plan_tree import PlanTree
from dspark_tui.tui.widgets.run_header import RunHeader
from tests.tui.eventlog import write_run
from tests.tui.helpers import (
    colours_of,
    make_app,
    run_screen_shown,
    screen_text,
    settled,
    theme_colour,
    wait_until,
)

SIZE = (120, 40)


async def switch_theme(pilot: Pilot[object], app: DsparkApp, name: str) -> None:
    """Set the theme and wait until every subscriber to the switch (ours first) has run."""
    switched = asyncio.Event()
    app.theme_changed_signal.subscribe(app.screen, lambda _theme: switched.set())
    app.theme = name
    await asyncio.wait_for(switched.wait(), 5)
    await pilot.pause()  # and until the redraw it asked for is done


async def test_a_theme_switch_recolours_tree_table_header_and_history(tmp_path: Path):
    root = tmp_path / "results"
    run_dir = write_run(root, fail_index=2, started_at="2026-11-28T10:00:00+00:00")
    write_run(root, stop_after=3, finish=False, started_at="2026-11-29T10:00:00+00:00")
    app = make_app(tmp_path, results_root=root, start=AttachTarget(run_dir))
    async with app.run_test(size=SIZE) as pilot:
        screen = await run_screen_shown(pilot, "[completed]")
        await settled(pilot)
        tree, table = screen.query_one(PlanTree), screen.query_one(ABTable)
        header = screen.query_one(RunHeader)
        for theme in ("dspark-light", "dspark-amber"):
            await switch_theme(pilot, app, theme)
            success, error = theme_colour(app, "success"), theme_colour(app, "error")
            assert colours_of(tree, "✓") == {success}, theme
            assert colours_of(tree, "✗") == {error}, theme
            assert colours_of(table, "st=3", line_with="13.64%") == {success}, theme  # the winner
            assert colours_of(table, "failed", line_with="decode_heavy") == {error}, theme
            assert colours_of(header, "[completed]") == {success}, theme
            assert colours_of(header, "failed 1") == {error}, theme
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen)
                         and app.screen.query_one(DataTable).row_count >= 2, what="History listed")
        history = app.screen.query_one(DataTable)
        assert "[completed]" not in screen_text(app)
        for theme in ("dspark-light", "dspark-dark"):
            await switch_theme(pilot, app, theme)
            # the completed run's row has the cursor (its colours); the interrupted one does not
            assert colours_of(history, "interrupted") == {theme_colour(app, "warning")}, theme


async def test_a_sweeps_best_arm_is_recoloured_and_its_verdict_word_is_not(tmp_path: Path):
    """N arms: `K=0 wins` in one cell; only the arm named by the verdict takes $success."""
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(tmp_path / "results", grid={"chat": [1, 256]})
    app = make_app(tmp_path, start=AttachTarget(run_dir))
    async with app.run_test(size=SIZE) as pilot:
        screen = await run_screen_shown(pilot, "[completed]")
        await settled(pilot)
        table = screen.query_one(ABTable)
        for theme in ("dspark-light", "dspark-amber"):
            await switch_theme(pilot, app, theme)
            success = theme_colour(app, "success")
            assert colours_of(table, "K=0", line_with="K=0 wins") == {success}, theme
            assert success not in colours_of(table, "wins", line_with="K=0 wins"), theme
