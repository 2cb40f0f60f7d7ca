"""One chart of a run at a time: a metric against concurrency (log2 axis), one line per arm, one
scenario; or one panel of the report's own charts (report/charts.py: the margin with its
interval and tie band, the per-position acceptance per arm), drawn from that data as it is.

Plotext draws it (textual-plotext): its background and text follow the app's theme, and each
arm's line colour is a theme variable resolved each time the chart is drawn, so a theme switch
recolours it.

Plotext lays text out one character a cell; a CJK character takes two in the terminal, so a zh
legend line ran past the frame and the terminal wrapped it into the next row. Every word it is
given goes through `cells()` (a wide character is followed by a zero-width filler, so plotext
counts the cells the terminal shows and its fit checks are right), the filler is taken out of
what it drew, and a legend line longer than the plot has room for ends in `…` (plotext leaves out
the whole legend when one line does not fit).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text
from textual.app import RenderResult
from textual.color import Color
from textual_plotext import PlotextPlot

from dspark_tui.model import CellResult
from dspark_tui.report.words import Texts
from dspark_tui.tui import colours

if TYPE_CHECKING:  # pandas stays unloaded until a report chart is asked for
    from dspark_tui.report.charts import ChartData, Panel, Series


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

MARKERS = ("●", "▲", "■", "◆", "✚", "○", "△", "□", "◇", "✕")


def arm_marker(index: int) -> str:
    """The arm's marker on a chart (with its colour): distinct for ten arms, then again."""
    return MARKERS[index % len(MARKERS)]


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


@dataclass(frozen=True)
class Line:
    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    arm_index: int  # the arm's colour
    band: bool = False  # an interval's low or high: dotted, unlabelled


@dataclass(frozen=True)
class ChartView:
    """What one drawing shows: lines, flat lines (a tie band) and the axes' words."""

    title: str
    y_label: str
    x_label: str
    lines: tuple[Line, ...]
    log2_x: bool = True
    flat: tuple[float, ...] = field(default_factory=tuple)
    flat_label: str = ""


def metric_view(data: dict[str, Curve], metric: Metric, title: str, arms: list[str],
                lang: str = "en") -> ChartView:
    t = Texts(lang, "screens")
    lines = tuple(Line(arm, tuple(float(c) for c, _ in curve), tuple(v for _, v in curve),
                       arms.index(arm)) for arm, curve in data.items())
    return ChartView(title, t(f"charts.metric.{metric.key}"), t("charts.x_log2"), lines)


def panel_view(chart: ChartData, panel: Panel, title: str, *, bands: bool = True,
               lang: str = "en") -> ChartView:
    """A report chart's panel: each series a line, its interval low and high two dotted lines of
    its colour (`bands`), and the chart's tie band (a fraction) as two flat lines in percent.
    Series that coincide (a simulator's arms often accept alike) are one line, said once with
    every arm's name: `K=1, K=2, K=3`, not six lines drawn over one another."""
    same: dict[tuple[object, ...], list[str]] = {}
    first: dict[tuple[object, ...], Series] = {}
    for series in panel.series:
        drawn: tuple[object, ...] = (series.x, series.y, series.low if bands else None,
                                     series.high if bands else None)
        same.setdefault(drawn, []).append(series_label(chart, series, lang))
        first.setdefault(drawn, series)
    lines: list[Line] = []
    for drawn, series in first.items():
        index = chart.arms.index(series.arm) if series.arm in chart.arms else 0
        lines.append(Line(", ".join(same[drawn]), series.x, series.y, index))
        if bands and series.low is not None and series.high is not None:
            lines += [Line("", series.x, series.low, index, band=True),
                      Line("", series.x, series.high, index, band=True)]
    t = Texts(lang, "screens")
    band = chart.tie_band
    flat = (-band * 100, band * 100) if band else ()
    x_label = t("charts.x_log2") if chart.log2_x else chart.x_label.lower()
    y_label = (t("charts.margin_y", over=_over(chart, t)) if chart.reference is not None
               else panel.y_label)
    if chart.kind == "acceptance":  # the report's English words, in `lang`
        x_label, y_label = t("charts.position"), t("charts.acceptance_y")
    return ChartView(title, y_label, x_label, tuple(lines), chart.log2_x, flat,
                     t("charts.tie", band=f"{band * 100:g}") if band else "")


# The margin chart's words on a screen, from the catalogue (the SVG's stay English: one file
# serves both reports); their English is report/charts.py's own.
def _over(chart: ChartData, t: Texts, each: bool = False) -> str:
    if chart.reference == "":
        return t("charts.over_each_chosen" if each else "charts.over_chosen")
    return chart.reference or ""


def series_label(chart: ChartData, series: Series, lang: str = "en") -> str:
    """`K=3 over the chosen K` in `lang` (a margin series), else the series' own label; a
    series over the fallback arm (cells without a chosen K) and one whose interval is at
    another level than the title's say so, as the SVG's labels do."""
    if chart.reference is None:
        return series.label
    t = Texts(lang, "screens")
    if series.over is not None:
        text = t("charts.series_over_fallback", arm=series.arm, over=series.over)
    else:
        text = t("charts.series_over", arm=series.arm, over=_over(chart, t))
    if series.level is not None:
        text += t("charts.series_level", level=f"{series.level * 100:.1f}")
    return text


