"""The chart view: a finished run from its directory, and a live one that redraws when a
measurement lands (not on progress)."""

from __future__ import annotations

from pathlib import Path

from dspark_tui.model import CellResult, ClientMetrics
from dspark_tui.model.events import CellFinished, CellProgress, CellStarted
from dspark_tui.plans import resolve_plan
from dspark_tui.results import load_run
from dspark_tui.tui.screens.charts import ChartScreen
from dspark_tui.tui.widgets.run_chart import RunChart
from tests.tui.eventlog import T0, append_events, write_run
from tests.tui.helpers import make_app, run_screen_shown, until_shown, wait_until


async def test_a_finished_run_directory_charts_each_scenario_and_metric(tmp_path: Path):
    run_dir = write_run(tmp_path / "results")
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(ChartScreen(run_dir))
        text = await until_shown(pilot, app, "Total tok/s by concurrency: chat_short")
        assert "st=3" in text and "st=5" in text and "chat_short (1/3)" in text
        await pilot.press("right")
        await until_shown(pilot, app, "decode_heavy (2/3)")
        await pilot.press("m")
        await until_shown(pilot, app, "TPOT mean (ms) by concurrency: decode_heavy")
        await pilot.press("left", "left")
        await until_shown(pilot, app, "stress_standard (3/3)")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, ChartScreen))


async def test_a_loaded_run_is_charted_without_reading_again(tmp_path: Path):
    run = load_run(write_run(tmp_path / "results"))
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(ChartScreen(run))
        await until_shown(pilot, app, "Total tok/s by concurrency: chat_short")


async def test_the_live_chart_redraws_when_a_measurement_lands_not_on_progress(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", live=True, stop_after=1)  # st=3 chat_short c1 done
    app = make_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_replay(run_dir)
        await run_screen_shown(pilot, "cells 1/10")
        await pilot.press("c")
        text = await until_shown(pilot, app, "Total tok/s by concurrency: chat_short")
        assert "st=5" not in text
        chart = app.screen.query_one(RunChart)
        drawn = chart._shown
        key = resolve_plan("demo")[0].cells()[1].key  # st=3 chat_short c16
        append_events(run_dir, [
            CellStarted(t=T0 + 100, key=key, num_prompts=8, index=2, total=10),
            CellProgress(t=T0 + 101, key=key, completed=4, total=8, output_tok_s=100.0),
        ])
        screen = app.screen
        assert isinstance(screen, ChartScreen)
        await wait_until(pilot, lambda: screen.source.current is not None  # type: ignore[union-attr]
                         and screen.source.current.completed == 4, what="progress folded")
        await pilot.pause()
        assert chart._shown is drawn  # a progress tick draws nothing
        append_events(run_dir, [CellFinished(t=T0 + 104, result=CellResult(
            arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
            metrics=ClientMetrics(total_throughput=50_000.0, completed=8)))])
        await until_shown(pilot, app, "50000.0")  # the new top of the y axis
        assert chart._shown is not drawn
