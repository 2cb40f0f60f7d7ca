"""The chart view: a finished run from its directory, and a live one that redraws when a
measurement lands (not on progress)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from textual.pilot import Pilot

from dspark_tui.model import CellResult, ClientMetrics
from dspark_tui.model.events import CellFinished, CellProgress, CellStarted
from dspark_tui.plans import resolve_plan
from dspark_tui.results import RunStore, load_run
from dspark_tui.results.store import LoadedRun
from dspark_tui.tui.app import DsparkApp
from dspark_tui.tui.screens.charts import ChartScreen
from dspark_tui.tui.widgets.run_chart import RunChart
from tests.tui.eventlog import T0, append_events, write_run
from tests.tui.helpers import make_app, replayed, until_shown, wait_until


@contextlib.asynccontextmanager
async def charted(tmp_path: Path, source: Path | LoadedRun, *keys: str, shown: str,
                  size: tuple[int, int] = (80, 24),
                  **app_kwargs: object) -> AsyncIterator[tuple[Pilot[object], DsparkApp, str]]:
    """The chart screen of `source` on the real app (make_app's `app_kwargs`) `size` big, `keys`
    pressed (m: the next metric, a: the next arm) until `shown` is on it: the pilot, the app and
    the screen's text."""
    app = make_app(tmp_path, **app_kwargs)
    async with app.run_test(size=size) as pilot:
        await app.push_screen(ChartScreen(source))
        if keys:
            await pilot.press(*keys)
        yield pilot, app, await until_shown(pilot, app, shown)



async def test_a_finished_run_directory_charts_each_scenario_and_metric(tmp_path: Path):
    run_dir = write_run(tmp_path / "results")
    async with charted(tmp_path, run_dir,
                       shown="Total tok/s by concurrency: chat_short") as (pilot, app, text):
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
    async with replayed(tmp_path, run_dir, "cells 1/10") as (pilot, app, _):
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


def _report_data(run_dir: Path):
    from dspark_tui.analysis.analysis import analyse
    from dspark_tui.report.charts import acceptance_chart, margin_chart

    analysis = analyse(load_run(run_dir))
    return margin_chart(analysis), acceptance_chart(analysis)


async def test_m_reaches_the_reports_margin_with_its_interval_and_the_acceptance_by_position(
        tmp_path: Path):
    """A two-arm run measured in three rounds: the margin of K=5 over K=3 per concurrency with
    the interval's low and high and the tie band, then each arm's acceptance by draft position —
    the numbers of the report's own chart data."""
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(tmp_path / "results", ks=[3, 5], rounds=3)
    margin, acceptance = _report_data(run_dir)
    assert margin is not None and acceptance is not None
    async with charted(tmp_path, run_dir, shown="Total tok/s by concurrency: chat") as (pilot, app, _):
        await pilot.press("m", "m", "m")
        text = await until_shown(pilot, app, "Margin over K=3, with its 95.0% interval: chat")
        assert "tie ±2%" in text and "K=5 over K=3" in text
        view = app.screen.query_one(RunChart)._shown
        series = margin.panels[0].series[0]
        assert [(line.y, line.band) for line in view.lines] == [
            (series.y, False), (series.low, True), (series.high, True)]
        assert view.flat == (-2.0, 2.0) and view.log2_x
        await pilot.press("right")
        await until_shown(pilot, app, "with its 95.0% interval: rag")
        await pilot.press("m")
        text = await until_shown(pilot, app, "Acceptance by draft position")
        view = app.screen.query_one(RunChart)._shown
        assert [line.label for line in view.lines] == ["K=3", "K=5"]  # the means, no spread
        assert [line.y for line in view.lines] == [
            s.y for s in acceptance.panels[0].series]
        assert not view.log2_x and "draft position" in text
        await pilot.press("m")
        await until_shown(pilot, app, "Total tok/s by concurrency: rag")


async def test_the_live_margin_is_read_again_when_a_measurement_lands(tmp_path: Path):
    run_dir = write_run(tmp_path / "results", live=True, stop_after=6)  # chat_short c1: both arms
    async with replayed(tmp_path, run_dir, "cells 6/10") as (pilot, app, _):
        await pilot.press("c")
        await until_shown(pilot, app, "Total tok/s by concurrency: chat_short")
        await pilot.press("m", "m", "m")
        await until_shown(pilot, app, "Margin over st=3 (one measurement a cell: no interval)")
        chart = app.screen.query_one(RunChart)
        assert [line.x for line in chart._shown.lines] == [(1.0,)]
        key = resolve_plan("demo")[0].cells()[6].key  # st=5 chat_short c16
        assert (key.arm, key.concurrency) == ("st=5", 16)
        append_events(run_dir, [
            CellStarted(t=T0 + 100, key=key, num_prompts=8, index=7, total=10),
            CellFinished(t=T0 + 104, result=CellResult(
                arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
                metrics=ClientMetrics(total_throughput=50_000.0, completed=8)))])
        RunStore(run_dir).save_cell(CellResult(
            arm=key.arm, scenario=key.scenario, concurrency=key.concurrency,
            metrics=ClientMetrics(total_throughput=50_000.0, completed=8)))
        await wait_until(pilot, lambda: [line.x for line in chart._shown.lines] == [(1.0, 16.0)],
                         what="the margin read again with c16")


def test_a_line_is_never_drawn_across_a_concurrency_its_arm_lacks():
    """Points at neighbouring concurrencies of the chart join; a concurrency shown but not
    measured for this arm (or a NaN there) splits the line, a lone point keeps only its marker."""
    from dspark_tui.tui.widgets.run_chart import Line, segments

    every_x = [1.0, 4.0, 16.0, 64.0, 256.0]
    line = Line("K=3", (1.0, 4.0, 64.0, 256.0), (1.0, 2.0, 3.0, 4.0), 3)
    assert segments(line, every_x) == [([1.0, 4.0], [1.0, 2.0]), ([64.0, 256.0], [3.0, 4.0])]
    gap = Line("K=4", (1.0, 4.0, 16.0), (1.0, float("nan"), 3.0), 4)
    assert segments(gap, every_x) == []


def test_seven_arms_have_seven_markers():
    from dspark_tui.tui.widgets.run_chart import arm_marker

    assert len({arm_marker(i) for i in range(7)}) == 7


async def test_a_sweeps_margin_shows_one_arm_at_a_time_with_a(tmp_path: Path):
    """A K sweep's margin chart is against each cell's chosen K (not K = 0), said in its title:
    `a` shows one arm's margin and interval alone — every K, K=0 too, as each is another
    choice than the sweep's somewhere — then the next, and back to every arm."""
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(tmp_path / "results")
    async with charted(tmp_path, run_dir,
                       shown="Total tok/s by concurrency: chat", size=(120, 40)) as (pilot, app, _):
        await pilot.press("a")
        text = await until_shown(pilot, app, "· K=0 over the chosen K")
        assert "Margin over each cell's chosen K, with its 99.3% interval: chat" in text
        assert "K=1 over the chosen K" not in text
        await pilot.press("a")
        await until_shown(pilot, app, "· K=1 over the chosen K")
        await pilot.press(*["a"] * 6)  # K=2 … K=7
        await until_shown(pilot, app, "· K=7 over the chosen K")
        await pilot.press("a")  # every arm
        text = await until_shown(pilot, app, "chosen K, with its 99.3% interval: chat")
        assert "· K=" not in text and "K=7 over the chosen K" in text


def test_arms_whose_lines_coincide_are_one_line_named_once():
    """Acceptance by position of a simulator's sweep: arms that accept alike are one line with
    every arm's name, not lines drawn over one another."""
    from dspark_tui.report.charts import ChartData, Panel, Series
    from dspark_tui.tui.widgets.run_chart import panel_view

    rates = (0.9, 0.7, 0.5)
    panel = Panel("all", "accepted (%)", (Series("K=1", "K=1", (1.0, 2.0, 3.0), rates),
                                          Series("K=2", "K=2", (1.0, 2.0, 3.0), rates),
                                          Series("K=3", "K=3", (1.0, 2.0, 3.0), (0.8, 0.6, 0.4))))
    chart = ChartData("acceptance", "Acceptance", "Position", (panel,), ("K=1", "K=2", "K=3"),
                      log2_x=False)
    view = panel_view(chart, panel, "Acceptance", bands=False)
    assert [line.label for line in view.lines] == ["K=1, K=2", "K=3"]


async def test_a_sweeps_margin_is_worded_in_chinese_on_a_zh_screen(tmp_path: Path):
    """The margin chart's title, legend and axis from the catalogue in zh (the SVG's stay
    English: one file serves both reports)."""
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(tmp_path / "results")
    async with charted(tmp_path, run_dir, "m", "m", "m",
                       shown="相对 各单元所选 K 的差距及其 99.3% 区间: chat", size=(120, 40),
                       settings={"language": "zh"}) as (pilot, app, _):
        await pilot.press("a")
        text = await until_shown(pilot, app, "· K=0 相对 所选 K")
        view = app.screen.query_one(RunChart)._shown
        assert view.y_label == "Total tok/s 相对 所选 K 的差距 (%)"
        assert [line.label for line in view.lines if line.label] == ["K=0 相对 所选 K"]
        assert " over " not in text and "chosen" not in text


def test_the_screens_margin_says_the_fallback_and_another_level_in_both_languages(tmp_path: Path):
    """The chart screen words the report's margin data itself (its own catalogue): a series
    over the fallback arm (a cell without a chosen K) and an adaptive arm's band at the run's
    level say so in the legend, and the title names the fallback, in en and zh — as the SVG's
    labels do. Before, they read "over the chosen K" like every other series (review)."""
    from dspark_tui.tui.widgets.run_chart import chart_title, panel_view, series_label
    from tests.report.k_sweep_builders import stated_sweep

    truth = {"K=1": {4: 100.0, 16: 120.0, 64: 90.0}, "K=3": {4: 112.0, 16: 110.0},
             "K=6": {4: 105.0, 16: 95.0}, "K=6 adaptive": {4: 104.0, 16: 130.0, 64: 99.0}}
    margin, _ = _report_data(stated_sweep(tmp_path / "run", truth))
    assert margin is not None
    panel = margin.panels[0]
    en = [series_label(margin, s, "en") for s in panel.series]
    zh = [series_label(margin, s, "zh") for s in panel.series]
    assert "K=6 adaptive over K=1 where no K is chosen (95.0% interval)" in en
    assert "K=6 adaptive over the chosen K (95.0% interval)" in en and "K=3 over the chosen K" in en
    assert "K=6 adaptive 相对 K=1（无所选 K 的单元）（95.0% 区间）" in zh
    assert "K=6 adaptive 相对 所选 K（95.0% 区间）" in zh and "K=3 相对 所选 K" in zh
    assert chart_title(margin, "en") == ("Margin over each cell's chosen K (K=1 where a cell has "
                                         "none), with its 97.5% interval")
    assert chart_title(margin, "zh") == "相对 各单元所选 K（无所选 K 的单元相对 K=1） 的差距及其 97.5% 区间"
    view = panel_view(margin, panel, "t", lang="zh")
    assert "K=6 adaptive 相对 K=1（无所选 K 的单元）（95.0% 区间）" in [line.label for line in view.lines]


async def test_a_margin_title_too_wide_for_the_plot_is_a_line_above_it_at_80_columns(tmp_path: Path):
    """plotext leaves out a title wider than the plot: at 80 columns the margin chart of a
    sweep with a cell without a chosen K lost its level and its fallback (the title is 95
    characters). Where it does not fit it is a line above the plot, wrapped; where it fits
    (120 columns) it stays in the plot."""
    from tests.report.k_sweep_builders import stated_sweep

    truth = {"K=1": {4: 100.0, 16: 120.0, 64: 90.0}, "K=3": {4: 112.0, 16: 110.0},
             "K=6": {4: 105.0, 16: 95.0}, "K=6 adaptive": {4: 104.0, 16: 130.0, 64: 99.0}}
    run_dir = stated_sweep(tmp_path / "results" / "demo_slo_20261203-090000", truth)
    for size, above in (((80, 24), True), ((120, 40), False)):
        async with charted(tmp_path, run_dir,
                           shown="Total tok/s by concurrency: mixed", size=size) as (pilot, app, _):
            await pilot.press("m", "m", "m")
            text = await until_shown(pilot, app, "K=6 adaptive over K=1 where no K is chosen")
            flat = " ".join(text.split())
            assert ("Margin over each cell's chosen K (K=1 where a cell has none), with its 97.5% "
                    "interval: mixed") in flat, text
            heading = app.screen.query_one("#chart-heading")
            assert heading.display is above
            assert (app.screen.query_one(RunChart)._shown.title == "") is above


def _plot_rows(chart: RunChart) -> list[str]:
    """The chart's rows from its top frame line to its bottom one, as the terminal shows them."""
    from tests.tui.helpers import widget_text

    lines = widget_text(chart).splitlines()
    top = next(i for i, line in enumerate(lines) if "┌" in line)
    bottom = next((i for i, line in enumerate(lines) if "└" in line), len(lines) - 1)
    return lines[top:bottom + 1]


async def test_a_zh_legend_stays_inside_the_frame_at_80x24(tmp_path: Path):
    """plotext counts a character as one cell; a CJK one takes two, so each zh legend line
    ("K=1 相对 所选 K") ran 5 cells past the frame and wrapped: the rows below it broke in two
    and the frame's bottom and the x axis' words were pushed out of the chart. Every row of
    the plot ends on the frame's right edge, the legend reads whole, the x axis' label shows."""
    from rich.cells import cell_len

    from tests.tui.helpers import widget_text
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(tmp_path / "results")
    async with charted(tmp_path, run_dir, "m", "m", "m",
                       shown="99.3%", settings={"language": "zh"}) as (pilot, app, _):
        chart = app.screen.query_one(RunChart)
        for shown in ("every arm", "one arm"):
            await wait_until(pilot, lambda: "└" in widget_text(chart), what=f"the frame ({shown})")
            rows = _plot_rows(chart)
            width = chart.size.width
            assert rows[-1].rstrip().endswith("┘"), (shown, widget_text(chart))
            for row in rows:
                assert cell_len(row) == width and row.rstrip()[-1] in "┐│┤┘", (shown, row)
            text = widget_text(chart)
            assert "K=0 相对 所选 K" in text and "并发 (log2)" in text, text
            if shown == "every arm":
                assert "K=7 相对 所选 K" in text and "持平 ±2%" in text, text
                await pilot.press("a")
                await until_shown(pilot, app, "· K=0 相对")


async def test_a_legend_line_wider_than_the_plot_ends_in_an_ellipsis(tmp_path: Path):
    """At 60 columns the fallback series' zh label (54 cells) has no room: it is cut to the
    room the plot leaves, ending in `…`, and the other legend lines and the frame stay whole
    (plotext leaves the whole legend out when one line does not fit)."""
    from rich.cells import cell_len

    from tests.report.k_sweep_builders import stated_sweep
    from tests.tui.helpers import widget_text

    truth = {"K=1": {4: 100.0, 16: 120.0, 64: 90.0}, "K=3": {4: 112.0, 16: 110.0},
             "K=6": {4: 105.0, 16: 95.0}, "K=6 adaptive": {4: 104.0, 16: 130.0, 64: 99.0}}
    run_dir = stated_sweep(tmp_path / "results" / "demo_slo_20261203-090000", truth)
    async with charted(tmp_path, run_dir, "m", "m", "m",
                       shown="97.5%", size=(60, 24), settings={"language": "zh"}) as (pilot, app, _):
        chart = app.screen.query_one(RunChart)
        await wait_until(pilot, lambda: "└" in widget_text(chart), what="the frame")
        for row in _plot_rows(chart):
            assert cell_len(row) == chart.size.width and row.rstrip()[-1] in "┐│┤┘", row
        text = widget_text(chart)
        assert "K=6 adaptive 相对 K=1（无所选 K 的单元）（9…" in text, text
        assert "K=6 adaptive 相对 所选 K（95.0% 区间）" in text and "持平 ±2%" in text, text


async def test_the_acceptance_chart_is_worded_in_chinese_on_a_zh_screen(tmp_path: Path):
    """The acceptance chart's title and axes were the report's English (its SVG's words) on a
    zh screen, beside a zh legend and footer; they are the catalogue's now, as the margin's."""
    from tests.tui.helpers import widget_text
    from tests.tui.k_sweep_dir import write_k_sweep

    run_dir = write_k_sweep(tmp_path / "results")
    async with charted(tmp_path, run_dir, "m", "m", "m", "m",
                       shown="k_sweep · 按草稿位置的接受率", settings={"language": "zh"}) as (pilot, app, _):
        chart = app.screen.query_one(RunChart)
        await wait_until(pilot, lambda: "草稿位置" in widget_text(chart), what="the x axis' words")
        text = widget_text(chart)
        assert "按草稿位置的接受率" in text and "该位置被接受的比例（占草稿的 %）" in text, text
        assert "Accept" not in text and "Draft" not in text, text