def chart_title(chart: ChartData, lang: str = "en") -> str:
    """The margin and acceptance charts' titles in `lang`, else the chart's own."""
    if chart.kind == "acceptance":
        return Texts(lang, "screens")("charts.acceptance")
    if chart.reference is None:
        return chart.title
    t = Texts(lang, "screens")
    over = _over(chart, t, each=True)
    if chart.fallback is not None:
        over = t("charts.over_each_chosen_fallback", fallback=chart.fallback)
    if chart.level is None:
        return t("charts.margin_title_single", over=over)
    return t("charts.margin_title", over=over, level=f"{chart.level * 100:.1f}")


def segments(line: Line, every_x: list[float]) -> list[tuple[list[float], list[float]]]:
    """The line's runs of points at neighbouring concurrencies of the chart (`every_x`, sorted):
    a concurrency the chart shows but this line lacks splits it; a lone point is no segment
    (its marker shows it)."""
    position = {x: i for i, x in enumerate(every_x)}
    runs: list[tuple[list[float], list[float]]] = []
    last = -2
    for x, y in sorted(zip(line.x, line.y, strict=True)):
        if y != y:  # NaN: nothing measured there
            last = -2
            continue
        here = position.get(x, -2)
        if runs and here == last + 1:
            runs[-1][0].append(x)
            runs[-1][1].append(y)
        else:
            runs.append(([x], [y]))
        last = here
    return [run for run in runs if len(run[0]) > 1]


# Follows each wide character in what plotext is given, and is taken out of what it draws: zero
# width in a terminal even were one left.
FILLER = "\u2060"
# Columns of the widget a legend line never has: the y axis' tick labels (up to 7, "-100.0 ")
# and its frame, the legend's marker (3) and its spaces (2), and a side symbol's (2).
LEGEND_ROOM = 16


def cells(text: str) -> str:
    """`text` as plotext should lay it out: a wide character followed by FILLER (plotext then
    gives it the two cells the terminal does), a zero-width one left out (plotext would give
    it a cell the terminal does not)."""
    out = []
    for char in text:
        width = cell_len(char)
        if width:
            out.append(char + FILLER * (width - 1))
    return "".join(out)


def fit(text: str, room: int) -> str:
    """`text` cut to `room` terminal cells, ending in `…` where it was cut."""
    if cell_len(text) <= room:
        return text
    shown = Text(text)
    shown.truncate(max(1, room), overflow="ellipsis")
    return shown.plain


class RunChart(PlotextPlot):
    DEFAULT_CSS = """
    RunChart { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: ChartView | None = None

    def on_mount(self) -> None:
        super().on_mount()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._draw())

    def show_view(self, view: ChartView) -> None:
        self._shown = view
        self._draw()

    def render(self) -> RenderResult:
        drawn = super().render()
        if isinstance(drawn, Text) and FILLER in drawn.plain:
            return Text("").join(drawn.split(FILLER, allow_blank=True))
        return drawn

    def _draw(self) -> None:
        view = self._shown
        if view is None:
            return
        plt = self.plt
        plt.clear_figure()
        plt.title(cells(view.title))
        plt.xlabel(cells(view.x_label))
        plt.ylabel(cells(view.y_label))
        room = (self.size.width or self.app.size.width) - LEGEND_ROOM
        place = (lambda x: math.log2(x)) if view.log2_x else (lambda x: x)
        every_x = sorted({x for line in view.lines for x in line.x})
        if every_x:
            plt.xticks([place(x) for x in every_x], [cells(f"{x:g}") for x in every_x])
            if len(every_x) == 1:  # one point a line: room either side of it
                plt.xlim(place(every_x[0]) - 1, place(every_x[0]) + 1)
        for value in view.flat:
            plt.hline(value, color=self._muted())
        for line in view.lines:
            colour = self._rgb(line.arm_index)
            # Joined only between neighbouring measured concurrencies: a line never crosses a
            # concurrency its arm was not measured at (it would draw a value nobody measured).
            for xs, ys in segments(line, every_x):
                plt.plot([place(x) for x in xs], ys, marker="dot" if line.band else "braille",
                         color=colour)
            if line.band:
                continue
            # Each arm its own marker as well as its colour (seven K values are hard to tell
            # apart by colour alone); the legend shows the marker, not the line's dots.
            plt.scatter([place(x) for x in line.x], list(line.y), marker=arm_marker(line.arm_index),
                        color=colour, label=cells(fit(line.label, room)))
        if view.flat and view.lines:  # names the flat lines in the legend
            plt.scatter([place(every_x[0])], [view.flat[-1]], marker="─", color=self._muted(),
                        label=cells(fit(view.flat_label, room)))
        self.refresh()

    def _rgb(self, index: int) -> tuple[int, int, int]:
        return self._theme_rgb(colours.arm_colour(index))

    def _muted(self) -> tuple[int, int, int]:
        return self._theme_rgb("$foreground-muted")

    def _theme_rgb(self, variable: str) -> tuple[int, int, int]:
        value = self.app.theme_variables.get(variable.removeprefix("$"), "white")
        return Color.parse(value).rgb
