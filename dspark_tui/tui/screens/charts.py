"""`c`: the run's curves in the terminal, one scenario at a time so that 80x24 is enough. `m`
steps through Total tok/s, TPOT and TTFT against concurrency (log2), one line per arm, then two
of the report's own charts (report/charts.py, its data as it is): the margin over the reference
(a K sweep's chosen K in each cell, else one arm) with its interval and the tie band, and the
per-position acceptance per arm.

Live, it reads the run screen's RunState and redraws when a measurement lands (the state's
`measured` count moves), not on every progress tick; the report's charts need the run's analysis
(0.1-0.3 s on a 36-cell run), read from the run directory in a thread worker when one of them is
shown and a measurement has landed since. For a finished run it takes the run directory (read in
a worker) or an already loaded run: `ChartScreen(run_dir)`, `ChartScreen(loaded_run)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, Static

from dspark_tui.model import CellResult
from dspark_tui.model.run_state import RunState
from dspark_tui.report.words import Texts
from dspark_tui.results import load_run
from dspark_tui.results.store import LoadedRun
from dspark_tui.tui import safe
from dspark_tui.tui.screens.loading import LoadingScreen
from dspark_tui.tui.widgets.footer import KeysFooter
from dspark_tui.tui.widgets.run_chart import (
    METRICS,
    ChartView,
    RunChart,
    chart_title,
    curves,
    metric_view,
    panel_view,
    series_label,
)
from dspark_tui.tui.words import lang_of

if TYPE_CHECKING:
    from dspark_tui.report.charts import ChartData

POLL_S = 0.5  # how often a live chart looks at the state's measurement count
REPORT_MODES = ("margin", "acceptance")  # after METRICS under `m`
# Columns a plot title leaves free: the y axis' labels and frame (plotext centres the title on
# the canvas and drops one that does not fit).
TITLE_ROOM = 10


@dataclass(frozen=True)
class ReportCharts:
    margin: ChartData | None
    acceptance: ChartData | None


def report_charts(run: LoadedRun) -> ReportCharts:
    """The report's margin and acceptance data for the run (in a worker: analyse() reads pandas)."""
    from dspark_tui.analysis.analysis import analyse
    from dspark_tui.report.charts import acceptance_chart, margin_chart

    analysis = analyse(run)
    return ReportCharts(margin_chart(analysis), acceptance_chart(analysis))


def read_run_charts(path: Path) -> tuple[LoadedRun, ReportCharts]:
    run = load_run(path)
    return run, report_charts(run)


