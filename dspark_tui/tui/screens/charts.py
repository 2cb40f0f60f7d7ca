"""`c`: the run's curves in the terminal — Total tok/s, TPOT and TTFT against concurrency (log2),
one line per arm, one scenario at a time so that 80x24 is enough.

Live, it reads the run screen's RunState and redraws when a measurement lands (the state's
`measured` count moves), not on every progress tick. For a finished run it takes the run
directory (read in a worker) or an already loaded run: `ChartScreen(run_dir)`,
`ChartScreen(loaded_run)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Label

from dspark_tui.model import CellResult
from dspark_tui.model.run_state import RunState
from dspark_tui.results import load_run
from dspark_tui.results.store import LoadedRun
from dspark_tui.tui.screens.loading import LoadingScreen
from dspark_tui.tui.widgets.run_chart import METRICS, RunChart, curves

POLL_S = 0.5  # how often a live chart looks at the state's measurement count


class ChartScreen(LoadingScreen):
    DEFAULT_CSS = """
    ChartScreen #chart-title { width: 1fr; padding: 0 1; background: $panel; text-style: bold; }
    ChartScreen #chart-empty { padding: 1 2; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right,right_square_bracket", "scenario(1)", "Scenario", id="charts.next",
                tooltip="the next scenario"),
        Binding("left,left_square_bracket", "scenario(-1)", "Previous scenario", id="charts.prev",
                show=False),
        Binding("m", "metric", "Metric", id="charts.metric",
                tooltip="Total tok/s, TPOT, TTFT in turn"),
        Binding("escape", "back", "Back", id="charts.back"),
    ]
    ERROR_LINE = "#chart-title"

    def __init__(self, source: Path | str | LoadedRun | RunState, *,
                 scenarios: Sequence[str] = (), name: str = "") -> None:
        super().__init__()
        self.source = source
        self.run_name = name
        self.scenarios = list(scenarios)
        self.arms: list[str] = []
        self.cells: list[CellResult] = []
        self.scenario_index = 0
        self.metric_index = 0
        self._drawn_measured = -1

    def compose(self) -> ComposeResult:
        yield Label("charts", id="chart-title")
        yield Label("no finished measurements yet", id="chart-empty")
        yield RunChart(id="chart")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        source = self.source
        if isinstance(source, RunState):
            self._follow()
            self.set_interval(POLL_S, self._follow)
        elif isinstance(source, LoadedRun):
            self._show_run(source)
        else:
            path = Path(source)
            self.load(lambda: load_run(path), self._show_run, f"reading {path.name}")

    # -- data ------------------------------------------------------------------------------

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

    def _show_run(self, run: LoadedRun) -> None:
        manifest = run.manifest
        self.run_name = self.run_name or manifest.name
        self.arms = manifest.arm_names() or sorted({cell.arm for cell in run.measurements})
        self.scenarios = self.scenarios or list(manifest.scenarios) or sorted(
            {cell.scenario for cell in run.measurements})
        self._set_cells([cell for cell in run.measurements if cell.ok])

    def _set_cells(self, measurements: list[CellResult]) -> None:
        from dspark_tui.report.measurements import aggregate_cells

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
        metric = METRICS[self.metric_index]
        data = curves(self.cells, scenario, metric, self.arms)
        where = f"{scenario} ({self.scenario_index + 1}/{len(self.scenarios)})"
        self.query_one("#chart-title", Label).update(
            f"{self.run_name} · {where} · {metric.title}   ←/→ scenario  m metric")
        self.query_one("#chart-empty", Label).display = not data
        self.query_one(RunChart).show(data, metric, f"{metric.title} by concurrency: {scenario}",
                                      self.arms)

    # -- actions ---------------------------------------------------------------------------

    def action_scenario(self, step: int) -> None:
        if self.scenarios:
            self.scenario_index = (self.scenario_index + step) % len(self.scenarios)
            self.redraw()

    def action_metric(self) -> None:
        self.metric_index = (self.metric_index + 1) % len(METRICS)
        self.redraw()

    def action_back(self) -> None:
        self.app.pop_screen()
