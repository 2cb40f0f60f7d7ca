"""One chart of a run: a metric against concurrency (log2 axis), one line per arm, one scenario.

Plotext draws it (textual-plotext): its background and text follow the app's theme, and each
arm's line colour is a theme variable resolved each time the chart is drawn, so a theme switch
recolours it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from textual.color import Color
from textual_plotext import PlotextPlot

from dspark_tui.model import CellResult
from dspark_tui.tui import colours


@dataclass(frozen=True)
class Metric:
    key: str
    title: str  # with its unit
    attr: str  # the ClientMetrics field


METRICS = (
    Metric("total", "Total tok/s", "total_throughput"),
    Metric("tpot", "TPOT mean (ms)", "mean_tpot_ms"),
    Metric("ttft", "TTFT mean (ms)", "mean_ttft_ms"),
)

Curve = list[tuple[int, float]]  # (concurrency, value), concurrency ascending


def curves(cells: Iterable[CellResult], scenario: str, metric: Metric,
           arms: list[str]) -> dict[str, Curve]:
    """Per arm (in `arms` order) the metric of its ok cells of one scenario; cells are one per
    (arm, scenario, concurrency), several measurements already folded (report.measurements)."""
    points: dict[str, Curve] = {arm: [] for arm in arms}
    for cell in cells:
        value = getattr(cell.metrics, metric.attr)
        if cell.ok and cell.scenario == scenario and value is not None and cell.arm in points:
            points[cell.arm].append((cell.concurrency, float(value)))
    return {arm: sorted(curve) for arm, curve in points.items() if curve}


class RunChart(PlotextPlot):
    DEFAULT_CSS = """
    RunChart { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[dict[str, Curve], Metric, str, list[str]] | None = None

    def on_mount(self) -> None:
        super().on_mount()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._draw())

    def show(self, data: dict[str, Curve], metric: Metric, title: str, arms: list[str]) -> None:
        self._shown = (data, metric, title, arms)
        self._draw()

    def _draw(self) -> None:
        if self._shown is None:
            return
        data, metric, title, arms = self._shown
        plt = self.plt
        plt.clear_figure()
        plt.title(title)
        plt.xlabel("concurrency (log2)")
        plt.ylabel(metric.title)
        every_c = sorted({c for curve in data.values() for c, _ in curve})
        if every_c:
            plt.xticks([math.log2(c) for c in every_c], [str(c) for c in every_c])
            if len(every_c) == 1:  # one concurrency: room either side of its points
                x = math.log2(every_c[0])
                plt.xlim(x - 1, x + 1)
        for arm, curve in data.items():
            xs = [math.log2(c) for c, _ in curve]
            ys = [value for _, value in curve]
            plt.plot(xs, ys, marker="braille", color=self._rgb(arms.index(arm)), label=arm)
            plt.scatter(xs, ys, marker="●", color=self._rgb(arms.index(arm)))
        self.refresh()

    def _rgb(self, index: int) -> tuple[int, int, int]:
        variable = colours.arm_colour(index).removeprefix("$")
        value = self.app.theme_variables.get(variable, "white")
        return Color.parse(value).rgb