class ChartScreen(LoadingScreen):
    DEFAULT_CSS = """
    ChartScreen #chart-title { width: 1fr; padding: 0 1; background: $panel; text-style: bold; }
    ChartScreen #chart-empty { padding: 1 2; color: $text-muted; }
    ChartScreen #chart-heading { width: 1fr; padding: 0 1; display: none; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right,right_square_bracket", "scenario(1)", "Scenario", id="charts.next",
                tooltip="the next scenario"),
        Binding("left,left_square_bracket", "scenario(-1)", "Previous scenario", id="charts.prev",
                show=False),
        Binding("m", "metric", "Metric", id="charts.metric",
                tooltip="Total tok/s, TPOT, TTFT, margin with its interval, acceptance by position"),
        Binding("a", "arm", "Arm", id="charts.arm",
                tooltip="the margin chart of many arms (a K sweep): one arm at a time, then all"),
        Binding("escape", "back", "Back", id="charts.back"),
    ]
    ERROR_LINE = "#chart-title"

    def __init__(self, source: Path | str | LoadedRun | RunState, *,
                 scenarios: Sequence[str] = ()) -> None:
        super().__init__()
        self.source = source
        self.run_name = ""
        self.scenarios = list(scenarios)
        self.arms: list[str] = []
        self.cells: list[CellResult] = []
        self.scenario_index = 0
        self.metric_index = 0
        self.arm_index = -1  # the margin chart's arm shown alone; -1: every arm
        self._drawn_measured = -1
        self.report: ReportCharts | None = None  # None: not read yet
        self._report_measured = -1  # the measurement count the report charts were read at

    def compose(self) -> ComposeResult:
        t = Texts(lang_of(self.app), "screens")
        yield Label(t("charts.title"), id="chart-title")
        yield Label(t("charts.none_yet"), id="chart-empty")
        # The chart's title where the plot cannot hold it (plotext leaves out a title wider than
        # the plot: at 80 columns the margin's interval level and fallback went unsaid).
        yield Static(id="chart-heading")
        yield RunChart(id="chart")
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        source = self.source
        if isinstance(source, RunState):
            self._follow()
            self.set_interval(POLL_S, self._follow)
        elif isinstance(source, LoadedRun):
            self._show_run(source)
            self.load(lambda: report_charts(source), self._show_report,
                      Texts(lang_of(self.app), "screens")("charts.reading_report"))
        else:
            path = Path(source)
            self.load(lambda: read_run_charts(path), self._show_read,
                      Texts(lang_of(self.app), "screens")("charts.reading", name=path.name))

    # -- data ------------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        index = self.metric_index
        return METRICS[index].key if index < len(METRICS) else REPORT_MODES[index - len(METRICS)]

    def _follow(self) -> None:
        state = self.source
        assert isinstance(state, RunState)
        if state.measured == self._drawn_measured:
            return
        self._drawn_measured = state.measured
        self.run_name = self.run_name or state.name
        self.arms = list(state.arms)
        self.scenarios = self.scenarios or state.scenarios()
        self._set_cells(state.ok_measurements())
        self._read_live_report()

    def _read_live_report(self) -> None:
        """Only while a report chart is shown, once per landed measurement."""
        state = self.source
        if (not isinstance(state, RunState) or self.mode not in REPORT_MODES or not state.run_dir
                or self._report_measured == state.measured):
            return
        self._report_measured = state.measured
        path = Path(state.run_dir)
        self.load(lambda: report_charts(load_run(path)), self._show_report,
                  Texts(lang_of(self.app), "screens")("charts.reading_report"))

    def _show_read(self, read: tuple[LoadedRun, ReportCharts]) -> None:
        run, self.report = read
        self._show_run(run)

    def _show_report(self, charts: ReportCharts) -> None:
        self.report = charts
        self.redraw()

    def _show_run(self, run: LoadedRun) -> None:
        manifest = run.manifest
        self.run_name = self.run_name or manifest.name
        self.arms = manifest.arm_names() or sorted({cell.arm for cell in run.measurements})
        self.scenarios = self.scenarios or list(manifest.scenarios) or sorted(
            {cell.scenario for cell in run.measurements})
        self._set_cells([cell for cell in run.measurements if cell.ok])

    def _set_cells(self, measurements: list[CellResult]) -> None:
        from dspark_tui.analysis.measurements import aggregate_cells

        self.cells = list(aggregate_cells(measurements).values())
        measured = {cell.scenario for cell in self.cells}
        self.scenarios += sorted(measured - set(self.scenarios))
        self.redraw()

    # -- drawing ---------------------------------------------------------------------------

    def redraw(self) -> None:
        if not self.scenarios:
            return
        self.scenario_index %= len(self.scenarios)
        scenario = self.scenarios[self.scenario_index]
        where = f"{scenario} ({self.scenario_index + 1}/{len(self.scenarios)})"
        if self.mode in REPORT_MODES:
            self._draw_report(scenario, where)
            return
        t = Texts(lang_of(self.app), "screens")
        metric = METRICS[self.metric_index]
        data = curves(self.cells, scenario, metric, self.arms)
        title = t(f"charts.metric.{metric.key}")
        self._title(f"{self.run_name} · {where} · {title}")
        self._empty(t("charts.none_yet"), shown=not data)
        heading = t("charts.by_concurrency", metric=title, scenario=scenario)
        self._show_view(metric_view(data, metric, heading, self.arms, lang_of(self.app)))

    def _draw_report(self, scenario: str, where: str) -> None:
        t = Texts(lang_of(self.app), "screens")
        margin = self.mode == "margin"
        what = t("charts.margin" if margin else "charts.acceptance")
        if margin:
            self._title(f"{self.run_name} · {where} · {what}")
        else:  # one panel for the whole run: no scenario in it
            self._title(f"{self.run_name} · {what}")
        if self.report is None:
            self._empty(t("charts.reading_analysis"), shown=True)
            self.query_one(RunChart).display = False
            self.query_one("#chart-heading").display = False
            return
        chart = self.report.margin if margin else self.report.acceptance
        panels = [] if chart is None else [p for p in chart.panels
                                           if not margin or p.title == scenario]
        if chart is None or not panels:
            self._empty(t("charts.no_margin" if margin else "charts.no_acceptance"), shown=True)
            self.query_one(RunChart).display = False
            self.query_one("#chart-heading").display = False
            return
        lang = lang_of(self.app)
        title = f"{chart_title(chart, lang)}: {scenario}" if margin else chart_title(chart, lang)
        panel = panels[0]
        if margin and self.arm_index >= 0 and len(panel.series) > 1:
            # Six bands over one another read as none: one arm's margin and interval at a time.
            shown = panel.series[self.arm_index % len(panel.series)]
            panel = replace(panel, series=(shown,))
            title = f"{title} · {series_label(chart, shown, lang)}"
        self._empty("", shown=False)
        # The acceptance band is the spread over cells: at 80x24 its dots hide the means.
        self._show_view(panel_view(chart, panel, title, bands=margin, lang=lang_of(self.app)))

    def _show_view(self, view: ChartView) -> None:
        """The view drawn, its title in the plot where it fits, else on a line above it (wrapped)."""
        heading = self.query_one("#chart-heading", Static)
        width = self.size.width or self.app.size.width
        wide = cell_len(view.title) > width - TITLE_ROOM
        heading.update(safe.text(view.title) if wide else "")
        heading.display = wide
        self.query_one(RunChart).show_view(replace(view, title="") if wide else view)

    def on_resize(self) -> None:
        self.redraw()

    def _title(self, text: str) -> None:
        keys = Texts(lang_of(self.app), "screens")("charts.keys")
        self.query_one("#chart-title", Label).update(safe.text(f"{text}   {keys}"))

    def _empty(self, why: str, *, shown: bool) -> None:
        label = self.query_one("#chart-empty", Label)
        label.update(safe.text(why))
        label.display = shown
        self.query_one(RunChart).display = True

    # -- actions ---------------------------------------------------------------------------

    def action_scenario(self, step: int) -> None:
        if self.scenarios:
            self.scenario_index = (self.scenario_index + step) % len(self.scenarios)
            self.redraw()

    def action_metric(self) -> None:
        self.metric_index = (self.metric_index + 1) % (len(METRICS) + len(REPORT_MODES))
        self._read_live_report()
        self.redraw()

    def action_arm(self) -> None:
        """Every arm's margin, then each arm's alone (a K sweep's seven bands overlap), then
        every arm again."""
        arms = max(1, self._margin_series())
        self.arm_index = self.arm_index + 1 if self.arm_index + 1 < arms else -1
        if self.mode != "margin":
            self.metric_index = len(METRICS) + REPORT_MODES.index("margin")
            self._read_live_report()
        self.redraw()

    def _margin_series(self) -> int:
        """How many arms the shown scenario's margin panel draws: every arm but the reference
        (two arms, a run without a sweep's choice), or every arm not chosen in all its cells
        (a sweep against each cell's chosen K)."""
        chart = None if self.report is None else self.report.margin
        if chart is None or not self.scenarios:
            return len(self.arms) - 1
        scenario = self.scenarios[self.scenario_index % len(self.scenarios)]
        panels = [p for p in chart.panels if p.title == scenario]
        return len(panels[0].series) if panels else len(self.arms) - 1

    def action_back(self) -> None:
        self.app.pop_screen()
